#!/bin/bash
# btl pmeth's receive credits (issue 10, pmeth_credit.h) across virtual hosts: 4 hosts on one
# switch whose ports buffer 256 KiB, 3 ranks sending to one at once (bench/xb-incast, every
# payload verified).  Without credits the switch port in front of the receiver overflows
# (seed 001); with them (the default, demand) the receiver's grants keep the senders within
# what the port holds.  Also: HPVM's static split gives each of the job's peers its share;
# every peer sending at once with a grant of one frame completes (no deadlock); the
# parameters and MPI_T variables are documented.  Speed is bench/pmeth-credits.py's.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
vc_setup tcred
VC_TMP=$(mktemp -d /tmp/xbvc-tcred.XXXXXX); LOG=$VC_TMP
INCAST=$TOP_BUILDDIR/bench/xb-incast
[ -x "$INCAST" ] || { echo "# $INCAST not built"; exit 1; }

# job OUT ARGS...: an incast job over self,vader,pmeth at verbose 10 (the finalize summaries)
job() {
    local out=$1; shift
    vc_mpirun --mca btl self,vader,pmeth --mca btl_base_verbose 10 "$@" >"$out" 2>"$out.err"
}
verified() { [ "$1" -eq 0 ] && grep -q 'all payloads verified' "$2" && ! grep -q '"verified":false' "$2"; }
port_drops() { ip netns exec "xbvc-$XBVC_NAME-sw" tc -s qdisc show dev s0n0 | grep -o 'dropped [0-9]*' | awk '{print $2}'; }
resends() { grep -ho '[0-9]* retransmits on timeout, [0-9]* fast' "$1" | awk '{s += $1 + $5} END {print s + 0}'; }
# sum OUT.err PATTERN: add up the number before PATTERN over the ranks' summaries
sum() { grep -ho "[0-9]* $2" "$1" | awk '{s += $1} END {print s + 0}'; }

vc create xbar --dims 4 --mtu 9000 --force >/dev/null || { not_ok "create xbar 4"; tap_done; exit; }

d0=$(port_drops)
job "$LOG/off" --mca btl_pmeth_credits off --mca btl_pmeth_pace_target_us 0 -- "$INCAST" -m 64k:1m -i 10; rc=$?
d1=$(port_drops)
check "credits and delay limit off: 3 senders to one rank, every payload verified" verified $rc "$LOG/off"
job "$LOG/demand" -- "$INCAST" -m 64k:1m -i 10; rc=$?
d2=$(port_drops)
check "credits demand (default): 3 senders to one rank, every payload verified" verified $rc "$LOG/demand"
off=$((d1 - d0)) dem=$((d2 - d1))
echo "# switch port in front of the receiver dropped $off frames without credits, $dem with;" \
     "frames sent again: $(resends "$LOG/off.err") and $(resends "$LOG/demand.err")"
check "without credits the senders overflow the switch port ($off frames dropped)" [ "$off" -gt 200 ]
check "with credits the port drops at most a tenth of that ($dem frames)" [ $((dem * 10)) -le "$off" ]
check "the senders used up their grants and asked for more ($(sum "$LOG/demand.err" 'frames used up ours'))" \
    [ "$(sum "$LOG/demand.err" 'frames used up ours')" -gt 0 ]
check "the receiver answered those requests at once ($(sum "$LOG/demand.err" 'requests answered'))" \
    [ "$(sum "$LOG/demand.err" 'requests answered')" -gt 0 ]
check "the receiver's share moved as senders came and went ($(sum "$LOG/demand.err" 'changes of the share'))" \
    [ "$(sum "$LOG/demand.err" 'changes of the share')" -gt 0 ]
check "credits off: nothing granted, nothing waited for" \
    sh -c "grep -q 'credits (off' '$LOG/off.err' && [ $(sum "$LOG/off.err" 'fragments waited for a grant') = 0 ] \
           && [ $(sum "$LOG/off.err" 'frames used up ours') = 0 ]"

# the senders' delay limit (pmeth_pace.h): three streams into one switch port queue there;
# each sender sees its one-way delay grow past the target and lowers its limit.  With the
# target 0 nothing is lowered.
cuts=$(grep -ho 'delay limit (target 1000 us): lowered [0-9]*' "$LOG/demand.err" | awk '{s += $NF} END {print s + 0}')
check "delay limit: the senders into one port lowered it $cuts times (default target 1000 us)" [ "$cuts" -gt 0 ]
job "$LOG/paceonly" --mca btl_pmeth_credits off -- "$INCAST" -m 256k:1m -i 5; rc=$?
pc=$(grep -ho 'delay limit (target 1000 us): lowered [0-9]*' "$LOG/paceonly.err" | awk '{s += $NF} END {print s + 0}')
check "credits off, delay limit on: verified, the senders lower it alone ($pc times)" \
    sh -c "$(declare -f verified); verified $rc '$LOG/paceonly' && [ $pc -gt 0 ]"
job "$LOG/nopace" --mca btl_pmeth_pace_target_us 0 -- "$INCAST" -m 256k:256k -i 5; rc=$?
check "target 0: verified, and no limit lowered" \
    sh -c "$(declare -f verified); verified $rc '$LOG/nopace' && grep -q 'delay limit (target 0 us): lowered 0 times' '$LOG/nopace.err' && ! grep -q 'delay limit (target 0 us): lowered [1-9]' '$LOG/nopace.err'"

# a burst of 4 frames a progress pass: the rest of each refill is refused and retried by
# ob1 on a later pass (a callback waits for the ack once the burst is used)
job "$LOG/burst" --mca btl_pmeth_send_burst 4 -- "$INCAST" -m 256k:1m -i 5; rc=$?
bw=$(grep -ho '[0-9]* fragments waited for the next progress pass' "$LOG/burst.err" | awk '{s += $1} END {print s + 0}')
check "a 4-frame burst a pass: no deadlock, every payload verified ($bw fragments waited for the next pass)" \
    sh -c "$(declare -f verified); verified $rc '$LOG/burst' && [ $bw -gt 0 ]"

# HPVM's static split: 15 frames over the job's 3 peers, 5 each, whatever they do
job "$LOG/static" --mca btl_pmeth_credits static --mca btl_pmeth_credit_budget 15 \
    --mca btl_pmeth_credit_floor 1 -- "$INCAST" -m 256k:256k -i 5; rc=$?
check "static split: verified, and the receiver grants each of its 3 peers 15 / 3 = 5 frames" \
    sh -c "$(declare -f verified); verified $rc '$LOG/static' && grep -q 'credits (static, budget 15 frames, floor 1).*now 5 frames a peer' '$LOG/static.err'"

# every remote rank (6) sends at once with a grant of one frame each: bulk fragments are
# refused and retried on callbacks that must come, message starts go regardless
job "$LOG/tight" --ppn 2 --mca btl_pmeth_credit_budget 1 --mca btl_pmeth_credit_floor 1 \
    -- "$INCAST" -m 128k:512k -i 4; rc=$?
check "6 senders at once on a one-frame budget: no deadlock, every payload verified ($(sum "$LOG/tight.err" 'fragments waited for a grant') waits for a grant)" \
    sh -c "$(declare -f verified); verified $rc '$LOG/tight' && grep -q 'senders 6' '$LOG/tight'"

# buffer arrays of 16 frames under grants of 24 / 6 = 4 frames a sender: an array is cut to
# what the grant lets go, and fragments are still refused and retried
job "$LOG/tight-arrays" --ppn 2 --mca btl_pmeth_credit_budget 24 --mca btl_pmeth_credit_floor 1 \
    --mca btl_pmeth_array_frames 16 --mca btl_pmeth_array_min_paths 1 -- "$INCAST" -m 128k:512k -i 4; rc=$?
arrays=$(grep -ho 'buffer arrays: [0-9]* sent' "$LOG/tight-arrays.err" | awk '{s += $3} END {print s + 0}')
check "6 senders, buffer arrays of 16 frames, a 24-frame budget: no deadlock, every payload verified ($arrays arrays sent, $(sum "$LOG/tight-arrays.err" 'fragments waited for a grant') waits for a grant)" \
    sh -c "$(declare -f verified); verified $rc '$LOG/tight-arrays' && grep -q 'senders 6' '$LOG/tight-arrays' && [ $arrays -gt 0 ]"

# eager messages of several frames (btl_pmeth_eager_frames, 16-32 KiB: 2-4 frames) from 6
# senders at once, each granted one frame: every message's first frame goes at once, the
# others wait for the grant (the window, 16 messages of at most 4 frames, has room for all).
# With credits off the same messages go whole and nothing waits: the waits are the grant's
job "$LOG/eager" --ppn 2 --mca btl_pmeth_credit_budget 6 --mca btl_pmeth_credit_floor 1 \
    -- "$INCAST" -m 16k:32k -i 4; rc=$?
sw=$(sum "$LOG/eager.err" 'later frames of eager messages waited')
check "6 senders of 16-32 KiB eager messages on a 6-frame budget: every payload verified, $sw of their later frames waited for the grant" \
    sh -c "$(declare -f verified); verified $rc '$LOG/eager' && grep -q 'senders 6' '$LOG/eager' && [ $sw -gt 0 ]"
job "$LOG/eager-off" --ppn 2 --mca btl_pmeth_credits off --mca btl_pmeth_pace_target_us 0 \
    -- "$INCAST" -m 16k:32k -i 4; rc=$?
swoff=$(sum "$LOG/eager-off.err" 'later frames of eager messages waited')
check "the same with credits and delay limit off: verified, and none waited ($swoff)" \
    sh -c "$(declare -f verified); verified $rc '$LOG/eager-off' && [ $swoff = 0 ] && grep -q 'later frames of eager messages waited' '$LOG/eager-off.err'"

info=$(ompi_info --param btl pmeth --level 9 2>/dev/null)
miss=""
for p in credits credit_budget credit_port_bytes credit_floor credit_lease_us array_frames array_min_paths \
         pace_target_us send_burst eager_frames; do
    grep -q "parameter \"btl_pmeth_$p\"" <<<"$info" || miss="$miss $p"
done
for v in credit_waits credit_asked credit_requests credit_moves credit_share arrays_sent arrays_received arrays_dropped \
         pace_cuts pace_lifts burst_waits start_waits; do
    grep -q "performance \"btl_pmeth_$v\"" <<<"$info" || miss="$miss $v"
done
check "ompi_info documents the credit, buffer-array, eager, delay-limit and burst parameters and MPI_T variables${miss:+ (missing:$miss)}" [ -z "$miss" ]
check "the policy is an enumeration: off, static, demand" \
    grep -q 'Valid values: 0:"off", 1:"static", 2:"demand"' <<<"$info"

vc destroy >/dev/null
vc_assert_clean
tap_done
