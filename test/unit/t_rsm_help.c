/* The split get's request as a sender sees it: forged sizes, slots, generations
 * and ranges are refused; the range check cannot be fooled by overflow. */
#include <stdint.h>
#include <string.h>

#include "rsm_help.h"
#include "tap.h"

int main(void)
{
    rsm_help_req_t good = {.src = 0x10000, .dst = 0x20000, .len = 4096, .gen = 5, .slot = 3}, r;
    CHECK(rsm_help_req_read(&good, sizeof(good), &r) && r.src == good.src && r.len == good.len
          && r.slot == 3 && r.gen == 5, "a well-formed request is read whole");
    CHECK(!rsm_help_req_read(&good, sizeof(good) - 1, &r), "short message refused");
    CHECK(!rsm_help_req_read(&good, sizeof(good) + 8, &r), "long message refused");
    rsm_help_req_t bad = good;
    bad.slot = RSM_HELP_SLOTS;
    CHECK(!rsm_help_req_read(&bad, sizeof(bad), &r), "slot %u (one past the last) refused", bad.slot);
    bad.slot = UINT32_MAX;
    CHECK(!rsm_help_req_read(&bad, sizeof(bad), &r), "slot 2^32-1 refused");
    bad = good;
    bad.gen = 0;
    CHECK(!rsm_help_req_read(&bad, sizeof(bad), &r), "generation 0 (a free slot) refused");
    bad.gen = 1ull << 56;
    CHECK(!rsm_help_req_read(&bad, sizeof(bad), &r), "generation of 57 bits (would shift out of the state word) refused");
    bad = good;
    bad.len = 0;
    CHECK(!rsm_help_req_read(&bad, sizeof(bad), &r), "empty range refused");

    const uint64_t base = 0x7f0000001000ull, size = 1 << 20;
    CHECK(rsm_range_inside(base, size, base, size), "the whole registration");
    CHECK(rsm_range_inside(base, size, base + size - 1, 1), "its last byte");
    CHECK(!rsm_range_inside(base, size, base - 1, 2), "starting one byte before it");
    CHECK(!rsm_range_inside(base, size, base + 1, size), "ending one byte past it");
    CHECK(!rsm_range_inside(base, size, base + size, 1), "just past its end");
    CHECK(!rsm_range_inside(base, size, base + 16, UINT64_MAX - 8), "a length that wraps src + len");
    CHECK(!rsm_range_inside(base, size, UINT64_MAX - 4, 16), "a source that wraps");
    CHECK(!rsm_range_inside(base, size, base, size + 1), "longer than the registration");
    return tap_done();
}
