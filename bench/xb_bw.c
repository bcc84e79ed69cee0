/*
 * Bandwidth between ranks 0 and 1 with a window of non-blocking sends, as OSU
 * does: uni-directional (xb-bw: 0 sends, 1 answers each window with a 4-byte
 * ack) or, built with XB_BIDIR, bi-directional (xb-bibw: both send a window at
 * once).  Each window slot has its own buffer so every message can be verified.
 * With -t SECONDS each size runs windows for that long instead of a count, so a
 * test that injects faults at given times knows the traffic spans them however
 * fast the host is.
 */
#include <stdio.h>
#include <stdlib.h>

#include "xb_bench.h"

#ifdef XB_BIDIR
#define NAME "xb-bibw"
#define SUMMARY "bi-directional bandwidth between ranks 0 and 1 (window of non-blocking sends each way; " \
                "-t SECONDS: windows for that long at each size, not -i of them)"
#else
#define NAME "xb-bw"
#define SUMMARY "uni-directional bandwidth from rank 0 to rank 1 (window of non-blocking sends; " \
                "-t SECONDS: windows for that long at each size, not -i of them)"
#endif

/* Time mode: whether ranks 0 and 1 run window I.  Rank 0 decides, from the
 * time since the size began, and tells rank 1 (a message a window: the mode is
 * for tests, not for timing). */
static bool more_windows(int i, int warmup, double t_begin, double seconds, int peer)
{
    int go = 0;
    if (0 == xb_rank) {
        go = i < warmup || MPI_Wtime() - t_begin < seconds;
        MPI_Send(&go, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&go, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return go != 0;
}

int main(int argc, char **argv)
{
    const char *t_opt = xb_take_option(&argc, argv, "-t", true);
    struct xb_opts o = {.min_size = 1, .max_size = 4 << 20, .iters = 200, .warmup = 10, .window = 64};
    xb_init(&argc, &argv, NAME, SUMMARY, &o);
    const double seconds = t_opt != NULL ? atof(t_opt) : 0;
    if (t_opt != NULL && !(seconds > 0 && seconds <= 86400)) {
        if (0 == xb_rank) fprintf(stderr, NAME ": -t takes seconds, more than 0 (got '%s')\n", t_opt);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (xb_nprocs < 2) {
        if (0 == xb_rank) fprintf(stderr, NAME " needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t slab = xb_window_bytes(&o);
    char *sbuf = xb_alloc(slab), *rbuf = xb_alloc(slab);
    MPI_Request *req = malloc(2 * (size_t) o.window * sizeof(*req));
    int lap_cap = o.iters > 10 ? o.iters : 10;
    double *lap = malloc((size_t) lap_cap * sizeof(*lap)); /* seconds per window */
    int peer = 1 - xb_rank;
    const int tag = 2;
    xb_header("# size(B)      bandwidth(MB/s)  messages/s  mean(MB/s)");
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size), w = xb_window_for(&o, size), total = iters + o.warmup;
        double t0 = 0, tw = 0;
        int laps = 0;
        if (!o.verify && xb_rank < 2) {
            for (int j = 0; j < w; j++) xb_fill(sbuf + (size_t) j * size, size, xb_seed(xb_rank, j, tag));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        const double t_begin = MPI_Wtime();
        for (int i = 0; xb_rank < 2 && (seconds > 0 ? more_windows(i, o.warmup, t_begin, seconds, peer)
                                                    : i < total); i++) {
            int n = 0;
            if (i == o.warmup) t0 = tw = MPI_Wtime();
#ifdef XB_BIDIR
            const int sends = 1, recvs = 1;
#else
            const int sends = 0 == xb_rank, recvs = 1 == xb_rank;
#endif
            if (recvs) {
                for (int j = 0; j < w; j++)
                    MPI_Irecv(rbuf + (size_t) j * size, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[n++]);
            }
            if (sends) {
                for (int j = 0; j < w; j++) {
                    if (o.verify) xb_fill(sbuf + (size_t) j * size, size, xb_seed(xb_rank, (unsigned long) i * w + j, tag));
                    MPI_Isend(sbuf + (size_t) j * size, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[n++]);
                }
            }
            MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
            if (recvs && o.verify) {
                for (int j = 0; j < w; j++)
                    xb_check(rbuf + (size_t) j * size, size, peer, (unsigned long) i * w + j, tag);
            }
#ifndef XB_BIDIR
            /* the ack closes the window: the sender's clock then covers delivery, not just injection */
            int ack = 0;
            if (0 == xb_rank) MPI_Recv(&ack, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Send(&ack, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD);
#endif
            if (i >= o.warmup) {
                if (laps == lap_cap) {
                    lap_cap *= 2;
                    lap = realloc(lap, (size_t) lap_cap * sizeof(*lap));
                    if (lap == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
                }
                double now = MPI_Wtime();
                lap[laps++] = now - tw;
                tw = now;
            }
        }
        double t = MPI_Wtime() - t0;
        if (seconds > 0 && laps > 0) {
            iters = laps;           /* the windows timed */
        }
#ifdef XB_BIDIR
        double bytes = 2.0 * size * w * iters;
#else
        double bytes = (double) size * w * iters;
#endif
        /* the median window is the figure (see xb_median); the mean rate beside it */
        double per_window = bytes / iters, tmed = laps ? xb_median(lap, laps) : t / iters;
        double vals[3] = {per_window / tmed / 1e6, (per_window / (size ? size : 1)) / tmed, bytes / t / 1e6};
        static const char *const names[] = {"mbps", "msg_per_s", "mean_mbps"};
        char extra[32];
        snprintf(extra, sizeof extra, "\"window\":%d", w);
        xb_row(size, iters, 3, names, vals, extra);
    } while ((size = xb_next_size(&o, size)) != 0);
    free(lap);
    free(req);
    free(sbuf);
    free(rbuf);
    return xb_finish();
}
