/*
 * A corrupt message queue must end the job with a reason, not hang it.
 *
 * rsm's receiver reads postboxes its peer writes in shared memory and checks
 * everything before use: a malformed one is dropped and counted.  When the
 * dropped postbox was the head of a group whose extent its header does not
 * show (here: more bytes than any inline message may have), the receiver
 * cannot know where the next message starts; it consumes one postbox and
 * waits at the next, which is inside the group.  Until 2026-12-05 it waited
 * there for good.  Now it sees that the slot holds what no slot between
 * messages holds, and ends the job saying the queue is corrupt.
 *
 * Two ranks on one host over self,rsm, PAIR postboxes off (btl_rsm_pair_tiny 0,
 * so every message below is one postbox).  Rank 0 is the sender: after a few
 * tiny messages both ways (rank 1 has then read everything rank 0 sent), it
 * finds its own queue to rank 1 in the segment it exports (/proc/self/maps:
 * an "-a<node>s0" area, queues at its start, rank 1's the second; of the areas
 * mapped, the one whose queue to rank 1 holds postboxes), finds the
 * newest postbox there, and writes the next one as the head of a group of
 * 65,535 bytes, with payload in the slot after it, as a buggy sender or a
 * stray store of the application would.  Then both ranks wait for a message
 * that never comes: the job must end by rsm's fatal error.
 *
 *   rsm_queue_corrupt QUEUE_LEN      (btl_rsm_postboxes of the run)
 * Prints "queue_corrupt: forged postbox N ..." from rank 0; exits 2 when the
 * queue could not be found (then the test cannot say anything).
 */
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rsm_postbox.h"

/* The starts of the "area" segments, stripe 0, this process maps (its own,
 * and those of the peers it receives from): at most MAX. */
static int areas(void **base, int max)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    while (f != NULL && n < max && fgets(line, sizeof(line), f) != NULL) {
        const char *name = strstr(line, "/dev/shm/rsm-");
        const char *area = name != NULL ? strstr(name, "-a") : NULL;
        unsigned long lo;
        if (area != NULL && strstr(area, "s0\n") != NULL && sscanf(line, "%lx-", &lo) == 1) {
            base[n++] = (void *) lo;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

/* The newest postbox of queue Q (QLEN slots, every message one postbox) in
 * *NEWEST; 0 when it holds none. */
static int newest_postbox(rsm_postbox_t *q, uint32_t qlen, uint32_t *newest)
{
    int found = 0;
    for (uint32_t i = 0; i < qlen; i++) {
        uint32_t f = atomic_load_explicit(&q[i].flag, memory_order_acquire);
        uint32_t seq = f - 1;
        if (f != 0 && (seq & (qlen - 1)) == i && (!found || (int32_t) (seq - *newest) > 0)) {
            *newest = seq;
            found = 1;
        }
    }
    return found;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint32_t qlen = argc > 1 ? (uint32_t) strtoul(argv[1], NULL, 0) : 0;
    if (size != 2 || qlen == 0 || (qlen & (qlen - 1)) != 0) {
        fprintf(stderr, "rsm_queue_corrupt QUEUE_LEN: 2 ranks, a power of two\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int word = 0;
    for (int i = 0; i < 8; i++) {       /* tiny messages both ways: one postbox each */
        if (rank == 0) {
            MPI_Send(&i, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&word, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&word, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&i, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        /* ours is the area whose queue to rank 1 holds postboxes (in rank 1's
         * area, queue 1 is rank 1's to itself: empty) */
        void *bases[8];
        int nareas = areas(bases, 8);
        rsm_postbox_t *q = NULL;
        uint32_t newest = 0;
        for (int i = 0; i < nareas && q == NULL; i++) {
            rsm_postbox_t *cand = (rsm_postbox_t *) ((char *) bases[i] + (size_t) qlen
                                                     * RSM_POSTBOX_SIZE);
            if (newest_postbox(cand, qlen, &newest)) {
                q = cand;
            }
        }
        if (q == NULL) {
            printf("queue_corrupt: no queue to rank 1 with postboxes in %d area segments\n",
                   nareas);
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        const uint32_t mask = qlen - 1;
        uint32_t next = newest + 1, at = next & mask;
        if (at + 1 >= qlen) {           /* keep the forged group away from the ring's end */
            printf("queue_corrupt: the next postbox is the ring's last; run again\n");
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        printf("queue_corrupt: forged postbox %u (slot %u of %u) as the head of a 65535-byte "
               "group, payload after it\n", next, at, qlen);
        fflush(stdout);
        rsm_postbox_t *head = &q[at];
        head->nbytes = 0xffff;
        head->kind = RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST;
        head->tag = 65;
        memset(head->u.data, 0x41, sizeof(head->u.data));
        atomic_store_explicit(&q[at + 1].flag, 0x41414141u, memory_order_relaxed);
        memset(q[at + 1].u.data, 0x41, sizeof(q[at + 1].u.data));
        atomic_store_explicit(&head->flag, rsm_pb_flag(next), memory_order_release);
    }
    /* a message that never comes: only rsm's error ends this */
    MPI_Recv(&word, 1, MPI_INT, 1 - rank, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("queue_corrupt: rank %d received a message nobody sent\n", rank);
    MPI_Finalize();
    return 1;
}
