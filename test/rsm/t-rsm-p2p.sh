#!/bin/bash
# Point-to-point correctness over btl rsm beyond what test/mpi/t-p2p.sh covers
# (1..4 ranks over every transport): 5 to 8 ranks, and 2..4 ranks with single
# copy off, with striping, with tiny queues/pools and other inline limits.
# All sizes 0 B..16 MiB, ANY_SOURCE/ANY_TAG, non-contiguous datatypes, verified.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/rsm_lib.sh"
prog=$TOP_BUILDDIR/test/mpi/mpi_p2p
[ -x "$prog" ] || { echo "# $prog not built"; exit 1; }
run() {
    local np=$1 label=$2 extra=$3
    out=$(mpirun_np "$np" 300 "$RSM_ARGS $extra" -- "$prog" 2>&1); rc=$?
    while read -r line; do
        case "$line" in
            "ok "*)     ok "rsm $label: ${line#ok * - }";;
            "not ok "*) not_ok "rsm $label: ${line#not ok * - }";;
        esac
    done <<< "$(grep -E '^(not )?ok ' <<< "$out")"
    [ "$rc" -eq 0 ] || { not_ok "rsm $label np $np: mpirun exited $rc"; tail -20 <<< "$out" | diag; }
}
for np in 5 6 7 8; do run "$np" "" ""; done
run 2 "single copy off" "--mca btl_rsm_single_copy 0"
run 3 "single copy off" "--mca btl_rsm_single_copy 0"
run 2 "4 stripes" "--mca btl_rsm_stripes 4"
run 3 "small queues and pool" "--mca btl_rsm_postboxes 8 --mca btl_rsm_inline_max 200 --mca btl_rsm_pool_size 262144"
run 2 "inline 1500, 64 KiB pipeline" "--mca btl_rsm_inline_max 1500 --mca btl_rsm_pipeline_size 65536 --mca btl_rsm_max_send_size 65536"
tap_done
