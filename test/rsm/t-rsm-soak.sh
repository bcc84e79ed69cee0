#!/bin/bash
# Soak: 8 oversubscribed ranks exchange random sizes (0 B..4 MiB), tags and peers
# with ANY_SOURCE/ANY_TAG receives for a bounded time, every byte verified;
# with single copy, without it, and striped.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
prog=$TOP_BUILDDIR/test/rsm/rsm_soak
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
# RSM_SOAK_SECONDS: each variant's traffic time (12: the four fit the test command's time;
# a longer soak is a setting away)
secs=${RSM_SOAK_SECONDS:-12}
for variant in "" "--mca btl_rsm_single_copy_min 0" "--mca btl_rsm_single_copy_min 65536" "--mca btl_rsm_stripes 2 --mca btl_rsm_postboxes 16"; do
    out=$(mpirun_np 8 $((secs + 120)) "$RSM_ARGS $variant" -- "$prog" "$secs" 2>&1); rc=$?
    line=$(grep -E '^(not )?ok 1 - soak' <<< "$out")
    if [ "$rc" -eq 0 ] && [[ $line == ok* ]]; then ok "${line#ok 1 - } ${variant:-(defaults)}"
    else not_ok "soak ${variant:-(defaults)}: rc $rc ${line#* - }"; tail -20 <<< "$out" | diag; fi
done
tap_done
