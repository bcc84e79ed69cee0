#!/bin/bash
# bench/compare.py between virtual hosts with the ranks placed against the hosts' receive
# steering (--cluster-cpus): the pinning wrapper (bench/pin_rank.sh) puts each rank on the
# CPU it is given, and a short pinned comparison of pmeth and tcp runs, names where its
# ranks and the raw-frame floor ran, and measures that floor.  (What each placement costs
# is measured by benchmarks, not here.)
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
ompi_info 2>/dev/null | grep -q "MCA btl: pmeth" || { echo "# btl pmeth is not installed (contrib/setup)"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "# one CPU: nothing to place"; exit 77; }
vc_setup tcmpc
VC_TMP=$(mktemp -d /tmp/xbvc-tcmpc.XXXXXX)

# the wrapper: rank r on the r-th CPU of XB_PIN_CPUS, whatever mpirun bound it to
vc create pair --links 1 --rate 0 >/dev/null || { not_ok "vcluster create pair"; tap_done; exit; }
vc_mpirun --mca btl self,tcp -x XB_PIN_CPUS=1,0 -- "$TOP_SRCDIR/bench/pin_rank.sh" \
    /bin/sh -c 'echo "rank $OMPI_COMM_WORLD_RANK $(grep Cpus_allowed_list /proc/self/status | cut -f2)"' \
    > "$VC_TMP/pin" 2>&1
check "bench/pin_rank.sh with XB_PIN_CPUS=1,0 runs rank 0 on CPU 1 and rank 1 on CPU 0 ($(grep '^rank' "$VC_TMP/pin" | sort | tr '\n' ' '))" \
    bash -c "grep -qx 'rank 0 1' '$VC_TMP/pin' && grep -qx 'rank 1 0' '$VC_TMP/pin'"
vc destroy >/dev/null

# compare.py makes (and removes) a cluster of its own; meanwhile, every 20 ms, the CPUs the
# benchmark's ranks and the floor's two ends may run on (a rank starts on both CPUs and is
# pinned when pin_rank.sh execs it: every xb-latency process must show one)
out=$VC_TMP/cmp
( while :; do
      for p in $(pgrep -x xb-latency) $(pgrep -x pmeth_floor); do
          c=$(cat /proc/"$p"/comm 2>/dev/null) && a=$(grep Cpus_allowed_list /proc/"$p"/status 2>/dev/null | cut -f2) &&
              [ -n "$a" ] && echo "$c $p $a"
      done
      sleep 0.02
  done ) > "$VC_TMP/cpus" 2>/dev/null &
sampler=$!
if xb_limit -t 300 -- env TOP_BUILDDIR="$TOP_BUILDDIR" /usr/bin/python3 "$TOP_SRCDIR/bench/compare.py" \
        --cluster "pair --links 1 --rate 0 --mtu 9000" --cluster-cpus peer --bench latency,bibw \
        --sizes 8:8 --repeats 1 --no-plots --out "$out" > "$VC_TMP/cmp.log" 2>&1; then
    ok "compare.py --cluster ... --cluster-cpus peer ran pmeth and tcp"
else
    not_ok "compare.py --cluster ... --cluster-cpus peer"; tail -20 "$VC_TMP/cmp.log" | diag
fi
kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
seen=$(sort -u "$VC_TMP/cpus" | awk '{ print $1, $3 }' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
check "the ranks and the floor's ends ran pinned: every xb-latency and pmeth_floor process seen on one CPU, both CPUs used (${seen:-none seen})" \
    bash -c "f='$VC_TMP/cpus'; grep -q '^xb-latency ' \$f && grep -q '^pmeth_floor ' \$f &&
             ! awk '\$3 !~ /^[0-9]+\$/' \$f | grep -q . &&
             awk '\$1 == \"xb-latency\" { c[\$3] = 1 } END { exit !(c[0] && c[1]) }' \$f"
# vcluster steers n0's received frames to CPU 0 and n1's to CPU 1: 'peer' swaps them
check "the report says where: rank 0 and n0's floor end on CPU 1, rank 1 and n1's on CPU 0" \
    grep -q "^# cluster CPUs (peer): rank 0 and the floors' n0 end on CPU 1, rank 1 and n1's on CPU 0" "$out/table.txt"
# every transport's 8 B figure, whatever placement its run drew: the host moves the vCPUs
# between runs, so one placement's row of table.txt may hold only some of them
eight() {  # bench transport... -> "transport value" per transport, value '-' when none
    /usr/bin/python3 - "$out/samples.json" "$@" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["samples"]
b = sys.argv[2]
for n in sys.argv[3:]:
    v = [x for m in s.get(f"{b}/{n}", {}).get("8", {}).values() for x, _ in m]
    print(n, f"{v[0]:.3g}" if v and v[0] > 0 else "-")
PY
}
lat=$(eight latency pmeth tcp-eth raw-floor 2>&1 | tr '\n' ' ')
check "8 B latency of pmeth, tcp and the raw floor measured ($lat)" \
    bash -c "[ \$(echo '$lat' | grep -o ' -' | wc -l) = 0 ] && [ \$(echo '$lat' | wc -w) = 6 ]"
bibw=$(eight bibw pmeth tcp-eth raw-floor 2>&1 | tr '\n' ' ')
check "8 B bi-directional bandwidth of pmeth and tcp, and the raw floor of a stream each way at once ($bibw)" \
    bash -c "[ \$(echo '$bibw' | grep -o ' -' | wc -l) = 0 ] && [ \$(echo '$bibw' | wc -w) = 6 ]"
check "compare.py removed its cluster" bash -c "! ip netns list | grep -q '^xbvc-xbbench-'"
tap_done
