#!/usr/bin/env python3
"""placemed.py BENCH METRIC T1,T2,... SAMPLES...: per placement (SMT siblings, near, far, by each
sample's two cache-line probes, which must agree) and size, the median over several
invocations of bench/compare.py (their samples.json files, or the directories holding
them), and each transport's ratio to T1.  METRIC: mbps (bw, bibw) or latency_us."""
import json, os, statistics as st, sys
bench, metric, trs = sys.argv[1], sys.argv[2], sys.argv[3].split(',')
agg = {}
for d in sys.argv[4:]:
    s = json.load(open(os.path.join(d, 'samples.json') if os.path.isdir(d) else d))
    split, core = s['placement_split_ns'], s['placement_core_ns']
    pl = lambda x: 'smt' if x < core else 'near' if x < split else 'far'
    for k, v in s['samples'].items():
        b, t = k.split('/', 1)
        if b != bench or t not in trs:
            continue
        for size, m in v.items():
            for val, probe in m.get(metric, []):
                if not probe or pl(probe[0]) != pl(probe[1]):
                    continue
                agg.setdefault((pl(probe[0]), t, int(size)), []).append(val)
for place in ['smt', 'near', 'far']:
    sizes = sorted({s for (p, t, s) in agg if p == place})
    if not sizes:
        continue
    print(f"{place}: {bench} {metric}, median (runs)")
    print('%10s' % 'size' + ''.join('%18s' % t for t in trs) + '   ' + ' '.join(f'{t}/{trs[0]}' for t in trs[1:]))
    for s in sizes:
        meds = [st.median(agg[(place, t, s)]) if agg.get((place, t, s)) else None for t in trs]
        cells = ''.join('%18s' % (f"{m:.4g} ({len(agg[(place, t, s)])})" if m is not None else '-') for m, t in zip(meds, trs))
        ratios = ' '.join(('%.2f' % (m / meds[0])) if m and meds[0] else '-' for m in meds[1:])
        print('%10d' % s + cells + '   ' + ratios)
