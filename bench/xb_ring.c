/*
 * b_eff-style rings (HPCC's effective bandwidth benchmark): every rank
 * exchanges with both ring neighbours at once.  The natural ring orders ranks
 * by number; the random ring by a permutation all ranks agree on, so that most
 * neighbours sit on other nodes.  Reports per-rank time per exchange and the
 * per-rank bandwidth (2 messages sent per exchange).
 */
#include <stdio.h>
#include <stdlib.h>

#include "xb_bench.h"

static char *sbuf[2], *rbuf[2];

/* One exchange with left and right; tag 0 travels rightwards, tag 1 leftwards. */
static void ring_exchange(int left, int right, size_t size, unsigned long iter, bool verify)
{
    MPI_Request req[4];
    MPI_Irecv(rbuf[0], (int) size, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(rbuf[1], (int) size, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[1]);
    if (verify) {
        xb_fill(sbuf[0], size, xb_seed(xb_rank, iter, 0));
        xb_fill(sbuf[1], size, xb_seed(xb_rank, iter, 1));
    }
    MPI_Isend(sbuf[0], (int) size, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(sbuf[1], (int) size, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    if (verify) {
        xb_check(rbuf[0], size, left, iter, 0);
        xb_check(rbuf[1], size, right, iter, 1);
    }
}

static double timed(int left, int right, const struct xb_opts *o, size_t size, int iters, int salt)
{
    double t0 = 0, t, tmax;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + o->warmup; i++) {
        if (i == o->warmup) t0 = MPI_Wtime();
        ring_exchange(left, right, size, 2UL * i + salt, o->verify);
    }
    t = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

int main(int argc, char **argv)
{
    struct xb_opts o = {.min_size = 8, .max_size = 1 << 20, .iters = 500, .warmup = 20, .window = 1};
    xb_init(&argc, &argv, "xb-ring", "b_eff natural and random ring exchange (both neighbours at once)", &o);
    int n = xb_nprocs, *perm = malloc((size_t) n * sizeof(int)), pos = 0;
    if (0 == xb_rank) { /* Fisher-Yates with a fixed seed: the same ring every run */
        srand(12345);
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = rand() % (i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
    }
    MPI_Bcast(perm, n, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        if (perm[i] == xb_rank) pos = i;
    int nat_left = (xb_rank + n - 1) % n, nat_right = (xb_rank + 1) % n;
    int rnd_left = perm[(pos + n - 1) % n], rnd_right = perm[(pos + 1) % n];
    for (int k = 0; k < 2; k++) {
        sbuf[k] = xb_alloc(o.max_size);
        rbuf[k] = xb_alloc(o.max_size);
        if (!o.verify) xb_fill(sbuf[k], o.max_size, xb_seed(xb_rank, 0, k));
    }
    xb_header("# size(B)      natural(us)      random(us)  natural(MB/s)   random(MB/s)");
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size);
        double nat = timed(nat_left, nat_right, &o, size, iters, 0);
        double rnd = timed(rnd_left, rnd_right, &o, size, iters, 1);
        double vals[4] = {nat * 1e6, rnd * 1e6, 2.0 * size / nat / 1e6, 2.0 * size / rnd / 1e6};
        static const char *const names[] = {"natural_us", "random_us", "natural_mbps", "random_mbps"};
        xb_row(size, iters, 4, names, vals, NULL);
    } while ((size = xb_next_size(&o, size)) != 0);
    for (int k = 0; k < 2; k++) {
        free(sbuf[k]);
        free(rbuf[k]);
    }
    free(perm);
    return xb_finish();
}
