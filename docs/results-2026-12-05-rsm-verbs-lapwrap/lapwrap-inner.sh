#!/bin/bash
# In the guest: ARGS = BUILDDIR OLD_MCA_DIR ROUNDS FROM TO [FIRST_SEQ [BW_WINDOWS]]; from
# this directory:
#   GUEST_SECS=1800 OUT=/tmp/lw.txt ../results-2026-12-04-guest-launch/outer.sh \
#       $PWD/lapwrap-inner.sh OLD_MCA_DIR ROUNDS FROM TO FIRST_SEQ BW_WINDOWS
# Between the guest's two hosts, 1 rank each, with a component that never rewrites the
# whole ack row (OLD_MCA_DIR: a copy of Open MPI's component directory with such a
# build) and with the installed one, interleaved, ROUNDS times:
#  - "lapwrap": rsm_lapwrap FROM TO on 16-postbox queues (stream, N ping-pongs, stream
#    into a receiver that sleeps; every message checked), queues starting at FIRST_SEQ
#    (default 0; 50580 is where the sweep from 1984 stands at 2008, so a shorter sweep
#    meets the same sequence numbers);
#  - "wrap-bw", "wrap-p2p" (installed component only): xb-bw 1 B-1 KiB (BW_WINDOWS windows of
#    64 a size, default 2000) and mpi_p2p with every
#    queue starting 296 postboxes before the wrap of the sequence numbers
#    (btl_rsm_first_seq 4294967000).
# Per job: exit status, seconds, and the lines that name a failure.
B=$1 OLD=$2 ROUNDS=${3:-2} FROM=${4:-1984} TO=${5:-2112} FIRST=${6:-0} BWI=${7:-2000}
. "$(dirname "$0")/../results-2026-12-04-guest-launch/two-hosts.sh"
RSM=(--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 1)
j() {
    local l=$1 secs=$2; shift 2
    local t0 rc; t0=$(date +%s.%N)
    gh_mpirun "$secs" "$@" > "$W/o" 2>&1
    rc=$?
    echo "# RESULT $l rc=$rc secs=$(echo "$(date +%s.%N) - $t0" | bc)" \
         "verified=$(grep -c 'every message verified\|all payloads verified' "$W/o")" \
         "ok=$(grep -c '^ok ' "$W/o") notok=$(grep -c '^not ok' "$W/o")"
    grep -a -E '^not ok|lapwrap: N=|dropped|failed while' "$W/o" | sort | uniq -c |
        sed 's/^/# LINE '"$l"': /' | cut -c1-220 | head -6
}
for r in $(seq 1 "$ROUNDS"); do
    for which in before after; do
        old=()
        [ "$which" = before ] && old=(--mca mca_base_component_path "$OLD")
        j "r$r-lapwrap-$which" 300 -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_postboxes 16 \
            --mca btl_rsm_first_seq "$FIRST" "${old[@]}" "$B/test/rsm/rsm_lapwrap" "$FROM" "$TO" 16
    done
done
j wrap-bw 120 -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_first_seq 4294967000 \
    "$B/bench/xb-bw" -m 1:1K -i "$BWI"
j wrap-p2p 240 -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_first_seq 4294967000 \
    "$B/test/mpi/mpi_p2p" -M 4194304
ok done
tap_done
