#!/bin/bash
# nbr6sw (seed 001's six-direction exchange, 7 hosts, one switch per axis, MTU 9000), all at
# once and +xyz then -xyz: pmeth variants against tcp, alternating rounds; JSON rows prefixed
# "VARIANT ROUND", the jobs' stderr in $OUT.
#   R=5 SIZES=16k:64k ITERS=50 WARMUP=5 VARIANTS="default tcp" nbr6sw.sh   (nbr6sw-16k-64k.jsonl,
#                                             whose rows name the default variant "pmeth")
#   R=3 SIZES=32k:32k ITERS=200 nbr6sw.sh    (nbr6sw-32k-eager-frames.jsonl)
#   R=5 SIZES=32k:32k ITERS=1000 VARIANTS="default packet tcp" nbr6sw.sh
#                                             (../results-2026-12-06-pmeth-auto/nbr6sw-32k.jsonl,
#                                             whose rows name the default variant "auto")
# Variants: default (self,pmeth,tcp; tcp only between non-neighbours, over the management
# network), frames1 (the same with btl_pmeth_eager_frames 1: one-frame message starts),
# packet (the same on AF_PACKET rings only: btl_pmeth_io_mode packet), tcp.
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-/tmp/nbr6sw}; mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VC=contrib/vcluster/vcluster
R=${R:-3}; SIZES=${SIZES:-32k:32k}; ITERS=${ITERS:-200}; WARMUP=${WARMUP:-10}
$VC create nbr6sw --name nbr --mtu 9000 --host-addrs --force >/dev/null || exit 1
trap '$VC destroy --name nbr >/dev/null 2>&1' EXIT
pm="--mca btl self,pmeth,tcp --mca btl_tcp_if_include 198.19.255.0/24"
declare -A V=([default]="$pm" [frames1]="$pm --mca btl_pmeth_eager_frames 1"
              [packet]="$pm --mca btl_pmeth_io_mode packet"
              [tcp]="--mca btl self,tcp --mca btl_tcp_if_include 198.19.254.0/24")
for rep in $(seq 1 "$R"); do
    for v in ${VARIANTS:-default frames1 tcp}; do
        # shellcheck disable=SC2086
        out=$($VC mpirun --name nbr --timeout 300 --ppn 1 ${V[$v]} --mca mpi_yield_when_idle 1 -- \
              build/bench/xb-halo3d --star -m "$SIZES" -i "$ITERS" -w "$WARMUP" 2> "$OUT/$v-$rep.err")
        grep -q 'all payloads verified' <<< "$out" || { echo "FAILED $v $rep"; tail -5 "$OUT/$v-$rep.err"; }
        grep '^{' <<< "$out" | sed "s/^/$v $rep /"
    done
done
