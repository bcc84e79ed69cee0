/* Block pool allocator (see rsm_pool.h): a bitmap per block size, address-ordered
 * first fit.  First fit (rather than next fit) keeps reusing the lowest blocks,
 * which the last messages just freed: the pool's working set is what is in
 * flight, and it stays in both sides' caches instead of sweeping the whole pool
 * through them (a 4 MiB pool is twice this machine's L2). */
#include "rsm_pool.h"

#include <stdlib.h>
#include <string.h>

static int blockset_init(rsm_blockset_t *set, uint32_t count, uint32_t block, uint32_t base)
{
    set->count = count;
    set->block = block;
    set->free = count;
    set->base = base;
    set->map = calloc((count + 63) / 64 + 1, sizeof(uint64_t));
    if (set->map == NULL) {
        return -1;
    }
    /* the bits past the last block read as used, so a scan never runs off the end */
    for (uint32_t i = count; i < ((count + 63) / 64 + 1) * 64; i++) {
        set->map[i / 64] |= 1ull << (i % 64);
    }
    return 0;
}

static void set_bits(rsm_blockset_t *set, uint32_t first, uint32_t n, bool used)
{
    for (uint32_t i = first; i < first + n; i++) {
        if (used) {
            set->map[i / 64] |= 1ull << (i % 64);
        } else {
            set->map[i / 64] &= ~(1ull << (i % 64));
        }
    }
}

/* The lowest run of N free blocks: full words are skipped whole, a word with a
 * free bit is taken bit by bit (ctz for the single-block case). */
static int blockset_alloc(rsm_blockset_t *set, uint32_t n)
{
    if (n == 0 || n > set->free) {
        return -1;
    }
    const uint32_t words = (set->count + 63) / 64;
    uint32_t run = 0, first = 0;
    for (uint32_t w = 0; w < words; w++) {
        uint64_t used = set->map[w];
        if (used == ~0ull) {
            run = 0;
            continue;
        }
        if (n == 1) {
            first = w * 64 + (uint32_t) __builtin_ctzll(~used);
            set->map[w] |= 1ull << (first % 64);
            set->free--;
            return (int) first;
        }
        for (uint32_t b = 0; b < 64; b++) {
            if ((used >> b) & 1) {
                run = 0;
                continue;
            }
            if (run++ == 0) {
                first = w * 64 + b;
            }
            if (run == n) {
                set_bits(set, first, n, true);
                set->free -= n;
                return (int) first;
            }
        }
    }
    return -1;
}

int rsm_pool_init(rsm_pool_t *pool, const rsm_layout_t *lay, uint8_t stripe)
{
    memset(pool, 0, sizeof(*pool));
    pool->stripe = stripe;
    if (blockset_init(&pool->small, lay->small_count, lay->small_block, 0) != 0
        || blockset_init(&pool->large, lay->large_count, lay->large_block,
                         lay->small_count * lay->small_block) != 0) {
        rsm_pool_fini(pool);
        return -1;
    }
    return 0;
}

void rsm_pool_fini(rsm_pool_t *pool)
{
    free(pool->small.map);
    free(pool->large.map);
    pool->small.map = pool->large.map = NULL;
}

int rsm_pool_alloc(rsm_pool_t *pool, uint32_t len, rsm_run_t *run)
{
    rsm_blockset_t *set = NULL;
    int first = -1;
    if (len == 0) {
        return -1;
    }
    if (len <= pool->small.block) {
        set = &pool->small;
        first = blockset_alloc(set, 1);
    }
    if (first < 0) {
        set = &pool->large;
        first = blockset_alloc(set, (len + set->block - 1) / set->block);
    }
    if (first < 0) {
        return -1;
    }
    run->offset = set->base + (uint32_t) first * set->block;
    run->len = len;
    run->stripe = pool->stripe;
    memset(run->pad, 0, sizeof(run->pad));
    return 0;
}

void rsm_pool_free(rsm_pool_t *pool, const rsm_run_t *run)
{
    rsm_blockset_t *set = run->offset < pool->large.base ? &pool->small : &pool->large;
    uint32_t first = (run->offset - set->base) / set->block;
    uint32_t n = (run->len + set->block - 1) / set->block;
    set_bits(set, first, n, false);
    set->free += n;
}

size_t rsm_pool_free_bytes(const rsm_pool_t *pool)
{
    return (size_t) pool->small.free * pool->small.block
           + (size_t) pool->large.free * pool->large.block;
}
