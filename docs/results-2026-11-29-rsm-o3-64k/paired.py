#!/usr/bin/env python3
"""Ratios paired by repeat, from a bench/compare.py samples file.

compare.py interleaves transports: repeat i of every transport runs back to back.  When the
host changes state during an invocation (a faster or slower period, a move between near and
far cores), the medians of two transports can come from different periods.  This prints, per
benchmark, size and placement, the median over repeats of BASE against each other transport,
taking only repeats where both runs had the same placement; > 1 means BASE did better (for
latency: other / BASE, else BASE / other), with the number of pairs and their range.

    paired.py samples.json [BASE [OTHER,OTHER...]]      (defaults: rsm, vader,ucx)
"""
import json, statistics, sys

S = json.load(open(sys.argv[1]))
split = S.get('placement_split_ns') or 120
base = sys.argv[2] if len(sys.argv) > 2 else 'rsm'
others = sys.argv[3].split(',') if len(sys.argv) > 3 else ['vader', 'ucx']
near = lambda probes: max(probes) < split
far = lambda probes: min(probes) >= split
for bench in sorted({k.split('/')[0] for k in S['samples']}):
    mine = S['samples'].get(f'{bench}/{base}')
    if not mine:
        continue
    for size, metrics in mine.items():
        for metric, runs in metrics.items():
            lower_is_better = metric.startswith('latency')
            cells = []
            for other in others:
                theirs = S['samples'].get(f'{bench}/{other}', {}).get(size, {}).get(metric)
                if not theirs:
                    continue
                for name, placed in (('near', near), ('far', far)):
                    ratios = [(ov / rv) if lower_is_better else (rv / ov)
                              for (rv, rp), (ov, op) in zip(runs, theirs) if placed(rp) and placed(op)]
                    if ratios:
                        cells.append(f'{name} vs {other}: {statistics.median(ratios):.2f} '
                                     f'({len(ratios)}: {min(ratios):.2f}-{max(ratios):.2f})')
            print(bench, metric, size, ' | '.join(cells))
