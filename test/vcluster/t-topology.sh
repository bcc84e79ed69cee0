#!/bin/bash
# Every layout builds; every link is up with its MTU and tbf rate; full-size frames
# cross every link and one byte more does not; routes reach non-neighbours;
# create and destroy are idempotent; nothing is left behind.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
vc_setup ttopo
quiet() { "$@" >/dev/null 2>&1; }

# create arguments | nodes | links in all
while IFS='|' read -r args nodes nlinks; do
    if ! out=$(vc create $args --force 2>&1); then
        not_ok "create $args"; echo "$out" | diag; continue
    fi
    ok "create $args"
    check "$args: $nodes node namespaces, $nlinks links in all" \
        [ "$(vc_json "len(s['nodes'])"),$(vc_json "sum(len(n['links']) for n in s['nodes'])")" = "$nodes,$nlinks" ]
    mtu=$(vc_json "s['spec']['mtu']")
    check "$args: every link up with carrier, MTU $mtu, tbf at 1 Gbit/s" [ "$(vc_json \
        "all(l['up'] and l['carrier'] and l['mtu']==$mtu and l['rate_bps']==10**9 for n in s['nodes'] for l in n['links'])")" = True ]
    if out=$(vc check 2>&1); then ok "$args: full-MTU ping over every link"
    else not_ok "$args: full-MTU ping over every link"; echo "$out" | diag; fi
done <<'EOF'
pair --links 2|2|4
pair --nodes 4 --mtu 9000|4|4
ring --nodes 4 --links 2|4|16
xbar --dims 3x2|6|12
nbr3|4|6
nbr6|7|12
nbr6sw|7|9
EOF

# MTU is enforced, not just configured: 9000 passes with DF, 9001 does not
vc create pair --mtu 9000 --force >/dev/null
check "jumbo: 9000-byte frame crosses" quiet vc exec n0 -- ping -c1 -W2 -M do -s 8972 198.18.0.2
check "jumbo: 9001-byte frame is refused" bash -c "! $VC exec n0 -- ping -c1 -W2 -M do -s 8973 198.18.0.2 >/dev/null 2>&1"

# routes: ring n0 reaches the far side (n2) through a forwarding node; hyper-crossbar
# n0 (0,0) reaches n5 (2,1) that shares no switch with it; nbr6 leaves reach each other
vc create ring --nodes 4 --force >/dev/null
check "ring: n0 reaches n2's address on the n2-n3 link (2 hops)" quiet vc exec n0 -- ping -c1 -W2 198.18.2.3
vc create xbar --dims 3x2 --force >/dev/null
check "xbar 3x2: n0 reaches n5 through a switch of each dimension" quiet vc exec n0 -- ping -c1 -W2 198.18.4.6
vc create nbr6 --force >/dev/null
check "nbr6: +X neighbour reaches -Z neighbour through the centre" quiet vc exec n1 -- ping -c1 -W2 198.18.5.7
vc create nbr6sw --force >/dev/null
check "nbr6sw: the centre's one x link reaches both x neighbours through the x switch" \
    bash -c "$VC exec n0 -- ping -c1 -W2 -I x 198.18.0.2 >/dev/null && $VC exec n0 -- ping -c1 -W2 -I x 198.18.0.3 >/dev/null"
check "nbr6sw: a +X neighbour reaches the -Z neighbour through the centre" quiet vc exec n1 -- ping -c1 -W2 198.18.2.7
vc create nbr6 --force >/dev/null

# idempotence: same create is a no-op keeping the namespaces; different layout refused
check "create twice: second is a no-op" bash -c "$VC create nbr6 | grep -q 'already exists'"
check "create with another layout without --force is refused" bash -c "! $VC create nbr3 2>/dev/null"
ns_before=$(ip netns list | grep -c "xbvc-$XBVC_NAME-")
check "a damaged cluster is rebuilt by create" bash -c \
    "ip netns del xbvc-$XBVC_NAME-n3 && $VC create nbr6 >/dev/null 2>&1 && [ \$(ip netns list | grep -c xbvc-$XBVC_NAME-) = $ns_before ]"
# interrupted in the middle of building: the half-built cluster is removed
quiet vc destroy
"$VC" create xbar --dims 6x6 >/dev/null 2>&1 &
cpid=$!
sleep 0.6
kill -TERM $cpid; wait $cpid; rc=$?
if [ "$rc" = 0 ]; then
    skip "SIGTERM during create" "create finished within 0.6 s"
else
    check "SIGTERM during create (status $rc): nothing of the half-built cluster remains" \
        bash -c "! ip netns list | grep -q xbvc-$XBVC_NAME- && [ ! -e /run/xbvc/$XBVC_NAME ]"
fi

# a test killed half-way still removes its cluster (the EXIT trap of vclib.sh)
bash -c ". '$TOP_SRCDIR/test/lib.sh'; . '$TOP_SRCDIR/test/vcluster/vclib.sh'; vc_setup ttrap
         \"\$VC\" create pair >/dev/null; kill -TERM \$\$; sleep 30" >/dev/null 2>&1
check "a test killed by SIGTERM leaves no namespace of its cluster" \
    bash -c "! ip netns list | grep -q xbvc-ttrap- && [ ! -e /run/xbvc/ttrap ]"

vc create nbr6 >/dev/null
check "destroy" quiet vc destroy
check "destroy again is a no-op" bash -c "$VC destroy | grep -q 'nothing to destroy'"
check "status of no cluster says so" bash -c "$VC status | grep -q 'no cluster'"
vc_assert_clean
tap_done
