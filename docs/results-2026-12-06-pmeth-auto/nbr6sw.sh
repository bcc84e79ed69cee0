#!/bin/bash
# nbr6sw: pmeth default (auto) vs pmeth packet vs tcp, alternating rounds
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/nbr6sw-auto}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VC=contrib/vcluster/vcluster
R=${R:-5}; SIZES=${SIZES:-32k:32k}; ITERS=${ITERS:-1000}; WARMUP=${WARMUP:-10}
$VC create nbr6sw --name nbr --mtu 9000 --host-addrs --force >/dev/null || exit 1
trap '$VC destroy --name nbr >/dev/null 2>&1' EXIT
pm="--mca btl self,pmeth,tcp --mca btl_tcp_if_include 198.19.255.0/24"
declare -A V=([auto]="$pm" [packet]="$pm --mca btl_pmeth_io_mode packet"
              [tcp]="--mca btl self,tcp --mca btl_tcp_if_include 198.19.254.0/24")
for rep in $(seq 1 "$R"); do
    for v in ${VARIANTS:-auto packet tcp}; do
        out=$($VC mpirun --name nbr --timeout 300 --ppn 1 ${V[$v]} --mca mpi_yield_when_idle 1 --mca btl_base_verbose 10 -- \
              build/bench/xb-halo3d --star -m "$SIZES" -i "$ITERS" -w "$WARMUP" 2> "$OUT/$v-$rep.err")
        grep -q 'all payloads verified' <<< "$out" || { echo "FAILED $v $rep"; tail -5 "$OUT/$v-$rep.err"; }
        grep '^{' <<< "$out" | sed "s/^/$v $rep /"
    done
done
