#!/bin/bash
# Nothing of btl rsm stays in /dev/shm after a normal exit, an MPI_Abort, or a
# kill -9 of one rank: every segment is registered with the launcher for
# cleanup at job end, and unlinked by its owner at a normal finalize.
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
        else check "$how np $np: job ended with an error (rc $rc)" [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; fi
        check "$how np $np: every rank made its segments ($ntags tags)" [ "$ntags" -eq "$np" ]
        grep -q "connected $np ranks" "$log" || { not_ok "$how np $np: ranks connected"; tail -20 "$log" | diag; continue; }
        sleep 0.5
        left=$(rsm_leftovers "$log")
        check "$how np $np: nothing left in /dev/shm" [ -z "$left" ]
        [ -z "$left" ] || echo "$left" | diag
    done
done
tap_done
