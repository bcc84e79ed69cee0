#!/bin/bash
# runx.sh BENCH N MIN:MAX [extra mca...]: N runs of build/bench/BENCH over rsm at verbose 20 (ITERS=n: -i n); per run: probe, both ranks' decisions (cycles, path), eager-limit lines, both-ways lines, the figure per size
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd /work/main
B=build/bench/$1; N=$2; SZ=$3; shift 3
for i in $(seq $N); do
  f=/tmp/vb.$i
  timeout 120 mpirun -np 2 --bind-to core --mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 20 "$@" $B -n -m $SZ ${ITERS:+-i $ITERS} > $f 2>&1
  p=$(grep -o '"probe_ns":\[[^]]*\]' $f | head -1 | tr -d '"probe_ns:[]')
  bw=$(grep -Eo '"(mbps|latency_us)":[0-9.]*' $f | cut -d: -f2 | awk "{printf \"%s \", \$1}")
  d=$(grep -o 'local rank [01] is [a-z]*: its cache lines arrive in [0-9]* cycles.*: [a-z]* stores into the pool, [a-z ]*' $f | sed 's/its cache lines arrive in //; s/ cycles (median[^)]*)//; s/stores into the pool, //' | tr '\n' ';')
  e=$(grep -c 'eager limit' $f)
  bwy=$(grep -c 'bulk data as' $f)
  echo "$i probe=$p bw=[$bw] eagerlines=$e both=$bwy dec=$d"
done
