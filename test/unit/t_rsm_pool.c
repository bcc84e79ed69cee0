/* Block pool: small and large blocks, contiguous runs, reuse, exhaustion, no overlap. */
#include <stdlib.h>
#include <string.h>

#include "rsm_pool.h"
#include "tap.h"

int main(void)
{
    rsm_layout_t lay;
    const char *why = "";
    CHECK(rsm_layout_init(&lay, 2, 64, 1, 256 * 1024, 2048, 4096, 512, 32768, &why) == 0, "layout");
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

    /* fill with random sizes, free at random, check no two live runs overlap */
    enum { N = 400 };
    rsm_run_t live[N];
    int nlive = 0, overlaps = 0, fails = 0, allocs = 0;
    srand(7);
    for (int step = 0; step < 20000; step++) {
        if (nlive < N && (rand() % 3 != 0 || nlive == 0)) {
            uint32_t len = 1 + (uint32_t) (rand() % 33000);
            rsm_run_t r;
            if (rsm_pool_alloc(&pool, len, &r) != 0) {
                fails++;
                continue;
            }
            allocs++;
            for (int i = 0; i < nlive; i++) {
                uint64_t a0 = r.offset, a1 = r.offset + r.len, b0 = live[i].offset,
                         b1 = live[i].offset + live[i].len;
                overlaps += a0 < b1 && b0 < a1;
            }
            overlaps += !rsm_run_valid(&lay, &r);
            live[nlive++] = r;
        } else {
            int k = rand() % nlive;
            rsm_pool_free(&pool, &live[k]);
            live[k] = live[--nlive];
        }
    }
    CHECK(overlaps == 0, "%d allocations, %d refusals when full, no overlap", allocs, fails);
    CHECK(fails > 0, "exhaustion is reported, not overrun");
    while (nlive > 0) rsm_pool_free(&pool, &live[--nlive]);
    CHECK(rsm_pool_free_bytes(&pool) == total, "all blocks back after the churn");
    rsm_run_t whole;
    CHECK(rsm_pool_alloc(&pool, (uint32_t) (lay.large_count * 4096), &whole) == 0,
          "after the churn one message can take the whole large region");
    rsm_pool_fini(&pool);
    return tap_done();
}
