#!/bin/bash
# Debian's HPC Challenge (hpcc), 2 ranks over every test transport, sized to run in
# seconds.  hpcc checks its own results (HPL residuals, RandomAccess and FFT error
# counts); we assert those checks passed and read its b_eff part: ping-pong and
# natural / random ring latency and bandwidth.
. "$(dirname "$0")/../lib.sh"
command -v hpcc >/dev/null || { not_ok "hpcc installed (contrib/setup installs Debian's hpcc)"; tap_done; exit; }
work=$(mktemp -d /tmp/xb-hpcc.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$TOP_SRCDIR/test/ext/hpccinf.txt" "$work/hpccinf.txt"   # N=400, NB=40, 1 x 2 grid
while IFS=$'\t' read -r name targs; do
    rm -f "$work/hpccoutf.txt"
    # hpcc takes 1-4 s here with ~25 MiB: the limits turn a runaway into a fast failure
    out=$(cd "$work" && XB_LIMIT_VERBOSE=1 XB_JOB_MEM_MIB=2048 mpirun_np 2 180 "$targs" -- hpcc 2>&1); rc=$?
    grep '^xb_limit:' <<< "$out" | diag
    f=$work/hpccoutf.txt
    if [ "$rc" -ne 0 ] || ! grep -q 'End of HPC Challenge tests' "$f" 2>/dev/null; then
        not_ok "hpcc over $name completed (exit $rc)"; tail -20 <<< "$out" | diag; continue
    fi
    ok "hpcc over $name completed"
    passed=$(grep -cE 'PASSED' "$f"); failed=$(grep -E 'completed and failed residual checks' "$f" | grep -cvE '^\s*0 ')
    errs=$(grep -E '^Found [0-9]+ errors' "$f" | grep -cv 'Found 0 errors')
    check "hpcc over $name: $passed residual checks passed, none failed, no RandomAccess/FFT errors" \
        test "$passed" -gt 0 -a "$failed" -eq 0 -a "$errs" -eq 0
    val() { sed -n "s/^$1=//p" "$f" | head -1; }
    lat=$(val RandomlyOrderedRingLatency_usec); nat=$(val NaturallyOrderedRingBandwidth_GBytes)
    rnd=$(val RandomlyOrderedRingBandwidth_GBytes); pp=$(val AvgPingPongLatency_usec)
    if awk -v a="$lat" -v b="$nat" -v c="$rnd" -v d="$pp" 'BEGIN { exit !(a > 0 && b > 0 && c > 0 && d > 0) }'; then
        ok "hpcc b_eff over $name: ping-pong ${pp} us, random ring ${lat} us, natural ring ${nat} GB/s, random ring ${rnd} GB/s"
    else
        not_ok "hpcc b_eff over $name reported its ring and ping-pong figures"
    fi
done < <(transports test)
tap_done
