#!/bin/bash
# In the guest (outer.sh): ARGS = BUILDDIR INIT_TIME.  MPI_Init, barrier and finalize of
# init_time by transport and placement, beside /bin/true; two rounds.
. "$(dirname "$0")/inner-common.sh"
P=$2
j() {
    local l=$1 t0 rc; shift; t0=$(date +%s.%N)
    run_mpi 120 "${GH_MPIRUN[@]}" "$@" > "$W/o" 2>&1; rc=$?
    echo "# RESULT $l rc=$rc total=$(echo "$(date +%s.%N) - $t0" | bc) $(grep INIT "$W/o" | sort | awk '{printf "[%s %s %s %s] ", $3, $5, $7, $9}')"
}
H1=(-np 2 --host h0:1,h1:1)
for r in 1 2; do
    j true "${H1[@]}" /bin/true
    j rsm "${H1[@]}" --mca pml ob1 --mca btl self,rsm "$P"
    j tcp "${H1[@]}" --mca pml ob1 --mca btl self,tcp "$P"
    j rsm-verbs0-1host -np 2 --host h0:2 --mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs 0 "$P"
    j rsm-1host -np 2 --host h0:2 --mca pml ob1 --mca btl self,rsm "$P"
    j vader-1host -np 2 --host h0:2 --mca pml ob1 --mca btl self,vader "$P"
    j rsm-cutoff0 "${H1[@]}" --mca pml ob1 --mca btl self,rsm --mca mpi_add_procs_cutoff 0 "$P"
    j rsm-noosc "${H1[@]}" --mca pml ob1 --mca btl self,rsm --mca osc pt2pt --mca coll basic,libnbc,self "$P"
    j plain-local -np 2 --mca pml ob1 --mca btl self,vader "$P"
done
ok done
tap_done
