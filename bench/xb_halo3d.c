/*
 * 3-D six-direction neighbour exchange on a periodic Cartesian grid: the
 * lattice-QCD pattern PACS-CS was built for (seed 001).  Two modes per size:
 *   all     - all six directions in flight at once;
 *   phased  - +x+y+z first, then -x-y-z (half the links busy at a time).
 * A message travelling in direction d carries tag d, so the two neighbours of
 * a dimension of extent 2 (the same rank) are still told apart.
 *
 * --star: seed 001's own test instead of a periodic grid: rank 0 is a centre
 * and ranks 1..6 its neighbours in the directions +x -x +y -y +z -z (7 ranks,
 * vcluster nbr6 / nbr6sw), or ranks 1..3 in +x +y +z (4 ranks, nbr3 / nbr3sw);
 * a neighbour has no neighbour beyond it (MPI_PROC_NULL).  The centre's figure
 * is the one that counts: it alone sends and receives in every direction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xb_bench.h"

enum { NDIR = 6 };

static int nbr_to[NDIR], nbr_from[NDIR];
static char *sbuf[NDIR], *rbuf[NDIR];

/* Exchange in directions first, first + step, ... (0..5 = +x -x +y -y +z -z). */
static void exchange(int first, int step, size_t size, unsigned long iter, bool verify)
{
    MPI_Request req[2 * NDIR];
    int n = 0;
    for (int d = first; d < NDIR; d += step)
        if (nbr_from[d] != MPI_PROC_NULL)
            MPI_Irecv(rbuf[d], (int) size, MPI_BYTE, nbr_from[d], d, MPI_COMM_WORLD, &req[n++]);
    for (int d = first; d < NDIR; d += step) {
        if (nbr_to[d] == MPI_PROC_NULL) continue;
        if (verify) xb_fill(sbuf[d], size, xb_seed(xb_rank, iter, d));
        MPI_Isend(sbuf[d], (int) size, MPI_BYTE, nbr_to[d], d, MPI_COMM_WORLD, &req[n++]);
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    if (verify)
        for (int d = first; d < NDIR; d += step)
            if (nbr_from[d] != MPI_PROC_NULL) xb_check(rbuf[d], size, nbr_from[d], iter, d);
}

/* Seconds per exchange, the slowest rank's. mode 0: all six at once; 1: +x+y+z then -x-y-z. */
static double timed(int mode, const struct xb_opts *o, size_t size, int iters)
{
    double t0 = 0, t, tmax;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + o->warmup; i++) {
        if (i == o->warmup) t0 = MPI_Wtime();
        unsigned long iter = 2UL * i + mode; /* distinct seeds per mode */
        if (0 == mode) {
            exchange(0, 1, size, iter, o->verify);
        } else {
            exchange(0, 2, size, iter, o->verify);
            exchange(1, 2, size, iter, o->verify);
        }
    }
    t = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

int main(int argc, char **argv)
{
    bool star = xb_take_option(&argc, argv, "--star", false) != NULL;
    struct xb_opts o = {.min_size = 8, .max_size = 1 << 20, .iters = 500, .warmup = 20, .window = 1};
    xb_init(&argc, &argv, "xb-halo3d", "3-D periodic six-neighbour exchange (all at once; +xyz then -xyz; "
            "--star: seed 001's centre and neighbours)", &o);
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1};
    if (star) {
        /* the direction of rank r seen from the centre (the vcluster's node order) */
        static const int dir7[7] = {-1, 0, 1, 2, 3, 4, 5}, dir4[4] = {-1, 0, 2, 4};
        if (xb_nprocs != 7 && xb_nprocs != 4) {
            if (0 == xb_rank) fprintf(stderr, "xb-halo3d --star: 7 ranks (6 directions) or 4 (3)\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        const int *dir = xb_nprocs == 7 ? dir7 : dir4;
        for (int d = 0; d < NDIR; d++) nbr_to[d] = nbr_from[d] = MPI_PROC_NULL;
        for (int r = 1; r < xb_nprocs; r++) {
            int d = dir[r], back = d ^ 1;       /* +x <-> -x, ... */
            if (0 == xb_rank) {
                nbr_to[d] = r;                  /* travelling in d: centre -> r */
                nbr_from[back] = r;             /* travelling back: r -> centre */
            } else if (r == xb_rank) {
                nbr_from[d] = 0;
                nbr_to[back] = 0;
            }
        }
    } else {
        MPI_Comm cart;
        MPI_Dims_create(xb_nprocs, 3, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart);
        for (int dim = 0; dim < 3; dim++) {
            /* +dim travels from the lower neighbour to the upper one */
            MPI_Cart_shift(cart, dim, 1, &nbr_from[2 * dim], &nbr_to[2 * dim]);
            MPI_Cart_shift(cart, dim, -1, &nbr_from[2 * dim + 1], &nbr_to[2 * dim + 1]);
        }
        MPI_Comm_free(&cart);
    }
    for (int d = 0; d < NDIR; d++) {
        sbuf[d] = xb_alloc(o.max_size);
        rbuf[d] = xb_alloc(o.max_size);
        if (!o.verify) xb_fill(sbuf[d], o.max_size, xb_seed(xb_rank, 0, d));
    }
    if (0 == xb_rank && star) printf("# star: centre rank 0, %d neighbours\n", xb_nprocs - 1);
    if (0 == xb_rank && !star) printf("# grid %d x %d x %d\n", dims[0], dims[1], dims[2]);
    xb_header("# size(B)          all(us)      phased(us)  all(MB/s/rank) phased(MB/s/rank)");
    size_t size = xb_first_size(&o);
    do {
        int iters = xb_iters_for(&o, size);
        double all = timed(0, &o, size, iters), phased = timed(1, &o, size, iters);
        /* bytes a rank with every neighbour sends (the centre, in a star) */
        int ndir = star && xb_nprocs == 4 ? 3 : NDIR;
        double vals[4] = {all * 1e6, phased * 1e6, ndir * (double) size / all / 1e6,
                          ndir * (double) size / phased / 1e6};
        static const char *const names[] = {"all_us", "phased_us", "mbps", "phased_mbps"};
        char extra[64];
        if (star) snprintf(extra, sizeof extra, "\"star\":%d", xb_nprocs - 1);
        else snprintf(extra, sizeof extra, "\"grid\":[%d,%d,%d]", dims[0], dims[1], dims[2]);
        xb_row(size, iters, 4, names, vals, extra);
    } while ((size = xb_next_size(&o, size)) != 0);
    for (int d = 0; d < NDIR; d++) {
        free(sbuf[d]);
        free(rbuf[d]);
    }
    return xb_finish();
}
