/*
 * Peers: endpoints made from the modex, and the probing that finds which of
 * our links reach which of theirs before first use.
 *
 * Each of our links sends a small and a full-MTU PROBE to each of the peer's
 * link MACs; the peer answers each from the link it arrived on.  A pair that
 * answers both is a path.  A pair that answers only the small probe is an MTU
 * mismatch (one end's MTU is larger than the other's, so full frames die on
 * the way): reported, naming both ends, and not used (the model is usnic's
 * connectivity checker).  A peer with no path is unreachable for ob1 (it may
 * still be reached by another BTL), which is not an error.
 */
#define _GNU_SOURCE
#include "btl_pmeth.h"
#include "btl_pmeth_frag.h"

#include "opal/util/show_help.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Does the peer share our network stack (the same kernel and network
 * namespace: loopback reaches it, our Ethernet frames do not)?  Where either
 * end could not tell, the same host name stands for it. */
static bool same_netstack(const pmeth_modex_t *peer, const pmeth_modex_t *ours)
{
    static const uint8_t unknown[sizeof(peer->netstack)];
    if (memcmp(peer->netstack, unknown, sizeof(unknown)) == 0
        || memcmp(ours->netstack, unknown, sizeof(unknown)) == 0) {
        return strcmp(peer->host, ours->host) == 0;
    }
    return memcmp(peer->netstack, ours->netstack, sizeof(peer->netstack)) == 0;
}

mca_btl_base_endpoint_t *pmeth_endpoint_create(const opal_process_name_t *name, opal_proc_t *proc,
                                               const pmeth_modex_t *modex)
{
    mca_btl_base_endpoint_t *ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return NULL;
    }
    ep->proc = proc;
    ep->name = *name;
    ep->peer_id = name->vpid;
    ep->modex = *modex;
    ep->modex.host[sizeof(ep->modex.host) - 1] = '\0';
    for (uint32_t j = 0; j < ep->modex.nlinks; j++) {
        ep->modex.links[j].ifname[IFNAMSIZ - 1] = '\0';
    }
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    ep->on_host = same_netstack(&ep->modex, &c->modex);
    ep->peer_host_link = -1;
    if (ep->on_host && ep->modex.host_link && c->host_link >= 0
        && ep->modex.nlinks < PMETH_MAX_LINKS) {
        /* its host link is not in the modex (it opens at the first add_procs,
         * by the rule ours followed): the link after its published ones */
        pmeth_modex_link_t *l = &ep->modex.links[ep->modex.nlinks];
        memset(l, 0, sizeof(*l));
        snprintf(l->ifname, sizeof(l->ifname), "%s", c->links[c->host_link].ifname);
        l->mtu = ep->modex.host_link_mtu;
        ep->peer_host_link = (int8_t) ep->modex.nlinks++;
    }
    ep->state = PMETH_EP_NEW;
    /* until its first frame says otherwise, the peer is taken to grant as we
     * do: no limit with credits off, else the floor */
    ep->grant.unlimited = mca_btl_pmeth_component.credit_policy == PMETH_CREDIT_OFF;
    pmeth_pace_init(&ep->pace, pmeth_now_ns());
    return ep;
}

int pmeth_endpoint_windows(mca_btl_base_endpoint_t *ep)
{
    if (ep->tx != NULL) {
        return OPAL_SUCCESS;
    }
    ep->tx = pmeth_txwin_create(&mca_btl_pmeth_component.wcfg);
    ep->rx = pmeth_rxwin_create(&mca_btl_pmeth_component.wcfg);
    if (ep->tx == NULL || ep->rx == NULL) {
        pmeth_txwin_destroy(ep->tx);
        pmeth_rxwin_destroy(ep->rx);
        ep->tx = NULL;
        ep->rx = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    return OPAL_SUCCESS;
}

bool pmeth_endpoint_list_room(mca_btl_base_endpoint_t ***list, uint32_t n, uint32_t *cap)
{
    if (n < *cap) {
        return true;
    }
    uint32_t grown = *cap ? 2 * *cap : 16;
    mca_btl_base_endpoint_t **l = realloc(*list, grown * sizeof(*l));
    if (l == NULL) {
        return false;
    }
    *list = l;
    *cap = grown;
    return true;
}

void pmeth_endpoint_activate(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->active) {
        return;
    }
    if (!pmeth_endpoint_list_room(&c->active, c->nactive, &c->active_cap)) {
        return;     /* serviced when it next sends; its timers wait until then */
    }
    ep->active = true;
    ep->active_index = c->nactive;
    c->active[c->nactive++] = ep;
}

void pmeth_endpoint_deactivate(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (!ep->active) {
        return;
    }
    mca_btl_base_endpoint_t *last = c->active[--c->nactive];
    c->active[ep->active_index] = last;
    last->active_index = ep->active_index;
    ep->active = false;
}

void pmeth_endpoint_release(mca_btl_base_endpoint_t *ep)
{
    pmeth_apm_endpoint_release(ep);
    /* frames still unacknowledged at the end: give them back */
    while (ep->pending_head != NULL) {
        mca_btl_pmeth_frag_t *f = ep->pending_head;
        ep->pending_head = f->next;
        pmeth_frag_put(f);
    }
    if (ep->tx != NULL) {
        uintptr_t handle;
        while (pmeth_txwin_drain(ep->tx, &handle)) {
            pmeth_frag_put((mca_btl_pmeth_frag_t *) handle);
        }
    }
    pmeth_array_release(ep);
    if (ep->rx != NULL) {
        uintptr_t handle;
        while (pmeth_rxwin_drain(ep->rx, &handle)) {
            pmeth_held_release((pmeth_held_t *) handle);
        }
    }
    pmeth_endpoint_deactivate(ep);
    if (ep->ack_queued) {               /* (the queue is empty outside a poll round) */
        mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
        for (uint32_t i = 0; i < c->nack_queue; i++) {
            if (c->ack_queue[i] == ep) {
                c->ack_queue[i] = c->ack_queue[--c->nack_queue];
                break;
            }
        }
    }
    pmeth_txwin_destroy(ep->tx);
    pmeth_rxwin_destroy(ep->rx);
    free(ep);
}

/* ---- probing ---------------------------------------------------------------- */

/* The nonce of the small probes that go beside a pair's full-MTU probe: their
 * answers say the peer still answers while the full probe goes unanswered.
 * Without them a peer that ended between the two (a job aborting in MPI_Init or
 * MPI_Win_allocate) made the survivor report an MTU mismatch that was not there. */
#define PROBE_NONCE_ALIVE 0x5a5a000000000001ull

static bool send_probe(mca_btl_base_endpoint_t *ep, uint8_t li, uint8_t pj, bool full,
                       uint64_t nonce)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    pmeth_link_t *link = &c->links[li];
    void *frame;
    uint32_t cap;
    int id = pmeth_ring_tx_get_ctl(link->ring, &frame, &cap);
    if (id < 0) {
        return false;
    }
    /* the full probe fills our MTU exactly: a smaller MTU on the way drops it */
    uint32_t len = full ? link->mtu + 14 : PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN;
    if (len > cap) {
        len = cap;
    }
    pmeth_wire_probe_t probe = {
        .nonce = nonce,
        .from_link = li,
        .to_link = pj,
        .full = full,
        .mtu = link->mtu,
        .frame_len = len,
    };
    pmeth_wire_build_probe(frame, len, ep->modex.links[pj].mac, link->mac, (uint16_t) c->ethertype,
                           c->job_key, ep->peer_id, c->my_id, PMETH_WIRE_PROBE, &probe);
    /* probes are not kept for retransmission: the frame goes back once sent */
    pmeth_link_post_once(link, id, len);
    return true;
}

/* A peer's PROBE: answer from the link it came in on, to the MAC it came from. */
void pmeth_answer_probe(pmeth_link_t *link, const pmeth_wire_view_t *v)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    void *frame;
    uint32_t cap;
    int id = pmeth_ring_tx_get_ctl(link->ring, &frame, &cap);
    if (id < 0) {
        return;         /* the prober asks again */
    }
    pmeth_wire_probe_t reply = v->probe;
    reply.frame_len = v->frame_len;     /* what arrived here: the prober learns what got through */
    reply.mtu = link->mtu;
    uint32_t len = PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN;
    pmeth_wire_build_probe(frame, len, v->src_mac, link->mac, (uint16_t) c->ethertype, c->job_key,
                           v->src_id, c->my_id, PMETH_WIRE_PROBE_REPLY, &reply);
    pmeth_link_post_once(link, id, len);
}

/* An answer to one of our probes. */
void pmeth_probe_reply(pmeth_link_t *link, const pmeth_wire_view_t *v)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (v->src_id >= c->nby_id || c->by_id[v->src_id] == NULL) {
        return;
    }
    mca_btl_base_endpoint_t *ep = c->by_id[v->src_id];
    const pmeth_wire_probe_t *p = &v->probe;
    uint8_t li = (uint8_t) (link - c->links), pj = p->to_link;
    uint32_t serial;
    if (ep->apm_conn != NULL && pmeth_path_probe_serial(p->nonce, ep->apm_nonce, &serial)
        && p->from_link == li) {
        /* a path probe of path migration (btl_pmeth_apm.c) */
        for (uint8_t k = 0; k < ep->npaths; k++) {
            if (ep->paths[k].local == li && ep->paths[k].peer_link == pj) {
                (void) pmeth_apm_probe_reply(ep, k, serial);
            }
        }
        return;
    }
    if (p->from_link != li || pj >= ep->modex.nlinks || !pmeth_pair_possible(ep, li, pj)) {
        return;         /* not the pair it claims, or one that cannot be */
    }
    if (p->nonce == (ep->probe_nonce ^ PROBE_NONCE_ALIVE) && !p->full) {
        if (ep->probe_small[li][pj]) {
            ep->probe_small[li][pj] = PMETH_PROBE_ALIVE;
        }
        return;
    }
    if (p->nonce != ep->probe_nonce) {
        return;         /* stale: an earlier round's */
    }
    ep->probe_news = true;
    if (p->full) {
        ep->probe_full[li][pj] = 1;
    } else {
        if (!ep->probe_small[li][pj]) {
            ep->probe_next_ns = 0;      /* the pair's full-MTU probe goes at once */
        }
        ep->probe_small[li][pj] = 1;
    }
    ep->probe_mtu_seen[li][pj] = p->mtu;
}

static bool probe_done(const mca_btl_base_endpoint_t *ep, uint64_t grace)
{
    const mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint32_t local_covered = 0, peer_covered = 0, local_links = 0, peer_links = 0;
    bool any = false;
    for (uint32_t i = 0; i < c->nlinks; i++) {
        bool covered = false, pairs = false;
        for (uint32_t j = 0; j < ep->modex.nlinks; j++) {
            covered |= ep->probe_small[i][j] && ep->probe_full[i][j];
            any |= ep->probe_small[i][j];
            pairs |= pmeth_pair_possible(ep, i, j);
        }
        local_covered += covered;
        local_links += pairs;
    }
    for (uint32_t j = 0; j < ep->modex.nlinks; j++) {
        bool covered = false, pairs = false;
        for (uint32_t i = 0; i < c->nlinks; i++) {
            covered |= ep->probe_small[i][j] && ep->probe_full[i][j];
            pairs |= pmeth_pair_possible(ep, i, j);
        }
        peer_covered += covered;
        peer_links += pairs;
    }
    /* (links that can pair with none of the peer's - the host link to another
     * host, Ethernet to this host - are not waited for) */
    if (local_covered == local_links || peer_covered == peer_links) {
        return true;
    }
    /* some links answered: the others get a grace period, then are taken as
     * not connected to that peer (a switch of another rail, another line) */
    return any && ep->probe_listened_ns - ep->probe_answer_ns >= grace;
}

/* Paths from the answered pairs: each of our links and each of theirs in at
 * most one path, same-numbered pairs first (the usual cabling). */
static void make_paths(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    bool peer_used[PMETH_MAX_LINKS] = {false};
    ep->npaths = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < c->nlinks; i++) {
            bool have = false;
            for (uint32_t k = 0; k < ep->npaths; k++) {
                have |= ep->paths[k].local == i;
            }
            for (uint32_t j = 0; !have && j < ep->modex.nlinks; j++) {
                if ((pass == 0 && j != i) || peer_used[j] || !pmeth_pair_possible(ep, i, j)
                    || !ep->probe_small[i][j] || !ep->probe_full[i][j]) {
                    continue;
                }
                pmeth_path_t *p = &ep->paths[ep->npaths++];
                p->local = (uint8_t) i;
                p->peer_link = (uint8_t) j;
                memcpy(p->peer_mac, ep->modex.links[j].mac, 6);
                p->small_rx_max = ep->modex.links[j].small_rx_max;
                p->mtu = c->links[i].mtu;
                peer_used[j] = true;
                have = true;
            }
        }
    }
    /* pairs that carried only small frames: an MTU mismatch, named */
    for (uint32_t i = 0; i < c->nlinks; i++) {
        for (uint32_t j = 0; j < ep->modex.nlinks; j++) {
            bool in_path = false;
            for (uint32_t k = 0; k < ep->npaths; k++) {
                in_path |= ep->paths[k].local == i || ep->paths[k].peer_link == j;
            }
            if (in_path || !ep->probe_small[i][j] || ep->probe_full[i][j]) {
                continue;
            }
            if (ep->probe_small[i][j] == PMETH_PROBE_ALIVE) {
                opal_show_help("help-btl-pmeth.txt", "mtu-mismatch", true,
                               opal_process_info.nodename, c->links[i].ifname, c->links[i].mtu,
                               ep->modex.host, ep->modex.links[j].ifname,
                               ep->modex.links[j].mtu);
            } else {
                PMETH_VERBOSE(5, "%s on %s answered a small probe on %s -> %s, then nothing: "
                              "that pair is not used (the peer may have ended)",
                              OPAL_NAME_PRINT(ep->name), ep->modex.host, c->links[i].ifname,
                              ep->modex.links[j].ifname);
            }
        }
    }
    ep->primary = 0;
    ep->stripe_next = 0;
}

static void probe_begin(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    ep->state = PMETH_EP_PROBING;
    ep->probe_nonce = ((uint64_t) getpid() << 32) ^ now ^ ep->peer_id
                      ^ ((uint64_t) c->my_id << 48);
    /* answers to an earlier round (a peer probed again) carry the old nonce and
     * are not taken; nothing of that round counts */
    memset(ep->probe_small, 0, sizeof(ep->probe_small));
    memset(ep->probe_full, 0, sizeof(ep->probe_full));
    memset(ep->probe_mtu_seen, 0, sizeof(ep->probe_mtu_seen));
    ep->probe_start_ns = ep->probe_last_step_ns = now;
    ep->probe_listened_ns = ep->probe_answer_ns = 0;
    ep->probe_answered = false;
    ep->probe_next_ns = 0;
}

/* A peer being probed is stepped when an answer came, its probes are due, or
 * this long passed (the resolution of its timeout); between these a step
 * changes nothing.  Peers that answer nothing (another switch) are probed for
 * btl_pmeth_probe_timeout_ms, and stepping them at every pass was a few per
 * cent of all CPU time in a job's first seconds (7 hosts sharing 2 CPUs). */
#define PROBE_STEP_NS 1000000ull

static bool probe_due(const mca_btl_base_endpoint_t *ep, uint64_t now)
{
    return ep->probe_news || now >= ep->probe_next_ns
           || now - ep->probe_last_step_ns >= PROBE_STEP_NS;
}

/* One step of EP's probing at NOW: its verdict once the answers are in or its
 * time is up (true), else the probes due go out (false).  A pair gets its
 * full-MTU probe only once the small one came back: a peer that answers
 * nothing (another switch, another line) costs small frames alone. */
static bool probe_step(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const uint64_t ms = 1000000;
    uint64_t interval = (c->probe_interval_ms ? c->probe_interval_ms : 1) * ms;
    ep->probe_news = false;
    /* The timeout and the grace count the time this process spent probing and
     * polling, not time away from MPI: a peer probed ahead, then left while
     * the application computed, has its answers unread in the ring, and is
     * not to be called unreachable for a silence nobody listened to. */
    uint64_t gap = now - ep->probe_last_step_ns;
    ep->probe_last_step_ns = now;
    ep->probe_listened_ns += gap <= 2 * interval ? gap : 0;
    bool any = false;
    for (uint32_t i = 0; i < c->nlinks; i++) {
        for (uint32_t j = 0; j < ep->modex.nlinks; j++) {
            any |= ep->probe_small[i][j];
        }
    }
    if (any && !ep->probe_answered) {
        ep->probe_answered = true;
        ep->probe_answer_ns = ep->probe_listened_ns;
    }
    if (probe_done(ep, 10 * interval) || ep->probe_listened_ns >= c->probe_timeout_ms * ms) {
        make_paths(ep);
        ep->state = ep->npaths > 0 ? PMETH_EP_READY : PMETH_EP_UNREACHABLE;
        pmeth_apm_endpoint_ready(ep);   /* the stripe, and path migration over it */
        PMETH_VERBOSE(ep->npaths > 0 ? 20 : 5, "%s on %s: %u path(s) after %.1f ms%s%s",
                      OPAL_NAME_PRINT(ep->name), ep->modex.host, (unsigned) ep->npaths,
                      (double) (now - ep->probe_start_ns) / ms,
                      ep->npaths > 0 ? "" : ": not reachable over pmeth",
                      ep->probed_ahead ? " (probed ahead)" : "");
        for (uint32_t p = 0; p < ep->npaths; p++) {
            PMETH_VERBOSE(20, "  path %u: %s -> %s:%s", p, c->links[ep->paths[p].local].ifname,
                          ep->modex.host, ep->modex.links[ep->paths[p].peer_link].ifname);
        }
        return true;
    }
    if (now >= ep->probe_next_ns) {
        for (uint32_t i = 0; i < c->nlinks; i++) {
            for (uint32_t j = 0; j < ep->modex.nlinks; j++) {
                if (!pmeth_pair_possible(ep, i, j)) {
                    continue;
                } else if (!ep->probe_small[i][j]) {
                    send_probe(ep, (uint8_t) i, (uint8_t) j, false, ep->probe_nonce);
                } else if (!ep->probe_full[i][j]) {
                    send_probe(ep, (uint8_t) i, (uint8_t) j, true, ep->probe_nonce);
                    send_probe(ep, (uint8_t) i, (uint8_t) j, false,
                               ep->probe_nonce ^ PROBE_NONCE_ALIVE);
                }
            }
        }
        ep->probe_next_ns = now + interval;
    }
    return false;
}

void pmeth_endpoint_heard(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    /* A peer that was away from MPI while we probed it (computing, or not yet
     * out of MPI_Init) answered nothing and was called unreachable; it sends
     * now, so a link does carry its frames.  Once only: a link that carries
     * frames one way alone would otherwise be probed again at every frame. */
    if (ep->state != PMETH_EP_UNREACHABLE || ep->reprobed) {
        return;
    }
    ep->reprobed = true;
    ep->state = PMETH_EP_NEW;       /* probed afresh at the next need (pmeth_add_peer_lazily) */
    ep->npaths = 0;
    c->peers_reprobed++;
    PMETH_VERBOSE(5, "%s on %s was not reachable when probed but sends to us now: probed again",
                  OPAL_NAME_PRINT(ep->name), ep->modex.host);
}

/* Step the peers probed in the background; drop the decided ones from the list. */
static int probe_background(uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int decided = 0;
    for (uint32_t k = c->nprobe_bg; k-- > 0;) {
        mca_btl_base_endpoint_t *ep = c->probe_bg[k];
        if (ep->state == PMETH_EP_PROBING && !probe_due(ep, now)) {
            continue;
        }
        if (ep->state != PMETH_EP_PROBING || probe_step(ep, now)) {
            c->probe_bg[k] = c->probe_bg[--c->nprobe_bg];
            decided++;
        }
    }
    return decided;
}

int pmeth_probe_progress(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (c->nprobe_bg == 0 || c->probing) {
        return 0;
    }
    return probe_background(pmeth_now_ns());
}

int pmeth_probe_in_background(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (!pmeth_endpoint_list_room(&c->probe_bg, c->nprobe_bg, &c->probe_bg_cap)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    probe_begin(ep, pmeth_now_ns());
    ep->probed_ahead = true;
    c->probe_bg[c->nprobe_bg++] = ep;
    return OPAL_SUCCESS;
}

int pmeth_endpoints_probe(mca_btl_base_endpoint_t **eps, size_t n)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint64_t now = pmeth_now_ns();
    for (size_t k = 0; k < n; k++) {
        if (eps[k]->state == PMETH_EP_NEW) {
            probe_begin(eps[k], now);
        }       /* else probed ahead already: it goes on from where it is */
    }
    bool was_probing = c->probing;
    c->probing = true;          /* probes are answered here; ob1 sees no data yet */
    for (;;) {
        now = pmeth_now_ns();
        size_t left = 0;
        for (size_t k = 0; k < n; k++) {
            if (eps[k]->state == PMETH_EP_PROBING
                && (!probe_due(eps[k], now) || !probe_step(eps[k], now))) {
                left++;
            }
        }
        (void) probe_background(now);   /* the ones asked for may be among them */
        if (left == 0) {
            break;
        }
        pmeth_kick_all(true);
        int got = 0;
        for (uint32_t i = 0; i < c->nlinks; i++) {
            got += pmeth_poll_link(&c->links[i], c->poll_budget);
        }
        pmeth_acks_flush();
        if (0 == got) {
            /* Waiting for answers, which take milliseconds, or for the timeout
             * of a peer that answers nothing (seconds): leave the CPU to the
             * processes that have work (7 hosts' ranks on 2 CPUs spent their
             * first seconds here, spinning) */
            const struct timespec nap = {.tv_sec = 0, .tv_nsec = 50000};
            nanosleep(&nap, NULL);
        }
    }
    c->probing = was_probing;
    return OPAL_SUCCESS;
}
