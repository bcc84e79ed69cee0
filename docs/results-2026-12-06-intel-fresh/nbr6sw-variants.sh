#!/bin/bash
# nbr6sw at one size: pmeth (default; one-frame message starts, btl_pmeth_eager_frames 1)
# against tcp, alternating rounds
#   R=3 SIZES=32k:32k ITERS=200 docs/results-2026-12-06-intel-fresh/nbr6sw-variants.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/nbr6sw}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VC=contrib/vcluster/vcluster
TOPO=${TOPO:-nbr6sw}; R=${R:-4}; SIZES=${SIZES:-32k:32k}; ITERS=${ITERS:-200}
$VC create $TOPO --name nbr --mtu 9000 --host-addrs --force >/dev/null || exit 1
trap '$VC destroy --name nbr >/dev/null 2>&1' EXIT
pm="--mca btl self,pmeth,tcp --mca btl_tcp_if_include 198.19.255.0/24"
declare -A V
V[default]="$pm"
V[frames1]="$pm --mca btl_pmeth_eager_frames 1"
V[tcp]="--mca btl self,tcp --mca btl_tcp_if_include 198.19.254.0/24"
for extra in ${EXTRA_VARIANTS:-}; do V[${extra%%=*}]="$pm ${extra#*=}"; done
for rep in $(seq 1 $R); do
  for v in ${VARIANTS:-default frames1 tcp}; do
    out=$($VC mpirun --name nbr --timeout 300 --ppn 1 ${V[$v]//,,/ } --mca mpi_yield_when_idle 1 -- \
          build/bench/xb-halo3d --star -m $SIZES -i $ITERS -w 10 2>$OUT/nbr2-$v-$rep.err)
    echo "$out" | grep -q 'all payloads verified' || { echo "FAILED $v $rep"; tail -5 $OUT/nbr2-$v-$rep.err; }
    echo "$out" | grep '^{' | sed "s/^/$v $rep /"
  done
done
