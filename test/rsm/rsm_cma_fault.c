/*
 * A single-copy read that fails, and what it leaves behind (btl_rsm_get.c).
 *
 * For a large message ob1 asks rsm for an RDMA get; rsm reads the sender's
 * buffer with process_vm_readv and, from btl_rsm_single_copy_split bytes, first
 * posts a split: one of its 8 help slots, and a request that the sender write
 * the second half.  When its own read fails, rsm returns the error and ob1 asks
 * the sender to send that region instead.  The posted slot must then be taken
 * back: left posted, the sender could still write into the receive buffer after
 * the receive completed, and the slot was never free again (8 such failures and
 * no read was ever split again).
 *
 * The failure is real, made where the kernel call is: this program defines
 * process_vm_readv itself (linked with --export-dynamic, so the component's
 * calls resolve to it) and passes every call to the kernel, except that while
 * "armed" a read of at least FAIL_MIN bytes returns EFAULT without copying.
 *
 * Two ranks on one host over self,rsm; rank 1 receives.
 *   phase 1: armed, FAULTY messages of SIZE bytes, each verified (they come by
 *            ob1's fallback); every one must have met an injected fault;
 *   phase 2: disarmed, CLEAN messages, each verified, with rsm's split_gets
 *            MPI_T variable read before and after: it must grow by CLEAN
 *            (every one of these gets splits: rank 1 sends nothing by single copy);
 *   phase 3: the sender's side fails instead: rank 0's process_vm_writev (the
 *            second half it writes for rank 1) returns EFAULT while armed, so the
 *            receiver must read that half itself.  Messages, each verified, until
 *            WRITE_FAULTS writes have failed (at most 100: the receiver may take a
 *            half back before the sender starts it).
 * Prints "cma_fault: ..." with the figures; exits 1 on any miss.
 */
#define _GNU_SOURCE
#include "mpit_bind.h"

#include <errno.h>
#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SIZE (1 << 20)
#define FAIL_MIN (64 << 10)     /* the probe at start-up and inline traffic stay real */
#define FAULTY 12               /* more than the 8 help slots */
#define CLEAN 12
#define WRITE_FAULTS 3

static atomic_bool armed, armed_write;
static atomic_long injected, injected_write;

/* Whether this call fails: armed, and at least FAIL_MIN bytes (then errno is EFAULT). */
static bool inject(atomic_bool *arm, atomic_long *count, const struct iovec *local,
                   unsigned long liovcnt)
{
    size_t len = 0;
    for (unsigned long i = 0; i < liovcnt; i++) {
        len += local[i].iov_len;
    }
    if (!atomic_load(arm) || len < FAIL_MIN) {
        return false;
    }
    atomic_fetch_add(count, 1);
    errno = EFAULT;
    return true;
}

ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long liovcnt,
                         const struct iovec *remote, unsigned long riovcnt, unsigned long flags)
{
    return inject(&armed, &injected, local, liovcnt)
               ? -1 : syscall(SYS_process_vm_readv, pid, local, liovcnt, remote, riovcnt, flags);
}

ssize_t process_vm_writev(pid_t pid, const struct iovec *local, unsigned long liovcnt,
                          const struct iovec *remote, unsigned long riovcnt, unsigned long flags)
{
    return inject(&armed_write, &injected_write, local, liovcnt)
               ? -1 : syscall(SYS_process_vm_writev, pid, local, liovcnt, remote, riovcnt, flags);
}

static void fill(unsigned char *b, unsigned salt)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (salt + 1);
    for (size_t i = 0; i < SIZE; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char) x;
    }
}

static int exchange(int rank, unsigned salt, unsigned char *buf, unsigned char *want)
{
    if (rank == 0) {
        fill(buf, salt);
        MPI_Send(buf, SIZE, MPI_BYTE, 1, (int) salt, MPI_COMM_WORLD);
        return 0;
    }
    memset(buf, 0xee, SIZE);
    MPI_Recv(buf, SIZE, MPI_BYTE, 0, (int) salt, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    fill(want, salt);
    if (memcmp(buf, want, SIZE) != 0) {
        size_t at = 0;
        while (buf[at] == want[at]) {
            at++;
        }
        printf("cma_fault: message %u: wrong byte at %zu of %d\n", salt, at, SIZE);
        return 1;
    }
    return 0;
}

static unsigned long split_gets(MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    unsigned long v = 0;
    MPI_T_pvar_read(s, h, &v);
    return v;
}

int main(int argc, char **argv)
{
    int provided, rank, size, bad = 0;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0) {
            printf("cma_fault: needs 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    static const char *const names[] = {"split_gets"};
    if (!mpit_bind(&session, &handle, "btl_rsm_", names, 1, MPI_T_PVAR_CLASS_COUNTER)) {
        printf("cma_fault: rank %d: btl_rsm_split_gets not found (is rsm in this job?)\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsigned char *buf = malloc(SIZE), *want = malloc(SIZE);
    if (buf == NULL || want == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    atomic_store(&armed, rank == 1);
    for (unsigned i = 0; i < FAULTY; i++) {
        bad |= exchange(rank, i, buf, want);
    }
    atomic_store(&armed, false);
    MPI_Barrier(MPI_COMM_WORLD);
    long faults = atomic_load(&injected);

    unsigned long before = split_gets(session, handle);
    for (unsigned i = 0; i < CLEAN; i++) {
        bad |= exchange(rank, FAULTY + i, buf, want);
    }
    unsigned long splits = split_gets(session, handle) - before;

    atomic_store(&armed_write, rank == 0);
    unsigned sent = 0;
    for (int more = 1; more; sent++) {
        bad |= exchange(rank, FAULTY + CLEAN + sent, buf, want);
        more = atomic_load(&injected_write) < WRITE_FAULTS && sent + 1 < 100;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    atomic_store(&armed_write, false);
    long write_faults = atomic_load(&injected_write);
    MPI_Bcast(&write_faults, 1, MPI_LONG, 0, MPI_COMM_WORLD);

    if (rank == 1) {
        if (faults < FAULTY) {
            printf("cma_fault: only %ld faults injected in %d messages (were they read by "
                   "single copy?)\n", faults, FAULTY);
            bad = 1;
        }
        if (splits != CLEAN) {
            printf("cma_fault: %lu of the %d later reads split (help slots left taken?)\n",
                   splits, CLEAN);
            bad = 1;
        }
        if (write_faults < WRITE_FAULTS) {
            printf("cma_fault: the sender's half failed only %ld times in %u messages\n",
                   write_faults, sent);
            bad = 1;
        }
        printf("cma_fault: %ld faults injected, %d messages after them by fallback, %lu of %d "
               "later reads split; %ld halves the sender failed to write, in %u messages, read "
               "by the receiver; %s\n", faults, FAULTY, splits, CLEAN, write_faults, sent,
               bad ? "FAILED" : "all messages verified");
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    free(buf);
    free(want);
    MPI_T_pvar_handle_free(session, &handle);
    MPI_T_pvar_session_free(&session);
    MPI_T_finalize();   /* before MPI_Finalize: the other order crashes Open MPI 4.1 */
    MPI_Finalize();
    return any ? 1 : 0;
}
