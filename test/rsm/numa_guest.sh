#!/bin/bash
# Runs inside the guest of t-rsm-numa.sh (numa_init's child): BUILDDIR is the host's
# build tree, seen through the read-only 9p root.
B=$1
mkdir -p /run/tmp   # the guest's only writable places are /run and /dev/shm
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/run TMPDIR=/run/tmp
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
ip link set lo up; hostname xbnuma-guest   # PMIx listens on loopback
echo "# guest: kernel $(uname -r), $(nproc) cpus, $(ls -d /sys/devices/system/node/node[0-9]* | wc -l) NUMA nodes"
# the time and memory limit of every test job (test/lib.sh; TMPDIR above is writable),
# the memory limit sized to the 2 GiB guest
export XB_JOB_MEM_MIB=1024
. "$(dirname "$0")/../lib.sh"
rc=0
for place in 1 0; do
    echo "# --- btl_rsm_numa_place $place"
    run_mpi 120 -np 2 --bind-to core --map-by core --mca pml ob1 --mca btl self,rsm \
        --mca btl_rsm_numa_place $place --mca btl_rsm_single_copy 0 "$B/test/rsm/rsm_numa" $place 2>&1 || rc=1
done
exit $rc
