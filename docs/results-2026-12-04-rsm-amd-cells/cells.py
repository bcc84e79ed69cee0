#!/usr/bin/env python3
"""Cells where a transport is below the better of the others, from the medians of a
bench/compare.py samples.json, per placement (a cell within 0.5% counts as at or above).
  ./cells.py results/X/samples.json [NAME [OTHER,OTHER]]     (default: rsm against vader,ucx)
The ratio printed is NAME's over the best (bandwidth) or the best's over NAME's (latency):
below 1 is a miss either way.  Medians of runs of one placement; a cell of few runs (the
counts are in compare.py's table) says little on a machine whose placement changes."""
import json, sys
d = json.load(open(sys.argv[1]))
me = sys.argv[2] if len(sys.argv) > 2 else "rsm"
others = (sys.argv[3] if len(sys.argv) > 3 else "vader,ucx").split(",")
higher = {"latency_us": False, "mbps": True}
for place, benches in d["medians"].items():
    total = ok = 0; miss = []
    for b, ms in benches.items():
        for m, tr in ms.items():
            if m not in higher or me not in tr: continue
            for s, v in tr[me].items():
                ov = [tr[o].get(s) for o in others if o in tr and tr[o].get(s)]
                if v is None or not ov: continue
                best = max(ov) if higher[m] else min(ov)
                r = v / best if higher[m] else best / v
                total += 1
                if r >= 0.995: ok += 1
                else: miss.append(f"{b} {s} {r:.2f}")
    print(f"{place}: {ok} of {total} cells >= best (within 0.5%); misses: " + "; ".join(miss))
