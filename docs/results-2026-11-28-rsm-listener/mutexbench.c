/* What an entry point of rsm's verbs back end pays to keep out of the listener
 * thread's way: an uncontended recursive mutex (before 2026-11-28) against the
 * store / compiler barrier / load of ventry() and the store of vexit() (now),
 * with a second thread alive as in a job.  gcc -O2 mutexbench.c -lpthread;
 * taskset -c 0 ./a.out [iterations] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock;
static _Atomic unsigned depth;
static _Atomic bool busy;
static bool listening = true;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *sleeper(void *a)
{
    (void) a;
    for (;;) {
        sleep(1000);
    }
    return NULL;
}

__attribute__((noinline)) static void ventry(void)
{
    if (!listening) {
        return;
    }
    unsigned d = atomic_load_explicit(&depth, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&depth, d + 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (!atomic_load_explicit(&busy, memory_order_acquire)) {
            return;
        }
        atomic_store_explicit(&depth, d, memory_order_release);
    }
}

__attribute__((noinline)) static void vexit(void)
{
    if (!listening) {
        return;
    }
    atomic_store_explicit(&depth, atomic_load_explicit(&depth, memory_order_relaxed) - 1,
                          memory_order_release);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &a);
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            pthread_mutex_lock(&lock);
            __asm__ volatile("" ::: "memory");
            pthread_mutex_unlock(&lock);
        }
        double t1 = now();
        for (long i = 0; i < n; i++) {
            ventry();
            __asm__ volatile("" ::: "memory");
            vexit();
        }
        double t2 = now();
        printf("recursive mutex lock+unlock %.1f ns, ventry+vexit %.1f ns\n",
               (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9);
    }
    return 0;
}
