/*
 * The receiver's half: frames are parsed where the kernel put them (the parser
 * trusts no length, offset or index from the wire and names why it drops a
 * frame), then DATA goes through the peer's receive window and up to ob1 in
 * sequence order, straight from the ring frame (zero copy).  A frame that
 * arrives ahead of a gap, as striping over links makes them, is held in its
 * ring slot until the gap fills.  A buffer array (frames marked CONT up to one
 * that is not: one ob1 fragment) is held likewise, frame by frame as each comes
 * in order, and goes to ob1 as one descriptor with a segment per frame once its
 * last frame is in: seed 001's array without the peek.
 */
#include "btl_pmeth.h"
#include "btl_pmeth_frag.h"

#include <stdlib.h>
#include <string.h>

/* Hand ob1 a fragment of N segments (BYTES in all) from EP in place, or one of
 * pmeth's own one-sided messages to btl_pmeth_rma.c; false when no one
 * registered TAG (not from ob1: the caller counts the drop). */
static bool to_ob1(mca_btl_base_endpoint_t *ep, uint8_t tag, mca_btl_base_segment_t *segs,
                   uint32_t n, size_t bytes)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (OPAL_UNLIKELY(pmeth_tag_is_rma(tag))) {
        /* served whatever btl_pmeth_rma says here (it says what we offer osc): a
         * peer run with it on is answered, refused if we registered nothing */
        pmeth_rma_deliver(ep, tag, segs, n, bytes);
        return true;
    }
    const mca_btl_active_message_callback_t *reg = &mca_btl_base_active_message_trigger[tag];
    if (OPAL_UNLIKELY(reg->cbfunc == NULL)) {
        return false;
    }
    mca_btl_base_descriptor_t des = {.des_segments = segs, .des_segment_count = n};
    reg->cbfunc(&mca_btl_pmeth, tag, &des, reg->cbdata);
    c->delivered++;
    c->delivered_bytes += bytes;
    return true;
}

/* Hand one DATA frame's payload from EP to ob1, in place. */
static void deliver(mca_btl_base_endpoint_t *ep, const pmeth_wire_view_t *v)
{
    mca_btl_base_segment_t seg = {.seg_addr.pval = (void *) v->payload, .seg_len = v->len};
    if (OPAL_UNLIKELY(!to_ob1(ep, v->tag, &seg, 1, v->len))) {
        mca_btl_pmeth_component.drops[PMETH_WIRE_MALFORMED]++;
    }
}

static pmeth_held_t *held_get(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_held_t *h = c->free_held;
    if (h != NULL) {
        c->free_held = h->next;
        return h;
    }
    return malloc(sizeof(*h));
}

static void held_put(pmeth_held_t *h)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    h->next = c->free_held;
    c->free_held = h;
}

static void lap_unlink(pmeth_link_t *link, pmeth_held_t *h)
{
    if (!h->on_lap && !h->on_xlist) {
        return;
    }
    pmeth_held_t **oldest = h->on_lap ? &link->held_oldest : &link->xheld_oldest;
    pmeth_held_t **newest = h->on_lap ? &link->held_newest : &link->xheld_newest;
    h->on_lap = h->on_xlist = false;
    if (h->lap_prev != NULL) {
        h->lap_prev->lap_next = h->lap_next;
    } else {
        *oldest = h->lap_next;
    }
    if (h->lap_next != NULL) {
        h->lap_next->lap_prev = h->lap_prev;
    } else {
        *newest = h->lap_prev;
    }
    h->lap_prev = h->lap_next = NULL;
}

void pmeth_held_release(pmeth_held_t *h)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_link_t *link = &c->links[h->link];
    if (h->copy != NULL) {
        free(h->copy);
        h->copy = NULL;
    } else {
        lap_unlink(link, h);
        pmeth_ring_rx_put(link->ring, h->id);
    }
    held_put(h);
}

/* Copy held frame H out of LINK's ring into private memory and give its slot back. */
static bool move_held_aside(pmeth_link_t *link, pmeth_held_t *h)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint8_t *copy = malloc(h->len > 0 ? h->len : 1);
    if (copy == NULL) {
        return false;
    }
    memcpy(copy, h->frame, h->len);
    lap_unlink(link, h);
    pmeth_ring_rx_put(link->ring, h->id);
    h->copy = copy;
    h->frame = copy;
    h->id = -1;
    c->copies_rx += h->len;
    c->held_moved++;
    return true;
}

/* Frames held ahead of a gap sit in their ring slots.  The kernel fills slots
 * strictly in order and drops every frame while its next slot is taken, so a
 * frame held for a whole lap of the ring would block the link, and with it
 * the very frame that fills the gap (with many peers and loss, the held
 * frames of all of them add up).  Those held for half a lap move to private
 * memory (counted: bytes copied receiving).
 * An AF_XDP socket has only the frames given back to it to fill, in any
 * order: there the oldest held ones move aside while more than half of its
 * frames are out (rings of 8 frames on two links, each holding frames that
 * wait for one the other would bring, stopped both). */
static void move_old_held_aside(pmeth_link_t *link)
{
    pmeth_held_t *h;
    uint32_t slots;
    while ((h = link->held_oldest) != NULL && pmeth_ring_rx_age(link->ring, h->id, &slots) > slots / 2) {
        if (!move_held_aside(link, h)) {
            return;
        }
    }
    while ((h = link->xheld_oldest) != NULL && pmeth_ring_rx_taken(link->ring, h->id, &slots) > slots / 2) {
        if (!move_held_aside(link, h)) {
            return;
        }
    }
}

/* Frames left for progress (by the keeper, or kept while add_procs probes)
 * sit in their ring slots as held ones do, and a slot the kernel comes round
 * to stops the ring.  One seven eighths of a lap old is given back unread:
 * not acked, its sender sends it again.  (AF_XDP frames never block.) */
static void release_old_deferred(pmeth_link_t *link)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint32_t slots, kept = 0;
    for (uint32_t i = 0; i < link->ndeferred; i++) {
        const struct pmeth_rx_frame *f = &link->deferred[i];
        if (pmeth_ring_rx_age(link->ring, f->id, &slots) > slots - slots / 8) {
            pmeth_ring_rx_put(link->ring, f->id);
            c->deferred_released++;
        } else {
            link->deferred[kept++] = *f;
        }
    }
    link->ndeferred = kept;
}

/* Hold the frame in ring slot F of LINK where it is (on the link's list of
 * held frames, which moves it out of the ring before the ring laps it). */
static pmeth_held_t *hold(pmeth_link_t *link, const struct pmeth_rx_frame *f)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_held_t *h = held_get();
    if (h == NULL) {
        return NULL;
    }
    h->link = (uint8_t) (link - c->links);
    h->id = f->id;
    h->frame = f->frame;
    h->len = f->len;
    h->copy = NULL;
    h->next = NULL;
    h->lap_next = NULL;
    h->lap_prev = NULL;
    h->on_lap = pmeth_ring_rx_in_order(link->ring, f->id);
    h->on_xlist = !h->on_lap;
    if (h->on_xlist) {
        /* an AF_XDP frame: given back in any order; its list is in arrival order */
        h->lap_prev = link->xheld_newest;
        if (link->xheld_newest != NULL) {
            link->xheld_newest->lap_next = h;
        } else {
            link->xheld_oldest = h;
        }
        link->xheld_newest = h;
        return h;
    }
    /* in ring order, oldest first, since move_old_held_aside looks at the oldest
     * only: frames are held in the order they arrived, but one kept for a later
     * pass (deferred) can come after younger ones */
    uint32_t slots, age = pmeth_ring_rx_age(link->ring, h->id, &slots);
    pmeth_held_t *after = link->held_newest;
    while (after != NULL && pmeth_ring_rx_age(link->ring, after->id, &slots) < age) {
        after = after->lap_prev;
    }
    h->lap_prev = after;
    h->lap_next = after != NULL ? after->lap_next : link->held_oldest;
    if (after != NULL) {
        after->lap_next = h;
    } else {
        link->held_oldest = h;
    }
    if (h->lap_next != NULL) {
        h->lap_next->lap_prev = h;
    } else {
        link->held_newest = h;
    }
    return h;
}

/* What a frame must be to be ours (our EtherType, job and id), at most MAX_FRAME
 * bytes: every frame's parse takes it, nothing from the peer sets it. */
static pmeth_wire_expect_t our_frames(uint32_t max_frame)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    return (pmeth_wire_expect_t){.ethertype = (uint16_t) c->ethertype, .job_key = c->job_key,
                                 .my_id = c->my_id, .max_frame = max_frame,
                                 .nlinks = PMETH_MAX_LINKS};
}

/* A held frame's view, parsed again where the frame is now (it may have moved
 * out of the ring): parsed once already, but nothing is trusted twice. */
static bool parse_held(const pmeth_held_t *h, pmeth_wire_view_t *v)
{
    pmeth_wire_expect_t expect = our_frames(h->len);
    return pmeth_wire_parse(h->frame, h->len, &expect, v) == PMETH_WIRE_OK;
}

/* Give back the held frames FIRST, FIRST->next, ... (to the ring, or freed). */
static void release_list(pmeth_held_t *first)
{
    while (first != NULL) {
        pmeth_held_t *h = first;
        first = h->next;
        pmeth_held_release(h);
    }
}

void pmeth_array_release(mca_btl_base_endpoint_t *ep)
{
    release_list(ep->array_first);
    ep->array_first = ep->array_last = NULL;
    ep->array = (pmeth_wire_array_t) {0};
}

/* The array's frames FIRST..., each parsed again where it is now (a frame may
 * have moved out of the ring meanwhile; nothing from the wire is trusted
 * twice), to ob1 as one descriptor of a segment per frame. */
static void deliver_array(mca_btl_base_endpoint_t *ep, pmeth_held_t *first, uint8_t tag)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_base_segment_t segs[PMETH_WIRE_ARRAY_MAX];
    uint32_t n = 0, frames = 0;
    size_t bytes = 0;
    bool ok = true;
    for (pmeth_held_t *h = first; h != NULL; h = h->next) {
        pmeth_wire_view_t v;
        frames++;
        /* the rule kept at most PMETH_WIRE_ARRAY_MAX: the bound guards segs */
        if (!ok || n == PMETH_WIRE_ARRAY_MAX || !parse_held(h, &v)) {
            ok = false;
            continue;
        }
        segs[n].seg_addr.pval = (void *) v.payload;
        segs[n].seg_len = v.len;
        bytes += v.len;
        n++;
    }
    if (OPAL_LIKELY(ok && to_ob1(ep, tag, segs, n, bytes))) {
        c->arrays_received++;
    } else {
        c->drops[PMETH_WIRE_MALFORMED] += frames;
        c->arrays_dropped++;
    }
    release_list(first);
}

/* H, the next frame in sequence (view V) and held, goes by the buffer-array
 * rule (pmeth_wire_array_next): kept, delivered alone, delivered with the
 * array it completes, or dropped. */
static void array_add(mca_btl_base_endpoint_t *ep, pmeth_held_t *h, const pmeth_wire_view_t *v)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    h->next = NULL;
    switch (pmeth_wire_array_next(&ep->array, v->cont, v->tag)) {
    case PMETH_ARRAY_SINGLE:
        deliver(ep, v);
        pmeth_held_release(h);
        break;
    case PMETH_ARRAY_KEEP:
        if (ep->array_last != NULL) {
            ep->array_last->next = h;
        } else {
            ep->array_first = h;
        }
        ep->array_last = h;
        break;
    case PMETH_ARRAY_COMPLETE: {
        pmeth_held_t *first = ep->array_first;
        ep->array_last->next = h;
        /* the endpoint starts afresh before ob1 runs (its callback may send) */
        ep->array_first = ep->array_last = NULL;
        deliver_array(ep, first, ep->array.tag);
        break;
    }
    case PMETH_ARRAY_DROP_ALL:
        for (pmeth_held_t *k = ep->array_first; k != NULL; k = k->next) {
            c->drops[PMETH_WIRE_MALFORMED]++;
        }
        c->drops[PMETH_WIRE_MALFORMED]++;
        c->arrays_dropped++;
        release_list(ep->array_first);
        ep->array_first = ep->array_last = NULL;
        pmeth_held_release(h);
        break;
    case PMETH_ARRAY_DROP:
        c->drops[PMETH_WIRE_MALFORMED]++;
        pmeth_held_release(h);
        break;
    }
}

/* The held frames the window now releases, in order. */
static void deliver_held(mca_btl_base_endpoint_t *ep)
{
    uintptr_t handle;
    while (pmeth_rxwin_pop(ep->rx, &handle)) {
        pmeth_held_t *h = (pmeth_held_t *) handle;
        pmeth_wire_view_t v;
        if (!parse_held(h, &v)) {
            pmeth_held_release(h);
        } else if (pmeth_wire_array_holds(&ep->array, v.cont)) {
            array_add(ep, h, &v);
        } else {
            deliver(ep, &v);
            pmeth_held_release(h);
        }
    }
}

/* The peer sent this on its current path (path migration): our standalone
 * acks go back on the same path, which it just used successfully. */
static inline void note_current(pmeth_link_t *link, const pmeth_wire_view_t *v,
                                mca_btl_base_endpoint_t *ep)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint8_t li = (uint8_t) (link - c->links);
    const pmeth_path_t *rp = &ep->paths[ep->reply_path];
    if (OPAL_LIKELY(rp->local == li && rp->peer_link == v->link)) {
        return;
    }
    for (uint8_t k = 0; k < ep->npaths; k++) {
        /* not onto a path we found dead towards the peer (its frames may still
         * reach us there: a link dead one way) */
        if (ep->paths[k].local == li && ep->paths[k].peer_link == v->link
            && pmeth_path_usable(ep, k)) {
            ep->reply_path = k;
        }
    }
}

static void on_data(pmeth_link_t *link, const struct pmeth_rx_frame *f, const pmeth_wire_view_t *v,
                    mca_btl_base_endpoint_t *ep, uint64_t *now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->tx == NULL && pmeth_endpoint_windows(ep) != OPAL_SUCCESS) {
        pmeth_ring_rx_put(link->ring, f->id);   /* not acked: it comes again */
        return;
    }
    if (*now == 0) {
        *now = pmeth_now_ns();
    }
    if (v->current) {
        note_current(link, v, ep);
    }
    pmeth_acked(ep, v, *now);
    /* its one-way delay (when the kernel took it in, minus its stamp: how long
     * we took to get to it is no queue the sender could drain): the least
     * since our last frame to the peer goes back in the next one (pmeth_pace.h) */
    uint32_t delay = pmeth_stamp_us(f->arrived_ns ? f->arrived_ns : pmeth_wall_ns()) - v->stamp;
    if (!ep->delay_have || (int32_t) (delay - ep->delay_least) < 0) {
        ep->delay_least = delay;
        ep->delay_have = true;
    }
    if (v->xmit > 0) {
        pmeth_rxwin_saw_resend(ep->rx, v->seq, v->xmit);
    }
    pmeth_credit_arrival(&c->credits, &ep->credit_peer, *now);
    /* a peer granted a few frames hears of room after a quarter of them, not
     * after ack_every (the last one it may send asks at once: MORE, below);
     * never sooner than every PMETH_ACK_EVERY_MIN frames, the rule of old, so many
     * senders at once do not draw more acks from a busy receiver than before */
    uint32_t share = pmeth_credit_share(&c->credits), cap = share / 4 + 1;
    pmeth_rxwin_set_ack_cap(ep->rx, share == PMETH_CREDIT_UNLIMITED ? 0
                                    : cap > PMETH_ACK_EVERY_MIN ? cap : PMETH_ACK_EVERY_MIN);
    if (v->more) {
        pmeth_rxwin_ack_at_once(ep->rx);        /* the sender used up its grant */
        c->credit_requests++;
    }
    pmeth_held_t *h = NULL;
    uintptr_t handle = 0;
    pmeth_rx_verdict_t r = pmeth_rxwin_classify(ep->rx, v->seq);
    /* held: ahead of a gap, or a frame of a buffer array */
    if (r == PMETH_RX_NEW_OUT_OF_ORDER
        || (r == PMETH_RX_NEW_IN_ORDER && pmeth_wire_array_holds(&ep->array, v->cont))) {
        h = hold(link, f);
        if (h == NULL) {
            pmeth_ring_rx_put(link->ring, f->id);   /* not acked: it comes again */
            return;
        }
        if (r == PMETH_RX_NEW_OUT_OF_ORDER) {
            handle = (uintptr_t) h;
        }
    }
    r = pmeth_rxwin_accept(ep->rx, v->seq, handle, *now);
    switch (r) {
    case PMETH_RX_NEW_IN_ORDER:
        ep->dup_resends = 0;        /* the peer moves on: our acks get there */
        if (h != NULL) {
            array_add(ep, h, v);
        } else {
            deliver(ep, v);
            pmeth_ring_rx_put(link->ring, f->id);
        }
        deliver_held(ep);
        break;
    case PMETH_RX_NEW_OUT_OF_ORDER:
        break;          /* held in its ring slot */
    case PMETH_RX_DUPLICATE:
        c->duplicates++;
        if (v->xmit >= 2 && ep->apm_conn != NULL) {
            pmeth_apm_acks_lost(ep, *now);
        }
        pmeth_ring_rx_put(link->ring, f->id);
        break;
    default:
        c->out_of_window++;
        pmeth_ring_rx_put(link->ring, f->id);
        break;
    }
    if (pmeth_rxwin_ack_now(ep->rx)) {
        pmeth_ack_soon(ep);
    }
    pmeth_endpoint_activate(ep);
}

/* A sender we have no endpoint for: added after this progress call's polling
 * (pmeth_add_peer_lazily), its frame dropped now and resent later. */
static void note_unknown_sender(uint32_t id)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    for (uint32_t i = 0; i < c->nlazy; i++) {
        if (c->lazy_ids[i] == id) {
            return;
        }
    }
    if (c->nlazy < sizeof(c->lazy_ids) / sizeof(c->lazy_ids[0])) {
        c->lazy_ids[c->nlazy++] = id;
    }
}

/* One frame taken from LINK's ring (FRESH: not one kept from an earlier poll):
 * checked, then acted on; 1 when it was data for ob1. */
static int take_frame(pmeth_link_t *link, const struct pmeth_rx_frame *f, uint64_t *now,
                      bool fresh)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_wire_view_t v;
    pmeth_wire_expect_t expect = our_frames(link->mtu + 14);
    pmeth_wire_verdict_t verdict = pmeth_wire_parse(f->frame, f->len, &expect, &v);
    if (OPAL_UNLIKELY(verdict != PMETH_WIRE_OK)) {
        c->drops[verdict]++;
        pmeth_ring_rx_put(link->ring, f->id);
        return 0;
    }
    /* a NIC passes frames for other MACs to packet sockets too (veth, a
     * flooding switch): only frames addressed to this link are ours */
    if (OPAL_UNLIKELY(memcmp(f->frame, link->mac, 6) != 0)) {
        c->drops[PMETH_WIRE_FOREIGN]++;
        pmeth_ring_rx_put(link->ring, f->id);
        return 0;
    }
    link->frames_in++;
    link->bytes_in += f->len;
    mca_btl_base_endpoint_t *ep = v.src_id < c->nby_id ? c->by_id[v.src_id] : NULL;
    if (OPAL_UNLIKELY(ep != NULL && ep->state == PMETH_EP_UNREACHABLE)
        && (v.type == PMETH_WIRE_PROBE || v.type == PMETH_WIRE_DATA)) {
        pmeth_endpoint_heard(ep);
    }
    switch (v.type) {
    case PMETH_WIRE_PROBE:
        pmeth_answer_probe(link, &v);
        pmeth_ring_rx_put(link->ring, f->id);
        break;
    case PMETH_WIRE_PROBE_REPLY:
        pmeth_probe_reply(link, &v);
        pmeth_ring_rx_put(link->ring, f->id);
        break;
    case PMETH_WIRE_ACK:
        if (ep != NULL && ep->state == PMETH_EP_READY) {
            if (*now == 0) {
                *now = pmeth_now_ns();
            }
            if (v.current) {
                note_current(link, &v, ep);
            }
            pmeth_acked(ep, &v, *now);
        }
        pmeth_ring_rx_put(link->ring, f->id);
        break;
    case PMETH_WIRE_PATH_DOWN:
        if (ep != NULL && ep->state == PMETH_EP_READY) {
            pmeth_apm_path_down_notice(ep, &v);
        }
        pmeth_ring_rx_put(link->ring, f->id);
        break;
    case PMETH_WIRE_DATA:
        if (ep == NULL || ep->proc == NULL || ep->state != PMETH_EP_READY || c->probing) {
            /* unknown, only probed ahead, or to be probed again: added (probed) after
             * this progress call */
            if (ep == NULL || ep->proc == NULL || ep->state == PMETH_EP_NEW) {
                note_unknown_sender(v.src_id);
            }
            /* Data of a peer with paths, or whose probing is under way, is kept for
             * the next poll rather than dropped: one probed ahead that ob1 has not
             * added (added lazily at the start of the next progress call), one whose
             * answers to our probes are still coming (it decided before we did), or
             * any while add_procs probes another peer (ob1 is not to be called from
             * in there).  Dropped, the frame came again only after the sender's
             * retransmit timer: 2 ms or more on every peer's first message.  A frame
             * is kept again only while its peer's probing lasts (bounded by
             * btl_pmeth_probe_timeout_ms); otherwise once. */
            bool probing = ep != NULL && ep->state == PMETH_EP_PROBING;
            if (ep != NULL && (probing || (fresh && ep->state == PMETH_EP_READY))
                && link->ndeferred < PMETH_DEFER_MAX) {
                link->deferred[link->ndeferred++] = *f;
                c->data_kept += fresh;
                break;
            }
            pmeth_ring_rx_put(link->ring, f->id);       /* not acked: it comes again */
            break;
        }
        on_data(link, f, &v, ep, now);
        return 1;
    default:
        pmeth_ring_rx_put(link->ring, f->id);   /* reserved for later protocol steps */
        break;
    }
    return 0;
}

/* What the keeper left while we were away, and data kept while ob1 could not
 * take it (take_frame): before anything newer.  (Its own function: the copy
 * is large, the fast path's frame small.) */
static __attribute__((noinline)) int take_deferred(pmeth_link_t *link, uint64_t *now)
{
    struct pmeth_rx_frame kept[PMETH_DEFER_MAX];
    uint32_t n = link->ndeferred;
    int total = 0;
    memcpy(kept, link->deferred, n * sizeof(kept[0]));
    link->ndeferred = 0;
    for (uint32_t i = 0; i < n; i++) {
        total += take_frame(link, &kept[i], now, false);
    }
    return total;
}

int pmeth_poll_link(pmeth_link_t *link, unsigned budget)
{
    struct pmeth_rx_frame frames[64];
    uint64_t now = 0;
    int total = 0;
    if (OPAL_UNLIKELY(link->ndeferred > 0) && !mca_btl_pmeth_component.probing) {
        /* not while add_procs probes: what is kept then waits for the progress
         * call after it */
        total += take_deferred(link, &now);
    }
    if (budget > 64) {
        budget = 64;
    }
    int n = pmeth_ring_rx_poll(link->ring, frames, (int) budget);
    if (link->held_oldest != NULL || link->xheld_oldest != NULL) {
        move_old_held_aside(link);
    }
    if (OPAL_UNLIKELY(link->ndeferred > 0)) {
        release_old_deferred(link);     /* add_procs probes: they wait */
    }
    for (int i = 0; i < n; i++) {
        total += take_frame(link, &frames[i], &now, true);
    }
    if (OPAL_UNLIKELY(mca_btl_pmeth_component.rma_puts_owed > 0)) {
        pmeth_rma_answer_puts();    /* one PUT_DONE per origin for this poll's puts */
    }
    return total;
}

/* May the keeper take DATA frame V, of a peer's one-sided request, while the
 * process is away?  Passive-target operations on a rank computing outside MPI
 * would otherwise wait for it to come back (hardware RDMA needs no one).
 * Only what touches no one else: a frame of a put, get or atomic (served by
 * pmeth alone; osc's callbacks run on answers, which wait), in a buffer array
 * only one such request began, the next the peer's window expects with nothing
 * held beyond it (so nothing of ob1's is overtaken or delivered along), from a
 * ready peer with no fragment whose ob1 callback waits for the ack the frame
 * carries. */
static bool keeper_may_serve(const pmeth_wire_view_t *v)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (v->type != PMETH_WIRE_DATA || !pmeth_tag_is_rma_request(v->tag)
        || v->src_id >= c->nby_id || c->probing) {
        return false;
    }
    const mca_btl_base_endpoint_t *ep = c->by_id[v->src_id];
    return ep != NULL && ep->state == PMETH_EP_READY && ep->proc != NULL && ep->rx != NULL
           && ep->cb_at_ack == 0 && !ep->array.discard
           && (ep->array.frames == 0 || pmeth_tag_is_rma_request(ep->array.tag))
           && ep->rx->held == 0 && pmeth_rxwin_classify(ep->rx, v->seq) == PMETH_RX_NEW_IN_ORDER;
}

int pmeth_keeper_serve_deferred(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint64_t now = 0;
    int served = 0;
    /* a striped request's frames come in over several links in any order: one
     * left for progress because its predecessor had not arrived may be next now
     * (else the origin's epoch waited for the target to come back) */
    for (bool again = true; again;) {
        again = false;
        for (uint32_t l = 0; l < c->nlinks; l++) {
            pmeth_link_t *link = &c->links[l];
            pmeth_wire_expect_t expect = our_frames(link->mtu + 14);
            uint32_t n = link->ndeferred, kept = 0;
            for (uint32_t i = 0; i < n; i++) {
                struct pmeth_rx_frame f = link->deferred[i];
                pmeth_wire_view_t v;
                if (pmeth_wire_parse(f.frame, f.len, &expect, &v) == PMETH_WIRE_OK
                    && memcmp(f.frame, link->mac, 6) == 0 && keeper_may_serve(&v)) {
                    take_frame(link, &f, &now, false);
                    c->keeper_rma++;
                    served++;
                    again = true;
                } else {
                    link->deferred[kept++] = f;     /* in ring order still */
                }
            }
            /* (serving adds nothing to the list; were it to, those stay behind) */
            for (uint32_t i = n; i < link->ndeferred; i++) {
                link->deferred[kept++] = link->deferred[i];
            }
            link->ndeferred = kept;
        }
    }
    if (served > 0 && c->rma_puts_owed > 0) {
        pmeth_rma_answer_puts();
    }
    return served;
}

int pmeth_keeper_poll_link(pmeth_link_t *link)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_wire_expect_t expect = our_frames(link->mtu + 14);
    uint64_t now = 0;
    int taken = 0;
    while (link->ndeferred < PMETH_DEFER_MAX) {
        struct pmeth_rx_frame frames[PMETH_DEFER_MAX];
        int n = pmeth_ring_rx_poll(link->ring, frames, (int) (PMETH_DEFER_MAX - link->ndeferred));
        if (n <= 0) {
            break;
        }
        /* the ring moves on while frames wait in it: held ones move aside,
         * deferred ones that would stop it go back (as in pmeth_poll_link) */
        if (link->held_oldest != NULL || link->xheld_oldest != NULL) {
            move_old_held_aside(link);
        }
        if (link->ndeferred > 0) {
            release_old_deferred(link);
        }
        for (int i = 0; i < n; i++) {
            /* what the keeper may take: a PROBE (answered: a peer that meets us while
             * we are away from MPI must not call us unreachable), and an ack that is
             * well formed, ours, from a ready peer with no fragment whose ob1
             * callback waits for an ack (that callback is ob1's thread's to make);
             * everything else waits for progress, in order */
            pmeth_wire_view_t v;
            mca_btl_base_endpoint_t *ep = NULL;
            bool ours = pmeth_wire_parse(frames[i].frame, frames[i].len, &expect, &v)
                            == PMETH_WIRE_OK
                        && memcmp(frames[i].frame, link->mac, 6) == 0;
            if (ours && v.type == PMETH_WIRE_PROBE) {
                take_frame(link, &frames[i], &now, false);
                c->keeper_probes++;
                taken++;
            } else if (ours && v.type == PMETH_WIRE_ACK && v.src_id < c->nby_id
                       && (ep = c->by_id[v.src_id]) != NULL && ep->state == PMETH_EP_READY
                       && ep->cb_at_ack == 0) {
                take_frame(link, &frames[i], &now, false);
                taken++;
            } else if (ours && keeper_may_serve(&v)) {
                take_frame(link, &frames[i], &now, false);
                c->keeper_rma++;
                taken++;
            } else {
                link->deferred[link->ndeferred++] = frames[i];
            }
        }
    }
    if (c->rma_puts_owed > 0) {
        pmeth_rma_answer_puts();
    }
    return taken;
}
