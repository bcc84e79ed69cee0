/* pmeth's delay limit (pmeth_pace.h): a sender on a simulated path whose
 * round trip grows with what it keeps queued.  The limit must drain a
 * standing queue to about the target without starving the path, leave a fast
 * path (no queue worth the name) alone, ignore single late samples, grow back
 * and lift itself when the queue is gone, and relearn a floor that moved. */
#include <stdlib.h>
#include <string.h>

#include "pmeth_pace.h"
#include "tap.h"

#define US 1000ull
#define MS 1000000ull

/* A path: a frame takes SERIAL ns to leave the bottleneck, the round trip
 * without a queue is BASE ns, and the sender keeps min(limit, CAP) frames in
 * flight (it always has data), starting as the BTL does with two (a grant's
 * floor) and one more per ack.  What exceeds the path's own capacity waits in
 * the bottleneck's queue. */
typedef struct path {
    uint64_t serial, base;
    uint32_t cap;
    uint64_t now;
    uint64_t srtt;
    uint64_t sent, time_busy;           /* frames acked; time the bottleneck was busy */
    uint64_t last_rtt;
    uint32_t ramp;                      /* frames the sender has had time to send */
    uint64_t offset;                    /* the receiver's clock ahead of the sender's (the
                                           samples are one-way delays: only changes count) */
} path_t;

static uint32_t in_flight(const pmeth_pace_t *p, const path_t *l)
{
    uint32_t lim = pmeth_pace_limit(p);
    uint32_t n = lim < l->cap ? lim : l->cap;
    uint32_t ramp = l->ramp > 2 ? l->ramp : 2;
    return n < ramp ? n : ramp;
}

/* One ack: the one-way delay it reports, the time it takes. */
static void step(pmeth_pace_t *p, const pmeth_pace_config_t *cfg, path_t *l, uint64_t extra)
{
    uint32_t n = in_flight(p, l);
    uint64_t bdp = l->base / l->serial + 1;             /* frames the path holds */
    uint64_t queue = n > bdp ? (n - bdp) * l->serial : 0;
    uint64_t rtt = l->base + queue + extra;
    uint64_t one_way = (l->offset ? l->offset : 1000000000ull) + l->base / 2 + queue + extra;
    /* with fewer than bdp frames in flight the bottleneck idles part of the time */
    uint64_t gap = n >= bdp ? l->serial : (l->base + l->serial) / n;
    l->now += gap;
    l->time_busy += l->serial;
    l->sent++;
    l->srtt = l->srtt == 0 ? rtt : (7 * l->srtt + rtt) / 8;
    l->last_rtt = rtt;
    l->ramp++;
    (void) pmeth_pace_sample(p, cfg, one_way, l->srtt, n, l->cap, l->now);
}

/* The default configuration and a sender that has measured nothing yet. */
static void fresh(pmeth_pace_config_t *cfg, pmeth_pace_t *p)
{
    pmeth_pace_config_init(cfg);
    pmeth_pace_init(p, 0);
}

static void run(pmeth_pace_t *p, const pmeth_pace_config_t *cfg, path_t *l, uint64_t until)
{
    while (l->now < until) {
        step(p, cfg, l, 0);
    }
}

static void test_off(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    cfg.target_ns = 0;
    path_t l = {.serial = 72 * US, .base = 100 * US, .cap = 170};
    run(&p, &cfg, &l, 200 * MS);
    CHECK(pmeth_pace_limit(&p) == PMETH_PACE_NONE && p.cuts == 0,
          "target 0: no delay limit, whatever the queue (%llu us)",
          (unsigned long long) l.last_rtt / 1000);
}

/* 1 Gbit/s, 9000-byte frames, 100 us without a queue, a grant of 170 frames
 * (a switch port's worth on six links): 12 ms of queue left alone. */
static void test_standing_queue(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    /* the clocks an hour apart */
    path_t l = {.serial = 72 * US, .base = 100 * US, .cap = 170, .offset = 3600000 * MS};
    CHECK(pmeth_pace_limit(&p) == PMETH_PACE_NONE, "a sender starts without a delay limit");
    run(&p, &cfg, &l, 100 * MS);
    CHECK(p.cuts > 0 && pmeth_pace_limit(&p) < 170, "a standing queue lowers the limit (%u frames, "
          "%llu cuts)", pmeth_pace_limit(&p), (unsigned long long) p.cuts);
    /* from here on: the queue stays near the target, the path stays busy */
    uint64_t worst = 0, t0 = l.now, sent0 = l.sent;
    while (l.now < t0 + 500 * MS) {
        step(&p, &cfg, &l, 0);
        worst = l.last_rtt > worst ? l.last_rtt : worst;
    }
    double busy = (double) (l.sent - sent0) * (double) l.serial / (double) (l.now - t0);
    CHECK(worst <= l.base + 2 * cfg.target_ns + l.serial,
          "the queue stays within twice the target (round trip at most %llu us, floor %llu us)",
          (unsigned long long) worst / 1000, (unsigned long long) l.base / 1000);
    CHECK(busy >= 0.97, "and the path stays busy: %.1f%% of the time", 100.0 * busy);
    CHECK(pmeth_pace_limit(&p) >= cfg.min_frames
              && pmeth_pace_floor(&p) == l.offset + l.base / 2 && p.rebases == 0,
          "the limit keeps the floor it measured (the offset + %llu us)",
          (unsigned long long) (pmeth_pace_floor(&p) - l.offset) / 1000);
}

/* A fast path (10 us a frame): the whole grant is a queue below the target. */
static void test_fast_path(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    path_t l = {.serial = 1 * US, .base = 40 * US, .cap = 170};
    run(&p, &cfg, &l, 200 * MS);
    CHECK(pmeth_pace_limit(&p) == PMETH_PACE_NONE && p.cuts == 0,
          "a fast path whose grant queues %llu us: no delay limit",
          (unsigned long long) (l.last_rtt - l.base) / 1000);
}

/* Single late samples (the peer descheduled for 2 ms now and then) do not cut
 * the limit: only a queue that stands a whole round does. */
static void test_late_samples(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    path_t l = {.serial = 5 * US, .base = 40 * US, .cap = 40};
    uint64_t seed = 7;
    for (int i = 0; i < 200000; i++) {
        uint64_t extra = tap_xorshift64(&seed) % 50 == 0 ? 2 * MS : 0;
        step(&p, &cfg, &l, extra);
    }
    CHECK(p.cuts == 0 && pmeth_pace_limit(&p) == PMETH_PACE_NONE,
          "one late sample in 50: no cut (%llu cuts)", (unsigned long long) p.cuts);
}

/* The queue goes (the other direction stopped, a second link joined): the
 * limit grows back and is lifted once it reaches the grant. */
static void test_grow_back(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    path_t l = {.serial = 72 * US, .base = 100 * US, .cap = 170};
    run(&p, &cfg, &l, 100 * MS);
    uint32_t cut = pmeth_pace_limit(&p);
    l.serial = 2 * US;                  /* the path is now 36 times faster */
    run(&p, &cfg, &l, 300 * MS);
    CHECK(cut < 170 && pmeth_pace_limit(&p) == PMETH_PACE_NONE && p.lifts >= 1,
          "a faster path: the limit grows from %u frames back to none (%llu lifts)", cut,
          (unsigned long long) p.lifts);
}

/* The floor moves up (the path changed to a longer one): the queue that
 * stands even at the least in flight is taken for the path's own, and the
 * limit grows back to cover it. */
static void test_floor_moves(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    path_t l = {.serial = 72 * US, .base = 100 * US, .cap = 170};
    run(&p, &cfg, &l, 50 * MS);
    l.base = 3 * MS;                    /* 42 frames in flight just to fill the path */
    run(&p, &cfg, &l, 250 * MS);
    CHECK(pmeth_pace_floor(&p) >= 1000 * MS + 3 * MS / 2 && p.rebases >= 1,
          "the floor moves to the new path's (the offset + %llu us)",
          (unsigned long long) (pmeth_pace_floor(&p) - 1000 * MS) / 1000);
    uint64_t t0 = l.now, sent0 = l.sent;
    run(&p, &cfg, &l, t0 + 300 * MS);
    double busy = (double) (l.sent - sent0) * (double) l.serial / (double) (l.now - t0);
    CHECK(busy >= 0.97 && in_flight(&p, &l) >= l.base / l.serial,
          "and the limit covers it again: %u frames in flight, path busy %.1f%%",
          in_flight(&p, &l), 100.0 * busy);
}

/* However long the queue, the limit stays at or above the configured least,
 * and a cut at most halves it. */
static void test_bounds(void)
{
    pmeth_pace_config_t cfg;
    pmeth_pace_t p;
    fresh(&cfg, &p);
    cfg.min_frames = 3;
    uint64_t now = 0;
    /* the first round sets a floor of 10 us */
    (void) pmeth_pace_sample(&p, &cfg, 10 * US, 10 * US, 64, 64, now);
    now += cfg.round_min_ns;
    (void) pmeth_pace_sample(&p, &cfg, 10 * US, 10 * US, 64, 64, now);
    CHECK(pmeth_pace_limit(&p) == PMETH_PACE_NONE, "rounds at the floor: no limit");
    bool halved_at_most = true;
    uint32_t before = 64, least = PMETH_PACE_NONE;
    for (int i = 0; i < 50; i++) {
        now += 100 * MS;
        (void) pmeth_pace_sample(&p, &cfg, 100 * MS, 100 * MS, 64, 64, now);
        uint32_t lim = pmeth_pace_limit(&p);
        if (lim < before / 2) {
            halved_at_most = false;
        }
        least = lim < least ? lim : least;
        before = lim;
    }
    CHECK(halved_at_most, "each round at most halves the limit");
    CHECK(least == 3 && p.rebases == 1 && pmeth_pace_floor(&p) == 100 * MS
              && pmeth_pace_limit(&p) == PMETH_PACE_NONE,
          "it stops at the least, 3 frames (%u); the queue that stands even so is taken for "
          "the path's own, and the limit grows back", least);
}

int main(void)
{
    test_off();
    test_standing_queue();
    test_fast_path();
    test_late_samples();
    test_grow_back();
    test_floor_moves();
    test_bounds();
    return tap_done();
}
