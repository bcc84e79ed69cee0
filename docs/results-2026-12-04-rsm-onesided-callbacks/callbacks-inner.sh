#!/bin/bash
# In the guest: ARGS = BUILDDIR OLD_MCA_DIR ROUNDS; from this directory:
#   GUEST_SECS=2400 OUT=/tmp/cb.txt ../results-2026-12-04-guest-launch/outer.sh \
#       $PWD/callbacks-inner.sh OLD_MCA_DIR ROUNDS
# One-sided operations between the guest's two hosts, with the component before this day's
# change (OLD_MCA_DIR: a copy of Open MPI's component directory with a build of the tree
# before it) and after it (the installed one), interleaved, ROUNDS times:
#  - "stress": rsm_rma's MPI_Win_create checks (every byte and fetched value) on 2 hosts x
#    2 ranks with the smallest queues: 16-postbox queues, send queues of 16 work requests
#    (a completion asked for every 4th write) and every accumulate by osc rdma's
#    get-op-put path (osc_rdma_network_max_amo 0), whose lock release is an atomic started
#    in the completion callback of the put;
#  - "constput": a put of 4 KiB from a const array to the rank on the other host.
# Per job: exit status, seconds, checks passed, the finalize line's held atomics, and the
# lines that name a failure.
B=$1 OLD=$2 ROUNDS=${3:-3}
. "$(dirname "$0")/../results-2026-12-04-guest-launch/two-hosts.sh"
RSM=(--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10)
SMALL=(--mca btl_rsm_postboxes 16 --mca btl_rsm_verbs_sq_depth 16
       --mca btl_rsm_verbs_signal_interval 4 --mca osc_rdma_network_max_amo 0)
j() {
    local l=$1 secs=$2; shift 2
    local t0 rc; t0=$(date +%s.%N)
    gh_mpirun "$secs" "$@" > "$W/o" 2>&1
    rc=$?
    local held
    held=$(grep -o 'atomics held ([a-z ,]*) *[0-9]*\|[0-9]* atomics held' "$W/o" | grep -o '[0-9]*' | paste -sd+ | bc)
    echo "# RESULT $l rc=$rc secs=$(echo "$(date +%s.%N) - $t0" | bc) ok=$(grep -c '^ok ' "$W/o")" \
         "notok=$(grep -c '^not ok' "$W/o") held=${held:-0}" \
         "register_msg=$(grep -c "could not register" "$W/o") bounced=$(grep -c "go through a copy" "$W/o") landed=$(grep -c "landed whole" "$W/o")"
    grep -a -E '^not ok|could not register|failed while|deadlock|would wait' "$W/o" | sort | uniq -c |
        sed 's/^/# LINE '"$l"': /' | cut -c1-220 | head -8
}
for r in $(seq 1 "$ROUNDS"); do
    for which in before after; do
        old=()
        [ "$which" = before ] && old=(--mca mca_base_component_path "$OLD")
        j "r$r-stress-$which" 300 -np 4 --host h0:2,h1:2 "${RSM[@]}" "${SMALL[@]}" "${old[@]}" \
            "$B/test/rsm/rsm_rma" flavours 0
        j "r$r-constput-$which" 60 -np 2 --host h0:1,h1:1 "${RSM[@]}" "${old[@]}" \
            "$B/test/rsm/rsm_rma" constput
    done
done
ok done
tap_done
