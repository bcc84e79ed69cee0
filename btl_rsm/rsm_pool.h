/*
 * The sender's allocator for one stripe's block pool (seed 000, 3.1): space in
 * multiples of a small or a large block, so the pool never fragments into
 * useless slivers.  Only the owning sender allocates, so there are no locks and
 * the bookkeeping lives in the sender's private memory; the receiver only ever
 * sees runs in pointer postboxes.  Blocks come back when their postbox is acked.
 */
#ifndef RSM_POOL_H
#define RSM_POOL_H

#include "rsm_postbox.h"

typedef struct rsm_blockset {
    uint32_t count, block, free;
    uint32_t base;              /* offset of the first block in the pool */
    uint64_t *map;              /* bit set = block in use */
    bool next_fit;              /* search from where the last run ended, not from 0 */
    uint32_t hint;              /* next fit: the block after the last run */
    uint32_t lap;               /* next fit: starts again from 0 past this block */
} rsm_blockset_t;

typedef struct rsm_pool {
    rsm_blockset_t small, large;
    uint8_t stripe;
} rsm_pool_t;

int rsm_pool_init(rsm_pool_t *pool, const rsm_layout_t *lay, uint8_t stripe);
void rsm_pool_fini(rsm_pool_t *pool);
/* First fit (the default) or next fit: see rsm_pool.c for when each pays.  Next
 * fit goes round the first LAP bytes of the pool (each block size its share;
 * 0 or at least the pool: all of it) and takes blocks past them only when
 * those are busy. */
void rsm_pool_set_next_fit(rsm_pool_t *pool, bool next_fit, size_t lap);
/* A run of at least LEN bytes (run->len = LEN).  Returns 0, or -1 when the pool
 * has no such run right now (the caller reclaims acked blocks and retries). */
int rsm_pool_alloc(rsm_pool_t *pool, uint32_t len, rsm_run_t *run);
/* The same; REUSE_HOT takes first fit even in a next-fit pool, and leaves its
 * hint where it was. */
int rsm_pool_alloc_fit(rsm_pool_t *pool, uint32_t len, rsm_run_t *run, bool reuse_hot);
void rsm_pool_free(rsm_pool_t *pool, const rsm_run_t *run);
/* bytes not allocated */
size_t rsm_pool_free_bytes(const rsm_pool_t *pool);

#endif
