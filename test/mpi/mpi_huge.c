/*
 * One message larger than 4 GiB, every byte verified.  Past 2^31 bytes a
 * length no longer fits an int, past 2^32 no longer a uint32_t, and one
 * process_vm_readv / _writev moves at most about 2 GiB, so a transport that
 * keeps a length or an offset in too narrow a field, or takes a short copy for
 * a whole one, fails here and nowhere below these sizes.  Rank 0 sends COUNT
 * elements of a contiguous type of ELEM bytes (an odd size, so the message
 * ends off a page and off a cache line) to rank 1 in one MPI_Send; rank 1
 * checks the status's count and every byte, and answers with what it found.
 * Prints one TAP line (rank 0).
 *
 *   mpi_huge [COUNT [ELEM]]        (defaults 4097 and 1048579: 4,296,028,163 B)
 * Exit status 1 when the message was wrong, 2 on bad use or no memory.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "xb_pattern.h"

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int count = argc > 1 ? atoi(argv[1]) : 4097;
    const int elem = argc > 2 ? atoi(argv[2]) : 1048579;
    if (size != 2 || count <= 0 || elem <= 0) {
        if (rank == 0) {
            fprintf(stderr, "mpi_huge: run with 2 ranks; COUNT and ELEM must be positive\n");
        }
        MPI_Finalize();
        return 2;
    }
    const size_t total = (size_t) count * (size_t) elem;
    const uint64_t seed = xb_seed(0, 0, 7);
    char *buf = malloc(total);
    int have = buf != NULL, both;
    MPI_Allreduce(&have, &both, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!both) {
        fprintf(stderr, "mpi_huge: rank %d: no memory for %zu bytes\n", rank, total);
        MPI_Finalize();
        return 2;
    }
    MPI_Datatype type;
    MPI_Type_contiguous(elem, MPI_BYTE, &type);
    MPI_Type_commit(&type);

    /* what rank 1 found: [0] elements received, [1] first wrong offset or -1 */
    long long found[2] = {-1, -1};
    double secs = 0;
    if (rank == 0) {
        xb_fill(buf, total, seed);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Send(buf, count, type, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(found, 2, MPI_LONG_LONG, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        secs = MPI_Wtime() - t0;
    } else {
        /* not zero: a byte the transport never wrote must not match by chance */
        for (size_t off = 0; off < total; off += 4096) {
            buf[off] = (char) ~xb_expected_byte(off, seed);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Status st;
        int got = -1;
        MPI_Recv(buf, count, type, 0, 1, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, type, &got);
        found[0] = got;
        found[1] = xb_mismatch(buf, total, seed);
        MPI_Send(found, 2, MPI_LONG_LONG, 0, 2, MPI_COMM_WORLD);
    }
    const int ok = found[0] == count && found[1] < 0;
    if (rank == 0) {
        if (ok) {
            printf("ok 1 - one message of %zu B (%d x %d B) arrived whole and verified (%.2f s)\n",
                   total, count, elem, secs);
        } else if (found[0] != count) {
            printf("not ok 1 - one message of %zu B: the receiver's count is %lld elements, not %d\n",
                   total, found[0], count);
        } else {
            printf("not ok 1 - one message of %zu B: wrong byte at offset %lld (expected 0x%02x)\n",
                   total, found[1], xb_expected_byte((size_t) found[1], seed));
        }
        printf("1..1\n");
    }
    MPI_Type_free(&type);
    free(buf);
    MPI_Finalize();
    return ok ? 0 : 1;
}
