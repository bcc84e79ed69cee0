#!/bin/bash
# Runs inside the guest of t-rsm-verbs.sh (guest_init's child), prints TAP: btl rsm between
# two hosts h0 and h1 (test/guest/guest_hosts.sh), each with its own /dev/shm and its own
# soft-RoCE device (rxeI, chosen by OMPI_MCA_btl_rsm_verbs_devices in the host's env file):
# peers on another host are reached by the verbs (RDMA write) back end, peers on the same
# host by shared memory.  Every job runs under run_mpi (a time limit; 1536 MiB for the
# job's private memory) and verifies its own data.  BUILDDIR is the machine's build tree,
# seen through the read-only 9p root.
#   RSM_VERBS_MAX1   largest mpi_p2p message, 2 hosts x 1 rank (default 16 MiB)
#   RSM_VERBS_MAX4   largest mpi_p2p message, 2 hosts x 2 ranks (default 1 MiB)
#   RSM_VERBS_SOAK   seconds of rsm_soak on 2 hosts x 2 ranks (default 15)
B=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../guest/guest_env.sh" xbguest 1536            # 3 GiB guest
. "$here/../guest/guest_hosts.sh"
MAX1=${RSM_VERBS_MAX1:-$((16 << 20))}
MAX4=${RSM_VERBS_MAX4:-$((1 << 20))}
SOAK=${RSM_VERBS_SOAK:-15}
W=$GH/test
mkdir -p "$W"
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t=$(now)
if gh_up 2 2> "$W/up.err"; then
    ok "2 hosts up in $(since "$t") s: h0 (NIC xh0, rxe0) and h1 (NIC xh1, rxe1)"
else
    not_ok "2 hosts up"; diag < "$W/up.err"; tap_done; exit 1
fi
rdma link > "$W/rdma"
check "rdma link: rxe0 on xh0 and rxe1 on xh1, both ACTIVE" bash -c "
    grep -q '^link rxe0/1 state ACTIVE .*netdev xh0 ' $W/rdma && grep -q '^link rxe1/1 state ACTIVE .*netdev xh1 ' $W/rdma"
check "h0's env file names its rxe device for btl rsm (OMPI_MCA_btl_rsm_verbs_devices=rxe0:1)" \
    grep -qx 'OMPI_MCA_btl_rsm_verbs_devices=rxe0:1' "$GH/hosts/h0.env"
# the kernel's own verbs resources (GSI QP...): after the jobs, what is left must be this
rdma resource show > "$W/res.0" 2>&1

# counters: one "NAME VALUE" line each; delta A B NAME
snap() {
    local d c
    for d in lo xh0 xh1; do
        for c in rx_bytes tx_bytes; do echo "$d.$c $(cat "/sys/class/net/$d/statistics/$c")"; done
    done
    for d in rxe0 rxe1; do
        for c in sent_pkts rcvd_pkts; do echo "$d.$c $(cat "/sys/class/infiniband/$d/ports/1/hw_counters/$c")"; done
    done
}
delta() { awk -v k="$3" 'FNR == NR { a[$1] = $2; next } $1 == k { print $2 - a[k] }' "$1" "$2"; }
# job NAME SECONDS MPIRUN_ARGS...: a job on the hosts, counters before and after, its
# stdout in $W/NAME, stderr in $W/NAME.err; job_secs, job_rc
job() {
    local name=$1 secs=$2; shift 2
    snap > "$W/$name.0"
    local t0
    t0=$(now)
    run_mpi "$secs" "${GH_MPIRUN[@]}" "$@" > "$W/$name" 2> "$W/$name.err"
    job_rc=$?
    job_secs=$(since "$t0")
    snap > "$W/$name.1"
    return $job_rc
}
d() { delta "$W/$1.0" "$W/$1.1" "$2"; }
failed() { not_ok "$1"; tail -n 15 "$W/$2" "$W/$2.err" | diag; }
# p2p NAME LABEL: mpi_p2p's TAP relayed, then its exit status and that it printed checks
p2p() {
    relay_tap "$2: " < "$W/$1"
    if [ "$job_rc" -ne 0 ]; then
        failed "$2: mpi_p2p exited $job_rc after $job_secs s" "$1"
    elif [ "$(grep -c '^ok ' "$W/$1")" -lt 6 ] || grep -q '^not ok' "$W/$1"; then
        failed "$2: mpi_p2p printed its 6 checks, all ok" "$1"
    else
        ok "$2: mpi_p2p finished in $job_secs s"
    fi
}
# peers NAME: btl rsm's add_procs lines (btl_base_verbose 10), one per printing process and
# peer: "PRINTER_HOST PID PEER PEER_HOST shm|verbs DEVICE"
peers() {
    cat "$W/$1" "$W/$1.err" | sed -n -E \
        -e 's/.*\[([^]:]+):([0-9]+)\] btl:rsm: peer ([^ ]+) on ([^ :]+): shm.*/\1 \2 \3 \4 shm -/p' \
        -e 's/.*\[([^]:]+):([0-9]+)\] btl:rsm: peer ([^ ]+) on ([^ :]+): verbs \(([^)]*)\).*/\1 \2 \3 \4 verbs \5/p' |
        sort -u -k1,3
}
# peer_check NAME NP MODE LABEL: every rank named each of its NP-1 peers once; MODE 1: a peer on
# the same host by shm, one on the other host by verbs; MODE 2: every peer by verbs; a
# verbs peer through the printing host's own device (hI -> rxeI:1)
peer_check() {
    local name=$1 np=$2 mode=$3 summary
    peers "$name" > "$W/$name.peers"
    summary=$(awk -v mode="$mode" '
        { n++; same = ($1 == $4); want = (mode == 2 || !same) ? "verbs" : "shm"
          if ($5 == "shm") shm++; else verbs++
          dev = "rxe" substr($1, 2) ":1"
          if ($5 != want || ($5 == "verbs" && $6 != dev)) { bad++; wrong = wrong " [" $0 "]" } }
        END { printf "%d %d %d %d%s", n, shm, verbs, bad, wrong }' "$W/$name.peers")
    local n shm verbs bad wrong
    read -r n shm verbs bad wrong <<< "$summary"
    if [ "$n" -eq $((np * (np - 1))) ] && [ "$bad" -eq 0 ]; then
        ok "$4: btl_base_verbose shows $n peer lines ($np ranks x $((np - 1)) peers): $shm shm, $verbs verbs, each as expected"
    else
        not_ok "$4: btl_base_verbose peer lines: $n (want $((np * (np - 1)))), $shm shm, $verbs verbs, $bad wrong${wrong:+:$wrong}"
        diag < "$W/$name.peers"
        grep -h 'btl:rsm' "$W/$name" "$W/$name.err" | head -20 | diag
    fi
}
# mpi_p2p's bytes from one rank to one other in its all-pairs exchanges (both passes)
p2p_bytes() {
    local s sum=0
    for s in 0 1 7 8 63 64 65 511 512 4095 4096 4097 65535 65536 65537 1048575 1048576 4194307 16777216; do
        [ "$s" -le "$1" ] && sum=$((sum + s))
    done
    echo $((2 * sum))
}
RSM=(--mca pml ob1 --mca btl self,rsm)
VERBOSE=(--mca btl_base_verbose 10)

# --- 1. 2 hosts x 1 rank: the peer over verbs, messages up to 16 MiB
L="2 hosts x 1 rank, self,rsm, mpi_p2p up to $MAX1 B"
job v1 240 -np 2 --host h0:1,h1:1 "${RSM[@]}" "${VERBOSE[@]}" "$B/test/mpi/mpi_p2p" -M "$MAX1"
p2p v1 "$L"
peer_check v1 2 1 "$L"
V=$(p2p_bytes "$MAX1"); P=$((V / 4096))     # a RoCE packet carries at most 4 KiB
s0=$(d v1 rxe0.sent_pkts); r1=$(d v1 rxe1.rcvd_pkts); s1=$(d v1 rxe1.sent_pkts); r0=$(d v1 rxe0.rcvd_pkts)
x0=$(d v1 xh0.tx_bytes); x1=$(d v1 xh1.tx_bytes); l=$(d v1 lo.rx_bytes)
check "$L: its $V B each way went through the rxe devices: rxe0 sent $s0 / rxe1 received $r1, rxe1 sent $s1 / rxe0 received $r0 packets (each >= $P); xh0 sent $x0 B, xh1 $x1 B (>= $V); loopback $l B (< $((V / 16)))" \
    [ "$s0" -ge "$P" -a "$r1" -ge "$P" -a "$s1" -ge "$P" -a "$r0" -ge "$P" -a "$x0" -ge "$V" -a "$x1" -ge "$V" -a "$l" -lt $((V / 16)) ]

# --- MPI_T: the verbs back end's counters move with the traffic
job mpit 120 -np 2 --host h0:1,h1:1 "${RSM[@]}" "$B/test/mpi/mpit_read" verbs
relay_tap "2 hosts x 1 rank, MPI_T: " < "$W/mpit"
if [ "$job_rc" -ne 0 ] || ! grep -q '^1\.\.' "$W/mpit"; then
    failed "2 hosts x 1 rank, MPI_T: mpit_read verbs finished and passed (exit $job_rc, $job_secs s)" mpit
fi

# --- 2. 2 hosts x 2 ranks: on-host peers by shm, off-host ones by verbs, in one job
L="2 hosts x 2 ranks, self,rsm (shm + verbs), mpi_p2p up to $MAX4 B"
job mix 180 -np 4 --host h0:2,h1:2 "${RSM[@]}" "${VERBOSE[@]}" "$B/test/mpi/mpi_p2p" -M "$MAX4"
p2p mix "$L"
peer_check mix 4 1 "$L"
echo "# $L: rxe0 sent $(d mix rxe0.sent_pkts), rxe1 sent $(d mix rxe1.sent_pkts) packets"

# --- 3. btl_rsm_verbs 2: every peer by verbs, also on the same host
L="2 hosts x 2 ranks, self,rsm, btl_rsm_verbs 2 (every peer by verbs), mpi_p2p up to $MAX4 B"
job all 180 -np 4 --host h0:2,h1:2 "${RSM[@]}" --mca btl_rsm_verbs 2 "${VERBOSE[@]}" "$B/test/mpi/mpi_p2p" -M "$MAX4"
p2p all "$L"
peer_check all 4 2 "$L"
echo "# $L: rxe0 sent $(d all rxe0.sent_pkts), rxe1 sent $(d all rxe1.sent_pkts) packets"

# --- 4. btl_rsm_verbs 0: the other host is unreachable, the job fails at once
L="2 hosts x 1 rank, self,rsm, btl_rsm_verbs 0"
job none 60 -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_verbs 0 "$B/test/mpi/mpi_p2p" -M 1024
if [ "$job_rc" -ne 0 ] && [ "$job_rc" -ne 124 ] && [ "$job_rc" -ne 137 ] &&
        grep -q 'unable to reach each other' "$W/none" "$W/none.err"; then
    ok "$L: the job failed cleanly (exit $job_rc after $job_secs s, time limit 60 s): ob1 reports the peer unreachable"
    grep -h 'Process [12] (.*) is on host' "$W/none" "$W/none.err" | sed 's/^ */# unreachable: /'
else
    failed "$L: want a failure naming the unreachable peer within 60 s, got exit $job_rc after $job_secs s" none
fi

# --- 5. soak: random sizes (0 B..4 MiB), tags and peers, ANY_SOURCE/ANY_TAG, verified
L="2 hosts x 2 ranks, self,rsm, rsm_soak $SOAK s"
job soak $((SOAK + 150)) -np 4 --host h0:2,h1:2 "${RSM[@]}" "$B/test/rsm/rsm_soak" "$SOAK"
line=$(grep -E '^(not )?ok 1 - soak' "$W/soak")
if [ "$job_rc" -eq 0 ] && [[ $line == ok* ]]; then
    ok "$L: ${line#ok 1 - soak } ($job_secs s)"
else
    failed "$L: exit $job_rc after $job_secs s: ${line#* - }" soak
fi

# --- 6. nothing left by the jobs
left=$(ps -eo pid=,comm= | awk '$2 ~ /^(orted|mpirun|mpi_p2p|mpit_read|rsm_soak)$/ { printf "%s ", $0 }')
shm="$(gh_on h0 ls -A /dev/shm)$(gh_on h1 ls -A /dev/shm)"
check "after the jobs: no orted, rank or mpirun left (${left:-none}); the hosts' /dev/shm empty (${shm:-yes})" \
    [ -z "$left" -a -z "$shm" ]
rdma resource show > "$W/res.1" 2>&1
if cmp -s "$W/res.0" "$W/res.1"; then
    ok "after the jobs: the rxe devices hold only the kernel's own resources ($(paste -sd';' "$W/res.1"))"
else
    not_ok "after the jobs: verbs resources left on the rxe devices"
    { echo "before:"; cat "$W/res.0"; echo "after:"; cat "$W/res.1"; } | diag
fi
tap_done
