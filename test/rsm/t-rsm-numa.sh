#!/bin/bash
# btl_rsm places each area on the NUMA node of the receivers it serves (mbind,
# btl_rsm_numa_place).  This machine has one node, so the test boots a two-node
# QEMU guest (test/guest/guest_lib.sh: Debian's own kernel under TCG, the host's root
# read-only over 9p), one vCPU per node: the guest runs this build's rsm_numa with
# the installed component, one rank bound to each node, and checks in
# /proc/self/numa_maps that every page of each area is on its receivers' node; with
# numa_place off it shows where first touch put them instead (the sender's node).
# Boot and test take ~30 s.  Skipped (77) without qemu-system-x86_64, a kernel in
# /boot, cpio or static libc.
. "$(dirname "$0")/../lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_require
[ -x "$TOP_BUILDDIR/test/rsm/rsm_numa" ] || { echo "# $TOP_BUILDDIR/test/rsm/rsm_numa not built (make check)"; exit 77; }
guest_prepare
GUEST_QEMU_ARGS=(-object memory-backend-ram,id=m0,size=1024M -object memory-backend-ram,id=m1,size=1024M
                 -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1)
guest_boot 600 2048 2 "$TOP_SRCDIR/test/rsm/numa_guest.sh" "$TOP_BUILDDIR"
# the guest's "# numa_place 0" lines show, for contrast, where first touch puts the pages
guest_report "two-node guest" 4 "rsm numa: "
tap_done
