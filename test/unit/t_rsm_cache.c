/* The last-level cache rsm reads from sysfs (rsm_cache.h): the highest-level
 * data or unified cache of a CPU's index0, index1, ... directories, in the
 * sizes the kernel writes; nothing readable, nothing trusted; and the rule
 * that picks single copy above 16 KiB on a small one.  The directories are
 * made here, in a temporary directory of their own.  And the CPU's maker,
 * which sets btl_rsm_two_copy_ns's default, against /proc/cpuinfo (the default
 * as registered: t-rsm-p2p, through ompi_info). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rsm_cache.h"
#include "tap.h"

static char root[64];

static void put(const char *cpu, int index, const char *level, const char *type, const char *size)
{
    char dir[256], path[300];
    snprintf(dir, sizeof(dir), "%s/%s", root, cpu);
    mkdir(dir, 0700);
    snprintf(dir, sizeof(dir), "%s/%s/index%d", root, cpu, index);
    mkdir(dir, 0700);
    const char *names[3] = {"level", "type", "size"}, *values[3] = {level, type, size};
    for (int i = 0; i < 3; i++) {
        if (values[i] == NULL) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        FILE *f = fopen(path, "w");
        fprintf(f, "%s\n", values[i]);
        fclose(f);
    }
}

static size_t llc(const char *cpu)
{
    char dir[256];
    snprintf(dir, sizeof(dir), "%s/%s", root, cpu);
    return rsm_llc_bytes(dir);
}

int main(void)
{
    strcpy(root, "/tmp/t_rsm_cache.XXXXXX");
    if (mkdtemp(root) == NULL) {
        CHECK(0, "a temporary directory");
        return tap_done();
    }
    /* this machine's guest of 2026-12-05: L1d, L1i, L2, an 8 MiB L3 */
    put("epyc", 0, "1", "Data", "32K");
    put("epyc", 1, "1", "Instruction", "32K");
    put("epyc", 2, "2", "Unified", "512K");
    put("epyc", 3, "3", "Unified", "8192K");
    CHECK(llc("epyc") == 8u << 20, "L1d, L1i, L2, L3: the L3, 8192K = 8 MiB (%zu)", llc("epyc"));
    CHECK(rsm_small_cache(llc("epyc"), 16u << 20), "8 MiB is below 16 MiB: single copy above 16 KiB");

    put("big", 0, "1", "Data", "48K");
    put("big", 1, "2", "Unified", "2048K");
    put("big", 2, "3", "Unified", "480M");
    CHECK(llc("big") == (size_t) 480 << 20, "sizes in M: 480M (%zu)", llc("big"));
    CHECK(!rsm_small_cache(llc("big"), 16u << 20), "480 MiB: two copies as before");

    put("nol3", 0, "1", "Data", "32K");
    put("nol3", 1, "2", "Unified", "1024K");
    CHECK(llc("nol3") == 1u << 20, "no L3: the L2 (%zu)", llc("nol3"));

    put("instr", 0, "1", "Data", "32K");
    put("instr", 1, "2", "Instruction", "8192K");
    CHECK(llc("instr") == 32u << 10, "an instruction cache is not the last level for data (%zu)",
          llc("instr"));

    put("order", 0, "3", "Unified", "32768K");
    put("order", 1, "2", "Unified", "512K");
    CHECK(llc("order") == 32u << 20, "the highest level wins, whatever its index (%zu)", llc("order"));

    put("bad", 0, "2", "Unified", "512K");
    put("bad", 1, "3", "Unified", "lots");
    put("bad", 2, "4", "Unified", "12X");
    put("bad", 3, "5", "Unified", NULL);
    put("bad", 4, "6", "Unified", "99999999999999999999999K");
    CHECK(llc("bad") == 512u << 10, "sizes that are no size (words, units we do not know, none, "
          "too large) are skipped: the L2 of 512K stays (%zu)", llc("bad"));

    put("gap", 0, "1", "Data", "32K");
    put("gap", 2, "3", "Unified", "8192K");
    CHECK(llc("gap") == 32u << 10, "the walk ends at the first missing index (%zu)", llc("gap"));

    CHECK(llc("none") == 0 && !rsm_small_cache(0, 16u << 20),
          "no cache described: 0, and an unknown cache is not called small");
    CHECK(!rsm_small_cache(8u << 20, 0), "a minimum of 0: never small (two copies whatever the cache)");
    CHECK(!rsm_small_cache(16u << 20, 16u << 20), "exactly the minimum is not small");
    /* the next-fit lap of a node pool (btl_rsm_pool_lap 0) */
    CHECK(rsm_pool_lap_for_cache(0) == (4u << 20), "pool lap, cache unknown: 4 MiB (the ceiling)");
    CHECK(rsm_pool_lap_for_cache(8u << 20) == (3u << 19) && rsm_pool_lap_for_cache(4u << 20) == (3u << 19),
          "pool lap, 8 and 4 MiB caches: 1.5 MiB (the floor)");
    CHECK(rsm_pool_lap_for_cache(16u << 20) == (2u << 20) && rsm_pool_lap_for_cache(24u << 20) == (3u << 20)
          && rsm_pool_lap_for_cache(32u << 20) == (4u << 20),
          "pool lap: an eighth of 16, 24 and 32 MiB");
    CHECK(rsm_pool_lap_for_cache(64u << 20) == (4u << 20) && rsm_pool_lap_for_cache(480u << 20) == (4u << 20),
          "pool lap, 64 and 480 MiB caches: 4 MiB (the ceiling; the pool past it takes what outgrows the lap)");

    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    CHECK(system(cmd) == 0, "temporary directory removed");

    CHECK(rsm_cpu_vendor_amd("AuthenticAMD") && rsm_cpu_vendor_amd("HygonGenuine")
          && !rsm_cpu_vendor_amd("GenuineIntel") && !rsm_cpu_vendor_amd("AuthenticAM\0"),
          "AMD and Hygon take the AMD threshold; Intel and a cut name do not");
    char vendor[12], line[256], seen[64] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "vendor_id : %63s", seen) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    if (!rsm_cpu_vendor(vendor) || seen[0] == '\0') {
        tap_skip("the CPU's maker against /proc/cpuinfo", "no CPUID or no vendor_id line here");
    } else {
        CHECK(memcmp(vendor, seen, 12) == 0 && strlen(seen) == 12,
              "CPUID's vendor \"%.12s\" is /proc/cpuinfo's \"%s\"", vendor, seen);
    }
    return tap_done();
}
