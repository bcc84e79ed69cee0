/* Ping-pong latency between ranks 0 and 1: half the round-trip time. Other ranks wait. */
#include <stdio.h>
#include <stdlib.h>

#include "xb_bench.h"

int main(int argc, char **argv)
{
    struct xb_opts o = {.min_size = 0, .max_size = 4 << 20, .iters = 2000, .warmup = 100, .window = 1};
    xb_init(&argc, &argv, "xb-latency", "ping-pong latency (half round trip) between ranks 0 and 1", &o);
    if (xb_nprocs < 2) {
        if (0 == xb_rank) fprintf(stderr, "xb-latency needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *sbuf = xb_alloc(o.max_size), *rbuf = xb_alloc(o.max_size);
    int peer = 1 - xb_rank;
    xb_header("# size(B)       latency(us)       mean(us)");
    enum { BLOCKS = 20 };
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size), total = iters + o.warmup;
        int per_block = iters >= BLOCKS ? iters / BLOCKS : 1, nblocks = 0;
        double t0 = 0, tb = 0, block[BLOCKS + 1];
        MPI_Barrier(MPI_COMM_WORLD);
        if (xb_rank < 2) {
            for (int i = 0; i < total; i++) {
                if (i == o.warmup) t0 = tb = MPI_Wtime();
                if (i > o.warmup && 0 == (i - o.warmup) % per_block && nblocks < BLOCKS) {
                    double t = MPI_Wtime();
                    block[nblocks++] = (t - tb) * 1e6 / (2.0 * per_block);
                    tb = t;
                }
                if (0 == xb_rank) {
                    if (o.verify) xb_fill(sbuf, size, xb_seed(0, i, 1));
                    MPI_Send(sbuf, (int) size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (o.verify) xb_check(rbuf, size, 1, i, 1);
                } else {
                    MPI_Recv(rbuf, (int) size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (o.verify) {
                        xb_check(rbuf, size, 0, i, 1);
                        xb_fill(sbuf, size, xb_seed(1, i, 1));
                    }
                    MPI_Send(sbuf, (int) size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                }
            }
        }
        /* the median block of round trips is the figure; the mean of all of them beside it */
        double vals[2] = {0, (MPI_Wtime() - t0) * 1e6 / (2.0 * iters)};
        vals[0] = nblocks ? xb_median(block, nblocks) : vals[1];
        static const char *const names[] = {"latency_us", "mean_us"};
        xb_row(size, iters, 2, names, vals, NULL);
    } while ((size = xb_next_size(&o, size)) != 0);
    free(sbuf);
    free(rbuf);
    return xb_finish();
}
