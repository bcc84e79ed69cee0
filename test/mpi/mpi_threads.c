/*
 * Point-to-point under MPI_THREAD_MULTIPLE, every byte verified.  Each rank runs
 * T threads; thread t of every rank exchanges messages with thread t of every
 * other rank (tag t), all at once, so several threads send through one endpoint
 * and drive the BTL's progress together.  Sizes cycle from 0 B to MAX_BYTES, so
 * inline, pooled and single-copy (rendezvous) messages interleave.
 *   mpi_threads [-t THREADS] [-r ROUNDS] [-M MAX_BYTES]
 * Rank 0 prints one TAP line.  A library that gives less than MPI_THREAD_MULTIPLE
 * makes the program say so and exit 77 (skip).
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xb_pattern.h"

static int rank, nprocs, nthreads = 4, rounds = 40;
static size_t max_bytes = 1 << 20;
static unsigned long errors;
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;

static void fail(int thread, int peer, size_t len, long off)
{
    pthread_mutex_lock(&err_lock);
    if (errors++ < 5)
        fprintf(stderr, "rank %d thread %d: payload from rank %d differs (%zu bytes, offset %ld)\n",
                rank, thread, peer, len, off);
    pthread_mutex_unlock(&err_lock);
}

/* size of round r of thread t: 0 B, small, a few KiB, then up to max_bytes */
static size_t size_of(int t, int r)
{
    static const size_t steps[] = {0, 1, 8, 100, 1000, 4096, 9000, 33000, 70000, 300000, 1 << 20,
                                   4 << 20};
    size_t s = steps[(size_t) (r + 3 * t) % (sizeof(steps) / sizeof(steps[0]))];
    return s > max_bytes ? max_bytes : s;
}

static void *worker(void *arg)
{
    int t = (int) (intptr_t) arg;
    size_t cap = max_bytes ? max_bytes : 1;
    char *sbuf = malloc(cap * (size_t) nprocs), *rbuf = malloc(cap * (size_t) nprocs);
    MPI_Request *req = malloc(2 * (size_t) nprocs * sizeof(*req));
    for (int r = 0; r < rounds; r++) {
        size_t len = size_of(t, r);
        int n = 0;
        for (int p = 0; p < nprocs; p++) {
            if (p == rank) continue;
            MPI_Irecv(rbuf + p * cap, (int) len, MPI_BYTE, p, t, MPI_COMM_WORLD, &req[n++]);
        }
        for (int k = 1; k < nprocs; k++) {
            int p = (rank + k) % nprocs;
            uint64_t seed = xb_seed(rank, len, p) ^ ((uint64_t) t << 40) ^ ((uint64_t) r << 48);
            xb_fill(sbuf + p * cap, len, seed);
            if (r & 1)
                MPI_Send(sbuf + p * cap, (int) len, MPI_BYTE, p, t, MPI_COMM_WORLD);
            else
                MPI_Isend(sbuf + p * cap, (int) len, MPI_BYTE, p, t, MPI_COMM_WORLD, &req[n++]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (int p = 0; p < nprocs; p++) {
            if (p == rank) continue;
            uint64_t seed = xb_seed(p, len, rank) ^ ((uint64_t) t << 40) ^ ((uint64_t) r << 48);
            long off = xb_mismatch(rbuf + p * cap, len, seed);
            if (off >= 0) fail(t, p, len, off);
        }
    }
    free(req);
    free(sbuf);
    free(rbuf);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, c;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((c = getopt(argc, argv, "t:r:M:")) != -1) {
        if (c == 't') nthreads = atoi(optarg);
        if (c == 'r') rounds = atoi(optarg);
        if (c == 'M') max_bytes = strtoul(optarg, NULL, 0);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) printf("# MPI_THREAD_MULTIPLE not provided (%d)\n", provided);
        MPI_Finalize();
        return 77;
    }
    pthread_t *th = malloc((size_t) nthreads * sizeof(*th));
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *) (intptr_t) t);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    free(th);
    unsigned long total;
    MPI_Allreduce(&errors, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%sok 1 - np %d: %d threads a rank, %d rounds of 0 B - %zu B with every other rank",
               total ? "not " : "", nprocs, nthreads, rounds, max_bytes);
        if (total) printf(" (%lu errors)", total);
        printf("\n");
    }
    MPI_Finalize();
    return total != 0;
}
