/* Send fragments: a LIFO of reusable descriptors, and their ring frames. */
#include "btl_pmeth_frag.h"

#include <stdlib.h>
#include <string.h>

mca_btl_pmeth_frag_t *pmeth_frag_get(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_pmeth_frag_t *frag = c->free_frags;
    if (frag != NULL) {
        c->free_frags = frag->next;
    } else {
        frag = calloc(1, sizeof(*frag));
        if (frag == NULL) {
            return NULL;
        }
        OBJ_CONSTRUCT(&frag->base, mca_btl_base_descriptor_t);
    }
    frag->next = NULL;
    frag->array_next = NULL;
    frag->endpoint = ep;
    frag->path = 0;
    frag->tag = 0;
    frag->state = 0;
    frag->wait_grant = false;
    frag->frame_id = -1;
    frag->frame_len = 0;
    frag->base.des_segments = &frag->segment;
    frag->base.des_segment_count = 1;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->base.des_context = NULL;
    frag->base.des_flags = 0;
    frag->base.order = MCA_BTL_NO_ORDER;
    frag->segment.seg_addr.pval = NULL;
    frag->segment.seg_len = 0;
    return frag;
}

bool pmeth_frag_take_frame(mca_btl_pmeth_frag_t *frag, size_t size)
{
    mca_btl_base_endpoint_t *ep = frag->endpoint;
    uint8_t first = pmeth_path_for(ep, size), p = first;
    unsigned tries = 0;
    /* the chosen path's ring may be full while another of the stripe has room */
    do {
        pmeth_link_t *link = &mca_btl_pmeth_component.links[ep->paths[p].local];
        void *frame;
        uint32_t cap;
        int id = pmeth_ring_tx_get(link->ring, &frame, &cap);
        if (id >= 0 && cap >= PMETH_WIRE_HDR_LEN + size) {
            frag->path = p;
            frag->frame_id = id;
            frag->segment.seg_addr.pval = (uint8_t *) frame + PMETH_WIRE_HDR_LEN;
            return true;
        }
        if (id >= 0) {
            pmeth_ring_tx_put(link->ring, id);
        }
        p = ep->stripe[tries % ep->nstripe];
    } while (++tries <= ep->nstripe);
    return false;
}

unsigned pmeth_frag_array_take(mca_btl_pmeth_frag_t *head, unsigned n)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_base_endpoint_t *ep = head->endpoint;
    if (ep->tx != NULL) {
        /* frames beyond what may go at once would wait in private memory (a
         * copy each): the array is cut to the room left */
        uint32_t inflight = pmeth_txwin_inflight(ep->tx);
        uint32_t limit = pmeth_send_limit(ep, pmeth_now_ns());
        uint32_t room = limit > inflight ? limit - inflight : 1;
        n = n < room ? n : (room > 0 ? room : 1);
    }
    mca_btl_pmeth_frag_t **tail = &head->array_next;
    unsigned got = 1;
    while (got < n) {
        mca_btl_pmeth_frag_t *frag = pmeth_frag_get(ep);
        if (frag == NULL) {
            break;
        }
        if (!pmeth_frag_take_frame(frag, c->frame_payload)) {
            pmeth_frag_put(frag);
            break;
        }
        frag->state = PMETH_FRAG_INTERNAL;
        *tail = frag;
        tail = &frag->array_next;
        got++;
    }
    return got;
}

/* The rest of HEAD's buffer array back to the pool (HEAD stays). */
static void put_rest(mca_btl_pmeth_frag_t *head)
{
    while (head->array_next != NULL) {
        mca_btl_pmeth_frag_t *rest = head->array_next;
        head->array_next = rest->array_next;
        rest->array_next = NULL;
        pmeth_frag_put(rest);
    }
    head->state &= (uint8_t) ~PMETH_FRAG_CONT;
}

bool pmeth_frag_take_start(mca_btl_pmeth_frag_t *head, size_t size)
{
    const size_t payload = mca_btl_pmeth_component.frame_payload;
    if (size <= payload) {
        if (!pmeth_frag_take_frame(head, size)) {
            return false;
        }
        head->segment.seg_len = size;
        return true;
    }
    /* all of it or none: a message start is sent whole, never cut */
    if (!pmeth_frag_take_frame(head, payload)) {
        return false;
    }
    head->segment.seg_len = payload;
    mca_btl_pmeth_frag_t *prev = head;
    for (size_t off = payload; off < size; off += payload) {
        mca_btl_pmeth_frag_t *frag = pmeth_frag_get(head->endpoint);
        size_t len = size - off < payload ? size - off : payload;
        if (frag == NULL || !pmeth_frag_take_frame(frag, len)) {
            if (frag != NULL) {
                pmeth_frag_put(frag);
            }
            /* the frames taken so far go back; HEAD stays the caller's */
            put_rest(head);
            pmeth_ring_tx_put(pmeth_frag_link(head)->ring, head->frame_id);
            head->frame_id = -1;
            return false;
        }
        frag->state = PMETH_FRAG_INTERNAL;
        frag->wait_grant = true;
        frag->segment.seg_len = len;
        prev->state |= PMETH_FRAG_CONT;
        prev->array_next = frag;
        prev = frag;
    }
    return true;
}

bool pmeth_start_fits(mca_btl_base_endpoint_t *ep, uint32_t n)
{
    if (ep->pending_head != NULL) {
        return false;
    }
    if (ep->tx == NULL) {
        return true;            /* no frame sent yet: the windows come with the first */
    }
    uint32_t inflight = pmeth_txwin_inflight(ep->tx);
    if (pmeth_txwin_room(ep->tx) < n) {
        return false;
    }
    return n <= 1 || !pmeth_send_limited(ep) || inflight + n - 1 <= pmeth_send_limit(ep, pmeth_now_ns());
}

bool pmeth_frag_split(mca_btl_pmeth_frag_t *head)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_base_endpoint_t *ep = head->endpoint;
    const size_t payload = c->frame_payload, size = head->segment.seg_len;
    /* straight into frames when the whole start can go at once (the one copy
     * staging costs), else staged slices of their own: a frame taken and not
     * posted would hold up its ring */
    const bool go_now = pmeth_start_fits(ep, (uint32_t) ((size + payload - 1) / payload));
    mca_btl_pmeth_frag_t *prev = head;
    for (size_t off = payload; off < size; off += payload) {
        mca_btl_pmeth_frag_t *frag = pmeth_frag_get(ep);
        size_t len = size - off < payload ? size - off : payload;
        if (frag == NULL) {
            goto fail;
        }
        frag->state = PMETH_FRAG_INTERNAL;
        frag->wait_grant = true;
        frag->segment.seg_len = len;
        bool framed = go_now && pmeth_frag_take_frame(frag, len);
        if (!framed && !pmeth_frag_stage(frag, len)) {
            pmeth_frag_put(frag);
            goto fail;
        }
        memcpy(frag->segment.seg_addr.pval, head->staged + off, len);
        c->copies_tx += len;
        c->staged_bytes += framed ? len : 0;    /* else when its frame is found */
        prev->state |= PMETH_FRAG_CONT;
        prev->array_next = frag;
        prev = frag;
    }
    head->segment.seg_len = payload;
    if (pmeth_frag_array_segments(head)) {
        return true;
    }
    head->segment.seg_len = size;
fail:
    put_rest(head);
    head->segment.seg_len = size;
    return false;
}

bool pmeth_frag_array_segments(mca_btl_pmeth_frag_t *head)
{
    if (head->array_segs == NULL) {
        head->array_segs = malloc(PMETH_WIRE_ARRAY_MAX * sizeof(*head->array_segs));
        if (head->array_segs == NULL) {
            return false;
        }
    }
    uint32_t n = 0;
    for (mca_btl_pmeth_frag_t *f = head; f != NULL && n < PMETH_WIRE_ARRAY_MAX; f = f->array_next) {
        head->array_segs[n++] = f->segment;
    }
    head->base.des_segments = head->array_segs;
    head->base.des_segment_count = n;
    return true;
}

bool pmeth_frag_stage(mca_btl_pmeth_frag_t *frag, size_t size)
{
    size_t want = size > 0 ? size : 1;
    if (frag->staged_cap < want) {
        uint8_t *b = realloc(frag->staged, want);
        if (b == NULL) {
            return false;
        }
        frag->staged = b;
        frag->staged_cap = (uint32_t) want;
    }
    frag->frame_id = -1;
    frag->segment.seg_addr.pval = frag->staged;
    mca_btl_pmeth_component.staged++;
    return true;
}

bool pmeth_frag_move_aside(mca_btl_pmeth_frag_t *frag)
{
    size_t len = frag->segment.seg_len;
    const uint8_t *src = frag->segment.seg_addr.pval;
    if (frag->staged_cap < len || frag->staged == NULL) {
        uint8_t *b = realloc(frag->staged, len > 0 ? len : 1);
        if (b == NULL) {
            return false;
        }
        frag->staged = b;
        frag->staged_cap = (uint32_t) (len > 0 ? len : 1);
    }
    memcpy(frag->staged, src, len);
    pmeth_ring_tx_put(pmeth_frag_link(frag)->ring, frag->frame_id);
    frag->frame_id = -1;
    frag->segment.seg_addr.pval = frag->staged;
    mca_btl_pmeth_component.staged++;
    mca_btl_pmeth_component.copies_tx += len;
    return true;
}

bool pmeth_frag_unstage(mca_btl_pmeth_frag_t *frag)
{
    size_t len = frag->segment.seg_len;
    if (!pmeth_frag_take_frame(frag, len)) {
        frag->segment.seg_addr.pval = frag->staged;
        return false;
    }
    memcpy(frag->segment.seg_addr.pval, frag->staged, len);
    mca_btl_pmeth_component.copies_tx += len;
    mca_btl_pmeth_component.staged_bytes += len;
    return true;
}

void pmeth_frag_put(mca_btl_pmeth_frag_t *frag)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    put_rest(frag);
    if (frag->frame_id >= 0) {
        pmeth_ring_tx_put(pmeth_frag_link(frag)->ring, frag->frame_id);
        frag->frame_id = -1;
    }
    frag->state = 0;
    frag->next = c->free_frags;
    c->free_frags = frag;
}

void pmeth_frag_release_all(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    while (c->free_frags != NULL) {
        mca_btl_pmeth_frag_t *frag = c->free_frags;
        c->free_frags = frag->next;
        free(frag->staged);
        free(frag->array_segs);
        OBJ_DESTRUCT(&frag->base);
        free(frag);
    }
}

void pmeth_frag_complete(mca_btl_pmeth_frag_t *frag, int status)
{
    uint32_t flags = frag->base.des_flags;
    frag->state &= (uint8_t) ~PMETH_FRAG_IN_WINDOW;
    if (frag->state & PMETH_FRAG_CB_AT_ACK) {
        frag->state &= (uint8_t) ~PMETH_FRAG_CB_AT_ACK;
        frag->endpoint->cb_at_ack--;
    }
    if (frag->state & PMETH_FRAG_INTERNAL) {
        pmeth_frag_put(frag);
        return;
    }
    if (frag->state & PMETH_FRAG_CB_QUEUED) {
        return;         /* acked before its early callback ran: the drain finishes it */
    }
    if (frag->state & PMETH_FRAG_CB_DONE) {
        /* called back when posted: recycle now if ob1 will not free it itself */
        if ((flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) || (frag->state & PMETH_FRAG_USER_FREED)) {
            pmeth_frag_put(frag);
        }
        return;
    }
    /* send returned 0 (never 1, "done at once"), so the callback is owed
     * whatever SEND_ALWAYS_CALLBACK says */
    frag->state |= PMETH_FRAG_CB_DONE;
    if (frag->base.des_cbfunc != NULL) {
        frag->base.des_cbfunc(&mca_btl_pmeth, frag->endpoint, &frag->base, status);
    }
    if ((flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) || (frag->state & PMETH_FRAG_USER_FREED)) {
        pmeth_frag_put(frag);
    }
}

void pmeth_frag_posted(mca_btl_pmeth_frag_t *frag, uint32_t limit)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (frag->base.des_cbfunc == NULL
        || (frag->state & (PMETH_FRAG_INTERNAL | PMETH_FRAG_CB_QUEUED | PMETH_FRAG_CB_DONE))) {
        return;
    }
    /* the callback waits for the ack when the window is nearly used, and when
     * this pass's burst is: a fragment refused next is then retried on it */
    if (!c->early_completion || pmeth_txwin_inflight(frag->endpoint->tx) + limit / 8 > limit
        || (c->send_burst > 0 && c->burst_used >= c->send_burst
            && !(frag->base.des_flags & MCA_BTL_DES_FLAGS_PRIORITY))) {
        frag->state |= PMETH_FRAG_CB_AT_ACK;
        frag->endpoint->cb_at_ack++;
        return;
    }
    frag->state |= PMETH_FRAG_CB_QUEUED;
    frag->next_done = NULL;
    if (c->done_tail != NULL) {
        c->done_tail->next_done = frag;
    } else {
        c->done_head = frag;
    }
    c->done_tail = frag;
}

int pmeth_frag_drain_done(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int n = 0;
    mca_btl_pmeth_frag_t *frag;
    while ((frag = c->done_head) != NULL) {
        c->done_head = frag->next_done;
        if (c->done_head == NULL) {
            c->done_tail = NULL;
        }
        frag->state = (uint8_t) ((frag->state & ~PMETH_FRAG_CB_QUEUED) | PMETH_FRAG_CB_DONE);
        /* what decides its fate, read before ob1 may free (and so recycle) it */
        bool acked = !(frag->state & PMETH_FRAG_IN_WINDOW);
        bool recycle = acked && ((frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP)
                                 || (frag->state & PMETH_FRAG_USER_FREED));
        frag->base.des_cbfunc(&mca_btl_pmeth, frag->endpoint, &frag->base, OPAL_SUCCESS);
        if (recycle) {
            pmeth_frag_put(frag);
        }
        c->early_callbacks++;
        n++;
    }
    return n;
}
