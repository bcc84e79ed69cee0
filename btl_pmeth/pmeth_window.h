/*
 * pmeth's reliability window, one per peer and direction.  No MPI; time is
 * passed in (nanoseconds), so it is tested on its own (test/unit/t_pmeth_window).
 *
 * Sequence numbers are 32-bit and compared in serial arithmetic (RFC 1982), so
 * they wrap.  The window is a power of two W: at most W frames unacknowledged.
 *
 * Sender (txwin): each DATA frame gets the next sequence number and is kept
 * (by the caller's handle) until the receiver's cumulative ack passes it.
 * Selective acks mark frames the receiver holds beyond a gap: they are not
 * resent.  A frame still missing once fast_retransmit frames sent after it on
 * the same link have been selectively acknowledged is taken as lost (RFC
 * 6675's IsLost, per link: the count is of distinct frames, not of acks, so
 * the same bitmap piggy-backed on many data frames does not fire it, and one
 * link delivers in order, so a faster link overtaking a slower one when a
 * message is striped does not either) and is due at once, once per loss.
 * Where the receiver takes small frames through a ring of their own (AF_XDP
 * beside AF_PACKET at a jumbo MTU), a link delivers in order only within each
 * size: the caller marks such frames' lane (pmeth_txwin_set_lane), and frames
 * count against a missing one only in its own lane.  A
 * fast retransmission that is lost in turn is found the same way: frames sent
 * after it on its link are held while it is still missing.
 * The retransmit timer follows RFC 6298: srtt + 4 rttvar, clamped to
 * [rto_min, rto_max], doubled at each expiry, back to normal on a new sample
 * or when the probe (below) gets through.
 * Samples come only from frames sent once (Karn) whose acknowledgement an ack
 * brings first, cumulative or selective: a frame held behind a gap for a while
 * was acknowledged selectively long before the gap filled.
 * When the timer expires, only the earliest expired frame goes again, as a
 * probe: a lost ack behind a full window then costs one frame, not the window,
 * and a dead link one frame per back-off.  Once an ack shows the probe
 * through, it tells what the receiver had: every frame sent a round trip or
 * more before the probe and neither acknowledged nor held is lost, and goes
 * again.  Only frames within the bitmap's reach (64 past the cumulative ack)
 * run timers: frames further on may be held, and get their timers as the acks
 * come near.  due() returns at most the number of frames the caller allows per
 * call: the usnic lesson, a lossy path must not start a retransmit storm;
 * frames left over are due again at the next call, not a back-off later.
 * When nothing is due, due() costs O(1): the earliest deadline is cached and
 * recomputed after an ack from the oldest frames only (at most 65 of them).
 *
 * Receiver (rxwin): frames are taken in order; one ahead of a gap is held (the
 * caller keeps the frame, the window its handle) until the gap fills, and pop()
 * then yields the held successors in order.  Duplicates and frames outside the
 * window are refused.  Acks: cumulative (the next expected) plus a 64-bit
 * selective bitmap of what is held beyond it.  An ack is due at once after
 * ack_every frames (fewer where the caller caps it: pmeth_rxwin_set_ack_cap),
 * on a resent frame or a duplicate (so the sender's fast retransmit and its
 * lost acks recover fast), and otherwise ack_delay after the first frame not
 * yet acknowledged.  A frame out of order is not acked at once: striping over
 * links reorders nearly every frame.
 *
 * Memory per peer (both directions), allocated by the caller when traffic
 * starts: pmeth_txwin_bytes(W) + pmeth_rxwin_bytes(W), about 33 x W bytes
 * (8.4 KiB at W = 256, 132 KiB at W = 4096).
 *
 * Not thread-safe: the caller serialises calls on one window.  The release
 * callback of pmeth_txwin_ack() may push new frames onto the same window.
 */
#ifndef PMETH_WINDOW_H
#define PMETH_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Frames past the cumulative ack that a selective-ack bitmap covers. */
#define PMETH_WINDOW_SACK_SPAN 64
/* Links told apart by loss detection (link indices are taken modulo this). */
#define PMETH_WINDOW_LINKS 8

typedef struct pmeth_window_config {
    uint32_t window;                    /* frames, a power of two, 2 .. 2^20 */
    uint64_t rto_init_ns, rto_min_ns, rto_max_ns;
    uint64_t ack_delay_ns;
    uint32_t ack_every;                 /* 0 or 1: ack every frame at once */
    uint32_t fast_retransmit;           /* frames held above a missing one; 0: off */
} pmeth_window_config_t;

/* Defaults: 20 ms before any RTT sample, RTO in [2 ms, 1 s], delayed ack
 * 100 us, an ack at once every 8 frames, fast retransmit after 3. */
void pmeth_window_config_init(pmeth_window_config_t *cfg, uint32_t window);

/* serial-arithmetic comparison (RFC 1982): a before b */
static inline bool pmeth_seq_lt(uint32_t a, uint32_t b) { return (int32_t) (a - b) < 0; }

/* ---- sender ---- */
typedef struct pmeth_txslot {
    uintptr_t handle;
    uint64_t sent_ns;                   /* last (re)transmission */
    uint32_t stamp;                     /* transmission order within the window */
    uint8_t resends;                    /* saturates at 255; 0: no RTT sample from it (Karn) */
    uint8_t sacked : 1;                 /* the receiver holds it */
    uint8_t fast_due : 1;               /* taken as lost, waiting for due() */
    uint8_t lane : 1;                   /* in order only with frames of its link and lane */
    uint8_t link;
} pmeth_txslot_t;                       /* 24 bytes */

typedef struct pmeth_txwin {
    pmeth_window_config_t cfg;
    uint32_t mask;
    uint32_t base;                      /* oldest unacknowledged */
    uint32_t next;                      /* next to assign */
    uint32_t nfast;                     /* slots with fast_due set */
    uint32_t stamp_next;                /* transmissions so far */
    uint32_t reach;                     /* frames before it lay within an ack's view (the
                                           cumulative ack + 64): RTT samples only there */
    uint64_t srtt, rttvar, rto;         /* ns; srtt 0: no sample yet */
    uint32_t backoff;                   /* timer expiries since the last RTT sample */
    uint64_t deadline;                  /* cached: when the timer expires (UINT64_MAX: idle) */
    uint64_t expire_below;              /* frames sent before this are known lost (the cap
                                           may have left some for the next call) */
    uint32_t nsacked;                   /* frames the receiver said it holds */
    bool probing;                       /* a frame went again on timeout, alone, and no
                                           ack has shown it through yet */
    bool probe_echoed;                  /* the receiver echoed the probe's very copy */
    uint8_t probe_xmit;                 /* which transmission of probe_seq the probe is */
    uint8_t probe_link;
    uint8_t expire_link;                /* expire_below applies to frames of this link */
    uint32_t probe_seq;
    uint64_t probe_sent_ns;
    uint64_t quiet_from;                /* timers run from here at the earliest: set when an
                                           ack showed the receiver alive but not the probe
                                           through (it was slow, not the frames lost) */
    uint64_t sample_after_ns;           /* RTT samples only from frames sent since (the last
                                           timer expiry) */
    bool deadline_valid;
    /* path health evidence (apm): timer probes sent on each link since a frame
     * sent on it was last acknowledged, held or echoed, and when the first went */
    uint16_t link_silent[PMETH_WINDOW_LINKS];
    uint64_t link_silent_since[PMETH_WINDOW_LINKS];
    uint64_t link_heard_ns[PMETH_WINDOW_LINKS];     /* when something sent on it last got through */
    uint64_t rtt_samples;
    uint64_t slots_scanned;             /* work done by due()/next_deadline(): for the tests */
    pmeth_txslot_t slot[];
} pmeth_txwin_t;

typedef struct pmeth_txwin_due {
    uintptr_t handle;
    uint32_t seq;
    uint8_t link;                       /* the link it was pushed on */
    uint8_t xmit;                       /* which transmission this is (goes on the wire) */
    bool fast;
} pmeth_txwin_due_t;

/* Bytes one sender window of WINDOW frames takes (one allocation). */
size_t pmeth_txwin_bytes(uint32_t window);
/* NULL when the configuration is unusable (window not a power of two, ...). */
pmeth_txwin_t *pmeth_txwin_create(const pmeth_window_config_t *cfg);
void pmeth_txwin_destroy(pmeth_txwin_t *w);
/* The window is open.  Small and inline on purpose: the BTL ANDs it with its
 * own conditions (a free ring frame; credits and grants in the next issue). */
static inline bool pmeth_txwin_can_send(const pmeth_txwin_t *w)
{
    return w->next - w->base < w->cfg.window;
}
/* How many more frames may be sent now. */
static inline uint32_t pmeth_txwin_room(const pmeth_txwin_t *w)
{
    return w->cfg.window - (w->next - w->base);
}
static inline bool pmeth_txwin_empty(const pmeth_txwin_t *w) { return w->next == w->base; }
static inline uint32_t pmeth_txwin_inflight(const pmeth_txwin_t *w) { return w->next - w->base; }
/* Number from SEQ on (both ends must agree; windows start at 0).  Only while
 * the window is empty; false otherwise. */
bool pmeth_txwin_start_at(pmeth_txwin_t *w, uint32_t seq);
/* Assign the next sequence number to a frame sent at NOW on LINK (the window
 * must be open). */
uint32_t pmeth_txwin_push(pmeth_txwin_t *w, uintptr_t handle, uint64_t now, uint8_t link);
/* Frame SEQ (pushed, not yet acknowledged) travels in LANE (0 or 1) of its
 * link: the receiver may take it out of order with frames of the other lane. */
static inline void pmeth_txwin_set_lane(pmeth_txwin_t *w, uint32_t seq, unsigned lane)
{
    if (pmeth_seq_lt(seq, w->base) || !pmeth_seq_lt(seq, w->next)) {
        return;
    }
    w->slot[seq & w->mask].lane = lane & 1u;
}
/* Process a cumulative ack (the next sequence number the receiver expects) and
 * its selective bitmap (bit i: frame cum+1+i is held): RELEASED is called for
 * every frame now acknowledged, in sequence order.  Returns how many.  Acks
 * that do not fit the window (old, or past what was sent) change nothing:
 * they come from the wire and are not trusted. */
unsigned pmeth_txwin_ack(pmeth_txwin_t *w, uint32_t cum, uint64_t sack, uint64_t now,
                         void (*released)(uintptr_t handle, void *ctx), void *ctx);
/* The peer's echo (pmeth_wire.h): the newest resent frame it received was
 * transmission XMIT of SEQ.  Call before pmeth_txwin_ack with the same frame's
 * acks.  When that is the timer's probe, the ack that comes with it was made
 * after the probe arrived, so every frame sent before the probe on the probe's
 * link (links deliver in order) that the ack neither acknowledges nor holds is
 * lost.  Without the echo, an ack of the probe's original (a receiver that was
 * only slow, descheduled, say) would look the same, and the whole window would
 * go again for nothing. */
void pmeth_txwin_echo(pmeth_txwin_t *w, uint32_t seq, uint8_t xmit);
/* When the retransmit timer expires (UINT64_MAX: nothing outstanding). */
uint64_t pmeth_txwin_next_deadline(pmeth_txwin_t *w);
static inline bool pmeth_txwin_fast_pending(const pmeth_txwin_t *w) { return w->nfast > 0; }
/* Frames to send again now, at most MAX: fast retransmits first, then, if the
 * timer expired, the oldest outstanding frames whose own timeout passed.  Each
 * is counted as resent now (the caller sends it, refreshing its acks). */
int pmeth_txwin_due(pmeth_txwin_t *w, uint64_t now, pmeth_txwin_due_t *out, unsigned max);
/* Take the oldest frame still held, whatever its state (teardown). */
bool pmeth_txwin_drain(pmeth_txwin_t *w, uintptr_t *handle);
/* Path health for path migration (apm).  A link is silent when MIN_PROBES or
 * more timer probes went on it and nothing sent on it has been acknowledged,
 * held or echoed since (silent loss, a one-way failure, a link down); SINCE is
 * when the first of them went.  With striping, frames of the other links keep
 * the window's RTT samples coming, so the back-off alone cannot tell. */
bool pmeth_txwin_link_silent(const pmeth_txwin_t *w, uint8_t link, unsigned min_probes,
                             uint64_t *since);
/* When something sent on LINK last got through (0: never).  A silent link is
 * only evidence against that link when another was heard since its silence
 * began: when every link is silent, it is the peer that does not answer (busy
 * outside MPI, not started yet), not a path. */
static inline uint64_t pmeth_txwin_link_heard(const pmeth_txwin_t *w, uint8_t link)
{
    return w->link_heard_ns[link % PMETH_WINDOW_LINKS];
}
/* LINK is gone (migrated away from): every frame on it neither acknowledged
 * nor held is due at once (fast, through due(), within its cap), and a probe
 * waiting there ends, its back-off with it.  Returns how many. */
unsigned pmeth_txwin_expire_link(pmeth_txwin_t *w, uint8_t link);
/* Frame SEQ now goes on LINK (the caller moved it there to resend it). */
void pmeth_txwin_relink(pmeth_txwin_t *w, uint32_t seq, uint8_t link);
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
    uint32_t ack_cap;                   /* 0, or an ack at once after this many (below ack_every) */
    bool immediate;                     /* an ack is owed at once */
    uint64_t first_unacked_ns;
    bool echo_valid;                    /* a resent frame has arrived: echo it */
    uint8_t echo_xmit;
    uint32_t echo_seq;
    uint64_t *present;                  /* bit per slot: a frame is held there */
    uintptr_t *handle;                  /* per slot (same allocation as the window) */
} pmeth_rxwin_t;

/* Bytes one receiver window of WINDOW frames takes (one allocation). */
size_t pmeth_rxwin_bytes(uint32_t window);
pmeth_rxwin_t *pmeth_rxwin_create(const pmeth_window_config_t *cfg);
void pmeth_rxwin_destroy(pmeth_rxwin_t *w);
/* Expect SEQ next (see pmeth_txwin_start_at).  Only while nothing is held. */
bool pmeth_rxwin_start_at(pmeth_rxwin_t *w, uint32_t seq);
/* What accept() would say, changing nothing. */
pmeth_rx_verdict_t pmeth_rxwin_classify(const pmeth_rxwin_t *w, uint32_t seq);
/* Take frame SEQ; for NEW_OUT_OF_ORDER the window keeps HANDLE until pop().
 * After NEW_IN_ORDER the caller delivers the frame, then pops its successors. */
pmeth_rx_verdict_t pmeth_rxwin_accept(pmeth_rxwin_t *w, uint32_t seq, uintptr_t handle,
                                      uint64_t now);
/* The next held frame that is now in order, if any (it is taken). */
bool pmeth_rxwin_pop(pmeth_rxwin_t *w, uintptr_t *handle);
/* Take any held frame (teardown). */
bool pmeth_rxwin_drain(pmeth_rxwin_t *w, uintptr_t *handle);
void pmeth_rxwin_ack_fields(const pmeth_rxwin_t *w, uint32_t *cum, uint64_t *sack);
/* A resent DATA frame (transmission XMIT > 0 of SEQ) arrived, new or not: its
 * echo goes back at once, in every ack from now on until a newer one arrives. */
static inline void pmeth_rxwin_saw_resend(pmeth_rxwin_t *w, uint32_t seq, uint8_t xmit)
{
    w->echo_valid = true;
    w->echo_seq = seq;
    w->echo_xmit = xmit;
    w->immediate = true;
}
/* The sender asks for an ack now (it used up its grant, pmeth_credit.h). */
static inline void pmeth_rxwin_ack_at_once(pmeth_rxwin_t *w) { w->immediate = true; }
/* The echo acks carry (false: none yet). */
static inline bool pmeth_rxwin_echo(const pmeth_rxwin_t *w, uint32_t *seq, uint8_t *xmit)
{
    *seq = w->echo_seq;
    *xmit = w->echo_xmit;
    return w->echo_valid;
}
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
/* Ack at once after at most N frames, below the configured ack_every (0: no
 * cap).  The caller's reason: a sender allowed only a few frames in flight
 * (its receive credits) must hear of room long before ack_every frames. */
static inline void pmeth_rxwin_set_ack_cap(pmeth_rxwin_t *w, uint32_t n) { w->ack_cap = n; }
static inline bool pmeth_rxwin_ack_due(const pmeth_rxwin_t *w, uint64_t now)
{
    return w->immediate || (w->unacked > 0 && now - w->first_unacked_ns >= w->cfg.ack_delay_ns);
}
/* When an ack falls due: 0 if at once, UINT64_MAX if none is owed. */
static inline uint64_t pmeth_rxwin_next_deadline(const pmeth_rxwin_t *w)
{
    return w->immediate ? 0 : w->unacked > 0 ? w->first_unacked_ns + w->cfg.ack_delay_ns
                                              : UINT64_MAX;
}

#endif
