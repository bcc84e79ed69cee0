#!/bin/bash
# Boots the soft-RoCE guest (test/guest/guest_lib.sh) and runs one guest script in it: SCRIPT
# (this directory's, or a path) with the build directory and ARGS (default /tmp/init_time);
# its "# RESULT" lines land in OUT (default /tmp/guest-launch.txt), GUEST_SECS (1500) bounds it.
#   mpicc -O2 -o /tmp/init_time init_time.c
#   ./outer.sh hwloc-inner.sh /tmp/init_time     (or yield-inner.sh, launch-inner.sh)
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
export TOP_SRCDIR TOP_BUILDDIR
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
script=$1; shift
[ "${script#/}" = "$script" ] && script=$here/$script
[ $# -eq 0 ] && set -- /tmp/init_time
guest_prepare
guest_boot "${GUEST_SECS:-1500}" 3072 2 "$script" "$TOP_BUILDDIR" "$@"
grep -a '^# ' "$GUEST_WORK/out" > "${OUT:-/tmp/guest-launch.txt}"
guest_report "guest" 1 "launch: "
tap_done
