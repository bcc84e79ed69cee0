#!/bin/bash
# Installed, but only where asked (issue 13, part 3; common/xbtl_optin.h): with
# mca_btl_rsm.so in Open MPI's component directory, a job uses rsm only when its btl
# list names it, or when the site set btl_rsm_site_default = 1 (README, "Selecting a
# transport").  test/mpi/mpit_read tells from rsm's MPI_T counters whether rsm carried
# the job's 20 verified messages, and whether rsm is there at all.
. "$(dirname "$0")/../lib.sh"
READER=$TOP_BUILDDIR/test/mpi/mpit_read
[ -x "$READER" ] || { not_ok "test/mpi/mpit_read built (make check)"; tap_done; exit; }
ompi_info | grep -q 'MCA btl: rsm' || { not_ok "btl rsm installed (make -C build install)"; tap_done; exit; }
work=$(mktemp -d /tmp/xb-optin.XXXXXX)
trap 'rm -rf "$work"' EXIT

job() {  # ARGS...: 2 ranks of the reader, plain ob1; prints its output
    run_mpi 60 -np 2 --bind-to none --mca pml ob1 "$@" "$READER" used 2>&1
}
expect() {  # WANT DESCRIPTION ARGS...
    local want=$1 what=$2 out; shift 2
    out=$(job "$@")
    if grep -q "^rsm: $want " <<< "$out"; then
        ok "$what: rsm $want ($(sed -n 's/^rsm: [a-z]* (\(.*\))$/\1/p' <<< "$out"))"
    else
        not_ok "$what: rsm $want"; tail -15 <<< "$out" | diag
    fi
}

expect unused "a plain mpirun (no --mca btl; Debian's exclusion list ^uct,openib,ofi)"
expect used "--mca btl self,rsm" --mca btl self,rsm
expect used "--mca btl self,vader,rsm: named beside vader, rsm carries every message" \
    --mca btl self,vader,rsm
expect unused "--mca btl ^tcp: an exclusion list does not name rsm" --mca btl ^tcp
expect unused "--mca btl self,vader" --mca btl self,vader

# declining costs nothing and says so once, under btl_base_verbose only
out=$(job --mca btl_base_verbose 10)
n=$(grep -c "btl:rsm: not named in this job's btl list" <<< "$out")
check "not named: each of the 2 ranks declines in one verbose line ($n)" [ "$n" -eq 2 ]
check "not named: no control segment created (no 'control segment' verbose line)" \
    bash -c '! grep -q "btl:rsm: local rank .* control segment" <<< "$1"' _ "$out"
out=$(job)
check "not named, not verbose: not a word about rsm on the output" \
    bash -c '! grep -qi "rsm" <<< "$(grep -v "^rsm: unused" <<< "$1")"' _ "$out"

# the site's default: Debian's own parameter file plus the one documented line,
# given to the job as its parameter file (the system file is never touched)
sys_conf=/etc/openmpi/openmpi-mca-params.conf
# (Debian's file ends without a newline: a line appended blindly would join its last one)
{ [ -r "$sys_conf" ] && cat "$sys_conf" && echo; echo "btl_rsm_site_default = 1"; } > "$work/site.conf"
export OMPI_MCA_mca_base_param_files=$work/site.conf
expect used "site file with 'btl_rsm_site_default = 1': a plain mpirun"
expect unused "site file with 'btl_rsm_site_default = 1': a job that names only self,vader" \
    --mca btl self,vader
expect unused "site file, the job turning it off with --mca btl_rsm_site_default 0" \
    --mca btl_rsm_site_default 0
unset OMPI_MCA_mca_base_param_files
tap_done
