/*
 * btl pmeth: PM/Ethernet-HXB's buffer arrays (seed 001) as an Open MPI BTL:
 * raw Ethernet frames of our own EtherType through kernel-shared rings, no IP.
 *
 * Concepts, one struct each:
 *   component  parameters, the links of this process, the progress loop
 *   link       one local Ethernet interface and its frame ring (pmeth_ring.h):
 *              a rail of the buffer array
 *   module     the single BTL module: ob1 sees one module whatever the number
 *              of links; frames of one peer are striped over its paths below it
 *   endpoint   one peer: its paths (local link -> its MAC on the wire that
 *              link reaches), the reliability windows (pmeth_window.h), the
 *              fragments waiting for window space
 *   frag       a send descriptor; its payload lives in a TX ring frame, so ob1
 *              packs straight into the frame the NIC sends (zero copy)
 *   hdr        what crosses the wire: pmeth_wire.h
 *
 * Protocol logic that needs no MPI lives in the pmeth_*.c units (wire format
 * and parser, reliability window, ring I/O), unit-tested on their own.
 */
#ifndef BTL_PMETH_H
#define BTL_PMETH_H

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

#include <net/if.h>
#include <stdint.h>
#include <time.h>

#include "apm.h"
#include "apm_thread.h"
#include "pmeth_credit.h"
#include "pmeth_pace.h"
#include "pmeth_pathprobe.h"
#include "pmeth_ring.h"
#include "pmeth_window.h"
#include "pmeth_wire.h"

#define PMETH_MAX_LINKS 8
_Static_assert(PMETH_MAX_LINKS <= PMETH_PATHPROBE_PATHS, "pmeth_pathprobe keeps a round per path");
#define PMETH_MODEX_VERSION 3

/* What each process publishes in the modex: its links as peers address them. */
typedef struct pmeth_modex_link {
    char ifname[IFNAMSIZ];
    uint8_t mac[6];
    uint16_t small_rx_max;              /* frames up to this length reach the process
                                           through a second receive ring (AF_XDP beside
                                           AF_PACKET at a jumbo MTU) and may overtake
                                           larger ones; 0: one ring */
    uint32_t mtu;
} pmeth_modex_link_t;

typedef struct pmeth_modex {
    uint32_t version;
    uint32_t nlinks;
    uint32_t job_key;
    uint32_t window;                    /* btl_pmeth_window: the same in every process */
    /* The host link (btl_pmeth_host_link): 1 if this process may open one, at its
     * first add_procs, as link number NLINKS (after the published ones), over
     * loopback with MTU HOST_LINK_MTU.  Peers on the same host pair with it; no
     * one else can. */
    uint32_t host_link, host_link_mtu;
    char host[64];                      /* for messages that name both ends */
    /* Where loopback reaches: the kernel's boot id and the network namespace's
     * inode.  The same bytes = the same network stack (the host link pairs;
     * Ethernet frames do not come back); all zero where /proc did not say,
     * and then the same host name stands for it.  Host names alone are not
     * enough: hosts or containers may share one, and namespaces on one host
     * (containers, the virtual cluster) are separate stacks joined by links */
    uint8_t netstack[24];
    pmeth_modex_link_t links[PMETH_MAX_LINKS];
} pmeth_modex_t;

/* Frames the keeper may leave for progress, per link.  It answers peers'
 * PROBEs only while it can take frames from the ring: at 32, a rank away from
 * MPI that had been sent 32 frames no longer answered a peer meeting it for the
 * first time, which then called it unreachable */
#define PMETH_DEFER_MAX 256
/* The fewest frames a receiver lets pass before it acknowledges at once: the
 * interval of btl_pmeth_ack_every's default at large MTUs (an ack per 64 KiB
 * otherwise), and the floor of the one a small grant sets (btl_pmeth_recv.c) */
#define PMETH_ACK_EVERY_MIN 8
#define PMETH_PROBE_ALIVE 2    /* probe_small: the peer answered after the full probe went */

typedef struct pmeth_link {
    char ifname[IFNAMSIZ];
    int ifindex;
    uint8_t mac[6];
    uint32_t mtu;                       /* the interface's MTU: payload of a frame */
    bool on_host;                       /* the host link: loopback, to this host's ranks only */
    unsigned int ring_tx, ring_rx;      /* its ring's frames (0: btl_pmeth_tx/rx_frames) */
    struct pmeth_ring *ring;
    uint32_t unkicked;                  /* frames posted since the last kick */
    bool refused;                       /* the last kick found the link down */
    struct pmeth_held *held_oldest, *held_newest;   /* frames held in this link's ring */
    struct pmeth_held *xheld_oldest, *xheld_newest; /* and of its AF_XDP socket, as they came */
    /* frames the keeper took from the ring and left for progress (all but the
     * acks it could take itself), and data frames progress could not give ob1
     * yet, in ring order: progress takes them first */
    struct pmeth_rx_frame deferred[PMETH_DEFER_MAX];
    uint32_t ndeferred;
    /* statistics (MPI_T and the finalize summary) */
    uint64_t frames_out, bytes_out, frames_in, bytes_in;
} pmeth_link_t;

/* One way to a peer: our link LOCAL reaches the peer's interface PEER_LINK
 * (MAC PEER_MAC), both ends agreeing on the MTU (probed). */
typedef struct pmeth_path {
    uint8_t local;
    uint8_t peer_link;
    uint8_t peer_mac[6];
    uint16_t small_rx_max;              /* the peer link's (modex): a frame's lane */
    uint32_t mtu;
} pmeth_path_t;

/* The window lane of a frame of LEN bytes on PATH (pmeth_window.h). */
static inline unsigned pmeth_path_lane(const pmeth_path_t *path, uint32_t len)
{
    return len <= path->small_rx_max;
}

enum pmeth_ep_state {
    PMETH_EP_NEW = 0,                   /* known from the modex, not probed */
    PMETH_EP_PROBING,
    PMETH_EP_READY,                     /* at least one path answered both probes */
    PMETH_EP_UNREACHABLE,
};

struct mca_btl_pmeth_frag_t;

/* A received DATA frame held out of order until the gap before it fills. */
typedef struct pmeth_held {
    struct pmeth_held *next;            /* free list */
    struct pmeth_held *lap_prev, *lap_next;     /* its link's held frames, oldest first */
    uint8_t link;
    bool on_lap;                        /* on that list: its slot is refilled in ring order */
    bool on_xlist;                      /* on the link's AF_XDP list instead */
    int id;                             /* receive ring slot, -1 once moved aside */
    void *frame;
    uint32_t len;
    uint8_t *copy;                      /* the frame's bytes once moved out of the ring */
} pmeth_held_t;

struct mca_btl_base_endpoint_t {
    opal_proc_t *proc;                  /* NULL while only probed ahead (pmeth_probe_ahead) */
    opal_process_name_t name;           /* for messages, also before ob1 adds the peer */
    uint32_t peer_id;                   /* its vpid: the destination field of our frames */
    bool on_host;                       /* it shares our network stack (modex netstack):
                                           reached over the host link only */
    int8_t peer_host_link;              /* its host link's index in modex.links, -1: none
                                           (not on this host, or it opens none) */
    uint8_t state;
    uint8_t npaths;
    uint8_t primary;                    /* path of small frames */
    uint8_t stripe_next;                /* next path of a large frame */
    pmeth_path_t paths[PMETH_MAX_LINKS];
    pmeth_modex_t modex;

    /* probing: per (local link, peer link) which probes came back */
    uint64_t probe_nonce;
    uint64_t probe_start_ns, probe_next_ns, probe_last_step_ns;
    uint64_t probe_listened_ns;         /* time probed while this process polled its rings */
    uint64_t probe_answer_ns;           /* probe_listened_ns when the first answer came */
    bool probe_answered;
    bool probe_news;                    /* an answer came since its last step */
    bool probed_ahead;                  /* its probes began before ob1 asked for it */
    bool reprobed;                      /* called unreachable, then heard from: probed again */
    /* small probe: 0 no answer, 1 answered, PMETH_PROBE_ALIVE answered again after
     * the pair's full-MTU probe went (so a missing full answer is the MTU's doing,
     * not a peer that ended or stopped) */
    uint8_t probe_small[PMETH_MAX_LINKS][PMETH_MAX_LINKS];
    uint8_t probe_full[PMETH_MAX_LINKS][PMETH_MAX_LINKS];
    uint32_t probe_mtu_seen[PMETH_MAX_LINKS][PMETH_MAX_LINKS];

    /* path migration (btl_pmeth_apm.c): one apm connection over the paths.
     * primary = apm's current path (or the stripe's first while apm's is out of
     * it and a migration waits); the stripe = the paths apm finds healthy */
    apm_conn_t *apm_conn;
    _Atomic bool apm_dirty;             /* apm changed something: re-read it (progress) */
    /* apm asks for a path to be loaded: its generation << 32 | (path + 1), 0
     * for none; one word, so that path and generation are read as one pair
     * when apm's thread asks again meanwhile */
    _Atomic uint64_t apm_load;
    uint8_t nstripe;
    uint8_t stripe[PMETH_MAX_LINKS];    /* paths large frames are spread over */
    uint32_t usable;                    /* bit per path: in the stripe */
    uint8_t reply_path;                 /* standalone acks go here (the peer's current path) */
    bool apm_watched;                   /* on the component's apm watch list */
    bool apm_failed;                    /* no path left (apm FAILED) */
    int load_path;                      /* a load being checked (-1: none) */
    uint32_t load_gen;
    unsigned load_tries;
    uint64_t load_sent_ns;
    uint64_t heal_sent_ns[PMETH_MAX_LINKS];
    uint64_t apm_served_ns;             /* the last service() of this endpoint's paths */
    uint64_t failed_attended_ns;        /* time with no path while we were here to probe */
    uint64_t apm_nonce;                 /* of our path probes (not the start-up ones) */
    pmeth_pathprobe_t probes;           /* their serials: which answers count */
    uint64_t probe_heard_ns[PMETH_MAX_LINKS];   /* a path probe last answered there */
    uint64_t alive_probe_ns;            /* a link fell silent: every path was probed */
    uint64_t alive_recheck_ns;          /* when to look again for the silent path's answer */
    uint64_t recover_from_ns;           /* a path left the stripe with frames in flight */
    uint8_t health_was[PMETH_MAX_LINKS];/* apm's health of each path at the last refresh */
    uint64_t repaired_ns[PMETH_MAX_LINKS];      /* its link came back (DOWN -> PROBING) */
    uint16_t dup_resends;               /* resends of frames we had: our acks are lost */
    uint64_t dup_since;

    /* reliability, allocated at first use */
    pmeth_txwin_t *tx;
    pmeth_rxwin_t *rx;
    struct mca_btl_pmeth_frag_t *pending_head, *pending_tail;  /* waiting for window space */
    bool active;                        /* on the component's active list */
    uint32_t active_index;
    bool ack_queued;                    /* on the component's ack queue (pmeth_acks_flush) */

    /* receive credits (pmeth_credit.h): the peer's grant to us, and what we
     * keep to count it among the peers sending to us */
    pmeth_credit_grant_t grant;
    pmeth_credit_peer_t credit_peer;
    uint32_t more_seq;                  /* the last frame that asked for a grant (MORE) */
    uint32_t cb_at_ack;                 /* frags in flight whose ob1 callback waits for the
                                           ack: a fragment refused for want of a grant is
                                           retried on one of those callbacks */
    bool credit_blocked;                /* a bulk fragment was refused: no grant (counted once) */
    pmeth_pace_t pace;                  /* our delay limit to the peer (pmeth_pace.h) */
    uint32_t delay_ref;                 /* the first one-way delay the peer reported: later
                                           ones are taken relative to it (unknown clock offset) */
    bool delay_ref_set;
    bool delay_have;                    /* delay_least is owed to the peer (wire bytes 60-63) */
    uint32_t delay_least;               /* least one-way delay of its DATA frames since */

    /* the buffer array coming in (btl_pmeth_recv.c): its frames so far, in
     * sequence order, held where they are until its last one is in */
    pmeth_held_t *array_first, *array_last;
    pmeth_wire_array_t array;           /* the rule's state (pmeth_wire.h) */
};
typedef struct mca_btl_base_endpoint_t mca_btl_base_endpoint_t;

typedef struct mca_btl_pmeth_component_t {
    mca_btl_base_component_3_0_0_t super;

    /* parameters (btl_pmeth_component.c registers them all) */
    bool site_default;                  /* used in jobs that do not name it */
    char *if_include, *if_exclude;
    char *io_mode;                      /* auto | packet | xdp */
    unsigned int ethertype;
    unsigned int tx_frames, rx_frames;
    unsigned int window;
    unsigned int rto_min_us, rto_max_ms;
    unsigned int ack_delay_us, ack_every;
    unsigned int fast_retransmit, resend_cap;
    unsigned int stripe_min;
    unsigned int array_frames;          /* frames one pipeline fragment may span */
    unsigned int eager_frames;          /* frames an eager message may span */
    unsigned int array_min_paths;       /* ... for peers striped over this many paths */
    unsigned int probe_timeout_ms, probe_interval_ms;
    unsigned int probe_ahead;           /* peers probed in the background beside one asked for */
    bool qdisc_bypass;
    unsigned int direct_max;            /* btl_pmeth_direct_max: lone frames past the ring */
    unsigned int poll_budget, kick_batch, send_burst;
    bool posting_array;                 /* an array's frames being posted: one kick after */
    uint32_t burst_used;                /* frames posted since this progress pass began */
    unsigned int yield_us;              /* idle this long: sched_yield() once */
    int credit_policy;                  /* pmeth_credit_policy_t */
    unsigned int credit_budget, credit_port_bytes, credit_floor, credit_lease_us;
    uint64_t idle_since_ns, yields;
    unsigned int keeper_us;             /* the keeper's interval; 0: no keeper thread */

    /* this process */
    uint32_t my_id, job_key;
    uint32_t nlinks;                    /* the Ethernet links, then the host link if open */
    uint32_t nic_links;                 /* the Ethernet links: links[0 .. nic_links) */
    pmeth_link_t links[PMETH_MAX_LINKS];
    int host_link_mode;                 /* btl_pmeth_host_link: 0 never, 1 always, 2 auto */
    int host_link;                      /* its index in links[], -1 while none is open */
    bool host_link_decided;             /* pmeth_host_link_decide ran (the first add_procs) */
    uint32_t frame_payload;             /* bytes of ob1 data one frame carries */
    pmeth_modex_t modex;
    pmeth_window_config_t wcfg;
    pmeth_credit_pool_t credits;        /* what we grant the peers sending to us */
    uint32_t links_up;                  /* links up when the budget was last set (a mask) */
    uint64_t credit_lease_ns;
    unsigned int pace_target_us;
    pmeth_pace_config_t pace;           /* the senders' delay limit (pmeth_pace.h) */

    mca_btl_base_endpoint_t **by_id;    /* peers by vpid */
    uint32_t nby_id;
    mca_btl_base_endpoint_t **active;   /* endpoints with unacked, pending or unacknowledged frames */
    uint32_t nactive, active_cap;
    mca_btl_base_endpoint_t **ack_queue;        /* owe an ack at once: sent after the polling */
    uint32_t nack_queue, ack_queue_cap;
    struct mca_btl_pmeth_frag_t *free_frags;
    struct mca_btl_pmeth_frag_t *done_head, *done_tail;    /* ob1 callbacks due now */
    bool early_completion;
    pmeth_held_t *free_held;
    opal_recursive_mutex_t lock;
    bool keeper_on;                     /* the keeper runs: the lock is taken for real */
    _Atomic uint64_t progress_calls;    /* the keeper's sign that the process is in MPI */
    uint64_t keeper_passes, keeper_frames;  /* its work while the process was away */
    uint64_t keeper_probes;             /* peers' PROBEs it answered meanwhile */
    uint64_t keeper_rma;                /* peers' one-sided requests it served meanwhile */
    bool in_progress;
    bool probing;                       /* add_procs is probing: DATA is not taken yet */
    mca_btl_base_endpoint_t **probe_bg; /* peers probed ahead, in the background */
    uint32_t nprobe_bg, probe_bg_cap;
    uint32_t probe_ahead_next;          /* the vpid pmeth_probe_ahead looks at next */
    bool probe_ahead_swept;             /* it found every peer of the job known */

    /* statistics */
    uint64_t drops[PMETH_WIRE_NVERDICTS];   /* frames dropped by the parser, by cause */
    uint64_t out_of_window, duplicates;
    uint64_t early_callbacks;           /* ob1 told a fragment was done before its ack */
    uint64_t peers_added_lazily;        /* senders we met before ob1 added them */
    uint64_t data_kept;                 /* data frames kept for the next poll, not dropped */
    uint64_t deferred_released;         /* frames left for progress, given back unread */
    uint64_t peers_probed_ahead;        /* peers probed before ob1 asked for them */
    uint64_t peers_reprobed;            /* peers called unreachable that then sent to us */
    uint64_t held_moved;                /* held frames copied out of a ring about to wrap */
    uint32_t lazy_ids[8];               /* such senders seen in this progress call */
    uint32_t nlazy;
    uint64_t retransmits_timeout, retransmits_fast;
    uint64_t acks_sent, acks_piggybacked;
    uint64_t refused;                   /* descriptors refused: ob1 retries them later */
    uint64_t burst_waits;               /* bulk fragments refused: the pass's burst was used */
    uint64_t start_waits;               /* later frames of message starts that had to wait */
    uint64_t sendi_refused;
    uint64_t staged, staged_bytes;      /* frags that waited in private memory: a copy */
    uint64_t copies_tx, copies_rx;      /* bytes the BTL itself copied (0 on the fast path) */
    uint64_t delivered, delivered_bytes;
    uint64_t arrays_sent, arrays_received;      /* fragments of more than one frame */
    uint64_t arrays_dropped;            /* malformed arrays from a peer (frames dropped) */
    uint64_t credit_waits;              /* a frame waited for the peer's grant */
    uint64_t credit_asked;              /* frames sent that used up our grant (MORE) */
    uint64_t pace_cuts;                 /* a delay limit was lowered: a queue stood on a path */
    uint64_t pace_lifts;                /* a delay limit grew back past the grant */
    uint64_t credit_requests;           /* MORE frames received: answered by an ack at once */

    /* one-sided operations for osc rdma (btl_pmeth_rma.c) */
    int rma_mode;                       /* btl_pmeth_rma: 0 off, 1 on, 2 auto */
    bool rma;                           /* put, get and atomics offered to osc rdma */
    bool rma_decided;                   /* pmeth_rma_decide ran (the first add_procs) */
    uint64_t rma_puts, rma_put_bytes, rma_gets, rma_get_bytes, rma_atomics_sent;
    uint64_t rma_served;                /* peers' puts and gets done on our memory */
    uint64_t rma_atomics_served;        /* ... and their atomics */
    uint64_t rma_refused;               /* ... refused: not in registered memory */
    uint64_t rma_refused_by_peer;       /* ours a peer refused */
    uint64_t rma_malformed;             /* requests or answers dropped as malformed */
    uint64_t rma_held;                  /* messages waiting to be sent from progress (now) */
    uint32_t rma_puts_owed;             /* puts served, their PUT_DONE not yet sent */
    uint64_t rma_put_answers;           /* PUT_DONE messages sent (each answers 1-128 puts) */

    /* path migration (btl_pmeth_apm.c) */
    int apm_mode;                       /* 0 off, 1 on, 2 auto (on with 2 links or more) */
    unsigned int apm_detect_probes, apm_detect_ms, apm_probe_ms, apm_heal_probes;
    unsigned int apm_holddown_ms, apm_fail_timeout_ms, apm_migrate_ms;
    int apm_policy;
    apm_t *apm;
    apm_thread_t *apm_thread;
    _Atomic uint32_t apm_changes;       /* bumped by apm's callbacks (any thread) */
    uint32_t apm_changes_seen;
    mca_btl_base_endpoint_t **apm_watch;        /* endpoints with a path not healthy or a load */
    uint32_t napm_watch, apm_watch_cap;
    uint64_t apm_next_ns;               /* next pass over the watch list */
    uint64_t apm_next_migrate_ns;
    uint64_t apm_frames_moved, apm_move_waits, apm_paths_dead, apm_probes_sent;
    /* fault (the first evidence: an unanswered probe, the kernel's event) to the
     * first acknowledgement after the frames moved: traffic flowing again */
    uint64_t apm_recoveries, apm_recover_last_ns, apm_recover_worst_ns;
    /* a link back up (the kernel's word) to its path back in the stripe */
    uint64_t apm_rejoins, apm_rejoin_last_ns, apm_rejoin_worst_ns;
} mca_btl_pmeth_component_t;

extern mca_btl_pmeth_component_t mca_btl_pmeth_component;
extern mca_btl_base_module_t mca_btl_pmeth;

/* A real lock when the application has threads or the keeper runs
 * (btl_pmeth_keeper.c); keeper_on changes only while nobody holds it. */
#define PMETH_LOCK()                                                                    \
    do {                                                                                \
        if (mca_btl_pmeth_component.keeper_on || opal_using_threads()) {                \
            opal_mutex_lock(&mca_btl_pmeth_component.lock);                             \
        }                                                                               \
    } while (0)
#define PMETH_UNLOCK()                                                                  \
    do {                                                                                \
        if (mca_btl_pmeth_component.keeper_on || opal_using_threads()) {                \
            opal_mutex_unlock(&mca_btl_pmeth_component.lock);                           \
        }                                                                               \
    } while (0)

#define PMETH_VERBOSE(level, ...) \
    opal_output_verbose(level, opal_btl_base_framework.framework_output, "btl:pmeth: " __VA_ARGS__)

static inline uint64_t pmeth_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* The wire's stamps (bytes 56-59): CLOCK_REALTIME, the clock AF_PACKET stamps
 * arriving frames with, in microseconds modulo 2^32.  The peer's clock is
 * another host's: only changes of a one-way delay mean anything. */
static inline uint32_t pmeth_stamp_us(uint64_t wall_ns) { return (uint32_t) (wall_ns / 1000); }
static inline uint64_t pmeth_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* Frames EP may have in flight at NOW, by the peer's grant (pmeth_credit.h)
 * and the reliability window: the cap our delay limit grows back to. */
static inline uint32_t pmeth_send_cap(const mca_btl_base_endpoint_t *ep, uint64_t now)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->grant.unlimited) {
        return c->wcfg.window;
    }
    uint32_t allowed = pmeth_credit_allowed(&ep->grant, c->credit_floor, now);
    return allowed < c->wcfg.window ? allowed : c->wcfg.window;
}

/* Frames EP may have in flight at NOW: the cap above, or our delay limit
 * when that is less (pmeth_pace.h). */
static inline uint32_t pmeth_send_limit(const mca_btl_base_endpoint_t *ep, uint64_t now)
{
    uint32_t cap = pmeth_send_cap(ep, now);
    uint32_t pace = pmeth_pace_limit(&ep->pace);
    return pace < cap ? pace : cap;
}

/* A limit below the reliability window applies to EP (a grant, a delay
 * limit): bulk fragments beyond it are refused, the frame that reaches it
 * asks for an ack at once. */
static inline bool pmeth_send_limited(const mca_btl_base_endpoint_t *ep)
{
    return !ep->grant.unlimited || pmeth_pace_limit(&ep->pace) != PMETH_PACE_NONE;
}

/* btl_pmeth_component.c: close the links' rings (finalize) */
void pmeth_component_release(void);

/* btl_pmeth_pvar.c */
void pmeth_pvar_register(void);
/* The BTL's own memory now, by term (README "Memory" states the formula):
 * what grows with links, with peers that have traffic, with peers known. */
typedef struct pmeth_memory {
    uint64_t rings;                     /* pmeth_ring_memory() of every link */
    uint64_t windows;                   /* both windows of every peer that has them */
    uint64_t endpoints;                 /* one endpoint per peer known */
    uint64_t apm;                       /* an apm connection per peer reached (path migration on) */
    uint64_t by_id;                     /* the table of peers by vpid */
    uint64_t total;
    uint32_t links, peers, peers_with_windows;
} pmeth_memory_t;
void pmeth_memory(pmeth_memory_t *m);

/* btl_pmeth_module.c */
void pmeth_fatal(mca_btl_base_endpoint_t *ep, const char *what);
/* The number of processes in this job (PMIx's job data; 0 if not known). */
uint32_t pmeth_job_size(void);
/* Has the job ranks on other hosts than this one (as Open MPI counts local peers)? */
bool pmeth_job_spans_hosts(void);

/* btl_pmeth_endpoint.c */
mca_btl_base_endpoint_t *pmeth_endpoint_create(const opal_process_name_t *name, opal_proc_t *proc,
                                               const pmeth_modex_t *modex);
/* Probe EPS until each is decided (READY or UNREACHABLE); blocks the caller. */
int pmeth_endpoints_probe(mca_btl_base_endpoint_t **eps, size_t n);
/* Start probing EP without waiting for it; progress decides it. */
int pmeth_probe_in_background(mca_btl_base_endpoint_t *ep);
/* EP was called unreachable, yet a frame of its own came: probe it again at
 * the next need (once). */
void pmeth_endpoint_heard(mca_btl_base_endpoint_t *ep);
/* Progress of the background probes: how many were decided. */
int pmeth_probe_progress(void);
/* Probe ahead up to btl_pmeth_probe_ahead peers of the job that nobody asked for yet. */
void pmeth_probe_ahead(void);
void pmeth_endpoint_release(mca_btl_base_endpoint_t *ep);
int pmeth_endpoint_windows(mca_btl_base_endpoint_t *ep);
/* The component's lists of peers (active, probed in the background, owing an
 * ack, watched by path migration) grow by doubling: room for one more beside
 * the N in *LIST; false, with the list as it was, when memory ran out. */
bool pmeth_endpoint_list_room(mca_btl_base_endpoint_t ***list, uint32_t n, uint32_t *cap);
void pmeth_endpoint_activate(mca_btl_base_endpoint_t *ep);
void pmeth_endpoint_deactivate(mca_btl_base_endpoint_t *ep);
void pmeth_answer_probe(pmeth_link_t *link, const pmeth_wire_view_t *v);
void pmeth_probe_reply(pmeth_link_t *link, const pmeth_wire_view_t *v);

/* btl_pmeth_rma.c: one-sided operations as pmeth's own messages, served by the
 * target's progress.  Their tags sit in the BTL's own range, below ob1's. */
#define PMETH_TAG_RMA_PUT (MCA_BTL_TAG_BTL + 8)
#define PMETH_TAG_RMA_PUT_DONE (MCA_BTL_TAG_BTL + 9)
#define PMETH_TAG_RMA_GET (MCA_BTL_TAG_BTL + 10)
#define PMETH_TAG_RMA_GET_DATA (MCA_BTL_TAG_BTL + 11)
#define PMETH_TAG_RMA_AMO (MCA_BTL_TAG_BTL + 12)
#define PMETH_TAG_RMA_AMO_REPLY (MCA_BTL_TAG_BTL + 13)
static inline bool pmeth_tag_is_rma(uint8_t tag)
{
    return tag >= PMETH_TAG_RMA_PUT && tag <= PMETH_TAG_RMA_AMO_REPLY;
}
/* A request a target serves without calling anyone (osc's callbacks run on answers). */
static inline bool pmeth_tag_is_rma_request(uint8_t tag)
{
    return tag == PMETH_TAG_RMA_PUT || tag == PMETH_TAG_RMA_GET || tag == PMETH_TAG_RMA_AMO;
}
void pmeth_rma_decide(void);

/* The host link (btl_pmeth_component.c): opened at the first add_procs where
 * the job needs pmeth to reach ranks on this host. */
void pmeth_host_link_decide(void);

/* Can our link I reach the peer's link J?  The host link reaches the host
 * link of a rank on this host and nothing else; Ethernet links reach Ethernet
 * links of other hosts (a NIC does not hand a frame back to its own host). */
static inline bool pmeth_pair_possible(const mca_btl_base_endpoint_t *ep, uint32_t i, uint32_t j)
{
    const bool host_link = mca_btl_pmeth_component.links[i].on_host;
    return host_link == ep->on_host && host_link == ((int) j == ep->peer_host_link);
}
void pmeth_rma_deliver(mca_btl_base_endpoint_t *ep, uint8_t tag,
                       const mca_btl_base_segment_t *segs, uint32_t n, size_t bytes);
int pmeth_rma_progress(void);
/* at the end of a link's poll: one PUT_DONE per origin for the puts it served */
void pmeth_rma_answer_puts(void);
void pmeth_rma_finalize(void);
struct mca_btl_base_registration_handle_t *pmeth_register_mem(mca_btl_base_module_t *btl,
                                                              mca_btl_base_endpoint_t *ep,
                                                              void *base, size_t size,
                                                              uint32_t flags);
int pmeth_deregister_mem(mca_btl_base_module_t *btl,
                         struct mca_btl_base_registration_handle_t *handle);
int pmeth_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
              uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
              struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
              int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int pmeth_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
              uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
              struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
              int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int pmeth_atomic_op(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                    uint64_t remote_address, struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int pmeth_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);
int pmeth_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata);

/* btl_pmeth_send.c */
int pmeth_send(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
               mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag);
int pmeth_sendi(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                struct opal_convertor_t *convertor, void *header, size_t header_size,
                size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                mca_btl_base_descriptor_t **descriptor);
int pmeth_endpoint_service(mca_btl_base_endpoint_t *ep, uint64_t now);
/* its timer half, for the keeper: due resends and owed acks, nothing for ob1 */
int pmeth_endpoint_keep(mca_btl_base_endpoint_t *ep, uint64_t now);
/* recv.c, for the keeper: take LINK's standalone acks (when no ob1 callback
 * hangs on them) and answer its PROBEs, leave every other frame for progress;
 * frames taken */
int pmeth_keeper_poll_link(pmeth_link_t *link);
/* recv.c, for the keeper after polling every link: serve the one-sided
 * requests among the frames left for progress that are now next in order
 * (one that came in ahead of a frame on another link); frames served */
int pmeth_keeper_serve_deferred(void);
/* btl_pmeth_keeper.c: the thread that runs it while the process is away from MPI */
void pmeth_keeper_start(void);
void pmeth_keeper_stop(void);
void pmeth_acked(mca_btl_base_endpoint_t *ep, const pmeth_wire_view_t *v, uint64_t now);
int pmeth_send_ack(mca_btl_base_endpoint_t *ep);
/* EP owes an ack at once: it goes when this pass's polling is over
 * (pmeth_acks_flush), one for every frame the pass took from EP. */
void pmeth_ack_soon(mca_btl_base_endpoint_t *ep);
/* Send the acks owed at once (after every round of pmeth_poll_link). */
void pmeth_acks_flush(void);
void pmeth_kick_all(bool force);
void pmeth_link_kick(pmeth_link_t *link);
/* Post frame ID of LEN bytes on LINK once: a control frame (ack, probe, notice)
 * that is never resent, so its slot goes back as soon as the kernel sent it. */
static inline void pmeth_link_post_once(pmeth_link_t *link, int id, uint32_t len)
{
    /* alone, it goes out at once (no kick needed); else with the next kick */
    if (link->unkicked > 0) {
        pmeth_ring_tx_post(link->ring, id, len);
        link->unkicked++;
    } else if (!pmeth_ring_tx_post_now(link->ring, id, len, false)) {
        link->unkicked++;
    }
    pmeth_ring_tx_release_when_done(link->ring, id);
    link->frames_out++;
    link->bytes_out += len;
}
void pmeth_add_peer_lazily(uint32_t id);
/* A held frame is done with: give its slot back (or free its copy). */
void pmeth_held_release(pmeth_held_t *h);
/* The frames of a buffer array EP had not finished (teardown). */
void pmeth_array_release(mca_btl_base_endpoint_t *ep);

/* btl_pmeth_recv.c */
int pmeth_poll_link(pmeth_link_t *link, unsigned budget);

/* btl_pmeth_component.c: a link went down or came back (apm's news): the
 * receive-credit budget of the links up now (the kernel's word) */
void pmeth_credit_follow_links(void);

/* btl_pmeth_apm.c: path migration between the links to a peer */
int pmeth_apm_init(void);
/* finalize: stop the thread, say what happened; pmeth_apm_destroy() once the
 * endpoints (and their connections) are gone */
void pmeth_apm_fini(void);
void pmeth_apm_destroy(void);
void pmeth_apm_endpoint_ready(mca_btl_base_endpoint_t *ep);
void pmeth_apm_endpoint_release(mca_btl_base_endpoint_t *ep);
/* progress: apm's news, probes, loads, timeouts */
int pmeth_apm_progress(uint64_t now);
static inline bool pmeth_apm_busy(void)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    return c->apm != NULL
           && (atomic_load_explicit(&((mca_btl_pmeth_component_t *) c)->apm_changes,
                                    memory_order_relaxed) != c->apm_changes_seen
               || c->napm_watch > 0 || c->apm_next_migrate_ns != 0);
}
/* the first acknowledgement after a path left the stripe: time it */
void pmeth_apm_recovered(mca_btl_base_endpoint_t *ep, uint64_t now);
/* a frame of EP went unanswered on its links: tell apm (after resends) */
void pmeth_apm_check_silent(mca_btl_base_endpoint_t *ep, uint64_t now, bool timer);
/* the peer resent (twice or more) a frame we had: our acks do not reach it */
void pmeth_apm_acks_lost(mca_btl_base_endpoint_t *ep, uint64_t now);
/* the peer's PATH_DOWN notice: a path of ours to it is dead */
void pmeth_apm_path_down_notice(mca_btl_base_endpoint_t *ep, const pmeth_wire_view_t *v);
/* an answer to one of our path probes */
bool pmeth_apm_probe_reply(mca_btl_base_endpoint_t *ep, uint8_t path, uint32_t serial);
/* EP's path P is not in the stripe any more */
static inline bool pmeth_path_usable(const mca_btl_base_endpoint_t *ep, uint8_t p)
{
    return (ep->usable >> p) & 1u;
}
/* apm news waiting for this endpoint (one relaxed load: the fast path's cost) */
void pmeth_apm_refresh(mca_btl_base_endpoint_t *ep, uint64_t now);
static inline void pmeth_apm_poll(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    if (OPAL_UNLIKELY(atomic_load_explicit(&ep->apm_dirty, memory_order_relaxed))) {
        pmeth_apm_refresh(ep, now);
    }
}
/* send.c: move FRAG's frame to a path in the stripe and resend it there */
bool pmeth_frag_move(struct mca_btl_pmeth_frag_t *frag, uint8_t xmit);
/* send.c: a fragment not yet sent whose path left the stripe takes another */
bool pmeth_frag_rehome(struct mca_btl_pmeth_frag_t *frag);

#endif
