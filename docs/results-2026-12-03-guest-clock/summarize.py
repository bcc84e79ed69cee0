#!/usr/bin/env python3
"""Per file of syscalls-guest.sh: the 8-byte half round trip of the 12,000-iteration jobs and
the system calls a round trip costs ((12,000 - 2,000 iterations) / 10,000), per transport."""
import sys, re
from collections import defaultdict
for f in sys.argv[1:]:
    d=defaultdict(dict); lat=defaultdict(list); cur=None
    for line in open(f):
        line=line.strip()
        m=re.match(r'=== (\S+) (\d+) (\d+)', line)
        if m: cur=(m.group(1),int(m.group(2)),int(m.group(3))); continue
        if cur and line.startswith('8 '): 
            if cur[1]==12000: lat[cur[0]].append(float(line.split()[1]))
        m=re.match(r'(\d+),,([^:,]+):([^,]+),', line)
        if cur and m: d[cur][m.group(3)]=int(m.group(1))
    print(f)
    for t in ('rsm','ucx','tcp'):
        per=[]
        for r in (1,2):
            a,b=d.get((t,2000,r)),d.get((t,12000,r))
            if a and b: per.append({k:(b[k]-a[k])/10000 for k in ('sys_enter_clock_gettime','sys_enter_write','sys_enter_poll','sys_enter')})
        print("  %-4s latency 8 B (12000 it): %s us; per round trip: clock_gettime %s, write %s, all syscalls %s" % (t, lat[t], [round(p['sys_enter_clock_gettime'],2) for p in per],[round(p['sys_enter_write'],2) for p in per],[round(p['sys_enter'],2) for p in per]))
