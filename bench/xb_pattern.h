/*
 * Payload patterns for the benchmarks' data verification.  Every message
 * carries bytes derived from (sender, iteration, tag), so a corrupted, truncated,
 * reordered or misdelivered message fails the check, not only a flipped bit.
 * Plain C without MPI so it is unit-tested alone (test/unit/t_pattern.c).
 */
#ifndef XB_PATTERN_H
#define XB_PATTERN_H

#include <stddef.h>
#include <stdint.h>

/* Seed for the message `iter` sent by `src` with tag `tag`. */
uint64_t xb_seed(int src, uint64_t iter, int tag);

/* Write the pattern for `seed` into buf[0..len). */
void xb_fill(void *buf, size_t len, uint64_t seed);

/* First offset where buf differs from the pattern for `seed`, or -1 when it all matches. */
long xb_mismatch(const void *buf, size_t len, uint64_t seed);

/* The pattern byte expected at `offset` (for error messages). */
uint8_t xb_expected_byte(size_t offset, uint64_t seed);

#endif
