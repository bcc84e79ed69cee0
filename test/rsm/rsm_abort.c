/*
 * Creates every rsm connection (each rank sends a short and a long message to
 * every other, verified), then ends the way argv[1] says:
 *   exit   MPI_Finalize on every rank
 *   abort  the last rank calls MPI_Abort while the others wait in a receive
 *   kill   the last rank kills itself with SIGKILL while the others wait
 *   hold F [LEN [COUNT]]  rank 0 waits (at most 120 s) until file F exists, then all
 *          finalize: test/rsm/t-rsm-memory.sh measures /dev/shm meanwhile; LEN (default
 *          200000) is the second exchange's message length, 0 for none (100 B only);
 *          COUNT messages of LEN each way instead of one, 64 in flight (a stream)
 * test/rsm/t-rsm-cleanup.sh checks that nothing is left in /dev/shm.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int exchange(int rank, int size, int len)
{
    unsigned char *out = malloc(len), *in = malloc(len);
    int bad = 0;
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank) {
            continue;
        }
        for (int i = 0; i < len; i++) {
            out[i] = (unsigned char) (rank * 31 + peer * 7 + i);
        }
        MPI_Sendrecv(out, len, MPI_BYTE, peer, 5, in, len, MPI_BYTE, peer, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        for (int i = 0; i < len; i++) {
            bad += in[i] != (unsigned char) (peer * 31 + rank * 7 + i);
        }
    }
    free(out);
    free(in);
    return bad;
}

/* COUNT messages of LEN to and from every peer, 64 in flight each way, every byte
 * checked: a stream through the pools */
static int stream(int rank, int size, int len, int count)
{
    enum { WINDOW = 64 };
    unsigned char *out = malloc((size_t) WINDOW * len), *in = malloc((size_t) WINDOW * len);
    MPI_Request req[2 * WINDOW];
    int bad = 0;
    for (int peer = 0; peer < size; peer++) {
        if (peer == rank) {
            continue;
        }
        for (int done = 0; done < count; done += WINDOW) {
            int n = count - done < WINDOW ? count - done : WINDOW;
            for (int j = 0; j < n; j++) {
                for (int i = 0; i < len; i++) {
                    out[(size_t) j * len + i] = (unsigned char) (rank * 31 + (done + j) * 7 + i);
                }
                MPI_Irecv(in + (size_t) j * len, len, MPI_BYTE, peer, 6, MPI_COMM_WORLD, &req[j]);
                MPI_Isend(out + (size_t) j * len, len, MPI_BYTE, peer, 6, MPI_COMM_WORLD, &req[n + j]);
            }
            MPI_Waitall(2 * n, req, MPI_STATUSES_IGNORE);
            for (int j = 0; j < n; j++) {
                for (int i = 0; i < len; i++) {
                    bad += in[(size_t) j * len + i] != (unsigned char) (peer * 31 + (done + j) * 7 + i);
                }
            }
        }
    }
    free(out);
    free(in);
    return bad;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "exit";
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int len = strcmp(how, "hold") == 0 && argc > 3 ? atoi(argv[3]) : 200000;
    const int count = strcmp(how, "hold") == 0 && argc > 4 ? atoi(argv[4]) : 1;
    int bad = exchange(rank, size, 100)
              + (len <= 0 ? 0 : count > 1 ? stream(rank, size, len, count) : exchange(rank, size, len));
    if (bad) {
        fprintf(stderr, "rank %d: %d bad bytes\n", rank, bad);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("connected %d ranks\n", size);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (strcmp(how, "hold") == 0 && argc > 2) {
        for (int i = 0; rank == 0 && i < 2400 && access(argv[2], F_OK) != 0; i++) {
            usleep(50000);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (strcmp(how, "exit") != 0) {
        if (rank == size - 1) {
            usleep(200000);
            if (strcmp(how, "abort") == 0) {
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            raise(SIGKILL);
        }
        int dummy;
        MPI_Recv(&dummy, 1, MPI_INT, size - 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return bad ? 1 : 0;
}
