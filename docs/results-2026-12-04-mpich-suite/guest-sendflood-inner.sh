#!/bin/bash
# In the guest (guest-sendflood-outer.sh boots it): ARGS = OUT.  The hosts declare ceil(N/2)
# slots each, so Open MPI does not see 8 ranks on 2 CPUs as oversubscribed and leaves
# mpi_yield_when_idle off unless it is set.
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/test/guest/guest_env.sh" xbguest 1536
. "$top/test/guest/guest_hosts.sh"
out=$1
mkdir -p "$GH"
gh_up_tap 2 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
sf=$out/test/mpi/pt2pt/sendflood
run() { # secs np btl label [mca...]
    local k=$(( ($2 + 1) / 2 )) t0=$(date +%s.%N)
    echo "=== $4 np=$2 start $(date +%T)"
    timeout -k 5 "$1" mpirun "${GH_MPIRUN[@]}" -np $2 --oversubscribe --host h0:$k,h1:$k \
        --mca pml ob1 --mca btl $3 "${@:5}" "$sf" -p 2>&1 | awk -v t0="$t0" '{ "date +%s.%N" | getline t; close("date +%s.%N"); printf "[%7.1f] %s\n", t - t0, $0 }' | tail -40
    echo "=== $4 np=$2 rc=${PIPESTATUS[0]} end $(date +%T)"
}
run 120 2 self,rsm rsm
run 240 8 self,rsm rsm-yield --mca mpi_yield_when_idle 1
run 240 8 self,vader,tcp tcp-yield --mca mpi_yield_when_idle 1
run 120 8 self,rsm rsm-default
run 120 8 self,vader,tcp tcp-default
tap_done
