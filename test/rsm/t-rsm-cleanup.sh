#!/bin/bash
# Nothing of btl rsm stays in /dev/shm after a normal exit, an MPI_Abort, or a
# kill -9 of one rank: every segment is registered with the launcher for
# cleanup at job end, and unlinked by its owner at a normal finalize.  When mpirun
# itself is killed (-9), nothing runs that clean-up: the next rsm job of the user
# removes those segments (rsm_shm_sweep) and never a living job's.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
prog=$TOP_BUILDDIR/test/rsm/rsm_abort
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
log=$(mktemp); trap 'rm -f "$log"' EXIT
for how in exit abort kill; do
    for np in 2 4; do
        mpirun_np "$np" 120 "$RSM_ARGS --mca btl_base_verbose 10" -- "$prog" "$how" >"$log" 2>&1
        rc=$?
        ntags=$(rsm_tags "$log" | wc -l)
        case $how in exit) want=0;; *) want=nonzero;; esac
        if [ "$want" = 0 ]; then check "$how np $np: job succeeded" [ "$rc" -eq 0 ]
        else check "$how np $np: job ended with an error (rc $rc)" [ "$rc" -ne 0 -a "$rc" -ne 124 ]; fi
        check "$how np $np: every rank made its segments ($ntags tags)" [ "$ntags" -eq "$np" ]
        grep -q "connected $np ranks" "$log" || { not_ok "$how np $np: ranks connected"; tail -20 "$log" | diag; continue; }
        sleep 0.5
        left=$(rsm_leftovers "$log")
        check "$how np $np: nothing left in /dev/shm" [ -z "$left" ]
        [ -z "$left" ] || echo "$left" | diag
    done
done

# ---- mpirun killed with SIGKILL: its ranks' segments outlive it --------------------------
threads=$TOP_BUILDDIR/test/mpi/mpi_threads
shm_rsm() { ls /dev/shm 2>/dev/null | grep '^rsm-[0-9a-f]*-' | sort; }
before=$(shm_rsm)
# the inner timeout kills mpirun alone; its ranks are then killed by their unique arguments
xb_limit -t 60 -- timeout -s KILL 4 mpirun -np 2 $RSM_ARGS "$threads" -t 2 -r 1000001 >"$log" 2>&1
pkill -KILL -f -- "$threads -t 2 -r 1000001"; sleep 0.5
stale=$(comm -13 <(echo "$before") <(shm_rsm))
nstale=$(grep -c . <<< "$stale")
check "mpirun killed with SIGKILL: its 2 ranks' segments stay ($nstale names)" [ "$nstale" -ge 4 ]
# a living job beside: a later job's sweep must leave it alone (it holds until told, so it
# still lives however long the next job takes)
live_log=$(mktemp) live_go=$(mktemp -u)
xb_limit -t 120 -- mpirun -np 2 $RSM_ARGS --mca btl_base_verbose 1 \
    "$TOP_BUILDDIR/test/rsm/rsm_abort" hold "$live_go" >"$live_log" 2>&1 &
live=$!
# (its 2 control segments at start-up, its 2 areas at its first messages)
for i in $(seq 200); do [ "$(comm -13 <(sort <(echo "$before"; echo "$stale")) <(shm_rsm) | grep -c .)" -ge 4 ] && break; sleep 0.05; done
living=$(comm -13 <(sort <(echo "$before"; echo "$stale")) <(shm_rsm))
nliving=$(grep -c . <<< "$living")
# an area whose control segment is gone (left by a rank of an aborting job,
# once in ~45 aborted jobs), and a verbs pool, which carries the tag of a sender on another
# host and never has a control segment here: the sweep removes the one, keeps the other
orphan_tag=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
orphan=/dev/shm/rsm-$orphan_tag-a0s0 pool=/dev/shm/rsm-$orphan_tag-vp0
head -c 4096 /dev/zero > "$orphan"; head -c 4096 /dev/zero > "$pool"
mpirun_np 2 60 "$RSM_ARGS --mca btl_base_verbose 1" -- "$TOP_BUILDDIR/test/mpi/mpi_p2p" -M 65536 >"$log" 2>&1; rc=$?
check "an area without its control segment removed by the next job, a verbs pool beside it kept" \
    sh -c "[ ! -e '$orphan' ] && [ -e '$pool' ]"
rm -f "$orphan" "$pool"
still=$(comm -12 <(echo "$stale") <(shm_rsm) | grep -c .)
kept=$(comm -12 <(echo "$living") <(shm_rsm) | grep -c .)
touch "$live_go"; wait "$live"; lrc=$?
after=$(comm -12 <(echo "$living") <(shm_rsm) | grep -c .)
# whichever of the two jobs started first swept (the living one, most often)
removed=$(cat "$log" "$live_log" | grep -o 'removed [0-9]* names in /dev/shm' | awk '{s += $2} END {print s + 0}')
check "the next jobs removed the dead job's $nstale names ($removed removed, $still left); the second passed (rc $rc)" \
    sh -c "[ $rc -eq 0 ] && [ $still -eq 0 ] && [ $removed -ge $nstale ] && ! grep -q '^not ok' '$log'"
check "... and left the living job's $nliving names alone ($kept there while it ran)" \
    sh -c "[ $nliving -ge 2 ] && [ $kept -eq $nliving ]"
check "the living job then passed, every byte verified (rc $lrc), and left nothing ($after names)" \
    sh -c "[ $lrc -eq 0 ] && grep -q '^connected 2 ranks' '$live_log' && ! grep -q 'bad bytes' '$live_log' && [ $after -eq 0 ]"
rm -f "$live_log" "$live_go"
tap_done
