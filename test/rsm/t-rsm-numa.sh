#!/bin/bash
# btl_rsm places each area on the NUMA node of the receivers it serves (mbind,
# btl_rsm_numa_place).  This machine has one node, so the test boots a two-node
# QEMU guest on Debian's own kernel (linux-image-amd64), one vCPU per node, whose
# root is the host's, read-only over 9p: the guest runs this build's rsm_numa with
# the installed component, one rank bound to each node, and checks in
# /proc/self/numa_maps that every page of each area is on its receivers' node; with
# numa_place off it shows where first touch put them instead (the sender's node).
# The guest runs under TCG, not KVM: this machine's /dev/kvm (nested, PVM) stops a
# stock kernel right after its real-mode setup.  Boot and test take ~25 s.
# Skipped (77) without qemu-system-x86_64, a kernel in /boot, cpio or static libc.
. "$(dirname "$0")/../lib.sh"
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -1)
if ! command -v qemu-system-x86_64 >/dev/null || [ -z "$kernel" ] || ! command -v cpio >/dev/null \
    || [ ! -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ ! -x "$TOP_BUILDDIR/test/rsm/rsm_numa" ]; then
    echo "# needs qemu-system-x86, linux-image-amd64, cpio and libc6-dev (contrib/setup installs them)"
    exit 77
fi
kver=${kernel#/boot/vmlinuz-}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
stage=$work/initramfs
mkdir -p "$stage/modules"
for m in virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci netfs fscache 9pnet 9pnet_virtio 9p; do
    src=$(modinfo -n -k "$kver" "$m" 2>/dev/null)
    case "$src" in
        "")     continue;;                         # built in
        *.xz)   xz -dc "$src" > "$stage/modules/$m.ko";;
        *.zst)  zstd -qdc "$src" > "$stage/modules/$m.ko";;
        *)      cp "$src" "$stage/modules/$m.ko";;
    esac
    echo "$m.ko" >> "$stage/modules/order"
done
if ! gcc -static -O2 -o "$stage/init" "$TOP_SRCDIR/test/rsm/numa_init.c" 2> "$work/cc.log"; then
    not_ok "static init for the guest"; diag < "$work/cc.log"; tap_done; exit
fi
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz"

timeout 600 qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 2048 -smp 2 \
    -object memory-backend-ram,id=m0,size=1024M -object memory-backend-ram,id=m1,size=1024M \
    -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1,memdev=m1 \
    -kernel "$kernel" -initrd "$work/initrd.gz" \
    -append "console=ttyS0 quiet panic=-1 -- $TOP_SRCDIR/test/rsm/numa_guest.sh $TOP_BUILDDIR" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -nodefaults -display none -serial stdio -no-reboot < /dev/null > "$work/console" 2>&1
qrc=$?
tr -d '\r' < "$work/console" > "$work/out"
status=$(sed -n 's/^xbnuma-exit \([0-9]*\).*/\1/p' "$work/out" | tail -1)
if [ "$qrc" -eq 0 ] && [ -n "$status" ]; then
    ok "two-node guest booted ($(grep -o '[0-9]* cpus, [0-9]* NUMA nodes' "$work/out"))"
else
    not_ok "two-node guest (qemu exit $qrc, guest status '${status:-none}')"; tail -30 "$work/out" | diag
fi
relay_tap "rsm numa: " < <(grep -E '^(not )?ok ' "$work/out")
grep '^# numa_place 0' "$work/out"      # for contrast: where first touch puts the pages
if [ "${status:-1}" != 0 ]; then
    not_ok "guest script exited ${status:-?}"; grep -vE '^(ok|not ok) ' "$work/out" | tail -30 | diag
fi
[ "$(grep -cE '^ok ' "$work/out")" -ge 4 ] || { not_ok "fewer checks than expected ran in the guest"; tail -30 "$work/out" | diag; }
tap_done
