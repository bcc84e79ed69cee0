/*
 * pmeth's reliability window, one per peer and direction.  No MPI; time is
 * passed in (nanoseconds), so it is tested on its own (test/unit/t_pmeth_window).
 *
 * Sequence numbers are 32-bit and compared in serial arithmetic (RFC 1982), so
 * they wrap.  The window is a power of two W: at most W frames unacknowledged.
 *
 * Sender (txwin): each DATA frame gets the next sequence number and is kept
 * (by the caller's handle) until the receiver's cumulative ack passes it.
 * Selective acks mark frames held beyond a gap: they are not resent, and each
 * ack that shows a later frame past a missing one counts against it; at
 * fast_retransmit counts it is due at once, once per loss.  One retransmit
 * timer covers the oldest frame not yet acknowledged (RFC 6298: srtt + 4
 * rttvar, clamped to [rto_min, rto_max], doubled per expiry, samples only from
 * frames sent once: Karn).  due() returns at most the number of frames the
 * caller allows per call: the usnic lesson, a lossy path must not start a
 * retransmit storm.
 *
 * Receiver (rxwin): frames are taken in order; one ahead of a gap is held (the
 * caller keeps the frame, the window its handle) until the gap fills, and pop()
 * then yields the held successors in order.  Duplicates and frames outside the
 * window are refused.  Acks: cumulative (the next expected) plus a 64-bit
 * selective bitmap of what is held beyond it.  An ack is due at once after
 * ack_every frames, on a frame out of order or a duplicate (so the sender's
 * fast retransmit and its lost acks recover fast), and otherwise ack_delay
 * after the first frame not yet acknowledged.
 */
#ifndef PMETH_WINDOW_H
#define PMETH_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

typedef struct pmeth_window_config {
    uint32_t window;                    /* frames, a power of two */
    uint64_t rto_init_ns, rto_min_ns, rto_max_ns;
    uint64_t ack_delay_ns;
    uint32_t ack_every;
    uint32_t fast_retransmit;           /* 0: off */
} pmeth_window_config_t;

void pmeth_window_config_init(pmeth_window_config_t *cfg, uint32_t window);

/* serial-arithmetic comparison: a before b */
static inline bool pmeth_seq_lt(uint32_t a, uint32_t b) { return (int32_t) (a - b) < 0; }

/* ---- sender ---- */
typedef struct pmeth_txslot {
    uintptr_t handle;
    uint64_t sent_ns;                   /* last (re)transmission */
    uint16_t resends;
    uint8_t sacked;
    uint8_t fast_done;                  /* fast-retransmitted for this loss */
    uint16_t dups;                      /* acks that showed later frames past this one */
    uint8_t link;
    uint8_t fast_due;
} pmeth_txslot_t;

typedef struct pmeth_txwin {
    pmeth_window_config_t cfg;
    uint32_t mask;
    uint32_t base;                      /* oldest unacknowledged */
    uint32_t next;                      /* next to assign */
    uint32_t nfast;                     /* slots with fast_due set */
    uint64_t srtt, rttvar, rto;         /* ns; srtt 0: no sample yet */
    uint32_t backoff;                   /* expiries since the last progress */
    uint64_t deadline;                  /* cached: when the timer expires (UINT64_MAX: idle) */
    bool deadline_valid;
    uint64_t rtt_samples;
    pmeth_txslot_t slot[];
} pmeth_txwin_t;

typedef struct pmeth_txwin_due {
    uintptr_t handle;
    uint32_t seq;
    bool fast;
} pmeth_txwin_due_t;

pmeth_txwin_t *pmeth_txwin_create(const pmeth_window_config_t *cfg);
void pmeth_txwin_destroy(pmeth_txwin_t *w);
static inline bool pmeth_txwin_can_send(const pmeth_txwin_t *w)
{
    return w->next - w->base < w->cfg.window;
}
static inline bool pmeth_txwin_empty(const pmeth_txwin_t *w) { return w->next == w->base; }
static inline uint32_t pmeth_txwin_inflight(const pmeth_txwin_t *w) { return w->next - w->base; }
/* Assign the next sequence number to a frame (the window must be open). */
uint32_t pmeth_txwin_push(pmeth_txwin_t *w, uintptr_t handle, uint64_t now, uint8_t link);
/* Process a cumulative ack and its selective bitmap: RELEASED is called for
 * every frame now acknowledged, in sequence order.  Returns how many.  Acks
 * that do not fit the window (old, or past what was sent) change nothing. */
unsigned pmeth_txwin_ack(pmeth_txwin_t *w, uint32_t cum, uint64_t sack, uint64_t now,
                         void (*released)(uintptr_t handle, void *ctx), void *ctx);
/* When the retransmit timer expires (UINT64_MAX: nothing outstanding). */
uint64_t pmeth_txwin_next_deadline(pmeth_txwin_t *w);
static inline bool pmeth_txwin_fast_pending(const pmeth_txwin_t *w) { return w->nfast > 0; }
/* Frames to send again now, at most MAX: fast retransmits first, then, if the
 * timer expired, the oldest outstanding frames whose timeout passed.  Each is
 * counted as resent now. */
int pmeth_txwin_due(pmeth_txwin_t *w, uint64_t now, pmeth_txwin_due_t *out, unsigned max);
/* Take the oldest frame still held, whatever its state (teardown). */
bool pmeth_txwin_drain(pmeth_txwin_t *w, uintptr_t *handle);
static inline uint64_t pmeth_txwin_rto(const pmeth_txwin_t *w) { return w->rto; }

/* ---- receiver ---- */
typedef enum pmeth_rx_verdict {
    PMETH_RX_NEW_IN_ORDER = 0,
    PMETH_RX_NEW_OUT_OF_ORDER,
    PMETH_RX_DUPLICATE,
    PMETH_RX_OUT_OF_WINDOW,
} pmeth_rx_verdict_t;

typedef struct pmeth_rxwin {
    pmeth_window_config_t cfg;
    uint32_t mask;
    uint32_t base;                      /* next expected: the cumulative ack */
    uint32_t held;                      /* frames held beyond base */
    uint32_t unacked;                   /* frames taken since the last ack went out */
    bool immediate;                     /* an ack is owed at once */
    uint64_t first_unacked_ns;
    uint8_t *present;                   /* per slot: a frame is held there */
    uintptr_t *handle;
} pmeth_rxwin_t;

pmeth_rxwin_t *pmeth_rxwin_create(const pmeth_window_config_t *cfg);
void pmeth_rxwin_destroy(pmeth_rxwin_t *w);
/* What accept() would say, changing nothing. */
pmeth_rx_verdict_t pmeth_rxwin_classify(const pmeth_rxwin_t *w, uint32_t seq);
/* Take frame SEQ; for NEW_OUT_OF_ORDER the window keeps HANDLE until pop(). */
pmeth_rx_verdict_t pmeth_rxwin_accept(pmeth_rxwin_t *w, uint32_t seq, uintptr_t handle,
                                      uint64_t now);
/* The next held frame that is now in order, if any (it is taken). */
bool pmeth_rxwin_pop(pmeth_rxwin_t *w, uintptr_t *handle);
/* Take any held frame (teardown). */
bool pmeth_rxwin_drain(pmeth_rxwin_t *w, uintptr_t *handle);
void pmeth_rxwin_ack_fields(const pmeth_rxwin_t *w, uint32_t *cum, uint64_t *sack);
/* An ack (standalone or piggy-backed) carried the current state. */
static inline void pmeth_rxwin_ack_sent(pmeth_rxwin_t *w)
{
    w->unacked = 0;
    w->immediate = false;
}
static inline bool pmeth_rxwin_ack_owed(const pmeth_rxwin_t *w)
{
    return w->unacked > 0 || w->immediate;
}
static inline bool pmeth_rxwin_ack_now(const pmeth_rxwin_t *w) { return w->immediate; }
static inline bool pmeth_rxwin_ack_due(const pmeth_rxwin_t *w, uint64_t now)
{
    return w->immediate || (w->unacked > 0 && now - w->first_unacked_ns >= w->cfg.ack_delay_ns);
}

#endif
