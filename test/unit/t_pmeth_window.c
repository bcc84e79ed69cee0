/* pmeth's reliability window: sender and receiver on their own, and joined by a
 * lossy, reordering, duplicating channel striped over several links. */
#include <stdlib.h>
#include <string.h>

#include "pmeth_window.h"
#include "tap.h"

#define US 1000ull
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

/* N frames in sequence from FIRST, in order, taken by RX (handles 0, at time 0) */
static void accept_run(pmeth_rxwin_t *rx, uint32_t first, uint32_t n)
{
    for (uint32_t s = first; s < first + n; s++) {
        pmeth_rxwin_accept(rx, s, 0, 0);
    }
}

/* xorshift64: the same seed gives the same run */
static uint64_t rng = 88172645463325252ull;
static uint64_t rnd64(void) { return tap_xorshift64(&rng); }
static double rnd(void) { return (double) (rnd64() >> 11) / 9007199254740992.0; }

/* A sender window with N frames (handles 1..N) sent at NOW, striped
 * round-robin over LINKS links. */
static pmeth_txwin_t *striped(const pmeth_window_config_t *c, uint32_t n, uint64_t now, unsigned links)
{
    pmeth_txwin_t *tx = pmeth_txwin_create(c);
    for (uint32_t i = 0; i < n; i++) {
        pmeth_txwin_push(tx, i + 1, now, (uint8_t) (i % links));
    }
    return tx;
}

static pmeth_txwin_t *filled(const pmeth_window_config_t *c, uint32_t n, uint64_t now)
{
    return striped(c, n, now, 1);
}

/* ---- the channel simulation ------------------------------------------------ */
typedef struct {
    uint32_t seq, ack, echo_seq;
    uint64_t sack;
    uint8_t xmit, echo_xmit;
    bool echo;
    int is_ack;
    uint64_t at;
} pkt_t;
#define QMAX 65536
static pkt_t q[QMAX];
static unsigned nq;

typedef struct sim {
    uint32_t n, window, start_seq, links, cap;
    double loss, dup, reorder;
    uint64_t stall_every, stall_ns;     /* the receiver does nothing for STALL_NS of every
                                           STALL_EVERY (a descheduled process) */
    uint64_t seed;
    /* results */
    uint64_t resends, fast, timeouts, max_due, dropped_q, end_ns;
    uint32_t delivered, released_ok;
} sim_t;

static uint64_t link_latency(const sim_t *s, unsigned link)
{
    /* link k is k x 7 us slower than link 0: striping reorders */
    (void) s;
    return 20 * US + (uint64_t) link * 7 * US;
}

static void chan_send(sim_t *s, pkt_t p, unsigned link, uint64_t now)
{
    int copies = rnd() < s->loss ? 0 : (rnd() < s->dup ? 2 : 1);
    for (int i = 0; i < copies; i++) {
        if (nq == QMAX) {
            s->dropped_q++;
            return;
        }
        p.at = now + link_latency(s, link) + (rnd() < s->reorder ? (uint64_t) (rnd() * 400 * US) : 0);
        q[nq++] = p;
    }
}

static uint32_t next_release;
static void sim_release(uintptr_t h, void *ctx)
{
    sim_t *s = ctx;
    if (h == next_release + 1) {
        s->released_ok++;
    }
    next_release = (uint32_t) h;
}

/* Sends N frames through the channel; true when the receiver got each exactly
 * once and in order, and the sender saw each released once, in order. */
static bool simulate(sim_t *s)
{
    rng = s->seed;
    nq = 0;
    next_release = 0;
    pmeth_window_config_t c = cfg(s->window);
    pmeth_txwin_t *tx = pmeth_txwin_create(&c);
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    pmeth_txwin_start_at(tx, s->start_seq);
    pmeth_rxwin_start_at(rx, s->start_seq);
    uint32_t sent = 0, bad = 0;
    unsigned link_rr = 0;
    uint64_t now = 0;
    pmeth_txwin_due_t due[64];
    s->delivered = s->released_ok = 0;
    for (long step = 0; step < 20000000 && (s->delivered < s->n || !pmeth_txwin_empty(tx)); step++) {
        now += 5 * US;
        while (sent < s->n && pmeth_txwin_can_send(tx)) {
            unsigned link = link_rr++ % s->links;
            uint32_t seq = pmeth_txwin_push(tx, sent + 1, now, (uint8_t) link);
            chan_send(s, (pkt_t){.seq = seq}, link, now);
            sent++;
        }
        int k = pmeth_txwin_due(tx, now, due, s->cap);
        if ((uint64_t) k > s->max_due) {
            s->max_due = (uint64_t) k;
        }
        for (int i = 0; i < k; i++) {
            chan_send(s, (pkt_t){.seq = due[i].seq, .xmit = due[i].xmit}, due[i].link, now);
            s->resends++;
            s->fast += due[i].fast;
            s->timeouts += !due[i].fast;
        }
        bool stalled = s->stall_every && now % s->stall_every >= s->stall_every - s->stall_ns;
        /* deliver what has arrived (the sender's acks always: only the
         * receiver stalls) */
        for (unsigned i = 0; i < nq;) {
            if (q[i].at > now || (stalled && !q[i].is_ack)) {
                i++;
                continue;
            }
            /* taken in the order they were sent: a link delivers in order
             * (the random extra delay of REORDER aside) */
            pkt_t p = q[i];
            memmove(&q[i], &q[i + 1], (nq - i - 1) * sizeof(q[0]));
            nq--;
            if (p.is_ack) {
                if (p.echo) {
                    pmeth_txwin_echo(tx, p.echo_seq, p.echo_xmit);
                }
                pmeth_txwin_ack(tx, p.ack, p.sack, now, sim_release, s);
                continue;
            }
            if (p.xmit > 0) {
                pmeth_rxwin_saw_resend(rx, p.seq, p.xmit);
            }
            uint32_t handle = p.seq - s->start_seq + 1;     /* the message number */
            pmeth_rx_verdict_t v = pmeth_rxwin_accept(rx, p.seq, handle, now);
            if (v == PMETH_RX_NEW_IN_ORDER) {
                bad += handle != s->delivered + 1;
                s->delivered++;
                uintptr_t h;
                while (pmeth_rxwin_pop(rx, &h)) {
                    bad += h != s->delivered + 1;
                    s->delivered++;
                }
            }
            if (pmeth_rxwin_ack_now(rx)) {
                /* as the BTL does: an ack owed at once (every few frames, a
                 * duplicate, a resend) goes out while the backlog is worked
                 * through, so a receiver back from a stall sends partial acks */
                pkt_t a = {.is_ack = 1};
                pmeth_rxwin_ack_fields(rx, &a.ack, &a.sack);
                a.echo = pmeth_rxwin_echo(rx, &a.echo_seq, &a.echo_xmit);
                pmeth_rxwin_ack_sent(rx);
                chan_send(s, a, 0, now);
            }
        }
        if (!stalled && pmeth_rxwin_ack_due(rx, now)) {
            pkt_t a = {.is_ack = 1};
            pmeth_rxwin_ack_fields(rx, &a.ack, &a.sack);
            a.echo = pmeth_rxwin_echo(rx, &a.echo_seq, &a.echo_xmit);
            pmeth_rxwin_ack_sent(rx);
            chan_send(s, a, 0, now);
        }
    }
    s->end_ns = now;
    bool ok = s->delivered == s->n && bad == 0 && s->released_ok == s->n && pmeth_txwin_empty(tx)
              && rx->held == 0 && s->dropped_q == 0;
    pmeth_txwin_destroy(tx);
    pmeth_rxwin_destroy(rx);
    return ok;
}

struct push_ctx { pmeth_txwin_t *w; unsigned pushed; };
static void push_more(uintptr_t h, void *p)
{
    struct push_ctx *ctx = p;
    pmeth_txwin_push(ctx->w, 100 + h, 20, 0);
    ctx->pushed++;
}

static void test_sender_basics(void)
{
    pmeth_window_config_t c = cfg(8);
    CHECK(pmeth_txwin_create(&(pmeth_window_config_t){.window = 6, .rto_min_ns = 1, .rto_max_ns = 2}) == NULL
              && pmeth_rxwin_create(&(pmeth_window_config_t){.window = 6, .rto_min_ns = 1, .rto_max_ns = 2}) == NULL,
          "a window that is not a power of two is refused");
    CHECK(pmeth_txwin_create(&(pmeth_window_config_t){.window = 64, .rto_min_ns = 5, .rto_max_ns = 2}) == NULL,
          "rto_min above rto_max is refused");

    /* window full, in-order release, old and impossible acks ignored */
    pmeth_txwin_t *tx = filled(&c, 8, 0);
    CHECK(!pmeth_txwin_can_send(tx) && pmeth_txwin_inflight(tx) == 8, "window of 8: full after 8 frames");
    nreleased = 0;
    CHECK(pmeth_txwin_ack(tx, 9, 0, 1 * MS, on_release, NULL) == 0 && pmeth_txwin_inflight(tx) == 8,
          "an ack past what was sent changes nothing");
    CHECK(pmeth_txwin_ack(tx, 3, 0, 1 * MS, on_release, NULL) == 3 && nreleased == 3 && released[0] == 1
              && released[1] == 2 && released[2] == 3,
          "cumulative ack 3 releases frames 0-2, in order");
    CHECK(pmeth_txwin_ack(tx, 2, 0, 1 * MS, on_release, NULL) == 0 && nreleased == 3, "an older ack changes nothing");
    CHECK(pmeth_txwin_can_send(tx) && tx->srtt == 1 * MS, "the window reopens; RTT sampled from the frames");
    pmeth_txwin_ack(tx, 3, ~0ull << 4, 1 * MS, NULL, NULL);   /* frames 3-7 out: bits 4.. are 8.. */
    CHECK(!pmeth_txwin_fast_pending(tx) && pmeth_txwin_next_deadline(tx) != UINT64_MAX,
          "a forged bitmap naming only frames never sent: nothing taken as held or lost");
    pmeth_txwin_destroy(tx);

    /* the caller's release callback may push into the slot it just got back */
    tx = filled(&c, 8, 0);
    struct push_ctx ctx = {tx, 0};
    unsigned n = pmeth_txwin_ack(tx, 4, 0, 10, push_more, &ctx);
    CHECK(n == 4 && ctx.pushed == 4 && pmeth_txwin_inflight(tx) == 8 && tx->next == 12,
          "a release callback that pushes new frames (into the freed slots) is safe");
    pmeth_txwin_destroy(tx);

    tx = pmeth_txwin_create(&c);
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    bool moved = pmeth_txwin_start_at(tx, 0xfffffffeu) && pmeth_rxwin_start_at(rx, 0xfffffffeu);
    uint32_t s0 = pmeth_txwin_push(tx, 1, 0, 0);
    pmeth_rxwin_accept(rx, 0xffffffffu, 2, 0);              /* held */
    CHECK(moved && s0 == 0xfffffffeu && !pmeth_txwin_start_at(tx, 5) && !pmeth_rxwin_start_at(rx, 5),
          "numbering can start anywhere, but only on empty windows");
    pmeth_txwin_destroy(tx);
    pmeth_rxwin_destroy(rx);

    CHECK(pmeth_txwin_bytes(256) + pmeth_rxwin_bytes(256) < 9 * 1024
              && pmeth_txwin_bytes(4096) + pmeth_rxwin_bytes(4096) < 34 * 4096 + 512,
          "memory per peer: %zu B at W=256, %zu B at W=4096 (about 33 x W)",
          pmeth_txwin_bytes(256) + pmeth_rxwin_bytes(256), pmeth_txwin_bytes(4096) + pmeth_rxwin_bytes(4096));
}

static void test_timeouts(void)
{
    pmeth_window_config_t c = cfg(8);
    pmeth_txwin_t *tx = filled(&c, 8, 0);
    pmeth_txwin_ack(tx, 3, 0, 1 * MS, NULL, NULL);      /* srtt 1 ms */
    pmeth_txwin_due_t due[8];
    uint64_t dl = pmeth_txwin_next_deadline(tx);
    CHECK(dl != UINT64_MAX && pmeth_txwin_due(tx, dl - 1, due, 8) == 0, "nothing is due before the deadline");
    uint64_t rto = pmeth_txwin_rto(tx);
    int k = pmeth_txwin_due(tx, dl, due, 8);
    CHECK(k == 1 && due[0].seq == 3 && !due[0].fast && due[0].handle == 4 && due[0].link == 0
              && due[0].xmit == 1,
          "expiry with no gap known: only the oldest frame goes, as a probe (with its handle, link "
          "and transmission number 1)");
    CHECK(pmeth_txwin_rto(tx) == 2 * rto && pmeth_txwin_next_deadline(tx) == dl + 2 * rto,
          "the RTO doubled; while probing only the probe runs a timer");
    CHECK(pmeth_txwin_due(tx, dl + 10, due, 8) == 0, "the other expired frames wait for the probe's answer");
    nreleased = 0;
    pmeth_txwin_echo(tx, 3, 1);
    pmeth_txwin_ack(tx, 4, 0, dl + 100 * US, on_release, NULL);
    CHECK(nreleased == 1 && tx->srtt == 1 * MS && tx->rtt_samples == 1 && pmeth_txwin_rto(tx) == rto,
          "Karn: the probe's ack gives no RTT sample; it ends the back-off (the path works)");
    k = pmeth_txwin_due(tx, dl + 100 * US, due, 2);
    CHECK(k == 2 && due[0].seq == 4 && due[1].seq == 5 && pmeth_txwin_next_deadline(tx) <= dl + 100 * US,
          "the ack echoes the probe's copy: frames sent before it are lost and go at once, at most "
          "the cap (2)");
    k = pmeth_txwin_due(tx, dl + 100 * US, due, 8);
    CHECK(k == 2 && due[0].seq == 6 && due[1].seq == 7 && pmeth_txwin_rto(tx) == rto,
          "frames the cap left over go at the next call, without another back-off");
    CHECK(pmeth_txwin_due(tx, dl + 101 * US, due, 8) == 0
              && pmeth_txwin_next_deadline(tx) == dl + 100 * US + rto,
          "then nothing until their own timeouts");
    pmeth_txwin_destroy(tx);

    /* a receiver that was only slow (descheduled): its first ack after the
     * timer expired covers the probe's original and a few frames, no echo */
    c = cfg(64);
    tx = filled(&c, 64, 0);
    dl = pmeth_txwin_next_deadline(tx);
    k = pmeth_txwin_due(tx, dl, due, 8);
    pmeth_txwin_ack(tx, 8, 0, dl + 50 * US, NULL, NULL);
    int again = pmeth_txwin_due(tx, dl + 60 * US, due, 8);
    CHECK(k == 1 && again == 0 && !tx->probing && pmeth_txwin_next_deadline(tx) > dl + 60 * US,
          "an ack of the probe's original (no echo) ends the probe and resends nothing: the 56 "
          "frames after it may still be on their way to a slow receiver");
    pmeth_txwin_echo(tx, 0, 1);                 /* an echo of the probe that came late */
    pmeth_txwin_ack(tx, 16, 0, dl + 70 * US, NULL, NULL);
    CHECK(pmeth_txwin_due(tx, dl + 80 * US, due, 8) == 0,
          "a late echo of a probe no longer running declares nothing lost");
    pmeth_txwin_destroy(tx);

    /* a lost ack behind a full window costs one frame, not the window */
    c = cfg(64);
    tx = filled(&c, 64, 0);
    dl = pmeth_txwin_next_deadline(tx);
    k = pmeth_txwin_due(tx, dl, due, 8);
    nreleased = 0;
    unsigned acked = pmeth_txwin_ack(tx, 64, 0, dl + 50 * US, on_release, NULL);
    CHECK(k == 1 && acked == 64 && pmeth_txwin_empty(tx) && pmeth_txwin_due(tx, dl + 60 * MS, due, 8) == 0,
          "64 frames received, their ack lost: one probe, its duplicate's ack releases all 64");
    CHECK(tx->rtt_samples == 0 && tx->srtt == 0,
          "and no RTT sample from frames that lived through the timeout (their age is not a round trip)");
    pmeth_txwin_destroy(tx);

    /* an ack reaching further than any earlier one could show: only frames
     * within the earlier reach are fresh news */
    c = cfg(256);
    tx = pmeth_txwin_create(&c);
    for (uint32_t i = 0; i < 100; i++) {
        pmeth_txwin_push(tx, i + 1, i * US, 0);
    }
    pmeth_txwin_ack(tx, 100, 0, 1 * MS, NULL, NULL);
    CHECK(tx->srtt == 1 * MS - 64 * US,
          "frames 0-99 acked at once: the sample is frame 64's (936 us), not frame 99's (maybe held long)");
    pmeth_txwin_destroy(tx);

    /* a gap known but too small for fast retransmit: the probe's answer
     * tells which frames are lost */
    c = cfg(16);
    tx = filled(&c, 8, 0);
    pmeth_txwin_ack(tx, 0, 0x28, 30 * US, NULL, NULL);      /* held 4 and 6; 0-3, 5, 7 missing */
    dl = pmeth_txwin_next_deadline(tx);
    k = pmeth_txwin_due(tx, dl, due, 3);
    CHECK(k == 1 && due[0].seq == 0, "held 4 and 6 (2 < 3 above the holes): on expiry frame 0 alone");
    pmeth_txwin_echo(tx, 0, 1);                             /* the probe's copy got there */
    pmeth_txwin_ack(tx, 1, 0x14, dl + 40 * US, NULL, NULL);  /* 0 through; 4, 6 still held */
    k = pmeth_txwin_due(tx, dl + 40 * US, due, 3);
    int k2 = pmeth_txwin_due(tx, dl + 40 * US, due + 3, 8);
    CHECK(k == 3 && due[0].seq == 1 && due[1].seq == 2 && due[2].seq == 3 && k2 == 2 && due[3].seq == 5
              && due[4].seq == 7 && !due[0].fast,
          "its answer: 1, 2, 3 (cap 3), then 5, 7 are lost and go; the held ones not");
    pmeth_txwin_destroy(tx);

    /* back-off: each expiry of the oldest frame doubles, up to rto_max; a
     * sample from a frame sent once brings the RTO back */
    c = cfg(64);
    c.rto_max_ns = 50 * MS;
    tx = filled(&c, 1, 0);
    uint64_t now = 0, prev = pmeth_txwin_rto(tx);
    bool doubled = true;
    for (int i = 0; i < 8; i++) {
        now = pmeth_txwin_next_deadline(tx);
        k = pmeth_txwin_due(tx, now, due, 8);
        uint64_t want = prev * 2 > c.rto_max_ns ? c.rto_max_ns : prev * 2;
        doubled = doubled && k == 1 && due[0].seq == 0 && pmeth_txwin_rto(tx) == want;
        prev = pmeth_txwin_rto(tx);
    }
    CHECK(doubled && prev == c.rto_max_ns && tx->backoff == 8,
          "8 expiries: the RTO doubles each time and stops at rto_max (50 ms)");
    pmeth_txwin_push(tx, 2, now, 0);
    pmeth_txwin_ack(tx, 2, 0, now + 300 * US, NULL, NULL);
    CHECK(pmeth_txwin_rto(tx) == c.rto_min_ns && tx->backoff == 0 && pmeth_txwin_empty(tx),
          "a frame sent once and acked after 300 us: back-off gone, RTO at rto_min");
    pmeth_txwin_destroy(tx);

    /* samples come from acks heard first: a frame held behind a gap was
     * acknowledged selectively long before the gap filled */
    c = cfg(64);
    tx = filled(&c, 4, 0);
    pmeth_txwin_ack(tx, 0, 0x7, 50 * US, NULL, NULL);       /* 1, 2, 3 held after 50 us */
    uint64_t srtt_held = tx->srtt;
    k = pmeth_txwin_due(tx, 100 * US, due, 8);              /* 0 lost: fast retransmit */
    pmeth_txwin_ack(tx, 4, 0, 5 * MS, NULL, NULL);          /* its copy acked 5 ms later */
    CHECK(srtt_held == 50 * US && k == 1 && tx->srtt == 50 * US && tx->rtt_samples == 1,
          "RTT from the selective ack (50 us); the gap filling 5 ms later gives no sample (held frames, a resent one)");
    pmeth_txwin_destroy(tx);

    /* RTO adapts and is clamped */
    c = cfg(8);
    tx = pmeth_txwin_create(&c);
    for (int i = 0; i < 50; i++) {
        pmeth_txwin_push(tx, 1, (uint64_t) i * 100 * MS, 0);
        pmeth_txwin_ack(tx, tx->next, 0, (uint64_t) i * 100 * MS + 50 * MS, NULL, NULL);
    }
    CHECK(tx->srtt > 45 * MS && tx->srtt < 55 * MS && pmeth_txwin_rto(tx) >= tx->srtt
              && pmeth_txwin_rto(tx) < 80 * MS,
          "srtt follows a steady 50 ms round trip (srtt %.1f ms, RTO %.1f ms)", tx->srtt / 1e6,
          pmeth_txwin_rto(tx) / 1e6);
    uint64_t steady = pmeth_txwin_rto(tx);
    for (int i = 0; i < 4; i++) {
        uint64_t t0 = 5000 * MS + (uint64_t) i * 300 * MS;
        pmeth_txwin_push(tx, 1, t0, 0);
        pmeth_txwin_ack(tx, tx->next, 0, t0 + (i % 2 ? 10 : 90) * MS, NULL, NULL);
    }
    CHECK(pmeth_txwin_rto(tx) > steady, "a jittery round trip (10/90 ms) raises the RTO through rttvar");
    for (int i = 0; i < 50; i++) {
        pmeth_txwin_push(tx, 1, 0, 0);
        pmeth_txwin_ack(tx, tx->next, 0, 1000, NULL, NULL);
    }
    CHECK(pmeth_txwin_rto(tx) == c.rto_min_ns, "a 1 us round trip: the RTO is clamped at rto_min");
    pmeth_txwin_destroy(tx);

    /* the timer costs nothing while nothing is due */
    c = cfg(4096);
    tx = filled(&c, 4096, 0);
    pmeth_txwin_ack(tx, 1, 0, 10 * US, NULL, NULL);
    uint64_t before = tx->slots_scanned;
    for (int i = 0; i < 10000; i++) {
        pmeth_txwin_due(tx, 20 * US + (uint64_t) i, due, 8);
    }
    CHECK(tx->slots_scanned - before <= 2,
          "window of 4096 full, 10000 due() calls before the deadline: %llu slots looked at",
          (unsigned long long) (tx->slots_scanned - before));
    /* after the expiry, calls look at what they resend, not the window */
    before = tx->slots_scanned;
    dl = pmeth_txwin_next_deadline(tx);
    k = pmeth_txwin_due(tx, dl, due, 8);
    pmeth_txwin_echo(tx, due[0].seq, due[0].xmit);
    pmeth_txwin_ack(tx, 2, 0, dl + 50 * US, NULL, NULL);    /* the probe got through */
    int sum = 0;
    uint64_t most = 0, idle = 0;
    int idle_calls = 0;
    for (int i = 0; i < 20; i++) {
        before = tx->slots_scanned;
        int got = pmeth_txwin_due(tx, dl + 60 * US, due, 8);
        sum += got;
        uint64_t cost = tx->slots_scanned - before;
        most = cost > most ? cost : most;
        if (got == 0 && idle_calls++ > 0) {
            idle += cost;       /* the first recomputes the deadline once */
        }
    }
    CHECK(k == 1 && sum == 65, "expiry: one probe; after its ack, the 65 lost frames within reach of the acks go "
          "(not all 4094), 8 per call");
    CHECK(most <= 2 * (PMETH_WINDOW_SACK_SPAN + 1) && idle == 0 && idle_calls > 5,
          "a call looks at %llu slots at most (within reach of the acks); calls with nothing due after that at none",
          (unsigned long long) most);
    pmeth_txwin_destroy(tx);

    /* a receiver that held frames and then denies holding the oldest one
     * (a forged or confused ack) must not leave it without a timer */
    c = cfg(8);
    tx = filled(&c, 4, 0);
    pmeth_txwin_ack(tx, 0, 0x7, 10, NULL, NULL);            /* 1, 2, 3 held */
    pmeth_txwin_ack(tx, 1, 0, 20, NULL, NULL);              /* 0 acked, 1 claimed missing */
    dl = pmeth_txwin_next_deadline(tx);
    k = pmeth_txwin_due(tx, dl, due, 8);
    CHECK(dl != UINT64_MAX && k == 1 && due[0].seq == 1, "a frame once selectively acked, then reported missing, is resent on timeout");
    pmeth_txwin_destroy(tx);
}

static void test_fast_retransmit(void)
{
    pmeth_window_config_t c = cfg(16);
    pmeth_txwin_due_t due[16];
    pmeth_txwin_t *tx = filled(&c, 8, 0);
    pmeth_txwin_ack(tx, 2, 0x1, 100 * US, NULL, NULL);      /* 2 missing, 3 held */
    pmeth_txwin_ack(tx, 2, 0x3, 100 * US, NULL, NULL);      /* 3, 4 held */
    for (int i = 0; i < 10; i++) {
        pmeth_txwin_ack(tx, 2, 0x3, 100 * US, NULL, NULL);  /* the same news, piggy-backed again */
    }
    CHECK(!pmeth_txwin_fast_pending(tx), "two frames held above a hole, told 11 times: not yet lost");
    pmeth_txwin_ack(tx, 2, 0x7, 100 * US, NULL, NULL);
    CHECK(pmeth_txwin_fast_pending(tx), "a third frame held above it: lost");
    int k = pmeth_txwin_due(tx, 100 * US, due, 8);
    CHECK(!pmeth_txwin_fast_pending(tx) && k == 1 && due[0].seq == 2 && due[0].fast,
          "frame 2 is due at once (before any timeout), once");
    pmeth_txwin_ack(tx, 2, 0xf, 100 * US, NULL, NULL);
    pmeth_txwin_ack(tx, 2, 0x1f, 100 * US, NULL, NULL);
    CHECK(pmeth_txwin_due(tx, 100 * US, due, 8) == 0, "not fast-retransmitted twice for one loss");
    uint64_t dl = pmeth_txwin_next_deadline(tx);
    k = pmeth_txwin_due(tx, dl, due, 8);
    CHECK(k == 1 && due[0].seq == 2 && !due[0].fast, "lost again: the timer resends it");
    pmeth_txwin_ack(tx, 2, 0x3f, dl, NULL, NULL);
    CHECK(pmeth_txwin_due(tx, dl, due, 8) == 0, "frames sent before its retransmission prove nothing about it");
    for (uintptr_t h = 9; h <= 11; h++) {
        pmeth_txwin_push(tx, h, dl + 10 * US, 0);
    }
    pmeth_txwin_ack(tx, 2, 0x1ff, dl + 60 * US, NULL, NULL);    /* 8, 9, 10 held too */
    k = pmeth_txwin_due(tx, dl + 60 * US, due, 8);
    CHECK(k == 1 && due[0].seq == 2 && due[0].fast,
          "three frames sent after its retransmission held: lost again, fast-retransmitted again");
    CHECK(pmeth_txwin_ack(tx, 11, 0, dl + 100 * US, NULL, NULL) == 9 && pmeth_txwin_empty(tx)
              && !pmeth_txwin_fast_pending(tx),
          "all acknowledged, nothing pending");
    pmeth_txwin_destroy(tx);

    /* two holes: each is lost once three frames above it are held */
    tx = filled(&c, 10, 0);
    pmeth_txwin_ack(tx, 0, 0x3a, 50 * US, NULL, NULL);      /* held: 2, 4, 5, 6; missing 0, 1, 3 */
    k = pmeth_txwin_due(tx, 50 * US, due, 8);
    CHECK(k == 3 && due[0].seq == 0 && due[1].seq == 1 && due[2].seq == 3,
          "holes 0, 1, 3 under held 2, 4, 5, 6: all three lost, resent oldest first");
    pmeth_txwin_destroy(tx);

    /* reordering by striping: a frame two places late is not taken as lost */
    tx = filled(&c, 8, 0);
    pmeth_txwin_ack(tx, 0, 0x1, 30 * US, NULL, NULL);
    pmeth_txwin_ack(tx, 0, 0x3, 31 * US, NULL, NULL);
    pmeth_txwin_ack(tx, 4, 0, 32 * US, NULL, NULL);         /* 0 arrives, then 3 */
    CHECK(!pmeth_txwin_fast_pending(tx) && pmeth_txwin_due(tx, 32 * US, due, 8) == 0,
          "frame 0 overtaken by two frames of other links: no spurious retransmit");
    pmeth_txwin_destroy(tx);

    /* striping: frames of a fast link overtake those of a slow one; only
     * frames of the same link overtaking show a loss */
    tx = striped(&c, 12, 0, 2);                             /* even seq: link 0, odd: link 1 */
    pmeth_txwin_ack(tx, 1, 0x15, 30 * US, NULL, NULL);      /* 0 in; held 2, 4, 6 (link 0) */
    pmeth_txwin_ack(tx, 1, 0x175, 31 * US, NULL, NULL);     /* and 8, 10 (link 0), 7 (link 1) */
    CHECK(!pmeth_txwin_fast_pending(tx), "frame 1 (slow link) overtaken by 5 frames of the fast link: not lost");
    pmeth_txwin_ack(tx, 1, 0x17f, 32 * US, NULL, NULL);     /* 3, 5 (link 1) held too */
    k = pmeth_txwin_due(tx, 32 * US, due, 8);
    CHECK(k == 1 && due[0].seq == 1 && due[0].link == 1 && due[0].fast,
          "three frames after it on its own link held: lost, resent at once (on link 1)");
    pmeth_txwin_destroy(tx);

    /* lanes: a receiver with a ring for small frames beside the large one
     * takes them out of order with large frames of the same link */
    tx = filled(&c, 12, 0);
    for (uint32_t seq = 0; seq < 12; seq++) {
        pmeth_txwin_set_lane(tx, seq, seq % 3 == 2);        /* 2, 5, 8, 11: small frames */
    }
    pmeth_txwin_ack(tx, 1, 0x249, 30 * US, NULL, NULL);     /* 0 in; held 2, 5, 8, 11 */
    CHECK(!pmeth_txwin_fast_pending(tx),
          "large frame 1 overtaken by the small frames 2, 5, 8, 11 of its link: not lost");
    pmeth_txwin_ack(tx, 1, 0x25f, 31 * US, NULL, NULL);     /* and the large 3, 4, 6 */
    k = pmeth_txwin_due(tx, 31 * US, due, 8);
    CHECK(k == 1 && due[0].seq == 1 && due[0].fast,
          "three large frames after it held: lost, resent at once");
    pmeth_txwin_set_lane(tx, 40, 1);
    pmeth_txwin_destroy(tx);

    c.fast_retransmit = 0;
    tx = filled(&c, 8, 0);
    pmeth_txwin_ack(tx, 0, 0x7f, 30 * US, NULL, NULL);
    CHECK(!pmeth_txwin_fast_pending(tx), "fast_retransmit 0: timeouts only");
    pmeth_txwin_destroy(tx);
}

static void test_receiver(void)
{
    pmeth_window_config_t c = cfg(8);
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    uintptr_t h;
    CHECK(pmeth_rxwin_next_deadline(rx) == UINT64_MAX && !pmeth_rxwin_ack_owed(rx), "idle: no ack owed");
    CHECK(pmeth_rxwin_accept(rx, 0, 0, 0) == PMETH_RX_NEW_IN_ORDER, "frame 0 in order");
    CHECK(pmeth_rxwin_accept(rx, 0, 0, 0) == PMETH_RX_DUPLICATE && pmeth_rxwin_ack_now(rx)
              && pmeth_rxwin_next_deadline(rx) == 0,
          "frame 0 again: duplicate, and an ack is owed at once");
    pmeth_rxwin_ack_sent(rx);
    CHECK(pmeth_rxwin_accept(rx, 2, 22, 0) == PMETH_RX_NEW_OUT_OF_ORDER && !pmeth_rxwin_ack_now(rx)
              && pmeth_rxwin_next_deadline(rx) == c.ack_delay_ns,
          "frame 2 before 1: held, acked with the delay (striping reorders all the time)");
    CHECK(pmeth_rxwin_accept(rx, 2, 22, 0) == PMETH_RX_DUPLICATE, "frame 2 again: duplicate of a held frame");
    CHECK(pmeth_rxwin_accept(rx, 3, 33, 0) == PMETH_RX_NEW_OUT_OF_ORDER, "frame 3 held");
    uint32_t cum;
    uint64_t sack;
    pmeth_rxwin_ack_fields(rx, &cum, &sack);
    CHECK(cum == 1 && sack == 0x3, "ack: next expected 1, selective bits for 2 and 3");
    CHECK(!pmeth_rxwin_pop(rx, &h), "nothing to pop while 1 is missing");
    pmeth_rxwin_ack_sent(rx);
    pmeth_rxwin_saw_resend(rx, 1, 1);
    uint32_t eseq;
    uint8_t exmit;
    CHECK(pmeth_rxwin_accept(rx, 1, 0, 0) == PMETH_RX_NEW_IN_ORDER && pmeth_rxwin_ack_now(rx)
              && pmeth_rxwin_echo(rx, &eseq, &exmit) && eseq == 1 && exmit == 1,
          "frame 1, resent, fills the gap: ack at once, echoing its transmission");
    CHECK(pmeth_rxwin_pop(rx, &h) && h == 22 && pmeth_rxwin_pop(rx, &h) && h == 33 && !pmeth_rxwin_pop(rx, &h),
          "the held frames come out in order");
    pmeth_rxwin_ack_fields(rx, &cum, &sack);
    CHECK(cum == 4 && sack == 0, "ack: next expected 4, nothing held");
    CHECK(pmeth_rxwin_accept(rx, 4 + 8, 0, 0) == PMETH_RX_OUT_OF_WINDOW, "a frame a window ahead: out of window");
    CHECK(pmeth_rxwin_accept(rx, 4 - 9, 0, 0) == PMETH_RX_OUT_OF_WINDOW
              && pmeth_rxwin_accept(rx, 4 - 8, 0, 0) == PMETH_RX_DUPLICATE,
          "a window behind: duplicate (acks may be lost); further: out of window");
    pmeth_rxwin_ack_sent(rx);
    CHECK(pmeth_rxwin_accept(rx, 4, 0, 1000) == PMETH_RX_NEW_IN_ORDER && !pmeth_rxwin_ack_due(rx, 1000)
              && pmeth_rxwin_ack_due(rx, 1000 + c.ack_delay_ns)
              && pmeth_rxwin_next_deadline(rx) == 1000 + c.ack_delay_ns,
          "one frame in order: the ack waits ack_delay (100 us)");
    CHECK(pmeth_rxwin_accept(rx, 5, 0, 50000) == PMETH_RX_NEW_IN_ORDER
              && pmeth_rxwin_next_deadline(rx) == 1000 + c.ack_delay_ns,
          "a second frame does not push the delayed ack back");
    pmeth_rxwin_ack_sent(rx);
    CHECK(!pmeth_rxwin_ack_owed(rx) && pmeth_rxwin_next_deadline(rx) == UINT64_MAX, "an ack sent clears the debt");
    /* teardown gives back every held handle */
    pmeth_rxwin_accept(rx, 8, 88, 0);
    pmeth_rxwin_accept(rx, 10, 100, 0);
    uintptr_t sum = 0;
    int nd = 0;
    while (pmeth_rxwin_drain(rx, &h)) {
        sum += h;
        nd++;
    }
    CHECK(nd == 2 && sum == 188 && rx->held == 0, "drain returns the held handles");
    pmeth_rxwin_destroy(rx);

    pmeth_window_config_t c4 = cfg(64);
    c4.ack_every = 4;
    rx = pmeth_rxwin_create(&c4);
    accept_run(rx, 0, 3);
    CHECK(!pmeth_rxwin_ack_now(rx), "3 frames, ack_every 4: no immediate ack");
    pmeth_rxwin_accept(rx, 3, 0, 0);
    CHECK(pmeth_rxwin_ack_now(rx), "the 4th: ack at once");
    pmeth_rxwin_destroy(rx);

    /* a cap below ack_every (a peer granted few frames) acks sooner; after the
     * ack goes out the count starts again; cap 0 lifts it */
    pmeth_window_config_t c45 = cfg(256);
    c45.ack_every = 45;
    rx = pmeth_rxwin_create(&c45);
    pmeth_rxwin_set_ack_cap(rx, 5);
    accept_run(rx, 0, 4);
    CHECK(!pmeth_rxwin_ack_now(rx), "4 frames, cap 5: no immediate ack");
    pmeth_rxwin_accept(rx, 4, 0, 0);
    CHECK(pmeth_rxwin_ack_now(rx), "the 5th under cap 5: ack at once");
    pmeth_rxwin_ack_sent(rx);
    pmeth_rxwin_set_ack_cap(rx, 0);
    accept_run(rx, 5, 44);
    CHECK(!pmeth_rxwin_ack_now(rx), "cap lifted: 44 frames, ack_every 45, no immediate ack");
    pmeth_rxwin_accept(rx, 49, 0, 0);
    CHECK(pmeth_rxwin_ack_now(rx) && pmeth_rxwin_ack_owed(rx), "the 45th: ack at once");
    pmeth_rxwin_destroy(rx);

    /* selective bits reach 64 frames past the cumulative ack, not further */
    pmeth_window_config_t c256 = cfg(256);
    rx = pmeth_rxwin_create(&c256);
    pmeth_rxwin_accept(rx, 1, 1, 0);
    pmeth_rxwin_accept(rx, 64, 64, 0);
    pmeth_rxwin_accept(rx, 65, 65, 0);
    pmeth_rxwin_ack_fields(rx, &cum, &sack);
    CHECK(cum == 0 && sack == (1ull | 1ull << 63), "held 1, 64 and 65 beyond 0: bits 0 and 63, 65 not shown");
    pmeth_rxwin_destroy(rx);
}

/* Every frame of a window, in a random order, some twice: the receiver pops
 * each once, in order; across the 2^32 wrap too. */
static bool permutation(uint32_t window, uint32_t start, uint64_t seed)
{
    rng = seed;
    pmeth_window_config_t c = cfg(window);
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    pmeth_rxwin_start_at(rx, start);
    uint32_t *order = malloc(window * sizeof(*order));
    for (uint32_t i = 0; i < window; i++) {
        order[i] = i;
    }
    bool ok = true;
    uint32_t delivered = 0;
    for (int round = 0; round < 3; round++) {
        for (uint32_t i = window - 1; i > 0; i--) {
            uint32_t j = (uint32_t) (rnd64() % (i + 1));
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        uint32_t first = delivered;
        for (uint32_t i = 0; i < window; i++) {
            uint32_t seq = start + first + order[i];
            for (int copy = 0; copy < 1 + (rnd() < 0.1); copy++) {
                pmeth_rx_verdict_t v = pmeth_rxwin_accept(rx, seq, first + order[i] + 1, 0);
                if (copy == 1) {
                    ok = ok && v == PMETH_RX_DUPLICATE;
                    continue;
                }
                if (v == PMETH_RX_NEW_IN_ORDER) {
                    ok = ok && first + order[i] == delivered;
                    delivered++;
                    uintptr_t h;
                    while (pmeth_rxwin_pop(rx, &h)) {
                        ok = ok && h == delivered + 1;
                        delivered++;
                    }
                } else {
                    ok = ok && v == PMETH_RX_NEW_OUT_OF_ORDER;
                }
            }
        }
        ok = ok && delivered == first + window && rx->held == 0;
    }
    free(order);
    pmeth_rxwin_destroy(rx);
    return ok;
}

/* The sender's bookkeeping agrees with its slots. */
static bool tx_consistent(const pmeth_txwin_t *tx)
{
    uint32_t nfast = 0, nsacked = 0;
    for (uint32_t seq = tx->base; seq != tx->next; seq++) {
        const pmeth_txslot_t *s = &tx->slot[seq & tx->mask];
        nfast += s->fast_due;
        nsacked += s->sacked;
        if (s->handle != seq + 1) {
            return false;               /* the adversary pushes handle = seq + 1 */
        }
    }
    return tx->next - tx->base <= tx->cfg.window && nfast == tx->nfast && nsacked == tx->nsacked;
}

/* An adversary's acks straight from the wire: any cumulative ack, any bitmap,
 * at any time.  The window must stay consistent, release only what it holds
 * and in order, and never resend more than asked. */
static bool adversary_tx(uint64_t seed, uint32_t window)
{
    rng = seed;
    pmeth_window_config_t c = cfg(window);
    pmeth_txwin_t *tx = pmeth_txwin_create(&c);
    uint32_t start = (uint32_t) rnd64();
    pmeth_txwin_start_at(tx, start);
    bool ok = true;
    uint64_t now = 0;
    pmeth_txwin_due_t due[16];
    next_release = start;           /* handles are seq + 1 */
    for (int step = 0; step < 200000 && ok; step++) {
        now += rnd64() % 8 ? rnd64() % (50 * US) : rnd64() % (5 * MS);
        unsigned what = (unsigned) (rnd64() % 8);
        if (what < 4 && pmeth_txwin_can_send(tx)) {
            uint32_t seq = tx->next;
            ok = pmeth_txwin_push(tx, seq + 1, now, (uint8_t) (rnd64() % 8)) == seq;
        } else if (what < 6) {
            /* mostly plausible acks that move little, sometimes anything at all */
            uint32_t inflight = tx->next - tx->base;
            uint32_t cum = rnd64() % 8 == 0 ? (uint32_t) rnd64()
                           : rnd64() % 4 == 0 ? tx->base + (uint32_t) (rnd64() % (inflight + 1))
                                              : tx->base + (inflight > 0 && rnd64() % 2);
            uint64_t sack = rnd64() & rnd64();
            uint32_t before = tx->base;
            sim_t dummy = {0};
            unsigned n = pmeth_txwin_ack(tx, cum, sack, now, sim_release, &dummy);
            ok = n == tx->base - before && dummy.released_ok == n;
        } else {
            unsigned max = 1 + (unsigned) (rnd64() % 16);
            int k = pmeth_txwin_due(tx, now, due, max);
            ok = k >= 0 && (unsigned) k <= max;
            for (int i = 0; i < k && ok; i++) {
                ok = !pmeth_seq_lt(due[i].seq, tx->base) && pmeth_seq_lt(due[i].seq, tx->next)
                     && due[i].handle == due[i].seq + 1;
            }
        }
        ok = ok && tx_consistent(tx) && pmeth_txwin_rto(tx) >= c.rto_min_ns
             && pmeth_txwin_rto(tx) <= c.rto_max_ns;
    }
    pmeth_txwin_destroy(tx);
    return ok;
}

/* Sequence numbers straight from the wire: anything.  What comes out of the
 * receiver is still each frame once, in order. */
static bool adversary_rx(uint64_t seed, uint32_t window)
{
    rng = seed;
    pmeth_window_config_t c = cfg(window);
    pmeth_rxwin_t *rx = pmeth_rxwin_create(&c);
    uint32_t start = (uint32_t) rnd64();
    pmeth_rxwin_start_at(rx, start);
    uint32_t expect = start;        /* the next seq ob1 must see */
    bool ok = true;
    for (int step = 0; step < 200000 && ok; step++) {
        uint64_t r = rnd64();
        uint32_t seq = r % 16 == 0 ? (uint32_t) rnd64()
                                   : rx->base - window + (uint32_t) (rnd64() % (3 * (uint64_t) window));
        pmeth_rx_verdict_t v = pmeth_rxwin_accept(rx, seq, seq + 1, 0);
        int32_t d = (int32_t) (seq - expect);
        switch (v) {
        case PMETH_RX_NEW_IN_ORDER:
            ok = seq == expect;
            expect++;
            break;
        case PMETH_RX_NEW_OUT_OF_ORDER:
            ok = d > 0 && (uint32_t) d < window;
            break;
        case PMETH_RX_DUPLICATE:
            ok = d < 0 ? d >= -(int32_t) window : (uint32_t) d < window;
            break;
        default:
            ok = d >= (int32_t) window || d < -(int32_t) window;
            break;
        }
        uintptr_t h;
        while (ok && pmeth_rxwin_pop(rx, &h)) {
            ok = (uint32_t) (h - 1) == expect;     /* handle = seq + 1 (it wraps with seq) */
            expect++;
        }
        uint32_t cum;
        uint64_t sack;
        pmeth_rxwin_ack_fields(rx, &cum, &sack);
        uint64_t want = 0;          /* the bitmap, from classify(): held = duplicate */
        for (uint32_t i = 0; i < 64 && i + 1 < window; i++) {
            want |= (uint64_t) (pmeth_rxwin_classify(rx, expect + 1 + i) == PMETH_RX_DUPLICATE) << i;
        }
        ok = ok && cum == expect && rx->base == expect && rx->held < window && sack == want;
    }
    pmeth_rxwin_destroy(rx);
    return ok;
}

/* Path health for apm: silent links, moving frames off a link. */
static void test_link_health(void)
{
    pmeth_window_config_t c = cfg(64);
    uint64_t t = 1000 * MS, since = 0;
    /* 8 frames over 2 links; link 1 dead: only link 0's frames are held */
    pmeth_txwin_t *tx = striped(&c, 8, t, 2);
    CHECK(!pmeth_txwin_link_silent(tx, 0, 1, &since) && !pmeth_txwin_link_silent(tx, 1, 1, &since),
          "link health: no link is silent before any timer probe");
    /* base (link 0) lost too: the receiver holds 2, 4, 6 (link 0) */
    nreleased = 0;
    pmeth_txwin_ack(tx, 0, 0x2a, t + 100 * US, on_release, NULL);  /* bits 1,3,5: seq 2,4,6 */
    pmeth_txwin_due_t due[16];
    uint64_t now = t;
    unsigned probes_on_1 = 0, probes_on_0 = 0;
    for (int round = 0; round < 6; round++) {
        now = pmeth_txwin_next_deadline(tx);
        int n = pmeth_txwin_due(tx, now, due, 16);
        for (int i = 0; i < n; i++) {
            if (!due[i].fast) {
                probes_on_1 += due[i].link == 1;
                probes_on_0 += due[i].link == 0;
            }
            if (due[i].link == 0) {     /* link 0 delivers: its frame is acked, held */
                pmeth_txwin_ack(tx, 0, 0x2a | (due[i].seq ? 1ull << (due[i].seq - 1) : 0), now + 50 * US,
                                on_release, NULL);
                if (due[i].seq == 0) {
                    pmeth_txwin_ack(tx, 1, 0x2a >> 1, now + 50 * US, on_release, NULL);
                }
            }
        }
    }
    CHECK(probes_on_1 >= 3 && pmeth_txwin_link_silent(tx, 1, 3, &since) && since > t
              && !pmeth_txwin_link_silent(tx, 0, 1, &since),
          "link health: timer probes on a dead link of two (%u there, %u on the live one) make it silent, "
          "the live one is not, though its acks keep the back-off low", probes_on_1, probes_on_0);
    /* the frames of link 1 (odd sequence numbers) move to link 0 */
    unsigned moved = pmeth_txwin_expire_link(tx, 1);
    CHECK(moved == 4 && !pmeth_txwin_link_silent(tx, 1, 1, &since) && pmeth_txwin_fast_pending(tx),
          "link health: expiring the dead link makes its 4 unacknowledged frames due at once (%u)", moved);
    int n = pmeth_txwin_due(tx, now + 1, due, 2);
    bool all_odd = n == 2;
    for (int i = 0; i < n; i++) {
        all_odd = all_odd && due[i].link == 1 && due[i].fast && due[i].seq % 2 == 1;
        pmeth_txwin_relink(tx, due[i].seq, 0);
    }
    int m = pmeth_txwin_due(tx, now + 2, due + 2, 16);
    for (int i = 2; i < 2 + m; i++) {
        all_odd = all_odd && due[i].fast && due[i].seq % 2 == 1;
        pmeth_txwin_relink(tx, due[i].seq, 0);
    }
    CHECK(all_odd && m == 2, "link health: they come out as fast resends within the cap (2 + %d)", m);
    /* relinked frames: an ack of them clears link 0, and a timeout now probes link 0 */
    nreleased = 0;
    pmeth_txwin_ack(tx, 8, 0, now + 3 * MS, on_release, NULL);
    CHECK(nreleased == 7 && pmeth_txwin_empty(tx), "link health: all acknowledged after the move (%u released)",
          nreleased);
    pmeth_txwin_relink(tx, 100, 3);     /* out of the window: ignored */
    CHECK(pmeth_txwin_empty(tx), "link health: relinking a frame not in the window changes nothing");
    pmeth_txwin_destroy(tx);

    /* an echoed probe clears its link */
    tx = filled(&c, 4, t);
    now = pmeth_txwin_next_deadline(tx);
    n = pmeth_txwin_due(tx, now, due, 4);
    now = pmeth_txwin_next_deadline(tx);
    n += pmeth_txwin_due(tx, now, due + 1, 4);
    bool silent2 = pmeth_txwin_link_silent(tx, 0, 2, &since);
    pmeth_txwin_echo(tx, due[1].seq, due[1].xmit);
    pmeth_txwin_ack(tx, 0, 0, now + 100 * US, on_release, NULL);
    CHECK(n == 2 && silent2 && !pmeth_txwin_link_silent(tx, 0, 1, &since),
          "link health: two unanswered probes make a link silent; an ack echoing the probe ends it");
    pmeth_txwin_destroy(tx);
}

int main(void)
{
    test_sender_basics();
    test_link_health();
    test_timeouts();
    test_fast_retransmit();
    test_receiver();

    CHECK(pmeth_seq_lt(0xfffffff0u, 5) && !pmeth_seq_lt(5, 0xfffffff0u) && !pmeth_seq_lt(7, 7),
          "serial comparison across 2^32");
    uint32_t wsizes[] = {8, 64, 4096};
    for (unsigned i = 0; i < 3; i++) {
        CHECK(permutation(wsizes[i], 0xffffffffu - wsizes[i] / 2, 99 + i),
              "window %u: 3 x %u frames in random order with 10%% duplicates, across 2^32: each popped once, in order",
              wsizes[i], wsizes[i]);
    }

    for (uint64_t seed = 1; seed <= 4; seed++) {
        uint32_t w = seed % 2 ? 64 : 1024;
        CHECK(adversary_tx(seed * 31337, w),
              "window %u, 200000 steps of forged acks (any cum, any bitmap), pushes and due(): consistent, "
              "releases in order, resends within the cap", w);
    }

    CHECK(adversary_rx(5, 64) && adversary_rx(6, 4096) && adversary_rx(7, 16) && adversary_rx(8, 128),
          "windows 16, 64, 128 and 4096, 200000 frames of arbitrary sequence numbers each: every verdict "
          "right, what pops is each frame once, in order, the selective bitmap shows exactly what is held");

    /* window full, then everything released: resend cap respected throughout */
    sim_t s = {.n = 2000, .window = 64, .start_seq = 0xffffff00u, .links = 1, .cap = 16, .seed = 7};
    CHECK(simulate(&s) && s.resends == 0, "2000 frames across the 2^32 wrap, clean channel: in order, once, no resends");

    /* the lossy channel, striped over links of unequal latency */
    struct { double l, d, r; uint32_t links, window; } ch[] = {
        {0.01, 0, 0, 1, 64},     {0.05, 0.02, 0.2, 2, 256}, {0.2, 0.05, 0.3, 6, 64},
        {0, 0.1, 0.5, 6, 1024},  {0.01, 0.01, 0, 6, 4096},  {0.1, 0, 0.1, 3, 128}};
    for (unsigned i = 0; i < sizeof(ch) / sizeof(ch[0]); i++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            s = (sim_t){.n = 6000, .window = ch[i].window, .start_seq = (uint32_t) (seed * 0x55555555u),
                        .links = ch[i].links, .cap = 16, .loss = ch[i].l, .dup = ch[i].d,
                        .reorder = ch[i].r, .seed = seed * 7919};
            bool ok = simulate(&s);
            CHECK(ok && s.max_due <= 16,
                  "6000 frames, W %u, %u links, loss %.0f%%, dup %.0f%%, reorder %.0f%%, seed %llu: each once, "
                  "in order in %.1f ms (resent %llu: %llu fast, %llu timeout; at most %llu per call)",
                  ch[i].window, ch[i].links, 100 * ch[i].l, 100 * ch[i].d, 100 * ch[i].r,
                  (unsigned long long) seed, s.end_ns / 1e6, (unsigned long long) s.resends, (unsigned long long) s.fast,
                  (unsigned long long) s.timeouts, (unsigned long long) s.max_due);
        }
    }
    /* a receiver descheduled for 4 ms of every 10 (past the 2 ms timer), no
     * loss: each stall costs the probes the timer sends while it lasts, not
     * the window (before the echo: every frame of the window went again) */
    s = (sim_t){.n = 200000, .window = 256, .links = 2, .cap = 16, .stall_every = 10 * MS,
                .stall_ns = 4 * MS, .seed = 99};
    bool ok = simulate(&s);
    uint64_t stalls = s.end_ns / (10 * MS);
    CHECK(ok && stalls >= 3 && s.resends <= 4 * stalls,
          "200000 frames to a receiver stalled 4 ms in every 10: in order, once; %llu resends over %llu "
          "stalls (at most 4 probes each)", (unsigned long long) s.resends, (unsigned long long) stalls);
    /* 1% loss: fast retransmit does the work, the timer rarely */
    s = (sim_t){.n = 20000, .window = 256, .links = 2, .cap = 16, .loss = 0.01, .seed = 4242};
    CHECK(simulate(&s) && s.fast > s.timeouts,
          "20000 frames at 1%% loss over 2 links: %llu fast retransmits, %llu timeouts",
          (unsigned long long) s.fast, (unsigned long long) s.timeouts);
    return tap_done();
}
