#!/bin/bash
# System calls per round trip of an 8-byte ping-pong between the two soft-RoCE hosts of the
# t-rsm-verbs guest, for rsm, pml ucx and tcp: `perf stat -a` of tracepoints over a job of
# 2,000 and one of 12,000 iterations, twice; the difference / 10,000 is the cost of a round
# trip (both ranks).  GUEST_KERNEL_ARGS="tsc=reliable clocksource=tsc" gives the guest a TSC
# clock; without it the kernel uses the HPET.  Usage: OUT=file syscalls-guest.sh
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_prepare
guest_boot 900 3072 2 "$here/syscalls-guest-inner.sh" "$TOP_BUILDDIR"
grep -E '^===|^[0-9]|syscalls|clocksource' "$GUEST_WORK/out" > "${OUT:-syscalls.txt}"
guest_report "guest" 1 "syscalls: "
tap_done
