#!/bin/bash
# mpi4py's own suite (3.1.4, spawn/dynproc excluded as in test/ext/t-mpi4py.sh) over tcp,
# launched on virtual hosts by Open MPI's multi-host launcher:
#  - 2 ranks on one host: both ranks OK, no error (until 2026-12-05 a local run over tcp
#    came first and the host's counts had to match it: ~45 s of the test's time, and
#    t-mpi4py.sh checks the local counts across transports);
#  - 1 rank on each of 2 hosts: the same tests run and skipped as on one host; the only errors are
#    MPI_Win_allocate / MPI_Win_allocate_shared over COMM_WORLD - what a real cluster
#    gives too: Debian's config leaves ob1 only osc sm for those, which needs all ranks on
#    one shared-memory node (MPI_ERR_RMA_SHARED, MPI_ERR_WIN).
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
. "$TOP_SRCDIR/test/ext/mpi4py_lib.sh"
vc_require
m4py_require
vc_setup thm4py
VC_TMP=$(mktemp -d /tmp/xbvc-thm4py.XXXXXX); LOG=$VC_TMP
vc create pair --rate 0 --force >/dev/null || { not_ok "create pair"; tap_done; exit; }
cd "$M4PY_SUITE" || exit 1
vc_mpirun --nodes 0 --ppn 2 --mca btl self,tcp --mpirun-args "--output-filename $LOG/onehost" \
    -- $M4PY_PY "${M4PY_ARGS[@]}" >"$LOG/onehost.out" 2>&1; rc=$?
ref=$(m4py_summary "$LOG/onehost"); IFS=/ read -r ran skipped oks errs <<< "$ref"
check "2 ranks on host n0 over tcp: both OK, no error (exit $rc; ran $ran, skipped $skipped)" \
    [ "$rc" = 0 -a "$oks" = 2 -a "${errs:-0}" = 0 -a -n "$ran" -a "${ran%,*}" = "$ran" ]

vc_mpirun --ppn 1 --mca btl self,tcp --mpirun-args "--output-filename $LOG/twohosts" \
    -- $M4PY_PY "${M4PY_ARGS[@]}" >"$LOG/twohosts.out" 2>&1; rc=$?
got=$(m4py_summary "$LOG/twohosts"); IFS=/ read -r ran2 skipped2 oks2 errs2 <<< "$got"
check "1 rank on each of n0, n1 over tcp: the same tests ran and were skipped as on one host ($ran2/$skipped2 vs $ran/$skipped)" \
    [ -n "$ran2" -a "$ran2/$skipped2" = "$ran/$skipped" ]
others=$(m4py_unexpected_errors "$LOG/twohosts")
m4py_error_classes "$LOG/twohosts" | diag
check "1 rank on each of 2 hosts: every error ($errs2 over both ranks) is a Win.Allocate(_shared) over COMM_WORLD" \
    [ -z "$others" ]
[ -n "$others" ] && echo "$others" | head -20 | diag
check "destroy" bash -c "$VC destroy >/dev/null"
vc_assert_clean
tap_done
