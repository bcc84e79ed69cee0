#!/bin/bash
# Baselines that btl_pmeth is compared with: Open MPI's tcp BTL between two virtual nodes
# over 1 and over 2 Gigabit links, MTU 1500 and 9000, with the project's verified
# benchmarks.  Each point is run REPS times (the machine is shared and noisy): the
# best and the median are printed.  Usage: contrib/vcluster/baseline.sh [REPS]
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
VC=$TOP/contrib/vcluster/vcluster
B=${TOP_BUILDDIR:-$TOP/build}/bench
REPS=${1:-5}
export XBVC_NAME=base OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
trap '"$VC" destroy >/dev/null' EXIT
for p in xb-latency xb-bw; do [ -x "$B/$p" ] || { echo "$B/$p missing: build first" >&2; exit 1; }; done

# one KEY PROGRAM ARGS...: the value KEY of the last JSON row of one verified run
one() {
    local key=$1; shift
    timeout 150 "$VC" mpirun --ifs "$ifs" --timeout 120 -- "$@" 2>/dev/null | python3 -c "
import json,sys
r=[json.loads(l) for l in sys.stdin if l.startswith('{')]
print(r[-1]['$key'] if r and all(x['verified'] for x in r) else 'nan')"
}
stats() { python3 -c "
import statistics,sys; v=[float(x) for x in sys.argv[2:] if x!='nan']; best=min if sys.argv[1]=='min' else max
print(f'best {best(v):8.2f}  median {statistics.median(v):8.2f}  ({len(v)} runs)' if v else 'no valid run')" "$@"; }

echo "# $(date -Is) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for mtu in 1500 9000; do
    "$VC" create pair --links 2 --rate 1gbit --mtu "$mtu" --force >/dev/null
    for ifs in eth0 eth0,eth1; do
        lat=() bw=()
        for _ in $(seq "$REPS"); do
            lat+=("$(one latency_us "$B/xb-latency" -m 8 -i 5000)")
            bw+=("$(one mbps "$B/xb-bw" -m 1M -i 20 -w 2)")
        done
        echo "mtu $mtu links $ifs  latency 8 B [us]:  $(stats min "${lat[@]}")"
        echo "mtu $mtu links $ifs  bandwidth 1 MiB [MB/s]: $(stats max "${bw[@]}")"
    done
done
