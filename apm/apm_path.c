/* apm's paths, connections and their state machine (apm.h). */
#include "apm.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS ((uint64_t) 1000000)
#define SEC ((uint64_t) 1000000000)

typedef struct path_state {
    apm_health_t health;
    unsigned probes_ok;
    bool ever_failed;
    uint64_t backoff;           /* hold-down of the next return */
    uint64_t holddown_until;
    uint64_t healthy_since;
} path_state_t;

struct apm_conn {
    /* Read by the transport on every send; written here only on a transition.
     * Alone on its line, so the counters below do not pull it out of the
     * sender's cache each time the thread bumps one. */
    _Alignas(64) apm_route_word_t route;
    _Alignas(64) apm_t *apm;
    size_t slot;                /* index in apm->conns */
    void *user;
    unsigned npaths, home, current;
    int alt;                    /* -1: none */
    unsigned cursor;            /* the last alternate chosen (round robin) */
    apm_state_t state;
    uint32_t gen;
    bool loading, fault_pending, home_lost;
    uint64_t fault_ns, failed_since;
    apm_counters_t n;
    apm_path_t path[APM_PATHS_MAX];
    path_state_t ps[APM_PATHS_MAX];
};

struct apm {
    pthread_mutex_t lock;
    apm_config_t cfg;
    apm_ops_t ops;
    apm_conn_t **conns;
    size_t nconns, cap;
    apm_counters_t gone;        /* counters of destroyed connections */
    /* links apm_link_event last said were down: a connection made later
     * starts with its paths on them down (the event came before it) */
    int *down_links;
    size_t ndown, down_cap;
};

void apm_config_init(apm_config_t *cfg)
{
    cfg->policy = APM_ALT_ROUND_ROBIN;
    cfg->auto_rearm = true;
    cfg->failback = true;
    cfg->heal_probes = 3;
    cfg->holddown_min_ns = 50 * MS;
    cfg->holddown_max_ns = 10 * SEC;
    cfg->stable_ns = 10 * SEC;
    cfg->fail_timeout_ns = 10 * SEC;
}

apm_t *apm_create(const apm_config_t *cfg, const apm_ops_t *ops)
{
    if (cfg->heal_probes == 0 || cfg->holddown_min_ns == 0
        || cfg->holddown_min_ns > cfg->holddown_max_ns
        || (cfg->policy != APM_ALT_ROUND_ROBIN && cfg->policy != APM_ALT_ORDERED)) {
        return NULL;
    }
    apm_t *apm = calloc(1, sizeof(*apm));
    if (apm == NULL) {
        return NULL;
    }
    if (pthread_mutex_init(&apm->lock, NULL) != 0) {
        free(apm);
        return NULL;
    }
    apm->cfg = *cfg;
    if (ops != NULL) {
        apm->ops = *ops;
    }
    return apm;
}

static void add_counters(apm_counters_t *sum, const apm_counters_t *c)
{
    /* every field but the restore times adds up */
    apm_counters_t was = *sum;
    const uint64_t *from = (const uint64_t *) c;
    uint64_t *to = (uint64_t *) sum;
    for (size_t i = 0; i < sizeof(*c) / sizeof(uint64_t); i++) {
        to[i] += from[i];
    }
    bool newer = c->restores > 0 && (was.restores == 0 || c->restore_at_ns >= was.restore_at_ns);
    sum->restore_last_ns = newer ? c->restore_last_ns : was.restore_last_ns;
    sum->restore_at_ns = newer ? c->restore_at_ns : was.restore_at_ns;
    sum->restore_worst_ns = c->restore_worst_ns > was.restore_worst_ns ? c->restore_worst_ns
                                                                        : was.restore_worst_ns;
}

static void conn_unlink(apm_conn_t *c)
{
    apm_t *apm = c->apm;
    add_counters(&apm->gone, &c->n);
    apm->conns[c->slot] = apm->conns[--apm->nconns];
    apm->conns[c->slot]->slot = c->slot;
}

void apm_destroy(apm_t *apm)
{
    if (apm == NULL) {
        return;
    }
    for (size_t i = 0; i < apm->nconns; i++) {
        free(apm->conns[i]);
    }
    free(apm->conns);
    free(apm->down_links);
    pthread_mutex_destroy(&apm->lock);
    free(apm);
}

/* ---- helpers, all with the mutex held ----------------------------------------------- */

static const apm_config_t *cfg_of(const apm_conn_t *c) { return &c->apm->cfg; }

static bool healthy(const apm_conn_t *c, unsigned p) { return c->ps[p].health == APM_PATH_HEALTHY; }

static apm_result_t ignored(apm_conn_t *c, apm_result_t why)
{
    switch (why) {
    case APM_DUPLICATE: c->n.ignored_duplicate++; break;
    case APM_LATE: c->n.ignored_late++; break;
    case APM_ILLEGAL: c->n.ignored_illegal++; break;
    case APM_HELD: c->n.ignored_held++; break;
    case APM_NO_PATH: c->n.no_path++; break;
    case APM_OK: break;
    }
    return why;
}

/* The route word follows the state; the epoch moves only when it changes. */
static void publish(apm_conn_t *c)
{
    uint64_t old = atomic_load_explicit(&c->route, memory_order_relaxed);
    uint64_t low = c->current;
    if (c->state == APM_FAILED) {
        low |= APM_ROUTE_FAILED;
    } else if (c->fault_pending) {
        low |= APM_ROUTE_PENDING;
    }
    uint64_t mask = (1ull << APM_ROUTE_EPOCH_SHIFT) - 1;
    if ((old & mask) == low) {
        return;
    }
    uint64_t next = ((apm_route_epoch(old) + 1) << APM_ROUTE_EPOCH_SHIFT) | low;
    atomic_store_explicit(&c->route, next, memory_order_release);
}

static bool failback_wanted(const apm_conn_t *c)
{
    return cfg_of(c)->failback && c->home_lost && c->current != c->home && healthy(c, c->home);
}

/* The alternate path specification policy: -1 when no healthy path but the
 * current one. */
static int pick(const apm_conn_t *c)
{
    if (failback_wanted(c)) {
        return (int) c->home;
    }
    for (unsigned k = 0; k < c->npaths; k++) {
        unsigned p = cfg_of(c)->policy == APM_ALT_ROUND_ROBIN ? (c->cursor + 1 + k) % c->npaths : k;
        if (p != c->current && healthy(c, p)) {
            return (int) p;
        }
    }
    return -1;
}

static void restored(apm_conn_t *c, uint64_t now)
{
    uint64_t t = now > c->fault_ns ? now - c->fault_ns : 0;
    c->n.restores++;
    c->n.restore_last_ns = t;
    c->n.restore_at_ns = now;
    if (t > c->n.restore_worst_ns) {
        c->n.restore_worst_ns = t;
    }
    c->fault_pending = false;
}

/* PATH becomes the alternate, not yet loading.  What it replaces is counted
 * by the caller's state: a load in progress is superseded, an armed one
 * disarmed. */
static void set_alt(apm_conn_t *c, unsigned p)
{
    if (c->state == APM_REARM) {
        c->n.rearms_superseded++;
    } else if (c->state == APM_ARMED) {
        c->n.disarmed++;
    }
    c->alt = (int) p;
    c->cursor = p;
    if (++c->gen == 0) {
        c->gen = 1;                             /* 0 is never handed out */
    }
    c->loading = false;
    c->state = APM_REARM;
    c->n.rearms++;
}

static void request_load(apm_conn_t *c)
{
    c->loading = true;
    if (c->apm->ops.load != NULL) {
        c->apm->ops.load(c->apm->ops.ctx, c, (unsigned) c->alt, c->gen);
    }
}

static void enter_failed(apm_conn_t *c, uint64_t now)
{
    c->state = APM_FAILED;
    c->alt = -1;
    c->loading = false;
    c->failed_since = now;
    c->n.failures++;
    publish(c);
    if (c->apm->ops.failed != NULL) {
        c->apm->ops.failed(c->apm->ops.ctx, c);
    }
}

/* From MIGRATED: choose and load an alternate.  With a fault waiting and no
 * choice left, the connection has failed. */
static void rearm_now(apm_conn_t *c, uint64_t now)
{
    int p = pick(c);
    if (p < 0) {
        c->n.no_path++;
        if (c->fault_pending) {
            enter_failed(c, now);
        }
        return;
    }
    set_alt(c, (unsigned) p);
    request_load(c);
}

static void migrate_to(apm_conn_t *c, unsigned to, apm_cause_t cause, uint64_t now)
{
    unsigned from = c->current;
    c->current = to;
    c->alt = -1;
    c->loading = false;
    c->state = APM_MIGRATED;
    c->n.migrations++;
    switch (cause) {
    case APM_CAUSE_MANUAL: c->n.migrations_manual++; break;
    case APM_CAUSE_FAULT: c->n.migrations_fault++; break;
    case APM_CAUSE_FAILBACK: c->n.failbacks++; break;
    case APM_CAUSE_RECOVER: c->n.recoveries++; break;
    }
    if (c->fault_pending) {
        restored(c, now);
    }
    /* only a fault makes home worth returning to; a move the user made stands */
    if (to == c->home || cause == APM_CAUSE_MANUAL) {
        c->home_lost = false;
    } else if (from == c->home) {
        c->home_lost = true;
    }
    publish(c);
    if (c->apm->ops.migrated != NULL) {
        c->apm->ops.migrated(c->apm->ops.ctx, c, from, to, cause);
    }
    if (cfg_of(c)->auto_rearm || failback_wanted(c)) {
        rearm_now(c, now);
    }
}

/* The alternate failed or its load did: back to MIGRATED, and a new one when
 * re-arming or when a fault is waiting for it. */
static void lose_alt(apm_conn_t *c, uint64_t now)
{
    if (c->state == APM_REARM) {
        c->n.rearms_failed++;
    } else {
        c->n.disarmed++;
    }
    c->alt = -1;
    c->loading = false;
    c->state = APM_MIGRATED;
    if (c->fault_pending || cfg_of(c)->auto_rearm || failback_wanted(c)) {
        rearm_now(c, now);
    }
    publish(c);
}

/* A fault: the path leaves HEALTHY or PROBING.  Faults that come soon after
 * a heal (or before it) double the hold-down of the next return. */
static void note_fault(apm_conn_t *c, unsigned p, apm_health_t was, uint64_t now)
{
    path_state_t *s = &c->ps[p];
    const apm_config_t *cfg = cfg_of(c);
    bool flap = s->ever_failed && (was != APM_PATH_HEALTHY || now - s->healthy_since < cfg->stable_ns);
    if (flap) {
        s->backoff = s->backoff >= cfg->holddown_max_ns / 2 ? cfg->holddown_max_ns : s->backoff * 2;
        c->n.flaps++;
    } else {
        s->backoff = cfg->holddown_min_ns;
    }
    s->ever_failed = true;
    s->probes_ok = 0;
    c->n.faults++;
}

/* React to path P having just stopped being healthy. */
static void lost_path(apm_conn_t *c, unsigned p, uint64_t now)
{
    if (c->state == APM_FAILED) {
        return;
    }
    if (p == c->current) {
        if (!c->fault_pending) {
            c->fault_pending = true;
            c->fault_ns = now;
        }
        switch (c->state) {
        case APM_ARMED:
            migrate_to(c, (unsigned) c->alt, APM_CAUSE_FAULT, now);
            return;
        case APM_REARM:
            if (!c->loading) {
                request_load(c);
            }
            break;
        case APM_MIGRATED:
            rearm_now(c, now);
            break;
        case APM_FAILED:
            break;
        }
        publish(c);
    } else if (c->alt == (int) p) {
        lose_alt(c, now);
    }
}

/* Path P has passed its probes. */
static void healed(apm_conn_t *c, unsigned p, uint64_t now)
{
    path_state_t *s = &c->ps[p];
    s->health = APM_PATH_HEALTHY;
    s->healthy_since = now;
    s->probes_ok = 0;
    c->n.heals++;
    if (c->state == APM_FAILED) {
        migrate_to(c, p, APM_CAUSE_RECOVER, now);
        return;
    }
    if (p == c->current) {
        /* repaired in place before any alternate could take over */
        if (c->fault_pending) {
            restored(c, now);
            publish(c);
        }
        return;
    }
    if (p == c->home && failback_wanted(c) && !c->fault_pending && c->alt != (int) p) {
        set_alt(c, p);
        request_load(c);
        return;
    }
    if (c->state == APM_MIGRATED && cfg_of(c)->auto_rearm) {
        rearm_now(c, now);
    }
}

/* ---- links known down (apm_link_event), for connections made later ----------------- */

static bool link_down(const apm_t *apm, int link)
{
    for (size_t i = 0; i < apm->ndown; i++) {
        if (apm->down_links[i] == link) {
            return true;
        }
    }
    return false;
}

/* With no memory for the table a later connection starts with the link
 * healthy, as before there was one: silence finds it out. */
static void note_link(apm_t *apm, int link, bool up)
{
    for (size_t i = 0; i < apm->ndown; i++) {
        if (apm->down_links[i] == link) {
            if (up) {
                apm->down_links[i] = apm->down_links[--apm->ndown];
            }
            return;
        }
    }
    if (up) {
        return;
    }
    if (apm->ndown == apm->down_cap) {
        size_t cap = apm->down_cap ? apm->down_cap * 2 : 8;
        int *grown = realloc(apm->down_links, cap * sizeof(*grown));
        if (grown == NULL) {
            return;
        }
        apm->down_links = grown;
        apm->down_cap = cap;
    }
    apm->down_links[apm->ndown++] = link;
}

/* ---- connections -------------------------------------------------------------------- */

static apm_result_t path_down(apm_conn_t *c, unsigned p, uint64_t now);
static void tell_changed(apm_conn_t *c);

apm_conn_t *apm_conn_create(apm_t *apm, const apm_path_t *paths, unsigned npaths, unsigned home,
                            void *user, uint64_t now)
{
    if (npaths == 0 || npaths > APM_PATHS_MAX || home >= npaths) {
        return NULL;
    }
    apm_conn_t *c = aligned_alloc(64, (sizeof(*c) + 63) & ~(size_t) 63);
    if (c == NULL) {
        return NULL;
    }
    memset(c, 0, sizeof(*c));
    c->apm = apm;
    c->user = user;
    c->npaths = npaths;
    c->home = c->current = home;
    c->cursor = home;
    c->alt = -1;
    c->state = APM_MIGRATED;
    memcpy(c->path, paths, npaths * sizeof(*paths));
    for (unsigned p = 0; p < npaths; p++) {
        c->path[p].name[APM_NAME_MAX - 1] = '\0';
        if (c->path[p].addr_len > APM_ADDR_MAX) {
            c->path[p].addr_len = APM_ADDR_MAX;
        }
        c->ps[p].health = APM_PATH_HEALTHY;
        c->ps[p].backoff = apm->cfg.holddown_min_ns;
        c->ps[p].healthy_since = now;
    }
    atomic_init(&c->route, (uint64_t) home);

    pthread_mutex_lock(&apm->lock);
    if (apm->nconns == apm->cap) {
        size_t cap = apm->cap ? apm->cap * 2 : 16;
        apm_conn_t **grown = realloc(apm->conns, cap * sizeof(*grown));
        if (grown == NULL) {
            pthread_mutex_unlock(&apm->lock);
            free(c);
            return NULL;
        }
        apm->conns = grown;
        apm->cap = cap;
    }
    c->slot = apm->nconns;
    apm->conns[apm->nconns++] = c;
    if (apm->cfg.auto_rearm) {
        rearm_now(c, now);
    }
    /* a link already down: its paths go down as if the event came now (the
     * home path's loss moves the connection once an alternate is loaded) */
    unsigned down = 0;
    for (unsigned p = 0; p < npaths; p++) {
        if (link_down(apm, c->path[p].link)) {
            down += path_down(c, p, now) == APM_OK;
        }
    }
    if (down > 0) {
        tell_changed(c);
    }
    pthread_mutex_unlock(&apm->lock);
    return c;
}

void apm_conn_destroy(apm_conn_t *c)
{
    if (c == NULL) {
        return;
    }
    apm_t *apm = c->apm;
    pthread_mutex_lock(&apm->lock);
    conn_unlink(c);
    pthread_mutex_unlock(&apm->lock);
    free(c);
}

void *apm_conn_user(const apm_conn_t *c) { return c->user; }

size_t apm_conn_bytes(void) { return (sizeof(apm_conn_t) + 63) & ~(size_t) 63; }

const apm_path_t *apm_conn_path(const apm_conn_t *c, unsigned p)
{
    return p < c->npaths ? &c->path[p] : NULL;
}

const apm_route_word_t *apm_conn_route(const apm_conn_t *c) { return &c->route; }

const apm_config_t *apm_config(const apm_t *apm) { return &apm->cfg; }

/* ---- the transitions (mutex held) --------------------------------------------------- */

static apm_result_t alt_choose(apm_conn_t *c, uint64_t now)
{
    if (c->state == APM_REARM || c->state == APM_ARMED) {
        return ignored(c, APM_ILLEGAL);
    }
    int p = c->state == APM_FAILED ? -1 : pick(c);
    if (p < 0) {
        return ignored(c, APM_NO_PATH);
    }
    set_alt(c, (unsigned) p);
    return APM_OK;
}

static apm_result_t alt_set(apm_conn_t *c, unsigned p, uint64_t now)
{
    if (p >= c->npaths || p == c->current || !healthy(c, p) || c->state == APM_FAILED) {
        return ignored(c, APM_ILLEGAL);
    }
    if (c->alt == (int) p) {
        return ignored(c, APM_DUPLICATE);
    }
    set_alt(c, p);
    if (c->fault_pending) {
        request_load(c);                        /* a fault is waiting: no time to lose */
    }
    return APM_OK;
}

static apm_result_t load_request(apm_conn_t *c, uint64_t now)
{
    if (c->state != APM_REARM) {
        return ignored(c, APM_ILLEGAL);
    }
    if (c->loading) {
        return ignored(c, APM_DUPLICATE);
    }
    request_load(c);
    return APM_OK;
}

/* Where a load report about GEN stands: APM_OK when it is about the
 * alternate being loaded now. */
static apm_result_t load_report_status(const apm_conn_t *c, uint32_t gen)
{
    if (gen == 0 || (int32_t) (gen - c->gen) > 0) {
        return APM_ILLEGAL;                     /* never handed out (they start at 1) */
    }
    if (gen != c->gen) {
        return APM_LATE;
    }
    if (c->state == APM_REARM) {
        return c->loading ? APM_OK : APM_ILLEGAL;
    }
    if (c->state == APM_ARMED) {
        return APM_DUPLICATE;
    }
    return APM_LATE;                            /* consumed by a migration, or lost */
}

static apm_result_t load_confirmed(apm_conn_t *c, uint32_t gen, uint64_t now)
{
    apm_result_t st = load_report_status(c, gen);
    if (st != APM_OK) {
        return ignored(c, st);
    }
    c->state = APM_ARMED;
    c->loading = false;
    c->n.armed++;
    if (c->fault_pending) {
        migrate_to(c, (unsigned) c->alt, APM_CAUSE_FAULT, now);
    } else if (c->alt == (int) c->home && failback_wanted(c)) {
        migrate_to(c, c->home, APM_CAUSE_FAILBACK, now);
    }
    return APM_OK;
}

static apm_result_t load_failed(apm_conn_t *c, uint32_t gen, uint64_t now)
{
    apm_result_t st = load_report_status(c, gen);
    if (st == APM_DUPLICATE) {
        st = APM_LATE;                          /* it answered before: this one is old news */
    }
    if (st != APM_OK) {
        return ignored(c, st);
    }
    /* the peer does not answer there: the path proves itself before reuse */
    unsigned p = (unsigned) c->alt;
    path_state_t *s = &c->ps[p];
    note_fault(c, p, s->health, now);
    s->health = APM_PATH_PROBING;
    s->holddown_until = now + s->backoff;
    lose_alt(c, now);
    return APM_OK;
}

static apm_result_t rearm(apm_conn_t *c, uint64_t now)
{
    if (c->state == APM_MIGRATED) {
        apm_result_t r = alt_choose(c, now);
        if (r != APM_OK) {
            return r;
        }
        request_load(c);
        return APM_OK;
    }
    if (c->state == APM_REARM) {
        return load_request(c, now);
    }
    if (c->state == APM_ARMED) {
        return ignored(c, APM_DUPLICATE);
    }
    return ignored(c, APM_NO_PATH);
}

static apm_result_t migrate(apm_conn_t *c, uint64_t now)
{
    if (c->state != APM_ARMED) {
        return ignored(c, APM_ILLEGAL);
    }
    migrate_to(c, (unsigned) c->alt, APM_CAUSE_MANUAL, now);
    return APM_OK;
}

static apm_result_t path_down(apm_conn_t *c, unsigned p, uint64_t now)
{
    if (p >= c->npaths) {
        return ignored(c, APM_ILLEGAL);
    }
    path_state_t *s = &c->ps[p];
    if (s->health == APM_PATH_DOWN) {
        return ignored(c, APM_DUPLICATE);
    }
    apm_health_t was = s->health;
    note_fault(c, p, was, now);
    s->health = APM_PATH_DOWN;
    if (was == APM_PATH_HEALTHY) {
        lost_path(c, p, now);
    }
    return APM_OK;
}

static apm_result_t path_up(apm_conn_t *c, unsigned p, uint64_t now)
{
    if (p >= c->npaths) {
        return ignored(c, APM_ILLEGAL);
    }
    path_state_t *s = &c->ps[p];
    if (s->health != APM_PATH_DOWN) {
        return ignored(c, APM_DUPLICATE);
    }
    s->health = APM_PATH_PROBING;
    s->probes_ok = 0;
    s->holddown_until = now + s->backoff;
    return APM_OK;
}

static apm_result_t path_dead(apm_conn_t *c, unsigned p, uint64_t since, uint64_t now)
{
    if (p >= c->npaths) {
        return ignored(c, APM_ILLEGAL);
    }
    path_state_t *s = &c->ps[p];
    if (s->health != APM_PATH_HEALTHY) {
        return ignored(c, APM_DUPLICATE);       /* already out of use */
    }
    if (since < s->healthy_since) {
        return ignored(c, APM_LATE);            /* about traffic from before it healed */
    }
    note_fault(c, p, APM_PATH_HEALTHY, now);
    s->health = APM_PATH_PROBING;
    s->holddown_until = now + s->backoff;
    lost_path(c, p, now);
    return APM_OK;
}

static apm_result_t probe_ok(apm_conn_t *c, unsigned p, uint64_t now)
{
    if (p >= c->npaths) {
        return ignored(c, APM_ILLEGAL);
    }
    path_state_t *s = &c->ps[p];
    switch (s->health) {
    case APM_PATH_HEALTHY: return ignored(c, APM_DUPLICATE);
    case APM_PATH_DOWN: return ignored(c, APM_LATE);      /* sent before the link went */
    case APM_PATH_PROBING: break;
    }
    /* the hold-down keeps a flapping path out while another serves; with no
     * path left (FAILED) waiting it out only prolongs the outage */
    if (now < s->holddown_until && c->state != APM_FAILED) {
        return ignored(c, APM_HELD);
    }
    if (++s->probes_ok >= cfg_of(c)->heal_probes) {
        healed(c, p, now);
    }
    return APM_OK;
}

static apm_result_t probe_failed(apm_conn_t *c, unsigned p, uint64_t now)
{
    if (p >= c->npaths) {
        return ignored(c, APM_ILLEGAL);
    }
    path_state_t *s = &c->ps[p];
    switch (s->health) {
    case APM_PATH_HEALTHY: return ignored(c, APM_ILLEGAL);   /* a path in use: apm_path_dead */
    case APM_PATH_DOWN: return ignored(c, APM_DUPLICATE);
    case APM_PATH_PROBING: break;
    }
    s->probes_ok = 0;
    return APM_OK;
}

/* ---- the locked entry points -------------------------------------------------------- */

static void tell_changed(apm_conn_t *c)
{
    if (c->apm->ops.changed != NULL) {
        c->apm->ops.changed(c->apm->ops.ctx, c);
    }
}

#define LOCKED(c, call)                                                                    \
    do {                                                                                   \
        pthread_mutex_lock(&(c)->apm->lock);                                               \
        apm_result_t r_ = (call);                                                          \
        if (r_ == APM_OK) {                                                                \
            tell_changed(c);                                                               \
        }                                                                                  \
        pthread_mutex_unlock(&(c)->apm->lock);                                             \
        return r_;                                                                         \
    } while (0)

apm_result_t apm_alt_choose(apm_conn_t *c, uint64_t now) { LOCKED(c, alt_choose(c, now)); }
apm_result_t apm_alt_set(apm_conn_t *c, unsigned p, uint64_t now) { LOCKED(c, alt_set(c, p, now)); }
apm_result_t apm_load_request(apm_conn_t *c, uint64_t now) { LOCKED(c, load_request(c, now)); }
apm_result_t apm_load_confirmed(apm_conn_t *c, uint32_t gen, uint64_t now)
{
    LOCKED(c, load_confirmed(c, gen, now));
}
apm_result_t apm_load_failed(apm_conn_t *c, uint32_t gen, uint64_t now) { LOCKED(c, load_failed(c, gen, now)); }
apm_result_t apm_rearm(apm_conn_t *c, uint64_t now) { LOCKED(c, rearm(c, now)); }
apm_result_t apm_migrate(apm_conn_t *c, uint64_t now) { LOCKED(c, migrate(c, now)); }
apm_result_t apm_path_down(apm_conn_t *c, unsigned p, uint64_t now) { LOCKED(c, path_down(c, p, now)); }
apm_result_t apm_path_up(apm_conn_t *c, unsigned p, uint64_t now) { LOCKED(c, path_up(c, p, now)); }
apm_result_t apm_path_dead(apm_conn_t *c, unsigned p, uint64_t since, uint64_t now)
{
    LOCKED(c, path_dead(c, p, since, now));
}
apm_result_t apm_probe_ok(apm_conn_t *c, unsigned p, uint64_t now) { LOCKED(c, probe_ok(c, p, now)); }
apm_result_t apm_probe_failed(apm_conn_t *c, unsigned p, uint64_t now) { LOCKED(c, probe_failed(c, p, now)); }

unsigned apm_link_event(apm_t *apm, int link, bool up, uint64_t now)
{
    unsigned changed = 0;
    pthread_mutex_lock(&apm->lock);
    note_link(apm, link, up);
    for (size_t i = 0; i < apm->nconns; i++) {
        apm_conn_t *c = apm->conns[i];
        unsigned moved = 0;
        for (unsigned p = 0; p < c->npaths; p++) {
            if (c->path[p].link == link) {
                moved += (up ? path_up(c, p, now) : path_down(c, p, now)) == APM_OK;
            }
        }
        if (moved > 0) {
            tell_changed(c);
        }
        changed += moved;
    }
    pthread_mutex_unlock(&apm->lock);
    return changed;
}

uint32_t apm_probe_wanted(apm_conn_t *c, uint64_t now)
{
    uint32_t mask = 0;
    pthread_mutex_lock(&c->apm->lock);
    for (unsigned p = 0; p < c->npaths; p++) {
        if (c->ps[p].health == APM_PATH_PROBING
            && (now >= c->ps[p].holddown_until || c->state == APM_FAILED)) {
            mask |= 1u << p;
        }
    }
    pthread_mutex_unlock(&c->apm->lock);
    return mask;
}

bool apm_conn_expired(apm_conn_t *c, uint64_t now)
{
    pthread_mutex_lock(&c->apm->lock);
    bool expired = c->state == APM_FAILED && now >= c->failed_since
                   && now - c->failed_since >= cfg_of(c)->fail_timeout_ns;
    pthread_mutex_unlock(&c->apm->lock);
    return expired;
}

size_t apm_conn_describe(apm_conn_t *c, uint64_t now, char *buf, size_t len)
{
    size_t used = 0;
#define PUT(...)                                                                           \
    do {                                                                                   \
        int k_ = snprintf(buf + used, used < len ? len - used : 0, __VA_ARGS__);           \
        used += k_ > 0 ? (size_t) k_ : 0;                                                  \
    } while (0)
    if (len > 0) {
        buf[0] = '\0';
    }
    pthread_mutex_lock(&c->apm->lock);
    if (c->state == APM_FAILED) {
        uint64_t for_ns = now - c->failed_since;
        PUT("no path to the peer for %" PRIu64 ".%03" PRIu64 " s (limit %" PRIu64 ".%03" PRIu64 " s):",
            for_ns / SEC, for_ns % SEC / MS, cfg_of(c)->fail_timeout_ns / SEC,
            cfg_of(c)->fail_timeout_ns % SEC / MS);
    } else {
        PUT("%s on %s:", apm_state_name(c->state), c->path[c->current].name);
    }
    for (unsigned p = 0; p < c->npaths; p++) {
        PUT(" %s %s%s", c->path[p].name[0] ? c->path[p].name : "?", apm_health_name(c->ps[p].health),
            p + 1 < c->npaths ? "," : "");
    }
    pthread_mutex_unlock(&c->apm->lock);
#undef PUT
    return used < len ? used : (len > 0 ? len - 1 : 0);
}

void apm_conn_info(apm_conn_t *c, apm_conn_info_t *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&c->apm->lock);
    out->state = c->state;
    out->npaths = c->npaths;
    out->home = c->home;
    out->current = c->current;
    out->alternate = c->alt;
    out->gen = c->gen;
    out->loading = c->loading;
    out->fault_pending = c->fault_pending;
    out->home_lost = c->home_lost;
    out->fault_ns = c->fault_ns;
    out->failed_since_ns = c->failed_since;
    out->route = atomic_load_explicit(&c->route, memory_order_relaxed);
    for (unsigned p = 0; p < c->npaths; p++) {
        out->path[p].health = c->ps[p].health;
        out->path[p].probes_ok = c->ps[p].probes_ok;
        out->path[p].holddown_until_ns = c->ps[p].holddown_until;
        out->path[p].backoff_ns = c->ps[p].backoff;
        out->path[p].healthy_since_ns = c->ps[p].healthy_since;
    }
    out->counters = c->n;
    pthread_mutex_unlock(&c->apm->lock);
}

void apm_totals(apm_t *apm, apm_counters_t *out)
{
    pthread_mutex_lock(&apm->lock);
    *out = apm->gone;
    for (size_t i = 0; i < apm->nconns; i++) {
        add_counters(out, &apm->conns[i]->n);
    }
    pthread_mutex_unlock(&apm->lock);
}

const char *apm_state_name(apm_state_t s)
{
    static const char *const names[] = {"MIGRATED", "REARM", "ARMED", "FAILED"};
    return (unsigned) s < 4 ? names[s] : "?";
}

const char *apm_health_name(apm_health_t h)
{
    static const char *const names[] = {"healthy", "probing", "down"};
    return (unsigned) h < 3 ? names[h] : "?";
}

const char *apm_result_name(apm_result_t r)
{
    static const char *const names[] = {"ok", "duplicate", "late", "illegal", "no path", "held"};
    return (unsigned) r < 6 ? names[r] : "?";
}

const char *apm_cause_name(apm_cause_t c)
{
    static const char *const names[] = {"manual", "fault", "fail-back", "recover"};
    return (unsigned) c < 4 ? names[c] : "?";
}
