/*
 * Postbox layout and parser (see rsm_postbox.h).  The parser is the only code
 * that interprets bytes a peer wrote: every length, run and sequence is checked
 * here, against the locally computed layout, before anything uses it.
 */
#include "rsm_postbox.h"

#include <string.h>

static bool is_pow2(uint64_t x)
{
    return x != 0 && (x & (x - 1)) == 0;
}

int rsm_layout_init(rsm_layout_t *lay, uint32_t nqueues, uint32_t queue_len, uint32_t stripes,
                    size_t pool_total, uint32_t small_block, uint32_t large_block,
                    uint32_t max_inline, uint32_t max_msg, const char **why)
{
    memset(lay, 0, sizeof(*lay));
    if (nqueues == 0) {
        *why = "no local ranks";
        return -1;
    }
    if (!is_pow2(queue_len) || queue_len < 4 || queue_len > 65536) {
        *why = "postboxes per queue must be a power of two in 4..65536";
        return -1;
    }
    if (stripes == 0 || stripes > RSM_MAX_STRIPES) {
        *why = "stripes must be 1..8";
        return -1;
    }
    if (!is_pow2(small_block) || !is_pow2(large_block) || small_block < RSM_POSTBOX_SIZE
        || small_block > large_block || large_block > (1u << 24)) {
        *why = "block sizes must be powers of two, 64 <= small <= large <= 16 MiB";
        return -1;
    }
    /* an inline message must leave half the ring free, so a full-size one
     * always fits once the earlier half is acknowledged */
    if ((max_inline + RSM_PB_DATA - 1) / RSM_PB_DATA > queue_len / 2) {
        *why = "the inline limit needs more than half of a queue's postboxes";
        return -1;
    }
    size_t per_stripe = pool_total / stripes;
    size_t small_bytes = (per_stripe / 8) / small_block * small_block;
    size_t large_bytes = (per_stripe - small_bytes) / large_block * large_block;
    if (per_stripe >= (1ull << 31) || large_bytes < max_msg || max_msg == 0) {
        *why = "each stripe's pool must hold the largest message, and stay below 2 GiB";
        return -1;
    }
    lay->nqueues = nqueues;
    lay->queue_len = queue_len;
    lay->stripes = stripes;
    lay->small_block = small_block;
    lay->large_block = large_block;
    lay->small_count = (uint32_t) (small_bytes / small_block);
    lay->large_count = (uint32_t) (large_bytes / large_block);
    lay->max_inline = max_inline;
    lay->max_msg = max_msg;
    size_t q = (size_t) nqueues * queue_len * RSM_POSTBOX_SIZE;
    lay->queues_bytes = (q + RSM_PAGE - 1) / RSM_PAGE * RSM_PAGE;
    lay->pool_bytes = small_bytes + large_bytes;
    return 0;
}

bool rsm_run_valid(const rsm_layout_t *lay, const rsm_run_t *run)
{
    /* 64-bit sums: offset + len cannot wrap */
    return run->stripe < lay->stripes && run->len > 0 && run->offset % RSM_POSTBOX_SIZE == 0
           && (uint64_t) run->offset + run->len <= lay->pool_bytes;
}

static rsm_pb_result_t drop(rsm_assembler_t *a)
{
    a->active = false;
    a->dropped++;
    return RSM_PB_BAD;
}

rsm_pb_result_t rsm_assembler_feed(rsm_assembler_t *a, const rsm_layout_t *lay,
                                   const rsm_postbox_t *snap)
{
    uint8_t kind = snap->kind;
    uint8_t type = kind & RSM_PB_TYPE;
    bool first = kind & RSM_PB_FIRST, last = kind & RSM_PB_LAST;

    if ((kind & ~(RSM_PB_TYPE | RSM_PB_FIRST | RSM_PB_LAST)) != 0
        || (type != RSM_PB_INLINE && type != RSM_PB_POINTER)) {
        return drop(a);
    }
    if (first) {
        if (a->active) {
            /* the previous message never ended: both are lost */
            return drop(a);
        }
        a->active = true;
        a->type = type;
        a->tag = snap->tag;
        a->postboxes = 0;
        a->total = 0;
        a->nruns = 0;
        a->single = NULL;
    } else if (!a->active || type != a->type) {
        return drop(a);
    }
    a->postboxes++;

    uint32_t n = snap->nbytes;
    if (type == RSM_PB_INLINE) {
        if (n > RSM_PB_DATA) {
            return drop(a);
        }
        if (first && last) {
            a->single = snap->u.data;
            a->total = n;
            a->active = false;
            return RSM_PB_DONE;
        }
        if ((uint64_t) a->total + n > lay->max_inline || (uint64_t) a->total + n > a->staging_cap
            || a->staging == NULL) {
            return drop(a);
        }
        memcpy(a->staging + a->total, snap->u.data, n);
        a->total += n;
    } else {
        if (n == 0 || n > RSM_PB_RUNS || a->nruns + n > RSM_MSG_MAX_RUNS) {
            return drop(a);
        }
        for (uint32_t i = 0; i < n; i++) {
            const rsm_run_t *run = &snap->u.runs[i];
            if (!rsm_run_valid(lay, run) || (uint64_t) a->total + run->len > lay->max_msg) {
                return drop(a);
            }
            a->runs[a->nruns++] = *run;
            a->total += run->len;
        }
    }
    if (last) {
        a->active = false;
        return RSM_PB_DONE;
    }
    return RSM_PB_MORE;
}
