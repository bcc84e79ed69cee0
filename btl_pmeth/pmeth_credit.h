/*
 * Receive credits that follow demand (seed 003's lesson, seed 001's receiver-
 * ready rendezvous).  No MPI; time is passed in (nanoseconds), so it is tested
 * on its own (test/unit/t_pmeth_credit).
 *
 * A receiver's rings hold a bounded number of frames, and so does the switch
 * port in front of it.  Without flow control every sender may have a whole
 * reliability window in flight: with several senders at once the ring or the
 * port overflows, frames are dropped and come again only after a retransmit
 * timeout (the collapse of seed 001's six-direction exchange).  HPVM (seed
 * 003) split its receive buffers evenly among all peers: each peer's share
 * shrank with the job even when few peers were sending.
 *
 * Here a receiver hands out a BUDGET of frames (its rings, or what the switch
 * port ahead of it can absorb, whichever is smaller) to the peers that are
 * sending now:
 *   - Every peer may always have FLOOR frames in flight beyond the receiver's
 *     cumulative ack, asked or not.  Small messages never wait for a grant, and
 *     no pattern of senders can deadlock: a sender always gets FLOOR frames out,
 *     and their arrival is its request.
 *   - Beyond that, a sender needs a grant.  The receiver counts the peers whose
 *     frames arrived during the current or the previous EPOCH (active peers) and
 *     grants each max(FLOOR, BUDGET / active) frames beyond its ack (policy
 *     DEMAND).  A sender alone gets the whole budget, not the window: frames it
 *     has in flight sit mostly in queues on the way (its own interface's, the
 *     port's), and when a second sender starts, those already queued cannot be
 *     called back.  A sender that was alone for the whole previous epoch too
 *     gets twice the budget: one link cannot overflow the port it feeds, and
 *     with just the port's worth a message of about that size stalls on its
 *     last frames until the acks of its first ones come back (acks come from
 *     the receiving process, and wait for it to run: on a loaded host, longer
 *     than the message takes on the wire).  The price: when a second sender
 *     starts, the first may have two ports' worth on the way once.  Policy
 *     STATIC is HPVM's:
 *     BUDGET / (every peer of the job), sending or not, kept for the comparison.
 *   - A grant rides on every ack the receiver sends (piggy-backed or standalone:
 *     one byte of the header, pmeth_wire.h), so it is paced by the frames that
 *     arrive, never a stop-and-wait.  The frame that uses up a sender's grant
 *     says so (MORE), and the receiver acks it at once.
 *   - A grant is a lease: a sender that heard nothing from the receiver for an
 *     EPOCH falls back to FLOOR.  So an idle peer's share returns to the pool
 *     without a message, and the receiver stops counting it two epochs after its
 *     last frame.
 * Credits are advice, not safety: reliability (pmeth_window.h) recovers any
 * frame the ring or a switch drops.  They keep drops rare enough that it
 * seldom has to.
 */
#ifndef PMETH_CREDIT_H
#define PMETH_CREDIT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum pmeth_credit_policy {
    PMETH_CREDIT_OFF = 0,               /* no limit but the reliability window */
    PMETH_CREDIT_STATIC = 1,            /* BUDGET split evenly over the job's peers */
    PMETH_CREDIT_DEMAND = 2,            /* BUDGET split over the peers sending now */
} pmeth_credit_policy_t;

/* The wire byte: 255 = no limit but the window, else a grant of byte x UNIT
 * frames beyond the ack, UNIT = max(1, window / 256).  A receiver whose policy
 * is off sends no byte at all (the CREDIT flag is clear). */
#define PMETH_CREDIT_WIRE_UNLIMITED 255u
#define PMETH_CREDIT_UNLIMITED UINT32_MAX
/* the largest budget: a lone sender is granted twice it, in 32 bits */
#define PMETH_CREDIT_BUDGET_MAX (1u << 30)

/* ---- receiver: one pool per process ---- */
typedef struct pmeth_credit_pool {
    pmeth_credit_policy_t policy;
    uint32_t budget;                    /* frames granted beyond acks, all peers together */
    uint32_t floor;                     /* frames any peer may always have in flight */
    uint32_t window;                    /* the reliability window: no grant exceeds it */
    uint32_t unit;                      /* frames one step of the wire byte stands for */
    uint32_t static_peers;              /* STATIC: the job's peers */
    uint64_t epoch_ns;
    uint64_t epoch_start;
    uint32_t epoch;                     /* number of the current epoch (from 1) */
    uint32_t active_now, active_before; /* peers heard in this and the previous epoch */
    uint32_t share;                     /* cached grant of one active peer */
    uint64_t share_changes;             /* the grant changed (statistics: "credit moves") */
} pmeth_credit_pool_t;

/* What the receiver keeps per peer: the epoch it was last counted in. */
typedef struct pmeth_credit_peer {
    uint32_t epoch;
} pmeth_credit_peer_t;

/* FLOOR >= 1; WINDOW a power of two; STATIC_PEERS >= 1.  A budget below the
 * floor is raised to it. */
void pmeth_credit_pool_init(pmeth_credit_pool_t *p, pmeth_credit_policy_t policy, uint32_t budget,
                            uint32_t floor, uint32_t window, uint32_t static_peers,
                            uint64_t epoch_ns, uint64_t now);
/* The budget is now BUDGET frames (raised to the floor): a link of the
 * receiver went down or came back, and only the rings and ports of its live
 * links take frames.  The shares follow at once. */
void pmeth_credit_pool_set_budget(pmeth_credit_pool_t *p, uint32_t budget);
/* A DATA frame of PEER arrived at NOW: PEER is active (demand). */
void pmeth_credit_arrival(pmeth_credit_pool_t *p, pmeth_credit_peer_t *peer, uint64_t now);
/* The grant of an active peer, in frames beyond its cumulative ack
 * (PMETH_CREDIT_UNLIMITED when the policy is OFF).  Recomputed as frames
 * arrive (pmeth_credit_arrival moves the epochs on), which is all it needs:
 * grants go out in the acks that answer those frames, and a peer that starts
 * after a quiet spell is counted, afresh, by its own first frame. */
static inline uint32_t pmeth_credit_share(const pmeth_credit_pool_t *p) { return p->share; }
/* The byte that carries a grant of FRAMES (rounded down to the unit, never
 * below the floor's; 255 from the window up). */
uint8_t pmeth_credit_encode(const pmeth_credit_pool_t *p, uint32_t frames);
/* Frames one step of the wire byte stands for, for a window of WINDOW frames. */
static inline uint32_t pmeth_credit_unit(uint32_t window)
{
    return window / 256 > 1 ? window / 256 : 1;
}
/* The frames a wire byte grants, for a window of WINDOW frames. */
static inline uint32_t pmeth_credit_decode(uint8_t byte, uint32_t window)
{
    return byte == PMETH_CREDIT_WIRE_UNLIMITED ? PMETH_CREDIT_UNLIMITED
                                               : (uint32_t) byte * pmeth_credit_unit(window);
}

/* ---- sender: one per peer ---- */
typedef struct pmeth_credit_grant {
    uint32_t frames;                    /* granted beyond the cumulative ack */
    uint32_t ack;                       /* the ack the newest grant came with */
    uint64_t until_ns;                  /* the lease ends (0: none heard yet) */
    bool unlimited;                     /* the peer sends no grants (its policy is off) */
} pmeth_credit_grant_t;

/* A frame from the receiver at NOW carried ACK and grant byte BYTE (HAS: the
 * byte is there; a frame without it means the receiver keeps no credits).  A
 * frame older than the newest grant (its ack is behind) changes nothing; nor
 * does one whose ack is past SENT_END, the next sequence number we would send
 * (forged, or another job's: grants are ordered by their acks, and one far
 * ahead would make every real grant look older than it). */
void pmeth_credit_grant_update(pmeth_credit_grant_t *g, bool has, uint8_t byte, uint32_t ack,
                               uint32_t sent_end, uint32_t window, uint64_t now,
                               uint64_t lease_ns);
/* Frames the sender may have in flight (sent, not cumulatively acknowledged)
 * now: the grant while its lease runs, else FLOOR. */
static inline uint32_t pmeth_credit_allowed(const pmeth_credit_grant_t *g, uint32_t floor,
                                            uint64_t now)
{
    if (g->unlimited) {
        return PMETH_CREDIT_UNLIMITED;
    }
    if (now < g->until_ns && g->frames > floor) {
        return g->frames;
    }
    return floor;
}

#endif
