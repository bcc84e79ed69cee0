#!/bin/bash
# btl pmeth under real suites across virtual hosts (contrib/vcluster: nodes launched by
# Open MPI's own rsh launcher), judged against tcp over the very same links:
#  - mpi4py's suite, 1 rank on each of 2 hosts, over self,pmeth and over self,tcp: the
#    same tests run and skipped, and the same errors test by test - tcp's are all
#    Win.Allocate(_shared) over COMM_WORLD: Debian's config leaves ob1 only osc sm for
#    those, which needs every rank on one shared-memory node, as on a real two-node
#    cluster (MPI_ERR_WIN, MPI_ERR_RMA_SHARED) - but for the Win.Allocate ones, which
#    pass over pmeth (its one-sided operations carry osc rdma's windows,
#    btl_pmeth_rma.c; tcp has no atomics, so osc rdma cannot use it);
#  - mpi4py's suite, 2 ranks on each of 2 hosts over self,vader,pmeth: only the
#    Win.Allocate_shared over COMM_WORLD errors (pmeth's host link lets osc rdma make the rest);
#    (these three without test_util_dtlib and test_io, which t-mpi4py.sh runs on one host);
#  - hpcc, 1 rank on each of 2 hosts, over both: every verification hpcc makes passes;
#  - a soak: 8 ranks on 4 hosts behind one switch (2 a host, vader beside pmeth) with 1%
#    frame loss each way on every link: random sizes, tags and peers, every byte
#    verified (test/rsm/rsm_soak), lost frames resent, bounded in time;
#  - a rank SIGKILLed in the middle of a pmeth job: the job ends, no rank, packet socket
#    or /dev/shm file is left on any host, and after destroy nothing of the cluster.
# One cluster per layout serves every job on it (creating one costs seconds).
# PMETH_SOAK_SECONDS (default 20) sets the soak's traffic time.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
. "$TOP_SRCDIR/test/ext/mpi4py_lib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
SOAK=$TOP_BUILDDIR/test/rsm/rsm_soak
[ -x "$SOAK" ] || { echo "# $SOAK not built (make check)"; exit 1; }
vc_setup tpsuites
VC_TMP=$(mktemp -d /tmp/xbvc-tpsuites.XXXXXX); LOG=$VC_TMP
# A suite prints a line per test; this long without one is a hang, not a slow test.
STALL_SECS=60

nodes() { ip netns list | grep -oE "^xbvc-$XBVC_NAME-n[0-9]+" | sed 's/.*-//' | sort -V; }

# node_state: what runs on the cluster's hosts besides their holders, one line per item:
# "nI process PID COMM", "nI packet-socket INODE" (AF_PACKET sockets of the node's network
# namespace: /proc/net/packet) and "nI shm NAME" (files in the host's own /dev/shm)
node_state() {
    local n p
    for n in $(nodes); do
        for p in $(vc_job_procs "$n"); do echo "$n process $p $(cat "/proc/$p/comm" 2>/dev/null)"; done
        "$VC" exec "$n" -- sh -c 'tail -n +2 /proc/net/packet | awk "{print \"packet-socket\", \$9}";
                                  ls -A /dev/shm | sed "s/^/shm /"' | sed "s/^/$n /"
    done
}
# count KIND STATE: how many items of a kind (process, packet-socket, shm) STATE lists
count() { awk -v k="$1" '$2 == k' <<< "$2" | wc -l; }

# pmeth's finalize summaries (btl_base_verbose 10) added up over all ranks of a job
retrans_timeout() { grep -ho '[0-9]* retransmits on timeout' "$1" | awk '{s += $1} END {print s + 0}'; }
retrans_fast() { grep -ho 'on timeout, [0-9]* fast' "$1" | awk '{s += $3} END {print s + 0}'; }
duplicates() { grep -ho 'fast; [0-9]* duplicates' "$1" | awk '{s += $2} END {print s + 0}'; }
summaries() { grep -c 'retransmits on timeout' "$1"; }

# rank_backtraces COMM: every thread's stack of each process named COMM on the hosts
rank_backtraces() {
    local n p
    command -v gdb >/dev/null || { echo "(no gdb)"; return; }
    for n in $(nodes); do
        for p in $(vc_job_procs "$n"); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$1" ] || continue
            echo "=== $1 $p on $n"
            timeout 60 gdb -p "$p" -batch -ex 'thread apply all bt' 2>&1 | grep -E '^(Thread|#)'
        done
    done
}

# output_size DIR: bytes the ranks of a job have written under DIR (--output-filename)
output_size() { cat "$1"/*/rank.*/std* 2>/dev/null | wc -c; }

# watch_job HANG LIMIT PROGRESS COMM COMMAND...: COMMAND (a vc_mpirun) in the background,
# taken for hung once the figure PROGRESS prints (a command; "-": none) has not changed
# for STALL_SECS, or once it has run LIMIT seconds: then the stacks of its ranks
# (processes named COMM) go to the file HANG and its vcluster gets SIGTERM, which stops
# the job on every host.  Returns COMMAND's status.
watch_job() {
    local hang=$1 limit=$2 progress=$3 comm=$4 job p now last=-1 quiet=0 start=$SECONDS; shift 4
    "$@" &
    job=$!
    while kill -0 "$job" 2>/dev/null; do
        sleep 5
        if [ "$progress" != - ]; then
            now=$($progress)
            if [ "$now" != "$last" ]; then last=$now; quiet=0; else quiet=$((quiet + 5)); fi
        fi
        [ "$quiet" -ge "$STALL_SECS" ] || [ $((SECONDS - start)) -ge "$limit" ] || continue
        { echo "stopped after $((SECONDS - start)) s, progress unchanged for $quiet s"
          rank_backtraces "$comm"; } > "$hang"
        for p in $(xb_tree "$job"); do
            case "$(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null)" in
                *"/vcluster mpirun "*) kill -TERM "$p";;
            esac
        done
        break
    done
    wait "$job"
}
# hang_diag HANG [DIR]: what a job watch_job stopped was doing, for the TAP log: the
# last output line of each rank (under DIR) and, per rank, the MPI call its main thread
# was in and its innermost function
hang_diag() {
    [ -s "$1" ] || return 0
    # $LOG goes at exit: the stacks are kept beside the runner's logs
    local keep=$TOP_BUILDDIR/test-logs/t-pmeth-suites.${1##*/}
    cp "$1" "$keep" 2>/dev/null || keep=$1
    echo "$(head -n 1 "$1"); every stack in $keep"
    [ -n "${2:-}" ] && for f in "$2"/*/rank.*/stderr; do echo "${f#"$2"/}: $(tail -n 1 "$f" | cut -c1-150)"; done
    awk 'function show() { if (who != "") print who ": in " (call == "" ? "?" : call) ", innermost " top }
         /^===/ { show(); who = substr($0, 5); call = top = ""; main = 0; next }
         /^Thread / { main = ($2 == 1); next }
         main && /^#/ { f = $0; sub(/^#[0-9]+ +(0x[0-9a-f]+ in )?/, "", f); sub(/ .*/, "", f)
                        if (top == "") top = f
                        if (call == "" && f ~ /^PMPI_/) call = f }
         END { show() }' "$1"
}

# ---- 2 hosts, one link, unshaped ----------------------------------------------------------
vc create pair --rate 0 --force >/dev/null || { not_ok "create pair"; tap_done; exit; }

# mpi4py_on_hosts BTLS NAME [PPN]: the suite with PPN ranks (1) on each of n0 and n1 over
# --mca btl BTLS; per-rank output in $LOG/NAME (-v: a line per test, so a hang names its test).
# Without the two modules that move next to nothing between ranks and took two thirds of the
# suite's time (4 ranks on one host: test_util_dtlib 36 s, numpy types to MPI datatypes;
# test_io 16 s, MPI-IO on files; the rest 24 s): t-mpi4py.sh runs them, on one host.
M4PY_HOSTS_ARGS=("${M4PY_ARGS[@]}" -e test_util_dtlib -e test_io)
mpi4py_on_hosts() {
    (cd "$M4PY_SUITE" && VC_JOB_SECS=300 watch_job "$LOG/$2.hang" 280 "output_size $LOG/$2" python3 \
        vc_mpirun --ppn "${3:-1}" --mca btl "$1" --mpirun-args "--output-filename $LOG/$2" \
        -- $M4PY_PY "${M4PY_HOSTS_ARGS[@]}" -v) >"$LOG/$2.out" 2>&1
}
# ranks_ended DIR: how many ranks printed the suite's "Ran N tests" (it ran to its end)
ranks_ended() { cat "$1"/*/rank.*/std* 2>/dev/null | grep -cE '^Ran [0-9]+ tests'; }

if [ -f "$M4PY_SUITE/test/runtests.py" ]; then
    start=$SECONDS
    mpi4py_on_hosts self,tcp m4py-tcp; rc=$?
    tcp_secs=$((SECONDS - start))
    IFS=/ read -r ran skipped _ errs <<< "$(m4py_summary "$LOG/m4py-tcp")"
    unknown=$(m4py_unexpected_errors "$LOG/m4py-tcp")
    check "mpi4py over tcp, 1 rank on each of 2 hosts: both ranks ran $ran tests, skipped $skipped, in $tcp_secs s; its $errs errors all known (Win.Allocate over COMM_WORLD)" \
        [ "$(ranks_ended "$LOG/m4py-tcp")" = 2 -a -n "$ran" -a "${ran%,*}" = "$ran" -a -z "$unknown" ]
    [ -n "$unknown" ] && echo "$unknown" | head -20 | diag
    m4py_error_classes "$LOG/m4py-tcp" | diag
    hang_diag "$LOG/m4py-tcp.hang" "$LOG/m4py-tcp" | diag

    start=$SECONDS
    mpi4py_on_hosts self,pmeth m4py-pmeth; rc=$?
    pm_secs=$((SECONDS - start))
    IFS=/ read -r pran pskipped _ perrs <<< "$(m4py_summary "$LOG/m4py-pmeth")"
    check "mpi4py over pmeth, 1 rank on each of 2 hosts: the suite ran to its end on both ranks (exit $rc, $pm_secs s)" \
        [ "$(ranks_ended "$LOG/m4py-pmeth")" = 2 ]
    hang_diag "$LOG/m4py-pmeth.hang" "$LOG/m4py-pmeth" | diag
    check "mpi4py over pmeth ran and skipped the same tests as over tcp (${pran:-none}/${pskipped:-none} vs $ran/$skipped)" \
        [ -n "$pran" -a "$pran/$pskipped" = "$ran/$skipped" ]
    # tcp's errors but the MPI_Win_allocate ones, which osc rdma over pmeth passes
    want_errs=$(m4py_errors "$LOG/m4py-tcp" | grep -vE ': ERROR: \w+ \(test_win\.TestWinAllocateWorld\.')
    fixed=$(m4py_errors "$LOG/m4py-tcp" | grep -cE ': ERROR: \w+ \(test_win\.TestWinAllocateWorld\.')
    check "mpi4py over pmeth: exactly tcp's errors, test by test and rank by rank, but the $fixed of Win.Allocate over COMM_WORLD, which pass over pmeth's one-sided operations (${perrs:-0} vs $errs)" \
        [ "$(ranks_ended "$LOG/m4py-pmeth")" = 2 -a "$fixed" -gt 0 -a "$(m4py_errors "$LOG/m4py-pmeth")" = "$want_errs" ]
    # (a run cut short lacks most of tcp's errors: its hang is the news, not the list)
    [ "$(ranks_ended "$LOG/m4py-pmeth")" = 2 ] &&
        diff <(echo "$want_errs") <(m4py_errors "$LOG/m4py-pmeth") | grep '^[<>]' | head -20 | diag

    # 2 ranks a host beside vader: windows across the hosts go by osc rdma over pmeth, which
    # reaches the rank beside over its host link (before it, Win.Allocate over COMM_WORLD
    # failed here as over tcp).  What is left is Win.Allocate_shared over COMM_WORLD, erroneous
    # across hosts on any transport (MPI_ERR_RMA_SHARED)
    start=$SECONDS
    mpi4py_on_hosts self,vader,pmeth m4py-hl 2; rc=$?
    hl_secs=$((SECONDS - start))
    IFS=/ read -r hran hskipped _ herrs <<< "$(m4py_summary "$LOG/m4py-hl")"
    others=$(m4py_errors "$LOG/m4py-hl" | grep -cvE ': ERROR: \w+ \(test_win\.TestWinAllocateSharedWorld\.')
    shared=$(m4py_errors "$LOG/m4py-hl" | grep -cE ': ERROR: \w+ \(test_win\.TestWinAllocateSharedWorld\.')
    check "mpi4py over self,vader,pmeth, 2 ranks on each of 2 hosts: the suite ran to its end on all 4 ranks (${hran:-none} tests, $hl_secs s); no error but the $shared of Win.Allocate_shared over COMM_WORLD ($others others: Win.Allocate over COMM_WORLD passes)" \
        [ "$(ranks_ended "$LOG/m4py-hl")" = 4 -a "$others" -eq 0 -a "$shared" -gt 0 ]
    m4py_errors "$LOG/m4py-hl" | grep -vE ': ERROR: \w+ \(test_win\.TestWinAllocateSharedWorld\.' | head -10 | diag
    hang_diag "$LOG/m4py-hl.hang" "$LOG/m4py-hl" | diag
else
    skip "mpi4py over pmeth and tcp across 2 hosts" "suite missing in $M4PY_SUITE (contrib/setup fetches it)"
fi

# hpcc_on_hosts BTLS NAME: hpcc with 1 rank on each of n0 and n1 over --mca btl BTLS,
# in its own directory $LOG/NAME (hpccinf.txt in, hpccoutf.txt out); pmeth's summary
# at finalize goes to $LOG/NAME.err
hpcc_on_hosts() {
    mkdir -p "$LOG/$2" && cp "$TOP_SRCDIR/test/ext/hpccinf.txt" "$LOG/$2/"
    # hpcc takes seconds over tcp with ~25 MiB per rank: the limits turn a runaway into a fast failure
    (cd "$LOG/$2" && XB_JOB_MEM_MIB=2048 VC_JOB_SECS=240 vc_mpirun --ppn 1 --mca btl "$1" \
        --mca btl_base_verbose 10 -- hpcc) >"$LOG/$2.out" 2>"$LOG/$2.err"
}
# hpcc_failures FILE: every verification of hpcc's output FILE that did not pass, one
# line each (nothing: all passed): HPL's and PTRANS's residual checks, RandomAccess's
# error counts, STREAM's validation, the DGEMM/STREAM/FFT per-node error counts, and the
# summary's Success (hpcc's own verdict, FFT's error bound included)
hpcc_failures() {
    local f=$1 v
    grep -q 'End of HPC Challenge tests' "$f" || echo "hpcc did not reach its end"
    grep -q '^Success=1$' "$f" || echo "hpcc's summary: $(grep '^Success=' "$f")"
    grep -qE '^\|\|Ax-b\|\|.*PASSED' "$f" || echo "no HPL residual check passed"
    grep -qE '^WALL .* PASSED ' "$f" || echo "no PTRANS residual check passed (PTRANS did not run?)"
    grep -E '(^|\s)FAILED(\s|$)' "$f" | sed 's/^/failed: /'
    grep -E 'tests completed and failed residual checks' "$f" | grep -vE '^\s*0 ' | sed 's/^/HPL or PTRANS: /'
    grep -E '^Found [0-9]+ errors' "$f" | grep -v '^Found 0 errors' | sed 's/^/RandomAccess: /'
    grep -E '^Node\(s\) with error' "$f" | grep -v 'with error 0$' | sed 's/^/per node: /'
    grep -q 'Solution Validates' "$f" || echo "STREAM's solution did not validate"
    for v in MPIRandomAccess_Errors MPIRandomAccess_LCG_Errors; do
        grep -q "^$v=0$" "$f" || echo "summary: $v=$(sed -n "s/^$v=//p" "$f")"
    done
}
val() { sed -n "s/^$1=//p" "$2" | head -1; }      # val NAME FILE: a figure of hpcc's summary
if command -v hpcc >/dev/null; then
    for btl in tcp pmeth; do
        start=$SECONDS
        hpcc_on_hosts "self,$btl" "hpcc-$btl"; rc=$?
        secs=$((SECONDS - start)); f=$LOG/hpcc-$btl/hpccoutf.txt
        bad=$(hpcc_failures "$f" 2>&1)
        check "hpcc over $btl, 1 rank on each of 2 hosts: every verification passed (exit $rc, $secs s; b_eff ping-pong $(val AvgPingPongLatency_usec "$f") us, $(val AvgPingPongBandwidth_GBytes "$f") GB/s, natural ring $(val NaturallyOrderedRingBandwidth_GBytes "$f") GB/s; PTRANS $(val PTRANS_GBs "$f") GB/s; HPL $(val HPL_Tflops "$f") Tflop/s)" \
            [ "$rc" = 0 -a -z "$bad" ]
        { echo "$bad"; grep '^xb_limit:' "$LOG/hpcc-$btl.err"; } | grep . | head -20 | diag
        [ "$btl" = pmeth ] && echo "pmeth: $(retrans_timeout "$LOG/hpcc-$btl.err") retransmits on timeout," \
            "$(retrans_fast "$LOG/hpcc-$btl.err") fast, $(duplicates "$LOG/hpcc-$btl.err") duplicates, no loss injected" | diag
    done
else
    skip "hpcc over pmeth and tcp across 2 hosts" "hpcc not installed (contrib/setup installs Debian's hpcc)"
fi

# ---- 4 hosts behind one switch, 2 ranks each ---------------------------------------------
vc create xbar --dims 4 --rate 0 --force >/dev/null || { not_ok "create xbar 4 (one switch)"; tap_done; exit; }
# dropped: frames the injected loss took, over every node's and the switch's nftables rules
dropped() {
    local ns
    for ns in $(ip netns list | grep -oE "^xbvc-$XBVC_NAME-(n[0-9]+|sw)"); do
        ip netns exec "$ns" nft list ruleset 2>/dev/null | grep -o 'counter packets [0-9]*'
    done | awk '{s += $3} END {print s + 0}'
}
# tx_total: bytes the nodes sent on their links
tx_total() { local n s=0; for n in $(nodes); do s=$((s + $(ifstat "$n" eth0 tx_bytes))); done; echo $s; }

soak_secs=${PMETH_SOAK_SECONDS:-20}
loss=(); for n in $(nodes); do loss+=("loss:$n/eth0:0.01:both"); done
vc fault "${loss[@]}" >/dev/null
tx0=$(tx_total); start=$SECONDS
# a healthy soak ends within its time plus one round and start-up (well under a minute
# more on this busy 2-core machine); a minute more and it is stuck: its stacks are taken
# (gdb on 8 ranks takes up to half a minute) before vcluster's own time limit
VC_JOB_SECS=$((soak_secs + 150)) watch_job "$LOG/soak.hang" $((soak_secs + 60)) - rsm_soak \
    vc_mpirun --ppn 2 --mca btl self,vader,pmeth --mca btl_base_verbose 10 \
    -- "$SOAK" "$soak_secs" >"$LOG/soak" 2>"$LOG/soak.err"; rc=$?
secs=$((SECONDS - start)); tx=$(( $(tx_total) - tx0 )); lost=$(dropped)
vc fault --clear >/dev/null
line=$(grep -E '^(not )?ok 1 - soak' "$LOG/soak")
mb=$(sed -nE 's/.* ([0-9.]+) MB verified.*/\1/p' <<< "$line")
soak_ok=no
[ "$rc" = 0 ] && grep -qE '^ok 1 - soak np 8: .* [1-9][0-9]* messages, .* 0 errors$' <<< "$line" && soak_ok=yes
check "soak, 8 ranks on 4 hosts (self,vader,pmeth), 1% loss each way: ${line#* - } in $secs s (exit $rc)" \
    [ "$soak_ok" = yes ]
grep -E '^xb_limit:|rank [0-9]+:' "$LOG/soak.err" | head -10 | diag
hang_diag "$LOG/soak.hang" | diag
check "soak: the loss took $lost frames and pmeth resent: $(retrans_timeout "$LOG/soak.err") retransmits on timeout, $(retrans_fast "$LOG/soak.err") fast ($(duplicates "$LOG/soak.err") duplicates), over all 8 ranks' summaries" \
    [ "$lost" -gt 0 -a $(( $(retrans_timeout "$LOG/soak.err") + $(retrans_fast "$LOG/soak.err") )) -gt 0 -a "$(summaries "$LOG/soak.err")" = 8 ]
# 6 of a rank's 7 peers are on other hosts: most of the verified bytes crossed the switch
check "soak: the links carried the traffic between hosts ($((tx / 1000000)) MB sent on them, ${mb:-?} MB verified)" \
    awk -v tx="$tx" -v mb="${mb:-0}" 'BEGIN { exit !(mb > 0 && tx >= 0.5 * mb * 1e6) }'
left=$(node_state)
check "after the soak no rank, packet socket or /dev/shm file is left on any host" [ -z "$left" ]
echo "$left" | grep . | head -10 | diag

# ---- SIGKILL of one rank in the middle of a pmeth job --------------------------------------
VC_JOB_SECS=90 vc_mpirun --ppn 2 --mca btl self,vader,pmeth -- "$SOAK" 600 >"$LOG/kill" 2>"$LOG/kill.err" &
job=$!
# mid-run: every rank has its ring open (2 packet sockets a host) and frames move
for _ in $(seq 120); do
    during=$(node_state)
    [ "$(count packet-socket "$during")" -ge 8 ] && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.5
done
sleep 3
during=$(node_state)
victim=$(awk '$1 == "n2" && $2 == "process" && $4 == "rsm_soak" {print $3; exit}' <<< "$during")
if [ -n "$victim" ]; then
    kill -KILL "$victim"; killed=$SECONDS
    wait "$job"; rc=$?
    secs=$((SECONDS - killed))
    ended=no
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$secs" -le 45 ] && grep -q 'exited on signal 9' "$LOG/kill.err" && ended=yes
    check "SIGKILL of rank process $victim on n2 mid-run: the job ended $secs s later (exit $rc, not its time limit), mpirun naming the killed rank" \
        [ "$ended" = yes ]
else
    wait "$job"; rc=$?
    not_ok "a rank of the soak job running on n2 to kill (the job ended first: exit $rc)"
    tail -5 "$LOG/kill.err" | diag
fi
left=$(node_state)
check "after the kill nothing of the job is left on any host: processes $(count process "$left") (running: $(count process "$during")), packet sockets $(count packet-socket "$left") (running: $(count packet-socket "$during")), /dev/shm files $(count shm "$left") (running: $(count shm "$during"))" \
    [ -z "$left" -a "$(count packet-socket "$during")" -ge 8 -a "$(count shm "$during")" -gt 0 ]
echo "$left" | grep . | head -10 | diag

check "destroy" bash -c "$VC destroy >/dev/null"
vc_assert_clean
tap_done
