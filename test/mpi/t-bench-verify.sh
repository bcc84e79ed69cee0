#!/bin/bash
# Every benchmark, run with verification on over every test transport: it must
# verify all payloads, exit 0 and print one JSON row per size of its sweep.
. "$(dirname "$0")/../lib.sh"
B=$TOP_BUILDDIR/bench
# benchmark  ranks  options (small sweeps: this checks correctness, not speed)
cases=(
  "xb-latency   2 -m 0:1M -i 50 -w 5"
  "xb-bw        2 -m 1:1M -i 5 -w 1 -W 16"
  "xb-bibw      2 -m 1:1M -i 5 -w 1 -W 16"
  "xb-mbw-mr    4 -m 1:256K -i 5 -w 1 -W 8"
  "xb-halo3d    8 -m 8:64K -i 5 -w 1"
  "xb-ring      3 -m 8:256K -i 10 -w 1"
  "xb-alltoall  4 -m 1:64K -i 5 -w 1"
  "xb-dense     4 -m 1K:64K -i 5 -w 1"
)
rows_expected() { # number of sizes in MIN:MAX: 0 counts once, then powers of two
    local min=$1 max=$2 n=0 s
    [ "$min" -eq 0 ] && { n=1; min=1; }
    for ((s = 1; s <= max; s *= 2)); do [ "$s" -ge "$min" ] && n=$((n + 1)); done
    echo $n
}
tobytes() { local v=$1; case $v in *K) echo $((${v%K} << 10));; *M) echo $((${v%M} << 20));; *) echo "$v";; esac; }
while IFS=$'\t' read -r name targs; do
    for c in "${cases[@]}"; do
        read -r bench np opts <<< "$c"
        out=$(mpirun_np "$np" 300 "$targs" -- "$B/$bench" $opts 2>&1); rc=$?
        range=$(sed -E 's/.*-m ([^ ]+).*/\1/' <<< "$opts")
        want=$(rows_expected "$(tobytes "${range%%:*}")" "$(tobytes "${range##*:}")")
        rows=$(grep -c '^{.*"verified":true' <<< "$out")
        if [ "$rc" -eq 0 ] && grep -q 'all payloads verified' <<< "$out" && [ "$rows" -eq "$want" ]; then
            ok "$name: $bench on $np ranks verified $rows sizes"
        else
            not_ok "$name: $bench on $np ranks (exit $rc, $rows of $want verified rows)"
            tail -15 <<< "$out" | diag
        fi
    done
done < <(transports test)
tap_done
