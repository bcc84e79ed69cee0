/* Postbox parser: good messages assemble; out-of-range or out-of-sequence ones are dropped. */
#include <stdlib.h>
#include <string.h>

#include "rsm_postbox.h"
#include "tap.h"

static rsm_layout_t lay;
static uint8_t staging[1024];

static rsm_postbox_t inl(uint8_t kind, uint8_t tag, const char *s, uint16_t n)
{
    rsm_postbox_t pb;
    memset(&pb, 0, sizeof(pb));
    pb.kind = RSM_PB_INLINE | kind;
    pb.tag = tag;
    pb.nbytes = n;
    if (s) memcpy(pb.u.data, s, n < RSM_PB_DATA ? n : RSM_PB_DATA);
    return pb;
}

static rsm_postbox_t ptr(uint8_t kind, uint32_t off, uint32_t len, uint8_t stripe, uint16_t nruns)
{
    rsm_postbox_t pb;
    memset(&pb, 0, sizeof(pb));
    pb.kind = RSM_PB_POINTER | kind;
    pb.tag = 7;
    pb.nbytes = nruns;
    for (int i = 0; i < RSM_PB_RUNS; i++) {
        pb.u.runs[i].offset = off;
        pb.u.runs[i].len = len;
        pb.u.runs[i].stripe = stripe;
    }
    return pb;
}

static rsm_assembler_t fresh(void)
{
    rsm_assembler_t a;
    memset(&a, 0, sizeof(a));
    a.staging = staging;
    a.staging_cap = sizeof(staging);
    return a;
}

int main(void)
{
    const char *why = "";
    const uint8_t FL = RSM_PB_FIRST | RSM_PB_LAST;
    CHECK(rsm_layout_init(&lay, 4, 64, 2, 1 << 20, 2048, 4096, 512, 32768, &why) == 0,
          "a sane layout is accepted (%s)", why);
    CHECK(lay.queues_bytes == 4 * 64 * 64 && lay.pool_bytes <= (1 << 19), "layout sizes");
    rsm_layout_t bad;
    CHECK(rsm_layout_init(&bad, 4, 60, 1, 1 << 20, 2048, 4096, 512, 32768, &why) != 0,
          "queue length not a power of two refused: %s", why);
    CHECK(rsm_layout_init(&bad, 4, 8, 1, 1 << 20, 2048, 4096, 512, 32768, &why) != 0,
          "inline limit larger than half a queue refused: %s", why);
    CHECK(rsm_layout_init(&bad, 4, 64, 1, 1 << 14, 2048, 4096, 512, 32768, &why) != 0,
          "pool smaller than the largest message refused: %s", why);

    rsm_assembler_t a = fresh();
    rsm_postbox_t pb = inl(FL, 65, "hello", 5);
    CHECK(rsm_assembler_feed(&a, &lay, &pb) == RSM_PB_DONE && a.single != NULL && a.total == 5
          && a.tag == 65 && memcmp(a.single, "hello", 5) == 0, "one-postbox inline message");

    char big[120];
    for (int i = 0; i < 120; i++) big[i] = (char) i;
    rsm_postbox_t p1 = inl(RSM_PB_FIRST, 3, big, 56), p2 = inl(0, 0, big + 56, 56),
                  p3 = inl(RSM_PB_LAST, 0, big + 112, 8);
    CHECK(rsm_assembler_feed(&a, &lay, &p1) == RSM_PB_MORE
          && rsm_assembler_feed(&a, &lay, &p2) == RSM_PB_MORE
          && rsm_assembler_feed(&a, &lay, &p3) == RSM_PB_DONE && a.single == NULL
          && a.total == 120 && memcmp(a.staging, big, 120) == 0 && a.tag == 3,
          "three-postbox inline message gathers in order");

    rsm_postbox_t q = ptr(FL, 4096, 16000, 1, 2);
    CHECK(rsm_assembler_feed(&a, &lay, &q) == RSM_PB_DONE && a.nruns == 2 && a.total == 32000
          && a.runs[1].stripe == 1, "pointer message with two runs");

    uint64_t before = a.dropped;
    rsm_postbox_t cases[] = {
        inl(FL, 1, NULL, 57),                                   /* length beyond a postbox */
        inl(FL, 1, NULL, 0xffff),
        ptr(FL, 0, 0, 0, 1),                                    /* empty run */
        ptr(FL, (uint32_t) lay.pool_bytes, 64, 0, 1),           /* offset at the end */
        ptr(FL, (uint32_t) lay.pool_bytes - 64, 128, 0, 1),     /* runs past the end */
        ptr(FL, 0xffffffc0u, 0x80, 0, 1),                       /* offset + len wraps 32 bits */
        ptr(FL, 64, 64, 2, 1),                                  /* stripe out of range */
        ptr(FL, 65, 64, 0, 1),                                  /* misaligned offset */
        ptr(FL, 0, 64, 0, 0),                                   /* no runs */
        ptr(FL, 0, 64, 0, 5),                                   /* more runs than fit */
        ptr(FL, 0, 30000, 0, 2),                                /* more than max_msg in total */
        inl(RSM_PB_LAST, 1, "x", 1),                            /* a continuation with no start */
    };
    int n = (int) (sizeof(cases) / sizeof(cases[0]));
    int refused = 0;
    for (int i = 0; i < n; i++) {
        rsm_assembler_t b = fresh();
        refused += rsm_assembler_feed(&b, &lay, &cases[i]) == RSM_PB_BAD && b.dropped == 1;
    }
    CHECK(refused == n, "%d of %d malformed postboxes dropped and counted", refused, n);

    rsm_postbox_t junk = inl(FL, 1, "x", 1);
    junk.kind = 0xc1;
    CHECK(rsm_assembler_feed(&a, &lay, &junk) == RSM_PB_BAD, "unknown kind bits dropped");
    junk.kind = 0x13;
    CHECK(rsm_assembler_feed(&a, &lay, &junk) == RSM_PB_BAD, "both types at once dropped");

    /* inline message that grows past the limit: 10 full postboxes = 560 > 512 */
    rsm_assembler_t c = fresh();
    rsm_postbox_t f = inl(RSM_PB_FIRST, 1, big, 56), m = inl(0, 0, big, 56);
    rsm_pb_result_t r = rsm_assembler_feed(&c, &lay, &f);
    for (int i = 0; i < 12 && r == RSM_PB_MORE; i++) r = rsm_assembler_feed(&c, &lay, &m);
    CHECK(r == RSM_PB_BAD && !c.active, "inline message beyond the inline limit dropped");

    /* a new FIRST in the middle of a message, and a type switch */
    rsm_assembler_t d = fresh();
    rsm_postbox_t q1 = ptr(RSM_PB_FIRST, 0, 64, 0, 1);
    CHECK(rsm_assembler_feed(&d, &lay, &q1) == RSM_PB_MORE
          && rsm_assembler_feed(&d, &lay, &q1) == RSM_PB_BAD, "FIRST inside a message dropped");
    CHECK(rsm_assembler_feed(&d, &lay, &q1) == RSM_PB_MORE
          && rsm_assembler_feed(&d, &lay, &p3) == RSM_PB_BAD, "type switch inside a message dropped");
    CHECK(rsm_assembler_feed(&d, &lay, &pb) == RSM_PB_DONE, "parser recovers after drops");
    CHECK(a.dropped == before + 2, "drops are counted per assembler");

    /* flags and acks */
    rsm_postbox_t slot, snap;
    memset(&slot, 0, sizeof(slot));
    CHECK(!rsm_pb_take(&slot, 0, &snap), "a zeroed postbox is empty");
    rsm_pb_publish(&slot, &pb, 0);
    CHECK(rsm_pb_take(&slot, 0, &snap) && snap.nbytes == 5, "a published postbox is taken");
    CHECK(!rsm_pb_take(&slot, 64, &snap), "a stale postbox from the last lap is not taken");
    CHECK(rsm_lap_tag(0, 64) == 1 && rsm_lap_tag(63, 64) == 1 && rsm_lap_tag(64, 64) == 2
          && rsm_lap_tag(127 * 64, 64) == 128 && rsm_lap_tag(128 * 64, 64) == 1,
          "lap tags are 1..128, never 0");
    CHECK(rsm_lap_tag(0xffffffffu, 64) != rsm_lap_tag(0xffffffffu - 64, 64)
          && rsm_lap_tag(0, 64) != rsm_lap_tag(0xffffffffu, 64), "lap tags differ across the 32-bit wrap");
    return tap_done();
}
