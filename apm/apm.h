/*
 * apm: path migration for connections that must outlive a failed link --
 * InfiniBand's Automatic Path Migration (seed 004) as a plain-C library.  No
 * MPI, no device: a transport describes each connection's paths, reports what
 * happens to them, and reads which path to send on.  Time is passed in
 * (nanoseconds, any monotonic origin), so every transition is tested on its
 * own (test/unit/t_apm).
 *
 * A path is one way to reach a peer: a local link (ifindex or port) and the
 * peer's address on it (opaque bytes: a MAC, a GID and QP number, ...).  A
 * connection has up to APM_PATHS_MAX of them, fixed when it is created.  The
 * path in use is the *current* path (the paper's "primary"); the *home* path
 * is the one the connection prefers and fails back to once it is repaired.
 *
 * The state machine is the paper's, per connection:
 *
 *   MIGRATED  running on the current path, no alternate
 *   REARM     an alternate is chosen (alternate path specification) and is
 *             being loaded (path loading request): the transport checks the
 *             peer answers there and reports load_confirmed / load_failed
 *   ARMED     the alternate is confirmed; a migration (manual, or automatic
 *             on a fault of the current path) makes it current -> MIGRATED
 *   FAILED    no healthy path is left; the transport gives up with a clear
 *             error once apm_conn_expired() (fail_timeout after entering)
 *             unless a path heals first (-> MIGRATED on it)
 *
 * Every alternate chosen gets a new generation number; load confirmations and
 * failures carry it, so one about an alternate that has since been replaced
 * is recognised as late and ignored.  A fault report carries the time of its
 * evidence, so one about traffic sent before the path last healed is late too.
 * Events not legal in the state, duplicated or late are ignored and counted;
 * none crashes or changes anything else.  apm_result_t says which.
 *
 * Path health: HEALTHY, DOWN (the link is down: the paper's port error) or
 * PROBING (the link is up but unproven: it came back, or frames on it went
 * unanswered).  A probing path becomes healthy after heal_probes successful
 * probes, counted only after a hold-down that doubles each time the path
 * fails again within stable_ns of healing (a flapping link is kept out
 * longer), from holddown_min up to holddown_max.
 *
 * Re-arming: after every migration, and whenever a path heals while no
 * alternate is armed, the policy picks a new alternate and requests its
 * loading (auto_rearm).  When a fault took the connection off its home path
 * and home heals, home replaces the alternate and the connection fails back
 * once it is armed (failback).  A fault of the current path while no
 * alternate is armed picks and loads one at once (whatever auto_rearm says)
 * and migrates as soon as it is confirmed.
 *
 * Threads.  Every function below except the route accessors takes the
 * library's mutex (one per apm_t) itself: call them from any thread, but not
 * from the callbacks in apm_ops_t, which run with that mutex held.  The
 * transport's fast path takes no lock: see "The route" below.
 */
#ifndef APM_H
#define APM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APM_PATHS_MAX 16        /* paths per connection (the probe mask is 32 bits) */
#define APM_ADDR_MAX 32         /* bytes of a peer's address on a path */
#define APM_NAME_MAX 16         /* a link's name, as IFNAMSIZ */

typedef struct apm apm_t;
typedef struct apm_conn apm_conn_t;

typedef struct apm_path {
    int link;                   /* local link: an ifindex (netlink events name links by it) */
    char name[APM_NAME_MAX];    /* the link's name, for messages */
    uint8_t addr_len;
    uint8_t addr[APM_ADDR_MAX]; /* the peer's address on this link, opaque */
} apm_path_t;

typedef enum apm_state { APM_MIGRATED, APM_REARM, APM_ARMED, APM_FAILED } apm_state_t;
typedef enum apm_health { APM_PATH_HEALTHY, APM_PATH_PROBING, APM_PATH_DOWN } apm_health_t;

typedef enum apm_result {
    APM_OK = 0,                 /* applied */
    APM_DUPLICATE,              /* what the event says is already so */
    APM_LATE,                   /* about an alternate, a path state or traffic since superseded */
    APM_ILLEGAL,                /* not legal in this state, or an argument out of range */
    APM_NO_PATH,                /* no healthy path to choose from */
    APM_HELD                    /* a probe during the path's hold-down: not counted */
} apm_result_t;

/* Why the current path changed. */
typedef enum apm_cause {
    APM_CAUSE_MANUAL,           /* apm_migrate() */
    APM_CAUSE_FAULT,            /* the current path failed */
    APM_CAUSE_FAILBACK,         /* home healed and was armed */
    APM_CAUSE_RECOVER           /* a path healed while FAILED */
} apm_cause_t;

typedef enum apm_policy {
    APM_ALT_ROUND_ROBIN,        /* the next healthy path after the last one chosen */
    APM_ALT_ORDERED             /* the first healthy path in the connection's order */
} apm_policy_t;

typedef struct apm_config {
    apm_policy_t policy;
    bool auto_rearm;            /* arm a new alternate after each migration and heal */
    bool failback;              /* return home once it heals, if a fault took us away */
    unsigned heal_probes;       /* successful probes that make a probing path healthy */
    uint64_t holddown_min_ns;   /* first hold-down of a path that comes back */
    uint64_t holddown_max_ns;   /* cap of the doubling while it flaps */
    uint64_t stable_ns;         /* healthy this long: the next fault is not a flap */
    uint64_t fail_timeout_ns;   /* FAILED this long: the transport gives up */
} apm_config_t;

/* Defaults: round robin, auto re-arm and fail-back on, 3 probes, hold-down
 * 50 ms doubling up to 10 s, stable after 10 s, give up 10 s after FAILED. */
void apm_config_init(apm_config_t *cfg);

/* What the library asks of the transport.  Each runs with the library's
 * mutex held, on whichever thread made the transition: record what is asked
 * (a flag, a queue) and act on it from the transport's own progress; never
 * call back into apm from here.  Any may be NULL. */
typedef struct apm_ops {
    /* Check that the peer answers on PATH, then report apm_load_confirmed()
     * or apm_load_failed() with GEN. */
    void (*load)(void *ctx, apm_conn_t *conn, unsigned path, uint32_t gen);
    /* The current path is now TO: resend what is unacknowledged there. */
    void (*migrated)(void *ctx, apm_conn_t *conn, unsigned from, unsigned to, apm_cause_t cause);
    /* No path left: traffic waits; fail once apm_conn_expired(). */
    void (*failed)(void *ctx, apm_conn_t *conn);
    /* Something of CONN changed (a path's health, the current path, the state),
     * after any of the above: a transport that stripes over every healthy path
     * re-reads apm_conn_info() on its slow path. */
    void (*changed)(void *ctx, apm_conn_t *conn);
    void *ctx;
} apm_ops_t;

typedef struct apm_counters {
    uint64_t migrations;        /* = manual + fault + failbacks + recoveries */
    uint64_t migrations_manual, migrations_fault, failbacks, recoveries;
    uint64_t rearms;            /* alternates chosen: REARM entered */
    uint64_t armed;             /* loads confirmed: ARMED entered */
    uint64_t rearms_failed;     /* a load failed, or the alternate failed while loading */
    uint64_t rearms_superseded; /* a loading alternate replaced by another */
    uint64_t disarmed;          /* an armed alternate failed or was replaced */
    uint64_t no_path;           /* a choice that found no healthy path */
    uint64_t failures;          /* FAILED entered */
    uint64_t faults;            /* a healthy or probing path reported down or dead */
    uint64_t flaps;             /* faults within stable_ns of healing (back-off doubled) */
    uint64_t heals;             /* probing paths made healthy */
    uint64_t ignored_illegal, ignored_late, ignored_duplicate, ignored_held;
    uint64_t restores;          /* faults of the current path resolved */
    uint64_t restore_last_ns;   /* fault of the current path to a healthy current path */
    uint64_t restore_worst_ns;
    uint64_t restore_at_ns;     /* when the last one was restored */
} apm_counters_t;

/* ---- set-up ---------------------------------------------------------------------- */

/* NULL when CFG is unusable (heal_probes 0, holddown_min 0 or above max). */
apm_t *apm_create(const apm_config_t *cfg, const apm_ops_t *ops);
/* Destroys the connections left too. */
void apm_destroy(apm_t *apm);

/* A connection over NPATHS paths (1..APM_PATHS_MAX), all taken as healthy,
 * running on HOME.  With auto_rearm it arms an alternate at once (the load
 * callback runs before this returns).  NULL on a bad argument or no memory. */
apm_conn_t *apm_conn_create(apm_t *apm, const apm_path_t *paths, unsigned npaths, unsigned home,
                            void *user, uint64_t now);
void apm_conn_destroy(apm_conn_t *conn);
/* Bytes one connection takes (for a transport's memory accounting). */
size_t apm_conn_bytes(void);
void *apm_conn_user(const apm_conn_t *conn);
const apm_path_t *apm_conn_path(const apm_conn_t *conn, unsigned path);

/* ---- the route: what the fast path reads ----------------------------------------- */
/*
 * One 64-bit word per connection, on a cache line of its own: bits 0-7 the
 * current path, bit 8 FAILED, bit 9 a fault of the current path is being
 * handled (sending there is futile; holding back is fine), bits 16-63 an
 * epoch that grows with every change of the rest.  The library writes it only
 * under its mutex, with a release store, after the state it summarises.
 *
 * apm_route_load() is a relaxed atomic load: one plain MOV/LDR, no fence, no
 * lock.  That is enough because the word is self-contained (the path table it
 * indexes never changes after apm_conn_create() returned, which happens
 * before the transport uses the connection) and an old value is harmless: a
 * frame sent on the old path is lost at worst, and retransmitted.  A
 * transport that acts on an epoch change by reading more of the connection
 * (apm_conn_info) does so on its slow path, under the mutex.  Word-sized and
 * aligned, it is never torn.
 */
typedef _Atomic uint64_t apm_route_word_t;

#define APM_ROUTE_PATH_MASK 0xffull
#define APM_ROUTE_FAILED (1ull << 8)
#define APM_ROUTE_PENDING (1ull << 9)
#define APM_ROUTE_EPOCH_SHIFT 16

const apm_route_word_t *apm_conn_route(const apm_conn_t *conn);

static inline uint64_t apm_route_load(const apm_route_word_t *w)
{
    return atomic_load_explicit(w, memory_order_relaxed);
}
static inline unsigned apm_route_path(uint64_t route) { return (unsigned) (route & APM_ROUTE_PATH_MASK); }
static inline bool apm_route_failed(uint64_t route) { return (route & APM_ROUTE_FAILED) != 0; }
static inline bool apm_route_pending(uint64_t route) { return (route & APM_ROUTE_PENDING) != 0; }
static inline uint64_t apm_route_epoch(uint64_t route) { return route >> APM_ROUTE_EPOCH_SHIFT; }

/* ---- module 1: alternate path specification --------------------------------------- */

/* MIGRATED -> REARM with the policy's choice (a healthy path other than the
 * current one; home first when failing back).  APM_NO_PATH when none. */
apm_result_t apm_alt_choose(apm_conn_t *conn, uint64_t now);
/* The user's choice: PATH becomes the alternate (REARM), replacing one being
 * loaded or armed.  It must be healthy and not current. */
apm_result_t apm_alt_set(apm_conn_t *conn, unsigned path, uint64_t now);

/* ---- module 2: path loading request ---------------------------------------------- */

/* REARM: ask the transport (ops.load) to load the alternate. */
apm_result_t apm_load_request(apm_conn_t *conn, uint64_t now);
/* REARM, loading, GEN current -> ARMED (and on to MIGRATED at once when a
 * fault or a fail-back is waiting for it). */
apm_result_t apm_load_confirmed(apm_conn_t *conn, uint32_t gen, uint64_t now);
/* REARM, loading, GEN current -> the alternate is probed before reuse, and
 * another is chosen (when re-arming or a fault waits). */
apm_result_t apm_load_failed(apm_conn_t *conn, uint32_t gen, uint64_t now);
/* choose + request from MIGRATED; request from REARM before loading */
apm_result_t apm_rearm(apm_conn_t *conn, uint64_t now);

/* ---- module 3: path migration ---------------------------------------------------- */

/* ARMED -> MIGRATED onto the alternate (load balancing, tests). */
apm_result_t apm_migrate(apm_conn_t *conn, uint64_t now);

/* ---- faults and repairs ---------------------------------------------------------- */

apm_result_t apm_path_down(apm_conn_t *conn, unsigned path, uint64_t now);
/* The link is back: the path is probed before use. */
apm_result_t apm_path_up(apm_conn_t *conn, unsigned path, uint64_t now);
/* The link is up but frames sent on it since SINCE went unanswered (retransmit
 * budget spent, probes lost: silent or one-way loss).  Late when the path
 * healed after SINCE. */
apm_result_t apm_path_dead(apm_conn_t *conn, unsigned path, uint64_t since, uint64_t now);
apm_result_t apm_probe_ok(apm_conn_t *conn, unsigned path, uint64_t now);
apm_result_t apm_probe_failed(apm_conn_t *conn, unsigned path, uint64_t now);
/* Link LINK changed for every connection: each of their paths on it goes down
 * or up.  Returns how many paths changed.  apm remembers the links down: a
 * connection made later starts with its paths on them down. */
unsigned apm_link_event(apm_t *apm, int link, bool up, uint64_t now);

/* ---- what the transport asks ------------------------------------------------------ */

/* Paths (bit i: path i) that are probing and past their hold-down (or any
 * probing path while FAILED: with nothing left, a flapping path is better than
 * none): probe them. */
uint32_t apm_probe_wanted(apm_conn_t *conn, uint64_t now);
/* FAILED for at least fail_timeout: time to fail with apm_conn_describe(). */
bool apm_conn_expired(apm_conn_t *conn, uint64_t now);
/* One line for an error message: the state, for how long, each path's health. */
size_t apm_conn_describe(apm_conn_t *conn, uint64_t now, char *buf, size_t len);

typedef struct apm_path_status {
    apm_health_t health;
    unsigned probes_ok;
    uint64_t holddown_until_ns; /* probes before this do not count */
    uint64_t backoff_ns;        /* the hold-down its next return gets */
    uint64_t healthy_since_ns;
} apm_path_status_t;

typedef struct apm_conn_info {
    apm_state_t state;
    unsigned npaths, home, current;
    int alternate;              /* -1: none */
    uint32_t gen;               /* of the latest alternate chosen */
    bool loading;               /* the alternate's load was requested */
    bool fault_pending;         /* the current path failed; migration under way */
    bool home_lost;             /* a fault took the connection off home */
    uint64_t fault_ns, failed_since_ns;
    uint64_t route;
    apm_path_status_t path[APM_PATHS_MAX];
    apm_counters_t counters;
} apm_conn_info_t;

void apm_conn_info(apm_conn_t *conn, apm_conn_info_t *out);
/* The counters of all connections, present and destroyed, summed; of the
 * restore times, the most recent restore's and the worst. */
void apm_totals(apm_t *apm, apm_counters_t *out);
const apm_config_t *apm_config(const apm_t *apm);

const char *apm_state_name(apm_state_t s);
const char *apm_health_name(apm_health_t h);
const char *apm_result_name(apm_result_t r);
const char *apm_cause_name(apm_cause_t c);

#endif
