#!/bin/bash
# Memory per host grows with the number of senders, not with the square of the
# job.  With N ranks on a host, Q postboxes per queue, stripes S and pool P:
#   control segment per rank  C = page(128 + r64(N) + N * r64(Q) + 8 * 64)   (8 split-get lines)
#   area per sender           A = page(N * Q * 64) + S * floor-to-blocks(P / S)
#   host total                M = N * C + (senders) * A
# Each rank here sends to every other, so senders = N.  The test measures the
# bytes of this job's files in /dev/shm (apparent size and pages actually
# touched) at 2, 4, 8 and 16 ranks and checks them against the formula.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
prog=$TOP_BUILDDIR/test/rsm/rsm_abort
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
Q=64; P=$((4 * 1024 * 1024)); S=1; SB=2048; LB=4096
page() { echo $(( ($1 + 4095) / 4096 * 4096 )); }
r64() { echo $(( ($1 + 63) / 64 * 64 )); }
pool_bytes() {   # what rsm_layout_init keeps of P per stripe: 1/8 small blocks, the rest large
    local per=$((P / S)); local small=$(( per / 8 / SB * SB )); local large=$(( (per - small) / LB * LB ))
    echo $((small + large))
}
work=$(mktemp -d); trap 'touch "$work/go"; rm -rf "$work"' EXIT
echo "# ranks  measured(B)  formula(B)  touched(B)  per-rank(B)"
for np in 2 4 8 16; do
    rm -f "$work/go"
    mpirun_np "$np" 300 "$RSM_ARGS --mca btl_base_verbose 10 --mca btl_rsm_postboxes $Q --mca btl_rsm_pool_size $P --mca btl_rsm_eager_limit 16384" \
        -- "$prog" hold "$work/go" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q "connected $np ranks" "$work/log" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    sleep 0.5
    files=$(rsm_leftovers "$work/log" | sed 's|^|/dev/shm/|')
    measured=0; touched=0
    if [ -n "$files" ]; then
        measured=$(stat -c %s $files | awk '{s += $1} END {print s + 0}')
        touched=$(du -B1 -c $files | tail -1 | awk '{print $1}')
    fi
    touch "$work/go"; wait "$pid"; rc=$?
    eager_set=$((${eager_set:-0} + $(grep -c 'eager up to 16384 bytes (btl_rsm_eager_limit)' "$work/log")))
    C=$(page $((128 + $(r64 $np) + np * $(r64 $Q) + 8 * 64)))
    A=$(( $(page $((np * Q * 64))) + S * $(pool_bytes) ))
    formula=$(( np * C + np * A ))
    echo "# $np  $measured  $formula  $touched  $((measured / np))"
    check "np $np: /dev/shm holds $measured B = N*C + N*A = $formula B (job rc $rc)" \
        [ "$rc" -eq 0 -a "${measured:-0}" -eq "$formula" ]
    eval "m$np=$measured"
done
# the default queue length follows the node: 4 ranks, 4096 postboxes a queue (past the knee);
# the eager limits of a host with a large cache (btl_rsm_two_copy_llc_min 0, whatever this one has)
rm -f "$work/go"
mpirun_np 4 300 "$RSM_ARGS --mca btl_base_verbose 10 --mca btl_rsm_pool_size $P --mca btl_rsm_two_copy_llc_min 0" \
    -- "$prog" hold "$work/go" >"$work/log" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "connected 4 ranks" "$work/log" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
sleep 0.5
files=$(rsm_leftovers "$work/log" | sed 's|^|/dev/shm/|')
measured=$( [ -n "$files" ] && stat -c %s $files | awk '{s += $1} END {print s + 0}')
touch "$work/go"; wait "$pid"; rc=$?
Q=4096
C=$(page $((128 + $(r64 4) + 4 * $(r64 $Q) + 8 * 64)))
A=$(( $(page $((4 * Q * 64))) + S * $(pool_bytes) ))
check "defaults, np 4: queues of 4096 postboxes, inline up to 2112 B, eager up to 64 KiB + 64 (one host; 16 KiB for a receiver at the middle distance, 4 KiB + 64 under load, 16 KiB + 64 streaming one way), /dev/shm holds ${measured:-0} B = $((4 * C + 4 * A)) B (job rc $rc)" \
    sh -c "[ $rc -eq 0 ] && [ '${measured:-0}' -eq $((4 * C + 4 * A)) ] \
           && [ \$(grep -c 'queues of 4096 postboxes, inline up to 2112 bytes, eager up to 65600 bytes (the whole job on this host; 16384 while a receiver is at the middle distance, btl_rsm_short_eager_ns, 4160 if this rank also takes in bulk data, btl_rsm_loaded_eager_limit, 16448 while it streams one way, btl_rsm_stream_eager_limit)' '$work/log') -eq 4 ]"
Q=64

check "an eager limit the user set is kept: $eager_set of 30 ranks say 16384 B" [ "$eager_set" -eq 30 ]

# a pool whose large blocks cannot hold a 64 KiB message still takes 32 KiB eagerly
# (the one-host limit must fit the pool's large blocks: 56 KiB of a 64 KiB pool)
mpirun_np 2 120 "$RSM_ARGS --mca btl_base_verbose 10 --mca btl_rsm_pool_size 65536 --mca btl_rsm_two_copy_llc_min 0" \
    -- "$TOP_BUILDDIR/test/mpi/mpi_p2p" >"$work/log" 2>&1; rc=$?
check "pool of 64 KiB, one host: eager up to 32832 B on both ranks, p2p verified (rc $rc)" \
    sh -c "[ $rc -eq 0 ] && ! grep -q '^not ok' '$work/log' && grep -q '^1\.\.' '$work/log' \
           && [ \$(grep -c 'eager up to 32832 bytes (the whole job on this host, less for the pool' '$work/log') -eq 2 ]"
# A host whose last-level cache is under btl_rsm_two_copy_llc_min (forced here: the largest
# value) sends eager up to 16 KiB + 64 (16 KiB to far receivers) and reads longer messages by
# single copy; a one-host limit the user set stays.  Without cache sizes in sysfs the rule
# cannot apply: the large cache's limit then.
if [ -r /sys/devices/system/cpu/cpu0/cache/index0/size ]; then
    mpirun_np 2 120 "$RSM_ARGS --mca btl_base_verbose 10 --mca btl_rsm_two_copy_llc_min 18446744073709551615" \
        -- "$TOP_BUILDDIR/test/mpi/mpi_p2p" -M 4194304 >"$work/log" 2>&1; rc=$?
    check "a small last-level cache (forced): eager up to 16448 B (16384 to far receivers), single copy above, answers by next fit, on both ranks; p2p up to 4 MiB verified (rc $rc)" \
        sh -c "[ $rc -eq 0 ] && ! grep -q '^not ok' '$work/log' && grep -q '^1\.\.' '$work/log' \
               && [ \$(grep -c 'under btl_rsm_two_copy_llc_min (.*one-host eager limit 16448 bytes, rendezvous by single copy for every receiver, answers in the next blocks of the lap' '$work/log') -eq 2 ] \
               && [ \$(grep -c 'eager up to 16448 bytes (the whole job on this host; 16384 while a receiver is far, btl_rsm_nt_far_ns)' '$work/log') -eq 2 ]"
    mpirun_np 2 120 "$RSM_ARGS --mca btl_base_verbose 10 --mca btl_rsm_two_copy_llc_min 18446744073709551615 --mca btl_rsm_one_host_eager_limit 40000 --mca btl_rsm_pool_answer_hot 1" \
        -- "$TOP_BUILDDIR/test/mpi/mpi_p2p" >"$work/log" 2>&1; rc=$?
    check "a small last-level cache, btl_rsm_one_host_eager_limit 40000 and btl_rsm_pool_answer_hot 1: the user's 40000 B and first fit for answers on both ranks (rc $rc)" \
        sh -c "[ $rc -eq 0 ] && ! grep -q '^not ok' '$work/log' && [ \$(grep -cF 'eager up to 40000 bytes' '$work/log') -eq 2 ] \
               && [ \$(grep -c 'answers in the lowest free blocks' '$work/log') -eq 2 ]"
else
    skip "a small last-level cache (forced)" "no cache sizes in /sys/devices/system/cpu/cpu0/cache"
    skip "a small last-level cache, btl_rsm_one_host_eager_limit 40000 and btl_rsm_pool_answer_hot 1" "no cache sizes in sysfs"
fi
# the one-host limit is a parameter: another value, and none (no raise)
for want in "40000:40000 bytes (the whole job on this host)" \
            "0:16384 bytes (the whole job on this host, btl_rsm_one_host_eager_limit is lower)"; do
    mpirun_np 2 120 "$RSM_ARGS --mca btl_base_verbose 10 --mca btl_rsm_one_host_eager_limit ${want%%:*}" \
        -- "$TOP_BUILDDIR/test/mpi/mpi_p2p" >"$work/log" 2>&1; rc=$?
    check "btl_rsm_one_host_eager_limit ${want%%:*}: eager up to ${want#*:} on both ranks, p2p verified (rc $rc)" \
        sh -c "[ $rc -eq 0 ] && ! grep -q '^not ok' '$work/log' && grep -q '^1\.\.' '$work/log' \
               && [ \$(grep -cF 'eager up to ${want#*:}' '$work/log') -eq 2 ]"
done

# Memory is given to an area as it is needed (fallocate, so that a full /dev/shm is an error,
# not a SIGBUS: t-rsm-shm-room.sh): the queues at the first send, the pool a chunk at a time
# (64 KiB, or 1/64 of a pool over 4 MiB) where messages land.  2 ranks, defaults: queues of 4096 postboxes (512 KiB a sender).
held_touch() {  # MCA-ARGS HOLD-ARGS...: a 2-rank rsm_abort hold job; sets touched (bytes
               # with memory in the two areas, while the job holds) and rc
    local args=$1 pid areas; shift
    rm -f "$work/go"
    mpirun_np 2 120 "$RSM_ARGS --mca btl_base_verbose 10 $args" -- "$prog" hold "$work/go" "$@" >"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q "connected 2 ranks" "$work/log" && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    sleep 0.3
    areas=$(rsm_leftovers "$work/log" | grep -- '-a0s0$' | sed 's|^|/dev/shm/|')
    touched=$( [ -n "$areas" ] && du -B1 -c $areas | tail -1 | awk '{print $1}')
    touch "$work/go"; wait "$pid"; rc=$?
}
for len in 0 8192; do
    held_touch "" "$len"
    want=$((2 * 524288 + (len > 0 ? 2 * 131072 : 0)))
    what=$([ "$len" -eq 0 ] && echo "only 100 B messages (inline): no pool page has memory" \
           || echo "one 8 KiB message each way: one chunk of each pool has memory (128 KiB, 1/64 of the 8 MiB pool)")
    check "np 2, $what: the 2 areas hold ${touched:-0} B = $want B (job rc $rc)" \
        [ "$rc" -eq 0 -a "${touched:-0}" -eq "$want" ]
done

# Next fit goes round the pool's first btl_rsm_pool_lap bytes (rsm_pool.c): a stream of 4 KiB
# messages both ways (2048, 64 in flight, verified; two 4 KiB blocks each, 512 KiB of large
# blocks) gives memory to about the lap's chunks of each pool and no more (blocks past the lap
# while acks lag: 1.1-1.2 MiB with a 1 MiB lap), and to the whole large-block region (7 of the
# 8 MiB) when the lap is the pool.  The default lap (an eighth of the cache, at most 4 MiB)
# keeps such a stream off the pool's second half, which is there for windows that outgrow it.
for lap in 1048576 0 8388608; do
    if [ "$lap" -eq 0 ]; then held_touch "" 4096 2048; else held_touch "--mca btl_rsm_pool_lap $lap" 4096 2048; fi
    if [ "$lap" -eq 1048576 ]; then
        check "btl_rsm_pool_lap 1 MiB, 2048 x 4 KiB each way verified: the 2 areas hold ${touched:-0} B <= 2 x (512 KiB queues + twice the 1 MiB lap; acks that lag take blocks past it) (rc $rc)" \
            sh -c "[ $rc -eq 0 ] && [ ${touched:-0} -gt 0 ] && [ ${touched:-0} -le $((2 * (524288 + 2 * 1048576))) ] \
                   && [ \$(grep -c 'next fit goes round 1024 KiB of each 8192 KiB pool' '$work/log') -eq 2 ]"
    elif [ "$lap" -eq 0 ]; then
        dlap=$(grep -o 'next fit goes round [0-9]* KiB of each 8192 KiB pool' "$work/log" | head -1 | awk '{print $5 * 1024}')
        check "the default lap (${dlap:-no} B of the 8 MiB pool, at most 4 MiB), the same stream: the 2 areas hold ${touched:-0} B <= 2 x (512 KiB + the lap + 1 MiB): the pool's second half stays without memory (rc $rc)" \
            sh -c "[ $rc -eq 0 ] && [ -n '$dlap' ] && [ ${dlap:-0} -le 4194304 ] && [ ${touched:-0} -gt 0 ] \
                   && [ ${touched:-0} -le $((2 * (524288 + ${dlap:-0} + 1048576))) ]"
    else
        check "btl_rsm_pool_lap 8 MiB (the whole pool), the same stream: the 2 areas hold ${touched:-0} B >= 2 x (512 KiB + 6 MiB) (rc $rc)" \
            sh -c "[ $rc -eq 0 ] && [ ${touched:-0} -ge $((2 * (524288 + 6291456))) ] && ! grep -q 'next fit goes round' '$work/log'"
    fi
done

# linear in senders: per-rank bytes grow only by the N*Q*64 queue term (4 KiB per extra rank)
per2=$((m2 / 2)); per16=$((m16 / 16))
check "per-rank bytes at 16 ranks ($per16) exceed those at 2 ($per2) only by the queue term" \
    [ $((per16 - per2)) -le $((14 * Q * 64 + 4096)) ]
tap_done
