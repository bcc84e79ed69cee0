#!/bin/bash
# Interleaved A/B runs by placement (README.md): ab.sh ROUNDS, with TS="variant ..." (the
# order reverses every other round), SIZES, ITERS, BENCH (xb-latency).  Prints a line a
# run and size: variant, size, the two placement probes (ns), the figure.  The variants
# other than ucx/vader/rsm load btl rsm from a copy of Open MPI's component directory
# (build/rsm-<name>-s75: cp -a /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3, then that
# build's mca_btl_rsm.so into it).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
B=/work/main/build/bench/${BENCH:-xb-latency}
BASE=/work/main/build/rsm-base-s75
declare -A T=( [vader]="--mca pml ob1 --mca btl self,vader" [ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any" [rsm]="--mca pml ob1 --mca btl self,rsm" [base]="--mca mca_base_component_path $BASE --mca pml ob1 --mca btl self,rsm" [head]="--mca mca_base_component_path /work/main/build/rsm-head-s75 --mca pml ob1 --mca btl self,rsm" [idle]="--mca mca_base_component_path /work/main/build/rsm-idle-s75 --mca pml ob1 --mca btl self,rsm" [pause]="--mca mca_base_component_path /work/main/build/rsm-pause-s75 --mca pml ob1 --mca btl self,rsm" [head2]="--mca mca_base_component_path /work/main/build/rsm-head2-s75 --mca pml ob1 --mca btl self,rsm" [base2]="--mca mca_base_component_path $BASE --mca pml ob1 --mca btl self,rsm" [basenp]="--mca mca_base_component_path $BASE --mca pml ob1 --mca btl self,rsm --mca btl_rsm_pair_tiny 0" [pausenp]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_pair_tiny 0" )
for r in $(seq ${1:-10}); do
  ts="${TS:-ucx rsm base}"; [ $((r % 2)) = 0 ] && ts=$(echo $ts | tr " " "\n" | tac | tr "\n" " ")
  for t in $ts; do
    timeout 60 mpirun -np 2 --bind-to core ${T[$t]} $EXTRA $B -n -m ${SIZES:-8:8} -i ${ITERS:-20000} $BARGS 2>&1 | grep '^{' | python3 -c "
import sys,json
for l in sys.stdin:
    d=json.loads(l); m=d.get('latency_us') or d.get('mbps') or d.get('msg_rate') ; print('$t', d['size'], d['probe_ns'], round(m,3))"
  done
done
