/* The host's last-level cache from sysfs, and the CPU's maker (rsm_cache.h). */
#include "rsm_cache.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first line of DIR/NAME into BUF (its newline dropped); false if unreadable. */
static bool read_line(const char *dir, const char *name, char *buf, size_t len)
{
    char path[512];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int) sizeof(path)) {
        return false;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return false;
    }
    bool ok = fgets(buf, (int) len, f) != NULL;
    fclose(f);
    if (ok) {
        buf[strcspn(buf, "\n")] = '\0';
    }
    return ok;
}

/* "8192K", "32M", "1048576": bytes, or 0 when it is none of those. */
static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) {
        return 0;
    }
    unsigned long long scale = *end == 'K' ? 1024ull : *end == 'M' ? 1024ull * 1024 : *end == '\0' ? 1 : 0;
    if (scale == 0 || (*end != '\0' && end[1] != '\0') || v > (unsigned long long) SIZE_MAX / scale) {
        return 0;
    }
    return (size_t) (v * scale);
}

size_t rsm_llc_bytes(const char *cache_dir)
{
    size_t best = 0;
    long best_level = 0;
    /* the kernel numbers a CPU's caches index0, index1, ... without gaps */
    for (int i = 0; i < 16; i++) {
        char dir[512], level[32], type[32], size[32];
        if (snprintf(dir, sizeof(dir), "%s/index%d", cache_dir, i) >= (int) sizeof(dir)
            || !read_line(dir, "level", level, sizeof(level))) {
            break;
        }
        if (!read_line(dir, "type", type, sizeof(type)) || !read_line(dir, "size", size, sizeof(size))
            || (strcmp(type, "Unified") != 0 && strcmp(type, "Data") != 0)) {
            continue;       /* instruction caches hold no data */
        }
        long lv = strtol(level, NULL, 10);
        size_t bytes = parse_size(size);
        if (lv > best_level && bytes > 0) {
            best_level = lv;
            best = bytes;
        }
    }
    return best;
}

bool rsm_cpu_vendor(char vendor[12])
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
        return false;
    }
    memcpy(vendor, &ebx, 4);
    memcpy(vendor + 4, &edx, 4);
    memcpy(vendor + 8, &ecx, 4);
    return true;
#else
    memset(vendor, 0, 12);
    return false;
#endif
}
