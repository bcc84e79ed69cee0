# Host-side helpers for the tests that boot a QEMU guest on Debian's own kernel (source
# after test/lib.sh).  The guest: TCG (this machine's /dev/kvm is kvm-pvm and stops a stock
# kernel right after its real-mode setup), Debian's newest /boot/vmlinuz-*, an initramfs of
# the static test/guest/guest_init.c plus the virtio and 9p modules, the host's / as its
# root, read-only over 9p (so it runs this build and the host's packages; other modules
# come from /lib/modules through it), a script run inside that reports TAP on the serial
# console.
#
#   guest_require [MODULE...]   exit 77, naming what is missing (qemu, kernel, cpio, static
#                               libc, the guest kernel's MODULEs)
#   guest_prepare               work directory $GUEST_WORK (removed on exit) and its initrd;
#                               an EXIT/INT/TERM trap stops a running guest and removes the
#                               work directory.
#                               Work directories whose test was killed outright (SIGKILL: a
#                               runner's time-out or Ctrl-C; QEMU, in the test's process
#                               group, went with it) are removed here the next time
#   guest_boot SECS MIB CPUS SCRIPT ARGS...
#                               boot, run `bash SCRIPT ARGS...` as the init's child, power off;
#                               extra QEMU options from the array GUEST_QEMU_ARGS.  The
#                               console, CRs stripped, is in $GUEST_WORK/out; sets guest_qrc
#                               (QEMU's status, 124 on time-out), guest_status (the script's,
#                               empty if it never reported) and guest_secs (boot to power-off,
#                               without the wait for the lock).
#   guest_report WHAT MIN_OK PREFIX
#                               the TAP of the guest's run (below)
# The guest runs under flock $XB_BENCH_LOCK (default /tmp/xbtl-bench.lock, waited for at
# most XB_BENCH_LOCK_WAIT seconds) so it never overlaps a benchmark that takes the same
# lock: this machine has two cores and a TCG guest keeps both busy.
GUEST_KERNEL=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
GUEST_KVER=${GUEST_KERNEL#/boot/vmlinuz-}
: "${XB_BENCH_LOCK:=/tmp/xbtl-bench.lock}" "${XB_BENCH_LOCK_WAIT:=600}"
GUEST_QEMU_ARGS=()
guest_pid=""

guest_require() {
    local miss=() m
    command -v qemu-system-x86_64 >/dev/null || miss+=("qemu-system-x86_64 (qemu-system-x86)")
    [ -n "$GUEST_KERNEL" ] || miss+=("a kernel in /boot (linux-image-amd64)")
    command -v cpio >/dev/null || miss+=(cpio)
    [ -f /usr/lib/x86_64-linux-gnu/libc.a ] || miss+=("static libc (libc6-dev)")
    if [ -n "$GUEST_KERNEL" ]; then
        for m in "$@"; do
            modinfo -k "$GUEST_KVER" "$m" >/dev/null 2>&1 || miss+=("module $m for kernel $GUEST_KVER")
        done
    fi
    if [ ${#miss[@]} -gt 0 ]; then
        echo "# skipped: no ${miss[*]}; contrib/setup installs the packages"
        exit 77
    fi
}

_guest_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    if [ -n "$guest_pid" ]; then           # a signal while the guest runs
        kill -TERM "$guest_pid" 2>/dev/null
        wait "$guest_pid" 2>/dev/null
    fi
    rm -rf "$GUEST_WORK"
    exit "$rc"
}

# _guest_started PID: the start time of a process (with the pid it names one process for good)
_guest_started() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }

guest_prepare() {
    local d pid start
    for d in "${TMPDIR:-/tmp}"/xbguest.*; do
        [ -f "$d/owner" ] && read -r pid start < "$d/owner" || continue
        [ "$(_guest_started "$pid")" = "$start" ] || rm -rf "$d"
    done
    GUEST_WORK=$(mktemp -d "${TMPDIR:-/tmp}/xbguest.XXXXXX")
    echo "$$ $(_guest_started $$)" > "$GUEST_WORK/owner"
    trap _guest_cleanup EXIT
    trap 'exit 143' TERM
    trap 'exit 130' INT
    local stage=$GUEST_WORK/initramfs m src
    mkdir -p "$stage/modules"
    for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
        src=$(modinfo -n -k "$GUEST_KVER" "$m" 2>/dev/null)
        case "$src" in
            ""|"(builtin)") continue;;
            *.xz)   xz -dc "$src" > "$stage/modules/$m.ko";;
            *.zst)  zstd -qdc "$src" > "$stage/modules/$m.ko";;
            *)      cp "$src" "$stage/modules/$m.ko";;
        esac
        echo "$m.ko" >> "$stage/modules/order"
    done
    if ! gcc -static -O2 -o "$stage/init" "$TOP_SRCDIR/test/guest/guest_init.c" 2> "$GUEST_WORK/cc.log"; then
        not_ok "static init for the guest"; diag < "$GUEST_WORK/cc.log"; tap_done; exit 1
    fi
    (cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$GUEST_WORK/initrd.gz"
}

guest_boot() {
    local secs=$1 mib=$2 cpus=$3 t0; shift 3
    exec 9>>"$XB_BENCH_LOCK"
    if ! flock -w "$XB_BENCH_LOCK_WAIT" 9; then
        exec 9>&-
        guest_qrc=125 guest_status="" guest_secs=0
        echo "lock $XB_BENCH_LOCK still held after $XB_BENCH_LOCK_WAIT s" > "$GUEST_WORK/out"
        return
    fi
    t0=$(date +%s.%N)
    local try tries=3 boot_wait=${GUEST_BOOT_WAIT:-45} waited
    for try in $(seq "$tries"); do
        # --foreground: QEMU stays in the test's process group, so a runner that kills the
        # group kills it too; the lock is not inherited (9>&-): it goes when this shell
        # lets it go.  -erms: with it glibc and the kernel copy 8 KiB - ~1 MiB with rep movsb,
        # which TCG runs a byte at a time: memcpy of 64 KiB ran at 277-427 MB/s in the guest,
        # 1,950 with -erms (docs/results-2026-11-28-guest-cpu).  GUEST_KERNEL_ARGS: more
        # kernel parameters (the benchmarks give the guest a TSC clock: bench/rsm-verbs-guest.sh)
        timeout --foreground -k 10 "$secs" qemu-system-x86_64 -accel tcg,thread=multi -cpu max,-erms \
            -m "$mib" -smp "$cpus" "${GUEST_QEMU_ARGS[@]}" \
            -kernel "$GUEST_KERNEL" -initrd "$GUEST_WORK/initrd.gz" \
            -append "console=ttyS0 quiet panic=-1 ${GUEST_KERNEL_ARGS-} -- $*" \
            -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
            -nodefaults -display none -serial stdio -no-reboot \
            < /dev/null > "$GUEST_WORK/console" 2>&1 9>&- &
        guest_pid=$!
        # Now and then (about 1 boot in 15 here) TCG hangs before guest_init's first line,
        # burning system time, and would sit until the time limit: a boot that shows no
        # sign of life in GUEST_BOOT_WAIT seconds (a boot reaches it in 3-10 s, under load
        # too) is stopped and tried again, 3 tries in all; the last is stopped too, so a
        # guest that never boots costs minutes, not the whole limit.
        waited=0
        while kill -0 "$guest_pid" 2>/dev/null && ! grep -q 'guest_init: root mounted' \
                "$GUEST_WORK/console" 2>/dev/null && [ "$waited" -lt "$boot_wait" ]; do
            sleep 1; waited=$((waited + 1))
        done
        if kill -0 "$guest_pid" 2>/dev/null && ! grep -q 'guest_init: root mounted' "$GUEST_WORK/console"; then
            kill -TERM "$guest_pid" 2>/dev/null
            wait "$guest_pid"
            echo "# guest_boot: no sign of life from the guest in $boot_wait s (a TCG boot hang, try $try of $tries)" >&2
            [ "$try" -lt "$tries" ] && continue
        fi
        break
    done
    wait "$guest_pid"; guest_qrc=$?
    guest_pid=""
    exec 9>&-
    guest_secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    tr -d '\r' < "$GUEST_WORK/console" > "$GUEST_WORK/out"
    guest_status=$(sed -n 's/^xbguest-exit \([0-9]*\).*/\1/p' "$GUEST_WORK/out" | tail -1)
}

# guest_report WHAT MIN_OK PREFIX: the TAP of a guest that ran: WHAT booted and powered
# off; the script's checks (each named PREFIX...) and its comments in their order; its
# exit status; at least MIN_OK of its checks passed; no QEMU of this test left; the time.
guest_report() {
    local what=$1 min=$2 prefix=$3 out=$GUEST_WORK/out line n left
    if [ "$guest_qrc" -eq 0 ] && [ -n "$guest_status" ]; then
        ok "$what booted and powered off ($(grep -o '[0-9]* cpus, [0-9]* MiB, [0-9]* NUMA nodes' "$out"), kernel $GUEST_KVER)"
    else
        not_ok "$what (qemu exit $guest_qrc, guest status '${guest_status:-none}')"; tail -40 "$out" | diag
    fi
    while IFS= read -r line; do
        case "$line" in
            "ok "*)     ok "$prefix${line#ok * - }";;
            "not ok "*) not_ok "$prefix${line#not ok * - }";;
            "# "*)      echo "$line";;
        esac
    done < "$out"
    grep -E '^\[ *[0-9.]+\] ' "$out" | grep -v 'reboot: Power down' | head -20 | diag   # kernel messages
    if [ "${guest_status:-1}" != 0 ]; then
        not_ok "guest script exited ${guest_status:-?}"; grep -vE '^(ok|not ok) ' "$out" | tail -30 | diag
    fi
    n=$(grep -cE '^ok ' "$out")
    check "all checks ran in the guest ($n passed, at least $min)" [ "$n" -ge "$min" ]
    left=$(pgrep -f -- "$GUEST_WORK/initrd.gz")
    check "no QEMU process of this test left (${left:-none})" [ -z "$left" ]
    echo "# guest: $guest_secs s from QEMU's start to its power-off"
}
