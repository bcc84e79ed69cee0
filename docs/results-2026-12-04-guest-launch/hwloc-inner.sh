#!/bin/bash
# In the guest (outer.sh): ARGS = BUILDDIR INIT_TIME.  2 x 1 and 2 x 2 jobs with hwloc's
# plugins all loaded, without gl and opencl, and without xml_libxml too; three rounds,
# interleaved.  The setting goes into the hosts' env files (the agent passes only those).
. "$(dirname "$0")/inner-common.sh"
P=$2
for h in h0 h1; do cp "$GH/hosts/$h.env" "$GH/hosts/$h.env.orig"; done
setbl() {
    for h in h0 h1; do
        cp "$GH/hosts/$h.env.orig" "$GH/hosts/$h.env"
        [ -n "$1" ] && echo "HWLOC_PLUGINS_BLACKLIST=$1" >> "$GH/hosts/$h.env"
    done
    if [ -n "$1" ]; then export HWLOC_PLUGINS_BLACKLIST=$1; else unset HWLOC_PLUGINS_BLACKLIST; fi
}
j() {
    local l=$1 t0 rc; shift; t0=$(date +%s.%N)
    run_mpi 120 "${GH_MPIRUN[@]}" "$@" > "$W/o" 2>&1; rc=$?
    echo "# RESULT $l rc=$rc total=$(echo "$(date +%s.%N) - $t0" | bc) $(grep INIT "$W/o" | sort | awk '{printf "[%s %s %s %s] ", $3, $5, $7, $9}')"
}
for r in 1 2 3; do
    for v in none hwloc_gl,hwloc_opencl hwloc_gl,hwloc_opencl,hwloc_xml_libxml; do
        [ $v = none ] && setbl "" || setbl $v
        j "true-$v" -np 2 --host h0:1,h1:1 /bin/true
        j "rsm-$v" -np 2 --host h0:1,h1:1 --mca pml ob1 --mca btl self,rsm "$P"
        j "rsm4-$v" -np 4 --host h0:2,h1:2 --mca mpi_yield_when_idle 1 --mca pml ob1 --mca btl self,rsm "$P"
    done
done
ok done
tap_done
