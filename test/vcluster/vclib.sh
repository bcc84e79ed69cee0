# Helpers for the virtual-cluster tests (source after test/lib.sh).
# Each test owns one cluster name; the EXIT trap destroys it whatever happens.

VC="$TOP_SRCDIR/contrib/vcluster/vcluster"
BENCH="$TOP_BUILDDIR/bench"

vc_require() {
    if [ "$(id -u)" -ne 0 ]; then echo "# needs root (network namespaces)"; exit 77; fi
    local t
    for t in ip tc nft socat iperf3 ping mpirun; do
        command -v "$t" >/dev/null || { echo "# $t missing: apt-get install -y iproute2 nftables socat iperf3 iputils-ping openmpi-bin"; exit 77; }
    done
}

# vc_setup NAME: use cluster NAME for this test and remove it (and $VC_TMP) on any exit.
vc_setup() {
    export XBVC_NAME=$1
    "$VC" destroy >/dev/null 2>&1
    VC_HOST_BEFORE=$(vc_host_net)
    trap 'vc_cleanup' EXIT
    trap 'exit 130' INT TERM HUP
}

vc_cleanup() {
    local rc=$?     # first: the test's own status is what the trap exits with
    [ -n "${VC_TMP:-}" ] && rm -rf "$VC_TMP"
    timeout 60 "$VC" destroy >/dev/null 2>&1 || echo "# destroy of $XBVC_NAME failed"
    exit $rc
}

vc() { timeout 120 "$VC" "$@"; }

# vc_mpirun ARGS...: `vcluster mpirun` under a time limit (its own --timeout of
# VC_JOB_SECS, default 120 s, and 30 s more around it for its clean-up) and a memory
# limit: test/lib.sh's xb_limit (the private memory of the whole tree - vcluster, mpirun,
# agents, orteds, ranks - plus RLIMIT_AS per process); where lib.sh has no xb_limit,
# RLIMIT_AS of VC_MEM_AS bytes (default 4 GiB) per process.
VC_MEM_AS=${VC_MEM_AS:-$((4 << 30))}
vc_mpirun() {
    local secs=${VC_JOB_SECS:-120}
    if declare -F xb_limit >/dev/null; then
        xb_limit -t $((secs + 30)) -- "$VC" mpirun --timeout "$secs" "$@"
    else
        timeout -k 10 $((secs + 30)) prlimit --as="$VC_MEM_AS" "$VC" mpirun --timeout "$secs" "$@" </dev/null
    fi
}

# vc_holders: pids of the cluster's host holders (they live in the namespaces for good).
vc_holders() {
    python3 -c "import json,sys
st=json.load(open('/run/xbvc/$XBVC_NAME/state.json'))
print(' '.join(str(p) for p, _ in st.get('holders', {}).values()))" 2>/dev/null
}

# vc_job_procs NODE: processes in the node's namespace other than its holder (a job's).
vc_job_procs() {
    local h; h=" $(vc_holders) "
    for p in $(ip netns pids "xbvc-$XBVC_NAME-$1" 2>/dev/null); do
        case "$h" in *" $p "*) ;; *) echo "$p";; esac
    done
}

# vc_json EXPR: evaluate a Python expression over `status --json` (bound as s).
vc_json() {
    "$VC" status --json | python3 -c "import json,sys; s=json.load(sys.stdin); print($1)"
}

# ifstat NODE IF FIELD: rx_bytes / tx_bytes / rx_packets... of a node's interface.
ifstat() {
    ip -n "xbvc-$XBVC_NAME-$1" -j -s link show dev "$2" | python3 -c "
import json,sys; d,k=sys.argv[1].split('_'); print(json.load(sys.stdin)[0]['stats64'][d][k])" "$3"
}

# wire_rate SRC DST IF DSTADDR SECONDS [UDP_BPS]: bits/s that arrive at DST's IF while SRC
# sends a TCP stream (or a UDP one offered at UDP_BPS), sampled from the interface counters
# after a 1 s warm-up (slow start).
# wait_listen NODE PORT: until a TCP socket listens on PORT in NODE (at most 5 s; iperf3's
# server listens on TCP for its control connection, UDP tests too).  Why: iperf3 -D returns
# before the daemon listens, and a client that comes first fails at once.
wait_listen() {
    local i
    for i in $(seq 100); do
        "$VC" exec "$1" -- ss -Hltn "sport = :$2" 2>/dev/null | grep -q . && return 0
        sleep 0.05
    done
    return 1
}

wire_rate() {
    local src=$1 dst=$2 ifn=$3 daddr=$4 secs=$5 udp=${6:-} port=$((5200 + RANDOM % 700))
    local load=()
    # UDP_BPS given: a UDP stream offered at that rate (8000-byte datagrams), which does not
    # back off when a bounded buffer on the way drops, so what arrives is what the path drains
    [ -n "$udp" ] && load=(-u -b "$udp" -l 8000)
    "$VC" exec "$dst" -- iperf3 -s -1 -D -B "$daddr" -p "$port" || return 1
    wait_listen "$dst" "$port" || return 1
    timeout $((secs + 15)) "$VC" exec "$src" -- iperf3 -c "$daddr" -p "$port" -t $((secs + 2)) \
        "${load[@]}" >/dev/null 2>&1 &
    local cpid=$!
    # one process samples counter and clock together, inside the node (sysfs there is its own)
    "$VC" exec "$dst" -- python3 -c '
import sys, time
f, secs = "/sys/class/net/%s/statistics/rx_bytes" % sys.argv[1], float(sys.argv[2])
time.sleep(1)
b0, t0 = int(open(f).read()), time.monotonic()
time.sleep(secs)
b1, t1 = int(open(f).read()), time.monotonic()
print(int((b1 - b0) * 8 / (t1 - t0)))' "$ifn" "$secs"
    wait $cpid
}

# within VALUE WANT FRACTION: is |VALUE - WANT| <= FRACTION * WANT ?
within() { python3 -c "import sys; sys.exit(0 if abs($1 - $2) <= $3 * $2 else 1)"; }

# What the tool could leak into the initial namespace if it went wrong: veths, bridges,
# shaping/filter qdiscs, nftables tables (one per line, sorted).
vc_host_net() {
    {
        { ip -o link show type veth; ip -o link show type bridge; } | awk '{print "link", $2}'
        tc qdisc show | grep -E '^qdisc (tbf|clsact|ingress)' | awk '{print "qdisc", $2, $5}'
        nft list tables | sed 's/^/nft /'
    } 2>/dev/null | sort
}

# leftovers: nothing of this test's cluster may remain, and the initial namespace has
# no veth, bridge, tbf/clsact qdisc or nftables table it did not have before the test.
vc_assert_clean() {
    local bad="" new
    ip -j netns list | grep -q "\"xbvc-$XBVC_NAME-" && bad="$bad namespaces"
    [ -e "/run/xbvc/$XBVC_NAME" ] && bad="$bad state-dir"
    new=$(comm -13 <(echo "$VC_HOST_BEFORE") <(vc_host_net))
    [ -n "$new" ] && { bad="$bad initial-namespace:"; echo "$new" | diag; }
    ip -o link show | grep -q '02:58:56:' && bad="$bad our-MAC-in-initial-namespace"
    ps -eo args | grep -v grep | grep -q "^socat .*xbvc/$XBVC_NAME/" && bad="$bad socat"
    # orted and ranks carry the cluster's session directory (orte_tmpdir_base) or job
    # directory on their command line or in their environment
    ps -eo args | grep -v grep | grep -q "xbvc/$XBVC_NAME/" && bad="$bad process"
    grep -ls "XBVC_JOB=/run/xbvc/$XBVC_NAME/" /proc/[0-9]*/environ 2>/dev/null | grep -q . && bad="$bad job-process"
    # a host's /dev/shm tmpfs is named after its cluster; it must be gone from every mount table
    cat /proc/[0-9]*/mountinfo 2>/dev/null | grep -q "xbvc-$XBVC_NAME-" && bad="$bad mount"
    if [ -z "$bad" ]; then ok "nothing of cluster $XBVC_NAME left (namespaces, veth, bridges, qdiscs, nft, socat, hosts, daemons, mounts, state)"
    else not_ok "left behind:$bad"; fi
}
