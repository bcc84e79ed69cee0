#!/bin/bash
# nbr6sw (seed 001's six-direction exchange, 7 hosts), all at once and +xyz then -xyz: pmeth
# (default) against tcp, alternating rounds; JSON rows prefixed "TRANSPORT ROUND"
#   R=5 SIZES=16k:64k docs/results-2026-12-06-intel-fresh/nbr6sw.sh
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/nbr6sw}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VC=contrib/vcluster/vcluster
TOPO=${TOPO:-nbr6sw}; R=${R:-5}; SIZES=${SIZES:-8k:128k}
$VC create $TOPO --name nbr --mtu 9000 --host-addrs --force >/dev/null || exit 1
trap '$VC destroy --name nbr >/dev/null 2>&1' EXIT
for rep in $(seq 1 $R); do
  for v in pmeth tcp; do
    if [ $v = pmeth ]; then
      mca="--mca btl self,pmeth,tcp --mca btl_tcp_if_include 198.19.255.0/24"
    else
      mca="--mca btl self,tcp --mca btl_tcp_if_include 198.19.254.0/24"
    fi
    out=$($VC mpirun --name nbr --timeout 300 --ppn 1 $mca --mca mpi_yield_when_idle 1 -- \
          build/bench/xb-halo3d --star -m $SIZES -i 50 -w 5 2>$OUT/nbr-$v-$rep.err)
    echo "$out" | grep -q 'all payloads verified' || { echo "FAILED $v $rep"; tail -5 $OUT/nbr-$v-$rep.err; }
    echo "$out" | grep '^{' | sed "s/^/$v $rep /"
  done
done
