/*
 * btl pmeth's keeper: a thread that keeps the reliability protocol's promises
 * while the process is away from MPI.
 *
 * Why.  pmeth tells ob1 a fragment is done once its frame is in the send ring
 * (early completion: the frame stays there for resends until the peer acks it).
 * Its resend timers and delayed acks run in progress, that is, only while the
 * process calls MPI.  A frame lost after its send completed was therefore resent
 * only when the sender called MPI again; a sender that then waited for its peer
 * outside MPI (spinning on shared memory, a file, a socket) while the peer waited
 * in MPI for that frame hung.  tcp has no such hole: the kernel resends.
 *
 * What it does.  Every btl_pmeth_keeper_us it looks whether progress ran since
 * its last look.  If not (the process is away) and the BTL's lock is free, it
 * resends the frames whose timers ran out and sends the acks that are owed, then
 * kicks the rings: the timer half of pmeth_endpoint_service.  A timer's resend
 * is a probe whose answer (the peer's ack) says which frames are lost, so the
 * keeper also takes the peer's standalone acks from the receive rings.  It
 * answers peers' PROBEs too: a peer that first needs us while we are away
 * (reading input, computing) would otherwise call us unreachable after
 * btl_pmeth_probe_timeout_ms, and ob1 end the job.  And it serves peers'
 * one-sided requests that come next in their order (puts, gets, atomics on
 * memory osc registered: keeper_may_serve in btl_pmeth_recv.c), so
 * that passive-target operations on a rank computing outside MPI complete, as
 * over hardware RDMA, instead of waiting for it.  Every other frame (data for
 * ob1 above all) it leaves, in order, for progress to take first when the
 * process is back.  It never calls ob1 or osc: an ack that would complete a
 * fragment ob1 waits for, and the answers to our own requests, are left for
 * progress too.
 *
 * Cost.  While the keeper runs, PMETH_LOCK is a real (recursive) mutex on the
 * send and progress paths; uncontended, it costs nothing measurable.  The thread
 * wakes once per interval while the process is away, and ever less often
 * (KEEPER_BACKOFF_MAX) while progress runs: waking every interval, it cost
 * latency +1-4% and small-message streaming -4 to -7% on veth
 * (docs/results-2026-11-26-pmeth-keeper/).
 */
#include "btl_pmeth.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

static pthread_t keeper;
static _Atomic bool keeper_stop;

/* While the process keeps calling MPI the keeper's naps double, up to this many
 * times btl_pmeth_keeper_us.  Every wake-up takes the CPU from a rank that is
 * polling on it (the thread shares its binding): at one every 2 ms, small
 * messages lost 3-4% of their latency (the median of block averages), some
 * 30 us per wake-up in this VM.  The first nap after the process left MPI ends
 * at most this many intervals late; the following are btl_pmeth_keeper_us. */
#define KEEPER_BACKOFF_MAX 32

static void *keeper_main(void *arg)
{
    (void) arg;
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    uint64_t nap_us = c->keeper_us, seen = UINT64_MAX;
    while (!atomic_load_explicit(&keeper_stop, memory_order_relaxed)) {
        const struct timespec nap = {.tv_sec = (time_t) (nap_us / 1000000),
                                     .tv_nsec = (long) (nap_us % 1000000) * 1000};
        nanosleep(&nap, NULL);
        uint64_t calls = atomic_load_explicit(&c->progress_calls, memory_order_relaxed);
        if (calls != seen) {
            seen = calls;           /* in MPI: its own progress keeps the timers */
            if (nap_us < (uint64_t) c->keeper_us * KEEPER_BACKOFF_MAX) {
                nap_us *= 2;
            }
            continue;
        }
        nap_us = c->keeper_us;
        if (opal_mutex_trylock(&c->lock) != 0) {
            continue;               /* the process holds it: it is back */
        }
        if (!c->in_progress) {
            /* the peer's acks first: they answer the timer's probe, which tells
             * which frames to resend (pmeth_txwin_due); and peers' PROBEs are
             * answered, with frames in flight or not */
            unsigned n = 0, taken = 0;
            for (uint32_t i = 0; i < c->nlinks; i++) {
                taken += (unsigned) pmeth_keeper_poll_link(&c->links[i]);
            }
            if (taken > 0) {
                taken += (unsigned) pmeth_keeper_serve_deferred();
            }
            pmeth_acks_flush();
            uint64_t now = pmeth_now_ns();
            for (uint32_t i = 0; i < c->nactive; i++) {
                n += (unsigned) pmeth_endpoint_keep(c->active[i], now);
            }
            if (n + taken > 0) {
                pmeth_kick_all(true);
                c->keeper_passes++;
                c->keeper_frames += n;
            }
        }
        opal_mutex_unlock(&c->lock);
    }
    return NULL;
}

void pmeth_keeper_start(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (c->keeper_us == 0 || c->keeper_on) {
        return;
    }
    atomic_store(&keeper_stop, false);
    c->keeper_on = true;            /* before the thread: PMETH_LOCK locks from now on */
    /* with every signal blocked, as apm's and rsm's threads: a signal the application
     * meant for a thread of its own (sigwait) must not land in ours */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&keeper, NULL, keeper_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        c->keeper_on = false;
        PMETH_VERBOSE(1, "no keeper thread (%s): frames lost after a send completed are resent "
                      "only while the process calls MPI", strerror(rc));
    }
}

/* Before finalize takes the lock: afterwards PMETH_LOCK is what it was. */
void pmeth_keeper_stop(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (!c->keeper_on) {
        return;
    }
    atomic_store(&keeper_stop, true);
    pthread_join(keeper, NULL);
    c->keeper_on = false;
    PMETH_VERBOSE(10, "keeper: %" PRIu64 " passes while the process was away, %" PRIu64
                  " frames resent or acks sent, %" PRIu64 " peers' probes answered, %" PRIu64
                  " frames of one-sided requests served", c->keeper_passes, c->keeper_frames,
                  c->keeper_probes, c->keeper_rma);
}
