/* Send fragments: a LIFO of reusable descriptors, and their pool blocks. */
#include "btl_rsm_frag.h"
#include "rsm_copy.h"

#include <stdlib.h>

mca_btl_rsm_frag_t *rsm_frag_get(mca_btl_base_endpoint_t *ep, uint8_t kind)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    mca_btl_rsm_frag_t *frag = c->free_frags;
    if (frag != NULL) {
        c->free_frags = frag->next;
    } else {
        frag = calloc(1, sizeof(*frag) + c->inline_max);
        if (frag == NULL) {
            return NULL;
        }
        OBJ_CONSTRUCT(&frag->base, mca_btl_base_descriptor_t);
    }
    frag->next = NULL;
    frag->endpoint = ep;
    frag->kind = kind;
    frag->nruns = 0;
    frag->staged = NULL;
    frag->base.des_segments = frag->segments;
    frag->base.des_segment_count = 1;
    frag->base.des_cbfunc = NULL;
    frag->base.des_cbdata = NULL;
    frag->base.des_context = NULL;
    frag->base.des_flags = 0;
    frag->base.order = MCA_BTL_NO_ORDER;
    frag->segments[0].seg_addr.pval = frag->data;
    frag->segments[0].seg_len = 0;
    return frag;
}

void rsm_frag_put(mca_btl_rsm_frag_t *frag)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    for (unsigned i = 0; i < frag->nruns; i++) {
        rsm_pool_free(&frag->endpoint->area->pool[frag->runs[i].stripe], &frag->runs[i]);
    }
    frag->nruns = 0;
    if (frag->staged != NULL) {
        frag->endpoint->area->staged--;
        free(frag->staged);
        frag->staged = NULL;
    }
    frag->next = c->free_frags;
    c->free_frags = frag;
}

void rsm_frag_release_all(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    while (c->free_frags != NULL) {
        mca_btl_rsm_frag_t *frag = c->free_frags;
        c->free_frags = frag->next;
        OBJ_DESTRUCT(&frag->base);
        free(frag);
    }
}

void rsm_frag_complete(mca_btl_rsm_frag_t *frag, int status)
{
    uint32_t flags = frag->base.des_flags;
    if (flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) {
        frag->base.des_cbfunc(&mca_btl_rsm, frag->endpoint, &frag->base, status);
    }
    if (flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP) {
        rsm_frag_put(frag);
    }
}

void *rsm_run_addr(rsm_area_t *area, const rsm_run_t *run)
{
    return (char *) area->seg[run->stripe].base
           + rsm_layout_pool_base(area->lay, run->stripe) + run->offset;
}

/* One attempt: all runs or none.  frag->runs are the blocks as allocated (what
 * is freed); the segments, and the runs on the wire (post_pointer), start SKEW
 * bytes into the first. */
static int alloc_runs_once(mca_btl_rsm_frag_t *frag, size_t len, bool may_stripe, uint32_t skew)
{
    rsm_area_t *area = frag->endpoint->area;
    const rsm_layout_t *lay = area->lay;
    unsigned n = 1;
    const bool hot = frag->endpoint->answered && mca_btl_rsm_component.pool_answer_hot;
    frag->endpoint->answered = false;
    /* software striping (seed 000, 3.3): a long message is cut into one piece
     * per stripe, each written into that stripe's part of the pool.  Not between
     * hosts while one chunk has room: every chunk of a verbs pool is written
     * through the same queue pair, so a piece is only one more write, and a
     * message of one run is one write in all (a direct unit, rsm_verbs.h) */
    const bool may_cut = may_stripe && lay->stripes > 1
                         && len >= (size_t) lay->stripes * 2 * lay->large_block;
    if (may_cut && !frag->endpoint->remote) {
        n = lay->stripes;
    }
    if (n == 1) {
        /* one piece: in the first stripe with room (stripe 0 unless it is full;
         * a verbs pool that grew has several, btl_rsm_verbs.c) */
        for (unsigned s = 0; s < lay->stripes; s++) {
            if (rsm_pool_alloc_fit(&area->pool[s], (uint32_t) len + skew, &frag->runs[0], hot) == 0) {
                frag->segments[0].seg_addr.pval = (char *) rsm_run_addr(area, &frag->runs[0]) + skew;
                frag->segments[0].seg_len = len;
                frag->nruns = 1;
                frag->base.des_segment_count = 1;
                return 0;
            }
        }
        if (!may_cut) {
            return -1;
        }
        n = lay->stripes;       /* between hosts: pieces where no chunk holds it whole */
    }
    /* pieces rounded up to cache lines may cover LEN before the last stripe:
     * then fewer pieces (a piece of 0 bytes has no block, and the message
     * would wait for one for ever) */
    size_t piece = rsm_round64((len + n - 1) / n), done = 0;
    unsigned i = 0;
    for (; i < n && (done < len || i == 0); i++) {
        uint32_t this_len = (uint32_t) (len - done < piece ? len - done : piece);
        uint32_t this_skew = i == 0 ? skew : 0;
        if (rsm_pool_alloc(&area->pool[i], this_len + this_skew, &frag->runs[i]) != 0) {
            for (unsigned j = 0; j < i; j++) {
                rsm_pool_free(&area->pool[j], &frag->runs[j]);
            }
            return -1;
        }
        frag->segments[i].seg_addr.pval = (char *) rsm_run_addr(area, &frag->runs[i]) + this_skew;
        frag->segments[i].seg_len = this_len;
        done += this_len;
    }
    frag->nruns = (uint8_t) i;
    frag->base.des_segment_count = i;
    return 0;
}

/* The runs just allocated have their memory (btl_rsm.h, rsm_area_t.reserved),
 * or the job ends: /dev/shm is full, and a store into the pool would raise
 * SIGBUS.  0, or -1 with the runs freed. */
static int runs_reserved(mca_btl_rsm_frag_t *frag)
{
    rsm_area_t *area = frag->endpoint->area;
    bool have = true;
    for (unsigned i = 0; i < frag->nruns && have; i++) {
        const uint64_t want = rsm_area_run_chunks(area, &frag->runs[i]);
        have = (area->reserved[frag->runs[i].stripe] & want) == want;
    }
    if (OPAL_LIKELY(have) || rsm_area_reserve_runs(area, frag->runs, frag->nruns) == OPAL_SUCCESS) {
        return 0;
    }
    for (unsigned i = 0; i < frag->nruns; i++) {
        rsm_pool_free(&area->pool[frag->runs[i].stripe], &frag->runs[i]);
    }
    frag->nruns = 0;
    rsm_fatal(frag->endpoint, "btl rsm: a message to a rank of this host could not be sent");
    return -1;
}

int rsm_frag_alloc_runs(mca_btl_rsm_frag_t *frag, size_t len, bool may_stripe, uint32_t skew)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (len > c->layout.max_msg) {
        return -1;
    }
    if (frag->endpoint->area->staged > 0 && frag->kind != RSM_FRAG_STAGED) {
        c->pool_full++;         /* as good as full: */
        if (OPAL_UNLIKELY(frag->endpoint->remote)) {
            rsm_verbs_pool_full(frag->endpoint);
        }
        return -1;              /* staged messages wait for blocks: they go first */
    }
    const rsm_layout_t *lay = frag->endpoint->area->lay;
    if (OPAL_UNLIKELY(frag->endpoint->remote) && c->verbs_direct) {
        skew += RSM_POSTBOX_SIZE;   /* room for a direct unit's postbox (rsm_verbs.h) */
    }
    if ((uint64_t) len + skew > (uint64_t) lay->large_count * lay->large_block) {
        skew = 0;               /* a pool sized to the largest message exactly: no room to skew */
    }
    if (alloc_runs_once(frag, len, may_stripe, skew) == 0) {
        return runs_reserved(frag);
    }
    /* the pool is full of acknowledged blocks we have not collected yet? */
    for (uint32_t i = 0; i < c->n_outbound; i++) {
        if (c->outbound[i]->area == frag->endpoint->area) {
            rsm_endpoint_reclaim(c->outbound[i], true);
        }
    }
    if (alloc_runs_once(frag, len, may_stripe, skew) == 0) {
        return runs_reserved(frag);
    }
    /* a staged message retried from progress is one event, counted when staged */
    c->pool_full += frag->kind != RSM_FRAG_STAGED;
    if (OPAL_UNLIKELY(frag->endpoint->remote)) {
        rsm_verbs_pool_full(frag->endpoint);  /* a sender that streams: its pool may grow */
    }
    return -1;
}

int rsm_frag_stage(mca_btl_rsm_frag_t *frag, size_t len)
{
    frag->staged = malloc(len > 0 ? len : 1);
    if (frag->staged == NULL) {
        return -1;
    }
    frag->kind = RSM_FRAG_STAGED;
    frag->endpoint->area->staged++;
    mca_btl_rsm_component.staged++;
    frag->nruns = 0;
    frag->base.des_segment_count = 1;
    frag->segments[0].seg_addr.pval = frag->staged;
    frag->segments[0].seg_len = len;
    return 0;
}

bool rsm_frag_unstage(mca_btl_rsm_frag_t *frag)
{
    size_t len = frag->segments[0].seg_len;   /* what ob1 packed, header included */
    if (rsm_frag_alloc_runs(frag, len, true, 0) != 0) {
        frag->segments[0].seg_addr.pval = frag->staged;  /* a failed attempt may have moved it */
        frag->segments[0].seg_len = len;
        frag->base.des_segment_count = 1;
        return false;
    }
    const uint8_t *src = frag->staged;
    for (unsigned i = 0; i < frag->nruns; i++) {
        size_t n = frag->segments[i].seg_len;
        if (rsm_stream_to(frag->endpoint, n)) {
            rsm_copy_stream(frag->segments[i].seg_addr.pval, src, n);
        } else {
            memcpy(frag->segments[i].seg_addr.pval, src, n);
        }
        src += n;
    }
    free(frag->staged);
    frag->staged = NULL;
    frag->endpoint->area->staged--;
    frag->kind = RSM_FRAG_POOL;
    return true;
}

int rsm_pack(struct opal_convertor_t *convertor, struct iovec *iov, uint32_t iov_count,
             size_t *bytes, bool stream)
{
    if (stream && !opal_convertor_need_buffers(convertor)) {
        /* contiguous: stream it in (rsm_copy.h), then move ob1's convertor on */
        char *src;
        size_t left = *bytes, pos = convertor->bConverted + *bytes;
        opal_convertor_get_current_pointer(convertor, (void **) &src);
        for (uint32_t i = 0; i < iov_count && left > 0; i++) {
            size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
            rsm_copy_stream(iov[i].iov_base, src, n);
            src += n;
            left -= n;
        }
        *bytes -= left;
        pos -= left;
        opal_convertor_set_position(convertor, &pos);
        return OPAL_SUCCESS;
    }
    size_t max_data = *bytes;
    int rc = opal_convertor_pack(convertor, iov, &iov_count, &max_data);
    *bytes = max_data;
    return rc < 0 ? rc : OPAL_SUCCESS;
}
