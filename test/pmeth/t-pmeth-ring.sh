#!/bin/bash
# btl pmeth's ring I/O layer (btl_pmeth/pmeth_ring*.c) on its own, no MPI: two network
# namespaces joined by a veth pair (names xbpm*), MTU 1500 and 9000, AF_PACKET and AF_XDP.
#  - thousands of frames of 34 B .. full MTU each way through the ring API, every byte
#    checked, every 7th frame held until answered and sent again (AF_PACKET: with a send
#    ring of 32 slots, so held frames are copied aside -- counted -- and must not change);
#  - foreign frames (another EtherType, job key, destination id) sent with a plain raw
#    socket are never delivered (kernel-side BPF filter / our XDP program);
#  - two processes on one interface each receive only their own frames; with AF_XDP the
#    second process is refused with a clear message and takes AF_PACKET (mixed);
#  - two packet sockets on one interface do not get each other's frames, with and
#    without PACKET_QDISC_BYPASS (so ranks of one host need a shared-memory BTL);
#  - AF_XDP at MTU 9000 pairs an AF_PACKET ring (every send, frames over 3840 B) with a
#    receive-only AF_XDP socket (the smaller frames): both carry frames, none is lost;
#  - control frames (acks, probes) get the last frames of a send ring that data has filled;
#  - a killed AF_XDP process leaves no XDP program on the interface; nothing is left.
. "${TOP_SRCDIR:-.}/test/lib.sh"
T=$TOP_BUILDDIR/test/pmeth/pmeth_ringtest
[ -x "$T" ] || { echo "# $T not built (make check)"; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "1..0 # SKIP needs root (network namespaces, raw sockets)"; exit 0; }
ip netns add xbpm-probe$$ 2>/dev/null && ip netns del xbpm-probe$$ \
    || { echo "1..0 # SKIP cannot create network namespaces here"; exit 0; }

NA=xbpmA$$ NB=xbpmB$$ IA=xbpma$$ IB=xbpmb$$
TMP=$(mktemp -d /tmp/xbpm-ring.XXXXXX)
cleanup() {
    local p
    for p in $(jobs -p); do kill -KILL "$p" 2>/dev/null; done
    ip netns del "$NA" 2>/dev/null; ip netns del "$NB" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$NA" && ip netns add "$NB" \
    && ip link add "$IA" type veth peer name "$IB" \
    && ip link set "$IA" netns "$NA" && ip link set "$IB" netns "$NB" \
    && ip -n "$NA" link set "$IA" up && ip -n "$NB" link set "$IB" up \
    || { not_ok "namespaces and veth pair"; tap_done; exit; }
MA=$(ip netns exec "$NA" cat /sys/class/net/"$IA"/address)
MB=$(ip netns exec "$NB" cat /sys/class/net/"$IB"/address)
ok "namespaces $NA, $NB joined by veth $IA-$IB"

# field NAME FILE: the value of NAME=... on the line of FILE that has it
field() { grep -o "\b$1=[^ ]*" "$2" | head -1 | cut -d= -f2; }
# srv NS IF MAC ID MODE OUT [EXTRA]: a server in the background, waits until it is ready
srv() {
    local ns=$1 ifn=$2 mac=$3 id=$4 mode=$5 out=$6; shift 6
    # emptied here, not by the background job's redirection: the wait below must not read
    # the "ready" of an earlier server that wrote the same file
    : > "$out"
    xb_limit -t 60 -m 512 -- ip netns exec "$ns" "$T" --if "$ifn" --mac "$mac" --me "$id" \
        --mode "$mode" --timeout 40 "$@" server >"$out" 2>&1 &
    local i
    # up to 20 s: on a loaded machine loading the XDP program takes seconds, and the next
    # server must not start before this one holds the interface
    for i in $(seq 400); do grep -q '^ready\|^open-failed' "$out" 2>/dev/null && return 0; sleep 0.05; done
    return 1
}
# cli OUT ARGS...: the client in namespace A (runs to the end)
cli() {
    local out=$1; shift
    xb_limit -t 60 -m 512 -- ip netns exec "$NA" "$T" --if "$IA" --mac "$MA" --peer-mac "$MB" \
        --me 1 --timeout 30 "$@" client >"$out" 2>&1
}

for mtu in 1500 9000; do
    ip -n "$NA" link set "$IA" mtu $mtu && ip -n "$NB" link set "$IB" mtu $mtu
    for mode in packet xdp; do
        tag="MTU $mtu $mode"
        extra=(); [ $mode = packet ] && extra=(--tx 32)
        srv "$NB" "$IB" "$MB" 2 $mode "$TMP/s" --mtu $mtu "${extra[@]}"
        if grep -q '^open-failed' "$TMP/s"; then
            wait
            if [ $mode = xdp ] && grep -q 'was not built in' "$TMP/s"; then
                skip "$tag" "AF_XDP not built (configure found no libxdp/libbpf or clang)"
            else
                not_ok "$tag: the ring would not open: $(cat "$TMP/s")"
            fi
            continue
        fi
        cli "$TMP/c" --peer 2 --mode $mode --mtu $mtu --count 4000 --hold 7 --foreign 10 \
            "${extra[@]}"; rc=$?
        wait
        sed 's/^/# /' "$TMP/c" "$TMP/s"
        check "$tag: $(field got "$TMP/c") echoes of $(field sent "$TMP/c") frames (34..$((mtu + 14)) B) each way, every byte right, $(field reposts "$TMP/c") held frames resent intact" \
            test $rc -eq 0 -a "$(field bad "$TMP/s")" = 0 -a "$(field frames "$TMP/s")" = "$(field sent "$TMP/c")"
        check "$tag: $(field foreign_sent "$TMP/c") foreign frames (EtherType, key, id) sent, none delivered" \
            test "$(field foreign "$TMP/s")" = 0 -a "$(field foreign "$TMP/c")" = 0 -a "$(field foreign_sent "$TMP/c")" -gt 0
        if [ $mode = xdp ] && [ $mtu = 9000 ]; then
            check "$tag: AF_PACKET with AF_XDP beside it for frames up to 3840 B ($(field rx_small_xdp "$TMP/s") of $(field frames "$TMP/s") frames came through AF_XDP at the server, $(field rx_small_xdp "$TMP/c") at the client)" \
                sh -c "grep -q 'ring=\"AF_PACKET + AF_XDP to 3840 B' '$TMP/s' && grep -q 'ring=\"AF_PACKET + AF_XDP to 3840 B' '$TMP/c' \
                       && [ $(field rx_small_xdp "$TMP/s") -gt 0 ] && [ $(field rx_small_xdp "$TMP/s") -lt $(field frames "$TMP/s") ] \
                       && [ $(field rx_small_xdp "$TMP/c") -gt 0 ]"
        elif [ $mode = packet ]; then
            check "$tag: held frames were copied aside when their slot came round ($(field shadow_copies "$TMP/c") shadow copies, counted)" \
                test "$(field shadow_copies "$TMP/c")" -gt 0
            # the checks above cover them too: every byte, and held ones resent from their copy
            check "$tag: lone frames went past the ring ($(field direct_sends "$TMP/c") from the client, $(field lone_held "$TMP/c") of them held and resent from their copy; $(field direct_sends "$TMP/s") from the server), the rest through it ($(field kicks "$TMP/c") / $(field kicks "$TMP/s") kicks)" \
                test "$(field direct_sends "$TMP/c")" -gt 0 -a "$(field direct_sends "$TMP/s")" -gt 0 \
                     -a "$(field lone_held "$TMP/c")" -gt 0 \
                     -a "$(field kicks "$TMP/c")" -gt 0 -a "$(field kicks "$TMP/s")" -gt 0
        else
            check "$tag: AF_XDP resends a held frame from its own chunk: no copies ($(field shadow_copies "$TMP/c") / $(field repost_copies "$TMP/c"))" \
                test "$(field shadow_copies "$TMP/c")" = 0 -a "$(field repost_copies "$TMP/c")" = 0
        fi
    done
done
ip -n "$NA" link set "$IA" mtu 1500 && ip -n "$NB" link set "$IB" mtu 1500

# ---- the control reserve: data never takes the last frames ------------------------------
for mode in packet xdp; do
    if [ $mode = xdp ] && grep -q 'was not built in' "$TMP/s"; then
        skip "control reserve, xdp" "AF_XDP not built"; continue
    fi
    srv "$NB" "$IB" "$MB" 2 $mode "$TMP/s"
    xb_limit -t 60 -m 512 -- ip netns exec "$NA" "$T" --if "$IA" --mac "$MA" --peer-mac "$MB" \
        --me 1 --peer 2 --mode $mode --tx 32 --timeout 20 reserve >"$TMP/c" 2>&1; rc=$?
    wait
    sed 's/^/# /' "$TMP/c" "$TMP/s"
    check "$mode: a send ring of $(field frames "$TMP/c") frames all held: data took $(field data "$TMP/c"), control frames the last $(field ctl "$TMP/c") (the reserve, $(field reserve "$TMP/c")), a control frame given back is taken again while data is refused, data again once all are back; $(field got "$TMP/c") of $(field sent "$TMP/c") frames echoed intact" \
        test $rc -eq 0 -a "$(field ctl "$TMP/c")" -gt 0 -a "$(field got "$TMP/c")" = "$(field sent "$TMP/c")"
done

# ---- two processes on one interface, each with its own frames only -----------------------
for mode in packet xdp; do
    if [ $mode = xdp ] && grep -q 'was not built in' "$TMP/s"; then
        skip "shared interface, xdp" "AF_XDP not built"; continue
    fi
    srv "$NB" "$IB" "$MB" 2 $mode "$TMP/s2"
    srv "$NB" "$IB" "$MB" 3 $mode "$TMP/s3"
    second_mode=$mode
    if [ $mode = xdp ]; then
        check "xdp: a second process on $IB is refused with a clear message: $(cut -d' ' -f3- "$TMP/s3")" \
            grep -q '^open-failed.*\(already has an XDP program\|taken by another process\)' "$TMP/s3"
        wait "$(jobs -p | tail -1)" 2>/dev/null
        srv "$NB" "$IB" "$MB" 3 packet "$TMP/s3"     # what the BTL does: fall back
        second_mode=packet
    fi
    cli "$TMP/c" --peer 2 --peer 3 --mode $mode --count 3000 --foreign 10; rc=$?
    wait
    sed 's/^/# /' "$TMP/c" "$TMP/s2" "$TMP/s3"
    f2=$(field frames "$TMP/s2"); f3=$(field frames "$TMP/s3")
    check "shared $IB ($mode + $second_mode): process 2 got $f2, process 3 got $f3 of $(field sent "$TMP/c"), none foreign or misaddressed, all echoes right" \
        test $rc -eq 0 -a "$f2" -gt 0 -a "$f3" -gt 0 -a "$((f2 + f3))" = "$(field sent "$TMP/c")" \
        -a "$(field foreign "$TMP/s2")" = 0 -a "$(field foreign "$TMP/s3")" = 0 \
        -a "$(field bad "$TMP/s2")" = 0 -a "$(field bad "$TMP/s3")" = 0
done

# ---- two packet sockets of one host on one interface: not delivered to each other --------
for bypass in "" --bypass; do
    srv "$NA" "$IA" "$MA" 5 packet "$TMP/s5" $bypass --timeout 3
    xb_limit -t 30 -m 512 -- ip netns exec "$NA" "$T" --if "$IA" --mac "$MA" --peer-mac "$MA" \
        --me 1 --peer 5 --count 50 --timeout 2 $bypass client >"$TMP/c" 2>&1
    wait
    check "same host, same interface${bypass:+, qdisc bypass}: frames to a sibling socket are not delivered (got $(field frames "$TMP/s5"))" \
        test "$(field frames "$TMP/s5")" = 0
done

# ---- a killed AF_XDP process leaves nothing on the interface -----------------------------
if grep -q 'was not built in' "$TMP/s"; then
    skip "AF_XDP: nothing left after kill -9" "AF_XDP not built"
else
ip netns exec "$NB" "$T" --if "$IB" --mac "$MB" --me 2 --mode xdp --timeout 30 server >"$TMP/sk" 2>&1 &
kpid=$!
# (up to 20 s, as srv: loading the XDP program takes seconds on a loaded machine)
for i in $(seq 400); do grep -q '^ready\|^open-failed' "$TMP/sk" && break; sleep 0.05; done
attached=$(ip -n "$NB" link show "$IB" | grep -c 'prog/xdp')
kill -KILL $kpid; wait $kpid 2>/dev/null
sleep 0.2
left=$(ip -n "$NB" link show "$IB" | grep -c 'prog/xdp')
check "AF_XDP: program attached while the process ran ($attached), gone after kill -9 ($left)" \
    test "$attached" = 1 -a "$left" = 0
fi

cleanup
trap - EXIT
check "namespaces removed" bash -c "! ip netns list | grep -q 'xbpm[AB]$$'"
tap_done
