#!/bin/bash
# btl rsm never makes ob1 reorder the starts of messages.  When the BTL refuses
# to take a message start (sendi with no descriptor, alloc / prepare_src NULL),
# ob1 parks the request and retries it after sends that started later, out of
# sequence; ob1 4.1's out-of-sequence list mishandles fragments that straddle
# its 16-bit sequence rollover, and the receiver then waits forever.  (This hung
# xb-bibw -m 1:1K once in 4 to 80 runs with single copy off.)  Now a full queue
# hands ob1 a descriptor that waits in the BTL's own ordered pending list, and a
# full pool stages the message in private memory; the count of message starts
# refused, printed at finalize with btl_base_verbose 10, must stay 0.  That count
# is the deterministic check: the hang itself needs unlucky timing (it showed
# with verification off and the two cores sharing a cache), while with the
# descriptor fallback removed these runs refuse 0.35-8.8 million starts.
#
# Each run below sends over 65536 messages each way (more than one rollover),
# every payload verified; the last two also cross rsm's own sequence numbers' wrap.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
bibw=$TOP_BUILDDIR/bench/xb-bibw bw=$TOP_BUILDDIR/bench/xb-bw
[ -x "$bibw" ] && [ -x "$bw" ] || { echo "# $bibw or $bw not built"; exit 1; }

# run LABEL EXPECT-STAGED(yes|no|any) MCA-ARGS -- XB-ARGS   (xb-bibw, or $PROG)
run() {
    local label=$1 staged=$2 extra=$3; shift 4
    out=$(mpirun_np 2 60 "$RSM_ARGS --mca btl_base_verbose 10 $extra" -- "${PROG:-$bibw}" "$@" 2>&1); rc=$?
    lines=$(grep -o '[0-9]* message starts staged while the pool was full, [0-9]* refused' <<< "$out")
    nlines=$(grep -c . <<< "$lines")
    refused=$(awk '{s += $(NF - 1)} END {print s + 0}' <<< "$lines")
    nstaged=$(awk '{s += $1} END {print s + 0}' <<< "$lines")
    local why=""
    [ "$rc" -eq 0 ] || why="rc $rc"
    grep -q 'all payloads verified' <<< "$out" || why="$why; payloads not all verified"
    [ "$nlines" -eq 2 ] || why="$why; $nlines finalize lines, want 2"
    [ "$refused" -eq 0 ] || why="$why; $refused message starts refused"
    case $staged in
        yes) [ "$nstaged" -gt 0 ] || why="$why; nothing staged (the pool never filled?)";;
        no) [ "$nstaged" -eq 0 ] || why="$why; $nstaged staged with the default pool";;
    esac
    if [ -z "$why" ]; then
        ok "rsm order: $label ($nstaged staged, 0 refused)"
    else
        not_ok "rsm order: $label: ${why#; }"
        tail -20 <<< "$out" | diag
    fi
}
# 8 postboxes of 64 B per queue and a 64 KiB pool: nearly every send finds the
# queue or the pool full.  512 B is an inline group of 9 postboxes, 2-8 KiB are
# pool messages: 1100 + 10 windows of 64 are 71040 messages per size and way.
run "queue of 16, pool of 64 KiB, 512 B-8 KiB" yes \
    "--mca btl_rsm_postboxes 16 --mca btl_rsm_pool_size 65536" -- -m 512:8K -i 1100
run "defaults, 512 B-8 KiB" no "" -- -m 512:8K -i 1100
# the sweep that hung, 10 times (well under a second each): each is 1 B-1 KiB, 142080 messages each way
for i in $(seq 1 10); do
    run "single copy off, 1 B-1 KiB, run $i of 10" any "--mca btl_rsm_single_copy 0" -- -m 1:1K
done
# across the wrap of rsm's own 32-bit postbox sequence numbers (queues start 296 postboxes
# before it: btl_rsm_first_seq): before 2026-12-05 the postbox of sequence number 2^32 - 1
# expected the flag of a cleared slot, and a receiver that had caught up took the empty
# slot for it (a 'malformed message' dropped, then a hang: xb-bw hung in 9 of 9 runs, xb-bibw
# in none); far placement pairs tiny messages
for far in "" "--mca btl_rsm_nt_far_ns 1"; do
    PROG=$bw run "xb-bw across the wrap of the postbox sequence numbers, 1 B-1 KiB${far:+, every peer far}" \
        any "--mca btl_rsm_first_seq 4294967000 $far" -- -m 1:1K -i 2000
done
tap_done
