#!/bin/bash
# Inside the soft-RoCE guest: xb-bw and xb-bibw at 4 and 8 KiB, rsm (defaults, a 1 MiB pool,
# direct off) against ucx; per job the packets each rxe device sent and, for rsm, the
# finalize lines at btl_base_verbose 10 (writes, direct units, ack writes, staged starts).
B=$1
T=$(cd "$(dirname "$0")/../../test" && pwd)   # the checkout, as the guest sees it
. "$T/guest/guest_env.sh" xbguest 1536
. "$T/guest/guest_hosts.sh"
W=$GH/probe; mkdir -p "$W"
gh_up 2 2 > "$W/up.log" 2>&1 || { echo "# hosts did not come up"; cat "$W/up.log"; echo xbguest-bench-done; exit 1; }
declare -A how
how[rsm]="--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10"
how[rsm-p1m]="--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10 --mca btl_rsm_verbs_pool_size 1048576"
how[rsm-nodirect]="--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 10 --mca btl_rsm_verbs_direct 0"
how[ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
for rep in 1 2; do
for b in xb-bw xb-bibw; do
for s in 4096 8192; do
for t in rsm rsm-p1m rsm-nodirect ucx; do
    gh_snap > "$W/c0"
    run_mpi 300 "${GH_MPIRUN[@]}" -np 2 --host h0:1,h1:1 ${how[$t]} "$B/bench/$b" -m $s:$s -i 30 -w 3 > "$W/out" 2> "$W/err"; rc=$?
    gh_snap > "$W/c1"
    dl() { gh_delta "$W/c0" "$W/c1" "$1"; }
    mbps=$(grep -o '"mbps": *[0-9.]*' "$W/out" | head -1 | grep -o '[0-9.]*$')
    echo "# $b $s $t rc=$rc MB/s $mbps rxe0 sent $(dl rxe0.sent_pkts) rxe1 sent $(dl rxe1.sent_pkts)"
    grep -h "RDMA writes in\|staged while" "$W/out" "$W/err" | sed 's/^.*btl rsm/#    /; s/^/# /' | head -4
done; done; done; done
echo xbguest-bench-done
