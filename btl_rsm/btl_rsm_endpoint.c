/*
 * Connections (seed 000, 3.3): half duplex and deferred.  The first send to a
 * peer creates (once per destination NUMA node) this rank's area there, maps the
 * peer's control segment and rings its doorbell; the peer, polling, maps our
 * area and starts reading the queue we own in it for it.  Acks flow back into
 * our control segment.  Nothing is set up for pairs that never talk.
 */
#include "btl_rsm.h"
#include "btl_rsm_frag.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/show_help.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rsm_seg_name(char *out, size_t len, const char *tag, const char *what, int a, int b)
{
    if (strcmp(what, "ctl") == 0) {
        return snprintf(out, len, "/rsm-%.32s-ctl", tag);
    }
    return snprintf(out, len, "/rsm-%.32s-a%ds%d", tag, a, b);
}

/* Export, then ask the launcher to delete the file when the job ends however it
 * ends (kill -9 and MPI_Abort included): connections are lazy, so no rank can
 * know when every peer that will ever map a segment has mapped it. */
int rsm_export_registered(rsm_seg_t *seg, const char *name, size_t size, int numa_node)
{
    int rc = rsm_seg_shm_ops.seg_export(seg, name, size, numa_node);
    if (rc != 0) {
        return rc;
    }
    if (NULL != opal_pmix.register_cleanup) {
        char path[RSM_SEG_NAME_MAX + 16];
        snprintf(path, sizeof(path), "/dev/shm%s", name);
        if (OPAL_SUCCESS == opal_pmix.register_cleanup(path, false, false, false)) {
            mca_btl_rsm_component.cleanup_registered++;
        } else {
            RSM_VERBOSE(1, "the launcher refused to clean up %s at job end", path);
        }
    }
    return 0;
}

int rsm_reserve_or_say(rsm_seg_t *seg, size_t off, size_t len, size_t need, const char *what)
{
    int rc = rsm_seg_reserve(seg, off, len);
    if (rc == 0) {
        return OPAL_SUCCESS;
    }
    if (rc == -ENOSPC) {
        const size_t free_bytes = rsm_shm_free_bytes();
        opal_show_help("help-btl-rsm.txt", "shm-full", true, opal_process_info.nodename, need, what,
                       free_bytes, mca_btl_rsm_component.pool_size);
        rsm_fatal_reason("/dev/shm has %zu bytes free, %zu more are needed for %s", free_bytes,
                         need, what);
    } else {
        opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                       "give memory to", seg->name, len, strerror(-rc));
        rsm_fatal_reason("could not give %zu bytes of memory to %s: %s", len, seg->name,
                         strerror(-rc));
    }
    return OPAL_ERROR;
}

/* 64 KiB chunks, or 64 of them in a larger pool: one uint64_t of bits a stripe */
static void area_chunks_init(rsm_area_t *area)
{
    const size_t pool = area->lay->pool_bytes;
    unsigned shift = 16;
    while (shift < 40 && ((size_t) 64 << shift) < pool) {
        shift++;
    }
    const size_t nchunks = (pool + ((size_t) 1 << shift) - 1) >> shift;
    area->chunk_shift = (uint8_t) shift;
    for (unsigned k = 0; k < RSM_MAX_STRIPES; k++) {
        area->reserved[k] = nchunks >= 64 ? 0 : ~((UINT64_C(1) << nchunks) - 1);
    }
}

int rsm_area_reserve_runs(rsm_area_t *area, const rsm_run_t *runs, unsigned n)
{
    const rsm_layout_t *lay = area->lay;
    const unsigned shift = area->chunk_shift;
    for (unsigned i = 0; i < n; i++) {
        const rsm_run_t *run = &runs[i];
        uint64_t *have = &area->reserved[run->stripe];
        for (uint64_t missing = rsm_area_run_chunks(area, run) & ~*have; missing != 0;
             missing &= missing - 1) {
            const unsigned c = (unsigned) __builtin_ctzll(missing);
            const size_t off = (size_t) c << shift;
            size_t len = (size_t) 1 << shift;
            len = off + len > lay->pool_bytes ? lay->pool_bytes - off : len;
            const size_t need = (size_t) (64 - __builtin_popcountll(*have)) << shift;
            if (rsm_reserve_or_say(&area->seg[run->stripe], rsm_layout_pool_base(lay, run->stripe) + off,
                                   len, need < lay->pool_bytes ? need : lay->pool_bytes,
                                   "its block pool") != OPAL_SUCCESS) {
                return OPAL_ERROR;
            }
            *have |= UINT64_C(1) << c;
        }
    }
    return OPAL_SUCCESS;
}

static rsm_area_t *area_get(int numa_node)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int slot = numa_node >= 0 && numa_node < RSM_MAX_NUMA ? numa_node : 0;
    if (c->areas[slot] != NULL) {
        return c->areas[slot];
    }
    rsm_area_t *area = calloc(1, sizeof(*area));
    if (area == NULL) {
        return NULL;
    }
    area->numa_node = slot;
    area->lay = &c->layout;
    for (unsigned k = 0; k < c->layout.stripes; k++) {
        char name[RSM_SEG_NAME_MAX];
        rsm_seg_name(name, sizeof(name), c->tag, "area", slot, (int) k);
        int rc = rsm_export_registered(&area->seg[k], name, rsm_layout_seg_size(&c->layout, k),
                                       c->numa_place ? numa_node : -1);
        if (rc == 0 && rsm_pool_init(&area->pool[k], &c->layout, (uint8_t) k) != 0) {
            rc = -ENOMEM;
        }
        if (rc == 0) {
            rsm_pool_set_next_fit(&area->pool[k], c->pool_next_fit,
                                  c->pool_lap >= c->pool_size ? 0 : c->pool_lap / c->layout.stripes);
        }
        if (rc != 0) {
            opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                           "export", name, rsm_layout_seg_size(&c->layout, k), strerror(-rc));
            rsm_fatal_reason("could not create %s: %s", name, strerror(-rc));
        } else if (k == 0 && rsm_reserve_or_say(&area->seg[0], 0, rsm_layout_pool_base(&c->layout, 0),
                                               rsm_layout_pool_base(&c->layout, 0),
                                               "its postbox queues") != OPAL_SUCCESS) {
            rc = -ENOSPC;
        }
        if (rc != 0) {
            for (unsigned j = 0; j <= k; j++) {
                if (area->seg[j].ops != NULL) {
                    area->seg[j].ops->seg_release(&area->seg[j]);
                }
                rsm_pool_fini(&area->pool[j]);
            }
            free(area);
            return NULL;
        }
    }
    area_chunks_init(area);
    RSM_VERBOSE(10, "area for NUMA node %d: %u stripe(s), %zu bytes each", slot,
                c->layout.stripes, rsm_layout_seg_size(&c->layout, 0));
    c->areas[slot] = area;
    return area;
}

static int map_peer_ctl(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (ep->peer_ctl.base != NULL) {
        return OPAL_SUCCESS;
    }
    char name[RSM_SEG_NAME_MAX];
    rsm_seg_name(name, sizeof(name), ep->tag, "ctl", 0, 0);
    int rc = rsm_seg_shm_ops.seg_import(&ep->peer_ctl, name, rsm_ctl_size(&c->layout));
    if (rc != 0 || ((rsm_ctl_t *) ep->peer_ctl.base)->magic != RSM_CTL_MAGIC) {
        opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                       "import", name, rsm_ctl_size(&c->layout),
                       rc != 0 ? strerror(-rc) : "bad magic");
        rsm_fatal_reason("could not map %s: %s", name, rc != 0 ? strerror(-rc) : "bad magic");
        if (rc == 0) {
            ep->peer_ctl.ops->seg_release(&ep->peer_ctl);
        }
        return OPAL_ERROR;
    }
    return OPAL_SUCCESS;
}

int rsm_ep_list_add(mca_btl_base_endpoint_t ***list, uint32_t *n, mca_btl_base_endpoint_t *ep)
{
    mca_btl_base_endpoint_t **grown = realloc(*list, (*n + 1) * sizeof(**list));
    if (grown == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    grown[(*n)++] = ep;
    *list = grown;
    return OPAL_SUCCESS;
}

int rsm_endpoint_connect(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const rsm_layout_t *lay = &c->layout;
    if (ep->out_connected) {
        return OPAL_SUCCESS;
    }
    if (ep->remote) {
        return rsm_verbs_connect(ep);
    }
    /* ob1 has no other path to this peer once it chose us: a connection that
     * cannot be made ends the job, after the message that says why (retried,
     * every send would print it again) */
    if ((ep->area == NULL && (ep->area = area_get(ep->numa_node)) == NULL)
        || map_peer_ctl(ep) != OPAL_SUCCESS) {
        rsm_fatal(ep, "btl rsm: a connection to a rank of this host could not be made");
        return OPAL_ERROR;
    }
    if (ep->slots == NULL && (ep->slots = calloc(lay->queue_len, sizeof(rsm_slot_t))) == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    /* the queue is fresh (zeroed) memory: no slot holds stale payload yet */
    if (ep->stale == NULL && (ep->stale = calloc(lay->queue_len, 1)) == NULL) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (rsm_ep_list_add(&c->outbound, &c->n_outbound, ep) != OPAL_SUCCESS) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    ep->out_queue = rsm_layout_queue(lay, ep->area->seg[0].base, ep->local_rank);
    ep->out_acks = rsm_ctl_ack_row(lay, c->ctl.base, ep->local_rank);
    ep->tail = ep->reclaimed = c->first_seq;
    ep->slots_with_runs = 0;
    ep->collect_mark = c->first_seq - 1;        /* none yet: out of [reclaimed, tail) */
    rsm_seg_prefault(ep->out_queue, (size_t) lay->queue_len * RSM_POSTBOX_SIZE, true);
    /* ring the doorbell: our byte, then the generation the receiver polls */
    rsm_ctl_t *peer = ep->peer_ctl.base;
    ((volatile uint8_t *) peer + rsm_ctl_connect_off())[c->my_local_rank] = 1;
    atomic_fetch_add_explicit(&peer->connect_gen, 1, memory_order_release);
    ep->out_connected = true;
    RSM_VERBOSE(10, "connected to local rank %u (pid %d, NUMA node %d)", ep->local_rank,
                (int) ep->pid, ep->numa_node);
    return OPAL_SUCCESS;
}

static int accept_one(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const rsm_layout_t *lay = &c->layout;
    if (map_peer_ctl(ep) != OPAL_SUCCESS) {
        return OPAL_ERROR;
    }
    for (unsigned k = 0; k < lay->stripes; k++) {
        char name[RSM_SEG_NAME_MAX];
        int node = c->numa_node >= 0 && c->numa_node < RSM_MAX_NUMA ? c->numa_node : 0;
        rsm_seg_name(name, sizeof(name), ep->tag, "area", node, (int) k);
        int rc = rsm_seg_shm_ops.seg_import(&ep->in_seg[k], name, rsm_layout_seg_size(lay, k));
        if (rc != 0) {
            opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                           "import", name, rsm_layout_seg_size(lay, k), strerror(-rc));
            return OPAL_ERROR;
        }
    }
    if (rsm_ep_list_add(&c->inbound, &c->n_inbound, ep) != OPAL_SUCCESS) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    ep->in_queue = rsm_layout_queue(lay, ep->in_seg[0].base, c->my_local_rank);
    ep->in_acks = rsm_ctl_ack_row(lay, ep->peer_ctl.base, c->my_local_rank);
    ep->head = ep->unacked = c->first_seq;
    rsm_seg_prefault(ep->in_queue, (size_t) lay->queue_len * RSM_POSTBOX_SIZE, false);
    ep->in_lay = lay;
    ep->in_connected = true;
    RSM_VERBOSE(10, "accepted a connection from local rank %u", ep->local_rank);
    return OPAL_SUCCESS;
}

/* The doorbell: only when the generation moved do we scan the bytes. */
int rsm_accept_connections(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    rsm_ctl_t *ctl = c->ctl.base;
    uint64_t gen = atomic_load_explicit(&ctl->connect_gen, memory_order_acquire);
    if (gen == c->seen_gen && !c->accept_pending) {
        return 0;
    }
    c->seen_gen = gen;
    c->accept_pending = false;
    const volatile uint8_t *bell = (const volatile uint8_t *) ctl + rsm_ctl_connect_off();
    int accepted = 0;
    for (uint32_t s = 0; s < c->nlocal; s++) {
        if (bell[s] == 0 || s == c->my_local_rank) {
            continue;
        }
        mca_btl_base_endpoint_t *ep = c->by_local_rank[s];
        if (ep == NULL) {
            c->accept_pending = true;   /* add_procs has not told us of it yet */
            continue;
        }
        if (ep->in_connected) {
            continue;
        }
        if (accept_one(ep) != OPAL_SUCCESS) {
            return OPAL_ERROR;
        }
        accepted++;
    }
    return accepted;
}

/* The module's eager limit: the full one; while any receiver is in
 * rsm_distance_short_eager's band, by what this rank does: the short one; the
 * one under load while it also takes in bulk data (c->under_load) and streams
 * to no peer (rsm_sent_to: a ping-pong); the stream limit while it streams and
 * takes in none (a one-way stream's sender).  One limit serves every
 * peer (ob1 reads btl_eager_limit at each send), and a 16-64 KiB message sent
 * eager to such a receiver costs 2-3x what a rendezvous does, where one sent
 * by rendezvous to a receiver under two_copy_ns costs a round trip more
 * (10-15% at 64 KiB): so any receiver in the band lowers it.  Messages already
 * sent eager are unaffected; every size the full limit allows still fits the
 * pool.  Returns the old limit. */
static size_t eager_set(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const size_t old = mca_btl_rsm.btl_eager_limit;
    const size_t limit = c->short_eager_peers == 0 ? c->eager_full
                         : c->streams_out > 0 ? (c->under_load ? c->eager_short : c->eager_streaming)
                         : c->under_load ? c->eager_loaded : c->eager_short;
    if (limit != old) {
        c->eager_lowered += old == c->eager_full;
        c->eager_load_lowered += limit == c->eager_loaded && c->eager_loaded < c->eager_short;
        mca_btl_rsm.btl_eager_limit = limit;
    }
    return old;
}

/* After a distance decision about EP: is it in the band of the short limit?  On
 * a host with a small cache (btl_rsm_two_copy_llc_min) the band is the far
 * receivers: every message past the eager limit is read by single copy there,
 * and a 16 KiB message's two copies took 4.6 us to a far receiver, its
 * rendezvous 3.4 (to a near one 1.85 and 4.1). */
static void eager_follows(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (c->eager_short >= c->eager_full) {
        return;
    }
    const bool in_band = c->small_cache ? ep->dist.decisions > 0 && !ep->dist.near
                                        : rsm_distance_short_eager(&ep->dist, c->short_eager_cycles,
                                                                   ep->short_eager);
    if (in_band == ep->short_eager) {
        return;
    }
    ep->short_eager = in_band;
    c->short_eager_peers += in_band ? 1 : (uint32_t) -1;
    if (eager_set() == mca_btl_rsm.btl_eager_limit) {
        return;
    }
    if (c->small_cache) {
        RSM_VERBOSE(20, "eager limit %zu bytes: local rank %u %s (its lines in %u cycles; far "
                    "from %u)", mca_btl_rsm.btl_eager_limit, ep->local_rank,
                    in_band ? "is far" : "is near, and no other receiver is far",
                    ep->dist.median, c->nt_far_cycles);
    } else {
        RSM_VERBOSE(20, "eager limit %zu bytes: local rank %u %s (its lines in %u cycles; "
                    "short eager from %u up to %u)", mca_btl_rsm.btl_eager_limit, ep->local_rank,
                    in_band ? "is read by single copy and not far" : "left the middle band, "
                    "and no other receiver is in it", ep->dist.median, c->two_copy_cycles,
                    c->short_eager_cycles);
    }
}

/* After a distance sample: LOADED says whether this rank took in bulk data
 * since its previous one; two in a row change c->under_load, and with it the
 * eager limit while a receiver is in the band (btl_rsm_loaded_eager_limit). */
static void eager_load(bool loaded)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const bool now = rsm_load_add(&c->load_bits, loaded, c->under_load);
    if (now == c->under_load) {
        return;
    }
    c->under_load = now;
    if (c->short_eager_peers > 0 && eager_set() != mca_btl_rsm.btl_eager_limit) {
        RSM_VERBOSE(20, "eager limit %zu bytes: this rank %s bulk data",
                    mca_btl_rsm.btl_eager_limit, now ? "takes in" : "no longer takes in");
    }
}

/* A stream to EP began or ended (rsm_sent_to, rsm_heard_from).  Under load,
 * a rank that sends several messages to one peer before that peer answers
 * (windows both ways) does better eager, and the first message after one from
 * the peer (a ping-pong's reply) by rendezvous: so the limit under load is
 * lifted while this rank streams to any peer, and a one-way stream's sender
 * takes the stream limit.  Streams start and end once a pattern changes. */
void rsm_stream_changed(mca_btl_base_endpoint_t *ep, bool on)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (on == ep->streaming_to || (on && c->stream_sends == 0)) {
        return;
    }
    ep->streaming_to = on;
    c->streams_out += on ? 1 : (uint32_t) -1;
    if (c->short_eager_peers > 0) {
        eager_set();
    }
}

/* Bulk data this rank has taken in so far: single-copy reads done and pool
 * messages delivered by the node's senders (each endpoint counts its own).
 * Summed here, at a timed sample (one in RSM_DIST_EVERY reclaims), from the
 * counters the receive and get paths keep anyway, so the receive path writes
 * nothing more. */
static uint64_t bulk_taken_in(void)
{
    const mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    uint64_t n = c->gets;
    for (uint32_t i = 0; i < c->n_inbound; i++) {
        n += c->inbound[i]->in_pool_msgs;
    }
    return n;
}

static void distance_sample(mca_btl_base_endpoint_t *ep, uint64_t cycles)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const bool was_near = ep->dist.near, was_two_copy = ep->dist.two_copy;
    const uint32_t loaded_sets = ep->dist.loaded_sets;
    /* loaded: we took in bulk data since our last sample (rsm_distance.h, "Load") */
    const uint64_t bulk = bulk_taken_in();
    const bool took_in = bulk != ep->dist_bulk_mark;
    const bool loaded = c->distance_load_holds && took_in;
    ep->dist_bulk_mark = bulk;
    eager_load(took_in);
    if (!rsm_distance_add(&ep->dist, cycles > UINT32_MAX ? UINT32_MAX : (uint32_t) cycles,
                          loaded, c->nt_far_cycles, c->two_copy_cycles)) {
        c->distance_loaded += ep->dist.loaded_sets - loaded_sets;
        return;
    }
    if (ep->dist.near) {
        c->near_decisions++;
    } else {
        c->far_decisions++;
    }
    eager_follows(ep);
    if (ep->dist.near != was_near || ep->dist.two_copy != was_two_copy
        || ep->dist.decisions == 1) {
        RSM_VERBOSE(20, "local rank %u is %s: its cache lines arrive in %u cycles (median of %d; "
                    "far from %u, two copies below %u): %s stores into the pool, %s",
                    ep->local_rank, ep->dist.near ? "near" : "far", ep->dist.median,
                    RSM_DIST_SAMPLES, c->nt_far_cycles, c->two_copy_cycles,
                    ep->dist.near ? "ordinary" : "streaming",
                    !c->single_copy_on ? "no single copy"
                    : ep->dist.two_copy && !c->single_copy_near ? "two copies" : "single copy");
    }
}

/* Postbox LAST was consumed: the receiver wrote its lap tag into our ack row,
 * or (verbs) said so in the immediate of one of its own units (rsm_vimm_pack).
 * The row is written only by the receiver's ordered writes on one queue pair,
 * the cursor only forward, so neither ever goes back on what it said. */
static inline bool unit_acked(const mca_btl_base_endpoint_t *ep, uint32_t last)
{
    if (atomic_load_explicit(&ep->out_acks[last & ep->q_mask], memory_order_acquire)
        == rsm_lap_tag(last, ep->q_shift)) {
        return true;
    }
    return ep->remote && (int32_t) (ep->peer_consumed - last) > 0;
}

void rsm_endpoint_reclaim(mca_btl_base_endpoint_t *ep, bool need)
{
    const uint32_t mask = ep->q_mask;
    if (ep->reclaimed == ep->tail) {
        return;
    }
    /* The receiver acks every postbox, in order, every lap (release), so the
     * last slot of a unit carrying this lap's tag means the whole unit was
     * consumed; the other slots' bytes need not be read.
     *
     * The first load, the oldest unit's ack, is timed.  When it shows the ack,
     * the receiver wrote that line after our last read of it (our last look
     * found this byte, and every later one, not yet written), so the load
     * fetched the line from the receiver's cache: a sample of how far its core
     * is (rsm_distance.h).  Reclaim runs when the queue or the pool looks full
     * and every RSM_COLLECT_EVERY postboxes; every reclaim is timed until the
     * first decision, one in RSM_DIST_EVERY after it, nothing on the receive
     * path. */
    rsm_slot_t *oldest = &ep->slots[ep->reclaimed & mask];
    uint32_t last = ep->reclaimed + oldest->span - 1;
    /* a NIC wrote a remote peer's acks: no core to measure */
    const bool timed = !ep->remote && ep->dist_skip == 0;
    uint64_t t0 = timed ? rsm_cycles() : 0;
    if (!unit_acked(ep, last)) {
        return;
    }
    if (timed) {
        distance_sample(ep, rsm_cycles() - t0);
        ep->dist_skip = ep->dist.decisions > 0 ? RSM_DIST_EVERY - 1 : 0;
    } else if (!ep->remote) {
        ep->dist_skip--;
    }
    /* with no pool runs outstanding (inline traffic) only the newest slot's ack matters */
    if (ep->slots_with_runs == 0) {
        last = ep->tail - 1;
        if (unit_acked(ep, last)) {
            ep->reclaimed = ep->tail;
            return;
        }
        /* A periodic collection of a receiver still behind: the end of the unit
         * that was newest at the last collection, and no walk.  Why: the walk
         * read one ack byte per unit (per message, for tiny ones) in the line
         * the receiver was writing, and each read took the line from it: in an
         * 8 B stream the walk was 9% of the sender's time, and the receiver, the
         * slower side, waited for its ack line to come back.  Nothing is
         * outstanding but slots, which a queue of hundreds of postboxes can
         * leave for one collection more; a sender that needs room walks.  So
         * does the collection before a timed one (dist_skip 0: every one until
         * the first decision): a distance sample is only a fetch from the
         * receiver's cache if our last look at that ack found it unwritten, and
         * the walk ends on such a look (without it, far receivers were taken
         * for near ones and lost their paired postboxes: 1-8 B streams -9%). */
        if (!need && ep->dist_skip != 0) {
            const uint32_t mark = ep->collect_mark;
            if ((int32_t) (mark - ep->reclaimed) >= 0 && (int32_t) (ep->tail - mark) > 0
                && unit_acked(ep, mark)) {
                ep->reclaimed = mark + 1;
            }
            ep->collect_mark = ep->tail - 1;
            return;
        }
    }
    while (ep->reclaimed != ep->tail) {
        rsm_slot_t *slot = &ep->slots[ep->reclaimed & mask];
        last = ep->reclaimed + slot->span - 1;
        if (!unit_acked(ep, last)) {
            break;
        }
        for (unsigned r = 0; r < slot->nruns; r++) {
            rsm_pool_free(&ep->area->pool[slot->runs[r].stripe], &slot->runs[r]);
        }
        if (slot->nruns > 0) {
            ep->slots_with_runs--;
            slot->nruns = 0;
        }
        ep->reclaimed += slot->span;
    }
}

void rsm_endpoint_release(mca_btl_base_endpoint_t *ep)
{
    for (unsigned k = 0; k < RSM_MAX_STRIPES; k++) {
        if (ep->in_seg[k].base != NULL) {
            ep->in_seg[k].ops->seg_release(&ep->in_seg[k]);
        }
    }
    if (ep->peer_ctl.base != NULL) {
        ep->peer_ctl.ops->seg_release(&ep->peer_ctl);
    }
    while (ep->pending_head != NULL) {
        mca_btl_rsm_frag_t *frag = ep->pending_head;
        ep->pending_head = frag->next;
        rsm_frag_complete(frag, OPAL_ERR_UNREACH);
    }
    free(ep->slots);
    ep->slots = NULL;
    free(ep->stale);
    ep->stale = NULL;
}

/* The control segment, then the lock that said its owner was alive: a job
 * that starts meanwhile finds the lock free and the name already gone. */
void rsm_ctl_release(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (c->ctl.base != NULL) {
        c->ctl.ops->seg_release(&c->ctl);
    }
    if (c->ctl_hold >= 0) {
        close(c->ctl_hold);
        c->ctl_hold = -1;
    }
}

void rsm_areas_release(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    for (int n = 0; n < RSM_MAX_NUMA; n++) {
        rsm_area_t *area = c->areas[n];
        if (area == NULL) {
            continue;
        }
        for (unsigned k = 0; k < c->layout.stripes; k++) {
            area->seg[k].ops->seg_release(&area->seg[k]);
            rsm_pool_fini(&area->pool[k]);
        }
        free(area);
        c->areas[n] = NULL;
    }
}
