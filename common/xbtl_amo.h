/*
 * One-sided atomics done by the target's CPU, shared by rsm (btl_rsm_rma.c: on
 * one host, and between hosts over its verbs back end) and pmeth
 * (btl_pmeth_rma.c: between hosts over Ethernet): the origin asks the target
 * process, in a message of the BTL's own, to apply an atomic operation to its
 * own memory with the CPU's atomic instructions, and the target answers with
 * the value it found there.  Because the target uses the CPU's atomics, these
 * operations mix safely with the ones Open MPI's osc rdma does itself on the
 * same words (MCA_BTL_ATOMIC_SUPPORTS_GLOB).
 *
 * What crosses the wire is a request (origin -> target) and a reply (target ->
 * origin).  A request is read once into private memory and checked before it
 * is used; whether its address lies in memory the target registered for
 * remote atomics is the caller's check (it needs the registrations).  No MPI
 * here: t_xbtl_amo feeds the reader forged requests and checks every operation
 * against a plain computation, and drives the lock watch at the end.
 */
#ifndef XBTL_AMO_H
#define XBTL_AMO_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum xbtl_amo_op {
    XBTL_AMO_ADD = 1, XBTL_AMO_AND, XBTL_AMO_OR, XBTL_AMO_XOR, XBTL_AMO_LAND, XBTL_AMO_LOR,
    XBTL_AMO_LXOR, XBTL_AMO_SWAP, XBTL_AMO_MIN, XBTL_AMO_MAX, XBTL_AMO_CSWAP,
    XBTL_AMO_OPS                     /* one past the last */
};
#define XBTL_AMO_32BIT 0x1u          /* a 4-byte word (else 8) */
#define XBTL_AMO_FLOAT 0x2u          /* float / double (ADD, MIN, MAX and the swaps only) */

typedef struct xbtl_amo_req {        /* origin -> target */
    uint64_t addr;                  /* the word, in the target's address space */
    uint64_t operand;               /* CSWAP: the value to store */
    uint64_t compare;               /* CSWAP only */
    uint64_t id;                    /* the origin's, returned in the reply */
    uint32_t op, flags;
} xbtl_amo_req_t;

enum { XBTL_AMO_DONE = 0, XBTL_AMO_REFUSED = 1 };
typedef struct xbtl_amo_reply {      /* target -> origin */
    uint64_t id;
    uint64_t old;                   /* the word before the operation */
    uint32_t status;                /* XBTL_AMO_DONE, or XBTL_AMO_REFUSED: nothing was changed */
    uint32_t pad;
} xbtl_amo_reply_t;

static inline unsigned xbtl_amo_width(uint32_t flags)
{
    return (flags & XBTL_AMO_32BIT) ? 4 : 8;
}

/* Copy a peer-written request out (once) and check what can be checked without
 * the registrations: size, operation, flags, alignment.  False: refuse it. */
static inline bool xbtl_amo_req_read(const void *data, uint32_t len, xbtl_amo_req_t *req)
{
    if (len != sizeof(*req)) {
        return false;
    }
    memcpy(req, data, sizeof(*req));
    if (req->op < XBTL_AMO_ADD || req->op >= XBTL_AMO_OPS
        || (req->flags & ~(XBTL_AMO_32BIT | XBTL_AMO_FLOAT)) != 0) {
        return false;
    }
    if ((req->flags & XBTL_AMO_FLOAT) && req->op != XBTL_AMO_ADD && req->op != XBTL_AMO_MIN
        && req->op != XBTL_AMO_MAX && req->op != XBTL_AMO_SWAP && req->op != XBTL_AMO_CSWAP) {
        return false;               /* no bitwise or logical operations on floating point */
    }
    return (req->addr & (xbtl_amo_width(req->flags) - 1)) == 0 && req->addr != 0;
}

static inline bool xbtl_amo_reply_read(const void *data, uint32_t len, xbtl_amo_reply_t *rep)
{
    if (len != sizeof(*rep)) {
        return false;
    }
    memcpy(rep, data, sizeof(*rep));
    return rep->status == XBTL_AMO_DONE || rep->status == XBTL_AMO_REFUSED;
}

/* The new value of a word that held OLD (WIDTH bytes, in the low bits). */
static inline uint64_t xbtl_amo_combine(uint32_t op, uint32_t flags, uint64_t old, uint64_t operand)
{
    const bool narrow = flags & XBTL_AMO_32BIT;
    if (narrow) {                   /* a 4-byte operation sees 4 bytes of its operand */
        old = (uint32_t) old;
        operand = (uint32_t) operand;
    }
    if (flags & XBTL_AMO_FLOAT) {
        if (op == XBTL_AMO_SWAP) {
            return operand;
        }
        if (narrow) {
            float a, b, r;
            uint32_t ua = (uint32_t) old, ub = (uint32_t) operand, ur;
            memcpy(&a, &ua, 4);
            memcpy(&b, &ub, 4);
            r = op == XBTL_AMO_ADD ? a + b : op == XBTL_AMO_MIN ? (b < a ? b : a) : (b > a ? b : a);
            memcpy(&ur, &r, 4);
            return ur;
        }
        double a, b, r;
        uint64_t ur;
        memcpy(&a, &old, 8);
        memcpy(&b, &operand, 8);
        r = op == XBTL_AMO_ADD ? a + b : op == XBTL_AMO_MIN ? (b < a ? b : a) : (b > a ? b : a);
        memcpy(&ur, &r, 8);
        return ur;
    }
    /* integers: MIN and MAX compare as signed, as Open MPI's own emulations do;
     * our origins never ask for them (amo_start refuses them: the interface
     * does not say the signedness), only a peer of another build could */
    const int64_t sa = narrow ? (int64_t) (int32_t) (uint32_t) old : (int64_t) old;
    const int64_t sb = narrow ? (int64_t) (int32_t) (uint32_t) operand : (int64_t) operand;
    uint64_t r;
    switch (op) {
    case XBTL_AMO_ADD: r = old + operand; break;
    case XBTL_AMO_AND: r = old & operand; break;
    case XBTL_AMO_OR: r = old | operand; break;
    case XBTL_AMO_XOR: r = old ^ operand; break;
    case XBTL_AMO_LAND: r = (old != 0 && operand != 0); break;
    case XBTL_AMO_LOR: r = (old != 0 || operand != 0); break;
    case XBTL_AMO_LXOR: r = ((old != 0) != (operand != 0)); break;
    case XBTL_AMO_MIN: r = (uint64_t) (sb < sa ? sb : sa); break;
    case XBTL_AMO_MAX: r = (uint64_t) (sb > sa ? sb : sa); break;
    default: r = operand; break;    /* SWAP */
    }
    return narrow ? (uint32_t) r : r;
}

/* Apply a checked request to the word at ADDR; returns the word's old value.
 * Every operation is one atomic read-modify-write of that word. */
static inline uint64_t xbtl_amo_apply(void *addr, const xbtl_amo_req_t *req)
{
    if (req->flags & XBTL_AMO_32BIT) {
        uint32_t *w = addr, old = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (req->op == XBTL_AMO_CSWAP) {
            old = (uint32_t) req->compare;
            __atomic_compare_exchange_n(w, &old, (uint32_t) req->operand, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return old;
        }
        uint32_t want;
        do {
            want = (uint32_t) xbtl_amo_combine(req->op, req->flags, old, req->operand);
        } while (!__atomic_compare_exchange_n(w, &old, want, true, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    }
    uint64_t *w = addr;
    if (!(req->flags & XBTL_AMO_FLOAT)) {    /* the ones the CPU has as one instruction */
        switch (req->op) {
        case XBTL_AMO_ADD: return __atomic_fetch_add(w, req->operand, __ATOMIC_SEQ_CST);
        case XBTL_AMO_AND: return __atomic_fetch_and(w, req->operand, __ATOMIC_SEQ_CST);
        case XBTL_AMO_OR: return __atomic_fetch_or(w, req->operand, __ATOMIC_SEQ_CST);
        case XBTL_AMO_XOR: return __atomic_fetch_xor(w, req->operand, __ATOMIC_SEQ_CST);
        case XBTL_AMO_SWAP: return __atomic_exchange_n(w, req->operand, __ATOMIC_SEQ_CST);
        default: break;
        }
    }
    uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED);
    if (req->op == XBTL_AMO_CSWAP) {
        old = req->compare;
        __atomic_compare_exchange_n(w, &old, req->operand, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return old;
    }
    uint64_t want;
    do {
        want = xbtl_amo_combine(req->op, req->flags, old, req->operand);
    } while (!__atomic_compare_exchange_n(w, &old, want, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    return old;
}

/* Where a fetching operation's old value goes: BYTES (0, 4 or 8) of it at DST. */
static inline void xbtl_amo_store_old(void *dst, uint32_t bytes, uint64_t old)
{
    if (bytes == 4) {
        uint32_t v = (uint32_t) old;
        memcpy(dst, &v, 4);
    } else if (bytes == 8) {
        memcpy(dst, &old, 8);
    }
}

#ifdef OPAL_MCA_BTL_H
/* With Open MPI's btl.h included first (the components; not the unit test):
 * the BTL interface's operation and flags in ours (0: none of ours). */
static inline uint32_t xbtl_amo_op_from_btl(mca_btl_base_atomic_op_t op)
{
    switch (op) {
    case MCA_BTL_ATOMIC_ADD: return XBTL_AMO_ADD;
    case MCA_BTL_ATOMIC_AND: return XBTL_AMO_AND;
    case MCA_BTL_ATOMIC_OR: return XBTL_AMO_OR;
    case MCA_BTL_ATOMIC_XOR: return XBTL_AMO_XOR;
    case MCA_BTL_ATOMIC_LAND: return XBTL_AMO_LAND;
    case MCA_BTL_ATOMIC_LOR: return XBTL_AMO_LOR;
    case MCA_BTL_ATOMIC_LXOR: return XBTL_AMO_LXOR;
    case MCA_BTL_ATOMIC_SWAP: return XBTL_AMO_SWAP;
    case MCA_BTL_ATOMIC_MIN: return XBTL_AMO_MIN;
    case MCA_BTL_ATOMIC_MAX: return XBTL_AMO_MAX;
    default: return 0;
    }
}

static inline uint32_t xbtl_amo_flags_from_btl(int flags)
{
    return ((flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? XBTL_AMO_32BIT : 0)
           | ((flags & MCA_BTL_ATOMIC_FLAG_FLOAT) ? XBTL_AMO_FLOAT : 0);
}
#endif

/* ---- A deadlock of Open MPI 4.1.1-4.1.4's osc rdma, seen coming -------------
 * Its lookup of a dynamic window's regions in a window over several hosts
 * takes the target's region lock exclusively (a compare-and-swap 0 ->
 * XBTL_OSC_LOCK_EXCLUSIVE, fetching) and then, the first time, once more
 * shared (a fetch-and-add of 1, retried until the exclusive bit is clear): it
 * waits for itself for ever (fixed in 4.1.5: open-mpi/ompi pull request
 * 10473).  Windows of MPI_Win_create and MPI_Win_allocate never do that.  In
 * such a window osc makes every lock operation through the BTL, also on words
 * of its own rank's and its host's (its test for the CPU's atomics reads the
 * BTL's atomic flag SUPPORTS_GLOB from btl_flags, where it is not), so the
 * target may be any rank, the process itself included.  A BTL whose atomics
 * serve such windows keeps a watch while its job spans hosts: the words a
 * compare-and-swap of its own locked that way (xbtl_lock_watch_taken), dropped
 * at the add that unlocks; a shared add (of exactly 1) to a word still held is
 * that deadlock (xbtl_lock_watch_add_ok false), and the BTL ends the job with
 * a message instead of hanging.  PEER is the endpoint the operation went to,
 * NULL for a word the BTL changes in place in its own memory.  The peer, the
 * values and the word must all match, so no other use of the atomics is
 * affected (a program's own compare-and-swap 0 -> 2^63 and add of 1 on the
 * same word of a window would be taken for it: legal MPI, and very unlikely;
 * jobs of one host, where osc takes its locks with the CPU's atomics, keep no
 * watch). */
#define XBTL_OSC_LOCK_EXCLUSIVE 0x8000000000000000ull
#define XBTL_LOCK_WATCH_MAX 16

typedef struct xbtl_lock_watch {
    const void *peer[XBTL_LOCK_WATCH_MAX];
    uint64_t addr[XBTL_LOCK_WATCH_MAX];
    unsigned n;
} xbtl_lock_watch_t;

/* Is this fetching compare-and-swap (OP, COMPARE, OPERAND, RESULT_BYTES) osc's exclusive take? */
static inline bool xbtl_lock_watch_takes(uint32_t op, uint64_t compare, uint64_t operand,
                                         uint32_t result_bytes)
{
    return op == XBTL_AMO_CSWAP && compare == 0 && operand == XBTL_OSC_LOCK_EXCLUSIVE
           && result_bytes == 8;
}

static inline int xbtl_lock_watch_find(const xbtl_lock_watch_t *w, const void *peer, uint64_t addr)
{
    for (unsigned i = 0; i < w->n; i++) {
        if (w->peer[i] == peer && w->addr[i] == addr) {
            return (int) i;
        }
    }
    return -1;
}

/* Such a compare-and-swap came back with OLD: held when it found the word free. */
static inline void xbtl_lock_watch_taken(xbtl_lock_watch_t *w, const void *peer, uint64_t addr,
                                         uint64_t old)
{
    if (old == 0 && w->n < XBTL_LOCK_WATCH_MAX && xbtl_lock_watch_find(w, peer, addr) < 0) {
        w->peer[w->n] = peer;
        w->addr[w->n++] = addr;
    }
}

/* Before an 8-byte integer add of OPERAND to PEER's word ADDR: false if it is the deadlock. */
static inline bool xbtl_lock_watch_add_ok(xbtl_lock_watch_t *w, const void *peer, uint64_t addr,
                                          uint64_t operand)
{
    int i = w->n > 0 ? xbtl_lock_watch_find(w, peer, addr) : -1;
    if (i < 0) {
        return true;
    }
    if (operand == XBTL_OSC_LOCK_EXCLUSIVE) {   /* the unlock (osc adds the bit back out) */
        w->peer[i] = w->peer[w->n - 1];
        w->addr[i] = w->addr[--w->n];
        return true;
    }
    return operand != 1;                /* osc's shared acquire adds 1 */
}

/* An atomic on a word in our own memory (osc's window of this very process, or
 * a word osc names by our mapping of it): applied in place, its old value to
 * RESULT, and osc's exclusive take of a lock recorded (PEER NULL) when
 * TAKES_LOCK (xbtl_lock_watch_takes, while the watch is on).  The caller holds
 * whatever guards the watch. */
static inline void xbtl_amo_in_place(xbtl_lock_watch_t *w, const xbtl_amo_req_t *req, void *result,
                                     uint32_t result_bytes, bool takes_lock)
{
    const uint64_t old = xbtl_amo_apply((void *) (uintptr_t) req->addr, req);
    xbtl_amo_store_old(result, result_bytes, old);
    if (takes_lock) {
        xbtl_lock_watch_taken(w, NULL, req->addr, old);
    }
}

#endif
