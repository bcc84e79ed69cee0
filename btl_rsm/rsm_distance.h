/*
 * How far the receiver's core is from ours, learned from the acks it writes.
 *
 * Why: streaming (non-temporal) stores into the pool (rsm_copy.h) are what the
 * two-copy path needs when the two cores share no cache: lines written with
 * ordinary stores then cross one by one as cache-to-cache transfers (the test
 * machine's two-copy bandwidth fell to a third).  Where the cores share a cache
 * they cost instead: every byte goes to memory and back, and a window that fits
 * in the shared cache no longer stays there (bi-directional two-copy 0.9x vader
 * streaming against 1.2x with ordinary stores).  Which case holds is known only
 * at run time: a guest's topology may claim one cache for cores that the host
 * places on different dies, and the host may move them.
 *
 * A sample is the time one load of our ack row took when it returned acks we
 * had not seen yet: the receiver wrote that line after we last read it, so the
 * load had to fetch the line from the receiver's cache, the same trip a pool line
 * makes the other way.  Every RSM_DIST_SAMPLES samples, their median decides:
 * near below the threshold, far at or above it (from near: at or above it and
 * an eighth, RSM_DIST_STAY_NEAR).  Until the first decision a
 * receiver counts as far, so an unmeasured peer gets the choice that never
 * collapses.
 *
 * The same median also picks the path of rendezvous messages, by a second,
 * lower threshold: two copies through the pool only for receivers whose lines
 * arrive faster than that, single copy for the rest.  One bit for both was
 * wrong on a machine whose two cores share a cache but pass a line in ~90 ns
 * (a large mesh): there ordinary stores beat streaming at 4-64 KiB and single
 * copy beat the two-copy pipeline from 128 KiB, and with one threshold at
 * 100 ns the decision flipped between the two paths hundreds of times a run
 * (btl_rsm/README.md, "Three distances").  Plain C, no MPI:
 * test/unit/t_rsm_distance.c.
 */
#ifndef RSM_DISTANCE_H
#define RSM_DISTANCE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define RSM_DIST_SAMPLES 15
/* After the first decision, one reclaim in this many is timed: lfence waits
 * for the sender's copies in flight, and timing every reclaim cost a fifth of a
 * sender's time streaming 1.5 KiB messages.  The host still moving the cores
 * is seen within 15 x 8 reclaims. */
#define RSM_DIST_EVERY 8

/* A receiver measured near turns far only when the median reaches the
 * threshold by an eighth more (far to near: at the threshold).  Why: a machine
 * whose medians spread over 89-119 ns flipped between the two store kinds on
 * the 110 ns threshold several times a run, and streaming lost there at every
 * eager size (bi-directional 4 / 8 KiB: 7459 / 9017 MB/s flipping, 10529 /
 * 12052 with ordinary stores throughout).  The eighth (124 ns at 110) is above
 * that spread; far placements of an earlier machine read 115-154 ns, so one
 * that the host moves there from a near placement, and that reads under 124,
 * keeps ordinary stores: the cost of the margin. */
#define RSM_DIST_STAY_NEAR 8

/* Two in a row: after the first decision a choice changes only when two
 * medians in a row say so.  Why: on the same machine the medians often
 * alternated between the two sides of a threshold from one set of 15 samples
 * to the next (about 110 ns in streams of 1-16 KiB; 45-160 ns under
 * bi-directional traffic), and each choice followed them.  A real move of the
 * cores is followed one decision later.  Runs of several medians on one side
 * (streams of 32 KiB-1 MiB, whose single copies evict the ack lines) still
 * move the choices: btl_rsm/README.md, "A margin and two in a row". */

/* Load: a sample is LOADED when this rank took in bulk data (pool messages from
 * senders on its node, or single-copy reads) since its previous sample; a set with more
 * loaded samples than not decides nothing once a set without load has decided.
 * Why: under traffic both ways the ack loads queue behind both cores' copies.
 * At one placement of a Sapphire Rapids guest whose quiet medians read 218-312
 * cycles (ping-pong, one-way streams up to 32 KiB, bi-directional traffic up to
 * 4 KiB), sets taken in a bi-directional exchange of 8 KiB-1 MiB read 138-648,
 * and the choices followed them (bibw 16 KiB 8.8-16.8 GB/s in 7 runs letting
 * them decide, 13.8-16.9 holding the quiet ones): the load, not the placement.
 * A one-way stream's sender takes in only small control messages, so its
 * samples keep moving the choices, the host moving the cores included; the
 * receiver of such a stream, or ranks exchanging both ways, keep what the last
 * quiet set said (btl_rsm/README.md, "Load decides nothing"). */

typedef struct rsm_distance {
    uint32_t sample[RSM_DIST_SAMPLES];  /* cycles */
    uint8_t n;
    uint8_t n_loaded;                   /* of the n, taken while bulk data came in */
    bool near;                          /* ordinary stores; zeroed: far (streaming) */
    bool two_copy;                      /* rendezvous by the pool; zeroed: single copy */
    bool said_near, said_two_copy;      /* the last median's own verdicts (two in a row) */
    uint32_t decisions;
    uint32_t median;                    /* of the last decision, cycles */
    uint32_t prev_median;               /* of the one before */
    uint32_t quiet_decisions;           /* decisions by sets taken without load */
    uint32_t loaded_sets;               /* sets ignored: loaded, after a quiet decision */
} rsm_distance_t;

/* Record one sample, LOADED when bulk data came in since the last one.  Near
 * when the median is below FAR_CYCLES (0: always far; a receiver already near:
 * below FAR_CYCLES and an eighth), two copies when it is below TWO_COPY_CYCLES
 * (0: never); after the first decision each only when the median before said
 * the same (two in a row).  A set mostly loaded decides only while no quiet
 * set has (d->loaded_sets counts the others).  Returns true when this sample
 * completed a set and a decision was taken (d->near, d->two_copy, d->median). */
static inline bool rsm_distance_add(rsm_distance_t *d, uint32_t cycles, bool loaded,
                                    uint32_t far_cycles, uint32_t two_copy_cycles)
{
    d->sample[d->n++] = cycles;
    d->n_loaded += loaded;
    if (d->n < RSM_DIST_SAMPLES) {
        return false;
    }
    const bool set_loaded = d->n_loaded > RSM_DIST_SAMPLES / 2;
    d->n = 0;
    d->n_loaded = 0;
    if (set_loaded && d->quiet_decisions > 0) {
        d->loaded_sets++;               /* the choices and the medians stay the quiet ones */
        return false;
    }
    d->quiet_decisions += !set_loaded;
    for (unsigned i = 1; i < RSM_DIST_SAMPLES; i++) {     /* insertion sort: 15 values */
        uint32_t v = d->sample[i];
        unsigned j = i;
        for (; j > 0 && d->sample[j - 1] > v; j--) {
            d->sample[j] = d->sample[j - 1];
        }
        d->sample[j] = v;
    }
    d->prev_median = d->median;
    d->median = d->sample[RSM_DIST_SAMPLES / 2];
    const uint64_t far_at = d->near ? (uint64_t) far_cycles + far_cycles / RSM_DIST_STAY_NEAR
                                    : far_cycles;
    const bool near = far_cycles != 0 && d->median < far_at;
    const bool two_copy = two_copy_cycles != 0 && d->median < two_copy_cycles;
    if (d->decisions == 0 || near == d->said_near) {
        d->near = near;
    }
    if (d->decisions == 0 || two_copy == d->said_two_copy) {
        d->two_copy = two_copy;
    }
    d->said_near = near;
    d->said_two_copy = two_copy;
    d->decisions++;
    return true;
}

#if defined(__x86_64__)
/* The time stamp counter, after every earlier instruction (the timed load
 * included) has completed: lfence waits for them. */
static inline uint64_t rsm_cycles(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
    return ((uint64_t) hi << 32) | lo;
}
#define RSM_HAVE_CYCLES 1
#else
static inline uint64_t rsm_cycles(void)
{
    return 0;
}
#define RSM_HAVE_CYCLES 0
#endif

/* CLOCK_MONOTONIC and the cycle counter read at one moment: of 4 clock
 * readings, the one with the tightest pair of counter reads around it, and
 * the counter at its middle.  Why: an interrupt or a vCPU taken away between
 * a clock read and a counter read (10 us is 5% of the calibration below) made
 * the unit test's 5% check fail now and then on a loaded VM. */
static inline void rsm_clock_and_cycles(int64_t *ns, uint64_t *cycles)
{
    uint64_t tightest = UINT64_MAX;
    *ns = 0;
    *cycles = 0;
    for (int i = 0; i < 4; i++) {
        struct timespec t;
        uint64_t before = rsm_cycles();
        clock_gettime(CLOCK_MONOTONIC, &t);
        uint64_t after = rsm_cycles();
        if (after - before < tightest) {
            tightest = after - before;
            *ns = (int64_t) t.tv_sec * 1000000000 + t.tv_nsec;
            *cycles = before + (after - before) / 2;
        }
    }
}

/* Cycles per NS nanoseconds, measured against CLOCK_MONOTONIC over ~200 us;
 * 0 when there is no cycle counter. */
static inline uint32_t rsm_cycles_for_ns(uint32_t ns)
{
    if (!RSM_HAVE_CYCLES || ns == 0) {
        return 0;
    }
    int64_t t0, t1;
    uint64_t c0, c1;
    rsm_clock_and_cycles(&t0, &c0);
    do {
        rsm_clock_and_cycles(&t1, &c1);
    } while (t1 - t0 < 200000);
    uint64_t cycles = (c1 - c0) * ns / (uint64_t) (t1 - t0);
    return cycles > UINT32_MAX ? UINT32_MAX : (cycles > 0 ? (uint32_t) cycles : 1);
}

/* Whether eager messages to this receiver should stop at the shorter (multi-host)
 * limit: it was measured, it is read by single copy (not two copies), and its
 * lines arrive in under SHORT_EAGER_CYCLES (0: never; NOW, the answer so far,
 * stays unless the last two medians both disagree with it).  Why: there the two
 * serial copies of an eager message each move every line across the slow path
 * (the sender's stores must take back lines the receiver read a lap ago), while
 * a rendezvous reads it once, split between both cores.  On a machine whose
 * lines took 100-120 ns, latency at 16 / 32 / 64 KiB was 3.2 / 5.1 / 8.4 us
 * eager and 1.6 / 2.5 / 3.1 by rendezvous.  Where the cores pass lines in
 * 30-50 ns (two copies) or share no cache at all (streaming stores, 115-154 ns
 * on an earlier machine), eager up to 64 KiB measured better (README, "Three
 * distances"). */
static inline bool rsm_distance_short_eager(const rsm_distance_t *d, uint32_t short_eager_cycles,
                                            bool now)
{
    if (d->decisions == 0 || d->two_copy || short_eager_cycles == 0) {
        return false;
    }
    /* NOW: the answer so far; it changes when two medians in a row say so */
    const bool below = d->median < short_eager_cycles;
    return d->decisions == 1 || below == (d->prev_median < short_eager_cycles) ? below : now;
}

/* Whether this rank is under load both ways, from the LOADED bit of each
 * distance sample (any peer's): the answer NOW changes when two samples in a
 * row say otherwise.  BITS keeps the last samples, newest in bit 0.  Why: the
 * eager limit that follows it (btl_rsm_endpoint.c, eager_load) is one number
 * for the whole module, and a single sample taken across a change of traffic
 * should not move it (btl_rsm/README.md, "The eager limit under load"). */
static inline bool rsm_load_add(uint8_t *bits, bool loaded, bool now)
{
    *bits = (uint8_t) (*bits << 1 | loaded);
    const unsigned last2 = *bits & 3u;
    return last2 == 3u ? true : last2 == 0u ? false : now;
}

/* NS nanoseconds in cycles, given PER_US = rsm_cycles_for_ns(1000) (one
 * calibration serves every threshold); 0 when NS or PER_US is 0. */
static inline uint32_t rsm_cycles_scale(uint32_t per_us, uint32_t ns)
{
    if (per_us == 0 || ns == 0) {
        return 0;
    }
    uint64_t cycles = (uint64_t) per_us * ns / 1000;
    return cycles > UINT32_MAX ? UINT32_MAX : (cycles > 0 ? (uint32_t) cycles : 1);
}

#endif
