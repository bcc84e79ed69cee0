#!/bin/bash
# In the guest (guest-outer.sh boots it): ARGS = OUT DIR...  Two hosts with one soft-RoCE
# device each; runtests per directory with an mpiexec that puts ceil(N/2) ranks on each host
# over --mca btl self,rsm (rsm's shm back end on a host, its verbs back end between); rma
# over osc rdma.  The guest's /tmp is read-only: everything written goes under $GH.
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/test/guest/guest_env.sh" xbguest 1536
. "$top/test/guest/guest_hosts.sh"
out=$1; shift
mkdir -p "$GH"
gh_up_tap 2 1
{
    echo '#!/bin/bash'
    echo 'np=1; while [ $# -gt 0 ]; do case "$1" in -n|-np) np=$2; shift 2;; *) break;; esac; done'
    echo 'k=$(( (np + 1) / 2 ))'
    printf 'exec timeout -k 5 "${MPIEXEC_TIMEOUT:-180}" mpirun'
    printf ' %q' "${GH_MPIRUN[@]}"
    echo ' -np $np --oversubscribe --host h0:$k,h1:$k --mca pml ob1 --mca btl self,rsm $MPICH_TEST_MCA "$@"'
} > "$GH/mpiexec"
chmod +x "$GH/mpiexec"
export MPITEST_RUN_INDIVIDUAL=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for d in "$@"; do
    export MPICH_TEST_MCA=
    [ "$d" = rma ] && export MPICH_TEST_MCA="--mca osc rdma --mca osc_rdma_btls rsm"
    echo "=== dir $d start $(date +%T)"
    (cd "$out/test/mpi/$d" && ../runtests -srcdir=. -tests=testlist -mpiexec="$GH/mpiexec" \
        -tapfile="$GH/$d.tap" > "$GH/$d.log" 2>&1)
    echo "=== dir $d end $(date +%T): $(grep -c '^ok' "$GH/$d.tap") ok, $(grep -c '^not ok' "$GH/$d.tap") not ok"
    grep -E '^(not )?ok' "$GH/$d.tap" | sed "s/^/[$d] /"
    awk '/^not ok/{p=1} /^ok/{p=0} p' "$GH/$d.tap" | head -400 | sed "s/^/[$d-fail] /"
done
tap_done
