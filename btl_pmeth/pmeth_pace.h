/*
 * The sender's delay limit: how many frames may be in flight to one peer so
 * that no queue stands on the way.  No MPI; time is passed in (nanoseconds),
 * so it is tested on its own (test/unit/t_pmeth_pace).
 *
 * Why.  A receiver grants what its switch port can absorb (pmeth_credit.h), a
 * few hundred KiB a link, so that several senders at once cannot overflow the
 * port.  A sender alone uses that whole grant, and since the path itself
 * needs only a few frames in flight, the rest stands as a queue in front of
 * the slowest link (2 ms at 1 Gbit/s for 256 KiB), where every other flow
 * through it waits, and where senders without grants (credits off, or
 * another job) overflow it.  The grant cannot simply be made smaller: on a
 * fast link (unshaped veth, 10 GbE) the same bytes are a queue of a few tens
 * of microseconds, and a smaller grant starves the link.  (Streams both ways
 * over six shaped links, once slow, were not held up by such queues but by
 * refills too large for one progress pass: btl_pmeth_send_burst.)
 *
 * What.  The queue is seen as delay (LEDBAT's idea, RFC 6817, reduced to
 * what a two-ended protocol with its own acks needs).  The delay is one way:
 * every DATA and ACK frame carries the sender's clock, and the receiver
 * reports, in the frames it sends back, the least one-way delay of our frames
 * since its last report (pmeth_wire.h, bytes 56-63).  A round trip would not
 * do: in streams both ways it holds the other direction's queue, and at a
 * few frames in flight it is mostly the peer's delayed acks and scheduling;
 * a limit driven by it starves the link (measured: 6-10 frames over six
 * links).  The two hosts' clocks differ by a constant nobody knows, so a
 * sample is only compared with other samples:
 *   - the floor is the least sample seen (a sender's first frames go out
 *     alone, before any grant: they see the path empty);
 *   - once a ROUND (the smoothed round trip, at least ROUND_MIN) the least
 *     sample of that round is the standing delay: a single late frame (the
 *     peer was descheduled) does not count, a queue that stood the whole
 *     round does;
 *   - when the queue (standing - floor) exceeds TARGET, the frames that
 *     stand in it beyond the target go from the limit (by Little's law,
 *     limit x (queue - TARGET) / round trip): at most half per round, never
 *     below MIN frames; a queue that stands even at MIN frames is not ours to
 *     drain (the path changed, e.g. after a migration; others keep it full;
 *     the clocks drifted apart): its delay becomes the floor;
 *   - otherwise, if the sender used its limit during the round, the limit
 *     grows by an eighth, and once it reaches what grants and the window
 *     allow, the delay limit is lifted.
 * A sender starts without a delay limit, so short exchanges never wait for a
 * delay to be measured; the limit appears only where a queue appears.
 * TARGET is the queueing delay tolerated: on a fast link the whole grant is a
 * queue well below it, so nothing changes there.
 */
#ifndef PMETH_PACE_H
#define PMETH_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define PMETH_PACE_NONE UINT32_MAX

typedef struct pmeth_pace_config {
    uint64_t target_ns;                 /* queueing delay tolerated; 0: no delay limit */
    uint64_t round_min_ns;              /* a round lasts at least this long */
    uint32_t min_frames;                /* the limit never goes below (>= 1) */
} pmeth_pace_config_t;

/* Defaults: target 1 ms, rounds of at least 200 us, at least 2 frames. */
void pmeth_pace_config_init(pmeth_pace_config_t *cfg);

typedef struct pmeth_pace {
    uint32_t limit;                     /* frames in flight; PMETH_PACE_NONE: no limit */
    uint64_t floor;                     /* the delay with no queue (0: none yet) */
    uint64_t round_start;
    uint64_t round_least;               /* least sample this round (0: none yet) */
    uint32_t round_peak;                /* most frames in flight at a sample this round */
    uint64_t cuts;                      /* the limit was lowered (a queue stood) */
    uint64_t lifts;                     /* the limit was lifted (grown past the grant) */
    uint64_t rebases;                   /* a queue stood at the least: its delay became the
                                           floor */
} pmeth_pace_t;

void pmeth_pace_init(pmeth_pace_t *p, uint64_t now);

/* A delay sample DELAY (ns from an arbitrary origin, > 0) taken at NOW, with
 * INFLIGHT frames in flight as it came, SRTT the smoothed round trip (a
 * round's length), and CAP the frames the grant and the window allow now.
 * Returns true when the limit changed. */
bool pmeth_pace_sample(pmeth_pace_t *p, const pmeth_pace_config_t *cfg, uint64_t delay,
                       uint64_t srtt, uint32_t inflight, uint32_t cap, uint64_t now);

/* Frames that may be in flight by delay (PMETH_PACE_NONE: no limit). */
static inline uint32_t pmeth_pace_limit(const pmeth_pace_t *p) { return p->limit; }

/* The delay taken as the path's own (0: none measured). */
static inline uint64_t pmeth_pace_floor(const pmeth_pace_t *p) { return p->floor; }

#endif
