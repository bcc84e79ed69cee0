#!/bin/bash
# OSU 7.4's one-sided benchmarks over several transports, interleaved, ROUNDS rounds;
# prints every run's rows to $OUT/raw/ and the medians with ratios to $OUT/table.txt.
# usage: OSU=/path/to/osu-7.4/c/mpi/one-sided OUT=dir [BENCHES="osu_get_bw ..."] osu-onesided.sh [ROUNDS]
# Transports: vader and rsm over osc rdma (Debian's default osc), pml ucx with osc ucx
# (Debian's configuration turns osc ucx off: named here), and rsm as it was before
# btl_rsm_rma (RSM_OLD_PATH: an Open MPI component directory holding the old
# mca_btl_rsm.so) with osc pt2pt, the only way windows worked over it then.
set -u
ROUNDS=${1:-3}
: "${OSU:?set OSU to the c/mpi/one-sided directory of OSU 7.4}" "${OUT:?set OUT}"
mkdir -p "$OUT/raw"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
declare -A T=(
  [vader]="--mca pml ob1 --mca btl self,vader"
  [ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca osc ucx"
  [rsm]="--mca pml ob1 --mca btl self,rsm"
)
order=(vader ucx rsm)
if [ -n "${RSM_OLD_PATH:-}" ]; then
  T[rsm-old-pt2pt]="--mca pml ob1 --mca btl self,rsm --mca osc pt2pt --mca mca_base_component_path $RSM_OLD_PATH"
  order+=(rsm-old-pt2pt)
fi
BENCHES=${BENCHES:-"osu_put_latency osu_get_latency osu_put_bw osu_get_bw osu_acc_latency osu_get_acc_latency osu_fop_latency osu_cas_latency"}
for r in $(seq 1 "$ROUNDS"); do
  for b in $BENCHES; do
    # rotate the order each round so no transport always runs first
    n=${#order[@]}
    for i in $(seq 0 $((n - 1))); do
      t=${order[$(( (i + r) % n ))]}
      # shellcheck disable=SC2086
      timeout 300 mpirun -np 2 --bind-to core ${T[$t]} "$OSU/$b" -w create -s flush -m 1:1048576 -i 2000 -x 200 \
        > "$OUT/raw/$b.$t.$r" 2>&1 || echo "# $b over $t round $r: exit $?" >> "$OUT/raw/failures"
    done
  done
done
python3 - "$OUT" "$BENCHES" "${order[@]}" <<'PY'
import sys, os, statistics as st, re
out, benches, order = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
lines = []
for b in benches:
    vals = {}
    for t in order:
        for f in os.listdir(os.path.join(out, 'raw')):
            if f.startswith(b + '.' + t + '.') and f.count('.') == 2:
                for l in open(os.path.join(out, 'raw', f)):
                    p = l.split()
                    if len(p) == 2 and re.match(r'^\d+$', p[0]):
                        try: vals.setdefault((int(p[0]), t), []).append(float(p[1]))
                        except ValueError: pass
    sizes = sorted({s for s, _ in vals})
    unit = 'MB/s (higher is better)' if b.endswith('_bw') else 'us (lower is better)'
    lines.append(f'\n{b}: {unit}; median of the rounds (runs)')
    lines.append('  size ' + ''.join(f'{t:>16s}' for t in order) + ''.join(f'{"rsm/" + t:>20s}' for t in order if t != 'rsm'))
    for s in sizes:
        med = {t: st.median(vals[(s, t)]) if (s, t) in vals else float('nan') for t in order}
        row = f'{s:6d} ' + ''.join(f'{med[t]:12.2f} ({len(vals.get((s, t), []))})' for t in order)
        row += ''.join(f'{med["rsm"] / med[t]:20.2f}' for t in order if t != 'rsm')
        lines.append(row)
open(os.path.join(out, 'table.txt'), 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
PY
