#!/bin/bash
# MPI over Open MPI's tcp BTL across virtual nodes: each rank runs on its node's host
# (launched by Open MPI's rsh launcher; t-hosts.sh tests the hosts themselves), payloads
# are verified by the xb-* programs, the bytes are seen on the links that were asked for
# (and only those), bandwidth stays under the shaped capacity (so nothing went through
# shared memory), several ranks per node work, and an interrupted launcher leaves no
# rank, no socat behind (the old single-node mode, --launch ranks, whose PMIx is bridged
# into the nodes by socat).
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
vc_setup tmpi
VC_TMP=$(mktemp -d /tmp/xbvc-tmpi.XXXXXX); LOG=$VC_TMP

vc create pair --links 2 --rate 1gbit --force >/dev/null || { not_ok "create pair"; tap_done; exit; }

# mpi IFS OUT PROGRAM ARGS...: run over the links IFS; prints rank 0's JSON rows into OUT
mpi() {
    local ifs=$1 out=$2; shift 2
    vc_mpirun --ifs "$ifs" -- "$@" >"$out" 2>"$out.err"
}
field() { python3 -c "import json,sys
rows=[json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')]
print(rows[-1]['$2'] if rows and all(r['verified'] for r in rows) else 'none')" "$1"; }
tx() { ifstat n0 "$1" tx_bytes; }

if [ ! -x "$BENCH/xb-latency" ] || [ ! -x "$BENCH/xb-bw" ]; then
    skip "tcp latency/bandwidth across nodes" "build the benchmarks first ($BENCH/xb-latency, xb-bw missing)"
else
    for ifs in eth0 eth0,eth1; do
        nl=$(( ${#ifs} > 4 ? 2 : 1 ))
        a0=$(tx eth0); a1=$(tx eth1)
        if mpi "$ifs" "$LOG/lat" "$BENCH/xb-latency" -m 8 -i 2000 && [ "$(field "$LOG/lat" latency_us)" != none ]; then
            ok "xb-latency 8 B over $nl link(s): verified, $(field "$LOG/lat" latency_us) us"
        else
            not_ok "xb-latency over $nl link(s)"; cat "$LOG/lat" "$LOG/lat.err" | tail -20 | diag
        fi
        b0=$(tx eth0); b1=$(tx eth1)
        if mpi "$ifs" "$LOG/bw" "$BENCH/xb-bw" -m 1M -i 20 -w 2 && [ "$(field "$LOG/bw" mbps)" != none ]; then
            ok "xb-bw 1 MiB over $nl link(s): verified, $(field "$LOG/bw" mbps) MB/s"
        else
            not_ok "xb-bw over $nl link(s)"; cat "$LOG/bw" "$LOG/bw.err" | tail -20 | diag
            continue
        fi
        c0=$(tx eth0); c1=$(tx eth1)
        vol=$(python3 -c "import json
r=[json.loads(l) for l in open('$LOG/bw') if l.startswith('{')][-1]
print(r['size'] * r['window'] * r['iters'])")
        mbps=$(field "$LOG/bw" mbps)
        # 1 Gbit/s carries at most 125 MB/s of frames; payload is less
        check "bandwidth $mbps MB/s is below the capacity of $nl shaped link(s)" \
            python3 -c "import sys; sys.exit(0 if 0 < $mbps <= 125 * $nl * 1.02 else 1)"
        echo "# bytes sent by n0: eth0 $((c0 - b0)), eth1 $((c1 - b1)); bench volume $vol"
        if [ "$nl" = 1 ]; then
            check "1 link: the stream went over eth0" [ $((c0 - b0)) -ge "$vol" ]
            check "1 link: eth1 stayed idle (latency and bandwidth runs)" [ $((c1 - a1)) -lt 100000 ]
        else
            check "2 links: both carried at least a quarter of the stream" \
                [ $(( (c0 - b0) * 4 )) -ge "$vol" -a $(( (c1 - b1) * 4 )) -ge "$vol" ]
        fi
    done
fi

# two ranks per node: 4 ranks, every rank exchanges with both ring neighbours, one of
# which is on the other node
if [ -x "$BENCH/xb-ring" ]; then
    if vc_mpirun --ppn 2 -- "$BENCH/xb-ring" -m 64k -i 20 >"$LOG/ring" 2>&1 \
        && grep -q 'all payloads verified' "$LOG/ring" && grep -q '"np":4' "$LOG/ring"; then
        ok "4 ranks, 2 per node: xb-ring verified"
    else
        not_ok "4 ranks, 2 per node: xb-ring"; tail -20 "$LOG/ring" | diag
    fi
else
    skip "2 ranks per node" "$BENCH/xb-ring missing"
fi
cat >"$LOG/where.sh" <<'EOF'
#!/bin/sh
echo "$OMPI_COMM_WORLD_RANK $(ip -br -4 addr show eth0 | awk '{print $3}')"
EOF
chmod +x "$LOG/where.sh"
where=$(vc_mpirun --ppn 2 -- "$LOG/where.sh" 2>/dev/null | sort | awk '{printf "%s ", $2}')
check "ranks run inside their nodes: rank 0,1 on n0, 2,3 on n1 ($where)" \
    [ "$where" = "198.18.0.1/24 198.18.0.1/24 198.18.0.2/24 198.18.0.2/24 " ]

# a job that overruns --timeout is stopped with status 124, and cleaned up
start=$(date +%s)
timeout 60 prlimit --as="$VC_MEM_AS" "$VC" mpirun --timeout 3 -- sleep 40 >/dev/null 2>&1; rc=$?
check "--timeout 3 stops a 40 s job (status $rc, $(( $(date +%s) - start )) s)" [ "$rc" = 124 -a $(( $(date +%s) - start )) -lt 25 ]

# SIGTERM to the launcher mid-job (old mode): ranks, PMIx bridges and the job directory go
# away (the hosts' own holders stay: vc_job_procs leaves them out)
prlimit --as="$VC_MEM_AS" "$VC" mpirun --timeout 60 --launch ranks -- sleep 40 >/dev/null 2>&1 &
lpid=$!
for _ in $(seq 50); do [ -n "$(vc_job_procs n1)" ] && break; sleep 0.2; done
check "job started inside the nodes" [ -n "$(vc_job_procs n1)" ]
# (the nodes' bridges start one after another: a rank can be up before the last bridge)
for _ in $(seq 25); do
    bridges=$(ps -eo args | grep -c "^socat .*xbvc/$XBVC_NAME/")
    [ "$bridges" -ge 3 ] && break
    sleep 0.2
done
check "PMIx bridge socat processes are running ($bridges)" [ "$bridges" -ge 3 ]
kill -TERM $lpid; wait $lpid
sleep 1
check "after SIGTERM: no rank left in any node" [ -z "$(vc_job_procs n0)$(vc_job_procs n1)" ]
check "after SIGTERM: no socat left, no job directory" bash -c \
    "! ps -eo args | grep -q '^socat .*xbvc/$XBVC_NAME/' && [ -z \"\$(ls /run/xbvc/$XBVC_NAME/jobs)\" ]"

# routed, multi-homed hosts (nbr3sw: the centre has one link per axis, a neighbour one):
# Open MPI 4.1's tcp BTL binds a connection to one link's address and sends it over
# another, and the peer drops it (open-mpi/ompi#7115).  Host addresses (--host-addrs)
# give each host one source address, routed over the data links.
if [ -x "$BENCH/xb-halo3d" ]; then
    vc create nbr3sw --rate 0 --host-addrs --force >/dev/null || not_ok "create nbr3sw --host-addrs"
    ping_out=$(vc exec n1 -- ping -c1 -w5 -I 198.19.254.2 198.19.254.4 2>&1); rc=$?
    check "host addresses: n1 reaches n3's over the data links (through the centre)" [ $rc = 0 ]
    [ $rc = 0 ] || echo "$ping_out" | diag
    m0=$(ifstat n0 mg0 tx_bytes); x0=$(( $(ifstat n0 x tx_bytes) + $(ifstat n0 y tx_bytes) + $(ifstat n0 z tx_bytes) ))
    vc_mpirun --ifs 198.19.254.0/24 --mca btl self,tcp -- "$BENCH/xb-halo3d" --star -m 512:256k -i 20 \
        >"$LOG/halo" 2>&1; rc=$?
    m1=$(ifstat n0 mg0 tx_bytes); x1=$(( $(ifstat n0 x tx_bytes) + $(ifstat n0 y tx_bytes) + $(ifstat n0 z tx_bytes) ))
    check "tcp between host addresses on nbr3sw: the star exchange verified, no connection dropped" \
        sh -c "[ $rc = 0 ] && grep -q 'all payloads verified' '$LOG/halo' && ! grep -q 'unexpected' '$LOG/halo'"
    check "... over the data links ($(( (x1 - x0) / 1000000 )) MB), not the management network ($(( (m1 - m0) / 1000000 )) MB)" \
        [ $(( x1 - x0 )) -gt 10000000 -a $(( (m1 - m0) * 10 )) -lt $(( x1 - x0 )) ]
else
    skip "tcp between host addresses" "$BENCH/xb-halo3d missing"
fi

# a cluster named by one letter: Open MPI's rsh launcher loses a one-letter word of its
# agent string, so vcluster passes the name as _agent=NAME
if XBVC_NAME=q vc create pair --rate 0 --force >/dev/null; then
    out=$(XBVC_NAME=q vc_mpirun -- hostname 2>/dev/null | sort | tr '\n' ' ')
    check "a cluster named q runs a job on its hosts ($out)" [ "$out" = "n0 n1 " ]
    XBVC_NAME=q vc destroy >/dev/null
else
    not_ok "create a cluster named q"
fi

check "destroy" bash -c "$VC destroy >/dev/null"
vc_assert_clean
tap_done
