#!/bin/bash
# Runs inside the guest of t-guest-hosts.sh (guest_init's child), prints TAP: two hosts
# (guest_hosts.sh), then jobs launched on them by Open MPI's rsh launcher through our
# agent, every byte verified, the NICs' and rxe devices' counters showing where the data
# went.  BUILDDIR is the machine's build tree, seen through the read-only 9p root.
B=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/guest_env.sh" xbguest 1536            # 3 GiB guest
. "$here/guest_hosts.sh"
W=$GH/test
mkdir -p "$W"
gh_up_tap 2

# --- the hosts
check "h0 and h1 are hosts named h0 and h1 (the guest itself: xbguest)" \
    [ "$(gh_on h0 hostname),$(gh_on h1 hostname),$(hostname)" = "h0,h1,xbguest" ]
gh_on h0 'echo h0 > /dev/shm/xbg-probe && echo h0 > /tmp/xbg-probe'
check "a file in h0's /dev/shm and /tmp is seen by h0 only (not by h1 nor the guest)" bash -c "
    [ \"\$($GH_AGENT h0 cat /dev/shm/xbg-probe /tmp/xbg-probe | paste -sd,)\" = h0,h0 ] &&
    ! $GH_AGENT h1 test -e /dev/shm/xbg-probe && ! $GH_AGENT h1 test -e /tmp/xbg-probe &&
    [ ! -e /dev/shm/xbg-probe ] && [ ! -e /tmp/xbg-probe ]"
gh_on h0 rm -f /dev/shm/xbg-probe /tmp/xbg-probe
rdma link > "$W/rdma"
check "rdma link: rxe0 on xh0 and rxe1 on xh1, both ACTIVE" bash -c "
    grep -q '^link rxe0/1 state ACTIVE .*netdev xh0 ' $W/rdma && grep -q '^link rxe1/1 state ACTIVE .*netdev xh1 ' $W/rdma"

snap() { gh_snap; }
delta() { gh_delta "$@"; }

# --- verbs between the two hosts' devices, no MPI
if command -v ibv_devices >/dev/null; then
    check "ibv_devices lists rxe0 and rxe1" bash -c "ibv_devices | grep -q rxe0 && ibv_devices | grep -q rxe1"
fi
if command -v ib_write_lat >/dev/null; then
    snap > "$W/lat.0"
    gh_on h1 timeout 60 ib_write_lat -d rxe1 -x "$(gh_gid_index rxe1 "$(gh_addr 1)")" -n 500 > "$W/lat.srv" 2>&1 &
    srv=$!
    # its client connects once, no retry: wait until the server listens (its "Waiting for
    # client" is printf'd into a file, so it may come only at its exit)
    for _ in $(seq 100); do
        gh_on h1 ss -Hltn 'sport = :18515' 2>/dev/null | grep -q . && break
        grep -q 'Waiting for client' "$W/lat.srv" 2>/dev/null && break
        sleep 0.1
    done
    gh_on h0 timeout 60 ib_write_lat -d rxe0 -x "$(gh_gid_index rxe0 "$(gh_addr 0)")" -n 500 "$(gh_addr 1)" > "$W/lat.cli" 2>&1
    rc=$?
    wait "$srv"
    snap > "$W/lat.1"
    res=$(awk '$1 == 2 && $2 == 500 { print "t_min " $3 " us, typical " $5 " us" }' "$W/lat.cli")
    if [ "$rc" -eq 0 ] && [ -n "$res" ]; then
        ok "ib_write_lat rxe0 (h0) -> rxe1 (h1), RC, 500 x 2 B: $res (under TCG)"
    else
        not_ok "ib_write_lat rxe0 -> rxe1 (exit $rc)"; tail -5 "$W/lat.cli" "$W/lat.srv" | diag
    fi
    s=$(delta "$W/lat.0" "$W/lat.1" rxe0.sent_pkts); r=$(delta "$W/lat.0" "$W/lat.1" rxe1.rcvd_pkts)
    x=$(delta "$W/lat.0" "$W/lat.1" xh1.rx_bytes)
    check "its writes left rxe0 ($s packets) and reached rxe1 ($r) through xh0 -> xh1 ($x B), not lo" \
        [ "$s" -ge 500 -a "$r" -ge 500 -a "$x" -ge $((500 * 60)) ]
else
    skip "ib_write_lat between the hosts' rxe devices" "no perftest"
fi

# --- MPI jobs on the hosts
VOL=$((2 << 20)); ITERS=4; TOTAL=$((VOL * ITERS))      # 8 MiB per stream
SMALL=$((TOTAL / 16))     # what launching a job moves over loopback: ~60 KB
# job NAME SECONDS MPIRUN_ARGS...: a job on the hosts, counters before and after, output in $W/NAME
job() {
    local name=$1 secs=$2; shift 2
    snap > "$W/$name.0"
    local t0 rc
    t0=$(now)
    gh_mpirun "$secs" "$@" > "$W/$name" 2> "$W/$name.err"
    rc=$?
    job_secs=$(since "$t0")
    snap > "$W/$name.1"
    return $rc
}
d() { delta "$W/$1.0" "$W/$1.1" "$2"; }
failed() { not_ok "$1"; tail -n 15 "$W/$2" "$W/$2.err" | diag; }

# on-host: ranks 0 and 1 on h0
if job on 120 -np 4 --host h0:2,h1:2 --mca pml ob1 --mca btl self,vader,tcp \
        "$B/test/vcluster/vc_hosts" 0 1 $VOL $ITERS && grep -q "^stream 0->1 $VOL x $ITERS verified" "$W/on"; then
    ok "2 hosts x 2 ranks, self,vader,tcp: 8 MiB rank 0 -> 1 (both on h0) verified ($job_secs s)"
else
    failed "on-host stream over self,vader,tcp" on
fi
grep '^rank' "$W/on" | diag
check "MPI_Get_processor_name and gethostname give the host's name (h0 h0 h1 h1)" \
    [ "$(awk '/^rank/ {printf "%s=%s ", $4, $6}' "$W/on")" = "h0=h0 h0=h0 h1=h1 h1=h1 " ]
check "MPI_COMM_TYPE_SHARED splits by host: {0,1} and {2,3}" \
    [ "$(awk '/^rank/ {printf "%s/%s ", $8, $10}' "$W/on")" = "0/2 0/2 2/2 2/2 " ]
n=$(( $(d on xh0.tx_bytes) + $(d on xh1.tx_bytes) )); l=$(d on lo.rx_bytes)
check "the on-host stream crossed neither NIC ($n B) nor loopback ($l B): vader carried it" \
    [ "$n" -lt $SMALL -a "$l" -lt $SMALL ]

# off-host: rank 0 on h0, rank 2 on h1
if job off 120 -np 4 --host h0:2,h1:2 --mca pml ob1 --mca btl self,vader,tcp \
        "$B/test/vcluster/vc_hosts" 0 2 $VOL $ITERS && grep -q "^stream 0->2 $VOL x $ITERS verified" "$W/off"; then
    ok "2 hosts x 2 ranks, self,vader,tcp: 8 MiB rank 0 (h0) -> 2 (h1) verified ($job_secs s)"
else
    failed "off-host stream over self,vader,tcp" off
fi
x0=$(d off xh0.tx_bytes); x1=$(d off xh1.rx_bytes); l=$(d off lo.rx_bytes)
check "the off-host stream left h0's NIC ($x0 B) and reached h1's ($x1 B), not loopback ($l B): tcp carried it" \
    [ "$x0" -ge $TOTAL -a "$x1" -ge $TOTAL -a "$l" -lt $SMALL ]

# every pair at once, on-host and off-host peers in one job
if job p2p 240 -np 4 --host h0:2,h1:2 --mca pml ob1 --mca btl self,vader,tcp "$B/test/mpi/mpi_p2p" -M $((1 << 20)); then
    relay_tap "2 hosts x 2 ranks, self,vader,tcp, mpi_p2p: " < "$W/p2p"
    [ "$(grep -c '^ok ' "$W/p2p")" -gt 0 ] || failed "mpi_p2p printed no check" p2p
else
    relay_tap "2 hosts x 2 ranks, self,vader,tcp, mpi_p2p: " < "$W/p2p"
    failed "mpi_p2p on 2 hosts x 2 ranks (exit status)" p2p
fi
echo "# mpi_p2p up to 1 MiB, 2 hosts x 2 ranks: $job_secs s"

# pml ucx over the rxe devices, one rank per host; UCX_NET_DEVICES comes from the agent
ucx=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
     -x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_UD_VERBS_ETH_DGID_CHECK=n)
if job ucx 120 -np 2 --host h0:1,h1:1 "${ucx[@]}" "$B/test/vcluster/vc_hosts" 0 1 $VOL $ITERS &&
        grep -q "^stream 0->1 $VOL x $ITERS verified" "$W/ucx"; then
    ok "2 hosts x 1 rank, pml ucx (rc_verbs, ud_verbs): 8 MiB rank 0 (h0) -> 1 (h1) verified ($job_secs s)"
else
    failed "stream over pml ucx" ucx
fi
check "pml ucx job: ranks on h0 and h1" [ "$(awk '/^rank/ {printf "%s ", $4}' "$W/ucx")" = "h0 h1 " ]
s=$(d ucx rxe0.sent_pkts); r=$(d ucx rxe1.rcvd_pkts); x=$(d ucx xh0.tx_bytes); l=$(d ucx lo.rx_bytes)
# a packet of rxe here carries at most 1024 B (path MTU 1024 on a 1500 B link)
check "UCX moved it through the rxe devices: rxe0 sent $s, rxe1 received $r packets (>= $((TOTAL / 1024))), xh0 sent $x B, loopback $l B" \
    [ "$s" -ge $((TOTAL / 1024)) -a "$r" -ge $((TOTAL / 1024)) -a "$x" -ge $TOTAL -a "$l" -lt $SMALL ]

# --- launch overhead: a job that does nothing
if job true 60 -np 4 --host h0:2,h1:2 /bin/true; then
    t1=$job_secs
    t0=$(now); run_mpi 60 -np 2 /bin/true > /dev/null 2>&1; tl=$(since "$t0")
    ok "2 hosts x 2 ranks of /bin/true through the agent: $t1 s"
    echo "# launch overhead per job in this TCG guest: 2 hosts x 2 ranks through the agent $t1 s;" \
         "plain mpirun -np 2 on the guest itself $tl s"
else
    failed "2 hosts x 2 ranks of /bin/true" true
fi

# --- a job of more ranks than the guest has CPUs yields when idle (gh_mpirun): the hosts'
# slots hide the oversubscription from Open MPI; one that fits does not; the job's own
# --mca wins.  mpirun hands its --mca values to the ranks as OMPI_MCA_ variables.
yield_seen() {
    job yield "$@" sh -c 'echo "yield ${OMPI_MCA_mpi_yield_when_idle:-unset}"' &&
        awk '$1 == "yield" { print $2 }' "$W/yield" | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }'
}
cpus=$(nproc)
if [ "$cpus" -lt 4 ]; then
    got=$(yield_seen 60 -np 4 --host h0:2,h1:2)
    check "2 hosts x 2 ranks on the guest's $cpus CPUs: every rank yields when idle (${got:-no output})" [ "$got" = "1 x4 " ]
    got=$(yield_seen 60 -np 4 --host h0:2,h1:2 --mca mpi_yield_when_idle 0)
    check "the same with --mca mpi_yield_when_idle 0: the job's value (${got:-no output})" [ "$got" = "0 x4 " ]
else
    skip "2 hosts x 2 ranks yield when idle" "the guest has $cpus CPUs"
    skip "the job's own mpi_yield_when_idle on a crowded job" "the guest has $cpus CPUs"
fi
got=$(yield_seen 60 -np 2 --host h0:1,h1:1)
check "2 hosts x 1 rank on $cpus CPUs: not set (${got:-no output})" [ "$got" = "unset x2 " ]

# --- nothing left by the jobs
left=$(ps -eo pid=,comm= | awk '$2 ~ /^(orted|mpirun|vc_hosts|mpi_p2p|ib_write_lat)$/ { printf "%s ", $0 }')
shm="$(gh_on h0 ls -A /dev/shm)$(gh_on h1 ls -A /dev/shm)"
check "after the jobs: no orted, rank or mpirun left (${left:-none}); the hosts' /dev/shm empty (${shm:-yes})" \
    [ -z "$left" -a -z "$shm" ]
tap_done
