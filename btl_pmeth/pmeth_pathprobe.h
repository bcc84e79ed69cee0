/*
 * Which answers to path migration's probes count (btl_pmeth_apm.c).  No MPI;
 * tested on its own (test/unit/t_pmeth_pathprobe).
 *
 * Why.  Path migration probes a path for two reasons: to confirm a LOAD (apm
 * moved the primary path there, or put an alternate path back in the stripe:
 * three tries, each one probe) and to watch the HEALTH of a path that failed
 * (a probe every apm_probe_ms while one is out; a round its first probe
 * opened that no answer closed within three intervals has failed; apm wants
 * several answered ones in a row before the path is trusted again).  The
 * round, not the last probe, is timed: a probe goes every interval, so
 * timing the last one would never fail a path that answers one probe in ten,
 * and apm would count its rare answers as answers in a row.  A probe's
 * answer can come late: the peer was descheduled, the frame waited in a full
 * switch port, or the path died and came back while it was on its way.
 * Credited to whichever probe is out now,
 * a late answer says a path works when the evidence is from before it failed
 * (again), or confirms a load with an answer to an earlier one.  So every
 * probe carries a serial (pmeth_path_probe_nonce, pmeth_wire.h), and:
 *   - a load counts only an answer to one of its own probes;
 *   - health counts only an answer to a probe of the current ROUND: a round
 *     begins with the first probe sent while none of the path's was out, and
 *     ends with the answer that counts or with the probe counted as failed.
 *     An answer to a probe of an earlier round (given up, or already
 *     answered) shows nothing about the path now.
 * Serials wrap as sequence numbers do (pmeth_seq_lt): an answer counts when
 * its serial lies from the first probe of the load or round to the last
 * probe sent; anything else (older, or never sent) is ignored.
 */
#ifndef PMETH_PATHPROBE_H
#define PMETH_PATHPROBE_H

#include <stdbool.h>
#include <stdint.h>

#define PMETH_PATHPROBE_PATHS 8         /* = PMETH_MAX_LINKS (btl_pmeth.h) */

typedef struct pmeth_pathprobe {
    uint32_t last;                      /* serial of the last probe sent */
    uint32_t load_first;                /* first probe of the load being checked */
    bool load_open;                     /* a load is being checked */
    uint32_t health_out;                /* bit per path: a round of health probes is open */
    uint32_t round_first[PMETH_PATHPROBE_PATHS];        /* first probe of that round */
    uint64_t round_ns[PMETH_PATHPROBE_PATHS];           /* when that probe went */
} pmeth_pathprobe_t;

void pmeth_pathprobe_init(pmeth_pathprobe_t *b, uint32_t first_serial);

/* A load begins: its first probe is the next one sent. */
void pmeth_pathprobe_load_begin(pmeth_pathprobe_t *b);
/* The load was confirmed or given up: no answer counts for it any more. */
void pmeth_pathprobe_load_end(pmeth_pathprobe_t *b);

/* The serial of the next probe (a load's or a health probe); taken also when
 * no frame is free to carry it, so that it is never answered. */
uint32_t pmeth_pathprobe_next(pmeth_pathprobe_t *b);

/* Health probe SERIAL (just taken) went on path P at NOW: it opens a round
 * when none is open. */
void pmeth_pathprobe_health_sent(pmeth_pathprobe_t *b, unsigned p, uint32_t serial, uint64_t now);
/* Path P's round ended unanswered (its probe counted as failed). */
void pmeth_pathprobe_health_failed(pmeth_pathprobe_t *b, unsigned p);
static inline bool pmeth_pathprobe_health_open(const pmeth_pathprobe_t *b, unsigned p)
{
    return p < PMETH_PATHPROBE_PATHS && (b->health_out >> p & 1u);
}
/* Path P's round has been open LIMIT or longer at NOW: it failed (the caller
 * then calls pmeth_pathprobe_health_failed). */
static inline bool pmeth_pathprobe_health_expired(const pmeth_pathprobe_t *b, unsigned p,
                                                  uint64_t now, uint64_t limit)
{
    return pmeth_pathprobe_health_open(b, p) && now - b->round_ns[p] >= limit;
}

/* An answer to probe SERIAL arrived on path P: does it confirm the load
 * being checked, does it count for P's health (then the round ends)? */
bool pmeth_pathprobe_load_answer(pmeth_pathprobe_t *b, uint32_t serial);
bool pmeth_pathprobe_health_answer(pmeth_pathprobe_t *b, unsigned p, uint32_t serial);

#endif
