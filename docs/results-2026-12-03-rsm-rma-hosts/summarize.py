#!/usr/bin/env python3
"""Tables of raw.txt (osu-onesided-guest.sh): per benchmark and size, each transport's
runs and their median, and rsm's ratio to the others (latency: lower is better; bandwidth:
higher)."""
import re
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)        # (bench, size, transport) -> values
cur = None
for line in open(sys.argv[1] if len(sys.argv) > 1 else "raw.txt"):
    m = re.match(r"^=== (\S+) (\S+) (\d+)$", line.strip())
    if m:
        cur = (m.group(1), m.group(2))
        continue
    if line.startswith("=== end"):
        cur = None
        continue
    f = line.split()
    if cur and len(f) == 2 and re.match(r"^\d+$", f[0]):
        runs[(cur[1], int(f[0]), cur[0])].append(float(f[1]))
    elif cur and len(f) == 1 and re.match(r"^\d+\.\d+$", f[0]):   # fop: one value
        runs[(cur[1], 8, cur[0])].append(float(f[0]))
transports = ["rsm", "rsm-pt2pt", "ucx"]
for bench in sorted({k[0] for k in runs}):
    unit = "MB/s" if bench.endswith("_bw") else "us"
    print(f"\n## {bench} ({unit}; runs, median)\n")
    print("| size | " + " | ".join(transports) + " | rsm / rsm-pt2pt | rsm / ucx |")
    print("| --- |" + " --- |" * (len(transports) + 2))
    for size in sorted({k[1] for k in runs if k[0] == bench}):
        med = {t: statistics.median(runs[(bench, size, t)]) for t in transports if runs[(bench, size, t)]}
        cells = [", ".join(f"{v:g}" for v in runs[(bench, size, t)]) + f" ({med[t]:.4g})" if t in med else "-"
                 for t in transports]
        r = lambda o: f"{med['rsm'] / med[o]:.2f}" if "rsm" in med and o in med and med[o] else "-"
        print(f"| {size} | " + " | ".join(cells) + f" | {r('rsm-pt2pt')} | {r('ucx')} |")
