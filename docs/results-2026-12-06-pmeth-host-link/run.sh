#!/bin/bash
# The runs of README.md here: windows of 2 ranks a host across 2 virtual hosts with a
# shared-memory BTL beside pmeth (IMB-RMA with its checks, mpi4py's suite), and the host
# link's speed between 2 ranks of one host beside tcp's loopback and vader.
#   IMB=/path/to/IMB-RMA (legacy src_c built with CHECK) M4PY=/path/to/mpi4py-3.1.4 ./run.sh
# Run from the top of the tree, as root (MPI runs as root here), nothing else running.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
VC=$PWD/contrib/vcluster/vcluster; B=$PWD/build/bench; OUT=${OUT:-/tmp/pmeth-host-link}
mkdir -p "$OUT"
$VC create pair --name hlrun --links 1 --mtu 9000 --rate 0 --force >/dev/null || exit 1
trap '$VC destroy --name hlrun >/dev/null' EXIT
run() { $VC mpirun --name hlrun --timeout 600 "$@"; }
if [ -n "${IMB:-}" ]; then
    for btls in self,vader,pmeth self,rsm,pmeth; do
        run --ppn 2 --mca btl $btls -- "$IMB" -npmin 4 -msglog 0:16 -iter 50 -time 2 \
            >"$OUT/imb-$btls.txt" 2>&1; echo "IMB-RMA $btls: exit $?"
    done
    run --ppn 2 --mca btl self,vader,pmeth --mca btl_pmeth_host_link 0 -- "$IMB" -npmin 4 \
        -msglog 0:4 All_put_all >"$OUT/imb-no-host-link.txt" 2>&1; echo "IMB-RMA without: exit $?"
fi
if [ -n "${M4PY:-}" ]; then
    for btls in self,vader,tcp self,vader,pmeth; do
        rm -rf "$OUT/m4py-$btls"
        (cd "$M4PY" && run --ppn 2 --mca btl $btls --mpirun-args "--output-filename $OUT/m4py-$btls" \
            -- /usr/bin/python3 test/runtests.py --no-builddir -e test_spawn -e test_dynproc) \
            >/dev/null 2>&1
        echo "mpi4py $btls: $(cat "$OUT/m4py-$btls"/*/rank.0/stderr | grep -E '^(OK|FAILED)')"
    done
fi
for round in 1 2 3; do
    for btls in self,pmeth self,tcp self,vader; do
        echo "round $round $btls"
        run --nodes 0 --ppn 2 --mca btl $btls -- $B/xb-latency -m 8:65536 -i 2000 | grep '^{'
        run --nodes 0 --ppn 2 --mca btl $btls -- $B/xb-bw -m 1M:1M -i 50 | grep '^{'
    done
done >"$OUT/one-host.jsonl" 2>/dev/null
echo "one host: $OUT/one-host.jsonl"
