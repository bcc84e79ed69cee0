/* MPI_Alltoall: every rank sends a distinct verified block to every rank. */
#include <stdio.h>
#include <stdlib.h>

#include "xb_bench.h"

int main(int argc, char **argv)
{
    struct xb_opts o = {.min_size = 1, .max_size = 1 << 20, .iters = 500, .warmup = 20, .window = 1};
    xb_init(&argc, &argv, "xb-alltoall", "MPI_Alltoall latency (block size per peer)", &o);
    int n = xb_nprocs;
    char *sbuf = xb_alloc(o.max_size * n), *rbuf = xb_alloc(o.max_size * n);
    const int tag = 7;
    xb_header("# size(B)       latency(us)  MB/s/rank");
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size);
        double t0 = 0, t, tmax;
        if (!o.verify)
            for (int p = 0; p < n; p++) xb_fill(sbuf + p * size, size, xb_seed(xb_rank, 0, p));
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < iters + o.warmup; i++) {
            if (i == o.warmup) t0 = MPI_Wtime();
            if (o.verify) /* block for peer p: seeded by (me, iteration, p + tag) */
                for (int p = 0; p < n; p++) xb_fill(sbuf + p * size, size, xb_seed(xb_rank, i, p + tag));
            MPI_Alltoall(sbuf, (int) size, MPI_BYTE, rbuf, (int) size, MPI_BYTE, MPI_COMM_WORLD);
            if (o.verify)
                for (int p = 0; p < n; p++) xb_check(rbuf + p * size, size, p, i, xb_rank + tag);
        }
        t = (MPI_Wtime() - t0) / iters;
        MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double vals[2] = {tmax * 1e6, (n - 1) * (double) size / tmax / 1e6};
        static const char *const names[] = {"latency_us", "mbps"};
        xb_row(size, iters, 2, names, vals, NULL);
    } while ((size = xb_next_size(&o, size)) != 0);
    free(sbuf);
    free(rbuf);
    return xb_finish();
}
