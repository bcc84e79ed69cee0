/* pmeth's reliability window (pmeth_window.h). */
#include "pmeth_window.h"

#include <stdlib.h>
#include <string.h>

void pmeth_window_config_init(pmeth_window_config_t *cfg, uint32_t window)
{
    cfg->window = window;
    cfg->rto_init_ns = 20ull * 1000 * 1000;    /* before any sample: a LAN's worst case, not TCP's 1 s */
    cfg->rto_min_ns = 2ull * 1000 * 1000;
    cfg->rto_max_ns = 1000ull * 1000 * 1000;
    cfg->ack_delay_ns = 100ull * 1000;
    cfg->ack_every = 8;
    cfg->fast_retransmit = 3;
}

static bool config_ok(const pmeth_window_config_t *cfg)
{
    return cfg->window >= 2 && cfg->window <= (1u << 20) && (cfg->window & (cfg->window - 1)) == 0
           && cfg->rto_min_ns > 0 && cfg->rto_min_ns <= cfg->rto_max_ns;
}

static uint64_t clamp_rto(const pmeth_txwin_t *w, uint64_t rto)
{
    return rto < w->cfg.rto_min_ns ? w->cfg.rto_min_ns
                                   : rto > w->cfg.rto_max_ns ? w->cfg.rto_max_ns : rto;
}

pmeth_txwin_t *pmeth_txwin_create(const pmeth_window_config_t *cfg)
{
    if (!config_ok(cfg)) {
        return NULL;
    }
    pmeth_txwin_t *w = calloc(1, sizeof(*w) + cfg->window * sizeof(pmeth_txslot_t));
    if (w == NULL) {
        return NULL;
    }
    w->cfg = *cfg;
    w->mask = cfg->window - 1;
    w->rto = clamp_rto(w, cfg->rto_init_ns);
    w->deadline = UINT64_MAX;
    w->deadline_valid = true;
    return w;
}

void pmeth_txwin_destroy(pmeth_txwin_t *w)
{
    free(w);
}

uint32_t pmeth_txwin_push(pmeth_txwin_t *w, uintptr_t handle, uint64_t now, uint8_t link)
{
    uint32_t seq = w->next++;
    pmeth_txslot_t *s = &w->slot[seq & w->mask];
    memset(s, 0, sizeof(*s));
    s->handle = handle;
    s->sent_ns = now;
    s->link = link;
    if (w->deadline_valid && w->deadline == UINT64_MAX) {
        w->deadline = now + w->rto;     /* the timer starts with the first outstanding frame */
    }
    return seq;
}

static void rtt_sample(pmeth_txwin_t *w, uint64_t r)
{
    if (w->srtt == 0) {
        w->srtt = r > 0 ? r : 1;
        w->rttvar = r / 2;
    } else {
        uint64_t diff = w->srtt > r ? w->srtt - r : r - w->srtt;
        w->rttvar = (3 * w->rttvar + diff) / 4;
        w->srtt = (7 * w->srtt + r) / 8;
    }
    w->rto = clamp_rto(w, w->srtt + 4 * w->rttvar);
    w->rtt_samples++;
}

unsigned pmeth_txwin_ack(pmeth_txwin_t *w, uint32_t cum, uint64_t sack, uint64_t now,
                         void (*released)(uintptr_t handle, void *ctx), void *ctx)
{
    /* cum must lie in [base, next]: anything else is old or impossible */
    if (pmeth_seq_lt(cum, w->base) || pmeth_seq_lt(w->next, cum)) {
        return 0;
    }
    unsigned n = 0;
    uint64_t sample = 0;
    bool have_sample = false;
    while (w->base != cum) {
        pmeth_txslot_t *s = &w->slot[w->base & w->mask];
        if (s->fast_due) {
            w->nfast--;
        }
        if (s->resends == 0 && now >= s->sent_ns) {
            sample = now - s->sent_ns;          /* the newest frame sent once: Karn */
            have_sample = true;
        }
        uintptr_t h = s->handle;
        s->handle = 0;
        s->fast_due = 0;
        w->base++;
        n++;
        if (released != NULL) {
            released(h, ctx);
        }
    }
    if (have_sample) {
        rtt_sample(w, sample);
    }
    if (n > 0) {
        w->backoff = 0;
        w->rto = clamp_rto(w, w->srtt ? w->srtt + 4 * w->rttvar : w->cfg.rto_init_ns);
    }
    /* selective acks: bit i is frame cum+1+i; cum itself is missing */
    if (sack != 0 && w->base != w->next) {
        uint32_t highest = cum;
        for (unsigned i = 0; i < 64; i++) {
            uint32_t seq = cum + 1 + i;
            if (!pmeth_seq_lt(seq, w->next)) {
                break;
            }
            if (sack & (1ull << i)) {
                w->slot[seq & w->mask].sacked = 1;
                highest = seq;
            }
        }
        /* every frame still missing below the highest one held is passed once more */
        for (uint32_t seq = cum; pmeth_seq_lt(seq, highest); seq++) {
            pmeth_txslot_t *s = &w->slot[seq & w->mask];
            if (s->sacked || s->fast_done) {
                continue;
            }
            if (++s->dups >= w->cfg.fast_retransmit && w->cfg.fast_retransmit > 0 && !s->fast_due) {
                s->fast_due = 1;
                w->nfast++;
            }
        }
    }
    w->deadline_valid = false;
    return n;
}

uint64_t pmeth_txwin_next_deadline(pmeth_txwin_t *w)
{
    if (w->deadline_valid) {
        return w->deadline;
    }
    /* The earliest (re)transmission among frames not yet acknowledged nor held:
     * frames sent once were sent in sequence order, so the first of those is
     * the earliest of them; resent ones anywhere before it may be earlier. */
    uint64_t earliest = UINT64_MAX;
    for (uint32_t seq = w->base; seq != w->next; seq++) {
        const pmeth_txslot_t *s = &w->slot[seq & w->mask];
        if (s->sacked) {
            continue;
        }
        if (s->sent_ns < earliest) {
            earliest = s->sent_ns;
        }
        if (s->resends == 0) {
            break;
        }
    }
    w->deadline = earliest == UINT64_MAX ? UINT64_MAX : earliest + w->rto;
    w->deadline_valid = true;
    return w->deadline;
}

int pmeth_txwin_due(pmeth_txwin_t *w, uint64_t now, pmeth_txwin_due_t *out, unsigned max)
{
    unsigned n = 0;
    for (uint32_t seq = w->base; w->nfast > 0 && n < max && seq != w->next; seq++) {
        pmeth_txslot_t *s = &w->slot[seq & w->mask];
        if (!s->fast_due) {
            continue;
        }
        s->fast_due = 0;
        s->fast_done = 1;
        w->nfast--;
        if (s->sacked) {
            continue;
        }
        s->resends++;
        s->sent_ns = now;
        out[n++] = (pmeth_txwin_due_t){.handle = s->handle, .seq = seq, .fast = true};
    }
    if (n < max && pmeth_txwin_next_deadline(w) <= now) {
        bool expired = false;
        for (uint32_t seq = w->base; n < max && seq != w->next; seq++) {
            pmeth_txslot_t *s = &w->slot[seq & w->mask];
            if (s->sacked || now - s->sent_ns < w->rto) {
                continue;
            }
            s->resends++;
            s->sent_ns = now;
            s->fast_done = 0;   /* a new loss of the same frame may be fast-retransmitted */
            s->dups = 0;
            out[n++] = (pmeth_txwin_due_t){.handle = s->handle, .seq = seq, .fast = false};
            expired = true;
        }
        if (expired) {
            w->backoff++;
            w->rto = clamp_rto(w, w->rto * 2);
        }
    }
    if (n > 0) {
        w->deadline_valid = false;
    }
    return (int) n;
}

bool pmeth_txwin_drain(pmeth_txwin_t *w, uintptr_t *handle)
{
    if (w->base == w->next) {
        return false;
    }
    pmeth_txslot_t *s = &w->slot[w->base & w->mask];
    *handle = s->handle;
    if (s->fast_due) {
        w->nfast--;
    }
    memset(s, 0, sizeof(*s));
    w->base++;
    w->deadline_valid = false;
    return true;
}

/* ---- receiver ---- */

pmeth_rxwin_t *pmeth_rxwin_create(const pmeth_window_config_t *cfg)
{
    if (!config_ok(cfg)) {
        return NULL;
    }
    pmeth_rxwin_t *w = calloc(1, sizeof(*w));
    if (w == NULL) {
        return NULL;
    }
    w->cfg = *cfg;
    w->mask = cfg->window - 1;
    w->present = calloc(cfg->window, 1);
    w->handle = calloc(cfg->window, sizeof(*w->handle));
    if (w->present == NULL || w->handle == NULL) {
        pmeth_rxwin_destroy(w);
        return NULL;
    }
    return w;
}

void pmeth_rxwin_destroy(pmeth_rxwin_t *w)
{
    if (w != NULL) {
        free(w->present);
        free(w->handle);
        free(w);
    }
}

pmeth_rx_verdict_t pmeth_rxwin_classify(const pmeth_rxwin_t *w, uint32_t seq)
{
    int32_t d = (int32_t) (seq - w->base);
    if (d == 0) {
        return PMETH_RX_NEW_IN_ORDER;
    }
    if (d < 0) {
        return d >= -(int32_t) w->cfg.window ? PMETH_RX_DUPLICATE : PMETH_RX_OUT_OF_WINDOW;
    }
    if ((uint32_t) d >= w->cfg.window) {
        return PMETH_RX_OUT_OF_WINDOW;
    }
    return w->present[seq & w->mask] ? PMETH_RX_DUPLICATE : PMETH_RX_NEW_OUT_OF_ORDER;
}

static void note_taken(pmeth_rxwin_t *w, uint64_t now)
{
    if (w->unacked++ == 0) {
        w->first_unacked_ns = now;
    }
    if (w->unacked >= w->cfg.ack_every) {
        w->immediate = true;
    }
}

pmeth_rx_verdict_t pmeth_rxwin_accept(pmeth_rxwin_t *w, uint32_t seq, uintptr_t handle,
                                      uint64_t now)
{
    pmeth_rx_verdict_t v = pmeth_rxwin_classify(w, seq);
    switch (v) {
    case PMETH_RX_NEW_IN_ORDER:
        w->base++;
        note_taken(w, now);
        if (w->held > 0) {
            w->immediate = true;        /* a gap just filled: tell the sender at once */
        }
        break;
    case PMETH_RX_NEW_OUT_OF_ORDER:
        w->present[seq & w->mask] = 1;
        w->handle[seq & w->mask] = handle;
        w->held++;
        note_taken(w, now);
        w->immediate = true;
        break;
    case PMETH_RX_DUPLICATE:
        w->immediate = true;            /* our ack may have been lost */
        break;
    default:
        break;
    }
    return v;
}

bool pmeth_rxwin_pop(pmeth_rxwin_t *w, uintptr_t *handle)
{
    uint32_t i = w->base & w->mask;
    if (w->held == 0 || !w->present[i]) {
        return false;
    }
    *handle = w->handle[i];
    w->present[i] = 0;
    w->handle[i] = 0;
    w->held--;
    w->base++;
    return true;
}

bool pmeth_rxwin_drain(pmeth_rxwin_t *w, uintptr_t *handle)
{
    for (uint32_t k = 0; w->held > 0 && k < w->cfg.window; k++) {
        if (w->present[k]) {
            *handle = w->handle[k];
            w->present[k] = 0;
            w->handle[k] = 0;
            w->held--;
            return true;
        }
    }
    return false;
}

void pmeth_rxwin_ack_fields(const pmeth_rxwin_t *w, uint32_t *cum, uint64_t *sack)
{
    uint64_t bits = 0;
    if (w->held > 0) {
        uint32_t n = w->cfg.window - 1 < 64 ? w->cfg.window - 1 : 64;
        for (uint32_t i = 0; i < n; i++) {
            if (w->present[(w->base + 1 + i) & w->mask]) {
                bits |= 1ull << i;
            }
        }
    }
    *cum = w->base;
    *sack = bits;
}
