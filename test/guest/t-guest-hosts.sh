#!/bin/bash
# Hosts in the soft-RoCE guest, launched as on a cluster: one QEMU guest (guest_lib.sh:
# Debian's kernel under TCG, the machine's root read-only over 9p, 2 vCPUs, 3 GiB) holds
# two hosts h0 and h1, each with its own host name, /dev/shm and /tmp, its own NIC and its
# own rxe device (guest_hosts.sh); jobs go to them through Open MPI's rsh launcher with
# plm_rsh_agent = test/guest/guest_agent (one orted per host).  Checked in the guest
# (hosts_guest.sh): names and private files; ib_write_lat rxe0 -> rxe1; with
# --mca btl self,vader,tcp on 2 hosts x 2 ranks a verified on-host stream crosses no NIC
# (vader) and an off-host one crosses the NICs (tcp), MPI_Get_processor_name names the
# host and MPI_COMM_TYPE_SHARED splits by host, mpi_p2p passes with on- and off-host
# peers in one job; pml ucx over the rxe devices moves a verified stream (rxe packet
# counters); launch overhead per job; a job of more ranks than the guest's CPUs yields
# when idle, one that fits does not, the job's own --mca wins; nothing left after the
# jobs.  Out here: no QEMU process and no temporary file left, on every exit path.  About
# 2 minutes.
# Skipped (77) without QEMU, the kernel package, its veth/bridge/overlay/rdma_rxe modules,
# cpio or static libc.
. "$(dirname "$0")/../lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_require veth bridge overlay crc32_generic rdma_rxe
for p in test/vcluster/vc_hosts test/mpi/mpi_p2p; do
    [ -x "$TOP_BUILDDIR/$p" ] || { echo "# $TOP_BUILDDIR/$p not built (make check)"; exit 77; }
done
for c in nsenter unshare rdma; do
    command -v $c >/dev/null || { echo "# skipped: no $c (util-linux, iproute2)"; exit 77; }
done
t0=$SECONDS
guest_prepare
guest_boot 420 3072 2 "$TOP_SRCDIR/test/guest/hosts_guest.sh" "$TOP_BUILDDIR"
guest_report "guest" 20 "guest: "
echo "# this test: $((SECONDS - t0)) s in all"
tap_done
