#!/bin/bash
# Point-to-point correctness over btl rsm beyond what test/mpi/t-p2p.sh covers
# (1..4 ranks over every transport): 5 to 8 ranks, and 2..4 ranks with single
# copy off, with single copy from 0 B / 64 KiB / 1 MiB, with striping, with tiny queues/pools and other inline limits.
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
# single copy is unused by default (btl_rsm_single_copy_min = SIZE_MAX): exercise the get
# path for every rendezvous message, and a threshold with sizes on both sides of it
run 2 "single copy from 0 B" "--mca btl_rsm_single_copy_min 0"
run 3 "single copy from 0 B" "--mca btl_rsm_single_copy_min 0"
run 2 "single copy from 64 KiB" "--mca btl_rsm_single_copy_min 65536"
run 4 "single copy from 1 MiB" "--mca btl_rsm_single_copy_min 1048576"
run 3 "single copy off" "--mca btl_rsm_single_copy 0"
run 2 "4 stripes" "--mca btl_rsm_stripes 4"
run 3 "small queues and pool" "--mca btl_rsm_postboxes 8 --mca btl_rsm_inline_max 200 --mca btl_rsm_pool_size 262144"
run 2 "inline 1500, 64 KiB pipeline" "--mca btl_rsm_inline_max 1500 --mca btl_rsm_pipeline_size 65536 --mca btl_rsm_max_send_size 65536"
# The threshold is exact: with btl_rsm_single_copy_min 65537 the all-pairs exchanges up to
# 65536 B make no get, up to 65537 B exactly one per rank per pass (non-blocking, blocking)
# of 65537 B; by default (SIZE_MAX) none.  Counted by the finalize line at verbosity 10.
gets() { # label expected-total-per-rank extra
    local label=$1 want=$2 extra=$3
    out=$(mpirun_np 2 120 "$RSM_ARGS --mca btl_base_verbose 10 $extra" -- "$prog" -M "$4" 2>&1); rc=$?
    got=$(grep -o 'btl:rsm: [0-9]* single-copy gets, [0-9]* bytes' <<< "$out" | sed 's/btl:rsm: //' | sort -u)
    if [ "$rc" -eq 0 ] && ! grep -q '^not ok' <<< "$out" && [ "$got" = "$want" ]; then
        ok "rsm get threshold: $label"
    else
        not_ok "rsm get threshold: $label (want '$want' on both ranks, got '$got', rc $rc)"
        tail -20 <<< "$out" | diag
    fi
}
gets "65536 B below 65537 B threshold: two-copy" "0 single-copy gets, 0 bytes" "--mca btl_rsm_single_copy_min 65537" 65536
gets "65537 B at 65537 B threshold: get" "2 single-copy gets, 131074 bytes" "--mca btl_rsm_single_copy_min 65537" 65537
gets "default: no get up to 16 MiB" "0 single-copy gets, 0 bytes" "" $((16 << 20))
tap_done
