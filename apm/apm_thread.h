/*
 * apm's asynchronous thread: the paper's event thread.  It sleeps in poll()
 * until something happens, then turns it into transitions of the state
 * machines (apm.h), under the library's mutex:
 *
 *  - link state from netlink (RTNLGRP_LINK): a link that loses IFF_UP or
 *    IFF_RUNNING takes down every path on it (the paper's port error); one
 *    that has both again brings them up (to be probed).  Only changes count:
 *    the many RTM_NEWLINK messages that repeat a state are dropped here.  A
 *    netlink overrun (ENOBUFS) is answered with a fresh dump of every link,
 *    begun after it (one running then is followed by another).
 *  - requests from the transport's main thread (manual migration, a path
 *    declared dead, load reports, probes), through a single-producer,
 *    single-consumer ring: pushing one is a few stores and, only when the
 *    thread sleeps, one eventfd write.
 *  - a test hook: link changes and requests from one other thread, through
 *    a second ring, exactly as if netlink had said them.
 *
 * What the transport reads on its fast path (apm_route_load()) is published
 * by the state machine with a release store; nothing here makes the fast
 * path take a lock or make a system call.
 *
 * A request names its connection by pointer: destroy a connection only after
 * apm_thread_flush() has returned (nothing naming it is left in a ring).
 */
#ifndef APM_THREAD_H
#define APM_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "apm.h"

typedef struct apm_thread apm_thread_t;

typedef enum apm_request_kind {
    APM_REQ_MIGRATE,            /* apm_migrate */
    APM_REQ_REARM,              /* apm_rearm */
    APM_REQ_LOAD_CONFIRMED,     /* gen */
    APM_REQ_LOAD_FAILED,        /* gen */
    APM_REQ_PATH_DEAD,          /* path, since */
    APM_REQ_PATH_DOWN,          /* path */
    APM_REQ_PATH_UP,            /* path */
    APM_REQ_PROBE_OK,           /* path */
    APM_REQ_PROBE_FAILED,       /* path */
    APM_REQ_LINK_DOWN,          /* link: as a netlink change (no conn) */
    APM_REQ_LINK_UP             /* link */
} apm_request_kind_t;

typedef struct apm_request {
    apm_request_kind_t kind;
    apm_conn_t *conn;
    unsigned path;
    uint32_t gen;
    int link;
    uint64_t since_ns;
    uint64_t now_ns;            /* 0: when the thread takes it */
} apm_request_t;

typedef struct apm_thread_config {
    uint32_t ring_size;         /* requests each ring holds, a power of two */
    bool netlink;               /* listen to link changes (false: only the rings) */
    int netlink_rcvbuf;         /* bytes of netlink socket buffer asked for (the kernel
                                 * doubles it; tests make it small to overrun it) */
} apm_thread_config_t;

/* 1024 requests, netlink on, 1 MiB of netlink buffer. */
void apm_thread_config_init(apm_thread_config_t *cfg);

/* Starts the thread (signals blocked in it).  NULL with errno set when the
 * ring, the eventfd, the netlink socket or the thread cannot be had. */
apm_thread_t *apm_thread_start(apm_t *apm, const apm_thread_config_t *cfg);
/* Wakes it, waits for it to leave and frees everything: no fd, no thread
 * left.  Requests still queued are dropped. */
void apm_thread_stop(apm_thread_t *th);

/* The transport's main thread only (the ring's one producer).  False when the
 * ring is full: retry later, or call the apm_* function directly. */
bool apm_thread_request(apm_thread_t *th, const apm_request_t *req);
/* The same for N requests with one wake-up at the end (a burst: the
 * migration of many connections).  Returns how many were taken. */
unsigned apm_thread_request_many(apm_thread_t *th, const apm_request_t *reqs, unsigned n);
/* Test hook: one other thread (the second ring's one producer) injects link
 * changes (APM_REQ_LINK_*, handled exactly as netlink's) or requests. */
bool apm_thread_inject(apm_thread_t *th, const apm_request_t *req);
/* Waits until everything pushed before the call has been applied. */
void apm_thread_flush(apm_thread_t *th);

typedef struct apm_thread_stats {
    uint64_t requests;          /* applied from the main thread's ring */
    uint64_t injected;          /* applied from the test hook's ring */
    uint64_t ignored;           /* of both, what the state machines ignored */
    uint64_t link_up, link_down;        /* link changes seen (netlink or injected) */
    uint64_t paths_changed;     /* paths those changes moved */
    uint64_t netlink_msgs;      /* RTM_NEWLINK / RTM_DELLINK read */
    uint64_t netlink_resyncs;   /* overruns, each answered by a dump begun after it */
    uint64_t netlink_dumps_refused;     /* dump requests the kernel refused (asked again) */
    uint64_t netlink_dumps_stalled;     /* dumps that stopped coming and were asked again */
    uint64_t wakeups;           /* returns from poll() */
    uint64_t last_up_ns, last_down_ns;  /* apm_now_ns() when the last change was seen */
    int last_up_link, last_down_link;
} apm_thread_stats_t;

void apm_thread_stats(apm_thread_t *th, apm_thread_stats_t *out);

/* CLOCK_MONOTONIC in nanoseconds: the time the thread stamps events with. */
uint64_t apm_now_ns(void);

#endif
