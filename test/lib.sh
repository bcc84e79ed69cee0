# Shell helpers for the test scripts (source it): TAP output, the transport
# list, and mpirun under a time and a memory limit (xb_limit).  See test/run for the contract.
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
# draw_params MIN MAX ENTRY...: MIN..MAX distinct entries ("name: value value ...") drawn
# with $RANDOM (seed it first for the same draw every run), each with one of its values;
# left in PARAMS_DRAWN as name, value, name, value, ...
draw_params() {
    local min=$1 max=$2; shift 2
    local n picked=" " i name vals
    local -a v
    n=$((min + RANDOM % (max - min + 1)))
    PARAMS_DRAWN=()
    while [ "$(wc -w <<< "$picked")" -lt "$n" ]; do
        i=$((RANDOM % $#)) && i=$((i + 1))
        case "$picked" in *" $i "*) continue;; esac
        picked+="$i "
        read -r name vals <<< "${!i}"
        read -ra v <<< "$vals"
        PARAMS_DRAWN+=("${name%:}" "${v[RANDOM % ${#v[@]}]}")
    done
}
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

# xb_built_with FEATURE: configure found FEATURE (XDP, VERBS, ...): xbtl_config.h defines XBTL_HAVE_FEATURE 1
xb_built_with() { grep -q "^#define XBTL_HAVE_$1 1" "$TOP_BUILDDIR/xbtl_config.h" 2>/dev/null; }

# xb_mem_available_mib: the memory the kernel says a new job can have (MemAvailable), MiB
xb_mem_available_mib() { awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo; }

# Transports for USE ("test" or "bench"): prints "name<TAB>args" lines from contrib/transports.conf.
transports() {
    local use=$1
    awk -v use="$use" '!/^[[:space:]]*(#|$)/ {
        if ($2 == use || $2 == "both") { name = $1; $1 = ""; $2 = ""; sub(/^[[:space:]]+/, ""); print name "\t" $0 }
    }' "$TOP_SRCDIR/contrib/transports.conf"
}

# ---- Limits: every MPI job a test starts runs under xb_limit (issue 13, part 4) ----
# A runaway job (a queue that grows without bound, a hang) must fail fast with a clear
# message, not take the machine's memory or the runner's whole time budget.  Two limits:
#   time    SECONDS, then SIGTERM and 10 s later SIGKILL (timeout(1));
#   memory  the job's private memory (RssAnon of the command and all its descendants:
#           mpirun, ranks, orteds), sampled every 0.2 s; past XB_JOB_MEM_MIB the whole
#           tree is killed.  Shared memory (shm segments mapped by every rank) is left out
#           so that it is not counted once per rank.  Each process also gets RLIMIT_AS
#           XB_PROC_AS_MIB (prlimit) as a backstop for growth faster than the sampling.
# Either one prints a line "xb_limit: ..." on stderr naming the limit, the command and
# what was reached, and makes the status 124 (time) or 137 (memory).  XB_LIMIT_VERBOSE=1
# also prints each job's peak private memory and duration.
: "${XB_JOB_MEM_MIB:=4096}"
: "${XB_PROC_AS_MIB:=16384}"

# xb_tree PID: PID and all its descendants
xb_tree() {
    ps -e -o pid= -o ppid= | awk -v root="$1" '
        { kids[$2] = kids[$2] " " $1 }
        END { n = 1; q[1] = root; out = root
              for (i = 1; i <= n; i++) { m = split(kids[q[i]], k, " ")
                  for (j = 1; j <= m; j++) { q[++n] = k[j]; out = out " " k[j] } }
              print out }'
}
# xb_tree_anon_kib PID: private resident memory (KiB) of PID and its descendants
xb_tree_anon_kib() {
    local p files=()
    for p in $(xb_tree "$1"); do files+=("/proc/$p/status"); done
    cat "${files[@]}" 2>/dev/null | awk '/^RssAnon:/ { s += $2 } END { print s + 0 }'
}
_xb_mem_watch() {   # ROOT LIMIT_MIB REPORT_FILE: kill ROOT's tree when it passes the limit
    local root=$1 limit_kib=$(($2 * 1024)) report=$3 kib peak=0
    while kill -0 "$root" 2>/dev/null; do
        kib=$(xb_tree_anon_kib "$root")
        [ "$kib" -gt "$peak" ] && peak=$kib
        if [ "$kib" -gt "$limit_kib" ]; then
            echo "memory limit: the job's processes held $((kib / 1024)) MiB of private memory," \
                 "over its limit of $((limit_kib / 1024)) MiB (XB_JOB_MEM_MIB)" > "$report"
            ps -o pid=,rss=,args= -p "$(xb_tree "$root" | tr ' ' ',')" 2>/dev/null \
                | sort -k2,2nr | head -5 | sed 's/^/    largest: /' >> "$report"
            local p
            for p in $(xb_tree "$root"); do kill -KILL "$p" 2>/dev/null; done
            return
        fi
        sleep 0.2
    done
    echo "$peak" > "$report.peak"
}

# xb_limit [-t SECONDS] [-m MIB] [--] COMMAND ARGS...: COMMAND under a time limit
# (default 120 s) and a memory limit (default XB_JOB_MEM_MIB) as described above;
# stdin from /dev/null.  Also for other launchers (test/vcluster: xb_limit -t 150 --
# "$VC" mpirun ...).  Returns COMMAND's status, 124 on time-out, 137 on memory.
xb_limit() {
    local secs=120 mem=$XB_JOB_MEM_MIB
    while [ $# -gt 0 ]; do
        case $1 in
            -t) secs=$2; shift 2;;
            -m) mem=$2; shift 2;;
            --) shift; break;;
            *) break;;
        esac
    done
    local report rc watch pid start=$SECONDS
    report=$(mktemp "${TMPDIR:-/tmp}/xb-limit.XXXXXX")
    timeout -k 10 "$secs" prlimit --as=$((XB_PROC_AS_MIB << 20)) -- "$@" < /dev/null &
    pid=$!
    _xb_mem_watch "$pid" "$mem" "$report" &
    watch=$!
    wait "$pid"; rc=$?
    wait "$watch" 2>/dev/null      # it ends within one period of the command
    if [ -s "$report" ]; then
        { echo "xb_limit: KILLED '$*'"; sed 's/^/xb_limit: /' "$report"; } >&2
        rc=137
    elif [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ $((SECONDS - start)) -ge "$secs" ]; }; then
        # 137 at the deadline: timeout's SIGKILL, the TERM was not enough
        echo "xb_limit: KILLED '$*': time limit of $secs s reached (still running)" >&2
        rc=124
    elif [ "$rc" -eq 137 ]; then
        echo "xb_limit: '$*' was killed by SIGKILL after $((SECONDS - start)) s, not by" \
             "xb_limit (the kernel's OOM killer? see dmesg)" >&2
    fi
    if [ "${XB_LIMIT_VERBOSE:-0}" = 1 ] && [ -s "$report.peak" ]; then
        echo "xb_limit: '$*': exit $rc after $((SECONDS - start)) s, peak private memory" \
             "$(($(cat "$report.peak") / 1024)) MiB" >&2
    fi
    rm -f "$report" "$report.peak"
    return "$rc"
}

# run_mpi SECONDS MPIRUN_ARGS...: `mpirun MPIRUN_ARGS...` under xb_limit; the one way
# test scripts start an MPI job (mpirun_np below uses it too).
run_mpi() {
    local secs=$1; shift
    xb_limit -t "$secs" -- mpirun "$@"
}

# mpirun_np NP SECONDS TRANSPORT_ARGS -- PROGRAM ARGS...: ranks bound to cores when they fit,
# oversubscribed otherwise; killed after SECONDS or past the memory limit (xb_limit).
mpirun_np() {
    local np=$1 secs=$2 targs=$3; shift 4
    local place="--bind-to core --map-by core"
    [ "$np" -gt "$(nproc)" ] && place="--oversubscribe --bind-to none"
    # shellcheck disable=SC2086
    run_mpi "$secs" -np "$np" $place $targs "$@"
}
