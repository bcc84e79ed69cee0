#!/bin/bash
# A component built for another Open MPI release must refuse to open with a
# message naming both releases, and the job must go on without it.
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d /tmp/xb-vercheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
libdir=$(mpicc --showme:libdirs | awk '{print $1}')
export PKG_CONFIG_PATH=$libdir/pkgconfig
running=$(pkg-config --modversion opal)
build_for() { # VERSION: a component whose config header claims that release
    mkdir -p "$tmp/$1"
    printf '#define XBTL_BUILT_OMPI_VERSION "%s"\n#define XBTL_HELP_DIR "%s"\n' "$1" "$TOP_SRCDIR/common" \
        > "$tmp/$1/xbtl_config.h"
    gcc -shared -fPIC -fvisibility=hidden -Wl,--no-undefined -o "$tmp/$1/mca_btl_xbcheck.so" \
        -I"$tmp/$1" -I"$TOP_SRCDIR/common" $(pkg-config --cflags opal) \
        "$TOP_SRCDIR/test/build/xbcheck_component.c" "$TOP_SRCDIR/common/xbtl_compat.c" \
        "$TOP_SRCDIR/common/xbtl_version.c" $(pkg-config --libs opal)
}
run_with() { # DIR [NP]: a job asking for the component in DIR
    run_mpi 60 -np "${2:-1}" --bind-to none --mca mca_base_component_path "$1:$libdir/openmpi3:$libdir/openmpi" \
        --mca pml ob1 --mca btl self,vader,xbcheck "$TOP_BUILDDIR/test/mpi/mpi_p2p" -M 64 2>&1
}
check "a test component builds for a claimed release 4.0.9" build_for 4.0.9
out=$(run_with "$tmp/4.0.9"); rc=$?
grep -q "was built against Open MPI 4.0.9, but this" <<< "$out" && grep -q "running Open MPI $running" <<< "$out"
check "opening it prints the readable mismatch message naming 4.0.9 and $running" [ $? -eq 0 ]
echo "$out" | head -12 | diag
check "the job still runs (exit $rc) without the refused component" [ "$rc" -eq 0 ]
n=$(run_with "$tmp/4.0.9" 2 | grep -c "was built against Open MPI 4.0.9")
check "with 2 ranks on one node the message appears once, not per rank ($n)" [ "$n" -eq 1 ]
check "a test component builds for the running release $running" build_for "$running"
out=$(run_with "$tmp/$running")
check "built for the running release, it opens without a mismatch message" \
    bash -c '! grep -q "was built against" <<< "$1"' _ "$out"
tap_done
