#!/usr/bin/env python3
"""PNG plots of a bench/rsm-verbs-guest.sh run: one figure per benchmark found in the
guest's console (rows "row TRANSPORT REPEAT {json}"), medians over the repeats, every
transport of the run as one curve, message size on a log axis.

  bench/rsm_verbs_plot.py CONSOLE OUT_DIR [TITLE]

Needs matplotlib (Debian's python3-matplotlib, installed by contrib/setup)."""
import json
import os
import statistics
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    console, out_dir = sys.argv[1], sys.argv[2]
    title = sys.argv[3] if len(sys.argv) > 3 else "soft-RoCE in the QEMU/TCG guest"
    rows = {}
    for line in open(console, errors="replace"):
        p = line.split(None, 3)
        if len(p) == 4 and p[0] == "row" and p[3].startswith("{"):
            r = json.loads(p[3])
            if not r.get("verified", True):
                continue
            val = r.get("latency_us", r.get("mbps"))
            rows.setdefault(r["bench"], {}).setdefault(p[1], {}).setdefault(r["size"], []).append(val)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    for bench, per in sorted(rows.items()):
        lat = bench == "xb-latency"
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for t, series in sorted(per.items()):
            pts = sorted((s, statistics.median(v)) for s, v in series.items())
            ax.plot([max(s, 0.5) for s, _ in pts], [v for _, v in pts], marker="o", markersize=3,
                    label=f"{t} (median of {max(len(v) for v in series.values())})")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes; 0 B plotted at 0.5)")
        ax.set_ylabel("latency, half round trip [us] (lower is better)" if lat
                      else "bandwidth [MB/s] (higher is better)")
        ax.set_title(f"{bench}, 1 rank per host, {title}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        path = os.path.join(out_dir, f"{bench}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        print(path)


if __name__ == "__main__":
    main()
