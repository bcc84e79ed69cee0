#!/bin/bash
# Boots the soft-RoCE guest (test/guest/guest_lib.sh) and runs grow-inner.sh in it with
# ARGS; its "# RESULT" lines land in OUT (default /tmp/rsm-verbs-grow.txt).
#   ./outer.sh BUILDDIR OLD_MCA_DIR ROUNDS [GROW_AFTER [RESEND_MS [WHICH]]]
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=$(cd "$here/../.." && pwd) TOP_BUILDDIR=${TOP_BUILDDIR:-$(cd "$here/../.." && pwd)/build}
export TOP_SRCDIR TOP_BUILDDIR
. "$TOP_SRCDIR/test/lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_prepare
guest_boot 2400 3072 2 "$here/grow-inner.sh" "$@"
grep -a '^# ' "$GUEST_WORK/out" > "${OUT:-/tmp/rsm-verbs-grow.txt}"
guest_report "guest" 1 "grow: "
tap_done
