#!/usr/bin/env python3
"""Instructions per call of the message path's functions, from callgrind profiles.

    bench/callgrind_summary.py PROFILE...

Under QEMU/TCG (the soft-RoCE guest) a ping-pong's time is mostly emulated
instructions, and timings spread 2-4x from run to run; the instructions a rank
executes per message do not.  bench/rsm-verbs-guest.sh with PROFILE=callgrind runs
every rank under valgrind's callgrind and hands the profiles here.  For each one
this prints, for the functions of ob1, pml ucx, UCX and btl rsm that a message
passes through (those present), how often they were called and their inclusive
instructions per call: the send path (PMPI_Send down to the post of the work
request), the delivery of an arrived message to the PML (ob1's match callback,
UCX's eager handler) and one pass of each progress loop.  PMPI_Recv includes the
time spent waiting, so its figure grows with how long the rank polled.

callgrind_annotate (valgrind's) reads the profile; functions compiled without
line information appear once or twice in its output (a "file:function" and a
"???:function" entry): the entry with the most instructions and its callers'
call counts are taken.
"""
import re
import subprocess
import sys

FUNCTIONS = [
    # the send path
    "PMPI_Send", "mca_pml_ob1_send", "mca_pml_ucx_send", "ucp_tag_send_nbx",
    "uct_rc_verbs_ep_am_short", "rsm_sendi", "rsm_verbs_post_unit",
    # an arrived message handed to the PML (rsm between hosts: poll_remote_queue,
    # rsm_poll_endpoint before 2026-12-07)
    "mca_pml_ob1_recv_frag_callback_match", "ucp_eager_only_handler", "poll_remote_queue",
    "rsm_poll_endpoint",
    # the progress loops, one pass each
    "opal_progress", "rsm_component_progress", "rsm_verbs_progress", "poll_recv_cq",
    "poll_send_cq", "ucp_worker_progress",
    # receive, waiting included
    "PMPI_Recv",
]

CALLER = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+<\s+\S+ \(([\d,]+)x\)")
SELF = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\*\s+(\S+)")
TOTAL = re.compile(r"^\s*([\d,]+) \(\s*100\.0+%\)\s+PROGRAM TOTALS")


def number(s):
    return int(s.replace(",", ""))


def summary(path):
    """{function: (calls, inclusive instructions)} and the program's total."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--tree=caller",
                          "--threshold=100", path], capture_output=True, text=True, check=True).stdout
    best, calls, total = {}, 0, 0
    for line in out.splitlines():
        m = TOTAL.match(line)
        if m:
            total = number(m.group(1))
            continue
        m = CALLER.match(line)
        if m:
            calls += number(m.group(2))
            continue
        m = SELF.match(line)
        if m:
            name = m.group(2).rsplit(":", 1)[-1]
            incl = number(m.group(1))
            if name in FUNCTIONS and calls > 0 and incl > best.get(name, (0, 0))[1]:
                best[name] = (calls, incl)
            calls = 0
        elif not line.strip():
            calls = 0
    return best, total


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        best, total = summary(path)
        print(f"\n{path}: {total:,} instructions in all (MPI_Init and MPI_Finalize included)")
        print(f"{'function':<40} {'calls':>9} {'instructions':>14} {'per call':>9}")
        for name in FUNCTIONS:
            if name in best:
                calls, incl = best[name]
                print(f"{name:<40} {calls:>9,} {incl:>14,} {incl / calls:>9.0f}")


if __name__ == "__main__":
    main()
