/* The paper's micro-benchmark (seed 004, Figs. 5 and 6) for apm: the time
 * for MIGRATED -> ARMED and ARMED -> MIGRATED of N connections at once,
 * N = 1 .. 512, through the event thread as a transport would drive it.
 *
 *   MIGRATED -> ARMED: the main thread asks the thread to re-arm every
 *     connection (alternate path specification + path loading request),
 *     then hands it every load confirmation (for Ethernet the peer's answer
 *     on the alternate; here at once, so only apm's own cost is measured);
 *     timed until the thread has applied the last one (the paper: "till
 *     event_ARMED for all QPs is received by the asynchronous thread").
 *   ARMED -> MIGRATED: the main thread requests the migration of every
 *     connection and reads their routes, as its sends would, until each
 *     shows the new path.
 *
 * No network: what is timed is the state machine, the ring and the thread.
 * Prints a table and one JSON object per row.  Not a test (test/run does not
 * run it); for figures, run it on an idle machine. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apm.h"
#include "apm_thread.h"

#define MAX_CONNS 512

static uint32_t load_gen[MAX_CONNS];

/* runs on the apm thread, mutex held: only record what to confirm */
static void on_load(void *ctx, apm_conn_t *c, unsigned path, uint32_t gen)
{
    load_gen[(uintptr_t) apm_conn_user(c)] = gen;
}

/* One burst, one wake-up (the ring holds them all). */
static void push_all(apm_thread_t *th, const apm_request_t *rq, int n)
{
    for (unsigned done = 0; done < (unsigned) n;) {
        done += apm_thread_request_many(th, rq + done, (unsigned) n - done);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_u64);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int reps = 21, max_conns = MAX_CONNS, opt;
    while ((opt = getopt(argc, argv, "r:m:h")) != -1) {
        switch (opt) {
        case 'r': reps = atoi(optarg); break;
        case 'm': max_conns = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-r repeats (21)] [-m max connections (512)]\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (reps < 1 || reps > 1000 || max_conns < 1 || max_conns > MAX_CONNS) {
        fprintf(stderr, "apm_bench: -r 1..1000, -m 1..%d\n", MAX_CONNS);
        return 2;
    }
    apm_config_t cfg;
    apm_config_init(&cfg);
    cfg.auto_rearm = false;                     /* each transition on its own, as in the paper */
    cfg.failback = false;
    apm_ops_t ops = {.load = on_load};
    apm_path_t paths[2];
    memset(paths, 0, sizeof(paths));
    for (int p = 0; p < 2; p++) {
        paths[p].link = 1000 + p;               /* links nobody will report on */
        snprintf(paths[p].name, sizeof(paths[p].name), "port%d", p + 1);
    }

    /* the fast path: what reading the route costs a send */
    apm_t *apm = apm_create(&cfg, &ops);
    apm_conn_t *one = apm_conn_create(apm, paths, 2, 0, (void *) 0, apm_now_ns());
    const apm_route_word_t *w = apm_conn_route(one);
    uint64_t sink = 0, reads = 50 * 1000 * 1000;
    uint64_t t0 = apm_now_ns();
    for (uint64_t k = 0; k < reads; k++) {
        sink += apm_route_path(apm_route_load(w));
        __asm__ volatile("" : "+r"(sink));      /* one load per iteration, not hoisted */
    }
    double read_ns = (double) (apm_now_ns() - t0) / (double) reads;
    apm_conn_destroy(one);
    apm_destroy(apm);

    printf("# apm transitions through the event thread, median of %d (us)\n", reps);
    printf("# route read on the fast path: %.2f ns (one relaxed load)\n", read_ns);
    printf("%6s %16s %12s %16s %12s\n", "conns", "migrated->armed", "per conn", "armed->migrated", "per conn");
    uint64_t *arm = calloc((size_t) reps, sizeof(uint64_t)), *mig = calloc((size_t) reps, sizeof(uint64_t));
    for (int n = 1; n <= max_conns; n *= 2) {
        apm = apm_create(&cfg, &ops);
        apm_thread_config_t tc;
        apm_thread_config_init(&tc);
        tc.netlink = false;
        tc.ring_size = 2 * MAX_CONNS;
        apm_thread_t *th = apm_thread_start(apm, &tc);
        if (th == NULL) {
            perror("apm_thread_start");
            return 1;
        }
        apm_conn_t *conn[MAX_CONNS];
        const apm_route_word_t *route[MAX_CONNS];
        for (int k = 0; k < n; k++) {
            conn[k] = apm_conn_create(apm, paths, 2, 0, (void *) (uintptr_t) k, apm_now_ns());
            route[k] = apm_conn_route(conn[k]);
        }
        apm_request_t rq[MAX_CONNS];
        for (int r = -2; r < reps; r++) {       /* two rounds to warm up */
            uint64_t start = apm_now_ns();
            for (int k = 0; k < n; k++) {
                rq[k] = (apm_request_t) {.kind = APM_REQ_REARM, .conn = conn[k]};
            }
            push_all(th, rq, n);
            apm_thread_flush(th);
            for (int k = 0; k < n; k++) {
                rq[k] = (apm_request_t) {.kind = APM_REQ_LOAD_CONFIRMED, .conn = conn[k], .gen = load_gen[k]};
            }
            push_all(th, rq, n);
            apm_thread_flush(th);
            uint64_t armed = apm_now_ns();
            uint64_t before[MAX_CONNS];
            for (int k = 0; k < n; k++) {
                before[k] = apm_route_epoch(apm_route_load(route[k]));
                rq[k] = (apm_request_t) {.kind = APM_REQ_MIGRATE, .conn = conn[k]};
            }
            uint64_t mstart = apm_now_ns();
            push_all(th, rq, n);
            for (int k = 0; k < n; k++) {
                /* yield while waiting: on a machine with fewer cores than runnable
                 * threads, spinning would keep the apm thread off the CPU */
                while (apm_route_epoch(apm_route_load(route[k])) == before[k]) {
                    sched_yield();
                }
            }
            uint64_t migrated = apm_now_ns();
            if (r >= 0) {
                arm[r] = armed - start;
                mig[r] = migrated - mstart;
            }
        }
        apm_thread_flush(th);
        apm_counters_t t;
        apm_totals(apm, &t);
        uint64_t expect = (uint64_t) n * (uint64_t) (reps + 2);
        if (t.armed != expect || t.migrations != expect || t.ignored_illegal + t.ignored_late != 0) {
            fprintf(stderr, "apm_bench: %d connections: %" PRIu64 " armed, %" PRIu64 " migrations, expected %" PRIu64
                    "\n", n, t.armed, t.migrations, expect);
            return 1;
        }
        double a = (double) median(arm, reps) / 1e3, m = (double) median(mig, reps) / 1e3;
        printf("%6d %16.2f %12.3f %16.2f %12.3f\n", n, a, a / n, m, m / n);
        apm_thread_stop(th);
        apm_destroy(apm);
        printf("{\"bench\":\"apm_transitions\",\"conns\":%d,\"reps\":%d,\"migrated_to_armed_us\":%.3f,"
               "\"armed_to_migrated_us\":%.3f,\"route_read_ns\":%.3f}\n",
               n, reps, a, m, read_ns);
    }
    free(arm);
    free(mig);
    return sink == 42 ? 3 : 0;                  /* never: keeps the read loop alive */
}
