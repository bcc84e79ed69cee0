/*
 * A minimal TAP producer for the plain-C unit tests: test/run counts the
 * "ok" / "not ok" lines.  CHECK records one assertion with its source line.
 */
#ifndef XB_TAP_H
#define XB_TAP_H

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

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
