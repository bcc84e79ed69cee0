/* The benchmarks' payload check must catch every kind of wrong delivery. */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "xb_pattern.h"

int main(void)
{
    enum { N = 4099 }; /* not a multiple of 8: the byte tail is exercised */
    unsigned char *a = malloc(N), *b = malloc(N);

    xb_fill(a, N, xb_seed(0, 1, 2));
    CHECK(xb_mismatch(a, N, xb_seed(0, 1, 2)) == -1, "a filled buffer verifies");
    CHECK(xb_mismatch(a, 0, xb_seed(9, 9, 9)) == -1, "an empty message verifies");

    for (size_t off = 0; off < N; off += 611) {
        memcpy(b, a, N);
        b[off] ^= 0x01;
        CHECK(xb_mismatch(b, N, xb_seed(0, 1, 2)) == (long) off, "one flipped bit at %zu is found there", off);
    }
    memcpy(b, a, N);
    b[N - 1] ^= 0x80;
    CHECK(xb_mismatch(b, N, xb_seed(0, 1, 2)) == N - 1, "a flipped last byte is found");

    CHECK(xb_mismatch(a, N, xb_seed(1, 1, 2)) == 0, "a message from another sender fails at byte 0");
    CHECK(xb_mismatch(a, N, xb_seed(0, 2, 2)) == 0, "a message of another iteration fails at byte 0");
    CHECK(xb_mismatch(a, N, xb_seed(0, 1, 3)) == 0, "a message with another tag fails at byte 0");

    /* a block delivered one word late (shifted) must not verify */
    memcpy(b, a + 8, N - 8);
    CHECK(xb_mismatch(b, N - 8, xb_seed(0, 1, 2)) == 0, "a payload shifted by 8 bytes fails");

    /* zero-filled memory (a lost write) must not look valid */
    memset(b, 0, N);
    CHECK(xb_mismatch(b, N, xb_seed(0, 1, 2)) >= 0, "an unwritten buffer fails");

    int distinct = 1;
    for (int i = 0; i < 1000 && distinct; i++)
        for (int j = i + 1; j < i + 4 && j < 1000; j++)
            if (xb_seed(0, i, 0) == xb_seed(0, j, 0)) distinct = 0;
    CHECK(distinct, "neighbouring iterations have distinct seeds");

    for (size_t i = 0; i < N; i += 97)
        if (a[i] != xb_expected_byte(i, xb_seed(0, 1, 2))) distinct = 0;
    CHECK(distinct, "xb_expected_byte agrees with xb_fill");

    free(a);
    free(b);
    return tap_done();
}
