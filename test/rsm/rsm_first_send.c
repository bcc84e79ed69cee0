/*
 * A rank's first message to a peer that is connecting to it at the same time
 * (btl rsm between hosts, btl_rsm_verbs.c: ep_for).  Connections are lazy and
 * one per direction; each unit a rank writes carries how far it consumed the
 * peer's queue to it (acks_ride_along), also before it has taken the peer's
 * own connection request.  Rank 1 checks that number against its own
 * queue's first sequence number; a rank that sent 0 there while queues
 * started elsewhere (btl_rsm_first_seq) had its unit dropped: the message
 * came only with the sender's next unit, and a job whose last message it was
 * hung.
 *
 * Two ranks on two hosts, with the listener thread off (btl_rsm_verbs_listener
 * 0), so nothing takes a handshake while rank 0 sleeps:
 *   rank 0: MPI_Isend of MESSAGE to rank 1 (its connection request goes out),
 *           then 2 s away from MPI; then waits for the send and for rank 1's reply;
 *   rank 1: posts the receive and calls MPI for 0.5 s (it takes rank 0's request
 *           and answers), then sends its reply (its own request goes out).
 * Back in MPI, rank 0 finds the answer to its request ahead of rank 1's request,
 * so MESSAGE goes out before rank 0 has taken rank 1's connection.  Both
 * messages are checked.  Prints "first_send: both messages verified" (rank 0),
 * or what came instead and exits 1.  Here the final MPI_Allreduce carries a
 * dropped unit's message late, so a script looks for the drop in btl rsm's
 * output ("dropped a completion", btl_base_verbose 1), and can tell that the
 * order was the one above from rank 0's btl_base_verbose 10 lines:
 * "connected to" before "accepted a connection from".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define WORDS 8     /* 64 bytes: one postbox's payload and a little more */

static void fill(uint64_t *w, uint64_t salt)
{
    for (int i = 0; i < WORDS; i++) {
        w[i] = salt * 0x9e3779b97f4a7c15ull + (uint64_t) i;
    }
}

static int check(const uint64_t *got, uint64_t salt, const char *what)
{
    uint64_t want[WORDS];
    fill(want, salt);
    if (memcmp(got, want, sizeof(want)) != 0) {
        printf("first_send: %s: wrong bytes (word 0 0x%016llx, want 0x%016llx)\n", what,
               (unsigned long long) got[0], (unsigned long long) want[0]);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 rsm_first_send\n");
        }
        MPI_Finalize();
        return 2;
    }
    uint64_t out[WORDS], in[WORDS];
    memset(in, 0, sizeof(in));
    MPI_Request req[2];
    if (rank == 0) {
        fill(out, 1);
        MPI_Isend(out, WORDS, MPI_UINT64_T, 1, 1, MPI_COMM_WORLD, &req[0]);
        sleep(2);
        MPI_Irecv(in, WORDS, MPI_UINT64_T, 1, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        bad = check(in, 2, "rank 1's reply");
    } else {
        MPI_Irecv(in, WORDS, MPI_UINT64_T, 0, 1, MPI_COMM_WORLD, &req[0]);
        double until = MPI_Wtime() + 0.5;
        int done = 0;
        while (MPI_Wtime() < until && !done) {
            MPI_Test(&req[0], &done, MPI_STATUS_IGNORE);
        }
        fill(out, 2);
        MPI_Isend(out, WORDS, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        bad = check(in, 1, "rank 0's message");
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any) {
        printf("first_send: both messages verified\n");
    }
    MPI_Finalize();
    return any ? 1 : 0;
}
