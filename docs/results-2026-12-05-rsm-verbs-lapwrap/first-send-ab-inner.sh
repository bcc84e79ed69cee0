#!/bin/bash
# In the guest: ARGS = BUILDDIR OLD_MCA_DIR ROUNDS.  From this directory:
#   GUEST_SECS=900 OUT=/tmp/fsab.txt ../results-2026-12-04-guest-launch/outer.sh \
#       $PWD/first-send-ab-inner.sh OLD_MCA_DIR 3
# test/rsm/rsm_first_send between the guest's two hosts (rank 0's first message goes out
# before it has taken rank 1's connection request; the listener off), with a component
# built without the fix (OLD_MCA_DIR: a copy of Open MPI's component directory with that
# build) and with the installed one, interleaved, queues from 4294967000 and from 0.
# Per job: exit status, seconds, the verdict line, rank 0's order of "connected to" and
# "accepted a connection from", and the lines that name a drop.
B=$1 OLD=$2 ROUNDS=${3:-3}
. "$(dirname "$0")/../results-2026-12-04-guest-launch/two-hosts.sh"
RSM=(--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10 --mca btl_rsm_verbs_listener 0)
j() {
    local l=$1 t0 rc order; shift
    t0=$(date +%s.%N)
    gh_mpirun 30 "$@" "$B/test/rsm/rsm_first_send" > "$W/o" 2>&1
    rc=$?
    order=$(grep -a '^\[h0:' "$W/o" | sed -n -E \
            -e 's/.*btl:rsm: (connected to|accepted a connection from) .*/\1/p' | tr '\n' ,)
    echo "# RESULT $l rc=$rc secs=$(echo "$(date +%s.%N) - $t0" | bc)" \
         "verified=$(grep -c 'both messages verified' "$W/o") order=$order"
    grep -a 'dropped' "$W/o" | sort | uniq -c | sed "s/^/# LINE $l: /" | cut -c1-220 | head -3
}
for r in $(seq 1 "$ROUNDS"); do
    for fs in 4294967000 0; do
        j "r$r-before-$fs" -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_first_seq "$fs" \
            --mca mca_base_component_path "$OLD"
        j "r$r-after-$fs" -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_first_seq "$fs"
    done
done
ok done
tap_done
