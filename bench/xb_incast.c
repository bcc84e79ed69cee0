/*
 * Many to one (seed 001's switch overflow, seed 003's credit split): S ranks
 * on hosts other than rank 0's each send a window of messages to rank 0 at
 * once, which answers every sender with a 4-byte ack when all have arrived.
 * Senders are taken round-robin over the other hosts (the first rank of each
 * host, then the second, ...), so their frames meet in the switch port in front
 * of rank 0.  Every other rank is connected but idle: it exchanges one message
 * with rank 0 at the start, so rank 0 knows it as a peer, then sleeps (it polls
 * a barrier once a millisecond, leaving the CPU to the senders) until the end.
 *
 *   -S SENDERS   how many ranks send (default: every rank on another host)
 *
 * Per size: the bytes rank 0 received per window over the median window time
 * (aggregate MB/s), that divided by the senders (MB/s per sender), and the
 * mean rate.  Every message is verified unless -n is given.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xb_bench.h"

enum { TAG_DATA = 11, TAG_ACK = 12, TAG_HELLO = 13 };

/* Wait for REQ while giving the CPU away: an idle rank must not compete with
 * the senders for this machine's two cores. */
static void sleepy_wait(MPI_Request *req)
{
    int done = 0;
    const struct timespec ms = {0, 1000000};
    while (!done) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done) nanosleep(&ms, NULL);
    }
}

/* xb_row's format, without its core-to-core probe: that needs ranks 0 and 1 in
 * step, and rank 1 may be idle here. */
static void row(size_t size, int iters, const char *const names[], const double v[],
                const char *extra, bool verified)
{
    printf("%-12zu %14.2f %14.2f %14.2f\n", size, v[0], v[1], v[2]);
    printf("{\"bench\":\"xb-incast\",\"np\":%d,\"size\":%zu,\"iters\":%d,\"verified\":%s",
           xb_nprocs, size, iters, verified ? "true" : "false");
    for (int i = 0; i < 3; i++) printf(",\"%s\":%.6g", names[i], v[i]);
    printf(",%s}\n", extra);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *s_opt = xb_take_option(&argc, argv, "-S", true);
    int senders = s_opt != NULL ? atoi(s_opt) : -1;
    struct xb_opts o = {.min_size = 1024, .max_size = 4 << 20, .iters = 100, .warmup = 5, .window = 16};
    xb_init(&argc, &argv, "xb-incast",
            "many to one: ranks 1..S send a window each to rank 0 at once; the others idle "
            "(-S SENDERS, default all)", &o);
    const int n = xb_nprocs, me = xb_rank;
    if (n < 2) {
        if (me == 0) fprintf(stderr, "xb-incast: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* the ranks on other hosts than rank 0's, round-robin over those hosts */
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char *names = calloc((size_t) n, MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    int *order = malloc((size_t) n * sizeof(*order)), nremote = 0;
    for (int round = 0; round < n; round++) {
        for (int r = 1; r < n; r++) {
            const char *nr = names + (size_t) r * MPI_MAX_PROCESSOR_NAME;
            if (strcmp(nr, names) == 0) continue;
            int before = 0;         /* ranks of r's host before r: r goes in that round */
            for (int q = 1; q < r; q++) {
                if (strcmp(names + (size_t) q * MPI_MAX_PROCESSOR_NAME, nr) == 0) before++;
            }
            if (before == round) order[nremote++] = r;
        }
    }
    if (nremote == 0) {
        if (me == 0) fprintf(stderr, "xb-incast: needs ranks on a host other than rank 0's\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (senders < 0 || senders > nremote) senders = nremote;
    if (senders < 1) {
        if (me == 0) fprintf(stderr, "xb-incast: -S must be at least 1\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    bool sending = false;
    for (int k = 0; k < senders; k++) sending = sending || order[k] == me;
    const bool idle = me != 0 && !sending;

    /* every rank meets rank 0 once, both ways: connected peers, windows made */
    int hello = me;
    if (me == 0) {
        for (int r = 1; r < n; r++) {
            MPI_Recv(&hello, 1, MPI_INT, r, TAG_HELLO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&hello, 1, MPI_INT, r, TAG_HELLO, MPI_COMM_WORLD);
        }
    } else {
        MPI_Send(&hello, 1, MPI_INT, 0, TAG_HELLO, MPI_COMM_WORLD);
        MPI_Recv(&hello, 1, MPI_INT, 0, TAG_HELLO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Comm active;
    MPI_Comm_split(MPI_COMM_WORLD, idle ? MPI_UNDEFINED : 0, me, &active);
    if (idle) {
        MPI_Request req;
        MPI_Ibarrier(MPI_COMM_WORLD, &req);
        sleepy_wait(&req);
        MPI_Barrier(MPI_COMM_WORLD);    /* xb_finish's reduction follows */
        return xb_finish();
    }

    size_t slab = xb_window_bytes(&o);
    char *buf = xb_alloc(me == 0 ? slab * (size_t) senders : slab);
    MPI_Request *req = malloc(((size_t) o.window * (size_t) senders + (size_t) senders + 1) * sizeof(*req));
    double *lap = malloc((size_t) (o.iters > 10 ? o.iters : 10) * sizeof(*lap));
    int *acks = calloc((size_t) senders + 1, sizeof(*acks));
    if (me == 0) {
        printf("# senders %d (on other hosts than rank 0's), idle ranks %d\n", senders,
               n - 1 - senders);
    }
    xb_header("# size(B)      aggregate(MB/s)  per-sender(MB/s)  mean(MB/s)");
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size), w = xb_window_for(&o, size), total = iters + o.warmup;
        double t0 = 0, tw = 0;
        int laps = 0;
        MPI_Barrier(active);
        for (int i = 0; i < total; i++) {
            int k = 0;
            if (i == o.warmup) t0 = tw = MPI_Wtime();
            if (me == 0) {
                for (int s = 0; s < senders; s++)
                    for (int j = 0; j < w; j++)
                        MPI_Irecv(buf + ((size_t) s * (size_t) w + (size_t) j) * size, (int) size,
                                  MPI_BYTE, order[s], TAG_DATA, MPI_COMM_WORLD, &req[k++]);
                MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
                if (o.verify)
                    for (int s = 0; s < senders; s++)
                        for (int j = 0; j < w; j++)
                            xb_check(buf + ((size_t) s * (size_t) w + (size_t) j) * size, size, order[s],
                                     (unsigned long) i * w + j, TAG_DATA);
                k = 0;
                for (int s = 0; s < senders; s++)
                    MPI_Isend(&acks[s], 1, MPI_INT, order[s], TAG_ACK, MPI_COMM_WORLD, &req[k++]);
                MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
            } else if (sending) {
                for (int j = 0; j < w; j++) {
                    char *p = buf + (size_t) j * size;
                    if (o.verify || i == 0) xb_fill(p, size, xb_seed(me, (unsigned long) i * w + j, TAG_DATA));
                    MPI_Isend(p, (int) size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req[k++]);
                }
                MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
                MPI_Recv(&acks[0], 1, MPI_INT, 0, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            if (i >= o.warmup) {
                double now = MPI_Wtime();
                lap[laps++] = now - tw;
                tw = now;
            }
        }
        double t = MPI_Wtime() - t0;
        double bytes = (double) size * w * senders * iters, per_window = bytes / iters;
        double tmed = laps ? xb_median(lap, laps) : t / iters;
        double vals[3] = {per_window / tmed / 1e6, per_window / tmed / 1e6 / senders, bytes / t / 1e6};
        static const char *const fields[] = {"mbps", "mbps_per_sender", "mean_mbps"};
        char extra[64];
        snprintf(extra, sizeof extra, "\"window\":%d,\"senders\":%d,\"idle\":%d", w, senders,
                 n - 1 - senders);
        if (me == 0) row(size, iters, fields, vals, extra, o.verify);
    } while ((size = xb_next_size(&o, size)) != 0);
    MPI_Comm_free(&active);
    MPI_Request breq;
    MPI_Ibarrier(MPI_COMM_WORLD, &breq);
    MPI_Wait(&breq, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    free(acks);
    free(order);
    free(names);
    free(lap);
    free(req);
    free(buf);
    return xb_finish();
}
