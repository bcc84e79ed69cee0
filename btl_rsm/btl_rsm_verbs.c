/*
 * btl rsm between hosts: the RDMA-write back end (seed 000 over InfiniBand, as
 * its "Futures" section planned).  The postbox protocol is the one-host one,
 * unchanged (rsm_postbox.h, rsm_pool.h, btl_rsm_send.c / _recv.c): a sender owns
 * a queue and a block pool in the receiver's memory, writes messages into them,
 * and the receiver's 1-byte acks give slots and blocks back.  What differs is
 * how bytes get there:
 *
 *   shm    the sender stores into the receiver's mapping; the flag, stored
 *          last with release, publishes a message.
 *   verbs  the sender composes in a SHADOW of the receiver's area (its own
 *          registered memory, same layout) and RDMA-writes each published unit
 *          to the same offset there, the unit's postboxes WITH IMMEDIATE (the
 *          queue's new tail); see rsm_verbs.h for why the immediate, not the
 *          flag, is what the receiver trusts.  The receiver's acks come back as
 *          RDMA writes into the sender's ack row.
 *
 * Connections (seed 000, 3.3) are half duplex and made on first send: the
 * sender registers its shadow and ack row, creates an RC queue pair and sends a
 * REQ on the UD queue pair every process has; the receiver registers the queue
 * and the pool, connects its end and answers REP with their addresses and keys.
 * Each direction has its own queue pair, so two peers that start sending to
 * each other at once never race.  Nothing exists per peer before its first
 * message.
 *
 * Memory (seed 000, 3.1: the receiver pool is per sender and destination
 * HOST): a connection has its own postbox queue (8 KiB by default) and ack row,
 * but its pool blocks come from one pool per (sender, destination host), 55 KiB
 * by default (btl_rsm_verbs_pool_size).  On the destination host that pool is
 * one shared-memory segment, created by the first receiver the sender connects
 * to and mapped by the others it reaches there ("/rsm-<tag>-vp", the tag the
 * sender's REQ carries; rsm_verbs.h); the sender composes blocks in one shadow
 * per destination host and writes each message's blocks through its receiver's
 * queue pair.  So a remote sender costs a host one pool, plus a queue per rank
 * it talks to, however many ranks that is.  A pool starts as one chunk and
 * grows, a chunk at a time up to btl_rsm_verbs_pool_chunks, only for a sender
 * that keeps finding it full (GROW / GROWN, rsm_verbs.h).  Polling: one completion queue for
 * every inbound connection; idle peers cost nothing.
 */
#include "btl_rsm.h"
#include "btl_rsm_frag.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/show_help.h"
#include "xbtl_compat.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if XBTL_HAVE_VERBS
#define RSM_VERBS_DEVICE_API 1
#include "rsm_verbs.h"

#include "opal/class/opal_hash_table.h"
#include "opal/mca/rcache/base/base.h"
#include "opal/mca/rcache/rcache.h"

#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>

#define RSM_VMODEX_KEY "btl.rsm.verbs.1"

enum { VS_IDLE = 0, VS_CONNECTING, VS_UP, VS_FAILED };

/* Handshake messages other than REQs the listener took while the process was
 * away, kept for progress (REPs, GROWs, GROWNs: all resent if lost, so one past
 * this many is dropped, with a verbose line). */
#define RSM_VDEFERRED 16

/* A gap this long between two progress calls is time away from MPI: it does
 * not count against btl_rsm_verbs_connect_timeout_ms. */
#define RSM_AWAY_GAP_NS 100000000ull

/* One queue pair of a half-duplex connection, and the memory registered for it. */
typedef struct rsm_vconn {
    struct ibv_qp *qp;
    uint32_t psn;
    uint64_t posted, completed;     /* RDMA writes: posted, known complete */
    uint32_t unsignalled;           /* writes posted since the last signalled one */
    uint32_t reads_out;             /* RDMA reads (single copy) posted, not complete */
    void *buf;                      /* out: the shadow; in: the area */
    size_t bytes;
    struct ibv_mr *mr;
    uint8_t *acks;                  /* out: the row the receiver writes; in: our ack bytes */
    struct ibv_mr *ack_mr;
    uint64_t raddr;                 /* out: the peer's area; in: the peer's ack row */
    uint32_t rkey;
    uint32_t peer_qpn;
    mca_btl_base_endpoint_t *ep;
    /* Last: 144 bytes read only by vpost_one, kept off the lines the post and
     * completion paths read above. */
    struct ibv_send_wr one_wr;      /* vpost_one's request: the fields that never change */
    struct ibv_sge one_sge;         /* set once (conn_wr_init) */
} rsm_vconn_t;

/* A queue pair of a connection on one of its further rails (ports 1.. of
 * btl_rsm_verbs_devices): it carries the receiver's single-copy reads (in) and
 * the sender's large one-sided reads and writes (out), never a message. */
typedef struct rsm_vrailqp {
    struct ibv_qp *qp;
    uint32_t psn;
    uint32_t reads_out;             /* RDMA reads and one-sided writes posted, not complete */
} rsm_vrailqp_t;

/* The sender's side of one pool per (sender, destination host): the shadow its
 * blocks are composed in and the allocator every connection to that host's
 * ranks shares (rsm_pool.h; acks from any of them free blocks). */
typedef struct rsm_vgroup {
    char *host;                     /* the peers' host name; NULL: a group of one peer */
    char tag[RSM_VPOOL_TAG + 1];    /* names the pool on that host */
    unsigned chunks;                /* in use: the area's stripes */
    unsigned made;                  /* shadows made: chunks + 1 while a growth is under way */
    unsigned full_events;           /* fragments that found the pool full since it last grew */
    bool grow_failed;               /* a receiver could not map a new chunk: stay this size */
    uint64_t grow_ns;               /* when the growth under way started */
    void *buf[RSM_VPOOL_CHUNKS_MAX];
    struct ibv_mr *mr[RSM_VPOOL_CHUNKS_MAX];
    rsm_area_t area;                /* seg[i]: the shadow of chunk i */
} rsm_vgroup_t;

struct rsm_vpeer {
    uint64_t name;
    rsm_vaddr_t addr;
    bool have_addr;
    struct ibv_ah *ah;
    int state;                      /* of the outbound half */
    uint64_t req_first_ns, req_last_ns;     /* our first and last REQ */
    uint64_t req_waited_ns;         /* time in MPI since the first REQ (away time not counted) */
    uint64_t req_seen_ns;           /* when progress last counted it */
    bool reported;                  /* its failure was shown once */
    rsm_vconn_t out, in;            /* out.buf: the queue's shadow; in.buf: the queue */
    rsm_vgroup_t *group;            /* out: the pool we share with this peer's host */
    unsigned chunks;                /* out: chunks of it the peer has mapped */
    uint64_t pool_raddr[RSM_VPOOL_CHUNKS_MAX];   /* out: those chunks on the peer */
    uint32_t pool_rkey[RSM_VPOOL_CHUNKS_MAX];
    uint64_t grow_last_ns;          /* out: our last GROW to it */
    unsigned in_chunks;             /* in: chunks of the sender's pool mapped here */
    char in_tag[RSM_VPOOL_TAG];     /* in: the pool's tag */
    rsm_seg_t in_pool[RSM_VPOOL_CHUNKS_MAX];
    struct ibv_mr *in_pool_mr[RSM_VPOOL_CHUNKS_MAX];
    bool in_pool_shared[RSM_VPOOL_CHUNKS_MAX];   /* mapped from another local rank's segment */
    bool in_pool_private[RSM_VPOOL_CHUNKS_MAX];  /* not shareable: plain registered memory */
    /* [1..out_rails): the sender's, read from by the peer, and its striped one-sided
     * operations; [1..in_rails): the receiver's, reading (rail 0 is OUT / IN itself) */
    rsm_vrailqp_t out_rail[RSM_VRAILS_MAX];
    rsm_vrailqp_t in_rail[RSM_VRAILS_MAX];
    unsigned out_rails, in_rails;   /* rails of each half, rail 0 (out / in) included */
    uint32_t acks_pushed;           /* inbound: acks written through this seq (exclusive) */
    uint32_t row_written;           /* inbound: ep->unacked at the last write of the whole row */
    uint32_t pool_msgs_acked;       /* inbound: ep->in_pool_msgs when acks were last pushed */
    bool ack_owed;                  /* inbound: on vs.owed, acks to push when idle */
    uint64_t owed_since_ns;         /* inbound: one pool message owed since (0: push when idle) */
    mca_btl_base_endpoint_t *next_owed;
    struct rsm_vpeer *next_connecting;
};

static struct {
    bool open;
    bool closing;                   /* finalize: peers tear down too; errors are expected */
    rsm_vdev_t dev;                 /* rail 0: every connection, the handshake, the pool */
    rsm_vdev_t rail[RSM_VRAILS_MAX];    /* [1..n_rails): further ports, for striped reads */
    unsigned n_rails;
    uint32_t rail_reads_out;        /* reads in flight on rails 1..: their queues are polled */
    opal_hash_table_t by_name;      /* process name -> endpoint */
    opal_hash_table_t by_qpn;       /* inbound queue pair number -> endpoint */
    mca_btl_base_endpoint_t **eps;  /* every endpoint served by verbs (finalize, pvars) */
    uint32_t n_eps;
    uint32_t connecting;            /* outbound connections waiting for a REP */
    uint64_t my_name;
    size_t queue_bytes;             /* a connection's postbox queue, whole pages */
    size_t pool_bytes;              /* a pool per (sender, destination host) */
    rsm_vgroup_t **groups;          /* as a sender: one per destination host */
    uint32_t n_groups;
    uint32_t growing;               /* groups with a growth under way */
    uint64_t port_down_ns;          /* when our port went down (0: it is up) */
    mca_rcache_base_module_t *rcache;   /* user buffers (single copy), made at first use */
    bool rcache_failed;             /* could not make it: no single copy between hosts */
    int reg_errno;                  /* why the last user registration failed */
    struct rsm_vread *free_reads, *all_reads;
    struct rsm_vread *done_head, *done_last;    /* complete, callbacks not yet run (sq_room) */
    unsigned in_sq_room;            /* sq_room or rail_room waits for room: callbacks wait too */
    uint32_t ticks;                 /* progress calls: the handshake queue's turn */
    mca_btl_base_endpoint_t *owed;  /* receivers with acks to push once no message waits */
    /* the listener (below) and the entry points keep out of each other's way */
    bool listening;
    bool membarrier;                /* registered: the entry points' side needs no fence */
    _Atomic uint32_t entry_depth;   /* entry points under way (nested: progress calls ob1,
                                     * which may send); written by one thread at a time */
    _Atomic bool listener_busy;     /* the listener works on the back end's state */
    pthread_t listener;
    int stop_fd;                    /* an eventfd: finalize's word to stop */
    _Atomic uint64_t progress_calls;    /* the listener's sign that the process is in MPI */
    uint32_t n_deferred;            /* handshake messages the listener left for progress */
    struct rsm_vdeferred {
        size_t len;
        uint8_t raw[sizeof(rsm_vmsg_t)];
    } deferred[RSM_VDEFERRED];
} vs;

/* While the listener runs, the back end's state is shared with it.  It touches
 * that state only when the process has been away from MPI for a millisecond, so
 * the exclusion is biased to the process's side: an entry point from the rest
 * of the BTL announces itself with a plain store (entry_depth) and checks
 * listener_busy; the listener announces itself, makes every thread of the
 * process pass a full barrier (membarrier(2), which stands in for the fence the
 * entry points leave out), and backs off if an entry point is under way.
 * Dekker's exclusion with the expensive half on the thread that seldom runs:
 * the message path takes no lock and no atomic read-modify-write (an entry
 * and exit: 5 ns on this project's host and 20 ns under QEMU/TCG, where an
 * uncontended recursive mutex took 22 and 90-125).  Without membarrier both
 * sides fence.
 * Entry points are serialised by the component lock when threads call MPI at
 * once, so one depth counter serves every thread; it only needs to nest. */
static inline void ventry(void)
{
    if (!vs.listening) {
        return;
    }
    uint32_t depth = atomic_load_explicit(&vs.entry_depth, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&vs.entry_depth, depth + 1, memory_order_relaxed);
        if (vs.membarrier) {
            atomic_signal_fence(memory_order_seq_cst);
        } else {
            atomic_thread_fence(memory_order_seq_cst);
        }
        if (OPAL_LIKELY(!atomic_load_explicit(&vs.listener_busy, memory_order_acquire))) {
            return;
        }
        /* the listener is answering a request: wait for it (it backs off if it
         * started after this entry's outer one) */
        atomic_store_explicit(&vs.entry_depth, depth, memory_order_release);
        while (atomic_load_explicit(&vs.listener_busy, memory_order_acquire)) {
            sched_yield();
        }
    }
}

static inline void vexit(void)
{
    if (!vs.listening) {
        return;
    }
    atomic_store_explicit(&vs.entry_depth,
                          atomic_load_explicit(&vs.entry_depth, memory_order_relaxed) - 1,
                          memory_order_release);
}

/* The listener's side: true when it may touch the back end's state (then
 * listener_release), false when an entry point is under way. */
static bool listener_acquire(void)
{
    atomic_store_explicit(&vs.listener_busy, true, memory_order_relaxed);
    if (!vs.membarrier
        || syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
        atomic_thread_fence(memory_order_seq_cst);
        if (vs.membarrier) {            /* cannot fail once registered; if it did, */
            atomic_store_explicit(&vs.listener_busy, false, memory_order_release);
            return false;               /* an entry point may not have seen us: leave it */
        }
    }
    if (atomic_load_explicit(&vs.entry_depth, memory_order_acquire) == 0) {
        return true;
    }
    atomic_store_explicit(&vs.listener_busy, false, memory_order_release);
    return false;
}

static void listener_release(void)
{
    atomic_store_explicit(&vs.listener_busy, false, memory_order_release);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static uint64_t name64(const opal_process_name_t *n)
{
    return (uint64_t) n->jobid << 32 | n->vpid;
}

static const char *peer_str(const mca_btl_base_endpoint_t *ep)
{
    if (ep->proc != NULL) {
        return OPAL_NAME_PRINT(ep->proc->proc_name);
    }
    /* a peer ob1 has not added yet (its REQ came first): the name it sent */
    opal_process_name_t n = {.jobid = (opal_jobid_t) (ep->v->name >> 32),
                             .vpid = (opal_vpid_t) ep->v->name};
    return OPAL_NAME_PRINT(n);
}

static const char *peer_host(const mca_btl_base_endpoint_t *ep)
{
    return ep->proc != NULL && ep->proc->proc_hostname != NULL ? ep->proc->proc_hostname
                                                                : "(unknown host)";
}

/* Page-aligned, zeroed, registered. */
static void *reg_alloc(size_t bytes, int access, struct ibv_mr **mr)
{
    void *p = NULL;
    if (posix_memalign(&p, RSM_PAGE, bytes) != 0) {
        return NULL;
    }
    memset(p, 0, bytes);
    *mr = ibv_reg_mr(vs.dev.pd, p, bytes, access);
    if (*mr == NULL) {
        int e = errno;
        free(p);
        errno = e;
        return NULL;
    }
    mca_btl_rsm_component.v_registered += bytes;
    return p;
}

/* Why a registration or queue pair failed, naming the locked-memory limit when
 * that is the likely cause (an ordinary user's default is often 8 MiB). */
static const char *reg_error(int err)
{
    static char buf[320];
    struct rlimit rl;
    if ((err == ENOMEM || err == EPERM || err == EAGAIN) && getrlimit(RLIMIT_MEMLOCK, &rl) == 0
        && rl.rlim_cur != RLIM_INFINITY) {
        snprintf(buf, sizeof(buf), "%s; this process may lock %llu KiB (ulimit -l) and has "
                 "%llu KiB registered: raise the limit (memlock in /etc/security/limits.conf, "
                 "LimitMEMLOCK for systemd) or lower btl_rsm_verbs_pool_size",
                 strerror(err), (unsigned long long) rl.rlim_cur / 1024,
                 (unsigned long long) (mca_btl_rsm_component.v_registered   /* + UD buffers */
                                       + (size_t) RSM_VUD_SLOT * (RSM_VUD_RECVS + 1)) / 1024);
        return buf;
    }
    return strerror(err);
}

static void reg_free(void *p, struct ibv_mr *mr, size_t bytes)
{
    if (mr != NULL) {
        ibv_dereg_mr(mr);
        mca_btl_rsm_component.v_registered -= bytes;
    }
    free(p);
}

static size_t ack_bytes(void)
{
    return rsm_round64(mca_btl_rsm_component.vlayout.queue_len);
}

static void conn_free(rsm_vconn_t *q)
{
    if (q->qp != NULL) {
        ibv_destroy_qp(q->qp);
    }
    reg_free(q->buf, q->mr, q->bytes);
    reg_free(q->acks, q->ack_mr, ack_bytes());
    memset(q, 0, sizeof(*q));
}

/* The queue pairs of a half's further rails. */
static void rails_free(rsm_vrailqp_t *rail, unsigned *n)
{
    for (unsigned r = 1; r < RSM_VRAILS_MAX; r++) {
        if (rail[r].qp != NULL) {
            ibv_destroy_qp(rail[r].qp);
        }
        memset(&rail[r], 0, sizeof(rail[r]));
    }
    *n = 0;
}

/* One more chunk for G's pool: its shadow, registered, and its allocator
 * (stripe G->made of the area, used once every receiver has mapped it). */
static int group_add_chunk(rsm_vgroup_t *g)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    unsigned i = g->made;
    if ((g->buf[i] = reg_alloc(vs.pool_bytes, IBV_ACCESS_LOCAL_WRITE, &g->mr[i])) == NULL) {
        return -1;
    }
    if (rsm_pool_init(&g->area.pool[i], &c->vlayouts[i + 1], (uint8_t) i) != 0) {
        reg_free(g->buf[i], g->mr[i], vs.pool_bytes);
        g->buf[i] = NULL;
        g->mr[i] = NULL;
        errno = ENOMEM;
        return -1;
    }
    g->area.seg[i].base = g->buf[i];    /* pool_apart: block offsets start here */
    g->area.seg[i].size = vs.pool_bytes;
    g->area.seg[i].direct = false;
    g->made++;
    return 0;
}

static void group_drop_chunk(rsm_vgroup_t *g)
{
    unsigned i = --g->made;
    rsm_pool_fini(&g->area.pool[i]);
    reg_free(g->buf[i], g->mr[i], vs.pool_bytes);
    g->buf[i] = NULL;
    g->mr[i] = NULL;
    memset(&g->area.seg[i], 0, sizeof(g->area.seg[i]));
}

/* The group (pool) for EP's host, made on the first connection to a rank there. */
static rsm_vgroup_t *group_for(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const char *host = ep->proc != NULL ? ep->proc->proc_hostname : NULL;
    for (uint32_t i = 0; host != NULL && i < vs.n_groups; i++) {
        if (vs.groups[i]->host != NULL && strcmp(vs.groups[i]->host, host) == 0) {
            return vs.groups[i];
        }
    }
    rsm_vgroup_t *g = calloc(1, sizeof(*g)), **grown;
    if (g == NULL || (host != NULL && (g->host = strdup(host)) == NULL)
        || rsm_seg_random_tag(g->tag) != 0
        || (grown = realloc(vs.groups, (vs.n_groups + 1) * sizeof(*grown))) == NULL) {
        goto fail;
    }
    vs.groups = grown;
    if (group_add_chunk(g) != 0) {
        goto fail;
    }
    g->chunks = 1;
    g->area.lay = &c->vlayouts[1];
    vs.groups[vs.n_groups++] = g;
    return g;
fail:
    if (g != NULL) {
        free(g->host);
        free(g);
    }
    errno = errno ? errno : ENOMEM;
    return NULL;
}

/* The receiver's view of a sender's pool for this host: the segment its tag
 * names, created by the first receiver the sender reaches here and mapped by
 * the others, registered in our protection domain.  Private registered memory
 * when it cannot be shared (another mount namespace, a name taken by another
 * user): only the economy is lost.  0, or -1 with errno. */
static int pool_attach(mca_btl_base_endpoint_t *ep, const char *tag, unsigned i)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct rsm_vpeer *v = ep->v;
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    rsm_seg_t *seg = &v->in_pool[i];
    char name[RSM_SEG_NAME_MAX];
    snprintf(name, sizeof(name), "/rsm-%.*s-vp%u", RSM_VPOOL_TAG, tag, i);
    const uint64_t start = now_ns();
    int rc;
    for (;;) {
        rc = rsm_export_registered(seg, name, vs.pool_bytes, -1);
        if (rc != -EEXIST) {
            break;
        }
        rc = rsm_seg_shm_ops.seg_import(seg, name, vs.pool_bytes);
        if (rc == 0) {
            v->in_pool_shared[i] = true;
            break;
        }
        /* ENOENT: its creator removed it meanwhile; EBADF: still sizing it (or
         * not ours, which a second's wait will not change) */
        if ((rc != -ENOENT && rc != -EBADF) || now_ns() - start > 1000000000ull) {
            break;
        }
        usleep(1000);
    }
    if (rc == 0 && !v->in_pool_shared[i] && (rc = rsm_seg_reserve(seg, 0, vs.pool_bytes)) != 0) {
        seg->ops->seg_release(seg);     /* /dev/shm is full: private memory below */
        memset(seg, 0, sizeof(*seg));
    }
    if (rc == 0) {
        v->in_pool_mr[i] = ibv_reg_mr(vs.dev.pd, seg->base, vs.pool_bytes, access);
        if (v->in_pool_mr[i] == NULL) {
            int e = errno;
            seg->ops->seg_release(seg);
            memset(seg, 0, sizeof(*seg));
            v->in_pool_shared[i] = false;
            errno = e;
            return -1;
        }
        c->v_registered += vs.pool_bytes;
        c->v_registered_shared += v->in_pool_shared[i] ? vs.pool_bytes : 0;
        return 0;
    }
    RSM_VERBOSE(1, "chunk %u of the pool of %s could not be shared with this host's other "
                "ranks (%s): private memory", i, peer_str(ep), strerror(-rc));
    memset(seg, 0, sizeof(*seg));
    if ((seg->base = reg_alloc(vs.pool_bytes, access, &v->in_pool_mr[i])) == NULL) {
        return -1;
    }
    seg->size = vs.pool_bytes;
    v->in_pool_private[i] = true;
    return 0;
}

static void pool_detach(struct rsm_vpeer *v)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    for (unsigned i = 0; i < RSM_VPOOL_CHUNKS_MAX; i++) {
        if (v->in_pool_private[i]) {
            reg_free(v->in_pool[i].base, v->in_pool_mr[i], vs.pool_bytes);
        } else if (v->in_pool[i].ops != NULL) {
            if (v->in_pool_mr[i] != NULL) {
                ibv_dereg_mr(v->in_pool_mr[i]);
                c->v_registered -= vs.pool_bytes;
                c->v_registered_shared -= v->in_pool_shared[i] ? vs.pool_bytes : 0;
            }
            v->in_pool[i].ops->seg_release(&v->in_pool[i]);   /* the creator removes the name */
        }
        memset(&v->in_pool[i], 0, sizeof(v->in_pool[i]));
        v->in_pool_mr[i] = NULL;
        v->in_pool_shared[i] = v->in_pool_private[i] = false;
    }
    v->in_chunks = 0;
}

/* Map chunks up to N of the sender's pool TAG for EP (accept_req, a GROW), and
 * read incoming runs against a layout of N stripes from now on.  0 or -1. */
static int pool_attach_chunks(mca_btl_base_endpoint_t *ep, const char *tag, unsigned n)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct rsm_vpeer *v = ep->v;
    if (n > c->verbs_pool_chunks) {
        errno = EINVAL;
        return -1;
    }
    for (unsigned i = v->in_chunks; i < n; i++) {
        if (pool_attach(ep, tag, i) != 0) {
            return -1;
        }
        ep->in_seg[i].base = v->in_pool[i].base;   /* pool_apart: stripe i is chunk i */
        ep->in_seg[i].size = vs.pool_bytes;
        v->in_chunks = i + 1;
        ep->in_lay = &c->vlayouts[i + 1];
    }
    memcpy(v->in_tag, tag, RSM_VPOOL_TAG);
    return 0;
}

/* One message for a failed connection, then ob1 is told (it aborts the job). */
static void conn_failed(mca_btl_base_endpoint_t *ep, const char *what, const char *detail)
{
    struct rsm_vpeer *v = ep->v;
    if (v->state == VS_CONNECTING) {
        vs.connecting--;
    }
    v->state = VS_FAILED;
    if (v->reported || vs.closing) {
        return;
    }
    v->reported = true;
    opal_show_help("help-btl-rsm.txt", "verbs-failed", true, opal_process_info.nodename,
                   vs.dev.name, peer_str(ep), peer_host(ep), what, detail);
    rsm_fatal(ep, "btl rsm: the RDMA connection over %s to %s (on %s) failed while %s: %s",
              vs.dev.name, peer_str(ep), peer_host(ep), what, detail);
}

/* What a progress pass seldom does (events, handshakes, completed reads, acks
 * owed) is kept out of line: inlined, it made every pass save six registers
 * and set up a frame of 184 bytes, 14 of the 75 instructions of its own that
 * rsm_verbs_progress took a pass (docs/results-2026-12-07-rsm-verbs-path/). */
#define RSM_VRARE __attribute__((noinline))

static int sq_room(rsm_vconn_t *q);
static int cq_room(rsm_vdev_t *d, uint32_t n, mca_btl_base_endpoint_t *ep);

/* Writes held back to go with the next one on the same queue pair: a pool
 * message's block writes wait for its pointer postbox's, so the message costs
 * one ibv_post_send (one doorbell: a system call on soft-RoCE, an MMIO write on
 * a NIC) instead of one per write. */
#define RSM_VBATCH (RSM_MSG_MAX_RUNS + 1)
static struct {
    rsm_vconn_t *q;
    unsigned n;
    uint32_t signalled;             /* of the n, those that will complete (rsm_vdev_t.scq_out) */
    struct ibv_send_wr wr[RSM_VBATCH];
    struct ibv_sge sge[RSM_VBATCH];
} vbatch;

static int vflush(void)
{
    rsm_vconn_t *q = vbatch.q;
    unsigned n = vbatch.n;
    const uint32_t signalled = vbatch.signalled;
    vbatch.n = vbatch.signalled = 0;
    vbatch.q = NULL;
    if (n == 0) {
        return OPAL_SUCCESS;
    }
    for (unsigned i = 0; i + 1 < n; i++) {
        vbatch.wr[i].next = &vbatch.wr[i + 1];
    }
    vbatch.wr[n - 1].next = NULL;
    if (OPAL_UNLIKELY(vs.dev.scq_out + signalled > RSM_VSCQ_ENTRIES)
        && cq_room(&vs.dev, signalled, q->ep) != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    struct ibv_send_wr *bad;
    int rc = ibv_post_send(q->qp, &vbatch.wr[0], &bad);
    if (OPAL_UNLIKELY(rc != 0)) {
        conn_failed(q->ep, "posting an RDMA write", strerror(rc));
        return OPAL_ERROR;
    }
    vs.dev.scq_out += signalled;
    mca_btl_rsm_component.v_posts++;
    return OPAL_SUCCESS;
}

/* Whether the next write on Q asks for a completion: every signal-interval-th
 * does, and its completion vouches for the ones before it (an RC send queue
 * completes in order; poll_rail_cq counts them so). */
static inline bool signal_next(rsm_vconn_t *q)
{
    if (++q->unsignalled < mca_btl_rsm_component.verbs_signal) {
        return false;
    }
    q->unsignalled = 0;
    return true;
}

/* The request vpost_one fills in for each write on Q: a single write of one
 * piece whose completion names Q. */
static void conn_wr_init(rsm_vconn_t *q)
{
    q->one_wr = (struct ibv_send_wr){.wr_id = (uintptr_t) q, .sg_list = &q->one_sge,
                                     .num_sge = 1};
    q->one_sge = (struct ibv_sge){0};
}

/* One RDMA write on Q with nothing held back: the latency path (an inline unit,
 * a direct pool message), posted at once in Q's own request, of which only
 * what differs from write to write is stored (vpost's batch is for writes
 * that wait for the next one). */
static int vpost_one(rsm_vconn_t *q, void *src, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                     size_t len, bool imm, uint32_t imm_data)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (OPAL_UNLIKELY(q->posted - q->completed + q->reads_out >= vs.dev.sq_depth - 1)
        && sq_room(q) != 0) {
        return OPAL_ERROR;
    }
    struct ibv_send_wr *wr = &q->one_wr;
    q->one_sge.addr = (uintptr_t) src;
    q->one_sge.length = (uint32_t) len;
    q->one_sge.lkey = lkey;
    wr->opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr->send_flags = len <= vs.dev.max_inline ? IBV_SEND_INLINE : 0;
    wr->imm_data = htonl(imm_data);
    wr->wr.rdma.remote_addr = raddr;
    wr->wr.rdma.rkey = rkey;
    const bool signalled = signal_next(q);
    if (signalled) {
        wr->send_flags |= IBV_SEND_SIGNALED;
        if (OPAL_UNLIKELY(vs.dev.scq_out + 1 > RSM_VSCQ_ENTRIES)
            && cq_room(&vs.dev, 1, q->ep) != OPAL_SUCCESS) {
            q->unsignalled = c->verbs_signal - 1;   /* not posted: the next one signals */
            return OPAL_ERROR;
        }
    }
    struct ibv_send_wr *bad;
    int rc = ibv_post_send(q->qp, wr, &bad);
    if (OPAL_UNLIKELY(rc != 0)) {
        conn_failed(q->ep, "posting an RDMA write", strerror(rc));
        return OPAL_ERROR;
    }
    vs.dev.scq_out += signalled;
    q->posted++;
    c->v_posts++;
    c->v_writes++;
    c->v_write_bytes += len;
    return OPAL_SUCCESS;
}

/* Post one RDMA write on Q (with MORE: held back, posted with the next write on
 * Q; signalled as signal_next says). */
static int vpost(rsm_vconn_t *q, void *src, uint32_t lkey, uint64_t raddr, uint32_t rkey,
                 size_t len, bool imm, uint32_t imm_data, bool more)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (OPAL_LIKELY(vbatch.n == 0 && !more)) {
        return vpost_one(q, src, lkey, raddr, rkey, len, imm, imm_data);
    }
    if (OPAL_UNLIKELY(vbatch.n > 0 && (vbatch.q != q || vbatch.n == RSM_VBATCH))
        && vflush() != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    if (OPAL_UNLIKELY(q->posted - q->completed + q->reads_out >= vs.dev.sq_depth - 1)
        && (vflush() != OPAL_SUCCESS || sq_room(q) != 0)) {
        return OPAL_ERROR;
    }
    unsigned i = vbatch.n++;
    vbatch.q = q;
    vbatch.sge[i] = (struct ibv_sge){.addr = (uintptr_t) src, .length = (uint32_t) len,
                                     .lkey = lkey};
    struct ibv_send_wr *wr = &vbatch.wr[i];
    *wr = (struct ibv_send_wr){.wr_id = (uintptr_t) q, .sg_list = &vbatch.sge[i], .num_sge = 1};
    wr->opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
    wr->imm_data = htonl(imm_data);
    wr->wr.rdma.remote_addr = raddr;
    wr->wr.rdma.rkey = rkey;
    if (signal_next(q)) {
        wr->send_flags |= IBV_SEND_SIGNALED;
        vbatch.signalled++;
    }
    if (len <= vs.dev.max_inline) {
        wr->send_flags |= IBV_SEND_INLINE;
    }
    q->posted++;
    c->v_writes++;
    c->v_write_bytes += len;
    return more ? OPAL_SUCCESS : vflush();
}

/* ---- the sender's pushes (called by btl_rsm_send.c right after it published
 * into the shadow) ---- */

/* How far we consumed EP's queue to us, for a packed immediate: the acks we owe
 * this peer ride along (rsm_vimm_pack), no write of their own. */
static uint32_t acks_ride_along(mca_btl_base_endpoint_t *ep)
{
    struct rsm_vpeer *v = ep->v;
    if (v->acks_pushed != ep->unacked) {
        v->acks_pushed = ep->unacked;
        v->pool_msgs_acked = ep->in_pool_msgs;
        mca_btl_rsm_component.v_acks_piggybacked++;
    }
    return ep->unacked;
}

static void post_unit_nolock(mca_btl_base_endpoint_t *ep, uint32_t seq, uint32_t k)
{
    struct rsm_vpeer *v = ep->v;
    if (OPAL_UNLIKELY(v->state != VS_UP)) {
        return;
    }
    const uint32_t qlen = mca_btl_rsm_component.vlayout.queue_len;
    size_t off = (size_t) (seq & (qlen - 1)) * RSM_POSTBOX_SIZE;
    uint32_t imm = seq + k;
    if (qlen <= RSM_VIMM_PACKED_QLEN_MAX) {
        imm = rsm_vimm_pack(seq + k, acks_ride_along(ep));
    }
    (void) vpost(&v->out, (char *) v->out.buf + off, v->out.mr->lkey, v->out.raddr + off,
                 v->out.rkey, (size_t) k * RSM_POSTBOX_SIZE, true, imm, false);
}

bool rsm_verbs_direct_ok(const mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                         size_t payload_offset)
{
    /* the allocator keeps RSM_POSTBOX_SIZE bytes ahead of the payload for it
     * (rsm_frag_alloc_runs); a pool sized to the largest message exactly may not */
    const mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    return c->verbs_direct && payload_offset >= RSM_POSTBOX_SIZE && run->stripe < ep->v->chunks
           && rsm_vimm_direct_fits(run->stripe, run->offset, c->vlayout.large_block);
}

static void post_direct_nolock(mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                               const void *payload_end, const rsm_postbox_t *pb)
{
    struct rsm_vpeer *v = ep->v;
    if (OPAL_UNLIKELY(v->state != VS_UP)) {
        return;
    }
    rsm_vgroup_t *g = v->group;
    char *start = (char *) g->buf[run->stripe] + run->offset;   /* the run in the shadow */
    memcpy(start, pb, RSM_POSTBOX_SIZE);
    const size_t block = mca_btl_rsm_component.vlayout.large_block;
    uint32_t imm = rsm_vimm_pack_direct(run->stripe, run->offset, block, acks_ride_along(ep));
    if (vpost(&v->out, start, g->mr[run->stripe]->lkey, v->pool_raddr[run->stripe] + run->offset,
              v->pool_rkey[run->stripe], (size_t) ((const char *) payload_end - start), true, imm,
              false) == OPAL_SUCCESS) {
        mca_btl_rsm_component.v_direct++;
    }
}

static void post_data_nolock(mca_btl_base_endpoint_t *ep, const void *addr, size_t len)
{
    struct rsm_vpeer *v = ep->v;
    if (OPAL_UNLIKELY(v->state != VS_UP) || len == 0) {
        return;
    }
    /* pool blocks: from the host's shadow pool to this receiver's view of the
     * pool, on this connection's queue pair, so the pointer postbox that names
     * them (later on the same queue pair) publishes them */
    rsm_vgroup_t *g = v->group;
    unsigned i = 0;
    while (i + 1 < g->chunks && !((const char *) addr >= (const char *) g->buf[i]
                                  && (const char *) addr < (const char *) g->buf[i] + vs.pool_bytes)) {
        i++;
    }
    size_t off = (size_t) ((const char *) addr - (const char *) g->buf[i]);
    /* posted with the pointer postbox that follows (rsm_verbs_post_unit) */
    (void) vpost(&v->out, (char *) g->buf[i] + off, g->mr[i]->lkey, v->pool_raddr[i] + off,
                 v->pool_rkey[i], len, false, 0, true);
}

/* The receiver: acks of [acks_pushed, unacked) into the sender's row. */
static void push_acks(mca_btl_base_endpoint_t *ep)
{
    struct rsm_vpeer *v = ep->v;
    const uint32_t qlen = mca_btl_rsm_component.vlayout.queue_len;
    while (v->acks_pushed != ep->unacked && v->in.qp != NULL) {
        uint32_t idx = v->acks_pushed & (qlen - 1);
        uint32_t n = ep->unacked - v->acks_pushed;
        if (n > qlen - idx) {
            n = qlen - idx;
        }
        if (vpost(&v->in, v->in.acks + idx, v->in.ack_mr->lkey, v->in.raddr + idx, v->in.rkey, n,
                  false, 0, false) != OPAL_SUCCESS) {
            return;
        }
        mca_btl_rsm_component.v_ack_writes++;
        v->acks_pushed += n;
    }
}

/* The receiver: the whole ack row as it stands, written at least every
 * RSM_VROW_LAPS laps.  Why: the sender reads a slot's byte as acked when it
 * is the lap tag it wrote there (rsm_lap_tag: 7 bits, the same every 128
 * laps), and acks that ride on our own messages leave the row as it was.  A
 * ping-pong of 128 laps (16,384 round trips on 128 postboxes) left bytes of
 * an earlier stream that read as this lap's: the sender took unread
 * postboxes, and the pool blocks they named, for free.  Rewritten this often,
 * no byte is older than 32 laps and a couple in flight. */
#define RSM_VROW_LAPS 32
static void push_row(mca_btl_base_endpoint_t *ep, uint32_t qlen)
{
    struct rsm_vpeer *v = ep->v;
    if (v->in.qp != NULL
        && vpost(&v->in, v->in.acks, v->in.ack_mr->lkey, v->in.raddr, v->in.rkey, qlen, false, 0,
                 false) == OPAL_SUCCESS) {
        mca_btl_rsm_component.v_ack_writes++;
        v->row_written = ep->unacked;
    }
}

/* ---- completions ---- */

/* A single-copy read (rsm_verbs_get) or a one-sided read or write (osc rdma's
 * get and put, rsm_verbs_put) in flight, in one piece per rail.  Work
 * request ids: the last request of a piece is the read's address | rail << 1 | 1
 * (signalled); the others are unsignalled and show up only in error: on rail 0
 * their id is the connection's (as a write's), on further rails the read's
 * address | rail << 1. */
typedef struct rsm_vread {
    struct rsm_vread *next, *all_next;
    rsm_vconn_t *q;
    mca_btl_base_endpoint_t *ep;
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;   /* NULL: the get was refused, nobody waits */
    void *cbcontext, *cbdata;
    struct mca_btl_base_registration_handle_t *tmp; /* registered for this operation alone */
    void *bounce;                   /* the device's copy of a buffer it could not register */
    size_t bounce_len;
    bool bounce_back;               /* a read into it: copied to local_address at the end */
    uint32_t nwr[RSM_VRAILS_MAX];   /* work requests each rail's piece took (cut at 1 GiB) */
    unsigned parts;                 /* pieces not complete */
    int status;                     /* the first piece's failure, or IBV_WC_SUCCESS */
} rsm_vread_t;

/* The further rails of the half whose rail 0 is Q: our own connection's
 * (one-sided operations) or the sender's connection to us (single-copy reads). */
static inline rsm_vrailqp_t *half_rails(struct rsm_vpeer *v, const rsm_vconn_t *q)
{
    return q == &v->out ? v->out_rail : v->in_rail;
}

static void read_finish(rsm_vread_t *r);

static void read_done(rsm_vread_t *r, unsigned rail, int status)
{
    if (rail == 0) {
        r->q->reads_out -= r->nwr[0];
    } else {
        half_rails(r->ep->v, r->q)[rail].reads_out -= r->nwr[rail];
        vs.rail_reads_out -= r->nwr[rail];
    }
    if (status != IBV_WC_SUCCESS && r->status == IBV_WC_SUCCESS) {
        r->status = status;
    }
    if (--r->parts > 0) {
        return;
    }
    if (OPAL_UNLIKELY(vs.in_sq_room > 0)) {
        /* sq_room polls for room in the middle of posting a message (its postboxes
         * written, the queue's tail not yet moved): a callback that sent to the
         * same peer now would take the same postboxes.  rail_room polls inside a
         * callback already.  Progress runs it. */
        r->next = NULL;
        if (vs.done_head == NULL) {
            vs.done_head = r;
        } else {
            vs.done_last->next = r;
        }
        vs.done_last = r;
        return;
    }
    read_finish(r);
}

/* The reads sq_room completed: their callbacks, now that no posting is under way. */
static RSM_VRARE int run_done_reads(void)
{
    int n = 0;
    while (vs.done_head != NULL && vs.in_sq_room == 0) {
        rsm_vread_t *r = vs.done_head;
        vs.done_head = r->next;
        read_finish(r);
        n++;
    }
    return n;
}

static void read_finish(rsm_vread_t *r)
{
    rsm_vread_t copy = *r;
    r->tmp = NULL;
    r->bounce = NULL;
    r->next = vs.free_reads;
    vs.free_reads = r;
    if (copy.tmp != NULL) {
        (void) rsm_verbs_deregister(copy.tmp);
    }
    if (copy.bounce != NULL) {
        if (copy.bounce_back && copy.status == IBV_WC_SUCCESS) {
            memcpy(copy.local_address, copy.bounce, copy.bounce_len);
        }
        free(copy.bounce);
    }
    if (copy.cbfunc != NULL && copy.status != IBV_WC_WR_FLUSH_ERR && !vs.closing) {
        copy.cbfunc(&mca_btl_rsm, copy.ep, copy.local_address, copy.local_handle, copy.cbcontext,
                    copy.cbdata, copy.status == IBV_WC_SUCCESS ? OPAL_SUCCESS : OPAL_ERROR);
    }
}

/* The send completions of rail RAIL's queue pairs: writes (rail 0) and reads. */
static int poll_rail_cq(struct ibv_cq *cq, unsigned rail)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(cq, 16, wc), done = 0;
    rsm_vdev_t *d = rail == 0 ? &vs.dev : &vs.rail[rail];
    /* unsignalled requests show up too, in error: never below 0 */
    d->scq_out = n <= 0 ? d->scq_out : d->scq_out > (uint32_t) n ? d->scq_out - (uint32_t) n : 0;
    for (int i = 0; i < n; i++) {
        uint64_t id = wc[i].wr_id;
        bool last = (id & 1) != 0;
        rsm_vread_t *r = last || rail > 0 ? (rsm_vread_t *) (uintptr_t) (id & ~(uint64_t) 7) : NULL;
        rsm_vconn_t *q = r == NULL ? (rsm_vconn_t *) (uintptr_t) id : NULL;
        mca_btl_base_endpoint_t *ep = r != NULL ? r->ep : q != NULL ? q->ep : NULL;
        if (OPAL_UNLIKELY(wc[i].status != IBV_WC_SUCCESS)) {
            if (ep != NULL && wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                char what[96];
                /* no colon in it: the help message reads "failed while WHAT: why" */
                snprintf(what, sizeof(what), "an RDMA %s%s completed in error",
                         r != NULL ? "read or one-sided operation" : "write",
                         rail == 0 ? "" : rail == 1 ? " on the second rail" : " on a further rail");
                conn_failed(ep, what, ibv_wc_status_str(wc[i].status));
            }
            if (last) {
                read_done(r, (unsigned) (id >> 1) & 3, wc[i].status);
            }
            continue;
        }
        if (last) {
            read_done(r, (unsigned) (id >> 1) & 3, IBV_WC_SUCCESS);
        } else if (q != NULL) {
            q->completed += c->verbs_signal;
        }
        done++;
    }
    return n < 0 ? -1 : done;
}

static int poll_send_cq(void)
{
    int done = poll_rail_cq(vs.dev.scq, 0);
    for (unsigned k = 1; k < vs.n_rails && vs.rail_reads_out > 0 && done >= 0; k++) {
        int d = poll_rail_cq(vs.rail[k].scq, k);
        done = d < 0 ? d : done + d;
    }
    return done;
}

/* Room for N more signalled requests in device D's send completion queue
 * (RSM_VSCQ_ENTRIES for every queue pair on it: with many peers, reads in
 * flight can add up to more, and the device would drop completions, a read's
 * among them, and its caller would wait for ever).  Polls meanwhile, as
 * sq_room does. */
static int cq_room(rsm_vdev_t *d, uint32_t n, mca_btl_base_endpoint_t *ep)
{
    uint64_t start = now_ns();
    int rc = OPAL_SUCCESS;
    vs.in_sq_room++;
    while (d->scq_out + n > RSM_VSCQ_ENTRIES) {
        if (ep->v->state == VS_FAILED) {
            rc = OPAL_ERROR;        /* already reported */
            break;
        }
        if (poll_send_cq() < 0 || now_ns() - start > 10000000000ull) {
            conn_failed(ep, "waiting for completion queue room",
                        "no send completion for 10 s, or the completion queue failed");
            rc = OPAL_ERROR;
            break;
        }
    }
    vs.in_sq_room--;
    mca_btl_rsm_component.v_cq_waits++;
    return rc;
}

static int sq_room(rsm_vconn_t *q)
{
    /* the receiver acked what we sent, so its completions are on their way */
    uint64_t start = now_ns();
    int rc = OPAL_SUCCESS;
    vs.in_sq_room++;                /* the reads completed meanwhile call back later */
    while (q->posted - q->completed + q->reads_out >= vs.dev.sq_depth - 1) {
        if (q->ep->v->state == VS_FAILED) {
            rc = OPAL_ERROR;        /* already reported */
            break;
        }
        if (poll_send_cq() < 0 || now_ns() - start > 10000000000ull) {
            conn_failed(q->ep, "waiting for send queue room",
                        "no send completion for 10 s, or the completion queue failed");
            rc = OPAL_ERROR;
            break;
        }
    }
    vs.in_sq_room--;
    return rc;
}

/* When the receiver writes its acks.  An ack is a write and its RC
 * acknowledgement: it doubles the packets of a small message, and written at
 * once it goes out between the message and the reply a ping-pong waits for (at
 * 512 B, 3.3 packets per message instead of 2, and the latency of two).  So:
 * - inline postboxes are acked every eighth of a queue, pool messages (their
 *   blocks are few and may be fragmented) each;
 * - not at once but on the next progress call that finds no message: in a
 *   ping-pong, after the reply is posted; in a stream, when the receiver catches up;
 * - with btl_rsm_verbs_ack_delay_us above 0 (not the default), pool messages
 *   every second one, and a single one on such a call once owed that long.  In a
 *   stream the receiver catches up after nearly every message (soft-RoCE guest,
 *   xb-bw 2-16 KiB: 0.9 ack writes a message); a 1 ms delay cut xb-bw 2-64 KiB's
 *   packets by 2.2%, and no time could be told from the guest's noise;
 * - at once past a quarter of the queue or 4 pool messages, so that a receiver
 *   that leaves MPI with acks owed never stalls its sender: fewer than a quarter
 *   unacked leaves three quarters free, and a message takes at most half. */
static void note_acks(mca_btl_base_endpoint_t *ep, uint32_t qlen)
{
    struct rsm_vpeer *v = ep->v;
    uint32_t postboxes = ep->unacked - v->acks_pushed;
    uint32_t pool_msgs = ep->in_pool_msgs - v->pool_msgs_acked;
    if (OPAL_UNLIKELY(ep->unacked - v->row_written >= RSM_VROW_LAPS * qlen)) {
        push_row(ep, qlen);
    }
    if (postboxes >= qlen / 4 || pool_msgs >= 4) {
        v->pool_msgs_acked = ep->in_pool_msgs;
        push_acks(ep);
        return;
    }
    if (postboxes < qlen / 8 && pool_msgs == 0) {
        return;
    }
    const bool one_pool_msg = postboxes < qlen / 8 && pool_msgs == 1;
    if (!v->ack_owed) {
        v->ack_owed = true;
        v->next_owed = vs.owed;
        vs.owed = ep;
        const bool wait = one_pool_msg && mca_btl_rsm_component.verbs_ack_delay_us > 0;
        v->owed_since_ns = wait ? now_ns() : 0;
    } else if (!one_pool_msg) {
        v->owed_since_ns = 0;
    }
}

static RSM_VRARE void push_owed_acks(void)
{
    mca_btl_base_endpoint_t *ep = vs.owed, *keep = NULL;
    const uint64_t delay = (uint64_t) mca_btl_rsm_component.verbs_ack_delay_us * 1000;
    uint64_t now = 0;
    vs.owed = NULL;
    while (ep != NULL) {
        struct rsm_vpeer *v = ep->v;
        mca_btl_base_endpoint_t *next = v->next_owed;
        if (v->owed_since_ns != 0 && v->state != VS_FAILED) {
            now = now != 0 ? now : now_ns();
            if (now - v->owed_since_ns < delay) {
                v->next_owed = keep;      /* one pool message, not owed for long yet */
                keep = ep;
                ep = next;
                continue;
            }
        }
        v->ack_owed = false;
        v->next_owed = NULL;
        if (v->state != VS_FAILED) {
            v->pool_msgs_acked = ep->in_pool_msgs;
            push_acks(ep);
        }
        ep = next;
    }
    vs.owed = keep;
}

/* A direct unit's postbox (rsm_verbs.h): in a chunk of the sender's pool we
 * have mapped, whole; NULL otherwise (then the completion is dropped).  What it
 * holds is checked by the parser, as a postbox written into the queue is. */
static const rsm_postbox_t *direct_postbox(mca_btl_base_endpoint_t *ep, uint32_t imm)
{
    unsigned chunk;
    size_t offset;
    rsm_vimm_direct_at(imm, mca_btl_rsm_component.vlayout.large_block, &chunk, &offset);
    if (chunk >= ep->v->in_chunks || offset + RSM_POSTBOX_SIZE > vs.pool_bytes) {
        return NULL;
    }
    return (const rsm_postbox_t *) ((const char *) ep->in_seg[chunk].base
                                    + rsm_layout_pool_base(ep->in_lay, chunk) + offset);
}

/* The messages of EP's queue up to the tail an immediate named: inline ones by
 * the receive fast path (rsm_poll_queue), the rest by the parser.  A function of
 * its own so that profiles show what delivery costs. */
static __attribute__((noinline)) int poll_remote_queue(mca_btl_base_endpoint_t *ep)
{
    return rsm_poll_queue(ep, UINT32_MAX, true);
}

static int poll_recv_cq(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const uint32_t qlen = c->vlayout.queue_len;
    struct ibv_wc wc[16];
    int n = ibv_poll_cq(vs.dev.rcq, 16, wc), delivered = 0;
    if (n <= 0) {
        return n < 0 ? -1 : 0;
    }
    vs.dev.srq_posted -= (unsigned) n;
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        if (opal_hash_table_get_value_uint32(&vs.by_qpn, wc[i].qp_num, &p) != OPAL_SUCCESS) {
            continue;               /* a connection already torn down */
        }
        mca_btl_base_endpoint_t *ep = p;
        if (OPAL_UNLIKELY(wc[i].status != IBV_WC_SUCCESS)) {
            if (wc[i].status != IBV_WC_WR_FLUSH_ERR) {
                conn_failed(ep, "receiving", ibv_wc_status_str(wc[i].status));
            }
            continue;
        }
        uint32_t imm = ntohl(wc[i].imm_data), tail = imm, consumed = ep->peer_consumed;
        bool packed = qlen <= RSM_VIMM_PACKED_QLEN_MAX;
        const rsm_postbox_t *direct = NULL;
        if (packed && rsm_vimm_is_direct(imm)) {
            tail = ep->in_published + 1;
            direct = direct_postbox(ep, imm);
        } else if (packed) {
            tail = rsm_vimm_tail(imm, ep->in_published);
        }
        if (OPAL_UNLIKELY(wc[i].opcode != IBV_WC_RECV_RDMA_WITH_IMM
                          || !rsm_vimm_valid(tail, ep->head, ep->in_published, qlen)
                          || (packed && rsm_vimm_is_direct(imm) && direct == NULL)
                          || (packed && !rsm_vimm_consumed(imm, ep->peer_consumed, ep->tail,
                                                           &consumed)))) {
            c->dropped++;
            c->dropped_malformed++;
            RSM_VERBOSE(1, "dropped a completion from %s with immediate 0x%08x (head %u, "
                        "published %u, our tail %u, it consumed %u)", peer_str(ep), imm,
                        ep->head, ep->in_published, ep->tail, ep->peer_consumed);
            continue;
        }
        if (direct != NULL) {
            /* its slot is ours: the sender wrote this sequence number only after
             * we acked the slot's last lap; parsed there like any postbox */
            memcpy(&ep->in_queue[ep->in_published & ep->q_mask], direct, RSM_POSTBOX_SIZE);
        }
        ep->in_published = tail;
        ep->peer_consumed = consumed;
        delivered += poll_remote_queue(ep);
        note_acks(ep, qlen);
    }
    /* refilled in batches: the queue is deep enough for 32 units unanswered */
    if (vs.dev.srq_posted + 32 <= vs.dev.srq_depth && rsm_vdev_refill(&vs.dev) != 0) {
        RSM_VERBOSE(1, "could not refill the shared receive queue");
    }
    return delivered;
}

/* ---- connections ---- */

static void msg_init(rsm_vmsg_t *m, int type, uint64_t to)
{
    memset(m, 0, sizeof(*m));
    m->magic = RSM_VMSG_MAGIC;
    m->version = RSM_VMSG_VERSION;
    m->type = (uint8_t) type;
    m->from = vs.my_name;
    m->to = to;
    m->params = mca_btl_rsm_component.vparams;
    m->addr = vs.dev.self;
}

/* A REQ or a GROW: what the sender offers of this connection (its queue pair,
 * its ack row) and the pool, named by its tag, with every chunk made so far. */
static int send_offer(mca_btl_base_endpoint_t *ep, int type)
{
    struct rsm_vpeer *v = ep->v;
    rsm_vmsg_t m;
    msg_init(&m, type, v->name);
    m.qpn = v->out.qp->qp_num;
    m.psn = v->out.psn;
    m.raddr = (uintptr_t) v->out.acks;
    m.rkey = v->out.ack_mr->rkey;
    m.rlen = (uint32_t) ack_bytes();
    m.conn = v->out.qp->qp_num;
    memcpy(m.pool_tag, v->group->tag, RSM_VPOOL_TAG);
    m.pool_chunks = (uint8_t) v->group->made;   /* a chunk being grown too */
    m.rails = (uint8_t) v->out_rails;
    for (unsigned r = 1; r < v->out_rails; r++) {
        m.rail[r - 1] = (rsm_vrail_t){.addr = vs.rail[r].self, .qpn = v->out_rail[r].qp->qp_num,
                                      .psn = v->out_rail[r].psn};
    }
    return rsm_vud_send(&vs.dev, &v->ah, &v->addr, &m);
}

static int send_req(mca_btl_base_endpoint_t *ep)
{
    ep->v->req_last_ns = now_ns();
    return send_offer(ep, RSM_VMSG_REQ);
}

static uint32_t random_psn(void)
{
    return (uint32_t) random() & 0xffffff;
}

/* The sender's half: everything local is made now (shadow, pool, ack row, the
 * queue pair in INIT), so ob1 can pack into the shadow at once; the REQ goes
 * out and messages wait on the pending list until the REP. */
static int connect_nolock(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct rsm_vpeer *v = ep->v;
    const rsm_layout_t *lay = &c->vlayout;
    switch (v->state) {
    case VS_UP:
        return OPAL_SUCCESS;
    case VS_CONNECTING:
        return OPAL_ERR_RESOURCE_BUSY;
    case VS_FAILED:
        return OPAL_ERR_UNREACH;
    }
    if (!v->have_addr) {
        conn_failed(ep, "connecting", "the peer published no RDMA address");
        return OPAL_ERR_UNREACH;
    }
    rsm_vconn_t *q = &v->out;
    q->ep = ep;
    conn_wr_init(q);
    q->bytes = vs.queue_bytes;
    if ((v->group = group_for(ep)) == NULL
        || (q->buf = reg_alloc(q->bytes, IBV_ACCESS_LOCAL_WRITE, &q->mr)) == NULL
        || (q->acks = reg_alloc(ack_bytes(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                                &q->ack_mr)) == NULL
        || (q->qp = rsm_vqp_create(&vs.dev)) == NULL) {
        conn_failed(ep, "registering memory or creating a queue pair", reg_error(errno));
        return OPAL_ERR_UNREACH;
    }
    /* the further rails: queue pairs the receiver will read our buffers through */
    for (unsigned r = 1; r < vs.n_rails; r++) {
        if ((v->out_rail[r].qp = rsm_vqp_create(&vs.rail[r])) == NULL) {
            conn_failed(ep, "creating a queue pair on a further rail", strerror(errno));
            return OPAL_ERR_UNREACH;
        }
        v->out_rail[r].psn = random_psn();
    }
    v->out_rails = vs.n_rails;
    if ((ep->slots == NULL && (ep->slots = calloc(lay->queue_len, sizeof(rsm_slot_t))) == NULL)
        || (ep->stale == NULL && (ep->stale = calloc(lay->queue_len, 1)) == NULL)) {
        conn_failed(ep, "allocating the queue's bookkeeping", strerror(ENOMEM));
        return OPAL_ERR_UNREACH;
    }
    ep->area = &v->group->area;
    ep->out_queue = rsm_layout_queue(lay, q->buf, 0);
    ep->out_acks = (_Atomic uint8_t *) q->acks;
    ep->tail = ep->reclaimed = ep->peer_consumed = c->first_seq;
    ep->slots_with_runs = 0;
    ep->collect_mark = c->first_seq - 1;        /* periodic collections are for local peers only */
    q->psn = random_psn();
    v->state = VS_CONNECTING;
    vs.connecting++;
    v->req_waited_ns = 0;
    v->req_first_ns = v->req_seen_ns = now_ns();
    int rc = send_req(ep);
    if (rc != 0 && rc != -EBUSY) {      /* busy: retry_requests sends it */
        conn_failed(ep, "sending the connection request", strerror(-rc));
        return OPAL_ERR_UNREACH;
    }
    RSM_VERBOSE(10, "connecting to %s on %s over %s (queue pair %u, pool %.8s shared with %s)",
                peer_str(ep), peer_host(ep), vs.dev.name, q->qp->qp_num, v->group->tag,
                v->group->host != NULL ? v->group->host : "this peer only");
    return OPAL_ERR_RESOURCE_BUSY;
}

/* An endpoint for process NAME, created on first sight (add_procs, or a REQ
 * from a peer ob1 has not added yet: receiving needs no ob1 endpoint). */
static mca_btl_base_endpoint_t *ep_for(uint64_t name)
{
    void *p = NULL;
    if (opal_hash_table_get_value_uint64(&vs.by_name, name, &p) == OPAL_SUCCESS) {
        return p;
    }
    mca_btl_base_endpoint_t *ep = calloc(1, sizeof(*ep));
    struct rsm_vpeer *v = calloc(1, sizeof(*v));
    if (ep == NULL || v == NULL || rsm_ep_list_add(&vs.eps, &vs.n_eps, ep) != OPAL_SUCCESS) {
        free(ep);
        free(v);
        return NULL;
    }
    ep->remote = true;
    ep->v = v;
    ep->local_rank = UINT32_MAX;
    ep->in_lay = &mca_btl_rsm_component.vlayout;
    ep->q_mask = mca_btl_rsm_component.vlayout.queue_len - 1;
    ep->q_shift = mca_btl_rsm_component.vlayout.queue_shift;
    ep->inline_max = mca_btl_rsm_component.remote_inline_max;
    /* Both halves at the first sequence number before either connects (each
     * sets it again when it does).  Why: our units carry how far we consumed
     * the peer's queue to us (acks_ride_along) also while that half is not
     * connected yet, and the peer checks it against its own first number: a 0
     * there, with queues starting elsewhere (btl_rsm_first_seq), made it drop
     * our first message and hang when we sent before it did. */
    const uint32_t first = mca_btl_rsm_component.first_seq;
    ep->tail = ep->reclaimed = ep->peer_consumed = first;
    ep->collect_mark = first - 1;
    ep->head = ep->unacked = ep->in_published = first;
    v->acks_pushed = v->row_written = first;
    v->name = name;
    opal_hash_table_set_value_uint64(&vs.by_name, name, ep);
    return ep;
}

/* Answer REQ: a REP or a REJ, either echoing the request's connection number
 * (the requester ignores answers that do not, as stale). */
static void reply(mca_btl_base_endpoint_t *ep, const rsm_vmsg_t *req, int type, int status)
{
    struct rsm_vpeer *v = ep->v;
    rsm_vmsg_t m;
    msg_init(&m, type, v->name);
    m.status = (uint16_t) status;
    m.conn = req->conn;
    if (type == RSM_VMSG_REP || type == RSM_VMSG_GROWN) {
        m.qpn = v->in.qp->qp_num;
        m.psn = v->in.psn;
        m.raddr = (uintptr_t) v->in.buf;
        m.rkey = v->in.mr->rkey;
        m.rlen = (uint32_t) v->in.bytes;
        m.pool_chunks = (uint8_t) v->in_chunks;
        for (unsigned i = 0; i < v->in_chunks; i++) {
            m.pool_raddr[i] = (uintptr_t) v->in_pool[i].base;
            m.pool_rkey[i] = v->in_pool_mr[i]->rkey;
        }
        m.pool_len = (uint32_t) vs.pool_bytes;
        m.asked = req->pool_chunks;
        m.rails = (uint8_t) (v->in_rails > 0 ? v->in_rails : 1);
        for (unsigned r = 1; r < v->in_rails; r++) {
            m.rail[r - 1] = (rsm_vrail_t){.addr = vs.rail[r].self, .qpn = v->in_rail[r].qp->qp_num,
                                          .psn = v->in_rail[r].psn};
        }
    }
    int rc = rsm_vud_send(&vs.dev, &v->ah, &req->addr, &m);
    if (rc != 0) {
        RSM_VERBOSE(1, "could not answer %s's connection request: %s", peer_str(ep), strerror(-rc));
    }
}

/* The receiver's half: register the area, connect our end, answer. */
static void accept_req(const rsm_vmsg_t *m)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    mca_btl_base_endpoint_t *ep = ep_for(m->from);
    if (ep == NULL) {
        return;
    }
    struct rsm_vpeer *v = ep->v;
    if (!v->have_addr) {
        v->addr = m->addr;
        v->have_addr = true;
    }
    if (m->params != c->vparams) {
        opal_show_help("help-btl-rsm.txt", "params-mismatch", true, opal_process_info.nodename,
                       peer_str(ep));
        reply(ep, m, RSM_VMSG_REJ, RSM_VREJ_PARAMS);
        return;
    }
    rsm_vconn_t *q = &v->in;
    if (q->qp != NULL) {
        if (q->peer_qpn == m->qpn) {
            reply(ep, m, RSM_VMSG_REP, 0);   /* our REP was lost: again */
        }
        return;
    }
    q->ep = ep;
    conn_wr_init(q);
    q->bytes = vs.queue_bytes;
    q->psn = random_psn();
    q->peer_qpn = m->qpn;
    q->raddr = m->raddr;
    q->rkey = m->rkey;
    int rc = 0;
    if ((q->buf = reg_alloc(q->bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, &q->mr))
            == NULL
        || (q->acks = reg_alloc(ack_bytes(), IBV_ACCESS_LOCAL_WRITE, &q->ack_mr)) == NULL
        || pool_attach_chunks(ep, m->pool_tag, m->pool_chunks) != 0
        || (q->qp = rsm_vqp_create(&vs.dev)) == NULL
        || (rc = rsm_vqp_connect(&vs.dev, q->qp, &m->addr, m->qpn, m->psn, q->psn)) != 0) {
        int err = rc ? -rc : errno;
        opal_show_help("help-btl-rsm.txt", "verbs-failed", true, opal_process_info.nodename,
                       vs.dev.name, peer_str(ep), peer_host(ep), "accepting a connection",
                       reg_error(err));
        conn_free(q);
        pool_detach(v);
        reply(ep, m, RSM_VMSG_REJ, RSM_VREJ_NOMEM);
        return;
    }
    /* the further rails both ends have: ours connect to the sender's now, and a
     * rail that will not is left out (its reads go over the others) */
    unsigned rails = m->rails < vs.n_rails ? m->rails : vs.n_rails;
    v->in_rails = 1;
    for (unsigned r = 1; r < rails; r++) {
        rsm_vrailqp_t *l = &v->in_rail[r];
        const rsm_vrail_t *pr = &m->rail[r - 1];
        l->psn = random_psn();
        if ((l->qp = rsm_vqp_create(&vs.rail[r])) == NULL
            || (rc = rsm_vqp_connect(&vs.rail[r], l->qp, &pr->addr, pr->qpn, pr->psn, l->psn)) != 0) {
            RSM_VERBOSE(1, "no queue pair on %s for %s (%s): its messages are read over %u rail%s",
                        vs.rail[r].name, peer_str(ep), strerror(rc ? -rc : errno), r,
                        r > 1 ? "s" : "");
            if (l->qp != NULL) {
                ibv_destroy_qp(l->qp);
                l->qp = NULL;
            }
            break;
        }
        v->in_rails = r + 1;
    }
    ep->in_queue = rsm_layout_queue(&c->vlayout, q->buf, 0);
    ep->in_acks = (_Atomic uint8_t *) q->acks;
    ep->head = ep->unacked = ep->in_published = c->first_seq;
    v->acks_pushed = v->row_written = c->first_seq;
    ep->in_connected = true;
    opal_hash_table_set_value_uint32(&vs.by_qpn, q->qp->qp_num, ep);
    c->v_accepts++;
    reply(ep, m, RSM_VMSG_REP, 0);
    RSM_VERBOSE(10, "accepted a connection from %s over %s and %u further rail%s (queue pair %u, "
                "%zu-byte queue, pool %.8s of %u x %zu bytes, chunk 0 %s)", peer_str(ep),
                vs.dev.name, v->in_rails - 1, v->in_rails == 2 ? "" : "s", q->qp->qp_num,
                q->bytes, m->pool_tag, v->in_chunks, vs.pool_bytes,
                v->in_pool_shared[0] ? "mapped from another rank here"
                : v->in_pool_private[0] ? "in private memory" : "created");
}

/* ---- growing a pool (a sender that streams) ---- */

static void send_grow(mca_btl_base_endpoint_t *ep)
{
    ep->v->grow_last_ns = now_ns();
    (void) send_offer(ep, RSM_VMSG_GROW);
}

/* The group's connections that count: up, or still connecting (their REP says
 * how many chunks their receiver mapped). */
static bool in_group(const mca_btl_base_endpoint_t *ep, const rsm_vgroup_t *g)
{
    return ep->v->group == g && (ep->v->state == VS_UP || ep->v->state == VS_CONNECTING);
}

static void group_growth_done(rsm_vgroup_t *g)
{
    vs.growing--;
    g->full_events = 0;
}

/* Once every receiver has mapped the new chunk, allocations may use it. */
static void group_check_grown(rsm_vgroup_t *g)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (g->made == g->chunks) {
        return;
    }
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        if (in_group(vs.eps[i], g) && vs.eps[i]->v->chunks < g->made) {
            return;
        }
    }
    g->chunks = g->made;
    g->area.lay = &c->vlayouts[g->chunks];
    c->v_grows++;       /* a chunk in use (pvar verbs_pool_grows) */
    group_growth_done(g);
    RSM_VERBOSE(10, "the pool for %s grew to %u chunks (%zu bytes) in %.1f ms",
                g->host != NULL ? g->host : "one peer", g->chunks, g->chunks * vs.pool_bytes,
                (now_ns() - g->grow_ns) / 1e6);
}

/* A receiver could not map the new chunk, or did not answer: the pool keeps
 * its size for the rest of the job (it works as it is). */
static void group_abandon_growth(rsm_vgroup_t *g, const char *why)
{
    if (g->made == g->chunks) {
        return;
    }
    group_drop_chunk(g);
    g->grow_failed = true;
    group_growth_done(g);
    RSM_VERBOSE(1, "the pool for %s stays at %u chunks: %s", g->host != NULL ? g->host : "one peer",
                g->chunks, why);
}

static void pool_full_nolock(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    rsm_vgroup_t *g = ep->v->group;
    if (g == NULL || g->made > g->chunks || g->made >= c->verbs_pool_chunks || g->grow_failed
        || ++g->full_events < c->verbs_grow_after) {
        return;
    }
    if (group_add_chunk(g) != 0) {
        g->grow_failed = true;
        RSM_VERBOSE(1, "the pool for %s stays at %u chunks: %s",
                    g->host != NULL ? g->host : "one peer", g->chunks, reg_error(errno));
        return;
    }
    vs.growing++;
    g->grow_ns = now_ns();
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        if (vs.eps[i]->v->group == g && vs.eps[i]->v->state == VS_UP) {
            send_grow(vs.eps[i]);
        }
    }
    group_check_grown(g);
}

/* The receiver: map the chunks a GROW names, answer GROWN with what we have. */
static void take_grow(const rsm_vmsg_t *m)
{
    void *p = NULL;
    if (opal_hash_table_get_value_uint64(&vs.by_name, m->from, &p) != OPAL_SUCCESS) {
        return;
    }
    mca_btl_base_endpoint_t *ep = p;
    struct rsm_vpeer *v = ep->v;
    if (v->in.qp == NULL || v->in.peer_qpn != m->qpn
        || memcmp(v->in_tag, m->pool_tag, RSM_VPOOL_TAG) != 0) {
        return;                     /* not for the connection we have */
    }
    if (v->in_chunks < m->pool_chunks && pool_attach_chunks(ep, m->pool_tag, m->pool_chunks) != 0) {
        RSM_VERBOSE(1, "could not map chunk %u of the pool of %s: %s", v->in_chunks, peer_str(ep),
                    reg_error(errno));
    }
    reply(ep, m, RSM_VMSG_GROWN, 0);     /* how many we have: the sender decides */
}

static void take_grown(const rsm_vmsg_t *m)
{
    void *p = NULL;
    if (opal_hash_table_get_value_uint64(&vs.by_name, m->from, &p) != OPAL_SUCCESS) {
        return;
    }
    mca_btl_base_endpoint_t *ep = p;
    struct rsm_vpeer *v = ep->v;
    rsm_vgroup_t *g = v->group;
    if (v->state != VS_UP || m->conn != v->out.qp->qp_num || g == NULL || g->made == g->chunks) {
        return;                     /* a duplicate, or for another connection */
    }
    int verdict = rsm_vgrown_verdict(m->asked, m->pool_chunks, g->made);
    if (verdict == RSM_VGROWN_STALE) {
        /* answers an earlier growth's resent GROW: this growth's answer is to come */
        RSM_VERBOSE(10, "a late answer from %s to the GROW for %u chunks (%u mapped; the pool "
                    "grows to %u)", peer_str(ep), m->asked, m->pool_chunks, g->made);
        return;
    }
    unsigned n = m->pool_chunks < g->made ? m->pool_chunks : g->made;
    for (unsigned i = v->chunks; i < n; i++) {
        v->pool_raddr[i] = m->pool_raddr[i];
        v->pool_rkey[i] = m->pool_rkey[i];
    }
    if (n > v->chunks) {
        v->chunks = n;
    }
    if (verdict == RSM_VGROWN_SHORT) {
        group_abandon_growth(g, "a receiver could not map the new chunk");
        return;
    }
    group_check_grown(g);
}

/* GROWs are resent every btl_rsm_verbs_resend_ms until answered (so a GROW
 * may be answered twice: take_grown); a growth that takes longer than a
 * connection may is given up (the pool keeps its size). */
static RSM_VRARE void retry_grows(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    uint64_t now = now_ns();
    for (uint32_t j = 0; j < vs.n_groups; j++) {
        rsm_vgroup_t *g = vs.groups[j];
        if (g->made == g->chunks) {
            continue;
        }
        if (now - g->grow_ns > (uint64_t) c->verbs_connect_timeout_ms * 1000000ull) {
            group_abandon_growth(g, "a receiver did not answer");
            continue;
        }
        for (uint32_t i = 0; i < vs.n_eps; i++) {
            struct rsm_vpeer *v = vs.eps[i]->v;
            if (v->group == g && v->state == VS_UP && v->chunks < g->made
                && now - v->grow_last_ns > (uint64_t) c->verbs_resend_ms * 1000000ull) {
                send_grow(vs.eps[i]);
            }
        }
        group_check_grown(g);   /* a member that failed no longer holds it back */
    }
}

static void take_rep(const rsm_vmsg_t *m)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    void *p = NULL;
    if (opal_hash_table_get_value_uint64(&vs.by_name, m->from, &p) != OPAL_SUCCESS) {
        return;
    }
    mca_btl_base_endpoint_t *ep = p;
    struct rsm_vpeer *v = ep->v;
    if (v->state != VS_CONNECTING || m->conn != v->out.qp->qp_num) {
        return;                     /* a duplicate, or for an older request */
    }
    if (m->type == RSM_VMSG_REJ) {
        conn_failed(ep, "connecting", m->status == RSM_VREJ_PARAMS
                    ? "the peer runs with other btl_rsm parameters"
                    : "the peer could not register memory or create a queue pair");
        return;
    }
    int rc = rsm_vqp_connect(&vs.dev, v->out.qp, &m->addr, m->qpn, m->psn, v->out.psn);
    if (rc != 0) {
        conn_failed(ep, "moving the queue pair to ready-to-send", strerror(-rc));
        return;
    }
    unsigned rails = m->rails < v->out_rails ? m->rails : v->out_rails;
    for (unsigned r = 1; r < rails; r++) {
        const rsm_vrail_t *pr = &m->rail[r - 1];
        rc = rsm_vqp_connect(&vs.rail[r], v->out_rail[r].qp, &pr->addr, pr->qpn, pr->psn,
                             v->out_rail[r].psn);
        if (rc != 0) {
            conn_failed(ep, "moving a further rail's queue pair to ready-to-send", strerror(-rc));
            return;
        }
    }
    for (unsigned r = rails; r < v->out_rails; r++) {    /* rails the receiver has not */
        ibv_destroy_qp(v->out_rail[r].qp);
        memset(&v->out_rail[r], 0, sizeof(v->out_rail[r]));
    }
    v->out_rails = rails;
    v->out.raddr = m->raddr;
    v->out.rkey = m->rkey;
    v->out.peer_qpn = m->qpn;
    v->chunks = m->pool_chunks < v->group->made ? m->pool_chunks : v->group->made;
    for (unsigned i = 0; i < v->chunks; i++) {
        v->pool_raddr[i] = m->pool_raddr[i];
        v->pool_rkey[i] = m->pool_rkey[i];
    }
    v->state = VS_UP;
    vs.connecting--;
    c->v_connects++;
    ep->out_connected = true;
    if (rsm_ep_list_add(&c->outbound, &c->n_outbound, ep) != OPAL_SUCCESS) {
        conn_failed(ep, "connecting", "out of memory");
        return;
    }
    RSM_VERBOSE(10, "connected to %s over %s and %u further rail%s in %.1f ms", peer_str(ep),
                vs.dev.name, v->out_rails - 1, v->out_rails == 2 ? "" : "s",
                (now_ns() - v->req_first_ns) / 1e6);
    if (v->group->made > v->group->chunks) {
        if (v->chunks < v->group->made) {
            send_grow(ep);          /* the growth started after our REQ went out */
        }
        group_check_grown(v->group);
    }
    /* messages that waited for the connection go now */
    if (ep->pending_head != NULL) {
        rsm_send_pending(ep);
    }
}

typedef union {
    rsm_vmsg_t m;
    uint8_t raw[RSM_VUD_SLOT];
} rsm_vud_msg_t;

/* A handshake message as it came, checked before anything in it is used;
 * false: dropped (counted). */
static bool handshake_ok(const rsm_vud_msg_t *u, size_t len)
{
    bool req = u->m.type == RSM_VMSG_REQ || u->m.type == RSM_VMSG_GROW;
    const char *why = rsm_vmsg_check(u->raw, len, vs.my_name,
                                     (uint32_t) (req ? ack_bytes() : vs.queue_bytes),
                                     req ? 0 : (uint32_t) vs.pool_bytes);
    if (why != NULL) {
        mca_btl_rsm_component.v_bad_handshakes++;
        RSM_VERBOSE(1, "dropped a handshake message: %s", why);
        return false;
    }
    return true;
}

static void take_handshake(const rsm_vud_msg_t *u, size_t len)
{
    if (!handshake_ok(u, len)) {
        return;
    }
    switch (u->m.type) {
    case RSM_VMSG_REQ:
        accept_req(&u->m);
        break;
    case RSM_VMSG_GROW:
        take_grow(&u->m);
        break;
    case RSM_VMSG_GROWN:
        take_grown(&u->m);
        break;
    default:
        take_rep(&u->m);
    }
}

static RSM_VRARE int poll_handshakes(void)
{
    rsm_vud_msg_t u;
    size_t len = 0;
    int count = 0, rc;
    /* first what the listener kept for us, in the order it came */
    for (uint32_t i = 0; i < vs.n_deferred; i++) {
        memcpy(u.raw, vs.deferred[i].raw, vs.deferred[i].len);
        take_handshake(&u, vs.deferred[i].len);
        count++;
    }
    vs.n_deferred = 0;
    while ((rc = rsm_vud_poll(&vs.dev, u.raw, sizeof(u.raw), &len)) != 0) {
        if (rc > 0) {
            take_handshake(&u, len);
            count++;
        }
    }
    return count;
}

/* REQs are resent every btl_rsm_verbs_resend_ms (200) until answered, for
 * btl_rsm_verbs_connect_timeout_ms of time in MPI (progress runs this on every
 * call while a connection waits).
 * Time away from MPI does not count: a REQ lost just before the application
 * went off to compute must not fail the connection the moment it is back. */
static RSM_VRARE void retry_requests(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    uint64_t now = now_ns();
    for (uint32_t i = 0; i < vs.n_eps && vs.connecting > 0; i++) {
        mca_btl_base_endpoint_t *ep = vs.eps[i];
        struct rsm_vpeer *v = ep->v;
        if (v->state != VS_CONNECTING) {
            continue;
        }
        uint64_t gap = now - v->req_seen_ns;
        v->req_seen_ns = now;
        if (gap < RSM_AWAY_GAP_NS) {
            v->req_waited_ns += gap;
        }
        if (v->req_waited_ns > (uint64_t) c->verbs_connect_timeout_ms * 1000000ull) {
            char why[128];
            snprintf(why, sizeof(why), "no answer to the connection request in %u ms in MPI",
                     c->verbs_connect_timeout_ms);
            conn_failed(ep, "connecting", why);
            continue;
        }
        if (now - v->req_last_ns >= (uint64_t) c->verbs_resend_ms * 1000000ull) {
            (void) send_req(ep);
        }
    }
}

/* The device's asynchronous events: our port going down or up, a queue pair in
 * error.  A dead link does not always come back as a write completed in error:
 * in the guest, with rxe, the queue pairs of a job once stayed ready to send
 * and its ranks spun for 100 s after the link went down.  So a port that stays
 * down for longer than the RC retry budget (timeout x (retries + 1), 7.5 s by
 * default) fails every connection, with the message; one back up before that
 * costs nothing (the queue pairs' retries carry on). */
static bool qp_is(const struct ibv_qp *qp, uint32_t num)
{
    return qp != NULL && qp->qp_num == num;
}

/* A queue pair of ours on rail RAIL in error (queue pair numbers are per
 * device): its connection fails, with the message. */
static void qp_event(const rsm_vevent_t *ev, unsigned rail)
{
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        struct rsm_vpeer *v = vs.eps[i]->v;
        bool ours = rail == 0 ? qp_is(v->out.qp, ev->qp_num) || qp_is(v->in.qp, ev->qp_num)
                              : qp_is(v->out_rail[rail].qp, ev->qp_num)
                                    || qp_is(v->in_rail[rail].qp, ev->qp_num);
        if (ours) {
            conn_failed(vs.eps[i], "the device reported the queue pair in error",
                        ibv_event_type_str((enum ibv_event_type) ev->type));
        }
    }
}

/* The device lost completions or died (a completion queue overrun, a shared
 * receive queue in error, a fatal device error): every connection over it is
 * reported failed, so that nothing waits for what will not come. */
static bool device_event(const rsm_vevent_t *ev, const char *device)
{
    if (ev->type != IBV_EVENT_CQ_ERR && ev->type != IBV_EVENT_SRQ_ERR
        && ev->type != IBV_EVENT_DEVICE_FATAL) {
        return false;
    }
    const char *what = ibv_event_type_str((enum ibv_event_type) ev->type);
    RSM_VERBOSE(1, "%s reported %s", device, what);
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        const struct rsm_vpeer *v = vs.eps[i]->v;
        if (v->state == VS_CONNECTING || v->state == VS_UP || vs.eps[i]->in_connected) {
            conn_failed(vs.eps[i], "the device reported an error", what);
        }
    }
    return true;
}

static RSM_VRARE void poll_events(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    rsm_vevent_t ev;
    while (rsm_vdev_event(&vs.dev, &ev)) {
        if (device_event(&ev, vs.dev.name)) {
            continue;
        }
        if (ev.type == IBV_EVENT_PORT_ERR && ev.port == vs.dev.port) {
            if (vs.port_down_ns == 0) {
                vs.port_down_ns = now_ns();
                RSM_VERBOSE(1, "%s went down", vs.dev.name);
            }
        } else if (ev.type == IBV_EVENT_PORT_ACTIVE && ev.port == vs.dev.port) {
            if (vs.port_down_ns != 0) {
                RSM_VERBOSE(1, "%s is up again after %.1f ms", vs.dev.name,
                            (now_ns() - vs.port_down_ns) / 1e6);
                vs.port_down_ns = 0;
            }
        } else if (ev.qp_num != 0) {
            qp_event(&ev, 0);
        }
    }
    /* a further rail: its reads fail (and say so) once their retries run out */
    for (unsigned k = 1; k < vs.n_rails; k++) {
        while (rsm_vdev_event(&vs.rail[k], &ev)) {
            if (device_event(&ev, vs.rail[k].name)) {
                continue;
            }
            if (ev.type == IBV_EVENT_PORT_ERR || ev.type == IBV_EVENT_PORT_ACTIVE) {
                RSM_VERBOSE(1, "%s (rail %u) is %s", vs.rail[k].name, k,
                            ev.type == IBV_EVENT_PORT_ERR ? "down" : "up");
            } else if (ev.qp_num != 0) {
                qp_event(&ev, k);
            }
        }
    }
    if (vs.port_down_ns == 0) {
        return;
    }
    uint64_t budget = (4096ull << c->verbs_timeout) * (c->verbs_retry_count + 1);
    if (c->verbs_timeout == 0 || budget > (uint64_t) c->verbs_connect_timeout_ms * 1000000ull) {
        budget = (uint64_t) c->verbs_connect_timeout_ms * 1000000ull;
    }
    uint64_t down = now_ns() - vs.port_down_ns;
    if (down <= budget) {
        return;
    }
    char why[96];
    snprintf(why, sizeof(why), "the port went down %.1f s ago and is still down", down / 1e9);
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        struct rsm_vpeer *v = vs.eps[i]->v;
        if (v->state != VS_FAILED && (v->state != VS_IDLE || v->in.qp != NULL)) {
            conn_failed(vs.eps[i], "its port was down", why);
        }
    }
}

/* Progress costs the shm path nothing measurable: the completion queues are
 * polled only once a connection exists, and the handshake queue every 64th call
 * (a handshake waits at most 64 progress calls; a REQ is resent after
 * btl_rsm_verbs_resend_ms).
 * The device's asynchronous events (a port down, a queue pair in error) are read
 * every RSM_VEVENT_TICKS-th call (about a millisecond of spinning on hardware):
 * each look is a read(2), nearly always finding nothing, and at every 64th call
 * that made two system calls a round trip per rank besides the doorbell's one
 * (pml ucx makes none: an async thread watches the events).  What they report is
 * acted on after timeouts of milliseconds to seconds anyway; a queue pair in
 * error also shows as completions in error. */
#define RSM_VEVENT_TICKS 16384
static int progress_nolock(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int count = 0, done = 0;
    if (OPAL_UNLIKELY(vs.done_head != NULL)) {
        done = run_done_reads();
    }
    if (c->v_connects + c->v_accepts > 0) {
        count = poll_recv_cq();
        /* The send queues complete only what was signalled (scq_out: every
         * signal-interval-th write, the last piece of each read) and what failed.
         * While nothing signalled is out, every 16th pass is soon enough for a
         * failure; the other passes save two CQ polls, a fifth of an empty pass
         * (docs/results-2026-12-06-intel-fresh/) */
        if (vs.dev.scq_out > 0 || vs.rail_reads_out > 0 || (vs.ticks & 15) == 0) {
            (void) poll_send_cq();
        }
        if (count == 0 && vs.owed != NULL) {
            push_owed_acks();
        }
    }
    bool busy = OPAL_UNLIKELY(vs.connecting + vs.growing > 0);
    if ((++vs.ticks & (RSM_VEVENT_TICKS - 1)) == 0 || busy) {
        poll_events();
    }
    if ((vs.ticks & 63) == 0 || busy) {
        count += poll_handshakes();
        if (vs.connecting > 0) {
            retry_requests();
        }
        if (vs.growing > 0) {
            retry_grows();
        }
    }
    return (count < 0 ? 0 : count) + done;
}

/* ---- single copy between hosts ----
 *
 * ob1's RDMA get: the sender registers its buffer for remote reading and sends
 * the rkey in its RGET header; the receiver registers its own buffer and reads
 * the sender's into it with one RDMA READ, posted on its end of the sender's
 * connection to it (the queue pair that brought the header: RC queue pairs carry
 * requests both ways, so no queue pair is added and nothing per peer grows).
 * The read's completion means the bytes are in our memory; ob1 then sends its FIN
 * and the sender deregisters.  Registrations go through Open MPI's registration
 * cache (rcache grdma: reused while the memory stays mapped, dropped when it is
 * freed), so a buffer sent from again is not registered again.  Whether a message
 * goes this way is decided where the sender registers: below
 * btl_rsm_verbs_single_copy_min it refuses, and ob1 takes the pipelined two-copy
 * path through the pool. */

typedef struct rsm_vreg {
    mca_rcache_base_registration_t base;    /* first: the cache's own part */
    struct ibv_mr *mr[RSM_VRAILS_MAX];      /* one per rail: each port has its own domain */
    size_t bytes;
    struct mca_btl_base_registration_handle_t h;
} rsm_vreg_t;

_Static_assert(RSM_RAILS_MAX == RSM_VRAILS_MAX, "a handle holds a key per rail");

static int vreg_deregister(void *data, mca_rcache_base_registration_t *reg)
{
    rsm_vreg_t *r = (rsm_vreg_t *) reg;
    if (r->mr[0] != NULL) {
        mca_btl_rsm_component.v_user_registered -= r->bytes;
    }
    for (unsigned k = 0; k < RSM_VRAILS_MAX; k++) {
        if (r->mr[k] != NULL) {
            (void) ibv_dereg_mr(r->mr[k]);
            r->mr[k] = NULL;
        }
    }
    return OPAL_SUCCESS;
}

static int vreg_register(void *data, void *base, size_t size, mca_rcache_base_registration_t *reg)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    rsm_vreg_t *r = (rsm_vreg_t *) reg;
    memset(r->mr, 0, sizeof(r->mr));
    r->h = (struct mca_btl_base_registration_handle_t){.kind = RSM_REG_VERBS};
    /* every user registration allows remote reading, so the cache can hand the same
     * one to a send and to a receive: peers learn an rkey only from our RGET (or,
     * for a one-sided window, which alone allows remote writing, from osc rdma) */
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
    if (reg->access_flags & MCA_RCACHE_ACCESS_REMOTE_WRITE) {
        access |= IBV_ACCESS_REMOTE_WRITE;
    }
    for (unsigned k = 0; k < vs.n_rails; k++) {
        rsm_vdev_t *d = k == 0 ? &vs.dev : &vs.rail[k];
        r->mr[k] = ibv_reg_mr(d->pd, base, size, access);
        if (r->mr[k] == NULL) {
            vs.reg_errno = errno;
            /* what follows is the caller's to say: a message takes the two-copy
             * path, a window is not created, a one-sided buffer goes through a copy */
            RSM_VERBOSE(1, "could not register %zu bytes of a user buffer at %p with %s (%s)",
                        size, base, d->name, reg_error(errno));
            r->bytes = 0;
            (void) vreg_deregister(data, reg);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        r->h.rkey[k] = r->mr[k]->rkey;
        r->h.lkey[k] = r->mr[k]->lkey;
    }
    r->bytes = size;
    c->v_user_registered += size;
    c->v_user_registrations++;
    return OPAL_SUCCESS;
}

struct mca_btl_base_registration_handle_t *rsm_verbs_register(void *base, size_t size,
                                                              bool remote_write)
{
    if (!vs.open || vs.rcache_failed) {
        return NULL;
    }
    if (vs.rcache == NULL) {
        mca_rcache_base_resources_t res = {.cache_name = "btl_rsm_verbs", .reg_data = NULL,
                                           .sizeof_reg = sizeof(rsm_vreg_t),
                                           .register_mem = vreg_register,
                                           .deregister_mem = vreg_deregister};
        vs.rcache = mca_rcache_base_module_create("grdma", NULL, &res);
        if (vs.rcache == NULL) {
            vs.rcache_failed = true;
            RSM_VERBOSE(1, "no registration cache (rcache grdma): large messages to other hosts "
                        "take the two-copy path");
            return NULL;
        }
    }
    mca_rcache_base_registration_t *reg = NULL;
    int access = MCA_RCACHE_ACCESS_LOCAL_WRITE | MCA_RCACHE_ACCESS_REMOTE_READ;
    if (remote_write) {
        access |= MCA_RCACHE_ACCESS_REMOTE_WRITE;
    }
    if (vs.rcache->rcache_register(vs.rcache, base, size, 0, access, &reg) != OPAL_SUCCESS
        || reg == NULL) {
        return NULL;
    }
    return &((rsm_vreg_t *) reg)->h;
}

int rsm_verbs_deregister(struct mca_btl_base_registration_handle_t *handle)
{
    rsm_vreg_t *r = (rsm_vreg_t *) ((char *) handle - offsetof(rsm_vreg_t, h));
    if (vs.rcache != NULL) {
        vs.rcache->rcache_deregister(vs.rcache, &r->base);
    }
    return OPAL_SUCCESS;
}

/* Room for NWR more work requests on rail K of Q's half (RQ), waited for
 * here.  For an operation asked for inside rsm's own progress (a completion
 * callback: osc rdma's next step of an accumulate) "out of resource" would
 * not do: its caller retries around opal_progress, where rsm does nothing
 * while its progress runs, so the completions that make room would never be
 * polled.  Polled here, as sq_room does, with callbacks held back. */
static bool rail_room(rsm_vconn_t *q, rsm_vrailqp_t *rq, unsigned k, uint32_t nwr,
                      unsigned depth)
{
    uint64_t start = now_ns();
    bool room = vflush() == OPAL_SUCCESS;
    vs.in_sq_room++;
    while (room) {
        uint64_t out = k == 0 ? q->posted - q->completed + q->reads_out : rq[k].reads_out;
        if (out + nwr < depth - 1) {
            break;
        }
        if (q->ep->v->state == VS_FAILED) {
            room = false;           /* already reported */
        } else if (poll_send_cq() < 0 || now_ns() - start > 10000000000ull) {
            conn_failed(q->ep, "waiting for send queue room",
                        "no send completion for 10 s, or the completion queue failed");
            room = false;
        }
    }
    vs.in_sq_room--;
    return room;
}

/* One RDMA read or write of SIZE bytes between LOCAL_ADDRESS and the peer's
 * REMOTE_ADDRESS on Q, in one piece per rail up to RAILS: on the rails of the
 * sender's connection for ob1's single-copy reads, of our own connection for
 * one-sided reads and writes.  LKEYS: the local buffer's keys per rail (NULL: a
 * write small enough to go inline, which needs none); *TMP: a registration made
 * for this operation alone.  Once any piece is posted the operation owns it
 * (*TMP becomes NULL) and releases it when its last posted piece completes, also
 * after a failure: pieces of earlier rails may still be in flight then.  What is
 * left in *TMP the caller releases.  ONESIDED: osc rdma's (inside rsm's progress
 * it waits for send-queue room: rail_room); else ob1's: a read refused for room
 * is not asked again (4.1's ob1 has rdma_retries_limit fixed at 0), ob1 has the
 * sender send that region instead, by two copies: correct, slower, and only with
 * a send queue of btl_rsm_verbs_sq_depth work requests full. */
static int rdma_nolock(mca_btl_base_endpoint_t *ep, rsm_vconn_t *q, unsigned rails, bool write,
                       void *local_address, const uint32_t *lkeys, uint64_t remote_address,
                       const struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t **tmp, void **bounce,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata,
                       bool onesided)
{
    enum { PIECE = 1u << 30 };      /* well inside any port's largest message */
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct rsm_vpeer *v = ep->v;
    rsm_vrailqp_t *rq = half_rails(v, q);
    /* one piece per rail (seed 000, 3.3), whole pages but the last */
    size_t share = (size / rails + RSM_PAGE - 1) & ~(size_t) (RSM_PAGE - 1), left = size;
    size_t len_of[RSM_VRAILS_MAX];
    uint32_t nwr_of[RSM_VRAILS_MAX] = {0};
    for (unsigned k = 0; k < rails; k++) {
        len_of[k] = k + 1 == rails || share > left ? left : share;
        left -= len_of[k];
        nwr_of[k] = (uint32_t) ((len_of[k] + PIECE - 1) / PIECE);
        if (k == 0 && nwr_of[0] == 0) {
            nwr_of[0] = 1;          /* a read of nothing still completes */
        }
        uint64_t out = k == 0 ? q->posted - q->completed + q->reads_out : rq[k].reads_out;
        unsigned depth = k == 0 ? vs.dev.sq_depth : vs.rail[k].sq_depth;
        if (nwr_of[k] > 0 && out + nwr_of[k] >= depth - 1
            && !(onesided && mca_btl_rsm_component.in_progress
                 && rail_room(q, rq, k, nwr_of[k], depth))) {
            return OPAL_ERR_OUT_OF_RESOURCE;    /* osc rdma retries it; ob1 falls back (above) */
        }
        rsm_vdev_t *d = k == 0 ? &vs.dev : &vs.rail[k];     /* its last piece is signalled */
        if (nwr_of[k] > 0 && d->scq_out + 1 > RSM_VSCQ_ENTRIES
            && !(onesided && mca_btl_rsm_component.in_progress
                 && cq_room(d, 1, ep) == OPAL_SUCCESS)) {
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
    }
    rsm_vread_t *r = vs.free_reads;
    if (r != NULL) {
        vs.free_reads = r->next;
    } else if ((r = calloc(1, sizeof(*r))) != NULL) {
        r->all_next = vs.all_reads;
        vs.all_reads = r;
    } else {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    r->q = q;
    r->ep = ep;
    r->local_address = local_address;
    r->local_handle = local_handle;
    r->tmp = tmp != NULL ? *tmp : NULL;
    r->bounce = bounce != NULL ? *bounce : NULL;
    r->bounce_len = size;
    r->bounce_back = !write;
    char *from = r->bounce != NULL ? r->bounce : local_address;  /* what the device reads or writes */
    r->cbfunc = cbfunc;
    r->cbcontext = cbcontext;
    r->cbdata = cbdata;
    memcpy(r->nwr, nwr_of, sizeof(r->nwr));
    r->parts = 0;
    r->status = IBV_WC_SUCCESS;
    size_t off = 0;
    for (unsigned k = 0; k < rails && nwr_of[k] > 0; k++) {
        struct ibv_qp *qp = k == 0 ? q->qp : rq[k].qp;
        size_t end = off + len_of[k];
        for (uint32_t w = 0; w < nwr_of[k]; w++) {
            size_t len = end - off < PIECE ? end - off : PIECE;
            struct ibv_sge sge = {.addr = (uintptr_t) from + off, .length = (uint32_t) len,
                                  .lkey = lkeys != NULL ? lkeys[k] : 0};
            struct ibv_send_wr wr = {.wr_id = k == 0 ? (uintptr_t) q : (uintptr_t) r | k << 1,
                                     .sg_list = &sge, .num_sge = 1,
                                     .opcode = write ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ}, *bad;
            wr.wr.rdma.remote_addr = remote_address + off;
            wr.wr.rdma.rkey = remote_handle->rkey[k];
            if (lkeys == NULL) {
                wr.send_flags = IBV_SEND_INLINE;    /* copied at posting: no key */
            }
            if (w + 1 == nwr_of[k]) {
                /* only the last is signalled: the send queue completes in order */
                wr.wr_id = (uintptr_t) r | k << 1 | 1;
                wr.send_flags |= IBV_SEND_SIGNALED;
            }
            int rc = ibv_post_send(qp, &wr, &bad);
            if (OPAL_LIKELY(rc == 0) && (wr.send_flags & IBV_SEND_SIGNALED)) {
                (k == 0 ? &vs.dev : &vs.rail[k])->scq_out++;
            }
            if (OPAL_UNLIKELY(rc != 0)) {
                /* the pieces already posted complete (or flush) later; nobody waits for them */
                r->cbfunc = NULL;
                if (k == 0) {
                    q->reads_out += w;
                } else {
                    rq[k].reads_out += w;
                    vs.rail_reads_out += w;
                }
                if (r->parts == 0) {
                    r->tmp = NULL;  /* nothing posted: the caller releases them */
                    r->bounce = NULL;
                    r->next = vs.free_reads;
                    vs.free_reads = r;
                } else {
                    if (tmp != NULL) {
                        *tmp = NULL;    /* released when the pieces posted complete */
                    }
                    if (bounce != NULL) {
                        *bounce = NULL;
                    }
                }
                conn_failed(ep, write ? "posting an RDMA write (one-sided)"
                                      : "posting an RDMA read", strerror(rc));
                return OPAL_ERROR;
            }
            off += len;
        }
        if (k == 0) {
            q->reads_out += nwr_of[0];
        } else {
            rq[k].reads_out += nwr_of[k];
            vs.rail_reads_out += nwr_of[k];
            if (write) {
                c->rma_rail_put_bytes += len_of[k];
            } else {
                c->v_rail_read_bytes += len_of[k];
            }
        }
        r->parts++;
    }
    if (tmp != NULL) {
        *tmp = NULL;                /* read_finish releases it */
    }
    if (bounce != NULL) {
        *bounce = NULL;
    }
    return OPAL_SUCCESS;
}

/* The keys of the local buffer of a one-sided operation: osc rdma registers
 * none (btl_put/get_local_registration_threshold, btl_rsm_component.c), so
 * register it now (the cache makes that a lookup for a buffer used before),
 * unless a write is small enough to go inline.  *TMP: what to release at the end.
 * A buffer the device cannot register (read-only memory such as a const array:
 * RDMA registers for local writing too; a locked-memory limit the cache could
 * not evict its way under) goes through a copy that it can (*BOUNCE): osc rdma
 * 4.1 asks again for ever after any error, so an error would be a hang.  Only
 * when not even that copy can be registered does the job end, saying why. */
static int onesided_local(mca_btl_base_endpoint_t *ep, void *local_address, size_t size,
                          bool write, struct mca_btl_base_registration_handle_t *local_handle,
                          const uint32_t **lkeys, struct mca_btl_base_registration_handle_t **tmp,
                          void **bounce)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    *tmp = NULL;
    *lkeys = NULL;
    *bounce = NULL;
    if (local_handle != NULL
        && (local_handle->kind == RSM_REG_VERBS || local_handle->kind == RSM_REG_WINDOW)) {
        *lkeys = local_handle->lkey;    /* ob1's, or a window's (rsm_register_mem) */
        return OPAL_SUCCESS;
    }
    if (write && size <= vs.dev.max_inline) {
        return OPAL_SUCCESS;
    }
    vs.reg_errno = 0;
    if ((*tmp = rsm_verbs_register(local_address, size, false)) != NULL) {
        *lkeys = (*tmp)->lkey;
        return OPAL_SUCCESS;
    }
    int why = vs.reg_errno;
    void *copy = NULL;
    if (!vs.rcache_failed && posix_memalign(&copy, RSM_PAGE, size > 0 ? size : 1) == 0) {
        if (write) {
            memcpy(copy, local_address, size);
        }
        *tmp = rsm_verbs_register(copy, size, false);
    }
    if (*tmp != NULL) {
        if (c->rma_bounced++ == 0) {
            RSM_VERBOSE(1, "could not register %zu bytes at %p with %s for a one-sided %s (%s): "
                        "such buffers go through a copy", size, local_address, vs.dev.name,
                        write ? "put" : "get", why != 0 ? strerror(why) : "unknown");
        }
        *lkeys = (*tmp)->lkey;
        *bounce = copy;
        return OPAL_SUCCESS;
    }
    free(copy);
    opal_show_help("help-btl-rsm.txt", "onesided-register-failed", true,
                   opal_process_info.nodename, size, local_address, write ? "put" : "get",
                   vs.dev.name,
                   vs.rcache_failed ? "Open MPI's registration cache (rcache grdma) could not "
                                      "be made"
                   : vs.reg_errno != 0 ? reg_error(vs.reg_errno) : "unknown");
    rsm_fatal(ep, "btl rsm: could not register %zu bytes for a one-sided %s with %s, nor a copy "
              "of them", size, write ? "put" : "get", vs.dev.name);
    return OPAL_ERROR;
}

/* A one-sided operation goes on our own connection to the target (made now if
 * need be: osc rdma retries while it is made), the queue pair that also carries
 * the atomics' requests, so a put and an atomic sent after it arrive in order
 * (the further pieces of a striped put excepted: they go on other rails). */
static rsm_vconn_t *onesided_conn(mca_btl_base_endpoint_t *ep, int *rc)
{
    struct rsm_vpeer *v = ep->v;
    if (v != NULL && v->state == VS_UP) {
        return &v->out;
    }
    *rc = v == NULL ? OPAL_ERR_UNREACH : connect_nolock(ep);
    if (*rc == OPAL_ERR_RESOURCE_BUSY || *rc == OPAL_SUCCESS) {
        *rc = OPAL_ERR_OUT_OF_RESOURCE;
    }
    return NULL;
}

/* A one-sided write or read of SIZE bytes at the peer's REMOTE_ADDRESS (osc rdma),
 * cut over the connection's rails from btl_rsm_verbs_stripe_min on, as ob1's
 * single-copy reads are: the window's handle carries a key per rail. */
static int onesided_nolock(mca_btl_base_endpoint_t *ep, bool write, void *local_address,
                           uint64_t remote_address,
                           struct mca_btl_base_registration_handle_t *local_handle,
                           struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    int rc;
    rsm_vconn_t *q = onesided_conn(ep, &rc);
    const uint32_t *lkeys;
    struct mca_btl_base_registration_handle_t *tmp;
    void *bounce;
    if (q == NULL) {
        return rc;
    }
    rc = onesided_local(ep, local_address, size, write, local_handle, &lkeys, &tmp, &bounce);
    if (rc != OPAL_SUCCESS) {
        return rc;
    }
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct rsm_vpeer *v = ep->v;
    unsigned rails = lkeys != NULL && size >= c->verbs_stripe_min && v->out_rails > 1
                   ? v->out_rails : 1;
    rc = rdma_nolock(ep, q, rails, write, local_address, lkeys, remote_address, remote_handle,
                     size, local_handle, &tmp, &bounce, cbfunc, cbcontext, cbdata, true);
    if (tmp != NULL) {
        (void) rsm_verbs_deregister(tmp);   /* not taken: nothing was posted */
    }
    free(bounce);
    if (rc == OPAL_SUCCESS && rails > 1) {
        if (write) {
            c->rma_striped_puts++;
        } else {
            c->v_striped_reads++;
        }
    }
    return rc;
}

static int get_nolock(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                      struct mca_btl_base_registration_handle_t *local_handle,
                      struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    struct rsm_vpeer *v = ep->v;
    if (v == NULL || remote_handle == NULL) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    int rc;
    if (local_handle != NULL && local_handle->kind == RSM_REG_VERBS && v->in.qp != NULL) {
        /* ob1's single copy: on the sender's connection to us, over its rails; a
         * short read takes rail 0 alone */
        unsigned rails = size >= c->verbs_stripe_min && v->in_rails > 1 ? v->in_rails : 1;
        rc = rdma_nolock(ep, &v->in, rails, false, local_address, local_handle->lkey,
                         remote_address, remote_handle, size, local_handle, NULL, NULL, cbfunc,
                         cbcontext, cbdata, false);
        if (rc == OPAL_SUCCESS) {
            c->v_reads++;
            c->v_read_bytes += size;
            c->v_striped_reads += rails > 1;
        }
        return rc;
    }
    rc = onesided_nolock(ep, false, local_address, remote_address, local_handle, remote_handle,
                         size, cbfunc, cbcontext, cbdata);   /* osc rdma's get */
    if (rc == OPAL_SUCCESS) {
        c->v_reads++;
        c->v_read_bytes += size;
    }
    return rc;
}

static int put_nolock(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                      struct mca_btl_base_registration_handle_t *local_handle,
                      struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                      mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (ep->v == NULL || remote_handle == NULL) {
        return OPAL_ERR_NOT_AVAILABLE;
    }
    int rc = onesided_nolock(ep, true, local_address, remote_address, local_handle, remote_handle,
                             size, cbfunc, cbcontext, cbdata);
    if (rc == OPAL_SUCCESS) {
        c->rma_puts++;
        c->rma_put_bytes += size;
    }
    return rc;
}

/* ---- the listener: connection requests answered while the process is away ----
 *
 * Why.  A REQ is answered by the receiver's progress, so only while the receiver
 * calls MPI.  A rank that computes (or reads its input) for longer than
 * btl_rsm_verbs_connect_timeout_ms while a peer sends to it for the first time
 * made that peer give up and the job end, though nothing was wrong: tcp's kernel
 * accepts a connection whatever its process does.
 *
 * What.  A thread that sleeps in poll(2) on the handshake queue's completion
 * channel (openib's UD connection manager waited for its handshakes the same
 * way).  At each event it looks whether progress ran during the last
 * millisecond.  If so, it leaves the queue to progress, which polls it every
 * 64th call.  If not, the process is away: once no entry point of the back
 * end is under way (listener_acquire; if one is, it looks again a millisecond
 * later, and the entry points wait while it works) it answers
 * the REQs (accept_req: register, connect, REP) and keeps other handshake
 * messages for progress (a REP may let messages go, which calls ob1: never
 * from this thread).  The queue is armed before it is polled, so a message that
 * arrives meanwhile raises the next event; one the thread leaves to a process
 * that then goes away is resent by its sender btl_rsm_verbs_resend_ms later.
 *
 * Cost.  Nothing while no handshake arrives (the thread sleeps in the kernel);
 * while it runs every entry point makes two plain stores and a load (ventry).  It
 * runs only in jobs that span hosts (or btl_rsm_verbs 2), and not at all with
 * btl_rsm_verbs_listener 0.  With 2 it takes the queue at every event, in MPI
 * or not: the two threads then meet on the handshake queue all the time, which
 * is how a handshake lost between them was found (rsm_vud_send). */

#define RSM_LISTENER_LOOK_NS 1000000

/* Did progress run in the last RSM_LISTENER_LOOK_NS? */
static bool process_in_mpi(void)
{
    uint64_t before = atomic_load_explicit(&vs.progress_calls, memory_order_relaxed);
    const struct timespec look = {.tv_sec = 0, .tv_nsec = RSM_LISTENER_LOOK_NS};
    nanosleep(&look, NULL);
    return atomic_load_explicit(&vs.progress_calls, memory_order_relaxed) != before;
}

/* With listener_acquire held: take the queue, answer REQs, keep the rest for progress. */
static void listener_pass(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    rsm_vud_msg_t u;
    size_t len = 0;
    int rc;
    while ((rc = rsm_vud_poll(&vs.dev, u.raw, sizeof(u.raw), &len)) != 0) {
        if (rc < 0 || !handshake_ok(&u, len)) {
            continue;
        }
        if (u.m.type == RSM_VMSG_REQ) {
            uint64_t accepts = c->v_accepts;
            accept_req(&u.m);
            void *ep = NULL;
            if (c->v_accepts != accepts
                && opal_hash_table_get_value_uint64(&vs.by_name, u.m.from, &ep) == OPAL_SUCCESS) {
                c->v_accepts_away++;
                RSM_VERBOSE(10, "answered %s's connection request %s", peer_str(ep),
                            c->verbs_listener == 2 ? "from the listener thread"
                            : "while this process was away from MPI");
            }
        } else if (vs.n_deferred < RSM_VDEFERRED) {
            vs.deferred[vs.n_deferred].len = sizeof(u.m);
            memcpy(vs.deferred[vs.n_deferred].raw, u.raw, sizeof(u.m));
            vs.n_deferred++;
        } else {
            RSM_VERBOSE(10, "listener: a handshake message of type %u dropped (%u kept for "
                        "progress already); its sender resends it", u.m.type, RSM_VDEFERRED);
        }
    }
}

static void *listener_main(void *arg)
{
    (void) arg;
    struct pollfd fds[2] = {{.fd = rsm_vud_event_fd(&vs.dev), .events = POLLIN},
                            {.fd = vs.stop_fd, .events = POLLIN}};
    bool waiting = false;           /* a handshake arrived and nobody has taken it yet */
    for (;;) {
        /* while one waits and an entry point kept us out, look again in 1 ms */
        int n = poll(fds, 2, waiting ? 1 : -1);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            RSM_VERBOSE(1, "listener: poll failed (%s); connection requests are answered only "
                        "while this process calls MPI", strerror(errno));
            break;
        }
        if (fds[1].revents != 0) {
            break;
        }
        if (fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) {
            RSM_VERBOSE(1, "listener: %s's completion channel failed; connection requests are "
                        "answered only while this process calls MPI", vs.dev.name);
            break;
        }
        if (n > 0 && rsm_vud_take_events(&vs.dev) > 0) {
            /* armed before the queue is polled: what arrives meanwhile raises the next event */
            (void) rsm_vud_arm(&vs.dev);
            waiting = true;
        }
        if (!waiting) {
            continue;
        }
        /* btl_rsm_verbs_listener 2: every time, a test of the shared queue */
        if (mca_btl_rsm_component.verbs_listener != 2 && process_in_mpi()) {
            waiting = false;        /* progress polls the queue */
            continue;
        }
        if (listener_acquire()) {
            listener_pass();
            listener_release();
            waiting = false;
        }
    }
    return NULL;
}

static void listener_start(void)
{
    if ((vs.stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        RSM_VERBOSE(1, "no listener thread (eventfd: %s): connection requests are answered "
                    "only while this process calls MPI", strerror(errno));
        return;
    }
    /* the barrier the entry points leave out (ventry): registered once per process */
    long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    vs.membarrier = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED)
                    && syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0)
                           == 0;
    RSM_VERBOSE(10, "listener: %s", vs.membarrier ? "entry points fence-free (membarrier)"
                                                  : "no membarrier(2): entry points fence");
    atomic_store(&vs.entry_depth, 0);
    atomic_store(&vs.listener_busy, false);
    (void) rsm_vud_arm(&vs.dev);
    vs.listening = true;            /* before the thread: entry points announce themselves */
    /* the thread takes no signals: the application's handlers run on its threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&vs.listener, NULL, listener_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        vs.listening = false;
        close(vs.stop_fd);
        RSM_VERBOSE(1, "no listener thread (%s): connection requests are answered only while "
                    "this process calls MPI", strerror(rc));
    }
}

/* Before finalize tears anything down; afterwards the entry points announce nothing. */
static void listener_stop(void)
{
    if (!vs.listening) {
        return;
    }
    uint64_t one = 1;
    if (write(vs.stop_fd, &one, sizeof(one)) != sizeof(one)) {
        RSM_VERBOSE(1, "listener: could not tell it to stop (%s)", strerror(errno));
    }
    pthread_join(vs.listener, NULL);
    close(vs.stop_fd);
    vs.listening = false;
    vs.n_deferred = 0;
}

/* ---- life cycle ---- */

static void close_devices(void)
{
    for (unsigned k = 1; k < vs.n_rails; k++) {
        rsm_vdev_close(&vs.rail[k]);
    }
    vs.n_rails = 0;
    vs.rail_reads_out = 0;
    rsm_vdev_close(&vs.dev);
}

/* "rxe0:1" or "rxe0:1 + rxe2:1" */
static const char *rails_str(void)
{
    static char buf[4 * 72];
    size_t n = (size_t) snprintf(buf, sizeof(buf), "%s", vs.dev.name);
    for (unsigned k = 1; k < vs.n_rails && n < sizeof(buf); k++) {
        n += (size_t) snprintf(buf + n, sizeof(buf) - n, " + %s", vs.rail[k].name);
    }
    return buf;
}

bool rsm_verbs_init(bool job_on_one_host)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    char err[256] = "";
    const char *why = NULL;
    if (c->verbs == 0) {
        return false;
    }
    if (rsm_vdev_open(&vs.dev, c->verbs_devices, 0, false, c->verbs_gid_index, c->verbs_sq_depth,
                      c->verbs_srq_depth, err, sizeof(err)) != 0) {
        int e = errno;
        if (e == ENOMEM || e == EPERM || e == EAGAIN) {
            /* a port, but no memory to set it up: say why (an ordinary user's
             * locked-memory limit), since the user asked for rsm */
            opal_show_help("help-btl-rsm.txt", "verbs-setup", true, opal_process_info.nodename,
                           err, reg_error(e));
            return false;
        }
        if (c->verbs == 2) {
            /* asked for RDMA to every peer: without it rsm reaches nobody
             * (every rank of the node alike: once per node, and the verbose line) */
            RSM_VERBOSE(1, "btl_rsm_verbs is 2 but no RDMA port can be used (%s): rsm "
                        "reaches no peer", err);
            xbtl_show_help_per_node("help-btl-rsm.txt", "verbs-forced-none",
                                    opal_process_info.nodename, err);
            return false;
        }
        /* no device: local peers are still served; remote ones are declined */
        RSM_VERBOSE(c->verbs_devices != NULL && c->verbs_devices[0] != '\0' ? 1 : 10,
                    "no RDMA back end: %s", err);
        return false;
    }
    /* the layout is judged only where the back end can run: a host with no RDMA
     * port says nothing about one it would never use (values out of their range
     * were refused at component init, on every host) */
    /* [k]: one queue and a pool of k chunks (stripes) of verbs_pool_size each */
    for (unsigned k = 1; why == NULL && k <= c->verbs_pool_chunks; k++) {
        if (rsm_layout_init(&c->vlayouts[k], 1, c->remote_postboxes, k, k * c->verbs_pool_size,
                            c->verbs_block, c->verbs_block, c->remote_inline_max, c->layout.max_msg,
                            &why) == 0) {
            c->vlayouts[k].pool_apart = true;
        }
    }
    if (why != NULL) {
        /* every rank of the node alike: once per node (xbtl_compat.h), and the verbose line */
        RSM_VERBOSE(1, "the RDMA back end (on %s) cannot start with the parameters given: %s",
                    vs.dev.name, why);
        xbtl_show_help_per_node("help-btl-rsm.txt", "verbs-bad-params", opal_process_info.nodename,
                                vs.dev.name, why);
        close_devices();
        return false;
    }
    c->vlayout = c->vlayouts[1];
    c->vparams = rsm_layout_fingerprint(&c->vlayout) * 31 + c->verbs_pool_chunks;
    vs.queue_bytes = c->vlayout.queues_bytes;
    vs.pool_bytes = c->vlayout.pool_bytes;
    vs.dev.timeout = (uint8_t) c->verbs_timeout;
    vs.dev.retry_cnt = (uint8_t) c->verbs_retry_count;
    /* further rails: the next active ports the device list names (never guessed:
     * an unnamed port may sit on another network than the peers' rail) */
    vs.n_rails = 1;
    unsigned want = c->verbs_rails < 1 ? 1 : c->verbs_rails > RSM_VRAILS_MAX ? RSM_VRAILS_MAX
                                                                              : c->verbs_rails;
    for (unsigned k = 1; k < want && c->verbs_devices != NULL && c->verbs_devices[0] != '\0'; k++) {
        rsm_vdev_t *d = &vs.rail[k];
        if (rsm_vdev_open(d, c->verbs_devices, k, true, c->verbs_gid_index, c->verbs_sq_depth, 0,
                          err, sizeof(err)) != 0) {
            RSM_VERBOSE(10, "rail %u: %s", k, err);
            break;
        }
        d->timeout = vs.dev.timeout;
        d->retry_cnt = vs.dev.retry_cnt;
        vs.n_rails = k + 1;
    }
    vs.my_name = name64(&opal_proc_local_get()->proc_name);
    OBJ_CONSTRUCT(&vs.by_name, opal_hash_table_t);
    OBJ_CONSTRUCT(&vs.by_qpn, opal_hash_table_t);
    opal_hash_table_init(&vs.by_name, 64);
    opal_hash_table_init(&vs.by_qpn, 64);
    srandom((unsigned) (now_ns() ^ vs.my_name));
    int rc;
    OPAL_MODEX_SEND_STRING(rc, OPAL_PMIX_GLOBAL, RSM_VMODEX_KEY, &vs.dev.self,
                           sizeof(vs.dev.self));
    if (rc != OPAL_SUCCESS) {
        close_devices();
        OBJ_DESTRUCT(&vs.by_name);
        OBJ_DESTRUCT(&vs.by_qpn);
        return false;
    }
    vs.open = true;
    if (c->verbs_listener && (c->verbs == 2 || !job_on_one_host)) {
        listener_start();
    }
    RSM_VERBOSE(10, "RDMA back end on %s (GID index %d, MTU %s, %s): %zu-byte queues, "
                "%zu-byte pools per sender and host, %u-deep send queues, %u-deep shared "
                "receive queue; %s", rails_str(), vs.dev.gid_index, rsm_vmtu_str(vs.dev.self.mtu),
                vs.dev.self.global ? "RoCE" : "InfiniBand", vs.queue_bytes, vs.pool_bytes,
                c->verbs_sq_depth, c->verbs_srq_depth,
                vs.listening ? "a listener thread answers connection requests while this "
                               "process is away from MPI"
                             : "connection requests are answered while this process calls MPI");
    return true;
}

bool rsm_verbs_ready(void)
{
    return vs.open;
}

static mca_btl_base_endpoint_t *add_proc_nolock(opal_proc_t *proc)
{
    if (!vs.open) {
        return NULL;
    }
    rsm_vaddr_t *addr = NULL;
    size_t size = 0;
    int rc;
    OPAL_MODEX_RECV_STRING(rc, RSM_VMODEX_KEY, &proc->proc_name, (void **) &addr, &size);
    if (rc != OPAL_SUCCESS || size != sizeof(*addr)) {
        free(addr);
        RSM_VERBOSE(10, "peer %s on %s: no RDMA address published: not served",
                    OPAL_NAME_PRINT(proc->proc_name),
                    proc->proc_hostname != NULL ? proc->proc_hostname : "?");
        return NULL;
    }
    mca_btl_base_endpoint_t *ep = ep_for(name64(&proc->proc_name));
    if (ep != NULL) {
        ep->proc = proc;
        ep->v->addr = *addr;
        ep->v->have_addr = true;
        RSM_VERBOSE(10, "peer %s on %s: verbs (%s)", OPAL_NAME_PRINT(proc->proc_name),
                    peer_host(ep), rails_str());
    }
    free(addr);
    return ep;
}

void rsm_verbs_finalize(void)
{
    if (!vs.open) {
        return;
    }
    listener_stop();
    vs.closing = true;
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        mca_btl_base_endpoint_t *ep = vs.eps[i];
        struct rsm_vpeer *v = ep->v;
        rsm_pvar_retire(ep);
        while (ep->pending_head != NULL) {
            mca_btl_rsm_frag_t *frag = ep->pending_head;
            ep->pending_head = frag->next;
            rsm_frag_complete(frag, OPAL_ERR_UNREACH);
        }
        rails_free(v->out_rail, &v->out_rails);
        rails_free(v->in_rail, &v->in_rails);
        conn_free(&v->out);
        conn_free(&v->in);
        pool_detach(v);
        if (v->ah != NULL) {
            ibv_destroy_ah(v->ah);
        }
        free(ep->slots);
        free(ep->stale);
        free(v);
        free(ep);
    }
    free(vs.eps);
    vs.eps = NULL;
    vs.n_eps = 0;
    vs.owed = NULL;
    for (uint32_t i = 0; i < vs.n_groups; i++) {
        rsm_vgroup_t *g = vs.groups[i];
        while (g->made > 0) {
            group_drop_chunk(g);
        }
        free(g->host);
        free(g);
    }
    free(vs.groups);
    vs.groups = NULL;
    vs.n_groups = 0;
    vs.growing = 0;
    if (vs.rcache != NULL) {
        /* before the protection domain goes: the cache deregisters what it holds */
        mca_rcache_base_module_destroy(vs.rcache);
        vs.rcache = NULL;
    }
    vs.rcache_failed = false;
    while (vs.all_reads != NULL) {
        rsm_vread_t *r = vs.all_reads;
        vs.all_reads = r->all_next;
        free(r->bounce);                /* of one still in flight */
        free(r);
    }
    vs.free_reads = NULL;
    vs.done_head = vs.done_last = NULL;     /* freed above (all_reads); nobody waits now */
    vs.in_sq_room = 0;
    OBJ_DESTRUCT(&vs.by_name);
    OBJ_DESTRUCT(&vs.by_qpn);
    close_devices();
    vs.open = vs.closing = false;
}

static void counters_nolock(uint64_t *sent_inline, uint64_t *sent_inline_bytes, uint64_t *sent_pool,
                            uint64_t *sent_pool_bytes)
{
    for (uint32_t i = 0; i < vs.n_eps; i++) {
        *sent_inline += vs.eps[i]->sent_inline;
        *sent_inline_bytes += vs.eps[i]->sent_inline_bytes;
        *sent_pool += vs.eps[i]->sent_pool;
        *sent_pool_bytes += vs.eps[i]->sent_pool_bytes;
    }
}

/* ---- entry points: each announced to the listener while it runs (ventry) ---- */

int rsm_verbs_progress(void)
{
    /* a plain store: the listener only needs to see it move */
    atomic_store_explicit(&vs.progress_calls,
                          atomic_load_explicit(&vs.progress_calls, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    ventry();
    int n = progress_nolock();
    vexit();
    return n;
}

int rsm_verbs_connect(mca_btl_base_endpoint_t *ep)
{
    ventry();
    int rc = connect_nolock(ep);
    vexit();
    return rc;
}

void rsm_verbs_post_unit(mca_btl_base_endpoint_t *ep, uint32_t seq, uint32_t k)
{
    ventry();
    post_unit_nolock(ep, seq, k);
    vexit();
}

void rsm_verbs_post_direct(mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                           const void *payload_end, const rsm_postbox_t *pb)
{
    ventry();
    post_direct_nolock(ep, run, payload_end, pb);
    vexit();
}

void rsm_verbs_post_data(mca_btl_base_endpoint_t *ep, const void *addr, size_t len)
{
    ventry();
    post_data_nolock(ep, addr, len);
    vexit();
}

void rsm_verbs_pool_full(mca_btl_base_endpoint_t *ep)
{
    ventry();
    pool_full_nolock(ep);
    vexit();
}

int rsm_verbs_get(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *local_handle,
                  struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    ventry();
    int rc = get_nolock(ep, local_address, remote_address, local_handle, remote_handle, size,
                        cbfunc, cbcontext, cbdata);
    vexit();
    return rc;
}

int rsm_verbs_put(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *local_handle,
                  struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    ventry();
    int rc = put_nolock(ep, local_address, remote_address, local_handle, remote_handle, size,
                        cbfunc, cbcontext, cbdata);
    vexit();
    return rc;
}

bool rsm_verbs_has_peers(void)
{
    return vs.open && vs.n_eps > 0;
}

mca_btl_base_endpoint_t *rsm_verbs_add_proc(opal_proc_t *proc)
{
    ventry();
    mca_btl_base_endpoint_t *ep = add_proc_nolock(proc);
    vexit();
    return ep;
}

void rsm_verbs_counters(uint64_t *sent_inline, uint64_t *sent_inline_bytes, uint64_t *sent_pool,
                        uint64_t *sent_pool_bytes)
{
    ventry();
    counters_nolock(sent_inline, sent_inline_bytes, sent_pool, sent_pool_bytes);
    vexit();
}

#else /* no libibverbs at build time: local peers only */

bool rsm_verbs_init(bool job_on_one_host)
{
    (void) job_on_one_host;
    RSM_VERBOSE(10, "built without libibverbs: no RDMA back end");
    return false;
}
bool rsm_verbs_ready(void) { return false; }
mca_btl_base_endpoint_t *rsm_verbs_add_proc(opal_proc_t *proc) { return NULL; }
int rsm_verbs_connect(mca_btl_base_endpoint_t *ep) { return OPAL_ERR_UNREACH; }
int rsm_verbs_progress(void) { return 0; }
void rsm_verbs_post_unit(mca_btl_base_endpoint_t *ep, uint32_t seq, uint32_t k) {}
void rsm_verbs_post_data(mca_btl_base_endpoint_t *ep, const void *addr, size_t len) {}
bool rsm_verbs_direct_ok(const mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                         size_t payload_offset)
{
    return false;
}
void rsm_verbs_post_direct(mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                           const void *payload_end, const rsm_postbox_t *pb) {}
void rsm_verbs_pool_full(mca_btl_base_endpoint_t *ep) {}
void rsm_verbs_finalize(void) {}
void rsm_verbs_counters(uint64_t *a, uint64_t *b, uint64_t *c, uint64_t *d) {}
struct mca_btl_base_registration_handle_t *rsm_verbs_register(void *base, size_t size,
                                                              bool remote_write)
{
    return NULL;
}
bool rsm_verbs_has_peers(void) { return false; }
int rsm_verbs_put(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *local_handle,
                  struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return OPAL_ERR_NOT_AVAILABLE;
}
int rsm_verbs_deregister(struct mca_btl_base_registration_handle_t *handle) { return OPAL_SUCCESS; }
int rsm_verbs_get(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *local_handle,
                  struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return OPAL_ERR_NOT_AVAILABLE;
}

#endif
