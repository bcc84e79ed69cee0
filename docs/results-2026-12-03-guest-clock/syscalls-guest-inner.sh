#!/bin/bash
# Runs inside the guest of syscalls-guest.sh: $1 the build tree.
here=$(cd "$(dirname "$0")/../../test/rsm" && pwd)
. "$here/../guest/guest_env.sh" xbguest 1536
. "$here/../guest/guest_hosts.sh"
B=$1
mkdir -p "$GH"
gh_up_tap 2 1
mount -t tracefs none /sys/kernel/tracing 2>/dev/null
echo -1 > /proc/sys/kernel/perf_event_paranoid
echo "# clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
declare -A how
how[rsm]="--mca pml ob1 --mca btl self,rsm"
how[ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
how[tcp]="--mca pml ob1 --mca btl self,tcp"
E=syscalls:sys_enter_clock_gettime,syscalls:sys_enter_write,syscalls:sys_enter_poll
E=$E,syscalls:sys_enter_read,raw_syscalls:sys_enter
for r in 1 2; do
    for t in rsm ucx tcp; do
        for it in 2000 12000; do
            echo "=== $t $it $r"
            # shellcheck disable=SC2086
            xb_limit -t 300 -- perf stat -a -x, -e "$E" -- mpirun "${GH_MPIRUN[@]}" -np 2 \
                --host h0:1,h1:1 ${how[$t]} "$B/bench/xb-latency" -m 8:8 -i "$it" -n 2>&1 |
                grep -E '^[0-9 ]|syscalls'
        done
    done
done
tap_done
