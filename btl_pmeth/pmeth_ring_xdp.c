/*
 * pmeth's ring I/O over AF_XDP (pmeth_ring.h, the back end behind
 * PMETH_IO_XDP).  Built only with libxdp (for its xsk ring helpers), libbpf
 * and clang (for our XDP program, pmeth_xdp_kern.c, embedded as bytes).
 *
 * Memory: one UMEM area of tx_frames + rx_frames chunks (2 or 4 KiB each).
 * Chunks [0, ntx) are send frames, [ntx, ntx + nrx) receive frames; a frame's
 * id is its chunk number.  Unlike AF_PACKET's send ring, the AF_XDP send ring
 * carries addresses, so any frame can be posted in any order: a held frame
 * never blocks the others and nothing is ever copied aside; a retransmit
 * posts the same chunk again.  Receive frames go back to the kernel through
 * the fill ring, also in any order.
 *
 * What it serves (open fails with a sentence otherwise, and the BTL falls
 * back to AF_PACKET):
 *  - one process per interface: the socket binds receive queue 0 and one XDP
 *    program can be attached per interface and mode, so a second rank of the
 *    host finds the queue or the hook taken.  Its frames still reach it: our
 *    program passes every frame not addressed to its own process id, and the
 *    other rank's AF_PACKET ring picks them up.
 *  - interfaces with a single receive queue (veth, most virtual NICs): frames
 *    hashed to another queue would miss our socket.
 *  - frames up to one chunk minus the kernel's 256-byte headroom (3840 bytes:
 *    MTU 3826; the kernel takes no larger chunk, and Debian 12's has no
 *    multi-buffer sockets).  For larger MTUs pmeth_xdp_open_small opens a
 *    receive-only socket for the frames that fit (pmeth_ring_packet.c pairs it
 *    with an AF_PACKET ring for the rest and for every send).
 * A process without the privileges (an ordinary user's job) gets its socket
 * from pmeth-helperd: the helper runs the same open with the UMEM in a memfd
 * (cfg.umem_shared) and hands over the bound socket, the memfd and the BPF
 * link (pmeth_xdp_hand_over); the job maps the UMEM and the rings and drives
 * them as its own (xdp_adopt).
 * On veth the kernel copies each frame into the UMEM (copy mode; zero copy is
 * EOPNOTSUPP there); with a zero-copy driver the bind picks zero copy itself.
 * Copy-mode sends leave through dev_direct_xmit, past the interface's qdisc
 * (like PACKET_QDISC_BYPASS): tbf shaping does not apply to them.
 */
#define _GNU_SOURCE
#include "pmeth_ring.h"

#include <errno.h>
#include <dirent.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <xdp/xsk.h>

extern const unsigned char pmeth_xdp_kern_obj[];
extern const size_t pmeth_xdp_kern_obj_len;

/* must match struct pmeth_xdp_cfg in pmeth_xdp_kern.c */
struct xdp_prog_cfg {
    uint32_t ethertype, job_key, my_id, queue, max_len;
};

#define XDP_KERNEL_HEADROOM 256u    /* XDP_PACKET_HEADROOM: before each received frame */

enum { TX_OWNED = 1, TX_IN_KERNEL = 2 };

struct pmeth_xdp {
    int ifindex;
    uint32_t queue;
    uint8_t *area;
    size_t area_len;
    uint32_t chunk;
    uint32_t ntx, nrx;
    struct xsk_umem *umem;
    struct xsk_socket *xsk;
    int fd;
    struct xsk_ring_prod fill, tx;
    struct xsk_ring_cons comp, rx;
    struct bpf_object *obj;
    int link_fd;
    uint8_t *tx_state;          /* TX_OWNED | TX_IN_KERNEL per send frame */
    uint32_t *tx_len;           /* length last posted, for a retransmit */
    uint32_t *tx_free;          /* stack of free send frames */
    uint32_t tx_nfree;
    uint32_t tx_unsent;         /* posted since the kernel last took the send ring */
    uint32_t rx_taken;          /* receive frames handed to the caller, not yet put back */
    bool zerocopy;              /* else copy mode: only sendto sends */
    bool small_only;            /* receive only, frames up to one chunk (pmeth_xdp_small) */
    bool generic_hook;          /* the program runs at the generic (skb) hook */
    int umem_fd;                /* -1, or the memfd holding the UMEM (handed over) */
    /* set up by a helper: our own mappings of its socket's rings (libxdp's
     * umem and socket objects are the helper's, so there are none here) */
    bool adopted;
    void *ring_map[4];
    size_t ring_map_len[4];
    char mode_name[80];
    struct pmeth_ring_stats st;
};

static int xfail(char *err, size_t errlen, int e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t) n < errlen && e != 0) {
        snprintf(err + n, errlen - (size_t) n, ": %s", strerror(e));
    }
    return -(e != 0 ? e : EOPNOTSUPP);
}

static uint32_t pow2_at_least(uint32_t v)
{
    uint32_t p = 1;
    while (p < v) {
        p <<= 1;
    }
    return p;
}

static int count_rx_queues(const char *ifname)
{
    char path[64 + IF_NAMESIZE];
    snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
    DIR *d = opendir(path);
    if (d == NULL) {
        return 1;       /* no sysfs: assume one */
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        n += strncmp(e->d_name, "rx-", 3) == 0;
    }
    closedir(d);
    return n > 0 ? n : 1;
}

/* libbpf talks on stderr by default; its messages are not for MPI users */
static int quiet_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void) level;
    (void) fmt;
    (void) ap;
    return 0;
}

void pmeth_xdp_close(struct pmeth_xdp *x)
{
    if (x == NULL) {
        return;
    }
    if (x->link_fd >= 0) {
        close(x->link_fd);      /* detaches our program (unless handed over: the job's copy) */
    }
    if (x->obj != NULL) {
        bpf_object__close(x->obj);
    }
    if (x->xsk != NULL) {
        xsk_socket__delete(x->xsk);
    }
    if (x->umem != NULL) {
        (void) xsk_umem__delete(x->umem);
    }
    for (int i = 0; i < 4; i++) {
        if (x->ring_map[i] != NULL) {
            munmap(x->ring_map[i], x->ring_map_len[i]);
        }
    }
    if (x->adopted && x->fd >= 0) {
        close(x->fd);
    }
    if (x->area != NULL) {
        munmap(x->area, x->area_len);
    }
    if (x->umem_fd >= 0) {
        close(x->umem_fd);
    }
    free(x->tx_state);
    free(x->tx_len);
    free(x->tx_free);
    free(x);
}

static void name_mode(struct pmeth_xdp *x, const char *whence)
{
    const char *how = x->zerocopy ? "zero copy" : "copy mode";
    const char *hook = x->generic_hook ? "generic" : "driver";
    if (x->small_only) {
        snprintf(x->mode_name, sizeof(x->mode_name), "AF_XDP to %u B (%s, %s XDP%s)",
                 x->chunk - XDP_KERNEL_HEADROOM, how, hook, whence);
    } else {
        snprintf(x->mode_name, sizeof(x->mode_name), "AF_XDP (%s, %s XDP%s)", how, hook, whence);
    }
}

/* Load our program, tell it what to take, hand it our socket, attach it. */
static int attach_program(struct pmeth_xdp *x, const struct pmeth_ring_config *cfg, char *err,
                          size_t errlen)
{
    LIBBPF_OPTS(bpf_object_open_opts, oopts, .object_name = "pmeth_xdp");
    x->obj = bpf_object__open_mem(pmeth_xdp_kern_obj, pmeth_xdp_kern_obj_len, &oopts);
    if (x->obj == NULL) {
        x->obj = NULL;
        return xfail(err, errlen, errno, "AF_XDP: opening the embedded XDP program");
    }
    /* load only the entry point this socket needs (pmeth_xdp_kern.c) */
    const char *want = x->small_only ? "pmeth_xdp_small" : "pmeth_xdp";
    struct bpf_program *p;
    bpf_object__for_each_program(p, x->obj) {
        bpf_program__set_autoload(p, strcmp(bpf_program__name(p), want) == 0);
    }
    if (bpf_object__load(x->obj) != 0) {
        int e = errno;
        return xfail(err, errlen, e, "AF_XDP: loading the XDP program%s (needs CAP_BPF and "
                     "CAP_NET_ADMIN)", x->small_only ? " for multi-buffer frames (kernel 5.18 "
                     "or later)" : "");
    }
    struct bpf_map *cfg_map = bpf_object__find_map_by_name(x->obj, "pmeth_cfg");
    struct bpf_map *xsk_map = bpf_object__find_map_by_name(x->obj, "pmeth_xsk");
    struct bpf_program *prog = bpf_object__find_program_by_name(x->obj, want);
    if (cfg_map == NULL || xsk_map == NULL || prog == NULL) {
        return xfail(err, errlen, 0, "AF_XDP: the embedded XDP program lacks its maps");
    }
    uint32_t zero = 0;
    struct xdp_prog_cfg pc = {.ethertype = cfg->ethertype, .job_key = cfg->job_key,
                              .my_id = cfg->my_id, .queue = x->queue,
                              .max_len = x->chunk - XDP_KERNEL_HEADROOM};
    int fd = xsk_socket__fd(x->xsk);
    if (bpf_map_update_elem(bpf_map__fd(cfg_map), &zero, &pc, BPF_ANY) != 0
        || bpf_map_update_elem(bpf_map__fd(xsk_map), &zero, &fd, BPF_ANY) != 0) {
        return xfail(err, errlen, errno, "AF_XDP: setting up the XDP program's maps");
    }
    /* a BPF link, not a plain attach: the program goes with the last fd,
     * also when the process is killed -- nothing stays on the interface */
    LIBBPF_OPTS(bpf_link_create_opts, lopts, .flags = 0);
    x->link_fd = bpf_link_create(bpf_program__fd(prog), x->ifindex, BPF_XDP, &lopts);
    if (x->link_fd < 0 && errno != EBUSY && errno != EEXIST) {
        lopts.flags = XDP_FLAGS_SKB_MODE;
        x->link_fd = bpf_link_create(bpf_program__fd(prog), x->ifindex, BPF_XDP, &lopts);
    }
    if (x->link_fd < 0) {
        int e = errno;
        if (e == EBUSY || e == EEXIST) {
            return xfail(err, errlen, e, "AF_XDP: %s already has an XDP program (another "
                         "process of this host using AF_XDP there?)", cfg->ifname);
        }
        return xfail(err, errlen, e, "AF_XDP: attaching the XDP program to %s", cfg->ifname);
    }
    struct xdp_options opts;
    socklen_t olen = sizeof(opts);
    x->zerocopy = getsockopt(fd, SOL_XDP, XDP_OPTIONS, &opts, &olen) == 0
                  && (opts.flags & XDP_OPTIONS_ZEROCOPY);
    x->generic_hook = lopts.flags == XDP_FLAGS_SKB_MODE;
    name_mode(x, "");
    return 0;
}

/* The send frames' bookkeeping: all free, lowest id on top. */
static int tx_book_init(struct pmeth_xdp *x)
{
    x->tx_state = calloc(x->ntx + 1, 1);
    x->tx_free = malloc((x->ntx + 1) * sizeof(*x->tx_free));
    x->tx_len = calloc(x->ntx + 1, sizeof(*x->tx_len));
    if (x->tx_state == NULL || x->tx_free == NULL || x->tx_len == NULL) {
        return -ENOMEM;
    }
    for (uint32_t i = 0; i < x->ntx; i++) {
        x->tx_free[i] = x->ntx - 1 - i;
    }
    x->tx_nfree = x->ntx;
    return 0;
}

/* Map one of a helper's socket's rings (PGOFF) and describe it as libxdp does
 * its own: a producer ring's cached consumer runs one ring ahead. */
static int map_ring(struct pmeth_xdp *x, int slot, uint64_t pgoff,
                    const struct xdp_ring_offset *off, uint32_t n, size_t entry, bool producer,
                    void *ring)
{
    size_t len = off->desc + (size_t) n * entry;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, x->fd,
                   (off_t) pgoff);
    if (m == MAP_FAILED) {
        return -errno;
    }
    x->ring_map[slot] = m;
    x->ring_map_len[slot] = len;
    /* libxdp's producer and consumer rings are two structs of one layout
     * (DEFINE_XSK_RING): built as one, copied into either */
    struct xsk_ring_prod r = {.mask = n - 1, .size = n};
    r.producer = (uint32_t *) ((uint8_t *) m + off->producer);
    r.consumer = (uint32_t *) ((uint8_t *) m + off->consumer);
    r.flags = (uint32_t *) ((uint8_t *) m + off->flags);
    r.ring = (uint8_t *) m + off->desc;
    r.cached_prod = __atomic_load_n(r.producer, __ATOMIC_ACQUIRE);
    r.cached_cons = __atomic_load_n(r.consumer, __ATOMIC_ACQUIRE) + (producer ? n : 0);
    _Static_assert(sizeof(struct xsk_ring_prod) == sizeof(struct xsk_ring_cons),
                   "libxdp's two ring structs differ");
    memcpy(ring, &r, sizeof(r));
    return 0;
}

/* Drive the socket a helper set up for us (cfg->xdp): its UMEM from the memfd,
 * its rings from the socket.  Sizes follow from the same configuration the
 * helper was asked with; what can be checked (the memfd's size, the socket's
 * kind) is. */
static int xdp_adopt(const struct pmeth_ring_config *cfg, struct pmeth_xdp *x, char *err,
                     size_t errlen)
{
    const struct pmeth_xdp_handover *h = cfg->xdp;
    x->adopted = true;
    x->fd = h->xsk_fd;
    x->umem_fd = h->umem_fd;
    x->link_fd = h->link_fd;
    x->chunk = h->chunk;
    x->generic_hook = h->generic_hook;
    int domain = 0;
    socklen_t dlen = sizeof(domain);
    if (getsockopt(x->fd, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) != 0 || domain != AF_XDP) {
        return xfail(err, errlen, 0, "AF_XDP: the helper's descriptor is not an AF_XDP socket");
    }
    if ((x->chunk != 2048 && x->chunk != 4096) || (x->small_only && x->chunk != 4096)
        || (!x->small_only && cfg->frame_size + XDP_KERNEL_HEADROOM > x->chunk)) {
        return xfail(err, errlen, 0, "AF_XDP: the helper's chunks (%u bytes) do not fit frames "
                     "of %u", x->chunk, cfg->frame_size);
    }
    x->area_len = (size_t) (x->ntx + x->nrx) * x->chunk;
    struct stat st;
    if (fstat(x->umem_fd, &st) != 0 || (uint64_t) st.st_size != (uint64_t) x->area_len) {
        return xfail(err, errlen, 0, "AF_XDP: the helper's UMEM is not the %zu bytes asked for",
                     x->area_len);
    }
    x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                   x->umem_fd, 0);
    if (x->area == MAP_FAILED) {
        x->area = NULL;
        return xfail(err, errlen, errno, "AF_XDP: mapping the helper's UMEM");
    }
    struct xdp_mmap_offsets off;
    socklen_t olen = sizeof(off);
    if (getsockopt(x->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &olen) != 0) {
        return xfail(err, errlen, errno, "AF_XDP: the helper's socket's ring offsets");
    }
    int rc = map_ring(x, 0, XDP_UMEM_PGOFF_FILL_RING, &off.fr, x->nrx, sizeof(uint64_t), true,
                      &x->fill);
    if (rc == 0) {
        rc = map_ring(x, 1, XDP_UMEM_PGOFF_COMPLETION_RING, &off.cr, x->ntx ? x->ntx : 8,
                      sizeof(uint64_t), false, &x->comp);
    }
    if (rc == 0) {
        rc = map_ring(x, 2, XDP_PGOFF_RX_RING, &off.rx, x->nrx, sizeof(struct xdp_desc), false,
                      &x->rx);
    }
    if (rc == 0 && x->ntx > 0) {
        rc = map_ring(x, 3, XDP_PGOFF_TX_RING, &off.tx, x->ntx, sizeof(struct xdp_desc), true,
                      &x->tx);
    }
    if (rc != 0) {
        return xfail(err, errlen, -rc, "AF_XDP: mapping the helper's socket's rings (not the "
                     "sizes it was asked for?)");
    }
    struct xdp_options opts;
    olen = sizeof(opts);
    x->zerocopy = getsockopt(x->fd, SOL_XDP, XDP_OPTIONS, &opts, &olen) == 0
                  && (opts.flags & XDP_OPTIONS_ZEROCOPY);
    name_mode(x, ", from the pmeth helper");
    return 0;
}

/* The UMEM: private memory, or a sealed memfd when it is to be handed over. */
static int map_umem(const struct pmeth_ring_config *cfg, struct pmeth_xdp *x, char *err,
                    size_t errlen)
{
    int fd = -1, flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE;
    if (cfg->umem_shared) {
        x->umem_fd = memfd_create("pmeth-umem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (x->umem_fd < 0 || ftruncate(x->umem_fd, (off_t) x->area_len) != 0
            || fcntl(x->umem_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
            return xfail(err, errlen, errno, "AF_XDP: a memfd of %zu bytes for the UMEM",
                         x->area_len);
        }
        fd = x->umem_fd;
        flags = MAP_SHARED | MAP_POPULATE;
    }
    x->area = mmap(NULL, x->area_len, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (x->area == MAP_FAILED) {
        x->area = NULL;
        return xfail(err, errlen, errno, "AF_XDP: UMEM of %zu bytes", x->area_len);
    }
    return 0;
}

static int xdp_open(const struct pmeth_ring_config *cfg, bool small_only, struct pmeth_xdp **out,
                    char *err, size_t errlen)
{
    *out = NULL;
    if (cfg->fd >= 0 && !small_only && cfg->xdp == NULL) {
        return xfail(err, errlen, 0, "AF_XDP cannot use an AF_PACKET socket opened by a helper");
    }
    struct pmeth_xdp *x = calloc(1, sizeof(*x));
    if (x == NULL) {
        if (cfg->xdp != NULL) {
            close(cfg->xdp->xsk_fd);
            close(cfg->xdp->umem_fd);
            close(cfg->xdp->link_fd);
        }
        return xfail(err, errlen, ENOMEM, "AF_XDP");
    }
    x->link_fd = -1;
    x->umem_fd = -1;
    x->fd = -1;
    x->queue = 0;
    x->small_only = small_only;
    /* a receive-only socket has no send frames (and no send ring) */
    x->ntx = small_only ? 0 : pow2_at_least(cfg->tx_frames < 8 ? 8 : cfg->tx_frames);
    x->nrx = pow2_at_least(cfg->rx_frames < 8 ? 8 : cfg->rx_frames);
    libbpf_print_fn_t old_print = libbpf_set_print(quiet_libbpf);
    int rc, nq;
    if (tx_book_init(x) != 0) {
        rc = xfail(err, errlen, ENOMEM, "AF_XDP bookkeeping");
        goto error;
    }
    if (cfg->xdp != NULL) {
        rc = xdp_adopt(cfg, x, err, errlen);
        if (rc != 0) {
            goto error;
        }
        libbpf_set_print(old_print);
        *out = x;
        return 0;
    }
    x->ifindex = (int) if_nametoindex(cfg->ifname);
    if (x->ifindex == 0) {
        rc = xfail(err, errlen, errno, "%s", cfg->ifname);
        goto error;
    }
    if ((nq = count_rx_queues(cfg->ifname)) > 1) {
        rc = xfail(err, errlen, 0, "AF_XDP: %s has %d receive queues and pmeth binds one "
                   "(frames hashed elsewhere would be missed)", cfg->ifname, nq);
        goto error;
    }
    if (cfg->frame_size + XDP_KERNEL_HEADROOM <= 2048 && !small_only) {
        x->chunk = 2048;
    } else if (cfg->frame_size + XDP_KERNEL_HEADROOM <= 4096 || small_only) {
        x->chunk = 4096;
    } else {
        rc = xfail(err, errlen, 0, "AF_XDP takes frames of up to %u bytes (one 4 KiB chunk "
                   "without multi-buffer); %s needs %u", 4096 - XDP_KERNEL_HEADROOM,
                   cfg->ifname, cfg->frame_size);
        goto error;
    }
    x->area_len = (size_t) (x->ntx + x->nrx) * x->chunk;
    rc = map_umem(cfg, x, err, errlen);
    if (rc != 0) {
        goto error;
    }
    struct xsk_umem_config ucfg = {.fill_size = x->nrx, .comp_size = x->ntx ? x->ntx : 8,
                                   .frame_size = x->chunk, .frame_headroom = 0, .flags = 0};
    rc = xsk_umem__create(&x->umem, x->area, x->area_len, &x->fill, &x->comp, &ucfg);
    if (rc != 0) {
        x->umem = NULL;
        rc = xfail(err, errlen, -rc, "AF_XDP: registering the UMEM (needs CAP_NET_RAW; "
                   "locked memory limit?)");
        goto error;
    }
    struct xsk_socket_config scfg = {.rx_size = x->nrx, .tx_size = x->ntx,
                                     .libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
                                     .xdp_flags = 0, .bind_flags = XDP_USE_NEED_WAKEUP};
    rc = xsk_socket__create(&x->xsk, cfg->ifname, x->queue, x->umem, &x->rx,
                            small_only ? NULL : &x->tx, &scfg);
    if (rc != 0) {
        x->xsk = NULL;
        rc = xfail(err, errlen, -rc, "AF_XDP: binding a socket to %s queue %u%s", cfg->ifname,
                   x->queue, -rc == EBUSY ? " (taken by another process of this host)" : "");
        goto error;
    }
    x->fd = xsk_socket__fd(x->xsk);
    /* every receive frame goes to the kernel at once */
    uint32_t idx;
    if (xsk_ring_prod__reserve(&x->fill, x->nrx, &idx) != x->nrx) {
        rc = xfail(err, errlen, 0, "AF_XDP: fill ring smaller than %u", x->nrx);
        goto error;
    }
    for (uint32_t i = 0; i < x->nrx; i++) {
        *xsk_ring_prod__fill_addr(&x->fill, idx + i) = (uint64_t) (x->ntx + i) * x->chunk;
    }
    xsk_ring_prod__submit(&x->fill, x->nrx);
    rc = attach_program(x, cfg, err, errlen);
    if (rc != 0) {
        goto error;
    }
    libbpf_set_print(old_print);
    *out = x;
    return 0;

error:
    libbpf_set_print(old_print);
    if (cfg->xdp != NULL && !x->adopted) {
        /* what was handed over is ours to close, also when nothing came of it */
        close(cfg->xdp->xsk_fd);
        close(cfg->xdp->umem_fd);
        close(cfg->xdp->link_fd);
    }
    pmeth_xdp_close(x);
    return rc;
}

int pmeth_xdp_hand_over(const struct pmeth_xdp *x, struct pmeth_xdp_handover *out)
{
    if (x->umem_fd < 0 || x->fd < 0 || x->link_fd < 0) {
        return -EINVAL;
    }
    out->chunk = x->chunk;
    out->generic_hook = x->generic_hook;
    out->xsk_fd = x->fd;
    out->umem_fd = x->umem_fd;
    out->link_fd = x->link_fd;
    return 0;
}

int pmeth_xdp_open(const struct pmeth_ring_config *cfg, struct pmeth_xdp **out, char *err,
                   size_t errlen)
{
    return xdp_open(cfg, false, out, err, errlen);
}

int pmeth_xdp_open_small(const struct pmeth_ring_config *cfg, struct pmeth_xdp **out, char *err,
                         size_t errlen)
{
    return xdp_open(cfg, true, out, err, errlen);
}

const char *pmeth_xdp_mode_name(const struct pmeth_xdp *x)
{
    return x->mode_name;
}

size_t pmeth_xdp_memory(const struct pmeth_xdp *x)
{
    /* the UMEM plus the four descriptor rings (16-byte rx/tx, 8-byte fill/completion) */
    return x->area_len + (size_t) x->nrx * (16 + 8) + (size_t) x->ntx * (16 + 8);
}

void pmeth_xdp_get_stats(struct pmeth_xdp *x, struct pmeth_ring_stats *s)
{
    struct xdp_statistics ks;
    socklen_t len = sizeof(ks);
    if (getsockopt(x->fd, SOL_XDP, XDP_STATISTICS, &ks, &len) == 0) {
        /* cumulative in the kernel, unlike PACKET_STATISTICS */
        x->st.kernel_drops = ks.rx_dropped + ks.rx_ring_full;
    }
    *s = x->st;
}

static void free_tx(struct pmeth_xdp *x, uint32_t id)
{
    x->tx_free[x->tx_nfree++] = id;
}

/* Take back the send frames the kernel has finished with. */
static void reap_completions(struct pmeth_xdp *x)
{
    uint32_t idx;
    uint32_t n = xsk_ring_cons__peek(&x->comp, x->ntx, &idx);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr = *xsk_ring_cons__comp_addr(&x->comp, idx + i);
        uint32_t id = (uint32_t) (addr / x->chunk);
        if (id >= x->ntx) {
            continue;   /* not a send frame: cannot happen */
        }
        x->tx_state[id] &= (uint8_t) ~TX_IN_KERNEL;
        if (x->tx_state[id] == 0) {
            free_tx(x, id);
        }
    }
    if (n > 0) {
        xsk_ring_cons__release(&x->comp, n);
    }
}

int pmeth_xdp_tx_get(struct pmeth_xdp *x, void **frame, uint32_t *capacity, bool ctl)
{
    uint32_t reserve = pmeth_ring_ctl_reserve(x->ntx), keep = ctl ? 0 : reserve;
    if (x->tx_nfree <= keep) {
        reap_completions(x);
        if (x->tx_nfree <= keep) {
            if (ctl) {
                x->st.tx_ctl_full++;
            } else {
                x->st.tx_full++;
            }
            return -1;
        }
    }
    if (ctl && x->tx_nfree <= reserve) {
        x->st.tx_reserve_used++;
    }
    uint32_t id = x->tx_free[--x->tx_nfree];
    x->tx_state[id] = TX_OWNED;
    *frame = x->area + (size_t) id * x->chunk;
    *capacity = x->chunk;
    return (int) id;
}

static void post(struct pmeth_xdp *x, uint32_t id, uint32_t len)
{
    uint32_t idx;
    /* at most ntx frames are in the kernel and the ring holds ntx descriptors */
    if (xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
        return;     /* cannot happen; the frame counts as lost and is resent */
    }
    struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx);
    d->addr = (uint64_t) id * x->chunk;
    d->len = len;
    d->options = 0;
    xsk_ring_prod__submit(&x->tx, 1);
    x->tx_state[id] |= TX_IN_KERNEL;
    x->tx_len[id] = len;
    x->tx_unsent++;
}

void pmeth_xdp_tx_post(struct pmeth_xdp *x, int id, uint32_t len)
{
    post(x, (uint32_t) id, len);
}

void *pmeth_xdp_tx_frame(struct pmeth_xdp *x, int id)
{
    return x->area + (size_t) id * x->chunk;
}

bool pmeth_xdp_tx_done(struct pmeth_xdp *x, int id)
{
    if (x->tx_state[id] & TX_IN_KERNEL) {
        reap_completions(x);
    }
    return !(x->tx_state[id] & TX_IN_KERNEL);
}

int pmeth_xdp_tx_repost(struct pmeth_xdp *x, int id)
{
    if (!pmeth_xdp_tx_done(x, id)) {
        return -1;
    }
    post(x, (uint32_t) id, x->tx_len[id]);    /* the same chunk again: no copy */
    return 0;
}

void pmeth_xdp_tx_put(struct pmeth_xdp *x, int id)
{
    x->tx_state[id] &= (uint8_t) ~TX_OWNED;
    if (x->tx_state[id] == 0) {
        free_tx(x, (uint32_t) id);
    }   /* else it is freed when its completion comes back */
}

int pmeth_xdp_tx_kick(struct pmeth_xdp *x)
{
    int rc = 0;
    /* In copy mode one sendto sends a bounded batch (32 frames before kernel
     * 6.17's XDP_MAX_TX_SKB_BUDGET) and answers EAGAIN while frames remain:
     * go on while it makes progress, so one kick still sends everything. */
    /* copy mode sends only from sendto, whatever the wakeup flag says; a
     * zero-copy driver is woken only when it asks */
    while (x->tx_unsent > 0 && (!x->zerocopy || xsk_ring_prod__needs_wakeup(&x->tx))) {
        x->st.kicks++;
        if (sendto(x->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0) {
            x->tx_unsent = 0;
            break;
        }
        if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) {
            rc = -errno;
            break;
        }
        /* how many descriptors the kernel has not taken yet */
        uint32_t left = x->tx.cached_prod - __atomic_load_n(x->tx.consumer, __ATOMIC_ACQUIRE);
        if (left == 0 || left >= x->tx_unsent) {
            x->tx_unsent = left;
            break;      /* no progress: the device queue is full, retry at the next kick */
        }
        x->tx_unsent = left;
    }
    if (x->zerocopy && !xsk_ring_prod__needs_wakeup(&x->tx)) {
        x->tx_unsent = 0;   /* the driver sends on its own */
    }
    reap_completions(x);
    return rc;
}

int pmeth_xdp_rx_poll(struct pmeth_xdp *x, struct pmeth_rx_frame *out, int max)
{
    uint32_t idx;
    uint32_t n = xsk_ring_cons__peek(&x->rx, (uint32_t) max, &idx);
    if (n == 0) {
        if (xsk_ring_prod__needs_wakeup(&x->fill)) {
            /* only zero-copy drivers ask; copy mode fills in the softirq */
            x->st.kicks++;
            (void) recvfrom(x->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
        }
        return 0;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct xdp_desc *d = xsk_ring_cons__rx_desc(&x->rx, idx + i);
        uint64_t chunk_no = d->addr / x->chunk;
        uint32_t off = (uint32_t) (d->addr % x->chunk), len = d->len;
        if (off > x->chunk || len > x->chunk - off) {
            len = 0;    /* the parser drops an empty frame */
        }
        out[i].id = (int) chunk_no;
        out[i].frame = x->area + d->addr;
        out[i].len = len;
        out[i].arrived_ns = 0;      /* AF_XDP stamps nothing: the reader's clock serves */
    }
    xsk_ring_cons__release(&x->rx, n);
    x->rx_taken += n;
    return (int) n;
}

uint32_t pmeth_xdp_rx_taken(const struct pmeth_xdp *x, uint32_t *slots)
{
    *slots = x->nrx;
    return x->rx_taken;
}

void pmeth_xdp_rx_put(struct pmeth_xdp *x, int id)
{
    uint32_t idx;
    /* the fill ring holds all nrx receive frames, so there is always room */
    if (xsk_ring_prod__reserve(&x->fill, 1, &idx) == 1) {
        *xsk_ring_prod__fill_addr(&x->fill, idx) = (uint64_t) id * x->chunk;
        xsk_ring_prod__submit(&x->fill, 1);
        x->rx_taken -= x->rx_taken > 0;
    }
}
