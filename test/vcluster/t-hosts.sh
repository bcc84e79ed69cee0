#!/bin/bash
# Virtual nodes are hosts launched by Open MPI's own multi-host launcher (rsh launcher,
# our agent, one orted per node): each has its host name and its own /dev/shm; with
# --mca btl self,vader,tcp on 2 nodes x 2 ranks, a verified stream between the two ranks
# of one node crosses no link and not loopback (vader's shared memory carries it), a
# stream between nodes crosses the data links and not the management network;
# MPI_Get_processor_name names the node and MPI_COMM_TYPE_SHARED splits by node; the
# project's p2p test passes the same way over tcp; the old single-node mode still works;
# a job of more ranks than CPUs runs with mpi_yield_when_idle 1, one that fits without;
# SIGTERM to vcluster and SIGKILL to mpirun leave no daemon or rank; launch overhead.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
command -v nsenter >/dev/null && command -v unshare >/dev/null && command -v prlimit >/dev/null \
    || { echo "# nsenter/unshare/prlimit missing (util-linux)"; exit 77; }
PROG=$TOP_BUILDDIR/test/vcluster/vc_hosts
P2P=$TOP_BUILDDIR/test/mpi/mpi_p2p
[ -x "$PROG" ] || { echo "# $PROG not built (make check)"; exit 1; }
vc_setup thosts
VC_TMP=$(mktemp -d /tmp/xbvc-thosts.XXXXXX); LOG=$VC_TMP

vc create pair --links 2 --rate 1gbit --force >/dev/null || { not_ok "create pair"; tap_done; exit; }

# the hosts themselves
check "n0 and n1 are hosts named n0 and n1" \
    [ "$(vc exec n0 -- hostname),$(vc exec n1 -- hostname)" = "n0,n1" ]
# (the machine's /dev/shm lies below it: the last mount on the path is the one in use)
check "a host's /dev/shm is its own tmpfs" \
    [ "$(vc exec n0 -- findmnt -n -o FSTYPE,SOURCE /dev/shm | tail -1 | tr -s ' ')" = "tmpfs xbvc-$XBVC_NAME-n0-shm" ]
probe=xbvc-$XBVC_NAME-probe-$$
vc exec n0 -- sh -c "echo n0 > /dev/shm/$probe"
check "a file in n0's /dev/shm is not seen by n1 nor by the machine" \
    bash -c "[ \"\$($VC exec n0 -- cat /dev/shm/$probe)\" = n0 ] && ! $VC exec n1 -- test -e /dev/shm/$probe && [ ! -e /dev/shm/$probe ]"
check "the hosts reach each other by name over the management network only" \
    bash -c "$VC exec n0 -- getent hosts n1 | grep -q '^198.19.255.2 ' && $VC exec n0 -- ping -c1 -W2 n1 >/dev/null"

# counters of one node's interfaces: "IF rx tx" lines (lo, the data links, mg0)
counters() { "$VC" exec "$1" -- sh -c 'cd /sys/class/net && for i in *; do echo "$i $(cat $i/statistics/rx_bytes) $(cat $i/statistics/tx_bytes)"; done'; }
# delta BEFORE AFTER WHICH: bytes moved between two counter snapshots:
#   data = tx+rx over the data links (eth*), lo = loopback rx, mg = tx+rx of mg0
delta() { python3 - "$1" "$2" "$3" <<'EOF'
import sys
def load(f):
    return {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(f) if l.strip()}
a, b, which = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3]
d = {i: (b[i][0] - a[i][0], b[i][1] - a[i][1]) for i in b if i in a}
if which == "data":
    print(sum(rx + tx for i, (rx, tx) in d.items() if i.startswith("eth")))
elif which == "lo":
    print(d["lo"][0])
else:
    print(sum(d["mg0"]))
EOF
}

VOL=$((4 << 20)); ITERS=16; TOTAL=$((VOL * ITERS))      # 64 MiB per stream
# stream SRC DST TAG: one 2x2 job over self,vader,tcp; n0's counters before and after
stream() {
    counters n0 >"$LOG/$3.c0"
    vc_mpirun --ppn 2 --mca btl self,vader,tcp -- "$PROG" "$1" "$2" "$VOL" "$ITERS" >"$LOG/$3" 2>"$LOG/$3.err"
    local rc=$?
    counters n0 >"$LOG/$3.c1"
    return $rc
}

if stream 0 1 on && grep -q "^stream 0->1 $VOL x $ITERS verified" "$LOG/on"; then
    ok "2 nodes x 2 ranks, self,vader,tcp: 64 MiB rank 0 -> 1 (both on n0) verified"
else
    not_ok "on-node stream"; tail -20 "$LOG/on" "$LOG/on.err" | diag
fi
grep '^rank' "$LOG/on" | diag
check "MPI_Get_processor_name and gethostname give the node's host name (n0 n0 n1 n1)" \
    [ "$(awk '/^rank/ {printf "%s=%s ", $4, $6}' "$LOG/on")" = "n0=n0 n0=n0 n1=n1 n1=n1 " ]
check "MPI_COMM_TYPE_SHARED splits by node: {0,1} and {2,3}" \
    [ "$(awk '/^rank/ {printf "%s/%s ", $8, $10}' "$LOG/on")" = "0/2 0/2 2/2 2/2 " ]
d=$(delta "$LOG/on.c0" "$LOG/on.c1" data); l=$(delta "$LOG/on.c0" "$LOG/on.c1" lo)
echo "# on-node stream of $TOTAL bytes: n0 data links moved $d bytes, loopback $l"
check "on-node stream crossed neither the data links ($d B) nor loopback ($l B): vader carried it" \
    [ "$d" -lt $((TOTAL / 64)) -a "$l" -lt $((TOTAL / 64)) ]

if stream 0 2 off && grep -q "^stream 0->2 $VOL x $ITERS verified" "$LOG/off"; then
    ok "2 nodes x 2 ranks, self,vader,tcp: 64 MiB rank 0 (n0) -> 2 (n1) verified"
else
    not_ok "off-node stream"; tail -20 "$LOG/off" "$LOG/off.err" | diag
fi
d=$(delta "$LOG/off.c0" "$LOG/off.c1" data); m=$(delta "$LOG/off.c0" "$LOG/off.c1" mg)
echo "# off-node stream of $TOTAL bytes: n0 data links moved $d bytes, management $m"
check "off-node stream went over the data links ($d B >= $TOTAL B): tcp carried it" [ "$d" -ge "$TOTAL" ]
check "the management network carried launcher traffic only ($m B)" [ "$m" -lt $((TOTAL / 64)) ]

# the project's p2p test over tcp, 2 nodes x 2 ranks and 2 x 1, the same TAP as locally
for ppn in 2 1; do
    np=$((2 * ppn))
    out=$(vc_mpirun --ppn "$ppn" --mca btl self,tcp -- "$P2P" 2>"$LOG/p2p.err"); rc=$?
    want=$(mpirun_np "$np" 300 "--mca pml ob1 --mca btl self,tcp" -- "$P2P" 2>/dev/null | grep -cE '^ok ')
    got=$(grep -cE '^ok ' <<< "$out")
    if [ "$rc" -eq 0 ] && [ "$got" -gt 0 ] && [ "$got" = "$want" ] && ! grep -q '^not ok' <<< "$out"; then
        ok "mpi_p2p over tcp on 2 hosts x $ppn: $got checks pass, as in a local run ($want)"
    else
        not_ok "mpi_p2p over tcp on 2 hosts x $ppn (exit $rc, $got ok, local $want)"
        { grep '^not ok' <<< "$out"; tail -10 "$LOG/p2p.err"; } | diag
    fi
done

# the old single-node mode (--launch ranks) still places ranks in their nodes
cat >"$LOG/where.sh" <<'EOF'
#!/bin/sh
echo "$OMPI_COMM_WORLD_RANK $(ip -br -4 addr show eth0 | awk '{print $3}')"
EOF
chmod +x "$LOG/where.sh"
where=$(vc_mpirun --launch ranks --ppn 2 -- "$LOG/where.sh" 2>/dev/null | sort | awk '{printf "%s ", $2}')
check "--launch ranks: ranks 0,1 in n0, 2,3 in n1 ($where)" \
    [ "$where" = "198.18.0.1/24 198.18.0.1/24 198.18.0.2/24 198.18.0.2/24 " ]

# SIGTERM to vcluster mid-job: mpirun, orteds and ranks go, the hosts stay
prlimit --as="$VC_MEM_AS" "$VC" mpirun --timeout 60 --ppn 2 -- sleep 40 >/dev/null 2>&1 &
lpid=$!
for _ in $(seq 50); do [ -n "$(vc_job_procs n1)" ] && break; sleep 0.2; done
jp=$(vc_job_procs n1 | paste -sd,)
check "job running on n1 (orted and ranks: $jp)" bash -c "ps -o comm= -p '$jp' | grep -q orted"
kill -TERM $lpid; wait $lpid
left="$(vc_job_procs n0)$(vc_job_procs n1)$(vc_job_procs mg)"
check "after SIGTERM: no orted or rank left on any host (${left:-none}), no job directory" \
    [ -z "$left" -a -z "$(ls /run/xbvc/$XBVC_NAME/jobs)" ]
check "after SIGTERM: the hosts are still there" [ "$(vc exec n1 -- hostname)" = n1 ]

# SIGTERM to the whole process group (timeout(1), Ctrl-C at a terminal): vcluster gets a
# second signal while it cleans up, in both launch modes
for mode in hosts ranks; do
    timeout -s TERM 4 prlimit --as="$VC_MEM_AS" "$VC" mpirun --timeout 60 --launch $mode --ppn 2 -- sleep 40 >/dev/null 2>&1
    left="$(vc_job_procs n0)$(vc_job_procs n1)$(vc_job_procs mg)"
    socats=$(ps -eo args | grep -c "^socat .*xbvc/$XBVC_NAME/")
    check "--launch $mode, SIGTERM to the process group: nothing of the job left (${left:-no process}, $socats socat, jobs: $(ls /run/xbvc/$XBVC_NAME/jobs | wc -l))" \
        [ -z "$left" -a "$socats" = 0 -a -z "$(ls /run/xbvc/$XBVC_NAME/jobs)" ]
done

# SIGKILL to mpirun itself: vcluster stops the orphaned daemons and ranks
prlimit --as="$VC_MEM_AS" "$VC" mpirun --timeout 60 --ppn 1 -- sleep 40 >/dev/null 2>&1 &
lpid=$!
mp=""
for _ in $(seq 50); do
    mp=$(for p in $(vc_job_procs mg); do [ "$(cat /proc/$p/comm 2>/dev/null)" = mpirun ] && echo "$p"; done)
    [ -n "$mp" ] && [ -n "$(vc_job_procs n1)" ] && break; sleep 0.2
done
start=$(date +%s)
[ -n "$mp" ] && kill -KILL $mp
wait $lpid
left="$(vc_job_procs n0)$(vc_job_procs n1)$(vc_job_procs mg)"; secs=$(( $(date +%s) - start ))
check "after SIGKILL of mpirun (${mp:-not found}): no orted or rank left (${left:-none}), within $secs s" \
    [ -n "$mp" -a -z "$left" -a "$secs" -lt 20 ]

# A job of more ranks than this machine has CPUs runs with mpi_yield_when_idle 1 (the
# hosts' slots hide the oversubscription from Open MPI); one that fits does not; the user's
# --mca wins.  mpirun hands its --mca values to the ranks as OMPI_MCA_ variables.
yield_seen() { vc_mpirun "$@" -- sh -c 'echo "${OMPI_MCA_mpi_yield_when_idle:-unset}"' 2>/dev/null | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}'; }
cpus=$(nproc)
crowd=$((cpus / 2 + 1))
if [ "$crowd" -le 4 ]; then
    got=$(yield_seen --ppn "$crowd")
    check "2 hosts x $crowd ranks on $cpus CPUs: every rank yields when idle (${got:-no output})" \
        [ "$got" = "1 x$((2 * crowd)) " ]
    got=$(yield_seen --ppn "$crowd" --mca mpi_yield_when_idle 0)
    check "the same with --mca mpi_yield_when_idle 0: the user's value (${got:-no output})" \
        [ "$got" = "0 x$((2 * crowd)) " ]
else
    skip "2 hosts x $crowd ranks yield when idle" "$cpus CPUs here: a crowded job would be large"
    skip "the user's mpi_yield_when_idle on a crowded job" "$cpus CPUs here"
fi
if [ "$cpus" -ge 2 ]; then
    got=$(yield_seen --ppn 1)
    check "2 hosts x 1 rank on $cpus CPUs: not set (${got:-no output})" [ "$got" = "unset x2 " ]
else
    skip "2 hosts x 1 rank: no yield set" "one CPU here"
fi

# launch overhead of one job (seconds, informational: the machine is shared)
for mode in hosts ranks; do
    t0=$(date +%s.%N)
    vc_mpirun --launch $mode -- /bin/true >/dev/null 2>&1; rc=$?
    echo "# launch overhead, --launch $mode, 2 ranks, /bin/true: $(python3 -c "print(f'{$(date +%s.%N) - $t0:.2f}')") s (exit $rc)"
done

holders=$(vc_holders)
check "destroy" bash -c "$VC destroy >/dev/null"
# a holder's parent (create) is gone, so an exited holder may linger as a zombie until
# init reaps it: only a live one counts
live=$(ps -o stat= -p "${holders// /,}" | grep -vc '^Z')
check "no holder of the hosts is left (were: $holders; alive: $live)" [ -n "$holders" -a "$live" = 0 ]
vc_assert_clean
tap_done
