# Sourced first by every script that runs inside a guest (guest_init's child):
#   . test/guest/guest_env.sh HOSTNAME JOB_MEM_MIB
# The guest's only writable places are /run and /dev/shm (tmpfs; / is the host's,
# read-only over 9p): HOME and TMPDIR go to /run.  Loopback up (PMIx and Open MPI's
# launcher talk over it), the guest's host name, then test/lib.sh with the memory limit
# of every MPI job (XB_JOB_MEM_MIB) sized to the guest.
mkdir -p /run/tmp
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/run TMPDIR=/run/tmp
# hwloc's plugins for displays and GPUs and its libxml2 reader, which mpirun, every orted
# and every rank load: the guest has no X server or GPU (hwloc_gl loads libX11 and tries
# displays :0-:9; hwloc_opencl loads libOpenCL; hwloc_xml_libxml loads libxml2 and ICU,
# where hwloc's own XML reader does the same job).  Under TCG that cost a 2-rank job
# 1.5-3 s of its 8-10 (test/guest/README.md, docs/results-2026-12-04-guest-launch);
# guest_hosts.sh gives the hosts the same.
export HWLOC_PLUGINS_BLACKLIST=hwloc_gl,hwloc_opencl,hwloc_xml_libxml
ip link set lo up
hostname "$1"
export XB_JOB_MEM_MIB=$2
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
echo "# guest $1: kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) MiB," \
     "$(ls -d /sys/devices/system/node/node[0-9]* | wc -l) NUMA nodes; booted in $(cut -d' ' -f1 /proc/uptime) s"
