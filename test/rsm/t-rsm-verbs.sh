#!/bin/bash
# btl rsm between hosts: its verbs (RDMA write) back end over soft-RoCE.  One QEMU guest
# (test/guest/guest_lib.sh: Debian's kernel under TCG, the machine's root read-only over
# 9p, 2 vCPUs, 3 GiB) holds two hosts h0 and h1, each with its own host name, /dev/shm,
# NIC and rxe device (test/guest/guest_hosts.sh; the host's env file names its device,
# btl_rsm_verbs_devices=rxeI:1); jobs reach them through Open MPI's rsh launcher, one
# orted per host.  Checked in the guest (rsm_verbs_guest.sh), every job with
# --mca pml ob1 --mca btl self,rsm and every message verified:
#  - 2 hosts x 1 rank, mpi_p2p up to 16 MiB, the peer over verbs (btl_base_verbose 10),
#    its bytes counted on rxe0/rxe1 and the NICs, not on loopback; the MPI_T counters
#    btl_rsm_verbs_writes/_write_bytes/_connects move with the traffic (mpit_read verbs,
#    and verbs-2copy: through the pool, no direct units, delayed acks);
#  - sequence numbers: xb-bw with queues starting just before the wrap of their numbers;
#    a first message sent before the peer's connection request was taken; rsm_lapwrap
#    (ack rows 128 laps old must not read as this lap's);
#  - 2 hosts x 2 ranks, on-host peers by shm and off-host ones by verbs in one job; the
#    same with btl_rsm_verbs 2 (every peer by verbs); one host with every peer by verbs;
#  - failures that must be quick and named: btl_rsm_verbs 0 (peer unreachable), a pool
#    the back end cannot take, parameters that differ between the hosts (REJ);
#  - rank 0 away from MPI for 4 s while rank 1 first sends to it: its listener thread
#    answers; with btl_rsm_verbs_listener 0 the job ends with the unanswered-request message;
#  - MPI_THREAD_MULTIPLE, 3 threads a rank on 2 x 2; one-sided across hosts (rsm_rma on
#    2 x 2, every byte and fetched value, and its MPI_T counters on 2 x 1); a dynamic window
#    ends at once with the message naming Open MPI 4.1.4's osc rdma deadlock; a put from a
#    const array goes through a copy; rsm_soak on 2 x 2;
#  - striping over two rails (each host's second NIC and rxe device): mpi_p2p up to 16 MiB
#    with a share of the bytes on the second NICs; one-sided puts and gets cut over both;
#  - registered memory: btl_rsm_verbs_registered_bytes per host after an all-pairs exchange
#    among 2 x 4 ranks (with btl_rsm_verbs_listener 2: all connections at once, the thread
#    answering) equals the formula (per connection a queue and ack row, per (sender,
#    destination host) one pool the host's receivers share, one pool file per remote
#    sender); a streaming sender grows its pool to btl_rsm_verbs_pool_chunks, the others
#    stay at one;
#  - h1's NIC taken down under a verified rsm_soak, and under an idle connected job: each
#    job ends within seconds with the back end's verbs-failed or port-down message, nothing
#    verified wrong; the NIC, its route and neighbour come back;
#  - jobs of an ordinary user (nobody, no capabilities): with 8 MiB of locked memory
#    mpi_p2p passes, with 32 KiB the job fails at once with the message naming the limit;
#  - nothing left (processes, the hosts' /dev/shm, verbs resources); the guest's last
#    comment names its longest jobs.
# RSM_VERBS_FULL=1 (`RSM_VERBS_FULL=1 test/run --timeout 2700 -k t-rsm-verbs`: the runner's
# own limit is 1200 s a test) adds what repeats the above on another layout or size, and
# the long jobs: queues from 0 beside those from the wrap; rsm_lapwrap to N 2040 (2026 by
# default); rsm_rma on 2 x 1 and with 400 fetch-and-ops a rank (100 by default: with 4
# ranks on 2 emulated CPUs each one waits for its target's turn); the rails' MPI_T
# counters, one-sided windows and a soak over them; registered memory at 2, 4 and 8 ranks
# per host; the pool-growth job's twin without growth; mpi4py's test_p2p_obj, _p2p_buf,
# _cco_buf, and its one-sided modules with --mca osc_rdma_btls rsm (when the time left
# holds them); 15 s soaks (10 by default); the guest's limit is then 2400 s (a full run
# took 1,396 s on 2026-12-05 with the one-sided modules cut at their 420 s, 46 of 126 tests
# done: test_rma and the start of test_rma_nb took 300 s, test_rma 169 on 2026-12-04;
# they now get up to 900 s).  The default run took 900+ s with all of these on a slow host
# (2026-12-05) and 8-10 minutes without (479-558 s); a job costs ~7 s under TCG before its
# first rank starts.
# Out here: no QEMU process and no temporary file left, on every exit path.  Skipped (77)
# without QEMU, the kernel package, its veth/bridge/overlay/rdma_rxe modules, cpio or
# static libc, or a build without libibverbs.
. "$(dirname "$0")/../lib.sh"
. "$TOP_SRCDIR/test/guest/guest_lib.sh"
guest_require veth bridge overlay crc32_generic rdma_rxe
xb_built_with VERBS ||
    { echo "# skipped: btl rsm built without its verbs back end (no libibverbs-dev at configure)"; exit 77; }
for p in test/mpi/mpi_p2p test/mpi/mpit_read test/mpi/mpi_late test/mpi/mpi_threads test/rsm/rsm_soak \
         test/rsm/rsm_lapwrap; do
    [ -x "$TOP_BUILDDIR/$p" ] || { echo "# $TOP_BUILDDIR/$p not built (make check)"; exit 77; }
done
for c in nsenter unshare rdma; do
    command -v $c >/dev/null || { echo "# skipped: no $c (util-linux, iproute2)"; exit 77; }
done
t0=$SECONDS
guest_prepare
# RSM_VERBS_FULL=1: also the jobs that repeat what the others show on another layout or at
# another size, and the long ones (rsm_verbs_guest.sh, "full run"); the guest's limit is
# then 2400 s
FULL=${RSM_VERBS_FULL:-0}
# ranks per host of the registered-memory jobs (8: 16 ranks, ~22-35 s; 50-60 s when rxe
# retransmits heavily, as with btl_rsm_verbs_timeout 14)
MEM_N=${RSM_VERBS_MEM_N:-$([ "$FULL" = 1 ] && echo 2,4,8 || echo 4)}
# the guest's time limit, which its script also keeps to (section 7b)
GUEST_SECS=$([ "$FULL" = 1 ] && echo 2400 || echo 900)
guest_boot "$GUEST_SECS" 3072 2 "$TOP_SRCDIR/test/rsm/rsm_verbs_guest.sh" "$TOP_BUILDDIR" "$MEM_N" "$GUEST_SECS" "$FULL"
n_mem=$(tr ',' '\n' <<< "$MEM_N" | grep -c .)
guest_report "guest" $((58 + 6 * n_mem)) "rsm verbs: "
echo "# this test: $((SECONDS - t0)) s in all"
tap_done
