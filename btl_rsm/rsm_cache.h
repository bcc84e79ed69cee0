/*
 * The host's last-level cache, for the choice between two copies through the
 * pool and one (btl_rsm_two_copy_llc_min); and the CPU's maker, for where that
 * choice's distance threshold lies (btl_rsm_two_copy_ns, below).
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

/* btl_rsm_two_copy_ns's default: the distance (ns, rsm_distance.h) under which
 * rendezvous messages take the two-copy pipeline.  Between it and
 * btl_rsm_nt_far_ns lies the middle band (ordinary stores, single copy, the
 * short eager limit), which was measured on an Intel Xeon guest whose cores
 * share one mesh die and pass lines in 70-116 ns: there single copy won from
 * 128 KiB and rendezvous from 16 KiB.  AMD's cores share a cache only within a
 * core complex, where this host's medians read 40-90 ns; cores of different
 * complexes share none (200+ ns).  There is no middle kind, and a near
 * placement read 70-80 ns in its quiet first samples about one run in three
 * (2026-12-07): in the band, bibw at 16 / 32 KiB ran 4,478-6,514 / 5,561-8,934
 * MB/s against 13,650-16,352 / 10,659-17,300 by two copies.  So on AMD (and
 * Hygon, its licensee) the threshold is nt_far_ns's default: two copies exactly
 * where the stores are ordinary, as before the band (btl_rsm/README.md,
 * "Three distances" and "No middle band on AMD"). */
#define RSM_NT_FAR_NS 110           /* btl_rsm_nt_far_ns's default */
#define RSM_TWO_COPY_NS 65
#define RSM_TWO_COPY_NS_AMD RSM_NT_FAR_NS

/* VENDOR: CPUID leaf 0's twelve bytes (EBX, EDX, ECX). */
static inline bool rsm_cpu_vendor_amd(const char vendor[12])
{
    return __builtin_memcmp(vendor, "AuthenticAMD", 12) == 0
           || __builtin_memcmp(vendor, "HygonGenuine", 12) == 0;
}

/* This CPU's CPUID vendor into VENDOR (12 bytes, not terminated); false where
 * there is no CPUID (not x86). */
bool rsm_cpu_vendor(char vendor[12]);

static inline unsigned int rsm_two_copy_ns_default(void)
{
    char vendor[12];
    return rsm_cpu_vendor(vendor) && rsm_cpu_vendor_amd(vendor) ? RSM_TWO_COPY_NS_AMD
                                                                 : RSM_TWO_COPY_NS;
}

#endif
