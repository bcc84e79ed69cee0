#!/usr/bin/env python3
"""Medians of OSU's one-sided bandwidth rows in a raw*.txt of osu-rails-guest.sh, per
benchmark, size and transport, and the ratio of two rails to one (MB/s)."""
import statistics
import sys
from collections import defaultdict

rows = defaultdict(list)          # (bench, size, transport) -> [MB/s]
cur = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("=== end"):
        cur = None
    elif line.startswith("=== "):
        t, b, _ = line[4:].split()
        cur = (b, t)
    elif cur and line[:1].isdigit():
        size, mbs = line.split()[:2]
        rows[(cur[0], int(size), cur[1])].append(float(mbs))
for bench in sorted({k[0] for k in rows}):
    print(f"{bench}: MB/s, medians (runs)")
    print(f"{'size':>9} {'rsm (1 rail)':>16} {'rsm-2rails':>16} {'2 rails / 1':>12}")
    for size in sorted({k[1] for k in rows if k[0] == bench}):
        one, two = rows[(bench, size, "rsm")], rows[(bench, size, "rsm-2rails")]
        m1 = statistics.median(one) if one else float("nan")
        m2 = statistics.median(two) if two else float("nan")
        print(f"{size:>9} {m1:>11.2f} ({len(one)}) {m2:>11.2f} ({len(two)}) {m2 / m1:>12.2f}")
    print()
