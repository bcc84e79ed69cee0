# Shell helpers for the test scripts (source it): TAP output, the transport
# list, and mpirun with a time bound.  See test/run for the contract.
set -u
: "${TOP_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${TOP_BUILDDIR:=$TOP_SRCDIR/build}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Debian's default conf turns on a warning for unused components; keep logs readable.
export OMPI_MCA_btl_base_warn_component_unused=0

tap_n=0
tap_failed=0
ok()      { tap_n=$((tap_n + 1)); echo "ok $tap_n - $*"; }
not_ok()  { tap_n=$((tap_n + 1)); tap_failed=$((tap_failed + 1)); echo "not ok $tap_n - $*"; }
skip()    { tap_n=$((tap_n + 1)); echo "ok $tap_n - $1 # SKIP ${2:-}"; }
# check DESCRIPTION COMMAND...: one TAP line from the command's exit status
check()   { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
tap_done() { echo "1..$tap_n"; [ "$tap_failed" -eq 0 ]; }
diag()    { sed 's/^/# /'; }
# relay_tap PREFIX: re-number the TAP lines of a program's output (stdin) into this script's sequence
relay_tap() {
    local line
    while IFS= read -r line; do
        case "$line" in
            "ok "*)     ok "$1${line#ok * - }";;
            "not ok "*) not_ok "$1${line#not ok * - }";;
        esac
    done
}

# Transports for USE ("test" or "bench"): prints "name<TAB>args" lines from contrib/transports.conf.
transports() {
    local use=$1
    awk -v use="$use" '!/^[[:space:]]*(#|$)/ {
        if ($2 == use || $2 == "both") { name = $1; $1 = ""; $2 = ""; sub(/^[[:space:]]+/, ""); print name "\t" $0 }
    }' "$TOP_SRCDIR/contrib/transports.conf"
}

# mpirun_np NP SECONDS TRANSPORT_ARGS -- PROGRAM ARGS...: ranks bound to cores when they fit,
# oversubscribed otherwise; killed after SECONDS.
mpirun_np() {
    local np=$1 secs=$2 targs=$3; shift 4
    local place="--bind-to core --map-by core"
    [ "$np" -gt "$(nproc)" ] && place="--oversubscribe --bind-to none"
    # shellcheck disable=SC2086
    timeout -k 10 "$secs" mpirun -np "$np" $place $targs "$@" < /dev/null
}
