#!/bin/bash
# In the guest (outer.sh): ARGS = BUILDDIR.  t-rsm-verbs.sh's 2 x 2 jobs (and rma1, 2 x 1)
# with and without mpi_yield_when_idle 1; two rounds, interleaved.
B=$1
. "$(dirname "$0")/inner-common.sh"
RSM=(--mca pml ob1 --mca btl self,rsm)
j() {
    local l=$1 s=$2 t0 rc; shift 2; t0=$(date +%s.%N)
    run_mpi "$s" "${GH_MPIRUN[@]}" "$@" > "$W/o" 2>&1; rc=$?
    echo "# RESULT $l rc=$rc secs=$(echo "$(date +%s.%N) - $t0" | bc) oks=$(grep -c '^ok' "$W/o") notoks=$(grep -c '^not ok' "$W/o")"
}
Y=(--mca mpi_yield_when_idle 1)
for r in 1 2; do
    j rma4-yield 240 -np 4 --host h0:2,h1:2 "${RSM[@]}" "${Y[@]}" "$B/test/rsm/rsm_rma" flavours 02
    j rma4-default 240 -np 4 --host h0:2,h1:2 "${RSM[@]}" "$B/test/rsm/rsm_rma" flavours 02
    j thr-yield 240 -np 4 --host h0:2,h1:2 "${RSM[@]}" "${Y[@]}" "$B/test/mpi/mpi_threads" -t 3 -r 24
    j thr-default 240 -np 4 --host h0:2,h1:2 "${RSM[@]}" "$B/test/mpi/mpi_threads" -t 3 -r 24
    j mix-yield 180 -np 4 --host h0:2,h1:2 "${RSM[@]}" "${Y[@]}" "$B/test/mpi/mpi_p2p" -M 1048576
    j mix-default 180 -np 4 --host h0:2,h1:2 "${RSM[@]}" "$B/test/mpi/mpi_p2p" -M 1048576
    j rma1-yield 240 -np 2 --host h0:1,h1:1 "${RSM[@]}" "${Y[@]}" "$B/test/rsm/rsm_rma" flavours 02
    j rma1-default 240 -np 2 --host h0:1,h1:1 "${RSM[@]}" "$B/test/rsm/rsm_rma" flavours 02
done
ok done
tap_done
