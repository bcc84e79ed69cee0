#!/bin/bash
# The tbf shaping really holds each link at its rate: a TCP stream (iperf3) is measured
# on the receiving interface's byte counter and must be within 10% of the setting.
# Frames counted there are what tbf counted (Ethernet header, no FCS), so the wire
# rate, not TCP goodput, is what is compared.  A busy machine can only make a link
# slower (at 1500 bytes 1 Gbit/s is 83k frames/s through two tbf and the veth on two
# cores), so a measurement below tolerance is retried up to 3 times; one above never is.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
vc_setup trate

SECS=3
measure() {   # measure DESCRIPTION WANT_BPS SRC DST IF DSTADDR [UDP_BPS]
    local d=$1 want=$2 r try
    for try in 1 2 3 4; do
        r=$(wire_rate "$3" "$4" "$5" "$6" $SECS ${7:-}) || { not_ok "$d: iperf3 failed"; return; }
        echo "# $d: try $try: $(python3 -c "print(f'{$r/1e6:.1f}')") Mbit/s on the wire (load $(cut -d' ' -f1 /proc/loadavg))"
        within "$r" "$want" 0.10 && { ok "$d: $(python3 -c "print(f'{$r/1e6:.0f}')") Mbit/s within 10% of $((want / 1000000))"; return; }
        [ "$r" -gt "$want" ] && break
    done
    not_ok "$d: $r bit/s not within 10% of $want"
}

vc create pair --links 2 --rate 1gbit --force >/dev/null
measure "1gbit mtu 1500 link eth0 n0->n1" 1000000000 n0 n1 eth0 198.18.0.2
measure "1gbit mtu 1500 link eth1 n1->n0" 1000000000 n1 n0 eth1 198.18.1.1

vc create pair --rate 1gbit --mtu 9000 --force >/dev/null
measure "1gbit mtu 9000 (jumbo) n0->n1" 1000000000 n0 n1 eth0 198.18.0.2

vc create pair --rate 200mbit --force >/dev/null
measure "200mbit mtu 1500 n0->n1" 200000000 n0 n1 eth0 198.18.0.2

# through a switch (bridge, bounded port buffer) the rate holds too.  Jumbo frames here:
# a switched frame crosses two veths, a bridge and two tbf, and at MTU 1500 a busy
# 2-CPU machine runs out of packets per second before the link runs out of bits.  The
# load is UDP offered above the rate: TCP backs off at each overflow of the port's bounded
# buffer, and on a slow day its sawtooth averaged 70-84% of the rate in all four tries
# (a fresh-clone run, 2026-11-28), which says how TCP copes with a shallow buffer, not
# what the shaper lets through
vc create xbar --dims 3 --rate 1gbit --mtu 9000 --force >/dev/null
measure "1gbit mtu 9000 through the switch n0->n1 (UDP offered at 1.3 Gbit/s)" 1000000000 \
    n0 n1 eth0 198.18.0.2 1300M

# many-to-one: n1 and n2 both send to n0; the switch port towards n0 drains at 1 Gbit/s,
# so its bounded buffer overflows (drops counted by its tbf)
drops() { tc -n "xbvc-$XBVC_NAME-sw" -j -s qdisc show dev s0n0 | python3 -c "import json,sys; print(json.load(sys.stdin)[0]['drops'])"; }
# (UDP, each sender offering 0.9 Gbit/s: 1.8 in all; TCP's backing off at each overflow
# kept the port as little as 70% busy)
# (n2's stream outlasts the whole of n1's measured window; below 80% or without drops, as
# a busy machine can make it, the pair is measured again, up to 3 times)
for try in 1 2 3; do
    d0=$(drops)
    "$VC" exec n0 -- iperf3 -s -D -1 -p $((5901 + try)); wait_listen n0 $((5901 + try))
    timeout 30 "$VC" exec n2 -- iperf3 -c 198.18.0.1 -p $((5901 + try)) -t 8 -u -b 900M -l 8000 \
        >/dev/null 2>&1 &
    r=$(wire_rate n1 n0 eth0 198.18.0.1 3 900M)
    wait
    d1=$(drops)
    echo "# two senders into one switch port, try $try: $r bit/s arrive, switch port dropped $((d1 - d0)) frames"
    python3 -c "import sys; sys.exit(0 if ${r:-0} >= 0.8e9 else 1)" && [ $((d1 - d0)) -gt 0 ] && break
    python3 -c "import sys; sys.exit(0 if ${r:-0} > 1.1e9 else 1)" && break
done
# the port is the bottleneck: never more than its 1 Gbit/s (+10%) although 1.8 Gbit/s are
# offered, and kept busy (>= 80%: a busy machine can only make it slower)
check "many-to-one: the port delivers one link's rate, not two ($r bit/s in 0.8..1.1 Gbit/s)" \
    python3 -c "import sys; sys.exit(0 if 0.8e9 <= $r <= 1.1e9 else 1)"
check "many-to-one: the switch port's bounded buffer overflowed ($((d1 - d0)) drops)" [ $((d1 - d0)) -gt 0 ]

check "destroy" bash -c "$VC destroy >/dev/null"
vc_assert_clean
tap_done
