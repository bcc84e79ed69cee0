/*
 * Soak: every rank sends messages of random sizes (0 B .. 4 MiB), random tags
 * and to random peers, round after round, for a bounded time; receives are
 * MPI_ANY_SOURCE / MPI_ANY_TAG, and every byte, source, tag and count is checked.
 * Sizes, tags and contents follow from a hash of (round, source, destination,
 * sequence), so the receiver knows what each message must be.
 *   rsm_soak [SECONDS]      prints one TAP line on rank 0; exit 1 on any error
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static uint64_t key(int round, int src, int dst, int seq)
{
    return mix(((uint64_t) round << 40) ^ ((uint64_t) src << 28) ^ ((uint64_t) dst << 16) ^ (uint64_t) seq);
}

static int msg_size(uint64_t k)
{
    unsigned r = k % 100;
    uint64_t h = mix(k + 1);
    if (r < 55) return (int) (h % 513);             /* inline sizes */
    if (r < 90) return (int) (h % 65537);           /* pool fragments */
    return (int) (h % (4 * 1024 * 1024 + 1));      /* pipelined / single copy */
}

static int msg_tag(uint64_t k) { return (int) (mix(k + 2) % 1000); }

static void fill(unsigned char *p, int n, uint64_t k)
{
    for (int i = 0; i < n; i++) p[i] = (unsigned char) (mix(k + (uint64_t) (i / 8)) >> (8 * (i % 8)));
}

int main(int argc, char **argv)
{
    int rank, np;
    double seconds = argc > 1 ? atof(argv[1]) : 20;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    long errors = 0, messages = 0;
    double bytes = 0, start = MPI_Wtime();
    int *sendcount = calloc(np, sizeof(int)), *recvcount = calloc(np, sizeof(int));
    int *seq = calloc(np, sizeof(int)), round = 0, go = 1;

    while (go) {
        /* how many messages to each peer this round: random, sometimes none */
        for (int p = 0; p < np; p++)
            sendcount[p] = (int) (mix(((uint64_t) round << 20) ^ (uint64_t) (rank * 977 + p)) % 6);
        MPI_Alltoall(sendcount, 1, MPI_INT, recvcount, 1, MPI_INT, MPI_COMM_WORLD);
        int nrecv = 0, nsend = 0;
        for (int p = 0; p < np; p++) { nrecv += recvcount[p]; nsend += sendcount[p]; }
        /* every receive can take the largest message a peer may send it this round */
        int maxlen = 0;
        for (int p = 0; p < np; p++)
            for (int s = 0; s < recvcount[p]; s++) {
                int n = msg_size(key(round, p, rank, s));
                if (n > maxlen) maxlen = n;
            }
        MPI_Request *req = malloc((size_t) (nrecv + nsend + 1) * sizeof(*req));
        MPI_Status *st = malloc((size_t) (nrecv + nsend + 1) * sizeof(*st));
        unsigned char **rbuf = malloc((size_t) (nrecv + 1) * sizeof(*rbuf));
        unsigned char **sbuf = malloc((size_t) (nsend + 1) * sizeof(*sbuf));
        for (int i = 0; i < nrecv; i++) {
            rbuf[i] = malloc((size_t) maxlen + 1);
            MPI_Irecv(rbuf[i], maxlen, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req[i]);
        }
        /* send in a random peer order, each peer's messages in sequence */
        int k = 0, start_peer = (int) (mix((uint64_t) round * 31 + (uint64_t) rank) % (uint64_t) np);
        for (int j = 0; j < np; j++) {
            int p = (start_peer + j) % np;
            for (int s = 0; s < sendcount[p]; s++) {
                uint64_t kk = key(round, rank, p, s);
                int n = msg_size(kk);
                sbuf[k] = malloc((size_t) n + 1);
                fill(sbuf[k], n, kk);
                MPI_Isend(sbuf[k], n, MPI_BYTE, p, msg_tag(kk), MPI_COMM_WORLD, &req[nrecv + k]);
                k++;
            }
        }
        MPI_Waitall(nrecv + nsend, req, st);
        /* receives were posted in order: per source, they matched in send order */
        memset(seq, 0, np * sizeof(int));
        unsigned char *want = malloc((size_t) maxlen + 1);
        for (int i = 0; i < nrecv; i++) {
            int src = st[i].MPI_SOURCE, count;
            MPI_Get_count(&st[i], MPI_BYTE, &count);
            if (src < 0 || src >= np || seq[src] >= recvcount[src]) { errors++; continue; }
            uint64_t kk = key(round, src, rank, seq[src]++);
            int n = msg_size(kk);
            if (count != n || st[i].MPI_TAG != msg_tag(kk)) {
                if (errors++ < 5)
                    fprintf(stderr, "rank %d: from %d: count %d tag %d, want %d tag %d\n", rank, src,
                            count, st[i].MPI_TAG, n, msg_tag(kk));
                continue;
            }
            fill(want, n, kk);
            if (memcmp(want, rbuf[i], (size_t) n) != 0) {
                if (errors++ < 5) fprintf(stderr, "rank %d: payload from %d (%d bytes) differs\n", rank, src, n);
            }
            messages++;
            bytes += n;
        }
        free(want);
        for (int i = 0; i < nrecv; i++) free(rbuf[i]);
        for (int i = 0; i < nsend; i++) free(sbuf[i]);
        free(rbuf); free(sbuf); free(req); free(st);
        round++;
        go = MPI_Wtime() - start < seconds;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    long tot_err, tot_msg;
    double tot_bytes;
    MPI_Reduce(&errors, &tot_err, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&messages, &tot_msg, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&bytes, &tot_bytes, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(&tot_err, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%sok 1 - soak np %d: %d rounds, %ld messages, %.1f MB verified, %ld errors\n",
               tot_err ? "not " : "", np, round, tot_msg, tot_bytes / 1e6, tot_err);
    MPI_Finalize();
    return tot_err ? 1 : 0;
}
