/*
 * The sender's half of the transfer protocols (seed 000, 3.2).
 *
 * Short messages go inline: the bytes themselves fill one or more postboxes, no
 * barrier.  Long messages were packed into pool blocks when ob1 prepared them;
 * here a barrier orders those writes before the pointer postboxes that name the
 * blocks.  Consecutive fragments of a long message form the pipeline: while the
 * receiver drains fragment k (copies it out, acks its postbox) the sender packs
 * fragment k+1 into other blocks.  A message is written only when the whole of
 * it fits in the queue, so the receiver never waits on a half-written message
 * because of us.
 */
#include "btl_rsm.h"
#include "btl_rsm_frag.h"

/* Acks are collected every this many postboxes even when the queue has room
 * (as a 128-postbox queue did when it filled), for two reasons.  The allocator
 * hands out the lowest free blocks, so early collection keeps a sender's blocks
 * few and warm in the caches: a deep queue collected only when full let a
 * ping-pong of 2 KiB pointer messages walk the whole 4 MiB pool, 7 us a turn
 * instead of 0.5.  And a collection that finds acks is how the sender measures
 * its receiver's distance (rsm_distance.h), which picks the streaming and
 * single-copy paths.  One load of the ack row per 64 postboxes costs nothing
 * measurable.  Not for verbs connections: their queues keep 128 postboxes, and
 * their pools grow on the pool-full events that collecting on a full queue
 * leaves (btl_rsm_verbs_grow_after). */
#define RSM_COLLECT_EVERY 64
/* Until the first distance decision, every 4 postboxes: the decision needs 15
 * samples, one per collection, and until it is taken the receiver counts as
 * far (streaming stores from btl_rsm_nt_min, single copy past the eager limit).
 * At one collection in 64 a ping-pong of 32 KiB took ~1,000 round trips to
 * decide, near latency 2.4 us instead of 1.0 for all of them; at one in 4 it
 * takes ~60. */
#define RSM_COLLECT_FIRST 4

/* Room for N more postboxes in our queue to EP, collecting acks if need be.
 * One more is always kept: the postbox after a message, whose flag we may have
 * to zero (when it last held follow-on payload). */
static inline bool queue_room(mca_btl_base_endpoint_t *ep, uint32_t n)
{
    const uint32_t qlen = ep->q_mask + 1;
    if (OPAL_LIKELY(ep->tail - ep->reclaimed + n + 1 <= qlen)) {
        if (OPAL_UNLIKELY((int32_t) (ep->tail - ep->collect_at) >= 0) && !ep->remote) {
            rsm_endpoint_reclaim(ep, false);
            ep->collect_at = ep->tail + (ep->dist.decisions ? RSM_COLLECT_EVERY : RSM_COLLECT_FIRST);
        }
        return true;
    }
    rsm_endpoint_reclaim(ep, true);
    return ep->tail - ep->reclaimed + n + 1 <= qlen;
}

/* Reserve an inline group for LEN bytes at the tail and return its head; the
 * caller writes the payload at head->u.data (contiguous: a group never wraps)
 * and then calls inline_publish.  The postbox after the group is made safe
 * (rsm_pb_clear_stale) here, not at publish time: that store may miss, and the
 * flag would wait behind it; here it overlaps the payload's misses.  It is free
 * (queue_room keeps it), so zeroing it early is harmless if the group is dropped.  A group that would cross the end of the ring
 * is preceded by a pad postbox that fills the ring to its end.  NULL: no room. */
static inline __attribute__((always_inline)) rsm_postbox_t *
inline_reserve(mca_btl_base_endpoint_t *ep, size_t len)
{
    const uint32_t qlen = ep->q_mask + 1, mask = ep->q_mask;
    uint32_t k = rsm_inline_postboxes((uint32_t) len);
    uint32_t index = ep->tail & mask;
    if (OPAL_LIKELY(index + k <= qlen)) {
        if (!queue_room(ep, k)) {
            return NULL;
        }
        rsm_pb_mark_follow_on(ep->stale, mask, ep->tail, k);
        rsm_pb_clear_stale(ep->out_queue, ep->stale, mask, ep->tail + k);
        return &ep->out_queue[index];
    }
    uint32_t pad = qlen - index;
    if (!queue_room(ep, pad + k)) {
        return NULL;
    }
    rsm_pb_clear_stale(ep->out_queue, ep->stale, mask, ep->tail + pad);
    rsm_pb_publish_hdr(&ep->out_queue[index], 0, RSM_PB_PAD | RSM_PB_FIRST | RSM_PB_LAST, 0,
                       ep->tail);
    ep->slots[index].span = (uint16_t) pad;
    if (OPAL_UNLIKELY(ep->remote)) {
        rsm_verbs_post_unit(ep, ep->tail, pad);
    }
    ep->tail += pad;
    rsm_pb_mark_follow_on(ep->stale, mask, ep->tail, k);
    rsm_pb_clear_stale(ep->out_queue, ep->stale, mask, ep->tail + k);
    return &ep->out_queue[0];
}

static inline void inline_publish_kind(mca_btl_base_endpoint_t *ep, rsm_postbox_t *head,
                                       uint8_t tag, size_t len, uint8_t pair);

static inline void inline_publish(mca_btl_base_endpoint_t *ep, rsm_postbox_t *head, uint8_t tag,
                                  size_t len)
{
    inline_publish_kind(ep, head, tag, len, 0);
}

static inline void inline_publish_kind(mca_btl_base_endpoint_t *ep, rsm_postbox_t *head,
                                       uint8_t tag, size_t len, uint8_t pair)
{
    const uint32_t mask = ep->q_mask;
    uint32_t k = rsm_inline_postboxes((uint32_t) len);
    /* normally done at reserve time; not if the packed length came out shorter */
    rsm_pb_clear_stale(ep->out_queue, ep->stale, mask, ep->tail + k);
    rsm_pb_publish_hdr(head, (uint16_t) len, RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST | pair,
                       tag, ep->tail);
    ep->slots[ep->tail & mask].span = (uint16_t) k;
    if (OPAL_UNLIKELY(ep->remote)) {
        rsm_verbs_post_unit(ep, ep->tail, k);   /* the shadow's group to the peer's queue */
    }
    ep->tail += k;
    ep->sent_inline++;
    ep->sent_inline_bytes += len;
}

/* A message of at most RSM_PB_HALF_DATA bytes (header and contiguous payload)
 * to a receiver on this node: into the free second half of the PAIR postbox
 * just written to it, or as a new PAIR postbox (rsm_postbox.h, rsm_half_t).
 * False: no room in the queue. */
static inline bool send_tiny(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *header,
                             size_t header_size, const void *payload, size_t payload_size)
{
    size_t total = header_size + payload_size;
    if (ep->pair_open && ep->pair_tail == ep->tail) {
        rsm_half_t *half = rsm_pb_half(&ep->out_queue[(ep->tail - 1) & ep->q_mask]);
        memcpy(half->data, header, header_size);
        if (payload_size > 0) {
            memcpy(half->data + header_size, payload, payload_size);
        }
        half->nbytes = (uint16_t) total;
        half->kind = RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST;
        half->tag = tag;
        atomic_store_explicit(&half->flag, rsm_pb_flag(ep->tail - 1) /* the postbox's */,
                              memory_order_release);
        ep->pair_open = false;
        ep->sent_paired++;
        ep->sent_inline++;
        ep->sent_inline_bytes += total;
        return true;
    }
    rsm_postbox_t *head = inline_reserve(ep, total);
    if (head == NULL) {
        return false;
    }
    if (payload_size > 0) {
        memcpy(head->u.data + header_size, payload, payload_size);
    }
    memcpy(head->u.data, header, header_size);
    /* the half's flag may hold an older lap's bytes: zeroed in the same line,
     * ordered before the postbox's flag by its release */
    atomic_store_explicit(&rsm_pb_half(head)->flag, 0, memory_order_relaxed);
    inline_publish_kind(ep, head, tag, total, RSM_PB_PAIR);
    ep->pair_open = true;
    ep->pair_tail = ep->tail;
    return true;
}

bool rsm_send_internal(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *data, size_t len)
{
    if (ep->pending_head != NULL) {
        return false;           /* behind ob1's queued fragments: would overtake them */
    }
    rsm_postbox_t *head = inline_reserve(ep, len);
    if (head == NULL) {
        return false;
    }
    memcpy(head->u.data, data, len);
    inline_publish(ep, head, tag, len);
    return true;
}

static uint32_t pointer_postboxes(const mca_btl_rsm_frag_t *frag)
{
    return (frag->nruns + RSM_PB_RUNS - 1) / RSM_PB_RUNS;
}

/* The blocks hold the data: barrier, then the pointers.  The blocks now belong
 * to the postboxes and come back with their acks. */
static void post_pointer(mca_btl_base_endpoint_t *ep, uint8_t tag, mca_btl_rsm_frag_t *frag)
{
    const uint32_t mask = ep->q_mask;
    uint32_t n = pointer_postboxes(frag);
    /* between hosts, one run: the postbox crosses in the run, one write */
    const bool direct = OPAL_UNLIKELY(ep->remote) && frag->nruns == 1
        && rsm_verbs_direct_ok(ep, &frag->runs[0],
                               (size_t) ((char *) frag->segments[0].seg_addr.pval
                                         - (char *) rsm_run_addr(ep->area, &frag->runs[0])));
    for (unsigned r = 0; r < frag->nruns && !direct; r++) {
        if (OPAL_UNLIKELY(ep->remote)) {
            /* the blocks from the shadow to the peer's pool; the pointer
             * postboxes' write with immediate, later on the same queue pair,
             * publishes them (rsm_verbs.h) */
            rsm_verbs_post_data(ep, frag->segments[r].seg_addr.pval, frag->segments[r].seg_len);
        } else if (r == 0 || frag->runs[r].stripe != frag->runs[r - 1].stripe) {
            rsm_seg_barrier(&ep->area->seg[frag->runs[r].stripe]);
        }
    }
    unsigned r = 0;
    ep->sent_pool++;
    for (unsigned s = 0; s < frag->nruns; s++) {
        ep->sent_pool_bytes += frag->segments[s].seg_len;
    }
    for (uint32_t i = 0; i < n; i++) {
        rsm_slot_t *slot = &ep->slots[ep->tail & mask];
        /* Composed in place, field by field, with stores only.  A postbox
         * built on the stack and copied reads narrow stores back with wide
         * loads; x86 cannot forward those, so the load waits for the whole
         * store buffer, the payload copy's misses included, to drain. */
        rsm_postbox_t *pb = &ep->out_queue[ep->tail & mask];
        unsigned k = 0;
        slot->nruns = 0;
        slot->span = 1;
        rsm_pb_clear_stale(ep->out_queue, ep->stale, mask, ep->tail + 1);
        for (; r < frag->nruns && slot->nruns < RSM_PB_RUNS; r++) {
            slot->runs[slot->nruns++] = frag->runs[r];
            if (frag->segments[r].seg_len > 0) {
                /* on the wire: where the segment starts (the skew into the
                 * first block, rsm_payload_skew) and what it holds */
                rsm_run_t *wire = &pb->u.runs[k++];
                wire->offset = frag->runs[r].offset
                               + (uint32_t) ((char *) frag->segments[r].seg_addr.pval
                                             - (char *) rsm_run_addr(ep->area, &frag->runs[r]));
                wire->len = (uint32_t) frag->segments[r].seg_len;
                wire->stripe = frag->runs[r].stripe;
            }
        }
        ep->slots_with_runs += slot->nruns > 0;
        rsm_pb_publish_hdr(pb, (uint16_t) k,
                           RSM_PB_POINTER | (i == 0 ? RSM_PB_FIRST : 0) | (i == n - 1 ? RSM_PB_LAST : 0),
                           tag, ep->tail);
        if (direct) {
            rsm_verbs_post_direct(ep, &frag->runs[0],
                                  (char *) frag->segments[0].seg_addr.pval + frag->segments[0].seg_len,
                                  pb);
        } else if (OPAL_UNLIKELY(ep->remote)) {
            rsm_verbs_post_unit(ep, ep->tail, 1);
        }
        ep->tail++;
    }
    frag->nruns = 0;
}

static bool try_post(mca_btl_base_endpoint_t *ep, mca_btl_rsm_frag_t *frag)
{
    if (frag->kind == RSM_FRAG_INLINE) {
        size_t len = frag->segments[0].seg_len;
        rsm_postbox_t *head = inline_reserve(ep, len);
        if (head == NULL) {
            return false;
        }
        memcpy(head->u.data, frag->data, len);
        inline_publish(ep, head, frag->tag, len);
    } else {
        if (frag->kind == RSM_FRAG_STAGED && !rsm_frag_unstage(frag)) {
            return false;       /* the pool is still full */
        }
        if (!queue_room(ep, pointer_postboxes(frag))) {
            return false;
        }
        post_pointer(ep, frag->tag, frag);
    }
    return true;
}

static void pending_append(mca_btl_base_endpoint_t *ep, mca_btl_rsm_frag_t *frag)
{
    /* ob1 was told "in progress": it must hear of the completion */
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    frag->next = NULL;
    if (ep->pending_head == NULL) {
        ep->pending_head = frag;
        mca_btl_rsm_component.outbound_busy++;
    } else {
        ep->pending_tail->next = frag;
    }
    ep->pending_tail = frag;
}

int rsm_send_pending(mca_btl_base_endpoint_t *ep)
{
    int sent = 0;
    while (ep->pending_head != NULL) {
        mca_btl_rsm_frag_t *frag = ep->pending_head;
        if (!try_post(ep, frag)) {
            break;
        }
        ep->pending_head = frag->next;
        if (ep->pending_head == NULL) {
            mca_btl_rsm_component.outbound_busy--;
        }
        rsm_frag_complete(frag, OPAL_SUCCESS);
        sent++;
    }
    return sent;
}

int rsm_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
             mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_rsm_frag_t *frag = (mca_btl_rsm_frag_t *) des;
    int rc = 1;
    RSM_LOCK();
    rsm_sent_to(ep);
    frag->tag = tag;
    int crc = OPAL_LIKELY(ep->out_connected) ? OPAL_SUCCESS : rsm_endpoint_connect(ep);
    if (OPAL_UNLIKELY(crc == OPAL_ERR_RESOURCE_BUSY)) {
        pending_append(ep, frag);       /* sent when the connection is up (verbs) */
        rc = OPAL_SUCCESS;
    } else if (OPAL_UNLIKELY(crc != OPAL_SUCCESS)) {
        rc = OPAL_ERR_UNREACH;
    } else if (OPAL_UNLIKELY(ep->pending_head != NULL) || !try_post(ep, frag)) {
        pending_append(ep, frag);       /* keeps the order of sends */
        rc = OPAL_SUCCESS;
    } else {
        rsm_frag_complete(frag, OPAL_SUCCESS);
    }
    RSM_UNLOCK();
    return rc;
}

/* Send at once or refuse (ob1 then takes the descriptor path). */
int rsm_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
              struct opal_convertor_t *convertor, void *header, size_t header_size,
              size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
              mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    size_t total = header_size + payload_size;
    int rc = OPAL_ERR_OUT_OF_RESOURCE;
    if (descriptor != NULL) {
        *descriptor = NULL;
    }
    RSM_LOCK();
    rsm_sent_to(ep);
    if (OPAL_UNLIKELY(!ep->out_connected)) {
        int crc = rsm_endpoint_connect(ep);
        if (crc != OPAL_SUCCESS) {
            /* still connecting (verbs): ob1 gets a descriptor, queued by rsm_send */
            rc = crc == OPAL_ERR_RESOURCE_BUSY ? OPAL_ERR_OUT_OF_RESOURCE : OPAL_ERR_UNREACH;
            goto out;
        }
    }
    if (OPAL_UNLIKELY(ep->pending_head != NULL)) {
        goto out;
    }
    /* pairs to every receiver on the node unless btl_rsm_pair_min_ns names a
     * distance: a stream's receiver is the slower side, so it mostly finds
     * both halves written and takes one line for two messages, near or far
     * (btl_rsm/README.md, "Two tiny messages per postbox") */
    if (total <= RSM_PB_HALF_DATA && c->pair_tiny && !ep->remote
        && (c->pair_min_cycles == 0
            || (ep->dist.decisions > 0 && ep->dist.median >= c->pair_min_cycles))
        && (payload_size == 0 || !opal_convertor_need_buffers(convertor))) {
        void *src = NULL;
        if (payload_size > 0) {
            opal_convertor_get_current_pointer(convertor, &src);
        }
        if (send_tiny(ep, tag, header, header_size, src, payload_size)) {
            rc = OPAL_SUCCESS;
        }
    } else if (OPAL_LIKELY(total <= ep->inline_max)) {
        /* header and payload go straight into the group (no staging) */
        rsm_postbox_t *head = inline_reserve(ep, total);
        if (head == NULL) {
            goto out;
        }
        if (payload_size > 0) {
            if (!opal_convertor_need_buffers(convertor)) {
                /* contiguous: one memcpy; ob1 is done with the convertor after sendi */
                /* contiguous: the follow-on postboxes first, the head's
                 * line last, so the line the receiver spins on leaves its
                 * cache once, just before the flag (see inline_publish) */
                char *src;
                opal_convertor_get_current_pointer(convertor, (void **) &src);
                size_t in_head = header_size < RSM_PB_DATA ? RSM_PB_DATA - header_size : 0;
                if (in_head > 0 && payload_size > in_head) {
                    memcpy(head->u.data + RSM_PB_DATA, src + in_head, payload_size - in_head);
                    memcpy(head->u.data + header_size, src, in_head);
                } else {
                    memcpy(head->u.data + header_size, src, payload_size);
                }
            } else {
                struct iovec iov = {.iov_base = head->u.data + header_size,
                                    .iov_len = payload_size};
                size_t packed = payload_size;
                if (rsm_pack(convertor, &iov, 1, &packed, false) != OPAL_SUCCESS) {
                    rc = OPAL_ERROR;    /* the reserved postboxes stay unpublished */
                    goto out;
                }
                total = header_size + packed;
            }
        }
        memcpy(head->u.data, header, header_size);
        inline_publish(ep, head, tag, total);
        rc = OPAL_SUCCESS;
    } else if (total <= c->layout.max_msg) {
        mca_btl_rsm_frag_t *frag = rsm_frag_get(ep, RSM_FRAG_POOL);
        if (frag == NULL) {
            goto out;
        }
        void *src = NULL;
        if (payload_size > 0 && !opal_convertor_need_buffers(convertor)) {
            opal_convertor_get_current_pointer(convertor, &src);
        }
        /* striped only when contiguous (rsm_prepare_src says why) */
        if (rsm_frag_alloc_runs(frag, total, src != NULL, rsm_payload_skew(src, header_size)) != 0
            || !queue_room(ep, pointer_postboxes(frag))) {
            rsm_frag_put(frag);
            goto out;
        }
        struct iovec iov[RSM_MAX_STRIPES];
        memcpy(frag->segments[0].seg_addr.pval, header, header_size);
        for (unsigned i = 0; i < frag->nruns; i++) {
            size_t skip = i == 0 ? header_size : 0;
            iov[i].iov_base = (char *) frag->segments[i].seg_addr.pval + skip;
            iov[i].iov_len = frag->segments[i].seg_len - skip;
        }
        size_t packed = payload_size;
        if (payload_size > 0 && rsm_pack(convertor, iov, frag->nruns, &packed,
                                         rsm_stream_to(ep, payload_size)) != OPAL_SUCCESS) {
            rsm_frag_put(frag);
            rc = OPAL_ERROR;
            goto out;
        }
        post_pointer(ep, tag, frag);
        rsm_frag_put(frag);
        rc = OPAL_SUCCESS;
    }
out:
    if (OPAL_UNLIKELY(rc == OPAL_ERR_OUT_OF_RESOURCE) && descriptor != NULL) {
        /* No room now.  Hand ob1 a descriptor (as vader does): it packs the
         * message and calls rsm_send, which queues it behind the others.  If
         * ob1 got nothing it would park the request on its own pending list
         * and retry it later, after sends that started since - out of
         * sequence.  ob1 4.1's out-of-sequence list mishandles fragments that
         * straddle its 16-bit sequence rollover (bibw of 512 B messages hung
         * once in 4-80 runs, the receiver waiting for a fragment it had
         * already parked). */
        mca_btl_rsm_frag_t *frag = rsm_frag_for(ep, total, flags, order);
        *descriptor = frag != NULL ? &frag->base : NULL;
    }
    /* Counted apart from the fallback above, so that t-rsm-order.sh sees any
     * refusal that leaves ob1 without a descriptor.  (None asked for: ob1 tries
     * again at once, asking for one.)  A branch on rc only when all went well. */
    if (OPAL_UNLIKELY(rc == OPAL_ERR_OUT_OF_RESOURCE) && descriptor != NULL && *descriptor == NULL) {
        c->refused++;
    }
    RSM_UNLOCK();
    return rc;
}
