/* memcpy throughput at a few sizes, as glibc picks its copy for the CPU it sees.
 * Run in the QEMU/TCG guest with and without ERMS (-cpu max / -cpu max,-erms, or
 * GLIBC_TUNABLES=glibc.cpu.hwcaps=-ERMS).  gcc -O2 memcpybench.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
    static const size_t sizes[] = {64, 512, 4096, 65536, 1 << 20};
    char *a = malloc(1 << 21), *b = malloc(1 << 21);
    memset(a, 1, 1 << 21);
    memset(b, 2, 1 << 21);
    for (int k = 0; k < 5; k++) {
        size_t s = sizes[k];
        long n = s <= 512 ? 200000 : (64L << 20) / (long) s;
        if (n < 2000) {
            n = 2000;
        }
        double t0 = now();
        for (long i = 0; i < n; i++) {
            memcpy(b + (i & 1) * 64, a, s);
            __asm__ volatile("" ::: "memory");
        }
        double t = now() - t0;
        printf("memcpy %7zu B: %8.1f ns, %7.1f MB/s\n", s, t / n * 1e9, s * n / t / 1e6);
    }
    return 0;
}
