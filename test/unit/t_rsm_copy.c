/* Streaming copy into the pool (rsm_copy.h): every alignment of source and
 * destination, lengths around the 64-byte steps, no byte outside the range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rsm_copy.h"
#include "tap.h"

int main(void)
{
    enum { GUARD = 128, MAXLEN = 5000 };
    static uint8_t src[MAXLEN + 2 * GUARD], dst[MAXLEN + 2 * GUARD] __attribute__((aligned(64)));
    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = (uint8_t) (i * 131 + 7);
    }
    static const size_t lens[] = {0, 1, 63, 64, 65, 127, 128, 129, 191, 4095, 4096, 4097, MAXLEN};
    unsigned bad = 0, cases = 0;
    for (unsigned so = 0; so < 64; so++) {
        for (unsigned dof = 0; dof < 64; dof++) {
            for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
                size_t len = lens[k];
                memset(dst, 0xA5, sizeof(dst));
                rsm_copy_stream(dst + GUARD + dof, src + GUARD + so, len);
                cases++;
                if (memcmp(dst + GUARD + dof, src + GUARD + so, len) != 0) {
                    bad++;
                    continue;
                }
                for (size_t i = 0; i < sizeof(dst); i++) {
                    if ((i < GUARD + dof || i >= GUARD + dof + len) && dst[i] != 0xA5) {
                        bad++;
                        break;
                    }
                }
            }
        }
    }
    CHECK(bad == 0, "%u of %u copies (64 x 64 alignments x %zu lengths) exact, nothing outside",
          cases - bad, cases, sizeof(lens) / sizeof(lens[0]));

    /* a large copy, as a pipeline fragment is */
    size_t big = 1 << 20;
    uint8_t *a = malloc(big + 64), *b = malloc(big + 64);
    for (size_t i = 0; i < big + 64; i++) {
        a[i] = (uint8_t) (i ^ (i >> 8));
    }
    rsm_copy_stream(b + 24, a + 24, big);
    CHECK(memcmp(a + 24, b + 24, big) == 0, "1 MiB at offset 24 copied exactly");
    free(a);
    free(b);
    return tap_done();
}
