#!/bin/bash
# configure: clear, actionable errors when Open MPI's headers are missing or are
# not 4.1 / BTL 3.1; the install layout (system and per-user), link flags and
# exported symbols of what it builds.
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d /tmp/xb-configure.XXXXXX)
trap '[ "$tap_failed" -eq 0 ] && rm -rf "$tmp" || echo "# kept $tmp for inspection"' EXIT
cfg="$TOP_SRCDIR/configure"
[ -x "$cfg" ] || { not_ok "configure exists (run contrib/setup)"; tap_done; exit; }

# 1. no Open MPI development files where we are told to look
mkdir -p "$tmp/b1" && cd "$tmp/b1"
out=$("$cfg" --with-ompi="$tmp/nonexistent" 2>&1); rc=$?
check "configure fails without Open MPI's headers (exit $rc)" [ "$rc" -ne 0 ]
check "...saying which package to install" grep -q "apt-get install libopenmpi-dev" <<< "$out"

# 2. an Open MPI that claims to be 5.0 with another BTL interface
fake=$tmp/fake
mkdir -p "$fake/pkgconfig" "$fake/include/opal/mca/btl"
for pc in opal ompi-c; do
    printf 'Name: %s\nDescription: fake\nVersion: 5.0.0\nCflags: -I%s/include\nLibs:\n' "$pc" "$fake" > "$fake/pkgconfig/$pc.pc"
done
printf '#define OPAL_MAJOR_VERSION 5\n#define OPAL_MINOR_VERSION 0\n#define OPAL_RELEASE_VERSION 0\n' > "$fake/include/opal_config.h"
printf '#define BTL_VERSION 400\n' > "$fake/include/opal/mca/btl/btl.h"
mkdir -p "$tmp/b2" && cd "$tmp/b2"
out=$("$cfg" --with-ompi="$fake" 2>&1); rc=$?
check "configure refuses an Open MPI that is not 4.1 (exit $rc)" [ "$rc" -ne 0 ]
check "...explaining it needs Open MPI 4.1 with BTL API 3.1" grep -q "written for Open MPI 4.1 and its BTL API 3.1" <<< "$out"

# 3. the real one: default install goes into Open MPI's own component directory
mkdir -p "$tmp/b3" && cd "$tmp/b3"
"$cfg" -q > configure.log 2>&1
check "configure succeeds against the system Open MPI" [ $? -eq 0 ]
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
check "components go to Open MPI's pkglibdir ($pkglibdir) by default" grep -q "components into *: $pkglibdir\$" configure.log
make -s -j2 > make.log 2>&1 && make -s install DESTDIR="$tmp/stage" > install.log 2>&1
check "make and make install DESTDIR=... succeed" [ $? -eq 0 ]
sos=$(ls "$tmp/stage$pkglibdir"/mca_btl_*.so 2>/dev/null)
check "installed components: $(basename -a $sos 2>/dev/null | tr '\n' ' ')" [ -n "$sos" ]
check "no libtool .la files beside them" [ -z "$(ls "$tmp/stage$pkglibdir"/*.la 2>/dev/null)" ]
for so in $sos; do
    n=$(basename "$so" .so)
    needed=$(readelf -d "$so" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
    check "$n links libopen-pal and no MPI or RTE library ($needed)" \
        bash -c 'grep -q libopen-pal <<< "$1" && ! grep -qE "libmpi|libopen-rte" <<< "$1"' _ "$needed"
    exported=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$' | tr '\n' ' ')
    check "$n exports only its component symbol (exports: $exported)" [ "$exported" = "${n}_component " ]
done

# 4. per-user install: ~/.openmpi/components, which Open MPI searches by default
mkdir -p "$tmp/b4" "$tmp/home" && cd "$tmp/b4"
HOME=$tmp/home "$cfg" -q --enable-user-install > configure.log 2>&1 && HOME=$tmp/home make -s -j2 install > make.log 2>&1
check "per-user configure, make, make install succeed without touching the system" [ $? -eq 0 ]
check "components in ~/.openmpi/components" [ -n "$(ls "$tmp/home/.openmpi/components"/mca_btl_*.so 2>/dev/null)" ]
check "help files in ~/.openmpi/help" [ -n "$(ls "$tmp/home/.openmpi/help"/help-*.txt 2>/dev/null)" ]
path=$(HOME=$tmp/home ompi_info --param mca base --level 9 --parsable | sed -n 's/.*mca_base_component_path:value://p')
check "Open MPI's default component path includes that directory ($path)" grep -q "$tmp/home/.openmpi/components" <<< "$path"
tap_done
