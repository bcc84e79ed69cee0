/* Receive credits that follow demand (pmeth_credit.h). */
#include "pmeth_credit.h"

#include "pmeth_window.h"

static uint32_t compute_share(const pmeth_credit_pool_t *p)
{
    uint32_t peers;
    switch (p->policy) {
    case PMETH_CREDIT_OFF:
        return PMETH_CREDIT_UNLIMITED;
    case PMETH_CREDIT_STATIC:
        peers = p->static_peers;
        break;
    default:
        /* a peer counted in either epoch may still hold a lease */
        peers = p->active_now > p->active_before ? p->active_now : p->active_before;
        break;
    }
    uint32_t share = p->budget / (peers > 0 ? peers : 1);
    if (p->policy == PMETH_CREDIT_DEMAND && p->active_before == 1 && p->active_now <= 1) {
        /* alone for a whole epoch: it cannot overflow the port by itself (one link
         * feeds it), and a grant of just the port's worth stalls a message about
         * that size on its last frames, until the ack of its first ones comes -
         * acks come from our process, not the NIC, and wait for it to run */
        share = 2 * p->budget;
    }
    if (share < p->floor) {
        share = p->floor;
    }
    return share < p->window ? share : p->window;
}

/* Move to the epoch NOW falls in: the counts of the ones before it shift. */
static void roll(pmeth_credit_pool_t *p, uint64_t now)
{
    if (now - p->epoch_start < p->epoch_ns) {
        return;
    }
    uint64_t passed = (now - p->epoch_start) / p->epoch_ns;
    p->active_before = passed == 1 ? p->active_now : 0;
    p->active_now = 0;
    p->epoch += (uint32_t) passed;
    if (p->epoch == 0) {
        p->epoch = 1;       /* 0 is "never counted" in the peers' records */
    }
    p->epoch_start += passed * p->epoch_ns;
}

static void refresh(pmeth_credit_pool_t *p)
{
    uint32_t share = compute_share(p);
    if (share != p->share) {
        p->share = share;
        p->share_changes++;
    }
}

void pmeth_credit_pool_init(pmeth_credit_pool_t *p, pmeth_credit_policy_t policy, uint32_t budget,
                            uint32_t floor, uint32_t window, uint32_t static_peers,
                            uint64_t epoch_ns, uint64_t now)
{
    p->policy = policy;
    p->floor = floor > 0 ? floor : 1;
    p->budget = budget > p->floor ? budget : p->floor;
    p->window = window > 0 ? window : 1;
    p->unit = pmeth_credit_unit(p->window);
    p->static_peers = static_peers > 0 ? static_peers : 1;
    p->epoch_ns = epoch_ns > 0 ? epoch_ns : 1;
    p->epoch_start = now;
    p->epoch = 1;
    p->active_now = p->active_before = 0;
    p->share = compute_share(p);
    p->share_changes = 0;
}

void pmeth_credit_pool_set_budget(pmeth_credit_pool_t *p, uint32_t budget)
{
    p->budget = budget > p->floor ? budget : p->floor;
    refresh(p);
}

void pmeth_credit_arrival(pmeth_credit_pool_t *p, pmeth_credit_peer_t *peer, uint64_t now)
{
    if (p->policy != PMETH_CREDIT_DEMAND) {
        return;
    }
    roll(p, now);
    if (peer->epoch != p->epoch) {
        /* first frame of this epoch from it (always so after a roll); it may
         * have been counted in the previous one already, which the max() in
         * compute_share accounts for */
        peer->epoch = p->epoch;
        p->active_now++;
        refresh(p);
    }
}

uint8_t pmeth_credit_encode(const pmeth_credit_pool_t *p, uint32_t frames)
{
    if (frames >= p->window) {
        return (uint8_t) PMETH_CREDIT_WIRE_UNLIMITED;   /* the window limits it anyway */
    }
    uint32_t units = frames / p->unit;
    uint32_t floor_units = (p->floor + p->unit - 1) / p->unit;
    if (units < floor_units) {
        units = floor_units;
    }
    if (units >= PMETH_CREDIT_WIRE_UNLIMITED) {
        units = PMETH_CREDIT_WIRE_UNLIMITED - 1;
    }
    return (uint8_t) units;
}

void pmeth_credit_grant_update(pmeth_credit_grant_t *g, bool has, uint8_t byte, uint32_t ack,
                               uint32_t sent_end, uint32_t window, uint64_t now,
                               uint64_t lease_ns)
{
    if (pmeth_seq_lt(sent_end, ack)) {
        return;             /* acks frames never sent */
    }
    if (!has) {
        g->unlimited = true;
        return;
    }
    if (g->until_ns != 0 && pmeth_seq_lt(ack, g->ack)) {
        return;             /* overtaken by a newer grant (striping reorders) */
    }
    g->unlimited = false;       /* even "no limit" is a lease: idle peers fall back */
    g->frames = pmeth_credit_decode(byte, window);
    g->ack = ack;
    g->until_ns = now + lease_ns;
}
