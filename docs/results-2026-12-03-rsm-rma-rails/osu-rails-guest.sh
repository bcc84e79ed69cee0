#!/bin/bash
# OSU's one-sided bandwidth between two soft-RoCE hosts in the QEMU guest of t-rsm-verbs,
# each host with two rails (rxeI on xhI, rxsI on xsI): rsm on one rail against rsm with
# `btl_rsm_verbs_rails 2` (puts and gets of 64 KiB or more cut in two, one piece per rail).
# SHAPE=120mbit shapes every host NIC with tbf so that the links, not the emulated CPUs,
# bound a transfer.  Usage: OSU=.../osu-7.4/c/mpi/one-sided OUT=dir [SHAPE=rate]
#   osu-rails-guest.sh [REPEATS]
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
: "${OSU:?the c/mpi/one-sided directory of OSU}" "${OUT:=.}"
guest_require veth bridge overlay crc32_generic rdma_rxe sch_tbf
guest_prepare
guest_boot 3000 3072 2 "$here/osu-rails-guest-inner.sh" "$TOP_BUILDDIR" "$OSU" "${1:-3}" \
    "${SHAPE:--}" "${SIZES:-65536:262144}"
cp "$GUEST_WORK/out" "$OUT/raw${SHAPE:+-$SHAPE}.txt"
guest_report "guest" 1 "osu: "
tap_done
