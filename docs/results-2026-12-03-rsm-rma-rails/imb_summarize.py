#!/usr/bin/env python3
"""Per job of imb-rma-check-guest.txt: the benchmarks, their rows and the sum of the
"defects" column (IMB-RMA built with -DCHECK verifies every transfer)."""
import sys, re
cur=None; bench=None; stats={}
for line in open(sys.argv[1]):
    line=line.rstrip()
    if line.startswith('=== np'): cur=line[4:]; stats[cur]={'rows':0,'defects':0,'benches':set(),'nodef':0}; continue
    if line.startswith('=== end'): stats[cur]['end']=line[8:]; cur=None; continue
    if cur is None: continue
    m=re.match(r'# Benchmarking (\S+)', line)
    if m: bench=m.group(1); stats[cur]['benches'].add(bench); continue
    if re.search(r'defects', line): continue   # a table's heading
    p=line.split()
    if p and p[0].isdigit() and len(p)>=3:
        stats[cur]['rows']+=1
        try: stats[cur]['defects']+=float(p[-1])
        except ValueError: stats[cur]['nodef']+=1; stats[cur]['rows']-=1   # IMB's "time-out." line
for k,v in stats.items():
    print(k, '| benchmarks', len(v['benches']), '| rows', v['rows'], '| defects sum', v['defects'],
          '| sizes IMB stopped at (its time limit)', v['nodef'], '|', v.get('end'))
