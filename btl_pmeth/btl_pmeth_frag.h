/*
 * A send fragment: local bookkeeping for one frame on the wire.  An ob1
 * descriptor is one fragment, or, for a pipeline fragment larger than a frame
 * (btl_pmeth_array_frames), the first of a buffer array: it carries ob1's
 * header and the start of the data, and the frames after it are fragments of
 * their own (INTERNAL: no ob1 behind them) chained on array_next until they
 * are sent, each then sequenced, acknowledged and resent like any frame.  Normally its segment points into a TX ring frame just past
 * the Ethernet and pmeth headers, so ob1 packs into the memory the kernel sends
 * and the frame itself is the retransmit copy until the peer acknowledges it.
 * When every frame of the link is in flight, a descriptor that starts a message
 * (PRIORITY) is STAGED in private memory instead of refused: ob1 4.1 can lose
 * track of message starts it has to retry out of order (btl_rsm_frag.h says
 * more); the bytes move into a frame (one counted copy) when one is free.
 */
#ifndef BTL_PMETH_FRAG_H
#define BTL_PMETH_FRAG_H

#include "btl_pmeth.h"

enum {
    PMETH_FRAG_IN_WINDOW = 0x01,        /* sent, waiting for its ack */
    PMETH_FRAG_USER_FREED = 0x02,       /* ob1 freed it before the ack came */
    PMETH_FRAG_PENDING = 0x04,          /* on the endpoint's pending list */
    PMETH_FRAG_INTERNAL = 0x08,         /* no ob1 descriptor behind it (sendi) */
    PMETH_FRAG_CB_QUEUED = 0x10,        /* posted: ob1's callback due at the next progress */
    PMETH_FRAG_CB_DONE = 0x20,          /* ob1 was called back (maybe before the ack) */
    PMETH_FRAG_CB_AT_ACK = 0x40,        /* posted near the limit: called back at its ack */
    PMETH_FRAG_CONT = 0x80,             /* not the last frame of its buffer array (wire CONT) */
};

typedef struct mca_btl_pmeth_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segment;
    struct mca_btl_pmeth_frag_t *next;  /* free list, or an endpoint's pending list */
    struct mca_btl_pmeth_frag_t *next_done;     /* the callbacks due (CB_QUEUED) */
    struct mca_btl_pmeth_frag_t *array_next;    /* the rest of its buffer array, until sent */
    /* the head of a buffer array shows ob1 a segment per frame (ob1 counts the
     * bytes a completed descriptor carried from its segments); allocated at a
     * frag's first array, kept while it is reused */
    mca_btl_base_segment_t *array_segs;
    mca_btl_base_endpoint_t *endpoint;
    uint8_t path;                       /* endpoint path (and so link) of the frame */
    uint8_t tag;
    uint8_t state;
    bool wait_grant;                    /* a message start's later frame: posted within the
                                         * peer's grant (bulk), however long it waits */
    int frame_id;                       /* -1: staged, no frame yet */
    uint32_t frame_len;                 /* as posted */
    uint32_t seq;
    uint8_t *staged;                    /* private bytes while no frame was free */
    uint32_t staged_cap;
} mca_btl_pmeth_frag_t;

mca_btl_pmeth_frag_t *pmeth_frag_get(mca_btl_base_endpoint_t *ep);
/* A frame for a fragment of SIZE payload bytes to EP on the path chosen for
 * that size; false if none is free. */
bool pmeth_frag_take_frame(mca_btl_pmeth_frag_t *frag, size_t size);
/* Frames for a message start of SIZE bytes (header and data): one frame, or
 * for more than a frame's payload (an eager limit of several frames,
 * btl_pmeth_eager_frames) a buffer array, HEAD first, every frame but the last
 * full and marked CONT, each segment's length set.  All or none: a message
 * start is never cut (ob1 4.1 sends no rest of an eager message), and never
 * waits for a grant. */
bool pmeth_frag_take_start(mca_btl_pmeth_frag_t *head, size_t size);
/* A message start of N frames to EP could be posted whole now: nothing waits
 * ahead of it, the window has room, and its frames after the first (bulk,
 * wait_grant) are within the peer's grant and our delay limit. */
bool pmeth_start_fits(mca_btl_base_endpoint_t *ep, uint32_t n);
/* A staged message start longer than a frame (alloc gave ob1 contiguous
 * private memory) becomes a buffer array of frames, HEAD keeping the first
 * frame's worth in its private memory: false without memory. */
bool pmeth_frag_split(mca_btl_pmeth_frag_t *head);
/* ob1 reads a completed descriptor's segments to count the bytes it sent: the
 * head of a buffer array shows one segment per frame.  False without memory. */
bool pmeth_frag_array_segments(mca_btl_pmeth_frag_t *head);
/* Private memory for SIZE bytes when no frame is free; false without memory. */
bool pmeth_frag_stage(mca_btl_pmeth_frag_t *frag, size_t size);
/* Copy a fragment out of its frame into private memory and give the frame
 * back (it cannot be posted now); false without memory. */
bool pmeth_frag_move_aside(mca_btl_pmeth_frag_t *frag);
/* Move a staged fragment's bytes into a frame (the one copy staging costs). */
bool pmeth_frag_unstage(mca_btl_pmeth_frag_t *frag);
/* Give back the frame (if any) and the frag, and the rest of its buffer
 * array if it was never sent. */
void pmeth_frag_put(mca_btl_pmeth_frag_t *frag);
/* Up to N - 1 more frames for the buffer array HEAD starts (frames of the
 * stripe, as free and as the window and the peer's grant let go now): how
 * many frames the array has, HEAD's included. */
unsigned pmeth_frag_array_take(mca_btl_pmeth_frag_t *head, unsigned n);
void pmeth_frag_release_all(void);
/* Acknowledged: call back unless done already, recycle when the BTL owns it or
 * ob1 freed it. */
void pmeth_frag_complete(mca_btl_pmeth_frag_t *frag, int status);
/* FRAG's frame was posted for the first time, its peer letting us have LIMIT
 * frames in flight (pmeth_send_limit).  Its bytes stay in the ring until
 * the peer acknowledges them, so ob1 may be told at once that it is done with
 * the fragment: ob1 keeps only a few pipeline fragments of a message in flight
 * (pml_ob1_send_pipeline_depth) and sends the next on each callback, so a
 * callback that waited for the ack would make every few frames wait a round
 * trip (and the receiver's delayed ack).  While the window, or the peer's grant
 * (pmeth_credit.h), is nearly used up the callback waits for the ack after all:
 * a fragment ob1 could not place then is retried on a callback, so one must
 * still come. */
void pmeth_frag_posted(mca_btl_pmeth_frag_t *frag, uint32_t limit);
/* The callbacks due since the last call (progress, not inside ob1's send). */
int pmeth_frag_drain_done(void);

static inline pmeth_link_t *pmeth_frag_link(const mca_btl_pmeth_frag_t *frag)
{
    return &mca_btl_pmeth_component.links[frag->endpoint->paths[frag->path].local];
}

/* Which path a fragment of SIZE payload bytes takes: small ones the primary
 * path (no reordering for latency-bound traffic; apm's current path), large
 * ones round-robin over the stripe (every path apm finds healthy). */
static inline uint8_t pmeth_path_for(mca_btl_base_endpoint_t *ep, size_t size)
{
    if (ep->nstripe <= 1 || size < mca_btl_pmeth_component.stripe_min) {
        return ep->primary;
    }
    uint8_t i = ep->stripe_next;
    if (i >= ep->nstripe) {
        i = 0;
    }
    ep->stripe_next = (uint8_t) (i + 1);
    return ep->stripe[i];
}

#endif
