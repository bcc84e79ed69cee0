#!/usr/bin/python3
"""Compare MPI transports on the xb-* benchmarks in one invocation.

Runs each benchmark over each transport (Open MPI's vader, tcp, pml ucx and
this project's BTLs, from contrib/transports.conf), several times, interleaved
so that machine noise falls on all of them alike; first once with payload
verification on (a transport that corrupts data is dropped and reported), then
timed runs with verification off.  Prints the medians and their ratios against
a baseline transport, and writes the samples (JSON) and one PNG plot per
benchmark.  Ranks are bound to cores when there are no more ranks than cores.

examples:
  bench/compare.py                                   # latency, bw, bibw over all bench transports
  bench/compare.py --bench latency --transports vader,ucx --repeats 9
  bench/compare.py --bench halo3d,ring --np 8        # oversubscribed, unbound
  bench/compare.py --merge results/A,results/B       # one report from two earlier invocations
  bench/compare.py --cluster "pair --links 1 --rate 0 --mtu 9000"   # between two virtual hosts:
                          # pmeth and tcp over the very same links (the "cluster" transports),
                          # each rank on its own host of contrib/vcluster, the raw-frame floors beside
                          # (latency: a 64-byte frame's half round trip; bw: a stream of full
                          # frames striped over all links)
"""
import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("TOP_BUILDDIR", os.path.join(TOP, "build"))

# benchmark -> program, default sizes, metrics (JSON key, label, unit, True when higher is better)
BENCHES = {
    "latency":  ("xb-latency",  "0:4M", [("latency_us", "latency", "us", False)]),
    "bw":       ("xb-bw",       "1:4M", [("mbps", "bandwidth", "MB/s", True)]),
    "bibw":     ("xb-bibw",     "1:4M", [("mbps", "bi-directional bandwidth", "MB/s", True)]),
    "mbw_mr":   ("xb-mbw-mr",   "1:4M", [("mbps", "aggregate bandwidth", "MB/s", True),
                                         ("msg_per_s", "message rate", "msg/s", True)]),
    "halo3d":   ("xb-halo3d",   "8:1M", [("all_us", "6 directions at once", "us", False),
                                         ("phased_us", "+xyz then -xyz", "us", False)]),
    "ring":     ("xb-ring",     "8:1M", [("natural_us", "natural ring", "us", False),
                                         ("random_us", "random ring", "us", False),
                                         ("random_mbps", "random ring bandwidth/rank", "MB/s", True)]),
    "alltoall": ("xb-alltoall", "1:1M", [("latency_us", "alltoall time", "us", False)]),
    # seed 002's dense patterns: each one's aggregate over its phases, all ranks together
    # (per-phase figures stay in the samples' JSON rows, "phases")
    "dense":    ("xb-dense",    "1K:1M", [("aapc_mbps", "congestion-controlled AAPC", "MB/s", True),
                                          ("pairwise_mbps", "simple pairwise", "MB/s", True),
                                          ("cumulative_mbps", "cumulative pairwise", "MB/s", True),
                                          ("random_mbps", "random pairwise", "MB/s", True)]),
}


def pmeth_io_mode(mpirun_args):
    """The btl_pmeth_io_mode a transport's mpirun arguments give pmeth: the one they name,
    else "auto" (the component's default); "" where they run no pmeth."""
    mode, pmeth = "auto", False
    for i, t in enumerate(mpirun_args[:-1]):
        if t == "btl" and "pmeth" in mpirun_args[i + 1].split(","):
            pmeth = True
        if t == "btl_pmeth_io_mode":
            mode = mpirun_args[i + 1]
    return mode if pmeth else ""


def read_transports(path, uses=("bench", "both")):
    """name -> mpirun arguments, for the transports whose use is one of USES."""
    out = {}
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if len(fields) >= 2 and fields[1] in uses:
                out[fields[0]] = fields[2:]
    return out


VCLUSTER = os.path.join(TOP, "contrib", "vcluster", "vcluster")
CLUSTER_NAME = "xbbench"


class Cluster:
    """Ranks on the hosts of a virtual cluster (contrib/vcluster), one per host: the
    transports run over the cluster's links, launched by Open MPI's own multi-host
    launcher.  The two hosts share this machine's cores, so the placement probe still
    applies: it maps a file both hosts see (XB_PROBE_FILE)."""

    def __init__(self, spec, faults=None, cpus="free"):
        self.spec = shlex.split(spec)
        self.faults = shlex.split(faults) if faults else []
        self.cpus = cpus
        self.pin = None     # the CPU of rank 0 and of rank 1 (n0, n1), or None: unbound
        self.env = dict(os.environ, XBVC_NAME=CLUSTER_NAME)
        self.probe = f"/run/xbvc/{CLUSTER_NAME}/probe"

    def __enter__(self):
        cmd = [VCLUSTER, "create"] + self.spec + ["--force"]
        p = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            sys.exit(f"compare: {' '.join(cmd)} failed: {p.stdout.strip()}")
        if self.cpus != "free":
            # vcluster steers each link end's received frames to one CPU (RPS); where a rank
            # runs against that CPU decides whether every frame costs an inter-CPU wake-up
            eths, _ = self.links()
            cpus = [{self._steer_cpu(n, e) for e in eths} for n in ("n0", "n1")]
            steer = [c.pop() if len(c) == 1 else None for c in cpus]
            if not eths or None in steer:
                self.__exit__()
                sys.exit("compare: --cluster-cpus needs hosts n0 and n1 whose links' receive "
                         "processing is steered to one CPU per host (vcluster without --reorder, "
                         "and no more links than make each host's land on one CPU)")
            self.pin = steer if self.cpus == "own" else steer[::-1]
        if self.faults:
            # standing faults (e.g. loss:n0/eth0:0.01:both) for the whole comparison
            cmd = [VCLUSTER, "fault"] + self.faults
            p = subprocess.run(cmd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                self.__exit__()
                sys.exit(f"compare: {' '.join(cmd)} failed: {p.stdout.strip()}")
        return self

    def __exit__(self, *exc):
        subprocess.run([VCLUSTER, "destroy"], env=self.env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)

    def cmd(self, np_, targs, prog, args, timeout):
        """vcluster mpirun: --mca pairs become its --mca options, the rest mpirun's."""
        cmd = [VCLUSTER, "mpirun", "--ppn", str(max(1, np_ // 2)), "--timeout", str(timeout),
               "-x", f"XB_PROBE_FILE={self.probe}"]
        if self.pin:
            cmd += ["-x", "XB_PIN_CPUS=" + ",".join(map(str, self.pin))]
            args = [prog] + args
            prog = os.path.join(TOP, "bench", "pin_rank.sh")
        rest = []
        i = 0
        while i < len(targs):
            if targs[i] == "--mca" and i + 2 < len(targs):
                cmd += ["--mca", targs[i + 1], targs[i + 2]]
                i += 3
            else:
                rest.append(targs[i])
                i += 1
        if rest:
            cmd += ["--mpirun-args", shlex.join(rest)]
        return cmd + ["--", prog] + args

    def _steer_cpu(self, node, ifname="eth0"):
        """The CPU the node's received frames on IFNAME are processed on (its rps_cpus),
        or None when they are not steered to exactly one."""
        path = f"/sys/class/net/{ifname}/queues/rx-0/rps_cpus"
        mask = subprocess.run(["ip", "netns", "exec", f"xbvc-{CLUSTER_NAME}-{node}", "cat", path],
                              stdout=subprocess.PIPE, text=True).stdout.strip().replace(",", "")
        try:
            m = int(mask, 16)
        except ValueError:
            return None
        return m.bit_length() - 1 if m and m & (m - 1) == 0 else None

    def _on(self, node):
        """A command prefix running in NODE (n0, n1), on the CPU its rank runs on
        (--cluster-cpus), or where the scheduler puts it."""
        return ["ip", "netns", "exec", f"xbvc-{CLUSTER_NAME}-{node}"] + \
            (["taskset", "-c", str(self.pin[int(node[1:])])] if self.pin else [])

    def _mac(self, node, ifname):
        path = f"/sys/class/net/{ifname}/address"
        return subprocess.run(["ip", "netns", "exec", f"xbvc-{CLUSTER_NAME}-{node}", "cat", path],
                              stdout=subprocess.PIPE, text=True).stdout.strip()

    def links(self):
        """The data links of host n0 (eth0, eth1, ...) with their MTU."""
        ns = ["ip", "netns", "exec", f"xbvc-{CLUSTER_NAME}-n0"]
        names = subprocess.run(ns + ["ls", "/sys/class/net"], stdout=subprocess.PIPE, text=True).stdout.split()
        eths = sorted((n for n in names if n.startswith("eth") and n[3:].isdigit()), key=lambda n: int(n[3:]))
        mtu = int(subprocess.run(ns + ["cat", f"/sys/class/net/{eths[0]}/mtu"], stdout=subprocess.PIPE,
                                 text=True).stdout or 1500) if eths else 1500
        return eths, mtu

    def _stream_setup(self):
        """What a stream floor needs: the tool, n0's and n1's MACs of every link, and the
        options of full-MTU frames striped over them; None if it cannot run."""
        tool = os.path.join(BUILD, "test", "pmeth", "pmeth_floor")
        eths, mtu = self.links()
        if not os.access(tool, os.X_OK) or not eths or len(eths) > 8:
            return None
        m0 = ",".join(self._mac("n0", e) for e in eths)
        m1 = ",".join(self._mac("n1", e) for e in eths)
        return tool, m0, m1, ["--if", ",".join(eths), "--mode", "packet", "--mtu", str(mtu),
                              "--size", str(mtu + 14)]

    def stream_floor(self, seconds=2):
        """The raw-frame floor of a stream: MB/s of full-MTU frames from n0 to n1 striped
        round-robin over all links by one process, received by one busy-polling process
        (test/pmeth/pmeth_floor blast / sink, no protocol, nothing resent); what the links,
        their shapers and this machine's CPUs let through.  None if it cannot run."""
        setup = self._stream_setup()
        if setup is None:
            return None
        tool, m0, m1, common = setup
        ns = self._on
        sink = subprocess.Popen(ns("n1") + [tool, "--mac", m1, "--peer-mac", m0, "--me", "2", "--peer", "1",
                                            "--rx", "4096", "--timeout", str(seconds + 20)] + common + ["sink"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            if "ready" not in sink.stdout.readline():
                return None
            subprocess.run(ns("n0") + [tool, "--mac", m0, "--peer-mac", m1, "--me", "1", "--peer", "2",
                                       "--seconds", str(seconds)] + common + ["blast"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=seconds + 30)
            out, _ = sink.communicate(timeout=seconds + 30)
            rows = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
            return rows[0]["mbyte_per_s"] if rows and rows[0]["frames"] > 0 else None
        except (subprocess.TimeoutExpired, ValueError, KeyError):
            return None
        finally:
            sink.kill()
            sink.wait()

    def duplex_floor(self, seconds=2):
        """The raw-frame floor of a bidirectional stream: each host runs one process that
        blasts full-MTU frames striped over all links to the other while taking the other's
        (test/pmeth/pmeth_floor duplex), placed as the ranks are; the MB/s both received,
        added.  None if it cannot run."""
        setup = self._stream_setup()
        if setup is None:
            return None
        tool, m0, m1, common = setup
        common += ["--rx", "4096", "--seconds", str(seconds), "--timeout", "20"]
        ends = []
        try:
            for node, me, peer, mine, theirs in (("n1", "2", "1", m1, m0), ("n0", "1", "2", m0, m1)):
                p = subprocess.Popen(self._on(node) + [tool, "--mac", mine, "--peer-mac", theirs, "--me", me,
                                                       "--peer", peer] + common + ["duplex"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                ends.append(p)
                if "ready" not in p.stdout.readline():
                    return None
            total = 0.0
            for p in ends:
                out, _ = p.communicate(timeout=seconds + 40)
                rows = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
                if not rows or rows[0]["frames"] == 0:
                    return None
                total += rows[0]["mbyte_per_s"]
            return total
        except (subprocess.TimeoutExpired, ValueError, KeyError):
            return None
        finally:
            for p in ends:
                p.kill()
                p.wait()

    def floor(self, iters=20000, mode="packet", direct=True):
        """The raw-frame floor on the first link: half round trip of a 64-byte frame (the
        Ethernet and pmeth headers and 8 bytes) between the two hosts' rings (MODE packet:
        AF_PACKET; xdp: AF_XDP, beside an AF_PACKET ring at a jumbo MTU), both ends
        busy-polling (test/pmeth/pmeth_floor), stated as xb-latency states a ping-pong
        (the median of its blocks' means); None if it cannot run.  DIRECT: each frame is
        sent as pmeth sends a lone frame (past the send ring, btl_pmeth_direct_max);
        else from the send ring with a kick, the path of frames that queue."""
        tool = os.path.join(BUILD, "test", "pmeth", "pmeth_floor")
        if not os.access(tool, os.X_OK):
            return None
        m0, m1 = self._mac("n0", "eth0"), self._mac("n1", "eth0")
        # rings sized to the link, as pmeth opens them (AF_XDP: paired at a jumbo MTU)
        common = ["--if", "eth0", "--mode", mode, "--mtu", str(self.links()[1]), "--size", "64",
                  "--count", str(iters), "--timeout", "30"] + ([] if direct else ["--direct", "0"])
        ns = self._on
        pong = subprocess.Popen(ns("n1") + [tool, "--mac", m1, "--peer-mac", m0, "--me", "2",
                                            "--peer", "1"] + common + ["pong"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            line = pong.stdout.readline()       # "ready" once its ring is open
            if "ready" not in line:
                return None
            ping = subprocess.run(ns("n0") + [tool, "--mac", m0, "--peer-mac", m1, "--me", "1",
                                              "--peer", "2"] + common + ["ping"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
            rows = [json.loads(l) for l in ping.stdout.splitlines() if l.startswith("{")]
            # the median of 20 blocks' mean round trips: xb-latency's statistic
            return rows[0].get("half_rtt_us_block_median", rows[0]["half_rtt_us_median"]) \
                if rows else None
        except (subprocess.TimeoutExpired, ValueError, KeyError):
            return None
        finally:
            pong.kill()
            pong.wait()


def host_note(mib=2, seconds=0.3):
    """One line on the machine: its CPU, last-level cache and how fast it copies memory.

    Why: at 16 KiB - 4 MiB the shared-memory transports' cells depend on the memory behind
    their copies as much as on the transports.  On one AMD EPYC guest rsm's two copies led
    vader's single copy at 32-64 KiB; on another day's (an 8 MiB L3, its two CPUs copying
    2 MiB at once slowed each other from 17 to 3.4 GB/s) they took twice its time
    (docs/results-2026-12-05-rsm-small-cache/).  A table says which host it came from.
    The copy: a MIB-MiB buffer into another, for SECONDS, by one process on CPU 0 alone,
    then by one process on each of CPUs 0 and 1 at once."""
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    llc, best = "last-level cache ?", 0
    for index in range(16):     # the highest-level data or unified cache, as btl rsm reads it
        d = f"/sys/devices/system/cpu/cpu0/cache/index{index}"
        try:
            with open(f"{d}/level") as f:
                level = int(f.read())
            with open(f"{d}/type") as f:
                kind = f.read().strip()
            with open(f"{d}/size") as f:
                size = f.read().strip()                 # "8192K"
            kib = int(size[:-1]) * (1024 if size.endswith("M") else 1) if size[-1] in "KM" else int(size) // 1024
        except FileNotFoundError:
            break
        except (OSError, ValueError, IndexError):
            continue
        if kind in ("Data", "Unified") and level > best:
            best = level
            llc = f"L{level} {kib // 1024} MiB" if kib % 1024 == 0 else f"L{level} {kib} KiB"
    cpus = sorted(os.sched_getaffinity(0))

    def copier(cpu_id, start_at, out_fd):
        os.sched_setaffinity(0, {cpu_id})
        src = bytearray(b"\x5a") * (mib << 20)      # written: no shared zero pages
        dst = bytearray(b"\xa5") * (mib << 20)
        while time.monotonic() < start_at:
            pass
        n, end = 0, start_at + seconds
        while time.monotonic() < end:
            dst[:] = src
            n += 1
        os.write(out_fd, f"{n * mib * 1.048576 / 1000 / seconds:.1f}\n".encode())

    def rates(cpu_ids):
        r, w = os.pipe()
        start_at = time.monotonic() + 0.2
        kids = []
        for c in cpu_ids:
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(r)
                    copier(c, start_at, w)
                finally:
                    os._exit(0)
            kids.append(pid)
        os.close(w)
        for pid in kids:
            os.waitpid(pid, 0)
        with os.fdopen(r) as f:
            return [float(x) for x in f.read().split()]

    line = f"# host: {cpu}, {len(cpus)} CPUs, {llc}"
    try:
        alone = rates(cpus[:1])
        both = rates(cpus[:2]) if len(cpus) > 1 else []
        line += f"; copying {mib} MiB: {alone[0]:.1f} GB/s on one CPU alone"
        if len(both) == 2:
            line += f", {both[0]:.1f} and {both[1]:.1f} GB/s on two at once"
    except (OSError, ValueError, IndexError) as e:
        line += f"; copy rate not measured ({e})"
    return line


def mpirun_cmd(np_, targs, prog, args):
    place = ["--bind-to", "core", "--map-by", "core"] if np_ <= os.cpu_count() \
        else ["--oversubscribe", "--bind-to", "none"]
    return ["mpirun", "-np", str(np_)] + place + targs + [prog] + args


def run(cmd, timeout):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_btl_base_warn_component_unused="0", XBVC_NAME=CLUSTER_NAME)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=env, stdin=subprocess.DEVNULL)
    try:
        stdout, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # SIGTERM first: mpirun then stops the job and its cleanup removes the job's
        # shared-memory files, which a SIGKILL would leave in /dev/shm
        p.terminate()
        try:
            out, _ = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        rows = [l for l in out.splitlines() if l.startswith("{")]
        last = json.loads(rows[-1])["size"] if rows else None
        return None, (f"timed out after {timeout} s"
                      + (f", after the row of {last} B" if last is not None else ", before any row")
                      + " | " + " | ".join(l for l in out.strip().splitlines()[-3:] if not l.startswith("{")))
    rows = [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not rows:
        return None, f"exit {p.returncode}: " + " | ".join(stdout.strip().splitlines()[-4:])
    return rows, stdout


def fmt(v):
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v:.0f}"
    return f"{v:.3g}" if v < 10 else f"{v:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default="latency,bw,bibw", help=f"comma list of {','.join(BENCHES)}")
    ap.add_argument("--transports", help="comma list (default: every bench transport in contrib/transports.conf)")
    ap.add_argument("--transport", action="append", default=[], metavar="NAME=ARGS",
                    help="an extra transport for this invocation, e.g. "
                         "\"rsm-q512=--mca pml ob1 --mca btl self,rsm --mca btl_rsm_postboxes 512\" "
                         "(repeatable; used like the ones of contrib/transports.conf)")
    ap.add_argument("--baseline", help="transport the ratios divide by (default vader, or the first "
                    "transport when vader is not among them)")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per transport (default 5)")
    ap.add_argument("--np", type=int, default=2, help="ranks (default 2, bound to the 2 cores)")
    ap.add_argument("--sizes", help="MIN:MAX bytes for every benchmark (default: per benchmark)")
    ap.add_argument("--iters", type=int, help="iterations at small sizes (default: the benchmark's)")
    ap.add_argument("--out", help="directory for results (default results/<date-time>)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds one run may take (default 120; the slowest here take ~10)")
    ap.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    ap.add_argument("--cluster", metavar="SPEC",
                    help="run between the hosts of a virtual cluster made with `vcluster create SPEC` "
                         "(e.g. \"pair --links 2 --rate 0\"), one rank per host, over the transports "
                         "whose use is 'cluster' in contrib/transports.conf (baseline tcp-eth); the "
                         "cluster is removed afterwards")
    ap.add_argument("--cluster-faults", metavar="FAULTS",
                    help="with --cluster: standing faults for the whole run, as `vcluster fault` takes "
                         "them (e.g. \"loss:n0/eth0:0.01:both\")")
    ap.add_argument("--cluster-cpus", choices=("free", "own", "peer"), default="free",
                    help="with --cluster: where the two ranks (and the raw-frame floor's two ends) "
                         "run.  vcluster steers each host's received frames to one CPU (RPS); 'own' "
                         "puts each rank on the CPU its host's frames are steered to, so every frame "
                         "wakes the other CPU (an inter-processor interrupt, ~10 us in this VM); "
                         "'peer' puts it on the other host's, so the sender's CPU processes the frame "
                         "in its own send call and none is woken; 'free' (default) leaves them to "
                         "the scheduler, which picks either, run by run")
    ap.add_argument("--merge", metavar="DIR,DIR...",
                    help="run nothing: report the samples of earlier results directories together "
                         "(more runs of each placement); --bench/--transports select from them")
    args = ap.parse_args()

    conf = os.path.join(TOP, "contrib", "transports.conf")
    known = read_transports(conf, ("cluster",) if args.cluster else ("bench", "both"))
    for spec in args.transport:
        name, eq, targs = spec.partition("=")
        if not eq or not name or not targs.split():
            sys.exit(f"compare: --transport wants NAME=ARGS, not {spec!r}")
        known[name] = targs.split()
        if args.transports and name not in args.transports.split(","):
            args.transports += "," + name
    names = args.transports.split(",") if args.transports else list(known)
    for n in names:
        if n not in known:
            sys.exit(f"compare: unknown transport {n!r}; known: {', '.join(known)} (contrib/transports.conf)")
    if args.baseline is None:
        default = "tcp-eth" if args.cluster else "vader"
        args.baseline = default if default in names else names[0]
    elif args.baseline not in names:
        sys.exit(f"compare: the baseline {args.baseline!r} is not among the transports ({', '.join(names)})")
    # a transport that runs pmeth on AF_XDP rings (io_mode xdp, or auto, the default) gets
    # the AF_XDP floor beside it
    any_xdp = any(pmeth_io_mode(known[n]) in ("xdp", "auto") for n in names)
    benches = args.bench.split(",")
    for b in benches:
        if b not in BENCHES:
            sys.exit(f"compare: unknown benchmark {b!r}; known: {', '.join(BENCHES)}")
    out_dir = args.out or os.path.join(TOP, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out_dir, exist_ok=True)
    if args.merge:
        print(f"# {len(benches)} benchmark(s) x {len(names)} transport(s), samples merged from "
              f"{args.merge}; baseline {args.baseline}", flush=True)
    else:
        print(f"# {len(benches)} benchmark(s) x {len(names)} transport(s) x {args.repeats} repeats, "
              f"{args.np} ranks{' on hosts of a virtual cluster' if args.cluster else ' bound to cores' if args.np <= os.cpu_count() else ', oversubscribed'}; "
              f"baseline {args.baseline}", flush=True)
    for n in names:
        print(f"#   {n:6s} mpirun {' '.join(known[n])}")
    host = None if args.merge else host_note()
    if host:
        print(host, flush=True)

    samples = {}   # (bench, transport) -> size -> metric -> [(value, probe_ns)]
    failed = {}    # (bench, transport) -> reason
    total_runs = len(benches) * len(names) * (args.repeats + 1)
    done = 0
    t_start = time.monotonic()
    if args.merge:
        args.repeats = merge_samples(args.merge.split(","), benches, names, samples)
        benches_to_run = []
    else:
        benches_to_run = benches
    if args.cluster and args.cluster_cpus != "free" and args.np != 2:
        sys.exit("compare: --cluster-cpus places one rank per host: --np 2")
    cluster = Cluster(args.cluster, args.cluster_faults, args.cluster_cpus) \
        if args.cluster and benches_to_run else None
    if cluster:
        cluster.__enter__()
        print(f"# between the hosts of a virtual cluster: vcluster create {args.cluster}"
              + (f"; faults: {args.cluster_faults}" if args.cluster_faults else "")
              + (f"; ranks and floor on CPUs {cluster.pin} ({args.cluster_cpus}: "
                 + ("every frame wakes the other CPU" if args.cluster_cpus == "own"
                    else "frames processed on the sending CPU") + ")" if cluster.pin
                 else "; ranks unbound (either placement, run by run)"), flush=True)
    try:
        for b in benches_to_run:
            prog_name, default_sizes, metrics = BENCHES[b]
            prog = os.path.join(BUILD, "bench", prog_name)
            if not os.access(prog, os.X_OK):
                sys.exit(f"compare: {prog} is not built; run contrib/setup")
            base_args = ["-m", args.sizes or default_sizes] + (["-i", str(args.iters)] if args.iters else [])
            order = list(names)
            for rep in range(args.repeats + 1):
                verifying = rep == 0
                for n in order:
                    done += 1
                    if (b, n) in failed:
                        continue
                    label = "verified run" if verifying else f"timed run {rep}/{args.repeats}"
                    print(f"[{done:3d}/{total_runs}] {b} over {n}: {label} ...", end="", flush=True)
                    t0 = time.monotonic()
                    # the verified run is shorter: it checks bytes, it is not timed
                    extra = ["-i", "20", "-w", "2"] if verifying else ["-n"]
                    cmd = cluster.cmd(args.np, known[n], prog, base_args + extra, args.timeout) if cluster \
                        else mpirun_cmd(args.np, known[n], prog, base_args + extra)
                    rows, log = run(cmd, args.timeout + 30)
                    print(f" {time.monotonic() - t0:.1f} s", flush=True)
                    if rows is None:
                        failed[(b, n)] = log
                        print(f"    {n} dropped from {b}: {log}", flush=True)
                        continue
                    if verifying:
                        continue
                    per_size = samples.setdefault((b, n), {})
                    for r in rows:
                        for m, _, _, _ in metrics:
                            per_size.setdefault(r["size"], {}).setdefault(m, []).append(
                                (r[m], r.get("probe_ns")))
                if cluster and b == "latency" and rep > 0:
                    # the floor right after the round, placed as that round's last run was
                    # (and the AF_XDP floor when a transport runs pmeth on AF_XDP)
                    for fname, fmode, direct in [("raw-floor", "packet", True),
                                                 ("raw-floor-ring", "packet", False)] + (
                            [("raw-floor-xdp", "xdp", True)] if any_xdp else []):
                        f = cluster.floor(mode=fmode, direct=direct)
                        if f is not None:
                            probe = rows[-1].get("probe_ns") if rows else None
                            samples.setdefault((b, fname), {}).setdefault(8, {}) \
                                .setdefault("latency_us", []).append((f, probe))
                if cluster and b in ("bw", "bibw") and rep > 0 and rows:
                    # the stream floor after the round (bibw: a stream each way at once, what
                    # both ends received); one figure for every size (a stream of full frames
                    # does not know message sizes), so each row shows its distance
                    f = cluster.stream_floor() if b == "bw" else cluster.duplex_floor()
                    if f is not None:
                        probe = rows[-1].get("probe_ns")
                        for r in rows:
                            samples.setdefault((b, "raw-floor"), {}).setdefault(r["size"], {}) \
                                .setdefault("mbps", []).append((f, probe))
                order = order[1:] + order[:1]  # rotate, so no transport always runs first
    finally:
        if cluster:
            cluster.__exit__(None, None, None)
    for fname in ("raw-floor", "raw-floor-ring", "raw-floor-xdp"):
        if any(n == fname for _, n in samples) and fname not in names:
            names.append(fname)
    elapsed = time.monotonic() - t_start

    # ---- report ---------------------------------------------------------------
    split = placement_split(samples)
    core = core_split(samples, split)
    report = []
    if cluster and cluster.pin:
        report.append(f"# cluster CPUs ({args.cluster_cpus}): rank 0 and the floors' n0 end on CPU "
                      f"{cluster.pin[0]}, rank 1 and n1's on CPU {cluster.pin[1]}; "
                      + ("each host's received frames are processed on its rank's CPU: every frame "
                         "wakes the other CPU" if args.cluster_cpus == "own" else
                         "each host's received frames are processed on the other rank's CPU, in the "
                         "sender's own send call: no frame wakes a CPU"))
    if split or core:
        report.append(f"# placement: each row is grouped by the cache-line ping-pong between ranks 0 and 1"
                      f" taken before and after it; "
                      + (f"one core (SMT siblings) < {core:.0f} ns <= " if core else "")
                      + (f"near < {split:.0f} ns <= far" if split else "the rest")
                      + " (see README, 'Placement')")
        # rows whose two probes disagree (the host moved the vCPUs during them) are in
        # no table: said, so that a size missing from one is not a mystery
        mixed = [f"{n} {b}" for (b, n), per in samples.items() for ms in per.values()
                 for vs in ms.values() for _, pr in vs if classify(pr, split, core) == "mixed"]
        if mixed:
            report.append(f"# {len(mixed)} sample(s) taken while the placement changed (their two probes "
                          f"disagree) are in no table: {', '.join(sorted(set(mixed)))}")
    medians = {}   # placement -> bench -> metric -> transport -> size -> median
    for place in (["near", "far"] if split else ["all"]) + (["core"] if core else []):
        for b in benches:
            for m, label, unit, higher in BENCHES[b][2]:
                shown = [n for n in names if (b, n) in samples]
                if not shown:
                    continue
                pick = {n: {s: [v for v, pr in per.get(m, []) if classify(pr, split, core) == place]
                            for s, per in samples[(b, n)].items()} for n in shown}
                if not any(v for n in shown for v in pick[n].values()):
                    continue
                sizes = sorted({s for n in shown for s in samples[(b, n)]})
                ratio_of = [n for n in shown if n != args.baseline] if args.baseline in shown else []
                floor = probe_floor(samples, split, core, place)
                report.append("")
                report.append(f"{b}: {label} [{unit}], {place_title(place, floor, core)}; median, runs in brackets; "
                              f"{'higher' if higher else 'lower'} is better"
                              + (f"; ratio = transport / {args.baseline}" if ratio_of else ""))
                rw = {n: max(14, len(n) + len(args.baseline) + 3) for n in ratio_of}
                head = f"{'size(B)':>9}" + "".join(f"{n:>15}" for n in shown) \
                    + "".join(f"{n + '/' + args.baseline:>{rw[n]}}" for n in ratio_of)
                report.append(head)
                for s in sizes:
                    med, cnt = {}, {}
                    for n in shown:
                        vals = pick[n].get(s, [])
                        med[n] = statistics.median(vals) if vals else None
                        cnt[n] = len(vals)
                        medians.setdefault(place, {}).setdefault(b, {}).setdefault(m, {}) \
                            .setdefault(n, {})[s] = med[n]
                    line = f"{s:>9}" + "".join(f"{fmt(med[n]) + f' ({cnt[n]})':>15}" for n in shown)
                    for n in ratio_of:
                        r = med[n] / med[args.baseline] if med[n] and med[args.baseline] else None
                        line += f"{(f'{r:.2f}' if r is not None else '-'):>{rw[n]}}"
                    report.append(line)
                report.extend(paired_rows(samples, b, m, sizes, ratio_of, args.baseline, split, core, place))
    for (b, n), why in failed.items():
        report.append(f"# {n} failed in {b}: {why}")
    text = "\n".join(report)
    print(text)
    with open(os.path.join(out_dir, "table.txt"), "w") as f:
        f.write((host + "\n" if host else "") + text + "\n")      # printed at the start
    with open(os.path.join(out_dir, "samples.json"), "w") as f:
        json.dump({"np": args.np, "repeats": args.repeats, "baseline": args.baseline,
                   "placement_split_ns": split, "placement_core_ns": core, "host": host,
                   "transports": {n: known.get(n, ["(test/pmeth/pmeth_floor, raw frames)"]) for n in names},
                   "samples": {f"{b}/{n}": v for (b, n), v in samples.items()},
                   "medians": medians, "failed": {f"{b}/{n}": w for (b, n), w in failed.items()}},
                  f, indent=1)
    if not args.no_plots and medians:
        try:
            plots = plot(medians, out_dir, args)
            print(f"\n# plots: {', '.join(plots)}")
        except ImportError:
            print("\n# no plots: matplotlib is missing (contrib/setup installs python3-matplotlib)")
    print(f"# results in {out_dir} (table.txt, samples.json); {elapsed:.0f} s")
    return 1 if failed else 0


def merge_samples(dirs, benches, names, samples):
    """Load samples.json of earlier runs into SAMPLES; returns the repeats they add up to."""
    repeats = 0
    for d in dirs:
        with open(os.path.join(d, "samples.json")) as f:
            data = json.load(f)
        repeats += data.get("repeats", 0)
        for key, per_size in data["samples"].items():
            b, n = key.split("/", 1)
            if b not in benches or n not in names:
                continue
            dst = samples.setdefault((b, n), {})
            for size, per_metric in per_size.items():
                for m, vals in per_metric.items():
                    lst = dst.setdefault(int(size), {}).setdefault(m, [])
                    for x in vals:   # [value, probe] (or a bare value: runs before the probe)
                        lst.append((x, None) if isinstance(x, (int, float)) else (x[0], x[1]))
    return repeats


def placement_split(samples):
    """The probe value separating near from far placements, or None for one placement.

    On this kind of virtual machine the probe is bimodal (about 30-75 ns when the two
    vCPUs share a last-level cache, 150-250 ns when they do not); a run keeps its
    placement, so rows are compared only with rows of the same placement.  The probes
    are cut in two where the cut best separates their logarithms (Otsu's rule: the most
    variance between the two groups), and split there when the two groups' medians are
    clearly apart.  Not between the low and the high tenth, as before: on a day when the
    host gave the far placement to fewer than a tenth of the runs, both tenths were
    near, nothing was split, and a median of 5 runs of which 2 were far stood beside
    another transport's of 1 far (1 B latency: rsm 1.58x ucx, where the near runs alone
    gave 0.93x).  Nor in the widest gap alone: one probe half-way between the groups
    would hide it."""
    probes = sorted(x for per in samples.values() for ms in per.values() for vs in ms.values()
                    for _, pr in vs if pr for x in pr if x > 0)
    if len(probes) < 2:
        return None
    logs = [math.log(x) for x in probes]
    total, n, below, best, cut = sum(logs), len(logs), 0.0, -1.0, 1
    for k in range(1, n):
        below += logs[k - 1]
        between = k * (n - k) * (below / k - (total - below) / (n - k)) ** 2
        if between > best:
            best, cut = between, k
    lo, hi = statistics.median(probes[:cut]), statistics.median(probes[cut:])
    return (probes[cut - 1] * probes[cut]) ** 0.5 if hi > 2.5 * lo else None


def core_split(samples, split):
    """The probe value below which the two ranks ran on one core's two hardware threads
    (SMT siblings), or None.

    Besides near and far, the host here now and then runs the two vCPUs on one core: the
    probe then reads 41-45 ns where cores sharing the L3 read 60-105 (AMD EPYC, 2026-12-05,
    in most invocations a few percent of the runs), and every transport moves with it, each
    its own way (two pollers share one core's issue slots: rsm streamed 4 B at 19 MB/s
    there, 34.6 at 92 ns).  Mixed into the near medians, a transport that drew one such run
    seemed to lose a cell it won in the others.  The group is cut off at the widest gap of
    at least 1.3x between neighbouring probes below the near/far split (all probes without
    one) below which the probes are tight (within 1.35x of each other: one kind of
    placement) and under 3/4 of the probes' median; a probe half-way leaves it unsplit, as
    before.  Tight: without a near/far split the widest such gap can be the one between
    near and far (an invocation of 2026-12-05 whose near/far medians were 2.4x apart)."""
    probes = sorted(x for per in samples.values() for ms in per.values() for vs in ms.values()
                    for _, pr in vs if pr for x in pr if x > 0 and (split is None or x < split))
    if len(probes) < 4:
        return None
    top = 0.75 * statistics.median(probes)
    for gap, k in sorted(((probes[i] / probes[i - 1], i) for i in range(1, len(probes))), reverse=True):
        if gap < 1.3:
            return None
        if probes[k - 1] < top and probes[k - 1] <= 1.35 * probes[0]:
            return (probes[k - 1] * probes[k]) ** 0.5
    return None


def classify(probe, split, core=None):
    if core is not None and probe:
        if max(probe) < core:
            return "core"
        if min(probe) < core:
            return "mixed"
    if split is None:
        return "all"
    if not probe:
        return "unknown"
    if max(probe) < split:
        return "near"
    if min(probe) >= split:
        return "far"
    return "mixed"


def paired_rows(samples, bench, metric, sizes, ratio_of, baseline, split, core, place):
    """The ratios of runs paired by repeat, as lines under a median table.

    Repeat i of every transport runs back to back (the order rotates), so run i of a
    transport and run i of the baseline saw the host in the same state.  The host changes
    speed now and then (every transport's 1-64 B ping-pong moved from ~0.20 to ~0.145 us
    within one invocation, 2026-11-29), and then two medians can come from different
    periods: a median ratio read 0.65 where each pair read 0.88-0.95.  Pairs with both runs
    in this placement only; nothing when a transport's runs cannot be lined up (a --merge
    of directories with different repeats)."""
    rows = []
    for s in sizes:
        base = samples[(bench, baseline)].get(s, {}).get(metric, [])
        cells = []
        for n in ratio_of:
            mine = samples[(bench, n)].get(s, {}).get(metric, [])
            pairs = [v / bv for (v, pr), (bv, bpr) in zip(mine, base)
                     if bv and classify(pr, split, core) == place and classify(bpr, split, core) == place] \
                if len(mine) == len(base) else []
            cells.append(f"{statistics.median(pairs):.2f} ({len(pairs)})" if pairs else "-")
        if any(c != "-" for c in cells):
            rows.append(f"{s:>9}" + "".join(f"{c:>{max(14, len(n) + len(baseline) + 3)}}"
                                            for n, c in zip(ratio_of, cells)))
    if not rows:
        return []
    head = f"{'paired':>9}" + "".join(f"{n + '/' + baseline:>{max(14, len(n) + len(baseline) + 3)}}"
                                     for n in ratio_of)
    return ["  the same, run by run: median of the ratios of runs that ran back to back, both in this "
            "placement (pairs)", head] + rows


def probe_floor(samples, split, core, place):
    """Median probe (cache-line half round trip, ns) of the rows of one placement."""
    vals = [max(pr) for per in samples.values() for ms in per.values() for vs in ms.values()
            for _, pr in vs if pr and classify(pr, split, core) == place]
    return statistics.median(vals) if vals else None


def place_title(place, floor, core=None):
    text = {"near": "cores sharing a cache", "far": "cores not sharing a cache",
            "core": "one core's two hardware threads (SMT siblings)",
            "all": "all runs but one core's" if core else "all runs"}[place]
    return text + (f" (cache-line ping-pong {floor:.0f} ns)" if floor else "")


def plot(medians, out_dir, args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    written = []
    places = list(medians)
    for b in sorted({b for per in medians.values() for b in per}):
        metrics = BENCHES[b][2]
        fig, axes = plt.subplots(len(places), len(metrics), figsize=(6.5 * len(metrics), 4.5 * len(places)),
                                 squeeze=False)
        for row, place in zip(axes, places):
            for ax, (m, label, unit, higher) in zip(row, metrics):
                for n, series in medians[place].get(b, {}).get(m, {}).items():
                    pts = sorted((s, v) for s, v in series.items() if v)  # log axes: no 0
                    xs = [max(s, 0.5) for s, _ in pts]  # size 0 plotted at 0.5 on the log axis
                    ax.plot(xs, [v for _, v in pts], marker="o", markersize=3,
                            linewidth=2.2 if n == args.baseline else 1.4, label=n)
                ax.set_xscale("log", base=2)
                ax.set_yscale("log")
                ax.set_xlabel("message size (bytes; 0 B plotted at 0.5)")
                ax.set_ylabel(f"{label} [{unit}] ({'higher' if higher else 'lower'} is better)")
                ax.set_title(f"{BENCHES[b][0]}: {label}, {args.np} ranks, {place_title(place, None)}",
                             fontsize=10)
                ax.grid(True, which="both", alpha=0.3)
                ax.legend()
        fig.tight_layout()
        path = os.path.join(out_dir, f"{b}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


if __name__ == "__main__":
    sys.exit(main())
