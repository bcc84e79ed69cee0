#!/bin/bash
# Runs inside the soft-RoCE guest (test/guest: hosts h0, h1, two rails each): IMB-RMA ($1,
# a -DCHECK build) over rsm, 0 B - 256 KiB, each job under run_mpi's time limit.
here=$(cd "$(dirname "$0")/../../test/rsm" && pwd)
. "$here/../guest/guest_env.sh" xbguest 1536
. "$here/../guest/guest_hosts.sh"
IMB=$1
mkdir -p "$GH"
gh_up_tap 2 2
RSM="--mca pml ob1 --mca btl self,rsm"
for spec in "2 h0:1,h1:1 1" "2 h0:1,h1:1 2" "4 h0:2,h1:2 2"; do
    set -- $spec
    echo "=== np $1 hosts $2 rails $3"
    t0=$(date +%s)
    # shellcheck disable=SC2086
    run_mpi 900 "${GH_MPIRUN[@]}" -np "$1" --oversubscribe --host "$2" $RSM \
        --mca btl_rsm_verbs_rails "$3" "$IMB" -msglog 0:18 -iter 10 -time 60 -npmin "$1" 2>&1
    echo "=== end rc $? in $(( $(date +%s) - t0 )) s"
done
tap_done
