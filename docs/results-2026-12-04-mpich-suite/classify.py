#!/usr/bin/env python3
"""classify.py TAP...: each failed test of runtests' TAP files, by cause: not built (an MPI-4
function or a removed MPI-1 one that Open MPI 4.1 lacks), the 180 s limit, an error class
named by Open MPI, wrong results (the test's own message), or a pass that runtests
counts as a failure because the launcher wrote a warning into the output."""
import re, sys

for path in sys.argv[1:]:
    text = open(path).read()
    fails = re.findall(r'^not ok \d+ - (\S+ \d+)(?: # time=([\d.]+))?[^\n]*\n(.*?)(?=^(?:not )?ok |\Z)',
                       text, re.M | re.S)
    causes = {}
    for name, secs, body in fails:
        out = "\n".join(l[3:] for l in body.splitlines() if l.startswith("## "))
        if "Failed to build" in out:
            cause = "not built"
        elif "setpgid" in out and re.search(r"^\s*No Errors\s*$", out, re.M):
            cause = "passed; Open MPI's rsh launcher warned (setpgid) in the output"
        elif float(secs or 0) >= 179 or "still running after" in out:
            cause = "180 s limit"
        else:
            m = re.search(r"\*\*\* (MPI_ERR_\w+)", out)
            cause = m.group(1) if m else "wrong result / test message"
        causes.setdefault(cause, []).append(name.lstrip("./"))
    print(f"{path}: {len(fails)} failed")
    for cause, names in sorted(causes.items()):
        print(f"  {cause} ({len(names)}): {' '.join(names)}")
