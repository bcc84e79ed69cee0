#!/bin/bash
# Run MPICH's tests (built by build.sh) directory by directory, one TAP file each.
#   OUT=/tmp/mpich ./run.sh TAG MPIEXEC DIR...
# with MPICH_TEST_MCA (mpiexec-host) or MPICH_TEST_BTL (mpiexec-vcluster) set, e.g.
#   MPICH_TEST_MCA="--mca pml ob1 --mca btl self,rsm" ./run.sh rsm "$PWD/mpiexec-host" pt2pt coll
#   MPICH_TEST_MCA="--mca pml ob1 --mca btl self,rsm --mca osc rdma --mca osc_rdma_btls rsm" \
#       ./run.sh rsm-oscrdma "$PWD/mpiexec-host" rma
#   vcluster create pair --name mt --links 1 --rate 0 --mtu 9000
#   XBVC_NAME=mt MPICH_TEST_BTL=self,vader,pmeth ./run.sh pmeth "$PWD/mpiexec-vcluster" pt2pt
# then ./failures.sh TAG1 TAG2 DIR... lists the tests that fail under one and not the other.
OUT=${OUT:-/tmp/mpich}
tag=$1 mpiexec=$2; shift 2
export MPITEST_RUN_INDIVIDUAL=1      # one mpiexec per test, not run_mpitests' batches
for d in "$@"; do
    (cd "$OUT/test/mpi/$d" && ../runtests -srcdir=. -tests=testlist -mpiexec="$mpiexec" \
        -tapfile="$OUT/$d-$tag.tap" > "$OUT/$d-$tag.log" 2>&1)
    echo "$d $tag: $(grep -c '^ok' "$OUT/$d-$tag.tap") ok, $(grep -c '^not ok' "$OUT/$d-$tag.tap") not ok"
done
