/*
 * The BTL module: peers (add_procs/del_procs), descriptors (alloc, free,
 * prepare_src) and teardown.  Sending is btl_pmeth_send.c, receiving
 * btl_pmeth_recv.c, peers and their probing btl_pmeth_endpoint.c.
 */
#define _GNU_SOURCE
#include "btl_pmeth.h"
#include "btl_pmeth_frag.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/show_help.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static mca_btl_base_module_error_cb_fn_t pmeth_error_cb;

/* Room in the by-vpid table for ID. */
static int by_id_room(uint32_t id)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (id < c->nby_id) {
        return OPAL_SUCCESS;
    }
    uint32_t n = c->nby_id ? c->nby_id : 64;
    while (n <= id) {
        n *= 2;
    }
    mca_btl_base_endpoint_t **b = realloc(c->by_id, n * sizeof(*b));
    if (b == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memset(b + c->nby_id, 0, (n - c->nby_id) * sizeof(*b));
    c->by_id = b;
    c->nby_id = n;
    return OPAL_SUCCESS;
}

/* NAME's endpoint, made from its modex entry if there is none yet.  NULL when
 * the peer published no usable links or another job key (*rc OPAL_SUCCESS:
 * not reachable over pmeth), or memory ran out (*rc says so).  QUIET: no
 * verbose line (a peer probed ahead, which nobody asked for). */
static mca_btl_base_endpoint_t *endpoint_for(const opal_process_name_t *name, opal_proc_t *proc,
                                             bool quiet, int *rc)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_modex_t *modex = NULL;
    size_t msize = 0;
    int mrc;
    *rc = by_id_room(name->vpid);
    if (*rc != OPAL_SUCCESS) {
        return NULL;
    }
    mca_btl_base_endpoint_t *ep = c->by_id[name->vpid];
    if (ep != NULL) {
        if (ep->proc == NULL) {
            ep->proc = proc;        /* probed ahead: ob1 has it now */
        }
        return ep;
    }
    OPAL_MODEX_RECV(mrc, &c->super.btl_version, name, (void **) &modex, &msize);
    if (mrc != OPAL_SUCCESS || msize != sizeof(*modex) || modex->version != PMETH_MODEX_VERSION
        || modex->nlinks == 0 || modex->nlinks > PMETH_MAX_LINKS) {
        if (!quiet) {
            PMETH_VERBOSE(10, "%s published no usable pmeth links", OPAL_NAME_PRINT(*name));
        }
        free(modex);
        return NULL;
    }
    if (modex->job_key != c->job_key) {
        if (!quiet) {
            PMETH_VERBOSE(1, "%s uses another job key: not reached over pmeth",
                          OPAL_NAME_PRINT(*name));
        }
        free(modex);
        return NULL;
    }
    if (modex->window != c->window) {
        /* grants are counted in units of the window (pmeth_credit_unit) and
         * frames beyond the receiver's window are dropped: with different
         * windows, a grant of 29 frames read as 1, and traffic crawled */
        if (!quiet) {
            char mine[16], theirs[16];
            snprintf(mine, sizeof(mine), "%u", c->window);
            snprintf(theirs, sizeof(theirs), "%u", modex->window);
            /* (the same at verbose 1: mpirun 4.1 now and then loses a rank's help text) */
            PMETH_VERBOSE(1, "btl_pmeth_window is %s here on %s and %s on %s (%s): not "
                          "reached over pmeth", mine, opal_process_info.nodename, theirs,
                          modex->host, OPAL_NAME_PRINT(*name));
            opal_show_help("help-btl-pmeth.txt", "params-mismatch", true, "btl_pmeth_window",
                           mine, opal_process_info.nodename, theirs, modex->host);
        }
        free(modex);
        return NULL;
    }
    ep = pmeth_endpoint_create(name, proc, modex);
    free(modex);
    if (ep == NULL) {
        *rc = OPAL_ERR_OUT_OF_RESOURCE;
        return NULL;
    }
    c->by_id[name->vpid] = ep;
    return ep;
}

/* Open MPI adds peers one at a time, at a rank's first message to each
 * (mpi_add_procs_cutoff), and each waits here for its probes: a peer behind
 * no link of ours takes the whole btl_pmeth_probe_timeout_ms to be called
 * unreachable.  Where many are (hosts on other switches: seed 001's
 * neighbours), a rank's first collective waited that long for each of them
 * in turn, and its peers waited for it.  So every add_procs, the first at
 * MPI_Init, starts the probes of the next few peers of the job that nobody
 * asked for yet; progress decides them in the background, and when ob1 asks
 * for one it is decided or nearly.  Peers on this host are left out:
 * add_procs decides them at MPI_Init (over the host link, where one is open,
 * else unreachable without a probe). */
void pmeth_probe_ahead(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint32_t size = pmeth_job_size();
    unsigned started = 0, looked = 0;
    if (size < 2 || c->probe_ahead == 0 || c->probe_ahead_swept) {
        return;
    }
    while (started < c->probe_ahead && looked < size) {
        uint32_t id = c->probe_ahead_next++ % size;
        looked++;
        if (id == c->my_id || (id < c->nby_id && c->by_id[id] != NULL)) {
            continue;
        }
        opal_process_name_t name = OPAL_PROC_MY_NAME;
        name.vpid = id;
        int rc;
        mca_btl_base_endpoint_t *ep = endpoint_for(&name, NULL, true, &rc);
        if (ep == NULL) {
            if (rc != OPAL_SUCCESS) {
                return;
            }
            continue;
        }
        if (ep->on_host) {
            continue;   /* this host: add_procs decides it, without probes */
        }
        if (pmeth_probe_in_background(ep) != OPAL_SUCCESS) {
            return;
        }
        c->peers_probed_ahead++;
        started++;
    }
    c->probe_ahead_swept = started == 0;    /* every peer is known: nothing more to do */
}

static int pmeth_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                           mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
    pmeth_rma_decide();             /* once: the job's osc selection is known now */
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const opal_proc_t *me = opal_proc_local_get();
    mca_btl_base_endpoint_t **fresh = calloc(nprocs > 0 ? nprocs : 1, sizeof(*fresh));
    size_t nfresh = 0;
    int rc = OPAL_SUCCESS;

    if (fresh == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    PMETH_LOCK();
    pmeth_host_link_decide();       /* once, after the one-sided decision it may follow */
    if (c->probe_ahead_next == 0) {
        c->probe_ahead_next = c->my_id + 1;     /* each rank starts after itself */
    }
    for (size_t i = 0; i < nprocs; i++) {
        opal_proc_t *proc = procs[i];
        peers[i] = NULL;
        if (proc == me || proc->proc_name.jobid != me->proc_name.jobid) {
            continue;
        }
        mca_btl_base_endpoint_t *ep = endpoint_for(&proc->proc_name, proc, false, &rc);
        if (ep == NULL) {
            if (rc != OPAL_SUCCESS) {
                break;
            }
            continue;
        }
        if (ep->state == PMETH_EP_NEW && ep->on_host && ep->peer_host_link < 0) {
            /* our Ethernet frames never come back to our own network stack (a
             * socket bound to one EtherType sees no outgoing frames, NICs do not
             * hairpin): ranks that share it are reached over the host link or
             * not at all.  Ranks Open MPI calls local in another network
             * namespace (containers) are probed over Ethernet like any host. */
            ep->state = PMETH_EP_UNREACHABLE;
            PMETH_VERBOSE(5, "%s is on this host: not reachable over pmeth (no host link: "
                          "btl_pmeth_host_link)", OPAL_NAME_PRINT(proc->proc_name));
        }
        if (ep->state == PMETH_EP_NEW || ep->state == PMETH_EP_PROBING) {
            fresh[nfresh++] = ep;
        }
    }
    if (rc == OPAL_SUCCESS) {
        pmeth_probe_ahead();    /* the first call is at MPI_Init: the probes start there */
    }
    if (rc == OPAL_SUCCESS && nfresh > 0) {
        rc = pmeth_endpoints_probe(fresh, nfresh);
    }
    for (size_t i = 0; rc == OPAL_SUCCESS && i < nprocs; i++) {
        opal_proc_t *proc = procs[i];
        uint32_t id = proc->proc_name.vpid;
        if (proc == me || proc->proc_name.jobid != me->proc_name.jobid || id >= c->nby_id
            || c->by_id[id] == NULL || c->by_id[id]->state != PMETH_EP_READY) {
            continue;
        }
        peers[i] = c->by_id[id];
        if (reachable != NULL) {
            opal_bitmap_set_bit(reachable, (int) i);
        }
    }
    PMETH_UNLOCK();
    free(fresh);
    return rc;
}

uint32_t pmeth_job_size(void)
{
    static uint32_t size;       /* 0: not known yet */
    if (size == 0) {
        opal_process_name_t all = {.jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_WILDCARD};
        uint32_t *p = &size;
        int rc;
        OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &all, &p, OPAL_UINT32);
        if (rc != OPAL_SUCCESS) {
            size = 0;
        }
    }
    return size;
}

bool pmeth_job_spans_hosts(void)
{
    return pmeth_job_size() > (uint32_t) opal_process_info.num_local_peers + 1;
}

/* DATA came from a process of our job that ob1 has not added yet: Open MPI
 * adds peers lazily (at a rank's first send to them, mpi_add_procs_cutoff), so
 * a rank that only receives from a peer would never know it, and drop its
 * frames for good.  Make the endpoint now, as add_procs would (modex, probes);
 * the frames dropped meanwhile are resent.  ob1 learns of the sender from the
 * message itself, and its own add_procs later finds the endpoint ready. */
void pmeth_add_peer_lazily(uint32_t id)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    /* the id comes from the wire: only a process of this job */
    if (id == c->my_id || id >= pmeth_job_size()
        || (id < c->nby_id && c->by_id[id] != NULL && c->by_id[id]->proc != NULL
            && c->by_id[id]->state != PMETH_EP_NEW)) {
        return;         /* not of this job, ourselves, or added (maybe unreachable) */
    }
    opal_process_name_t name = OPAL_PROC_MY_NAME;
    name.vpid = id;
    opal_proc_t *proc = opal_proc_for_name(name);
    if (proc == NULL) {
        return;
    }
    mca_btl_base_endpoint_t *ep = NULL;
    PMETH_VERBOSE(10, "%s sent to us before we added it: adding it now",
                  OPAL_NAME_PRINT(proc->proc_name));
    (void) pmeth_add_procs(&mca_btl_pmeth, 1, &proc, &ep, NULL);
    c->peers_added_lazily++;
}

static int pmeth_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                           mca_btl_base_endpoint_t **peers)
{
    /* endpoints stay until finalize: frames of the peer may still be in flight */
    return OPAL_SUCCESS;
}

static void summary(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint64_t dropped = 0;
    for (int v = 1; v < PMETH_WIRE_NVERDICTS; v++) {
        dropped += c->drops[v];
    }
    for (uint32_t i = 0; i < c->nlinks; i++) {
        pmeth_link_t *l = &c->links[i];
        struct pmeth_ring_stats rs;
        pmeth_ring_get_stats(l->ring, &rs);
        PMETH_VERBOSE(10, "link %s: %" PRIu64 " frames / %" PRIu64 " bytes out, %" PRIu64
                      " frames / %" PRIu64 " bytes in; ring: %" PRIu64 " kicks (%" PRIu64
                      " while the link was down), %" PRIu64 " lone frames sent past it (%" PRIu64
                      " bytes copied aside after they left, as their retransmit copies), %"
                      PRIu64 " frames dropped by the kernel, %"
                      PRIu64 " bytes copied (held frames moved aside, resends); receive ring: %"
                      PRIu64 " resyncs, %" PRIu64 " bad give-backs; %" PRIu64 " frames in "
                      "through AF_XDP beside AF_PACKET; send ring full for data %" PRIu64
                      " times, %" PRIu64 " control frames through its reserve, %" PRIu64
                      " dropped with none left",
                      l->ifname, l->frames_out, l->bytes_out, l->frames_in, l->bytes_in, rs.kicks,
                      rs.link_down_kicks, rs.direct_sends, rs.direct_copy_bytes, rs.kernel_drops,
                      rs.shadow_bytes + rs.repost_bytes, rs.rx_resyncs, rs.rx_bad_puts,
                      rs.rx_small_xdp, rs.tx_full, rs.tx_reserve_used, rs.tx_ctl_full);
    }
    PMETH_VERBOSE(10, "%" PRIu64 " retransmits on timeout, %" PRIu64 " fast; %" PRIu64
                  " duplicates, %" PRIu64 " out of window; %" PRIu64 " standalone acks; %" PRIu64
                  " frames dropped by the parser; %" PRIu64 " fragments staged; bytes copied by "
                  "the BTL: %" PRIu64 " sending, %" PRIu64 " receiving",
                  c->retransmits_timeout, c->retransmits_fast, c->duplicates, c->out_of_window,
                  c->acks_sent, dropped, c->staged, c->copies_tx, c->copies_rx);
    PMETH_VERBOSE(10, "%" PRIu64 " held frames moved out of a ring about to wrap; %" PRIu64
                  " peers added when their first frame came, %" PRIu64 " probed ahead, %" PRIu64
                  " data frames kept for the next poll (%" PRIu64 " given back unread); %" PRIu64
                  " fragments completed before their ack; buffer arrays: %" PRIu64 " sent, %" PRIu64
                  " received, %" PRIu64 " dropped as malformed", c->held_moved,
                  c->peers_added_lazily, c->peers_probed_ahead, c->data_kept,
                  c->deferred_released, c->early_callbacks,
                  c->arrays_sent, c->arrays_received, c->arrays_dropped);
    static const char *policy_names[] = {"off", "static", "demand"};
    PMETH_VERBOSE(10, "credits (%s, budget %u frames, floor %u): %" PRIu64 " fragments waited "
                  "for a grant, %" PRIu64 " frames used up ours, %" PRIu64 " requests answered, "
                  "%" PRIu64 " changes of the share we grant (now %u frames a peer)",
                  policy_names[c->credits.policy], c->credits.budget, c->credits.floor,
                  c->credit_waits, c->credit_asked, c->credit_requests, c->credits.share_changes,
                  c->credits.share == PMETH_CREDIT_UNLIMITED ? 0 : c->credits.share);
    PMETH_VERBOSE(10, "delay limit (target %u us): lowered %" PRIu64 " times, lifted %" PRIu64
                  " times; %" PRIu64 " fragments waited for the next progress pass (burst of %u "
                  "frames); %" PRIu64 " later frames of eager messages waited for the grant or the "
                  "window", c->pace_target_us, c->pace_cuts, c->pace_lifts, c->burst_waits,
                  c->send_burst, c->start_waits);
    if (c->rma_puts + c->rma_gets + c->rma_atomics_sent + c->rma_served + c->rma_atomics_served
            + c->rma_refused + c->rma_malformed > 0) {
        PMETH_VERBOSE(10, "one-sided: %" PRIu64 " puts (%" PRIu64 " bytes), %" PRIu64 " gets (%"
                      PRIu64 " bytes), %" PRIu64 " atomics asked; the peers': %" PRIu64 " puts "
                      "and gets and %" PRIu64 " atomics served, %" PRIu64 " refused; %" PRIu64
                      " of ours refused by a peer; %" PRIu64 " malformed dropped; %" PRIu64
                      " PUT_DONE answers sent", c->rma_puts,
                      c->rma_put_bytes, c->rma_gets, c->rma_get_bytes, c->rma_atomics_sent,
                      c->rma_served, c->rma_atomics_served, c->rma_refused,
                      c->rma_refused_by_peer, c->rma_malformed, c->rma_put_answers);
    }
    pmeth_memory_t mem;
    pmeth_memory(&mem);
    PMETH_VERBOSE(10, "memory: %" PRIu64 " bytes = rings %" PRIu64 " (%u links) + windows %"
                  PRIu64 " (%u peers) + endpoints %" PRIu64 " (%u peers) + path migration %"
                  PRIu64 " + by-id table %" PRIu64, mem.total, mem.rings, mem.links, mem.windows,
                  mem.peers_with_windows, mem.endpoints, mem.peers, mem.apm, mem.by_id);
    for (int v = 1; v < PMETH_WIRE_NVERDICTS; v++) {
        if (c->drops[v] > 0) {
            PMETH_VERBOSE(1, "%" PRIu64 " frames dropped: %s", c->drops[v],
                          pmeth_wire_verdict_name(v));
        }
    }
}

static int pmeth_finalize(mca_btl_base_module_t *btl)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_keeper_stop();
    PMETH_LOCK();
    /* let the last acknowledgements go out and come in, briefly: the peer may
     * still wait for our ack of its last frames */
    uint64_t until = pmeth_now_ns() + 50ull * 1000000;
    while (c->nactive > 0 && pmeth_now_ns() < until) {
        for (uint32_t i = 0; i < c->nlinks; i++) {
            pmeth_poll_link(&c->links[i], c->poll_budget);
        }
        pmeth_acks_flush();
        uint64_t now = pmeth_now_ns();
        for (uint32_t i = c->nactive; i-- > 0;) {
            pmeth_endpoint_service(c->active[i], now);
        }
        pmeth_kick_all(true);
    }
    summary();
    pmeth_rma_finalize();
    pmeth_apm_fini();
    for (uint32_t i = 0; i < c->nby_id; i++) {
        if (c->by_id[i] != NULL) {
            pmeth_endpoint_release(c->by_id[i]);
            c->by_id[i] = NULL;
        }
    }
    free(c->by_id);
    c->by_id = NULL;
    c->nby_id = 0;
    free(c->probe_bg);
    c->probe_bg = NULL;
    c->nprobe_bg = c->probe_bg_cap = 0;
    pmeth_apm_destroy();
    free(c->active);
    c->active = NULL;
    free(c->ack_queue);
    c->ack_queue = NULL;
    c->nack_queue = c->ack_queue_cap = 0;
    c->nactive = c->active_cap = 0;
    pmeth_frag_release_all();
    while (c->free_held != NULL) {
        pmeth_held_t *h = c->free_held;
        c->free_held = h->next;
        free(h);
    }
    pmeth_component_release();
    PMETH_UNLOCK();
    return OPAL_SUCCESS;
}

/* A descriptor for SIZE bytes (header and data) to EP: a frame (for a message
 * start above a frame's payload, a buffer array of them), or private memory
 * for a message start when the frames could not go at once (CONTIGUOUS: a
 * start of several frames always, for ob1's alloc); NULL: refused. */
static mca_btl_pmeth_frag_t *frag_for(mca_btl_base_endpoint_t *ep, size_t size, uint32_t flags,
                                      uint8_t order, bool contiguous)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const bool start = flags & MCA_BTL_DES_FLAGS_PRIORITY;
    if (size > c->frame_payload && (!start || size > mca_btl_pmeth.btl_eager_limit)) {
        return NULL;
    }
    mca_btl_pmeth_frag_t *frag = pmeth_frag_get(ep);
    if (frag == NULL) {
        return NULL;
    }
    uint32_t nframes = size > c->frame_payload ? (uint32_t) ((size + c->frame_payload - 1) / c->frame_payload) : 1;
    /* behind waiting fragments, without room in the window, or (the frames of a
     * message start after its first) beyond the peer's grant, a frame could not
     * be posted at once: such a fragment waits in private memory from the start */
    bool must_wait = !pmeth_start_fits(ep, nframes);
    /* receiver-ready sending: bulk (pipeline) fragments beyond the peer's grant
     * (or our delay limit to it) are refused, and ob1 retries them on the
     * callback of a fragment in flight (one whose callback waits for its ack,
     * pmeth_frag_posted; with none such, one more goes, and its callback will
     * wait).  Message starts never wait for a grant: they are single frames,
     * and ob1 must not retry them */
    bool may_refuse = !must_wait && !(flags & MCA_BTL_DES_FLAGS_PRIORITY) && ep->tx != NULL
                      && ep->cb_at_ack > 0;
    /* ... and beyond this progress pass's burst (btl_pmeth_send_burst) */
    if (may_refuse && c->send_burst > 0 && c->burst_used >= c->send_burst) {
        pmeth_frag_put(frag);
        c->refused++;
        c->burst_waits++;
        return NULL;
    }
    if (may_refuse && pmeth_send_limited(ep)
        && pmeth_txwin_inflight(ep->tx) >= pmeth_send_limit(ep, pmeth_now_ns())) {
        pmeth_frag_put(frag);
        c->refused++;
        if (!ep->credit_blocked) {
            ep->credit_blocked = true;      /* ob1 retries at every progress: count once */
            c->credit_waits++;
        }
        return NULL;
    }
    if (!(flags & MCA_BTL_DES_FLAGS_PRIORITY)) {
        ep->credit_blocked = false;
    }
    bool framed = !must_wait && !(contiguous && nframes > 1) && pmeth_frag_take_start(frag, size);
    if (!framed && (!start || !pmeth_frag_stage(frag, size))) {
        pmeth_frag_put(frag);
        c->refused++;
        return NULL;
    }
    if (!framed) {
        frag->segment.seg_len = size;
    }
    frag->base.des_flags = flags;
    frag->base.order = order;
    return frag;
}

static mca_btl_base_descriptor_t *pmeth_alloc(mca_btl_base_module_t *btl,
                                              mca_btl_base_endpoint_t *ep, uint8_t order,
                                              size_t size, uint32_t flags)
{
    PMETH_LOCK();
    mca_btl_pmeth_frag_t *frag = frag_for(ep, size, flags, order, true);
    PMETH_UNLOCK();
    return frag != NULL ? &frag->base : NULL;
}

static int pmeth_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_pmeth_frag_t *frag = (mca_btl_pmeth_frag_t *) des;
    PMETH_LOCK();
    if (frag->state & (PMETH_FRAG_IN_WINDOW | PMETH_FRAG_PENDING | PMETH_FRAG_CB_QUEUED)) {
        frag->state |= PMETH_FRAG_USER_FREED;   /* the frame is the retransmit copy: keep it */
    } else {
        pmeth_frag_put(frag);       /* with its buffer array, if never sent */
    }
    PMETH_UNLOCK();
    return OPAL_SUCCESS;
}

/* Pack ob1's data straight into the frame that goes on the wire, or, for a
 * pipeline fragment larger than a frame, into the frames of a buffer array
 * (btl_pmeth_array_frames): one iovec per frame, ob1's header in the first.  A
 * message start (PRIORITY) is packed whole, up to the eager limit: into a
 * buffer array when it is longer than a frame, or into private memory when its
 * frames could not go at once (split into frames when sent). */
static mca_btl_base_descriptor_t *pmeth_prepare_src(mca_btl_base_module_t *btl,
                                                    mca_btl_base_endpoint_t *ep,
                                                    struct opal_convertor_t *convertor,
                                                    uint8_t order, size_t reserve, size_t *size,
                                                    uint32_t flags)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const size_t payload = c->frame_payload;
    const bool start = flags & MCA_BTL_DES_FLAGS_PRIORITY;
    if (reserve >= payload) {
        return NULL;
    }
    if (start && reserve + *size > mca_btl_pmeth.btl_eager_limit) {
        *size = mca_btl_pmeth.btl_eager_limit - reserve;    /* a rendezvous start */
    }
    unsigned nframes = 1;
    if (reserve + *size > payload && !start && c->array_frames > 1
        && ep->nstripe >= c->array_min_paths) {
        size_t want = (reserve + *size + payload - 1) / payload;
        nframes = want < c->array_frames ? (unsigned) want : c->array_frames;
    }
    PMETH_LOCK();
    size_t first = start || reserve + *size < payload ? reserve + *size : payload;
    mca_btl_pmeth_frag_t *frag = frag_for(ep, first, flags, order, false);
    if (frag != NULL && nframes > 1) {
        nframes = pmeth_frag_array_take(frag, nframes);
    }
    if (frag != NULL && *size > 0) {
        struct iovec iov[PMETH_WIRE_ARRAY_MAX];
        size_t left = *size;
        uint32_t iov_count = 0;
        for (mca_btl_pmeth_frag_t *f = frag; f != NULL && left > 0 && iov_count < PMETH_WIRE_ARRAY_MAX;
             f = f->array_next) {
            size_t cap = f->frame_id < 0 ? f->staged_cap : payload;    /* staged: one buffer */
            size_t skip = f == frag ? reserve : 0;
            size_t room = cap - skip;
            iov[iov_count].iov_base = (uint8_t *) f->segment.seg_addr.pval + skip;
            iov[iov_count].iov_len = left < room ? left : room;
            left -= iov[iov_count].iov_len;
            iov_count++;
        }
        size_t max_data = *size - left;
        if (opal_convertor_pack(convertor, iov, &iov_count, &max_data) < 0) {
            pmeth_frag_put(frag);
            frag = NULL;
        } else {
            *size = max_data;
            /* each frame carries what the convertor put in its iovec; frames
             * it left empty go back (a DATA frame has a payload) */
            frag->segment.seg_len = reserve + (iov_count > 0 ? iov[0].iov_len : 0);
            frag->state &= (uint8_t) ~PMETH_FRAG_CONT;
            mca_btl_pmeth_frag_t *prev = frag, *rest = frag->array_next;
            prev->array_next = NULL;
            for (unsigned i = 1; rest != NULL; i++) {
                mca_btl_pmeth_frag_t *next = rest->array_next;
                rest->array_next = NULL;
                rest->state &= (uint8_t) ~PMETH_FRAG_CONT;
                if (i < iov_count && iov[i].iov_len > 0) {
                    rest->segment.seg_len = iov[i].iov_len;
                    prev->state |= PMETH_FRAG_CONT;
                    prev->array_next = rest;
                    prev = rest;
                } else {
                    pmeth_frag_put(rest);
                }
                rest = next;
            }
            if (frag->array_next != NULL && !pmeth_frag_array_segments(frag)) {
                pmeth_frag_put(frag);
                frag = NULL;
            }
        }
    } else if (frag != NULL) {
        frag->segment.seg_len = reserve;
    }
    PMETH_UNLOCK();
    return frag != NULL ? &frag->base : NULL;
}

static int pmeth_register_error(mca_btl_base_module_t *btl, mca_btl_base_module_error_cb_fn_t cb)
{
    pmeth_error_cb = cb;
    return OPAL_SUCCESS;
}

void pmeth_fatal(mca_btl_base_endpoint_t *ep, const char *what)
{
    if (pmeth_error_cb != NULL) {
        pmeth_error_cb(&mca_btl_pmeth, MCA_BTL_ERROR_FLAGS_FATAL, ep != NULL ? ep->proc : NULL,
                       (char *) what);
    }
}

mca_btl_base_module_t mca_btl_pmeth = {
    .btl_component = &mca_btl_pmeth_component.super,
    .btl_add_procs = pmeth_add_procs,
    .btl_del_procs = pmeth_del_procs,
    .btl_finalize = pmeth_finalize,
    .btl_alloc = pmeth_alloc,
    .btl_free = pmeth_free,
    .btl_prepare_src = pmeth_prepare_src,
    .btl_send = pmeth_send,
    .btl_sendi = pmeth_sendi,
    .btl_register_error = pmeth_register_error,
};
