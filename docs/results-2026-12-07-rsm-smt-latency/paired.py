import sys,statistics as st
# paired ratios: consecutive runs of A then B in the same round, same placement
A,B=sys.argv[1],sys.argv[2]
rows=[]
for f in sys.argv[3:]:
  for l in open(f):
    t,sz,rest=l.split(None,2); pr,val=rest.rsplit(' ',1); pr=eval(pr)
    rows.append((t,int(sz),pr,float(val)))
def place(pr):
    p=max(pr)
    if abs(pr[0]-pr[1])>0.3*min(pr): return None
    return 'smt' if p<42 else 'near' if p<131 else 'far'
# group by run index: consecutive lines with the same transport belong to one run (sizes)
runs=[]; cur=None
for r in rows:
    if cur is None or cur[0]!=r[0] or r[1] in cur[1]:
        cur=(r[0],{}, place(r[2])); runs.append(cur)
    cur[1][r[1]]=r[3]
ratios={}; vals={}
for i in range(len(runs)-1):
    a,b=runs[i],runs[i+1]
    if a[2] and a[2]==b[2] and {a[0],b[0]}=={A,B}:
        if a[0]==B: a,b=b,a
        for s in a[1]:
            if s in b[1]: ratios.setdefault((a[2],s),[]).append(b[1][s]/a[1][s])
for r in runs:
    if r[2]:
        for s,v in r[1].items(): vals.setdefault((r[2],s,r[0]),[]).append(v)
for k in sorted(ratios): print(k, f"{B}/{A}", len(ratios[k]), round(st.median(ratios[k]),3))
for k in sorted(vals): print(k, len(vals[k]), round(st.median(vals[k]),3))
