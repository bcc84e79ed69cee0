/* pmeth's reliability window: sender and receiver on their own, and joined by a
 * lossy, reordering, duplicating channel. */
#include <stdlib.h>
#include <string.h>

#include "pmeth_window.h"
#include "tap.h"

#define MS 1000000ull

static uintptr_t released[8192];
static unsigned nreleased;
static void on_release(uintptr_t h, void *ctx)
{
    (void) ctx;
    if (nreleased < 8192) {
        released[nreleased] = h;
    }
    nreleased++;
}

static pmeth_window_config_t cfg(uint32_t w)
{
    pmeth_window_config_t c;
    pmeth_window_config_init(&c, w);
    return c;
}

/* ---- the channel simulation ------------------------------------------------ */
typedef struct { uint32_t seq; uint32_t ack; uint64_t sack; int is_ack; uint64_t at; } pkt_t;
#define QMAX 65536
static pkt_t q[QMAX];
static unsigned nq;
static double loss, dup, reorder;
static uint64_t rng = 88172645463325252ull;
static double rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double) (rng >> 11) / 9007199254740992.0;
}
static void chan_send(pkt_t p, uint64_t now)
{
    int copies = rnd() < loss ? 0 : (rnd() < dup ? 2 : 1);
    for (int i = 0; i < copies && nq < QMAX; i++) {
        p.at = now + 20000 + (rnd() < reorder ? (uint64_t) (rnd() * 400000) : 0);
        q[nq++] = p;
    }
}

static int simulate(uint32_t n, double l, double d, double r, uint64_t seed, uint32_t start_seq)
{
    loss = l; dup = d; reorder = r; rng = seed; nq = 0;
    pmeth_window_config_t c = cfg(64);
    pmeth_txwin_t *tx = pmeth_txwin_create(&c);
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    tx->base = tx->next = start_seq;
    rx->base = start_seq;
    uint32_t sent = 0, delivered = 0, bad = 0;
    uint64_t now = 0;
    for (long step = 0; step < 50000000 && delivered < n; step++) {
        now += 5000;
        while (sent < n && pmeth_txwin_can_send(tx)) {
            uint32_t seq = pmeth_txwin_push(tx, sent + 1, now, 0);
            chan_send((pkt_t){.seq = seq}, now);
            sent++;
        }
        pmeth_txwin_due_t due[16];
        int k = pmeth_txwin_due(tx, now, due, 16);
        for (int i = 0; i < k; i++) {
            chan_send((pkt_t){.seq = due[i].seq}, now);
        }
        /* deliver what has arrived */
        for (unsigned i = 0; i < nq;) {
            if (q[i].at > now) {
                i++;
                continue;
            }
            pkt_t p = q[i];
            q[i] = q[--nq];
            if (p.is_ack) {
                nreleased = 0;
                pmeth_txwin_ack(tx, p.ack, p.sack, now, NULL, NULL);
                continue;
            }
            uint32_t expect = delivered + 1;
            pmeth_rx_verdict_t v = pmeth_rxwin_accept(rx, p.seq, p.seq - start_seq + 1, now);
            if (v == PMETH_RX_NEW_IN_ORDER) {
                bad += (p.seq - start_seq + 1) != expect;
                delivered++;
                uintptr_t h;
                while (pmeth_rxwin_pop(rx, &h)) {
                    bad += h != delivered + 1;
                    delivered++;
                }
            }
        }
        if (pmeth_rxwin_ack_due(rx, now)) {
            pkt_t a = {.is_ack = 1};
            pmeth_rxwin_ack_fields(rx, &a.ack, &a.sack);
            pmeth_rxwin_ack_sent(rx);
            chan_send(a, now);
        }
    }
    int ok = delivered == n && bad == 0;
    pmeth_txwin_destroy(tx);
    pmeth_rxwin_destroy(rx);
    return ok;
}

int main(void)
{
    pmeth_window_config_t c = cfg(8);
    CHECK(pmeth_txwin_create(&(pmeth_window_config_t){.window = 6, .rto_min_ns = 1, .rto_max_ns = 2}) == NULL,
          "a window that is not a power of two is refused");

    /* sender: window full, in-order release, old and impossible acks ignored */
    pmeth_txwin_t *tx = pmeth_txwin_create(&c);
    for (uintptr_t h = 1; h <= 8; h++) {
        pmeth_txwin_push(tx, h, 0, 0);
    }
    CHECK(!pmeth_txwin_can_send(tx) && pmeth_txwin_inflight(tx) == 8, "window of 8: full after 8 frames");
    nreleased = 0;
    CHECK(pmeth_txwin_ack(tx, 9, 0, 1 * MS, on_release, NULL) == 0, "an ack past what was sent changes nothing");
    CHECK(pmeth_txwin_ack(tx, 3, 0, 1 * MS, on_release, NULL) == 3 && released[0] == 1 && released[2] == 3,
          "cumulative ack 3 releases frames 0-2 in order");
    CHECK(pmeth_txwin_ack(tx, 2, 0, 1 * MS, on_release, NULL) == 0, "an older ack changes nothing");
    CHECK(pmeth_txwin_can_send(tx) && tx->srtt == 1 * MS, "the window reopens; RTT sampled from the frames");

    /* timeout: only after the RTO, with back-off, capped per call */
    pmeth_txwin_due_t due[8];
    uint64_t dl = pmeth_txwin_next_deadline(tx);
    CHECK(dl != UINT64_MAX && pmeth_txwin_due(tx, dl - 1, due, 8) == 0, "nothing is due before the deadline");
    uint64_t rto = pmeth_txwin_rto(tx);
    int k = pmeth_txwin_due(tx, dl, due, 2);
    CHECK(k == 2 && due[0].seq == 3 && due[1].seq == 4 && !due[0].fast, "at the deadline, the oldest frames, at most the cap (2)");
    CHECK(pmeth_txwin_rto(tx) == 2 * rto || pmeth_txwin_rto(tx) == c.rto_max_ns, "the RTO doubled on expiry");
    nreleased = 0;
    pmeth_txwin_ack(tx, 5, 0, dl + 1 * MS, on_release, NULL);
    CHECK(nreleased == 2 && tx->srtt == 1 * MS, "Karn: resent frames give no RTT sample");

    /* fast retransmit: three acks showing frames past a hole */
    pmeth_txwin_destroy(tx);
    tx = pmeth_txwin_create(&c);
    for (uintptr_t h = 1; h <= 8; h++) {
        pmeth_txwin_push(tx, h, 0, 0);
    }
    pmeth_txwin_ack(tx, 2, 0x1, 100000, NULL, NULL);       /* 2 missing, 3 held */
    pmeth_txwin_ack(tx, 2, 0x3, 100000, NULL, NULL);
    CHECK(!pmeth_txwin_fast_pending(tx), "two acks past a hole: not yet");
    pmeth_txwin_ack(tx, 2, 0x7, 100000, NULL, NULL);
    k = pmeth_txwin_due(tx, 100000, due, 8);
    CHECK(pmeth_txwin_fast_pending(tx) == false && k == 1 && due[0].seq == 2 && due[0].fast,
          "the third: frame 2 is resent at once, once");
    pmeth_txwin_ack(tx, 2, 0xf, 100000, NULL, NULL);
    pmeth_txwin_ack(tx, 2, 0x1f, 100000, NULL, NULL);
    pmeth_txwin_ack(tx, 2, 0x3f, 100000, NULL, NULL);
    CHECK(pmeth_txwin_due(tx, 100000, due, 8) == 0, "not fast-retransmitted twice for one loss");
    CHECK(pmeth_txwin_ack(tx, 8, 0, 200000, NULL, NULL) == 6 && pmeth_txwin_empty(tx), "all acknowledged");
    pmeth_txwin_destroy(tx);

    /* RTO adapts and is clamped */
    tx = pmeth_txwin_create(&c);
    for (int i = 0; i < 50; i++) {
        pmeth_txwin_push(tx, 1, (uint64_t) i * 100 * MS, 0);
        pmeth_txwin_ack(tx, tx->next, 0, (uint64_t) i * 100 * MS + 50 * MS, NULL, NULL);
    }
    CHECK(tx->srtt > 45 * MS && tx->srtt < 55 * MS && pmeth_txwin_rto(tx) >= tx->srtt,
          "srtt follows a steady 50 ms round trip");
    for (int i = 0; i < 50; i++) {
        pmeth_txwin_push(tx, 1, 0, 0);
        pmeth_txwin_ack(tx, tx->next, 0, 1000, NULL, NULL);
    }
    CHECK(pmeth_txwin_rto(tx) == c.rto_min_ns, "a 1 us round trip: the RTO is clamped at rto_min");
    pmeth_txwin_destroy(tx);

    /* receiver */
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    uintptr_t h;
    CHECK(pmeth_rxwin_accept(rx, 0, 0, 0) == PMETH_RX_NEW_IN_ORDER, "frame 0 in order");
    CHECK(pmeth_rxwin_accept(rx, 0, 0, 0) == PMETH_RX_DUPLICATE && pmeth_rxwin_ack_now(rx),
          "frame 0 again: duplicate, and an ack is owed at once");
    pmeth_rxwin_ack_sent(rx);
    CHECK(pmeth_rxwin_accept(rx, 2, 22, 0) == PMETH_RX_NEW_OUT_OF_ORDER && pmeth_rxwin_ack_now(rx),
          "frame 2 before 1: held, ack at once");
    CHECK(pmeth_rxwin_accept(rx, 2, 22, 0) == PMETH_RX_DUPLICATE, "frame 2 again: duplicate of a held frame");
    CHECK(pmeth_rxwin_accept(rx, 3, 33, 0) == PMETH_RX_NEW_OUT_OF_ORDER, "frame 3 held");
    uint32_t cum;
    uint64_t sack;
    pmeth_rxwin_ack_fields(rx, &cum, &sack);
    CHECK(cum == 1 && sack == 0x3, "ack: next expected 1, selective bits for 2 and 3");
    CHECK(!pmeth_rxwin_pop(rx, &h), "nothing to pop while 1 is missing");
    CHECK(pmeth_rxwin_accept(rx, 1, 0, 0) == PMETH_RX_NEW_IN_ORDER, "frame 1 fills the gap");
    CHECK(pmeth_rxwin_pop(rx, &h) && h == 22 && pmeth_rxwin_pop(rx, &h) && h == 33 && !pmeth_rxwin_pop(rx, &h),
          "the held frames come out in order");
    CHECK(pmeth_rxwin_accept(rx, 4 + 8, 0, 0) == PMETH_RX_OUT_OF_WINDOW, "a frame a window ahead: out of window");
    CHECK(pmeth_rxwin_accept(rx, 4 - 100, 0, 0) == PMETH_RX_OUT_OF_WINDOW, "a frame far behind: out of window");
    pmeth_rxwin_ack_sent(rx);
    CHECK(pmeth_rxwin_accept(rx, 4, 0, 1000) == PMETH_RX_NEW_IN_ORDER && !pmeth_rxwin_ack_due(rx, 1000)
              && pmeth_rxwin_ack_due(rx, 1000 + c.ack_delay_ns),
          "one frame in order: the ack waits ack_delay");
    pmeth_rxwin_destroy(rx);
    pmeth_window_config_t c4 = cfg(64);
    c4.ack_every = 4;
    rx = pmeth_rxwin_create(&c4);
    for (uint32_t s = 0; s < 3; s++) {
        pmeth_rxwin_accept(rx, s, 0, 0);
    }
    CHECK(!pmeth_rxwin_ack_now(rx), "3 frames, ack_every 4: no immediate ack");
    pmeth_rxwin_accept(rx, 3, 0, 0);
    CHECK(pmeth_rxwin_ack_now(rx), "the 4th: ack at once");
    pmeth_rxwin_destroy(rx);

    /* sequence numbers wrap */
    CHECK(pmeth_seq_lt(0xfffffff0u, 5) && !pmeth_seq_lt(5, 0xfffffff0u), "serial comparison across 2^32");
    CHECK(simulate(2000, 0.0, 0.0, 0.0, 7, 0xffffff00u), "2000 frames across the 2^32 wrap, clean channel: in order, once");

    /* the lossy channel */
    struct { double l, d, r; } ch[] = {{0.01, 0, 0}, {0.05, 0.02, 0.2}, {0.2, 0.05, 0.3}, {0, 0.1, 0.5}};
    for (unsigned i = 0; i < sizeof(ch) / sizeof(ch[0]); i++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            CHECK(simulate(5000, ch[i].l, ch[i].d, ch[i].r, seed * 7919, (uint32_t) (seed * 0x55555555u)),
                  "5000 frames, loss %.0f%%, duplicates %.0f%%, reordering %.0f%%, seed %llu: each once, in order",
                  100 * ch[i].l, 100 * ch[i].d, 100 * ch[i].r, (unsigned long long) seed);
        }
    }
    return tap_done();
}
