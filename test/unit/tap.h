/*
 * A minimal TAP producer for the plain-C unit tests: test/run counts the
 * "ok" / "not ok" lines.  CHECK records one assertion with its source line.
 */
#ifndef XB_TAP_H
#define XB_TAP_H

#include <stdint.h>
#include <stdio.h>

static int tap_n, tap_failed;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        int ok_ = !!(cond);                                                     \
        printf("%sok %d - ", ok_ ? "" : "not ", ++tap_n);                       \
        printf(__VA_ARGS__);                                                    \
        printf("\n");                                                           \
        if (!ok_) {                                                             \
            printf("#   failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);      \
            tap_failed++;                                                       \
        }                                                                       \
    } while (0)

/* xorshift64 over *STATE: the same seed gives the same run (seeded tests) */
static inline uint64_t tap_xorshift64(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* A check that cannot run here, and why (counted as skipped) */
static inline void tap_skip(const char *what, const char *why)
{
    printf("ok %d - %s # SKIP %s\n", ++tap_n, what, why);
}

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
