#!/bin/bash
# The raw-frame floor between two network namespaces over one veth link (pmeth_floor):
# half round trip of a small (64 B: Ethernet + pmeth header + 8 B) and a full-MTU frame,
# AF_PACKET vs AF_XDP, both ends busy-polling on their own CPU, median of RUNS runs (each
# run's median over ITER round trips, timed by the pinging end and by the echoing end);
# then frames/s one way for SECONDS at MTU 1500 and 9000.  A benchmark, not a test: run
#   flock /tmp/xbtl-bench.lock test/pmeth/floor.sh [RUNS] [ITER] [SECONDS]
# Prints a table; raw JSON lines go to $OUT (default build/pmeth-floor.jsonl).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/test/lib.sh"
F=${TOP_BUILDDIR:-$TOP/build}/test/pmeth/pmeth_floor
RUNS=${1:-5} ITER=${2:-20000} SECS=${3:-1}
OUT=${OUT:-$TOP/build/pmeth-floor.jsonl}
[ -x "$F" ] || { echo "$F not built (make check)"; exit 1; }
NA=xbpmFa$$ NB=xbpmFb$$ IA=xbpmfa$$ IB=xbpmfb$$
cleanup() { ip netns del "$NA" 2>/dev/null; ip netns del "$NB" 2>/dev/null; }
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$NA" && ip netns add "$NB" && ip link add "$IA" type veth peer name "$IB" \
    && ip link set "$IA" netns "$NA" && ip link set "$IB" netns "$NB" \
    && ip -n "$NA" link set "$IA" up && ip -n "$NB" link set "$IB" up || exit 1
MA=$(ip netns exec "$NA" cat /sys/class/net/"$IA"/address)
MB=$(ip netns exec "$NB" cat /sys/class/net/"$IB"/address)
: > "$OUT"

# one RUN: background ROLE_B in B on CPU 1, ROLE_A in A on CPU 0; both JSON lines to $OUT
pair() {
    local role_b=$1 role_a=$2 mode=$3 mtu=$4 size=$5; shift 5
    xb_limit -t 60 -m 512 -- ip netns exec "$NB" taskset -c 1 "$F" --if "$IB" --mac "$MB" \
        --peer-mac "$MA" --me 2 --peer 1 --mode "$mode" --mtu "$mtu" --size "$size" \
        --count "$ITER" --timeout 30 "$@" "$role_b" > /tmp/xbpm-floor-b.$$ 2>&1 &
    local i
    for i in $(seq 100); do grep -q 'ready\|open-failed' /tmp/xbpm-floor-b.$$ && break; sleep 0.05; done
    if grep -q open-failed /tmp/xbpm-floor-b.$$; then
        wait; sed 's/^/# /' /tmp/xbpm-floor-b.$$ >&2; rm -f /tmp/xbpm-floor-b.$$; return 1
    fi
    xb_limit -t 60 -m 512 -- ip netns exec "$NA" taskset -c 0 "$F" --if "$IA" --mac "$MA" \
        --peer-mac "$MB" --me 1 --peer 2 --mode "$mode" --mtu "$mtu" --size "$size" \
        --count "$ITER" --seconds "$SECS" --timeout 30 "$@" "$role_a" | grep '^{' >> "$OUT"
    wait
    grep '^{' /tmp/xbpm-floor-b.$$ >> "$OUT"
    rm -f /tmp/xbpm-floor-b.$$
}

for mtu in 1500 9000; do
    ip -n "$NA" link set "$IA" mtu $mtu && ip -n "$NB" link set "$IB" mtu $mtu
    for mode in packet xdp; do
        for size in 64 $((mtu + 14)); do
            for r in $(seq "$RUNS"); do
                pair pong ping $mode $mtu $size || break
            done
        done
        for r in $(seq "$RUNS"); do
            pair sink blast $mode $mtu $((mtu + 14)) --rx 4096 || break
        done
    done
done

python3 - "$OUT" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def med(xs): return statistics.median(xs) if xs else float('nan')
print("half round trip, us (median of per-run medians; ping = timed by the sender, pong = by the echoer)")
print(f"{'mode':32} {'frame B':>8} {'ping med':>9} {'ping min':>9} {'pong med':>9} {'runs':>5}")
keys = sorted({(r['mode'], r['size']) for r in rows if r['role'] == 'ping'})
for mode, size in keys:
    p = [r for r in rows if r['role'] == 'ping' and r['mode'] == mode and r['size'] == size]
    q = [r for r in rows if r['role'] == 'pong' and r['mode'] == mode and r['size'] == size]
    print(f"{mode:32} {size:>8} {med([r['half_rtt_us_median'] for r in p]):>9.2f} "
          f"{min(r['half_rtt_us_min'] for r in p):>9.2f} {med([r['half_rtt_us_median'] for r in q]):>9.2f} {len(p):>5}")
print("\none way, full-MTU frames (median of runs): offered by the sender, arrived at the receiver")
print(f"{'mode':32} {'frame B':>8} {'sent/s':>10} {'arrived/s':>10} {'Gbit/s':>7} {'drops':>7}")
blasts = [r for r in rows if r['role'] == 'blast']
for mode, size in sorted({(r['mode'], r['size']) for r in blasts}):
    b = [r for r in blasts if r['mode'] == mode and r['size'] == size]
    # sinks follow their blast in the file: pair them by order
    s = [r for r in rows if r['role'] == 'sink' and r['mode'] == mode]
    s = [x for x in s if abs(x['gbit_per_s'] * 1e9 / 8 / max(x['frames_per_s'], 1) - size) < 2]
    print(f"{mode:32} {size:>8} {med([r['frames_per_s'] for r in b]):>10.0f} "
          f"{med([r['frames_per_s'] for r in s]):>10.0f} {med([r['gbit_per_s'] for r in s]):>7.2f} "
          f"{med([r['kernel_drops'] for r in s]):>7.0f}")
EOF
