/*
 * Multi-pair bandwidth and message rate: rank r < n/2 streams windows to rank
 * r + n/2, all pairs at once, as OSU's osu_mbw_mr.  Reports the aggregate.
 */
#include <stdio.h>
#include <stdlib.h>

#include "xb_bench.h"

int main(int argc, char **argv)
{
    struct xb_opts o = {.min_size = 1, .max_size = 4 << 20, .iters = 200, .warmup = 10, .window = 64};
    xb_init(&argc, &argv, "xb-mbw-mr", "multi-pair bandwidth and message rate (rank r -> r + n/2)", &o);
    if (xb_nprocs < 2 || xb_nprocs % 2) {
        if (0 == xb_rank) fprintf(stderr, "xb-mbw-mr needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int half = xb_nprocs / 2, sender = xb_rank < half;
    int peer = sender ? xb_rank + half : xb_rank - half, ack = 0;
    const int tag = 3;
    size_t slab = xb_window_bytes(&o);
    char *buf = xb_alloc(slab);
    MPI_Request *req = malloc((size_t) o.window * sizeof(*req));
    xb_header("# size(B)      bandwidth(MB/s)  messages/s");
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size), w = xb_window_for(&o, size), total = iters + o.warmup;
        double t0 = 0;
        if (sender && !o.verify) {
            for (int j = 0; j < w; j++) xb_fill(buf + (size_t) j * size, size, xb_seed(xb_rank, j, tag));
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < total; i++) {
            if (i == o.warmup) t0 = MPI_Wtime();
            for (int j = 0; j < w; j++) {
                char *p = buf + (size_t) j * size;
                if (sender) {
                    if (o.verify) xb_fill(p, size, xb_seed(xb_rank, (unsigned long) i * w + j, tag));
                    MPI_Isend(p, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[j]);
                } else {
                    MPI_Irecv(p, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[j]);
                }
            }
            MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
            if (sender) {
                MPI_Recv(&ack, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                if (o.verify) {
                    for (int j = 0; j < w; j++)
                        xb_check(buf + (size_t) j * size, size, peer, (unsigned long) i * w + j, tag);
                }
                MPI_Send(&ack, 1, MPI_INT, peer, tag + 1, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0, tmax;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        double msgs = (double) half * w * iters;
        double vals[2] = {msgs * size / tmax / 1e6, msgs / tmax};
        static const char *const names[] = {"mbps", "msg_per_s"};
        char extra[48];
        snprintf(extra, sizeof extra, "\"window\":%d,\"pairs\":%d", w, half);
        xb_row(size, iters, 2, names, vals, extra);
    } while ((size = xb_next_size(&o, size)) != 0);
    free(req);
    free(buf);
    return xb_finish();
}
