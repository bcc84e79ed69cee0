/*
 * A sender must never take an unread postbox for acknowledged (btl rsm between
 * hosts, btl_rsm_verbs.c: push_row).  The sender reads a slot as acknowledged
 * when the receiver's byte for it in its ack row is the slot's lap tag, 7 bits
 * that repeat every 128 laps of the queue; acks that ride on the receiver's own
 * messages leave the row as it was.  So, for each N in FROM..TO, ranks 0 (the
 * sender) and 1 (the receiver), on two hosts:
 *   1. rank 0 sends 4 queues' worth of 8-byte messages while rank 1 sleeps, so
 *      rank 1 writes its acks into the row when it catches up;
 *   2. N ping-pongs of 8 bytes, every ack riding on a reply, the row untouched
 *      (with btl_rsm_postboxes 16, 2048 round trips are 128 laps);
 *   3. rank 0 sends 3 queues' worth again while rank 1 sleeps: a row byte left
 *      from step 1, 128 laps old, reads as this lap's, and a sender that trusts
 *      it writes over postboxes rank 1 has not read.
 * Every message carries (N, step, index) and is checked.  Prints one line:
 *   lapwrap: N FROM..TO, K rounds, every message verified
 *   lapwrap: N=.. step .. message ..: got .. (and exit status 1)
 * A sender that overwrote unread postboxes shows as a wrong message, or as a
 * hang (the job's time limit).
 *
 *   rsm_lapwrap FROM TO [QUEUE]      (QUEUE: postboxes per queue, default 16)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static uint64_t word(int n, int step, int i)
{
    return (uint64_t) n << 32 | (uint64_t) step << 24 | (uint64_t) i;
}

/* rank 1: receive COUNT messages of STEP from rank 0 and check them */
static int take(int n, int step, int count)
{
    for (int i = 0; i < count; i++) {
        uint64_t got = 0;
        MPI_Recv(&got, 1, MPI_UINT64_T, 0, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (got != word(n, step, i)) {
            printf("lapwrap: N=%d step %d message %d: got N=%llu step %llu message %llu\n", n,
                   step, i, (unsigned long long) (got >> 32),
                   (unsigned long long) (got >> 24 & 0xff), (unsigned long long) (got & 0xffffff));
            return 1;
        }
    }
    return 0;
}

static void give(int n, int step, int count)
{
    for (int i = 0; i < count; i++) {
        uint64_t w = word(n, step, i);
        MPI_Send(&w, 1, MPI_UINT64_T, 1, step, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || size != 2) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 rsm_lapwrap FROM TO [QUEUE]\n");
        }
        MPI_Finalize();
        return 2;
    }
    int from = atoi(argv[1]), to = atoi(argv[2]), queue = argc > 3 ? atoi(argv[3]) : 16;
    int bad = 0, rounds = 0;
    for (int n = from; n <= to && !bad; n++, rounds++) {
        if (rank == 0) {
            give(n, 1, 4 * queue);
        } else {
            usleep(10000);
            bad |= take(n, 1, 4 * queue);
        }
        for (int i = 0; i < n; i++) {
            uint64_t w = word(n, 2, i), got = 0;
            if (rank == 0) {
                MPI_Send(&w, 1, MPI_UINT64_T, 1, 2, MPI_COMM_WORLD);
                MPI_Recv(&got, 1, MPI_UINT64_T, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&got, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&got, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD);
            }
            if (got != w) {
                printf("lapwrap: N=%d ping-pong %d: got %llx, want %llx\n", n, i,
                       (unsigned long long) got, (unsigned long long) w);
                bad = 1;
            }
        }
        if (rank == 0) {
            give(n, 3, 3 * queue);
        } else if (!bad) {
            usleep(20000);
            bad |= take(n, 3, 3 * queue);
        }
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }
    if (rank == 0 && !bad) {
        printf("lapwrap: N %d..%d, %d rounds, every message verified\n", from, to, rounds);
    }
    MPI_Finalize();
    return bad;
}
