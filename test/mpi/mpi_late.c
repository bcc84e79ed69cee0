/*
 * A rank away from MPI when its peer first needs it.  Rank 0 makes no MPI call
 * for AWAY seconds right after MPI_Init (reading its input, say) while rank 1
 * sends to it, from AWAY / 10 s on.  ob1 adds rank 0 at that first message,
 * and the BTL then needs an answer from rank 0: pmeth probes its links
 * (btl_pmeth_endpoint.c; the keeper thread answers while rank 0 is away),
 * rsm's verbs back end sends a connection request (btl_rsm_verbs.c; the
 * listener thread answers).  Without those threads rank 1 gives up after
 * btl_pmeth_probe_timeout_ms or btl_rsm_verbs_connect_timeout_ms and the job
 * ends.  Then the two exchange verified messages of 0 B to 64 KiB both ways,
 * and each prints
 *   late: rank R, N messages both ways, W wrong, first reply after T s
 * With FIRST 0, rank 0 sends first, once back: rank 1 has waited in MPI_Recv
 * (pmeth: probing rank 0 in the background, btl_pmeth_probe_ahead, without an
 * answer if no keeper answered) and must take rank 0's messages all the same.
 * With CROWD above 0 and 3 ranks or more: the last rank sends CROWD messages
 * of 1000 B to rank 0 right away (the others but 0 and 1 only finalize),
 * which arrive while rank 0 is away (pmeth's keeper leaves them for
 * progress), and rank 1 first sends only after AWAY / 4 s:
 * its probes must be answered all the same (pmeth's keeper stopped reading
 * the ring after 32 such frames until 2026-12-05).  Rank 0 takes the crowd's
 * messages first once back, verified; the last rank prints
 *   late: rank R, N messages to rank 0
 *
 *   mpi_late [AWAY [FIRST [CROWD]]]        (defaults 3, 1 and 0)
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
    int crowd = argc > 3 ? atoi(argv[3]) : 0;
    int rank, size, bad = 0, n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (crowd > 0 ? size < 3 : size != 2) {
        if (rank == 0) {
            fprintf(stderr, "mpi_late: run with 2 ranks (3 or more with CROWD)\n");
        }
        MPI_Finalize();
        return 2;
    }
    const int crowd_rank = size - 1;
    double t0 = MPI_Wtime();
    static unsigned char buf[65536];
    enum { CROWD_LEN = 1000 };
    if (rank >= 2) {
        for (int i = 0; rank == crowd_rank && i < crowd; i++) {
            xb_fill(buf, CROWD_LEN, xb_seed(crowd_rank, 0, i));
            MPI_Send(buf, CROWD_LEN, MPI_BYTE, 0, i, MPI_COMM_WORLD);
        }
        if (rank == crowd_rank) {
            printf("late: rank %d, %d messages to rank 0\n", rank, crowd);
            fflush(stdout);
        }
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) {
        usleep((useconds_t) (away * 1e6));      /* away from MPI */
        for (int i = 0; i < crowd; i++) {
            MPI_Recv(buf, CROWD_LEN, MPI_BYTE, crowd_rank, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (xb_mismatch(buf, CROWD_LEN, xb_seed(crowd_rank, 0, i)) >= 0) {
                fprintf(stderr, "rank 0: wrong payload in message %d from rank %d\n", i,
                        crowd_rank);
                bad++;
            }
        }
    } else if (crowd > 0) {
        usleep((useconds_t) (away * 1e6 / 4));  /* after the crowd's frames */
    } else if (first_sender == 1) {
        /* rank 0 surely away: both leave MPI_Init's fence within milliseconds, but one
         * released first could reach the other still in it, whose progress answers */
        usleep((useconds_t) (away * 1e6 / 10));
    }
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
