/*
 * A rank away from MPI when its peer first needs it.  Rank 0 makes no MPI call
 * for AWAY seconds right after MPI_Init (reading its input, say) while rank 1
 * sends to it.  ob1 adds rank 0 at that first message, and the BTL then needs an
 * answer from rank 0: pmeth probes its links (btl_pmeth_endpoint.c; the keeper
 * thread answers while rank 0 is away), rsm's verbs back end sends a connection
 * request (btl_rsm_verbs.c; the listener thread answers).  Without those
 * threads rank 1 gives up after btl_pmeth_probe_timeout_ms or
 * btl_rsm_verbs_connect_timeout_ms and the job ends.  Then the two exchange
 * verified messages of 0 B to 64 KiB both ways, and each prints
 *   late: rank R, N messages both ways, W wrong, first reply after T s
 * With FIRST 0, rank 0 sends first, once back: rank 1 has waited in MPI_Recv
 * (pmeth: probing rank 0 in the background, btl_pmeth_probe_ahead, without an
 * answer if no keeper answered) and must take rank 0's messages all the same.
 *
 *   mpi_late [AWAY [FIRST]]        (defaults 3 and 1)
 * Exit status 1 when a payload was wrong.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "xb_pattern.h"

int main(int argc, char **argv)
{
    double away = argc > 1 ? atof(argv[1]) : 3.0;
    int first_sender = argc > 2 ? atoi(argv[2]) : 1;
    int rank, size, bad = 0, n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) {
            fprintf(stderr, "mpi_late: run with 2 ranks\n");
        }
        MPI_Finalize();
        return 2;
    }
    double t0 = MPI_Wtime();
    if (rank == 0) {
        usleep((useconds_t) (away * 1e6));      /* away from MPI */
    }
    static unsigned char buf[65536];
    double first = -1;
    for (size_t len = 0; len <= sizeof(buf); len = len ? len * 4 : 1) {
        for (int dir = 0; dir < 2; dir++) {
            int from = dir == 0 ? first_sender : 1 - first_sender, to = 1 - from;
            uint64_t seed = xb_seed(from, (uint64_t) to, (int) len);
            if (rank == from) {
                xb_fill(buf, len, seed);
                MPI_Send(buf, (int) len, MPI_BYTE, to, (int) len, MPI_COMM_WORLD);
            } else {
                MPI_Recv(buf, (int) len, MPI_BYTE, from, (int) len, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                if (first < 0) {
                    first = MPI_Wtime() - t0;
                }
                if (xb_mismatch(buf, len, seed) >= 0) {
                    fprintf(stderr, "rank %d: wrong payload of %zu bytes from rank %d\n", rank,
                            len, from);
                    bad++;
                }
                n++;
            }
        }
    }
    printf("late: rank %d, %d messages both ways, %d wrong, first reply after %.2f s\n", rank, n,
           bad, first);
    fflush(stdout);
    MPI_Finalize();
    return bad ? 1 : 0;
}
