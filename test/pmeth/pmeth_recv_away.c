/*
 * A receiver away from MPI while frames to it are in flight (btl pmeth's path
 * migration, btl_pmeth_apm.c: pmeth_apm_check_silent).  Rank 0 starts MSGS
 * MPI_Isend of BYTES each to rank 1 and waits for them; rank 1 stays out of MPI
 * for AWAY seconds first (computing, say), then receives and checks every
 * byte.  ROUNDS rounds.  Meanwhile rank 0's frames go unacknowledged on every
 * link; rank 1's keeper thread answers path probes but acknowledges no data.
 * No path is at fault, so none may be reported dead (until 2026-12-05 each
 * healthy link was, in turn: only the other links were probed, and their
 * answers blamed the silent one).  Rank 1 prints
 *   recv_away: R rounds of M x B bytes, W wrong
 *
 *   pmeth_recv_away [AWAY [ROUNDS [MSGS [BYTES]]]]    (defaults 1.5, 3, 64, 65536)
 * Exit status 1 when a payload was wrong.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned char byte_at(size_t i, int round)
{
    return (unsigned char) ((i * 2654435761u) >> 13 ^ (size_t) round * 151u);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double away = argc > 1 ? atof(argv[1]) : 1.5;
    int rounds = argc > 2 ? atoi(argv[2]) : 3, msgs = argc > 3 ? atoi(argv[3]) : 64;
    int bytes = argc > 4 ? atoi(argv[4]) : 65536;
    if (size != 2 || rounds < 1 || msgs < 1 || bytes < 1) {
        if (rank == 0) {
            printf("recv_away: 2 ranks; AWAY ROUNDS MSGS BYTES positive\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t total = (size_t) msgs * (size_t) bytes;
    unsigned char *buf = malloc(total);
    MPI_Request *rq = malloc(sizeof(*rq) * (size_t) msgs);
    if (buf == NULL || rq == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long wrong = 0;
    MPI_Barrier(MPI_COMM_WORLD);        /* both ways connected before anyone leaves */
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) {
            for (size_t i = 0; i < total; i++) {
                buf[i] = byte_at(i, r);
            }
            for (int m = 0; m < msgs; m++) {
                MPI_Isend(buf + (size_t) m * bytes, bytes, MPI_BYTE, 1, m, MPI_COMM_WORLD, &rq[m]);
            }
            MPI_Waitall(msgs, rq, MPI_STATUSES_IGNORE);
        } else {
            struct timespec ts = {.tv_sec = (time_t) away,
                                  .tv_nsec = (long) ((away - (double) (time_t) away) * 1e9)};
            nanosleep(&ts, NULL);      /* away from MPI */
            memset(buf, 0, total);
            for (int m = 0; m < msgs; m++) {
                MPI_Irecv(buf + (size_t) m * bytes, bytes, MPI_BYTE, 0, m, MPI_COMM_WORLD, &rq[m]);
            }
            MPI_Waitall(msgs, rq, MPI_STATUSES_IGNORE);
            for (size_t i = 0; i < total; i++) {
                wrong += buf[i] != byte_at(i, r);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 1) {
        printf("recv_away: %d rounds of %d x %d bytes, %ld wrong\n", rounds, msgs, bytes, wrong);
    }
    free(buf);
    free(rq);
    MPI_Finalize();
    return wrong != 0;
}
