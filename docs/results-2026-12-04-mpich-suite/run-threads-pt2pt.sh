#!/bin/bash
# MPICH's threads/pt2pt (MPI_THREAD_MULTIPLE; one level deeper than run.sh reaches) over
# self,rsm and then self,vader on one host, one TAP file each:
#   OUT=/tmp/mpich ./build.sh && make -k -j2 -C /tmp/mpich/test/mpi/threads
#   OUT=/tmp/mpich ./run-threads-pt2pt.sh
OUT=${OUT:-/tmp/mpich}
M=$(cd "$(dirname "$0")" && pwd)/mpiexec-host
export MPITEST_RUN_INDIVIDUAL=1      # one mpiexec per test, as run.sh
cd "$OUT/test/mpi/threads/pt2pt" || exit 1
for tag in rsm vader; do
    export MPICH_TEST_MCA="--mca pml ob1 --mca btl self,$tag"
    start=$SECONDS
    ../../runtests -srcdir=. -tests=testlist -mpiexec="$M" -tapfile="$OUT/threads-pt2pt-$tag.tap" \
        > "$OUT/threads-pt2pt-$tag.log" 2>&1
    echo "threads/pt2pt $tag: $(grep -c '^ok' "$OUT/threads-pt2pt-$tag.tap") ok," \
         "$(grep -c '^not ok' "$OUT/threads-pt2pt-$tag.tap") not ok in $((SECONDS - start)) s"
done
