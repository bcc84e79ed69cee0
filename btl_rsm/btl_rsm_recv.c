/*
 * The receiver's half: poll the postbox at the head of each inbound queue,
 * hand every checked message to the upper layer, write the 1-byte acks into
 * the sender's control segment.  Messages in pool blocks are handed up in
 * place (ob1 copies them out during the callback); only then are they acked,
 * which gives the blocks back to the sender.
 */
#include "btl_rsm.h"

static inline bool deliver_inline(mca_btl_base_endpoint_t *ep, uint8_t tag, void *data, uint32_t len)
{
    if (OPAL_UNLIKELY(rsm_tag_internal(tag))) {
        if (tag == RSM_TAG_HELP) {
            rsm_help_serve(ep, data, len);  /* a receiver asks us to write half its get */
        } else {
            rsm_rma_deliver(ep, tag, data, len);    /* a one-sided atomic, or its reply */
        }
        return true;
    }
    if (OPAL_UNLIKELY(tag >= MCA_BTL_TAG_MAX)) {
        return false;
    }
    mca_btl_active_message_callback_t *reg = &mca_btl_base_active_message_trigger[tag];
    if (OPAL_UNLIKELY(reg->cbfunc == NULL)) {
        return false;
    }
    ep->rx_segs[0].seg_addr.pval = data;
    ep->rx_segs[0].seg_len = len;
    ep->rx_des.des_segments = ep->rx_segs;
    ep->rx_des.des_segment_count = 1;
    reg->cbfunc(&mca_btl_rsm, tag, &ep->rx_des, reg->cbdata);
    return true;
}

/* Pool lines a receiver asks for before ob1 matches the message.  Near, 9
 * repeats: latency at 4 / 8 KiB 1.10 / 1.09 x ucx without, 1.02 / 1.05 with
 * 4 KiB; 8 KiB made 16 KiB slower (1.14 x against 0.96): more requests than the
 * core can keep in flight then queue ahead of the copy's own.  From a sender
 * measured far the lines come from memory (it streams them, rsm_copy.h), slower
 * to arrive, and asking for 8 KiB pays: far, 13-16 runs, against 4 KiB, bw
 * 8 / 16 / 32 KiB +16 / +10 / +8%, bibw 8 KiB +8%, latency 8-32 KiB -7 to -8%,
 * 4 KiB and near unchanged (docs/results-2026-11-27-rsm-alloc-8k/).  At the
 * middle distance (near, but read by single copy: cores of one mesh die) the
 * core stalls on its 64 prefetches, which wait for fill buffers the peer's
 * lines hold longer: 1 KiB (16 lines) there, bw 8 KiB +9%, bibw 4 / 8 KiB
 * +7 / +4%, latency unchanged (docs/results-2026-12-03-rsm-streams/).
 * Unmeasured peers get the near window. */
#define RSM_RX_PREFETCH 4096
#define RSM_RX_PREFETCH_FAR 8192
#define RSM_RX_PREFETCH_MIDDLE 1024

static bool deliver_runs(mca_btl_base_endpoint_t *ep)
{
    const rsm_assembler_t *a = &ep->assembler;
    const rsm_layout_t *lay = ep->in_lay;
    mca_btl_base_segment_t *segs = ep->rx_segs;
    uint8_t tag = a->tag;

    if (tag >= MCA_BTL_TAG_MAX || rsm_tag_internal(tag)     /* ours are only ever inline */
        || mca_btl_base_active_message_trigger[tag].cbfunc == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < a->nruns; i++) {
        const rsm_run_t *run = &a->runs[i];   /* checked by the parser */
        segs[i].seg_addr.pval = (char *) ep->in_seg[run->stripe].base
                                + rsm_layout_pool_base(lay, run->stripe) + run->offset;
        segs[i].seg_len = run->len;
    }
    /* ask for the first lines now: they cross from the sender's cache (or come
     * from memory) while ob1 matches the message, before its copy-out reads
     * them one by one.  ep->dist is how far we measured the peer's core; the
     * peer, which streams to us or not by its own measure, sees the same two
     * cores.  Until measured (or a peer on another host): the near window. */
    const uint32_t window = ep->dist.decisions == 0 ? RSM_RX_PREFETCH
                            : !ep->dist.near ? RSM_RX_PREFETCH_FAR
                            : !ep->dist.two_copy ? RSM_RX_PREFETCH_MIDDLE : RSM_RX_PREFETCH;
    for (uint32_t off = 0; off < segs[0].seg_len && off < window; off += 64) {
        __builtin_prefetch((char *) segs[0].seg_addr.pval + off, 0, 3);
    }
    ep->rx_des.des_segments = segs;
    ep->rx_des.des_segment_count = a->nruns;
    mca_btl_active_message_callback_t *reg = &mca_btl_base_active_message_trigger[tag];
    reg->cbfunc(&mca_btl_rsm, tag, &ep->rx_des, reg->cbdata);
    return true;
}

/* After a PAIR postbox's first half: deliver its second half once the sender
 * has written it, or give it up once the sender has moved on to the next
 * postbox (rsm_half_t says why the half flag is read again then).  Acks the
 * postbox either way.  Returns 1 (a message delivered or dropped), -1 (moved
 * on, nothing in the half) or 0 (nothing yet). */
int rsm_poll_second_half(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const uint32_t head = ep->head;
    rsm_postbox_t *slot = &ep->in_queue[head & ep->q_mask];
    rsm_half_t *half = rsm_pb_half(slot);
    if (atomic_load_explicit(&half->flag, memory_order_acquire) != rsm_pb_flag(head)) {
        const rsm_postbox_t *next = &ep->in_queue[(head + 1) & ep->q_mask];
        if (atomic_load_explicit(&next->flag, memory_order_acquire) != rsm_pb_flag(head + 1)) {
            return 0;
        }
        if (atomic_load_explicit(&half->flag, memory_order_acquire) != rsm_pb_flag(head)) {
            ep->pair_wait = false;
            rsm_ack_through(ep, head);
            ep->head = head + 1;
            return -1;
        }
    }
    rsm_pb_hdr_t h = rsm_half_read_hdr(half);
    if (OPAL_UNLIKELY(!rsm_half_valid(h))) {
        c->dropped++;
        c->dropped_malformed++;
        RSM_VERBOSE(1, "dropped a malformed second half from local rank %d (postbox %u, kind 0x%x, "
                    "%u bytes); %" PRIu64 " dropped so far", ep->local_rank, head, h.kind,
                    h.nbytes, c->dropped);
    } else if (OPAL_UNLIKELY(!deliver_inline(ep, h.tag, half->data, h.nbytes))) {
        c->dropped++;
        c->dropped_tag++;
        RSM_VERBOSE(1, "dropped a message with unknown tag %u from local rank %d; %" PRIu64
                    " dropped so far", h.tag, ep->local_rank, c->dropped);
    }
    ep->pair_wait = false;
    rsm_ack_through(ep, head);
    ep->head = head + 1;
    return 1;
}

/* After a malformed postbox whose extent was not known (one was consumed):
 * the slot waited at, HEAD, may be inside what the peer wrote.  If its flag
 * word holds what no slot between messages holds (rsm_pb_flag_idle), the
 * queue's framing is lost: nothing from this peer can be read any more, and
 * waiting there would hang the job without a word (as a sequence-number fault
 * did until 2026-12-05: "dropped a malformed message", then nothing).  Said
 * once, as a fatal error naming the peer. */
static void queue_framing_check(mca_btl_base_endpoint_t *ep, const rsm_postbox_t *slot,
                                uint32_t head, uint32_t mask)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    uint32_t flag = atomic_load_explicit(&slot->flag, memory_order_relaxed);
    if (flag == rsm_pb_flag(head) || rsm_pb_flag_idle(flag, head, mask) || ep->pb_framing_lost) {
        return;
    }
    ep->pb_framing_lost = true;
    char who[96];
    if (ep->remote && ep->proc != NULL) {
        snprintf(who, sizeof(who), "%s on another host", OPAL_NAME_PRINT(ep->proc->proc_name));
    } else {
        snprintf(who, sizeof(who), "local rank %d", ep->local_rank);
    }
    RSM_VERBOSE(1, "the message queue from %s is corrupt: after a malformed message (%" PRIu64
                " dropped so far), postbox %u holds 0x%08x where a message or nothing should be",
                who, c->dropped, head, flag);
    rsm_fatal(ep, "btl rsm: the message queue from %s is corrupt (a malformed message, then "
              "postbox %u inside it): its messages can no longer be told apart", who, head);
}

/* Everything but the latency path (rsm_poll in btl_rsm.h): pointer messages,
 * pads, and whatever the fast path refused, through the parser.  Inline groups
 * are handed up in place, straight from the queue: the header fields are read
 * once into locals and checked, the payload is the peer's to change (as it
 * would be in a pool block), and the postboxes are acked only after the
 * callback has copied it out. */
int rsm_poll_endpoint(mca_btl_base_endpoint_t *ep, unsigned budget)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const uint32_t mask = ep->q_mask;
    unsigned delivered = 0;

    while (delivered < budget) {
        if (ep->pair_wait) {
            int r = rsm_poll_second_half(ep);
            if (r == 0) {
                break;
            }
            delivered += r > 0;
            continue;
        }
        const uint32_t head = ep->head, index = head & mask;
        rsm_postbox_t *slot = &ep->in_queue[index];
        /* verbs: nothing past the tail the newest immediate named has landed */
        if ((ep->remote && head == ep->in_published)
            || atomic_load_explicit(&slot->flag, memory_order_acquire) != rsm_pb_flag(head)) {
            if (OPAL_UNLIKELY(ep->pb_lost_extent) && !(ep->remote && head == ep->in_published)) {
                queue_framing_check(ep, slot, head, mask);
            }
            break;
        }
        rsm_pb_hdr_t h = rsm_pb_read_hdr(slot);
        rsm_postbox_t snap;
        __builtin_memcpy(&snap, slot, sizeof(snap));
        snap.nbytes = h.nbytes;     /* the fields as read once above */
        snap.kind = h.kind;
        snap.tag = h.tag;
        rsm_pb_result_t r = rsm_assembler_feed(&ep->assembler, ep->in_lay, &snap, index);
        uint32_t n = ep->assembler.postboxes;
        ep->pb_lost_extent = r == RSM_PB_BAD && ep->assembler.lost_extent;
        if (r == RSM_PB_MORE) {
            ep->head = head + 1;
            continue;
        }
        if (r == RSM_PB_SKIP) {
            rsm_ack_through(ep, head + n - 1);
            ep->head = head + n;
            continue;
        }
        if (r == RSM_PB_DONE && ep->assembler.pair && ep->remote) {
            r = RSM_PB_BAD;             /* only a node's queues carry PAIRs */
        }
        bool pool = false;
        rsm_heard_from(ep);
        if (r == RSM_PB_DONE) {
            pool = ep->assembler.type != RSM_PB_INLINE;
            bool ok = !pool ? deliver_inline(ep, ep->assembler.tag, slot->u.data, ep->assembler.total)
                            : deliver_runs(ep);
            if (OPAL_UNLIKELY(!ok)) {
                goto bad_tag;
            }
            if (ep->assembler.pair) {
                ep->pair_wait = true;   /* acked once its second half is settled */
                delivered++;
                continue;
            }
        } else {
            /* a pointer postbox names pool blocks the sender waits to get back:
             * over verbs their acks go soon only when counted (note_acks) */
            pool = (h.kind & RSM_PB_TYPE) == RSM_PB_POINTER;
            c->dropped++;
            c->dropped_malformed++;
            RSM_VERBOSE(1, "dropped a malformed message from local rank %d (postbox %u, kind 0x%x, "
                        "%u bytes/runs); %" PRIu64 " dropped so far", ep->local_rank, head,
                        h.kind, h.nbytes, c->dropped);
        }
        rsm_ack_through(ep, head + n - 1);
        /* verbs: pool blocks are scarce, their acks go soon (note_acks); counted once
         * acked, not before the callback: a send from inside it carries the acks done
         * so far (rsm_vimm_pack), and must not take this message's for done */
        ep->in_pool_msgs += pool;
        ep->head = head + n;
        delivered++;
        continue;
bad_tag:
        /* a whole message with no receiver for its tag: dropped, counted, acked */
        ep->assembler.active = false;
        c->dropped++;
        c->dropped_tag++;
        RSM_VERBOSE(1, "dropped a message with unknown tag %u from local rank %d; %" PRIu64
                    " dropped so far", h.tag, ep->local_rank, c->dropped);
        if (r == RSM_PB_DONE && ep->assembler.pair) {
            ep->pair_wait = true;       /* its second half may still be good */
            delivered++;
            continue;
        }
        n = h.kind == (RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST)
                ? rsm_inline_postboxes(h.nbytes) : 1;
        rsm_ack_through(ep, head + n - 1);
        ep->in_pool_msgs += (h.kind & RSM_PB_TYPE) == RSM_PB_POINTER;  /* its blocks: as above */
        ep->head = head + n;
        delivered++;
    }
    return (int) delivered;
}
