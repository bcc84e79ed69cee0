/*
 * A sender that leaves MPI while its frames are lost (btl pmeth's keeper,
 * btl_pmeth_keeper.c).  Rank 0 sends N verified messages to rank 1 (MPI_Isend,
 * MPI_Waitall: pmeth completes them when their frames are in the ring, before
 * the acks), then makes no MPI call: it waits for the file FLAG, which rank 1
 * creates once it has received and verified all N, for at most WAIT seconds.
 * Under frame loss the lost frames must be resent while rank 0 is away; only
 * the keeper does that.  Rank 0 reads btl_pmeth_keeper_frames and
 * _retransmits_timeout through MPI_T before the sends and after the wait, and
 * prints one line with what they moved:
 *   away: delivered in T s, keeper_frames K, retransmits_timeout R
 *   away: NOT delivered within WAIT s (...)
 *
 *   pmeth_away FLAG [N [BYTES [WAIT]]]     (defaults 64, 1000, 20)
 * Exit status 1 when rank 1 saw a wrong payload or the file did not come in
 * time.
 */
#include <errno.h>
#include <fcntl.h>
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
    if (argc < 2) {
        fprintf(stderr, "usage: pmeth_away FLAG [N [BYTES [WAIT]]]\n");
        return 2;
    }
    const char *flag = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 64;
    size_t bytes = argc > 3 ? strtoul(argv[3], NULL, 0) : 1000;
    double wait = argc > 4 ? atof(argv[4]) : 20;
    int provided, rank, np;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2 || n < 1 || n > 4096 || bytes < 1 || bytes > (1u << 20)) {
        if (rank == 0) {
            fprintf(stderr, "pmeth_away: 2 ranks, N 1..4096, BYTES 1..1 MiB\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = malloc((size_t) n * bytes);
    MPI_Request *req = malloc((size_t) n * sizeof(*req));
    if (buf == NULL || req == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    unlink(flag);
    /* the counters move from when the handles are made: made now, read before and after */
    static const char *const names[] = {"keeper_frames", "retransmits_timeout"};
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h[2];
    unsigned long before[2] = {0, 0}, after[2] = {0, 0};
    bool have = rank == 0 && mpit_bind(&s, h, "btl_pmeth_", names, 2, MPI_T_PVAR_CLASS_COUNTER);
    MPI_Barrier(MPI_COMM_WORLD);       /* connections made, the file gone */
    int bad = 0, ok = 1;
    if (rank == 0) {
        if (have) {
            MPI_T_pvar_read(s, h[0], &before[0]);
            MPI_T_pvar_read(s, h[1], &before[1]);
        }
        for (int i = 0; i < n; i++) {
            xb_fill(buf + (size_t) i * bytes, bytes, xb_seed(0, (uint64_t) i, 7));
            MPI_Isend(buf + (size_t) i * bytes, (int) bytes, MPI_BYTE, 1, 7, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        /* away from MPI: no call until the peer has everything (or time is up) */
        double t0 = now_s(), t = 0;
        bool there = false;
        while (!(there = access(flag, F_OK) == 0) && (t = now_s() - t0) < wait) {
            usleep(1000);
        }
        t = now_s() - t0;
        if (have) {
            MPI_T_pvar_read(s, h[0], &after[0]);
            MPI_T_pvar_read(s, h[1], &after[1]);
        }
        unsigned long v[2] = {after[0] - before[0], after[1] - before[1]};
        if (there) {
            printf("away: delivered in %.3f s, keeper_frames %lu, retransmits_timeout %lu\n", t,
                   v[0], v[1]);
        } else {
            printf("away: NOT delivered within %.0f s (keeper_frames %lu, retransmits_timeout %lu)\n",
                   wait, v[0], v[1]);
            ok = 0;
        }
    } else {
        for (int i = 0; i < n; i++) {
            MPI_Recv(buf + (size_t) i * bytes, (int) bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            bad += xb_mismatch(buf + (size_t) i * bytes, bytes, xb_seed(0, (uint64_t) i, 7)) >= 0;
        }
        int fd = open(flag, O_CREAT | O_WRONLY, 0600);
        if (fd >= 0) {
            close(fd);
        }
        printf("away: rank 1 received %d messages of %zu B, %d wrong\n", n, bytes, bad);
    }
    fflush(stdout);
    int all[2] = {bad, ok}, sum[2];
    MPI_Allreduce(&all[0], &sum[0], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&all[1], &sum[1], 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 1) {
        unlink(flag);
    }
    free(buf);
    free(req);
    if (have) {
        MPI_T_pvar_handle_free(s, &h[0]);
        MPI_T_pvar_handle_free(s, &h[1]);
        MPI_T_pvar_session_free(&s);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return sum[0] == 0 && sum[1] == 1 ? 0 : 1;
}
