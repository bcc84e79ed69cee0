# Sourced first by every script that runs inside a guest (guest_init's child):
#   . test/guest/guest_env.sh HOSTNAME JOB_MEM_MIB
# The guest's only writable places are /run and /dev/shm (tmpfs; / is the host's,
# read-only over 9p): HOME and TMPDIR go to /run.  Loopback up (PMIx and Open MPI's
# launcher talk over it), the guest's host name, then test/lib.sh with the memory limit
# of every MPI job (XB_JOB_MEM_MIB) sized to the guest.
mkdir -p /run/tmp
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/run TMPDIR=/run/tmp
ip link set lo up
hostname "$1"
export XB_JOB_MEM_MIB=$2
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
echo "# guest $1: kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB," \
     "$(ls -d /sys/devices/system/node/node[0-9]* | wc -l) NUMA nodes; booted in $(cut -d' ' -f1 /proc/uptime) s"
