/*
 * The host's last-level cache, for the choice between two copies through the
 * pool and one (btl_rsm_two_copy_llc_min).
 *
 * Why: two copies move each byte through the memory system twice (into the
 * pool, out of it).  Where the pool and the user buffers stay in a large shared
 * cache that costs little and pipelines the two cores' work: on hosts with a
 * 32 MiB or larger last-level cache two copies beat single copy up to 64 KiB.
 * On an AMD EPYC guest with an 8 MiB L3 they took twice single copy's time from
 * 32 KiB, in both placements (docs/results-2026-12-05-rsm-small-cache/).  The
 * distance rsm measures (rsm_distance.h) read the same on both kinds of host;
 * the cache size tells them apart.  Every rank of a host reads CPU 0's caches,
 * so all choose alike (their layouts must agree).  Plain C, no MPI:
 * test/unit/t_rsm_cache.c.
 */
#ifndef RSM_CACHE_H
#define RSM_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* The size in bytes of the highest-level data or unified cache described under
 * CACHE_DIR (sysfs: /sys/devices/system/cpu/cpu0/cache, with index0, index1,
 * ... each holding level, type and size such as "8192K"); 0 when none is
 * described or readable. */
size_t rsm_llc_bytes(const char *cache_dir);

/* Two copies lose above 16 KiB here: a cache of LLC bytes (0: unknown) below
 * MIN (0: never). */
static inline bool rsm_small_cache(size_t llc, size_t min)
{
    return llc != 0 && min != 0 && llc < min;
}

/* The next-fit lap of a node pool (btl_rsm_pool_lap's default, rsm_pool.c):
 * an eighth of a cache of LLC bytes, so that the laps of two ranks sending to
 * each other take a quarter of it, but not under 1.5 MiB: 64 messages of 4 KiB
 * in flight (two 4 KiB blocks each) fill 512 KiB, and a block must come round
 * after its lines have left the receiver's core (a 1 MiB lap streamed 4 KiB
 * messages 10% slower).  Nor over 4 MiB, the whole pool until 2026-12-07 and
 * the working set every measurement since 2026-11-26 was made with: the pool
 * past the lap (8 MiB since then) is there for windows that outgrow it, not
 * for a longer lap.  4 MiB when the cache is unknown. */
#define RSM_POOL_LAP_MIN ((size_t) 3 << 19)
#define RSM_POOL_LAP_MAX ((size_t) 4 << 20)
static inline size_t rsm_pool_lap_for_cache(size_t llc)
{
    if (llc == 0 || llc / 8 >= RSM_POOL_LAP_MAX) {
        return RSM_POOL_LAP_MAX;
    }
    return llc / 8 > RSM_POOL_LAP_MIN ? llc / 8 : RSM_POOL_LAP_MIN;
}

#endif
