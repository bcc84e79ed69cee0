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
    /* an inline group (with the postbox kept in reserve) must leave half the
     * ring free, so a full-size one always fits, pad included, once the
     * earlier half is acknowledged */
    if (max_inline > 0xffff || rsm_inline_postboxes(max_inline) + 1 > queue_len / 2) {
        *why = "the inline limit needs more than half of a queue's postboxes";
        return -1;
    }
    size_t per_stripe = pool_total / stripes;
    size_t small_bytes = rsm_pool_small_bytes(per_stripe, small_block, large_block);
    size_t large_bytes = rsm_pool_large_bytes(pool_total, stripes, small_block, large_block);
    if (per_stripe >= (1ull << 31) || large_bytes < max_msg || max_msg == 0) {
        *why = "each stripe's pool must hold the largest message, and stay below 2 GiB";
        return -1;
    }
    lay->nqueues = nqueues;
    lay->queue_len = queue_len;
    lay->queue_shift = (uint32_t) __builtin_ctz(queue_len);
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
    /* 64-bit sums: offset + len cannot wrap.  No alignment is required: the
     * sender starts a message up to 63 bytes into its first block so that the
     * payload shares its source's alignment (btl_rsm_frag.h, rsm_payload_skew);
     * what matters for safety is that every byte lies inside the pool. */
    return run->stripe < lay->stripes && run->len > 0
           && (uint64_t) run->offset + run->len <= lay->pool_bytes;
}

static rsm_pb_result_t drop(rsm_assembler_t *a)
{
    a->active = false;
    a->dropped++;
    return RSM_PB_BAD;
}

/* a refused postbox whose extent its header does not show: one is consumed */
static rsm_pb_result_t drop_unsized(rsm_assembler_t *a)
{
    a->lost_extent = true;
    return drop(a);
}

rsm_pb_result_t rsm_assembler_feed(rsm_assembler_t *a, const rsm_layout_t *lay,
                                   const rsm_postbox_t *snap, uint32_t index)
{
    uint8_t kind = snap->kind;
    uint8_t type = kind & RSM_PB_TYPE;
    bool first = kind & RSM_PB_FIRST, last = kind & RSM_PB_LAST;
    uint32_t to_end = index < lay->queue_len ? lay->queue_len - index : 0;

    a->postboxes = 1;
    a->pair = false;
    a->lost_extent = false;
    bool pair = kind & RSM_PB_PAIR;
    if ((kind & ~(RSM_PB_TYPE | RSM_PB_FIRST | RSM_PB_LAST | RSM_PB_PAIR)) != 0 || type == 0
        || to_end == 0 || (pair && (type != RSM_PB_INLINE || snap->nbytes > RSM_PB_HALF_DATA))) {
        return drop_unsized(a);
    }
    if (type != RSM_PB_POINTER) {
        /* groups and pads are whole in one header: never inside a pointer message */
        if (!first || !last) {
            return drop_unsized(a);
        }
        if (type == RSM_PB_PAD) {
            if (snap->nbytes != 0) {
                return drop_unsized(a);
            }
            a->postboxes = to_end;
            return a->active ? drop(a) : RSM_PB_SKIP;   /* inside a pointer message: both lost */
        }
        uint32_t n = snap->nbytes, k = rsm_inline_postboxes(n);
        if (n > lay->max_inline || k > to_end) {
            return drop_unsized(a);
        }
        if (a->active) {
            a->postboxes = k;           /* a whole group inside a pointer message: both lost */
            return drop(a);
        }
        a->type = RSM_PB_INLINE;
        a->tag = snap->tag;
        a->total = n;
        a->nruns = 0;
        a->postboxes = k;
        a->pair = pair;
        return RSM_PB_DONE;
    }
    if (first) {
        if (a->active) {
            /* the previous message never ended: both are lost */
            return drop(a);
        }
        a->active = true;
        a->type = type;
        a->tag = snap->tag;
        a->total = 0;
        a->nruns = 0;
    } else if (!a->active) {
        return drop(a);
    }
    uint32_t n = snap->nbytes;
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
    if (last) {
        a->active = false;
        return RSM_PB_DONE;
    }
    return RSM_PB_MORE;
}
