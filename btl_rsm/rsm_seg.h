/*
 * The segment transport: the seam between the Sun-MPI postbox protocol and
 * whatever provides remote shared memory, in the spirit of RSMAPI (seed 000,
 * section 2.8).  A process EXPORTS a region of its memory under a name, a peer
 * IMPORTS it by that name, WRITEs into it, ORDERs its writes with a barrier and
 * may SIGNAL the owner.  The protocol only ever writes into imported segments
 * (remote writes are cheaper than remote reads) and reads its own exported ones.
 *
 * Back ends: shm (rsm_seg_shm.c: POSIX shared memory, one host, writes are
 * plain stores) and verbs (btl_rsm_verbs.c: RDMA write between hosts).  A back
 * end whose imported segments are directly addressable sets `direct`; the
 * protocol then stores through `base`.  The verbs back end is the non-direct
 * case: `base` is a local shadow the protocol composes in, and each published
 * unit is pushed to the owner.  It does not go through these ops: a name cannot
 * be imported across hosts (a handshake hands over address and key instead), and
 * publishing needs the unit's extent (a write with immediate), so the send path
 * calls it directly where it publishes (btl_rsm_send.c, `ep->remote`).
 *
 * No MPI here: unit-tested on its own (test/unit/t_rsm_seg.c).
 */
#ifndef RSM_SEG_H
#define RSM_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RSM_SEG_NAME_MAX 64

struct rsm_seg_ops;

typedef struct rsm_seg {
    const struct rsm_seg_ops *ops;
    void *base;                      /* local mapping (or shadow, when !direct) */
    size_t size;
    bool direct;                     /* stores through base reach the owner */
    bool exported;                   /* we own it: release() also removes the name */
    bool named;                      /* the name still exists (not yet unlinked) */
    int fd;                          /* exported shm: the file, kept for rsm_seg_reserve
                                        until the whole segment is reserved; else -1 */
    char name[RSM_SEG_NAME_MAX];     /* what a peer passes to import() */
} rsm_seg_t;

typedef struct rsm_seg_ops {
    const char *transport;
    /* Create SIZE bytes under NAME, mode 0600, failing if NAME exists.  NUMA_NODE >= 0
     * asks for the pages on that node (best effort); the pages are zero. */
    int (*seg_export)(rsm_seg_t *seg, const char *name, size_t size, int numa_node);
    /* Map a peer's exported segment; fails unless it is at least SIZE bytes. */
    int (*seg_import)(rsm_seg_t *seg, const char *name, size_t size);
    /* Push [off, off+len) of the shadow to the owner (non-direct back ends only). */
    void (*seg_write)(rsm_seg_t *seg, size_t off, size_t len);
    /* Every write issued before completes before any write issued after. */
    void (*seg_barrier)(rsm_seg_t *seg);
    /* Optional (NULL): wake the owner. */
    int (*seg_signal)(rsm_seg_t *seg);
    /* Remove the name; the mappings stay valid. */
    void (*seg_unlink)(rsm_seg_t *seg);
    /* Unmap; an exporter also removes the name if still there. */
    void (*seg_release)(rsm_seg_t *seg);
} rsm_seg_ops_t;

extern const rsm_seg_ops_t rsm_seg_shm_ops;

/* 32 hex digits from the kernel's CSPRNG: the unguessable part of every name.
 * Returns 0, or -errno. */
int rsm_seg_random_tag(char out[33]);

/* Give [OFF, OFF+LEN) of a segment we exported its memory now (fallocate(2)).
 * Why: a shm segment is a sparse file, and a store into a page that /dev/shm
 * has no room for raises SIGBUS, which kills the rank with no word of why (a
 * container's /dev/shm is 64 MiB by default).  Reserved, a full /dev/shm is
 * an error we can report at the moment the memory is first needed.  Returns 0
 * (also for segments that are not shm files of ours), or -errno (-ENOSPC). */
int rsm_seg_reserve(rsm_seg_t *seg, size_t off, size_t len);

/* Bytes free in the filesystem of /dev/shm for an unprivileged writer, or 0
 * when it cannot be told. */
size_t rsm_shm_free_bytes(void);
/* The size of /dev/shm's filesystem, or 0 when it cannot be told. */
size_t rsm_shm_total_bytes(void);

/* Map the pages of [ADDR, ADDR+LEN) in this process now (WRITE: for writing),
 * so that a queue's first lap does not take a page fault every 4 KiB on the
 * latency path.  Best effort: nothing is reported. */
void rsm_seg_prefault(void *addr, size_t len, bool write);

/* ---- Segments of processes that died with their launcher (kill -9 of mpirun) ----
 * The launcher deletes every segment at job end however the ranks end; when the
 * launcher itself is killed, nothing does.  So the owner of a control segment
 * holds a shared flock(2) on it for as long as it lives (rsm_shm_hold), and a
 * later process of the same user removes the names of every owner's segments
 * whose lock it can take exclusively (rsm_shm_sweep): the kernel drops a dead
 * process's locks, whatever its pid namespace, and a living owner's lock is
 * never free.  A file is taken as an owner's only once its first 8 bytes hold
 * MAGIC, which the owner writes after it took its lock, so a segment being
 * created is never swept.  Files of other users are left alone (and /dev/shm's
 * sticky bit would refuse them anyway). */

/* Take a shared lock on segment NAME for the life of this process; returns the
 * descriptor holding it (close it after the name is gone), or -errno. */
int rsm_shm_hold(const char *name);

/* In directory DIR (/dev/shm), remove "rsm-<tag>-*" for every "rsm-<tag>-ctl"
 * of this user that starts with MAGIC and whose lock is free, and every area
 * "rsm-<tag>-a<n>s<k>" of this user whose "rsm-<tag>-ctl" is gone (its owner
 * made the control segment first and removes it last).  Returns the number of
 * names removed (0 if DIR cannot be read). */
int rsm_shm_sweep(const char *dir, uint64_t magic);

/* Write LEN bytes from SRC at offset OFF of an imported segment. */
static inline void rsm_seg_write(rsm_seg_t *seg, size_t off, const void *src, size_t len)
{
    memcpy((char *) seg->base + off, src, len);
    if (!seg->direct) {
        seg->ops->seg_write(seg, off, len);
    }
}

static inline void rsm_seg_barrier(rsm_seg_t *seg)
{
    seg->ops->seg_barrier(seg);
}

#endif
