#!/bin/bash
# Point-to-point correctness (all sizes 0 B..16 MiB, ANY_SOURCE/ANY_TAG, ordering,
# non-contiguous datatypes, Issend/Probe) over every test transport, 1 to 4 ranks.
. "$(dirname "$0")/../lib.sh"
prog=$TOP_BUILDDIR/test/mpi/mpi_p2p
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
while IFS=$'\t' read -r name targs; do
    for np in 1 2 3 4; do
        out=$(mpirun_np "$np" 300 "$targs" -- "$prog" 2>&1); rc=$?
        # re-number the program's TAP lines into this script's sequence
        while read -r line; do
            case "$line" in
                "ok "*)     ok "$name: ${line#ok * - }";;
                "not ok "*) not_ok "$name: ${line#not ok * - }";;
            esac
        done <<< "$(grep -E '^(not )?ok ' <<< "$out")"
        [ "$rc" -eq 0 ] || { not_ok "$name: np $np: mpirun exited $rc"; echo "$out" | tail -20 | diag; }
    done
done < <(transports test)
tap_done
