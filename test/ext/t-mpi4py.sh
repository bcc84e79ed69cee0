#!/bin/bash
# mpi4py's own test suite (3.1.4, matching Debian's python3-mpi4py), 2 ranks over
# the reference transport (the first of contrib/transports.conf's test list, vader) and
# over each of ours there (rsm).  Spawn and dynamic-process tests are excluded: they need
# a transport between separate jobs, which shared-memory BTLs do not give.  Ours must give
# the same counts as the reference.  Open MPI's other transports are not run here (tcp:
# ~40 s; it runs the suite between virtual hosts in pmeth/t-pmeth-suites.sh).
. "$(dirname "$0")/../lib.sh"
suite=$TOP_BUILDDIR/ext/mpi4py-3.1.4
PY=/usr/bin/python3   # Debian's module is seen by the system python, not a pyenv one
if [ ! -f "$suite/test/runtests.py" ]; then
    not_ok "mpi4py test suite present in $suite (contrib/setup fetches it)"; tap_done; exit
fi
have=$($PY -c 'import mpi4py; print(mpi4py.__version__)' 2>/dev/null)
check "Debian's mpi4py module is 3.1.4 (found: ${have:-none}), matching the suite" [ "$have" = 3.1.4 ]
ref=""
odir=$(mktemp -d); trap 'rm -rf "$odir"' EXIT
while IFS=$'\t' read -r name targs; do
    if [ -n "$ref" ] && ! grep -qE -- '--mca btl [^ ]*(rsm|pmeth)' <<< "$targs"; then
        continue
    fi
    # one file per rank (--output-filename): two ranks' lines on one stream can interleave
    rm -rf "${odir:?}"/*
    term=$(cd "$suite" && mpirun_np 2 600 "$targs --output-filename $odir/$name" -- $PY test/runtests.py \
              --no-builddir -e test_spawn -e test_dynproc 2>&1); rc=$?
    out=$(cat "$odir/$name"/*/rank.*/std* 2>/dev/null)
    ran=$(grep -oE '^Ran [0-9]+ tests' <<< "$out" | awk '{print $2}' | sort -u | paste -sd/)
    oks=$(grep -cE '^OK( \(skipped=[0-9]+\))?$' <<< "$out")
    skipped=$(grep -oE '^OK \(skipped=[0-9]+\)' <<< "$out" | grep -oE '[0-9]+' | sort -u | paste -sd/)
    if [ "$rc" -eq 0 ] && [ "$oks" -eq 2 ] && [ -n "$ran" ]; then
        ok "mpi4py over $name: both ranks OK, ran $ran tests, skipped ${skipped:-0}"
    else
        not_ok "mpi4py over $name (exit $rc, $oks of 2 ranks OK)"
        { grep -E '^(FAIL|ERROR|Traceback|Ran|OK|FAILED)' <<< "$out"; tail -10 <<< "$term"; } | head -40 | diag
    fi
    if [ -z "$ref" ]; then
        ref="$ran/$skipped"; refname=$name
    else
        check "mpi4py over $name ran and skipped the same tests as over $refname ($ran/$skipped vs $ref)" \
            [ "$ran/$skipped" = "$ref" ]
    fi
done < <(transports test)
tap_done
