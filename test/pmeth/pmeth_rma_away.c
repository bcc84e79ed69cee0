/*
 * A target away from MPI while a peer works on its window (btl pmeth's keeper
 * serving one-sided requests, keeper_may_serve in btl_pmeth_recv.c).  Two
 * ranks, a window of BYTES + 8 bytes each (MPI_Win_allocate: osc rdma over
 * pmeth's put, get and atomics).  After a barrier rank 1 makes no MPI call for
 * WAIT seconds (it computes: a clock loop).  Rank 0 waits 0.3 s, so that rank 1
 * is surely away, then runs one passive-target epoch on rank 1: lock (shared),
 * put BYTES of a pattern, flush, get them back, fetch-and-add 1 on the 8 bytes
 * after them, unlock; and prints
 *   rma-away: origin: epoch done in T s (target away W s), get verified|WRONG, old value V
 * Rank 1, back, reads btl_pmeth_keeper_rma through MPI_T and, after a barrier,
 * checks its window (the pattern, the counter at 1):
 *   rma-away: target: keeper took K frames of requests, window verified|WRONG
 * Over hardware RDMA the epoch needs nothing of the target; over pmeth each
 * request is a message the target serves, by its keeper thread while away.
 *
 *   pmeth_rma_away [WAIT [BYTES]]      (defaults 3, 1024)
 * Exit status 1 when a byte or value is wrong.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpit_bind.h"
#include "xb_pattern.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    double wait = argc > 1 ? atof(argv[1]) : 3;
    size_t bytes = argc > 2 ? strtoul(argv[2], NULL, 0) : 1024;
    int provided, rank, np;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2 || wait <= 0 || bytes < 1 || bytes > (1u << 20)) {
        if (rank == 0) {
            fprintf(stderr, "pmeth_rma_away: 2 ranks, WAIT > 0, BYTES 1..1 MiB\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *base, *src = malloc(bytes), *back = malloc(bytes);
    MPI_Win win;
    if (src == NULL || back == NULL
        || MPI_Win_allocate((MPI_Aint) bytes + 8, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win)
               != MPI_SUCCESS) {
        fprintf(stderr, "pmeth_rma_away: rank %d: no window\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(base, 0, bytes + 8);
    xb_fill(src, bytes, xb_seed(0, 1, 11));
    static const char *const names[] = {"keeper_rma"};
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    unsigned long served = 0;
    bool have = rank == 1 && mpit_bind(&s, &h, "btl_pmeth_", names, 1, MPI_T_PVAR_CLASS_COUNTER);
    MPI_Win_fence(0, win);          /* everyone's window zeroed and exposed */
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    if (rank == 1) {
        double t0 = now_s();
        volatile uint64_t spin = 0;
        while (now_s() - t0 < wait) {   /* away: computing, no MPI call */
            spin++;
        }
        if (have) {
            MPI_T_pvar_read(s, h, &served);
        }
    } else {
        usleep(300000);                 /* rank 1 is away by now */
        int64_t one = 1, old = -1;
        double t0 = now_s();
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        MPI_Put(src, (int) bytes, MPI_BYTE, 1, 0, (int) bytes, MPI_BYTE, win);
        MPI_Win_flush(1, win);
        MPI_Get(back, (int) bytes, MPI_BYTE, 1, 0, (int) bytes, MPI_BYTE, win);
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, (MPI_Aint) bytes, MPI_SUM, win);
        MPI_Win_unlock(1, win);
        double t = now_s() - t0;
        bool got = xb_mismatch(back, bytes, xb_seed(0, 1, 11)) < 0;
        bad += !got + (old != 0);
        printf("rma-away: origin: epoch done in %.3f s (target away %.1f s), get %s, old value "
               "%lld\n", t, wait, got ? "verified" : "WRONG", (long long) old);
    }
    MPI_Barrier(MPI_COMM_WORLD);        /* the origin's epoch is over */
    if (rank == 1) {
        int64_t counter;
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);   /* the separate model: look inside an epoch */
        memcpy(&counter, base + bytes, 8);
        bool ok = xb_mismatch(base, bytes, xb_seed(0, 1, 11)) < 0 && counter == 1;
        MPI_Win_unlock(1, win);
        bad += !ok;
        printf("rma-away: target: keeper took %lu frames of requests, window %s\n", served,
               ok ? "verified" : "WRONG");
    }
    fflush(stdout);
    int sum = 0;
    MPI_Allreduce(&bad, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Win_free(&win);
    if (have) {
        MPI_T_pvar_handle_free(s, &h);
        MPI_T_pvar_session_free(&s);
    }
    free(src);
    free(back);
    MPI_T_finalize();
    MPI_Finalize();
    return sum == 0 ? 0 : 1;
}
