#!/bin/bash
# IMB-RMA built with -DCHECK (every transfer verified: the "defects" column) between the two
# soft-RoCE hosts of the t-rsm-verbs guest over rsm: 2 x 1 rank on one rail and on two,
# 2 x 2 ranks on two.  Usage: IMB=.../IMB-RMA OUT=dir imb-rma-guest.sh
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
: "${IMB:?an IMB-RMA built with CPPFLAGS=-DCHECK}" "${OUT:=.}"
guest_prepare
guest_boot 3000 3072 2 "$here/imb-rma-guest-inner.sh" "$IMB"
grep -v '^\[ ' "$GUEST_WORK/out" > "$OUT/imb-rma-check-guest.txt"
guest_report "guest" 1 "imb: "
tap_done
