/* Block pool: small and large blocks, contiguous runs, reuse, exhaustion, no overlap. */
#include <stdlib.h>
#include <string.h>

#include "rsm_pool.h"
#include "tap.h"

/* First fit the plain way, bit by bit: the lowest run of N free blocks, or -1. */
static int naive_first_fit(const rsm_blockset_t *set, uint32_t n)
{
    uint32_t run = 0;
    for (uint32_t i = 0; i < set->count; i++) {
        run = (set->map[i / 64] >> (i % 64)) & 1 ? 0 : run + 1;
        if (run == n) {
            return (int) (i + 1 - n);
        }
    }
    return -1;
}

/* Next fit the plain way: the first run of N free blocks that starts at or
 * after the hint and inside the lap (none once the hint is past the lap), else
 * the lowest run. */
static int naive_next_fit(const rsm_blockset_t *set, uint32_t n)
{
    uint32_t run = 0;
    for (uint32_t i = set->hint < set->lap ? set->hint : set->count; i < set->count; i++) {
        run = (set->map[i / 64] >> (i % 64)) & 1 ? 0 : run + 1;
        if (run == n) {
            if (i + 1 - n >= set->lap) {
                break;
            }
            return (int) (i + 1 - n);
        }
    }
    return naive_first_fit(set, n);
}

/* Where rsm_pool_alloc must put LEN bytes: a small block when one is free and
 * the message fits, else the lowest run of large blocks (offset, or -1). */
static int64_t expected_offset(const rsm_pool_t *pool, uint32_t len)
{
    int (*fit)(const rsm_blockset_t *, uint32_t) = pool->large.next_fit ? naive_next_fit
                                                                         : naive_first_fit;
    if (len <= pool->small.block) {
        int b = fit(&pool->small, 1);
        if (b >= 0) {
            return pool->small.base + (int64_t) b * pool->small.block;
        }
    }
    int b = fit(&pool->large, (len + pool->large.block - 1) / pool->large.block);
    return b < 0 ? -1 : pool->large.base + (int64_t) b * pool->large.block;
}

/* Random sizes allocated and freed at random: no two live runs overlap, every
 * placement is the policy's, exhaustion is refused, everything comes back. */
static void churn(rsm_pool_t *pool, const rsm_layout_t *lay, size_t total, const char *policy)
{
    /* fill with random sizes, free at random, check no two live runs overlap */
    enum { N = 400 };
    rsm_run_t live[N];
    int nlive = 0, overlaps = 0, fails = 0, allocs = 0, misplaced = 0, crossing = 0, over64 = 0;
    srand(7);
    for (int step = 0; step < 20000; step++) {
        if (nlive < N && (rand() % 3 != 0 || nlive == 0)) {
            /* mostly messages of one to a few blocks, some of up to 80 large
             * blocks: runs that cross one or two 64-block words of the map */
            uint32_t len = 1 + (uint32_t) (rand() % 8 == 0 ? rand() % (80 * 4096) : rand() % 33000);
            int64_t want = expected_offset(pool, len);
            rsm_run_t r;
            if (rsm_pool_alloc(pool, len, &r) != 0) {
                misplaced += want >= 0;
                fails++;
                continue;
            }
            misplaced += want != (int64_t) r.offset;
            allocs++;
            if (r.offset >= pool->large.base) {
                uint32_t b0 = (r.offset - pool->large.base) / 4096, nb = (r.len + 4095) / 4096;
                crossing += b0 / 64 != (b0 + nb - 1) / 64;
                over64 += nb > 64;
            }
            for (int i = 0; i < nlive; i++) {
                uint64_t a0 = r.offset, a1 = r.offset + r.len, b0 = live[i].offset,
                         b1 = live[i].offset + live[i].len;
                overlaps += a0 < b1 && b0 < a1;
            }
            overlaps += !rsm_run_valid(lay, &r);
            live[nlive++] = r;
        } else {
            int k = rand() % nlive;
            rsm_pool_free(pool, &live[k]);
            live[k] = live[--nlive];
        }
    }
    CHECK(overlaps == 0, "%s: %d allocations, %d refusals when full, no overlap", policy, allocs, fails);
    CHECK(fails > 0, "%s: exhaustion is reported, not overrun", policy);
    CHECK(misplaced == 0, "%s: every allocation and refusal is where a bit-by-bit scan puts it (%d differ)",
          policy, misplaced);
    CHECK(crossing > 100 && over64 > 0, "%s: %d runs crossed a word of the map, %d were longer than one", policy,
          crossing, over64);
    while (nlive > 0) rsm_pool_free(pool, &live[--nlive]);
    CHECK(rsm_pool_free_bytes(pool) == total, "%s: all blocks back after the churn", policy);
}

int main(void)
{
    rsm_layout_t lay;
    const char *why = "";
    CHECK(rsm_layout_init(&lay, 2, 64, 1, 4 * 1024 * 1024, 2048, 4096, 512, 32768, &why) == 0, "layout");
    rsm_pool_t pool;
    CHECK(rsm_pool_init(&pool, &lay, 0) == 0, "pool init");
    size_t total = rsm_pool_free_bytes(&pool);
    CHECK(total == lay.pool_bytes, "all %zu bytes free", total);

    rsm_run_t s, l;
    CHECK(rsm_pool_alloc(&pool, 1000, &s) == 0 && s.offset < pool.large.base, "small message -> small block");
    CHECK(rsm_pool_alloc(&pool, 9000, &l) == 0 && l.offset >= pool.large.base
          && (l.offset - pool.large.base) % 4096 == 0, "long message -> run of large blocks");
    CHECK(rsm_pool_free_bytes(&pool) == total - 2048 - 3 * 4096, "accounting in blocks");
    CHECK(rsm_run_valid(&lay, &s) && rsm_run_valid(&lay, &l), "allocated runs pass the parser's check");
    rsm_pool_free(&pool, &s);
    rsm_pool_free(&pool, &l);
    CHECK(rsm_pool_free_bytes(&pool) == total, "frees return everything");

    churn(&pool, &lay, total, "first fit");
    rsm_pool_set_next_fit(&pool, true, 0);
    churn(&pool, &lay, total, "next fit");
    rsm_pool_set_next_fit(&pool, true, lay.pool_bytes / 4);
    churn(&pool, &lay, total, "next fit, a lap of a quarter");
    rsm_pool_set_next_fit(&pool, false, 0);

    /* runs of more than a word's 64 blocks, placed exactly */
    rsm_run_t a, b, c, d;
    uint32_t lb = pool.large.base;
    CHECK(rsm_pool_alloc(&pool, 5 * 4096, &a) == 0 && a.offset == lb
          && rsm_pool_alloc(&pool, 70 * 4096, &b) == 0 && b.offset == lb + 5 * 4096
          && rsm_pool_alloc(&pool, 60 * 4096, &c) == 0 && c.offset == lb + 75 * 4096,
          "5, 70 and 60 blocks end to end, across the map's first three words");
    rsm_pool_free(&pool, &b);
    CHECK(rsm_pool_alloc(&pool, 71 * 4096, &d) == 0 && d.offset == lb + 135 * 4096,
          "71 blocks do not fit the 70 freed: taken after the others");
    CHECK(rsm_pool_alloc(&pool, 64 * 4096, &b) == 0 && b.offset == lb + 5 * 4096,
          "64 blocks fit the hole the 70 left");
    rsm_pool_free(&pool, &a);
    rsm_pool_free(&pool, &b);
    rsm_pool_free(&pool, &c);
    rsm_pool_free(&pool, &d);
    /* next fit moves on: a run freed a moment ago is not handed out again
     * until the search comes round */
    rsm_pool_set_next_fit(&pool, true, 0);
    CHECK(pool.large.lap == pool.large.count && pool.small.lap == pool.small.count,
          "next fit, lap 0: the whole pool");
    rsm_run_t m[3];
    uint32_t msg = 4096 + 100;  /* two large blocks */
    CHECK(rsm_pool_alloc(&pool, msg, &m[0]) == 0 && m[0].offset == lb, "next fit: first run at 0");
    rsm_pool_free(&pool, &m[0]);
    CHECK(rsm_pool_alloc(&pool, msg, &m[1]) == 0 && m[1].offset == lb + 2 * 4096,
          "next fit: the next run starts where the last one ended, not where it was freed");
    uint32_t laps = 0, refused = 0, steps = pool.large.count; /* two laps of two-block runs */
    for (uint32_t i = 0; i < steps; i++) {
        rsm_pool_free(&pool, &m[1]);
        refused += rsm_pool_alloc(&pool, msg, &m[1]) != 0;
        laps += m[1].offset == lb;
    }
    CHECK(refused == 0 && laps == 2, "next fit: one message at a time goes round the pool and back "
          "(%u laps, %u refused)", laps, refused);
    /* an answer (reuse_hot) takes the lowest run and leaves the hint alone */
    rsm_run_t hot;
    CHECK(rsm_pool_alloc_fit(&pool, msg, &hot, true) == 0 && hot.offset == lb,
          "next fit, reuse_hot: first fit, the lowest run");
    uint32_t was = m[1].offset;
    rsm_pool_free(&pool, &m[1]);
    CHECK(rsm_pool_alloc(&pool, msg, &m[1]) == 0 && m[1].offset == was + 2 * 4096,
          "next fit after an answer: carries on where the last next-fit run ended");
    rsm_pool_free(&pool, &hot);
    rsm_pool_free(&pool, &m[1]);

    /* a lap of a quarter of the pool: each block size goes round its quarter,
     * and past it only when the quarter is busy */
    rsm_pool_set_next_fit(&pool, true, lay.pool_bytes / 4);
    const uint32_t lap = pool.large.lap;
    CHECK(lap == pool.large.count / 4 && pool.small.lap == pool.small.count / 4,
          "a lap of a quarter: %u of %u large blocks, %u of %u small", lap, pool.large.count,
          pool.small.lap, pool.small.count);
    uint32_t past = 0;
    laps = refused = 0;
    CHECK(rsm_pool_alloc(&pool, msg, &m[1]) == 0, "lap: first run");
    for (uint32_t i = 0; i < 2 * lap; i++) {    /* four laps of two-block runs */
        rsm_pool_free(&pool, &m[1]);
        refused += rsm_pool_alloc(&pool, msg, &m[1]) != 0;
        laps += m[1].offset == lb;
        past += m[1].offset + m[1].len > lb + lap * 4096;
    }
    CHECK(refused == 0 && past == 0 && laps == 4, "lap: one message at a time stays in the lap and "
          "comes round %u times (%u past it, %u refused)", laps, past, refused);
    rsm_pool_free(&pool, &m[1]);
    rsm_run_t fill[4096];
    uint32_t nfill = 0;
    while (nfill < lap / 2 && rsm_pool_alloc(&pool, msg, &fill[nfill]) == 0
           && fill[nfill].offset + fill[nfill].len <= lb + lap * 4096) {
        nfill++;
    }
    rsm_run_t beyond, small_one;
    CHECK(nfill == lap / 2 && rsm_pool_alloc(&pool, msg, &beyond) == 0
          && beyond.offset == lb + lap * 4096,
          "lap: with its %u runs in use the next run is the first past it", nfill);
    CHECK(rsm_pool_alloc(&pool, 100, &small_one) == 0 && small_one.offset < pool.small.block * pool.small.lap,
          "lap: small blocks keep their own lap");
    rsm_pool_free(&pool, &small_one);
    rsm_pool_free(&pool, &beyond);
    for (uint32_t i = 0; i < nfill; i++) {
        rsm_pool_free(&pool, &fill[i]);
    }
    /* blocks held ahead of the hint (acks out of order: a node's pool serves
     * every receiver there) do not send the search past the lap while a block
     * below the hint is free */
    rsm_pool_set_next_fit(&pool, true, lay.pool_bytes / 4);
    uint32_t held = 0;
    while (held < lap && rsm_pool_alloc(&pool, 4096, &fill[held]) == 0) {
        held++;
    }
    rsm_run_t x, y, z;
    rsm_pool_free(&pool, &fill[0]);
    rsm_pool_free(&pool, &fill[1]);
    bool setup = held == lap && rsm_pool_alloc(&pool, 4096, &x) == 0 && x.offset == lb;
    rsm_pool_free(&pool, &x);
    setup = setup && rsm_pool_alloc(&pool, 4096, &y) == 0 && y.offset == lb + 4096;
    CHECK(setup && rsm_pool_alloc(&pool, 4096, &z) == 0 && z.offset == lb,
          "lap: with the blocks from the hint to the lap's end in use, the free block below "
          "the hint, not one past the lap (block %d)", (int) ((z.offset - lb) / 4096));
    rsm_pool_free(&pool, &y);
    rsm_pool_free(&pool, &z);
    for (uint32_t i = 2; i < held; i++) {
        rsm_pool_free(&pool, &fill[i]);
    }
    /* ... but a run from the hint that starts inside the lap may cross its end,
     * also into the next word of the map, though a free run lies below the hint */
    rsm_pool_set_next_fit(&pool, true, lay.pool_bytes / 4);
    const uint32_t upto = lap - 4;              /* the hint: 4 blocks before the lap's end */
    held = 0;
    while (held < upto && rsm_pool_alloc(&pool, 4096, &fill[held]) == 0) {
        held++;
    }
    for (uint32_t i = 0; i < 40; i++) {
        rsm_pool_free(&pool, &fill[i]);         /* a run of 40 below the hint */
    }
    rsm_run_t cross;
    CHECK(held == upto && rsm_pool_alloc(&pool, 40 * 4096, &cross) == 0 && cross.offset == lb + upto * 4096,
          "lap: a run of 40 from the hint, 4 blocks before the lap's end, crosses it (block %d, "
          "not the free run at 0)", (int) ((cross.offset - lb) / 4096));
    rsm_pool_free(&pool, &cross);
    for (uint32_t i = 40; i < held; i++) {
        rsm_pool_free(&pool, &fill[i]);
    }
    rsm_pool_set_next_fit(&pool, true, lay.pool_bytes);
    CHECK(pool.large.lap == pool.large.count, "a lap of the pool's size or more: the whole pool");
    rsm_pool_set_next_fit(&pool, false, 0);
    rsm_run_t whole;
    CHECK(rsm_pool_alloc(&pool, (uint32_t) (lay.large_count * 4096), &whole) == 0,
          "after the churn one message can take the whole large region");
    rsm_pool_fini(&pool);

    /* one block size (the verbs pools: btl_rsm_verbs_block): no small blocks set
     * apart, every block serves every message; a 55 KiB chunk of 1 KiB blocks
     * holds 11 messages of 4 KiB with their header, skew and postbox */
    rsm_layout_t vlay;
    CHECK(rsm_layout_init(&vlay, 1, 128, 1, 55 * 1024, 1024, 1024, 1088, 32832, &why) == 0
          && vlay.small_count == 0 && vlay.large_count == 55 && vlay.pool_bytes == 55 * 1024
          && rsm_pool_large_bytes(55 * 1024, 1, 1024, 1024) == 55 * 1024,
          "one block size: %u small and %u large blocks, %zu bytes", vlay.small_count,
          vlay.large_count, vlay.pool_bytes);
    rsm_pool_t vpool;
    CHECK(rsm_pool_init(&vpool, &vlay, 0) == 0, "one block size: pool init");
    rsm_run_t v[12], tiny;
    int got = 0;
    while (got < 12 && rsm_pool_alloc(&vpool, 4237, &v[got]) == 0) {
        got++;
    }
    CHECK(got == 11 && v[10].offset == 50 * 1024, "one block size: 11 runs of 4,237 bytes (5 blocks), "
          "then full (%d)", got);
    CHECK(rsm_pool_alloc(&vpool, 100, &tiny) != 0, "one block size: nothing left for a small one");
    rsm_pool_free(&vpool, &v[3]);
    CHECK(rsm_pool_alloc(&vpool, 100, &tiny) == 0 && tiny.offset == 15 * 1024,
          "one block size: a small message takes a freed block like any other");
    rsm_pool_fini(&vpool);
    return tap_done();
}
