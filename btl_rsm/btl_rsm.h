/*
 * btl rsm: Sun MPI's memory-to-memory messaging (seed 000, section 3) as an
 * Open MPI BTL, over the segment transport of rsm_seg.h.
 *
 * Concepts, one struct each:
 *   component  parameters, this rank's control segment, the poll lists
 *   module     the single BTL module (one rank, one set of areas)
 *   area       what this rank owns on one destination NUMA node: stripes of
 *              postbox queues + block pool (rsm_postbox.h), and their allocators
 *   endpoint   one peer: the outbound half connection (our queue in our area,
 *              acks in our control segment) and the inbound one (its queue in
 *              its area, our acks into its control segment); each made lazily
 *   frag       a send descriptor (local bookkeeping only)
 *   postbox    what crosses: rsm_postbox_t
 *
 * The CONTROL segment of a rank (its "ack segment") holds a connection doorbell
 * (a generation counter + one byte per possible sender) and one row of ack
 * bytes per destination; only peers write into it.
 */
#ifndef BTL_RSM_H
#define BTL_RSM_H

#include "xbtl_config.h"

#include "opal_config.h"
#include "opal/class/opal_bitmap.h"
#include "opal/constants.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/base/btl_base_error.h"
#include "opal/mca/btl/btl.h"
#include "opal/threads/mutex.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include <sys/types.h>

#include "rsm_pool.h"
#include "rsm_postbox.h"
#include "rsm_help.h"
#include "rsm_distance.h"
#include "rsm_seg.h"

/* Eager limit when the whole job is on one host: 64 KiB of payload plus ob1's
 * header, rounded to a cache line; 32 KiB where the pool cannot hold that */
#define RSM_EAGER_ONE_HOST (64 * 1024 + 64)
#define RSM_EAGER_ONE_HOST_SMALL_POOL (32 * 1024 + 64)
/* ... and on a host whose last-level cache is small (rsm_cache.h): 16 KiB + ob1's
 * header, everything longer read by single copy */
#define RSM_EAGER_ONE_HOST_SMALL_CACHE (16 * 1024 + 64)
#define RSM_TWO_COPY_LLC_MIN ((size_t) 16 << 20)
/* The least pool (a stripe) fit_pool_to_shm shrinks to: its large blocks
 * (7/8) still hold a 64 KiB eager message and a few pipeline fragments. */
#define RSM_POOL_FIT_MIN (256 * 1024)

#define RSM_VPOOL_CHUNKS_MAX 4     /* a verbs pool grows to at most this many chunks */
/* "RSMCTL02": written by an owner that holds the segment's lock for its life
 * (rsm_shm_hold), so that a later job can tell a dead owner's (rsm_shm_sweep);
 * "01" segments had no lock and are never swept */
#define RSM_CTL_MAGIC 0x52534d43544c3032ull
#define RSM_MODEX_VERSION 1
#define RSM_MAX_NUMA 64

/* ---- control segment layout (every offset a multiple of a cache line) ---- */
typedef struct rsm_ctl {
    uint64_t magic;
    uint8_t pad0[56];
    _Atomic uint64_t connect_gen;   /* bumped by a sender after it sets its byte */
    uint8_t pad1[56];
    /* uint8_t connect[nlocal];  then ack rows */
} rsm_ctl_t;

static inline size_t rsm_ctl_connect_off(void) { return sizeof(rsm_ctl_t); }
static inline size_t rsm_round64(size_t x) { return (x + 63) & ~(size_t) 63; }
static inline size_t rsm_ctl_ack_off(const rsm_layout_t *lay)
{
    return rsm_ctl_connect_off() + rsm_round64(lay->nqueues);
}
static inline size_t rsm_ctl_row_bytes(const rsm_layout_t *lay) { return rsm_round64(lay->queue_len); }
/* Shared single-copy work: a receiver's get of a large message is split with the
 * sender (btl_rsm_get.c); each split has one cache line here, in the receiver's
 * control segment, that both claim halves through. */
typedef struct rsm_help_slot {
    _Atomic uint64_t state;         /* gen << 8 | RSM_HELP_* */
    uint8_t pad[56];
} rsm_help_slot_t;
static inline size_t rsm_ctl_help_off(const rsm_layout_t *lay)
{
    return rsm_ctl_ack_off(lay) + (size_t) lay->nqueues * rsm_ctl_row_bytes(lay);
}
static inline size_t rsm_ctl_size(const rsm_layout_t *lay)
{
    size_t s = rsm_ctl_help_off(lay) + RSM_HELP_SLOTS * sizeof(rsm_help_slot_t);
    return (s + RSM_PAGE - 1) / RSM_PAGE * RSM_PAGE;
}
static inline rsm_help_slot_t *rsm_ctl_help(const rsm_layout_t *lay, void *ctl, unsigned slot)
{
    return (rsm_help_slot_t *) ((char *) ctl + rsm_ctl_help_off(lay)) + slot;
}
static inline _Atomic uint8_t *rsm_ctl_ack_row(const rsm_layout_t *lay, void *ctl, unsigned dest)
{
    return (_Atomic uint8_t *) ((char *) ctl + rsm_ctl_ack_off(lay) + dest * rsm_ctl_row_bytes(lay));
}

/* What each rank publishes in the modex. */
typedef struct rsm_modex {
    uint32_t version;
    uint32_t local_rank;
    int32_t numa_node;
    int32_t pid;
    uint64_t probe_addr;            /* a word the peer may read with process_vm_readv */
    uint64_t params;                /* fingerprint of the layout parameters */
    char tag[33];                   /* the random part of this rank's segment names */
} rsm_modex_t;

typedef struct rsm_area {
    const rsm_layout_t *lay;        /* the shm layout, or the verbs connections' (one queue) */
    int numa_node;
    rsm_seg_t seg[RSM_MAX_STRIPES];
    rsm_pool_t pool[RSM_MAX_STRIPES];
    /* STAGED frags alive (btl_rsm_frag.h): while any wait for blocks, new
     * messages are staged too and take none, or messages queued behind a
     * staged one could hold every block it waits for */
    uint32_t staged;
    /* Which chunks of each stripe's pool have their memory (rsm_seg_reserve), a
     * bit a chunk of 1 << chunk_shift bytes (64 KiB, or 1/64 of a larger pool);
     * chunk_shift 0: nothing to reserve (a verbs shadow).  A chunk is reserved
     * when a run first lands in it (rsm_area_reserve_runs): the pages then cost
     * what their first touch cost before, a sender of short messages keeps no
     * pool resident, and a ping-pong that reuses its first blocks pays for one
     * chunk, not the pool (4 MiB: 1 ms at once). */
    uint64_t reserved[RSM_MAX_STRIPES];
    uint8_t chunk_shift;
} rsm_area_t;

/* The chunks of its stripe's pool (rsm_area_t.reserved) that RUN covers, as a
 * mask; with chunk_shift 0, none.  64 chunks cover any pool. */
static inline uint64_t rsm_area_run_chunks(const rsm_area_t *area, const rsm_run_t *run)
{
    const unsigned shift = area->chunk_shift;
    if (shift == 0) {
        return 0;
    }
    const uint32_t first = run->offset >> shift;
    const uint32_t last = (uint32_t) (((uint64_t) run->offset + (run->len ? run->len : 1) - 1) >> shift);
    const uint64_t upto = last >= 63 ? ~UINT64_C(0) : (UINT64_C(2) << last) - 1;
    return first >= 64 ? 0 : upto & ~((UINT64_C(1) << first) - 1);
}

/* What an outstanding postbox holds until acked: the pool runs to free, and in
 * the first slot of what was published at once (an inline group, a pad, one
 * pointer postbox) how many slots that covers, so reclaim checks one ack per
 * message instead of one per postbox. */
typedef struct rsm_slot {
    uint8_t nruns;
    uint16_t span;
    rsm_run_t runs[RSM_PB_RUNS];
} rsm_slot_t;

struct mca_btl_rsm_frag_t;

struct mca_btl_base_endpoint_t {
    opal_proc_t *proc;
    uint32_t local_rank;
    pid_t pid;
    int numa_node;
    char tag[33];
    rsm_seg_t peer_ctl;             /* its control segment (doorbell, our ack row) */

    /* both directions: a node's queues and a verbs connection's may differ in length */
    uint32_t q_mask;                /* postboxes per queue - 1 */
    uint32_t q_shift;               /* log2(postboxes per queue) */
    uint32_t inline_max;            /* largest inline message, ob1 header included */

    /* outbound: us -> peer */
    bool out_connected, out_listed;
    bool remote;                    /* served by the verbs back end (btl_rsm_verbs.c) */
    rsm_area_t *area;
    rsm_postbox_t *out_queue;
    uint32_t tail, reclaimed;       /* next seq to write; oldest not yet acked */
    uint32_t collect_at;            /* tail at which acks are collected though there is room */
    uint32_t collect_mark;          /* tail - 1 at the last collection (the end of a unit) */
    bool pair_open;                 /* postbox tail - 1 is a PAIR whose second half is free, */
    uint32_t pair_tail;             /* ... if tail is still this (rsm_postbox.h, rsm_half_t) */
    /* MPI_T statistics (btl_rsm_pvar.c), beside tail: the send paths that bump
     * them write tail anyway, so they touch no other cache line */
    uint64_t sent_inline, sent_inline_bytes;  /* inline groups (ob1 headers included) */
    uint64_t sent_pool, sent_pool_bytes;      /* pointer-postbox fragments */
    uint64_t sent_paired;                     /* of sent_inline: in a PAIR's second half */
    rsm_slot_t *slots;
    uint32_t slots_with_runs;       /* unreclaimed slots holding pool runs */
    uint8_t *stale;                 /* per slot: last held group follow-on payload (rsm_postbox.h) */
    _Atomic uint8_t *out_acks;      /* its acks for us: a row of OUR control segment */
    uint32_t peer_consumed;         /* verbs: it consumed through this (exclusive), said in
                                       the immediates of its own units (rsm_vimm_pack) */
    struct mca_btl_rsm_frag_t *pending_head, *pending_tail;
    rsm_distance_t dist;            /* its core near ours? streaming, single copy (rsm_distance.h) */
    uint8_t dist_skip;              /* reclaims with new acks until the next timed one */
    uint64_t dist_bulk_mark;        /* bulk_taken_in() at our last timed sample */
    bool short_eager;               /* counted in short_eager_peers (rsm_distance_short_eager) */
    bool answered;                  /* a message came from it since our last pool allocation */
    bool streaming_to;              /* counted in streams_out (rsm_sent_to) */
    uint32_t unanswered;            /* messages sent to it since the last one from it */
    uint32_t reads_offered;         /* our buffers it may read now (live REMOTE_READ
                                       registrations for it: rsm_register_mem) */
    uint32_t both_ways_left;        /* rendezvous starts to it still offered by single copy
                                       though it is near: bulk ran both ways (btl_rsm_get.c) */

    /* inbound: peer -> us */
    bool in_connected;
    rsm_seg_t in_seg[RSM_MAX_STRIPES];
    rsm_postbox_t *in_queue;
    uint32_t head, unacked;         /* next seq to read; oldest not yet acked */
    bool pair_wait;                 /* head is a PAIR whose first half was delivered */
    bool pb_lost_extent;            /* the last postbox was dropped without knowing how many
                                     * it spans: is head still a message boundary? */
    bool pb_framing_lost;           /* no (said once; the job is going down) */
    uint32_t in_published;          /* verbs: the tail the newest immediate named */
    uint32_t in_pool_msgs;          /* pointer messages delivered (verbs: when to push acks) */
    const rsm_layout_t *in_lay;     /* the layout of the area we read */
    struct rsm_vpeer *v;            /* verbs: queue pairs, registrations (btl_rsm_verbs.c) */
    _Atomic uint8_t *in_acks;       /* our acks for it: a row of ITS control segment */
    rsm_assembler_t assembler;
    /* what ob1's receive callbacks get: zeroed with the endpoint, and only the
     * segments change per message (a descriptor zeroed on the stack per message
     * was 18% of a receiver's BTL time at 8 B).  An endpoint is never polled
     * from inside its own callback (the head moves after it). */
    mca_btl_base_descriptor_t rx_des;
    mca_btl_base_segment_t rx_segs[RSM_MSG_MAX_RUNS];
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;

typedef struct mca_btl_rsm_component_t {
    mca_btl_base_component_3_0_0_t super;

    /* parameters (btl_rsm_component.c registers them all) */
    unsigned int postboxes;         /* per queue, as set (0: sized to the node / 128 remote) */
    uint32_t local_postboxes;       /* per queue of the node's layout */
    uint32_t remote_postboxes;      /* per queue of a verbs connection */
    size_t pool_size;               /* per area, all stripes */
    unsigned int small_block, large_block;
    unsigned int inline_max;        /* as set (0: auto); after init the larger of the two: */
    uint32_t local_inline_max;      /* inline limit on the node */
    uint32_t remote_inline_max;     /* inline limit to ranks on other hosts */
    unsigned int pipeline_size;
    size_t one_host_eager;          /* eager limit of a job all on this host (default limit) */
    size_t nt_min;                  /* fragments this large are streamed into the pool ... */
    unsigned int nt_far_ns;         /* ... for receivers whose acks take this long to arrive */
    uint32_t nt_far_cycles;         /* the same in time-stamp-counter cycles (0: always far) */
    unsigned int two_copy_ns;       /* rendezvous by the pool below this distance, else get */
    uint32_t two_copy_cycles;       /* the same in cycles (0: never two copies) */
    size_t two_copy_llc_min;        /* two copies above 16 KiB only with this much LLC ... */
    size_t llc_bytes;               /* ... of which the host has this (0: not known) */
    bool small_cache;               /* below it: the one-host limit 16 KiB, single copy above */
    unsigned int short_eager_ns;    /* single-copy receivers nearer than this lower ... */
    bool distance_load_holds;       /* sets sampled under load decide nothing (rsm_distance.h) */
    uint32_t short_eager_cycles;    /* (the same in cycles; 0: never) ... */
    size_t eager_full, eager_short; /* ... the module's eager limit from full to short */
    uint32_t short_eager_peers;     /* endpoints measured in that band now */
    uint64_t eager_lowered;         /* times the limit went down to eager_short (MPI_T) */
    size_t loaded_eager;            /* ... and to this while we also take in bulk data (0: never) */
    size_t eager_loaded;            /* in effect: loaded_eager, or eager_short where it is lower */
    uint8_t load_bits;              /* the last distance samples' load bits (rsm_load_add) */
    bool under_load;                /* two in a row said so */
    uint64_t eager_load_lowered;    /* times the limit went down to eager_loaded (MPI_T) */
    unsigned int stream_sends;      /* sends with no answer that make a stream (0: never) */
    size_t stream_eager;            /* the limit of a one-way stream, as set ... */
    size_t eager_streaming;         /* ... and in effect (between eager_short and eager_full) */
    uint32_t streams_out;           /* endpoints we stream to: eager_loaded lifted while > 0 */
    unsigned int stripes;
    bool single_copy;
    size_t single_copy_min;         /* smallest message sent by RDMA get */
    bool pool_next_fit;             /* node pools: next fit, not first fit (rsm_pool.c) */
    size_t pool_lap;                /* ... round this many bytes of the pool (0: all) */
    bool pool_answer_hot;           /* ... but an answer takes first fit */
    bool single_copy_near;          /* also to receivers under two_copy_ns */
    bool single_copy_both_ways;     /* ... while bulk data also comes from them */
    size_t single_copy_split;       /* smallest get split with the sender (0: never) */
    bool rma;                       /* offer put, get and atomics to osc rdma (btl_rsm_rma.c) */
    bool float_atomics;             /* ... atomics on float and double among them */
    bool numa_place;
    unsigned int poll_budget;
    unsigned int first_seq;             /* every queue's first sequence number (testing) */
    bool pair_tiny;                 /* two tiny messages per postbox (rsm_half_t) ... */
    unsigned int pair_min_ns;       /* ... to receivers at least this far (0: every one) */
    uint32_t pair_min_cycles;       /* the same in cycles (0: every receiver) */
    bool site_default;              /* run in jobs that do not name rsm (xbtl_optin.h) */
    int verbs;                      /* 0 off, 1 remote peers, 2 every peer (btl_rsm_verbs.c) */
    unsigned verbs_block;           /* block size of the verbs pools */
    unsigned verbs_ack_delay_us;    /* a single pool message owed: acked when idle after this */
    bool verbs_direct;              /* pool messages of one run as one write (rsm_verbs.h) */
    unsigned verbs_listener;        /* answer connection requests while away from MPI
                                     * (1), or always from the thread (2) */
    char *verbs_devices;
    size_t verbs_pool_size;
    unsigned int verbs_pool_chunks, verbs_grow_after;
    unsigned int verbs_sq_depth, verbs_srq_depth, verbs_signal, verbs_connect_timeout_ms;
    unsigned int verbs_resend_ms;      /* unanswered REQ or GROW: again after this */
    int verbs_gid_index;
    unsigned int verbs_timeout, verbs_retry_count;
    size_t verbs_single_copy_min;   /* smallest message to a remote peer sent by RDMA read */
    unsigned verbs_rails;           /* most ports a connection stripes its reads over */
    size_t verbs_stripe_min;        /* smallest read cut across the rails */

    /* this rank */
    uint32_t my_local_rank, nlocal;
    int numa_node;
    char tag[33];
    rsm_layout_t layout;
    uint64_t params;
    rsm_layout_t vlayout;           /* a verbs connection's area: one queue, a small pool */
    rsm_layout_t vlayouts[RSM_VPOOL_CHUNKS_MAX + 1];   /* [k]: that pool grown to k chunks */
    uint64_t vparams;
    rsm_seg_t ctl;
    int ctl_hold;                   /* fd with the shared lock on ctl's file: "alive" */
    uint64_t seen_gen;
    bool accept_pending;            /* a doorbell rang for a peer we do not know yet */
    volatile uint64_t probe_word;
    bool single_copy_on;            /* CMA gets for peers on this host */
    bool rma_on;                    /* one-sided put / get / atomics offered (btl_rsm_rma.c) */
    bool verbs_single_copy_on;      /* RDMA-read gets for peers on other hosts */
    bool job_spans_hosts;           /* not every rank here (or the size unknown): the
                                       lock watch of btl_rsm_rma.c is on */

    mca_btl_base_endpoint_t **by_local_rank;
    mca_btl_base_endpoint_t **inbound;   /* polled by progress */
    uint32_t n_inbound;
    mca_btl_base_endpoint_t **outbound;  /* connected: acks reclaimed by progress */
    uint32_t n_outbound;
    uint32_t outbound_busy;         /* outbound endpoints with sends pending (rsm_send's queue) */
    rsm_area_t *areas[RSM_MAX_NUMA];

    struct mca_btl_rsm_frag_t *free_frags;
    opal_recursive_mutex_t lock;
    uint64_t dropped;               /* refused postboxes, all peers */
    uint64_t staged, refused;       /* message starts staged (pool full); refused (ob1 parks them) */
    uint64_t gets, get_bytes;       /* single-copy reads done (reported at finalize) */
    uint64_t helped, help_bytes;    /* halves of a peer's get we wrote for it */
    uint64_t help_gen;
    /* more statistics, all MPI_T pvars (btl_rsm_pvar.c): */
    uint64_t dropped_malformed, dropped_tag, dropped_help;   /* `dropped`, by cause */
    uint64_t splits, taken_back;    /* gets split with the sender; halves we copied after all */
    uint64_t both_ways_offers;      /* single copy offered to near receivers: bulk both ways */
    uint64_t near_decisions, far_decisions;                  /* rsm_distance.h, all peers */
    uint64_t distance_loaded;       /* distance sample sets ignored under load (rsm_distance.h) */
    uint64_t pool_full;             /* new fragments that found the pool full after reclaim */
    uint32_t n_parked;              /* split gets waiting for the sender's half */
    uint64_t rma_puts, rma_put_bytes;       /* one-sided puts done (CMA writes) */
    uint64_t rma_bounced;           /* one-sided puts and gets through a copy (verbs) */
    uint64_t amo_sent, amo_served;  /* atomics asked of peers; done for peers */
    uint64_t amo_refused;           /* of ours, refused by the target (not registered) */
    uint64_t dropped_amo;           /* peers' atomic requests or replies refused */
    uint32_t amo_replies_held;      /* replies waiting for room in the origin's queue */
    uint32_t amo_requests_held;     /* atomics of ours waiting to be sent (btl_rsm_rma.c) */
    uint64_t amo_held;              /* atomics ever held so (a callback inside progress) */
    struct rsm_parked_get *parked[RSM_HELP_SLOTS];
    uint64_t cleanup_registered;
    /* verbs statistics (MPI_T) */
    uint64_t v_connects, v_accepts, v_writes, v_write_bytes, v_ack_writes, v_bad_handshakes;
    uint64_t v_accepts_away;        /* of v_accepts, by the listener while the process was away */
    uint64_t v_posts;               /* ibv_post_send calls for writes (pvar verbs_posts) */
    uint64_t v_cq_waits;            /* waits for send completion queue room (verbs_cq_waits) */
    uint64_t v_acks_piggybacked;    /* units whose immediate carried acks we owed */
    uint64_t v_direct;              /* pool messages sent as one write (direct units) */
    uint64_t v_grows;               /* pools (per sender and destination host) grown a chunk */
    uint64_t v_registered;          /* bytes registered now */
    uint64_t v_registered_shared;   /* of those, pools mapped from another local rank's segment */
    uint64_t v_reads, v_read_bytes;         /* single-copy RDMA reads done as a receiver */
    uint64_t v_striped_reads;       /* of those, cut across two or more rails */
    uint64_t v_rail_read_bytes;     /* bytes those reads took over rails other than the first */
    uint64_t rma_striped_puts;      /* one-sided puts to another host cut across rails */
    uint64_t rma_rail_put_bytes;    /* bytes those puts wrote over rails other than the first */
    uint64_t v_user_registered;     /* bytes of user buffers registered now (rcache) */
    uint64_t v_user_registrations;  /* user-buffer registrations made (cache misses) */
    bool verbs_open;                /* the RDMA back end is up (progress polls it) */
    bool in_progress;
} mca_btl_rsm_component_t;

extern mca_btl_rsm_component_t mca_btl_rsm_component;
extern mca_btl_base_module_t mca_btl_rsm;

/* btl_rsm_module.c */
/* tells ob1 the job cannot go on (it aborts); the line it prints ends with the
 * reason rsm_fatal_reason recorded since the last rsm_fatal, if any */
void rsm_fatal(mca_btl_base_endpoint_t *ep, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void rsm_fatal_reason(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
mca_btl_base_descriptor_t *rsm_alloc(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                                     uint8_t order, size_t size, uint32_t flags);

/* btl_rsm_component.c */
uint64_t rsm_layout_fingerprint(const rsm_layout_t *lay);

/* btl_rsm_verbs.c: the RDMA-write back end */
bool rsm_verbs_init(bool job_on_one_host);
bool rsm_verbs_ready(void);
mca_btl_base_endpoint_t *rsm_verbs_add_proc(opal_proc_t *proc);
int rsm_verbs_connect(mca_btl_base_endpoint_t *ep);     /* OPAL_ERR_RESOURCE_BUSY: under way */
int rsm_verbs_progress(void);
void rsm_verbs_post_unit(mca_btl_base_endpoint_t *ep, uint32_t seq, uint32_t k);
void rsm_verbs_post_data(mca_btl_base_endpoint_t *ep, const void *addr, size_t len);
/* A pool message of one run as one write (a direct unit, rsm_verbs.h): can RUN,
 * its payload PAYLOAD_OFFSET bytes into it, go so?  Then post it, PB copied
 * ahead of the payload, instead of rsm_verbs_post_data + rsm_verbs_post_unit. */
bool rsm_verbs_direct_ok(const mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                         size_t payload_offset);
void rsm_verbs_post_direct(mca_btl_base_endpoint_t *ep, const rsm_run_t *run,
                           const void *payload_end, const rsm_postbox_t *pb);
void rsm_verbs_pool_full(mca_btl_base_endpoint_t *ep);   /* no blocks for EP's next fragment */
void rsm_verbs_finalize(void);
void rsm_verbs_counters(uint64_t *sent_inline, uint64_t *sent_inline_bytes, uint64_t *sent_pool,
                        uint64_t *sent_pool_bytes);
/* Single copy between hosts: a user buffer registered with the device (through
 * Open MPI's registration cache), and the receiver's RDMA read of a sender's
 * buffer over the sender's own connection to it (btl_rsm_get.c dispatches). */
struct mca_btl_base_registration_handle_t *rsm_verbs_register(void *base, size_t size,
                                                              bool remote_write);
int rsm_verbs_deregister(struct mca_btl_base_registration_handle_t *handle);
int rsm_verbs_get(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *local_handle,
                  struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
/* One-sided between hosts (btl_rsm_rma.c dispatches): osc rdma's put by RDMA
 * write, its get by RDMA read (rsm_verbs_get with no ob1 registration), both on
 * our own connection to the target; OPAL_ERR_OUT_OF_RESOURCE while it is made */
int rsm_verbs_put(mca_btl_base_endpoint_t *ep, void *local_address, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *local_handle,
                  struct mca_btl_base_registration_handle_t *remote_handle, size_t size,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
bool rsm_verbs_has_peers(void);     /* the back end serves a peer on another host */

/* btl_rsm_endpoint.c */
int rsm_endpoint_connect(mca_btl_base_endpoint_t *ep);
int rsm_accept_connections(void);
/* append EP to a growing array of endpoints (the poll lists) */
int rsm_ep_list_add(mca_btl_base_endpoint_t ***list, uint32_t *n, mca_btl_base_endpoint_t *ep);
/* Free what the receiver acked.  NEED: room is wanted now (a full queue or
 * pool), so every acked unit is collected; otherwise a periodic collection,
 * which may stop at the last collection's mark (rsm_endpoint_reclaim). */
void rsm_endpoint_reclaim(mca_btl_base_endpoint_t *ep, bool need);
int rsm_poll_second_half(mca_btl_base_endpoint_t *ep);
/* A stream to EP began (ON) or ended; the eager limit follows (btl_rsm_endpoint.c). */
void rsm_stream_changed(mca_btl_base_endpoint_t *ep, bool on);
/* ob1 sends EP a message: btl_rsm_stream_sends of them with no message from EP
 * in between make a stream, until a shorter run (rsm_heard_from).  A
 * descriptor ob1 asks for after a refused sendi counts again: a full queue is
 * a stream anyway. */
static inline void rsm_sent_to(mca_btl_base_endpoint_t *ep)
{
    if (OPAL_UNLIKELY(++ep->unanswered == mca_btl_rsm_component.stream_sends)) {
        rsm_stream_changed(ep, true);
    }
}
/* A message from EP was delivered: our next pool message answers it
 * (rsm_pool.c), and the run of sends to EP since the last message from it, if
 * any, has ended: a short run ends a stream to EP (a ping-pong's turn is one
 * message, or a rendezvous's FIN and the reply), a long one keeps it (windows
 * both ways).  The fields share the line the receive path writes anyway. */
static inline void rsm_heard_from(mca_btl_base_endpoint_t *ep)
{
    ep->answered = true;
    if (ep->unanswered != 0) {
        if (OPAL_UNLIKELY(ep->streaming_to)
            && ep->unanswered < mca_btl_rsm_component.stream_sends) {
            rsm_stream_changed(ep, false);
        }
        ep->unanswered = 0;
    }
}
/* Connected, or (verbs) connecting with the shadow area ready to pack into. */
static inline bool rsm_endpoint_can_pack(mca_btl_base_endpoint_t *ep)
{
    int rc = rsm_endpoint_connect(ep);
    return rc == OPAL_SUCCESS || (rc == OPAL_ERR_RESOURCE_BUSY && ep->area != NULL);
}
void rsm_endpoint_release(mca_btl_base_endpoint_t *ep);
void rsm_areas_release(void);
void rsm_ctl_release(void);
int rsm_seg_name(char *out, size_t len, const char *tag, const char *what, int a, int b);
int rsm_export_registered(rsm_seg_t *seg, const char *name, size_t size, int numa_node);
/* rsm_seg_reserve, and on failure the help message that says what /dev/shm
 * lacks: NEED bytes (what is still to be reserved) for WHAT (which part).
 * OPAL_SUCCESS or OPAL_ERROR. */
int rsm_reserve_or_say(rsm_seg_t *seg, size_t off, size_t len, size_t need, const char *what);
/* Give the pool chunks under RUNS their memory before the runs are written. */
int rsm_area_reserve_runs(rsm_area_t *area, const rsm_run_t *runs, unsigned n);

/* btl_rsm_send.c */
int rsm_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
             mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag);
int rsm_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
              struct opal_convertor_t *convertor, void *header, size_t header_size,
              size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
              mca_btl_base_descriptor_t **descriptor);
int rsm_send_pending(mca_btl_base_endpoint_t *ep);

/* btl_rsm_send.c: an internal inline message (rsm_tag_internal); false if no room */
bool rsm_send_internal(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *data, size_t len);

/* btl_rsm_get.c: single copy.  A registration handle; its first
 * btl_registration_handle_size bytes (RSM_HANDLE_WIRE) travel in ob1's RGET header
 * to the receiver, which needs the rkeys of a verbs registration, one per rail
 * (each port has its own protection domain).  A CMA registration needs nothing
 * from the wire (its rkeys are 0). */
/* TOKEN: nothing registered (a CMA get's local side); CMA: a range peers of this
 * host may read (rsm_reg_t); VERBS: a device registration; WINDOW: a one-sided
 * window's range, both CMA and (when peers on other hosts exist) device keys */
enum { RSM_REG_TOKEN = 0, RSM_REG_CMA = 1, RSM_REG_VERBS = 2, RSM_REG_WINDOW = 3 };
#define RSM_RAILS_MAX 4             /* = RSM_VRAILS_MAX (rsm_verbs.h) */
struct mca_btl_base_registration_handle_t {
    uint32_t rkey[RSM_RAILS_MAX];   /* verbs: the region's remote key on each rail */
    uint32_t lkey[RSM_RAILS_MAX];   /* verbs: its local keys (of no use to the peer) */
    uint32_t kind;                  /* RSM_REG_*; local only, never sent */
};
#define RSM_HANDLE_WIRE (RSM_RAILS_MAX * sizeof(uint32_t))
/* rsm's own messages, always inline, handled by rsm and never handed to an
 * upper layer: tags from the range Open MPI keeps for a BTL's internal use, past
 * the ones named in btl.h */
#define RSM_TAG_HELP (MCA_BTL_TAG_BTL + 12)        /* split get: write the second half */
#define RSM_TAG_AMO (MCA_BTL_TAG_BTL + 13)         /* one-sided atomic: request */
#define RSM_TAG_AMO_REPLY (MCA_BTL_TAG_BTL + 14)   /* ... and its reply */
static inline bool rsm_tag_internal(uint8_t tag)
{
    return (uint8_t) (tag - RSM_TAG_HELP) <= RSM_TAG_AMO_REPLY - RSM_TAG_HELP;
}
int rsm_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
            uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
            struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
            int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
struct mca_btl_base_registration_handle_t *rsm_register_mem(mca_btl_base_module_t *btl,
                                                            mca_btl_base_endpoint_t *ep, void *base,
                                                            size_t size, uint32_t flags);
int rsm_deregister_mem(mca_btl_base_module_t *btl, struct mca_btl_base_registration_handle_t *handle);
void rsm_help_serve(mca_btl_base_endpoint_t *ep, const void *data, uint32_t len);
int rsm_get_progress(void);
/* copy LEN bytes between us and PID (write: from our LOCAL); 0 or an errno */
int rsm_cma_copy(pid_t pid, bool write, void *local, uint64_t remote, size_t len);
/* may EP (NULL: this process) have a one-sided atomic on [addr, addr + len)? */
bool rsm_rma_atomic_allowed(const mca_btl_base_endpoint_t *ep, uint64_t addr, uint64_t len);

/* btl_rsm_rma.c: what Open MPI's osc rdma needs on one host */
int rsm_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
            uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
            struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
            int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int rsm_atomic_op(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *remote_handle,
                  mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int rsm_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                   uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                   struct mca_btl_base_registration_handle_t *remote_handle,
                   mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int rsm_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                     uint64_t value, int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata);
void rsm_rma_deliver(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *data, uint32_t len);
int rsm_rma_progress(void);         /* held replies and atomics; call while any is held */
void rsm_rma_finalize(void);

/* btl_rsm_pvar.c: the statistics as MPI_T performance variables */
void rsm_pvar_register(void);
/* keep a released endpoint's send counts in the totals */
void rsm_pvar_retire(const mca_btl_base_endpoint_t *ep);

/* btl_rsm_recv.c */
int rsm_poll_endpoint(mca_btl_base_endpoint_t *ep, unsigned budget);

/* Ack postboxes unacked..last: one byte each, the slot's lap tag. */
static inline void rsm_ack_through(mca_btl_base_endpoint_t *ep, uint32_t last)
{
    /* release: our reads of the message are done before the sender reuses it */
    rsm_acks_fill(ep->in_acks, ep->q_mask, ep->q_shift, ep->unacked, last + 1 - ep->unacked);
    ep->unacked = last + 1;
}

/* The receive fast path, inlined into progress: polling an empty queue is one
 * load; an inline group (the latency path) is one acquire load, the header
 * read once and checked (the parser's checks, inline), the callback straight
 * on the postboxes, and the acks.  Anything else goes to rsm_poll_endpoint.
 * REMOTE (a constant at each call): the queue of a peer on another host, whose
 * postboxes count as landed only up to the tail its newest immediate named
 * (btl_rsm_verbs.c's poll_recv_cq calls this once per completion); such a
 * queue carries no PAIRs. */
static inline __attribute__((always_inline)) int
rsm_poll_queue(mca_btl_base_endpoint_t *ep, unsigned budget, const bool remote)
{
    const uint32_t qlen = ep->q_mask + 1;
    unsigned delivered = 0;
    while (delivered < budget) {
        if (!remote && ep->pair_wait) {
            int r = rsm_poll_second_half(ep);
            if (r == 0) {
                return (int) delivered;
            }
            delivered += r > 0;
            continue;
        }
        const uint32_t head = ep->head, index = head & ep->q_mask;
        rsm_postbox_t *slot = &ep->in_queue[index];
        if (remote && head == ep->in_published) {
            return (int) delivered;
        }
        if (atomic_load_explicit(&slot->flag, memory_order_acquire) != rsm_pb_flag(head)) {
            if (OPAL_UNLIKELY(ep->pb_lost_extent)) {
                return (int) delivered + rsm_poll_endpoint(ep, budget - delivered);
            }
            return (int) delivered;
        }
        rsm_pb_hdr_t h = rsm_pb_read_hdr(slot);
        uint32_t k = rsm_inline_postboxes(h.nbytes);
        const mca_btl_active_message_callback_t *reg;
        bool pair = !remote && h.kind == (RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST | RSM_PB_PAIR);
        if (OPAL_UNLIKELY((h.kind != (RSM_PB_INLINE | RSM_PB_FIRST | RSM_PB_LAST)
                           && !(pair && h.nbytes <= RSM_PB_HALF_DATA))
                          || ep->assembler.active || h.nbytes > ep->inline_max
                          || k > qlen - index || h.tag >= MCA_BTL_TAG_MAX || rsm_tag_internal(h.tag)
                          || (reg = &mca_btl_base_active_message_trigger[h.tag])->cbfunc == NULL)) {
            return (int) delivered + rsm_poll_endpoint(ep, budget - delivered);
        }
        for (uint32_t i = 1; i < k; i++) {
            /* ask for the whole group at once: the copy-out would find its lines one by one */
            __builtin_prefetch(slot + i, 0, 3);
        }
        if (OPAL_UNLIKELY(ep->pb_lost_extent)) {
            ep->pb_lost_extent = false;     /* a message here: head was a boundary after all */
        }
        ep->rx_segs[0].seg_addr.pval = slot->u.data;
        ep->rx_segs[0].seg_len = h.nbytes;
        ep->rx_des.des_segments = ep->rx_segs;
        ep->rx_des.des_segment_count = 1;
        reg->cbfunc(&mca_btl_rsm, h.tag, &ep->rx_des, reg->cbdata);
        rsm_heard_from(ep);
        delivered++;
        if (pair) {
            ep->pair_wait = true;       /* acked once its second half is settled */
            continue;
        }
        rsm_ack_through(ep, head + k - 1);
        ep->head = head + k;
    }
    return (int) delivered;
}

static inline int rsm_poll(mca_btl_base_endpoint_t *ep, unsigned budget)
{
    return rsm_poll_queue(ep, budget, false);
}

#define RSM_LOCK() OPAL_THREAD_LOCK(&mca_btl_rsm_component.lock)
#define RSM_UNLOCK() OPAL_THREAD_UNLOCK(&mca_btl_rsm_component.lock)

#define RSM_VERBOSE(level, ...) \
    opal_output_verbose(level, opal_btl_base_framework.framework_output, "btl:rsm: " __VA_ARGS__)

#endif
