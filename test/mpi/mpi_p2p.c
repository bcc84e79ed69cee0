/*
 * Point-to-point correctness over whatever BTL the command line selects, every
 * byte verified.  Rank 0 prints one TAP line per check, after all ranks agree.
 *   mpi_p2p [-M MAX_BYTES] [-w ROUNDS]
 *   -M: largest message (default 16 MiB)
 *   -w: first, ROUNDS all-pairs exchanges of 1 KiB (a transport that measures
 *       its peers, as btl rsm does, has decided before the checks start)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xb_pattern.h"

static int rank, nprocs, tap_n;
static unsigned long errors; /* this rank's failures in the current check */

static void fail(const char *what, int peer, size_t size, long off)
{
    if (errors++ < 5)
        fprintf(stderr, "rank %d: %s (peer %d, %zu bytes, offset %ld)\n", rank, what, peer, size, off);
}

static void verify(const void *buf, size_t len, uint64_t seed, int peer)
{
    long off = xb_mismatch(buf, len, seed);
    if (off >= 0) fail("payload differs", peer, len, off);
}

/* One TAP line: passes only when no rank recorded an error.  Every rank learns
 * the total, so every rank's exit status says whether a check failed. */
static int failed_checks;
static int report(const char *fmt, const char *arg)
{
    unsigned long total;
    MPI_Allreduce(&errors, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    errors = 0;
    failed_checks += total != 0;
    if (0 == rank) {
        printf("%sok %d - np %d: ", total ? "not " : "", ++tap_n, nprocs);
        printf(fmt, arg);
        if (total) printf(" (%lu errors)", total);
        printf("\n");
        fflush(stdout);
    }
    return total != 0;
}

/* Every rank exchanges one message of `size` bytes with every rank (itself included). */
static void all_pairs(size_t size, int blocking, char *sbuf, char *rbuf)
{
    MPI_Request *req = malloc(2 * (size_t) nprocs * sizeof(*req));
    int n = 0;
    for (int p = 0; p < nprocs; p++) {
        MPI_Irecv(rbuf + p * size, (int) size, MPI_BYTE, p, 10, MPI_COMM_WORLD, &req[n++]);
    }
    for (int p = 0; p < nprocs; p++) xb_fill(sbuf + p * size, size, xb_seed(rank, size, p));
    for (int k = 0; k < nprocs; k++) {
        /* rotated order: each rank starts with a different peer (receives are all pre-posted) */
        int p = (rank + k) % nprocs;
        if (blocking)
            MPI_Send(sbuf + p * size, (int) size, MPI_BYTE, p, 10, MPI_COMM_WORLD);
        else
            MPI_Isend(sbuf + p * size, (int) size, MPI_BYTE, p, 10, MPI_COMM_WORLD, &req[n++]);
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    for (int p = 0; p < nprocs; p++) verify(rbuf + p * size, size, xb_seed(p, size, rank), p);
    free(req);
}

int main(int argc, char **argv)
{
    size_t max = 16 << 20;
    int c, warmup = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    while ((c = getopt(argc, argv, "M:w:")) != -1) {
        if (c == 'M') max = strtoul(optarg, NULL, 0);
        if (c == 'w') warmup = atoi(optarg);
    }
    const size_t sizes[] = {0, 1, 7, 8, 63, 64, 65, 511, 512, 4095, 4096, 4097, 8193, 20000, 32768,
                            65535, 65536, 65537,
                            (1 << 20) - 1, 1 << 20, (4 << 20) + 3, 16 << 20};
    /* check 2 sends up to 70,000 B whatever -M says: the buffers hold at least that */
    const size_t cap = max < 70000 ? 70000 : max;
    char *sbuf = malloc(cap * nprocs + 64), *rbuf = malloc(cap * nprocs + 64);
    char label[64];

    if (warmup > 0) {
        char *ws = malloc(1024 * (size_t) nprocs), *wr = malloc(1024 * (size_t) nprocs);
        for (int r = 0; r < warmup; r++) all_pairs(1024, 0, ws, wr);
        free(ws);
        free(wr);
        snprintf(label, sizeof label, "warm-up: %d all-pairs exchanges of 1 KiB", warmup);
        report("%s verified", label);
    }

    /* 1. all pairs, non-blocking and blocking, at every size up to max */
    for (int blocking = 0; blocking < 2; blocking++) {
        size_t largest = 0;
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes && sizes[i] <= max; i++) {
            all_pairs(sizes[i], blocking, sbuf, rbuf);
            largest = sizes[i];
        }
        snprintf(label, sizeof label, "%s all-pairs exchange, 0 B to %zu B", blocking ? "blocking" : "non-blocking", largest);
        report("%s verified", label);
    }

    /* 2. MPI_ANY_SOURCE + MPI_ANY_TAG: status names the real source, tag and count */
    {
        const int per_peer = 20;
        if (0 == rank) {
            for (int k = 0; k < per_peer * (nprocs - 1); k++) {
                MPI_Status st;
                int count;
                MPI_Recv(rbuf, (int) cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                /* sender encodes size in its tag: size = tag * 37 % 70000 */
                size_t expect = (size_t) st.MPI_TAG * 37 % 70000;
                if (st.MPI_SOURCE < 1 || st.MPI_SOURCE >= nprocs || (size_t) count != expect)
                    fail("wrong status from ANY_SOURCE/ANY_TAG receive", st.MPI_SOURCE, (size_t) count, -1);
                else
                    verify(rbuf, (size_t) count, xb_seed(st.MPI_SOURCE, 0, st.MPI_TAG), st.MPI_SOURCE);
            }
        } else {
            for (int k = 0; k < per_peer; k++) {
                int tag = 1 + rank * 1000 + k * 13;
                size_t size = (size_t) tag * 37 % 70000;
                xb_fill(sbuf, size, xb_seed(rank, 0, tag));
                MPI_Send(sbuf, (int) size, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
            }
        }
        report("%s", "MPI_ANY_SOURCE/MPI_ANY_TAG receives report source, tag and count and verify");
    }

    /* 3. non-overtaking: a stream of messages on one tag arrives in order */
    {
        const int msgs = 200;
        int to = (rank + 1) % nprocs, from = (rank + nprocs - 1) % nprocs;
        MPI_Request *req = malloc(msgs * sizeof(*req));
        size_t sz = 1000;
        char *s = malloc(sz * msgs), *r = malloc(sz * msgs);
        for (int k = 0; k < msgs; k++) MPI_Irecv(r + k * sz, (int) sz, MPI_BYTE, from, 5, MPI_COMM_WORLD, &req[k]);
        for (int k = 0; k < msgs; k++) {
            xb_fill(s + k * sz, sz, xb_seed(rank, k, 5));
            MPI_Send(s + k * sz, (int) sz, MPI_BYTE, to, 5, MPI_COMM_WORLD);
        }
        MPI_Waitall(msgs, req, MPI_STATUSES_IGNORE);
        for (int k = 0; k < msgs; k++) verify(r + k * sz, sz, xb_seed(from, k, 5), from);
        free(req), free(s), free(r);
        report("%s", "200 messages on one tag arrive in send order");
    }

    /* 4. non-contiguous datatypes: a strided vector and an indexed type, sent and received.
     *    The vector's packed sizes (12 B blocks) sit just under 16, 32 and 48 KiB, where a
     *    message with a 14-byte header fills several pool pieces unevenly, and at 480,000 B
     *    (a rendezvous, packed in fragments) */
    {
        const int counts[] = {1365, 2730, 4096, 40000}, blocklen = 3, stride = 7; /* ints */
        int to = (rank + 1) % nprocs, from = (rank + nprocs - 1) % nprocs;
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            const int count = counts[c];
            MPI_Datatype vec;
            MPI_Type_vector(count, blocklen, stride, MPI_INT, &vec);
            MPI_Type_commit(&vec);
            size_t span = (size_t) count * stride * sizeof(int);
            int *sv = malloc(span), *rv = malloc(span), *packed = malloc(count * blocklen * sizeof(int));
            xb_fill(sv, span, xb_seed(rank, 1, 6));
            memset(rv, 0xee, span);
            /* vector -> vector: gaps in the receive buffer must stay untouched */
            MPI_Sendrecv(sv, 1, vec, to, 6, rv, 1, vec, from, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int *expect = malloc(span);
            xb_fill(expect, span, xb_seed(from, 1, 6));
            for (int b = 0; b < count; b++)
                for (int j = 0; j < stride; j++) {
                    int want = j < blocklen ? expect[b * stride + j] : (int) 0xeeeeeeee;
                    if (rv[b * stride + j] != want) { fail("vector datatype element wrong", from, span, b * stride + j); b = count; break; }
                }
            /* vector -> contiguous: the receiver sees the blocks packed in order */
            MPI_Sendrecv(sv, 1, vec, to, 7, packed, count * blocklen, MPI_INT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int b = 0; b < count * blocklen; b++)
                if (packed[b] != expect[(b / blocklen) * stride + b % blocklen]) { fail("packed vector wrong", from, span, b); break; }
            MPI_Type_free(&vec);
            free(sv), free(rv), free(packed), free(expect);
        }
        /* indexed doubles */
        MPI_Datatype idx;
        int lens[3] = {5, 1, 1000}, displs[3] = {0, 9, 20};
        MPI_Type_indexed(3, lens, displs, MPI_DOUBLE, &idx);
        MPI_Type_commit(&idx);
        double sd[1020], rd[1020], ed[1020];
        xb_fill(sd, sizeof sd, xb_seed(rank, 2, 8));
        xb_fill(ed, sizeof ed, xb_seed(from, 2, 8));
        memset(rd, 0, sizeof rd);
        MPI_Sendrecv(sd, 1, idx, to, 8, rd, 1, idx, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int k = 0; k < 3; k++)
            if (memcmp(rd + displs[k], ed + displs[k], lens[k] * sizeof(double)))
                fail("indexed datatype block wrong", from, sizeof rd, displs[k]);
        MPI_Type_free(&idx);
        report("%s", "non-contiguous datatypes (vector, indexed) arrive element for element");
    }

    /* 5. synchronous send, probe then receive of the probed size */
    {
        int to = (rank + 1) % nprocs, from = (rank + nprocs - 1) % nprocs;
        /* a rendezvous-sized message where -M allows, each rank's a different length */
        size_t base = max < 300000 + (size_t) nprocs ? max / 2 : 300000, sz = base + rank;
        MPI_Request rq;
        MPI_Status st;
        int count;
        xb_fill(sbuf, sz, xb_seed(rank, 3, 9));
        MPI_Issend(sbuf, (int) sz, MPI_BYTE, to, 9, MPI_COMM_WORLD, &rq);
        MPI_Probe(from, 9, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        if ((size_t) count != base + (size_t) from) fail("probe reported a wrong size", from, (size_t) count, -1);
        MPI_Recv(rbuf, count, MPI_BYTE, from, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        verify(rbuf, (size_t) count, xb_seed(from, 3, 9), from);
        report("%s", "MPI_Issend + MPI_Probe + receive of the probed size");
    }

    /* 6. the send modes a BTL sees differently: buffered (ob1 packs into memory the BTL
     *    allocates), synchronous (a rendezvous even when short), ready; around the sizes
     *    where transports change protocol (a frame, several frames, an eager limit) */
    {
        const size_t msizes[] = {0, 100, 9000, 20000, 35000, 36000, 65500, 65600, 70000};
        const int nmodes = 3;
        int to = (rank + 1) % nprocs, from = (rank + nprocs - 1) % nprocs;
        size_t attach = 0;
        for (size_t i = 0; i < sizeof msizes / sizeof *msizes; i++) attach += msizes[i] + MPI_BSEND_OVERHEAD;
        char *bbuf = malloc(attach), *ms = malloc(nmodes * 70000), *mr = malloc(nmodes * 70000);
        MPI_Buffer_attach(bbuf, (int) attach);
        size_t largest = 0;
        for (size_t i = 0; i < sizeof msizes / sizeof *msizes && msizes[i] <= max; i++) {
            size_t sz = msizes[i];
            MPI_Request rq[3];
            for (int m = 0; m < nmodes; m++) {
                MPI_Irecv(mr + m * sz, (int) sz, MPI_BYTE, from, 20 + m, MPI_COMM_WORLD, &rq[m]);
                xb_fill(ms + m * sz, sz, xb_seed(rank, sz, 20 + m));
            }
            MPI_Barrier(MPI_COMM_WORLD);        /* every receive posted: MPI_Rsend is legal */
            MPI_Bsend(ms, (int) sz, MPI_BYTE, to, 20, MPI_COMM_WORLD);
            MPI_Ssend(ms + sz, (int) sz, MPI_BYTE, to, 21, MPI_COMM_WORLD);
            MPI_Rsend(ms + 2 * sz, (int) sz, MPI_BYTE, to, 22, MPI_COMM_WORLD);
            MPI_Waitall(nmodes, rq, MPI_STATUSES_IGNORE);
            for (int m = 0; m < nmodes; m++) verify(mr + m * sz, sz, xb_seed(from, sz, 20 + m), from);
            largest = sz;
        }
        void *detached;
        int dsize;
        MPI_Buffer_detach(&detached, &dsize);
        free(bbuf), free(ms), free(mr);
        snprintf(label, sizeof label, "buffered, synchronous and ready sends, 0 B to %zu B", largest);
        report("%s verified", label);
    }

    /* 7. a burst: 128 messages of 32 KiB to one peer before it posts a receive (more than a
     *    transport's send window or ring holds at once; ob1's unexpected queue on arrival) */
    {
        const int msgs = 128;
        const size_t sz = max < 32768 ? max : 32768;
        int to = (rank + 1) % nprocs, from = (rank + nprocs - 1) % nprocs;
        char *bs = malloc(msgs * sz + 1), *br = malloc(msgs * sz + 1);
        MPI_Request *rq = malloc(2 * msgs * sizeof(*rq));
        for (int k = 0; k < msgs; k++) {
            xb_fill(bs + k * sz, sz, xb_seed(rank, k, 24));
            MPI_Isend(bs + k * sz, (int) sz, MPI_BYTE, to, 24, MPI_COMM_WORLD, &rq[k]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 0; k < msgs; k++) MPI_Irecv(br + k * sz, (int) sz, MPI_BYTE, from, 24, MPI_COMM_WORLD, &rq[msgs + k]);
        MPI_Waitall(2 * msgs, rq, MPI_STATUSES_IGNORE);
        for (int k = 0; k < msgs; k++) verify(br + k * sz, sz, xb_seed(from, k, 24), from);
        free(bs), free(br), free(rq);
        snprintf(label, sizeof label, "a burst of %d sends of %zu B, received late, in order", msgs, sz);
        report("%s, verified", label);
    }

    free(sbuf), free(rbuf);
    if (0 == rank) printf("1..%d\n", tap_n);
    MPI_Finalize();
    return failed_checks != 0;
}
