#!/bin/bash
# Runs inside the guest of t-rsm-numa.sh (guest_init's child): BUILDDIR is the host's
# build tree, seen through the read-only 9p root.
B=$1
. "$(dirname "$0")/../guest/guest_env.sh" xbnuma-guest 1024   # 2 GiB guest
rc=0
for place in 1 0; do
    echo "# --- btl_rsm_numa_place $place"
    run_mpi 120 -np 2 --bind-to core --map-by core --mca pml ob1 --mca btl self,rsm \
        --mca btl_rsm_numa_place $place --mca btl_rsm_single_copy 0 "$B/test/rsm/rsm_numa" $place 2>&1 || rc=1
done
exit $rc
