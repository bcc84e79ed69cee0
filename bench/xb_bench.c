#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "xb_bench.h"

int xb_rank, xb_nprocs;
const char *xb_name;
static unsigned long failures;
static bool verify_enabled;

/* The placement probe (see xb_probe): one cache line shared by ranks 0 and 1. */
static MPI_Win probe_win = MPI_WIN_NULL;
static _Atomic uint64_t *probe_line;
static uint64_t probe_seq;
static double probe_last_ns = -1;
enum { XB_PROBE_BLOCKS = 9, XB_PROBE_ROUNDS = 100 };

#define XB_WINDOW_BYTES (64UL << 20)
#define XB_MAX_MESSAGE (1UL << 30)

static void probe_setup(void);

static void usage(const char *summary, const struct xb_opts *o, int status)
{
    if (0 == xb_rank) {
        fprintf(status ? stderr : stdout,
                "%s: %s\n"
                "usage: %s [-m MIN:MAX] [-i ITERS] [-w WARMUP] [-W WINDOW] [-n]\n"
                "  -m MIN:MAX  message sizes in bytes, powers of two (default %zu:%zu; K/M suffixes)\n"
                "  -i ITERS    iterations at sizes up to 16 KiB, fewer above (default %d)\n"
                "  -w WARMUP   untimed iterations per size (default %d)\n"
                "  -W WINDOW   messages in flight per iteration, bandwidth tests (default %d)\n"
                "  -n          do not verify payloads (for timing; verification is on by default)\n"
                "Output: columns, plus one JSON object per row on its own line.\n",
                xb_name, summary, xb_name, o->min_size, o->max_size, o->iters, o->warmup, o->window);
    }
    MPI_Finalize();
    exit(status);
}

static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) {
        return false;
    }
    if (*end == 'K' || *end == 'k') {
        v <<= 10, end++;
    } else if (*end == 'M' || *end == 'm') {
        v <<= 20, end++;
    }
    if (*end != '\0' || v > XB_MAX_MESSAGE) {
        return false;
    }
    *out = (size_t) v;
    return true;
}

static bool parse_positive(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < 0 || v > 100000000) {
        return false;
    }
    *out = (int) v;
    return true;
}

const char *xb_take_option(int *argc, char **argv, const char *name, bool has_value)
{
    int take = has_value ? 2 : 1;
    for (int i = 1; i + take <= *argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            const char *v = argv[i + take - 1];
            /* the rest, with argv's terminating NULL, moves down */
            memmove(&argv[i], &argv[i + take], (size_t) (*argc - i - take + 1) * sizeof(*argv));
            *argc -= take;
            return v;
        }
    }
    return NULL;
}

void xb_init(int *argc, char ***argv, const char *name, const char *summary, struct xb_opts *o)
{
    int c;

    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &xb_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &xb_nprocs);
    xb_name = name;
    o->verify = true;
    while ((c = getopt(*argc, *argv, "m:i:w:W:nh")) != -1) {
        char *colon;
        switch (c) {
        case 'm':
            colon = strchr(optarg, ':');
            if (NULL == colon) {
                if (!parse_size(optarg, &o->max_size)) {
                    usage(summary, o, 2);
                }
                o->min_size = o->max_size;
            } else {
                *colon = '\0';
                if (!parse_size(optarg, &o->min_size) || !parse_size(colon + 1, &o->max_size)) {
                    usage(summary, o, 2);
                }
            }
            if (o->min_size > o->max_size) {
                usage(summary, o, 2);
            }
            break;
        case 'i':
            if (!parse_positive(optarg, &o->iters) || o->iters < 1) {
                usage(summary, o, 2);
            }
            break;
        case 'w':
            if (!parse_positive(optarg, &o->warmup)) {
                usage(summary, o, 2);
            }
            break;
        case 'W':
            if (!parse_positive(optarg, &o->window) || o->window < 1) {
                usage(summary, o, 2);
            }
            break;
        case 'n':
            o->verify = false;
            break;
        case 'h':
            usage(summary, o, 0);
            break;
        default:
            usage(summary, o, 2);
        }
    }
    verify_enabled = o->verify;
    probe_setup();
    probe_last_ns = xb_probe();
    if (0 == xb_rank) {
        printf("# %s: %s\n# ranks %d, verification %s\n", name, summary, xb_nprocs,
               o->verify ? "on" : "off");
        if (probe_last_ns > 0) {
            printf("# core-to-core cache-line ping-pong between ranks 0 and 1: %.0f ns\n", probe_last_ns);
        }
        fflush(stdout);
    }
}

/*
 * Ranks 0 and 1 share one cache line through an MPI-3 shared-memory window, when
 * they are on one node.  Why: on a virtual machine the host may run the two vCPUs
 * on cores that share a last-level cache or on cores that do not (different CCDs),
 * and the choice holds for a whole run; cross-core traffic then costs 2-6x more and
 * every figure of the run moves with it.  Each row records the probe before and
 * after it so the comparison runner can group runs by placement.
 */
/* Map the 64-byte probe line from FILE, shared by the two ranks of PAIR; no
 * probe if either cannot. */
static void probe_map_file(const char *file, MPI_Comm pair)
{
    int ok = 1, all = 0;
    if (0 == xb_rank) {
        int fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ok = fd >= 0 && ftruncate(fd, 64) == 0;
        if (fd >= 0) close(fd);
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, pair);
    void *line = MAP_FAILED;
    if (ok) {
        int fd = open(file, O_RDWR | O_CLOEXEC);
        if (fd >= 0) {
            line = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        }
    }
    ok = line != MAP_FAILED;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, pair);
    if (all) {
        probe_line = line;
    } else if (line != MAP_FAILED) {
        munmap(line, 64);
    }
    MPI_Barrier(pair);
    if (0 == xb_rank) {
        unlink(file);       /* both have it mapped (or neither probes) */
    }
}

static void probe_setup(void)
{
    MPI_Comm pair = MPI_COMM_NULL, node = MPI_COMM_NULL;
    int node_size = 0;

    if (getenv("XB_NO_PROBE")) {
        return;
    }
    /* oversubscribed, the two might share a core and each round would wait for a
     * time slice: no probe then */
    MPI_Comm world_node;
    int local = 0, crowded = 0;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &world_node);
    MPI_Comm_size(world_node, &local);
    MPI_Comm_free(&world_node);
    crowded = local > sysconf(_SC_NPROCESSORS_ONLN);
    MPI_Allreduce(MPI_IN_PLACE, &crowded, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (crowded) {
        return;
    }
    MPI_Comm_split(MPI_COMM_WORLD, xb_rank < 2 ? 0 : MPI_UNDEFINED, xb_rank, &pair);
    if (MPI_COMM_NULL != pair) {
        MPI_Comm_split_type(pair, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &node_size);
    }
    if (2 == node_size) {
        void *base = NULL;
        MPI_Aint bytes;
        int disp;
        MPI_Win_allocate_shared(0 == xb_rank ? 64 : 0, 1, MPI_INFO_NULL, node, &base, &probe_win);
        MPI_Win_shared_query(probe_win, 0, &bytes, &disp, &base);
        probe_line = base;
        if (0 == xb_rank) {
            atomic_store(probe_line, 0);
        }
        MPI_Barrier(node);
    } else if (MPI_COMM_NULL != pair && getenv("XB_PROBE_FILE")) {
        /* ranks 0 and 1 on different (virtual) hosts of one machine: the line
         * lives in a file both can map (bench/compare.py --cluster sets it) */
        probe_map_file(getenv("XB_PROBE_FILE"), pair);
    }
    if (MPI_COMM_NULL != node) MPI_Comm_free(&node);
    if (MPI_COMM_NULL != pair) MPI_Comm_free(&pair);
}

/* Wait for the partner's store of WANT.  A partner that is late may still be in
 * MPI waiting for us: a transport that makes its own reliability (btl pmeth) may
 * have to resend a frame of ours that its early-completed send left behind, and
 * it can do that only while we call MPI.  So a long wait drives MPI's progress
 * (a spin of this length is far past one cache-line round trip: the figure of a
 * timely partner is untouched). */
static void probe_wait(uint64_t want)
{
    unsigned spins = 0;
    while (atomic_load_explicit(probe_line, memory_order_acquire) != want) {
        if (++spins % 65536 == 0) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        }
    }
}

double xb_probe(void)
{
    if (NULL == probe_line) {
        return -1;
    }
    double block[XB_PROBE_BLOCKS];
    for (int b = 0; b < XB_PROBE_BLOCKS; b++) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < XB_PROBE_ROUNDS; i++) {
            uint64_t ping = ++probe_seq, pong = ++probe_seq;
            if (0 == xb_rank) {
                atomic_store_explicit(probe_line, ping, memory_order_release);
                probe_wait(pong);
            } else {
                probe_wait(ping);
                atomic_store_explicit(probe_line, pong, memory_order_release);
            }
        }
        block[b] = (MPI_Wtime() - t0) * 1e9 / (2.0 * XB_PROBE_ROUNDS);
    }
    return xb_median(block, XB_PROBE_BLOCKS); /* a preempted block does not count */
}

size_t xb_first_size(const struct xb_opts *o)
{
    return o->min_size;
}

size_t xb_next_size(const struct xb_opts *o, size_t size)
{
    size_t next = 1; /* the next power of two above size, so odd minimums join the sweep */
    while (next <= size) {
        next <<= 1;
    }
    return next > o->max_size ? 0 : next;
}

int xb_iters_for(const struct xb_opts *o, size_t size)
{
    if (size <= 16384) {
        return o->iters;
    }
    long n = (long) ((double) o->iters * 16384.0 / (double) size);
    return n < 10 ? 10 : (int) n;
}

int xb_window_for(const struct xb_opts *o, size_t size)
{
    if (0 == size || (size_t) o->window * size <= XB_WINDOW_BYTES) {
        return o->window;
    }
    size_t w = XB_WINDOW_BYTES / size;
    return w < 1 ? 1 : (int) w;
}

size_t xb_window_bytes(const struct xb_opts *o)
{
    return (size_t) xb_window_for(o, o->max_size) * o->max_size;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

double xb_median(double *v, int n)
{
    if (n <= 0) {
        return 0;
    }
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void *xb_alloc(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (0 != posix_memalign(&p, (size_t) page, bytes ? bytes : 1)) {
        fprintf(stderr, "%s: rank %d cannot allocate %zu bytes\n", xb_name, xb_rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    memset(p, 0, bytes); /* first touch: pages land on this rank's NUMA node before timing */
    return p;
}

void xb_check(const void *buf, size_t len, int src, unsigned long iter, int tag)
{
    long off = xb_mismatch(buf, len, xb_seed(src, iter, tag));
    if (off >= 0) {
        if (failures < 10) {
            fprintf(stderr,
                    "%s: rank %d: VERIFY FAILED: message of %zu bytes from rank %d (iteration %lu, "
                    "tag %d) differs at byte %ld: got 0x%02x, expected 0x%02x\n",
                    xb_name, xb_rank, len, src, iter, tag, off, ((const uint8_t *) buf)[off],
                    xb_expected_byte((size_t) off, xb_seed(src, iter, tag)));
        }
        failures++;
    }
}

void xb_header(const char *columns)
{
    if (0 == xb_rank) {
        printf("%s\n", columns);
        fflush(stdout);
    }
}

void xb_row(size_t size, int iters, int nfields, const char *const names[], const double values[],
            const char *extra_json)
{
    double before = probe_last_ns;
    probe_last_ns = xb_probe();
    if (0 != xb_rank) {
        return;
    }
    printf("%-12zu", size);
    for (int i = 0; i < nfields; i++) {
        printf(" %14.2f", values[i]);
    }
    printf("\n{\"bench\":\"%s\",\"np\":%d,\"size\":%zu,\"iters\":%d,\"verified\":%s", xb_name,
           xb_nprocs, size, iters, verify_enabled ? "true" : "false");
    for (int i = 0; i < nfields; i++) {
        printf(",\"%s\":%.6g", names[i], values[i]);
    }
    if (extra_json) {
        printf(",%s", extra_json);
    }
    if (before > 0 && probe_last_ns > 0) {
        printf(",\"probe_ns\":[%.1f,%.1f]", before, probe_last_ns);
    }
    printf("}\n");
    fflush(stdout);
}

int xb_finish(void)
{
    unsigned long total = 0;
    if (MPI_WIN_NULL != probe_win) {
        probe_line = NULL;
        MPI_Win_free(&probe_win);
    }
    MPI_Allreduce(&failures, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (0 == xb_rank) {
        if (total) {
            printf("# %s: VERIFY FAILED: %lu corrupt messages\n", xb_name, total);
        } else if (verify_enabled) {
            printf("# %s: all payloads verified\n", xb_name);
        }
        fflush(stdout);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
