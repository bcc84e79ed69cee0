/*
 * Reads btl rsm's MPI_T performance variables (btl_rsm_pvar.c) from inside an
 * MPI job, the way a tool would, and checks that they move with the traffic
 * the program makes (test/mpi/t-mpit.sh, test/build/t-optin.sh).
 *
 *   mpit_read traffic   2 ranks over self,rsm: phases of inline, pool,
 *                       single-copy and streaming traffic from rank 0 to 1,
 *                       every payload verified, and after each the exact
 *                       change of the counters the traffic determines
 *   mpit_read poolfull  2 ranks, a small pool: rank 1 receives late, so rank
 *                       0's eager messages find the pool full and are staged
 *   mpit_read window    the same with 64 messages of 64 KiB, eager: the default
 *                       pool holds them all (none staged); window-full: a pool
 *                       that does not (staged)
 *   mpit_read both-ways  2 ranks, every receiver near enough for two copies (the
 *                       job's thresholds): 256 KiB messages one way and as a
 *                       ping-pong go through the pool, windows of them both ways
 *                       are read by single copy (btl_rsm_both_ways_offers);
 *                       both-ways-off: the job turned that off, the pool throughout
 *   mpit_read used      prints "rsm: used" when rsm carried this job's
 *                       messages (its pvars exist and count them), "rsm: unused"
 *                       otherwise; for the opt-in test
 *   mpit_read verbs     2 ranks on two hosts over self,rsm (the verbs back end,
 *                       test/rsm/rsm_verbs_guest.sh): btl_rsm_verbs_writes,
 *                       _write_bytes and _connects exist and move with verified
 *                       eager and rendezvous traffic from rank 0 to 1, and the
 *                       1 MiB messages go by single copy: one RDMA read each
 *                       (btl_rsm_verbs_reads, _read_bytes, _user_registrations);
 *                       4 KiB messages through the pool go as one write each
 *                       (verbs_direct_units), none with btl_rsm_verbs_direct 0;
 *                       with btl_rsm_verbs_ack_delay_us 1000000 the receiver
 *                       writes acks for every second of them at most
 *                       mpit_read verbs R: the job runs on R rails (btl_rsm_verbs_rails):
 *                       each 1 MiB read is cut across them, the receiver's
 *                       verbs_striped_reads and verbs_rail_read_bytes say so (0 on one rail)
 *   mpit_read verbs-2copy    the same with btl_rsm_verbs_single_copy_min SIZE_MAX:
 *                       no reads, the 1 MiB messages through the pool
 *   mpit_read verbs-memory   any number of ranks on two hosts over self,rsm: a
 *                       verified all-pairs exchange (a 100 B and a 64 KiB message
 *                       from every rank to every other), then each rank's
 *                       btl_rsm_verbs_registered_bytes and _registered_shared_bytes,
 *                       read before anything else is sent; rank 0 gathers and
 *                       prints them, one line per rank, with the verbs pools this
 *                       rank sees in /dev/shm (count and bytes; every rank of a host
 *                       sees the same ones):
 *                       "verbs-memory: rank R host H registered_bytes V shared_bytes S
 *                        pool_files F pool_file_bytes B pool_grows G"
 *   mpit_read verbs-idle     2 ranks on two hosts: 100 B each way, verified (the
 *                       connections are made), "verbs-idle: connected", then both
 *                       wait in MPI_Recv for a message nobody sends: a job that is
 *                       connected and idle, for the port-down check
 *   mpit_read verbs-grow [G]  4 ranks, 0 and 1 on one host, 2 and 3 on another: a
 *                       verified all-pairs exchange of 100 B (every connection made,
 *                       every pool one chunk), then rank 0 streams verified messages
 *                       of 256 KiB to ranks 2 and 3 (its pool on their host may
 *                       grow): 24, and more until its btl_rsm_verbs_pool_grows is G
 *                       (0 unless given; at most 480); then the same lines as
 *                       verbs-memory, and rank 0's "verbs-grow: stream S bytes in T s"
 * Rank 0 prints TAP; the exit status is 1 when a check failed.
 */
#include <glob.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpit_bind.h"
#include "xb_pattern.h"

static const char *names[] = {
    "inline_messages", "inline_bytes", "pool_messages", "pool_bytes", "staged_starts",
    "parked_starts", "single_copy_gets", "single_copy_bytes", "split_gets",
    "split_halves_written", "split_halves_written_bytes", "split_halves_taken_back",
    "near_decisions", "far_decisions", "dropped_malformed", "dropped_unknown_tag",
    "dropped_bad_help", "pool_full", "paired_messages", "eager_limit_lowered",
    "distance_sets_loaded", "eager_limit_load_lowered", "both_ways_offers",
};
enum { INL, INL_B, POOL, POOL_B, STAGED, PARKED, GETS, GET_B, SPLITS, HALVES, HALF_B, TAKEN,
       NEAR, FAR, DROP_M, DROP_T, DROP_H, POOL_FULL, PAIRED, EAGER_LOWERED, DIST_LOADED, EAGER_LOAD,
       BOTH_WAYS, NVARS };

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handle[NVARS];
static int rank, failures, tap_n;

/* Bind every pvar; false when rsm's are not there (rsm not in this job). */
static bool bind_all(void)
{
    return mpit_bind(&session, handle, "btl_rsm_", names, NVARS, MPI_T_PVAR_CLASS_COUNTER);
}

static void read_all(uint64_t v[NVARS])
{
    for (int i = 0; i < NVARS; i++) {
        unsigned long x = 0;
        if (MPI_T_pvar_read(session, handle[i], &x) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: MPI_T_pvar_read of btl_rsm_%s failed\n", rank, names[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        v[i] = x;
    }
}

static void check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(bool cond, const char *fmt, ...)
{
    va_list ap;
    if (rank != 0) {
        return;             /* rank 0 holds both ranks' figures */
    }
    failures += !cond;
    printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* N messages of LEN bytes from rank 0 to rank 1 (WINDOW outstanding), verified. */
static long transfer(int n, size_t len, int window, int tag)
{
    unsigned char *buf = malloc(len * (size_t) window + 1);
    MPI_Request req[64];
    long bad = 0;
    for (int i = 0; i < n; i += window) {
        int k = n - i < window ? n - i : window;
        for (int j = 0; j < k; j++) {
            unsigned char *b = buf + (size_t) j * len;
            if (rank == 0) {
                xb_fill(b, len, xb_seed(0, (uint64_t) (i + j), tag));
                MPI_Isend(b, (int) len, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &req[j]);
            } else {
                MPI_Irecv(b, (int) len, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &req[j]);
            }
        }
        MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        for (int j = 0; rank == 1 && j < k; j++) {
            bad += xb_mismatch(buf + (size_t) j * len, len, xb_seed(0, (uint64_t) (i + j), tag)) >= 0;
        }
    }
    free(buf);
    return bad;
}

/* N messages of LEN bytes each way between ranks 0 and 1 (WINDOW outstanding
 * each way), verified on both. */
static long exchange(int n, size_t len, int window, int tag)
{
    unsigned char *out = malloc(len * (size_t) window + 1), *in = malloc(len * (size_t) window + 1);
    MPI_Request req[128];
    const int peer = 1 - rank;
    long bad = 0;
    for (int i = 0; i < n; i += window) {
        int k = n - i < window ? n - i : window;
        for (int j = 0; j < k; j++) {
            MPI_Irecv(in + (size_t) j * len, (int) len, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                      &req[k + j]);
        }
        for (int j = 0; j < k; j++) {
            unsigned char *b = out + (size_t) j * len;
            xb_fill(b, len, xb_seed(rank, (uint64_t) (i + j), tag));
            MPI_Isend(b, (int) len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[j]);
        }
        MPI_Waitall(2 * k, req, MPI_STATUSES_IGNORE);
        for (int j = 0; j < k; j++) {
            bad += xb_mismatch(in + (size_t) j * len, len, xb_seed(peer, (uint64_t) (i + j), tag)) >= 0;
        }
    }
    free(out);
    free(in);
    return bad;
}

/* N round trips of LEN bytes between ranks 0 and 1, each message verified. */
static long pingpong(int n, size_t len, int tag)
{
    unsigned char *buf = malloc(len + 1);
    const int peer = 1 - rank;
    long bad = 0;
    for (int i = 0; i < n; i++) {
        for (int turn = 0; turn < 2; turn++) {
            const uint64_t seed = xb_seed(turn, (uint64_t) i, tag);
            if (rank == turn) {
                xb_fill(buf, len, seed);
                MPI_Send(buf, (int) len, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            } else {
                MPI_Recv(buf, (int) len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                bad += xb_mismatch(buf, len, seed) >= 0;
            }
        }
    }
    free(buf);
    return bad;
}

/* Rank 1's bad-payload count and counter changes, at rank 0. */
static long peer_bad(long bad)
{
    long all = bad;
    MPI_Reduce(&bad, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    return all;
}
static void peer_delta(const uint64_t d[NVARS], uint64_t out[NVARS])
{
    if (rank == 1) {
        MPI_Send(d, NVARS, MPI_UINT64_T, 0, 99, MPI_COMM_WORLD);
    } else {
        MPI_Recv(out, NVARS, MPI_UINT64_T, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Counters before; traffic; barrier; counters after (the barrier's own
 * messages are sent after the traffic, and counted in the next phase's
 * "before" only, since each phase starts from a fresh read).  A negative
 * WINDOW: that many each way at once (exchange); 0: N round trips (pingpong). */
typedef struct { uint64_t a[NVARS], d[NVARS], peer[NVARS]; long bad; } phase_t;
static void run_phase(phase_t *p, int n, size_t len, int window, int tag)
{
    uint64_t b[NVARS];
    MPI_Barrier(MPI_COMM_WORLD);
    read_all(b);
    long bad = window < 0 ? exchange(n, len, -window, tag)
               : window == 0 ? pingpong(n, len, tag) : transfer(n, len, window, tag);
    read_all(p->a);         /* before the barrier: only the phase's own messages */
    for (int i = 0; i < NVARS; i++) {
        p->d[i] = p->a[i] - b[i];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    p->bad = peer_bad(bad);
    peer_delta(p->d, p->peer);
}

static bool no_drops(const uint64_t *d)
{
    return d[DROP_M] == 0 && d[DROP_T] == 0 && d[DROP_H] == 0;
}

static void mode_traffic(void)
{
    phase_t p;
    /* 1. inline: 1000 B + ob1's header fit btl_rsm_inline_max (1088) */
    const int n1 = 100;
    const size_t s1 = 1000;
    run_phase(&p, n1, s1, 1, 1);
    uint64_t extra = p.d[INL_B] - n1 * s1;
    check(p.bad == 0, "inline phase: %d messages of %zu B verified", n1, s1);
    check(p.d[INL] == (uint64_t) n1 && p.d[POOL] == 0,
          "inline_messages +%llu (expected %d), pool_messages +%llu (expected 0)",
          (unsigned long long) p.d[INL], n1, (unsigned long long) p.d[POOL]);
    check(p.d[INL_B] >= n1 * s1 && extra % n1 == 0 && extra / n1 < 64,
          "inline_bytes +%llu = %d x (%zu B payload + %llu B ob1 header)",
          (unsigned long long) p.d[INL_B], n1, s1, (unsigned long long) (extra / n1));
    check(p.peer[INL] == 0 && p.peer[POOL] == 0, "the receiver sent nothing back (+%llu inline)",
          (unsigned long long) p.peer[INL]);

    /* 2. pool: eager messages past the inline limit, one pointer postbox each */
    const int n2 = 50;
    const size_t s2 = 8000;
    run_phase(&p, n2, s2, 1, 2);
    extra = p.d[POOL_B] - n2 * s2;
    check(p.bad == 0, "pool phase: %d messages of %zu B verified", n2, s2);
    check(p.d[POOL] == (uint64_t) n2 && p.d[INL] == 0,
          "pool_messages +%llu (expected %d), inline_messages +%llu (expected 0)",
          (unsigned long long) p.d[POOL], n2, (unsigned long long) p.d[INL]);
    check(p.d[POOL_B] >= n2 * s2 && extra % n2 == 0 && extra / n2 < 64,
          "pool_bytes +%llu = %d x (%zu B + %llu B header)", (unsigned long long) p.d[POOL_B],
          n2, s2, (unsigned long long) (extra / n2));

    /* 3. single copy (the job sets btl_rsm_single_copy_near 1: every
     * rendezvous message is read by the receiver, split from 32 KiB) */
    const int n3 = 8;
    const size_t s3 = 1 << 20;
    run_phase(&p, n3, s3, 1, 3);
    check(p.bad == 0, "single-copy phase: %d messages of %zu B verified", n3, s3);
    check(p.peer[GETS] == (uint64_t) n3 && p.peer[GET_B] == n3 * s3,
          "receiver: single_copy_gets +%llu (expected %d), single_copy_bytes +%llu (expected %zu)",
          (unsigned long long) p.peer[GETS], n3, (unsigned long long) p.peer[GET_B], n3 * s3);
    check(p.d[GETS] == 0, "sender: single_copy_gets +%llu (expected 0)",
          (unsigned long long) p.d[GETS]);
    check(p.peer[SPLITS] == (uint64_t) n3 && p.d[HALVES] + p.peer[TAKEN] == (uint64_t) n3,
          "split_gets +%llu (expected %d) = halves written by the sender +%llu + taken back by "
          "the receiver +%llu", (unsigned long long) p.peer[SPLITS], n3,
          (unsigned long long) p.d[HALVES], (unsigned long long) p.peer[TAKEN]);
    check(p.d[HALF_B] == p.d[HALVES] * (s3 / 2),
          "split_halves_written_bytes +%llu = halves x %zu", (unsigned long long) p.d[HALF_B],
          s3 / 2);

    /* 4. a stream of windows: the sender collects acks and measures the receiver */
    const int n4 = 4000;
    run_phase(&p, n4, 1024, 64, 4);
    check(p.bad == 0, "streaming phase: %d messages of 1 KiB in windows of 64 verified", n4);
    check(p.d[NEAR] + p.d[FAR] >= 1, "near/far decisions on the sender: near +%llu, far +%llu",
          (unsigned long long) p.d[NEAR], (unsigned long long) p.d[FAR]);
    check(p.d[INL] == (uint64_t) n4, "inline_messages +%llu (expected %d)",
          (unsigned long long) p.d[INL], n4);

    uint64_t end[NVARS];
    read_all(end);
    check(no_drops(end) && no_drops(p.peer), "nothing dropped on either rank (malformed %llu, "
          "unknown tag %llu, bad help %llu)", (unsigned long long) end[DROP_M],
          (unsigned long long) end[DROP_T], (unsigned long long) end[DROP_H]);
    check(end[PARKED] == 0 && end[STAGED] == 0 && end[POOL_FULL] == 0,
          "default pool, receiver keeping up: nothing staged, parked or pool-full (%llu %llu %llu)",
          (unsigned long long) end[STAGED], (unsigned long long) end[PARKED],
          (unsigned long long) end[POOL_FULL]);
}

/* Two tiny messages per postbox (btl_rsm_pair_tiny) to a receiver on the node.
 * FAR: the job sets btl_rsm_nt_far_ns 1, so every decision is "far", else
 * 4294967295, so every one is "near"; ON: pairs expected (pair_tiny on and
 * btl_rsm_pair_min_ns left at 0), else not (WHY says which setting withholds them). */
static void mode_pairs(bool on, bool far, const char *why)
{
    phase_t p;
    run_phase(&p, 4000, 1024, 64, 5);
    check(p.bad == 0 && p.d[far ? FAR : NEAR] >= 1 && p.d[far ? NEAR : FAR] == 0,
          "a stream of 1 KiB messages verified; the sender measured its receiver %s (far +%llu, "
          "near +%llu)", far ? "far" : "near", (unsigned long long) p.d[FAR],
          (unsigned long long) p.d[NEAR]);
    const int n = 2048;
    for (size_t len = 0; len <= 11; len += len < 2 ? 1 : len < 8 ? 6 : len < 10 ? 2 : 1) {
        run_phase(&p, n, len, 64, 6 + (int) len);
        check(p.bad == 0 && p.d[INL] == (uint64_t) n,
              "%d messages of %zu B in windows of 64 verified, inline_messages +%llu", n, len,
              (unsigned long long) p.d[INL]);
        if (len <= 10 && on) {
            /* a window's sends pair up unless something else is sent in between */
            check(p.d[PAIRED] >= (uint64_t) n / 4 && p.d[PAIRED] <= (uint64_t) n / 2,
                  "%zu B: paired_messages +%llu, up to one in two (%d)", len,
                  (unsigned long long) p.d[PAIRED], n / 2);
        } else {
            check(p.d[PAIRED] == 0, "%zu B: paired_messages +%llu (%s)", len,
                  (unsigned long long) p.d[PAIRED],
                  on ? "25 B with ob1's match header: too long for half a postbox" : why);
        }
    }
    uint64_t end[NVARS];
    read_all(end);
    check(no_drops(end) && no_drops(p.peer), "nothing dropped on either rank (malformed %llu, "
          "unknown tag %llu)", (unsigned long long) end[DROP_M], (unsigned long long) end[DROP_T]);
}

/* Rank 1 posts its receives late: rank 0's 64 eager sends of LEN bytes all
 * wait in the pool, or in private memory (staged) where the pool cannot hold
 * them.  FULL: the job's pool is too small for the window (pool_full and
 * staged_starts move); else it holds it (neither moves). */
static void mode_window(size_t len, bool full)
{
    const int n = 64;
    uint64_t b[NVARS], a[NVARS], d[NVARS], peer[NVARS];
    MPI_Barrier(MPI_COMM_WORLD);
    read_all(b);
    if (rank == 1) {
        usleep(300000);
    }
    long bad = transfer(n, len, n, 5);
    read_all(a);
    for (int i = 0; i < NVARS; i++) {
        d[i] = a[i] - b[i];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bad = peer_bad(bad);
    peer_delta(d, peer);
    check(bad == 0, "%d messages of %zu B sent before the receiver read any all arrived intact",
          n, len);
    if (full) {
        check(d[POOL_FULL] >= 1 && d[STAGED] >= 1,
              "pool_full +%llu and staged_starts +%llu moved (both expected >= 1)",
              (unsigned long long) d[POOL_FULL], (unsigned long long) d[STAGED]);
    } else {
        check(d[POOL_FULL] == 0 && d[STAGED] == 0,
              "the window fits the pool: pool_full +%llu and staged_starts +%llu (both expected 0)",
              (unsigned long long) d[POOL_FULL], (unsigned long long) d[STAGED]);
    }
    check(d[POOL] == (uint64_t) n && d[PARKED] == 0,
          "every message went eager through the pool: pool_messages +%llu "
          "(expected %d), parked_starts +%llu (expected 0)", (unsigned long long) d[POOL], n,
          (unsigned long long) d[PARKED]);
}

/* A stream of 1 KiB messages (tag TAG) the sender measures, its receiver then
 * FAR or near; the eager limit LOWERED by it or not; then 200 messages of LEN in
 * windows of 8 (tag TAG + 1), all by rendezvous (read by single copy) when
 * LOWERED, else all eager through the pool. */
static void eager_follows_distance(bool far, bool lowered, size_t len, int tag)
{
    phase_t p;
    run_phase(&p, 4000, 1024, 64, tag);
    check(p.bad == 0 && (far ? p.d[FAR] >= 1 && p.d[NEAR] == 0 : p.d[NEAR] >= 1 && p.d[FAR] == 0),
          "a stream of 1 KiB messages verified; the sender measured its receiver %s (near +%llu, "
          "far +%llu)", far ? "far" : "near", (unsigned long long) p.d[NEAR],
          (unsigned long long) p.d[FAR]);
    check(p.a[EAGER_LOWERED] == (lowered ? 1u : 0u), "eager_limit_lowered %llu on the sender "
          "(expected %d)", (unsigned long long) p.a[EAGER_LOWERED], lowered ? 1 : 0);
    const int n = 200;
    run_phase(&p, n, len, 8, tag + 1);
    check(p.bad == 0, "%d messages of %zu B in windows of 8 verified", n, len);
    if (lowered) {
        check(p.peer[GETS] == (uint64_t) n && p.d[POOL] == 0,
              "all by rendezvous: the receiver's single_copy_gets +%llu (expected %d), the "
              "sender's pool_messages +%llu (expected 0)", (unsigned long long) p.peer[GETS], n,
              (unsigned long long) p.d[POOL]);
    } else {
        check(p.peer[GETS] == 0 && p.d[POOL] == (uint64_t) n,
              "all eager: the receiver's single_copy_gets +%llu (expected 0), the sender's "
              "pool_messages +%llu (expected %d)", (unsigned long long) p.peer[GETS],
              (unsigned long long) p.d[POOL], n);
    }
}

/* The eager limit follows the distance (btl_rsm_short_eager_ns): the job puts
 * every receiver in the middle band (nt_far_ns and short_eager_ns at their
 * maximum, two_copy_ns 1), so once the sender has measured its receiver (near),
 * 32 KiB messages, eager at the one-host limit, go by rendezvous and are read
 * by single copy.  ON false: the job also sets short_eager_ns 0, and they stay
 * eager. */
static void mode_eager(bool on)
{
    eager_follows_distance(false, on, 32768, 30);
}

/* On a host with a small last-level cache (forced by the job: two_copy_llc_min at
 * its maximum) the short limit is the far receivers' (btl_rsm_endpoint.c,
 * eager_follows): FAR, the job puts every receiver far (nt_far_ns 1), and once
 * measured 16 KiB messages, eager at 16 KiB + 64, go by rendezvous and are read
 * by single copy; otherwise (nt_far_ns at its maximum, every receiver near)
 * they stay eager.  The job sets stream_sends 0, so windows one way keep the
 * limit. */
static void mode_eager_far(bool far)
{
    eager_follows_distance(far, far, 16384, 32);
}

/* Distance samples taken under load decide nothing once a quiet set has
 * (rsm_distance.h, "Load"): rank 0 measures its receiver in a one-way stream
 * of inline messages, then both ranks exchange 8000 B pool messages both ways
 * at once; rank 0's samples there are taken while its own receives bring bulk
 * data in, so its sets are counted as loaded and decide nothing (but the one
 * whose first samples the stream took, which may be mostly quiet). */
static void mode_load(void)
{
    phase_t p;
    run_phase(&p, 4000, 1024, 64, 40);
    check(p.bad == 0 && p.d[NEAR] + p.d[FAR] >= 1,
          "a one-way stream of 1 KiB messages verified; the sender decided (near +%llu, far "
          "+%llu)", (unsigned long long) p.d[NEAR], (unsigned long long) p.d[FAR]);
    check(p.d[DIST_LOADED] == 0, "distance_sets_loaded +%llu in the one-way stream (expected 0)",
          (unsigned long long) p.d[DIST_LOADED]);
    const int n = 30000;
    run_phase(&p, n, 8000, -64, 41);
    /* eager through the pool, or (btl_rsm_loaded_eager_limit) read by single copy */
    check(p.bad == 0 && p.d[POOL] + p.peer[GETS] == (uint64_t) n
              && p.peer[POOL] + p.d[GETS] == (uint64_t) n,
          "%d messages of 8000 B each way verified, each through the pool or read by single "
          "copy (rank 0's: %llu + %llu, rank 1's: %llu + %llu)", n, (unsigned long long) p.d[POOL],
          (unsigned long long) p.peer[GETS], (unsigned long long) p.peer[POOL],
          (unsigned long long) p.d[GETS]);
    /* one decision may come from the set the stream began, mostly quiet */
    check(p.d[DIST_LOADED] >= 1 && p.d[NEAR] + p.d[FAR] <= 1,
          "rank 0 under load both ways: distance_sets_loaded +%llu (expected >= 1), decisions "
          "near +%llu far +%llu (expected at most the one the stream's last set began)",
          (unsigned long long) p.d[DIST_LOADED],
          (unsigned long long) p.d[NEAR], (unsigned long long) p.d[FAR]);
}

/* The eager limit under load (btl_rsm_loaded_eager_limit): the job puts every
 * receiver in the middle band (as mode_eager), so a stream lowers the limit
 * to the short one; exchanging 8000 B messages both ways one at a time (each
 * rank's turn one message, or a FIN and one) then lowers it to the one under
 * load (4 KiB + 64), and those messages go by rendezvous, read by single copy;
 * exchanging windows of 64 of them both ways streams (btl_rsm_stream_sends)
 * and lifts it again, so most go eager; so does a one-way stream of them; and
 * a one-way stream of 16 KiB messages, past the short limit, goes eager under
 * the stream limit. */
static void mode_eager_load(void)
{
    phase_t p;
    run_phase(&p, 4000, 1024, 64, 50);
    check(p.bad == 0 && p.a[EAGER_LOWERED] == 1 && p.a[EAGER_LOAD] == 0,
          "a stream of 1 KiB messages verified; the sender's limit went to the short one "
          "(eager_limit_lowered %llu, expected 1; eager_limit_load_lowered %llu, expected 0)",
          (unsigned long long) p.a[EAGER_LOWERED], (unsigned long long) p.a[EAGER_LOAD]);
    const int n = 30000;
    run_phase(&p, n, 8000, -1, 51);
    check(p.bad == 0, "%d messages of 8000 B each way, one at a time, verified", n);
    check(p.d[EAGER_LOAD] >= 1 && p.peer[GETS] >= (uint64_t) n / 2,
          "under load both ways, one message a turn: rank 0's eager_limit_load_lowered +%llu "
          "(expected >= 1); of its messages %llu went eager (pool_messages) and rank 1 read "
          "%llu by single copy (expected at least half)",
          (unsigned long long) p.d[EAGER_LOAD], (unsigned long long) p.d[POOL],
          (unsigned long long) p.peer[GETS]);
    run_phase(&p, n, 8000, -64, 53);
    check(p.bad == 0, "%d messages of 8000 B each way, in windows of 64, verified", n);
    check(p.d[POOL] >= (uint64_t) n / 2 && p.peer[POOL] >= (uint64_t) n / 2,
          "windows both ways stream: the limit under load lifted, %llu of rank 0's messages and "
          "%llu of rank 1's eager (pool_messages; expected at least half each), %llu and %llu "
          "read by single copy", (unsigned long long) p.d[POOL], (unsigned long long) p.peer[POOL],
          (unsigned long long) p.peer[GETS], (unsigned long long) p.d[GETS]);
    const int n3 = 10000;
    run_phase(&p, n3, 8000, 64, 52);
    check(p.bad == 0 && p.d[POOL] >= (uint64_t) n3 / 2,
          "a one-way stream of %d messages of 8000 B verified; the limit came back up: %llu of "
          "them eager (pool_messages; expected at least half), %llu read by single copy", n3,
          (unsigned long long) p.d[POOL], (unsigned long long) p.peer[GETS]);
    const int n4 = 4000;
    run_phase(&p, n4, 16384, 64, 54);
    check(p.bad == 0 && p.d[POOL] >= (uint64_t) n4 / 2,
          "a one-way stream of %d messages of 16 KiB verified: above the short limit, but "
          "within the stream limit (btl_rsm_stream_eager_limit): %llu of them eager "
          "(pool_messages; expected at least half), %llu read by single copy", n4,
          (unsigned long long) p.d[POOL], (unsigned long long) p.peer[GETS]);
}

/* Single copy to a near receiver while bulk data runs both ways (btl_rsm_get.c,
 * "both ways"): the job puts every receiver under btl_rsm_two_copy_ns and
 * nt_far_ns, so once measured (a stream of 1 KiB messages) every message past
 * the eager limit goes the two-copy way, but in windows of 256 KiB messages both
 * ways at once, where most are offered by single copy (ON), or none are (the
 * job turned btl_rsm_single_copy_both_ways off).  One way, and as a ping-pong,
 * nothing is offered either way. */
static void mode_both_ways(bool on)
{
    phase_t p;
    const size_t len = 256 * 1024;
    run_phase(&p, 4000, 1024, 64, 60);
    check(p.bad == 0 && p.d[NEAR] >= 1 && p.d[FAR] == 0,
          "a stream of 1 KiB messages verified; the sender found the receiver near (near +%llu, "
          "far +%llu)", (unsigned long long) p.d[NEAR], (unsigned long long) p.d[FAR]);
    const int n1 = 256;
    run_phase(&p, n1, len, 16, 61);
    check(p.bad == 0 && p.d[BOTH_WAYS] == 0 && p.peer[GETS] == 0,
          "%d messages of 256 KiB one way verified, through the pool: both_ways_offers +%llu, "
          "rank 1's single_copy_gets +%llu (expected 0 and 0)", n1,
          (unsigned long long) p.d[BOTH_WAYS], (unsigned long long) p.peer[GETS]);
    const int n2 = 200;
    run_phase(&p, n2, len, 0, 62);
    check(p.bad == 0 && p.d[BOTH_WAYS] + p.peer[BOTH_WAYS] == 0
              && p.d[GETS] + p.peer[GETS] == 0,
          "%d round trips of 256 KiB verified, through the pool: both_ways_offers +%llu and +%llu, "
          "single_copy_gets +%llu and +%llu (expected all 0)", n2,
          (unsigned long long) p.d[BOTH_WAYS], (unsigned long long) p.peer[BOTH_WAYS],
          (unsigned long long) p.d[GETS], (unsigned long long) p.peer[GETS]);
    const int n3 = 512;
    run_phase(&p, n3, len, -16, 63);
    check(p.bad == 0, "%d messages of 256 KiB each way, in windows of 16, verified", n3);
    if (on) {
        /* the first window or two go the two-copy way: nothing is seen before them */
        check(p.d[BOTH_WAYS] >= (uint64_t) n3 / 2 && p.peer[BOTH_WAYS] >= (uint64_t) n3 / 2
                  && p.peer[GETS] == p.d[BOTH_WAYS] && p.d[GETS] == p.peer[BOTH_WAYS],
              "offered by single copy: both_ways_offers +%llu and +%llu (expected at least half "
              "each), each read by the other (single_copy_gets +%llu and +%llu)",
              (unsigned long long) p.d[BOTH_WAYS], (unsigned long long) p.peer[BOTH_WAYS],
              (unsigned long long) p.peer[GETS], (unsigned long long) p.d[GETS]);
    } else {
        check(p.d[BOTH_WAYS] + p.peer[BOTH_WAYS] == 0 && p.d[GETS] + p.peer[GETS] == 0,
              "btl_rsm_single_copy_both_ways 0: both_ways_offers +%llu and +%llu, "
              "single_copy_gets +%llu and +%llu (expected all 0)",
              (unsigned long long) p.d[BOTH_WAYS], (unsigned long long) p.peer[BOTH_WAYS],
              (unsigned long long) p.d[GETS], (unsigned long long) p.peer[GETS]);
    }
    check(no_drops(p.d) && no_drops(p.peer), "nothing dropped");
}

static void mode_used(bool have)
{
    uint64_t b[NVARS] = {0}, a[NVARS] = {0};
    if (have) {
        read_all(b);
    }
    long bad = transfer(20, 100, 1, 6);
    if (have) {
        read_all(a);
    }
    bad = peer_bad(bad);
    int any = have && a[INL] - b[INL] == 20;   /* rank 0 sent them */
    MPI_Bcast(&any, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("rsm: %s (pvars %s; %llu of 20 messages through rsm; payloads %s)\n",
               any ? "used" : "unused", have ? "present" : "absent",
               (unsigned long long) (a[INL] - b[INL]), bad == 0 ? "verified" : "CORRUPT");
    }
    failures += bad != 0;
}

/* The verbs back end's counters, bound one by one so that a missing one is named. */
/* The end of a measured phase: this rank's counter changes D = A - B over N
 * counters, rank 1's bad-payload count added into the returned one, and rank
 * 1's changes in PEER at rank 0 (message tag TAG). */
static long phase_end(long bad, int n, const uint64_t *b, const uint64_t *a, uint64_t *d,
                      uint64_t *peer, int tag)
{
    for (int i = 0; i < n; i++) {
        d[i] = a[i] - b[i];
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bad = peer_bad(bad);
    if (rank == 1) {
        MPI_Send(d, n, MPI_UINT64_T, 0, tag, MPI_COMM_WORLD);
    } else {
        MPI_Recv(peer, n, MPI_UINT64_T, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return bad;
}

static void mode_verbs(bool single_copy, unsigned rails)
{
    enum { VW, VWB, VC, VR, VRB, VUR, VSR, VRR, VAW, VAP, VP, VPM, VD, NV };
    static const char *const vn[NV] = {"verbs_writes", "verbs_write_bytes", "verbs_connects",
                                       "verbs_reads", "verbs_read_bytes",
                                       "verbs_user_registrations", "verbs_striped_reads",
                                       "verbs_rail_read_bytes", "verbs_ack_writes",
                                       "verbs_acks_piggybacked", "verbs_posts",
                                       "pool_messages", "verbs_direct_units"};
    /* mpirun passes --mca settings to the ranks as OMPI_MCA_ variables */
    const char *dv = getenv("OMPI_MCA_btl_rsm_verbs_direct");
    const bool direct = dv == NULL || (strcmp(dv, "0") != 0 && strcmp(dv, "false") != 0);
    const char *ad = getenv("OMPI_MCA_btl_rsm_verbs_ack_delay_us");
    const bool ack_late = ad != NULL && strtoul(ad, NULL, 10) >= 1000000;
    MPI_T_pvar_session vs[NV];
    MPI_T_pvar_handle vh[NV];
    int have[NV], all[NV];
    for (int i = 0; i < NV; i++) {
        have[i] = mpit_bind(&vs[i], &vh[i], "btl_rsm_", &vn[i], 1, MPI_T_PVAR_CLASS_COUNTER);
    }
    MPI_Allreduce(have, all, NV, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    for (int i = 0; i < NV; i++) {
        check(all[i], "MPI_T performance variable btl_rsm_%s is there on both ranks%s", vn[i],
              all[i] ? "" : " (MISSING: MPI_T_pvar_get_index or handle_alloc failed)");
    }
    /* read: every counter there is, 0 for a missing one */
    #define VREAD(v) do { for (int i_ = 0; i_ < NV; i_++) { unsigned long x_ = 0; \
        if (all[i_] && MPI_T_pvar_read(vs[i_], vh[i_], &x_) != MPI_SUCCESS) { \
            fprintf(stderr, "rank %d: MPI_T_pvar_read of btl_rsm_%s failed\n", rank, vn[i_]); \
            MPI_Abort(MPI_COMM_WORLD, 2); } (v)[i_] = x_; } } while (0)
    static const struct { int n; size_t len; int window; const char *what; } ph[] = {
        {200, 1000, 1, "eager, 200 x 1000 B"},
        {200, 4096, 1, "eager through the pool, 200 x 4 KiB"},
        {8, 1 << 20, 1, "rendezvous, 8 x 1 MiB"},
    };
    for (size_t k = 0; k < sizeof ph / sizeof *ph; k++) {
        uint64_t b[NV], a[NV], d[NV], peer[NV];
        MPI_Barrier(MPI_COMM_WORLD);
        VREAD(b);
        long bad = transfer(ph[k].n, ph[k].len, ph[k].window, 20 + (int) k);
        VREAD(a);
        bad = phase_end(bad, NV, b, a, d, peer, 98);
        uint64_t bytes = (uint64_t) ph[k].n * ph[k].len;
        check(bad == 0, "verbs %s from rank 0 to 1 verified", ph[k].what);
        /* rendezvous messages of 1 MiB go by one RDMA read each with single copy
         * (btl_rsm_verbs_single_copy_min at most 1 MiB), through the pool otherwise */
        bool read = single_copy && ph[k].len >= (1 << 20);
        if (all[VW] && all[VWB] && !read) {
            check(d[VW] >= (uint64_t) ph[k].n && d[VWB] >= bytes,
                  "verbs %s: sender's verbs_writes +%llu (expected >= %d), verbs_write_bytes +%llu "
                  "(expected >= %llu); receiver's +%llu writes, +%llu bytes", ph[k].what,
                  (unsigned long long) d[VW], ph[k].n, (unsigned long long) d[VWB],
                  (unsigned long long) bytes, (unsigned long long) peer[VW],
                  (unsigned long long) peer[VWB]);
        }
        if (all[VW] && all[VP] && all[VPM] && all[VD]) {
            /* a pool message's block writes (one or more) go in the ibv_post_send of its
             * pointer postbox: one doorbell per message; a direct unit is one write
             * of blocks and postbox together; everything else, one post per write */
            check(d[VP] >= 1 && d[VD] <= d[VPM] && d[VP] + d[VPM] - d[VD] <= d[VW]
                  && (d[VPM] > d[VD] || d[VP] == d[VW]),
                  "verbs %s: sender's verbs_posts +%llu, verbs_writes +%llu, pool_messages "
                  "+%llu, verbs_direct_units +%llu (posts + pool messages not direct <= writes: "
                  "each such message's blocks went with its pointer postbox; otherwise a post "
                  "per write)", ph[k].what, (unsigned long long) d[VP], (unsigned long long) d[VW],
                  (unsigned long long) d[VPM], (unsigned long long) d[VD]);
        }
        if (all[VAW] && ph[k].len == 4096 && ack_late) {
            /* a stream of pool messages is acked every second message, a single one
             * only after the delay (a second here: never within the stream) */
            check(peer[VAW] <= (uint64_t) ph[k].n / 2 + 4,
                  "verbs %s, btl_rsm_verbs_ack_delay_us %s: receiver's verbs_ack_writes +%llu "
                  "(expected <= %d: one for every second pool message at most)", ph[k].what, ad,
                  (unsigned long long) peer[VAW], ph[k].n / 2 + 4);
        }
        if (all[VD] && all[VPM] && ph[k].len == 4096) {
            /* 4 KiB and ob1's header: one run of the pool, so one write each */
            uint64_t want = direct ? (uint64_t) ph[k].n : 0;
            check(d[VPM] >= (uint64_t) ph[k].n && d[VD] == want,
                  "verbs %s, btl_rsm_verbs_direct %s: sender's pool_messages +%llu (expected "
                  ">= %d), verbs_direct_units +%llu (expected %llu)", ph[k].what,
                  direct ? "on" : "off", (unsigned long long) d[VPM], ph[k].n,
                  (unsigned long long) d[VD], (unsigned long long) want);
        }
        if (all[VR] && all[VRB] && all[VUR]) {
            uint64_t want = read ? (uint64_t) ph[k].n : 0, want_b = read ? bytes : 0;
            check(peer[VR] == want && peer[VRB] == want_b && d[VR] == 0
                  && (read ? d[VUR] >= 1 && d[VWB] < bytes / 4 : d[VUR] == 0),
                  "verbs %s, single copy %s: receiver's verbs_reads +%llu (expected %llu), "
                  "verbs_read_bytes +%llu (expected %llu); sender's reads +%llu (expected 0), "
                  "user-buffer registrations +%llu (expected %s), write bytes +%llu%s", ph[k].what,
                  single_copy ? "on" : "off", (unsigned long long) peer[VR],
                  (unsigned long long) want, (unsigned long long) peer[VRB],
                  (unsigned long long) want_b, (unsigned long long) d[VR],
                  (unsigned long long) d[VUR], read ? ">= 1" : "0", (unsigned long long) d[VWB],
                  read ? " (the data does not go through the pool: under a quarter)" : "");
        }
        if (all[VSR] && all[VRR]) {
            /* a 1 MiB read cut in RAILS whole-page pieces: all but the first rail's */
            uint64_t want = read && rails > 1 ? (uint64_t) ph[k].n : 0;
            uint64_t share = ((uint64_t) ph[k].len / rails + 4095) & ~(uint64_t) 4095;
            uint64_t want_b = want ? (uint64_t) ph[k].n * (ph[k].len - share) : 0;
            check(peer[VSR] == want && peer[VRR] == want_b,
                  "verbs %s over %u rail%s: receiver's verbs_striped_reads +%llu (expected %llu), "
                  "verbs_rail_read_bytes +%llu (expected %llu)", ph[k].what, rails,
                  rails > 1 ? "s" : "", (unsigned long long) peer[VSR], (unsigned long long) want,
                  (unsigned long long) peer[VRR], (unsigned long long) want_b);
        }
    }
    /* a ping-pong: every reply acks the message it answers in its immediate, so
     * neither side writes acks of its own (the barrier's owed acks aside) */
    if (all[VAW] && all[VAP]) {
        enum { N = 200, LEN = 100, TAG = 25 };
        unsigned char out[LEN], in[LEN];
        uint64_t b[NV], a[NV], d[NV], peer[NV];
        long bad = 0;
        int other = 1 - rank;
        MPI_Barrier(MPI_COMM_WORLD);
        VREAD(b);
        for (int i = 0; i < N; i++) {
            xb_fill(out, LEN, xb_seed((uint64_t) rank, (uint64_t) i, TAG));
            if (rank == 0) {
                MPI_Send(out, LEN, MPI_BYTE, other, TAG, MPI_COMM_WORLD);
                MPI_Recv(in, LEN, MPI_BYTE, other, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(in, LEN, MPI_BYTE, other, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(out, LEN, MPI_BYTE, other, TAG, MPI_COMM_WORLD);
            }
            bad += xb_mismatch(in, LEN, xb_seed((uint64_t) other, (uint64_t) i, TAG)) >= 0;
        }
        VREAD(a);
        bad = phase_end(bad, NV, b, a, d, peer, 96);
        check(bad == 0, "verbs ping-pong, %d x %d B each way, verified", N, LEN);
        check(d[VAP] >= N - 1 && peer[VAP] >= N - 1 && d[VAW] <= 4 && peer[VAW] <= 4,
              "verbs ping-pong: acks ride in the immediates: verbs_acks_piggybacked rank 0 +%llu, "
              "rank 1 +%llu (expected >= %d each); verbs_ack_writes rank 0 +%llu, rank 1 +%llu "
              "(expected <= 4 each)", (unsigned long long) d[VAP], (unsigned long long) peer[VAP],
              N - 1, (unsigned long long) d[VAW], (unsigned long long) peer[VAW]);
    }
    if (all[VC]) {
        uint64_t v[NV], pv[NV];
        VREAD(v);
        if (rank == 1) {
            MPI_Send(v, NV, MPI_UINT64_T, 0, 97, MPI_COMM_WORLD);
        } else {
            MPI_Recv(pv, NV, MPI_UINT64_T, 1, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        /* one connection per peer on another host a rank sent to: rank 0 sent to rank 1 */
        check(v[VC] == 1 && pv[VC] <= 1, "verbs_connects: rank 0 %llu (expected 1), rank 1 %llu "
              "(expected at most 1)", (unsigned long long) v[VC], (unsigned long long) pv[VC]);
    }
    #undef VREAD
    for (int i = 0; i < NV; i++) {
        if (have[i]) {
            MPI_T_pvar_handle_free(vs[i], &vh[i]);
            MPI_T_pvar_session_free(&vs[i]);
        }
    }
}

static double init_secs;    /* MPI_Init's duration on this rank */

static void mode_verbs_idle(void)
{
    enum { N = 100, TAG = 40 };
    unsigned char out[N], in[N];
    int peer = 1 - rank;
    xb_fill(out, N, xb_seed(rank, (uint64_t) peer, TAG));
    MPI_Sendrecv(out, N, MPI_BYTE, peer, TAG, in, N, MPI_BYTE, peer, TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    check(xb_mismatch(in, N, xb_seed(peer, (uint64_t) rank, TAG)) < 0,
          "%d B each way verified", N);
    if (rank == 0) {
        printf("verbs-idle: connected\n");
        fflush(stdout);
    }
    MPI_Recv(in, N, MPI_BYTE, peer, TAG + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);  /* never sent */
}

/* Every rank sends SMALL and LARGE bytes to every other and receives the same
 * from each, all at once; the payloads depend on (sender, receiver, tag).
 * Then the verbs back end's registered bytes: by now every connection this
 * rank sends or receives on exists.  Rank 0 prints them per rank. */
static void mode_verbs_memory(int size, int grow_to)
{
    enum { SMALL = 100, LARGE = 64 * 1024, TAG_S = 30, TAG_L = 31, TAG_G = 32 };
    enum { NSTREAM = 24, MAXSTREAM = 480, STREAM = 256 * 1024, WINDOW = 4 };
    static const char *const vn[3] = {"verbs_registered_bytes", "verbs_registered_shared_bytes",
                                      "verbs_pool_grows"};
    /* the registered bytes are levels (amounts now, whatever was registered before the
     * handles started: a peer's connection request may be accepted in MPI_Init), the
     * grows a counter */
    MPI_T_pvar_session vs_level, vs;
    MPI_T_pvar_handle vh[3];
    int have = mpit_bind(&vs_level, vh, "btl_rsm_", vn, 2, MPI_T_PVAR_CLASS_LEVEL)
               && mpit_bind(&vs, vh + 2, "btl_rsm_", vn + 2, 1, MPI_T_PVAR_CLASS_COUNTER),
        all_have;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    check(all_have, "MPI_T performance variables btl_rsm_verbs_registered_bytes, "
          "_registered_shared_bytes and _pool_grows are there on every rank%s",
          all_have ? "" : " (MISSING)");
    const size_t large = grow_to >= 0 ? 0 : LARGE, per = SMALL + large;
    unsigned char *sbuf = malloc(per * (size_t) size), *rbuf = malloc(per * (size_t) size);
    MPI_Request *req = malloc(4 * (size_t) size * sizeof(*req));
    int nreq = 0;
    double t0 = MPI_Wtime();
    for (int p = 0; p < size; p++) {
        if (p == rank) {
            continue;
        }
        unsigned char *r = rbuf + per * (size_t) p;
        MPI_Irecv(r, SMALL, MPI_BYTE, p, TAG_S, MPI_COMM_WORLD, &req[nreq++]);
        if (large > 0) {
            MPI_Irecv(r + SMALL, LARGE, MPI_BYTE, p, TAG_L, MPI_COMM_WORLD, &req[nreq++]);
        }
    }
    for (int j = 1; j < size; j++) {
        int p = (rank + j) % size;      /* every rank starts with a different peer */
        unsigned char *b = sbuf + per * (size_t) p;
        xb_fill(b, SMALL, xb_seed(rank, (uint64_t) p, TAG_S));
        MPI_Isend(b, SMALL, MPI_BYTE, p, TAG_S, MPI_COMM_WORLD, &req[nreq++]);
        if (large > 0) {
            xb_fill(b + SMALL, LARGE, xb_seed(rank, (uint64_t) p, TAG_L));
            MPI_Isend(b + SMALL, LARGE, MPI_BYTE, p, TAG_L, MPI_COMM_WORLD, &req[nreq++]);
        }
    }
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    double t_xchg = MPI_Wtime() - t0;
    long bad = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank) {
            continue;
        }
        const unsigned char *r = rbuf + per * (size_t) p;
        long m1 = xb_mismatch(r, SMALL, xb_seed(p, (uint64_t) rank, TAG_S));
        long m2 = large > 0 ? xb_mismatch(r + SMALL, LARGE, xb_seed(p, (uint64_t) rank, TAG_L)) : -1;
        if (m1 >= 0 || m2 >= 0) {
            fprintf(stderr, "rank %d: bad data from rank %d (%s at offset %ld)\n", rank, p,
                    m1 >= 0 ? "100 B message" : "64 KiB message", m1 >= 0 ? m1 : m2);
            bad++;
        }
    }
    double t_stream = 0;
    if (grow_to >= 0) {
        /* rank 0 to ranks 2 and 3 in turn, WINDOW messages in flight, each verified:
         * at least NSTREAM messages, and on until rank 0's pool_grows reaches grow_to
         * (growth waits for btl_rsm_verbs_grow_after pool-full events, and how many a
         * stream meets depends on how fast the receivers drain: a fixed length would
         * make the count a race), at most MAXSTREAM */
        unsigned char *sb = malloc((size_t) WINDOW * STREAM);
        MPI_Request sr[WINDOW];
        long sbad = 0;
        int sent = 0, more = 1;
        unsigned long grows = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double ts = MPI_Wtime();
        for (int k = 0; more; k += WINDOW) {
            int n = 0;
            for (int j = k; j < k + WINDOW; j++) {
                int peer = 2 + j % 2;
                unsigned char *b = sb + (size_t) (j - k) * STREAM;
                if (rank == 0) {
                    xb_fill(b, STREAM, xb_seed(0, (uint64_t) j, TAG_G));
                    MPI_Isend(b, STREAM, MPI_BYTE, peer, TAG_G, MPI_COMM_WORLD, &sr[n++]);
                } else if (rank == peer) {
                    MPI_Irecv(b, STREAM, MPI_BYTE, 0, TAG_G, MPI_COMM_WORLD, &sr[n++]);
                }
            }
            MPI_Waitall(n, sr, MPI_STATUSES_IGNORE);
            for (int j = k; rank >= 2 && j < k + WINDOW; j++) {
                if (2 + j % 2 == rank
                    && xb_mismatch(sb + (size_t) (j - k) * STREAM, STREAM, xb_seed(0, (uint64_t) j, TAG_G)) >= 0) {
                    sbad++;
                }
            }
            sent = k + WINDOW;
            if (rank == 0 && have && MPI_T_pvar_read(vs, vh[2], &grows) != MPI_SUCCESS) {
                grows = 0;
            }
            more = sent < NSTREAM || ((long) grows < grow_to && sent < MAXSTREAM);
            MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
        t_stream = MPI_Wtime() - ts;
        long all_sbad = 0;
        MPI_Reduce(&sbad, &all_sbad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        check(all_sbad == 0, "rank 0 streamed %d messages of %d B to ranks 2 and 3, all verified "
              "(%ld bad)", sent, STREAM, all_sbad);
        if (rank == 0) {
            printf("verbs-grow: stream %lld bytes in %.2f s\n", (long long) sent * STREAM, t_stream);
        }
        free(sb);
    }
    unsigned long reg[3] = {0, 0, 0};
    for (int i = 0; have && i < 3; i++) {
        if (MPI_T_pvar_read(i < 2 ? vs_level : vs, vh[i], &reg[i]) != MPI_SUCCESS) {
            fprintf(stderr, "rank %d: MPI_T_pvar_read of btl_rsm_%s failed\n", rank, vn[i]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    long all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (large > 0) {
        check(all_bad == 0, "all-pairs exchange among %d ranks: %d B and %d B from every rank to "
              "every other verified (%ld bad)", size, SMALL, LARGE, all_bad);
    } else {
        check(all_bad == 0, "all-pairs exchange among %d ranks: %d B from every rank to every "
              "other verified (%ld bad)", size, SMALL, all_bad);
    }
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(host, &len);
    /* the pools of remote senders on this host, as files: one per sender if shared */
    uint64_t files = 0, file_bytes = 0;
    glob_t g;
    if (glob("/dev/shm/rsm-*-vp[0-9]", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            struct stat st;
            if (stat(g.gl_pathv[i], &st) == 0) {
                files++;
                file_bytes += (uint64_t) st.st_size;
            }
        }
        globfree(&g);
    }
    MPI_Barrier(MPI_COMM_WORLD);    /* nobody finalizes (and removes its pools) before all looked */
    uint64_t mine[5] = {reg[0], reg[1], files, file_bytes, reg[2]};
    uint64_t *vals = malloc(5 * (size_t) size * sizeof(*vals));
    char *hosts = malloc((size_t) size * MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(mine, 5, MPI_UINT64_T, vals, 5, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);
    for (int p = 0; rank == 0 && all_have && p < size; p++) {
        printf("verbs-memory: rank %d host %s registered_bytes %llu shared_bytes %llu "
               "pool_files %llu pool_file_bytes %llu pool_grows %llu\n", p,
               hosts + (size_t) p * MPI_MAX_PROCESSOR_NAME, (unsigned long long) vals[5 * p],
               (unsigned long long) vals[5 * p + 1], (unsigned long long) vals[5 * p + 2],
               (unsigned long long) vals[5 * p + 3], (unsigned long long) vals[5 * p + 4]);
    }
    double t[2] = {init_secs, t_xchg}, tmax[2];
    MPI_Reduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("verbs-memory: times MPI_Init up to %.1f s, the exchange up to %.1f s (slowest rank)\n",
               tmax[0], tmax[1]);
    }
    fflush(stdout);
    free(vals);
    free(hosts);
    free(sbuf);
    free(rbuf);
    free(req);
    if (have) {
        for (int i = 0; i < 3; i++) {
            MPI_T_pvar_handle_free(i < 2 ? vs_level : vs, &vh[i]);
        }
        MPI_T_pvar_session_free(&vs_level);
        MPI_T_pvar_session_free(&vs);
    }
}

int main(int argc, char **argv)
{
    int provided, size;
    const char *mode = argc > 1 ? argv[1] : "traffic";
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    MPI_Init(&argc, &argv);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    init_secs = (double) (ts1.tv_sec - ts0.tv_sec) + (ts1.tv_nsec - ts0.tv_nsec) / 1e9;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    bool verbs_mem = strcmp(mode, "verbs-memory") == 0, verbs_grow = strcmp(mode, "verbs-grow") == 0;
    if (verbs_grow ? size != 4 : size != 2 && !verbs_mem) {
        if (rank == 0) {
            fprintf(stderr, "mpit_read: run with %d ranks\n", verbs_grow ? 4 : 2);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    bool have = bind_all();
    if (strcmp(mode, "used") == 0) {
        mode_used(have);
    } else if (strcmp(mode, "verbs") == 0 || strcmp(mode, "verbs-2copy") == 0 || verbs_mem
               || verbs_grow || strcmp(mode, "verbs-idle") == 0) {
        if (strcmp(mode, "verbs-idle") == 0) {
            mode_verbs_idle();
        } else if (strcmp(mode, "verbs") == 0 || strcmp(mode, "verbs-2copy") == 0) {
            mode_verbs(strcmp(mode, "verbs") == 0, argc > 2 ? (unsigned) atoi(argv[2]) : 1);
        } else {
            mode_verbs_memory(size, verbs_grow ? (argc > 2 ? atoi(argv[2]) : 0) : -1);
        }
        if (rank == 0) {
            printf("1..%d\n", tap_n);
        }
    } else {
        check(have, "the %d btl_rsm_* performance variables are there (MPI_T_pvar_get_index)",
              NVARS);
        if (have && strcmp(mode, "poolfull") == 0) {
            mode_window(8000, true);
        } else if (have && (strcmp(mode, "window") == 0 || strcmp(mode, "window-full") == 0)) {
            mode_window(65536, strcmp(mode, "window-full") == 0);
        } else if (have && (strcmp(mode, "eager") == 0 || strcmp(mode, "eager-off") == 0)) {
            mode_eager(strcmp(mode, "eager-off") != 0);
        } else if (have && (strcmp(mode, "eager-far") == 0 || strcmp(mode, "eager-near") == 0)) {
            mode_eager_far(strcmp(mode, "eager-far") == 0);
        } else if (have && strcmp(mode, "eager-load") == 0) {
            mode_eager_load();
        } else if (have && (strcmp(mode, "both-ways") == 0 || strcmp(mode, "both-ways-off") == 0)) {
            mode_both_ways(strcmp(mode, "both-ways") == 0);
        } else if (have && strcmp(mode, "load") == 0) {
            mode_load();
        } else if (have && strcmp(mode, "pairs") == 0) {
            mode_pairs(true, true, NULL);
        } else if (have && strcmp(mode, "pairs-near") == 0) {
            mode_pairs(true, false, NULL);
        } else if (have && strcmp(mode, "pairs-off") == 0) {
            mode_pairs(false, true, "btl_rsm_pair_tiny 0");
        } else if (have && strcmp(mode, "pairs-min") == 0) {
            mode_pairs(false, false, "a receiver nearer than btl_rsm_pair_min_ns");
        } else if (have) {
            mode_traffic();
        }
        if (rank == 0) {
            printf("1..%d\n", tap_n);
        }
    }
    if (have) {
        for (int i = 0; i < NVARS; i++) {
            MPI_T_pvar_handle_free(session, &handle[i]);
        }
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    int all = failures;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all != 0;
}
