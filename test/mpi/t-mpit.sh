#!/bin/bash
# btl rsm's statistics as MPI_T performance variables (issue 13, part 2;
# btl_rsm/btl_rsm_pvar.c): test/mpi/mpit_read reads them through MPI_T_pvar_read
# while it makes traffic over self,rsm, and checks that each moves with it - exact
# changes where the traffic determines them (message counts, bytes, gets and their
# split halves), "moved" where timing decides (near/far decisions, pool-full events).
. "$(dirname "$0")/../lib.sh"
READER=$TOP_BUILDDIR/test/mpi/mpit_read
[ -x "$READER" ] || { not_ok "test/mpi/mpit_read built (make check)"; tap_done; exit; }
run() {  # PREFIX ARGS...: the reader's TAP lines, renumbered into ours
    local prefix=$1 out rc; shift
    out=$(run_mpi 120 -np 2 --bind-to core --map-by core --mca pml ob1 --mca btl self,rsm "$@" 2>&1)
    rc=$?
    relay_tap "$prefix" <<< "$out"
    grep -q '^1\.\.' <<< "$out" && [ "$rc" -eq 0 ] \
        || { not_ok "${prefix}the reader finished and passed (exit $rc)"; tail -15 <<< "$out" | diag; }
}
# every rendezvous message by single copy, whichever placement the host gave us
run "" --mca btl_rsm_single_copy_near 1 "$READER" traffic
# a 64 KiB pool that the sender fills before the receiver starts reading
run "small pool: " --mca btl_rsm_pool_size 65536 "$READER" poolfull
# a window of 64 eager messages of 64 KiB (osu_bibw's) fits the default pool; it did not fit the
# 4 MiB pool of before 2026-12-07, whose large blocks hold 52 (docs/results-2026-12-07-rsm-amd-pool).
# The limit pinned at 64 KiB + 64: no distance rule or small cache lowers it, no verbs pools
EAGER64="--mca btl_rsm_short_eager_ns 0 --mca btl_rsm_two_copy_llc_min 0 --mca btl_rsm_verbs 0"
run "64 KiB window, default pool: " $EAGER64 "$READER" window
run "64 KiB window, 4 MiB pool: " $EAGER64 --mca btl_rsm_pool_size 4194304 "$READER" window-full
# every receiver near enough for two copies: windows of large messages both ways are read by
# single copy (btl_rsm_single_copy_both_ways), one way and ping-pong go through the pool
BOTH="--mca btl_rsm_nt_far_ns 4294967295 --mca btl_rsm_two_copy_ns 4294967295 --mca btl_rsm_two_copy_llc_min 0"
run "both ways: " $BOTH "$READER" both-ways
run "both ways off: " $BOTH --mca btl_rsm_single_copy_both_ways 0 "$READER" both-ways-off
# distance samples taken while bulk data comes in both ways decide nothing
run "load: " "$READER" load
# two tiny messages per postbox, to a receiver measured far (every receiver, with nt_far_ns 1)
# and to one measured near (every one, with nt_far_ns 4294967295); none with pair_tiny 0, nor
# to a receiver nearer than btl_rsm_pair_min_ns
NEAR="--mca btl_rsm_nt_far_ns 4294967295"
run "pairs: " --mca btl_rsm_nt_far_ns 1 "$READER" pairs
run "pairs, near: " $NEAR "$READER" pairs-near
run "pairs off: " --mca btl_rsm_nt_far_ns 1 --mca btl_rsm_pair_tiny 0 "$READER" pairs-off
run "pairs nearer than pair_min_ns: " $NEAR --mca btl_rsm_pair_min_ns 4294967295 "$READER" pairs-min
# the eager limit lowered while a receiver is in the middle band (all of them, forced), or not;
# the band is a large cache's (btl_rsm_two_copy_llc_min 0): on a small one the limit is fixed
MIDDLE="--mca btl_rsm_nt_far_ns 4294967295 --mca btl_rsm_two_copy_ns 1 --mca btl_rsm_two_copy_llc_min 0"
run "short eager: " $MIDDLE --mca btl_rsm_short_eager_ns 4294967295 "$READER" eager
run "short eager off: " $MIDDLE --mca btl_rsm_short_eager_ns 0 "$READER" eager-off
# ... and lowered further while the rank also takes in bulk data, raised when it stops
run "eager under load: " $MIDDLE --mca btl_rsm_short_eager_ns 4294967295 "$READER" eager-load
run "one-host limit set: " $MIDDLE --mca btl_rsm_short_eager_ns 4294967295 \
    --mca btl_rsm_one_host_eager_limit 65600 "$READER" eager-off
# on a small last-level cache (forced) the band is the far receivers: 16 KiB by rendezvous to
# a receiver measured far (every one, nt_far_ns 1), eager to a near one (every one)
if [ -r /sys/devices/system/cpu/cpu0/cache/index0/size ]; then
    SMALL="--mca btl_rsm_two_copy_llc_min 18446744073709551615 --mca btl_rsm_stream_sends 0"
    run "small cache, far: " $SMALL --mca btl_rsm_nt_far_ns 1 "$READER" eager-far
    run "small cache, near: " $SMALL --mca btl_rsm_nt_far_ns 4294967295 "$READER" eager-near
else
    skip "small cache, far and near" "no cache sizes in /sys/devices/system/cpu/cpu0/cache"
fi
tap_done
