/*
 * One-sided communication through a BTL (osc rdma): windows of the three
 * flavours (MPI_Win_create, _create_dynamic, _allocate), each once as is and
 * once with osc rdma's "ompi_single_accumulate" info key (single-element
 * accumulates then go to the BTL's atomics), and on each: puts and gets of 1 B
 * to 1 MiB at odd offsets (fence and passive target), a sum accumulate from
 * every rank, a shared counter bumped by fetch-and-op and by compare-and-swap
 * (4 and 8 bytes) from every rank at once, fetch-and-op with max, min, xor and
 * replace, max and min on unsigned and signed words of 4 and 8 bytes, and a
 * get-accumulate.  Every byte and every fetched value is
 * checked.  Rank 0 prints TAP lines ("ok N - ...").
 *
 * With the argument "no-window" it checks instead that MPI_Win_create fails
 * with an error returned to the caller (a BTL that offers no one-sided
 * operations, where Debian's configuration leaves no other osc component).
 * With "mpit" it checks that btl rsm's MPI_T counters of one-sided operations
 * ("mpit pmeth": btl pmeth's, of the same names; a put counts once a piece)
 * move by exactly what one put and a run of fetch-and-ops make.  With
 * "flavours DIGITS [FOPS]" it runs only those window flavours (0 MPI_Win_create,
 * 1 _create_dynamic, 2 _allocate), FOPS fetch-and-ops a rank on the counters
 * (400).  With "rails" (ranks on several hosts, the
 * verbs back end on two or more rails) it checks that a 1 MiB put and a 1 MiB
 * get to the next rank are each cut across the rails: the bytes, and the
 * striping counters.  With "lockword" rank 0 compare-and-swaps 0 -> 2^63 into
 * a word of the last rank's window and adds 1 to it, and every rank then reads
 * it (legal MPI, and the very pattern btl rsm
 * watches for as Open MPI 4.1.4's dynamic-window deadlock between hosts: on
 * one host it must pass).  With "constput" rank 0 puts 4 KiB from a const
 * array into the last rank's window: on one host the bytes must land; to a
 * rank on another host, where the device cannot register read-only memory for
 * RDMA, the job is expected to end with btl rsm's message, not to hang.
 * With "dynself" every rank accumulates into every rank's word of a dynamic
 * window, its own first: right values on one host; across hosts the job is
 * expected to end with the BTL's message on Open MPI 4.1.4's deadlock.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_BYTES ((MPI_Aint) (2 << 20) + 4096)
/* fetch-and-ops and compare-and-swap rounds a rank makes on the shared counters
 * ("flavours DIGITS FOPS" sets FOPS and CAS rounds of 3/8 of it: fewer where ranks
 * outnumber the CPUs, as in an emulated guest, and every operation waits for the
 * target's turn on a CPU) */
static int K_FOP = 400;
static int K_CAS = 150;

static int rank, nranks, ntests, nfailed;

/* one TAP line from rank 0 for a check every rank made */
static void check(int ok, const char *fmt, ...)
{
    int all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    ntests++;
    nfailed += !all;
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        printf("%sok %d - ", all ? "" : "not ", ntests);
        vprintf(fmt, ap);
        printf("\n");
        fflush(stdout);
        va_end(ap);
    }
}

static unsigned char pattern(int seed, size_t i)
{
    return (unsigned char) (seed * 131 + i * 7 + (i >> 8) * 13 + 1);
}

typedef struct {
    MPI_Win win;
    unsigned char *base;
    MPI_Aint *addr;                 /* dynamic: every rank's base address */
    int flavour;
    const char *name;
} window_t;

static const char *flavour_name[3] = {"MPI_Win_create", "MPI_Win_create_dynamic", "MPI_Win_allocate"};

static MPI_Aint disp(const window_t *w, int target, MPI_Aint off)
{
    return w->flavour == 1 ? w->addr[target] + off : off;
}

static int win_open(window_t *w, int flavour, int single_acc)
{
    MPI_Info info;
    MPI_Info_create(&info);
    if (single_acc) {
        MPI_Info_set(info, "ompi_single_accumulate", "true");
    }
    memset(w, 0, sizeof(*w));
    w->flavour = flavour;
    int rc;
    if (flavour == 0) {
        w->base = malloc(WIN_BYTES);
        rc = MPI_Win_create(w->base, WIN_BYTES, 1, info, MPI_COMM_WORLD, &w->win);
    } else if (flavour == 1) {
        w->base = malloc(WIN_BYTES);
        rc = MPI_Win_create_dynamic(info, MPI_COMM_WORLD, &w->win);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Win_attach(w->win, w->base, WIN_BYTES);
        }
        MPI_Aint mine;
        MPI_Get_address(w->base, &mine);
        w->addr = malloc(sizeof(MPI_Aint) * (size_t) nranks);
        MPI_Allgather(&mine, 1, MPI_AINT, w->addr, 1, MPI_AINT, MPI_COMM_WORLD);
    } else {
        rc = MPI_Win_allocate(WIN_BYTES, 1, info, MPI_COMM_WORLD, &w->base, &w->win);
    }
    MPI_Info_free(&info);
    if (rc == MPI_SUCCESS) {
        MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN);
    }
    return rc;
}

static void win_close(window_t *w)
{
    if (w->flavour == 1) {
        MPI_Win_detach(w->win, w->base);
    }
    MPI_Win_free(&w->win);
    if (w->flavour != 2) {
        free(w->base);
    }
    free(w->addr);
}

/* the window's bytes, written by this rank only while no one else reaches them */
static void local_fill(window_t *w, int seed)
{
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
    for (MPI_Aint i = 0; i < WIN_BYTES; i++) {
        w->base[i] = seed < 0 ? 0 : pattern(seed, (size_t) i);
    }
    MPI_Win_unlock(rank, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
}

static const size_t sizes[] = {1, 7, 64, 1000, 4096, 65537, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void test_put_fence(window_t *w, const char *label)
{
    const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    unsigned char *src = malloc(1 << 20);
    size_t bad = 0;
    for (unsigned s = 0; s < NSIZES; s++) {
        const size_t len = sizes[s];
        local_fill(w, -1);
        for (size_t i = 0; i < len; i++) {
            src[i] = pattern(rank + 100 * (int) s, i);
        }
        MPI_Win_fence(0, w->win);
        MPI_Put(src, (int) len, MPI_BYTE, right, disp(w, right, 3), (int) len, MPI_BYTE, w->win);
        MPI_Win_fence(0, w->win);
        for (size_t i = 0; i < len + 3 + 64; i++) {
            unsigned char want = i < 3 || i >= len + 3 ? 0 : pattern(left + 100 * (int) s, i - 3);
            bad += w->base[i] != want;
        }
    }
    check(bad == 0, "%s: put 1 B - 1 MiB at offset 3 under fence, every byte and its surroundings "
          "(%zu wrong)", label, bad);
    free(src);
}

static void test_get_passive(window_t *w, const char *label)
{
    const int left = (rank + nranks - 1) % nranks;
    unsigned char *dst = malloc((1 << 20) + 16);
    size_t bad = 0;
    local_fill(w, rank);
    MPI_Win_lock_all(0, w->win);
    for (unsigned s = 0; s < NSIZES; s++) {
        const size_t len = sizes[s];
        memset(dst, 0xee, len + 16);
        MPI_Get(dst, (int) len, MPI_BYTE, left, disp(w, left, 5), (int) len, MPI_BYTE, w->win);
        MPI_Win_flush(left, w->win);
        for (size_t i = 0; i < len; i++) {
            bad += dst[i] != pattern(left, i + 5);
        }
        for (size_t i = len; i < len + 16; i++) {
            bad += dst[i] != 0xee;
        }
    }
    MPI_Win_unlock_all(w->win);
    check(bad == 0, "%s: get 1 B - 1 MiB at offset 5, lock_all and flush (%zu wrong)", label, bad);
    free(dst);
}

static void test_put_passive(window_t *w, const char *label)
{
    const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    const size_t len = 65536 + 11;
    unsigned char *src = malloc(len);
    for (size_t i = 0; i < len; i++) {
        src[i] = pattern(rank + 7, i);
    }
    local_fill(w, -1);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w->win);
    MPI_Put(src, (int) len, MPI_BYTE, right, disp(w, right, 1), (int) len, MPI_BYTE, w->win);
    MPI_Win_unlock(right, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win);
    size_t bad = w->base[0] != 0 || w->base[len + 1] != 0;
    for (size_t i = 0; i < len; i++) {
        bad += w->base[i + 1] != pattern(left + 7, i);
    }
    MPI_Win_unlock(rank, w->win);
    check(bad == 0, "%s: put of 64 KiB + 11 B under an exclusive lock (%zu wrong)", label, bad);
    free(src);
}

static void test_accumulate(window_t *w, const char *label)
{
    enum { N = 256 };
    int64_t vals[N];
    local_fill(w, -1);
    for (int i = 0; i < N; i++) {
        vals[i] = (int64_t) (rank + 1) * (i + 1);
    }
    MPI_Win_fence(0, w->win);
    MPI_Accumulate(vals, N, MPI_INT64_T, 0, disp(w, 0, 64), N, MPI_INT64_T, MPI_SUM, w->win);
    MPI_Win_fence(0, w->win);
    int bad = 0;
    if (rank == 0) {
        const int64_t *a = (const int64_t *) (w->base + 64);
        for (int i = 0; i < N; i++) {
            bad += a[i] != (int64_t) (i + 1) * nranks * (nranks + 1) / 2;
        }
    }
    check(bad == 0, "%s: 256 x int64 sum accumulated by every rank into rank 0", label);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

static void test_counter_fop(window_t *w, const char *label)
{
    const MPI_Aint off = 4096;
    int64_t one = 1, *olds = malloc(sizeof(int64_t) * K_FOP), *all = NULL;
    local_fill(w, -1);
    MPI_Win_lock_all(0, w->win);
    for (int k = 0; k < K_FOP; k++) {
        MPI_Fetch_and_op(&one, &olds[k], MPI_INT64_T, 0, disp(w, 0, off), MPI_SUM, w->win);
        MPI_Win_flush(0, w->win);
    }
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        all = malloc(sizeof(int64_t) * K_FOP * (size_t) nranks);
    }
    MPI_Gather(olds, K_FOP, MPI_INT64_T, all, K_FOP, MPI_INT64_T, 0, MPI_COMM_WORLD);
    int bad = 0;
    if (rank == 0) {
        qsort(all, (size_t) K_FOP * (size_t) nranks, sizeof(int64_t), cmp64);
        for (int64_t i = 0; i < (int64_t) K_FOP * nranks; i++) {
            bad += all[i] != i;
        }
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w->win);
        bad += *(int64_t *) (w->base + off) != (int64_t) K_FOP * nranks;
        MPI_Win_unlock(0, w->win);
    }
    check(bad == 0, "%s: a counter at rank 0 bumped %d times by every rank with fetch-and-op: "
          "each value fetched exactly once, the total right", label, K_FOP);
    free(olds);
    free(all);
}

static void test_counter_cas(window_t *w, const char *label)
{
    const int target = nranks - 1;
    const MPI_Aint off32 = 8192, off64 = 8200;
    local_fill(w, -1);
    MPI_Win_lock_all(0, w->win);
    long tries = 0;
    for (int k = 0; k < K_CAS; k++) {
        int32_t cur32, res32, next32;
        MPI_Fetch_and_op(NULL, &cur32, MPI_INT32_T, target, disp(w, target, off32), MPI_NO_OP, w->win);
        MPI_Win_flush(target, w->win);
        do {
            next32 = cur32 + 1;
            MPI_Compare_and_swap(&next32, &cur32, &res32, MPI_INT32_T, target,
                                 disp(w, target, off32), w->win);
            MPI_Win_flush(target, w->win);
            tries++;
        } while (res32 != cur32 && (cur32 = res32, 1));
        int64_t cur64, res64, next64;
        MPI_Fetch_and_op(NULL, &cur64, MPI_INT64_T, target, disp(w, target, off64), MPI_NO_OP, w->win);
        MPI_Win_flush(target, w->win);
        do {
            next64 = cur64 + (1ll << 33);
            MPI_Compare_and_swap(&next64, &cur64, &res64, MPI_INT64_T, target,
                                 disp(w, target, off64), w->win);
            MPI_Win_flush(target, w->win);
            tries++;
        } while (res64 != cur64 && (cur64 = res64, 1));
    }
    MPI_Win_unlock_all(w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    if (rank == target) {
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win);
        bad += *(int32_t *) (w->base + off32) != K_CAS * nranks;
        bad += *(int64_t *) (w->base + off64) != ((int64_t) K_CAS * nranks << 33);
        bad += w->base[off32 + 4] != 0 || w->base[off64 + 8] != 0;
        MPI_Win_unlock(rank, w->win);
    }
    check(bad == 0, "%s: counters of 4 and 8 bytes bumped %d times by every rank with "
          "compare-and-swap loops: totals right, neighbours untouched", label, K_CAS);
}

/* Every rank's window filled with the pattern, then LEN bytes of WORDS at OFF in
 * rank T's (under an exclusive lock of its own window), before anyone goes on. */
static void seed_words(window_t *w, int t, MPI_Aint off, const void *words, size_t len)
{
    local_fill(w, -1);
    if (rank == t) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win);
        memcpy(w->base + off, words, len);
        MPI_Win_unlock(rank, w->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_fop_ops(window_t *w, const char *label)
{
    const int t = 0;
    const struct { double d; int32_t i, pad; int64_t x, r; } init = {-1e300, 1 << 30, 0, 0, -1};
    seed_words(w, t, 0, &init, sizeof(init));      /* at 0, 8, 16 and 24 */
    double dv = rank + 0.5, dold;
    int32_t iv = -3 * rank - 1, iold;
    int64_t xv = (int64_t) 0x1111 << rank, xold, rv = 1000 + rank, rold;
    MPI_Win_lock_all(0, w->win);
    MPI_Fetch_and_op(&dv, &dold, MPI_DOUBLE, t, disp(w, t, 0), MPI_MAX, w->win);
    MPI_Fetch_and_op(&iv, &iold, MPI_INT32_T, t, disp(w, t, 8), MPI_MIN, w->win);
    MPI_Fetch_and_op(&xv, &xold, MPI_INT64_T, t, disp(w, t, 16), MPI_BXOR, w->win);
    MPI_Fetch_and_op(&rv, &rold, MPI_INT64_T, t, disp(w, t, 24), MPI_REPLACE, w->win);
    MPI_Win_unlock_all(w->win);
    /* every replaced value but one was fetched by someone: gather them */
    int64_t *rolds = rank == t ? malloc(sizeof(int64_t) * (size_t) nranks) : NULL;
    MPI_Gather(&rold, 1, MPI_INT64_T, rolds, 1, MPI_INT64_T, t, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    int bad = 0;
    if (rank == t) {
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win);
        int64_t xall = 0;
        for (int r = 0; r < nranks; r++) {
            xall ^= (int64_t) 0x1111 << r;
        }
        bad += *(double *) (w->base + 0) != nranks - 0.5;
        bad += *(int32_t *) (w->base + 8) != -3 * (nranks - 1) - 1;
        bad += *(int64_t *) (w->base + 16) != xall;
        /* the replace chain: the fetched values and the final one are -1 and every rank's */
        int64_t seen = 0, fin = *(int64_t *) (w->base + 24);
        for (int r = 0; r < nranks; r++) {
            int64_t v = rolds[r];
            bad += v != -1 && (v < 1000 || v >= 1000 + nranks);
            seen += v;
        }
        bad += fin < 1000 || fin >= 1000 + nranks;
        int64_t want = -1;
        for (int r = 0; r < nranks; r++) {
            want += 1000 + r;
        }
        bad += seen + fin != want;
        MPI_Win_unlock(rank, w->win);
        free(rolds);
    }
    check(bad == 0, "%s: fetch-and-op max (double), min (int32), xor and replace (int64) from "
          "every rank", label);
}

/* MPI_MAX and MPI_MIN on unsigned words above the signed range, and on signed
 * ones below 0: the BTL's atomics are told no signedness (osc rdma maps both
 * to the same operation), and a signed compare made MAX(1, 0x80000000u) 1 */
static void test_minmax_signedness(window_t *w, const char *label)
{
    const int t = 0;
    const struct { uint32_t u32, pad; uint64_t u64; int32_t s32, pad2; int64_t s64; } init =
        {1, 0, 5, -7, 0, 3};
    seed_words(w, t, 32, &init, sizeof(init));     /* at 32, 40, 48 and 56 */
    uint32_t u32 = 0x80000000u + (uint32_t) rank;
    uint64_t u64 = ((uint64_t) 1 << 63) + (uint64_t) rank, u64_old = 0;
    int32_t i32 = -100 - rank;
    int64_t i64 = -1 - (int64_t) rank, i64_old = 0;
    MPI_Win_lock_all(0, w->win);
    MPI_Accumulate(&u32, 1, MPI_UINT32_T, t, disp(w, t, 32), 1, MPI_UINT32_T, MPI_MAX, w->win);
    MPI_Fetch_and_op(&u64, &u64_old, MPI_UINT64_T, t, disp(w, t, 40), MPI_MIN, w->win);
    MPI_Accumulate(&i32, 1, MPI_INT32_T, t, disp(w, t, 48), 1, MPI_INT32_T, MPI_MAX, w->win);
    MPI_Fetch_and_op(&i64, &i64_old, MPI_INT64_T, t, disp(w, t, 56), MPI_MIN, w->win);
    MPI_Win_unlock_all(w->win);
    int bad = u64_old != 5 || i64_old > 3 || i64_old < -(int64_t) nranks;
    MPI_Barrier(MPI_COMM_WORLD);
    uint32_t got32 = 0;
    uint64_t got64 = 0;
    int32_t gots32 = 0;
    int64_t gots64 = 0;
    if (rank == t) {
        MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win);
        got32 = *(uint32_t *) (w->base + 32);
        got64 = *(uint64_t *) (w->base + 40);
        gots32 = *(int32_t *) (w->base + 48);
        gots64 = *(int64_t *) (w->base + 56);
        MPI_Win_unlock(rank, w->win);
        bad += got32 != 0x80000000u + (uint32_t) (nranks - 1);
        bad += got64 != 5;
        bad += gots32 != -7;
        bad += gots64 != -(int64_t) nranks;
    }
    check(bad == 0, "%s: max and min by signedness: uint32 max 0x%x (want 0x%x), uint64 min %llu "
          "(want 5, each rank fetched 5), int32 max %d (want -7), int64 min %lld (want %d)", label,
          got32, 0x80000000u + (uint32_t) (nranks - 1), (unsigned long long) got64, gots32,
          (long long) gots64, -nranks);
}

static void test_get_accumulate(window_t *w, const char *label)
{
    enum { N = 16 };
    int32_t add[N], old[N];
    local_fill(w, -1);
    for (int i = 0; i < N; i++) {
        add[i] = 1 << rank % 24;
    }
    MPI_Win_fence(0, w->win);
    MPI_Get_accumulate(add, N, MPI_INT32_T, old, N, MPI_INT32_T, 0, disp(w, 0, 256), N,
                       MPI_INT32_T, MPI_SUM, w->win);
    MPI_Win_fence(0, w->win);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        bad += (old[i] & add[i]) != 0;  /* each element saw some others' bits, never ours */
    }
    if (rank == 0) {
        int32_t sum = 0;
        for (int r = 0; r < nranks; r++) {
            sum += 1 << r % 24;
        }
        for (int i = 0; i < N; i++) {
            bad += ((int32_t *) (w->base + 256))[i] != sum;
        }
    }
    check(bad == 0, "%s: get-accumulate of 16 x int32 from every rank", label);
}

/* MPI_Get_accumulate of doubles with a derived result datatype (a contiguous type of one
 * MPI_DOUBLE, as MPICH's get_accumulate_double_derived): Open MPI 4.1.4's osc rdma
 * returns wrong fetched values when it runs it as the BTL's fetching atomics (its pull
 * request 10654), which rsm offers on doubles only with btl_rsm_float_atomics. */
static void test_get_accumulate_derived(window_t *w, const char *label)
{
    enum { N = 16 };
    double add[N], old[N];
    MPI_Datatype one_double;
    MPI_Type_contiguous(1, MPI_DOUBLE, &one_double);
    MPI_Type_commit(&one_double);
    local_fill(w, -1);     /* zeroes */
    for (int i = 0; i < N; i++) {
        add[i] = rank + 1;
        old[i] = -1;
    }
    MPI_Win_fence(0, w->win);
    MPI_Get_accumulate(add, N, one_double, old, N, one_double, 0, disp(w, 0, 512), N,
                       one_double, MPI_SUM, w->win);
    MPI_Win_fence(0, w->win);
    const double total = nranks * (nranks + 1) / 2.0;
    int bad = 0;
    for (int i = 0; i < N; i++) {
        /* a sum of some other ranks' additions: a whole number, not ours to total */
        bad += old[i] != (double) (long) old[i] || old[i] < 0 || old[i] > total - (rank + 1);
    }
    if (rank == 0) {
        for (int i = 0; i < N; i++) {
            bad += ((double *) (w->base + 512))[i] != total;
        }
    }
    MPI_Type_free(&one_double);
    check(bad == 0, "%s: get-accumulate of 16 doubles with a derived result type from every "
          "rank (old values %g .. %g)", label, old[0], old[N - 1]);
}

#include "mpit_bind.h"

/* the BTL's one-sided counters, read through MPI_T while the job runs: btl rsm's,
 * or with "mpit pmeth" btl pmeth's (the same names) */
static const char *pvar_prefix = "btl_rsm_";
static const char *const rma_pvars[] = {"rma_puts", "rma_put_bytes", "rma_atomics_sent",
                                        "rma_atomics_served"};
enum { PV_PUTS, PV_PUT_BYTES, PV_SENT, PV_SERVED, PV_N };

static void pvars_read(MPI_T_pvar_session session, MPI_T_pvar_handle *h, int n, unsigned long *v)
{
    for (int i = 0; i < n; i++) {
        MPI_T_pvar_read(session, h[i], &v[i]);
    }
}

/* MPI_T up and the BTL's counters NAMES bound (a check says so) */
static bool pvars_open(MPI_T_pvar_session *session, MPI_T_pvar_handle *h,
                       const char *const *names, int n, const char *what)
{
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    bool bound = mpit_bind(session, h, pvar_prefix, names, n, MPI_T_PVAR_CLASS_COUNTER);
    check(bound, "the %s counters (%s*) bound through MPI_T", what, pvar_prefix);
    return bound;
}

static void pvars_close(MPI_T_pvar_session *session, MPI_T_pvar_handle *h, int n)
{
    for (int i = 0; i < n; i++) {
        MPI_T_pvar_handle_free(*session, &h[i]);
    }
    MPI_T_pvar_session_free(session);
    MPI_T_finalize();
}

/* rsm's counters NAMES bound and a window W (SINGLE as win_open's) to move them;
 * false, said by a check and with MPI_T closed again, when either fails */
static bool counted_window(MPI_T_pvar_session *session, MPI_T_pvar_handle *h,
                           const char *const *names, int n, const char *what, window_t *w,
                           int single)
{
    if (!pvars_open(session, h, names, n, what)) {
        return false;
    }
    if (win_open(w, 0, single) != MPI_SUCCESS) {
        check(0, "a window for the %s counters", what);
        pvars_close(session, h, n);
        return false;
    }
    return true;
}

static void test_mpit(void)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h[PV_N];
    window_t w;
    if (!counted_window(&session, h, rma_pvars, PV_N, "one-sided", &w, 1)) {
        return;
    }
    enum { LEN = 65536 + 11, K = 100 };
    unsigned long before[PV_N], after[PV_N];
    unsigned char *src = calloc(LEN, 1);
    const int right = (rank + 1) % nranks;
    pvars_read(session, h, PV_N, before);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, w.win);
    MPI_Put(src, LEN, MPI_BYTE, right, 0, LEN, MPI_BYTE, w.win);
    MPI_Win_unlock(right, w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    pvars_read(session, h, PV_N, after);
    /* pmeth carries a put in pieces of at most its btl_put_limit (osc cuts it) */
    const unsigned long pieces = after[PV_PUTS] - before[PV_PUTS];
    const bool pmeth = strcmp(pvar_prefix, "btl_pmeth_") == 0;
    check((pmeth ? pieces >= 1 && pieces <= LEN / 1024 : pieces == 1)
              && after[PV_PUT_BYTES] - before[PV_PUT_BYTES] == LEN,
          "one put of %d B to the next rank: rma_puts +%s, rma_put_bytes +%d (here +%lu, +%lu)",
          LEN, pmeth ? "a piece each" : "1", LEN, pieces,
          after[PV_PUT_BYTES] - before[PV_PUT_BYTES]);
    /* fetch-and-ops of one element go to the BTL's atomics in a window with
     * ompi_single_accumulate: K asked by each rank of the next, K served for the previous */
    pvars_read(session, h, PV_N, before);
    MPI_Barrier(MPI_COMM_WORLD);        /* every rank's "before" read ahead of any atomic */
    int64_t one = 1, old;
    MPI_Win_lock_all(0, w.win);
    for (int k = 0; k < K; k++) {
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, right, 4096, MPI_SUM, w.win);
        MPI_Win_flush(right, w.win);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    pvars_read(session, h, PV_N, after);
    /* on one host osc rdma takes its accumulate lock in shared memory; across hosts by
     * the BTL's atomics too (a lock and an unlock around each fetch-and-op, and the
     * lock_all's): there at least K each way */
    MPI_Comm node;
    int node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    const unsigned long sent = after[PV_SENT] - before[PV_SENT];
    const unsigned long served = after[PV_SERVED] - before[PV_SERVED];
    if (node_size == nranks) {
        check(sent == K && served == K, "%d fetch-and-ops on the next rank's window: "
              "rma_atomics_sent +%d, rma_atomics_served +%d (here +%lu, +%lu)", K, K, K, sent, served);
    } else {
        check(sent >= K && served >= K, "%d fetch-and-ops on the next rank's window, ranks on "
              "several hosts: rma_atomics_sent and rma_atomics_served at least +%d each, with "
              "osc rdma's lock traffic (here +%lu, +%lu)", K, K, sent, served);
    }
    free(src);
    win_close(&w);
    pvars_close(&session, h, PV_N);
}

/* A 1 MiB put to the next rank and a get of it back: every byte, and that each went
 * in pieces over two or more rails (the counters of striped operations move by one,
 * and a further rail carried between a quarter and three quarters of the bytes) */
static const char *const rail_pvars[] = {"rma_puts", "rma_striped_puts", "rma_rail_put_bytes",
                                         "verbs_reads", "verbs_striped_reads",
                                         "verbs_rail_read_bytes"};
enum { RV_PUTS, RV_READS = 3, RV_N = 6 };   /* each: the count, the striped ones, rail bytes */
enum { RAIL_LEN = (1 << 20) + 13, RAIL_OFF = 5 };

/* one put (or get) of RAIL_LEN bytes at the next rank under a lock, then every
 * rank's counters: the three of that operation moved by one striped operation */
static void rails_one(window_t *w, bool put, unsigned char *buf, MPI_T_pvar_session session,
                      MPI_T_pvar_handle *h)
{
    unsigned long before[RV_N], after[RV_N];
    const int right = (rank + 1) % nranks, k = put ? RV_PUTS : RV_READS;
    pvars_read(session, h, RV_N, before);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(put ? MPI_LOCK_EXCLUSIVE : MPI_LOCK_SHARED, right, 0, w->win);
    if (put) {
        MPI_Put(buf, RAIL_LEN, MPI_BYTE, right, RAIL_OFF, RAIL_LEN, MPI_BYTE, w->win);
    } else {
        MPI_Get(buf, RAIL_LEN, MPI_BYTE, right, RAIL_OFF, RAIL_LEN, MPI_BYTE, w->win);
    }
    MPI_Win_unlock(right, w->win);
    MPI_Barrier(MPI_COMM_WORLD);
    pvars_read(session, h, RV_N, after);
    const unsigned long ops = after[k] - before[k], striped = after[k + 1] - before[k + 1];
    const unsigned long bytes = after[k + 2] - before[k + 2];
    check(ops == 1 && striped == 1 && bytes >= RAIL_LEN / 4
          && bytes <= 3 * (unsigned long) RAIL_LEN / 4,
          "the %s went in pieces over the rails: %s +1, %s +1, %s +%d..%d (here +%lu, +%lu, +%lu)",
          put ? "put" : "get", rail_pvars[k], rail_pvars[k + 1], rail_pvars[k + 2], RAIL_LEN / 4,
          3 * RAIL_LEN / 4, ops, striped, bytes);
}

static void test_rails(void)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h[RV_N];
    window_t w;
    if (!counted_window(&session, h, rail_pvars, RV_N, "striping", &w, 0)) {
        return;
    }
    const int left = (rank + nranks - 1) % nranks;
    unsigned char *src = malloc(RAIL_LEN), *back = calloc(RAIL_LEN, 1);
    for (int i = 0; i < RAIL_LEN; i++) {
        src[i] = (unsigned char) (i * 7 + rank * 13 + 1);
    }
    rails_one(&w, true, src, session, h);
    long bad = 0;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win);
    for (int i = 0; i < RAIL_LEN; i++) {
        bad += w.base[RAIL_OFF + i] != (unsigned char) (i * 7 + left * 13 + 1);
    }
    MPI_Win_unlock(rank, w.win);
    check(bad == 0, "a put of %d B from the previous rank landed whole (%ld bytes wrong)", RAIL_LEN,
          bad);
    rails_one(&w, false, back, session, h);
    check(memcmp(back, src, RAIL_LEN) == 0,
          "a get of %d B from the next rank read back this rank's put", RAIL_LEN);
    free(src);
    free(back);
    win_close(&w);
    pvars_close(&session, h, RV_N);
}

/* Where one-element operations on MPI_DOUBLE go, ranks on one host: with
 * btl_rsm_float_atomics each is one of rsm's atomics (rma_atomics_sent +K); without,
 * osc rdma's get-op-put under its accumulate lock, which it takes in shared memory here
 * (+0).  WANT_ATOMICS says which the job was started for. */
static void test_float_route(bool want_atomics)
{
    MPI_T_pvar_session session;
    MPI_T_pvar_handle h[PV_N];
    window_t w;
    if (!counted_window(&session, h, rma_pvars, PV_N, "one-sided", &w, 1)) {
        return;
    }
    enum { K = 50 };
    unsigned long before[PV_N], after[PV_N];
    const int right = (rank + 1) % nranks;
    local_fill(&w, -1);
    pvars_read(session, h, PV_N, before);
    MPI_Barrier(MPI_COMM_WORLD);
    double one = 1.0, old;
    MPI_Win_lock_all(0, w.win);
    for (int k = 0; k < K; k++) {
        MPI_Fetch_and_op(&one, &old, MPI_DOUBLE, right, 4096, MPI_SUM, w.win);
        MPI_Win_flush(right, w.win);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    pvars_read(session, h, PV_N, after);
    const unsigned long sent = after[PV_SENT] - before[PV_SENT];
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w.win);
    const double total = *(double *) (w.base + 4096);
    MPI_Win_unlock(rank, w.win);
    check(total == K && sent == (want_atomics ? K : 0), "%d fetch-and-ops (double) on the next "
          "rank's window, float atomics %s: total %g, rma_atomics_sent +%lu (want %d)", K,
          want_atomics ? "on" : "off", total, sent, want_atomics ? K : 0);
    win_close(&w);
    pvars_close(&session, h, PV_N);
}

static void test_lockword(void)
{
    window_t w;
    const int target = nranks - 1;
    const MPI_Aint off = 4096;
    int rc = win_open(&w, 0, 1);
    check(rc == MPI_SUCCESS, "lockword: MPI_Win_create with ompi_single_accumulate");
    if (rc != MPI_SUCCESS) {
        return;
    }
    local_fill(&w, -1);
    const int64_t locked = INT64_MIN, zero = 0, one = 1;
    int64_t old = -1, after = 0, seen = 0;
    MPI_Win_lock_all(0, w.win);
    if (rank == 0) {
        /* rank 0 (another rank than the target: the BTL's atomics, not the target's
         * own in-place ones) swaps 0 -> 2^63 and then adds 1 */
        MPI_Compare_and_swap(&locked, &zero, &old, MPI_INT64_T, target, off, w.win);
        MPI_Win_flush(target, w.win);
        MPI_Fetch_and_op(&one, &after, MPI_INT64_T, target, off, MPI_SUM, w.win);
        MPI_Win_flush(target, w.win);
    }
    MPI_Win_unlock_all(w.win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, w.win);
    MPI_Fetch_and_op(NULL, &seen, MPI_INT64_T, target, off, MPI_NO_OP, w.win);
    MPI_Win_flush(target, w.win);
    MPI_Win_unlock_all(w.win);
    check((rank != 0 || (old == 0 && after == INT64_MIN)) && seen == INT64_MIN + 1,
          "lockword: rank 0 swapped 0 -> 2^63 into a word of rank %d and added 1 to it (the "
          "pattern of osc rdma's 4.1.4 deadlock, legal in a program): every value right on "
          "every rank, the job goes on", target);
    win_close(&w);
}

/* MPICH's win_dynamic_acc, in short: a dynamic window of one int a rank, and
 * every rank accumulates 1 into each rank's in turn, its own first (rank 0's
 * first target is itself).  On one host every value must come out right; in a
 * job of several hosts Open MPI 4.1.4's osc rdma deadlocks on the target's
 * region lock, the rank's own included, and the BTL is expected to end the job
 * with its message instead of hanging. */
static void test_dynself(void)
{
    MPI_Win win;
    int val = 0, one = 1;
    MPI_Aint *addr = calloc((size_t) nranks, sizeof(*addr));
    MPI_Get_address(&val, &addr[rank]);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, addr, 1, MPI_AINT, MPI_COMM_WORLD);
    int rc = MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    check(rc == MPI_SUCCESS, "dynself: MPI_Win_create_dynamic");
    if (rc != MPI_SUCCESS) {
        free(addr);
        return;
    }
    MPI_Win_attach(win, &val, sizeof(val));
    for (int i = 0; i < 4 * nranks; i++) {
        const int target = (rank + i) % nranks;
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        MPI_Accumulate(&one, 1, MPI_INT, target, addr[target], 1, MPI_INT, MPI_SUM, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    check(val == 4 * nranks, "dynself: every rank accumulated 1 into every rank's word of a "
          "dynamic window 4 times, its own first: %d here (want %d)", val, 4 * nranks);
    MPI_Win_detach(win, &val);
    MPI_Win_free(&win);
    free(addr);
}

/* in read-only memory (.rodata), in four distinct quarters */
static const unsigned char const_source[4096] = {
    [0 ... 1023] = 0x11, [1024 ... 2047] = 0x22, [2048 ... 3071] = 0x33, [3072 ... 4095] = 0x44};

static void test_constput(void)
{
    window_t w;
    const int target = nranks - 1;
    int rc = win_open(&w, 0, 0);
    check(rc == MPI_SUCCESS, "constput: MPI_Win_create");
    if (rc != MPI_SUCCESS) {
        return;
    }
    local_fill(&w, -1);
    MPI_Win_fence(0, w.win);
    if (rank == 0) {
        /* with the default error handler of the window: an error ends the job */
        MPI_Win_set_errhandler(w.win, MPI_ERRORS_ARE_FATAL);
        MPI_Put(const_source, (int) sizeof(const_source), MPI_BYTE, target, 64,
                (int) sizeof(const_source), MPI_BYTE, w.win);
    }
    MPI_Win_fence(0, w.win);
    long bad = 0;
    if (rank == target) {
        bad = memcmp(w.base + 64, const_source, sizeof(const_source)) != 0;
    }
    check(bad == 0, "constput: a put of %zu B from a const array landed whole",
          sizeof(const_source));
    win_close(&w);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (argc > 1 && strcmp(argv[1], "no-window") == 0) {
        window_t w;
        int rc = win_open(&w, 0, 0), cls = -1;
        if (rc != MPI_SUCCESS) {
            MPI_Error_class(rc, &cls);
        } else {
            win_close(&w);
        }
        check(rc != MPI_SUCCESS, "MPI_Win_create returns an error (class %d) instead of a window",
              cls);
        MPI_Finalize();
        return nfailed != 0;
    }
    if (argc > 1
        && (strcmp(argv[1], "mpit") == 0 || strcmp(argv[1], "rails") == 0
            || strcmp(argv[1], "lockword") == 0 || strcmp(argv[1], "constput") == 0
            || strcmp(argv[1], "float-route") == 0 || strcmp(argv[1], "dynself") == 0)) {
        if (strcmp(argv[1], "mpit") == 0) {
            if (argc > 2 && strcmp(argv[2], "pmeth") == 0) {
                pvar_prefix = "btl_pmeth_";
            }
            test_mpit();
        } else if (strcmp(argv[1], "float-route") == 0) {
            /* "float-route on" / "float-route off": what the job's btl_rsm_float_atomics is */
            test_float_route(argc > 2 && strcmp(argv[2], "on") == 0);
        } else if (strcmp(argv[1], "lockword") == 0) {
            test_lockword();
        } else if (strcmp(argv[1], "constput") == 0) {
            test_constput();
        } else if (strcmp(argv[1], "dynself") == 0) {
            test_dynself();
        } else {
            test_rails();
        }
        if (rank == 0) {
            printf("1..%d\n", ntests);
        }
        MPI_Finalize();
        return nfailed != 0;
    }
    /* "flavours 12": only those (0 create, 1 dynamic, 2 allocate); "float-atomics": all,
     * for a job run with btl_rsm_float_atomics on, without the derived get-accumulate
     * that Open MPI 4.1.4 gets wrong there */
    const char *only = argc > 2 && strcmp(argv[1], "flavours") == 0 ? argv[2] : "012";
    if (argc > 3 && strcmp(argv[1], "flavours") == 0 && atoi(argv[3]) >= 8) {
        K_FOP = atoi(argv[3]);
        K_CAS = K_FOP * 3 / 8;
    }
    const bool derived = !(argc > 1 && strcmp(argv[1], "float-atomics") == 0);
    for (int flavour = 0; flavour < 3; flavour++) {
        if (strchr(only, '0' + flavour) == NULL) {
            continue;
        }
        for (int single = 0; single < 2; single++) {
            char label[96];
            snprintf(label, sizeof(label), "%s%s", flavour_name[flavour],
                     single ? " (ompi_single_accumulate)" : "");
            window_t w;
            int rc = win_open(&w, flavour, single);
            check(rc == MPI_SUCCESS, "%s: window of 2 MiB on %d ranks", label, nranks);
            if (rc != MPI_SUCCESS) {
                continue;
            }
            test_put_fence(&w, label);
            test_get_passive(&w, label);
            test_put_passive(&w, label);
            test_accumulate(&w, label);
            test_counter_fop(&w, label);
            test_counter_cas(&w, label);
            test_fop_ops(&w, label);
            test_minmax_signedness(&w, label);
            test_get_accumulate(&w, label);
            if (derived) {
                test_get_accumulate_derived(&w, label);
            }
            win_close(&w);
        }
    }
    if (rank == 0) {
        printf("1..%d\n", ntests);
    }
    MPI_Finalize();
    return nfailed != 0;
}
