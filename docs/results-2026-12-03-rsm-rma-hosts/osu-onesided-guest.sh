#!/bin/bash
# OSU one-sided benchmarks between two soft-RoCE hosts in the QEMU guest of t-rsm-verbs
# (TCG: compares software paths, not networks): rsm (osc rdma over its verbs back end),
# rsm with osc pt2pt (one-sided as messages over rsm) and pml ucx with osc ucx over the same
# rxe devices.  Usage: OSU=.../osu-7.4/c/mpi/one-sided OUT=dir osu-onesided-guest.sh [REPEATS]
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
: "${OSU:?the c/mpi/one-sided directory of OSU}" "${OUT:=.}"
guest_prepare
guest_boot 1500 3072 2 "$here/osu-onesided-guest-inner.sh" "$TOP_BUILDDIR" "$OSU" "${1:-2}"
cp "$GUEST_WORK/out" "$OUT/raw.txt"
guest_report "guest" 1 "osu: "
tap_done
