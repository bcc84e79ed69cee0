# mpi4py's own suite (3.1.4, fetched into build/ext by contrib/setup) as an MPI job, and
# what its ranks printed (source after test/lib.sh).  A run writes one file per rank
# (mpirun --output-filename DIR: DIR/1/rank.N/stderr): two ranks' lines on one stream
# can interleave.  Used by test/pmeth/t-pmeth-suites.sh.

M4PY_SUITE=$TOP_BUILDDIR/ext/mpi4py-3.1.4
M4PY_PY=/usr/bin/python3      # Debian's module is seen by the system python, not a pyenv one
# Spawn and dynamic-process tests are left out: they need a transport between separate
# jobs, which the shared-memory BTLs do not give.  Run from $M4PY_SUITE.
M4PY_ARGS=(test/runtests.py --no-builddir -e test_spawn -e test_dynproc)

# m4py_require: the calling test is skipped (77) when the suite was not fetched
m4py_require() {
    [ -f "$M4PY_SUITE/test/runtests.py" ] && return
    echo "# mpi4py suite missing in $M4PY_SUITE (contrib/setup fetches it)"
    exit 77
}

# m4py_summary DIR: "ran/skipped/ranks-OK/errors" of a run: the distinct "Ran N tests"
# and "skipped=N" figures of its ranks (comma-separated when they differ), how many
# ranks ended in OK and how many ERROR/FAIL entries all ranks reported together
m4py_summary() {
    local out; out=$(cat "$1"/*/rank.*/std* 2>/dev/null)
    echo "$(grep -oE '^Ran [0-9]+ tests' <<< "$out" | awk '{print $2}' | sort -u | paste -sd,)/$(
        grep -oE 'skipped=[0-9]+' <<< "$out" | grep -oE '[0-9]+' | sort -u | paste -sd,)/$(
        grep -cE '^OK( \(skipped=[0-9]+\))?$' <<< "$out")/$(grep -cE '^(ERROR|FAIL):' <<< "$out")"
}

# m4py_errors DIR: the run's errors and failures as a set, one sorted line each:
# "rank N: ERROR: testName (module.Class.testName)", so that two runs compare exactly
m4py_errors() {
    local f rank
    for f in "$1"/*/rank.*/std*; do
        [ -f "$f" ] || continue
        rank=${f%/*}; rank=${rank##*/rank.}
        grep -E '^(ERROR|FAIL):' "$f" | sed "s/^/rank $rank: /"
    done | sort
}

# m4py_unexpected_errors DIR: the errors of m4py_errors other than those 1 rank on each
# of 2 hosts gives over tcp: MPI_Win_allocate / MPI_Win_allocate_shared over COMM_WORLD
# (Debian's config leaves ob1 only osc sm for them, which needs all ranks on one
# shared-memory node: MPI_ERR_RMA_SHARED, MPI_ERR_WIN) - a real cluster answers the same.
# (Over pmeth, whose one-sided operations osc rdma takes, MPI_Win_allocate works.)
m4py_unexpected_errors() {
    m4py_errors "$1" | grep -vE ': ERROR: \w+ \(test_win\.TestWinAllocate(Shared)?World\.'
}

# m4py_error_classes DIR: rank 0's errors counted per test class (for the log)
m4py_error_classes() {
    cat "$1"/*/rank.0/std* 2>/dev/null | grep -E '^(ERROR|FAIL):' \
        | sed -E 's/^(ERROR|FAIL): \w+ \(([A-Za-z_.]+)\.\w+\)/\1 \2/' | sort | uniq -c
}
