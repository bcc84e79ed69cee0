/* Postbox parser: good messages assemble; out-of-range or out-of-sequence ones are dropped.
 * Inline groups and pads must lie inside the ring; the parser never reads past a header. */
#include <stdlib.h>
#include <string.h>

#include "rsm_postbox.h"
#include "tap.h"

static rsm_layout_t lay;

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
    return a;
}

/* The sender zeroes the next flag only when that slot last held follow-on
 * payload: model a sender and a receiver on a 16-postbox ring, with every
 * follow-on postbox's flag word forged to what the receiver will wait for
 * there next lap, and check the receiver never takes a postbox early.  From
 * sequence number START (a run across 2^32 checks that no flag is the
 * cleared one). */
static void stale_model(uint32_t start)
{
    const uint8_t FL = RSM_PB_FIRST | RSM_PB_LAST;
    rsm_postbox_t snap;
    enum { Q = 16, M = Q - 1 };
    rsm_postbox_t ring[Q];
    uint8_t stale[Q];
    memset(ring, 0, sizeof(ring));
    memset(stale, 0, sizeof(stale));
    uint32_t tail = start, early = 0, late = 0, cleared = 0, singles = 0, single_clears = 0;
    srand(7);
    for (int m = 0; m < 20000; m++) {
        uint32_t k = 1 + (uint32_t) rand() % 5, index = tail & M;
        if (index + k > Q) {            /* pad to the ring's end */
            uint32_t pad = Q - index;
            cleared += stale[(tail + pad) & M];
            rsm_pb_clear_stale(ring, stale, M, tail + pad);
            rsm_pb_publish_hdr(&ring[index], 0, RSM_PB_PAD | FL, 0, tail);
            tail += pad;
            index = 0;
        }
        rsm_pb_mark_follow_on(stale, M, tail, k);
        for (uint32_t i = 1; i < k; i++) {   /* follow-on payload over the flag word */
            uint32_t forged = rsm_pb_flag(tail + i + Q);
            memcpy((void *) &ring[index + i], &forged, sizeof(forged));
        }
        uint8_t was = stale[(tail + k) & M];
        cleared += was;
        if (k == 1) {
            singles++;
            single_clears += was;
        }
        rsm_pb_clear_stale(ring, stale, M, tail + k);
        rsm_pb_publish_hdr(&ring[index], (uint16_t) (k == 1 ? 8 : 56 + (k - 1) * 64),
                           RSM_PB_INLINE | FL, 1, tail);
        late += !rsm_pb_take(&ring[index], tail, &snap);
        tail += k;
        early += rsm_pb_take(&ring[tail & M], tail, &snap);   /* the receiver's next poll */
    }
    CHECK(early == 0 && late == 0, "stale follow-on payload never reads as the next flag "
          "(%u early, %u missed; from seq %u)", early, late, start);
    CHECK(cleared > 0 && cleared < 20000 && single_clears < singles,
          "the next flag is zeroed only after follow-on payload (%u of 20000 messages; from seq %u)",
          cleared, start);
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
    CHECK(rsm_layout_init(&bad, 4, 16, 1, 1 << 20, 2048, 4096, 512, 32768, &why) != 0,
          "inline limit larger than half a queue refused: %s", why);
    CHECK(rsm_layout_init(&bad, 4, 16, 1, 1 << 20, 2048, 4096, 56 + 5 * 64, 32768, &why) == 0,
          "the largest inline group of half a queue (reserve included) accepted");
    CHECK(rsm_layout_init(&bad, 4, 64, 1, 1 << 14, 2048, 4096, 512, 32768, &why) != 0,
          "pool smaller than the largest message refused: %s", why);

    CHECK(rsm_queue_len_auto(1) == 4096 && rsm_queue_len_auto(2) == 4096
          && rsm_queue_len_auto(3) == 4096 && rsm_queue_len_auto(4) == 4096
          && rsm_queue_len_auto(5) == 512 && rsm_queue_len_auto(8) == 512
          && rsm_queue_len_auto(16) == 256 && rsm_queue_len_auto(32) == 128
          && rsm_queue_len_auto(256) == 128,
          "queues sized to the node: 4096 postboxes up to 4 ranks, then a sender's together "
          "256 KiB, 128..512 each");
    for (uint32_t n = RSM_QUEUE_DEEP_RANKS + 1; n <= 300; n++) {
        uint32_t q = rsm_queue_len_auto(n);
        if ((q & (q - 1)) != 0 || (q > 128 && (size_t) n * q * RSM_POSTBOX_SIZE > RSM_QUEUE_AUTO_BYTES)) {
            CHECK(0, "auto queue length %u for %u local ranks", q, n);
            break;
        }
    }

    rsm_assembler_t a = fresh();
    rsm_postbox_t pb = inl(FL, 65, "hello", 5);
    CHECK(rsm_assembler_feed(&a, &lay, &pb, 0) == RSM_PB_DONE && a.total == 5 && a.tag == 65
          && a.postboxes == 1 && a.type == RSM_PB_INLINE, "one-postbox inline message");

    CHECK(rsm_inline_postboxes(0) == 1 && rsm_inline_postboxes(56) == 1
          && rsm_inline_postboxes(57) == 2 && rsm_inline_postboxes(120) == 2
          && rsm_inline_postboxes(121) == 3 && rsm_inline_postboxes(512) == 9,
          "group sizes: 56 bytes in the head, 64 in each other postbox");
    rsm_postbox_t pr = inl(FL | RSM_PB_PAIR, 65, "0123456789abcdefghijklmn", 24);
    CHECK(rsm_assembler_feed(&a, &lay, &pr, 5) == RSM_PB_DONE && a.pair && a.total == 24
          && a.postboxes == 1, "a PAIR postbox: 24 bytes in its first half, its second half may follow");
    pr = inl(FL, 65, "x", 1);
    CHECK(rsm_assembler_feed(&a, &lay, &pr, 5) == RSM_PB_DONE && !a.pair, "an ordinary postbox is no PAIR");
    pr = inl(FL | RSM_PB_PAIR, 65, NULL, 25);
    CHECK(rsm_assembler_feed(&a, &lay, &pr, 5) == RSM_PB_BAD && !a.pair,
          "a PAIR whose first message would reach into the second half is dropped");
    pr = ptr(FL | RSM_PB_PAIR, 0, 64, 0, 1);
    CHECK(rsm_assembler_feed(&a, &lay, &pr, 5) == RSM_PB_BAD, "a pointer postbox cannot be a PAIR");
    rsm_half_t *half = rsm_pb_half(&pr);
    half->kind = RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST;
    half->nbytes = 24;
    CHECK(rsm_half_valid(rsm_half_read_hdr(half)), "a second half of 24 bytes is believed");
    half->nbytes = 25;
    CHECK(!rsm_half_valid(rsm_half_read_hdr(half)), "a second half of 25 bytes is not");
    half->nbytes = 8;
    half->kind = RSM_PB_POINTER | RSM_PB_FIRST | RSM_PB_LAST;
    CHECK(!rsm_half_valid(rsm_half_read_hdr(half)), "nor one of another kind");
    CHECK((char *) half->data - (char *) &pr == 40 && (char *) half - (char *) pr.u.data == 24,
          "the second half starts where the first half's 24 payload bytes end");

    rsm_postbox_t g = inl(FL, 3, NULL, 120);
    CHECK(rsm_assembler_feed(&a, &lay, &g, 10) == RSM_PB_DONE && a.total == 120
          && a.postboxes == 2 && a.tag == 3, "a two-postbox inline group");
    CHECK(rsm_assembler_feed(&a, &lay, &g, 62) == RSM_PB_DONE && a.postboxes == 2,
          "a group that ends at the ring's end");
    CHECK(rsm_assembler_feed(&a, &lay, &g, 63) == RSM_PB_BAD && a.postboxes == 1
          && a.lost_extent, "a group that would wrap around the ring is dropped, one postbox "
          "consumed, its extent not known");
    {
        /* a whole group or pad inside an open pointer message: both are lost, and
         * the group's own extent is consumed (the next message starts after it) */
        rsm_assembler_t b = fresh();
        rsm_postbox_t open_ptr = ptr(RSM_PB_FIRST, 4096, 64, 0, 1);
        CHECK(rsm_assembler_feed(&b, &lay, &open_ptr, 0) == RSM_PB_MORE, "a pointer message opened");
        rsm_postbox_t g3 = inl(FL, 3, NULL, 180);
        CHECK(rsm_assembler_feed(&b, &lay, &g3, 1) == RSM_PB_BAD && b.postboxes == 3
              && !b.lost_extent && !b.active,
              "a 3-postbox group inside it: dropped, its 3 postboxes consumed (%u)", b.postboxes);
        rsm_postbox_t ok1 = inl(FL, 3, "y", 1);
        CHECK(rsm_assembler_feed(&b, &lay, &ok1, 4) == RSM_PB_DONE,
              "the message after the group is read");
        rsm_postbox_t open2 = ptr(RSM_PB_FIRST, 4096, 64, 0, 1);
        (void) rsm_assembler_feed(&b, &lay, &open2, 50);
        rsm_postbox_t pad2 = inl(FL, 0, NULL, 0);
        pad2.kind = RSM_PB_PAD | FL;
        CHECK(rsm_assembler_feed(&b, &lay, &pad2, 51) == RSM_PB_BAD && b.postboxes == 13
              && !b.lost_extent, "a pad inside it: dropped, to the ring's end");
        rsm_postbox_t odd = inl(FL | 0x40, 3, NULL, 180);
        CHECK(rsm_assembler_feed(&b, &lay, &odd, 0) == RSM_PB_BAD && b.postboxes == 1
              && b.lost_extent, "unknown kind bits: one consumed, its extent not known");
    }
    /* what a slot may hold between messages (0, or an earlier lap's header) and
     * what only payload inside a group holds */
    CHECK(rsm_pb_flag_idle(0, 1000, 63) && rsm_pb_flag_idle(rsm_pb_flag(1000 - 64), 1000, 63)
          && rsm_pb_flag_idle(rsm_pb_flag(1000 - 6400), 1000, 63)
          && !rsm_pb_flag_idle(rsm_pb_flag(1000 - 1), 1000, 63)
          && !rsm_pb_flag_idle(0x41414141, 1000, 63) && !rsm_pb_flag_idle(7, 1000, 63),
          "a slot between messages holds 0 or an earlier lap's flag; payload is told apart");
    CHECK(rsm_pb_flag_idle(rsm_pb_flag(0xffffffffu), 0xffffffffu + 64u, 63)
          && rsm_pb_flag_idle(rsm_pb_flag(0xffffffffu - 64), 0xffffffffu, 63),
          "across the wrap of the sequence numbers too");
    rsm_postbox_t pad = inl(FL, 0, NULL, 0);
    pad.kind = RSM_PB_PAD | FL;
    CHECK(rsm_assembler_feed(&a, &lay, &pad, 60) == RSM_PB_SKIP && a.postboxes == 4,
          "a pad skips to the ring's end");
    pad.nbytes = 1;
    CHECK(rsm_assembler_feed(&a, &lay, &pad, 60) == RSM_PB_BAD, "a pad with bytes dropped");
    pad.nbytes = 0;
    CHECK(rsm_assembler_feed(&a, &lay, &pad, 64) == RSM_PB_BAD, "a position outside the ring dropped");

    rsm_postbox_t q = ptr(FL, 4096, 16000, 1, 2);
    CHECK(rsm_assembler_feed(&a, &lay, &q, 0) == RSM_PB_DONE && a.nruns == 2 && a.total == 32000
          && a.runs[1].stripe == 1, "pointer message with two runs");

    uint64_t before = a.dropped;
    rsm_postbox_t cases[] = {
        inl(FL, 1, NULL, 513),                                  /* beyond the inline limit */
        inl(FL, 1, NULL, 0xffff),
        inl(RSM_PB_FIRST, 1, "x", 1),                           /* a group is FIRST|LAST */
        ptr(FL, 0, 0, 0, 1),                                    /* empty run */
        ptr(FL, (uint32_t) lay.pool_bytes, 64, 0, 1),           /* offset at the end */
        ptr(FL, (uint32_t) lay.pool_bytes - 64, 128, 0, 1),     /* runs past the end */
        ptr(FL, 0xffffffc0u, 0x80, 0, 1),                       /* offset + len wraps 32 bits */
        ptr(FL, 64, 64, 2, 1),                                  /* stripe out of range */
        ptr(FL, 0, 64, 0, 0),                                   /* no runs */
        ptr(FL, 0, 64, 0, 5),                                   /* more runs than fit */
        ptr(FL, 0, 30000, 0, 2),                                /* more than max_msg in total */
        inl(RSM_PB_LAST, 1, "x", 1),                            /* a continuation with no start */
    };
    int n = (int) (sizeof(cases) / sizeof(cases[0]));
    int refused = 0;
    for (int i = 0; i < n; i++) {
        rsm_assembler_t b = fresh();
        refused += rsm_assembler_feed(&b, &lay, &cases[i], 0) == RSM_PB_BAD && b.dropped == 1;
    }
    CHECK(refused == n, "%d of %d malformed postboxes dropped and counted", refused, n);
    {
        /* runs may start anywhere (the sender aligns payload, not headers), but
         * every byte must still be inside the pool */
        rsm_assembler_t b = fresh();
        rsm_postbox_t odd = ptr(FL, 4096 + 50, 4110, 0, 1);
        CHECK(rsm_assembler_feed(&b, &lay, &odd, 0) == RSM_PB_DONE && b.runs[0].offset == 4146,
              "a run starting off a 64-byte boundary is accepted");
        rsm_postbox_t tail = ptr(FL, (uint32_t) lay.pool_bytes - 63, 64, 0, 1);
        CHECK(rsm_assembler_feed(&b, &lay, &tail, 0) == RSM_PB_BAD,
              "an unaligned run one byte past the pool's end is dropped");
    }

    rsm_postbox_t junk = inl(FL, 1, "x", 1);
    junk.kind = 0xc1;
    CHECK(rsm_assembler_feed(&a, &lay, &junk, 0) == RSM_PB_BAD, "unknown kind bits dropped");
    junk.kind = 0x10;
    CHECK(rsm_assembler_feed(&a, &lay, &junk, 0) == RSM_PB_BAD, "no type dropped");

    /* a new FIRST in the middle of a message, and a group or pad inside one */
    rsm_assembler_t d = fresh();
    rsm_postbox_t q1 = ptr(RSM_PB_FIRST, 0, 64, 0, 1);
    CHECK(rsm_assembler_feed(&d, &lay, &q1, 0) == RSM_PB_MORE
          && rsm_assembler_feed(&d, &lay, &q1, 1) == RSM_PB_BAD, "FIRST inside a message dropped");
    CHECK(rsm_assembler_feed(&d, &lay, &q1, 2) == RSM_PB_MORE
          && rsm_assembler_feed(&d, &lay, &g, 3) == RSM_PB_BAD, "a group inside a pointer message dropped");
    CHECK(rsm_assembler_feed(&d, &lay, &q1, 4) == RSM_PB_MORE
          && rsm_assembler_feed(&d, &lay, &pad, 60) == RSM_PB_BAD, "a pad inside a pointer message dropped");
    rsm_postbox_t q2 = ptr(RSM_PB_LAST, 64, 64, 0, 1);
    CHECK(rsm_assembler_feed(&d, &lay, &q2, 5) == RSM_PB_BAD, "a continuation with no start dropped");
    CHECK(rsm_assembler_feed(&d, &lay, &pb, 6) == RSM_PB_DONE, "parser recovers after drops");
    CHECK(rsm_assembler_feed(&d, &lay, &q1, 7) == RSM_PB_MORE
          && rsm_assembler_feed(&d, &lay, &q2, 8) == RSM_PB_DONE && d.nruns == 2 && d.total == 128,
          "a two-postbox pointer message");
    CHECK(a.dropped == before + 2, "drops are counted per assembler");

    /* flags and acks */
    rsm_postbox_t slot, snap;
    memset(&slot, 0, sizeof(slot));
    CHECK(!rsm_pb_take(&slot, 0, &snap), "a zeroed postbox is empty");
    rsm_pb_publish(&slot, &pb, 0);
    CHECK(rsm_pb_take(&slot, 0, &snap) && snap.nbytes == 5, "a published postbox is taken");
    CHECK(!rsm_pb_take(&slot, 64, &snap), "a stale postbox from the last lap is not taken");
    rsm_pb_hdr_t h = rsm_pb_read_hdr(&slot);
    CHECK(h.nbytes == 5 && h.kind == (RSM_PB_INLINE | FL) && h.tag == 65, "header read once");
    rsm_pb_clear_next(&slot);
    CHECK(!rsm_pb_take(&slot, 0, &snap), "a cleared flag is empty");
    rsm_pb_publish_hdr(&slot, 7, RSM_PB_INLINE | FL, 9, 41);
    CHECK(rsm_pb_take(&slot, 41, &snap) && snap.nbytes == 7 && snap.tag == 9,
          "a postbox written in place is published by its header");
    rsm_pb_clear_next(&slot);
    CHECK(!rsm_pb_take(&slot, UINT32_MAX, &snap) && rsm_pb_flag(UINT32_MAX) != 0
              && rsm_pb_flag(UINT32_MAX) != rsm_pb_flag(UINT32_MAX - 64),
          "the postbox before the wrap of the sequence numbers is not a cleared slot");
    stale_model(0);
    stale_model(UINT32_MAX - 30000);        /* 20000 messages of 1-5 postboxes: across the wrap */
    CHECK(lay.queue_shift == 6, "queue shift");
    {   /* the range fills against the byte loops they replace: every start (the
         * ring's end included), every length up to the queue, bytes outside untouched */
        enum { QS = 6, QL = 1 << QS, QM = QL - 1 };
        uint8_t want[QL], got[QL];
        _Atomic uint8_t acks[QL];
        unsigned bad_marks = 0, bad_acks = 0, cases = 0;
        for (uint32_t lap = 0; lap < 3; lap++) {
            for (uint32_t start = 0; start < QL; start++) {
                for (uint32_t n = 0; n <= QL; n++, cases++) {
                    uint32_t seq = lap * QL + start + 0xfffff000u;    /* and across the 32-bit wrap */
                    memset(want, 7, sizeof(want));
                    memset(got, 7, sizeof(got));
                    for (uint32_t i = 1; i < n; i++) want[(seq + i) & QM] = 1;
                    if (n >= 1) rsm_pb_mark_follow_on(got, QM, seq, n);
                    bad_marks += memcmp(want, got, sizeof(want)) != 0;
                    memset(want, 0xee, sizeof(want));
                    for (uint32_t i = 0; i < QL; i++) atomic_store(&acks[i], 0xee);
                    for (uint32_t i = 0; i < n; i++) want[(seq + i) & QM] = rsm_lap_tag(seq + i, QS);
                    rsm_acks_fill(acks, QM, QS, seq, n);
                    for (uint32_t i = 0; i < QL; i++) got[i] = atomic_load(&acks[i]);
                    bad_acks += memcmp(want, got, sizeof(want)) != 0;
                }
            }
        }
        CHECK(bad_marks == 0, "follow-on marks: %u of %u ranges differ from the byte loop", bad_marks, cases);
        CHECK(bad_acks == 0, "ack fills: %u of %u ranges differ from one release store a slot", bad_acks, cases);
    }
    {   /* what a sender reads of a message waiting for us (btl_rsm_get.c, "both ways") */
        rsm_postbox_t slot, w;
        memset(&slot, 0, sizeof(slot));
        memset(&w, 0, sizeof(w));
        w.nbytes = 2;
        w.u.runs[0].len = 40000;
        w.u.runs[1].len = 25536;
        w.kind = RSM_PB_POINTER | FL;
        CHECK(rsm_pb_waiting_pool_bytes(&slot, 7) == 0, "waiting: nothing published, 0 bytes");
        rsm_pb_publish(&slot, &w, 7);
        CHECK(rsm_pb_waiting_pool_bytes(&slot, 7) == 65536, "waiting: a pointer postbox names "
              "the sum of its runs (40000 + 25536)");
        CHECK(rsm_pb_waiting_pool_bytes(&slot, 8) == 0 && rsm_pb_waiting_pool_bytes(&slot, 7 + 64) == 0,
              "waiting: a postbox of another sequence number is not the one waited for");
        w.kind = RSM_PB_POINTER | RSM_PB_LAST;
        rsm_pb_publish(&slot, &w, 7);
        CHECK(rsm_pb_waiting_pool_bytes(&slot, 7) == 0, "waiting: a message's later postbox, 0");
        w = inl(FL, 65, "hello", 5);
        rsm_pb_publish(&slot, &w, 7);
        CHECK(rsm_pb_waiting_pool_bytes(&slot, 7) == 0, "waiting: an inline message, 0");
        memset(&w, 0xff, sizeof(w));
        w.kind = RSM_PB_POINTER | FL;
        rsm_pb_publish(&slot, &w, 7);
        CHECK(rsm_pb_waiting_pool_bytes(&slot, 7) == (uint64_t) RSM_PB_RUNS * 0xffffffffu,
              "waiting: a run count the peer made up (0x%x) reads at most %d runs, summed without "
              "overflow", 0xffff, RSM_PB_RUNS);
    }
    CHECK(rsm_lap_tag(0, 6) == 1 && rsm_lap_tag(63, 6) == 1 && rsm_lap_tag(64, 6) == 2
          && rsm_lap_tag(127 * 64, 6) == 128 && rsm_lap_tag(128 * 64, 6) == 1,
          "lap tags are 1..128, never 0");
    CHECK(rsm_lap_tag(0xffffffffu, 6) != rsm_lap_tag(0xffffffffu - 64, 6)
          && rsm_lap_tag(0, 6) != rsm_lap_tag(0xffffffffu, 6), "lap tags differ across the 32-bit wrap");
    return tap_done();
}
