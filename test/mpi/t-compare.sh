#!/bin/bash
# The comparison runner (bench/compare.py): a short real run over vader and rsm whose
# rows carry the placement probe and whose report names the host; --merge of two results;
# and the near/far split on samples whose probes are bimodal (written here, since the host
# picks the placement).
. "$(dirname "$0")/../lib.sh"
CMP=$TOP_SRCDIR/bench/compare.py
PY=/usr/bin/python3
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

if xb_limit -t 600 -- env TOP_BUILDDIR="$TOP_BUILDDIR" $PY "$CMP" --bench latency,bw --transports vader,rsm --sizes 8:64K \
        --repeats 2 --no-plots --out "$work/a" > "$work/a.log" 2>&1; then
    ok "compare.py ran latency and bw over vader and rsm"
else
    not_ok "compare.py run"; tail -20 "$work/a.log" | diag
fi
check "every timed row carries two positive probes" $PY - "$work/a/samples.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
vals = [x for per in d["samples"].values() for ms in per.values() for vs in ms.values() for x in vs]
sys.exit(0 if vals and all(x[1] and len(x[1]) == 2 and min(x[1]) > 0 for x in vals) else 1)
PYEOF
# (the rate on two CPUs at once only where this process may run on two)
check "the report names the host: CPU, last-level cache, copy rate on one CPU and on two at once" \
    grep -qE '^# host: .+, [0-9]+ CPUs, .+; copying 2 MiB: [0-9.]+ GB/s on one CPU alone(, [0-9.]+ and [0-9.]+ GB/s on two at once)?$' "$work/a/table.txt"
# The host may run vader's runs and rsm's in different placements, so a size may lack a pair
# in one table: every size must have both transports' medians somewhere (or the report must
# say that the transport's samples there were taken while the placement changed), and every
# ratio shown must be their quotient.
check "every size 8 B..64 KiB has both medians, and each ratio is rsm/vader" $PY - "$work/a/table.txt" <<'PYEOF'
import re, sys
seen, bad, mixed = {}, 0, set()
for line in open(sys.argv[1]):
    if "taken while the placement changed" in line:
        mixed = {w.split()[0] for w in line.split(": ", 1)[1].split(", ")}
    m = re.match(r"^ +(\d+) +(\S+) \(\d+\) +(\S+) \(\d+\) +(\S+)$", line)
    if not m:
        continue
    size, v, r, ratio = int(m[1]), m[2], m[3], m[4]
    seen.setdefault(size, set()).update(x for x, val in (("vader", v), ("rsm", r)) if val != "-")
    if "-" not in (v, r, ratio) and float(v) > 0 and abs(float(r) / float(v) - float(ratio)) > 0.011 + 0.01 * float(ratio):
        bad += 1
sizes = [8 << i for i in range(14)]
sys.exit(0 if not bad and all(seen.get(s, set()) | mixed >= {"vader", "rsm"} for s in sizes) else 1)
PYEOF
if xb_limit -t 120 -- $PY "$CMP" --merge "$work/a,$work/a" --bench latency,bw --transports vader,rsm --no-plots \
        --out "$work/m" > "$work/m.log" 2>&1; then
    ok "compare.py --merge of two results directories"
else
    not_ok "compare.py --merge"; tail -20 "$work/m.log" | diag
fi
check "--merge reports twice the samples of one run" $PY - "$work/a/samples.json" "$work/m/samples.json" <<'PYEOF'
import json, sys
count = lambda p: sum(len(vs) for per in json.load(open(p))["samples"].values()
                      for ms in per.values() for vs in ms.values())
a, m = count(sys.argv[1]), count(sys.argv[2])
sys.exit(0 if a > 0 and m == 2 * a else 1)
PYEOF

# the baseline: vader, or the first transport when vader is not among them (it crashed at the
# end of a run without vader); one not among them is refused before anything runs
check "without vader among the transports the baseline is the first (rsm alone); --baseline rsm beside vader divides the ratios by rsm (--merge)" \
    bash -c "$PY '$CMP' --merge '$work/a' --bench latency --transports rsm,vader --baseline rsm --no-plots --out '$work/b1' > '$work/b1.log' 2>&1 \
             && $PY '$CMP' --merge '$work/a' --bench latency --transports rsm --no-plots --out '$work/b2' > '$work/b2.log' 2>&1 \
             && grep -q 'baseline rsm' '$work/b2.log' && grep -q 'ratio = transport / rsm' '$work/b1/table.txt'"
check "a --baseline not among the transports is refused, naming it" \
    bash -c "! $PY '$CMP' --merge '$work/a' --bench latency --transports rsm --baseline tcp --no-plots --out '$work/b3' > '$work/b3.log' 2>&1 \
             && grep -q \"the baseline 'tcp' is not among the transports (rsm)\" '$work/b3.log'"

# report NAME: compare.py's report (--merge) of the latency samples S, with R repeats, that
# the Python on stdin sets; the table in $work/NAME/table.txt
report() {
    mkdir -p "$work/$1.in"
    { cat; echo 'json.dump({"repeats": R, "samples": S}, open(sys.argv[1], "w"))'; } |
        $PY - "$work/$1.in/samples.json"
    $PY "$CMP" --merge "$work/$1.in" --bench latency --transports vader,rsm --no-plots --out "$work/$1" > "$work/$1.log" 2>&1
}

# Bimodal probes: vader and rsm each have runs at ~35 ns and at ~160 ns, with latencies
# that differ by placement; the report must keep them apart and compare like with like.
report bo <<'PYEOF'
import json, sys
R = 2
S = {"latency/vader": {"8": {"latency_us": [[0.20, [35, 36]], [0.21, [34, 35]], [0.40, [160, 158]], [0.41, [161, 162]], [0.30, [35, 160]]]}},
     "latency/rsm":   {"8": {"latency_us": [[0.18, [36, 35]], [0.19, [35, 34]], [0.38, [159, 160]], [0.36, [158, 161]]]}}}
PYEOF
check "bimodal probes give a near and a far table" \
    bash -c "grep -q 'cores sharing a cache' '$work/bo/table.txt' && grep -q 'cores not sharing a cache' '$work/bo/table.txt'"
check "near compares near runs: rsm/vader 0.185/0.205 = 0.90" \
    bash -c "grep -A2 'cores sharing a cache' '$work/bo/table.txt' | grep -qE '^ +8 .* 0\.90\$'"
check "far compares far runs: rsm/vader 0.37/0.405 = 0.91" \
    bash -c "grep -A2 'cores not sharing a cache' '$work/bo/table.txt' | grep -qE '^ +8 .* 0\.91\$'"
check "a row whose probes disagree is left out (vader: 2 near runs, 2 far)" \
    bash -c "grep -A2 'cores sharing a cache' '$work/bo/table.txt' | grep -qE '^ +8 +0\.205 \(2\)'"
check "... and the report says so, naming whose it was" \
    grep -q '^# 1 sample(s) taken while the placement changed (their two probes disagree) are in no table: vader latency$' "$work/bo/table.txt"

# Far runs a minority (1 of 11, 2 of 22 probes): still split, so the one far run of vader
# does not move its near median (unsplit, vader's median of 6 would be 0.215, and rsm/vader 0.93)
MINORITY='import json, sys
R = 6
near = [[0.20, [60, 62]], [0.21, [66, 64]], [0.20, [70, 71]], [0.22, [58, 60]], [0.23, [74, 73]]]
S = {"latency/vader": {"8": {"latency_us": near + [[0.45, [235, 240]]]}},
     "latency/rsm":   {"8": {"latency_us": [[v - 0.01, p] for v, p in near]}}}'
report mo <<< "$MINORITY"
check "far runs a minority (2 of 22 probes): still a near and a far table" \
    bash -c "grep -q 'cores sharing a cache' '$work/mo/table.txt' && grep -q 'cores not sharing a cache' '$work/mo/table.txt'"
check "far runs a minority: near compares the 5 near runs alone (vader 0.21 (5), rsm/vader 0.95)" \
    bash -c "grep -A2 'cores sharing a cache' '$work/mo/table.txt' | grep -qE '^ +8 +0\.21 \(5\) .* 0\.95\$'"

# The same with one more run of rsm's whose probes (120, 125 ns) lie between the groups: no
# gap between neighbouring probes is then wider than 1.9x, and the split must hold all the same
report go <<< "$MINORITY
S[\"latency/rsm\"][\"8\"][\"latency_us\"].append([0.30, [120, 125]])"
check "a run half-way between the placements does not hide the split (vader near 0.21 (5), rsm/vader 0.95)" \
    bash -c "grep -A2 'cores sharing a cache' '$work/go/table.txt' | grep -qE '^ +8 +0\.21 \(5\) .* 0\.95\$'"
# The host changes speed between repeats: run 1 slow, runs 2-3 fast, and rsm's run 2 far.  The
# near medians then come from different periods (vader 0.20 of 3, rsm 0.225 of 2: 1.12), while
# each pair of runs that ran back to back reads 0.90; the table shows both
report sp <<'PYEOF'
import json, sys
R = 3
S = {"latency/vader": {"8": {"latency_us": [[0.30, [60, 61]], [0.20, [60, 62]], [0.20, [61, 60]]]}},
     "latency/rsm":   {"8": {"latency_us": [[0.27, [60, 61]], [0.45, [240, 238]], [0.18, [62, 60]]]}}}
PYEOF
check "a speed change between repeats: the near medians read rsm/vader 1.12" \
    bash -c "grep -A2 'cores sharing a cache' '$work/sp/table.txt' | grep -qE '^ +8 .* 1\.12\$'"
check "... and the run-by-run ratio under them 0.90 from 2 pairs (the far run of rsm has no partner)" \
    bash -c "grep -A5 'cores sharing a cache' '$work/sp/table.txt' | grep -qE '^ +8 +0\.90 \(2\)\$'"

# Runs on one core's two hardware threads (probes 42-44 ns where the near runs read 60-95):
# a table of their own, so that one such run of vader does not move its near median (with
# it, vader's near median of 6 would be 0.21 still, but rsm/vader there read 1.03 from
# rsm's run of 0.33 beside); a run whose probes straddle the cut is left out
report sm <<'PYEOF'
import json, sys
R = 7
near = [[0.20, [60, 62]], [0.21, [66, 64]], [0.20, [70, 71]], [0.22, [90, 95]], [0.23, [74, 73]]]
S = {"latency/vader": {"8": {"latency_us": near + [[0.30, [42, 43]], [0.45, [235, 240]]]}},
     "latency/rsm":   {"8": {"latency_us": [[v - 0.01, p] for v, p in near] + [[0.33, [43, 44]], [0.25, [44, 66]]]}}}
PYEOF
check "runs on one core (probes 42-44 ns, near 60-95) get a table of their own" \
    bash -c "grep -q \"one core's two hardware threads (SMT siblings) (cache-line ping-pong 44 ns)\" '$work/sm/table.txt' \
             && grep -q '^# placement: .* one core (SMT siblings) < 5[0-9] ns <= near < ' '$work/sm/table.txt'"
check "... near compares the 5 near runs alone (vader 0.21 (5), rsm/vader 0.95)" \
    bash -c "grep -A2 'cores sharing a cache' '$work/sm/table.txt' | grep -qE '^ +8 +0\.21 \(5\) .* 0\.95\$'"
check "... the one-core table compares one-core runs (rsm/vader 0.33/0.30 = 1.10); rsm's run at 44 and 66 ns is in none" \
    bash -c "grep -A2 'SMT siblings) (cache' '$work/sm/table.txt' | grep -qE '^ +8 +0\.3 \(1\) +0\.33 \(1\) +1\.10\$' \
             && grep -q 'placement changed .* in no table: rsm latency' '$work/sm/table.txt'"
check "near probes with no gap (the sets above) have no one-core table" \
    bash -c "! grep -q 'SMT' '$work/bo/table.txt' && ! grep -q 'SMT' '$work/mo/table.txt' && ! grep -q 'SMT' '$work/go/table.txt'"

# Near and far too close to split (medians 2.4x apart), far runs the majority, and a run on
# one core: the one-core group is still the 42-44 ns runs, not every near run (below 3/4 of
# the probes' median the widest gap is then the one between near and far)
report nf <<'PYEOF'
import json, sys
R = 10
near = [[0.20, [62, 64]], [0.21, [70, 68]], [0.20, [72, 73]]]
far = [[0.40, [150, 155]], [0.41, [160, 165]], [0.42, [168, 170]], [0.40, [152, 158]], [0.41, [162, 166]], [0.40, [158, 160]]]
S = {"latency/vader": {"8": {"latency_us": near + far + [[0.30, [42, 43]]]}},
     "latency/rsm":   {"8": {"latency_us": [[v - 0.01, p] for v, p in near + far] + [[0.33, [43, 44]]]}}}
PYEOF
check "near and far unsplit: the one-core table holds the two runs at 42-44 ns, not the near ones" \
    bash -c "grep -q '^# placement: .* one core (SMT siblings) < 5[0-9] ns <= the rest' '$work/nf/table.txt' \
             && grep -A2 'SMT siblings) (cache' '$work/nf/table.txt' | grep -qE '^ +8 +0\.3 \(1\) +0\.33 \(1\) +1\.10\$'"
tap_done
