/*
 * The receiver's half: poll the postbox at the head of each inbound queue,
 * hand every checked message to the upper layer, write the 1-byte acks into
 * the sender's control segment.  Messages in pool blocks are handed up in
 * place (ob1 copies them out during the callback); only then are they acked,
 * which gives the blocks back to the sender.
 */
#include "btl_rsm.h"

static void ack_through(mca_btl_base_endpoint_t *ep, uint32_t last)
{
    const uint32_t qlen = mca_btl_rsm_component.layout.queue_len, mask = qlen - 1;
    for (uint32_t seq = ep->unacked; seq != last + 1; seq++) {
        /* release: our reads of the message are done before the sender reuses it */
        atomic_store_explicit(&ep->in_acks[seq & mask], rsm_lap_tag(seq, qlen),
                              memory_order_release);
    }
    ep->unacked = last + 1;
}

static bool deliver(mca_btl_base_endpoint_t *ep)
{
    const rsm_assembler_t *a = &ep->assembler;
    const rsm_layout_t *lay = &mca_btl_rsm_component.layout;
    mca_btl_base_segment_t segs[RSM_MSG_MAX_RUNS];
    mca_btl_base_descriptor_t des = {.des_segments = segs, .des_segment_count = 1};
    uint8_t tag = a->tag;

    if (tag >= MCA_BTL_TAG_MAX || mca_btl_base_active_message_trigger[tag].cbfunc == NULL) {
        return false;
    }
    if (a->type == RSM_PB_INLINE) {
        segs[0].seg_addr.pval = (void *) (a->single != NULL ? a->single : a->staging);
        segs[0].seg_len = a->total;
    } else {
        for (uint32_t i = 0; i < a->nruns; i++) {
            const rsm_run_t *run = &a->runs[i];   /* checked by the parser */
            segs[i].seg_addr.pval = (char *) ep->in_seg[run->stripe].base
                                    + rsm_layout_pool_base(lay, run->stripe) + run->offset;
            segs[i].seg_len = run->len;
        }
        des.des_segment_count = a->nruns;
    }
    mca_btl_active_message_callback_t *reg = &mca_btl_base_active_message_trigger[tag];
    reg->cbfunc(&mca_btl_rsm, tag, &des, reg->cbdata);
    return true;
}

int rsm_poll_endpoint(mca_btl_base_endpoint_t *ep, unsigned budget)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const uint32_t mask = c->layout.queue_len - 1;
    unsigned delivered = 0;
    rsm_postbox_t snap;

    while (delivered < budget && rsm_pb_take(&ep->in_queue[ep->head & mask], ep->head, &snap)) {
        rsm_pb_result_t r;
        if (OPAL_LIKELY(snap.kind == (RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST)
                        && snap.nbytes <= RSM_PB_DATA && !ep->assembler.active)) {
            /* the latency path, a one-postbox message: the checks of the parser, inline */
            ep->assembler.type = RSM_PB_INLINE;
            ep->assembler.tag = snap.tag;
            ep->assembler.single = snap.u.data;
            ep->assembler.total = snap.nbytes;
            r = RSM_PB_DONE;
        } else {
            r = rsm_assembler_feed(&ep->assembler, &c->layout, &snap);
        }
        if (r == RSM_PB_MORE) {
            ep->head++;
            continue;
        }
        if (r == RSM_PB_BAD || !deliver(ep)) {
            c->dropped++;
            RSM_VERBOSE(1, "dropped a malformed message from local rank %u (postbox %u, kind 0x%x, "
                        "%u bytes/runs); %" PRIu64 " dropped so far", ep->local_rank, ep->head,
                        snap.kind, snap.nbytes, c->dropped);
        }
        ack_through(ep, ep->head);
        ep->head++;
        delivered++;
    }
    return (int) delivered;
}
