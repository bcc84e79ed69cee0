#!/bin/bash
# btl pmeth with path migration (btl_pmeth_apm.c over apm/, issue 11) across virtual hosts:
# links that go down for good, go down and come back (fail-back to the home path), drop
# everything silently in one direction, or swallow only the acknowledgements; a receiver
# away from MPI with frames in flight (no path blamed: no fault), or while every link of its
# host goes down and comes back (the job goes on); manual
# migrations during the p2p suite; every link of a host down (a clear error in bounded
# time, not a hang); 8 ranks on 4 hosts behind two switches while links fail and heal at
# random times; the receive-credit budget following the links up.  Every byte is verified;
# nothing is left behind.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
vc_setup tpapm
VC_TMP=$(mktemp -d /tmp/xbvc-tpapm.XXXXXX); LOG=$VC_TMP
P2P=$TOP_BUILDDIR/test/mpi/mpi_p2p
SOAK=$TOP_BUILDDIR/test/rsm/rsm_soak
[ -x "$P2P" ] && [ -x "$SOAK" ] && [ -x "$TOP_BUILDDIR/test/pmeth/pmeth_failover" ] || { echo "# test programs not built"; exit 1; }

# pm OUT ARGS...: a job over self,pmeth at verbose 10 (path migration says what it does)
pm() {
    local out=$1; shift
    vc_mpirun --mca btl_base_verbose 10 "$@" >"$out" 2>"$out.err"
}
verified() { [ "$2" -eq 0 ] && grep -q '"errors": 0' "$1" && grep -q 'all payloads verified' "$1"; }
# apm N OUT FIELD: a figure of the path-migration summary, summed over the ranks
apm() { grep -ho "[0-9]* $2" "$1.err" | awk '{s += $1} END {print s + 0}'; }
said() { grep -c "$2" "$1.err"; }
# stream OUT ARGS...: windows of 8 x 1 MiB one way, each acknowledged, every byte verified,
# for STREAM_SECS (default 4) seconds from MPI_Init: bounded by time, not by a count, so a
# fault scheduled from the job's start lands inside the stream however fast the links are
# (a count of 1.2 GB, as before, ends around the 2 s mark on a fast host)
FAILOVER=$TOP_BUILDDIR/test/pmeth/pmeth_failover
stream() { pm "$@" -- "$FAILOVER" -s 1048576 -w 8 -t "${STREAM_SECS:-4}" -g 100; }
# paused OUT: the longest pause over 100 ms between two windows of the stream (a window takes
# ~25 ms unfaulted: a pause is what the fault cost), and the volume verified
paused() {
    python3 - "$1" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
stalls = [r["stall"]["to"] - r["stall"]["from"] for r in rows if "stall" in r]
done = [r for r in rows if "done" in r]
mb = done[0]["verified_mb"] if done else 0
print(f"{mb:.0f} MB in the stream, longest pause {max(stalls) * 1e3:.0f} ms" if stalls
      else f"{mb:.0f} MB in the stream, no pause over 100 ms")
PY
}

# vcluster injects loss at the netdev ingress hook (nftables), which frames pmeth's XDP
# program takes (io_mode auto's AF_XDP sockets) never reach: the jobs whose faults include
# loss ask for AF_PACKET rings.  Links going down reach both kinds alike.
PACKET=(--mca btl_pmeth_io_mode packet)

vc create pair --links 2 --rate 0 --force >/dev/null || { not_ok "create pair"; tap_done; exit; }

# 1. the second link down for good while a stream is striped over both
stream "$LOG/down" --mca btl self,pmeth --fault 2:down:n0/eth1; rc=$?
check "link down for good mid-stream: the stream completes on the other link, every byte verified ($(paused "$LOG/down"))" \
    verified "$LOG/down" $rc
# n0 hears it from its kernel; n1 from its own (the veth peer loses carrier) or from n0's
# path-down message, whichever comes first (then its line says "probing", not "down")
check "both hosts took the link out of the stripe, n0 when its kernel said it went down" \
    sh -c "[ $(said "$LOG/down" 'path eth1 left the stripe') -ge 2 ] \
           && [ $(said "$LOG/down" 'path eth1 left the stripe (down)') -ge 1 ]"
echo "# frames in flight moved to eth0: $(apm "$LOG/down" 'frames moved')"
# the receive credits a host grants are what its live links' rings and ports take
check "the receive-credit budget followed the link: $(grep -ho 'a budget of [0-9]* frames over the 1 of 2 links up' "$LOG/down.err" | head -1)" \
    grep -q 'receive credits: a budget of [0-9]* frames over the 1 of 2 links up' "$LOG/down.err"
vc fault --clear >/dev/null

# 2. the home link (the one small messages use) down, then back: migration and fail-back
# (the fail-back comes ~0.1 s after the link is back: the stream must still run then)
STREAM_SECS=5 stream "$LOG/home" --mca btl self,pmeth --fault 2:down:n0/eth0 --fault 3:up:n0/eth0; rc=$?
check "home link down and back: the stream completes, every byte verified ($(paused "$LOG/home"))" verified "$LOG/home" $rc
check "the connection migrated on the fault (both ends) and failed back once eth0 passed its probes" \
    sh -c "[ $(apm "$LOG/home" 'on a fault') -ge 2 ] && [ $(apm "$LOG/home" 'fail-backs') -ge 1 ] \
           && grep -q 'path eth0 (back) in the stripe' '$LOG/home.err'"
# credit budget over 1 link, then over 2 again: twice it (the two links are alike)
b1=$(grep -ho 'a budget of [0-9]* frames over the 1 of 2 links up' "$LOG/home.err" | head -1 | awk '{print $4}')
b2=$(grep -ho 'a budget of [0-9]* frames over the 2 of 2 links up' "$LOG/home.err" | tail -1 | awk '{print $4}')
check "the receive-credit budget went down with eth0 and back with it: ${b1:-none} frames over 1 link, ${b2:-none} over 2" \
    [ -n "$b1" -a -n "$b2" -a "${b2:-0}" = "$((2 * ${b1:-0}))" ]
vc fault --clear >/dev/null

# 3. silent loss: eth1 drops everything from n0, link up (no kernel event)
stream "$LOG/silent" --mca btl self,pmeth "${PACKET[@]}" --fault 2:loss:n0/eth1:1:out; rc=$?
check "100% silent loss one way on eth1: the stream completes, every byte verified ($(paused "$LOG/silent"))" \
    verified "$LOG/silent" $rc
check "the sender found eth1 silent and reported it dead ($(grep -ho 'eth1 silent for [0-9.]* ms' "$LOG/silent.err" | head -1))" \
    grep -q 'path eth1 silent for .* reported dead' "$LOG/silent.err"
vc fault --clear >/dev/null

# 4. a link dead the other way: n1's frames on eth0 (the acks of the stream) are lost
stream "$LOG/acks" --mca btl self,pmeth "${PACKET[@]}" --fault 2:loss:n1/eth0:1:out; rc=$?
check "acks lost on the home link (eth0 dead from n1 to n0 only): the stream completes, verified ($(paused "$LOG/acks"))" \
    verified "$LOG/acks" $rc
# Two detectors race here, both right: the receiver sees the sender resend what it has
# acknowledged (its acks do not arrive), or an end finds its own frames on eth0 unanswered
# (n1's frames there are lost too).  Whichever fires first, the other end hears it.
check "the one-way fault was found ($(grep -c 'do not arrive' "$LOG/acks.err") by lost acks, $(grep -c 'eth0 silent for' "$LOG/acks.err") by silence) and eth0 left both ends' stripes" \
    sh -c "grep -q 'our acks on path eth0 do not arrive\|path eth0 silent for .* reported dead' '$LOG/acks.err' \
           && [ \$(grep -c 'path eth0 left the stripe' '$LOG/acks.err') -ge 2 ]"
vc fault --clear >/dev/null

# 4b. no fault, but the receiver away from MPI for 1.5 s while 64 x 64 KiB to it are in flight,
# 3 times: its keeper answers probes and acknowledges no data, and no path may be blamed
# (until 2026-12-05 every healthy link in turn was reported dead and left the stripe)
pm "$LOG/raway" --mca btl self,pmeth -- "$TOP_BUILDDIR/test/pmeth/pmeth_recv_away" 1.5 3; rc=$?
check "receiver away from MPI with frames in flight on both links: $(grep -o 'recv_away: .*' "$LOG/raway"), $(apm "$LOG/raway" 'paths reported dead') paths reported dead, $(said "$LOG/raway" 'left the stripe') left a stripe (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'recv_away: 3 rounds of 64 x 65536 bytes, 0 wrong' '$LOG/raway' \
           && [ $(apm "$LOG/raway" 'paths reported dead') -eq 0 ] && [ $(said "$LOG/raway" 'left the stripe') -eq 0 ] \
           && [ $(said "$LOG/raway" 'paths reported dead') -eq 2 ]"

# 4c. every link of n1 down (eth1, then eth0 0.5 s later) and back at 3.5 s while its rank is
# away from MPI for 5 s, with a 2 s limit for having no path: only time spent in MPI, able to
# probe, counts toward it, so the rank back finds its paths again (until 2026-12-05 it ended
# the job at once: "no path to the peer for 2.8 s (limit 2.000 s): eth0 probing, eth1 probing")
pm "$LOG/faway" --mca btl self,pmeth --mca btl_pmeth_apm_fail_timeout_ms 2000 \
    --fault 2.0:down:n1/eth1 --fault 2.5:down:n1/eth0 --fault 3.5:up:n1/eth0 --fault 3.5:up:n1/eth1 \
    -- "$TOP_BUILDDIR/test/pmeth/pmeth_recv_away" 5 1 8; rc=$?
check "every link of a host down and back while its rank computes past the no-path limit: $(grep -o 'recv_away: .*' "$LOG/faway") (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q 'recv_away: 1 rounds of 8 x 65536 bytes, 0 wrong' '$LOG/faway' \
           && ! grep -q 'lost every path' '$LOG/faway.err' \
           && [ \$(cat '$LOG/faway' '$LOG/faway.err' | grep -c 'link n1/eth[01] down') -eq 2 ]"
vc fault --clear >/dev/null

# 5. migrations by hand every 5 ms during the p2p suite (eager, rendezvous, pipelined)
pm "$LOG/manual" --mca btl self,pmeth --mca btl_pmeth_apm_migrate_ms 5 -- "$P2P" -M 4194304; rc=$?
relay_tap "p2p with migrations every 5 ms: " <"$LOG/manual"
check "p2p suite with migrations every 5 ms: exit $rc, $(apm "$LOG/manual" 'by hand') migrations by hand" \
    sh -c "[ $rc -eq 0 ] && grep -q '^ok' '$LOG/manual' && ! grep -q '^not ok' '$LOG/manual' \
           && [ $(apm "$LOG/manual" 'by hand') -ge 4 ]"

# 6. every link of n0 down: a clear error within the configured time, no hang
t0=$SECONDS
VC_JOB_SECS=60 pm "$LOG/all" --mca btl self,pmeth --mca btl_pmeth_apm_fail_timeout_ms 3000 \
    --fault 2:down:n0/eth0 --fault 2:down:n0/eth1 -- "$BENCH/xb-bw" -m 1M:1M -i 100000 -w 2; rc=$?
secs=$((SECONDS - t0))
check "all links of a host down: the job fails (exit $rc) in $secs s, well before its time limit" \
    [ "$rc" -ne 0 -a "$secs" -lt 40 ]
check "...naming the peer and each path's state" \
    sh -c "grep -q 'lost every path to its peer' '$LOG/all.err' && grep -q 'eth0 down, eth1 down' '$LOG/all.err'"
vc fault --clear >/dev/null

# 7. 8 ranks on 4 hosts, 2 links each through two switches; links fail and heal while the
# soak's random messages run (no kernel event reaches the hosts on the other side of a
# switch: they find the path silent)
vc create xbar --dims 4 --links 2 --rate 0 --force >/dev/null || { not_ok "create xbar 4, 2 links"; tap_done; exit; }
secs=${PMETH_APM_SOAK_SECONDS:-20}
# faults at random times on random links (the seed is printed: a failure can be replayed
# with PMETH_APM_SEED): a link down, 100% loss out of it, or 100% loss into it, each undone
# 0.5-2 s later; at most one fault per link at a time
seed=${PMETH_APM_SEED:-$((RANDOM * 32768 + RANDOM))}
faults=()
sched=$(python3 - "$seed" "$secs" <<'PY'
import random, sys
rnd = random.Random(int(sys.argv[1])); secs = int(sys.argv[2])
busy = {}
out = []
for i in range(8):
    # the first three (a down, an out, an in: what the checks below look for) once the
    # job's paths exist (MPI_Init of 8 ranks takes 1-2 s): a link down before then makes
    # its paths down from the start, and no path leaves a stripe
    t = round(rnd.uniform(4 if i < 3 else 2, secs - 3), 1)
    link = f"n{rnd.randrange(4)}/eth{rnd.randrange(2)}"
    dur = round(rnd.uniform(0.5, 2), 1)
    if any(a < t + dur + 0.5 and t < b + 0.5 for a, b in busy.get(link, [])):
        continue
    busy.setdefault(link, []).append((t, t + dur))
    kind = ["down", "out", "in"][i] if i < 3 else rnd.choice(["down", "out", "in"])
    if kind == "down":
        out += [f"{t}:down:{link}", f"{t + dur:.1f}:up:{link}"]
    else:
        out += [f"{t}:loss:{link}:1:{kind}", f"{t + dur:.1f}:loss:{link}:0:{kind}"]
print(" ".join(out))
PY
)
for f in $sched; do faults+=(--fault "$f"); done
echo "# soak faults (seed $seed): $sched"
t0=$SECONDS
VC_JOB_SECS=$((secs + 120)) pm "$LOG/soak" --ppn 2 --mca btl self,vader,pmeth "${PACKET[@]}" "${faults[@]}" \
    -- "$SOAK" "$secs"; rc=$?
line=$(grep -E '^(not )?ok 1 - soak' "$LOG/soak")
check "soak, 8 ranks on 4 hosts, links down, silent and back during it: ${line#* - } in $((SECONDS - t0)) s (exit $rc)" \
    sh -c "[ $rc -eq 0 ] && echo '$line' | grep -qE '^ok 1 - soak np 8: .* [1-9][0-9]* messages, .* 0 errors$'"
echo "# soak: $(apm "$LOG/soak" 'paths reported dead') paths reported dead, $(apm "$LOG/soak" 'frames moved') frames moved, $(apm "$LOG/soak" 'migrations (') migrations over all ranks"
check "soak: paths were taken out (kernel events and silence) and came back" \
    sh -c "grep -q 'left the stripe (down)' '$LOG/soak.err' && grep -q 'reported dead' '$LOG/soak.err' \
           && grep -q '(back) in the stripe' '$LOG/soak.err'"
vc fault --clear >/dev/null

# 8. the neighbour exchange (3-D, 6 directions) and all-to-all, verified, on the same 8 ranks
# while a link goes down and up, another drops everything silently one way, and a third
# loses what arrives (acks and data of the other way) -- large messages in flight
for prog in xb-halo3d xb-alltoall; do
    VC_JOB_SECS=150 pm "$LOG/$prog" --ppn 2 --mca btl self,vader,pmeth "${PACKET[@]}" \
        --fault 2:down:n2/eth1 --fault 3:loss:n1/eth0:1:out --fault 4:up:n2/eth1 --fault 5:clear \
        --fault 6:loss:n3/eth1:1:in --fault 8:clear \
        -- "$BENCH/$prog" -m 4K:1M -i 40 -w 2; rc=$?
    check "$prog, 8 ranks on 4 hosts, links failing during it ($(grep -c 'left the stripe' "$LOG/$prog.err") paths left a stripe): exit $rc, every payload verified" \
        sh -c "[ $rc -eq 0 ] && grep -q 'all payloads verified' '$LOG/$prog' && ! grep -q '\"verified\":false' '$LOG/$prog' \
               && grep -q 'left the stripe' '$LOG/$prog.err'"
    vc fault --clear >/dev/null
done

vc destroy >/dev/null
vc_assert_clean
tap_done
