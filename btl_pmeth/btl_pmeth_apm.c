/*
 * Path migration under btl_pmeth (seed 004, the apm/ library): a job keeps
 * running when a link to a peer fails, and takes it back once it is repaired.
 *
 * Each peer's paths (btl_pmeth_endpoint.c found them by probing) become the
 * paths of one apm connection.  The paper's three modules map onto pmeth so:
 *   - alternate path specification: apm's policy picks a healthy path;
 *   - path loading request: apm asks (the load callback); we send a PROBE on
 *     that path and report the answer, or three unanswered ones, back;
 *   - path migration: apm moves the connection (a fault, a fail-back, or by
 *     hand with btl_pmeth_apm_migrate_ms for tests); we read its new state.
 * apm's thread hears the kernel's link changes (netlink); pmeth itself reports
 * a path dead when timer probes on its link go unanswered (silent loss, a link
 * dead in one direction) - pmeth_txwin_link_silent().
 *
 * What pmeth does with apm's state, always on its own thread: small frames go
 * on apm's current path, large ones are striped over every healthy path; the
 * frames in flight on a path that leaves the stripe are copied into frames of
 * another link and sent again at once (sequence numbers make any duplicate
 * harmless; ob1 sees nothing lost, duplicated or reordered).  Frames sent on
 * the current path carry the CURRENT flag: the peer sends its standalone acks
 * back on that path, so a link that fails one way cannot swallow the acks of
 * the path we moved to.  Paths that came back are probed (apm decides when,
 * with a hold-down that grows while a link flaps) and rejoin the stripe once
 * healthy.  With no path left, traffic waits; after btl_pmeth_apm_fail_timeout_ms
 * the job ends with a message naming each path's state.
 *
 * apm's callbacks run under its mutex on whichever thread made the transition:
 * they only set flags here, read back on the progress path (one relaxed load
 * per endpoint per send, nothing more on the fast path).
 */
#include "btl_pmeth.h"
#include "btl_pmeth_frag.h"

#include "opal/util/show_help.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000ull

/* verbose time stamps: CLOCK_MONOTONIC in ms (modulo 1000 s), the same clock in every
 * process of a host, so the lines of both ends of a path line up */
#define T_MS(now) ((double) ((now) % 1000000000000ull) / 1e6)

static void mark_dirty(mca_btl_base_endpoint_t *ep)
{
    atomic_store_explicit(&ep->apm_dirty, true, memory_order_release);
    atomic_fetch_add_explicit(&mca_btl_pmeth_component.apm_changes, 1, memory_order_release);
}

static void on_load(void *ctx, apm_conn_t *conn, unsigned path, uint32_t gen)
{
    mca_btl_base_endpoint_t *ep = apm_conn_user(conn);
    atomic_store_explicit(&ep->apm_load, (uint64_t) gen << 32 | (path + 1u), memory_order_release);
    mark_dirty(ep);
}

static void on_migrated(void *ctx, apm_conn_t *conn, unsigned from, unsigned to, apm_cause_t cause)
{
    mark_dirty(apm_conn_user(conn));
}

static void on_failed(void *ctx, apm_conn_t *conn) { mark_dirty(apm_conn_user(conn)); }
static void on_changed(void *ctx, apm_conn_t *conn) { mark_dirty(apm_conn_user(conn)); }

int pmeth_apm_init(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (c->apm_mode == 0 || (c->apm_mode == 2 && c->nlinks < 2)) {
        PMETH_VERBOSE(10, "path migration off (%s)", c->apm_mode == 0 ? "btl_pmeth_apm 0"
                                                                       : "one link");
        return OPAL_SUCCESS;
    }
    apm_config_t cfg;
    apm_config_init(&cfg);
    cfg.policy = c->apm_policy == 1 ? APM_ALT_ORDERED : APM_ALT_ROUND_ROBIN;
    cfg.heal_probes = c->apm_heal_probes ? c->apm_heal_probes : 1;
    cfg.holddown_min_ns = (c->apm_holddown_ms ? c->apm_holddown_ms : 1) * MS;
    if (cfg.holddown_max_ns < cfg.holddown_min_ns) {
        cfg.holddown_max_ns = cfg.holddown_min_ns;
    }
    cfg.fail_timeout_ns = (uint64_t) c->apm_fail_timeout_ms * MS;
    apm_ops_t ops = {.load = on_load, .migrated = on_migrated, .failed = on_failed,
                     .changed = on_changed, .ctx = NULL};
    c->apm = apm_create(&cfg, &ops);
    if (c->apm == NULL) {
        opal_show_help("help-btl-pmeth.txt", "apm-failed", true, opal_process_info.nodename,
                       "its configuration was refused (check the btl_pmeth_apm_* values)");
        return OPAL_ERROR;
    }
    apm_thread_config_t tcfg;
    apm_thread_config_init(&tcfg);
    c->apm_thread = apm_thread_start(c->apm, &tcfg);
    if (c->apm_thread == NULL) {
        /* without netlink, failures are still found by unanswered probes */
        PMETH_VERBOSE(1, "path migration: no event thread (%s): link changes are found by "
                      "unanswered frames only", strerror(errno));
    }
    c->apm_next_ns = 0;
    c->apm_next_migrate_ns = c->apm_migrate_ms ? pmeth_now_ns() + c->apm_migrate_ms * MS : 0;
    PMETH_VERBOSE(10, "path migration on: a path is dead after %u unanswered probes over %u ms, "
                  "probes every %u ms, %u to heal, give up after %u ms with no path",
                  c->apm_detect_probes, c->apm_detect_ms, c->apm_probe_ms, cfg.heal_probes,
                  c->apm_fail_timeout_ms);
    return OPAL_SUCCESS;
}

void pmeth_apm_fini(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (c->apm_thread != NULL) {
        apm_thread_stats_t ts;
        apm_thread_stats(c->apm_thread, &ts);
        PMETH_VERBOSE(10, "path migration thread: %" PRIu64 " link changes (%" PRIu64 " down, %"
                      PRIu64 " up) moved %" PRIu64 " paths; %" PRIu64 " requests; %" PRIu64
                      " netlink messages", ts.link_down + ts.link_up, ts.link_down, ts.link_up,
                      ts.paths_changed, ts.requests, ts.netlink_msgs);
        apm_thread_stop(c->apm_thread);
        c->apm_thread = NULL;
    }
    if (c->apm != NULL) {
        apm_counters_t t;
        apm_totals(c->apm, &t);
        PMETH_VERBOSE(10, "path migration: %" PRIu64 " migrations (%" PRIu64 " on a fault, %"
                      PRIu64 " fail-backs, %" PRIu64 " by hand, %" PRIu64 " recoveries), %"
                      PRIu64 " re-arms (%" PRIu64 " armed, %" PRIu64 " failed), %" PRIu64
                      " paths reported dead, %" PRIu64 " frames moved to another link (%" PRIu64
                      " waited for a free frame there); fault to traffic flowing again (%" PRIu64
                      " times): last %.1f ms, worst %.1f ms; link back up to its path back in the "
                      "stripe (%" PRIu64 " times): last %.1f ms, worst %.1f ms",
                      t.migrations, t.migrations_fault, t.failbacks, t.migrations_manual,
                      t.recoveries, t.rearms, t.armed, t.rearms_failed, c->apm_paths_dead,
                      c->apm_frames_moved, c->apm_move_waits, c->apm_recoveries,
                      c->apm_recover_last_ns / 1e6, c->apm_recover_worst_ns / 1e6, c->apm_rejoins,
                      c->apm_rejoin_last_ns / 1e6, c->apm_rejoin_worst_ns / 1e6);
    }
    /* connections go with their endpoints (pmeth_apm_endpoint_release), then
     * the rest (pmeth_apm_destroy) */
}

void pmeth_apm_endpoint_ready(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    ep->nstripe = ep->npaths;
    ep->usable = 0;
    for (uint8_t p = 0; p < ep->npaths; p++) {
        ep->stripe[p] = p;
        ep->usable |= 1u << p;
    }
    ep->reply_path = ep->primary;
    ep->load_path = -1;
    atomic_init(&ep->apm_load, 0);
    atomic_init(&ep->apm_dirty, false);
    if (c->apm == NULL || ep->npaths == 0 || ep->on_host) {
        return;         /* (the host link has no other path, and loopback does not fail) */
    }
    ep->apm_nonce = ep->probe_nonce ^ 0xa9a9a9a9a9a9a9a9ull;
    pmeth_pathprobe_init(&ep->probes, 1);
    apm_path_t paths[PMETH_MAX_LINKS];
    memset(paths, 0, sizeof(paths));
    for (uint8_t p = 0; p < ep->npaths; p++) {
        const pmeth_link_t *l = &c->links[ep->paths[p].local];
        paths[p].link = l->ifindex;
        snprintf(paths[p].name, sizeof(paths[p].name), "%s", l->ifname);
        paths[p].addr_len = 6;
        memcpy(paths[p].addr, ep->paths[p].peer_mac, 6);
    }
    /* a single path gets a connection too: a link that goes down is then
     * reported, clearly and in bounded time, rather than retransmitted for
     * ever.  One that drops everything with its carrier up is not: silence on
     * every path is also what a stopped peer (a debugger, SIGSTOP) shows, and
     * a path is blamed only when another one answers (pmeth_apm_check_silent) */
    ep->apm_conn = apm_conn_create(c->apm, paths, ep->npaths, ep->primary, ep, pmeth_now_ns());
    if (ep->apm_conn == NULL) {
        PMETH_VERBOSE(1, "path migration: no connection for %s (no memory): it runs without",
                      OPAL_NAME_PRINT(ep->name));
    }
}

void pmeth_apm_endpoint_release(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->apm_conn == NULL) {
        return;
    }
    if (c->apm_thread != NULL) {
        apm_thread_flush(c->apm_thread);        /* nothing in its rings names it any more */
    }
    apm_conn_destroy(ep->apm_conn);
    ep->apm_conn = NULL;
}

void pmeth_apm_destroy(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    apm_destroy(c->apm);
    c->apm = NULL;
    free(c->apm_watch);
    c->apm_watch = NULL;
    c->napm_watch = c->apm_watch_cap = 0;
}

static void watch(mca_btl_base_endpoint_t *ep)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->apm_watched) {
        return;
    }
    if (!pmeth_endpoint_list_room(&c->apm_watch, c->napm_watch, &c->apm_watch_cap)) {
        return;     /* watched again at its next change */
    }
    c->apm_watch[c->napm_watch++] = ep;
    ep->apm_watched = true;
}

/* A PROBE of ours on path P (small: the MTU was checked at start-up); its
 * serial.  The serial is taken even when no frame is free (then it is never
 * answered). */
static uint32_t send_path_probe(mca_btl_base_endpoint_t *ep, uint8_t p)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const pmeth_path_t *path = &ep->paths[p];
    pmeth_link_t *link = &c->links[path->local];
    void *frame;
    uint32_t cap;
    uint32_t serial = pmeth_pathprobe_next(&ep->probes);
    int id = pmeth_ring_tx_get_ctl(link->ring, &frame, &cap);
    if (id < 0) {
        return serial;  /* unanswered, then: asked again or counted as failed */
    }
    uint32_t len = PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN;
    pmeth_wire_probe_t probe = {.nonce = pmeth_path_probe_nonce(ep->apm_nonce, serial),
                                .from_link = path->local,
                                .to_link = path->peer_link, .full = false, .mtu = link->mtu,
                                .frame_len = len};
    pmeth_wire_build_probe(frame, len, path->peer_mac, link->mac, (uint16_t) c->ethertype,
                           c->job_key, ep->peer_id, c->my_id, PMETH_WIRE_PROBE, &probe);
    pmeth_link_post_once(link, id, len);
    pmeth_link_kick(link);
    c->apm_probes_sent++;
    return serial;
}

/* An answer on path P to our path probe SERIAL.  Any answer shows the path
 * carries frames now; but a load is confirmed only by an answer to one of its
 * own probes, and health only by an answer to a probe of the round now open
 * (pmeth_pathprobe.h): a late answer from before must not count. */
bool pmeth_apm_probe_reply(mca_btl_base_endpoint_t *ep, uint8_t p, uint32_t serial)
{
    uint64_t now = pmeth_now_ns();
    if (ep->apm_conn == NULL) {
        return false;
    }
    ep->probe_heard_ns[p] = now;
    if (ep->load_path == (int) p && pmeth_pathprobe_load_answer(&ep->probes, serial)) {
        ep->load_path = -1;
        (void) apm_load_confirmed(ep->apm_conn, ep->load_gen, now);
    }
    if (pmeth_pathprobe_health_answer(&ep->probes, p, serial)) {
        (void) apm_probe_ok(ep->apm_conn, p, now);
    }
    if (ep->alive_probe_ns != 0) {
        pmeth_apm_check_silent(ep, now, false); /* the answer a silent link waited for */
    }
    return true;
}

/* Tell the peer, on the primary path, that path P is dead: it may not see it
 * itself (a link that fails one way, a switch port down on our side only),
 * and would wait for its own probes to go unanswered.  Twice: a frame may be
 * lost, and a notice is not resent. */
static void send_path_down(mca_btl_base_endpoint_t *ep, uint8_t p)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const pmeth_path_t *via = &ep->paths[ep->primary];
    pmeth_link_t *link = &c->links[via->local];
    for (int copy = 0; copy < 2; copy++) {
        void *frame;
        uint32_t cap;
        int id = pmeth_ring_tx_get_ctl(link->ring, &frame, &cap);
        if (id < 0) {
            return;
        }
        pmeth_wire_build_hdr(frame, via->peer_mac, link->mac, (uint16_t) c->ethertype, c->job_key,
                             ep->peer_id, c->my_id, PMETH_WIRE_PATH_DOWN, via->local, 0, 2, 0,
                             0, 0);
        uint8_t *pl = (uint8_t *) frame + PMETH_WIRE_HDR_LEN;
        pl[0] = ep->paths[p].local;
        pl[1] = ep->paths[p].peer_link;
        pmeth_link_post_once(link, id, PMETH_WIRE_HDR_LEN + 2);
    }
    pmeth_link_kick(link);
}

void pmeth_apm_path_down_notice(mca_btl_base_endpoint_t *ep, const pmeth_wire_view_t *v)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->apm_conn == NULL || v->len < 2) {
        return;
    }
    uint8_t theirs = v->payload[0], ours = v->payload[1];
    for (uint8_t k = 0; k < ep->npaths; k++) {
        if (ep->paths[k].local == ours && ep->paths[k].peer_link == theirs
            && pmeth_path_usable(ep, k)) {
            uint64_t now = pmeth_now_ns();
            if (apm_path_dead(ep->apm_conn, k, now, now) == APM_OK) {
                c->apm_paths_dead++;
                PMETH_VERBOSE(10, "%.1f ms: %s: the peer says path %s is dead", T_MS(now),
                              OPAL_NAME_PRINT(ep->name), c->links[ours].ifname);
            }
            pmeth_apm_poll(ep, now);
        }
    }
}

/* Re-read the connection: the current path, the stripe, frames to move. */
void pmeth_apm_refresh(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    atomic_store_explicit(&ep->apm_dirty, false, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (ep->apm_conn == NULL) {
        return;
    }
    apm_conn_info_t info;
    apm_conn_info(ep->apm_conn, &info);
    uint32_t was = ep->usable, now_usable = 0;
    uint8_t n = 0;
    for (uint8_t p = 0; p < ep->npaths; p++) {
        if (info.path[p].health == APM_PATH_HEALTHY) {
            ep->stripe[n++] = p;
            now_usable |= 1u << p;
        }
    }
    if (n == 0) {
        /* nothing healthy: keep trying the current path until apm gives up */
        ep->stripe[n++] = (uint8_t) info.current;
        now_usable = 1u << info.current;
    }
    uint8_t old_primary = ep->primary;
    ep->nstripe = n;
    ep->usable = now_usable;
    /* apm's current path, unless it left the stripe and apm has not moved yet
     * (its alternate is being loaded): small frames and acks then take the
     * first healthy path, flagged CURRENT so the peer answers there.  (Until
     * 2026-12-05 they kept the dead path meanwhile, and each waited for its
     * retransmit timeout.) */
    ep->primary = (now_usable >> info.current & 1u) ? (uint8_t) info.current : ep->stripe[0];
    if (!pmeth_path_usable(ep, ep->reply_path)) {
        ep->reply_path = ep->primary;
    }
    ep->apm_failed = info.state == APM_FAILED;
    if (old_primary != ep->primary) {
        PMETH_VERBOSE(10, "%.1f ms: %s: now on %s (%s), %u path(s) in the stripe", T_MS(now),
                      OPAL_NAME_PRINT(ep->name), c->links[ep->paths[ep->primary].local].ifname,
                      apm_state_name(info.state), (unsigned) n);
    }
    /* frames in flight on paths that left the stripe go again, elsewhere */
    uint32_t gone = was & ~now_usable;
    if (gone != 0 && ep->tx != NULL && !pmeth_txwin_empty(ep->tx) && ep->recover_from_ns == 0) {
        /* recovery is timed from the fault's first evidence: a silent link's
         * first unanswered probe, or now (the kernel's event was just read) */
        uint64_t from = now;
        for (uint8_t p = 0; p < ep->npaths; p++) {
            uint64_t since;
            if ((gone >> p & 1u) && pmeth_txwin_link_silent(ep->tx, ep->paths[p].local, 1, &since)
                && since < from) {
                from = since;
            }
        }
        ep->recover_from_ns = from;
    }
    for (uint8_t p = 0; gone != 0 && p < ep->npaths; p++) {
        if ((gone >> p) & 1u) {
            if (ep->tx != NULL) {
                (void) pmeth_txwin_expire_link(ep->tx, ep->paths[p].local);
            }
            PMETH_VERBOSE(10, "%.1f ms: %s: path %s left the stripe (%s)", T_MS(now),
                          OPAL_NAME_PRINT(ep->name), c->links[ep->paths[p].local].ifname,
                          apm_health_name(info.path[p].health));
            if (pmeth_path_usable(ep, ep->primary)) {
                send_path_down(ep, p);
            }
        }
    }
    uint32_t back = now_usable & ~was;
    for (uint8_t p = 0; p < ep->npaths; p++) {
        apm_health_t h = info.path[p].health;
        if (ep->health_was[p] == APM_PATH_DOWN && h != APM_PATH_DOWN) {
            ep->repaired_ns[p] = now;           /* the link is back: probes start */
        }
        ep->health_was[p] = (uint8_t) h;
        if (!((back >> p) & 1u)) {
            continue;
        }
        PMETH_VERBOSE(10, "%.1f ms: %s: path %s (back) in the stripe", T_MS(now),
                      OPAL_NAME_PRINT(ep->name), c->links[ep->paths[p].local].ifname);
        if (ep->repaired_ns[p] != 0) {
            uint64_t took = now - ep->repaired_ns[p];
            ep->repaired_ns[p] = 0;
            c->apm_rejoins++;
            c->apm_rejoin_last_ns = took;
            c->apm_rejoin_worst_ns = took > c->apm_rejoin_worst_ns ? took : c->apm_rejoin_worst_ns;
        }
    }
    if ((gone != 0 || ep->apm_failed) && ep->tx != NULL) {
        pmeth_endpoint_activate(ep);
    }
    if (now_usable != ((1u << ep->npaths) - 1) || ep->apm_failed
        || atomic_load_explicit(&ep->apm_load, memory_order_acquire) != 0
        || ep->load_path >= 0) {
        watch(ep);
    }
}

void pmeth_apm_recovered(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint64_t took = now - ep->recover_from_ns;
    ep->recover_from_ns = 0;
    c->apm_recoveries++;
    c->apm_recover_last_ns = took;
    if (took > c->apm_recover_worst_ns) {
        c->apm_recover_worst_ns = took;
    }
    PMETH_VERBOSE(10, "%.1f ms: %s: traffic flows again %.1f ms after the fault",
                  T_MS(now), OPAL_NAME_PRINT(ep->name), took / 1e6);
}

/* How long, in probe intervals, a silent path's own probe may take to be answered
 * after another path's was: longer than any round trip, short against detection */
#define ALIVE_GRACE_PROBES 3

/* TIMER: called because a timer probe went; only then may a new round of probes go
 * out, so that a peer silent on every path (stopped) is asked no more often than the
 * retransmit timer, which backs off, asks it */
void pmeth_apm_check_silent(mca_btl_base_endpoint_t *ep, uint64_t now, bool timer)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->apm_conn == NULL || ep->tx == NULL) {
        return;
    }
    for (uint8_t p = 0; p < ep->npaths; p++) {
        uint64_t since;
        if (!pmeth_path_usable(ep, p)
            || !pmeth_txwin_link_silent(ep->tx, ep->paths[p].local, c->apm_detect_probes, &since)
            || now - since < c->apm_detect_ms * MS) {
            continue;
        }
        /* Blamed only when the peer answers on another path and not on this one:
         * a peer busy outside MPI is silent on every path, and no path is blamed
         * for it.  Acks of data on another path since this one fell silent say so
         * at once.  Without them (traffic on the others may be held up behind the
         * silent link's frames, or the peer is away from MPI, where its keeper
         * thread answers probes but acknowledges no data) every path is probed,
         * this one too: only an answer on another and none here within a few probe
         * intervals is the path's fault.  (Until 2026-12-05 only the other paths
         * were probed, and with the peer away the keeper's answers blamed each
         * healthy path in turn: migrations and flaps every few 100 ms.) */
        bool data_heard = false, probe_heard = false;
        for (uint8_t q = 0; q < ep->npaths; q++) {
            if (q == p || !pmeth_path_usable(ep, q)) {
                continue;
            }
            data_heard |= pmeth_txwin_link_heard(ep->tx, ep->paths[q].local) > since;
            probe_heard |= ep->alive_probe_ns != 0 && ep->probe_heard_ns[q] > ep->alive_probe_ns;
        }
        if (!data_heard) {
            if (ep->alive_probe_ns != 0 && ep->probe_heard_ns[p] > ep->alive_probe_ns) {
                ep->alive_probe_ns = 0;     /* this path answered too: the peer is not taking data */
                continue;
            }
            if (!probe_heard || now - ep->alive_probe_ns < ALIVE_GRACE_PROBES * c->apm_probe_ms * MS) {
                if (timer && ep->nstripe > 1 && !probe_heard
                    && now - ep->alive_probe_ns >= c->apm_probe_ms * MS) {
                    ep->alive_probe_ns = now;
                    ep->alive_recheck_ns = now + ALIVE_GRACE_PROBES * c->apm_probe_ms * MS;
                    for (uint8_t q = 0; q < ep->npaths; q++) {
                        if (pmeth_path_usable(ep, q)) {
                            send_path_probe(ep, q);
                        }
                    }
                }
                continue;
            }
        }
        ep->alive_probe_ns = 0;
        if (apm_path_dead(ep->apm_conn, p, since, now) == APM_OK) {
            c->apm_paths_dead++;
            PMETH_VERBOSE(10, "%.1f ms: %s: path %s silent for %.1f ms: reported dead", T_MS(now),
                          OPAL_NAME_PRINT(ep->name),
                          c->links[ep->paths[p].local].ifname, (now - since) / 1e6);
        }
    }
}

/* The other half of one-way failures: the peer keeps resending frames we
 * have acknowledged, so the path our standalone acks take (reply_path) is dead
 * towards the peer, though its frames reach us.  Only we can tell. */
void pmeth_apm_acks_lost(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep->dup_resends++ == 0) {
        ep->dup_since = now;
    }
    uint8_t p = ep->reply_path;
    if (ep->dup_resends < c->apm_detect_probes || now - ep->dup_since < c->apm_detect_ms * MS
        || ep->nstripe < 2 || !pmeth_path_usable(ep, p)) {
        return;
    }
    ep->dup_resends = 0;
    if (apm_path_dead(ep->apm_conn, p, ep->dup_since, now) == APM_OK) {
        c->apm_paths_dead++;
        PMETH_VERBOSE(10, "%.1f ms: %s: our acks on path %s do not arrive (the peer resends what "
                      "we have): reported dead", T_MS(now), OPAL_NAME_PRINT(ep->name),
                      c->links[ep->paths[p].local].ifname);
    }
}

/* Loads, health probes and the give-up time of one watched endpoint; false
 * once it needs nothing more. */
static bool service(mca_btl_base_endpoint_t *ep, uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint64_t interval = (c->apm_probe_ms ? c->apm_probe_ms : 1) * MS;
    uint64_t load = atomic_exchange_explicit(&ep->apm_load, 0, memory_order_acquire);
    uint32_t want = (uint32_t) load;            /* path + 1 */
    if (want != 0 && want <= ep->npaths) {
        ep->load_path = (int) (want - 1);
        ep->load_gen = (uint32_t) (load >> 32);
        ep->load_tries = 0;
        ep->load_sent_ns = 0;
        pmeth_pathprobe_load_begin(&ep->probes);
    }
    if (ep->load_path >= 0 && now - ep->load_sent_ns >= interval) {
        if (ep->load_tries >= 3) {
            uint32_t gen = ep->load_gen;
            ep->load_path = -1;
            pmeth_pathprobe_load_end(&ep->probes);
            (void) apm_load_failed(ep->apm_conn, gen, now);
        } else {
            (void) send_path_probe(ep, (uint8_t) ep->load_path);
            ep->load_tries++;
            ep->load_sent_ns = now;
        }
    }
    /* health probes: a round unanswered for 3 intervals failed */
    for (uint8_t p = 0; p < ep->npaths; p++) {
        if (pmeth_pathprobe_health_expired(&ep->probes, p, now, 3 * interval)) {
            pmeth_pathprobe_health_failed(&ep->probes, p);
            (void) apm_probe_failed(ep->apm_conn, p, now);
        }
    }
    uint32_t wanted = apm_probe_wanted(ep->apm_conn, now);
    for (uint8_t p = 0; p < ep->npaths; p++) {
        if ((wanted >> p & 1u) && now - ep->heal_sent_ns[p] >= interval) {
            pmeth_pathprobe_health_sent(&ep->probes, p, send_path_probe(ep, p), now);
            ep->heal_sent_ns[p] = now;
        }
    }
    /* Only time this process spent here, able to probe, counts toward giving up:
     * links that failed and came back while it computed outside MPI are probed
     * first (until 2026-12-05 a rank back after fail_timeout ended the job at
     * once, its paths already back and "probing") */
    uint64_t gap = ep->apm_served_ns != 0 && now > ep->apm_served_ns ? now - ep->apm_served_ns : 0;
    ep->apm_served_ns = now;
    ep->failed_attended_ns = ep->apm_failed ? ep->failed_attended_ns + (gap <= 2 * interval ? gap : 0)
                                            : 0;
    if (ep->apm_failed && ep->failed_attended_ns >= (uint64_t) c->apm_fail_timeout_ms * MS
        && apm_conn_expired(ep->apm_conn, now)) {
        char what[512];
        apm_conn_describe(ep->apm_conn, now, what, sizeof(what));
        opal_show_help("help-btl-pmeth.txt", "apm-no-path", true, opal_process_info.nodename,
                       ep->modex.host, what);
        pmeth_fatal(ep, "btl pmeth: no path left to the peer");
        ep->apm_failed = false;         /* said once */
    }
    bool all = ep->usable == ((1u << ep->npaths) - 1) && !ep->apm_failed;
    return !(all && ep->load_path < 0 && ep->probes.health_out == 0
             && atomic_load_explicit(&ep->apm_load, memory_order_relaxed) == 0);
}

int pmeth_apm_progress(uint64_t now)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int count = 0;
    uint32_t changes = atomic_load_explicit(&c->apm_changes, memory_order_acquire);
    if (changes != c->apm_changes_seen) {
        c->apm_changes_seen = changes;
        pmeth_credit_follow_links();
        for (uint32_t i = 0; i < c->nby_id; i++) {
            mca_btl_base_endpoint_t *ep = c->by_id[i];
            if (ep != NULL && ep->apm_conn != NULL) {
                pmeth_apm_poll(ep, now);
            }
        }
        count++;
    }
    if (c->apm_next_migrate_ns != 0 && now >= c->apm_next_migrate_ns) {
        /* by hand, for tests and load balancing: every armed connection moves */
        c->apm_next_migrate_ns = now + c->apm_migrate_ms * MS;
        for (uint32_t i = 0; i < c->nby_id; i++) {
            mca_btl_base_endpoint_t *ep = c->by_id[i];
            if (ep != NULL && ep->apm_conn != NULL) {
                (void) apm_migrate(ep->apm_conn, now);
            }
        }
    }
    if (c->napm_watch == 0 || now < c->apm_next_ns) {
        return count;
    }
    c->apm_next_ns = now + MS / 2;
    for (uint32_t i = c->napm_watch; i-- > 0;) {
        mca_btl_base_endpoint_t *ep = c->apm_watch[i];
        pmeth_apm_poll(ep, now);
        if (!service(ep, now)) {
            ep->apm_watched = false;
            c->apm_watch[i] = c->apm_watch[--c->napm_watch];
        }
        count++;
    }
    return count;
}
