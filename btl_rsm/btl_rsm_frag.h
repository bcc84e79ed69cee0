/*
 * A send fragment: local bookkeeping for one BTL descriptor.  INLINE frags
 * hold their bytes here and are copied into postboxes at send; POOL frags
 * point straight into blocks of the sender's area, so ob1 packs its data
 * where the receiver will read it (one copy in, one copy out).  STAGED frags
 * are pool messages built while the pool was full: the bytes wait in private
 * memory and move into blocks when they can be posted (rsm_frag_unstage), so
 * the BTL still takes the message and keeps the order of sends.  A BTL that
 * refuses a descriptor makes ob1 retry that send later, after newer ones,
 * and ob1 4.1 can lose track of fragments reordered that way (see rsm_sendi).
 */
#ifndef BTL_RSM_FRAG_H
#define BTL_RSM_FRAG_H

#include "btl_rsm.h"

enum { RSM_FRAG_INLINE = 1, RSM_FRAG_POOL = 2, RSM_FRAG_STAGED = 3 };

typedef struct mca_btl_rsm_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[RSM_MAX_STRIPES];
    struct mca_btl_rsm_frag_t *next;        /* free list, or an endpoint's pending list */
    mca_btl_base_endpoint_t *endpoint;
    uint8_t kind;
    uint8_t tag;                            /* while pending */
    uint8_t nruns;
    rsm_run_t runs[RSM_MAX_STRIPES];        /* POOL: the blocks as allocated */
    uint8_t *staged;                        /* STAGED: the message, malloc'ed */
    uint8_t data[];                         /* INLINE: inline_max bytes */
} mca_btl_rsm_frag_t;

mca_btl_rsm_frag_t *rsm_frag_get(mca_btl_base_endpoint_t *ep, uint8_t kind);
/* Return a frag; a POOL frag that was never sent gives its blocks back. */
void rsm_frag_put(mca_btl_rsm_frag_t *frag);
void rsm_frag_release_all(void);
/* The send is done: call back when asked, and recycle when the BTL owns it. */
void rsm_frag_complete(mca_btl_rsm_frag_t *frag, int status);
/* Where in its first block a message whose HDR-byte header is followed by
 * payload copied from SRC should start (0..63 bytes in), so that the payload
 * lands at SRC's offset modulo 64; SRC NULL (not known, or packed piecewise):
 * the payload is made 64-byte aligned.  Why: blocks are 64-byte aligned, ob1's
 * headers are 14 or 24 bytes, and user buffers are usually 64-byte (often page)
 * aligned, so the copy into the pool ran with the destination 14 or 24 bytes
 * past the source modulo 4 KiB.  glibc's memcpy on this CPU (rep movsb above a
 * few KiB) runs at ~2 GB/s instead of 65-100 GB/s when the destination is
 * 1..15 bytes past the source modulo 4 KiB, and at ~25 GB/s when they are not
 * mutually 64-byte aligned (bench: 8 KiB copies).  Source and destination equal
 * modulo 64 is the fast case, for the receiver's copy out too when its buffer
 * is aligned like the sender's. */
static inline uint32_t rsm_payload_skew(const void *src, size_t hdr)
{
    return (uint32_t) (((uintptr_t) src - hdr) & 63);
}
/* Runs for LEN bytes (split across stripes when long), the first starting
 * SKEW (< 64) bytes into its blocks (the blocks cover LEN + SKEW), and 64 more
 * to a peer on another host, for a direct unit's postbox (rsm_verbs.h); 0 or -1. */
int rsm_frag_alloc_runs(mca_btl_rsm_frag_t *frag, size_t len, bool may_stripe, uint32_t skew);
void *rsm_run_addr(rsm_area_t *area, const rsm_run_t *run);
/* Should a descriptor be staged rather than refused when the pool is full?
 * ob1 flags PRIORITY what starts a message (match, rendezvous and get headers,
 * which carry its sequence number) and its control messages; a long message's
 * pipeline fragments carry offsets, not sequence numbers, and ob1 reschedules
 * them in any order, so those are refused as before and take no extra copy. */
static inline bool rsm_frag_must_stage(uint32_t flags)
{
    return (flags & MCA_BTL_DES_FLAGS_PRIORITY) != 0;
}
/* Turn a POOL frag whose blocks could not be had into a STAGED one holding
 * LEN bytes in one segment; 0 or -1 (no memory). */
int rsm_frag_stage(mca_btl_rsm_frag_t *frag, size_t len);
/* btl_rsm_module.c: a descriptor of SIZE bytes for ob1 to fill, staged when
 * the pool is full and rsm_frag_must_stage(FLAGS); NULL when refused. */
mca_btl_rsm_frag_t *rsm_frag_for(mca_btl_base_endpoint_t *ep, size_t size, uint32_t flags,
                                 uint8_t order);
/* Pack up to *BYTES of ob1's data into IOV (*BYTES: what was packed); with
 * STREAM and contiguous data, by streaming stores (rsm_copy.h).  0 or an error. */
int rsm_pack(struct opal_convertor_t *convertor, struct iovec *iov, uint32_t iov_count,
             size_t *bytes, bool stream);
/* Should a copy of LEN bytes into the pool for EP stream?  Only for receivers
 * not measured near (rsm_distance.h), and only from nt_min bytes on. */
static inline bool rsm_stream_to(const mca_btl_base_endpoint_t *ep, size_t len)
{
    return len >= mca_btl_rsm_component.nt_min && !ep->dist.near;
}
/* Move a STAGED frag's bytes into pool blocks: it is a POOL frag afterwards.
 * false (nothing changed) while the pool is still full. */
bool rsm_frag_unstage(mca_btl_rsm_frag_t *frag);

#endif
