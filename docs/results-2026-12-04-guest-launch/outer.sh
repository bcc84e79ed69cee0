#!/bin/bash
# Boots the soft-RoCE guest (test/guest/guest_lib.sh) and runs one of this directory's
# guest scripts in it; its "# RESULT" lines land in OUT (default /tmp/guest-launch.txt).
#   mpicc -O2 -o /tmp/init_time init_time.c
#   ./outer.sh hwloc-inner.sh /tmp/init_time     (or yield-inner.sh, launch-inner.sh)
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
export TOP_SRCDIR TOP_BUILDDIR
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_prepare
guest_boot 1500 3072 2 "$here/$1" "$TOP_BUILDDIR" "${2:-/tmp/init_time}"
grep -a '^# ' "$GUEST_WORK/out" > "${OUT:-/tmp/guest-launch.txt}"
guest_report "guest" 1 "launch: "
tap_done
