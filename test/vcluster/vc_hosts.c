/*
 * Where am I, who shares my node, and one verified stream between two chosen ranks.
 *   vc_hosts SRC DST BYTES ITERS
 * Every rank reports (rank 0 prints, one line each, in rank order):
 *   rank R host NAME gethostname NAME shared_leader L shared_size S
 * where NAME is MPI_Get_processor_name, L the lowest world rank of the rank's
 * MPI_COMM_TYPE_SHARED communicator and S its size - so the test script can check that
 * the communicator splits by virtual host.  Then rank SRC sends ITERS messages of BYTES
 * to rank DST, each filled with the pattern of (SRC, iteration, tag) and verified byte
 * by byte at DST; rank 0 prints "stream SRC->DST BYTES x ITERS verified" or
 * "stream ... FAILED" and the exit status is non-zero on any mismatch.
 * The script counts the bytes on the hosts' links around the job: the stream's volume
 * shows where the data went (shared memory or a link).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xb_pattern.h"

enum { NAME_LEN = 64, TAG = 7 };

struct where {
    int rank;
    int shared_leader;
    int shared_size;
    char proc_name[NAME_LEN];
    char host_name[NAME_LEN];
};

static void describe(int rank, struct where *me)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    MPI_Comm shared;

    memset(me, 0, sizeof *me);
    me->rank = rank;
    MPI_Get_processor_name(name, &len);
    snprintf(me->proc_name, sizeof me->proc_name, "%.*s", len, name);
    if (gethostname(me->host_name, sizeof me->host_name - 1) != 0)
        snprintf(me->host_name, sizeof me->host_name, "?");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &me->shared_size);
    /* the lowest world rank names the group: equal leaders = same shared-memory node */
    MPI_Allreduce(&rank, &me->shared_leader, 1, MPI_INT, MPI_MIN, shared);
    MPI_Comm_free(&shared);
}

/* Returns the number of mismatching messages seen by this rank. */
static long stream(int rank, int src, int dst, size_t bytes, long iters)
{
    long bad = 0;
    unsigned char *buf;

    if (rank != src && rank != dst) return 0;
    buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        fprintf(stderr, "rank %d: no memory for %zu bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < iters; i++) {
        uint64_t seed = xb_seed(src, (uint64_t)i, TAG);
        if (rank == src) {
            xb_fill(buf, bytes, seed);
            MPI_Send(buf, (int)bytes, MPI_BYTE, dst, TAG, MPI_COMM_WORLD);
        } else {
            MPI_Status st;
            int got = -1;
            memset(buf, 0, bytes);
            MPI_Recv(buf, (int)bytes, MPI_BYTE, src, TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            long off = xb_mismatch(buf, bytes, seed);
            if (got != (int)bytes || off >= 0) {
                if (bad++ < 3)
                    fprintf(stderr, "rank %d: message %ld: %d of %zu bytes, first bad offset %ld\n",
                            rank, i, got, bytes, off);
            }
        }
    }
    free(buf);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size;
    struct where me, *all = NULL;
    long bad, total_bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: vc_hosts SRC DST BYTES ITERS\n");
        MPI_Finalize();
        return 2;
    }
    int src = atoi(argv[1]), dst = atoi(argv[2]);
    size_t bytes = strtoul(argv[3], NULL, 0);
    long iters = atol(argv[4]);
    if (src < 0 || dst < 0 || src >= size || dst >= size || src == dst || bytes > (1u << 30)) {
        if (rank == 0) fprintf(stderr, "vc_hosts: bad ranks %d %d or size %zu (np %d)\n",
                               src, dst, bytes, size);
        MPI_Finalize();
        return 2;
    }

    describe(rank, &me);
    if (rank == 0) all = calloc((size_t)size, sizeof *all);
    MPI_Gather(&me, (int)sizeof me, MPI_BYTE, all, (int)sizeof me, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++)
            printf("rank %d host %s gethostname %s shared_leader %d shared_size %d\n",
                   all[r].rank, all[r].proc_name, all[r].host_name, all[r].shared_leader,
                   all[r].shared_size);
        free(all);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    bad = stream(rank, src, dst, bytes, iters);
    MPI_Reduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("stream %d->%d %zu x %ld %s\n", src, dst, bytes, iters,
               total_bad ? "FAILED" : "verified");
        fflush(stdout);
    }
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
