/* pmeth's ring I/O over AF_PACKET TPACKET_V2 rings (pmeth_ring.h).  A ring
 * opened in PMETH_IO_XDP mode holds only an AF_XDP back end (pmeth_ring_xdp.c)
 * and every call is handed to it: one predictable branch per call.  With
 * frames too large for AF_XDP it is an AF_PACKET ring with a receive-only
 * AF_XDP socket beside it (xrx) for the frames that fit; those get ids from
 * rx_nr on. */
#define _GNU_SOURCE
#include "pmeth_filter.h"
#include "pmeth_ring.h"

#include <errno.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TX_DATA_OFF (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))
#define NO_ID (-1)

#ifdef PMETH_RING_HAVE_XDP
#define XDP_OR(r, call) do { if ((r)->xdp != NULL) { return call; } } while (0)
#define XDP_OR_VOID(r, call) do { if ((r)->xdp != NULL) { call; return; } } while (0)
#else
#define XDP_OR(r, call) do { } while (0)
#define XDP_OR_VOID(r, call) do { } while (0)
#endif

enum { ID_FREE = 0, ID_OWNED, ID_POSTED };

/* Retransmit copies of lone frames kept for reuse (direct_max bytes each);
 * those of frames in flight beyond them are freed when acknowledged. */
#define PMETH_RING_SPARES 16

struct tx_id {
    int slot;                   /* ring slot, or -1: the bytes are in shadow */
    uint8_t *shadow;
    bool spare;                 /* shadow is a direct send's copy: back to the spares */
    uint32_t len;
    uint8_t state;
    int next_free;
};

struct pmeth_ring {
#ifdef PMETH_RING_HAVE_XDP
    struct pmeth_xdp *xdp;      /* non-NULL: the AF_XDP back end does the work */
    struct pmeth_xdp *xrx;      /* non-NULL: receives our frames of up to a chunk */
    char mode_name[96];
#endif
    int fd;
    bool own_fd;
    int direct_fd;              /* no rings, receives nothing: lone frames go out through it */
    uint32_t direct_max;
    uint8_t *spares[PMETH_RING_SPARES];     /* direct_max bytes each, for the next copies */
    uint32_t nspares;
    int ifindex;
    uint16_t ethertype;
    uint8_t mac[6];
    uint8_t *map;
    size_t map_len;
    uint32_t frame_size, frames_per_block, block_size;
    /* receive ring */
    uint8_t *rx;
    uint32_t rx_nr, rx_head;
    uint8_t *rx_out;            /* slots handed to the caller and not yet given back */
    uint32_t rx_idle;           /* polls that found nothing, since the last check of the ring */
    /* send ring */
    uint8_t *tx;
    uint32_t tx_nr, tx_head;
    uint32_t tx_tail;           /* oldest slot posted and not yet seen sent */
    uint8_t *slot_pending;      /* posted, not yet seen sent */
    uint64_t stuck_since;       /* when the kernel first failed to send tx_tail */
    bool unsent;                /* posted frames the last kick did not get out: kick again
                                 * even when nothing new is posted (a link that comes back) */
    uint64_t down_retry_ns;     /* the link was down at the last kick: next try not before */
    int *slot_owner;            /* id holding each slot, NO_ID if none */
    struct tx_id *ids;
    uint32_t nids, nfree_ids;
    int free_id;
    struct pmeth_ring_stats st;
};

static inline struct tpacket2_hdr *rx_hdr(struct pmeth_ring *r, uint32_t i)
{
    return (struct tpacket2_hdr *) (r->rx + (size_t) (i / r->frames_per_block) * r->block_size
                                    + (size_t) (i % r->frames_per_block) * r->frame_size);
}

static inline struct tpacket2_hdr *tx_hdr(struct pmeth_ring *r, uint32_t i)
{
    return (struct tpacket2_hdr *) (r->tx + (size_t) (i / r->frames_per_block) * r->block_size
                                    + (size_t) (i % r->frames_per_block) * r->frame_size);
}

static inline uint32_t status_of(volatile struct tpacket2_hdr *h)
{
    return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
}

static inline void set_status(volatile struct tpacket2_hdr *h, uint32_t s)
{
    __atomic_store_n(&h->tp_status, s, __ATOMIC_RELEASE);
}

/* Forget T's shadow copy; a direct send's goes back to the spares (a few:
 * a stream of lone frames takes and frees them at its rate). */
static inline void drop_shadow(struct pmeth_ring *r, struct tx_id *t)
{
    if (t->spare && r->nspares < PMETH_RING_SPARES) {
        r->spares[r->nspares++] = t->shadow;
    } else {
        free(t->shadow);
    }
    t->shadow = NULL;
    t->spare = false;
}

/* A block layout for frames of at least NEED bytes: little waste per block. */
static void choose_geometry(struct pmeth_ring *r, uint32_t need)
{
    uint32_t fs = (need + TPACKET_ALIGNMENT - 1) & ~(uint32_t) (TPACKET_ALIGNMENT - 1);
    long page = sysconf(_SC_PAGESIZE);
    uint32_t best_k = 0;
    double best_waste = 2.0;
    for (uint32_t k = 1; k <= 32; k++) {
        uint32_t bs = k * (uint32_t) page, fpb = bs / fs;
        if (fpb == 0) {
            continue;
        }
        double waste = (double) (bs - fpb * fs) / bs;
        if (waste + 1e-9 < best_waste) {
            best_waste = waste;
            best_k = k;
        }
        if (waste < 0.02) {
            break;
        }
    }
    r->frame_size = fs;
    r->block_size = best_k * (uint32_t) page;
    r->frames_per_block = r->block_size / fs;
}

static int fail(char *err, size_t errlen, int e, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, strerror(e));
    return -e;
}

static int attach_filter(int fd, uint16_t ethertype, uint32_t key, uint32_t dst)
{
    struct sock_filter code[PMETH_FILTER_MAX_LEN];
    struct sock_fprog prog = {.len = (unsigned short) pmeth_filter_build(code, ethertype, key, dst, 0),
                              .filter = code};
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
}

static int ring_open(const struct pmeth_ring_config *cfg, struct pmeth_ring **out, char *err,
                     size_t errlen, bool *handed, bool *direct_taken);

/* The socket for lone frames (pmeth_ring_tx_post_now): bound to the interface
 * with protocol 0, so nothing is ever queued to it, and without rings, so the
 * kernel copies what it is given into an ordinary buffer.  Without it (no
 * capability for a second socket, and a helper that gave none) every frame
 * takes the ring.  HANDED: the helper's, already bound (bound again here, to
 * the same; a failure leaves it closed with the ring). */
static void open_direct(struct pmeth_ring *r, const struct pmeth_ring_config *cfg, int handed)
{
    int fd = handed >= 0 ? handed : socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = 0,
                              .sll_ifindex = r->ifindex};
    if (handed >= 0) {
        r->direct_fd = fd;      /* the ring's now, whatever follows */
    }
    if (fd < 0 || bind(fd, (struct sockaddr *) &sll, sizeof(sll)) != 0) {
        if (fd >= 0 && handed < 0) {
            close(fd);
        }
        r->direct_max = 0;
        return;
    }
    if (cfg->qdisc_bypass) {
        int v = 1;
        (void) setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &v, sizeof(v));
    }
    r->direct_fd = fd;
    r->direct_max = cfg->direct_max < r->frame_size - (uint32_t) TX_DATA_OFF
                        ? cfg->direct_max : r->frame_size - (uint32_t) TX_DATA_OFF;
}

/* What a helper handed over (cfg->xdp) is the ring layer's from here on: the
 * AF_XDP back end keeps it or closes it; closed here when open fails before
 * that back end was reached. */
int pmeth_ring_open(const struct pmeth_ring_config *cfg, struct pmeth_ring **out, char *err,
                    size_t errlen)
{
    bool handed = false, direct_taken = false;
    int rc = ring_open(cfg, out, err, errlen, &handed, &direct_taken);
    if (cfg->direct_fd != NULL && !direct_taken) {
        close(*cfg->direct_fd);     /* not reached, or not wanted (AF_XDP alone) */
    }
    if (rc != 0 && cfg->xdp != NULL && !handed) {
        close(cfg->xdp->xsk_fd);
        close(cfg->xdp->umem_fd);
        close(cfg->xdp->link_fd);
    }
    return rc;
}

static int ring_open(const struct pmeth_ring_config *cfg, struct pmeth_ring **out, char *err,
                     size_t errlen, bool *handed, bool *direct_taken)
{
    *out = NULL;
    if (cfg->mode == PMETH_IO_XDP && cfg->frame_size > PMETH_XDP_FRAME_MAX) {
#ifndef PMETH_RING_HAVE_XDP
        snprintf(err, errlen, "AF_XDP was not built in (configure found no libxdp/libbpf "
                 "or no clang)");
        return -EOPNOTSUPP;
#endif
        /* below: an AF_PACKET ring, then a receive-only AF_XDP socket beside it */
    } else if (cfg->mode == PMETH_IO_XDP) {
#ifdef PMETH_RING_HAVE_XDP
        struct pmeth_ring *xr = calloc(1, sizeof(*xr));
        if (xr == NULL) {
            return fail(err, errlen, ENOMEM, "ring");
        }
        xr->fd = -1;
        *handed = true;
        int xrc = pmeth_xdp_open(cfg, &xr->xdp, err, errlen);
        if (xrc != 0) {
            free(xr);
            return xrc;
        }
        *out = xr;
        return 0;
#else
        snprintf(err, errlen, "AF_XDP was not built in (configure found no libxdp/libbpf "
                 "or no clang)");
        return -EOPNOTSUPP;
#endif
    }
    if (cfg->tx_frames < 8 || cfg->rx_frames < 8 || cfg->frame_size < 64
        || cfg->frame_size > 65536) {
        snprintf(err, errlen, "ring sizes out of range (tx %u, rx %u frames of %u bytes)",
                 cfg->tx_frames, cfg->rx_frames, cfg->frame_size);
        return -EINVAL;
    }
    struct pmeth_ring *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return fail(err, errlen, ENOMEM, "ring");
    }
    r->fd = -1;
    r->direct_fd = -1;
    r->ethertype = cfg->ethertype;
    int rc;
    r->ifindex = (int) if_nametoindex(cfg->ifname);
    if (r->ifindex == 0) {
        rc = fail(err, errlen, errno, cfg->ifname);
        goto error;
    }
    if (cfg->fd >= 0) {
        r->fd = cfg->fd;
    } else {
        /* protocol 0: nothing is queued until the filter and rings are in place */
        r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
        if (r->fd < 0) {
            rc = fail(err, errlen, errno, "socket(AF_PACKET) (needs CAP_NET_RAW)");
            goto error;
        }
        r->own_fd = true;
    }
    int v = TPACKET_V2;
    if (setsockopt(r->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) != 0) {
        rc = fail(err, errlen, errno, "PACKET_VERSION TPACKET_V2");
        goto error;
    }
    if (attach_filter(r->fd, cfg->ethertype, cfg->job_key, cfg->my_id) != 0) {
        /* A socket opened for us (pmeth-helperd) may come with its filter
         * locked: the helper attached this very filter (plus the interface),
         * so keep it.  Anything else is an error. */
        int e = errno, locked = 0;
        socklen_t len = sizeof(locked);
        if (!(cfg->fd >= 0 && e == EPERM
              && getsockopt(r->fd, SOL_SOCKET, SO_LOCK_FILTER, &locked, &len) == 0 && locked)) {
            rc = fail(err, errlen, e, "SO_ATTACH_FILTER");
            goto error;
        }
    }
    v = 1;      /* a malformed frame in the send ring is skipped, not a stall */
    (void) setsockopt(r->fd, SOL_PACKET, PACKET_LOSS, &v, sizeof(v));
    if (cfg->qdisc_bypass) {
        (void) setsockopt(r->fd, SOL_PACKET, PACKET_QDISC_BYPASS, &v, sizeof(v));
    }
    /* room for the kernel's receive header before the frame (tp_mac) */
    choose_geometry(r, (uint32_t) TPACKET_ALIGN(TPACKET2_HDRLEN + 16) + cfg->frame_size + 16);
    uint32_t rx_blocks = (cfg->rx_frames + r->frames_per_block - 1) / r->frames_per_block;
    uint32_t tx_blocks = (cfg->tx_frames + r->frames_per_block - 1) / r->frames_per_block;
    struct tpacket_req req = {.tp_block_size = r->block_size, .tp_block_nr = rx_blocks,
                              .tp_frame_size = r->frame_size,
                              .tp_frame_nr = rx_blocks * r->frames_per_block};
    if (setsockopt(r->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)) != 0) {
        rc = fail(err, errlen, errno, "PACKET_RX_RING");
        goto error;
    }
    r->rx_nr = req.tp_frame_nr;
    r->rx_out = calloc(r->rx_nr, 1);
    if (r->rx_out == NULL) {
        rc = fail(err, errlen, ENOMEM, "ring bookkeeping");
        goto error;
    }
    req.tp_block_nr = tx_blocks;
    req.tp_frame_nr = tx_blocks * r->frames_per_block;
    if (setsockopt(r->fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) != 0) {
        rc = fail(err, errlen, errno, "PACKET_TX_RING");
        goto error;
    }
    r->tx_nr = req.tp_frame_nr;
    /* room in the send buffer for the whole send ring: the kernel stops
     * taking frames from the ring when the socket's queued bytes reach it,
     * which with the default (~200 KiB) is a few dozen jumbo frames behind a
     * shaping qdisc.  Beyond net.core.wmem_max only with CAP_NET_ADMIN. */
    int sndbuf = (int) (r->tx_nr * (uint64_t) r->frame_size);
    if (setsockopt(r->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) != 0) {
        (void) setsockopt(r->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    }
    r->map_len = (size_t) (rx_blocks + tx_blocks) * r->block_size;
    r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd, 0);
    if (r->map == MAP_FAILED) {
        r->map = NULL;
        rc = fail(err, errlen, errno, "mmap of the rings");
        goto error;
    }
    r->rx = r->map;
    r->tx = r->map + (size_t) rx_blocks * r->block_size;
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(cfg->ethertype),
                              .sll_ifindex = r->ifindex};
    if (bind(r->fd, (struct sockaddr *) &sll, sizeof(sll)) != 0) {
        rc = fail(err, errlen, errno, "bind");
        goto error;
    }
    struct sockaddr_ll me;
    socklen_t melen = sizeof(me);
    if (getsockname(r->fd, (struct sockaddr *) &me, &melen) == 0 && me.sll_halen == 6) {
        memcpy(r->mac, me.sll_addr, 6);
    }
    r->slot_owner = malloc(r->tx_nr * sizeof(*r->slot_owner));
    r->slot_pending = calloc(r->tx_nr, 1);
    r->nids = 2 * r->tx_nr;
    r->ids = calloc(r->nids, sizeof(*r->ids));
    if (r->slot_owner == NULL || r->ids == NULL || r->slot_pending == NULL) {
        rc = fail(err, errlen, ENOMEM, "ring bookkeeping");
        goto error;
    }
    for (uint32_t i = 0; i < r->tx_nr; i++) {
        r->slot_owner[i] = NO_ID;
    }
    for (uint32_t i = 0; i < r->nids; i++) {
        r->ids[i].next_free = i + 1 < r->nids ? (int) i + 1 : NO_ID;
        r->ids[i].slot = -1;
    }
    r->free_id = 0;
    r->nfree_ids = r->nids;
    if (cfg->fd < 0 ? cfg->direct_max > 0 : cfg->direct_fd != NULL) {
        *direct_taken = cfg->direct_fd != NULL;
        open_direct(r, cfg, cfg->direct_fd != NULL ? *cfg->direct_fd : -1);
    }
#ifdef PMETH_RING_HAVE_XDP
    if (cfg->mode == PMETH_IO_XDP) {
        *handed = true;
        rc = pmeth_xdp_open_small(cfg, &r->xrx, err, errlen);
        if (rc != 0) {
            goto error;
        }
        snprintf(r->mode_name, sizeof(r->mode_name), "AF_PACKET + %s",
                 pmeth_xdp_mode_name(r->xrx));
    }
#endif
    *out = r;
    return 0;

error:
    pmeth_ring_close(r);
    return rc;
}

void pmeth_ring_close(struct pmeth_ring *r)
{
    if (r == NULL) {
        return;
    }
#ifdef PMETH_RING_HAVE_XDP
    if (r->xdp != NULL) {
        pmeth_xdp_close(r->xdp);
        free(r);
        return;
    }
    pmeth_xdp_close(r->xrx);    /* first: frames come to the packet ring until the end */
#endif
    if (r->map != NULL) {
        munmap(r->map, r->map_len);
    }
    if (r->own_fd && r->fd >= 0) {
        close(r->fd);
    }
    if (r->direct_fd >= 0) {
        close(r->direct_fd);
    }
    for (uint32_t i = 0; r->ids != NULL && i < r->nids; i++) {
        free(r->ids[i].shadow);
    }
    for (uint32_t i = 0; i < r->nspares; i++) {
        free(r->spares[i]);
    }
    free(r->ids);
    free(r->slot_owner);
    free(r->slot_pending);
    free(r->rx_out);
    free(r);
}

const char *pmeth_ring_mode_name(const struct pmeth_ring *r)
{
    (void) r;
    XDP_OR(r, pmeth_xdp_mode_name(r->xdp));
#ifdef PMETH_RING_HAVE_XDP
    if (r->xrx != NULL) {
        return r->mode_name;
    }
#endif
    return "AF_PACKET";
}

uint32_t pmeth_ring_small_rx_max(const struct pmeth_ring *r)
{
#ifdef PMETH_RING_HAVE_XDP
    return r->xrx != NULL ? PMETH_XDP_FRAME_MAX : 0;
#else
    (void) r;
    return 0;
#endif
}

size_t pmeth_ring_memory(const struct pmeth_ring *r)
{
    XDP_OR(r, pmeth_xdp_memory(r->xdp));
#ifdef PMETH_RING_HAVE_XDP
    if (r->xrx != NULL) {
        return r->map_len + pmeth_xdp_memory(r->xrx);
    }
#endif
    return r->map_len;
}

void pmeth_ring_get_stats(struct pmeth_ring *r, struct pmeth_ring_stats *s)
{
    XDP_OR_VOID(r, pmeth_xdp_get_stats(r->xdp, s));
    struct tpacket_stats ks;
    socklen_t len = sizeof(ks);
    if (getsockopt(r->fd, SOL_PACKET, PACKET_STATISTICS, &ks, &len) == 0) {
        r->st.kernel_drops += ks.tp_drops;      /* the kernel resets them on read */
    }
    *s = r->st;
#ifdef PMETH_RING_HAVE_XDP
    if (r->xrx != NULL) {
        struct pmeth_ring_stats xs;
        pmeth_xdp_get_stats(r->xrx, &xs);
        s->kernel_drops += xs.kernel_drops;
        s->kicks += xs.kicks;
    }
#endif
}

static inline uint8_t *slot_data(struct pmeth_ring *r, uint32_t slot)
{
    return (uint8_t *) tx_hdr(r, slot) + TX_DATA_OFF;
}

static int id_alloc(struct pmeth_ring *r)
{
    int id = r->free_id;
    if (id != NO_ID) {
        r->free_id = r->ids[id].next_free;
        r->nfree_ids--;
    }
    return id;
}

static void id_free(struct pmeth_ring *r, int id)
{
    struct tx_id *t = &r->ids[id];
    drop_shadow(r, t);
    t->slot = -1;
    t->state = ID_FREE;
    t->next_free = r->free_id;
    r->free_id = id;
    r->nfree_ids++;
}

/* The next slot in kernel order, if the kernel is done with it; a sent frame
 * the caller still holds there (its retransmit copy) is moved aside first.  A
 * frame taken and not yet posted is being filled through a pointer into the
 * slot: that slot is not ours to give, and the kernel stops there anyway until
 * it is posted, so the ring counts as full.  (Moving it aside gave its slot to
 * the next frame while the first one's owner still wrote into it, and posted
 * an empty copy: ob1 received garbage.  Seen with btl_pmeth_tx_frames 8 under
 * a 16-frame buffer array.) */
static int take_slot(struct pmeth_ring *r)
{
    uint32_t s = r->tx_head;
    volatile struct tpacket2_hdr *h = tx_hdr(r, s);
    uint32_t st = status_of(h);
    if (st & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING)) {
        return -1;
    }
    int owner = r->slot_owner[s];
    if (owner != NO_ID && r->ids[owner].state == ID_OWNED) {
        return -1;
    }
    if (owner != NO_ID) {
        struct tx_id *t = &r->ids[owner];
        uint32_t cap = r->frame_size - (uint32_t) TX_DATA_OFF;
        t->shadow = malloc(cap);
        if (t->shadow == NULL) {
            return -1;
        }
        memcpy(t->shadow, slot_data(r, s), t->len);
        t->slot = -1;
        r->st.shadow_copies++;
        r->st.shadow_bytes += t->len;
        r->slot_owner[s] = NO_ID;
    }
    r->tx_head = (s + 1) % r->tx_nr;
    return (int) s;
}

/* A frame id; data (CTL false) leaves the control reserve free.  The reserve
 * counts ids, not slots: a slot is only ever briefly unavailable (the kernel
 * has not sent it yet, or its frame is being filled), while an id stays held
 * until the peer acknowledges its frame. */
static int tx_get(struct pmeth_ring *r, void **frame, uint32_t *capacity, bool ctl)
{
    uint32_t reserve = pmeth_ring_ctl_reserve(r->nids);
    int s = r->nfree_ids > (ctl ? 0 : reserve) ? take_slot(r) : -1;
    if (s < 0) {
        if (ctl) {
            r->st.tx_ctl_full++;
        } else {
            r->st.tx_full++;
        }
        return -1;
    }
    if (ctl && r->nfree_ids <= reserve) {
        r->st.tx_reserve_used++;
    }
    int id = id_alloc(r);
    struct tx_id *t = &r->ids[id];
    t->slot = s;
    t->len = 0;
    t->state = ID_OWNED;
    r->slot_owner[s] = id;
    *frame = slot_data(r, (uint32_t) s);
    *capacity = r->frame_size - (uint32_t) TX_DATA_OFF;
    return id;
}

int pmeth_ring_tx_get(struct pmeth_ring *r, void **frame, uint32_t *capacity)
{
    XDP_OR(r, pmeth_xdp_tx_get(r->xdp, frame, capacity, false));
    return tx_get(r, frame, capacity, false);
}

int pmeth_ring_tx_get_ctl(struct pmeth_ring *r, void **frame, uint32_t *capacity)
{
    XDP_OR(r, pmeth_xdp_tx_get(r->xdp, frame, capacity, true));
    return tx_get(r, frame, capacity, true);
}

static void write_dummy(struct pmeth_ring *r, uint8_t *f)
{
    memset(f, 0, 60);
    memcpy(f, r->mac, 6);
    memcpy(f + 6, r->mac, 6);
    f[12] = (uint8_t) (r->ethertype >> 8);
    f[13] = (uint8_t) r->ethertype;
    memset(f + 18, 0xff, 4);
}

static void post_slot(struct pmeth_ring *r, uint32_t slot, uint32_t len)
{
    volatile struct tpacket2_hdr *h = tx_hdr(r, slot);
    h->tp_len = len;
    h->tp_snaplen = len;
    r->slot_pending[slot] = 1;
    set_status(h, TP_STATUS_SEND_REQUEST);
}

void pmeth_ring_tx_post(struct pmeth_ring *r, int id, uint32_t len)
{
    XDP_OR_VOID(r, pmeth_xdp_tx_post(r->xdp, id, len));
    struct tx_id *t = &r->ids[id];
    t->len = len;
    t->state = ID_POSTED;
    if (t->slot >= 0) {
        post_slot(r, (uint32_t) t->slot, len);
    } else {
        (void) pmeth_ring_tx_repost(r, id);
    }
}

/* A lone frame goes out through the direct socket: one system call either
 * way, but a frame sent from the ring is attached to its buffer by reference,
 * and the kernel copies it into a fresh page wherever it is received on this
 * host (veth: the other namespace) before it can free the reference, while
 * one handed to send() is copied once, into the buffer it travels in.  Lone:
 * nothing of the ring is waiting to go (order on the link is kept) and ID's
 * slot is the newest taken, so it can go back; its bytes are copied aside, as
 * the retransmit copy (KEEP), after they left: a resend posts them through the
 * ring.  (A device with several send queues may still let it pass a frame
 * queued in another: the window takes frames in any order.) */
bool pmeth_ring_tx_post_now(struct pmeth_ring *r, int id, uint32_t len, bool keep)
{
    XDP_OR(r, (pmeth_xdp_tx_post(r->xdp, id, len), false));
    struct tx_id *t = &r->ids[id];
    if (r->direct_fd < 0 || len > r->direct_max || t->slot < 0 || r->unsent
        || (uint32_t) (t->slot + 1) % r->tx_nr != r->tx_head) {
        pmeth_ring_tx_post(r, id, len);
        return false;
    }
    uint32_t prev = (uint32_t) (t->slot + r->tx_nr - 1) % r->tx_nr;
    int prev_owner = r->slot_owner[prev];
    if ((status_of(tx_hdr(r, prev)) & TP_STATUS_SEND_REQUEST)
        || (prev_owner != NO_ID && r->ids[prev_owner].state == ID_OWNED)) {
        pmeth_ring_tx_post(r, id, len);     /* behind a frame not sent yet */
        return false;
    }
    uint8_t *copy = NULL;
    if (keep && (copy = r->nspares > 0 ? r->spares[--r->nspares] : malloc(r->direct_max)) == NULL) {
        pmeth_ring_tx_post(r, id, len);
        return false;
    }
    const uint8_t *bytes = slot_data(r, (uint32_t) t->slot);
    if (send(r->direct_fd, bytes, len, MSG_DONTWAIT) != (ssize_t) len) {
        /* a full queue or a link that is down: the ring's kick says which */
        if (copy != NULL) {
            r->spares[r->nspares++] = copy;
        }
        pmeth_ring_tx_post(r, id, len);
        return false;
    }
    if (keep) {
        memcpy(copy, bytes, len);
        r->st.direct_copy_bytes += len;
    }
    r->slot_owner[t->slot] = NO_ID;
    r->tx_head = (uint32_t) t->slot;
    t->slot = -1;
    t->shadow = copy;
    t->spare = keep;
    t->len = len;
    t->state = ID_POSTED;
    r->st.direct_sends++;
    return true;
}

void *pmeth_ring_tx_frame(struct pmeth_ring *r, int id)
{
    XDP_OR(r, pmeth_xdp_tx_frame(r->xdp, id));
    struct tx_id *t = &r->ids[id];
    return t->slot >= 0 ? slot_data(r, (uint32_t) t->slot) : t->shadow;
}

bool pmeth_ring_tx_done(struct pmeth_ring *r, int id)
{
    XDP_OR(r, pmeth_xdp_tx_done(r->xdp, id));
    struct tx_id *t = &r->ids[id];
    if (t->slot < 0) {
        return true;
    }
    return !(status_of(tx_hdr(r, (uint32_t) t->slot)) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING));
}

int pmeth_ring_tx_repost(struct pmeth_ring *r, int id)
{
    XDP_OR(r, pmeth_xdp_tx_repost(r->xdp, id));
    struct tx_id *t = &r->ids[id];
    if (!pmeth_ring_tx_done(r, id)) {
        r->unsent = true;       /* still queued: only a kick sends it */
        return -1;
    }
    /* the kernel has passed the old slot: copy into the slot it reads next */
    int s = take_slot(r);
    if (s < 0) {
        r->st.tx_full++;
        return -1;
    }
    const uint8_t *src = pmeth_ring_tx_frame(r, id);
    memcpy(slot_data(r, (uint32_t) s), src, t->len);
    r->st.repost_copies++;
    r->st.repost_bytes += t->len;
    if (t->slot >= 0) {
        r->slot_owner[t->slot] = NO_ID;
    }
    drop_shadow(r, t);
    t->slot = s;
    r->slot_owner[s] = id;
    post_slot(r, (uint32_t) s, t->len);
    return 0;
}

void pmeth_ring_tx_put(struct pmeth_ring *r, int id)
{
    XDP_OR_VOID(r, pmeth_xdp_tx_put(r->xdp, id));
    struct tx_id *t = &r->ids[id];
    if (t->slot >= 0) {
        r->slot_owner[t->slot] = NO_ID;
        if (t->state == ID_OWNED) {
            /* never posted: the kernel cannot skip a slot, so it carries a
             * frame that no process accepts (destination id 0xffffffff) */
            write_dummy(r, slot_data(r, (uint32_t) t->slot));
            post_slot(r, (uint32_t) t->slot, 60);
            r->st.dummies++;
        }
    }
    id_free(r, id);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* Called after a kick that left the oldest posted frame unsent.  Two cases,
 * told apart by what the kick said:
 *  - an error: the device refuses that frame (ENOBUFS from a full queue drains
 *    in microseconds; a frame over the far end's MTU, never);
 *  - no error, nothing sent: the kernel's send position is not at our oldest
 *    frame but at a slot we have not posted (seen after a link went down and
 *    up with frames queued), and it waits there.
 * After PMETH_RING_STUCK_NS the first is turned into a frame no one accepts
 * and the second is resolved by posting such frames up to where the kernel
 * waits; the frames' bytes stay with their owners, so the reliability layer
 * resends them: lost frames instead of a dead link. */
#define PMETH_RING_STUCK_NS (50ull * 1000 * 1000)
static void unstick(struct pmeth_ring *r, bool refused)
{
    while (r->tx_tail != r->tx_head && r->slot_pending[r->tx_tail]
           && !(status_of(tx_hdr(r, r->tx_tail)) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING))) {
        r->slot_pending[r->tx_tail] = 0;
        r->tx_tail = (r->tx_tail + 1) % r->tx_nr;
        r->stuck_since = 0;
    }
    uint32_t s = r->tx_tail;
    volatile struct tpacket2_hdr *h = tx_hdr(r, s);
    if (s == r->tx_head || !r->slot_pending[s] || status_of(h) != TP_STATUS_SEND_REQUEST) {
        r->stuck_since = 0;
        return;
    }
    uint64_t now = now_ns();
    if (r->stuck_since == 0) {
        r->stuck_since = now;
        return;
    }
    if (now - r->stuck_since < PMETH_RING_STUCK_NS) {
        return;
    }
    r->stuck_since = 0;
    if (!refused) {
        /* fill the free slots ahead with frames no one accepts, up to our
         * oldest: wherever the kernel waits, it comes round to it */
        int n = 0;
        for (int d; r->tx_head != r->tx_tail && (d = take_slot(r)) >= 0; n++) {
            write_dummy(r, slot_data(r, (uint32_t) d));
            post_slot(r, (uint32_t) d, 60);
        }
        r->st.resyncs++;
        r->st.dummies += (uint64_t) n;
        return;
    }
    if (h->tp_len <= 60) {
        return;
    }
    int owner = r->slot_owner[s];
    if (owner != NO_ID) {
        struct tx_id *t = &r->ids[owner];
        t->shadow = malloc(r->frame_size - (uint32_t) TX_DATA_OFF);
        if (t->shadow == NULL) {
            return;
        }
        memcpy(t->shadow, slot_data(r, s), t->len);
        t->slot = -1;
        r->slot_owner[s] = NO_ID;
    }
    write_dummy(r, slot_data(r, s));
    h->tp_len = 60;
    h->tp_snaplen = 60;
    r->st.refused_by_device++;
}

/* While a link is down, its frames wait in the ring; it is asked again this
 * often (a link that comes back is in use within this time). */
#define PMETH_RING_DOWN_RETRY_NS (200ull * 1000)

int pmeth_ring_tx_kick(struct pmeth_ring *r)
{
    XDP_OR(r, pmeth_xdp_tx_kick(r->xdp));
    r->st.kicks++;
    ssize_t n = sendto(r->fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
    int e = n < 0 ? errno : 0;
    /* a link that is down (or gone) refuses every frame alike: its frames
     * wait in the ring for it to come back, nothing is given up */
    bool link_down = e == ENETDOWN || e == ENXIO || e == ENODEV;
    r->down_retry_ns = 0;
    if (!link_down && (e != 0 || n == 0 || r->stuck_since != 0)) {
        unstick(r, e != 0);
    } else if ((r->tx_head - r->tx_tail + r->tx_nr) % r->tx_nr > r->tx_nr / 2) {
        unstick(r, false);      /* keep the tail near the head: cheap bookkeeping */
    }
    /* The kernel may also stop early without an error: it sends until the
     * socket's send buffer is full (a shaped or busy link), returns what it
     * sent and leaves the rest posted.  Then the newest posted frame is still
     * waiting, and only another kick sends it once the queue drains. */
    uint32_t newest = (r->tx_head + r->tx_nr - 1) % r->tx_nr;
    bool left = r->slot_pending[newest] && status_of(tx_hdr(r, newest)) == TP_STATUS_SEND_REQUEST;
    r->unsent = e != 0 || r->stuck_since != 0 || left;
    if (link_down) {
        r->st.link_down_kicks++;
        r->down_retry_ns = now_ns() + PMETH_RING_DOWN_RETRY_NS;
    }
    return e != 0 && e != EAGAIN && e != ENOBUFS ? -e : 0;
}

void pmeth_ring_tx_kick_later(struct pmeth_ring *r)
{
    XDP_OR_VOID(r, (void) 0);
    r->unsent = true;
}

bool pmeth_ring_tx_unsent(const struct pmeth_ring *r)
{
    XDP_OR(r, false);
    return r->unsent && (r->down_retry_ns == 0 || now_ns() >= r->down_retry_ns);
}

/* The kernel fills receive slots strictly in ring order, so the next frame is
 * always at rx_head.  Should the two ever disagree (a slot given back to the
 * kernel after it had refilled it would do it), frames would pile up further
 * on while we wait at an empty slot, and the kernel, finding the ring full,
 * would drop everything after: a dead link.  Now and then, when nothing came,
 * look for a filled slot we do not hold and continue from the oldest one. */
#define PMETH_RING_RX_CHECK_EVERY 4096

static void rx_resync(struct pmeth_ring *r)
{
    for (uint32_t k = 1; k < r->rx_nr; k++) {
        uint32_t i = (r->rx_head + k) % r->rx_nr;
        if ((status_of(rx_hdr(r, i)) & TP_STATUS_USER) && !r->rx_out[i]) {
            r->rx_head = i;
            r->st.rx_resyncs++;
            return;
        }
    }
}

int pmeth_ring_rx_poll(struct pmeth_ring *r, struct pmeth_rx_frame *out, int max)
{
    XDP_OR(r, pmeth_xdp_rx_poll(r->xdp, out, max));
    int n = 0;
#ifdef PMETH_RING_HAVE_XDP
    if (r->xrx != NULL) {
        n = pmeth_xdp_rx_poll(r->xrx, out, max);
        for (int k = 0; k < n; k++) {
            out[k].id += (int) r->rx_nr;
        }
        r->st.rx_small_xdp += (uint64_t) n;
    }
#endif
    while (n < max) {
        uint32_t i = r->rx_head;
        volatile struct tpacket2_hdr *h = rx_hdr(r, i);
        if (!(status_of(h) & TP_STATUS_USER) || r->rx_out[i]) {
            break;
        }
        uint32_t mac = h->tp_mac, snap = h->tp_snaplen;
        if (mac > r->frame_size || snap > r->frame_size - mac) {
            snap = 0;   /* cannot happen with a sane kernel; the parser drops a 0-byte frame */
        }
        r->rx_out[i] = 1;
        out[n].id = (int) i;
        out[n].frame = (uint8_t *) h + mac;
        out[n].len = snap;
        out[n].arrived_ns = (uint64_t) h->tp_sec * 1000000000ull + h->tp_nsec;
        n++;
        r->rx_head = (i + 1) % r->rx_nr;
    }
    if (n == 0 && ++r->rx_idle >= PMETH_RING_RX_CHECK_EVERY) {
        r->rx_idle = 0;
        rx_resync(r);
    }
    return n;
}

bool pmeth_ring_rx_in_order(const struct pmeth_ring *r, int id)
{
    XDP_OR(r, false);
    return id >= 0 && (uint32_t) id < r->rx_nr;
}

uint32_t pmeth_ring_rx_age(const struct pmeth_ring *r, int id, uint32_t *slots)
{
    *slots = 0;
    XDP_OR(r, 0);
    *slots = r->rx_nr;
    if ((uint32_t) id >= r->rx_nr) {
        return 0;       /* an AF_XDP frame (xrx): given back in any order */
    }
    uint32_t age = (r->rx_head + r->rx_nr - (uint32_t) id) % r->rx_nr;
    /* 0 for a frame we hold means the reader came all the way round to it (it
     * stops at a slot we hold): a whole lap, not a fresh frame */
    return age == 0 && r->rx_out[id] ? r->rx_nr : age;
}

uint32_t pmeth_ring_rx_taken(const struct pmeth_ring *r, int id, uint32_t *slots)
{
    *slots = 0;
    XDP_OR(r, pmeth_xdp_rx_taken(r->xdp, slots));
#ifdef PMETH_RING_HAVE_XDP
    if (r->xrx != NULL && id >= 0 && (uint32_t) id >= r->rx_nr) {
        return pmeth_xdp_rx_taken(r->xrx, slots);
    }
#endif
    (void) id;
    return 0;
}

void pmeth_ring_rx_put(struct pmeth_ring *r, int id)
{
    XDP_OR_VOID(r, pmeth_xdp_rx_put(r->xdp, id));
#ifdef PMETH_RING_HAVE_XDP
    if (r->xrx != NULL && id >= 0 && (uint32_t) id >= r->rx_nr) {
        pmeth_xdp_rx_put(r->xrx, id - (int) r->rx_nr);
        return;
    }
#endif
    if (id < 0 || (uint32_t) id >= r->rx_nr || !r->rx_out[id]) {
        r->st.rx_bad_puts++;    /* not ours (any more): the kernel may have refilled it */
        return;
    }
    r->rx_out[id] = 0;
    set_status(rx_hdr(r, (uint32_t) id), TP_STATUS_KERNEL);
}
