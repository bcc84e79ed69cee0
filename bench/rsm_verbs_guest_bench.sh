#!/bin/bash
# Runs inside the guest of bench/rsm-verbs-guest.sh: the comparison of btl rsm's verbs
# back end between two hosts (test/guest/guest_hosts.sh: h0 and h1, each with its own
# soft-RoCE device rxeI on its own NIC, and a second rail rxsI on a second NIC) against pml ucx over the same devices (rc_verbs),
# tcp over the same NICs, and the verbs floor (perftest's ib_write_lat / ib_write_bw).
# Prints the benchmarks' JSON rows, each prefixed "row TRANSPORT REPEAT ", and the floors
# as "floor KIND SIZE VALUE"; the machine side takes medians.
#   BUILDDIR REPEATS LAT_SIZES BW_SIZES TRANSPORTS BENCHMARKS FLOORS SHAPE XB_ARGS HOSTS RSM_BASE
#   PROFILE
# (the guest's command line drops empty words: "-" stands for an empty SHAPE or XB_ARGS)
# SHAPE (e.g. 120mbit): every host NIC (both rails) shaped to that rate by tbf, so the
# links, not the emulated CPUs, bound a transfer; XB_ARGS: more benchmark options, comma
# separated (e.g. -W,16,-i,5); PROFILE "callgrind": every rank under valgrind's callgrind, each
# profile printed gzipped and base64-encoded on a line "callgrind NAME DATA" for the machine side
B=$1 REPEATS=${2:-3} LAT=${3:-0:512} BW=${4:-4K:4M}
# lists come comma-separated (the guest's command line splits words)
TRANSPORTS=${5:-rsm,rsm-2rails,rsm-2copy,ucx,tcp} BENCHMARKS=${6:-xb-latency,xb-bw,xb-bibw}
TRANSPORTS=${TRANSPORTS//,/ } BENCHMARKS=${BENCHMARKS//,/ }
FLOORS=${7:-1} SHAPE=${8:-} XB_ARGS=${9:-} HOSTS=${10:-h0:1,h1:1} RSM_BASE=${11:--}
PROFILE=${12:--}
[ "$SHAPE" = - ] && SHAPE=
[ "$XB_ARGS" = - ] && XB_ARGS=
XB_ARGS=${XB_ARGS//,/ }
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../test/guest/guest_env.sh" xbguest 1536
. "$here/../test/guest/guest_hosts.sh"
W=$GH/bench
mkdir -p "$W"
gh_up 2 2 > "$W/up.log" 2>&1 || { echo "# hosts did not come up"; cat "$W/up.log"; exit 1; }
if [ -n "$SHAPE" ]; then
    # a queue deep enough that rxe's bursts wait instead of being dropped (a drop costs an
    # RC retransmission timeout, 1 s)
    for nic in xh0 xh1 xs0 xs1; do
        tc qdisc add dev "$nic" root tbf rate "$SHAPE" burst 64kb limit 32mb ||
            { echo "# could not shape $nic"; exit 1; }
    done
    echo "# every host NIC shaped to $SHAPE (tbf)"
fi

declare -A how wrap
how[rsm]="--mca pml ob1 --mca btl self,rsm"
# the same without single copy: every message through the pool (the two-copy pipeline)
# striped: single-copy reads of 64 KiB or more cut across rxeI and rxsI (seed 000, 3.3)
how[rsm-2rails]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_rails 2"
how[rsm-2copy]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_single_copy_min 18446744073709551615"
how[ucx]="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any -x UCX_TLS=self,rc_verbs,ud_verbs -x UCX_UD_VERBS_ETH_DGID_CHECK=n"
how[tcp]="--mca pml ob1 --mca btl self,tcp"
how[vader]="--mca pml ob1 --mca btl self,vader"
# rsm without the thread that answers connection requests while a rank is away from MPI:
# what the thread costs (its entry points' exclusion, ventry in btl_rsm_verbs.c)
how[rsm-nolisten]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_listener 0"
# rsm with a pool message's blocks and pointer postbox as two writes, as before direct units
# (btl_rsm/rsm_verbs.h): what the one write saves
how[rsm-nodirect]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_direct 0"
# rsm with verbs pools of 4 KiB blocks, 14 a chunk (btl_rsm_verbs_block 4096): what 1 KiB
# blocks gain at 4-16 KiB, where a message's header, skew and postbox spill into a block more
how[rsm-blk4k]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_block 4096 --mca btl_rsm_verbs_pool_size 57344"
# rsm with pool messages acked every second one, a single one after 1 ms
# (btl_rsm_verbs_ack_delay_us 1000; the default acks each)
how[rsm-ackdelay]="--mca pml ob1 --mca btl self,rsm --mca btl_rsm_verbs_ack_delay_us 1000"
# rsm of another build (an A/B): a component directory holding its mca_btl_rsm.so
how[rsm-base]="--mca pml ob1 --mca btl self,rsm --mca mca_base_component_path $RSM_BASE"
# pml ucx over both rails: each host's agent names its own first rail (UCX_NET_DEVICES=rxeI:1);
# the wrapper adds the same host's second (rxsI:1), so UCX stripes its rendezvous over the two
# (UCX_MAX_RNDV_RAILS, 2 by default) and never touches another host's device
how[ucx-2rails]=${how[ucx]}
wrap[ucx-2rails]="$here/ucx_both_rails.sh"

# perftest TOOL ARGS...: server on h1 (rxe1), client on h0 (rxe0); the client's output
perftest() {
    local tool=$1; shift
    gh_on h1 timeout 120 "$tool" -d rxe1 -x "$(gh_gid_index rxe1 "$(gh_addr 1)")" "$@" > "$W/pt.srv" 2>&1 &
    local srv=$!
    for _ in $(seq 100); do grep -q 'Waiting for client' "$W/pt.srv" 2>/dev/null && break; sleep 0.1; done
    gh_on h0 timeout 120 "$tool" -d rxe0 -x "$(gh_gid_index rxe0 "$(gh_addr 0)")" "$@" "$(gh_addr 1)" 2>&1
    wait "$srv"
}

# the rxe devices' hardware counters, "rxe0.sent_pkts 123" (gh_snap: one grep, not a cat each)
counters() { gh_snap | grep '^rx[es]'; }
echo "# placement inside TCG is meaningless: both hosts share the guest's 2 vCPUs"
echo "# clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
for ((r = 1; r <= REPEATS; r++)); do
    for t in $TRANSPORTS; do
        for b in $BENCHMARKS; do
            sizes=$BW iters=(-i 30 -w 3)     # 100 took 300 s at 4 MiB two-copy bibw under TCG
            [ "$b" = xb-latency ] && sizes=$LAT iters=(-i 1000 -w 50)
            counters > "$W/c0"
            profile_env=() profiler=()
            if [ "$PROFILE" = callgrind ]; then
                profile_env=(-x "XB_CG_DIR=$W" -x "XB_CG_NAME=$t.$b.$r")
                profiler=("$here/callgrind_rank.sh")
            fi
            # shellcheck disable=SC2086
            run_mpi 600 "${GH_MPIRUN[@]}" -np 2 --host "$HOSTS" "${profile_env[@]}" ${how[$t]} \
                ${wrap[$t]:-} "${profiler[@]}" "$B/bench/$b" -m "$sizes" "${iters[@]}" $XB_ARGS > "$W/out" 2> "$W/err"
            rc=$?
            if [ $rc -ne 0 ]; then
                echo "# $t $b repeat $r failed (exit $rc):"; tail -5 "$W/err" | sed 's/^/#   /'
            fi
            grep '^{' "$W/out" | sed "s/^/row $t $r /"
            # what rxe saw: retries, receiver-not-ready NAKs, duplicates (a slow path shows here)
            counters | awk -v t="$t" -v b="$b" 'FNR == NR { a[$1] = $2; next }
                $2 != a[$1] { printf "%s %s=%d", (n++ ? "" : "# rxe " t " " b ":"), $1, $2 - a[$1] }
                END { if (n) print "" }' "$W/c0" -
            for f in "$W"/cg.*; do
                [ -f "$f" ] || continue
                echo "callgrind ${f##*/} $(gzip -c "$f" | base64 -w0)"
                rm -f "$f"
            done
        done
    done
    [ "$FLOORS" = 1 ] || continue
    for s in 8 64 512; do
        perftest ib_write_lat -s "$s" -n 1000 | awk -v s="$s" '$1 == s && NF >= 5 { print "floor lat " s " " $5 }'
    done
    for s in 4096 65536 1048576 4194304; do
        perftest ib_write_bw -s "$s" -n 200 | awk -v s="$s" '$1 == s && NF >= 4 { print "floor bw " s " " $4 }'
    done
done
echo "xbguest-bench-done"
