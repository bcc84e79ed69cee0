#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xb_bench.h"

int xb_rank, xb_nprocs;
const char *xb_name;
static unsigned long failures;
static bool verify_enabled;

#define XB_WINDOW_BYTES (64UL << 20)
#define XB_MAX_MESSAGE (1UL << 30)

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
    if (0 == xb_rank) {
        printf("# %s: %s\n# ranks %d, verification %s\n", name, summary, xb_nprocs,
               o->verify ? "on" : "off");
        fflush(stdout);
    }
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
    printf("}\n");
    fflush(stdout);
}

int xb_finish(void)
{
    unsigned long total = 0;
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
