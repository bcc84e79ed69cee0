#!/bin/bash
# One-sided communication over btl pmeth between virtual hosts (btl_pmeth_rma.c): Open MPI's
# osc rdma takes windows of MPI_Win_create and MPI_Win_allocate over pmeth's put, get and
# atomics (Debian's configuration turns osc pt2pt off, so before them such a window could
# not be made over pmeth, as over tcp).  test/rsm/rsm_rma checks every byte and every
# fetched value (puts and gets 1 B - 1 MiB, accumulates, counters bumped by fetch-and-op
# and compare-and-swap from every rank, max / min / xor / replace, get-accumulates).
# On a ring of 3 hosts with 2 links between neighbours, MTU 1500 (pmeth's put and get
# limit is then one eager message, ~5.7 KiB: osc cuts larger ones):
#  - 2 and 3 hosts, 1 rank each: rsm_rma passes, pmeth's summary shows the operations
#    carried and served, none refused or malformed;
#  - the same with 1% frame loss each way on a link of each pair (pmeth resends);
#  - its MPI_T counters move with one put and a run of fetch-and-ops (rsm_rma mpit pmeth);
#  - a dynamic window across hosts (a peer's lock, and a rank's own) ends at once with pmeth's
#    message naming Open MPI 4.1.4's osc rdma deadlock (pull request 10473) and --mca osc
#    pt2pt, not a hang;
#  - with btl_pmeth_rma 0 window creation returns an error, as before;
#  - where the job may select osc pt2pt (faster over pmeth for bulk data and accumulates),
#    pmeth offers nothing by default and the windows go by pt2pt;
#  - ob1 keeps pmeth's own protocols: the p2p suite up to 4 MiB moves no one-sided
#    operation (pmeth refuses ob1's registrations, so ob1 never takes RDMA get or put);
#  - a target away from MPI for 3 s (computing): the origin's passive-target epoch completes
#    meanwhile, its requests served by the target's keeper thread (with btl_pmeth_keeper_us 0
#    it waits for the target);
#  - 2 hosts x 2 ranks with vader or rsm beside pmeth: rsm_rma passes, osc rdma over pmeth
#    reaching the rank beside over its host link (lo); with btl_pmeth_host_link 0 window
#    creation fails, as it did before the host link.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
RMA=$TOP_BUILDDIR/test/rsm/rsm_rma
P2P=$TOP_BUILDDIR/test/mpi/mpi_p2p
for p in "$RMA" "$P2P" "$TOP_BUILDDIR/test/pmeth/pmeth_rma_away"; do [ -x "$p" ] || { echo "# $p not built (make check)"; exit 1; }; done
VC_JOB_SECS=${VC_JOB_SECS:-90}  # a job takes 1-10 s here; a hung one fails in 90
vc_setup tprma
VC_TMP=$(mktemp -d /tmp/xbvc-tprma.XXXXXX); LOG=$VC_TMP

# pm OUT ARGS...: a job over self,pmeth (or $BTLS), $PPN ranks a host (1), with pmeth's
# finalize summary (verbose 10)
pm() {
    local out=$1; shift
    vc_mpirun --ppn "${PPN:-1}" --mca btl "${BTLS:-self,pmeth}" --mca btl_base_verbose 10 "$@" \
        >"$out" 2>"$out.err"
}
# sum N OUT: the Nth figure of the "one-sided:" summary lines of OUT, added over the ranks
# (1 puts, 3 gets, 5 atomics asked, 6 puts and gets served, 7 atomics served, 8 refused,
# 9 ours refused by a peer, 10 malformed, 11 PUT_DONE answers: each answers 1-128 puts)
sum() {
    grep -ho 'one-sided: .*' "$2.err" | tr -c '0-9\n' ' ' |
        awk -v n="$1" '{ s += $n } END { print s + 0 }'
}
# rma NAME LABEL CHECKS ARGS...: rsm_rma's TAP relayed, its exit status and checks counted,
# and what pmeth carried
rma() {
    local name=$1 label=$2 want=$3; shift 3
    local start=$SECONDS rc n
    pm "$LOG/$name" "$@"; rc=$?
    relay_tap "$label: " <"$LOG/$name"
    n=$(grep -c '^ok' "$LOG/$name")
    if [ "$rc" -eq 0 ] && [ "$n" -eq "$want" ]; then
        ok "$label: rsm_rma passed its $n checks in $((SECONDS - start)) s"
    else
        not_ok "$label: rsm_rma exited $rc with $n of $want checks passed"
        tail -20 "$LOG/$name.err" | diag
    fi
    local puts gets amos served aserved refused malformed
    puts=$(sum 1 "$LOG/$name"); gets=$(sum 3 "$LOG/$name"); amos=$(sum 5 "$LOG/$name")
    served=$(sum 6 "$LOG/$name"); aserved=$(sum 7 "$LOG/$name")
    refused=$(( $(sum 8 "$LOG/$name") + $(sum 9 "$LOG/$name") )); malformed=$(sum 10 "$LOG/$name")
    answers=$(sum 11 "$LOG/$name")
    # a PUT_DONE lists the puts of a poll: over hundreds of puts (a 1 MiB put is 182 pieces
    # sent back to back) some polls find several; a job of a few dozen may find none
    local fewer=$answers; [ "$puts" -ge 100 ] && fewer=$((answers + 1))
    check "$label: pmeth carried them: $puts puts and $gets gets sent, $served served; $amos atomics sent, $aserved served; the puts answered in $answers PUT_DONEs (fewer than the puts, from 100 puts on); $refused refused, $malformed malformed" \
        [ "$puts" -gt 0 -a "$gets" -gt 0 -a "$amos" -gt 0 -a "$served" -eq $((puts + gets)) \
          -a "$aserved" -eq "$amos" -a "$answers" -ge 1 -a "$fewer" -le "$puts" \
          -a "$refused" -eq 0 -a "$malformed" -eq 0 ]
}

vc create ring --nodes 3 --links 2 --rate 0 --force >/dev/null || { not_ok "create ring"; tap_done; exit; }

rma rma2 "2 hosts x 1 rank, self,pmeth, one-sided" 44 --nodes 0,1 -- "$RMA" flavours 02
rma rma3 "3 hosts x 1 rank, self,pmeth, one-sided" 44 -- "$RMA" flavours 02 100

# 1% of the frames lost each way on one link of every pair of hosts
vc fault loss:n0/eth0:0.01:both loss:n1/eth0:0.01:both loss:n2/eth0:0.01:both >/dev/null
rma loss "3 hosts x 1 rank, 1% frame loss, one-sided" 22 -- "$RMA" flavours 2 100
rtx=$(grep -ho '[0-9]* retransmits on timeout, [0-9]* fast' "$LOG/loss.err" | awk '{s += $1 + $5} END {print s + 0}')
check "... frames lost and sent again under it ($rtx retransmits)" [ "$rtx" -gt 0 ]
vc fault --clear >/dev/null

# MPI_T: btl_pmeth_rma_* move with one put (in pieces) and 100 fetch-and-ops
rma mpit "2 hosts x 1 rank, self,pmeth, one-sided, MPI_T" 3 --nodes 0,1 -- "$RMA" mpit pmeth

# a dynamic window across hosts: Open MPI 4.1.4's osc rdma would wait for ever on its own lock
start=$SECONDS
pm "$LOG/dyn" --nodes 0,1 -- "$RMA" flavours 1; rc=$?
secs=$((SECONDS - start))
if [ "$rc" -ne 0 ] && [ "$secs" -lt 60 ] && grep -q 'pull request 10473' "$LOG/dyn.err" \
    && grep -q 'osc pt2pt' "$LOG/dyn.err"; then
    ok "2 hosts x 1 rank, a dynamic window: the job ends (exit $rc in $secs s, not a hang) with the message naming Open MPI's osc rdma deadlock and --mca osc pt2pt"
else
    not_ok "2 hosts x 1 rank, a dynamic window: exit $rc after $secs s, without the osc rdma deadlock message"
    tail -20 "$LOG/dyn.err" | diag
fi
# the same deadlock on a rank's own region lock: each rank accumulates into its own word of
# a dynamic window first (MPICH's win_dynamic_acc; osc rdma 4.1.4 takes a window's own locks
# through the BTL too, in place, where the watch once did not look: the job hung)
start=$SECONDS
pm "$LOG/dynself" --nodes 0,1 -- "$RMA" dynself; rc=$?
secs=$((SECONDS - start))
check "2 hosts x 1 rank, each rank's own word of a dynamic window first: the job ends (exit $rc in $secs s, not a hang) with the message naming the rank's own lock" \
    sh -c "[ $rc -ne 0 ] && [ $secs -lt 60 ] && grep -q 'pull request 10473' '$LOG/dynself.err' \
           && grep -q 'this very rank' '$LOG/dynself.err'"

# btl_pmeth_rma 0: no one-sided operations offered, so no window (an error, not a crash)
pm "$LOG/off" --nodes 0,1 --mca btl_pmeth_rma 0 -- "$RMA" no-window; rc=$?
relay_tap "btl_pmeth_rma 0: " <"$LOG/off"
check "btl_pmeth_rma 0: the job ends normally (exit $rc) and pmeth carried no one-sided operation" \
    [ "$rc" -eq 0 -a "$(grep -c 'one-sided:' "$LOG/off.err")" -eq 0 ]

# the default follows the job's osc selection: Debian's leaves out pt2pt, so pmeth offered
# its operations in the jobs above (said at verbose 5); one that allows pt2pt gets none
offered=$(grep -c 'one-sided operations for osc rdma: offered (btl_pmeth_rma 2' "$LOG/rma2.err")
check "btl_pmeth_rma 2 (the default) under Debian's osc selection (^ucx,pt2pt): both ranks offered the operations ($offered)" \
    [ "$offered" -eq 2 ]
pm "$LOG/pt2pt" --nodes 0,1 --mca osc ^ucx -- "$RMA" flavours 0 100; rc=$?
n=$(grep -c '^ok' "$LOG/pt2pt")
check "a job that may select osc pt2pt (--mca osc ^ucx): pmeth offers nothing (no one-sided line) and rsm_rma's $n create-window checks pass over osc pt2pt (exit $rc)" \
    [ "$rc" -eq 0 -a "$n" -eq 22 -a "$(grep -c 'one-sided:' "$LOG/pt2pt.err")" -eq 0 \
      -a "$(grep -c 'not offered (btl_pmeth_rma 2: this job may select osc pt2pt)' "$LOG/pt2pt.err")" -eq 2 ]

# ob1 over pmeth with the one-sided operations on: its send protocols, no RDMA
pm "$LOG/p2p" --nodes 0,1 -- "$P2P" -M 4194304; rc=$?
relay_tap "p2p over pmeth with one-sided on: " <"$LOG/p2p"
arrays=$(grep -ho 'buffer arrays: [0-9]* sent' "$LOG/p2p.err" | awk '{s += $3} END {print s + 0}')
check "p2p over pmeth up to 4 MiB (exit $rc): ob1 moved no byte by pmeth's put or get (no one-sided line in the summary) and its large messages went as buffer arrays ($arrays)" \
    [ "$rc" -eq 0 -a "$(grep -c 'one-sided:' "$LOG/p2p.err")" -eq 0 -a "$arrays" -gt 0 ]

# ---- passive target on a rank away from MPI -----------------------------------------------
# Over hardware RDMA a passive-target epoch needs nothing of the target; over pmeth each
# request is a message the target serves, by its keeper thread while it computes
AWAY=$TOP_BUILDDIR/test/pmeth/pmeth_rma_away
# epoch OUT: the origin's epoch time; took OUT: the frames the target's keeper took
epoch() { sed -n 's/^rma-away: origin: epoch done in \([0-9.]*\) s.*/\1/p' "$1"; }
took() { sed -n 's/^rma-away: target: keeper took \([0-9]*\) frames.*/\1/p' "$1"; }
pm "$LOG/away" --nodes 0,1 -- "$AWAY" 3 20000; rc=$?
t=$(epoch "$LOG/away"); k=$(took "$LOG/away")
check "a target away from MPI for 3 s: the origin's epoch (lock, a put of 20000 B in a buffer array, flush, get, fetch-and-add, unlock) completed meanwhile (${t:-?} s), the target's keeper took ${k:-?} frames of the requests; every byte and value verified" \
    sh -c "[ $rc -eq 0 ] && [ \"\$(echo '${t:-9}' | awk '{print (\$1 < 1.5)}')\" = 1 ] && [ '${k:-0}' -gt 0 ] \
           && [ \$(grep -c 'get verified, old value 0\$\|window verified\$' '$LOG/away') = 2 ]"
pm "$LOG/away0" --nodes 0,1 --mca btl_pmeth_keeper_us 0 -- "$AWAY" 3 20000; rc=$?
t=$(epoch "$LOG/away0")
check "the same with btl_pmeth_keeper_us 0: the epoch waits for the target to come back (${t:-?} s), then completes, verified" \
    sh -c "[ $rc -eq 0 ] && [ \"\$(echo '${t:-0}' | awk '{print (\$1 >= 2)}')\" = 1 ] \
           && [ \$(grep -c 'get verified, old value 0\$\|window verified\$' '$LOG/away0') = 2 ]"

# ---- 2 ranks a host, a shared-memory BTL beside pmeth --------------------------------------
# osc rdma (4.1) makes a window only over one BTL that reaches every rank of it: vader and rsm
# reach the rank beside, pmeth the other host, so such windows failed (MPI_ERR_WIN) until
# pmeth reached the rank beside too, over its host link (lo)
for btls in self,vader,pmeth self,rsm,pmeth; do
    name=hl-${btls//,/-}
    BTLS=$btls PPN=2 rma "$name" "2 hosts x 2 ranks, $btls, one-sided" 44 --nodes 0,1 -- "$RMA" flavours 02
    lo=$(grep -ho 'btl:pmeth: link lo: [0-9]* frames' "$LOG/$name.err" | awk '{print $4}' | sort -n)
    lomin=$(echo "$lo" | head -1); lo=$(echo $lo)
    check "... $btls: every rank opened the host link for osc rdma ($(grep -c 'the host link (for osc rdma' "$LOG/$name.err") of 4) and it carried the operations between the ranks of a host (frames out: $lo)" \
        sh -c "[ \$(grep -c 'the host link (for osc rdma' '$LOG/$name.err') = 4 ] && [ \$(echo '$lo' | wc -w) = 4 ] \
               && [ '${lomin:-0}' -ge 100 ]"
done
# without the host link: window creation fails as before (rsm_rma reports it and exits 1)
BTLS=self,vader,pmeth PPN=2 pm "$LOG/nohl" --nodes 0,1 --mca btl_pmeth_host_link 0 -- "$RMA" flavours 0; rc=$?
check "btl_pmeth_host_link 0, 2 ranks a host beside vader: MPI_Win_create fails (exit $rc), as before the host link" \
    sh -c "[ $rc -ne 0 ] && grep -q '^not ok 1 - MPI_Win_create' '$LOG/nohl' && ! grep -q '^ok' '$LOG/nohl'"

vc destroy >/dev/null
vc_assert_clean
tap_done
