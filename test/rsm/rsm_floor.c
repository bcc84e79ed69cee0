/*
 * This machine's floors for the speed comparison (not a test):
 *   - cache-line ping-pong between two threads pinned to cores 0 and 1: half a
 *     round trip, the least any shared-memory latency can be;
 *   - memcpy bandwidth on one core at the benchmark's sizes (source and
 *     destination reused, as in a ping-pong of one buffer).
 *   rsm_floor   prints both tables
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Atomic uint64_t line[16] __attribute__((aligned(64)));
enum { ROUNDS = 200000 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *pong(void *arg)
{
    pin(1);
    for (uint64_t i = 1; i <= ROUNDS; i++) {
        while (atomic_load_explicit(&line[0], memory_order_acquire) != 2 * i - 1) {}
        atomic_store_explicit(&line[0], 2 * i, memory_order_release);
    }
    return NULL;
}

int main(void)
{
    pthread_t t;
    pin(0);
    pthread_create(&t, NULL, pong, NULL);
    double t0 = now();
    for (uint64_t i = 1; i <= ROUNDS; i++) {
        atomic_store_explicit(&line[0], 2 * i - 1, memory_order_release);
        while (atomic_load_explicit(&line[0], memory_order_acquire) != 2 * i) {}
    }
    double dt = now() - t0;
    pthread_join(t, NULL);
    printf("cache-line ping-pong, cores 0<->1: %.3f us half round trip\n", dt / ROUNDS / 2 * 1e6);

    size_t sizes[] = {4096, 65536, 1 << 20, 4 << 20};
    for (int s = 0; s < 4; s++) {
        size_t n = sizes[s];
        char *a = aligned_alloc(4096, n), *b = aligned_alloc(4096, n);
        memset(a, 1, n);
        memset(b, 2, n);
        int iters = (int) (2e9 / n) + 1;
        double best = 1e9;
        for (int rep = 0; rep < 5; rep++) {
            t0 = now();
            for (int i = 0; i < iters; i++) {
                memcpy(b, a, n);
                __asm__ volatile("" ::"r"(b) : "memory");
            }
            dt = now() - t0;
            if (dt < best) best = dt;
        }
        printf("memcpy %8zu B: %8.0f MB/s\n", n, (double) n * iters / best / 1e6);
        free(a);
        free(b);
    }
    return 0;
}
