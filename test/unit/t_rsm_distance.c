/* The near/far decision from ack-load times (rsm_distance.h): one decision per
 * 15 samples, by their median, so a few slow loads (preemption, a contended
 * line) or fast ones do not flip it; far until measured; threshold 0 = always
 * far; the second, lower threshold that keeps two copies for the closest
 * receivers only (near for stores, single copy in between); the margin that
 * keeps a near receiver near an eighth past the threshold; a change only on two
 * medians in a row; the shorter eager limit's band; sets taken under load,
 * which decide only until a quiet one has; and the cycle counter calibration
 * against the clock. */
#include <string.h>
#include <time.h>

#include "rsm_distance.h"
#include "tap.h"

static bool feed2(rsm_distance_t *d, const uint32_t *v, unsigned n, uint32_t far,
                  uint32_t two_copy)
{
    bool decided = false;
    for (unsigned i = 0; i < n; i++) {
        decided = rsm_distance_add(d, v[i], false, far, two_copy);
    }
    return decided;
}

/* the two-copy threshold at the far one: near is also two copies */
static bool feed(rsm_distance_t *d, const uint32_t *v, unsigned n, uint32_t far)
{
    bool decided = false;
    for (unsigned i = 0; i < n; i++) {
        decided = rsm_distance_add(d, v[i], false, far, far);
    }
    return decided;
}

/* N samples at V, the first LOADED of them taken under load */
static bool feed_load(rsm_distance_t *d, uint32_t v, unsigned n, unsigned loaded)
{
    bool decided = false;
    for (unsigned i = 0; i < n; i++) {
        decided = rsm_distance_add(d, v, i < loaded, 110, 60);
    }
    return decided;
}

/* 8 of 15 samples at V + i (i = 0..7, the median V), the rest fast */
static uint32_t *fill(uint32_t *v, uint32_t at)
{
    for (unsigned i = 0; i < RSM_DIST_SAMPLES; i++) {
        v[i] = i < 8 ? at + i : 50;
    }
    return v;
}

static void fill_all(uint32_t *v, uint32_t at)
{
    for (unsigned i = 0; i < RSM_DIST_SAMPLES; i++) {
        v[i] = at;
    }
}

int main(void)
{
    rsm_distance_t d;
    memset(&d, 0, sizeof(d));
    CHECK(!d.near && !d.two_copy && d.decisions == 0,
          "a zeroed (unmeasured) receiver counts as far, single copy");

    /* near: 100-cycle loads with 7 outliers of 5000 (under half of 15) */
    uint32_t mostly_near[RSM_DIST_SAMPLES];
    for (unsigned i = 0; i < RSM_DIST_SAMPLES; i++) {
        mostly_near[i] = i % 2 ? 5000 : 100 + i;
    }
    CHECK(!feed(&d, mostly_near, RSM_DIST_SAMPLES - 1, 300) && d.decisions == 0 && !d.near,
          "no decision before %d samples", RSM_DIST_SAMPLES);
    CHECK(rsm_distance_add(&d, mostly_near[RSM_DIST_SAMPLES - 1], false, 300, 300) && d.decisions == 1,
          "the %dth sample decides", RSM_DIST_SAMPLES);
    CHECK(d.near && d.median == 114, "7 slow outliers of 15 do not make it far (median %u)",
          d.median);

    /* a near receiver turns far an eighth past the threshold (300 + 300 / 8 =
     * 337), and only when two medians in a row say so */
    uint32_t mostly_far[RSM_DIST_SAMPLES];
    CHECK(feed(&d, fill(mostly_far, 300), RSM_DIST_SAMPLES, 300) && d.near && d.median == 300,
          "near, then 8 of 15 at the threshold: still near (median %u)", d.median);
    CHECK(feed(&d, fill(mostly_far, 336), RSM_DIST_SAMPLES, 300) && d.near && d.median == 336,
          "near, then a median of 336 (under 300 and an eighth): still near");
    CHECK(feed(&d, fill(mostly_far, 337), RSM_DIST_SAMPLES, 300) && d.near && d.median == 337,
          "near, then one median of 337: still near (two in a row needed)");
    CHECK(feed(&d, mostly_far, RSM_DIST_SAMPLES, 300) && !d.near,
          "and a second one: far (median %u)", d.median);
    CHECK(feed(&d, fill(mostly_far, 300), RSM_DIST_SAMPLES, 300) && !d.near,
          "far, then 8 of 15 at the threshold: stays far (median %u)", d.median);
    CHECK(feed(&d, mostly_near, RSM_DIST_SAMPLES, 300) && !d.near,
          "one near median after far: still far");
    CHECK(feed(&d, mostly_near, RSM_DIST_SAMPLES, 300) && d.near && d.decisions == 8,
          "and a second one: near again (the peer moved closer)");
    memset(&d, 0, sizeof(d));
    CHECK(feed(&d, fill(mostly_far, 300), RSM_DIST_SAMPLES, 300) && !d.near,
          "an unmeasured receiver at the threshold: far at the first decision (the margin "
          "only keeps a near one)");
    memset(&d, 0, sizeof(d));
    CHECK(feed(&d, mostly_near, RSM_DIST_SAMPLES, 300) && d.near,
          "an unmeasured receiver below it: near at the first decision");
    memset(&d, 0, sizeof(d));
    for (unsigned i = 0; i < RSM_DIST_SAMPLES; i++) {
        mostly_far[i] = UINT32_MAX - 1;
    }
    /* three decisions: a wrapped margin would say far twice in a row from the second */
    CHECK(feed(&d, mostly_far, RSM_DIST_SAMPLES, UINT32_MAX) && d.near
              && feed(&d, mostly_far, RSM_DIST_SAMPLES, UINT32_MAX) && d.near
              && feed(&d, mostly_far, RSM_DIST_SAMPLES, UINT32_MAX) && d.near,
          "the largest threshold does not wrap with its eighth");

    /* three distances: two copies below 60, ordinary stores below 130, else far;
     * each value held for two decisions */
    uint32_t at[RSM_DIST_SAMPLES];
    const struct {
        uint32_t cycles;
        bool near, two_copy;
        const char *what;
    } band[] = {{40, true, true, "40 (shared cache, fast): ordinary stores, two copies"},
                {59, true, true, "59: still two copies"},
                {60, true, false, "60: ordinary stores, single copy"},
                {95, true, false, "95 (one large die): ordinary stores, single copy"},
                {145, true, false, "145 after near: ordinary stores still (under 130 + 130 / 8)"},
                {146, false, false, "146: streaming, single copy"},
                {130, false, false, "130 after far: streaming"},
                {160, false, false, "160 (across dies): streaming, single copy"},
                {40, true, true, "and back to 40: two copies again"}};
    for (unsigned b = 0; b < sizeof(band) / sizeof(band[0]); b++) {
        fill_all(at, band[b].cycles);
        CHECK(feed2(&d, at, RSM_DIST_SAMPLES, 130, 60) && feed2(&d, at, RSM_DIST_SAMPLES, 130, 60)
                  && d.near == band[b].near && d.two_copy == band[b].two_copy,
              "%s (near %d, two copies %d)", band[b].what, d.near, d.two_copy);
    }
    bool kept = true;
    for (unsigned k = 0; k < 12; k++) {     /* 40, 160, 40, 160, ...: never two alike in a row */
        fill_all(at, k % 2 ? 160 : 40);
        kept = feed2(&d, at, RSM_DIST_SAMPLES, 130, 60) && d.near && d.two_copy && kept;
    }
    CHECK(kept, "medians alternating between 40 and 160 change nothing (still two copies)");
    fill_all(at, 40);
    CHECK(feed2(&d, at, RSM_DIST_SAMPLES, 130, 0) && feed2(&d, at, RSM_DIST_SAMPLES, 130, 0)
              && d.near && !d.two_copy,
          "two-copy threshold 0: single copy even for the closest");

    /* the shorter eager limit: measured, single copy, lines under its threshold;
     * the answer too changes on two medians in a row */
    rsm_distance_t e;
    memset(&e, 0, sizeof(e));
    bool short_eager = rsm_distance_short_eager(&e, 130, false);
    CHECK(!short_eager, "an unmeasured receiver keeps the full eager limit");
    const struct {
        uint32_t cycles;
        bool short_eager;
        const char *what;
    } eager[] = {{40, false, "40 (two copies): full eager limit"},
                 {60, true, "60 (single copy, ordinary stores): short"},
                 {115, true, "115 (single copy): short below the threshold"},
                 {130, false, "130: full again at the threshold"},
                 {160, false, "160 (across dies): full"}};
    for (unsigned b = 0; b < sizeof(eager) / sizeof(eager[0]); b++) {
        fill_all(at, eager[b].cycles);
        bool once = feed2(&e, at, RSM_DIST_SAMPLES, 110, 60);
        short_eager = rsm_distance_short_eager(&e, 130, short_eager);
        once = once && feed2(&e, at, RSM_DIST_SAMPLES, 110, 60);
        short_eager = rsm_distance_short_eager(&e, 130, short_eager);
        CHECK(once && short_eager == eager[b].short_eager, "%s", eager[b].what);
    }
    fill_all(at, 95);
    (void) feed2(&e, at, RSM_DIST_SAMPLES, 110, 60);
    short_eager = rsm_distance_short_eager(&e, 130, short_eager);
    CHECK(!short_eager, "one median of 95 after 160: still the full limit");
    (void) feed2(&e, at, RSM_DIST_SAMPLES, 110, 60);
    short_eager = rsm_distance_short_eager(&e, 130, short_eager);
    CHECK(short_eager, "a second one: short");
    kept = true;
    for (unsigned k = 0; k < 12; k++) {     /* 95, 140, 95, 140, ...: short stays */
        fill_all(at, k % 2 ? 95 : 140);
        (void) feed2(&e, at, RSM_DIST_SAMPLES, 110, 60);
        short_eager = rsm_distance_short_eager(&e, 130, short_eager);
        kept = kept && short_eager;
    }
    CHECK(kept, "medians alternating between 95 and 140 keep the short limit");
    CHECK(!rsm_distance_short_eager(&e, 0, true), "threshold 0: never short");

    /* load: thresholds far 110, two copies 60, short eager 130 (as above) */
    rsm_distance_t l;
    memset(&l, 0, sizeof(l));
    CHECK(feed_load(&l, 200, RSM_DIST_SAMPLES, RSM_DIST_SAMPLES) && !l.near
              && feed_load(&l, 90, RSM_DIST_SAMPLES, RSM_DIST_SAMPLES) && !l.near
              && feed_load(&l, 90, RSM_DIST_SAMPLES, RSM_DIST_SAMPLES) && l.near
              && l.loaded_sets == 0 && l.quiet_decisions == 0,
          "before any quiet set, loaded sets decide as quiet ones (far at 200, near after two "
          "at 90)");
    CHECK(feed_load(&l, 90, RSM_DIST_SAMPLES, RSM_DIST_SAMPLES / 2) && l.quiet_decisions == 1,
          "a set with %d of %d samples loaded is quiet, and decides", RSM_DIST_SAMPLES / 2,
          RSM_DIST_SAMPLES);
    bool still = true;
    for (unsigned k = 0; k < 6; k++) {      /* far, far, far, ...: each set mostly loaded */
        still = !feed_load(&l, k % 2 ? 400 : 200, RSM_DIST_SAMPLES, RSM_DIST_SAMPLES / 2 + 1)
                && still && l.near && !l.two_copy && l.median == 90;
    }
    CHECK(still && l.loaded_sets == 6 && l.decisions == 4,
          "after a quiet decision, 6 loaded sets at 200-400 decide nothing (near, median 90; "
          "loaded_sets %u, decisions %u)", l.loaded_sets, l.decisions);
    bool se = rsm_distance_short_eager(&l, 130, true);
    CHECK(se, "and the short eager limit stays (quiet median 90)");
    still = true;
    for (unsigned k = 0; k < 2; k++) {      /* nor do loaded ones that read near */
        still = !feed_load(&l, 40, RSM_DIST_SAMPLES, RSM_DIST_SAMPLES) && still && !l.two_copy;
    }
    CHECK(still && l.loaded_sets == 8, "loaded sets at 40 do not turn it to two copies either");
    CHECK(feed_load(&l, 200, RSM_DIST_SAMPLES, 0) && l.near
              && feed_load(&l, 200, RSM_DIST_SAMPLES, 0) && !l.near && l.median == 200,
          "quiet sets still move it: far after two at 200 (the host moved the cores)");
    memset(&l, 0, sizeof(l));
    CHECK(!feed_load(&l, 90, RSM_DIST_SAMPLES - 3, 0) && feed_load(&l, 90, 3, 3)
              && l.quiet_decisions == 1,
          "the samples of one set count together: 12 quiet and 3 loaded make a quiet set");

    /* the rank's load, for the eager limit: two samples in a row change it */
    uint8_t bits = 0;
    bool under = false;
    under = rsm_load_add(&bits, true, under);
    CHECK(!under, "one loaded sample: not under load yet");
    under = rsm_load_add(&bits, true, under);
    CHECK(under, "two in a row: under load");
    under = rsm_load_add(&bits, false, under);
    under = rsm_load_add(&bits, true, under);
    under = rsm_load_add(&bits, false, under);
    CHECK(under, "quiet, loaded, quiet: still under load (never two quiet in a row)");
    under = rsm_load_add(&bits, false, under);
    CHECK(!under, "two quiet in a row: no longer");

    /* threshold 0: never near */
    memset(&d, 0, sizeof(d));
    CHECK(feed(&d, mostly_near, RSM_DIST_SAMPLES, 0) && !d.near
              && feed(&d, mostly_near, RSM_DIST_SAMPLES, 0) && !d.near,
          "threshold 0: always far");

    /* calibration: cycles per 1000 ns is the counter's rate, checked over 20 ms */
    uint32_t per_us = rsm_cycles_for_ns(1000);
    if (RSM_HAVE_CYCLES) {
        struct timespec a, b, pause = {.tv_sec = 0, .tv_nsec = 20000000};
        clock_gettime(CLOCK_MONOTONIC, &a);
        uint64_t c0 = rsm_cycles();
        nanosleep(&pause, NULL);
        clock_gettime(CLOCK_MONOTONIC, &b);
        uint64_t c1 = rsm_cycles();
        double ns = (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
        double want = (double) (c1 - c0) / ns * 1000.0;
        CHECK(per_us > 0 && per_us > want * 0.95 && per_us < want * 1.05,
              "cycles per us: calibrated %u, over 20 ms %.0f", per_us, want);
    } else {
        CHECK(per_us == 0, "no cycle counter: calibration gives 0 (receivers stay far)");
    }
    CHECK(rsm_cycles_for_ns(0) == 0, "0 ns: 0 cycles (the 'always far' setting)");
    CHECK(rsm_cycles_scale(2600, 100) == 260 && rsm_cycles_scale(2600, 0) == 0
              && rsm_cycles_scale(0, 100) == 0 && rsm_cycles_scale(2600, 4294967295u) == UINT32_MAX
              && rsm_cycles_scale(1, 1) == 1,
          "thresholds scaled from one calibration (260 cycles for 100 ns at 2.6 GHz; 0 stays 0; "
          "clamped; never rounded to 0)");
    return tap_done();
}
