#!/bin/bash
# One-sided communication over btl rsm (btl_rsm_rma.c): Open MPI's osc rdma takes
# MPI_Win_create / _create_dynamic / _allocate windows over rsm's put, get and
# atomics (Debian's configuration turns osc pt2pt off, so without them such a window
# cannot be made).  rsm_rma checks every byte and every fetched value (puts and
# gets 1 B - 1 MiB, accumulates, counters bumped by fetch-and-op and compare-and-swap
# from every rank, max / min / xor / replace); the finalize lines show rsm carried
# the puts and served the atomics, and its MPI_T counters move by exactly what one put
# and 100 fetch-and-ops make; with btl_rsm_rma 0 window creation fails with an error
# returned to the program.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
prog=$TOP_BUILDDIR/test/rsm/rsm_rma
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
# sum of the N-th number of every rank's "one-sided: ..." finalize line
onesided() { grep -o 'one-sided: .*' <<< "$out" | tr -c '0-9\n' ' ' | awk -v f="$1" '{ s += $f } END { print s + 0 }'; }
for np in 2 4; do
    out=$(mpirun_np "$np" 240 "$RSM_ARGS --mca btl_base_verbose 10" -- "$prog" 2>&1); rc=$?
    relay_tap "rsm np $np: " <<< "$out"
    [ "$rc" -eq 0 ] || { not_ok "rsm np $np: mpirun exited $rc"; tail -20 <<< "$out" | diag; }
    puts=$(onesided 1); asked=$(onesided 3); served=$(onesided 5)
    bad=$(grep -c 'refused a one-sided\|dropped a reply to a one-sided' <<< "$out")
    if [ "$puts" -gt 0 ] && [ "$asked" -gt 0 ] && [ "$asked" -eq "$served" ] && [ "$bad" -eq 0 ]; then
        ok "rsm np $np: rsm wrote $puts puts and served $served of $asked atomics its ranks asked of each other, none refused"
    else
        not_ok "rsm np $np: puts $puts, atomics asked $asked, served $served, refusals $bad"
        grep 'one-sided\|refused' <<< "$out" | head -10 | diag
    fi
done
# the same with single copy off for messages: one-sided still works, messages take two copies
out=$(mpirun_np 3 240 "$RSM_ARGS --mca btl_rsm_single_copy 0" -- "$prog" 2>&1); rc=$?
relay_tap "rsm np 3, single copy off: " <<< "$out"
[ "$rc" -eq 0 ] || { not_ok "rsm np 3, single copy off: mpirun exited $rc"; tail -20 <<< "$out" | diag; }
# the MPI_T counters move by exactly one put and by the fetch-and-ops made
for np in 2 3; do
    out=$(mpirun_np "$np" 120 "$RSM_ARGS" -- "$prog" mpit 2>&1); rc=$?
    relay_tap "rsm np $np, MPI_T: " <<< "$out"
    [ "$rc" -eq 0 ] || { not_ok "rsm np $np, MPI_T: mpirun exited $rc"; tail -20 <<< "$out" | diag; }
done
# without rsm's offer no osc component can take the window here: an error, not a crash
out=$(mpirun_np 2 120 "$RSM_ARGS --mca btl_rsm_rma 0 --mca osc ^pt2pt,ucx" -- "$prog" no-window 2>&1); rc=$?
relay_tap "rsm np 2, btl_rsm_rma 0: " <<< "$out"
[ "$rc" -eq 0 ] || { not_ok "rsm np 2, btl_rsm_rma 0: mpirun exited $rc"; tail -20 <<< "$out" | diag; }
tap_done
