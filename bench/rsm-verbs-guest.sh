#!/bin/bash
# btl rsm between hosts (issue 12): its verbs back end against pml ucx (UCX rc_verbs) over
# the same soft-RoCE devices, tcp over the same NICs, and the verbs floor (ib_write_lat,
# ib_write_bw), in one QEMU/TCG guest holding two hosts h0 and h1 (test/guest/).
#
#   bench/rsm-verbs-guest.sh [REPEATS] [LAT_SIZES] [BW_SIZES]      (defaults 3 0:512 4K:4M)
#   TRANSPORTS="rsm rsm-2rails ucx" BENCHMARKS="xb-bw xb-bibw" FLOORS=0 bench/rsm-verbs-guest.sh
#                                   (a subset; FLOORS=0 leaves perftest out)
#   SHAPE=120mbit XB_ARGS="-W 16 -i 5" ...   every host NIC shaped by tbf (the links, not the
#                                   emulated CPUs, bound a transfer: what striping is for)
#   RSM_BASE=DIR TRANSPORTS="rsm rsm-base" ...   an A/B against another build: DIR is a copy of
#                                   Open MPI's component directory holding that build's
#                                   mca_btl_rsm.so, under the build directory (the guest sees it)
#   PROFILE=callgrind TRANSPORTS="rsm ucx" BENCHMARKS=xb-latency FLOORS=0 bench/rsm-verbs-guest.sh 1 8:8
#                                   every rank under valgrind's callgrind: instructions per call of
#                                   the message path's functions (bench/callgrind_summary.py), which
#                                   under TCG decide a small message's time and, unlike the
#                                   timings, come out the same run after run; profiles in
#                                   $OUT/callgrind/ (about 3 minutes a job)
#   HOSTS=h0:2 TRANSPORTS="rsm vader" ...   both ranks on one host (shared memory, with the
#                                   RDMA devices present)
#
# Transports: rsm (defaults: single copy by RDMA read past the eager limit, one rail),
# rsm-2rails (the same striped over each host's two rails: btl_rsm_verbs_rails 2), rsm-2copy
# (single copy off: the pipelined two-copy path through the pool), ucx (one rail), ucx-2rails
# (pml ucx given both of a host's devices: bench/ucx_both_rails.sh), tcp, vader (with
# HOSTS=h0:2), rsm-nolisten (btl_rsm_verbs_listener 0), rsm-nodirect (btl_rsm_verbs_direct 0:
# two writes a pool message), rsm-blk4k (verbs pools of 4 KiB blocks), rsm-ackdelay
# (btl_rsm_verbs_ack_delay_us 1000: an ack write for every second pool message), rsm-base
# (rsm from RSM_BASE); the last six get a table of their own against rsm and ucx.  Each
# repeat runs, in turn, every transport's ping-pong (xb-latency), streaming (xb-bw,
# window 64) and bi-directional (xb-bibw) benchmark, 1 rank per host, payloads verified,
# then perftest's floors; the table gives medians over the repeats and rsm's ratio to ucx
# and tcp.  Everything is emulated: the guest's two vCPUs run both hosts, their NICs and
# rxe's packet processing, so these figures compare software paths under TCG, not networks.
# The guest's clock is the TSC (GUEST_KERNEL_ARGS, default "tsc=reliable clocksource=tsc";
# empty for the kernel's own choice): under TCG the kernel falls back to the HPET, every
# clock_gettime is then a system call and an emulated device read (~2 us), and Open MPI's
# opal_progress reads the clock every eighth call, which ob1's wait loop makes far more
# often per message than pml ucx's (docs/results-2026-12-03-guest-clock/).
# The guest holds /tmp/xbtl-bench.lock (guest_boot), so nothing else is measured meanwhile.
# Raw output: $OUT (default build/rsm-verbs-guest/).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
export TOP_SRCDIR=$TOP TOP_BUILDDIR=${TOP_BUILDDIR:-$TOP/build}
REPEATS=${1:-3} LAT=${2:-0:512} BW=${3:-4K:4M} XB_ARGS=${XB_ARGS:-}
OUT=${OUT:-$TOP_BUILDDIR/rsm-verbs-guest}
. "$TOP/test/lib.sh"
. "$TOP/test/guest/guest_lib.sh"
guest_require veth bridge overlay crc32_generic rdma_rxe sch_tbf
if [ "${PROFILE:-}" = callgrind ] && ! command -v valgrind > /dev/null; then
    echo "PROFILE=callgrind needs valgrind on this machine (the guest runs the host's binaries)" >&2
    exit 1
fi
mkdir -p "$OUT"
guest_prepare
export GUEST_KERNEL_ARGS=${GUEST_KERNEL_ARGS-tsc=reliable clocksource=tsc}
TRANSPORTS=${TRANSPORTS:-rsm rsm-2rails rsm-2copy ucx tcp}
BENCHMARKS=${BENCHMARKS:-xb-latency xb-bw xb-bibw}
n_jobs=$(($(wc -w <<< "$TRANSPORTS") * $(wc -w <<< "$BENCHMARKS")))
xb=${XB_ARGS// /,}
# the guest's time: about 170 s a job on a slow host (a repeat of rsm and ucx, 6 jobs and the
# floors, took 18 minutes), 300 s allowed
guest_boot $((600 + REPEATS * (n_jobs * 300 + 120))) 3072 2 "$TOP/bench/rsm_verbs_guest_bench.sh" \
    "$TOP_BUILDDIR" "$REPEATS" "$LAT" "$BW" "${TRANSPORTS// /,}" "${BENCHMARKS// /,}" "${FLOORS:-1}" \
    "${SHAPE:--}" "${xb:--}" "${HOSTS:-h0:1,h1:1}" "${RSM_BASE:--}" "${PROFILE:--}"
# the profiles travel in the console, one line each: kept apart from it
grep -v '^callgrind ' "$GUEST_WORK/out" > "$OUT/console.txt"
if [ "${PROFILE:-}" = callgrind ]; then
    mkdir -p "$OUT/callgrind"
    grep '^callgrind ' "$GUEST_WORK/out" | while read -r _ name data; do
        base64 -d <<< "$data" | gunzip > "$OUT/callgrind/$name"
    done
fi
# a guest that did not finish still has its rows summed up, and the bench exits 1
unfinished=
grep -q '^xbguest-bench-done' "$OUT/console.txt" ||
    unfinished="the guest did not finish (qemu $guest_qrc; the table has the rows it printed); see $OUT/console.txt"
grep '^# ' "$OUT/console.txt"
python3 - "$OUT/console.txt" <<'EOF'
import json, statistics, sys
rows, floors, packets = {}, {}, {}
for line in open(sys.argv[1]):
    p = line.split(None, 3)
    if len(p) == 4 and p[0] == 'row' and p[3].startswith('{'):
        r = json.loads(p[3])
        if not r.get('verified', True):
            print('UNVERIFIED row:', line.strip()); continue
        key = (r['bench'], r['size'])
        val = r.get('latency_us', r.get('mbps'))
        rows.setdefault(key, {}).setdefault(p[1], []).append(val)
    elif len(p) == 4 and p[0] == 'floor':
        floors.setdefault((p[1], int(p[2])), []).append(float(p[3]))
    elif len(p) == 4 and p[0] == '#' and p[1] == 'rxe' and p[3].startswith('xb-'):
        # "# rxe T B: rxe0.sent_pkts=N ...": the packets a job put on the wire, both hosts
        b, kv = p[3].split(':', 1)
        c = dict(x.split('=', 1) for x in kv.split() if '=' in x)
        sent = sum(int(v) for k, v in c.items() if k.endswith('.sent_pkts'))
        packets.setdefault((b, p[2]), []).append(sent)
med = lambda v: statistics.median(v) if v else float('nan')
for bench, unit in (('xb-latency', 'us (half round trip)'), ('xb-bw', 'MB/s'), ('xb-bibw', 'MB/s')):
    keys = sorted(k for k in rows if k[0] == bench)
    if not keys:
        continue
    fk = 'lat' if bench == 'xb-latency' else 'bw'
    print(f'\n{bench}, {unit}, medians of {max(len(v) for k in keys for v in rows[k].values())} repeats')
    print(f'{"size":>9} {"rsm":>10} {"rsm-2rails":>10} {"rsm-2copy":>10} {"ucx":>10} {"ucx-2rails":>10} {"tcp":>10} '
          f'{"2rails/rsm":>10} {"2rails/ucx":>10} {"2r/ucx-2r":>10} {"rsm/2copy":>9} {"rsm/ucx":>8} {"rsm/tcp":>8} {"floor":>10}')
    for k in keys:
        m = {t: med(rows[k].get(t, [])) for t in ('rsm', 'rsm-2rails', 'rsm-2copy', 'ucx', 'ucx-2rails', 'tcp')}
        fl = floors.get((fk, k[1]))
        fs = f'{med(fl):10.2f}' if fl else f'{"":>10}'
        print(f'{k[1]:>9} {m["rsm"]:10.2f} {m["rsm-2rails"]:10.2f} {m["rsm-2copy"]:10.2f} {m["ucx"]:10.2f} '
              f'{m["ucx-2rails"]:10.2f} {m["tcp"]:10.2f} {m["rsm-2rails"] / m["rsm"]:10.2f} '
              f'{m["rsm-2rails"] / m["ucx"]:10.2f} {m["rsm-2rails"] / m["ucx-2rails"]:10.2f} '
              f'{m["rsm"] / m["rsm-2copy"]:9.2f} {m["rsm"] / m["ucx"]:8.2f} {m["rsm"] / m["tcp"]:8.2f} {fs}')
# transports outside the table's columns (vader): medians and ratios to rsm and ucx
main = {'rsm', 'rsm-2rails', 'rsm-2copy', 'ucx', 'ucx-2rails', 'tcp'}
extra = sorted({t for v in rows.values() for t in v} - main)
for t in extra:
    print(f'\n{t}: medians, and ratios to rsm and to ucx (latency: lower is better)')
    print(f'{"bench":>11} {"size":>9} {t:>12} {"rsm":>10} {"ucx":>10} {t + "/rsm":>14} {"rsm/ucx":>8} {t + "/ucx":>14}')
    for k in sorted(k for k in rows if t in rows[k]):
        m = {x: med(rows[k].get(x, [])) for x in (t, 'rsm', 'ucx')}
        print(f'{k[0]:>11} {k[1]:>9} {m[t]:12.2f} {m["rsm"]:10.2f} {m["ucx"]:10.2f} '
              f'{m[t] / m["rsm"]:14.2f} {m["rsm"] / m["ucx"]:8.2f} {m[t] / m["ucx"]:14.2f}')
if packets:
    # deterministic where the timings are not: the same job sends the same packets each run
    print('\npackets every rxe device sent in a job (all its sizes and iterations), medians, and ratios to ucx')
    for b in sorted({k[0] for k in packets}):
        u = med(packets.get((b, 'ucx'), []))
        for t in sorted(t for (bb, t) in packets if bb == b):
            v = packets[(b, t)]
            print(f'{b:>11} {t:>13} {med(v):10.0f} (runs {min(v)}-{max(v)}) {med(v) / u:8.3f}')
print('\nfloor: perftest on the same devices (ib_write_lat typical us; ib_write_bw average MB/s)')
print('lower is better for latency, higher for bandwidth; ratios are the first / the second; rsm-2rails is '
      'rsm with btl_rsm_verbs_rails 2 (reads of 64 KiB or more striped over both rails); rsm-2copy is rsm '
      'with btl_rsm_verbs_single_copy_min SIZE_MAX (every message through the pool); ucx-2rails is pml ucx '
      'with both devices of each host (rxeI:1,rxsI:1); nan: not run')
EOF
# PNG plots of the medians (matplotlib: Debian's python3-matplotlib)
for py in python3 /usr/bin/python3; do
    if "$py" -c 'import matplotlib' 2>/dev/null; then
        "$py" "$TOP/bench/rsm_verbs_plot.py" "$OUT/console.txt" "$OUT" | sed 's/^/plot: /'
        break
    fi
done
if [ "${PROFILE:-}" = callgrind ]; then
    if command -v callgrind_annotate > /dev/null; then
        python3 "$TOP/bench/callgrind_summary.py" "$OUT"/callgrind/cg.*
    else
        echo "callgrind_annotate (valgrind) is not installed here: profiles left in $OUT/callgrind/"
    fi
fi
[ -z "$unfinished" ] || { echo "$unfinished"; exit 1; }
