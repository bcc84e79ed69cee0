#!/bin/bash
# MPICH's tests between the soft-RoCE guest's two hosts over btl rsm (shm on a host, verbs
# between): boots the test guest (test/guest/guest_lib.sh) and runs guest-inner.sh in it.
#   OUT=/tmp/mpich DIRS=pt2pt docs/results-2026-12-04-mpich-suite/guest-outer.sh
# OUT must be a build of build.sh under /tmp or another path the guest sees read-only.
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_prepare
guest_boot "${SECS:-3300}" 3072 2 "$here/guest-inner.sh" "${OUT:-/tmp/mpich}" "${DIRS:-pt2pt}"
cp "$GUEST_WORK/out" "${OUT:-/tmp/mpich}/guest.out"
guest_report "guest" 1 "mpich: "
tap_done
