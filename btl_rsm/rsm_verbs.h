/*
 * The verbs side of rsm's RDMA-write back end, without MPI: one device port per
 * process (protection domain, completion queues, a shared receive queue), RC
 * queue pairs for half-duplex connections, and a UD queue pair that carries the
 * connection handshake after MPI_Init (seed 000, 3.3: connections are made on
 * first send; nothing per peer exists before).
 *
 * Publish rule.  The sender writes a unit (a postbox group, a pointer postbox
 * after its pool blocks) into the receiver's area with RDMA WRITE, the last
 * write of the unit WITH IMMEDIATE (the queue's new tail).  The InfiniBand
 * specification does not order the bytes of one write as they land (so a flag
 * byte written last may be seen before the data), but it does order an RC queue
 * pair's requests: when the receive completion of a WRITE WITH IMMEDIATE is
 * polled, that write and every earlier one on the queue pair are in memory.
 * The receiver therefore trusts nothing in its area beyond the tail the newest
 * completion named.  Cost: one receive work request per unit (a shared receive
 * queue, refilled in batches) and one completion queue poll per progress call
 * for all peers, instead of a flag scan of every connection's ring.
 *
 * The 1-byte acks go the other way as plain RDMA WRITEs of the receiver's ack
 * bytes into the sender's ack row; a byte cannot tear, and the sender compares
 * each with the lap it expects, so their order does not matter.
 *
 * Handshake messages and everything else a peer sends are checked here before
 * use (rsm_vmsg_check, unit-tested in test/unit/t_rsm_vmsg.c).
 */
#ifndef RSM_VERBS_H
#define RSM_VERBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RSM_VMSG_MAGIC 0x52534d56u      /* "RSMV" */
#define RSM_VMSG_VERSION 6      /* 6: GROWN names the growth it answers (asked) */

enum { RSM_VMSG_REQ = 1, RSM_VMSG_REP = 2, RSM_VMSG_REJ = 3, RSM_VMSG_GROW = 4, RSM_VMSG_GROWN = 5 };

#define RSM_VPOOL_TAG 32        /* hex digits of a pool's tag (128 random bits) */
#define RSM_VMSG_CHUNKS 4       /* most chunks a pool may grow to */
#define RSM_VRAILS_MAX 4        /* most ports (rails) one connection stripes over */

/* Why a request was refused (REJ's status). */
enum { RSM_VREJ_PARAMS = 1, RSM_VREJ_NOMEM = 2, RSM_VREJ_QP = 3 };

/* Where a process can be reached: what it publishes in the modex, and what a
 * handshake message carries of its sender. */
typedef struct rsm_vaddr {
    uint8_t gid[16];
    uint32_t ud_qpn;
    uint16_t lid;
    uint8_t mtu;                /* enum ibv_mtu of its port */
    uint8_t global;             /* 1: address by GID (RoCE), 0: by LID (InfiniBand) */
} rsm_vaddr_t;

/* One more rail of a connection (seed 000, 3.3: striping over interfaces): a
 * queue pair on another port, with that port's address.  Rail 0 is the
 * connection's own queue pair (rsm_vmsg_t.qpn / .psn / .addr). */
typedef struct rsm_vrail {
    rsm_vaddr_t addr;           /* ud_qpn unused */
    uint32_t qpn, psn;
} rsm_vrail_t;

/* A handshake message on the UD queue pair (all fields little endian on the
 * wire is not needed: both ends are the same build of the same job, and the
 * fingerprint refuses anything else).  REQ: "connect a queue for me on this
 * queue pair, and the pool I share among your host's ranks (named by POOL_TAG);
 * write acks to this row".  REP: "here are the queue and the pool".  REJ: refused.
 *
 * The pool is per (sender, destination host) as in seed 000: the sender picks a
 * random tag for each host it sends to, and every receiver there maps the same
 * shared-memory segment for it ("/rsm-<tag>-vp"), so a remote sender costs a
 * host one pool however many of its ranks it talks to.  Sharing is an economy,
 * never a premise: a receiver that cannot map the segment another created uses
 * private memory, and the protocol is unchanged (each message's blocks are
 * written through the queue pair of its receiver, before its pointer postbox).
 *
 * A pool starts as one chunk and grows by chunks of the same size, up to
 * RSM_VMSG_CHUNKS, for a sender that keeps finding it full (one that streams):
 * GROW "map chunks up to N of the pool with this tag for the connection of my
 * queue pair QPN", GROWN "mapped: here they are".  Chunk i is the segment
 * "/rsm-<tag>-vp<i>" and stripe i of the layout (rsm_postbox.h): a run names
 * its chunk, and the receiver checks it against the chunks it has mapped.
 * An unanswered GROW is resent, so one GROW can be answered twice; each GROWN
 * echoes the count its GROW asked for, and the sender judges a growth only by
 * the answers to it (rsm_vgrown_verdict).
 *
 * Rails: a REQ offers the sender's queue pairs on its other ports (RAILS - 1 of
 * them), the REP answers with as many of the receiver's as it connected.  They
 * carry only the receiver's single-copy RDMA reads, cut across the rails. */
typedef struct rsm_vmsg {
    uint32_t magic;
    uint8_t version, type;
    uint16_t status;            /* REJ: RSM_VREJ_* */
    uint64_t from, to;          /* process names (jobid << 32 | vpid) */
    uint64_t params;            /* fingerprint of the connection layout */
    rsm_vaddr_t addr;           /* the sender's UD address (replies go there) */
    uint32_t qpn, psn;          /* the sender's RC queue pair of this connection */
    uint64_t raddr;             /* REQ: the ack row; REP: the queue */
    uint32_t rkey;
    uint32_t rlen;              /* bytes at raddr */
    uint64_t conn;              /* REQ: the requester's connection number, echoed */
    uint64_t pool_raddr[RSM_VMSG_CHUNKS];   /* REP, GROWN: the pool's chunks */
    uint32_t pool_rkey[RSM_VMSG_CHUNKS];
    uint32_t pool_len;          /* REP, GROWN: bytes of each chunk */
    uint8_t pool_chunks;        /* REQ, GROW: chunks to map; REP, GROWN: chunks mapped (1..4) */
    uint8_t rails;              /* REQ: rails offered; REP: rails connected (1..RSM_VRAILS_MAX) */
    uint8_t asked;              /* GROWN: the pool_chunks of the GROW it answers (1..4) */
    uint8_t pad;
    char pool_tag[RSM_VPOOL_TAG];   /* REQ, GROW: names the pool (lowercase hex digits) */
    rsm_vrail_t rail[RSM_VRAILS_MAX - 1];   /* REQ, REP: rails 1.. */
} rsm_vmsg_t;

/* Is LEN bytes at MSG a well-formed handshake message addressed to ME?
 * Returns NULL, or why not.  A REQ or GROW whose ack row, or a REP or GROWN
 * whose queue, is shorter than EXPECT_LEN is refused, and so is a REP or GROWN
 * whose pool chunks are shorter than EXPECT_POOL_LEN or wrap, a REQ or GROW
 * whose pool tag is not hex digits, a chunk count outside 1..4, and a REQ or REP
 * with a rail count outside 1..RSM_VRAILS_MAX or a rail's address or queue pair
 * malformed. */
const char *rsm_vmsg_check(const void *msg, size_t len, uint64_t me, uint32_t expect_len,
                           uint32_t expect_pool_len);

/* What a GROWN tells a sender whose pool is growing to MADE chunks: the GROW it
 * answers ASKED for that many, and its receiver has MAPPED chunks.  An answer
 * to an earlier growth's GROW (resent while the first answer was on its way,
 * so answered twice) says nothing about this growth: stale, however few it
 * names.  Otherwise the receiver has mapped the new chunk, or could not. */
enum { RSM_VGROWN_STALE, RSM_VGROWN_SHORT, RSM_VGROWN_MAPPED };

static inline int rsm_vgrown_verdict(unsigned asked, unsigned mapped, unsigned made)
{
    if (asked < made) {
        return RSM_VGROWN_STALE;
    }
    return mapped < made ? RSM_VGROWN_SHORT : RSM_VGROWN_MAPPED;
}

/* The tail named by a unit's immediate: accepted only when it moves the
 * receiver's view forward by 1..QLEN postboxes past what it has consumed.
 * Returns false for anything else (a corrupt or hostile peer). */
static inline bool rsm_vimm_valid(uint32_t imm, uint32_t head, uint32_t published, uint32_t qlen)
{
    uint32_t ahead = imm - head, moved = imm - published;
    return moved >= 1 && moved <= qlen && ahead <= qlen;
}

/* Acks ride on the reverse traffic.  With queues of at most
 * RSM_VIMM_PACKED_QLEN_MAX postboxes (the default 128 is far below; both ends
 * have the same layout, so both know), an immediate is two 16-bit halves: the
 * low one names the unit, the high one how far its sender has consumed the
 * queue we write to it (its ep->unacked).  A ping-pong then needs no ack write:
 * each reply acks the message it answers.  The low half is either the unit's
 * tail in 15 bits or, with RSM_VIMM_DIRECT set, where a direct unit's postbox
 * lies (below).  Each number names a 32-bit sequence number within one queue of
 * a number the reader knows (its view of the peer's tail; its own tail), so 15
 * and 16 bits name them exactly. */
#define RSM_VIMM_PACKED_QLEN_MAX 16384u
#define RSM_VIMM_TAIL_MASK 0x7fffu

static inline uint32_t rsm_vimm_pack(uint32_t tail, uint32_t consumed)
{
    return (tail & RSM_VIMM_TAIL_MASK) | consumed << 16;
}

/* the tail, from the newest tail we accepted (then checked by rsm_vimm_valid) */
static inline uint32_t rsm_vimm_tail(uint32_t imm, uint32_t published)
{
    return published + ((imm - published) & RSM_VIMM_TAIL_MASK);
}

/* DIRECT units: a pool message of one run crosses as one RDMA WRITE WITH
 * IMMEDIATE, of its run from the first block's start, where the sender put a
 * copy of the message's pointer postbox, 64 bytes (and the payload's skew)
 * ahead of the payload.  The immediate says which chunk of the pool and which
 * block of it (runs start on a block; both ends have the same block size, UNIT
 * below); the unit is one postbox, so its tail is the last tail plus one.  The
 * receiver copies the postbox into its queue and parses it there like any
 * other.  Why: the block write and the postbox write were two work requests,
 * two packets more than a message's data (the postbox and its RC
 * acknowledgement), and on soft-RoCE a work request's processing besides;
 * UCX's eager send is one.  4 chunks (2 bits) of up to 8,192 blocks (13 bits:
 * 8 MiB of 1 KiB blocks). */
#define RSM_VIMM_DIRECT 0x8000u
#define RSM_VIMM_DIRECT_CHUNK_SHIFT 13
#define RSM_VIMM_DIRECT_UNITS (1u << RSM_VIMM_DIRECT_CHUNK_SHIFT)

static inline bool rsm_vimm_direct_fits(unsigned chunk, size_t offset, size_t unit)
{
    return chunk < 4 && offset % unit == 0 && offset / unit < RSM_VIMM_DIRECT_UNITS;
}

static inline uint32_t rsm_vimm_pack_direct(unsigned chunk, size_t offset, size_t unit,
                                            uint32_t consumed)
{
    return RSM_VIMM_DIRECT | (uint32_t) chunk << RSM_VIMM_DIRECT_CHUNK_SHIFT
           | (uint32_t) (offset / unit) | consumed << 16;
}

static inline bool rsm_vimm_is_direct(uint32_t imm)
{
    return (imm & RSM_VIMM_DIRECT) != 0;
}

/* Where a direct unit's postbox is: a chunk and a byte offset in it, to be
 * checked against what the reader has mapped. */
static inline void rsm_vimm_direct_at(uint32_t imm, size_t unit, unsigned *chunk, size_t *offset)
{
    *chunk = (imm >> RSM_VIMM_DIRECT_CHUNK_SHIFT) & 3u;
    *offset = (size_t) (imm & (RSM_VIMM_DIRECT_UNITS - 1)) * unit;
}

/* How far the peer consumed our queue to it, from our tail there; false when
 * that is not within [KNOWN, OUT_TAIL] (what it said before, what we sent): a
 * corrupt or hostile immediate. */
static inline bool rsm_vimm_consumed(uint32_t imm, uint32_t known, uint32_t out_tail,
                                     uint32_t *consumed)
{
    uint32_t c = out_tail - ((out_tail - (imm >> 16)) & 0xffffu);
    *consumed = c;
    return c - known <= out_tail - known;
}

#ifdef RSM_VERBS_DEVICE_API
#include <infiniband/verbs.h>

/* Entries of a device's send completion queue, shared by every RC queue pair
 * on it: signalled work requests wait while this many are unpolled
 * (rsm_vdev_t.scq_out), as a full queue would lose completions. */
#define RSM_VSCQ_ENTRIES 4096

/* One port of one device, opened once per process. */
typedef struct rsm_vdev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_cq *scq;         /* send completions of every RC queue pair */
    uint32_t scq_out;           /* signalled work requests posted, not yet polled */
    struct ibv_cq *rcq;         /* receive completions (WRITE WITH IMMEDIATE) */
    struct ibv_srq *srq;        /* shared by every RC queue pair */
    struct ibv_cq *ucq;         /* the UD queue pair's, both directions */
    struct ibv_comp_channel *uchan;     /* ucq's completion events (rsm_vud_arm) */
    struct ibv_qp *ud;
    struct ibv_mr *ud_mr;
    uint8_t *ud_buf;            /* RSM_VUD_RECVS receive slots, then a send slot */
    uint32_t ud_pending[64];    /* receives seen while waiting for a send: slot | len << 8 */
    uint32_t ud_npending, ud_ntaken;
    uint32_t ud_sends;          /* handshake sends so far: each its own work request id */
    uint64_t ud_send_busy;      /* the id of a send that outlived its wait (its slot is
                                 * the device's until it completes), else 0 */
    unsigned srq_posted, srq_depth, sq_depth;
    uint32_t max_inline;        /* of the RC queue pairs, as created */
    uint8_t timeout, retry_cnt;     /* RC retransmission: 4.096 us * 2^timeout, retry_cnt times */
    uint8_t max_rd;             /* RDMA reads outstanding per queue pair, either end (1..16) */
    uint8_t port;
    bool rail_only;             /* another rail: a protection domain and a send completion
                                 * queue for its queue pairs' reads, no handshake or receives */
    int gid_index;
    rsm_vaddr_t self;
    char name[64];              /* "rxe0:1" */
} rsm_vdev_t;

#define RSM_VUD_SLOT 512         /* a UD receive slot: 40-byte GRH + message (under any
                                  * port's MTU: InfiniBand's smallest in use is 2048) */
#define RSM_VUD_RECVS 64
_Static_assert(RSM_VUD_RECVS <= sizeof(((rsm_vdev_t *) 0)->ud_pending) / sizeof(uint32_t),
               "every posted receive fits the kept-receives ring");
_Static_assert(sizeof(rsm_vmsg_t) + 40 <= RSM_VUD_SLOT, "a handshake message fits a UD slot");
#define RSM_VQKEY 0x52534d51u

/* Open the first active port named by SPEC ("dev:port,dev:port", empty: the
 * first active port of any device), after skipping SKIP active ones (rails:
 * rail r is the r-th active port SPEC names; a port is counted once).
 * RAIL_ONLY: no shared receive queue and no handshake queue pair.
 * GID_INDEX < 0: an IPv4-mapped RoCE v2 GID, else any valid one.  0, or -1
 * with ERR filled and errno ENODEV (no usable port) or the failing call's
 * (ENOMEM, EPERM, EAGAIN: most likely the locked-memory limit). */
int rsm_vdev_open(rsm_vdev_t *d, const char *spec, unsigned skip, bool rail_only, int gid_index,
                  unsigned sq_depth, unsigned srq_depth, char *err, size_t errlen);
void rsm_vdev_close(rsm_vdev_t *d);
/* Top the shared receive queue up to its depth; 0 or -errno. */
int rsm_vdev_refill(rsm_vdev_t *d);

/* An RC queue pair in INIT, remote writes and reads allowed (reads: single
 * copy, where the receiver reads a sender's registered buffer over the
 * sender's own connection to it, so no queue pair is added); NULL with errno. */
struct ibv_qp *rsm_vqp_create(rsm_vdev_t *d);
/* INIT -> RTR -> RTS towards PEER's queue pair PEER_QPN. */
int rsm_vqp_connect(rsm_vdev_t *d, struct ibv_qp *qp, const rsm_vaddr_t *peer, uint32_t peer_qpn,
                    uint32_t peer_psn, uint32_t my_psn);

/* Send a handshake message to PEER's UD queue pair (AH cached in *AH): 0, or
 * -ETIMEDOUT (it did not leave in time), -EBUSY (an earlier one still has not:
 * nothing sent), -EIO or another -errno. */
int rsm_vud_send(rsm_vdev_t *d, struct ibv_ah **ah, const rsm_vaddr_t *peer,
                 const rsm_vmsg_t *msg);
/* Poll the UD queue pair: at most one received message copied to *MSG (its
 * length in *LEN), returns 1; 0: none; -1: a completion in error. */
int rsm_vud_poll(rsm_vdev_t *d, void *msg, size_t cap, size_t *len);
/* For a thread that waits for handshakes: arm the handshake queue (the next
 * completion raises an event on its descriptor), the descriptor to poll(2)
 * (non-blocking), and the events read off it, acknowledged (their number). */
int rsm_vud_arm(rsm_vdev_t *d);
int rsm_vud_event_fd(const rsm_vdev_t *d);
int rsm_vud_take_events(rsm_vdev_t *d);

/* An asynchronous event of the device (a port going down or up, a queue pair
 * in error), without blocking.  1 with *EV filled, 0: none. */
typedef struct rsm_vevent {
    int type;                   /* enum ibv_event_type */
    uint32_t qp_num;            /* queue pair events */
    uint8_t port;               /* port events */
} rsm_vevent_t;
int rsm_vdev_event(rsm_vdev_t *d, rsm_vevent_t *ev);

const char *rsm_vmtu_str(uint8_t mtu);
#endif

#endif
