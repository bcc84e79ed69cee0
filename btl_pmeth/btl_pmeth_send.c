/*
 * The sender's half: every fragment is one DATA frame with the next sequence
 * number of its peer's window, the cumulative and selective acks we owe that
 * peer piggy-backed on it.  A frame stays in its ring until acknowledged, which
 * makes it its own retransmit copy: a resend is one more posting of the same
 * frame, on the same link.  Fragments that find the window full wait, in order,
 * on the endpoint's pending list: ob1 sees nothing lost, duplicated or
 * reordered, so a message start is never refused (see btl_pmeth_frag.h).
 *
 * Kicks: posting is a store into the ring; telling the kernel is a system
 * call.  Latency-bound frames (message starts, short ones) are kicked at once,
 * bulk frames in batches of btl_pmeth_kick_batch and at the end of every
 * progress call.
 */
#include "btl_pmeth.h"
#include "btl_pmeth_frag.h"

#include <errno.h>

/* Tell the kernel about LINK's posted frames.  A kick refused because the link
 * is down is the earliest word of it (before netlink's, which needs apm's
 * thread to be scheduled): path migration hears of it at once, and of the
 * link taking frames again. */
void pmeth_link_kick(pmeth_link_t *link)
{
    int rc = pmeth_ring_tx_kick(link->ring);
    link->unkicked = 0;
    bool refused = rc == -ENETDOWN || rc == -ENXIO || rc == -ENODEV;
    if (OPAL_UNLIKELY(refused != link->refused) && mca_btl_pmeth_component.apm != NULL) {
        link->refused = refused;
        apm_link_event(mca_btl_pmeth_component.apm, link->ifindex, !refused, pmeth_now_ns());
    }
}

static inline void kick(pmeth_link_t *link)
{
    if (link->unkicked > 0 || pmeth_ring_tx_unsent(link->ring)) {
        pmeth_link_kick(link);
    }
}

void pmeth_kick_all(bool force)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    for (uint32_t i = 0; i < c->nlinks; i++) {
        kick(&c->links[i]);
    }
}

/* The acks (and echo) we owe EP, into FRAME, and our grant to it. */
static void put_acks(mca_btl_base_endpoint_t *ep, void *frame)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint32_t ack, echo_seq;
    uint64_t sack;
    uint8_t echo_xmit;
    pmeth_rxwin_ack_fields(ep->rx, &ack, &sack);
    pmeth_wire_set_ack(frame, ack, sack);
    if (c->credits.policy != PMETH_CREDIT_OFF) {
        uint32_t share = pmeth_credit_share(&c->credits);
        pmeth_wire_set_credit(frame, pmeth_credit_encode(&c->credits, share));
    }
    if (pmeth_rxwin_echo(ep->rx, &echo_seq, &echo_xmit)) {
        pmeth_wire_set_echo(frame, echo_seq, echo_xmit);
    }
    pmeth_wire_set_stamp(frame, pmeth_stamp_us(pmeth_wall_ns()));
    if (ep->delay_have) {
        pmeth_wire_set_delay(frame, ep->delay_least);
        ep->delay_have = false;
    }
}

/* The same for a frame sent again (resent, or moved to another path): the
 * delay it carried was measured before it was lost, and a queue that built
 * since would hide behind it (the least report of a round counts). */
static void put_acks_again(mca_btl_base_endpoint_t *ep, void *frame)
{
    pmeth_wire_clear_delay(frame);
    put_acks(ep, frame);
}

/* Write the headers of FRAG's frame (addresses of its path, its sequence
 * number, the acks we owe the peer) and post it. */
static void post_frame(mca_btl_pmeth_frag_t *frag, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_base_endpoint_t *ep = frag->endpoint;
    const pmeth_path_t *path = &ep->paths[frag->path];
    pmeth_link_t *link = &c->links[path->local];
    void *frame = pmeth_ring_tx_frame(link->ring, frag->frame_id);
    frag->frame_len = PMETH_WIRE_HDR_LEN + (uint32_t) frag->segment.seg_len;
    pmeth_txwin_set_lane(ep->tx, frag->seq, pmeth_path_lane(path, frag->frame_len));
    pmeth_wire_build_data(frame, path->peer_mac, link->mac, (uint16_t) c->ethertype, c->job_key,
                          ep->peer_id, c->my_id, path->local, frag->tag, frag->seq, 0, 0,
                          (uint16_t) frag->segment.seg_len);
    if (frag->path == ep->primary) {
        pmeth_wire_set_current(frame, true);
    }
    if (frag->state & PMETH_FRAG_CONT) {
        pmeth_wire_set_cont(frame);
    }
    put_acks(ep, frame);
    pmeth_rxwin_ack_sent(ep->rx);
    c->acks_piggybacked++;
    uint32_t limit = pmeth_send_limit(ep, now);
    if (pmeth_send_limited(ep) && pmeth_txwin_inflight(ep->tx) >= limit
        && frag->seq - ep->more_seq >= (limit + 1) / 2) {
        /* the grant is used up: this frame asks for an ack at once (and a new
         * grant with it), but only every half grant, so that a sender held at
         * its grant does not draw an ack for every frame */
        pmeth_wire_set_more(frame, true);
        ep->more_seq = frag->seq;
        c->credit_asked++;
    }
    bool urgent = ((frag->base.des_flags & MCA_BTL_DES_FLAGS_PRIORITY)
                   || frag->segment.seg_len < c->stripe_min || (frag->state & PMETH_FRAG_INTERNAL))
                  && !c->posting_array;
    /* a latency-bound frame with nothing posted before it goes out now, past
     * the ring (pmeth_ring_tx_post_now); the rest wait for a kick */
    bool sent;
    if (urgent && link->unkicked == 0) {
        /* posted in the ring when it cannot go at once */
        sent = pmeth_ring_tx_post_now(link->ring, frag->frame_id, frag->frame_len, true);
    } else {
        pmeth_ring_tx_post(link->ring, frag->frame_id, frag->frame_len);
        sent = false;
    }
    link->unkicked += !sent;
    if (!(frag->base.des_flags & MCA_BTL_DES_FLAGS_PRIORITY)) {
        c->burst_used++;        /* bulk only: message starts never wait (frag_for) */
    }
    pmeth_frag_posted(frag, limit);
    link->frames_out++;
    link->bytes_out += frag->frame_len;
    if (!sent && (urgent || link->unkicked >= c->kick_batch)) {
        kick(link);
    }
}

/* Give FRAG the next sequence number and send it; false if the window is
 * closed or a staged fragment still finds no frame. */
static bool try_send(mca_btl_pmeth_frag_t *frag, uint64_t now)
{
    mca_btl_base_endpoint_t *ep = frag->endpoint;
    if (!pmeth_txwin_can_send(ep->tx)) {
        return false;
    }
    /* a message start's later frames are bulk: they wait for the peer's grant
     * (the start itself went; receiver-ready sending, pmeth_credit.h) */
    if (frag->wait_grant && pmeth_send_limited(ep)
        && pmeth_txwin_inflight(ep->tx) >= pmeth_send_limit(ep, now)) {
        return false;
    }
    if (frag->frame_id < 0 && !pmeth_frag_unstage(frag)) {
        return false;
    }
    if (OPAL_UNLIKELY(!pmeth_path_usable(ep, frag->path)) && !pmeth_frag_rehome(frag)) {
        return false;       /* no frame free on the paths left: it waits (pending) */
    }
    frag->seq = pmeth_txwin_push(ep->tx, (uintptr_t) frag, now, ep->paths[frag->path].local);
    frag->state |= PMETH_FRAG_IN_WINDOW;
    post_frame(frag, now);
    return true;
}

static void append_pending(mca_btl_base_endpoint_t *ep, mca_btl_pmeth_frag_t *frag)
{
    frag->next = NULL;
    frag->state |= PMETH_FRAG_PENDING;
    if (ep->pending_tail != NULL) {
        ep->pending_tail->next = frag;
    } else {
        ep->pending_head = frag;
    }
    ep->pending_tail = frag;
}

/* Post what waits on EP's pending list while the window lets us. */
static int send_pending(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    int sent = 0;
    while (ep->pending_head != NULL) {
        mca_btl_pmeth_frag_t *frag = ep->pending_head;
        if (!try_send(frag, now)) {
            break;
        }
        ep->pending_head = frag->next;
        if (ep->pending_head == NULL) {
            ep->pending_tail = NULL;
        }
        frag->state &= (uint8_t) ~PMETH_FRAG_PENDING;
        sent++;
    }
    return sent;
}

/* FRAG's turn: sent now, or on the pending list behind those already there. */
static int send_or_queue(mca_btl_base_endpoint_t *ep, mca_btl_pmeth_frag_t *frag, uint64_t now)
{
    if (ep->pending_head != NULL || !try_send(frag, now)) {
        mca_btl_pmeth_component.start_waits += frag->wait_grant;
        /* a frame taken but not posted would hold up every later frame of its
         * ring (the kernel sends slots in order): wait in private memory */
        if (frag->frame_id >= 0 && !pmeth_frag_move_aside(frag)) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        append_pending(ep, frag);
    }
    return OPAL_SUCCESS;
}

/* FRAG and the rest of its buffer array (if any) to EP, in order: the array's
 * frames take the sequence numbers after the first one's, which is how the
 * receiver puts the array together.  Fails only when FRAG could neither be
 * posted nor set aside (ob1 keeps the descriptor, and its array). */
static int send_array(mca_btl_base_endpoint_t *ep, mca_btl_pmeth_frag_t *frag,
                      mca_btl_base_tag_t tag, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_pmeth_frag_t *rest = frag->array_next;
    frag->tag = tag;
    frag->array_next = NULL;
    /* an array's frames are posted first and the kernel told once a link, after
     * the last: a kick per frame would push each through the kernel's send path
     * on its own (a syscall each) */
    c->posting_array = rest != NULL;
    if (send_or_queue(ep, frag, now) != OPAL_SUCCESS) {
        frag->array_next = rest;
        c->posting_array = false;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (rest != NULL) {
        mca_btl_pmeth_component.arrays_sent++;
    }
    while (rest != NULL) {
        mca_btl_pmeth_frag_t *next = rest->array_next;
        rest->array_next = NULL;
        rest->tag = tag;
        if (send_or_queue(ep, rest, now) != OPAL_SUCCESS) {
            /* no memory to set it aside: it waits in its frame (a frame held
             * up behind it waits as long, nothing is lost) */
            append_pending(ep, rest);
        }
        rest = next;
    }
    if (c->posting_array) {
        c->posting_array = false;
        pmeth_kick_all(false);
    }
    pmeth_endpoint_activate(ep);
    return OPAL_SUCCESS;
}

int pmeth_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
               mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_pmeth_frag_t *frag = (mca_btl_pmeth_frag_t *) des;
    PMETH_LOCK();
    if (OPAL_UNLIKELY(pmeth_endpoint_windows(ep) != OPAL_SUCCESS)) {
        PMETH_UNLOCK();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    pmeth_apm_poll(ep, pmeth_now_ns());
    /* a message start ob1 packed into private memory (alloc, or a start whose
     * frames could not go at once) longer than a frame: one frame's worth each */
    if (frag->frame_id < 0 && frag->segment.seg_len > mca_btl_pmeth_component.frame_payload
        && !pmeth_frag_split(frag)) {
        PMETH_UNLOCK();
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    int rc = send_array(ep, frag, tag, pmeth_now_ns());
    PMETH_UNLOCK();
    return rc;
}

int pmeth_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                struct opal_convertor_t *convertor, void *header, size_t header_size,
                size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const size_t payload = c->frame_payload;
    size_t size = header_size + payload_size;
    uint32_t nframes = size > payload ? (uint32_t) ((size + payload - 1) / payload) : 1;
    mca_btl_pmeth_frag_t *frag = NULL;

    PMETH_LOCK();
    if (OPAL_UNLIKELY(size > mca_btl_pmeth.btl_eager_limit || header_size > payload
                      || pmeth_endpoint_windows(ep) != OPAL_SUCCESS)) {
        goto refuse;
    }
    if (!pmeth_start_fits(ep, nframes)) {
        goto refuse;
    }
    frag = pmeth_frag_get(ep);
    if (frag == NULL || !pmeth_frag_take_start(frag, size)) {
        goto refuse;
    }
    memcpy(frag->segment.seg_addr.pval, header, header_size);
    if (payload_size > 0 && !opal_convertor_need_buffers(convertor)) {
        /* contiguous user data: straight into the frames, without the
         * convertor's generic pack (ob1 is done with the convertor after a
         * sendi that succeeds) */
        const uint8_t *src;
        opal_convertor_get_current_pointer(convertor, (void **) &src);
        for (mca_btl_pmeth_frag_t *f = frag; f != NULL; f = f->array_next) {
            size_t skip = f == frag ? header_size : 0, n = f->segment.seg_len - skip;
            memcpy((uint8_t *) f->segment.seg_addr.pval + skip, src, n);
            src += n;
        }
    } else if (payload_size > 0) {
        /* one iovec per frame (take_start set their lengths), the header in the first */
        struct iovec iov[PMETH_WIRE_ARRAY_MAX];
        uint32_t iov_count = 0;
        for (mca_btl_pmeth_frag_t *f = frag; f != NULL && iov_count < PMETH_WIRE_ARRAY_MAX;
             f = f->array_next) {
            size_t skip = f == frag ? header_size : 0;
            iov[iov_count].iov_base = (uint8_t *) f->segment.seg_addr.pval + skip;
            iov[iov_count].iov_len = f->segment.seg_len - skip;
            iov_count++;
        }
        size_t max_data = payload_size, start = convertor->bConverted;
        if (opal_convertor_pack(convertor, iov, &iov_count, &max_data) < 0 || max_data != payload_size) {
            /* back where ob1 gave it: ob1 resets the convertor only when it gets a
             * descriptor from a refused sendi, and packs from where it is left */
            opal_convertor_set_position(convertor, &start);
            goto refuse;
        }
    }
    frag->state = (uint8_t) (PMETH_FRAG_INTERNAL | (frag->state & PMETH_FRAG_CONT));
    frag->base.des_flags = flags;
    /* cannot fail: the window has room for every frame, each frame is in hand */
    (void) send_array(ep, frag, tag, pmeth_now_ns());
    PMETH_UNLOCK();
    return OPAL_SUCCESS;

refuse:
    c->sendi_refused++;
    if (frag != NULL) {
        pmeth_frag_put(frag);
    }
    /* hand ob1 a descriptor instead (staged if need be), so the message start
     * keeps its place in the order of sends: contiguous memory for ob1 to pack
     * into, so a start of several frames is staged and split when sent */
    if (descriptor != NULL && size <= mca_btl_pmeth.btl_eager_limit) {
        frag = pmeth_frag_get(ep);
        bool framed = frag != NULL && size <= payload && ep->pending_head == NULL
                      && pmeth_frag_take_frame(frag, size);
        if (frag != NULL && !framed && !pmeth_frag_stage(frag, size)) {
            pmeth_frag_put(frag);
            frag = NULL;
        }
        if (frag != NULL) {
            frag->segment.seg_len = size;
            frag->base.des_flags = flags | MCA_BTL_DES_FLAGS_PRIORITY;
            frag->base.order = order;
        }
        *descriptor = frag != NULL ? &frag->base : NULL;
    }
    PMETH_UNLOCK();
    return OPAL_ERR_OUT_OF_RESOURCE;
}

static void release_acked(uintptr_t handle, void *ctx)
{
    pmeth_frag_complete((mca_btl_pmeth_frag_t *) handle, OPAL_SUCCESS);
}

/* EP reported the least one-way delay of our frames since its last report
 * (its clock minus our stamps): our delay limit to it follows the changes
 * (pmeth_pace.h).  INFLIGHT: the frames in flight as the report came. */
static void pace_sample(mca_btl_base_endpoint_t *ep, uint32_t delay, uint32_t inflight,
                        uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (!ep->delay_ref_set) {
        ep->delay_ref = delay;
        ep->delay_ref_set = true;
    }
    /* relative to the first report, offset by 1 s so that it stays positive */
    int64_t rel_us = (int64_t) (int32_t) (delay - ep->delay_ref) + 1000000;
    uint64_t sample = rel_us > 0 ? (uint64_t) rel_us * 1000 : 1;
    uint64_t cuts = ep->pace.cuts, lifts = ep->pace.lifts;
    if (pmeth_pace_sample(&ep->pace, &c->pace, sample, ep->tx->srtt, inflight,
                          pmeth_send_cap(ep, now), now)) {
        c->pace_cuts += ep->pace.cuts - cuts;
        c->pace_lifts += ep->pace.lifts - lifts;
        PMETH_VERBOSE(60, "peer %u: delay limit %u frames (%u in flight, queue %lld us, "
                      "round trip %llu us)", ep->peer_id, pmeth_pace_limit(&ep->pace), inflight,
                      (long long) (sample - pmeth_pace_floor(&ep->pace)) / 1000,
                      (unsigned long long) ep->tx->srtt / 1000);
    }
}

void pmeth_acked(mca_btl_base_endpoint_t *ep, const pmeth_wire_view_t *v, uint64_t now)
{
    if (ep->tx == NULL) {
        return;
    }
    if (v->echo) {
        pmeth_txwin_echo(ep->tx, v->echo_seq, v->echo_xmit);
    }
    /* the grant first: ob1's callbacks below may place more fragments */
    pmeth_credit_grant_update(&ep->grant, v->has_credit, v->credit, v->ack, ep->tx->next,
                              mca_btl_pmeth_component.wcfg.window, now,
                              mca_btl_pmeth_component.credit_lease_ns);
    if (v->has_delay) {
        pace_sample(ep, v->delay, pmeth_txwin_inflight(ep->tx), now);
    }
    if (pmeth_txwin_ack(ep->tx, v->ack, v->sack, now, release_acked, NULL) > 0) {
        if (OPAL_UNLIKELY(ep->recover_from_ns != 0)) {
            pmeth_apm_recovered(ep, now);
        }
        if (ep->pending_head != NULL) {
            send_pending(ep, now);
        }
    }
}

/* A standalone ACK: what we owe EP, on the path its current frames come on
 * (path migration: the peer listens there; our primary otherwise). */
int pmeth_send_ack(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint8_t p = pmeth_path_usable(ep, ep->reply_path) ? ep->reply_path : ep->primary;
    const pmeth_path_t *path = &ep->paths[p];
    pmeth_link_t *link = &c->links[path->local];
    void *frame;
    uint32_t cap;
    int id = pmeth_ring_tx_get_ctl(link->ring, &frame, &cap);
    if (id < 0) {
        return 0;       /* even the control reserve is in use (counted): asked again next pass */
    }
    pmeth_wire_build_ack(frame, path->peer_mac, link->mac, (uint16_t) c->ethertype, c->job_key,
                         ep->peer_id, c->my_id, path->local, 0, 0);
    if (p == ep->primary) {
        pmeth_wire_set_current(frame, true);
    }
    put_acks(ep, frame);
    pmeth_rxwin_ack_sent(ep->rx);
    pmeth_link_post_once(link, id, PMETH_WIRE_HDR_LEN);
    kick(link);
    c->acks_sent++;
    return 1;
}

/* Acks owed at once are sent after the polling, not as each frame is taken: a
 * poll that takes 64 frames of a stream owes the peer one ack, not eight (with
 * ack_every 8 it sent one per 8 frames, every one a system call and, between
 * hosts sharing CPUs, a wake-up of the peer's CPU). */
void pmeth_ack_soon(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->ack_queued) {
        return;
    }
    if (!pmeth_endpoint_list_room(&c->ack_queue, c->nack_queue, &c->ack_queue_cap)) {
        (void) pmeth_send_ack(ep);  /* no room to wait: at once, as before */
        return;
    }
    ep->ack_queued = true;
    c->ack_queue[c->nack_queue++] = ep;
}

void pmeth_acks_flush(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    for (uint32_t i = 0; i < c->nack_queue; i++) {
        mca_btl_base_endpoint_t *ep = c->ack_queue[i];
        ep->ack_queued = false;
        /* a data frame to the peer may have carried it since */
        if (ep->rx != NULL && pmeth_rxwin_ack_now(ep->rx)) {
            (void) pmeth_send_ack(ep);  /* no frame: owed still, sent by service */
        }
    }
    c->nack_queue = 0;
}

/* A frame with room for LEN bytes on a path of FRAG's peer that is still in
 * the stripe (the primary when it is), for a fragment whose path left it: the
 * frame's id, its path in *PATH; -1 when none is free there now (counted). */
static int frame_in_stripe(mca_btl_pmeth_frag_t *frag, uint32_t len, uint8_t *path, uint8_t **frame)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_base_endpoint_t *ep = frag->endpoint;
    uint8_t p = pmeth_path_usable(ep, ep->primary) ? ep->primary : ep->stripe[0];
    pmeth_link_t *link = &c->links[ep->paths[p].local];
    void *f;
    uint32_t cap;
    int id = pmeth_ring_tx_get(link->ring, &f, &cap);
    if (id >= 0 && cap < len) {
        pmeth_ring_tx_put(link->ring, id);
        id = -1;
    }
    if (id < 0) {
        c->apm_move_waits++;
        return -1;
    }
    *path = p;
    *frame = f;
    return id;
}

/* FRAG now lives in frame ID (at FRAME) of path P, COPIED bytes copied there:
 * its old frame goes back to its ring (the kernel may still send it once: a
 * duplicate the peer drops). */
static void frag_moved(mca_btl_pmeth_frag_t *frag, int id, uint8_t p, uint8_t *frame, size_t copied)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_ring_tx_put(pmeth_frag_link(frag)->ring, frag->frame_id);
    frag->frame_id = id;
    frag->path = p;
    frag->segment.seg_addr.pval = frame + PMETH_WIRE_HDR_LEN;
    c->apm_frames_moved++;
    c->copies_tx += copied;
}

/* Path migration took FRAG's path out of the stripe after it was sent: its
 * whole frame goes into one of a path still in it (addresses and link index
 * rewritten) and is sent there at once.  False when no frame is free there
 * now (the timer brings it back). */
bool pmeth_frag_move(mca_btl_pmeth_frag_t *frag, uint8_t xmit)
{
    mca_btl_base_endpoint_t *ep = frag->endpoint;
    uint8_t p, *f;
    int id = frame_in_stripe(frag, frag->frame_len, &p, &f);
    if (id < 0) {
        return false;
    }
    const pmeth_path_t *path = &ep->paths[p];
    pmeth_link_t *link = &mca_btl_pmeth_component.links[path->local];
    memcpy(f, pmeth_ring_tx_frame(pmeth_frag_link(frag)->ring, frag->frame_id), frag->frame_len);
    memcpy(f, path->peer_mac, 6);
    memcpy(f + 6, link->mac, 6);
    f[29] = path->local;
    pmeth_wire_set_current(f, p == ep->primary);
    put_acks_again(ep, f);
    pmeth_wire_set_xmit(f, xmit);
    frag_moved(frag, id, p, f, frag->frame_len);
    pmeth_txwin_relink(ep->tx, frag->seq, path->local);
    pmeth_txwin_set_lane(ep->tx, frag->seq, pmeth_path_lane(path, frag->frame_len));
    pmeth_ring_tx_post(link->ring, id, frag->frame_len);
    pmeth_rxwin_ack_sent(ep->rx);
    link->frames_out++;
    link->bytes_out += frag->frame_len;
    link->unkicked++;
    return true;
}

/* FRAG got its frame on a path that has since left the stripe (ob1 packed it
 * before the migration): its payload moves to a frame of a path in the stripe
 * before it is first sent.  False when none is free there now. */
bool pmeth_frag_rehome(mca_btl_pmeth_frag_t *frag)
{
    size_t len = frag->segment.seg_len;
    uint8_t p, *f;
    int id = frame_in_stripe(frag, PMETH_WIRE_HDR_LEN + (uint32_t) len, &p, &f);
    if (id < 0) {
        return false;
    }
    memcpy(f + PMETH_WIRE_HDR_LEN, frag->segment.seg_addr.pval, len);
    frag_moved(frag, id, p, f, len);
    return true;
}

static void resend(mca_btl_pmeth_frag_t *frag, uint8_t xmit, bool fast)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (OPAL_UNLIKELY(!pmeth_path_usable(frag->endpoint, frag->path))) {
        if (pmeth_frag_move(frag, xmit)) {
            if (fast) {
                c->retransmits_fast++;
            } else {
                c->retransmits_timeout++;
            }
        }
        return;
    }
    pmeth_link_t *link = pmeth_frag_link(frag);
    if (!pmeth_ring_tx_done(link->ring, frag->frame_id)) {
        /* still queued from the last posting (the kernel stopped before it):
         * not rewritten under the kernel, but the ring is kicked again */
        pmeth_ring_tx_kick_later(link->ring);
        return;
    }
    /* refresh the piggy-backed acks (the ones in the frame are old) and say
     * which transmission this is, for the receiver to echo */
    void *frame = pmeth_ring_tx_frame(link->ring, frag->frame_id);
    put_acks_again(frag->endpoint, frame);
    pmeth_wire_set_xmit(frame, xmit);
    if (pmeth_ring_tx_repost(link->ring, frag->frame_id) != 0) {
        return;         /* no free slot now: the timer brings it back */
    }
    pmeth_rxwin_ack_sent(frag->endpoint->rx);
    link->frames_out++;
    link->bytes_out += frag->frame_len;
    link->unkicked++;
    if (fast) {
        c->retransmits_fast++;
    } else {
        c->retransmits_timeout++;
    }
}

/* The frames of EP whose timers ran out (or fast retransmits), at most
 * resend_cap; how many went. */
static int resend_due(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (pmeth_txwin_next_deadline(ep->tx) > now && !pmeth_txwin_fast_pending(ep->tx)) {
        return 0;
    }
    pmeth_txwin_due_t due[64];
    unsigned cap = c->resend_cap < 64 ? c->resend_cap : 64;
    int n = pmeth_txwin_due(ep->tx, now, due, cap ? cap : 1);
    for (int i = 0; i < n; i++) {
        resend((mca_btl_pmeth_frag_t *) due[i].handle, due[i].xmit, due[i].fast);
    }
    return n;
}

int pmeth_endpoint_keep(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    if (ep->tx == NULL) {
        return 0;
    }
    /* a link lost while we are away: apm has moved the connection; resends
     * follow it (else they go on the dead link until we are back in MPI, and a
     * peer waiting in MPI for them waits as long) */
    if (ep->apm_conn != NULL) {
        pmeth_apm_poll(ep, now);
    }
    int count = resend_due(ep, now);
    if (pmeth_rxwin_ack_due(ep->rx, now)) {
        count += pmeth_send_ack(ep);
    }
    return count;
}

int pmeth_endpoint_service(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    int count = 0;
    if (ep->tx == NULL) {
        pmeth_endpoint_deactivate(ep);
        return 0;
    }
    int n = resend_due(ep, now);
    count += n;
    if (ep->apm_conn != NULL
        && (n > 0 || (ep->alive_recheck_ns != 0 && now >= ep->alive_recheck_ns))) {
        /* a timer probe went, or a round of path probes has had its time: is a link
         * silent?  (once a round: not on every pass while a peer is stopped) */
        ep->alive_recheck_ns = 0;
        pmeth_apm_check_silent(ep, now, n > 0);
    }
    if (pmeth_rxwin_ack_due(ep->rx, now)) {
        count += pmeth_send_ack(ep);
    }
    if (ep->pending_head != NULL) {
        count += send_pending(ep, now);
    }
    if (ep->pending_head == NULL && pmeth_txwin_empty(ep->tx) && !pmeth_rxwin_ack_owed(ep->rx)) {
        pmeth_endpoint_deactivate(ep);
    }
    return count;
}
