/*
 * shm back end of the segment transport: POSIX shared memory on one host.
 *
 * Names are "/rsm-<128 random bits>-<what>", created O_EXCL with mode 0600, so
 * another user can neither open nor pre-create them.  An imported segment is
 * mapped read-write and written with plain stores (direct); the barrier is a
 * release fence, which is all the ordering a cache-coherent host needs.
 *
 * Placement: the exporter binds the pages to the requested NUMA node before
 * anything touches them (MPOL_PREFERRED: never fails for lack of memory there).
 */
#define _GNU_SOURCE
#include "rsm_seg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MPOL_PREFERRED
#define MPOL_PREFERRED 1
#endif

int rsm_seg_random_tag(char out[33])
{
    unsigned char raw[16];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -errno;
        }
        got += (size_t) n;
    }
    for (int i = 0; i < 16; i++) {
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    }
    return 0;
}

void rsm_seg_prefault(void *addr, size_t len, bool write)
{
    const uintptr_t page = 4096;
    uintptr_t first = (uintptr_t) addr & ~(page - 1), end = (uintptr_t) addr + len;
    if (len == 0) {
        return;
    }
#ifdef MADV_POPULATE_WRITE
    if (madvise((void *) first, end - first, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0) {
        return;
    }
#endif
    /* older kernels: one access per page (the bytes keep their values; a queue
     * is written by its sender only, and this is the sender before it connects) */
    for (uintptr_t p = (uintptr_t) addr; p < end; p = (p & ~(page - 1)) + page) {
        volatile char *c = (volatile char *) p;
        char v = *c;
        if (write) {
            *c = v;
        }
    }
}

static void shm_place(void *addr, size_t size, int numa_node)
{
#ifdef SYS_mbind
    if (numa_node < 0 || numa_node >= 64) {
        return;
    }
    unsigned long mask = 1UL << numa_node;
    /* best effort: a kernel without NUMA support says ENOSYS, which is fine */
    (void) syscall(SYS_mbind, addr, size, MPOL_PREFERRED, &mask, 64UL, 0U);
#endif
}

/* A mapping made: fill in the handle (an exporter owns the name). */
static int shm_mapped(rsm_seg_t *seg, void *base, size_t size, const char *name, int fd)
{
    seg->ops = &rsm_seg_shm_ops;
    seg->base = base;
    seg->size = size;
    seg->direct = true;
    seg->exported = fd >= 0;
    seg->named = fd >= 0;
    seg->fd = fd;
    snprintf(seg->name, sizeof(seg->name), "%s", name);
    return 0;
}

static int shm_export(rsm_seg_t *seg, const char *name, size_t size, int numa_node)
{
    if (strlen(name) >= RSM_SEG_NAME_MAX || name[0] != '/' || size == 0) {
        return -EINVAL;
    }
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return -errno;
    }
    int rc = 0;
    void *base = MAP_FAILED;
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t) size) != 0) {
        rc = -errno;
    } else {
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base == MAP_FAILED) {
            rc = -errno;
        }
    }
    if (rc != 0) {
        close(fd);
        shm_unlink(name);
        return rc;
    }
    shm_place(base, size, numa_node);
    return shm_mapped(seg, base, size, name, fd);
}

static int shm_import(rsm_seg_t *seg, const char *name, size_t size)
{
    if (strlen(name) >= RSM_SEG_NAME_MAX || name[0] != '/') {
        return -EINVAL;
    }
    int fd = shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        return -errno;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    /* the exporter could be anybody who guessed right: only its owner (us) may
     * have made it, and it must be as large as the layout we will address */
    if (st.st_uid != geteuid() || (size_t) st.st_size < size) {
        close(fd);
        return -EBADF;
    }
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int rc = base == MAP_FAILED ? -errno : 0;
    close(fd);
    if (rc != 0) {
        return rc;
    }
    return shm_mapped(seg, base, size, name, -1);
}

int rsm_seg_reserve(rsm_seg_t *seg, size_t off, size_t len)
{
    if (seg->ops != &rsm_seg_shm_ops || !seg->exported || seg->fd < 0 || len == 0) {
        return 0;
    }
    if (off > seg->size || len > seg->size - off) {
        return -EINVAL;
    }
    /* posix_fallocate returns the error; EINTR (a signal while tmpfs
     * allocates) is worth another try, the pages done so far stay */
    int rc;
    do {
        rc = posix_fallocate(seg->fd, (off_t) off, (off_t) len);
    } while (rc == EINTR);
    if (rc == 0 && off == 0 && len == seg->size) {
        /* nothing left to reserve: a receiver with a pool file per remote
         * sender must not hold a descriptor for each (RLIMIT_NOFILE) */
        close(seg->fd);
        seg->fd = -1;
    }
    return -rc;
}

size_t rsm_shm_free_bytes(void)
{
    struct statvfs st;
    return statvfs("/dev/shm", &st) == 0 ? (size_t) st.f_bavail * st.f_frsize : 0;
}

size_t rsm_shm_total_bytes(void)
{
    struct statvfs st;
    return statvfs("/dev/shm", &st) == 0 ? (size_t) st.f_blocks * st.f_frsize : 0;
}

static void shm_write(rsm_seg_t *seg, size_t off, size_t len)
{
    /* direct: the caller's stores were the write */
}

static void shm_barrier(rsm_seg_t *seg)
{
    atomic_thread_fence(memory_order_release);
}

static void shm_unlink_name(rsm_seg_t *seg)
{
    if (seg->exported && seg->named) {
        shm_unlink(seg->name);
        seg->named = false;
    }
}

static void shm_release(rsm_seg_t *seg)
{
    shm_unlink_name(seg);
    if (seg->exported && seg->fd >= 0) {
        close(seg->fd);
        seg->fd = -1;
    }
    if (seg->base != NULL) {
        munmap(seg->base, seg->size);
        seg->base = NULL;
    }
}

const rsm_seg_ops_t rsm_seg_shm_ops = {
    .transport = "shm",
    .seg_export = shm_export,
    .seg_import = shm_import,
    .seg_write = shm_write,
    .seg_barrier = shm_barrier,
    .seg_signal = NULL,
    .seg_unlink = shm_unlink_name,
    .seg_release = shm_release,
};

int rsm_shm_hold(const char *name)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    if (flock(fd, LOCK_SH) != 0) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    return fd;
}

/* NAME starts "rsm-" + 32 lowercase hex digits + "-": copies the digits to TAG */
static bool name_tag(const char *name, char tag[33])
{
    if (strncmp(name, "rsm-", 4) != 0 || strlen(name) < 4 + 32 + 1 || name[36] != '-') {
        return false;
    }
    for (int i = 0; i < 32; i++) {
        char ch = name[4 + i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
            return false;
        }
        tag[i] = ch;
    }
    tag[32] = '\0';
    return true;
}

/* "rsm-" + 32 hex digits + "-ctl": copies the tag to TAG */
static bool ctl_name_tag(const char *name, char tag[33])
{
    return name_tag(name, tag) && strcmp(name + 36, "-ctl") == 0;
}

/* "rsm-" + 32 hex digits + "-a<digits>s<digits>": an area's name (never a
 * verbs pool's "-vp<i>", which carries a sender's tag from another host) */
static bool area_name_tag(const char *name, char tag[33])
{
    if (!name_tag(name, tag) || name[37] != 'a') {
        return false;
    }
    const char *p = name + 38;
    const char *digits = p;
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    if (p == digits || *p++ != 's') {
        return false;
    }
    digits = p;
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    return p != digits && *p == '\0';
}

/* Is D/NAME an area of ours whose control segment is gone?  An owner creates
 * its control segment before any area and removes it after them all, so an
 * area without one outlived its owner: rarely, a rank of an aborting job
 * leaves one (the launcher's clean-up removed the rest). */
static bool area_is_orphan(int dfd, const char *name)
{
    char tag[33], ctl[4 + 32 + 4 + 1];
    struct stat st;
    if (!area_name_tag(name, tag) || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0
        || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        return false;
    }
    snprintf(ctl, sizeof(ctl), "rsm-%s-ctl", tag);
    return fstatat(dfd, ctl, &st, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
}

/* Is D/NAME the control segment of an owner that is gone?  Ours, a regular
 * file, its lock free, and MAGIC in place (written by an owner holding it). */
static bool ctl_is_stale(int dfd, const char *name, uint64_t magic)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    struct stat st;
    uint64_t head = 0;
    bool stale = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid()
                 && flock(fd, LOCK_EX | LOCK_NB) == 0
                 && pread(fd, &head, sizeof(head), 0) == (ssize_t) sizeof(head) && head == magic;
    close(fd);                  /* and with it the lock we took */
    return stale;
}

#define RSM_SWEEP_MAX 64        /* owners per call; the next start takes the rest */

int rsm_shm_sweep(const char *dir, uint64_t magic)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return 0;
    }
    char stale[RSM_SWEEP_MAX][33];
    int nstale = 0;
    struct dirent *e;
    while (nstale < RSM_SWEEP_MAX && (e = readdir(d)) != NULL) {
        if (ctl_name_tag(e->d_name, stale[nstale]) && ctl_is_stale(dirfd(d), e->d_name, magic)) {
            nstale++;
        }
    }
    /* every name of those owners: the areas first, the control segment (the
     * only one the sweep looks for) last, so an interrupted sweep is redone */
    int removed = 0;
    char prefix[4 + 32 + 2];
    for (int pass = 0; pass < 2 && nstale > 0; pass++) {
        rewinddir(d);
        while ((e = readdir(d)) != NULL) {
            for (int i = 0; i < nstale; i++) {
                snprintf(prefix, sizeof(prefix), "rsm-%.32s-", stale[i]);
                if (strncmp(e->d_name, prefix, sizeof(prefix) - 1) != 0
                    || (strcmp(e->d_name + sizeof(prefix) - 1, "ctl") == 0) != (pass == 1)) {
                    continue;
                }
                removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
            }
        }
    }
    /* areas whose owner's control segment is already gone */
    rewinddir(d);
    int orphans = 0;
    while (orphans < RSM_SWEEP_MAX && (e = readdir(d)) != NULL) {
        if (area_is_orphan(dirfd(d), e->d_name) && unlinkat(dirfd(d), e->d_name, 0) == 0) {
            orphans++;
        }
    }
    closedir(d);
    return removed + orphans;
}
