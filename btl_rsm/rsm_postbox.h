/*
 * The postbox protocol of Sun MPI over remote shared memory (seed 000, 3.1-3.2),
 * without MPI: the layout of a sender's area, the 64-byte postbox, the 1-byte
 * acknowledgements, and the receiver's parser.
 *
 * One AREA per (sender, destination NUMA node, stripe), owned and written only
 * by its sender, living on the destination node:
 *
 *   stripe 0:  [ queue for local rank 0 | queue for 1 | ... ]  [ pool ]
 *   stripe k:                                                  [ pool ]
 *   queue   = queue_len postboxes of 64 bytes, used as a ring
 *   pool    = small blocks (small messages) then large blocks (runs of them)
 *
 * A message is one or more consecutive postboxes of one queue.  Every postbox
 * starts with an 8-byte header whose first word is the FLAG: for postbox number
 * `seq` it is seq+1 (never 0, so fresh zeroed memory is empty), stored last with
 * release ordering after everything the postbox announces; the receiver loads it
 * with acquire and reads the other header fields exactly once.
 *
 *   INLINE   a POSTBOX GROUP of 1..k consecutive postboxes: the head carries the
 *            header and the first 56 bytes, each following postbox 64 more bytes
 *            and no header of its own, so the payload is one contiguous range of
 *            the queue and is handed up in place (no staging copy; like the
 *            barrier + pointer postbox, the head's flag orders the whole group).
 *            A group never wraps around the end of the ring:
 *   PAD      tells the receiver to skip to the end of the ring (the sender puts
 *            one there when the next group does not fit before the end).
 *   POINTER  up to 4 runs (stripe, offset, length) of pool blocks the sender
 *            filled before a barrier; a message may take several (FIRST..LAST).
 *
 * Since postboxes of a group carry no flag, a slot may hold, at its flag offset,
 * payload of an earlier lap; so before publishing a message the sender zeroes the
 * flag word of the postbox right after it (its previous occupant is already
 * acknowledged: a sender keeps one postbox of its queue in reserve for this) -
 * but only when that slot last held such payload.  A slot whose last write was
 * a header holds an older seq+1 (never the one the receiver waits for there),
 * and fresh memory holds 0: both are already "empty".  The sender tracks this
 * in private memory (one byte per slot, set when a group's follow-on postboxes
 * are reserved, cleared with the flag).  Why: the receiver spins on that next
 * slot, so zeroing it every time cost each message a second shared cache line
 * (an extra invalidation and re-read); now a message of one postbox touches
 * one line.  The receiver is unchanged: what it may see is exactly as before.
 *
 * After consuming postbox `seq` (every postbox of a group or a pad) the receiver
 * writes its lap tag (a byte, never 0) into ack[seq % queue_len] of the row for
 * it in the SENDER's control segment; the sender may reuse the slot, and free the
 * blocks it pointed to, once that byte matches.  Nothing a peer wrote is used
 * before it is checked.
 */
#ifndef RSM_POSTBOX_H
#define RSM_POSTBOX_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RSM_POSTBOX_SIZE 64
#define RSM_PB_DATA 56          /* payload bytes of one postbox */
#define RSM_PB_RUNS 4           /* pool runs one pointer postbox can carry */
#define RSM_MSG_MAX_RUNS 16     /* runs one message may gather (bounded recv descriptor) */
#define RSM_MAX_STRIPES 8
#define RSM_PAGE 4096

/* kind byte */
#define RSM_PB_INLINE  0x01
#define RSM_PB_POINTER 0x02
#define RSM_PB_PAD     0x03     /* skip to the end of the ring */
#define RSM_PB_TYPE    0x03
#define RSM_PB_FIRST   0x10
#define RSM_PB_LAST    0x20
#define RSM_PB_PAIR    0x40     /* INLINE, one postbox: the message fills the first half
                                 * (<= RSM_PB_HALF_DATA bytes); the second half may
                                 * later carry one more (rsm_half_t) */

typedef struct rsm_run {        /* one contiguous piece of a pool: what crosses the wire */
    uint32_t offset;            /* from the start of that stripe's pool (any byte: see rsm_run_valid) */
    uint32_t len;
    uint8_t stripe;
    uint8_t pad[3];
} rsm_run_t;

typedef struct rsm_postbox {
    _Atomic uint32_t flag;      /* rsm_pb_flag(seq), written last */
    uint16_t nbytes;            /* INLINE: message bytes (the whole group); POINTER: runs used */
    uint8_t kind;
    uint8_t tag;                /* BTL tag, in the FIRST postbox */
    union {
        uint8_t data[RSM_PB_DATA];
        rsm_run_t runs[RSM_PB_RUNS];
    } u;
} __attribute__((aligned(RSM_POSTBOX_SIZE))) rsm_postbox_t;

_Static_assert(sizeof(rsm_postbox_t) == RSM_POSTBOX_SIZE, "a postbox is one cache line");

/* The second half of a PAIR postbox: a message of its own, with its own flag.
 *
 * Why: a 1-10 byte MPI message is 15-24 bytes with ob1's match header, and a
 * postbox per message moved a whole cache line for it; vader's fast boxes pack
 * two such messages per line, and between cores that do not share a cache
 * (where every line costs ~200 ns) it moved 6.2 million 1-8 B messages a second
 * to rsm's 4.4 (and fell to 4.0 million at 16 B, where its messages outgrow half
 * a line).  The sender publishes a tiny message as a PAIR postbox (half flag
 * zeroed in the same line, before the flag); if its next message to the same
 * receiver is tiny too and nothing else was written since, it goes into the
 * second half, published by the half's flag (rsm_pb_flag of the postbox's seq).  The
 * receiver, after a PAIR's first half, waits for either that flag or the next
 * postbox's (the sender moved on; then the half flag is read once more, as the
 * sender may have written the half first) and acks the postbox only then, so
 * the sender never writes a half the receiver has given up on. */
#define RSM_PB_HALF_OFF 32
#define RSM_PB_HALF_DATA 24     /* payload bytes of either half */
typedef struct rsm_half {
    _Atomic uint32_t flag;      /* rsm_pb_flag(seq) of the postbox, written last */
    uint16_t nbytes;
    uint8_t kind;               /* RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST */
    uint8_t tag;
    uint8_t data[RSM_PB_HALF_DATA];
} rsm_half_t;
_Static_assert(sizeof(rsm_half_t) == RSM_POSTBOX_SIZE - RSM_PB_HALF_OFF, "a half is half a line");
_Static_assert(RSM_PB_HALF_OFF - 8 == RSM_PB_HALF_DATA, "the first half's payload ends at the second");

static inline rsm_half_t *rsm_pb_half(rsm_postbox_t *slot)
{
    return (rsm_half_t *) ((char *) slot + RSM_PB_HALF_OFF);
}
_Static_assert(sizeof(rsm_run_t) * RSM_PB_RUNS <= RSM_PB_DATA, "runs fit a postbox");

/* Everything both sides must agree on; computed from the MCA parameters, which
 * the modex checks are equal across ranks.  Never read from a peer. */
typedef struct rsm_layout {
    uint32_t nqueues;           /* local ranks: one queue each in every area */
    uint32_t queue_len;         /* postboxes per queue, a power of two */
    uint32_t queue_shift;       /* log2(queue_len) */
    uint32_t stripes;
    uint32_t small_block, large_block;
    uint32_t small_count, large_count;   /* per stripe */
    uint32_t max_inline;        /* largest inline message */
    uint32_t max_msg;           /* largest pointer message */
    size_t queues_bytes;        /* queue region of stripe 0, page aligned */
    size_t pool_bytes;          /* per stripe */
    bool pool_apart;            /* the pool is a segment of its own, not after the queues
                                 * (verbs: one pool per sender and destination host, shared
                                 * by the receivers there; each queue is per connection) */
} rsm_layout_t;

/* The queue length a node's shared-memory layout takes when none is set.
 *
 * Up to RSM_QUEUE_DEEP_RANKS local ranks, RSM_QUEUE_DEEP postboxes (256 KiB) a
 * queue.  Why: a sender that rewrites a slot its receiver read less than ~160
 * KiB of ring ago falls into step with the receiver (its lead 1-2 messages
 * instead of 4-16) and both stream at half speed; from ~192 KiB of ring on the
 * sender stays ahead (Intel guest of the Sapphire Rapids class: 1 KiB messages
 * 2.9 M a second with 2048 postboxes, 7.0 M with 4096; a ring of plain C steps
 * at the same length; btl_rsm/README.md).  The node pays N x N x 256 KiB: 4 MiB
 * at 4 ranks.
 *
 * From there on, a sender's queues (one per local rank) together take 256 KiB,
 * half as many postboxes each time the ranks double, never fewer than
 * RSM_QUEUE_AUTO_MIN: still deep enough that a streaming sender seldom waits
 * for acks (a 1 KiB message is a group of 17 postboxes: 7 fit in 128), small
 * where a full node makes the N^2 term count, and in a container's 64 MiB
 * /dev/shm. */
#define RSM_QUEUE_DEEP 4096u
#define RSM_QUEUE_DEEP_RANKS 4u
#define RSM_QUEUE_AUTO_BYTES (256u * 1024)
#define RSM_QUEUE_AUTO_MIN 128u
static inline uint32_t rsm_queue_len_auto(uint32_t nqueues)
{
    if (nqueues <= RSM_QUEUE_DEEP_RANKS) {
        return RSM_QUEUE_DEEP;
    }
    uint32_t want = RSM_QUEUE_AUTO_BYTES / RSM_POSTBOX_SIZE / nqueues;
    uint32_t len = RSM_QUEUE_DEEP;
    while (len > RSM_QUEUE_AUTO_MIN && len > want) {
        len >>= 1;
    }
    return len;
}

/* Bytes of small blocks in a stripe of PER_STRIPE bytes: 1/8 of it, or none
 * when both kinds of block have one size (the verbs pools: every block serves
 * every message, and none is set apart for small ones). */
static inline size_t rsm_pool_small_bytes(size_t per_stripe, uint32_t small_block,
                                          uint32_t large_block)
{
    return small_block == large_block ? 0 : (per_stripe / 8) / small_block * small_block;
}

/* Bytes of large blocks in each stripe of a pool of pool_total bytes: the
 * stripe less its small blocks.  The largest message must fit.  0 for
 * parameters that form no pool (rsm_layout_init says why). */
static inline size_t rsm_pool_large_bytes(size_t pool_total, uint32_t stripes,
                                          uint32_t small_block, uint32_t large_block)
{
    if (stripes == 0 || small_block == 0 || large_block == 0) {
        return 0;
    }
    size_t per_stripe = pool_total / stripes;
    size_t small_bytes = rsm_pool_small_bytes(per_stripe, small_block, large_block);
    return (per_stripe - small_bytes) / large_block * large_block;
}

/* Fill in the derived sizes; returns 0, or -1 with *why set when the
 * parameters cannot form a layout. */
int rsm_layout_init(rsm_layout_t *lay, uint32_t nqueues, uint32_t queue_len, uint32_t stripes,
                    size_t pool_total, uint32_t small_block, uint32_t large_block,
                    uint32_t max_inline, uint32_t max_msg, const char **why);

static inline size_t rsm_layout_pool_base(const rsm_layout_t *lay, unsigned stripe)
{
    return stripe == 0 && !lay->pool_apart ? lay->queues_bytes : 0;
}

static inline size_t rsm_layout_seg_size(const rsm_layout_t *lay, unsigned stripe)
{
    return rsm_layout_pool_base(lay, stripe) + lay->pool_bytes;
}

static inline rsm_postbox_t *rsm_layout_queue(const rsm_layout_t *lay, void *stripe0,
                                              unsigned local_rank)
{
    return (rsm_postbox_t *) ((char *) stripe0 + (size_t) local_rank * lay->queue_len
                                                     * RSM_POSTBOX_SIZE);
}

/* The ack byte for postbox SEQ: its lap around the ring, 1..128, never 0. */
static inline uint8_t rsm_lap_tag(uint32_t seq, uint32_t queue_shift)
{
    return (uint8_t) (((seq >> queue_shift) & 0x7f) + 1);
}

/* Postboxes of an inline group of LEN bytes: 56 in the head, 64 in each other. */
static inline uint32_t rsm_inline_postboxes(uint32_t len)
{
    return len <= RSM_PB_DATA ? 1 : 1 + (len - RSM_PB_DATA + RSM_POSTBOX_SIZE - 1) / RSM_POSTBOX_SIZE;
}

/* The header fields after the flag, read from a peer-written postbox exactly once. */
typedef struct rsm_pb_hdr {
    uint16_t nbytes;
    uint8_t kind, tag;
} rsm_pb_hdr_t;

static inline rsm_pb_hdr_t rsm_pb_read_hdr(const rsm_postbox_t *slot)
{
    const volatile rsm_postbox_t *v = slot;
    rsm_pb_hdr_t h = {.nbytes = v->nbytes, .kind = v->kind, .tag = v->tag};
    return h;
}

/* The same for the second half of a PAIR postbox. */
static inline rsm_pb_hdr_t rsm_half_read_hdr(const rsm_half_t *half)
{
    const volatile rsm_half_t *v = half;
    rsm_pb_hdr_t h = {.nbytes = v->nbytes, .kind = v->kind, .tag = v->tag};
    return h;
}

/* A second half's header as a receiver may believe it. */
static inline bool rsm_half_valid(rsm_pb_hdr_t h)
{
    return h.kind == (RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST) && h.nbytes <= RSM_PB_HALF_DATA;
}

/* A postbox's flag: its seq + 1, but never 0, which is the flag of a slot
 * cleared for the next message (rsm_pb_clear_next, a PAIR's half): seq
 * 2^32 - 1 would have it, and a receiver waiting for that postbox would take a
 * cleared slot for it, every 2^32 postboxes (seconds of a stream of small
 * messages).  It has 1, as seq 0 has; the two are never in one slot. */
static inline uint32_t rsm_pb_flag(uint32_t seq)
{
    const uint32_t f = seq + 1;
    return f + (f == 0);
}

/* May a slot whose flag word reads FLAG be one with nothing for postbox SEQ
 * yet (MASK = queue_len - 1)?  0 (cleared, or fresh memory) or the flag of an
 * earlier postbox of the same slot (a header of an earlier lap) may: at a
 * message boundary the sender leaves nothing else there (rsm_pb_clear_next).
 * Anything else is payload of a group, so the receiver is not at a boundary:
 * after a malformed postbox whose extent it could not know, the queue's
 * framing is lost, and waiting there would wait for good. */
static inline bool rsm_pb_flag_idle(uint32_t flag, uint32_t seq, uint32_t mask)
{
    return flag == 0 || ((flag - 1) & mask) == (seq & mask)
           || (flag == 1 && (seq & mask) == mask);      /* seq 2^32 - 1's flag (above) */
}

/* Pool bytes a message waiting at postbox SEQ of a queue names: the sum of the
 * run lengths of a published pointer postbox, 0 for anything else (nothing
 * published, inline, a follow-on or pad).  A hint for a sender deciding how to
 * send (btl_rsm_get.c, "both ways"): read without the receive path's checks,
 * never used to reach memory, and summing at most RSM_PB_RUNS runs whatever
 * count the peer wrote. */
static inline uint64_t rsm_pb_waiting_pool_bytes(const rsm_postbox_t *slot, uint32_t seq)
{
    if (atomic_load_explicit(&slot->flag, memory_order_acquire) != rsm_pb_flag(seq)) {
        return 0;
    }
    const rsm_pb_hdr_t h = rsm_pb_read_hdr(slot);
    if ((h.kind & RSM_PB_TYPE) != RSM_PB_POINTER || !(h.kind & RSM_PB_FIRST)) {
        return 0;
    }
    const volatile rsm_run_t *runs = slot->u.runs;
    uint64_t bytes = 0;
    for (unsigned i = 0; i < h.nbytes && i < RSM_PB_RUNS; i++) {
        bytes += runs[i].len;           /* at most 4 x 2^32: no overflow */
    }
    return bytes;
}

/* Zero the flag of the postbox after a message before publishing the message:
 * it may hold payload of an earlier lap that happens to look like a flag. */
static inline void rsm_pb_clear_next(rsm_postbox_t *slot)
{
    atomic_store_explicit(&slot->flag, 0, memory_order_relaxed);
}

/* The sender's side of the rule above.  STALE is the sender's private byte per
 * slot of one queue (MASK = queue_len - 1): 1 when the slot last held follow-on
 * payload, so its flag word may read as any value.  Mark the follow-on slots of
 * a group of K postboxes at SEQ when reserving it (before any payload is
 * written, so a group that is then abandoned is covered too). */
static inline void rsm_pb_mark_follow_on(uint8_t *stale, uint32_t mask, uint32_t seq, uint32_t k)
{
    if (k <= 8) {
        for (uint32_t i = 1; i < k; i++) {
            stale[(seq + i) & mask] = 1;
        }
        return;
    }
    /* a 1 KiB group is 16 follow-on slots: a byte loop was a quarter of the
     * sender's time in rsm_sendi; the slots are contiguous up to the ring's end */
    const uint32_t from = (seq + 1) & mask, n = k - 1, room = mask + 1 - from;
    __builtin_memset(stale + from, 1, n < room ? n : room);
    if (n > room) {
        __builtin_memset(stale, 1, n - room);
    }
}

/* The receiver's acks for postboxes SEQ .. SEQ + N - 1 (N <= the queue): each
 * slot's byte in the sender's row ACKS (MASK = queue_len - 1, SHIFT = log2 of
 * it) becomes its lap tag.  After a release fence, so the reads of the messages
 * are done before any ack is seen; the sender reads only the last byte of each
 * unit it published (whose bytes are then all written), so the order of the
 * bytes among themselves does not matter.  A lap's tag is the same for every
 * slot up to the ring's end, so a range is at most two fills: a 1 KiB group is
 * 17 acks, and a byte loop of release stores was a quarter of the receive
 * path's time in a stream. */
static inline void rsm_acks_fill(_Atomic uint8_t *acks, uint32_t mask, uint32_t shift, uint32_t seq,
                                 uint32_t n)
{
    if (n <= 8) {       /* up to ~450 B: a few stores beat a call */
        for (uint32_t i = 0; i < n; i++, seq++) {
            atomic_store_explicit(&acks[seq & mask], rsm_lap_tag(seq, shift), memory_order_release);
        }
        return;
    }
    atomic_thread_fence(memory_order_release);
    while (n > 0) {
        const uint32_t i = seq & mask, room = mask + 1 - i, run = n < room ? n : room;
        __builtin_memset((uint8_t *) &acks[i], rsm_lap_tag(seq, shift), run);
        seq += run;
        n -= run;
    }
}

/* Before publishing a message whose next postbox is NEXT_SEQ: zero that slot's
 * flag word only if it may hold stale payload.  The release store of the
 * message's flag orders this store before it, as before. */
static inline void rsm_pb_clear_stale(rsm_postbox_t *queue, uint8_t *stale, uint32_t mask,
                                      uint32_t next_seq)
{
    uint32_t i = next_seq & mask;
    if (__builtin_expect(stale[i], 0)) {
        rsm_pb_clear_next(&queue[i]);
        stale[i] = 0;
    }
}

/* Store a composed postbox into its slot: body first, then the flag with release. */
static inline void rsm_pb_publish(rsm_postbox_t *slot, const rsm_postbox_t *pb, uint32_t seq)
{
    __builtin_memcpy((char *) slot + sizeof(uint32_t), (const char *) pb + sizeof(uint32_t),
                     sizeof(*pb) - sizeof(uint32_t));
    atomic_store_explicit(&slot->flag, rsm_pb_flag(seq), memory_order_release);
}

/* Publish a postbox whose payload was written in place: header, then flag. */
static inline void rsm_pb_publish_hdr(rsm_postbox_t *slot, uint16_t nbytes, uint8_t kind,
                                      uint8_t tag, uint32_t seq)
{
    slot->nbytes = nbytes;
    slot->kind = kind;
    slot->tag = tag;
    atomic_store_explicit(&slot->flag, rsm_pb_flag(seq), memory_order_release);
}

/* Has postbox SEQ arrived in SLOT?  If so copy it to *snap (acquire ordered). */
static inline bool rsm_pb_take(const rsm_postbox_t *slot, uint32_t seq, rsm_postbox_t *snap)
{
    if (atomic_load_explicit((_Atomic uint32_t *) &slot->flag, memory_order_acquire)
        != rsm_pb_flag(seq)) {
        return false;
    }
    __builtin_memcpy(snap, slot, sizeof(*snap));
    return true;
}

/* ---- the receiver's parser: peer-written postboxes in, checked messages out ---- */

typedef enum {
    RSM_PB_MORE = 0,            /* consumed; the message continues in the next postbox */
    RSM_PB_DONE = 1,            /* a whole message is described by the assembler */
    RSM_PB_SKIP = 2,            /* a pad: `postboxes` slots to skip, nothing to deliver */
    RSM_PB_BAD = -1,            /* dropped: out of range or out of sequence */
} rsm_pb_result_t;

typedef struct rsm_assembler {
    bool active;                /* between a FIRST and its LAST (pointer messages) */
    bool pair;                  /* DONE: an inline PAIR postbox (its second half may follow) */
    uint8_t type;               /* RSM_PB_INLINE or RSM_PB_POINTER */
    uint8_t tag;
    uint32_t postboxes;         /* slots the postbox just fed occupies (1, a group's k, a pad's) */
    uint32_t total;             /* bytes */
    uint32_t nruns;
    rsm_run_t runs[RSM_MSG_MAX_RUNS];
    uint64_t dropped;           /* postboxes refused */
    bool lost_extent;           /* BAD: how many postboxes the refused one spans is not known
                                 * (one is consumed): the next slot may be inside it */
} rsm_assembler_t;

/* Feed one snapshot of the postbox in ring position INDEX (0..queue_len-1).
 * On DONE an INLINE message is `total` bytes starting at the u.data of that
 * postbox's slot and spanning `postboxes` slots, all before the ring's end; a
 * POINTER message is `runs`, every one inside its stripe's pool.  On SKIP the
 * `postboxes` slots up to the ring's end carry nothing.  On BAD the partial
 * message is discarded and `postboxes` are consumed: the refused group's or
 * pad's own extent when its header shows it, else one, with lost_extent set. */
rsm_pb_result_t rsm_assembler_feed(rsm_assembler_t *a, const rsm_layout_t *lay,
                                   const rsm_postbox_t *snap, uint32_t index);

/* Check one run against the layout (also used by the sender's assertions). */
bool rsm_run_valid(const rsm_layout_t *lay, const rsm_run_t *run);

#endif
