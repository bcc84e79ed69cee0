#!/bin/bash
# In the guest (outer.sh): ARGS = BUILDDIR.  Launch times (/bin/true through the agent, on one
# host, plain mpirun), then one 2 x 1 launch under strace: execve, connect and accept with
# their times (hwloc_gl's tries of X displays :0-:9 on 127.0.0.1:6000-6009 show there).
. "$(dirname "$0")/inner-common.sh"
t() { local l=$1 t0; shift; t0=$(date +%s.%N); "$@" > "$W/o" 2>&1; echo "# RESULT $l rc=$? total=$(echo "$(date +%s.%N) - $t0" | bc)"; }
for r in 1 2; do
    t true mpirun "${GH_MPIRUN[@]}" -np 2 --host h0:1,h1:1 /bin/true
    t true-1host mpirun "${GH_MPIRUN[@]}" -np 1 --host h0:1 /bin/true
    t local-true mpirun -np 2 /bin/true
done
strace -f -tt -e trace=execve,exit_group,connect,accept,accept4 -o "$W/st" \
    mpirun "${GH_MPIRUN[@]}" -np 2 --host h0:1,h1:1 /bin/true > "$W/o" 2>&1
echo "# strace rc=$?"
grep -v 'resumed\|unfinished' "$W/st" | awk '{ $3 = substr($3, 1, 160); print "# ST " $0 }' |
    grep -E "execve|exit_group|connect\(.*127|accept" | head -120
tap_done
