#!/bin/bash
# sendflood at 8 ranks between the soft-RoCE guest's two hosts, rsm and tcp, with and without
# mpi_yield_when_idle; progress lines timestamped.  OUT=/tmp/mpich ./guest-sendflood-outer.sh
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_prepare
guest_boot 1500 3072 2 "$here/guest-sendflood-inner.sh" "${OUT:-/tmp/mpich}"
cp "$GUEST_WORK/out" "${OUT:-/tmp/mpich}/guest-sendflood.txt"
guest_report "guest" 1 "sf: "
tap_done
