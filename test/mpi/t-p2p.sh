#!/bin/bash
# Point-to-point correctness (all sizes 0 B..16 MiB, ANY_SOURCE/ANY_TAG, ordering,
# non-contiguous datatypes, Issend/Probe) over every test transport, 1 to 4 ranks.
. "$(dirname "$0")/../lib.sh"
prog=$TOP_BUILDDIR/test/mpi/mpi_p2p
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
while IFS=$'\t' read -r name targs; do
    for np in 1 2 3 4; do
        out=$(mpirun_np "$np" 300 "$targs" -- "$prog" 2>&1); rc=$?
        relay_tap "$name: " <<< "$out"
        [ "$rc" -eq 0 ] || { not_ok "$name: np $np: mpirun exited $rc"; echo "$out" | tail -20 | diag; }
    done
done < <(transports test)
tap_done
