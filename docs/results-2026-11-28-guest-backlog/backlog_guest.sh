#!/bin/bash
# Runs inside the soft-RoCE guest (see README.md here): mpi_p2p up to 16 MiB between two
# hosts over btl rsm's verbs back end, one rail, with the kernel's receive backlog
# (net.core.netdev_max_backlog) at 10000, 100000, then 10000 again; for each run its time,
# the packets rxe sent and received, the packets the backlog dropped (/proc/net/softnet_stat,
# second column) and every rxe counter that moved.  BUILDDIR is the machine's build tree.
B=$1
T=$(cd "$(dirname "$0")/../../test" && pwd)
. "$T/guest/guest_env.sh" xbguest 1536
. "$T/guest/guest_hosts.sh"
W=$GH/probe; mkdir -p "$W"
gh_up 2 2 > "$W/up.log" 2>&1 || { echo "# hosts did not come up"; cat "$W/up.log"; echo xbguest-bench-done; exit 1; }
backlog_drops() {
    local cpu dropped rest sum=0
    while read -r cpu dropped rest; do sum=$((sum + 0x$dropped)); done < /proc/net/softnet_stat
    echo "$sum"
}
for bl in 10000 100000 10000; do
    sysctl -qw net.core.netdev_max_backlog=$bl
    gh_snap > "$W/c0"; d0=$(backlog_drops); t0=$(date +%s.%N)
    run_mpi 240 "${GH_MPIRUN[@]}" -np 2 --host h0:1,h1:1 --mca pml ob1 --mca btl self,rsm \
        "$B/test/mpi/mpi_p2p" -M 16777216 > "$W/out" 2>&1; rc=$?
    t1=$(date +%s.%N); gh_snap > "$W/c1"; d1=$(backlog_drops)
    dl() { gh_delta "$W/c0" "$W/c1" "$1"; }
    echo "# backlog $bl: mpi_p2p rc $rc ($(grep -c '^ok' "$W/out") ok), $(echo "$t1 - $t0" | bc) s," \
         "backlog drops +$((d1 - d0)), rxe0 sent $(dl rxe0.sent_pkts) / rxe1 received $(dl rxe1.rcvd_pkts)," \
         "rxe1 sent $(dl rxe1.sent_pkts) / rxe0 received $(dl rxe0.rcvd_pkts)"
    awk 'FNR == NR { a[$1] = $2; next } $1 ~ /^rxe/ && $2 != a[$1] { printf "#   %s +%d\n", $1, $2 - a[$1] }' \
        "$W/c0" "$W/c1"
done
echo xbguest-bench-done
