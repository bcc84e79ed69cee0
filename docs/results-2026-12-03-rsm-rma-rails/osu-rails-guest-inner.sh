#!/bin/bash
# Runs inside the soft-RoCE guest (test/guest: hosts h0, h1 with two rails each): OSU's
# put and get bandwidth between the hosts, 1 rank each, over rsm with one rail and with
# two, REPEATS rounds, the transports alternating; raw OSU rows between "=== TRANSPORT
# BENCH REPEAT" lines, then each job's finalize line of one-sided striping.
#   $1 build tree, $2 OSU's one-sided directory, $3 repeats, $4 tbf rate or -, $5 sizes
here=$(cd "$(dirname "$0")/../../test/rsm" && pwd)
. "$here/../guest/guest_env.sh" xbguest 1536
. "$here/../guest/guest_hosts.sh"
OSU=$2 REPEATS=${3:-3} SHAPE=${4:--} SIZES=${5:-65536:262144}
mkdir -p "$GH"
gh_up_tap 2 2
if [ "$SHAPE" != - ]; then
    # a queue deep enough that rxe's bursts wait instead of being dropped (bench/rsm_verbs_guest_bench.sh)
    for nic in xh0 xh1 xs0 xs1; do
        tc qdisc add dev "$nic" root tbf rate "$SHAPE" burst 64kb limit 32mb ||
            { echo "# could not shape $nic"; exit 1; }
    done
    echo "# every host NIC shaped to $SHAPE (tbf)"
fi
declare -A how
how[rsm]="--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10"
how[rsm-2rails]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_rails 2 --mca btl_base_verbose 10"
for r in $(seq "$REPEATS"); do
    for b in ${BENCHES:-osu_put_bw osu_get_bw}; do
        for t in ${TRANSPORTS:-rsm rsm-2rails}; do
            echo "=== $t $b $r"
            # shellcheck disable=SC2086
            run_mpi 600 "${GH_MPIRUN[@]}" -np 2 --host h0:1,h1:1 ${how[$t]} "$OSU/$b" \
                -m "$SIZES" -W 8 -i 4 -x 1 2>&1 |
                grep -E '^[0-9]|one-sided:|single-copy RDMA reads'
            echo "=== end rc ${PIPESTATUS[0]}"
        done
    done
done
tap_done
