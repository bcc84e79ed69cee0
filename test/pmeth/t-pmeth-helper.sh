#!/bin/bash
# btl pmeth for ordinary users: jobs of nobody (no CAP_NET_RAW) across two virtual hosts.
# Without a helper pmeth declines with the one message that names both ways out (and the
# job ends, no hang); with pmeth-helperd on each host the p2p suite passes with verified
# bytes over the link; a non-allowed interface, a malformed request and a client in
# another network namespace are refused and logged; a locked filter cannot be widened;
# a helper started with --xdp hands out AF_XDP sockets (alone at MTU 1500, beside an
# AF_PACKET ring at 9000) that the user can neither rebind nor resize, the job passes over
# them and its XDP program is gone when it ends; a helper without --xdp makes io_mode
# auto fall back with one line naming why, asked once for all of a rank's links; a helper
# of before the protocol's optional flags (pmeth_helperd_before) is asked again without
# them and serves the job; the helpers stop cleanly and nothing is left behind.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
command -v setpriv >/dev/null || { echo "# setpriv missing (util-linux)"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "# no user nobody"; exit 77; }
HELPERD=$TOP_BUILDDIR/btl_pmeth/helper/pmeth-helperd
BEFORE=$TOP_BUILDDIR/test/pmeth/pmeth_helperd_before
ASK=$TOP_BUILDDIR/test/pmeth/pmeth_helper_ask
P2P=$TOP_BUILDDIR/test/mpi/mpi_p2p
for f in "$HELPERD" "$BEFORE" "$ASK" "$P2P"; do [ -x "$f" ] || { echo "# $f not built (make check)"; exit 1; }; done

vc_setup tphelp
VC_TMP=$(mktemp -d /tmp/xbvc-tphelp.XXXXXX); LOG=$VC_TMP
# every vcluster host has its own /dev/shm (the rest of the file system is shared), so one
# path names each host's own helper, as /run/pmeth-helper.sock would on a real cluster
SOCK=/dev/shm/pmeth-helper.sock
LOCKED=/dev/shm/pmeth-helper-locked.sock
XSOCK=/dev/shm/pmeth-helper-xdp.sock
OSOCK=/dev/shm/pmeth-helper-before.sock
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
HELPER_PIDS=""

# helper NODE LOGNAME ARGS...: start pmeth-helperd ($DAEMON if set) on NODE (it stays in
# the foreground)
helper() {
    local node=$1 name=$2; shift 2
    "$VC" exec "$node" -- "${DAEMON:-$HELPERD}" "$@" </dev/null >/dev/null 2>"$LOG/$name.log" &
    HELPER_PIDS="$HELPER_PIDS $!"
}
# wait_socket NODE PATH: the helper's socket appears (up to 5 s)
wait_socket() {
    local i
    for i in $(seq 50); do
        "$VC" exec "$1" -- test -S "$2" && return 0
        sleep 0.1
    done
    return 1
}
has() { grep -q -- "$2" <<<"$1"; }     # has TEXT PATTERN
both_sockets() { wait_socket n0 "$1" && wait_socket n1 "$1"; }
helpers_stop() {
    local p
    for p in $HELPER_PIDS; do kill -TERM "$p" 2>/dev/null; done
    for p in $HELPER_PIDS; do wait "$p" 2>/dev/null; done
    HELPER_PIDS=""
}
# the helpers go first, whatever happens; then the cluster (vc_cleanup keeps the status)
trap 'rc=$?; helpers_stop; (exit $rc); vc_cleanup' EXIT

pm() {      # OUT ARGS...: a job of nobody over self,pmeth, on eth0 ($PM_IFS if set)
    local out=$1; shift
    vc_mpirun --user nobody --mca btl self,pmeth --mca btl_pmeth_if_include "${PM_IFS:-eth0}" \
        "$@" >"$out" 2>"$out.err"
}
# p2p_job NAME LABEL ARGS...: the p2p suite up to 1 MiB as nobody, verbose, with ARGS; its
# lines relayed under LABEL, and one check that it passed with verified bytes over the link
p2p_job() {
    local name=$1 label=$2 a rc sent; shift 2
    a=$(ifstat n0 eth0 tx_bytes)
    pm "$LOG/$name" --mca btl_base_verbose 10 "$@" -- "$P2P" -M 1048576; rc=$?
    sent=$(( $(ifstat n0 eth0 tx_bytes) - a ))
    relay_tap "$label: " <"$LOG/$name"
    check "... the job passed (exit $rc) with verified bytes, $sent B sent on n0's eth0" \
        eval '[ $rc -eq 0 ] && grep -q "^ok .*verified" "$LOG/$name" && ! grep -q "^not ok" "$LOG/$name" \
            && [ $sent -gt 2000000 ]'
}

# a site that configured IPv6's EtherType would let any local user read IPv6 traffic: the
# daemon refuses to start, and says why
out=$("$HELPERD" --ethertype 0x86dd --socket "$LOG/refused.sock" 2>&1 </dev/null); rc=$?
check "pmeth-helperd refuses to serve another protocol's EtherType (0x86dd: exit $rc, '$(tail -1 <<<"$out" | cut -c1-120)')" \
    sh -c "[ $rc -ne 0 ] && ! test -e '$LOG/refused.sock' && grep -q \"is IPv6's\" <<'EOT'
$out
EOT"

# two links: most jobs use eth0 alone; those that show what a rank asks for each of its
# links use both
vc create pair --links 2 --rate 0 --force >/dev/null || { not_ok "create pair"; tap_done; exit; }

# ---- no capability, no helper: one clear message, the job ends ------------------------
start=$SECONDS
pm "$LOG/none" --mca btl_pmeth_helper "$SOCK" -- "$P2P" -M 65536; rc=$?
took=$((SECONDS - start))
check "nobody without a helper: the job fails (exit $rc) within $took s, no hang" \
    [ "$rc" -ne 0 -a "$rc" -ne 124 -a "$took" -lt 60 ]
err=$(cat "$LOG/none.err")
check "... pmeth declines with one message naming both ways out (CAP_NET_RAW, pmeth-helperd and btl_pmeth_helper)" \
    eval 'has "$err" "may not open raw Ethernet rings on eth0" && has "$err" "needs CAP_NET_RAW" \
        && has "$err" "helper at $SOCK is not reachable" && has "$err" "pmeth-helperd --allow" \
        && has "$err" "--mca btl_pmeth_helper"'
grep -A14 'may not open raw' "$LOG/none.err" | head -16 | diag

# ---- a helper on each host, allowing the data link -------------------------------------
helper n0 helper0 --allow eth0,eth1 --socket "$SOCK"
helper n1 helper1 --allow eth0,eth1 --socket "$SOCK"
check "pmeth-helperd listens on each host" both_sockets "$SOCK"
mode=$("$VC" exec n0 -- stat -c '%U %a' "$SOCK")
check "... its socket is root's, mode 0666 (every local user may ask): $mode" [ "$mode" = "root 666" ]

p2p_job p2p "nobody with the helper" --mca btl_pmeth_helper "$SOCK"
check "... every rank says its socket came from the helper" \
    [ "$(grep -c 'eth0: AF_PACKET socket from the pmeth helper' "$LOG/p2p.err")" = 2 ]
granted='uid 65534 \(nobody\) pid [0-9]+: eth0: granted'
check "... each helper logged the grant to uid 65534 (nobody) with its pid" \
    eval 'grep -Eq "$granted" "$LOG/helper0.log" && grep -Eq "$granted" "$LOG/helper1.log"'
# the send socket for lone frames (btl_pmeth_direct_max) comes with it, and carries them
lone=$(grep -ho '[0-9]* lone frames sent past it' "$LOG/p2p.err" | awk '$1 > 0 {n++} END {print n + 0}')
check "... with a send socket each, over which both ranks sent lone frames past the ring" \
    eval '[ "$(grep -c "with a socket for lone frames" "$LOG/p2p.err")" = 2 ] && [ $lone = 2 ] \
          && grep -q "with a send socket" "$LOG/helper0.log"'
out=$("$VC" exec n0 -- $NOBODY "$ASK" "$SOCK" eth0 --send-escape)
echo "$out" | sed 's/^/--send-escape: /' | diag
# the control: a socket without that filter, bound the same way, sees those frames
control=$("$VC" exec n0 -- python3 -c '
import socket, time
r = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)); r.bind(("eth0", 3))
r.setblocking(False)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
for i in range(5): s.sendto(b"\xff" * 6 + b"\0" * 6 + b"\x88\xb5" + b"\0" * 50, ("eth0", 0x88b5))
time.sleep(0.2); n = 0
while True:
    try: r.recv(2048); n += 1
    except BlockingIOError: break
print(n)')
check "... the send socket receives nothing, whatever nobody tries: its filter is locked, and frames sent on the link do not reach it even bound to every EtherType (an unfiltered socket bound so got $control of 5)" \
    eval 'has "$out" "send socket: replace filter: Operation not permitted" \
          && has "$out" "send socket: detach filter: Operation not permitted" \
          && has "$out" "send socket: frames received of 5 sent on eth0: 0" && [ "$control" = 5 ]'

# ---- refusals ------------------------------------------------------------------------
out=$("$VC" exec n0 -- $NOBODY "$ASK" "$SOCK" mg0); rc=$?
check "a request for an interface not allowed (mg0) is refused with a clear reply" \
    eval '[ $rc -eq 3 ] && has "$out" "interface mg0 is not one the site allowed"'
check "... and logged" grep -Eq 'uid 65534 \(nobody\) pid [0-9]+: mg0: refused: not allowed' "$LOG/helper0.log"
pm "$LOG/notallowed" --mca btl_pmeth_helper "$SOCK" --mca btl_pmeth_if_include mg0 -- "$P2P" -M 1024; rc=$?
check "a job asking for it: pmeth declines, quoting the helper's refusal (exit $rc)" \
    eval '[ $rc -ne 0 -a $rc -ne 124 ] && grep -q "refused: interface mg0 is not one the site allowed" "$LOG/notallowed.err"'
out=$("$VC" exec n0 -- $NOBODY "$ASK" "$SOCK" --garbage); rc=$?
check "a malformed request (a slash in the name) gets a refusal and no descriptor" \
    eval '[ $rc -eq 0 ] && has "$out" "bad interface name"'
holder0=$(python3 -c "import json; print(json.load(open('/run/xbvc/$XBVC_NAME/state.json'))['holders']['n0'][0])")
# n0's /dev/shm (its mount namespace) but the initial network namespace
out=$(nsenter -t "$holder0" -m -- $NOBODY "$ASK" "$SOCK" eth0); rc=$?
check "a client in another network namespace is refused (its interface index would name another link)" \
    eval '[ $rc -eq 3 ] && has "$out" "another network namespace"'
out=$("$VC" exec n0 -- $NOBODY "$ASK" "$SOCK" eth0 --escape)
check "... and the helper still serves after all that" has "$out" "^granted"
echo "$out" | sed 's/^/default helper (filter locked): /' | diag

# a user who tries to stall the helper for everyone: a request that passes a TCP socket whose
# close waits (unsent data to a peer that never reads, over loopback, SO_LINGER 60 s), and 8
# connections that send nothing.  Served one at a time, the helper sat in that close for a
# minute and others' requests timed out; now each connection has a process of its own, and
# one user at most 4 at a time
"$VC" exec n0 -- python3 - "$SOCK" >"$LOG/stall" 2>&1 <<'PY' &
import socket, struct, sys, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); c.setblocking(False)
try:
    while True:
        c.send(b"x" * 65536)
except BlockingIOError:
    pass
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 60))
h = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); h.connect(sys.argv[1])
socket.send_fds(h, [bytes(40)], [c.fileno()]); c.close()
idle = []
for i in range(8):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1]); idle.append(s)
print("stalling", flush=True)
time.sleep(60)
PY
staller=$!
for _ in $(seq 100); do grep -q stalling "$LOG/stall" && break; sleep 0.1; done
t0=$(date +%s.%N)
out=$("$VC" exec n0 -- $NOBODY "$ASK" "$SOCK" eth0 --escape)
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
refused=$(grep -c 'uid 0 pid [0-9]*: refused: 4 requests of this user are in progress' "$LOG/helper0.log")
check "a user stalling the helper (a passed socket whose close waits 60 s, 8 silent connections): nobody is served in $took s; the staller's connections past 4 refused ($refused)" \
    eval 'grep -q stalling "$LOG/stall" && has "$out" "^granted" && [ "$refused" -ge 1 ]'
pkill -f -- "python3 - $SOCK" 2>/dev/null; wait "$staller" 2>/dev/null

# ---- a locked filter and a mark --------------------------------------------------------
helper n0 locked0 --allow eth0 --socket "$LOCKED" --lock-filter --mark 0x88b5
helper n1 locked1 --allow eth0 --socket "$LOCKED" --lock-filter --mark 0x88b5
both_sockets "$LOCKED"
out=$("$VC" exec n0 -- $NOBODY "$ASK" "$LOCKED" eth0 --escape)
echo "$out" | sed 's/^/locked filter: /' | diag
check "lock_filter: the user can neither replace nor detach the helper's receive filter" \
    eval 'has "$out" "replace filter: Operation not permitted" && has "$out" "detach filter: Operation not permitted"'
check "mark: the socket carries SO_MARK 0x88b5 (for the site's egress rules), flags say locked and marked" \
    has "$out" "granted flags=0x3 mark=0x88b5"
pm "$LOG/locked" --mca btl_pmeth_helper "$LOCKED" --mca btl_base_verbose 10 -- "$P2P" -M 65536; rc=$?
if [ $rc -eq 0 ] && grep -q 'receive filter locked' "$LOG/locked.err"; then
    relay_tap "nobody, locked filter: " <"$LOG/locked"
else
    not_ok "a job over sockets with a locked filter (exit $rc)"; tail -20 "$LOG/locked.err" | diag
fi

# ---- AF_XDP from a helper started with --xdp -------------------------------------------
no_xdp_prog() {     # no XDP program is left on either link of either host
    local n i
    for n in n0 n1; do
        for i in eth0 eth1; do "$VC" exec $n -- ip -d link show $i | grep -q 'prog/xdp' && return 1; done
    done
    return 0
}
if ! nm "$HELPERD" 2>/dev/null | grep -q pmeth_xdp_open; then
    skip "AF_XDP from the helper" "pmeth-helperd built without AF_XDP (libxdp, libbpf, clang)"
else
    helper n0 xdp0 --allow eth0 --socket "$XSOCK" --xdp
    helper n1 xdp1 --allow eth0 --socket "$XSOCK" --xdp
    both_sockets "$XSOCK"
    out=$("$VC" exec n0 -- $NOBODY "$ASK" "$XSOCK" eth0 --xdp); rc=$?
    echo "$out" | sed 's/^/AF_XDP socket from the helper: /' | diag
    check "--xdp: nobody gets an AF_XDP socket (exit $rc), and can neither rebind it nor resize or add its rings" \
        eval '[ $rc -eq 0 ] && has "$out" "granted .* AF_XDP" && has "$out" "^rebind to lo: " \
            && has "$out" "^resize the receive ring: " && has "$out" "^add a send ring: " \
            && ! has "$out" "possible"'
    check "... its XDP program went with the asking process" no_xdp_prog
    # a process killed while it holds one: the kernel closes its link, and the program goes
    "$VC" exec n0 -- $NOBODY "$ASK" "$XSOCK" eth0 --xdp-hold >"$LOG/hold" 2>&1 &
    holder=$!
    for _ in $(seq 200); do grep -q holding "$LOG/hold" && break; sleep 0.1; done    # XDP loads take seconds
    held=$("$VC" exec n0 -- ip -d link show eth0 | grep -c 'prog/xdp')
    pkill -KILL -f -- "$ASK $XSOCK eth0 --xdp-hold"; wait "$holder" 2>/dev/null
    sleep 0.2
    check "... one held by a process then killed with SIGKILL: attached while held ($held), gone after" \
        eval '[ "$held" = 1 ] && no_xdp_prog'
    p2p_job xdp "nobody over AF_XDP from the helper" --mca btl_pmeth_helper "$XSOCK" \
        --mca btl_pmeth_io_mode xdp
    check "... every rank ran AF_XDP rings from the helper" \
        [ "$(grep -c 'link 0: eth0 .*AF_XDP (copy mode, .* from the pmeth helper) rings' "$LOG/xdp.err")" = 2 ]
    check "... each helper logged an AF_XDP grant to nobody" \
        eval 'grep -Eq "uid 65534 \(nobody\) pid [0-9]+: eth0: AF_XDP granted" "$LOG/xdp0.log" \
            && grep -Eq "uid 65534 \(nobody\) pid [0-9]+: eth0: AF_XDP granted" "$LOG/xdp1.log"'
    check "... and no XDP program is left on either host after the job" no_xdp_prog

    # two ranks a host (auto): one socket per interface queue, so one rank a host gets
    # AF_XDP from the helper and the other falls back to the helper's AF_PACKET socket
    vc_mpirun --user nobody --ppn 2 --mca btl self,vader,pmeth --mca btl_pmeth_if_include eth0 \
        --mca btl_pmeth_helper "$XSOCK" \
        --mca btl_pmeth_io_mode auto --mca btl_base_verbose 10 -- "$P2P" -M 1048576 \
        >"$LOG/xdp2" 2>"$LOG/xdp2.err"; rc=$?
    relay_tap "nobody, 2 ranks a host, auto: " <"$LOG/xdp2"
    n_xdp=$(grep -c 'link 0: eth0 .*AF_XDP (copy mode, .* from the pmeth helper) rings' "$LOG/xdp2.err")
    n_back=$(grep -c 'AF_XDP not usable (.*taken by another process of this host.*); using AF_PACKET rings' "$LOG/xdp2.err")
    check "... 2 ranks a host with auto: passed (exit $rc); $n_xdp ranks on AF_XDP, $n_back fell back naming the taken queue" \
        eval '[ $rc -eq 0 ] && ! grep -q "^not ok" "$LOG/xdp2" && [ "$n_xdp" = 2 ] && [ "$n_back" = 2 ]'
    check "... and again no XDP program left" no_xdp_prog

    # jumbo frames: an AF_PACKET socket and a receive-only AF_XDP one, both from the helper
    for n in n0 n1; do "$VC" exec $n -- ip link set eth0 mtu 9000; done
    pm "$LOG/xdp9k" --mca btl_pmeth_helper "$XSOCK" --mca btl_pmeth_io_mode auto \
        --mca btl_base_verbose 10 -- "$P2P" -M 4194304; rc=$?
    for n in n0 n1; do "$VC" exec $n -- ip link set eth0 mtu 1500; done
    relay_tap "nobody, MTU 9000, paired rings from the helper: " <"$LOG/xdp9k"
    small=$(grep -o '[0-9]* frames in through AF_XDP beside AF_PACKET' "$LOG/xdp9k.err" | awk '$1 > 0' | wc -l)
    check "... at MTU 9000 (auto): the job passed (exit $rc) over paired rings, both ranks took small frames through AF_XDP" \
        eval '[ $rc -eq 0 ] && ! grep -q "^not ok" "$LOG/xdp9k" \
            && [ "$(grep -c "AF_PACKET + AF_XDP to 3840 B (.*from the pmeth helper) rings" "$LOG/xdp9k.err")" = 2 ] \
            && [ "$small" = 2 ]'
    grep -h 'frames in through AF_XDP' "$LOG/xdp9k.err" | sed 's/^.*btl:pmeth: //' | diag
    check "... again no XDP program left" no_xdp_prog

    # a helper without --xdp: auto falls back to its AF_PACKET socket and says why; xdp
    # refuses.  The helper logs the refusal only to a job that asked for AF_XDP by name: under
    # auto every rank of every job asks (once: the answer covers its other interfaces too)
    refusals() { cat "$LOG/helper0.log" "$LOG/helper1.log" | grep -c 'AF_XDP refused: xdp off'; }
    r0=$(refusals)
    PM_IFS=eth0,eth1 pm "$LOG/auto" --mca btl_pmeth_helper "$SOCK" --mca btl_pmeth_io_mode auto \
        --mca btl_base_verbose 1 -- "$P2P" -M 65536; rc=$?
    grep -h 'not usable' "$LOG/auto.err" | sed 's/^.*btl:pmeth: //' | diag
    r1=$(refusals)
    check "a helper without --xdp: io_mode auto falls back to AF_PACKET on both links with a line each quoting the helper, and passes (exit $rc)" \
        eval '[ $rc -eq 0 ] && ! grep -q "^not ok" "$LOG/auto" \
            && [ "$(grep -c "eth[01]: AF_XDP not usable (.*xdp. setting is off).*); using AF_PACKET rings" "$LOG/auto.err")" = 4 ]'
    check "... each rank asked once: its second link's line quotes the answer for the first" \
        [ "$(grep -c "AF_XDP not usable (.*xdp. setting is off) (its answer for an earlier interface)); using AF_PACKET rings" "$LOG/auto.err")" = 2 ]
    check "... the helpers did not log those refusals ($((r1 - r0)) lines)" [ "$r1" = "$r0" ]
    pm "$LOG/xdpoff" --mca btl_pmeth_helper "$SOCK" --mca btl_pmeth_io_mode xdp -- "$P2P" -M 1024; rc=$?
    check "... io_mode xdp: pmeth declines with the helper's refusal, the job ends (exit $rc)" \
        eval '[ $rc -ne 0 -a $rc -ne 124 ] && grep -q "refused: this helper hands out AF_PACKET sockets only" "$LOG/xdpoff.err"'
    r2=$(refusals)
    check "... that refusal logged by the helpers ($((r2 - r1)) lines, one a rank)" [ "$((r2 - r1))" -ge 1 ]
fi

# ---- a helper of before the optional request flags ----------------------------------
# Sites update the helper (root's) and the component (the MPI installation) apart: a job
# newer than its helper asks for a send socket (op 1) and says it falls back (op 2); the
# old helper refuses both flags as malformed, and the job asks again without them.
malformed() { grep -c 'refused: malformed request: unknown flags' "$1"; }
# before_job NAME LABEL ARGS...: the old helper on each host (with ARGS; logs NAME0, NAME1),
# then the p2p suite as nobody over both links, relayed under LABEL; sets rc, listening, and
# m0 / m1: the requests each helper refused as malformed
before_job() {
    local name=$1 label=$2; shift 2
    helpers_stop
    DAEMON=$BEFORE helper n0 "${name}0" --allow eth0,eth1 --socket "$OSOCK" "$@"
    DAEMON=$BEFORE helper n1 "${name}1" --allow eth0,eth1 --socket "$OSOCK" "$@"
    both_sockets "$OSOCK" && listening=yes || listening=no
    PM_IFS=eth0,eth1 pm "$LOG/$name" --mca btl_pmeth_helper "$OSOCK" --mca btl_base_verbose 10 \
        -- "$P2P" -M 1048576; rc=$?
    relay_tap "$label: " <"$LOG/$name"
    m0=$(malformed "$LOG/${name}0.log"); m1=$(malformed "$LOG/${name}1.log")
}
before_job before "nobody, a helper of before"
check "a helper of before the optional flags (pmeth_helperd_before) listened on each host ($listening)" \
    [ "$listening" = yes ]
check "... the job (io_mode auto, 2 links) passed (exit $rc), every link on an AF_PACKET socket from it" \
    eval '[ $rc -eq 0 ] && grep -q "^ok .*verified" "$LOG/before" && ! grep -q "^not ok" "$LOG/before" \
        && [ "$(grep -c "eth[01]: AF_PACKET socket from the pmeth helper" "$LOG/before.err")" = 4 ]'
# per host (1 rank, 2 links): each link's AF_XDP request (IF_OFFERED; where AF_XDP is
# built) and AF_PACKET request (the send socket) refused once, then asked again without it
want=2; nm "$BEFORE" 2>/dev/null | grep -q pmeth_xdp_open && want=4
check "... without the send socket it did not know ($m0 + $m1 requests refused as malformed, $want a host, each asked again)" \
    eval '! grep -q "with a socket for lone frames" "$LOG/before.err" && [ "$m0" = $want ] && [ "$m1" = $want ] \
        && [ "$(grep -Ec "uid 65534 \(nobody\) pid [0-9]+: eth[01]: granted" "$LOG/before0.log")" = 2 ]'
if nm "$BEFORE" 2>/dev/null | grep -q pmeth_xdp_open; then
    check "... its AF_XDP refusal (not allowed: no status of its own) asked for on each link, and fallen back from" \
        eval '[ "$(grep -c "eth[01]: AF_XDP not usable (.*xdp. setting is off)); using AF_PACKET rings" "$LOG/before.err")" = 4 ] \
            && [ "$(grep -c "AF_XDP refused: xdp off" "$LOG/before0.log")" = 2 ]'
    before_job beforex "nobody, a helper of before with --xdp" --xdp
    check "... started with --xdp: the job (auto) passed (exit $rc) on AF_XDP rings from it on both links, asked for again without IF_OFFERED ($m0 + $m1 refused)" \
        eval '[ $rc -eq 0 ] && grep -q "^ok .*verified" "$LOG/beforex" && ! grep -q "^not ok" "$LOG/beforex" \
            && [ "$(grep -c "link [01]: eth[01] .*AF_XDP (copy mode, .* from the pmeth helper) rings" "$LOG/beforex.err")" = 4 ] \
            && [ "$m0" = 2 ] && [ "$m1" = 2 ] \
            && [ "$(grep -Ec "uid 65534 \(nobody\) pid [0-9]+: eth[01]: AF_XDP granted" "$LOG/beforex0.log")" = 2 ]'
    check "... and no XDP program is left after it" no_xdp_prog
fi

# ---- stop: the helpers and their sockets are gone ------------------------------------
helpers_stop
check "the helpers stopped on SIGTERM and said so" \
    eval 'cat "$LOG"/helper[01].log "$LOG"/locked[01].log "$LOG"/before[01].log | grep -c "stopped (Terminated)" | grep -qx 6'
gone() {
    local n
    for n in n0 n1; do
        "$VC" exec $n -- test -e "$SOCK" -o -e "$LOCKED" -o -e "$XSOCK" -o -e "$OSOCK" && return 1
    done
    return 0
}
check "... their sockets are gone" gone
check "... no pmeth-helperd is left" eval '! ps -eo args | grep -q "^$HELPERD"'
vc destroy >/dev/null
vc_assert_clean
tap_done
