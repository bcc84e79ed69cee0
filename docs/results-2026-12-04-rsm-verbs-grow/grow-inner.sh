#!/bin/bash
# In the guest: ARGS = BUILDDIR OLD_MCA_DIR ROUNDS [GROW_AFTER [RESEND_MS [WHICH]]]; from
# this directory: GUEST_SECS=2400 OUT=/tmp/grow.txt ../results-2026-12-04-guest-launch/outer.sh
# $PWD/grow-inner.sh OLD_MCA_DIR ROUNDS [GROW_AFTER [RESEND_MS [WHICH]]].
# t-rsm-verbs.sh's verbs-grow job (2 hosts x 2 ranks; rank 0 streams to ranks 2 and 3
# until its pool on h1 has grown twice, to 3 chunks) ROUNDS times with the component
# before the fix (OLD_MCA_DIR: a copy of Open MPI's component directory with a build of
# this tree whose rsm_vgrown_verdict never says stale) and after it (the installed one),
# interleaved; every other round with a busy loop on the guest's vCPUs beside the job, so
# that answers to GROW come later.  Per job: rank 0's pool_grows counter, the stream's
# bytes and seconds, and the verbose lines of growth (btl_base_verbose 10): grew, gave
# up, late answers.
# GROW_AFTER (btl_rsm_verbs_grow_after, default 16) 1 starts the second growth at the
# first pool-full event after the first.  RESEND_MS (btl_rsm_verbs_resend_ms, default
# 200) short resends GROWs before their answers come, so they are answered twice.
# WHICH: both (default), before or after.
B=$1 OLD=$2 ROUNDS=${3:-6} GROW_AFTER=${4:-16} RESEND_MS=${5:-200} WHICH=${6:-both}
. "$(dirname "$0")/../results-2026-12-04-guest-launch/two-hosts.sh"
RSM=(--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10 --mca btl_rsm_verbs_pool_chunks 3
     --mca btl_rsm_verbs_single_copy_min 18446744073709551615 --mca btl_rsm_verbs_grow_after "$GROW_AFTER"
     --mca btl_rsm_verbs_resend_ms "$RESEND_MS")
j() {
    local l=$1; shift
    local t0 rc; t0=$(date +%s.%N)
    gh_mpirun 150 -np 4 --host h0:2,h1:2 "${RSM[@]}" "$@" "$B/test/mpi/mpit_read" verbs-grow 2 > "$W/o" 2>&1
    rc=$?
    local grows stream
    grows=$(awk '$1 == "verbs-memory:" && $2 == "rank" && $3 == 0 { print $15 }' "$W/o")
    stream=$(sed -n 's/^verbs-grow: stream \([0-9]*\) bytes in \([0-9.]*\) s$/\1:\2/p' "$W/o")
    echo "# RESULT $l rc=$rc secs=$(echo "$(date +%s.%N) - $t0" | bc) grows0=${grows:-?} stream=$stream" \
         "grew=$(grep -c 'grew to' "$W/o") gave_up=$(grep -c 'stays at' "$W/o")" \
         "late=$(grep -c 'late answer' "$W/o") notok=$(grep -c '^not ok' "$W/o")"
    grep -a -E 'grew to|stays at|late answer|could not map|BEFORE' "$W/o" | sed 's/^/# LINE '"$l"': /' | cut -c1-220
}
hog() { ( while :; do :; done ) > /dev/null 2>&1 & echo $!; }
for r in $(seq 1 "$ROUNDS"); do
    h=""
    [ $((r % 2)) -eq 0 ] && h=$(hog)
    tag=$([ -n "$h" ] && echo busy || echo quiet)
    [ "$WHICH" != after ] && j "r$r-$tag-before" --mca mca_base_component_path "$OLD"
    [ "$WHICH" != before ] && j "r$r-$tag-after"
    [ -n "$h" ] && kill "$h"
done
ok done
tap_done
