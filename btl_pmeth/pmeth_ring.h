/*
 * pmeth's ring I/O: raw Ethernet frames through rings shared with the kernel
 * (seed 001's buffer arrays), one ring pair per link.  No MPI.
 *
 * Send: the caller owns a frame from tx_get until tx_put, in any order.  It
 * builds the frame in place (Ethernet header at the pointer it got) and posts
 * it; posting is a store, tx_kick tells the kernel about everything posted
 * since the last kick with one system call.  A frame stays the caller's after
 * it went out, as the retransmit copy: tx_repost sends it again.  A lone
 * frame (a latency-bound one: nothing queued before it) may instead go out at
 * once through a second socket without rings (tx_post_now): on a host where
 * the frame is received by another namespace (veth), a frame sent from the
 * ring is copied into a fresh page at delivery, and that made a small frame's
 * half round trip ~0.4 us longer than send()'s one copy (test/pmeth/floor.sh).
 *
 * AF_PACKET's send ring is consumed by the kernel strictly in ring order, so
 * the layer hands out slots in that order, and when the slot it needs next is
 * still held (a frame nobody acknowledged for a whole lap of the ring) it
 * copies that frame aside ("shadow") and reuses the slot: the fast path copies
 * nothing, only a slow acknowledgement or a retransmit does, and both are
 * counted.  A frame given back without ever being posted is sent as a frame
 * no process accepts (destination id 0xffffffff), since the kernel cannot skip
 * a slot; callers post what they take (the BTL stages a fragment it cannot
 * send, rather than keep its slot).
 *
 * Receive: frames are handed over in place, oldest first, with no system call
 * when nothing arrived (the status words are polled).  The caller gives each
 * back with rx_put, in any order; the kernel refills slots in ring order, so a
 * frame held long (one that arrived ahead of a gap) makes the kernel drop
 * frames once it comes round to that slot: the caller moves frames it holds
 * for long out of the ring (pmeth_ring_rx_age says how long).
 *
 * Two back ends (cfg.mode): PMETH_IO_PACKET, AF_PACKET TPACKET_V2 rings on
 * any interface (pmeth_ring_packet.c), and PMETH_IO_XDP, an AF_XDP socket fed
 * by our own XDP program (pmeth_ring_xdp.c; what it serves is stated there:
 * one process per interface, one receive queue, frames up to 3840 bytes).
 * PMETH_IO_XDP with larger frames (jumbo MTUs) pairs the two: an AF_PACKET
 * ring sends every frame and receives those over 3840 bytes, and a receive-only
 * AF_XDP socket takes the rest (acks, small messages), which is where AF_XDP
 * gains most (no wake of another CPU on veth: btl_pmeth/README.md).  Frames of
 * the two kinds may then be handed over out of arrival order; the window
 * reorders them, as it does frames of several links.
 * Open fails with a sentence when a back end cannot serve, so the caller can
 * fall back to AF_PACKET.  With AF_XDP frames can be posted and given back in
 * any order, so the shadow copies and dummy frames below never happen there.
 * AF_XDP frames bypass the interface's qdisc on the way out (tbf shaping,
 * netem) and are taken before the ingress hooks on the way in (tc, nftables
 * netdev: the virtual cluster's injected loss): shaped or lossy experiments
 * must use AF_PACKET.
 *
 * Several processes of a host share an interface (and its MAC): a classic BPF
 * filter on the socket passes only frames of our EtherType, job key and
 * destination id, so each process's ring gets its own frames only.  A host's
 * own frames are not looped back to its other sockets (a socket bound to one
 * EtherType does not see outgoing traffic, and NICs do not hairpin; checked
 * with and without PACKET_QDISC_BYPASS by test/pmeth/t-pmeth-ring.sh), so ranks
 * on one host reach each other through a shared-memory BTL, not through pmeth.
 */
#ifndef PMETH_RING_H
#define PMETH_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pmeth_io_mode { PMETH_IO_PACKET, PMETH_IO_XDP };

/* Lone frames up to this many bytes go past the send ring unless told otherwise
 * (the BTL's default, and the raw floor's, which sends as the BTL does) */
#define PMETH_RING_DIRECT_MAX_DEFAULT 2048u

/* An AF_XDP socket set up by a privileged process (pmeth-helperd) for one that
 * may not: bound to its interface, its UMEM registered, our XDP program
 * attached and feeding it.  The receiving process maps the UMEM and the
 * socket's rings and drives them; it can neither rebind the socket nor resize
 * its rings (the kernel refuses both once a socket is bound).  The program
 * stays attached while the BPF link's descriptor is open: when the job ends,
 * however it ends, it is gone. */
struct pmeth_xdp_handover {
    int xsk_fd;                         /* the bound AF_XDP socket */
    int umem_fd;                        /* memfd holding the UMEM (chunks, see pmeth_ring_xdp.c) */
    int link_fd;                        /* BPF link attaching our program to the interface */
    uint32_t chunk;                     /* UMEM chunk size: 2048 or 4096 */
    bool generic_hook;                  /* attached at the generic (skb) hook, not the driver's */
};

struct pmeth_ring_config {
    const char *ifname;
    enum pmeth_io_mode mode;
    uint16_t ethertype;
    uint32_t job_key, my_id;            /* kernel-side demultiplexing */
    uint32_t frame_size;                /* largest frame, Ethernet header included (MTU + 14) */
    uint32_t tx_frames, rx_frames;
    bool qdisc_bypass;
    /* AF_PACKET: frames up to this many bytes that find nothing of the ring
     * waiting go out through a second socket (pmeth_ring_tx_post_now); 0: off.
     * The layer opens it itself, or with fd below takes direct_fd's. */
    uint32_t direct_max;                /* btl_pmeth_direct_max: PMETH_RING_DIRECT_MAX_DEFAULT */
    int fd;                             /* -1, or an AF_PACKET socket opened for us */
    /* with fd: NULL, or the send socket opened for us with it (bound with
     * protocol 0, taking nothing): the ring's from here on, closed with it or
     * when open fails */
    const int *direct_fd;
    /* PMETH_IO_XDP: NULL, or the AF_XDP socket a helper opened for us (its
     * descriptors become the ring's, closed with it or when open fails) */
    const struct pmeth_xdp_handover *xdp;
    bool umem_shared;                   /* AF_XDP: UMEM in a memfd, to be handed over */
};

struct pmeth_ring_stats {
    uint64_t kicks;                     /* system calls to send */
    uint64_t direct_sends;              /* lone frames sent through the direct socket */
    uint64_t direct_copy_bytes;         /* of them, bytes copied aside as retransmit copies */
    uint64_t tx_full;                   /* tx_get found no slot */
    uint64_t tx_reserve_used;           /* control frames that took a frame of the reserve */
    uint64_t tx_ctl_full;               /* control frames that found no frame at all */
    uint64_t shadow_copies, shadow_bytes;   /* held frames copied aside */
    uint64_t repost_copies, repost_bytes;   /* retransmits copied into a fresh slot */
    uint64_t dummies;                   /* slots given back unposted */
    uint64_t refused_by_device;         /* frames the device refused for good (MTU) */
    uint64_t resyncs;                   /* the kernel waited at a slot we had not posted */
    uint64_t kernel_drops;              /* frames the kernel dropped: ring full */
    uint64_t link_down_kicks;           /* kicks refused because the link was down */
    uint64_t rx_resyncs;                /* the receive ring's position was found out of step */
    uint64_t rx_bad_puts;               /* frames given back that were not held (a bug) */
    uint64_t rx_small_xdp;              /* frames received through the receive-only AF_XDP
                                           socket beside an AF_PACKET ring (jumbo MTU) */
};

struct pmeth_rx_frame {
    int id;
    void *frame;
    uint32_t len;
    uint64_t arrived_ns;                /* CLOCK_REALTIME when the kernel took it in (AF_PACKET
                                           stamps every frame it rings); 0: not known */
};

struct pmeth_ring;

/* 0, or -errno with a sentence in ERR (-EPERM/-EACCES: no CAP_NET_RAW). */
int pmeth_ring_open(const struct pmeth_ring_config *cfg, struct pmeth_ring **out, char *err,
                    size_t errlen);
void pmeth_ring_close(struct pmeth_ring *r);
const char *pmeth_ring_mode_name(const struct pmeth_ring *r);
void pmeth_ring_get_stats(struct pmeth_ring *r, struct pmeth_ring_stats *s);
/* frames up to this length are received through a ring of their own (AF_XDP
 * beside AF_PACKET) and may overtake larger ones; 0: one receive ring */
uint32_t pmeth_ring_small_rx_max(const struct pmeth_ring *r);
/* bytes of ring memory (both directions) */
size_t pmeth_ring_memory(const struct pmeth_ring *r);

/* Send frames kept back for control frames: data never takes the last
 * pmeth_ring_ctl_reserve(frames) of a ring's frames, so a ring whose frames
 * are all held by data waiting for acknowledgements (many peers at once) can
 * still acknowledge, probe and answer probes.  (Until 2026-12-05 it could not:
 * standalone acks were dropped, leaving the peer to its retransmit timeout,
 * and a path probe that found no frame counted as unanswered, so a healthy
 * path could be failed by load alone.)  Control frames are sent once and given
 * back once sent, so a few are enough. */
#define PMETH_RING_CTL_RESERVE_MAX 8u
static inline uint32_t pmeth_ring_ctl_reserve(uint32_t frames)
{
    uint32_t k = frames / 16;
    return k < 1 ? 1 : k > PMETH_RING_CTL_RESERVE_MAX ? PMETH_RING_CTL_RESERVE_MAX : k;
}
/* A frame for data: its id, or -1 when none is free beyond the control reserve */
int pmeth_ring_tx_get(struct pmeth_ring *r, void **frame, uint32_t *capacity);
/* A frame for a control frame (ack, probe, probe answer, path notice), which
 * is sent once and given back: may take the reserve; -1 when nothing is free */
int pmeth_ring_tx_get_ctl(struct pmeth_ring *r, void **frame, uint32_t *capacity);
void pmeth_ring_tx_post(struct pmeth_ring *r, int id, uint32_t len);
/* Post ID and, when it is a lone frame of at most cfg.direct_max bytes (nothing
 * posted before it still unsent, its slot the newest taken), send it at once
 * with one system call through a socket without rings: true, and no kick is
 * needed (KEEP: its bytes stay the caller's retransmit copy, else it is never
 * resent).  false: posted in the ring as by tx_post, for the next kick. */
bool pmeth_ring_tx_post_now(struct pmeth_ring *r, int id, uint32_t len, bool keep);
/* send frame ID again (retransmit); 0, or -1 when no slot is free now */
int pmeth_ring_tx_repost(struct pmeth_ring *r, int id);
/* where frame ID's bytes are now (it may have moved aside) */
void *pmeth_ring_tx_frame(struct pmeth_ring *r, int id);
/* the kernel no longer reads frame ID: it may be rewritten or reposted */
bool pmeth_ring_tx_done(struct pmeth_ring *r, int id);
/* the caller is done with frame ID (acknowledged, or never needed again once sent) */
void pmeth_ring_tx_put(struct pmeth_ring *r, int id);
static inline void pmeth_ring_tx_release_when_done(struct pmeth_ring *r, int id)
{
    pmeth_ring_tx_put(r, id);
}
/* one system call for everything posted */
int pmeth_ring_tx_kick(struct pmeth_ring *r);
/* frames are posted that the last kick did not get out (the link was down,
 * the device queue full, a frame still queued when it was to be resent):
 * the caller kicks again even if it posts nothing new */
bool pmeth_ring_tx_unsent(const struct pmeth_ring *r);
/* a frame the caller wanted to resend is still queued: kick again */
void pmeth_ring_tx_kick_later(struct pmeth_ring *r);

int pmeth_ring_rx_poll(struct pmeth_ring *r, struct pmeth_rx_frame *out, int max);
/* How far the reader has moved on since frame ID, against the ring's size: a
 * frame still held when the reader is a lap on blocks the kernel (it fills
 * slots strictly in order and drops everything while the next one is taken),
 * so the caller moves old held frames aside.  0 for AF_XDP (no such order). */
uint32_t pmeth_ring_rx_age(const struct pmeth_ring *r, int id, uint32_t *slots);
void pmeth_ring_rx_put(struct pmeth_ring *r, int id);
/* The kernel refills frame ID's slot in ring order (AF_PACKET), so holding it
 * long blocks the ring (pmeth_ring_rx_age); false for AF_XDP frames. */
bool pmeth_ring_rx_in_order(const struct pmeth_ring *r, int id);
/* For an AF_XDP frame ID: how many receive frames of its socket the caller
 * has taken and not put back, against how many the socket has (SLOTS).  The
 * kernel fills only frames put back, in any order, and drops what arrives
 * while it has none: a caller that holds them all (frames held ahead of a
 * gap on a small ring) would never see the frame that fills the gap, so it
 * moves its oldest held ones aside first.  0 (SLOTS 0) for AF_PACKET frames. */
uint32_t pmeth_ring_rx_taken(const struct pmeth_ring *r, int id, uint32_t *slots);

/* ---- internal: the AF_XDP back end, called by pmeth_ring_packet.c ---- */
#define PMETH_XDP_FRAME_MAX 3840u   /* one 4 KiB chunk less the kernel's headroom */
#ifdef PMETH_RING_HAVE_XDP
struct pmeth_xdp;
int pmeth_xdp_open(const struct pmeth_ring_config *cfg, struct pmeth_xdp **out, char *err,
                   size_t errlen);
/* receive only, frames that fit one chunk; larger ones pass to the kernel */
int pmeth_xdp_open_small(const struct pmeth_ring_config *cfg, struct pmeth_xdp **out, char *err,
                         size_t errlen);
void pmeth_xdp_close(struct pmeth_xdp *x);
/* the helper's side: X's descriptors and facts, to pass to another process
 * (SCM_RIGHTS copies them) before X is closed; X opened with umem_shared.
 * 0, or -EINVAL */
int pmeth_xdp_hand_over(const struct pmeth_xdp *x, struct pmeth_xdp_handover *out);
const char *pmeth_xdp_mode_name(const struct pmeth_xdp *x);
size_t pmeth_xdp_memory(const struct pmeth_xdp *x);
void pmeth_xdp_get_stats(struct pmeth_xdp *x, struct pmeth_ring_stats *s);
/* CTL: for a control frame, which may take the reserve */
int pmeth_xdp_tx_get(struct pmeth_xdp *x, void **frame, uint32_t *capacity, bool ctl);
void pmeth_xdp_tx_post(struct pmeth_xdp *x, int id, uint32_t len);
int pmeth_xdp_tx_repost(struct pmeth_xdp *x, int id);
void *pmeth_xdp_tx_frame(struct pmeth_xdp *x, int id);
bool pmeth_xdp_tx_done(struct pmeth_xdp *x, int id);
void pmeth_xdp_tx_put(struct pmeth_xdp *x, int id);
int pmeth_xdp_tx_kick(struct pmeth_xdp *x);
int pmeth_xdp_rx_poll(struct pmeth_xdp *x, struct pmeth_rx_frame *out, int max);
void pmeth_xdp_rx_put(struct pmeth_xdp *x, int id);
uint32_t pmeth_xdp_rx_taken(const struct pmeth_xdp *x, uint32_t *slots);
#endif

#endif
