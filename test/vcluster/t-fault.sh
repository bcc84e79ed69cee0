#!/bin/bash
# Fault injection: frame loss is measured with ping floods and must match the setting
# within 4 binomial standard deviations (plus 0.5%); a link taken down at a given time
# really stops carrying frames (and its peer loses carrier) and carries again after the
# up; the log says what was done and when; 'random' picks one link for the schedule;
# faults injected during an MPI job over tcp are logged and undone afterwards.
. "${TOP_SRCDIR:-.}/test/lib.sh"
. "$TOP_SRCDIR/test/vcluster/vclib.sh"
vc_require
vc_setup tfault
VC_TMP=$(mktemp -d /tmp/xbvc-tfault.XXXXXX); LOG=$VC_TMP
N=2000
quiet() { "$@" >/dev/null 2>&1; }

# lossrate NODE IF ADDR: fraction of N flood pings (one per frame each way) not answered
lossrate() {
    vc exec "$1" -- ping -q -f -c $N -W 1 -I "$2" "$3" 2>&1 | python3 -c "
import re,sys; m=re.search(r'(\d+) packets transmitted, (\d+) received', sys.stdin.read())
print((int(m.group(1)) - int(m.group(2))) / int(m.group(1)) if m else 'none')"
}
# expect_loss DESCRIPTION MEASURED EXPECTED
expect_loss() {
    if python3 -c "import math,sys; m,p=$2,$3; sys.exit(0 if abs(m-p) <= 4*math.sqrt(p*(1-p)/$N) + 0.005 else 1)" 2>/dev/null
    then ok "$1: measured $(python3 -c "print(f'{100*$2:.2f}')")%, set for $(python3 -c "print(f'{100*$3:.2f}')")%"
    else not_ok "$1: measured '$2', expected $3"; fi
}

vc create pair --links 2 --force >/dev/null || { not_ok "create"; tap_done; exit; }
# resolve every neighbour first: a lost ARP frame would stall the flood behind it and
# overflow the unresolved queue, which is loss the injector did not cause
quiet vc check

vc fault loss:n0/eth0:0.10:out >/dev/null 2>&1
check "status shows 10% loss where n0's frames arrive (n1/eth0)" [ "$(vc_json \
    "[l['loss'] for l in s['nodes'][1]['links'] if l['if']=='eth0'][0]")" = 0.1 ]
expect_loss "loss 10% n0->n1 only" "$(lossrate n0 eth0 198.18.0.2)" 0.10
vc fault loss:n0/eth0:0.10:both >/dev/null 2>&1
expect_loss "loss 10% both ways (request and reply)" "$(lossrate n0 eth0 198.18.0.2)" 0.19
vc fault --clear loss:n0/eth0:0.25:in >/dev/null 2>&1
expect_loss "loss 25% into n0 only (replies)" "$(lossrate n0 eth0 198.18.0.2)" 0.25
expect_loss "other link eth1 unaffected" "$(lossrate n0 eth1 198.18.1.2)" 0
vc fault --clear >/dev/null 2>&1
expect_loss "after --clear no loss" "$(lossrate n0 eth0 198.18.0.2)" 0
check "after --clear no loss rule remains" [ "$(vc_json "sum(l['loss'] for n in s['nodes'] for l in n['links']) == 0")" = True ]

# timed down/up, in the background as a user would do it next to a job
: > "/run/xbvc/$XBVC_NAME/faults.log"
"$VC" fault 1:down:n0/eth1 4:up:n0/eth1 >/dev/null 2>&1 &
fpid=$!
sleep 2
check "at t=2: n0/eth1 is down and n1/eth1 has lost carrier" [ "$(vc_json \
    "(s['nodes'][0]['links'][1]['up'], s['nodes'][1]['links'][1]['carrier'])")" = "(False, False)" ]
check "at t=2: nothing crosses eth1" bash -c "! $VC exec n1 -- ping -c1 -W1 -I eth1 198.18.1.1 >/dev/null 2>&1"
check "at t=2: eth0 still carries" quiet vc exec n1 -- ping -c2 -i0.2 -W1 -I eth0 198.18.0.1
wait $fpid; check "fault schedule exited 0" [ $? = 0 ]
check "after up at t=4: eth1 carries again" quiet vc exec n1 -- ping -c3 -i0.3 -W2 -I eth1 198.18.1.1
cat "/run/xbvc/$XBVC_NAME/faults.log" | diag
check "log: down at +1 s and up at +4 s (within 0.3 s)" python3 -c "
import re,sys
t={m.group(2): float(m.group(1)) for m in re.finditer(r'\+\s*([\d.]+)s \S+ link n0/eth1 (down|up)', open('/run/xbvc/$XBVC_NAME/faults.log').read())}
sys.exit(0 if abs(t['down']-1) < 0.3 and abs(t['up']-4) < 0.3 else 1)"

: > "/run/xbvc/$XBVC_NAME/faults.log"
vc fault --seed 7 0:down:random 0.5:up:random >/dev/null 2>&1
check "random: down and up hit the same link, which is up again" python3 -c "
import re,sys,json,subprocess
l=re.findall(r'link (\S+) (down|up)', open('/run/xbvc/$XBVC_NAME/faults.log').read())
s=json.loads(subprocess.run(['$VC','status','--json'],capture_output=True,text=True).stdout)
print('# random link:', l)
sys.exit(0 if len(l)==2 and l[0][0]==l[1][0] and all(x['up'] for n in s['nodes'] for x in n['links']) else 1)"

# loss on a switched link is applied at the switch port (the far end of n0's wire)
vc create xbar --dims 3 --force >/dev/null
quiet vc check
vc fault loss:n0/eth0:0.10:out >/dev/null 2>&1
expect_loss "switched link: loss 10% n0->switch" "$(lossrate n0 eth0 198.18.0.2)" 0.10
vc create pair --links 2 --force >/dev/null

# faults during an MPI job: tcp rides out 2% loss and a 1.5 s outage of one of its links.
# The stream runs for 4 s, not a count of windows: the fault times count from the job's
# start, and a count a fast host finishes before 2.5 s would miss the "up"
if [ -x "$BENCH/xb-bw" ]; then
    if vc_mpirun --fault-log "$LOG/flog" \
        --fault 0.5:loss:n0/eth0:0.02 --fault 1:down:n0/eth1 --fault 2.5:up:n0/eth1 \
        -- "$BENCH/xb-bw" -m 64k -t 4 >"$LOG/bw" 2>&1 && grep -q 'all payloads verified' "$LOG/bw"
    then ok "xb-bw over 2 links with loss and a link outage: verified"
    else not_ok "xb-bw with faults"; tail -20 "$LOG/bw" | diag; fi
    diag < "$LOG/flog"
    check "job fault log has loss, down, up and the restore, in order" python3 -c "
import sys; t=open('$LOG/flog').read()
k=[t.find(w) for w in ('loss n0/eth0 0.02','link n0/eth1 down','link n0/eth1 up','restored')]
sys.exit(0 if -1 not in k and k==sorted(k) else 1)"
    check "after the job: no loss left, every link up" [ "$(vc_json \
        "sum(l['loss'] for n in s['nodes'] for l in n['links'])==0 and all(l['up'] for n in s['nodes'] for l in n['links'])")" = True ]
else
    skip "faults during an MPI job" "$BENCH/xb-bw missing"
fi

check "destroy" bash -c "$VC destroy >/dev/null"
vc_assert_clean
tap_done
