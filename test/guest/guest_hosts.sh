# Hosts inside one guest, launched by Open MPI's own rsh launcher (source it in a guest
# script, after guest_env.sh):
#   gh_up N [RAILS] hosts h0..h(N-1): each its own host name (UTS namespace), its own
#                  /dev/shm and /tmp (mount namespace), its own NIC xhI with address
#                  10.77.0.(I+1), and its own soft-RoCE device rxeI on that NIC; with
#                  RAILS 2 a second rail too, as on a dual-rail cluster: NIC xsI
#                  (10.77.1.(I+1)) on a second bridge and device rxsI on it
#   gh_on HOST COMMAND...   run COMMAND on HOST through the agent; as with ssh, the words
#                  are joined into one command line for the host's /bin/sh
#   GH_MPIRUN      mpirun options that launch a job on the hosts: add --host h0:2,h1:2 ...
#
# Open MPI's rsh launcher calls the agent (test/guest/guest_agent) as it would call ssh;
# the agent starts orted inside the host's namespaces, one orted per host, not daemonized,
# so each host has its daemon, its host name, its node-local ranks and a modex across
# hosts, as on a cluster (contrib/vcluster does the same with network namespaces).
#
# All hosts share the guest's network namespace, because Linux 6.1's rxe listens only in
# the initial one.  What makes a NIC a host's own is the environment its agent gives
# orted, and orted its ranks (/run/xbg/hosts/hI.env): OMPI_MCA_btl_tcp_if_include=xhI,
# OMPI_MCA_btl_rsm_verbs_devices=rxeI:1 (btl rsm's verbs back end) and
# UCX_NET_DEVICES=rxeI:1; a job's own --mca / -x settings win over them.  With two rails
# the device list names rxsI:1 too, and OMPI_MCA_btl_rsm_verbs_rails=1 keeps jobs on one
# rail unless they ask for both (--mca btl_rsm_verbs_rails 2).  The NICs hang on
# one bridge, like hosts on a switch.  Two addresses of one namespace would talk over
# `lo`; policy routing keeps them off it: what a host sends from its address (rxe always
# does so; Open MPI's tcp binds its sockets to it) is routed out of its own NIC (rule
# "from ADDR iif lo", table 100+I, ahead of the local table), arrives on the peer's NIC
# and is delivered there (accept_local=1, rp_filter=0); neighbours are static.  Unbound
# traffic (the launcher, PMIx, perftest's set-up) still takes loopback: that is the
# hosts' management network.  The names h0.. resolve to nothing, so mpirun never takes a
# host for itself and launches every one through the agent.
#
# /tmp of a host is an overlay: the guest's /tmp (the machine's, read-only over 9p; a
# checkout there stays visible) under a private tmpfs that takes the host's writes.
# UCX decides "same machine" by the kernel's boot id, which the hosts share: a job over
# pml ucx must name network transports only (UCX_TLS=self,rc_verbs,ud_verbs), or its
# shared-memory transports would reach across hosts.
GH=/run/xbg
GH_AGENT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/guest_agent
GH_MPIRUN=(--mca plm rsh --mca plm_rsh_agent "$GH_AGENT" --mca plm_rsh_no_tree_spawn 1
           --mca orte_leave_session_attached 1 --mca oob_tcp_if_include lo --bind-to none)
gh_addr() { echo "10.77.${2:-0}.$(($1 + 1))"; }

gh_up() {
    local n=$1 rails=${2:-1} i j
    modprobe -a veth bridge overlay crc32_generic rdma_rxe || return 1
    # no IPv6 on the NICs (one GID each, no neighbour discovery); a long backlog: under TCG
    # softirqs drain a veth slowly, and rxe's bursts overflowed the default 1000 packets
    # (dropped ACKs, retransmissions).  The longest burst is an RDMA read's response, sent
    # without flow control: 16 MiB is 16384 packets of 1 KiB, and at 10000 mpi_p2p up to
    # 16 MiB on one rail sent 311,000 packets for 54,000 (go-back-N after each drop) and
    # took 71-79 s instead of 14 (docs/results-2026-11-28-guest-backlog)
    sysctl -qw net.ipv6.conf.default.disable_ipv6=1 net.core.netdev_max_backlog=100000 \
        net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
        net.ipv4.conf.all.accept_local=1 net.ipv4.conf.default.accept_local=1 || return 1
    ip link add xbr type bridge && ip link set xbr up || return 1
    for ((i = 0; i < n; i++)); do
        ip link add "xh$i" type veth peer name "xh${i}p" && ip link set "xh${i}p" master xbr up &&
            ip addr add "$(gh_addr "$i")/32" dev "xh$i" && ip link set "xh$i" up || return 1
    done
    if [ "$rails" -gt 1 ]; then
        ip link add xbs type bridge && ip link set xbs up || return 1
        for ((i = 0; i < n; i++)); do
            ip link add "xs$i" type veth peer name "xs${i}p" && ip link set "xs${i}p" master xbs up &&
                ip addr add "$(gh_addr "$i" 1)/32" dev "xs$i" && ip link set "xs$i" up || return 1
        done
    fi
    ip rule add pref 1000 lookup local && ip rule del pref 0 || return 1
    for ((i = 0; i < n; i++)); do
        local r nic dev
        for ((r = 0; r < rails; r++)); do
            nic=$([ "$r" = 0 ] && echo xh || echo xs)
            ip rule add pref 100 from "$(gh_addr "$i" "$r")" iif lo lookup $((100 + i)) || return 1
            for ((j = 0; j < n; j++)); do
                [ "$i" = "$j" ] && continue
                ip route add "$(gh_addr "$j" "$r")" dev "$nic$i" src "$(gh_addr "$i" "$r")" \
                    table $((100 + i)) &&
                    ip neigh replace "$(gh_addr "$j" "$r")" \
                        lladdr "$(cat "/sys/class/net/$nic$j/address")" dev "$nic$i" nud permanent ||
                    return 1
            done
        done
        rdma link add "rxe$i" type rxe netdev "xh$i" || return 1
        if [ "$rails" -gt 1 ]; then rdma link add "rxs$i" type rxe netdev "xs$i" || return 1; fi
    done
    mkdir -p "$GH/hosts"
    for ((i = 0; i < n; i++)); do
        local h=h$i own=$GH/hosts/h$i.tmp
        if [ "$rails" -gt 1 ]; then
            printf 'OMPI_MCA_btl_tcp_if_include=xh%d\nOMPI_MCA_btl_rsm_verbs_devices=rxe%d:1,rxs%d:1\nOMPI_MCA_btl_rsm_verbs_rails=1\nUCX_NET_DEVICES=rxe%d:1\n' \
                "$i" "$i" "$i" "$i" > "$GH/hosts/$h.env"
        else
            printf 'OMPI_MCA_btl_tcp_if_include=xh%d\nOMPI_MCA_btl_rsm_verbs_devices=rxe%d:1\nUCX_NET_DEVICES=rxe%d:1\n' \
                "$i" "$i" "$i" > "$GH/hosts/$h.env"
        fi
        # (guest_env.sh's hwloc setting: the agent starts orted with this file's environment only)
        [ -n "${HWLOC_PLUGINS_BLACKLIST:-}" ] &&
            echo "HWLOC_PLUGINS_BLACKLIST=$HWLOC_PLUGINS_BLACKLIST" >> "$GH/hosts/$h.env"
        mkdir -p "$own"
        # the holder: a shell that makes the host (name, mounts) and becomes `sleep`; its
        # namespaces live as long as it does (the guest powers off at the end)
        unshare --uts --mount --propagation private sh -ec "hostname $h
            mount -t tmpfs -o mode=1777,nosuid,nodev $h-shm /dev/shm
            mount -t tmpfs -o mode=755 $h-tmp $own
            mkdir -m 1777 $own/up && mkdir $own/work
            mount -t overlay -o lowerdir=/tmp,upperdir=$own/up,workdir=$own/work $h-tmp /tmp
            exec sleep infinity" < /dev/null &
        echo $! > "$GH/hosts/$h.pid"
    done
    for ((i = 0; i < n; i++)); do       # ready once the shell has become "sleep"
        local pid
        pid=$(cat "$GH/hosts/h$i.pid")
        for _ in $(seq 100); do
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && continue 2
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        echo "gh_up: host h$i did not come up" >&2
        return 1
    done
}

gh_on() { "$GH_AGENT" "$@"; }

# gh_mpirun SECONDS MPIRUN_ARGS...: run_mpi on the hosts (GH_MPIRUN first).  The hosts share
# the guest's CPUs, but each declares its own slots (--host h0:2,h1:2), so Open MPI does not
# see 4 ranks on 2 CPUs as oversubscribed and leaves mpi_yield_when_idle off: every waiting
# rank then spins out its time slice while the rank it waits for cannot run.  A job of more
# ranks (-np) than CPUs gets mpi_yield_when_idle 1, as contrib/vcluster's jobs do, unless it
# sets the parameter itself (an --mca argument or OMPI_MCA_mpi_yield_when_idle).
gh_mpirun() {
    local secs=$1 a prev= np=0 own=${OMPI_MCA_mpi_yield_when_idle:+1} crowd=()
    shift
    for a in "$@"; do
        case $prev in -np | -n | --np) np=$a ;; esac
        [ "$a" = mpi_yield_when_idle ] && own=1
        prev=$a
    done
    [ -z "$own" ] && [ "$np" -gt "$(nproc)" ] 2>/dev/null && crowd=(--mca mpi_yield_when_idle 1)
    run_mpi "$secs" "${GH_MPIRUN[@]}" "${crowd[@]}" "$@"
}

# --- what the guest scripts share (TAP from test/lib.sh, sourced by guest_env.sh)
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# gh_up_tap N [RAILS]: the hosts, reported as the first check; the script ends if they fail
gh_up_tap() {
    local t rail2=
    t=$(now)
    [ "${2:-1}" -gt 1 ] && rail2="; second rail: xs0 $(gh_addr 0 1) rxs0, xs1 $(gh_addr 1 1) rxs1"
    if gh_up "$1" "${2:-1}" 2> "$GH/up.err"; then
        ok "$1 hosts up in $(since "$t") s: h0 (NIC xh0 $(gh_addr 0), rxe0) and h1 (NIC xh1 $(gh_addr 1), rxe1)$rail2"
    else
        not_ok "$1 hosts up"; diag < "$GH/up.err"; tap_done; exit 1
    fi
}
# counters: gh_snap prints one "NAME VALUE" line each (bytes on lo and the NICs, every rxe
# hardware counter: packets, RNR NAKs, retries, errors); gh_delta A B NAME
# (one grep for all 74 files: a cat each took 4.8 s a snapshot under TCG, one grep 0.14 s)
gh_snap() {
    local d files=()
    for d in lo xh0 xh1 xs0 xs1; do
        [ -d "/sys/class/net/$d" ] && files+=("/sys/class/net/$d/statistics/rx_bytes" "/sys/class/net/$d/statistics/tx_bytes")
    done
    for d in rxe0 rxe1 rxs0 rxs1; do
        [ -d "/sys/class/infiniband/$d" ] && files+=(/sys/class/infiniband/"$d"/ports/1/hw_counters/*)
    done
    grep -H '' "${files[@]}" 2>/dev/null | sed -E \
        -e 's,^/sys/class/net/([^/]+)/statistics/([^:]+):,\1.\2 ,' \
        -e 's,^/sys/class/infiniband/([^/]+)/ports/1/hw_counters/([^:]+):,\1.\2 ,'
}
gh_delta() { awk -v k="$3" 'FNR == NR { a[$1] = $2; next } $1 == k { print $2 - a[k] }' "$1" "$2"; }
# gh_gid_index DEV ADDR: the RoCE v2 GID of an IPv4 address on DEV's port 1 (perftest's -x)
gh_gid_index() {
    local g want
    want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
    for g in /sys/class/infiniband/"$1"/ports/1/gids/*; do
        [ "$(cat "$g")" = "$want" ] && { basename "$g"; return; }
    done
}
