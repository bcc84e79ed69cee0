#!/bin/bash
# MPI_THREAD_MULTIPLE over every test transport: 4 threads a rank (np 2, and np 4
# oversubscribed), thread t of each rank exchanging with thread t of every other rank,
# blocking and non-blocking sends of 0 B - 1 MiB interleaved, every byte verified.  Several
# threads then send through one endpoint and run the BTL's progress together: the BTLs'
# locks (RSM_LOCK, PMETH_LOCK, OPAL_THREAD_LOCK underneath) are what this holds to.
. "$(dirname "$0")/../lib.sh"
prog=$TOP_BUILDDIR/test/mpi/mpi_threads
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
while IFS=$'\t' read -r name targs; do
    for np in 2 4; do
        out=$(mpirun_np "$np" 180 "$targs" -- "$prog" -t 4 -r 60 2>&1); rc=$?
        if [ "$rc" -eq 77 ]; then
            skip "$name: np $np, MPI_THREAD_MULTIPLE" "$(grep -m1 '^#' <<< "$out")"
            continue
        fi
        relay_tap "$name: " <<< "$out"
        grep -q '^ok' <<< "$out" && [ "$rc" -eq 0 ] ||
            { not_ok "$name: np $np, MPI_THREAD_MULTIPLE: mpirun exited $rc"; echo "$out" | tail -20 | diag; }
    done
done < <(transports test)
tap_done
