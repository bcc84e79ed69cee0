/* pmeth's reliability window (pmeth_window.h). */
#include "pmeth_window.h"

#include <stdlib.h>
#include <string.h>

/* the memory per peer the header states depends on it */
_Static_assert(sizeof(pmeth_txslot_t) == 24, "a sender slot is 24 bytes");

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

size_t pmeth_txwin_bytes(uint32_t window)
{
    return sizeof(pmeth_txwin_t) + (size_t) window * sizeof(pmeth_txslot_t);
}

pmeth_txwin_t *pmeth_txwin_create(const pmeth_window_config_t *cfg)
{
    if (!config_ok(cfg)) {
        return NULL;
    }
    pmeth_txwin_t *w = calloc(1, pmeth_txwin_bytes(cfg->window));
    if (w == NULL) {
        return NULL;
    }
    w->cfg = *cfg;
    w->mask = cfg->window - 1;
    w->reach = w->base + 1 + PMETH_WINDOW_SACK_SPAN;
    w->rto = clamp_rto(w, cfg->rto_init_ns);
    w->deadline = UINT64_MAX;
    w->deadline_valid = true;
    return w;
}

void pmeth_txwin_destroy(pmeth_txwin_t *w)
{
    free(w);
}

bool pmeth_txwin_start_at(pmeth_txwin_t *w, uint32_t seq)
{
    if (w->base != w->next) {
        return false;
    }
    w->base = w->next = seq;
    w->reach = seq + 1 + PMETH_WINDOW_SACK_SPAN;
    return true;
}

uint32_t pmeth_txwin_push(pmeth_txwin_t *w, uintptr_t handle, uint64_t now, uint8_t link)
{
    uint32_t seq = w->next++;
    pmeth_txslot_t *s = &w->slot[seq & w->mask];
    memset(s, 0, sizeof(*s));
    s->handle = handle;
    s->sent_ns = now;
    s->stamp = w->stamp_next++;
    s->link = link;
    /* the timer starts with the first outstanding frame; later ones cannot
     * expire before it (they were sent after it) */
    if (w->deadline_valid && w->deadline == UINT64_MAX) {
        w->deadline = now + w->rto;
    }
    return seq;
}

/* A frame goes (again) now. */
static void mark_sent(pmeth_txwin_t *w, pmeth_txslot_t *s, uint64_t now)
{
    s->sent_ns = now;
    s->stamp = w->stamp_next++;
    if (s->resends < UINT8_MAX) {
        s->resends++;
    }
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
    w->rtt_samples++;
}

/* Something sent on LINK got through at NOW: it is not silent. */
static inline void heard(pmeth_txwin_t *w, uint8_t link, uint64_t now)
{
    w->link_silent[link % PMETH_WINDOW_LINKS] = 0;
    w->link_heard_ns[link % PMETH_WINDOW_LINKS] = now;
}

/* A retransmitted frame at bitmap position I (-1: base) is lost again when
 * THRESH held frames of its link and lane went after its retransmission. */
static bool overtaken_since_resent(const pmeth_txwin_t *w, const pmeth_txslot_t *s, int i, int top,
                                   uint32_t thresh)
{
    uint32_t later = 0;
    for (int j = i + 1; j <= top && later < thresh; j++) {
        const pmeth_txslot_t *h = &w->slot[(w->base + 1 + (uint32_t) j) & w->mask];
        later += h->sacked && h->link == s->link && h->lane == s->lane
                 && (int32_t) (h->stamp - s->stamp) > 0;
    }
    return later >= thresh;
}

/* Mark what the bitmap says the receiver holds, then take as lost every frame
 * still missing with at least fast_retransmit held frames above it that went
 * over the same link in the same lane.  One link delivers in order, so frames
 * of one link overtaking each other mean loss; frames of a faster link
 * overtaking those of a slower one (striping), or small frames overtaking large
 * ones at a receiver with two rings (lanes), mean nothing. */
#define LANE_OF(s) (((s)->link % PMETH_WINDOW_LINKS) * 2u + (s)->lane)
static void apply_sack(pmeth_txwin_t *w, uint64_t sack, uint32_t reach, uint64_t now,
                       uint64_t *newest_once, bool *have_once)
{
    /* bit i is frame base+1+i; only frames actually sent count */
    uint32_t span = w->next - w->base - 1;     /* frames above base that exist */
    if (span < 64) {
        sack &= (1ull << span) - 1;
    }
    if (sack == 0) {
        return;
    }
    int top = 63 - __builtin_clzll(sack);
    uint32_t above[PMETH_WINDOW_LINKS * 2] = {0};  /* held frames seen so far, per lane */
    uint32_t thresh = w->cfg.fast_retransmit;
    for (int i = top; i >= -1; i--) {
        pmeth_txslot_t *s = &w->slot[(w->base + 1 + (uint32_t) i) & w->mask];
        if (i >= 0 && (sack >> i & 1) && !s->sacked) {
            s->sacked = 1;
            w->nsacked++;
            heard(w, s->link, now);
            uint32_t seq = w->base + 1 + (uint32_t) i;
            if (s->resends == 0 && pmeth_seq_lt(seq, reach) && s->sent_ns >= w->sample_after_ns
                && (!*have_once || s->sent_ns > *newest_once)) {
                *newest_once = s->sent_ns;      /* newly held, sent once: an RTT sample */
                *have_once = true;
            }
        }
        if (s->sacked) {
            above[LANE_OF(s)]++;
            continue;
        }
        if (thresh == 0 || s->fast_due || above[LANE_OF(s)] < thresh) {
            continue;
        }
        /* frames above it went after it, unless it went again since: then
         * only frames sent after its retransmission count (once per loss) */
        if (s->resends > 0 && !overtaken_since_resent(w, s, i, top, thresh)) {
            continue;
        }
        s->fast_due = 1;
        w->nfast++;
    }
}

unsigned pmeth_txwin_ack(pmeth_txwin_t *w, uint32_t cum, uint64_t sack, uint64_t now,
                         void (*released)(uintptr_t handle, void *ctx), void *ctx)
{
    /* cum must lie in [base, next]: anything else is old or impossible */
    if (pmeth_seq_lt(cum, w->base) || pmeth_seq_lt(w->next, cum)) {
        return 0;
    }
    if (w->reach - w->base > w->cfg.window + 1 + PMETH_WINDOW_SACK_SPAN) {
        w->reach = w->base;     /* lost track (the numbers were moved): no news is fresh */
    }
    unsigned n = 0;
    /* The RTT sample: the newest frame sent once whose acknowledgement this
     * ack brings first (cumulatively or selectively), and which an earlier
     * ack could have shown had it arrived earlier (it lies within the reach
     * of an earlier ack), sent after the last timer expiry.  A frame held
     * behind a gap beyond the bitmap's reach is acknowledged only when the
     * acks come near it, and one whose ack was lost while the sender stalled
     * only after the probe: its age then is recovery time, not round-trip
     * time. */
    uint64_t newest_once = 0;
    bool have_once = false;
    uint32_t reach = w->reach;
    while (w->base != cum) {
        pmeth_txslot_t *s = &w->slot[w->base & w->mask];
        if (s->fast_due) {
            w->nfast--;
        }
        if (s->resends == 0 && !s->sacked && pmeth_seq_lt(w->base, reach)
            && s->sent_ns >= w->sample_after_ns && (!have_once || s->sent_ns > newest_once)) {
            newest_once = s->sent_ns;           /* sent once (Karn), acknowledged just now */
            have_once = true;
        }
        if (!s->sacked) {
            heard(w, s->link, now);
        }
        w->nsacked -= s->sacked;
        uintptr_t h = s->handle;
        s->handle = 0;
        s->fast_due = 0;
        s->sacked = 0;
        /* advance before the callback: it may push a frame into this very slot */
        w->base++;
        n++;
        if (released != NULL) {
            released(h, ctx);
        }
    }
    if (w->base != w->next) {
        /* the receiver says it lacks base: an older bitmap that claimed
         * otherwise must not keep base from its timer */
        pmeth_txslot_t *b = &w->slot[w->base & w->mask];
        w->nsacked -= b->sacked;
        b->sacked = 0;
        apply_sack(w, sack, reach, now, &newest_once, &have_once);
    }
    if (pmeth_seq_lt(w->reach, cum + 1 + PMETH_WINDOW_SACK_SPAN)) {
        w->reach = cum + 1 + PMETH_WINDOW_SACK_SPAN;
    }
    if (have_once && now >= newest_once) {
        rtt_sample(w, now - newest_once);
        w->backoff = 0;
        w->rto = clamp_rto(w, w->srtt + 4 * w->rttvar);
    }
    if (w->probing && (w->probe_echoed || pmeth_seq_lt(w->probe_seq, w->base)
                       || w->slot[w->probe_seq & w->mask].sacked)) {
        /* The receiver answers: the path works, the back-off is over (the
         * estimate itself stays what the samples made it: Karn). */
        w->probing = false;
        w->backoff = 0;
        w->rto = clamp_rto(w, w->srtt ? w->srtt + 4 * w->rttvar : w->cfg.rto_init_ns);
        if (w->probe_echoed) {
            heard(w, w->probe_link, now);
            /* This ack was made after the probe itself arrived: a frame sent
             * before it on its link, neither acknowledged nor held, is lost.
             * An ack of the probe's original (no echo) tells nothing of the
             * frames after it: the receiver may just be slow to get to them. */
            w->expire_below = w->probe_sent_ns;
            w->expire_link = w->probe_link;
        } else {
            w->quiet_from = now;    /* the rest gets a full timeout from now */
        }
        w->probe_echoed = false;
    }
    w->deadline_valid = false;
    return n;
}

void pmeth_txwin_echo(pmeth_txwin_t *w, uint32_t seq, uint8_t xmit)
{
    if (w->probing && seq == w->probe_seq && xmit == w->probe_xmit) {
        w->probe_echoed = true;
    }
}

/* The end of what the receiver can tell us about: its bitmap covers 64 frames
 * past the cumulative ack.  A frame further on may well be held there, so it
 * runs no timer of its own until the acks come near it (the oldest frame
 * always does): resending it blindly would flood a large window with
 * duplicates after every loss. */
static uint32_t horizon(const pmeth_txwin_t *w)
{
    return w->next - w->base > PMETH_WINDOW_SACK_SPAN + 1 ? w->base + PMETH_WINDOW_SACK_SPAN + 1
                                                          : w->next;
}

uint64_t pmeth_txwin_next_deadline(pmeth_txwin_t *w)
{
    if (w->deadline_valid) {
        return w->deadline;
    }
    /* The earliest (re)transmission among frames not yet acknowledged nor held:
     * frames sent once were sent in sequence order, so the first of those is
     * the earliest of them; resent ones before it may be earlier, resent ones
     * after it are later. */
    uint64_t earliest = UINT64_MAX;
    bool known_lost = false;
    uint32_t end = horizon(w);
    for (uint32_t seq = w->base; seq != end; seq++) {
        const pmeth_txslot_t *s = &w->slot[seq & w->mask];
        w->slots_scanned++;
        if (s->sacked) {
            continue;
        }
        if (s->sent_ns < w->expire_below && s->link == w->expire_link) {
            known_lost = true;          /* left over by the resend cap: now */
            break;
        }
        if (s->sent_ns < earliest) {
            earliest = s->sent_ns;
        }
        if (s->resends == 0 && s->sent_ns >= w->expire_below) {
            break;      /* every frame after it was sent later still */
        }
    }
    if (known_lost) {
        w->deadline = 0;
    } else if (earliest == UINT64_MAX) {
        w->deadline = UINT64_MAX;
    } else if (w->probing) {
        /* waiting for the probe's answer: only the probe runs a timer */
        w->deadline = w->slot[w->probe_seq & w->mask].sent_ns + w->rto;
    } else {
        w->deadline = (earliest > w->quiet_from ? earliest : w->quiet_from) + w->rto;
    }
    w->deadline_valid = true;
    return w->deadline;
}

static void emit(pmeth_txwin_t *w, pmeth_txslot_t *s, uint32_t seq, uint64_t now, bool fast,
                 pmeth_txwin_due_t *out)
{
    mark_sent(w, s, now);
    *out = (pmeth_txwin_due_t){.handle = s->handle, .seq = seq, .link = s->link,
                               .xmit = s->resends, .fast = fast};
}

int pmeth_txwin_due(pmeth_txwin_t *w, uint64_t now, pmeth_txwin_due_t *out, unsigned max)
{
    unsigned n = 0;
    /* 1. frames the acks showed lost */
    for (uint32_t seq = w->base; w->nfast > 0 && n < max && seq != w->next; seq++) {
        pmeth_txslot_t *s = &w->slot[seq & w->mask];
        w->slots_scanned++;
        if (!s->fast_due) {
            continue;
        }
        s->fast_due = 0;
        w->nfast--;
        if (!s->sacked) {
            emit(w, s, seq, now, true, &out[n++]);
        }
    }
    if (n >= max || pmeth_txwin_next_deadline(w) > now) {
        goto done;
    }
    /* 2. frames a probe's answer showed lost (sent well before the probe and
     * neither acknowledged nor held when it came back) */
    uint32_t end = horizon(w);
    if (w->deadline == 0) {
        for (uint32_t seq = w->base; n < max && seq != end; seq++) {
            pmeth_txslot_t *s = &w->slot[seq & w->mask];
            w->slots_scanned++;
            if (s->sacked) {
                continue;
            }
            if (s->sent_ns >= w->expire_below) {
                if (s->resends == 0) {
                    break;      /* every frame after this one was sent later still */
                }
                continue;
            }
            if (s->link == w->expire_link) {
                emit(w, s, seq, now, false, &out[n++]);
            }
        }
        goto done;
    }
    /* 3. a timer expired.  The receiver may hold everything and only our ack
     * was lost, or the link may be down: one frame, the probe, finds out;
     * the rest waits for its answer.  Each expiry doubles the timeout. */
    if (n < max) {
        uint32_t probe = w->base;
        if (w->probing) {
            probe = w->probe_seq;               /* unanswered: the same one again */
        } else {
            uint64_t lim = now >= w->rto ? now - w->rto : 0;
            for (uint32_t seq = w->base; seq != end; seq++) {
                const pmeth_txslot_t *s = &w->slot[seq & w->mask];
                w->slots_scanned++;
                if (!s->sacked && s->sent_ns <= lim) {
                    probe = seq;
                    break;
                }
            }
        }
        pmeth_txslot_t *s = &w->slot[probe & w->mask];
        emit(w, s, probe, now, false, &out[n++]);
        w->probing = true;
        w->probe_echoed = false;
        w->probe_xmit = s->resends;
        w->probe_link = s->link;
        w->probe_seq = probe;
        w->probe_sent_ns = now;
        if (w->link_silent[s->link % PMETH_WINDOW_LINKS]++ == 0) {
            w->link_silent_since[s->link % PMETH_WINDOW_LINKS] = now;
        }
        w->sample_after_ns = now;
        w->backoff++;
        w->rto = clamp_rto(w, w->rto * 2);
    }
done:
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
    w->nsacked -= s->sacked;
    memset(s, 0, sizeof(*s));
    w->base++;
    w->deadline_valid = false;
    return true;
}

bool pmeth_txwin_link_silent(const pmeth_txwin_t *w, uint8_t link, unsigned min_probes,
                             uint64_t *since)
{
    unsigned l = link % PMETH_WINDOW_LINKS;
    if (w->link_silent[l] == 0 || w->link_silent[l] < min_probes) {
        return false;
    }
    *since = w->link_silent_since[l];
    return true;
}

unsigned pmeth_txwin_expire_link(pmeth_txwin_t *w, uint8_t link)
{
    unsigned n = 0;
    for (uint32_t seq = w->base; seq != w->next; seq++) {
        pmeth_txslot_t *s = &w->slot[seq & w->mask];
        if (s->link != link || s->sacked || s->fast_due) {
            continue;
        }
        s->fast_due = 1;
        w->nfast++;
        n++;
    }
    w->link_silent[link % PMETH_WINDOW_LINKS] = 0;     /* what goes now goes elsewhere */
    if (w->probing && w->probe_link == link) {
        /* the probe went where no answer can come from: the back-off was the
         * link's, not the peer's */
        w->probing = false;
        w->probe_echoed = false;
        w->backoff = 0;
        w->rto = clamp_rto(w, w->srtt ? w->srtt + 4 * w->rttvar : w->cfg.rto_init_ns);
    }
    if (w->expire_link == link) {
        w->expire_below = 0;
    }
    w->deadline_valid = false;
    return n;
}

void pmeth_txwin_relink(pmeth_txwin_t *w, uint32_t seq, uint8_t link)
{
    if (pmeth_seq_lt(seq, w->base) || !pmeth_seq_lt(seq, w->next)) {
        return;
    }
    w->slot[seq & w->mask].link = link;
}

/* ---- receiver ---- */

/* one allocation: the window, then the presence bits, then the handles */
static size_t rx_bits_offset(void)
{
    return (sizeof(pmeth_rxwin_t) + 7) & ~(size_t) 7;
}

static size_t rx_bits_words(uint32_t window)
{
    return (window + 63) / 64;
}

size_t pmeth_rxwin_bytes(uint32_t window)
{
    return rx_bits_offset() + rx_bits_words(window) * sizeof(uint64_t)
           + (size_t) window * sizeof(uintptr_t);
}

pmeth_rxwin_t *pmeth_rxwin_create(const pmeth_window_config_t *cfg)
{
    if (!config_ok(cfg)) {
        return NULL;
    }
    uint8_t *mem = calloc(1, pmeth_rxwin_bytes(cfg->window));
    if (mem == NULL) {
        return NULL;
    }
    pmeth_rxwin_t *w = (pmeth_rxwin_t *) mem;
    w->cfg = *cfg;
    w->mask = cfg->window - 1;
    w->present = (uint64_t *) (mem + rx_bits_offset());
    w->handle = (uintptr_t *) (w->present + rx_bits_words(cfg->window));
    return w;
}

void pmeth_rxwin_destroy(pmeth_rxwin_t *w)
{
    free(w);
}

static inline bool rx_present(const pmeth_rxwin_t *w, uint32_t slot)
{
    return w->present[slot / 64] >> (slot % 64) & 1;
}

static inline void rx_set(pmeth_rxwin_t *w, uint32_t slot, bool on)
{
    uint64_t bit = 1ull << (slot % 64);
    w->present[slot / 64] = on ? w->present[slot / 64] | bit : w->present[slot / 64] & ~bit;
}

bool pmeth_rxwin_start_at(pmeth_rxwin_t *w, uint32_t seq)
{
    if (w->held > 0) {
        return false;
    }
    w->base = seq;
    return true;
}

pmeth_rx_verdict_t pmeth_rxwin_classify(const pmeth_rxwin_t *w, uint32_t seq)
{
    int32_t d = (int32_t) (seq - w->base);
    if (d == 0) {
        return PMETH_RX_NEW_IN_ORDER;
    }
    if (d < 0) {
        /* the sender may still resend anything of the last window (its acks
         * were lost); older than that it cannot have, so it is not ours */
        return d >= -(int32_t) w->cfg.window ? PMETH_RX_DUPLICATE : PMETH_RX_OUT_OF_WINDOW;
    }
    if ((uint32_t) d >= w->cfg.window) {
        return PMETH_RX_OUT_OF_WINDOW;
    }
    return rx_present(w, seq & w->mask) ? PMETH_RX_DUPLICATE : PMETH_RX_NEW_OUT_OF_ORDER;
}

static void note_taken(pmeth_rxwin_t *w, uint64_t now)
{
    if (w->unacked++ == 0) {
        w->first_unacked_ns = now;
    }
    if (w->unacked >= w->cfg.ack_every || (w->ack_cap != 0 && w->unacked >= w->ack_cap)) {
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
        break;
    case PMETH_RX_NEW_OUT_OF_ORDER:
        /* Striping makes frames overtake each other all the time: an ack per
         * reordered frame would double the frame rate for nothing.  The
         * sender takes a frame as lost only when three later frames of its
         * link are held, which the next delayed ack (a few frames or
         * microseconds away) tells; a resent frame is acked at once
         * (pmeth_rxwin_saw_resend). */
        rx_set(w, seq & w->mask, true);
        w->handle[seq & w->mask] = handle;
        w->held++;
        note_taken(w, now);
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
    if (w->held == 0 || !rx_present(w, i)) {
        return false;
    }
    *handle = w->handle[i];
    rx_set(w, i, false);
    w->handle[i] = 0;
    w->held--;
    w->base++;
    return true;
}

bool pmeth_rxwin_drain(pmeth_rxwin_t *w, uintptr_t *handle)
{
    for (uint32_t k = 0; w->held > 0 && k < w->cfg.window; k++) {
        if (rx_present(w, k)) {
            *handle = w->handle[k];
            rx_set(w, k, false);
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
        uint32_t first = (w->base + 1) & w->mask;
        if (w->cfg.window >= 64) {
            /* 64 presence bits from FIRST on, wrapping around the ring: two
             * words, shifted (the windows are powers of two, so words do not
             * straddle the ring's end) */
            uint32_t nwords = w->cfg.window / 64, word = first / 64, off = first % 64;
            bits = w->present[word] >> off;
            if (off != 0) {
                bits |= w->present[(word + 1) % nwords] << (64 - off);
            }
            if (w->cfg.window == 64) {
                bits &= ~(1ull << 63);  /* bit 63 would be base itself */
            }
        } else {
            for (uint32_t i = 0; i < w->cfg.window - 1; i++) {
                bits |= (uint64_t) rx_present(w, (first + i) & w->mask) << i;
            }
        }
    }
    *cum = w->base;
    *sack = bits;
}
