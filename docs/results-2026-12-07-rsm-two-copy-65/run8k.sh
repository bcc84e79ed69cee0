#!/bin/bash
# run8k.sh N SIZE [extra mca...]: N runs of xb-latency at SIZE over rsm, verbose 20; one line each
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd /work/main
N=$1; SZ=$2; shift 2
for i in $(seq $N); do
  f=/tmp/v20.$i
  timeout 60 mpirun -np 2 --bind-to core --mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 20 "$@" build/bench/xb-latency -n -m $SZ:$SZ -i 20000 > $f 2>&1
  p=$(grep -o '"probe_ns":\[[^]]*\]' $f | tr -d '"probe_ns:[]')
  l=$(grep -o '"latency_us":[0-9.]*' $f | cut -d: -f2)
  m=$(grep '^\[[^]]*:[0-9]*\] btl:rsm: local rank 1 is' $f | grep -o 'arrive in [0-9]* cycles' | awk '{print $3}' | tr '\n' ,)
  e=$(grep -o 'eager limit [0-9]* bytes' $f | awk '{print $3}' | tr '\n' ,)
  echo "$i probe=$p lat=$l r0medians=$m eager=$e"
done
