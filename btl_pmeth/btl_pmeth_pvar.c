/*
 * btl pmeth's statistics as MPI_T performance variables: "btl_pmeth_<name>",
 * unsigned long counters tools read while the job runs (MPI_T_pvar_read), also
 * listed by `ompi_info --param btl pmeth --level 9`.  Per-link figures are
 * named for the link's position (link0 is the first interface in the verbose
 * output at level 10); a read sums everything afresh (common/xbtl_pvar.h).
 *
 * The BTL's memory is given too ("btl_pmeth_memory_bytes" and its parts):
 * those are levels, not counters (MPI_T_PVAR_CLASS_LEVEL), read the same way.
 */
#include "btl_pmeth.h"

#include "opal/mca/base/mca_base_pvar.h"

#include "xbtl_pvar.h"

enum {
    PV_LINK0 = 0,                       /* 4 per link: frames out, bytes out, frames in, bytes in */
    PV_RTX_TIMEOUT = 4 * PMETH_MAX_LINKS,
    PV_RTX_FAST, PV_DUPLICATES, PV_OUT_OF_WINDOW, PV_DROP_TRUNCATED, PV_DROP_OVERSIZED,
    PV_DROP_FOREIGN, PV_DROP_MALFORMED, PV_ACKS, PV_ACKS_PIGGY, PV_STAGED, PV_COPIES_TX,
    PV_COPIES_RX, PV_DELIVERED,
    PV_APM_MIGRATIONS, PV_APM_MIG_FAULT, PV_APM_FAILBACKS, PV_APM_MIG_MANUAL, PV_APM_REARMS,
    PV_APM_REARMS_FAILED, PV_APM_PATHS_DEAD, PV_APM_FRAMES_MOVED, PV_APM_RECOVERIES,
    PV_CREDIT_WAITS, PV_CREDIT_ASKED, PV_CREDIT_REQUESTS, PV_CREDIT_MOVES,
    PV_KEEPER_PASSES, PV_KEEPER_FRAMES, PV_ARRAYS_SENT, PV_ARRAYS_RECEIVED, PV_ARRAYS_DROPPED,
    PV_PACE_CUTS, PV_PACE_LIFTS, PV_BURST_WAITS, PV_START_WAITS, PV_LAZY_PEERS,
    PV_PROBED_AHEAD, PV_REPROBED, PV_KEEPER_PROBES, PV_DATA_KEPT, PV_DIRECT_SENDS,
    PV_DIRECT_COPIES, PV_DEFERRED_RELEASED, PV_RING_FULL, PV_CTL_RESERVE, PV_CTL_NO_FRAME,
    PV_RMA_PUTS, PV_RMA_PUT_BYTES, PV_RMA_GETS, PV_RMA_GET_BYTES, PV_RMA_ATOMICS_SENT, PV_RMA_SERVED, PV_RMA_ATOMICS_SERVED,
    PV_RMA_REFUSED, PV_RMA_REFUSED_BY_PEER, PV_RMA_MALFORMED, PV_KEEPER_RMA,
    PV_COUNT
};

/* the read callback fills a buffer of XBTL_PVAR_MAX values */
_Static_assert(PV_COUNT <= XBTL_PVAR_MAX, "more counters than xbtl_pvar holds");

static char link_names[4 * PMETH_MAX_LINKS][32];
static char link_descs[4 * PMETH_MAX_LINKS][96];
static xbtl_counter_def_t pmeth_counters[PV_COUNT] = {
    [PV_RTX_TIMEOUT] = {"retransmits_timeout", "Frames sent again because their retransmit "
                        "timer expired"},
    [PV_LAZY_PEERS] = {"peers_added_lazily", "Peers whose first frame came before ob1 added "
                       "them (a rank that only receives from them): added then, the frame "
                       "kept for the next poll (btl_pmeth_data_frames_kept)"},
    [PV_PROBED_AHEAD] = {"peers_probed_ahead", "Peers probed in the background before ob1 asked "
                         "for them (btl_pmeth_probe_ahead)"},
    [PV_REPROBED] = {"peers_reprobed", "Peers called unreachable (no answer while they were "
                     "away from MPI) that then sent to us: probed again"},
    [PV_KEEPER_PROBES] = {"keeper_probes", "Peers' PROBEs the keeper thread answered while this "
                          "process was away from MPI"},
    [PV_DATA_KEPT] = {"data_frames_kept", "Data frames kept in the ring for the next progress "
                      "call instead of dropped: from a peer ob1 had not added yet (added "
                      "then), or while ob1's add_procs probed another peer"},
    [PV_DEFERRED_RELEASED] = {"deferred_frames_released", "Frames left in the receive ring for "
                              "progress (by the keeper thread, or kept while add_procs probed) "
                              "given back unread before the kernel came round to their slots: "
                              "not acknowledged, they come again"},
    [PV_RTX_FAST] = {"retransmits_fast", "Frames sent again because later frames were "
                     "selectively acknowledged past them (fast retransmit)"},
    [PV_KEEPER_PASSES] = {"keeper_passes", "Times the keeper thread (btl_pmeth_keeper_us) found "
                          "the process away from MPI with frames to resend or acks owed"},
    [PV_KEEPER_FRAMES] = {"keeper_frames", "Frames it resent and acks it sent then (its resends "
                          "are in retransmits_timeout too)"},
    [PV_DUPLICATES] = {"duplicates", "DATA frames received twice (a retransmit whose original "
                       "had arrived): dropped, acknowledged again"},
    [PV_OUT_OF_WINDOW] = {"out_of_window", "DATA frames outside the receive window: dropped"},
    [PV_DROP_TRUNCATED] = {"dropped_truncated", "Frames shorter than their headers or stated "
                           "length: dropped"},
    [PV_DROP_OVERSIZED] = {"dropped_oversized", "Frames longer than the link's MTU or stating "
                           "a payload over the maximum: dropped"},
    [PV_DROP_FOREIGN] = {"dropped_foreign", "Frames of another EtherType, job or destination, "
                         "or from a sender we do not know: dropped"},
    [PV_DROP_MALFORMED] = {"dropped_malformed", "Frames with an unknown type or version, "
                           "reserved bits set, inconsistent fields or an unregistered tag: "
                           "dropped"},
    [PV_ACKS] = {"acks_standalone", "ACK frames sent alone (no data to carry them)"},
    [PV_ACKS_PIGGY] = {"acks_piggybacked", "Acknowledgements carried on DATA frames"},
    [PV_STAGED] = {"staged_fragments", "Fragments that waited in private memory because every "
                   "send frame was in flight (each costs one copy into a frame later)"},
    [PV_COPIES_TX] = {"copied_bytes_send", "Bytes the BTL itself copied on the send side (only "
                      "staged fragments; ob1 packs straight into frames)"},
    [PV_COPIES_RX] = {"copied_bytes_receive", "Bytes the BTL itself copied on the receive side "
                      "(ob1 reads payloads in place from the ring; only frames held ahead of a "
                      "gap for half a lap of the ring move out of it)"},
    [PV_DELIVERED] = {"delivered_fragments", "Fragments handed to ob1, in sequence order (one "
                      "DATA frame each, or a buffer array of several)"},
    [PV_ARRAYS_SENT] = {"arrays_sent", "Fragments sent as buffer arrays of more than one frame "
                        "(btl_pmeth_array_frames)"},
    [PV_ARRAYS_RECEIVED] = {"arrays_received", "Buffer arrays of more than one frame handed to "
                            "ob1 (once their last frame was in)"},
    [PV_ARRAYS_DROPPED] = {"arrays_dropped", "Buffer arrays from a peer dropped as malformed "
                           "(more than 16 frames, or frames of different tags); their frames "
                           "are counted in dropped_malformed"},
    [PV_APM_MIGRATIONS] = {"apm_migrations", "Path migrations: a peer's current path changed "
                           "(on a fault, a fail-back, by hand, or a recovery from no path)"},
    [PV_APM_MIG_FAULT] = {"apm_migrations_fault", "Path migrations because the current path "
                          "failed (link down, silent, or our acks lost on it)"},
    [PV_APM_FAILBACKS] = {"apm_failbacks", "Returns to a peer's home path once it was repaired "
                          "and passed its probes"},
    [PV_APM_MIG_MANUAL] = {"apm_migrations_manual", "Migrations asked for by hand "
                           "(btl_pmeth_apm_migrate_ms)"},
    [PV_APM_REARMS] = {"apm_rearms", "Alternate paths chosen and loaded (REARM entered)"},
    [PV_APM_REARMS_FAILED] = {"apm_rearms_failed", "Alternates whose load failed (no answer "
                              "to three probes) or that failed while loading"},
    [PV_APM_PATHS_DEAD] = {"apm_paths_dead", "Paths this process reported dead from evidence "
                           "of its own: probes unanswered there while the peer answered "
                           "elsewhere, or its acks not arriving"},
    [PV_APM_FRAMES_MOVED] = {"apm_frames_moved", "Frames in flight on a path that left the "
                             "stripe, copied to another link and sent again"},
    [PV_APM_RECOVERIES] = {"apm_recoveries", "Times traffic to a peer flowed again after a "
                           "path left its stripe with frames in flight (btl_pmeth_apm_recover_"
                           "last_us / _worst_us say how long it took)"},
    [PV_CREDIT_WAITS] = {"credit_waits", "Bulk fragments refused because the receiver's grant "
                         "was used up (receiver-ready sending; ob1 retries them on a callback)"},
    [PV_CREDIT_ASKED] = {"credit_asked", "Frames sent that used up the grant we held (flagged "
                         "MORE: the receiver acknowledges them at once with a new grant)"},
    [PV_CREDIT_REQUESTS] = {"credit_requests", "Frames received whose sender had used up our "
                            "grant (MORE), answered by an acknowledgement at once"},
    [PV_CREDIT_MOVES] = {"credit_moves", "Times the grant this receiver gives each sending peer "
                         "changed: peers started or stopped sending (policy demand)"},
    [PV_PACE_CUTS] = {"pace_cuts", "Times a sender lowered its delay limit to a peer: a queue "
                      "stood on the way longer than btl_pmeth_pace_target_us"},
    [PV_PACE_LIFTS] = {"pace_lifts", "Times a delay limit grew back past what the peer grants "
                       "and was lifted"},
    [PV_BURST_WAITS] = {"burst_waits", "Bulk fragments refused because this progress pass "
                        "had posted its burst (btl_pmeth_send_burst); ob1 retries them"},
    [PV_DIRECT_SENDS] = {"lone_frames_sent", "Frames sent at once through the link's second "
                         "socket, past the send ring: latency-bound frames that found nothing "
                         "of their link waiting (btl_pmeth_direct_max)"},
    [PV_DIRECT_COPIES] = {"lone_frames_copied_bytes", "Bytes of those frames (data frames "
                          "only) copied aside after they left, as their retransmit copies "
                          "(not in copied_bytes_send, which counts copies before a send)"},
    [PV_RING_FULL] = {"ring_full", "Times data found no free frame in a link's send ring "
                      "(every frame held by data the peers have not acknowledged, beyond the "
                      "few kept for control frames); the fragment waits, ob1 retries"},
    [PV_CTL_RESERVE] = {"ring_reserve_used", "Control frames (acknowledgements, path probes "
                        "and their answers) that took one of the send frames data may not "
                        "take: without that reserve they would have been dropped"},
    [PV_CTL_NO_FRAME] = {"ring_control_dropped", "Control frames not sent because even the "
                         "reserve was in use (an acknowledgement then rides on a resend, a "
                         "probe counts as unanswered)"},
    [PV_RMA_PUTS] = {"rma_puts", "One-sided puts sent for osc rdma (btl_pmeth_rma)"},
    [PV_RMA_PUT_BYTES] = {"rma_put_bytes", "Bytes of those puts"},
    [PV_RMA_GETS] = {"rma_gets", "One-sided gets asked for"},
    [PV_RMA_GET_BYTES] = {"rma_get_bytes", "Bytes of those gets"},
    [PV_RMA_ATOMICS_SENT] = {"rma_atomics_sent", "One-sided atomics (op, fetch-and-op, "
                             "compare-and-swap) asked of peers"},
    [PV_RMA_SERVED] = {"rma_served", "Peers' puts and gets done on this process's memory (in "
                       "its progress)"},
    [PV_RMA_ATOMICS_SERVED] = {"rma_atomics_served", "Peers' atomics done on this process's "
                               "memory (in its progress)"},
    [PV_RMA_REFUSED] = {"rma_refused", "Peers' one-sided requests refused: not within memory "
                        "registered for that access, or inconsistent lengths"},
    [PV_RMA_REFUSED_BY_PEER] = {"rma_refused_by_peer", "Our one-sided operations a peer "
                                "refused (their completion reported an error)"},
    [PV_RMA_MALFORMED] = {"rma_malformed", "One-sided requests or answers dropped as malformed "
                          "or answering nothing we asked"},
    [PV_KEEPER_RMA] = {"keeper_rma", "Frames of peers' one-sided requests (puts, gets, "
                       "atomics) the keeper thread took and served while this process was away "
                       "from MPI"},
    [PV_START_WAITS] = {"start_waits", "Frames of eager messages of several frames (after the "
                        "first) that waited for the peer's grant or the window, in private "
                        "memory (btl_pmeth_eager_frames)"},
};

static void pmeth_counters_read(uint64_t *v)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    for (unsigned i = 0; i < PV_COUNT; i++) {
        v[i] = 0;
    }
    PMETH_LOCK();
    for (uint32_t i = 0; i < c->nlinks; i++) {
        v[PV_LINK0 + 4 * i + 0] = c->links[i].frames_out;
        v[PV_LINK0 + 4 * i + 1] = c->links[i].bytes_out;
        v[PV_LINK0 + 4 * i + 2] = c->links[i].frames_in;
        v[PV_LINK0 + 4 * i + 3] = c->links[i].bytes_in;
    }
    v[PV_RTX_TIMEOUT] = c->retransmits_timeout;
    v[PV_RTX_FAST] = c->retransmits_fast;
    v[PV_KEEPER_PASSES] = c->keeper_passes;
    v[PV_KEEPER_FRAMES] = c->keeper_frames;
    v[PV_DUPLICATES] = c->duplicates;
    v[PV_LAZY_PEERS] = c->peers_added_lazily;
    v[PV_DATA_KEPT] = c->data_kept;
    v[PV_DEFERRED_RELEASED] = c->deferred_released;
    v[PV_PROBED_AHEAD] = c->peers_probed_ahead;
    v[PV_REPROBED] = c->peers_reprobed;
    v[PV_KEEPER_PROBES] = c->keeper_probes;
    v[PV_OUT_OF_WINDOW] = c->out_of_window;
    v[PV_DROP_TRUNCATED] = c->drops[PMETH_WIRE_TRUNCATED];
    v[PV_DROP_OVERSIZED] = c->drops[PMETH_WIRE_OVERSIZED];
    v[PV_DROP_FOREIGN] = c->drops[PMETH_WIRE_FOREIGN];
    v[PV_DROP_MALFORMED] = c->drops[PMETH_WIRE_MALFORMED];
    v[PV_ACKS] = c->acks_sent;
    v[PV_ACKS_PIGGY] = c->acks_piggybacked;
    v[PV_STAGED] = c->staged;
    v[PV_COPIES_TX] = c->copies_tx;
    v[PV_COPIES_RX] = c->copies_rx;
    v[PV_DELIVERED] = c->delivered;
    v[PV_ARRAYS_SENT] = c->arrays_sent;
    v[PV_ARRAYS_RECEIVED] = c->arrays_received;
    v[PV_ARRAYS_DROPPED] = c->arrays_dropped;
    if (c->apm != NULL) {
        apm_counters_t t;
        apm_totals(c->apm, &t);
        v[PV_APM_MIGRATIONS] = t.migrations;
        v[PV_APM_MIG_FAULT] = t.migrations_fault;
        v[PV_APM_FAILBACKS] = t.failbacks;
        v[PV_APM_MIG_MANUAL] = t.migrations_manual;
        v[PV_APM_REARMS] = t.rearms;
        v[PV_APM_REARMS_FAILED] = t.rearms_failed;
    }
    v[PV_APM_PATHS_DEAD] = c->apm_paths_dead;
    v[PV_APM_FRAMES_MOVED] = c->apm_frames_moved;
    v[PV_APM_RECOVERIES] = c->apm_recoveries;
    v[PV_CREDIT_WAITS] = c->credit_waits;
    v[PV_CREDIT_ASKED] = c->credit_asked;
    v[PV_CREDIT_REQUESTS] = c->credit_requests;
    v[PV_CREDIT_MOVES] = c->credits.share_changes;
    v[PV_PACE_CUTS] = c->pace_cuts;
    v[PV_PACE_LIFTS] = c->pace_lifts;
    v[PV_BURST_WAITS] = c->burst_waits;
    v[PV_START_WAITS] = c->start_waits;
    v[PV_RMA_PUTS] = c->rma_puts;
    v[PV_RMA_PUT_BYTES] = c->rma_put_bytes;
    v[PV_RMA_GETS] = c->rma_gets;
    v[PV_RMA_GET_BYTES] = c->rma_get_bytes;
    v[PV_RMA_ATOMICS_SENT] = c->rma_atomics_sent;
    v[PV_RMA_SERVED] = c->rma_served;
    v[PV_RMA_ATOMICS_SERVED] = c->rma_atomics_served;
    v[PV_RMA_REFUSED] = c->rma_refused;
    v[PV_RMA_REFUSED_BY_PEER] = c->rma_refused_by_peer;
    v[PV_RMA_MALFORMED] = c->rma_malformed;
    v[PV_KEEPER_RMA] = c->keeper_rma;
    for (uint32_t i = 0; i < c->nlinks; i++) {
        struct pmeth_ring_stats rs;
        pmeth_ring_get_stats(c->links[i].ring, &rs);
        v[PV_DIRECT_SENDS] += rs.direct_sends;
        v[PV_DIRECT_COPIES] += rs.direct_copy_bytes;
        v[PV_RING_FULL] += rs.tx_full;
        v[PV_CTL_RESERVE] += rs.tx_reserve_used;
        v[PV_CTL_NO_FRAME] += rs.tx_ctl_full;
    }
    PMETH_UNLOCK();
}

/* ---- memory ---------------------------------------------------------------------
 * The terms README "Memory" states, each taken from the objects themselves (the
 * ring layer's own figure, each window's own size), so that the test that
 * compares them with the formula (test/pmeth/t-pmeth-memory.sh) catches memory
 * that appears where the formula says there is none.  Left out, all small and
 * none per idle peer: the ring layer's bookkeeping (an id and a slot word per
 * send frame), descriptors (a pool that grows with the frames in flight, not
 * with peers), held-frame records (one per frame held out of order) and the
 * list of active endpoints (a pointer per peer with traffic in flight). */
void pmeth_memory(pmeth_memory_t *m)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    *m = (pmeth_memory_t) {0};
    PMETH_LOCK();
    m->links = c->nlinks;
    for (uint32_t i = 0; i < c->nlinks; i++) {
        if (c->links[i].ring != NULL) {
            m->rings += pmeth_ring_memory(c->links[i].ring);
        }
    }
    for (uint32_t id = 0; id < c->nby_id; id++) {
        const mca_btl_base_endpoint_t *ep = c->by_id[id];
        if (ep == NULL) {
            continue;
        }
        m->peers++;
        m->endpoints += sizeof(*ep);
        if (ep->apm_conn != NULL) {
            m->apm += apm_conn_bytes();         /* path migration's state of the peer */
        }
        /* windows are made at a peer's first frame, both at once
         * (pmeth_endpoint_windows): a peer without traffic has neither */
        if (ep->tx != NULL || ep->rx != NULL) {
            m->peers_with_windows++;
        }
        if (ep->tx != NULL) {
            m->windows += pmeth_txwin_bytes(ep->tx->cfg.window);
        }
        if (ep->rx != NULL) {
            m->windows += pmeth_rxwin_bytes(ep->rx->cfg.window);
        }
    }
    m->by_id = (uint64_t) c->nby_id * sizeof(c->by_id[0]);
    PMETH_UNLOCK();
    m->total = m->rings + m->windows + m->endpoints + m->apm + m->by_id;
}

enum { PV_MEM_TOTAL, PV_MEM_RINGS, PV_MEM_PEERS, PV_MEM_PEERS_WINDOWS, PV_APM_RECOVER_LAST,
       PV_APM_RECOVER_WORST, PV_APM_REJOIN_LAST, PV_APM_REJOIN_WORST, PV_CREDIT_SHARE,
       PV_MEM_COUNT };
/* Levels rather than counters: the figures are amounts held now (and the
 * recovery times, durations), which a tool reads as they are, never as a
 * difference since a handle was started. */
static const xbtl_counter_def_t pmeth_memory_defs[PV_MEM_COUNT] = {
    [PV_MEM_TOTAL] = {"memory_bytes", "Bytes of memory the BTL holds now: the rings of every "
                      "link, the reliability windows of the peers that have them, an endpoint "
                      "per peer known and the table of peers by id (README, \"Memory\")",
                      .level = true},
    [PV_MEM_RINGS] = {"memory_ring_bytes", "Bytes of the links' frame rings (send and receive, "
                      "all links): fixed at start, whatever the number of peers", .level = true},
    [PV_MEM_PEERS] = {"peers_known", "Peers this process holds an endpoint for (Open MPI adds "
                      "remote peers at their first message)", .level = true},
    [PV_MEM_PEERS_WINDOWS] = {"peers_with_windows", "Peers that have reliability windows (made "
                              "at the first frame to or from them)", .level = true},
    [PV_APM_RECOVER_LAST] = {"apm_recover_last_us", "Path migration: microseconds from the last "
                             "fault's first evidence (the kernel's link event, or the first "
                             "unanswered probe of a silent link) to traffic flowing again (the "
                             "first acknowledgement after the frames moved)",
                             .level = true},
    [PV_APM_RECOVER_WORST] = {"apm_recover_worst_us", "Path migration: the longest such time "
                              "in this job, microseconds", .level = true},
    [PV_APM_REJOIN_LAST] = {"apm_rejoin_last_us", "Path migration: microseconds from a link "
                            "coming back up (the kernel's word) to its path carrying traffic "
                            "again (hold-down and probes passed; the home path: fail-back)",
                            .level = true},
    [PV_APM_REJOIN_WORST] = {"apm_rejoin_worst_us", "Path migration: the longest such time in "
                             "this job, microseconds", .level = true},
    [PV_CREDIT_SHARE] = {"credit_share", "Frames this receiver grants each peer sending to it "
                         "now, beyond its acknowledgements (0: credits off)", .level = true},
};

static void memory_read(uint64_t *v)
{
    pmeth_memory_t m;
    pmeth_memory(&m);
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    v[PV_MEM_TOTAL] = m.total;
    v[PV_MEM_RINGS] = m.rings;
    v[PV_MEM_PEERS] = m.peers;
    v[PV_MEM_PEERS_WINDOWS] = m.peers_with_windows;
    v[PV_APM_RECOVER_LAST] = c->apm_recover_last_ns / 1000;
    v[PV_APM_RECOVER_WORST] = c->apm_recover_worst_ns / 1000;
    v[PV_APM_REJOIN_LAST] = c->apm_rejoin_last_ns / 1000;
    v[PV_APM_REJOIN_WORST] = c->apm_rejoin_worst_ns / 1000;
    v[PV_CREDIT_SHARE] = c->credits.share == PMETH_CREDIT_UNLIMITED ? 0 : c->credits.share;
}

void pmeth_pvar_register(void)
{
    static xbtl_pvar_set_t set;
    static const char *what[4] = {"frames_out", "bytes_out", "frames_in", "bytes_in"};
    static const char *desc[4] = {"Frames sent on link %u (retransmits, acks and probes "
                                  "included)", "Bytes sent on link %u, Ethernet headers included",
                                  "Frames received on link %u that passed the parser",
                                  "Bytes received on link %u, Ethernet headers included"};
    for (unsigned l = 0; l < PMETH_MAX_LINKS; l++) {
        for (unsigned k = 0; k < 4; k++) {
            unsigned i = PV_LINK0 + 4 * l + k;
            snprintf(link_names[i], sizeof(link_names[i]), "link%u_%s", l, what[k]);
            snprintf(link_descs[i], sizeof(link_descs[i]), desc[k], l);
            pmeth_counters[i].name = link_names[i];
            pmeth_counters[i].desc = link_descs[i];
        }
    }
    unsigned n = xbtl_pvar_register_counters(&set, &mca_btl_pmeth_component.super.btl_version,
                                             pmeth_counters, PV_COUNT, pmeth_counters_read);
    if (n != PV_COUNT) {
        PMETH_VERBOSE(1, "only %u of %d MPI_T performance variables registered", n, PV_COUNT);
    }
    static xbtl_pvar_set_t memory_set;
    n = xbtl_pvar_register_counters(&memory_set, &mca_btl_pmeth_component.super.btl_version,
                                    pmeth_memory_defs, PV_MEM_COUNT, memory_read);
    if (n != PV_MEM_COUNT) {
        PMETH_VERBOSE(1, "only %u of %d MPI_T memory variables registered", n, PV_MEM_COUNT);
    }
}
