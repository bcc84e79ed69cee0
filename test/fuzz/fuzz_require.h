/*
 * REQUIRE(cond) for the fuzz targets: a promise the code under test makes about
 * an input it accepted.  A broken one is printed and aborts, which libFuzzer
 * reports as a crash with the input that broke it.
 */
#ifndef FUZZ_REQUIRE_H
#define FUZZ_REQUIRE_H

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(cond)                                                                   \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "broken promise: %s (line %d)\n", #cond, __LINE__);         \
            abort();                                                                    \
        }                                                                               \
    } while (0)

#endif
