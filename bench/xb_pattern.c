#include <string.h>

#include "xb_pattern.h"

/* splitmix64 finaliser: a cheap bijection that spreads nearby inputs. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t xb_seed(int src, uint64_t iter, int tag)
{
    return mix(((uint64_t) (uint32_t) src << 40) ^ ((uint64_t) (uint32_t) tag << 20) ^ mix(iter));
}

/* Word w of the pattern: an odd-stride sequence, so every word of a message
 * differs and a block shifted by any number of words does not match. */
static inline uint64_t word(uint64_t seed, size_t w)
{
    return seed + (uint64_t) w * 0x9e3779b97f4a7c15ULL;
}

uint8_t xb_expected_byte(size_t offset, uint64_t seed)
{
    uint64_t v = word(seed, offset / 8);
    return (uint8_t) (v >> (8 * (offset % 8)));
}

void xb_fill(void *buf, size_t len, uint64_t seed)
{
    uint8_t *p = buf;
    size_t words = len / 8;
    for (size_t w = 0; w < words; w++) {
        uint64_t v = word(seed, w);
        memcpy(p + 8 * w, &v, 8); /* little-endian byte order, as xb_expected_byte reads it */
    }
    for (size_t i = words * 8; i < len; i++) {
        p[i] = xb_expected_byte(i, seed);
    }
}

long xb_mismatch(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *p = buf;
    size_t words = len / 8;
    for (size_t w = 0; w < words; w++) {
        uint64_t v = word(seed, w), got;
        memcpy(&got, p + 8 * w, 8);
        if (got != v) {
            for (size_t i = 8 * w;; i++) {
                if (p[i] != xb_expected_byte(i, seed)) {
                    return (long) i;
                }
            }
        }
    }
    for (size_t i = words * 8; i < len; i++) {
        if (p[i] != xb_expected_byte(i, seed)) {
            return (long) i;
        }
    }
    return -1;
}
