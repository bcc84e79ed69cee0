/* apm's asynchronous thread (apm_thread.h). */
#define _GNU_SOURCE
#include "apm_thread.h"

#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "apm_resync.h"
#include "apm_ring.h"

/* What the thread last knew of a link, so repeated states are not events. */
typedef struct link_known {
    int ifindex;
    bool up;
} link_known_t;

typedef struct stat_cells {
    _Atomic uint64_t requests, injected, ignored, link_up, link_down, paths_changed;
    _Atomic uint64_t netlink_msgs, netlink_resyncs, netlink_dumps_refused, netlink_dumps_stalled;
    _Atomic uint64_t wakeups, last_up_ns, last_down_ns;
    _Atomic int last_up_link, last_down_link;
} stat_cells_t;

struct apm_thread {
    apm_ring_t requests;        /* the main thread -> here */
    apm_ring_t injected;        /* the test hook -> here */
    _Alignas(64) _Atomic bool sleeping; /* in (or about to enter) poll(): push must wake it */
    _Atomic bool stop;
    _Alignas(64) apm_t *apm;
    pthread_t tid;
    int wake_fd;                /* eventfd */
    int nl_fd;                  /* -1 without netlink */
    uint32_t nl_seq;
    apm_resync_t resync;        /* every link's state read afresh after an overrun (apm_resync.h) */
    link_known_t *links;        /* the thread's own */
    size_t nlinks, links_cap;
    stat_cells_t st;
};

uint64_t apm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

void apm_thread_config_init(apm_thread_config_t *cfg)
{
    cfg->ring_size = 1024;
    cfg->netlink = true;
    cfg->netlink_rcvbuf = 1 << 20;
}

static void bump(_Atomic uint64_t *cell, uint64_t by)
{
    /* one writer (the thread): a load and a store, no locked add */
    atomic_store_explicit(cell, atomic_load_explicit(cell, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

/* ---- links ------------------------------------------------------------------------- */

static link_known_t *known(apm_thread_t *th, int ifindex)
{
    for (size_t i = 0; i < th->nlinks; i++) {
        if (th->links[i].ifindex == ifindex) {
            return &th->links[i];
        }
    }
    return NULL;
}

static void forget(apm_thread_t *th, int ifindex)
{
    link_known_t *k = known(th, ifindex);
    if (k != NULL) {
        *k = th->links[--th->nlinks];
    }
}

/* A link is UP or not.  A link seen for the first time is news only when
 * down: connections take their paths as healthy to begin with. */
static void on_link(apm_thread_t *th, int ifindex, bool up, uint64_t now)
{
    link_known_t *k = known(th, ifindex);
    if (k != NULL && k->up == up) {
        return;
    }
    if (k == NULL) {
        if (th->nlinks == th->links_cap) {
            size_t cap = th->links_cap ? th->links_cap * 2 : 16;
            link_known_t *grown = realloc(th->links, cap * sizeof(*grown));
            if (grown == NULL) {
                /* cannot remember it: pass the change on anyway (repeats are harmless) */
                goto apply;
            }
            th->links = grown;
            th->links_cap = cap;
        }
        k = &th->links[th->nlinks++];
        k->ifindex = ifindex;
        k->up = up;
        if (up) {
            return;
        }
    }
    k->up = up;
apply:
    bump(&th->st.paths_changed, apm_link_event(th->apm, ifindex, up, now));
    uint64_t seen = apm_now_ns();
    if (up) {
        bump(&th->st.link_up, 1);
        atomic_store_explicit(&th->st.last_up_ns, seen, memory_order_relaxed);
        atomic_store_explicit(&th->st.last_up_link, ifindex, memory_order_relaxed);
    } else {
        bump(&th->st.link_down, 1);
        atomic_store_explicit(&th->st.last_down_ns, seen, memory_order_relaxed);
        atomic_store_explicit(&th->st.last_down_link, ifindex, memory_order_relaxed);
    }
}

static int netlink_open(int rcvbuf)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
    if (fd < 0) {
        return -1;
    }
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
    /* a burst of link changes must not overrun it (an overrun costs a dump) */
    if (rcvbuf <= 0) {
        rcvbuf = 1 << 20;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Ask for every link's state; the answers arrive as RTM_NEWLINK like events. */
static void netlink_dump(apm_thread_t *th)
{
    struct {
        struct nlmsghdr nh;
        struct ifinfomsg ifi;
    } req;
    memset(&req, 0, sizeof(req));
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
    req.nh.nlmsg_type = RTM_GETLINK;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    if (++th->nl_seq == 0) {
        th->nl_seq = 1;                         /* 0 means no dump */
    }
    req.nh.nlmsg_seq = th->nl_seq;
    req.ifi.ifi_family = AF_UNSPEC;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    ssize_t n = sendto(th->nl_fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *) &kernel, sizeof(kernel));
    if (n == (ssize_t) req.nh.nlmsg_len) {
        apm_resync_sent(&th->resync, th->nl_seq, apm_now_ns());
    }                                           /* else still wanted: the next pass tries again */
}

/* Between reads: start the dump an overrun asked for, once none runs. */
static void resync_step(apm_thread_t *th)
{
    bool stalled;
    bool due = apm_resync_due(&th->resync, apm_now_ns(), &stalled);
    if (stalled) {
        bump(&th->st.netlink_dumps_stalled, 1);
    }
    if (due) {
        netlink_dump(th);
    }
}

static void netlink_read(apm_thread_t *th)
{
    /* aligned for the headers it is parsed into */
    _Alignas(struct nlmsghdr) char buf[32768];
    for (;;) {
        ssize_t n = recv(th->nl_fd, buf, sizeof(buf), 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == ENOBUFS) {
                /* changes were lost: learn every link's state afresh, by a
                 * dump begun after now (resync_step) */
                bump(&th->st.netlink_resyncs, 1);
                apm_resync_overrun(&th->resync);
                continue;
            }
            resync_step(th);
            return;                             /* EAGAIN: all read */
        }
        uint64_t now = apm_now_ns();
        /* signed, as NLMSG_NEXT expects: a last message whose aligned length
         * ran past the end makes it negative and ends the walk (unsigned, it
         * would wrap and the walk would read past the buffer) */
        int left = (int) n;
        for (struct nlmsghdr *nh = (struct nlmsghdr *) buf; NLMSG_OK(nh, left); nh = NLMSG_NEXT(nh, left)) {
            if (nh->nlmsg_type == NLMSG_DONE || nh->nlmsg_type == NLMSG_ERROR) {
                /* a dump ended; ours refused (EBUSY, or anything else) is
                 * asked for again: its links were not read */
                const struct nlmsgerr *err = NLMSG_DATA(nh);
                bool refused = nh->nlmsg_type == NLMSG_ERROR
                               && (nh->nlmsg_len < NLMSG_LENGTH(sizeof(*err)) || err->error != 0);
                if (apm_resync_ended(&th->resync, nh->nlmsg_seq, refused)) {
                    bump(&th->st.netlink_dumps_refused, 1);
                }
                continue;
            }
            if (nh->nlmsg_type != RTM_NEWLINK && nh->nlmsg_type != RTM_DELLINK) {
                continue;
            }
            if (nh->nlmsg_len < NLMSG_LENGTH(sizeof(struct ifinfomsg))) {
                continue;
            }
            const struct ifinfomsg *ifi = NLMSG_DATA(nh);
            bump(&th->st.netlink_msgs, 1);
            apm_resync_heard(&th->resync, nh->nlmsg_seq, now);
            if (nh->nlmsg_type == RTM_DELLINK) {
                on_link(th, ifi->ifi_index, false, now);
                forget(th, ifi->ifi_index);
                continue;
            }
            /* IFF_RUNNING in a netlink message is the operational state: carrier and all */
            bool up = (ifi->ifi_flags & IFF_UP) && (ifi->ifi_flags & IFF_RUNNING);
            on_link(th, ifi->ifi_index, up, now);
        }
    }
}

/* ---- requests ---------------------------------------------------------------------- */

static void apply(apm_thread_t *th, const apm_request_t *rq)
{
    uint64_t now = rq->now_ns ? rq->now_ns : apm_now_ns();
    apm_result_t r = APM_OK;
    switch (rq->kind) {
    case APM_REQ_MIGRATE: r = apm_migrate(rq->conn, now); break;
    case APM_REQ_REARM: r = apm_rearm(rq->conn, now); break;
    case APM_REQ_LOAD_CONFIRMED: r = apm_load_confirmed(rq->conn, rq->gen, now); break;
    case APM_REQ_LOAD_FAILED: r = apm_load_failed(rq->conn, rq->gen, now); break;
    case APM_REQ_PATH_DEAD: r = apm_path_dead(rq->conn, rq->path, rq->since_ns, now); break;
    case APM_REQ_PATH_DOWN: r = apm_path_down(rq->conn, rq->path, now); break;
    case APM_REQ_PATH_UP: r = apm_path_up(rq->conn, rq->path, now); break;
    case APM_REQ_PROBE_OK: r = apm_probe_ok(rq->conn, rq->path, now); break;
    case APM_REQ_PROBE_FAILED: r = apm_probe_failed(rq->conn, rq->path, now); break;
    case APM_REQ_LINK_DOWN: on_link(th, rq->link, false, now); break;
    case APM_REQ_LINK_UP: on_link(th, rq->link, true, now); break;
    default: r = APM_ILLEGAL; break;
    }
    if (r != APM_OK) {
        bump(&th->st.ignored, 1);
    }
}

/* Applies what is queued (a bounded batch, so netlink is not starved). */
static unsigned drain(apm_thread_t *th, apm_ring_t *ring, _Atomic uint64_t *count)
{
    unsigned done = 0;
    apm_request_t rq;
    while (done < 256 && apm_ring_peek(ring, &rq)) {
        apply(th, &rq);
        bump(count, 1);
        /* popped only once applied and counted: apm_thread_flush() waits for the tail */
        apm_ring_pop(ring);
        done++;
    }
    return done;
}

static void *thread_main(void *arg)
{
    apm_thread_t *th = arg;
    struct pollfd pfd[2] = {{.fd = th->wake_fd, .events = POLLIN}, {.fd = th->nl_fd, .events = POLLIN}};
    nfds_t nfds = th->nl_fd >= 0 ? 2 : 1;
    if (th->nl_fd >= 0) {
        apm_resync_overrun(&th->resync);        /* every link's state to begin with */
        resync_step(th);
    }
    while (!atomic_load_explicit(&th->stop, memory_order_acquire)) {
        unsigned done = drain(th, &th->requests, &th->st.requests)
                        + drain(th, &th->injected, &th->st.injected);
        if (done > 0) {
            continue;
        }
        /* Going to sleep: say so, then look once more.  With the producer's
         * push-fence-look (wake()), either it sees us asleep and writes the
         * eventfd, or we see its request here. */
        atomic_store_explicit(&th->sleeping, true, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        if (apm_ring_count(&th->requests) == 0 && apm_ring_count(&th->injected) == 0
            && !atomic_load_explicit(&th->stop, memory_order_acquire)) {
            /* a dump still owed (its request could not be sent), or one running
             * that may stall (APM_RESYNC_STALL_NS), is looked at again soon */
            poll(pfd, nfds, apm_resync_pending(&th->resync) ? 100 : -1);
            bump(&th->st.wakeups, 1);
        }
        atomic_store_explicit(&th->sleeping, false, memory_order_relaxed);
        if (pfd[0].revents & POLLIN) {
            uint64_t count;
            ssize_t n = read(th->wake_fd, &count, sizeof(count));
            (void) n;                           /* EAGAIN: another read took it */
        }
        if (nfds == 2 && (pfd[1].revents & (POLLIN | POLLERR))) {
            netlink_read(th);
        } else if (nfds == 2) {
            resync_step(th);
        }
        pfd[0].revents = pfd[1].revents = 0;
    }
    return NULL;
}

/* After a push.  Only the first push that finds the thread asleep writes
 * the eventfd (the exchange clears the flag): a burst costs one system call. */
static void wake(apm_thread_t *th)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&th->sleeping, memory_order_relaxed)
        && atomic_exchange_explicit(&th->sleeping, false, memory_order_relaxed)) {
        uint64_t one = 1;
        ssize_t n = write(th->wake_fd, &one, sizeof(one));
        (void) n;                               /* a full counter still wakes it */
    }
}

/* ---- the public side --------------------------------------------------------------- */

static void release(apm_thread_t *th)
{
    if (th->wake_fd >= 0) {
        close(th->wake_fd);
    }
    if (th->nl_fd >= 0) {
        close(th->nl_fd);
    }
    apm_ring_fini(&th->requests);
    apm_ring_fini(&th->injected);
    free(th->links);
    free(th);
}

apm_thread_t *apm_thread_start(apm_t *apm, const apm_thread_config_t *cfg)
{
    apm_thread_t *th = aligned_alloc(64, (sizeof(*th) + 63) & ~(size_t) 63);
    if (th == NULL) {
        return NULL;
    }
    memset(th, 0, sizeof(*th));
    th->apm = apm;
    th->wake_fd = th->nl_fd = -1;
    atomic_init(&th->sleeping, false);
    atomic_init(&th->stop, false);
    if (!apm_ring_init(&th->requests, cfg->ring_size) || !apm_ring_init(&th->injected, cfg->ring_size)) {
        release(th);
        errno = EINVAL;
        return NULL;
    }
    th->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (th->wake_fd < 0 || (cfg->netlink && (th->nl_fd = netlink_open(cfg->netlink_rcvbuf)) < 0)) {
        int e = errno;
        release(th);
        errno = e;
        return NULL;
    }
    /* the process's signals are for its other threads */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&th->tid, NULL, thread_main, th);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        release(th);
        errno = rc;
        return NULL;
    }
    pthread_setname_np(th->tid, "apm");
    return th;
}

void apm_thread_stop(apm_thread_t *th)
{
    if (th == NULL) {
        return;
    }
    atomic_store_explicit(&th->stop, true, memory_order_release);
    uint64_t one = 1;
    ssize_t n = write(th->wake_fd, &one, sizeof(one));
    (void) n;
    pthread_join(th->tid, NULL);
    release(th);
}

bool apm_thread_request(apm_thread_t *th, const apm_request_t *req)
{
    if (!apm_ring_push(&th->requests, req)) {
        return false;
    }
    wake(th);
    return true;
}

unsigned apm_thread_request_many(apm_thread_t *th, const apm_request_t *reqs, unsigned n)
{
    unsigned taken = 0;
    while (taken < n && apm_ring_push(&th->requests, &reqs[taken])) {
        taken++;
    }
    if (taken > 0) {
        wake(th);
    }
    return taken;
}

bool apm_thread_inject(apm_thread_t *th, const apm_request_t *req)
{
    if (!apm_ring_push(&th->injected, req)) {
        return false;
    }
    wake(th);
    return true;
}

static void wait_tail(apm_ring_t *r, uint32_t head)
{
    while ((int32_t) (atomic_load_explicit(&r->tail, memory_order_acquire) - head) < 0) {
        sched_yield();
    }
}

void apm_thread_flush(apm_thread_t *th)
{
    uint32_t rh = atomic_load_explicit(&th->requests.head, memory_order_acquire);
    uint32_t ih = atomic_load_explicit(&th->injected.head, memory_order_acquire);
    wait_tail(&th->requests, rh);
    wait_tail(&th->injected, ih);
}

void apm_thread_stats(apm_thread_t *th, apm_thread_stats_t *out)
{
#define GET(f) out->f = atomic_load_explicit(&th->st.f, memory_order_relaxed)
    GET(requests);
    GET(injected);
    GET(ignored);
    GET(link_up);
    GET(link_down);
    GET(paths_changed);
    GET(netlink_msgs);
    GET(netlink_resyncs);
    GET(netlink_dumps_refused);
    GET(netlink_dumps_stalled);
    GET(wakeups);
    GET(last_up_ns);
    GET(last_down_ns);
    GET(last_up_link);
    GET(last_down_link);
#undef GET
}
