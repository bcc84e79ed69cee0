/*
 * When apm's event thread asks the kernel for every link's state (a netlink
 * RTM_GETLINK dump), as plain rules on a clock the caller passes in, so that
 * t_apm can drive them through stalls and refusals the kernel will not make on
 * demand.  apm_thread.c owns the socket and feeds these rules what it reads.
 *
 * Why a dump at all: netlink drops link changes when the socket's buffer is
 * full (ENOBUFS, an overrun).  What changed is then unknown, so every link is
 * read afresh by a dump begun after the overrun.  The kernel runs one dump per
 * socket at a time and refuses a second request (EBUSY) while one runs, and an
 * overrun can come while a dump runs (its parts fill the same buffer): what
 * changed after the running dump read a link is lost too, so another dump
 * follows it.
 *
 * Stalls: the kernel writes a dump's next part when a read takes something
 * from the socket and leaves it less than half full; if the part cannot be
 * queued then (events filled the buffer first), it waits for the next read
 * that takes something, which after a storm may not come.  A running dump from
 * which nothing has come for APM_RESYNC_STALL_NS is therefore given up and
 * asked for again.  A refusal of the new request while the old dump runs
 * (EBUSY) is itself a read that moves the old dump on, and is asked again at
 * once.  A dump that keeps answering, however long, is left to finish.
 * (Until 2026-12-07 a dump was dropped 5 s after it began, and not followed by
 * another unless an overrun had come since, so the links it had not read yet
 * stayed unknown.)
 */
#ifndef APM_RESYNC_H
#define APM_RESYNC_H

#include <stdbool.h>
#include <stdint.h>

#define APM_RESYNC_STALL_NS (250 * 1000000ull)

typedef struct apm_resync {
    uint32_t seq;       /* the dump running (its request's sequence), 0: none */
    bool wanted;        /* an overrun (or a lost dump) not yet covered by a dump begun after it */
    uint64_t heard_ns;  /* when the running dump was asked for or last answered */
} apm_resync_t;

/* Changes were lost (or nothing is known yet): a dump is owed. */
static inline void apm_resync_overrun(apm_resync_t *r)
{
    r->wanted = true;
}

/* Between reads: give up a dump silent for too long (true in *stalled), then
 * say whether a dump request is to be sent now. */
static inline bool apm_resync_due(apm_resync_t *r, uint64_t now_ns, bool *stalled)
{
    *stalled = false;
    if (r->seq != 0 && now_ns - r->heard_ns > APM_RESYNC_STALL_NS) {
        r->seq = 0;
        r->wanted = true;               /* its links were not all read */
        *stalled = true;
    }
    return r->wanted && r->seq == 0;
}

/* The request SEQ (never 0) went out: it covers every overrun before now. */
static inline void apm_resync_sent(apm_resync_t *r, uint32_t seq, uint64_t now_ns)
{
    r->seq = seq;
    r->wanted = false;
    r->heard_ns = now_ns;
}

/* A link message of dump SEQ arrived: if it is the running one, it moves. */
static inline void apm_resync_heard(apm_resync_t *r, uint32_t seq, uint64_t now_ns)
{
    if (r->seq != 0 && seq == r->seq) {
        r->heard_ns = now_ns;
    }
}

/* Dump SEQ ended (NLMSG_DONE, or NLMSG_ERROR: REFUSED).  Returns true when it
 * was the running one and was refused: it is then asked for again. */
static inline bool apm_resync_ended(apm_resync_t *r, uint32_t seq, bool refused)
{
    if (r->seq == 0 || seq != r->seq) {
        return false;                   /* another's, or one given up */
    }
    r->seq = 0;
    if (refused) {
        r->wanted = true;
    }
    return refused;
}

/* A dump owed or running: the thread must look again soon, not sleep for good. */
static inline bool apm_resync_pending(const apm_resync_t *r)
{
    return r->wanted || r->seq != 0;
}

#endif
