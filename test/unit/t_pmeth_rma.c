/* pmeth's one-sided messages (pmeth_rma_wire.h): the checks the target makes
 * of a request and the origin of an answer before using anything in them,
 * against forged headers - lengths that do not match what arrived, asks past
 * the limit, unknown statuses, PUT_DONE lists of 0 or too many ids - and the
 * range check at the ends of the address space. */
#include <stdint.h>
#include <string.h>

#include "pmeth_rma_wire.h"
#include "tap.h"

int main(void)
{
    const size_t H = sizeof(pmeth_rma_hdr_t);
    pmeth_rma_hdr_t h = {.addr = 0x1000, .id = 7, .len = 100};

    /* PUT: the data after the header is exactly len bytes */
    CHECK(H == 24, "the header is 24 bytes (the put limit is the eager limit less it)");
    CHECK(pmeth_rma_put_ok(&h, H + 100), "a put of 100 bytes with its 100 bytes passes");
    CHECK(!pmeth_rma_put_ok(&h, H + 99) && !pmeth_rma_put_ok(&h, H + 101),
          "a put whose data is a byte short or long is refused");
    CHECK(!pmeth_rma_put_ok(&h, H - 1) && !pmeth_rma_put_ok(&h, 0),
          "a put shorter than its header is refused");
    h.len = UINT32_MAX;
    CHECK(!pmeth_rma_put_ok(&h, H + 100), "a put stating 4 GiB with 100 bytes is refused");
    h.len = 0;
    CHECK(pmeth_rma_put_ok(&h, H), "a put of 0 bytes passes (nothing to copy)");

    /* GET: the header alone, asking at most the limit */
    h.len = 35776;
    CHECK(pmeth_rma_get_ok(&h, H, 35776), "a get of the limit passes");
    CHECK(!pmeth_rma_get_ok(&h, H, 35775), "a get past the limit is refused");
    CHECK(!pmeth_rma_get_ok(&h, H + 8, 35776), "a get with bytes after its header is refused");

    /* answers */
    pmeth_rma_hdr_t a = {.id = 9, .len = 3, .status = PMETH_RMA_DONE};
    CHECK(pmeth_rma_answer_ok(&a, H + 3 * 8, true), "a PUT_DONE listing 3 ids with 3 ids passes");
    CHECK(!pmeth_rma_answer_ok(&a, H + 2 * 8, true) && !pmeth_rma_answer_ok(&a, H + 3 * 8 + 1, true),
          "a PUT_DONE whose ids are fewer or more than it says is refused");
    a.len = 0;
    CHECK(!pmeth_rma_answer_ok(&a, H, true), "a PUT_DONE that lists no id is refused");
    a.len = PMETH_RMA_DONE_MAX;
    CHECK(pmeth_rma_answer_ok(&a, H + PMETH_RMA_DONE_MAX * 8, true),
          "a PUT_DONE of %d ids passes", PMETH_RMA_DONE_MAX);
    a.len = PMETH_RMA_DONE_MAX + 1;
    CHECK(!pmeth_rma_answer_ok(&a, H + (PMETH_RMA_DONE_MAX + 1) * 8, true),
          "a PUT_DONE of %d ids is refused (the origin reads them into %d slots)",
          PMETH_RMA_DONE_MAX + 1, PMETH_RMA_DONE_MAX);
    a.len = 64;
    CHECK(pmeth_rma_answer_ok(&a, H + 64, false), "GET_DATA with its 64 bytes passes");
    CHECK(!pmeth_rma_answer_ok(&a, H + 63, false) && !pmeth_rma_answer_ok(&a, H + 65, false),
          "GET_DATA a byte short or long is refused");
    a.status = PMETH_RMA_REFUSED;
    CHECK(pmeth_rma_answer_ok(&a, H, false) && pmeth_rma_answer_ok(&a, H, true),
          "a refusal with nothing after the header passes, for a get and a put");
    CHECK(!pmeth_rma_answer_ok(&a, H + 64, false), "a refusal that carries data is refused");
    a.status = 2;
    CHECK(!pmeth_rma_answer_ok(&a, H + 64, false) && !pmeth_rma_answer_ok(&a, H, true),
          "an answer of an unknown status is refused");
    a.status = PMETH_RMA_DONE;
    CHECK(!pmeth_rma_answer_ok(&a, H - 1, false), "an answer shorter than its header is refused");

    /* the range check (the registrations' part of the target's checks) */
    CHECK(pmeth_rma_range_inside(0x1000, 0x100, 0x1000, 0x100), "the whole region is inside");
    CHECK(pmeth_rma_range_inside(0x1000, 0x100, 0x10ff, 1), "its last byte is inside");
    CHECK(!pmeth_rma_range_inside(0x1000, 0x100, 0x10ff, 2), "a byte past its end is not");
    CHECK(!pmeth_rma_range_inside(0x1000, 0x100, 0xfff, 1), "a byte before it is not");
    CHECK(!pmeth_rma_range_inside(0x1000, 0x100, 0x1010, UINT64_MAX - 0x8),
          "a length that wraps the address space is not");
    CHECK(!pmeth_rma_range_inside(UINT64_MAX - 0xf, 0x10, UINT64_MAX - 0x8, 0x10),
          "a range running past the top of the address space is not");
    CHECK(pmeth_rma_range_inside(0x1000, 0x100, 0x1080, 0), "an empty range inside is");
    return tap_done();
}
