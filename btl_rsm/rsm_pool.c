/* Block pool allocator (see rsm_pool.h): a bitmap per block size, first fit or
 * next fit.
 *
 * First fit keeps reusing the lowest blocks, which the last messages just
 * freed: the pool's working set is what is in flight.  But a block freed a
 * moment ago was a moment ago read by the receiver, and the sender's stores
 * into it wait for its lines to be taken back from the receiver's core: a
 * streaming sender of 2-4 KiB messages spent a third of its time stalled on
 * that.  Next fit moves on through the pool, so a block comes back a whole lap
 * later, when the receiver's copies of its lines are long gone; on this machine
 * it moved 2-4 KiB messages 1.3-1.5x faster (btl_rsm/README.md).  The node's
 * pools use next fit (btl_rsm_pool_next_fit); the verbs shadow pools first fit,
 * where only a NIC reads the blocks.  A sender that answers a message (a
 * ping-pong) takes first fit even in a next-fit pool (rsm_pool_alloc_fit):
 * there the blocks it reuses are the ones still in its own cache, and the 4 KiB
 * round trip was 0.44 us by next fit against 0.36 by first fit (an Intel host;
 * on one with a small cache the other way round, btl_rsm_pool_answer_hot).  Such
 * an allocation leaves the next-fit hint where it was.
 *
 * The lap is the pool's working set, and two ranks streaming both ways go
 * round two pools at once.  Where the last-level cache holds both laps (32 MiB
 * and more) the lap is 4 MiB, half the default pool: the other half takes
 * only windows that outgrow the lap.  On a host with an 8 MiB L3 two 4 MiB
 * laps filled it, every block came back from memory, and 4-16 KiB messages
 * both ways moved at 0.53-0.78x of pml ucx; 1.5 MiB laps took them to 0.9-1.1x
 * and kept streaming one way at its rate (a 1 MiB lap did not: 4 KiB messages
 * take two 4 KiB blocks, and 64 of them in flight came round again too soon).
 * btl_rsm_pool_lap chooses it. */
#include "rsm_pool.h"

#include <stdlib.h>
#include <string.h>

static int blockset_init(rsm_blockset_t *set, uint32_t count, uint32_t block, uint32_t base)
{
    set->count = count;
    set->block = block;
    set->free = count;
    set->base = base;
    set->lap = count;
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
    while (n > 0) {
        uint32_t bit = first % 64, k = 64 - bit < n ? 64 - bit : n;
        uint64_t mask = (k == 64 ? ~0ull : (1ull << k) - 1) << bit;
        if (used) {
            set->map[first / 64] |= mask;
        } else {
            set->map[first / 64] &= ~mask;
        }
        first += k;
        n -= k;
    }
}

/* The bits of FREE at which a run of N (1..64) free bits starts inside the word:
 * runs of 1, 2, 4, ... by doubling, then two overlapping runs of the largest
 * power of two cover N. */
static uint64_t run_starts(uint64_t free, uint32_t n)
{
    uint32_t len = 1;
    while (2 * len <= n) {
        free &= free >> len;
        len *= 2;
    }
    if (len < n) {
        free &= free >> (n - len);
    }
    return free;
}

/* The first run of N free blocks from where the search starts (0, or the next
 * fit hint's word), a word at a time: a run carried up from the words below is
 * tried first (it starts lower), then runs inside the word.  A bit-by-bit scan
 * cost ~30 ns per 4 KiB message at 64 in flight. */
static int blockset_alloc(rsm_blockset_t *set, uint32_t n, bool next_fit)
{
    if (n == 0 || n > set->free) {
        return -1;
    }
    const uint32_t words = (set->count + 63) / 64;
    /* next fit: from the hint up to the lap's end, then once more from 0 (runs
     * below the hint, runs that cross it, and past the lap) */
    const uint32_t start = next_fit && set->hint < set->lap ? set->hint : 0;
    uint32_t w = start / 64;
    uint32_t carried = 0;       /* free blocks at the top of the words below */
    for (bool wrapped = start == 0; w < words || !wrapped; w++) {
        if (w == words) {
            wrapped = true;
            w = 0;
            carried = 0;
        }
        uint64_t free = ~set->map[w];
        if (!wrapped && w == start / 64) {
            free &= ~0ull << (start % 64);      /* below the hint: not in this pass */
        }
        if (free == 0) {
            carried = 0;
            continue;
        }
        int64_t first = -1;
        if (carried > 0) {
            uint32_t low = free == ~0ull ? 64 : (uint32_t) __builtin_ctzll(~free);
            if (carried + low >= n) {
                first = (int64_t) w * 64 - carried;
            }
        }
        if (first < 0 && n <= 64) {
            uint64_t starts = run_starts(free, n);
            if (starts != 0) {
                first = (int64_t) w * 64 + __builtin_ctzll(starts);
            }
        }
        /* from the hint, only runs that start inside the lap (they may cross
         * its end): past it busy blocks of a slow receiver (the pool serves all
         * of a node's) would send the search out of the lap while blocks below
         * the hint are free */
        if (first >= 0 && !wrapped && (uint32_t) first >= set->lap) {
            w = words - 1;      /* a run past the lap: from 0 instead (the wrap is next) */
            carried = 0;
            continue;
        }
        if (first >= 0) {
            set_bits(set, (uint32_t) first, n, true);
            set->free -= n;
            if (next_fit) {
                set->hint = (uint32_t) first + n;   /* past the end: wraps on the next call */
            }
            return (int) first;
        }
        carried = free == ~0ull ? carried + 64 : (uint32_t) __builtin_clzll(~free);
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

static uint32_t lap_blocks(const rsm_blockset_t *set, size_t lap, size_t pool_bytes)
{
    if (lap == 0 || lap >= pool_bytes) {
        return set->count;
    }
    uint64_t n = (uint64_t) set->count * lap / pool_bytes;
    return n == 0 ? 1 : (uint32_t) n;
}

void rsm_pool_set_next_fit(rsm_pool_t *pool, bool next_fit, size_t lap)
{
    const size_t pool_bytes = (size_t) pool->small.count * pool->small.block
                              + (size_t) pool->large.count * pool->large.block;
    pool->small.next_fit = pool->large.next_fit = next_fit;
    pool->small.hint = pool->large.hint = 0;
    pool->small.lap = lap_blocks(&pool->small, lap, pool_bytes);
    pool->large.lap = lap_blocks(&pool->large, lap, pool_bytes);
}

void rsm_pool_fini(rsm_pool_t *pool)
{
    free(pool->small.map);
    free(pool->large.map);
    pool->small.map = pool->large.map = NULL;
}

int rsm_pool_alloc_fit(rsm_pool_t *pool, uint32_t len, rsm_run_t *run, bool reuse_hot)
{
    rsm_blockset_t *set = NULL;
    int first = -1;
    if (len == 0) {
        return -1;
    }
    if (len <= pool->small.block) {
        set = &pool->small;
        first = blockset_alloc(set, 1, set->next_fit && !reuse_hot);
    }
    if (first < 0) {
        set = &pool->large;
        first = blockset_alloc(set, (len + set->block - 1) / set->block, set->next_fit && !reuse_hot);
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

int rsm_pool_alloc(rsm_pool_t *pool, uint32_t len, rsm_run_t *run)
{
    return rsm_pool_alloc_fit(pool, len, run, false);
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
