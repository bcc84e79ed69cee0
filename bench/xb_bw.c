/*
 * Bandwidth between ranks 0 and 1 with a window of non-blocking sends, as OSU
 * does: uni-directional (xb-bw: 0 sends, 1 answers each window with a 4-byte
 * ack) or, built with XB_BIDIR, bi-directional (xb-bibw: both send a window at
 * once).  Each window slot has its own buffer so every message can be verified.
 */
#include <stdio.h>
#include <stdlib.h>

#include "xb_bench.h"

#ifdef XB_BIDIR
#define NAME "xb-bibw"
#define SUMMARY "bi-directional bandwidth between ranks 0 and 1 (window of non-blocking sends each way)"
#else
#define NAME "xb-bw"
#define SUMMARY "uni-directional bandwidth from rank 0 to rank 1 (window of non-blocking sends)"
#endif

int main(int argc, char **argv)
{
    struct xb_opts o = {.min_size = 1, .max_size = 4 << 20, .iters = 200, .warmup = 10, .window = 64};
    xb_init(&argc, &argv, NAME, SUMMARY, &o);
    if (xb_nprocs < 2) {
        if (0 == xb_rank) fprintf(stderr, NAME " needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t slab = xb_window_bytes(&o);
    char *sbuf = xb_alloc(slab), *rbuf = xb_alloc(slab);
    MPI_Request *req = malloc(2 * (size_t) o.window * sizeof(*req));
    double *lap = malloc((size_t) (o.iters > 10 ? o.iters : 10) * sizeof(*lap)); /* seconds per window */
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
        for (int i = 0; xb_rank < 2 && i < total; i++) {
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
                double now = MPI_Wtime();
                lap[laps++] = now - tw;
                tw = now;
            }
        }
        double t = MPI_Wtime() - t0;
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
