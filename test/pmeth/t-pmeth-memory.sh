#!/bin/bash
# btl pmeth's memory per process, measured against its formula (btl_pmeth/README.md, "Memory"):
#   memory = L * ring(MTU, tx_frames, rx_frames)          per link, whatever the peers
#          + H * ring(MTU, tx_frames / 4, rx_frames / 4)  the host link (2+ ranks a host)
#          + Pw * (pmeth_txwin_bytes(W) + pmeth_rxwin_bytes(W))   peers with traffic
#          + Pk * sizeof(endpoint)                                peers known
#          + T * sizeof(pointer)     by-id table: 64 slots, doubled until the largest vpid fits
# On virtual clusters of 2 hosts (pair) and 4 hosts (xbar: one switch, all reach all), jobs of
# 2, 4, 8 and 16 ranks (vader on a host, pmeth between hosts) run test/pmeth/pmeth_memory: an
# all-to-all of verified messages, so every remote peer has windows, then btl_pmeth_memory_bytes
# and its parts read through MPI_T, and VmRSS.  Checks: every rank's figure equals the formula
# to the byte, with Pw = the remote peers and Pk = all peers; what the exchange added is exactly
# windows + endpoint per remote peer; the rings are the same at 2 and 16 ranks; and the formula
# at 1,000 peers (1 link, MTU 1500, default sizes) stays under 16 MiB.  One job with 2 links and
# a window of 1024 checks the L and W terms; the jobs of 2 ranks or more a host check H (the host
# link, opened on every rank there for osc rdma's windows).  Nothing of the clusters is left behind.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
PROG=$TOP_BUILDDIR/test/pmeth/pmeth_memory
SIZES=$TOP_BUILDDIR/test/pmeth/pmeth_memory_sizes
for p in "$PROG" "$SIZES"; do [ -x "$p" ] || { echo "# $p not built (make check)"; exit 1; }; done
VC_JOB_SECS=${VC_JOB_SECS:-60}   # a job takes 2-8 s here; a hung one fails in a minute
vc_setup tpmem
VC_TMP=$(mktemp -d /tmp/xbvc-tpmem.XXXXXX)
ROWS=$VC_TMP/rows.jsonl
: >"$ROWS"

# the component's defaults, as this installation has them
param() { ompi_info --param btl pmeth --level 9 --parsable | sed -n "s/^mca:btl:pmeth:param:btl_pmeth_$1:value://p"; }
TXF=$(param tx_frames); RXF=$(param rx_frames); W=$(param window); AHEAD=$(param probe_ahead)
echo "# defaults: tx_frames $TXF, rx_frames $RXF, window $W, probe_ahead $AHEAD"

# job HOSTS LINKS WINDOW NP PPN: one job on the current cluster; its ranks' JSON lines, tagged
# with the layout and the sizes of this build, go to $ROWS.  On AF_PACKET rings, whose size
# the formula below computes: under the default io_mode (auto) one rank a host would take
# AF_XDP rings, counted by pmeth_xdp_memory() (btl_pmeth/README.md, "Memory")
job() {
    local hosts=$1 links=$2 win=$3 np=$4 ppn=$5 out=$VC_TMP/job-$1-$2-$3-$4 rc
    vc_mpirun --ppn "$ppn" --mca pml ob1 --mca btl self,vader,pmeth --mca btl_pmeth_window "$win" \
        --mca btl_pmeth_io_mode packet \
        --mca btl_pmeth_tx_frames "$TXF" --mca btl_pmeth_rx_frames "$RXF" \
        --mca btl_base_verbose 10 -- "$PROG" >"$out" 2>"$out.err"
    rc=$?
    local lines; lines=$(grep -c '^{"rank"' "$out")
    check "$hosts hosts, $links link(s), window $win, $np ranks: the job ran, every payload verified, $lines of $np ranks reported" \
        sh -c "[ $rc -eq 0 ] && [ $lines -eq $np ] && ! grep '^{\"rank\"' '$out' | grep -q '\"verified\":false'"
    [ "$rc" -eq 0 ] || tail -15 "$out.err" | diag
    check "$hosts hosts, $np ranks: each rank's finalize summary states its memory (btl_base_verbose 10)" \
        [ "$(grep -c 'btl:pmeth: memory: [0-9]* bytes = rings' "$out.err")" -eq "$np" ]
    # with 2 ranks or more a host, each opens the host link for osc rdma's windows (pmeth
    # offers one-sided operations by default here: Debian's osc selection leaves out pt2pt),
    # its rings a quarter of the Ethernet link's (vader carries ob1's messages)
    local hl want_hl=0; hl=$(grep -c 'the host link (for osc rdma' "$out.err")
    [ "$ppn" -gt 1 ] && [ "$(grep -c 'one-sided operations for osc rdma: offered' "$out.err")" -eq "$np" ] &&
        want_hl=$np
    check "$hosts hosts, $np ranks: the host link opened on $hl ranks ($want_hl: every rank where a host has 2 or more)" \
        [ "$hl" -eq "$want_hl" ]
    grep '^{"rank"' "$out" | python3 -c '
import json, sys
tag = dict(hosts=int(sys.argv[1]), links=int(sys.argv[2]), window=int(sys.argv[3]), mtu=1500,
           tx_frames=int(sys.argv[4]), rx_frames=int(sys.argv[5]), sizes=json.loads(sys.argv[6]),
           host_link=int(sys.argv[7]) > 0)
for line in sys.stdin:
    r = json.loads(line); r.update(tag); print(json.dumps(r))' \
        "$hosts" "$links" "$win" "$TXF" "$RXF" "$("$SIZES" "$win")" "$want_hl" >>"$ROWS"
}

# xdp_job: 2 ranks, one a host, under the default io_mode (auto), which takes AF_XDP rings
# here: each rank's ring memory is pmeth_xdp_memory()'s, the UMEM of 2 KiB chunks (MTU 1500)
# plus 24 B of descriptor rings a frame, for the send and receive frames (powers of two)
xdp_job() {
    local out=$VC_TMP/job-xdp rc p2 want
    vc_mpirun --ppn 1 --mca pml ob1 --mca btl self,pmeth --mca btl_base_verbose 10 -- "$PROG" \
        >"$out" 2>"$out.err"
    rc=$?
    p2() { local v=1; while [ "$v" -lt "$1" ]; do v=$((v * 2)); done; echo "$v"; }
    want=$(( ($(p2 "$TXF") + $(p2 "$RXF")) * (2048 + 24) ))
    local got; got=$(grep '^{"rank"' "$out" | python3 -c '
import json, sys
print(" ".join(str(json.loads(l)["memory_ring_bytes"]) for l in sys.stdin))')
    local x; x=$(grep -c 'btl:pmeth: link 0: eth0 (.*AF_XDP (copy mode' "$out.err")
    check "2 hosts, 2 ranks, io_mode auto (AF_XDP rings on $x of 2 ranks): ring memory ${got:-none} B each, the formula's $want B" \
        sh -c "[ $rc -eq 0 ] && [ $x -eq 2 ] && [ '$got' = '$want $want' ]"
}

# ---- 2 hosts, 1 link -------------------------------------------------------------------
if vc create pair --links 1 --rate 0 --force >/dev/null; then
    for np in 2 4 8 16; do job 2 1 "$W" "$np" $((np / 2)); done
    if xb_built_with XDP; then
        xdp_job
    else
        skip "AF_XDP ring memory" "pmeth built without AF_XDP"
    fi
else
    not_ok "create a pair of virtual hosts"
fi
# ---- 4 hosts on one switch (each reaches the three others), 1 link ----------------------
if vc create xbar --dims 4 --links 1 --rate 0 --force >/dev/null; then
    for np in 4 8 16; do job 4 1 "$W" "$np" $((np / 4)); done
else
    not_ok "create 4 virtual hosts on a switch (xbar --dims 4)"
fi
# ---- the L and W terms: 2 links, a window of 1024 ------------------------------------
if vc create pair --links 2 --rate 0 --force >/dev/null; then
    job 2 2 1024 4 2
else
    not_ok "create a pair of virtual hosts with 2 links"
fi
vc destroy >/dev/null

# ---- the formula, the table, the checks --------------------------------------------------
# its "#" lines (the table, the projection) pass as they are, its TAP lines are renumbered
python3 - "$ROWS" "$W" "$TXF" "$RXF" "$("$SIZES" "$W")" "$AHEAD" <<'EOF' >"$VC_TMP/verdict" 2>&1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
W, TXF, RXF, SIZES = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
PROBE_AHEAD = int(sys.argv[6])
def say(ok, what):
    print(("ok" if ok else "not ok") + " 1 - " + what)
def diag(s):
    print("# " + s)

def align(x, a):
    return (x + a - 1) // a * a

def ring(mtu, tx, rx, s):
    """One link's AF_PACKET rings, as pmeth_ring_packet.c lays them out: a frame slot holds
    the kernel's TPACKET_V2 header (aligned, plus 16) and a frame of MTU + 14 (plus 16);
    a block is the multiple of the page (up to 32) wasting least, the first under 2%."""
    a = s["tpacket_alignment"]
    slot = align(align(s["tpacket2_hdrlen"] + 16, a) + mtu + 14 + 16, a)
    best_k, best_waste = 0, 2.0
    for k in range(1, 33):
        bs = k * s["page"]
        per = bs // slot
        if per == 0:
            continue
        waste = (bs - per * slot) / bs
        if waste + 1e-9 < best_waste:
            best_k, best_waste = k, waste
        if waste < 0.02:
            break
    block = best_k * s["page"]
    per = block // slot
    return ((rx + per - 1) // per + (tx + per - 1) // per) * block

def by_id_slots(largest_vpid):
    t = 64
    while t <= largest_vpid:
        t *= 2
    return t

def apm_conn(links, s):
    # path migration (btl_pmeth_apm 2, the default) is on with 2 links or more: an apm
    # connection per remote peer reached, made with its endpoint
    return s["apm_conn"] if links >= 2 else 0

def host_ring(r, s):
    # the host link's rings (btl_pmeth_host_link): a quarter of the sizes, at least 64 frames
    return ring(r["mtu"], max(64, r["tx_frames"] // 4), max(64, r["rx_frames"] // 4), s) \
        if r["host_link"] else 0

def rings(links, r, s):
    return links * ring(r["mtu"], r["tx_frames"], r["rx_frames"], s) + host_ring(r, s)

def formula(links, r, s, with_windows, known, largest_vpid):
    return (rings(links, r, s) + with_windows * (s["txwin"] + s["rxwin"] + apm_conn(links, s))
            + known * s["endpoint"] + by_id_slots(largest_vpid) * s["pointer"])

jobs = {}
for r in rows:
    jobs.setdefault((r["hosts"], r["links"], r["window"], r["ranks"]), []).append(r)

diag("hosts links window ranks | remote peers/rank | BTL bytes measured | formula bytes | rings | "
     "added per remote peer | max VmRSS KiB")
rings_seen = {}
for key in sorted(jobs, key=lambda k: (k[1], k[2], k[0], k[3])):
    hosts, links, win, np = key
    rs = sorted(jobs[key], key=lambda r: r["rank"])
    s = rs[0]["sizes"]
    bad = []
    for r in rs:
        remote = r["remote_peers"]
        want = formula(links, r, s, remote, np - 1, np - 1)
        if not (r["pvars"] and r["memory_bytes"] == want and r["peers_with_windows"] == remote
                and r["peers_known"] == np - 1
                and r["memory_ring_bytes"] == rings(links, r, s)):
            bad.append("rank %d: %d B (rings %d), %d peers known, %d with windows; formula %d B"
                       % (r["rank"], r["memory_bytes"], r["memory_ring_bytes"], r["peers_known"],
                          r["peers_with_windows"], want))
    r0 = rs[0]
    remote = r0["remote_peers"]
    want0 = formula(links, r0, s, remote, np - 1, np - 1)
    # what a remote peer costs once it has traffic: all but the rings, the on-host peers'
    # endpoints and the by-id table, shared out
    per_remote = ((r0["memory_bytes"] - r0["memory_ring_bytes"]
                   - (r0["ranks_on_host"] - 1) * s["endpoint"] - by_id_slots(np - 1) * s["pointer"])
                  / remote if remote else 0)
    diag("%5d %5d %6d %5d | %17d | %18d | %13d | %7d | %21.0f | %d"
         % (hosts, links, win, np, remote, r0["memory_bytes"], want0, r0["memory_ring_bytes"],
            per_remote, max(r["vmrss_kib"] for r in rs)))
    say(not bad, "%d hosts, %d link(s), window %d, %d ranks: every rank's btl_pmeth_memory_bytes "
        "equals the formula (%d B: %d remote peer(s) with windows, %d peer(s) known)"
        % (hosts, links, win, np, want0, remote, np - 1))
    for line in bad[:4]:
        diag(line)
    b = r0["before"]
    # right after MPI_Init: no windows yet; an endpoint for each peer on this host, and for
    # each remote peer probed ahead (btl_pmeth_probe_ahead, 32: the probes start in
    # MPI_Init); those whose probes have already answered have path migration's connection
    # too (2 links), the others get it when they do.  The by-id table exists once a peer does
    ahead = min(PROBE_AHEAD, remote)
    known_before = r0["ranks_on_host"] - 1 + ahead
    t_before = by_id_slots(np - 1) if b["peers_known"] else 0
    base_before = (rings(links, r0, s)
                   + b["peers_known"] * s["endpoint"] + t_before * s["pointer"])
    rest = b["memory_bytes"] - base_before
    conn = apm_conn(links, s)
    apm_before = rest // conn if conn else 0
    say(b["peers_with_windows"] == 0 and b["peers_known"] == known_before
        and rest >= 0 and (rest == 0 if not conn else rest % conn == 0 and apm_before <= ahead),
        "%d hosts, %d ranks: before any message, %d B = the formula with no windows, %d peer(s) "
        "known (%d on the host, %d probed ahead)%s"
        % (hosts, np, b["memory_bytes"], b["peers_known"], r0["ranks_on_host"] - 1, ahead,
           ", %d with path migration's connection already" % apm_before if conn else ""))
    # what the exchange added: windows for each remote peer, the connections not made yet,
    # and endpoints (and the table) for peers not known before
    added = r0["memory_bytes"] - b["memory_bytes"]
    want_added = (remote * (s["txwin"] + s["rxwin"]) + (remote - apm_before) * conn
                  + (np - 1 - b["peers_known"]) * s["endpoint"]
                  + (by_id_slots(np - 1) - t_before) * s["pointer"])
    say(added == want_added,
        "%d hosts, %d ranks: the exchange added %d B = %d remote peer(s) x windows %d%s%s"
        % (hosts, np, added, remote, s["txwin"] + s["rxwin"],
           " + %d connection(s) x %d" % (remote - apm_before, conn) if conn else "",
           " + %d endpoint(s)" % (np - 1 - b["peers_known"]) if np - 1 > b["peers_known"] else ""))
    # (the Ethernet links' rings: the host link's are the term above)
    rings_seen.setdefault((links, win), set()).update(r["memory_ring_bytes"] - host_ring(r, s)
                                                      for r in rs)

one = rings_seen.get((1, W), set())
say(len(one) == 1, "1 link: the rings are the same %s B at 2 to 16 ranks, on 2 and 4 hosts "
    "(they do not grow with peers)" % "/".join(map(str, sorted(one))))
two = rings_seen.get((2, 1024), set())
say(len(two) == 1 and one and two == {2 * min(one)},
    "2 links: twice the rings of one (%s B)" % "/".join(map(str, sorted(two))))

# growth per remote peer across jobs, at the default window: rank 0 of 2 hosts, 2 -> 16 ranks
small, large = jobs.get((2, 1, W, 2), [None])[0], jobs.get((2, 1, W, 16), [None])[0]
if small and large:
    # (less the host link's rings, which the 16-rank job has and the 2-rank one not)
    per = ((large["memory_bytes"] - host_ring(large, SIZES) - small["memory_bytes"])
           - (large["peers_known"] - small["peers_known"] - (large["remote_peers"] - small["remote_peers"]))
           * SIZES["endpoint"]) / (large["remote_peers"] - small["remote_peers"])
    say(per == SIZES["txwin"] + SIZES["rxwin"] + SIZES["endpoint"],
        "2 hosts, 2 -> 16 ranks: %.0f B more per remote peer (windows %d + endpoint %d), each "
        "local peer only an endpoint (the host link's rings aside)" % (per, SIZES["txwin"] + SIZES["rxwin"], SIZES["endpoint"]))
else:
    say(False, "2 hosts at 2 and 16 ranks both measured")

# the formula at 1,000 peers, every one with traffic (the worst case: Open MPI adds a peer at
# its first message, so a peer never talked to costs nothing but its by-id slot)
BOUND = 16 << 20
def layout(mtu):
    return dict(mtu=mtu, tx_frames=TXF, rx_frames=RXF, host_link=False)
at1000 = formula(1, layout(1500), SIZES, 1000, 1000, 1000)
diag("projection, 1,000 peers all with traffic, 1 link, MTU 1500, window %d: %d B = %.2f MiB "
     "(rings %d + windows %d + endpoints %d + by-id table %d)"
     % (W, at1000, at1000 / 2**20, ring(1500, TXF, RXF, SIZES), 1000 * (SIZES["txwin"] + SIZES["rxwin"]),
        1000 * SIZES["endpoint"], by_id_slots(1000) * SIZES["pointer"]))
for mtu, links in ((9000, 1), (1500, 2)):
    f = formula(links, layout(mtu), SIZES, 1000, 1000, 1000)
    diag("projection, 1,000 peers, %d link(s), MTU %d, window %d: %d B = %.2f MiB" % (links, mtu, W, f, f / 2**20))
say(at1000 < BOUND, "the formula at 1,000 peers (1 link, MTU 1500, window %d) is %.2f MiB per "
    "process, under 16 MiB" % (W, at1000 / 2**20))
EOF
pyrc=$?
while IFS= read -r line; do
    case $line in "#"*) echo "$line";; *) relay_tap "" <<<"$line";; esac
done <"$VC_TMP/verdict"
[ "$pyrc" -eq 0 ] || not_ok "the formula's evaluation ran (exit $pyrc)"
vc_assert_clean
tap_done
