#!/usr/bin/env python3
"""btl pmeth's receive credits, measured (issue 10; seeds 001 and 003).

    flock /tmp/xbtl-bench.lock bench/pmeth-credits.py [--repeats R] [--out DIR]

Three experiments on virtual hosts (contrib/vcluster, 1 Gbit/s links), every
payload verified:

  incast   4 hosts on one switch whose ports buffer 256 KiB (seed 001's
           overflow): 3 and 6 ranks on the other hosts send windows of messages
           to rank 0 at once (bench/xb-incast), MTU 9000.  pmeth with no flow
           control ("off": no credits, no delay limit), the delay limit alone
           (pmeth_pace.h), credits static, demand (the default: with the delay
           limit) and demand without it, and tcp.  Aggregate MB/s per size,
           frames the switch port in front of rank 0 dropped, frames pmeth sent
           again.
  credits  seed 003's static split: one pair streams 1 MiB messages while 0, 2,
           6 or 14 other ranks are connected but idle, and while all the ranks
           on other hosts send (busy); static split against demand.  MTU 1500,
           btl_pmeth_credit_budget 15 and _floor 1: 15 peers share what about
           1,000 would at the default budget (173 frames at MTU 1500).
  pair     one sender alone over 6 links, MTU 9000: no flow control against the
           default (what receiver-ready sending and the delay limit cost when there
           is nobody to share with).
  nbr      seed 001's neighbour exchange (bench/xb-halo3d --star) on 4 and 7 hosts
           through one switch per axis (vcluster nbr3sw / nbr6sw, MTU 9000): the centre
           exchanges with every neighbour at once ("all") or +x+y+z first, then -x-y-z
           ("phased"), 512 B - 1 MiB; pmeth with no flow control, the default (tcp, over the
           management network, carries only the collectives between non-neighbours), the
           default with message starts of one frame (btl_pmeth_eager_frames 1), and tcp.  The centre's MB/s (the bytes it sends per exchange over the time of one)
           and the frames the switches dropped.  tcp runs between the hosts' host
           addresses (vcluster create --host-addrs: one address per host, routed over the
           data links), because Open MPI 4.1's tcp BTL binds a connection to one link's
           address and sends it over another on these multi-homed hosts, and the peer
           drops it (open-mpi/ompi#7115).  Every rank gives its CPU away when idle
           (mpi_yield_when_idle): the 4 or 7 hosts share this machine's 2 cores, where
           real ones would have their own, and a rank that spins holds a core for a
           whole time slice while its host's packets wait for it (tcp: ~4 ms an
           exchange at every small size; pmeth: half its rate up to 32 KiB).

Runs alternate between the variants and repeat R times (default 3); tables give
medians.  Raw JSON lines and the jobs' stderr go to DIR (default
build/pmeth-credits/); a summary table to DIR/table.txt (table-EXP.txt with
--only EXP), plots to DIR/*.png when matplotlib is there.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("TOP_BUILDDIR", os.path.join(TOP, "build"))
VC = os.path.join(TOP, "contrib", "vcluster", "vcluster")
NAME = "xbcred"
ENV = dict(os.environ, XBVC_NAME=NAME, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def vc(*args, check=True):
    return subprocess.run([VC, *args], env=ENV, check=check, capture_output=True, text=True)


def switch_drops(port=None):
    """Frames the switch's egress queue towards PORT (s0nI; every port when None) has
    dropped so far."""
    out = subprocess.run(["ip", "netns", "exec", f"xbvc-{NAME}-sw", "tc", "-s", "qdisc", "show"]
                         + (["dev", port] if port else []), capture_output=True, text=True).stdout
    return sum(int(d) for d in re.findall(r"dropped (\d+)", out))


def job(out, program, btl, mca=(), ppn=1, nodes=None, timeout=300):
    """One vcluster job; returns (JSON rows, retransmits summed over ranks)."""
    args = ["mpirun", "--timeout", str(timeout), "--ppn", str(ppn)]
    if nodes:
        args += ["--nodes", nodes]
    args += ["--mca", "btl", btl, "--mca", "btl_base_verbose", "10" if "pmeth" in btl else "0"]
    for k, v in mca:
        args += ["--mca", k, str(v)]
    r = subprocess.run([VC, *args, "--", *program], env=ENV, capture_output=True, text=True)
    with open(out + ".out", "a") as f:
        f.write(r.stdout)
    with open(out + ".err", "a") as f:
        f.write(r.stderr)
    if r.returncode != 0 or "all payloads verified" not in r.stdout:
        sys.exit(f"job failed ({r.returncode}): {' '.join(args)}\n{r.stderr[-2000:]}")
    rows = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    rtx = sum(int(a) + int(b) for a, b in
              re.findall(r"(\d+) retransmits on timeout, (\d+) fast", r.stderr))
    return rows, rtx


def med(v):
    return statistics.median(v) if v else float("nan")


# No flow control at all: no grants, no delay limit (seed 001's setting).
NO_FLOW_CONTROL = [("btl_pmeth_credits", "off"), ("btl_pmeth_pace_target_us", 0)]
NO_DELAY_LIMIT = [("btl_pmeth_pace_target_us", 0)]
INCAST_VARIANTS = [("pmeth off", "self,vader,pmeth", NO_FLOW_CONTROL),
                   ("delay only", "self,vader,pmeth", [("btl_pmeth_credits", "off")]),
                   ("pmeth static", "self,vader,pmeth", [("btl_pmeth_credits", "static")]),
                   ("pmeth demand", "self,vader,pmeth", [("btl_pmeth_credits", "demand")]),
                   ("demand no delay", "self,vader,pmeth", NO_DELAY_LIMIT),
                   ("tcp", "self,vader,tcp", [])]
INCAST_NAMES = [v[0] for v in INCAST_VARIANTS]


def incast(o, lines):
    vc("create", "xbar", "--dims", "4", "--mtu", "9000", "--force")
    variants = INCAST_VARIANTS
    res = {}
    for senders, ppn in ((3, 1), (6, 2)):
        for rep in range(o.repeats):
            for name, btl, mca in variants:
                d0 = switch_drops("s0n0")
                rows, rtx = job(os.path.join(o.out, "incast"),
                                [os.path.join(BUILD, "bench", "xb-incast"), "-m", "16k:1m",
                                 "-i", "20", "-S", str(senders)], btl, mca, ppn=ppn)
                drops = switch_drops("s0n0") - d0
                r = res.setdefault((senders, name), {"mbps": {}, "drops": [], "rtx": []})
                r["drops"].append(drops)
                r["rtx"].append(rtx)
                for row in rows:
                    r["mbps"].setdefault(row["size"], []).append(row["mbps"])
                lines.append(json.dumps({"exp": "incast", "senders": senders, "variant": name,
                                         "rep": rep, "drops": drops, "retransmits": rtx,
                                         "rows": rows}))
    return res


def credits(o, lines):
    vc("create", "xbar", "--dims", "4", "--mtu", "1500", "--force")
    scaled = [("btl_pmeth_credit_budget", 15), ("btl_pmeth_credit_floor", 1)]
    layouts = [(0, 1, "0,1"), (2, 1, None), (6, 2, None), (14, 4, None)]   # idle, ppn, nodes
    res = {}
    for rep in range(o.repeats):
        for idle, ppn, nodes in layouts:
            for mode in ("idle", "busy"):
                if mode == "busy" and idle == 0:
                    continue
                for pol in ("static", "demand"):
                    prog = [os.path.join(BUILD, "bench", "xb-incast"), "-m", "1m:1m", "-i", "10",
                            "-W", "8"]
                    if mode == "idle":
                        prog += ["-S", "1"]
                    rows, rtx = job(os.path.join(o.out, "credits"), prog, "self,vader,pmeth",
                                    scaled + [("btl_pmeth_credits", pol)], ppn=ppn, nodes=nodes)
                    row = rows[-1]
                    r = res.setdefault((idle, mode, pol), {"per": [], "agg": [], "senders": 0})
                    r["per"].append(row["mbps_per_sender"])
                    r["agg"].append(row["mbps"])
                    r["senders"] = row["senders"]
                    lines.append(json.dumps({"exp": "credits", "others": idle, "mode": mode,
                                             "policy": pol, "rep": rep, "retransmits": rtx,
                                             "row": row}))
    return res


def pair(o, lines):
    vc("create", "pair", "--links", "6", "--mtu", "9000", "--force")
    res = {}
    for rep in range(o.repeats):
        for pol in ("off", "demand"):
            rows, rtx = job(os.path.join(o.out, "pair"),
                            [os.path.join(BUILD, "bench", "xb-bw"), "-m", "64k:4m", "-i", "30"],
                            "self,pmeth", NO_FLOW_CONTROL if pol == "off" else [])
            for row in rows:
                res.setdefault(pol, {}).setdefault(row["size"], []).append(row["mbps"])
            lines.append(json.dumps({"exp": "pair", "policy": pol, "rep": rep, "rows": rows}))
    return res


NBR_VARIANTS = ("off", "demand", "1frame", "tcp")


def nbr(o, lines):
    idle = [("mpi_yield_when_idle", 1)]
    # pmeth's jobs: tcp only for the collectives between non-neighbours, over the management network
    pmeth_mca = [("btl_tcp_if_include", "198.19.255.0/24")] + idle
    # "1frame": the default but for message starts of one frame (btl_pmeth_eager_frames 1), so
    # that 9-35 KiB messages take ob1's rendezvous
    variants = [("off", "self,pmeth,tcp", pmeth_mca + NO_FLOW_CONTROL), ("demand", "self,pmeth,tcp", pmeth_mca),
                ("1frame", "self,pmeth,tcp", pmeth_mca + [("btl_pmeth_eager_frames", 1)]),
                ("tcp", "self,tcp", [("btl_tcp_if_include", "198.19.254.0/24")] + idle)]
    res = {}
    for topo in ("nbr3sw", "nbr6sw"):
        vc("create", topo, "--mtu", "9000", "--host-addrs", "--force")
        for rep in range(o.repeats):
            for name, btl, mca in variants:
                d0 = switch_drops()
                rows, rtx = job(os.path.join(o.out, "nbr"),
                                [os.path.join(BUILD, "bench", "xb-halo3d"), "--star", "-m", "512:1m",
                                 "-i", "50", "-w", "5"], btl, mca)
                drops = switch_drops() - d0
                r = res.setdefault((topo, name), {"all": {}, "phased": {}, "drops": [], "rtx": []})
                r["drops"].append(drops)
                r["rtx"].append(rtx)
                for row in rows:
                    r["all"].setdefault(row["size"], []).append(row["mbps"])
                    r["phased"].setdefault(row["size"], []).append(row["phased_mbps"])
                lines.append(json.dumps({"exp": "nbr", "topology": topo, "variant": name, "rep": rep,
                                         "drops": drops, "retransmits": rtx, "rows": rows}))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(BUILD, "pmeth-credits"))
    ap.add_argument("--only", choices=["incast", "credits", "pair", "nbr"])
    o = ap.parse_args()
    os.makedirs(o.out, exist_ok=True)
    exps = [o.only] if o.only else ["incast", "credits", "pair", "nbr"]
    for f in os.listdir(o.out):
        if f.endswith((".out", ".err")) and f.split(".")[0] in exps:
            os.unlink(os.path.join(o.out, f))
    suffix = f"-{o.only}" if o.only else ""
    lines, text = [], []

    def say(s=""):
        print(s)
        text.append(s)

    try:
        if o.only in (None, "incast"):
            res = incast(o, lines)
            for senders in (3, 6):
                say(f"## incast: {senders} senders on other hosts -> rank 0 through one switch port "
                    f"(256 KiB buffer), MTU 9000, 1 Gbit/s; aggregate MB/s, median of {o.repeats}")
                names = INCAST_NAMES
                say("size      " + "".join(f"{n:>16}" for n in names))
                sizes = sorted(res[(senders, names[0])]["mbps"])
                for s in sizes:
                    say(f"{s:<10}" + "".join(f"{med(res[(senders, n)]['mbps'][s]):16.1f}" for n in names))
                say("port drops" + "".join(f"{med(res[(senders, n)]['drops']):16.0f}" for n in names))
                say("resends   " + "".join(f"{'-':>16}" if n == "tcp" else f"{med(res[(senders, n)]['rtx']):16.0f}"
                                           for n in names))
                say()
            plot_incast(o, res)
        if o.only in (None, "credits"):
            res = credits(o, lines)
            say(f"## credits: 1 MiB messages to rank 0, MTU 1500, budget 15 frames, floor 1; "
                f"MB/s per sender, median of {o.repeats}")
            say("others  mode   senders   static   demand   (aggregate: static  demand)")
            for idle in (0, 2, 6, 14):
                for mode in ("idle", "busy"):
                    if (idle, mode, "static") not in res:
                        continue
                    st, de = res[(idle, mode, "static")], res[(idle, mode, "demand")]
                    say(f"{idle:<7} {mode:<6} {st['senders']:>7} {med(st['per']):8.1f} {med(de['per']):8.1f}"
                        f"   {med(st['agg']):16.1f} {med(de['agg']):7.1f}")
            say()
            plot_credits(o, res)
        if o.only in (None, "pair"):
            res = pair(o, lines)
            say(f"## one sender alone, 6 links, MTU 9000: MB/s, median of {o.repeats}")
            say("size          off   demand   demand/off")
            for s in sorted(res["off"]):
                a, b = med(res["off"][s]), med(res["demand"][s])
                say(f"{s:<10} {a:7.1f} {b:8.1f} {b / a:12.2f}")
            say()
        if o.only in (None, "nbr"):
            res = nbr(o, lines)
            for topo in ("nbr3sw", "nbr6sw"):
                say(f"## {topo}: the centre's MB/s, median of {o.repeats}; pmeth with credits off | "
                    f"demand (the default) | demand with one-frame message starts, and tcp; best: of the "
                    f"pmeth curves | of all")
                say("size      " + "".join(f"{m + ' ' + n:>15}" for m in ("all", "phased")
                                          for n in NBR_VARIANTS) + "   best pmeth  best all")
                rows = sorted(res[(topo, "off")]["all"])
                best, best_all = {}, {}
                for sz in rows:
                    v = {(m, n): med(res[(topo, n)][m][sz]) for m in ("all", "phased") for n in NBR_VARIANTS}
                    best[sz] = max(x for (m, n), x in v.items() if n != "tcp")
                    best_all[sz] = max(v.values())
                    say(f"{sz:<10}" + "".join(f"{x:15.1f}" for x in v.values())
                        + f"{best[sz]:13.1f}{best_all[sz]:10.1f}")
                say("switch drops " + " ".join(f"{n}: {med(res[(topo, n)]['drops']):.0f}" for n in NBR_VARIANTS)
                    + "   pmeth resends " + " ".join(f"{n}: {med(res[(topo, n)]['rtx']):.0f}" for n in ("off", "demand", "1frame")))
                for ref, name in ((best, "the best pmeth curve"), (best_all, "the best curve, tcp's included")):
                    ratios = {sz: med(res[(topo, "demand")]["all"][sz]) / ref[sz] for sz in rows}
                    low = min(ratios, key=ratios.get)
                    say(f"demand, all at once: at least {ratios[low]:.2f} of {name} at every size "
                        f"(lowest at {low} B)")
                say()
            plot_nbr(o, res)
    finally:
        vc("destroy", check=False)
        with open(os.path.join(o.out, f"samples{suffix}.jsonl"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(o.out, f"table{suffix}.txt"), "w") as f:
            f.write("\n".join(text) + "\n")


def _plt():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("# matplotlib not found: no plots")
        return None


def plot_incast(o, res):
    plt = _plt()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, senders in zip(axes, (3, 6)):
        for n in INCAST_NAMES:
            r = res[(senders, n)]
            sizes = sorted(r["mbps"])
            ax.plot(sizes, [med(r["mbps"][s]) for s in sizes], marker="o",
                    label=f"{n} ({med(r['drops']):.0f} port drops)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_title(f"{senders} senders -> 1 switch port")
        ax.axhline(125, color="grey", lw=0.5)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("aggregate MB/s")
    fig.tight_layout()
    fig.savefig(os.path.join(o.out, "incast.png"), dpi=100)


def plot_credits(o, res):
    plt = _plt()
    if plt is None:
        return
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, style in (("idle", "-"), ("busy", "--")):
        for pol in ("static", "demand"):
            xs = [i for i in (0, 2, 6, 14) if (i, mode, pol) in res]
            ax.plot(xs, [med(res[(i, mode, pol)]["per"]) for i in xs], style, marker="o",
                    label=f"{pol}, others {mode}")
    ax.set_xlabel("other ranks in the job")
    ax.set_ylabel("MB/s per sender (1 MiB messages)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(o.out, "credits.png"), dpi=100)


def plot_nbr(o, res):
    plt = _plt()
    if plt is None:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, topo in zip(axes, ("nbr3sw", "nbr6sw")):
        for n in NBR_VARIANTS:
            r = res[(topo, n)]
            sizes = sorted(r["all"])
            what = {"tcp": "tcp", "1frame": "pmeth demand, eager 1 frame"}.get(n, f"pmeth credits {n}")
            ax.plot(sizes, [med(r["all"][s]) for s in sizes], "-", marker="o", ms=3,
                    label=f"{what}, all at once ({med(r['drops']):.0f} switch drops a run)")
            ax.plot(sizes, [med(r["phased"][s]) for s in sizes], ":", marker="s", ms=3,
                    label=f"{what}, +xyz then -xyz")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("centre MB/s")
        ax.set_title(f"{topo}: neighbour exchange, one switch per axis")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(o.out, "nbr.png"), dpi=100)


if __name__ == "__main__":
    main()
