/* The sender's delay limit (pmeth_pace.h). */
#include "pmeth_pace.h"

void pmeth_pace_config_init(pmeth_pace_config_t *cfg)
{
    cfg->target_ns = 1000000;
    cfg->round_min_ns = 200000;
    cfg->min_frames = 2;
}

void pmeth_pace_init(pmeth_pace_t *p, uint64_t now)
{
    p->limit = PMETH_PACE_NONE;
    p->floor = 0;
    p->round_start = now;
    p->round_least = 0;
    p->round_peak = 0;
    p->cuts = p->lifts = p->rebases = 0;
}

/* End of a round: compare its standing delay with the floor. */
static bool end_round(pmeth_pace_t *p, const pmeth_pace_config_t *cfg, uint32_t cap,
                      uint64_t srtt)
{
    uint64_t standing = p->round_least;
    uint32_t old = p->limit;
    /* what was really in flight: a sender that never filled its limit (or had
     * none) is scaled from what it had */
    uint32_t used = p->round_peak;
    if (p->limit != PMETH_PACE_NONE && p->limit < used) {
        used = p->limit;
    }
    if (standing > p->floor + cfg->target_ns) {
        if (p->limit != PMETH_PACE_NONE && p->limit <= cfg->min_frames) {
            /* even the least in flight finds the queue: it is the path's */
            p->floor = standing;
            p->rebases++;
            return false;
        }
        /* Little's law: of USED frames over a round trip, USED x queue / srtt
         * stand in the queue; those above the target go */
        uint64_t queue = standing - p->floor;
        uint64_t span = srtt > queue ? srtt : queue;
        uint64_t excess = (uint64_t) used * (queue - cfg->target_ns) / span;
        if (excess == 0) {
            excess = 1;     /* a queue above the target always costs a frame: the limit
                               reaches the least, where a queue of the path's own shows */
        }
        uint32_t half = used / 2;
        uint32_t next = excess < used && used - excess > half ? (uint32_t) (used - excess) : half;
        p->limit = next > cfg->min_frames ? next : cfg->min_frames;
        if (p->limit != old) {
            p->cuts++;
        }
    } else if (p->limit != PMETH_PACE_NONE
               && (uint64_t) p->round_peak * 4 >= (uint64_t) p->limit * 3) {
        /* the limit was used, and no queue stood: try more */
        uint32_t step = p->limit / 8 > 0 ? p->limit / 8 : 1;
        if (cap == PMETH_PACE_NONE || (uint64_t) p->limit + step < cap) {
            p->limit += step;
        } else {
            p->limit = PMETH_PACE_NONE;
            p->lifts++;
        }
    }
    return p->limit != old;
}

bool pmeth_pace_sample(pmeth_pace_t *p, const pmeth_pace_config_t *cfg, uint64_t delay,
                       uint64_t srtt, uint32_t inflight, uint32_t cap, uint64_t now)
{
    if (cfg->target_ns == 0) {
        return false;
    }
    if (delay == 0) {
        delay = 1;          /* 0 means "none" in the records */
    }
    if (p->floor == 0 || delay < p->floor) {
        p->floor = delay;
    }
    if (p->round_least == 0 || delay < p->round_least) {
        p->round_least = delay;
    }
    if (inflight > p->round_peak) {
        p->round_peak = inflight;
    }
    uint64_t round = srtt > cfg->round_min_ns ? srtt : cfg->round_min_ns;
    if (now - p->round_start < round) {
        return false;
    }
    bool changed = end_round(p, cfg, cap, srtt);
    p->round_start = now;
    p->round_least = 0;
    p->round_peak = inflight;
    return changed;
}
