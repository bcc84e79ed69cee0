/* Which answers to path migration's probes count (pmeth_pathprobe.h): a load
 * only by an answer to one of its own probes, health only by an answer to a
 * probe of the round now open; late answers (to a load given up, to a round
 * that failed or was already answered, to a probe from before the path failed
 * again) and serials never sent count for nothing.  The fixed cases, then a
 * seeded random run against a model that counts serials in 64 bits (no wrap),
 * started just below the 32-bit wrap. */
#include <stdlib.h>
#include <string.h>

#include "pmeth_pathprobe.h"
#include "tap.h"

static void fixed_cases(void)
{
    pmeth_pathprobe_t b;
    pmeth_pathprobe_init(&b, 1);
    CHECK(pmeth_pathprobe_next(&b) == 1, "the first serial is the one given to init");

    /* a load and its own answer */
    pmeth_pathprobe_init(&b, 1);
    pmeth_pathprobe_load_begin(&b);
    uint32_t l1 = pmeth_pathprobe_next(&b);
    CHECK(!pmeth_pathprobe_load_answer(&b, l1 + 1), "load: a serial never sent counts for nothing");
    CHECK(pmeth_pathprobe_load_answer(&b, l1), "load: the answer to its probe confirms it");
    CHECK(!pmeth_pathprobe_load_answer(&b, l1), "load: a second answer to it counts no more");

    /* a load given up; the late answer to its probe does not confirm the next one */
    pmeth_pathprobe_init(&b, 1);
    pmeth_pathprobe_load_begin(&b);
    uint32_t a1 = pmeth_pathprobe_next(&b), a2 = pmeth_pathprobe_next(&b);
    (void) pmeth_pathprobe_next(&b);
    pmeth_pathprobe_load_end(&b);
    CHECK(!pmeth_pathprobe_load_answer(&b, a2), "load: given up, its answers count for nothing");
    pmeth_pathprobe_load_begin(&b);
    CHECK(!pmeth_pathprobe_load_answer(&b, a1), "load: before its first probe, nothing counts");
    uint32_t b1 = pmeth_pathprobe_next(&b);
    CHECK(!pmeth_pathprobe_load_answer(&b, a2),
          "load: the late answer to an earlier load's probe does not confirm the next");
    CHECK(pmeth_pathprobe_load_answer(&b, b1), "load: its own probe's answer does");
    pmeth_pathprobe_load_begin(&b);
    uint32_t c1 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_load_begin(&b);                 /* apm asked for another load at once */
    uint32_t d1 = pmeth_pathprobe_next(&b);
    CHECK(!pmeth_pathprobe_load_answer(&b, c1), "load: a load replaced before its answer came");
    CHECK(pmeth_pathprobe_load_answer(&b, d1), "load: the load that replaced it");

    /* health: a round of two probes; one answer ends it */
    pmeth_pathprobe_init(&b, 1);
    uint32_t h1 = pmeth_pathprobe_next(&b);
    CHECK(!pmeth_pathprobe_health_answer(&b, 0, h1), "health: no round open, nothing counts");
    pmeth_pathprobe_health_sent(&b, 0, h1, 0);
    CHECK(pmeth_pathprobe_health_open(&b, 0) && !pmeth_pathprobe_health_open(&b, 1),
          "health: the probe opened a round on its path only");
    uint32_t h2 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 0, h2, 0);
    CHECK(!pmeth_pathprobe_health_answer(&b, 1, h2), "health: an answer for another path's round");
    CHECK(pmeth_pathprobe_health_answer(&b, 0, h2),
          "health: the answer to the round's second probe counts (a slow answer to the first "
          "is covered)");
    CHECK(!pmeth_pathprobe_health_open(&b, 0), "health: and ends the round");
    CHECK(!pmeth_pathprobe_health_answer(&b, 0, h1), "health: the first probe's late answer counts no more");
    uint32_t h3 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 0, h3, 0);
    CHECK(!pmeth_pathprobe_health_answer(&b, 0, h1) && !pmeth_pathprobe_health_answer(&b, 0, h2),
          "health: answers from the last round do not count for the next (one round, one answer)");
    CHECK(pmeth_pathprobe_health_answer(&b, 0, h3), "health: the new round's probe does");

    /* health: a round that failed; its late answer does not count for the next */
    pmeth_pathprobe_init(&b, 1);
    uint32_t f1 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 2, f1, 0);
    pmeth_pathprobe_health_failed(&b, 2);
    CHECK(!pmeth_pathprobe_health_open(&b, 2), "health: a failed probe ends its round");
    uint32_t f2 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 2, f2, 0);
    CHECK(!pmeth_pathprobe_health_answer(&b, 2, f1),
          "health: the late answer to the probe counted as failed does not count");
    CHECK(pmeth_pathprobe_health_answer(&b, 2, f2), "health: the next probe's does");

    /* the case the round fixes: two probes out, the first answered; the path fails
     * again by other means (acks lost, link down) and a new round opens; the second
     * probe's answer, from before the failure, arrives late */
    pmeth_pathprobe_init(&b, 1);
    uint32_t g1 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 1, g1, 0);
    uint32_t g2 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 1, g2, 0);
    CHECK(pmeth_pathprobe_health_answer(&b, 1, g1), "health: a first answer");
    uint32_t g3 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 1, g3, 0);
    CHECK(!pmeth_pathprobe_health_answer(&b, 1, g2),
          "health: an answer to a probe sent before the path failed again does not count");
    CHECK(pmeth_pathprobe_health_open(&b, 1), "health: the round stays open");

    /* a load and health rounds at once do not take each other's answers */
    pmeth_pathprobe_init(&b, 1);
    uint32_t x1 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 3, x1, 0);
    pmeth_pathprobe_load_begin(&b);
    uint32_t x2 = pmeth_pathprobe_next(&b);
    CHECK(!pmeth_pathprobe_load_answer(&b, x1), "mixed: a health probe's answer confirms no load");
    CHECK(pmeth_pathprobe_health_answer(&b, 3, x1) && pmeth_pathprobe_load_answer(&b, x2),
          "mixed: each counts its own");

    /* a round is timed from its first probe, not its last: probes go every
     * interval, so the last one is never three intervals old */
    pmeth_pathprobe_init(&b, 1);
    pmeth_pathprobe_health_sent(&b, 0, pmeth_pathprobe_next(&b), 100);
    pmeth_pathprobe_health_sent(&b, 0, pmeth_pathprobe_next(&b), 110);
    pmeth_pathprobe_health_sent(&b, 0, pmeth_pathprobe_next(&b), 120);
    CHECK(!pmeth_pathprobe_health_expired(&b, 0, 129, 30) && pmeth_pathprobe_health_expired(&b, 0, 130, 30),
          "health: the round expires three intervals after its first probe, whatever went since");
    CHECK(!pmeth_pathprobe_health_expired(&b, 1, 1000, 30), "health: a path with no round never expires");
    pmeth_pathprobe_health_failed(&b, 0);
    pmeth_pathprobe_health_sent(&b, 0, pmeth_pathprobe_next(&b), 130);
    CHECK(!pmeth_pathprobe_health_expired(&b, 0, 159, 30) && pmeth_pathprobe_health_expired(&b, 0, 160, 30),
          "health: the next round is timed from its own first probe");

    /* a path that answers one probe in ten, probed as btl_pmeth_apm.c probes
     * (one probe an interval, a round failed after three): between two answers
     * that count there is always a failed round, so apm never sees two in a row */
    pmeth_pathprobe_init(&b, 1);
    int counted = 0, failed = 0, in_a_row = 0, most_in_a_row = 0;
    for (uint64_t t = 0; t < 10000; t += 10) {
        if (pmeth_pathprobe_health_expired(&b, 0, t, 30)) {
            pmeth_pathprobe_health_failed(&b, 0);
            failed++;
            in_a_row = 0;
        }
        uint32_t s = pmeth_pathprobe_next(&b);
        pmeth_pathprobe_health_sent(&b, 0, s, t);
        if (s % 10 == 0 && pmeth_pathprobe_health_answer(&b, 0, s)) {
            counted++;
            most_in_a_row = ++in_a_row > most_in_a_row ? in_a_row : most_in_a_row;
        }
    }
    CHECK(counted > 0 && failed > counted && most_in_a_row == 1,
          "health: a path answering one probe in ten: %d answers counted, %d rounds failed, "
          "at most %d answer(s) in a row", counted, failed, most_in_a_row);

    /* paths out of range are refused, not written */
    pmeth_pathprobe_init(&b, 1);
    uint32_t o1 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, PMETH_PATHPROBE_PATHS, o1, 0);
    pmeth_pathprobe_health_failed(&b, 1000);
    CHECK(b.health_out == 0 && !pmeth_pathprobe_health_answer(&b, PMETH_PATHPROBE_PATHS, o1)
              && !pmeth_pathprobe_health_open(&b, 1000),
          "a path index out of range opens no round and counts nothing");

    /* across the wrap of the serials */
    pmeth_pathprobe_init(&b, UINT32_MAX - 1);
    uint32_t w1 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 0, w1, 0);
    uint32_t w2 = pmeth_pathprobe_next(&b), w3 = pmeth_pathprobe_next(&b);
    pmeth_pathprobe_health_sent(&b, 0, w2, 0);
    pmeth_pathprobe_health_sent(&b, 0, w3, 0);
    CHECK(w1 == UINT32_MAX - 1 && w3 == 0, "wrap: serials %u, %u, %u", w1, w2, w3);
    CHECK(!pmeth_pathprobe_health_answer(&b, 0, w3 + 1), "wrap: a serial not yet sent counts for nothing");
    CHECK(!pmeth_pathprobe_health_answer(&b, 0, w1 - 1), "wrap: one from before the round neither");
    CHECK(pmeth_pathprobe_health_answer(&b, 0, w3), "wrap: a probe of the round past the wrap counts");
}

/* The model: serials in 64 bits, the same rules. */
typedef struct model {
    uint64_t last, load_first, round_first[PMETH_PATHPROBE_PATHS];
    int load_open, open[PMETH_PATHPROBE_PATHS];
} model_t;

static void random_run(void)
{
    enum { OPS = 200000, PATHS = 4 };
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    uint32_t start = UINT32_MAX - 50000;        /* the run crosses the wrap */
    pmeth_pathprobe_t b;
    pmeth_pathprobe_init(&b, start);
    model_t m;
    memset(&m, 0, sizeof(m));
    m.last = (uint64_t) start - 1;
    long mismatches = 0, loads = 0, healths = 0, late = 0;
    for (int i = 0; i < OPS; i++) {
        uint64_t r = tap_xorshift64(&seed);
        unsigned p = (unsigned) (r >> 8) % PATHS;
        switch (r % 6) {
        case 0:
            pmeth_pathprobe_load_begin(&b);
            m.load_first = m.last + 1;
            m.load_open = 1;
            break;
        case 1:
            if ((r >> 20) % 8 == 0) {
                pmeth_pathprobe_load_end(&b);
                m.load_open = 0;
            } else {
                pmeth_pathprobe_health_failed(&b, p);
                m.open[p] = 0;
            }
            break;
        case 2: {
            uint32_t s = pmeth_pathprobe_next(&b);
            m.last++;
            mismatches += (uint32_t) m.last != s;     /* the model's serial mod 2^32 */
            if ((r >> 20) & 1) {
                pmeth_pathprobe_health_sent(&b, p, s, 0);
                if (!m.open[p]) {
                    m.open[p] = 1;
                    m.round_first[p] = m.last;
                }
            }
            break;
        }
        default: {
            /* an answer to a probe sent up to 40 probes ago, or (rarely) to one
             * never sent */
            uint64_t back = (r >> 24) % 41;
            uint64_t ms = (r >> 40) % 64 == 0 ? m.last + 1 + back : m.last - back;
            uint32_t s = (uint32_t) ms;
            late += ms < m.last;
            if ((r >> 32) & 1) {
                int want = m.load_open && ms >= m.load_first && ms <= m.last;
                int got = pmeth_pathprobe_load_answer(&b, s);
                mismatches += want != got;
                if (want) {
                    m.load_open = 0;
                    loads++;
                }
            } else {
                int want = m.open[p] && ms >= m.round_first[p] && ms <= m.last;
                int got = pmeth_pathprobe_health_answer(&b, p, s);
                mismatches += want != got;
                if (want) {
                    m.open[p] = 0;
                    healths++;
                }
            }
            break;
        }
        }
    }
    CHECK(mismatches == 0 && loads > 500 && healths > 1000 && late > 10000,
          "random: %d operations across the wrap of the serials agree with a 64-bit model "
          "(%ld loads and %ld health answers counted, %ld answers late; %ld mismatches)",
          OPS, loads, healths, late, mismatches);
}

int main(void)
{
    fixed_cases();
    random_run();
    return tap_done();
}
