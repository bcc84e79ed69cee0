#!/bin/bash
# Runs inside the soft-RoCE guest (test/guest: two hosts h0, h1, one rxe device each):
# OSU's one-sided benchmarks between the hosts, 1 rank each, for each transport in turn
# and REPEATS rounds, every job under run_mpi's time limit.  Raw OSU output on the console
# between "=== TRANSPORT BENCH REPEAT" lines.
#   $1 the build tree (for nothing but the guest env), $2 OSU's one-sided directory, $3 repeats
here=$(cd "$(dirname "$0")/../../test/rsm" && pwd)
. "$here/../guest/guest_env.sh" xbguest 1536
. "$here/../guest/guest_hosts.sh"
OSU=$2 REPEATS=${3:-2}
mkdir -p "$GH"
gh_up_tap 2 1
declare -A how
how[rsm]="--mca pml ob1 --mca btl self,rsm"
how[rsm-pt2pt]="--mca pml ob1 --mca btl self,rsm --mca osc pt2pt"
how[ucx]="--mca pml ucx --mca osc ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
args() {
    case $1 in
        osu_put_latency|osu_get_latency) echo "-m 1:65536 -i 200 -x 20";;
        osu_fop_latency|osu_cas_latency) echo "-i 500 -x 50";;
        osu_put_bw|osu_get_bw) echo "-m 1:1048576 -i 10 -x 2";;
    esac
}
for r in $(seq "$REPEATS"); do
    for b in ${BENCHES:-osu_put_latency osu_get_latency osu_fop_latency osu_put_bw}; do
        for t in ${TRANSPORTS:-rsm rsm-pt2pt ucx}; do
            echo "=== $t $b $r"
            # shellcheck disable=SC2086
            run_mpi 150 "${GH_MPIRUN[@]}" -np 2 --host h0:1,h1:1 ${how[$t]} "$OSU/$b" $(args "$b") 2>&1 |
                grep -E '^[0-9#]' | grep -v '^# OSU\|^# Window\|^# Synchron'
            echo "=== end rc ${PIPESTATUS[0]}"
        done
    done
done
tap_done
