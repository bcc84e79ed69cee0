#!/bin/bash
# In the guest: ARGS = BUILDDIR ROUNDS; PLAIN=1 in the environment adds a control run a round.
# From this directory:
#   GUEST_SECS=1500 OUT=/tmp/fs.txt ../results-2026-12-04-guest-launch/outer.sh \
#       $PWD/first-send-inner.sh 30
# ROUNDS times, between the guest's two hosts, 1 rank each: xb-bw 1 B-1 KiB, 20 windows a
# size, with every queue starting 296 postboxes before the wrap of the sequence numbers
# (btl_rsm_first_seq 4294967000) and btl_base_verbose 1, so a dropped unit is printed;
# with PLAIN, the same from 0.  A job still running after 40 s is a hang: its processes are
# listed and killed.  Per job: exit status, seconds, whether xb-bw verified every payload,
# and the lines that name a drop or failure.
B=$1 ROUNDS=${2:-20}
. "$(dirname "$0")/../results-2026-12-04-guest-launch/two-hosts.sh"
RSM=(--mca pml ob1 --mca btl self,rsm --mca btl_base_verbose 1)
j() {
    local l=$1; shift
    local t0 rc; t0=$(date +%s.%N)
    gh_mpirun 100 "$@" > "$W/o" 2>&1 &
    local pid=$! n=0
    while kill -0 $pid 2>/dev/null && [ $n -lt 40 ]; do sleep 1; n=$((n + 1)); done
    if kill -0 $pid 2>/dev/null; then
        pgrep -af "bench/xb-bw" | grep -v mpirun | sed "s/^/# PROC /"
        echo "# HANG $l after 40 s"
        pkill -9 -f 'bench/xb-bw'
    fi
    wait $pid; rc=$?
    echo "# RESULT $l rc=$rc secs=$(echo "$(date +%s.%N) - $t0" | bc)" \
         "verified=$(grep -c 'all payloads verified' "$W/o")"
    grep -a -E 'dropped|failed|error' "$W/o" | sort | uniq -c | sed "s/^/# LINE $l: /" |
        cut -c1-220 | head -6
}
for r in $(seq 1 "$ROUNDS"); do
    j "r$r-wrap" -np 2 --host h0:1,h1:1 "${RSM[@]}" --mca btl_rsm_first_seq 4294967000 \
        "$B/bench/xb-bw" -m 1:1K -i 20
    if [ -n "${PLAIN:-}" ]; then
        j "r$r-plain" -np 2 --host h0:1,h1:1 "${RSM[@]}" "$B/bench/xb-bw" -m 1:1K -i 20
    fi
done
ok done
tap_done
