/*
 * One-sided atomics between the processes of one host (btl_rsm_rma.c): the
 * origin asks the target process, in an internal inline message, to apply an
 * atomic operation to its own memory with the CPU's atomic instructions, and
 * the target answers with the value it found there.  Because the target uses
 * the CPU's atomics, these operations mix safely with the ones Open MPI's osc
 * rdma does itself on the same words (MCA_BTL_ATOMIC_SUPPORTS_GLOB).
 *
 * What crosses the wire is a request (origin -> target) and a reply (target ->
 * origin).  A request is read once into private memory and checked before it
 * is used; whether its address lies in memory the target registered for
 * remote atomics is the caller's check (it needs the registrations).  No MPI
 * here: t_rsm_amo feeds the reader forged requests and checks every operation
 * against a plain computation.
 */
#ifndef RSM_AMO_H
#define RSM_AMO_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum rsm_amo_op {
    RSM_AMO_ADD = 1, RSM_AMO_AND, RSM_AMO_OR, RSM_AMO_XOR, RSM_AMO_LAND, RSM_AMO_LOR,
    RSM_AMO_LXOR, RSM_AMO_SWAP, RSM_AMO_MIN, RSM_AMO_MAX, RSM_AMO_CSWAP,
    RSM_AMO_OPS                     /* one past the last */
};
#define RSM_AMO_32BIT 0x1u          /* a 4-byte word (else 8) */
#define RSM_AMO_FLOAT 0x2u          /* float / double (ADD, MIN, MAX and the swaps only) */

typedef struct rsm_amo_req {        /* origin -> target */
    uint64_t addr;                  /* the word, in the target's address space */
    uint64_t operand;               /* CSWAP: the value to store */
    uint64_t compare;               /* CSWAP only */
    uint64_t id;                    /* the origin's, returned in the reply */
    uint32_t op, flags;
} rsm_amo_req_t;

enum { RSM_AMO_DONE = 0, RSM_AMO_REFUSED = 1 };
typedef struct rsm_amo_reply {      /* target -> origin */
    uint64_t id;
    uint64_t old;                   /* the word before the operation */
    uint32_t status;                /* RSM_AMO_DONE, or RSM_AMO_REFUSED: nothing was changed */
    uint32_t pad;
} rsm_amo_reply_t;

static inline unsigned rsm_amo_width(uint32_t flags)
{
    return (flags & RSM_AMO_32BIT) ? 4 : 8;
}

/* Copy a peer-written request out (once) and check what can be checked without
 * the registrations: size, operation, flags, alignment.  False: refuse it. */
static inline bool rsm_amo_req_read(const void *data, uint32_t len, rsm_amo_req_t *req)
{
    if (len != sizeof(*req)) {
        return false;
    }
    memcpy(req, data, sizeof(*req));
    if (req->op < RSM_AMO_ADD || req->op >= RSM_AMO_OPS
        || (req->flags & ~(RSM_AMO_32BIT | RSM_AMO_FLOAT)) != 0) {
        return false;
    }
    if ((req->flags & RSM_AMO_FLOAT) && req->op != RSM_AMO_ADD && req->op != RSM_AMO_MIN
        && req->op != RSM_AMO_MAX && req->op != RSM_AMO_SWAP && req->op != RSM_AMO_CSWAP) {
        return false;               /* no bitwise or logical operations on floating point */
    }
    return (req->addr & (rsm_amo_width(req->flags) - 1)) == 0 && req->addr != 0;
}

static inline bool rsm_amo_reply_read(const void *data, uint32_t len, rsm_amo_reply_t *rep)
{
    if (len != sizeof(*rep)) {
        return false;
    }
    memcpy(rep, data, sizeof(*rep));
    return rep->status == RSM_AMO_DONE || rep->status == RSM_AMO_REFUSED;
}

/* The new value of a word that held OLD (WIDTH bytes, in the low bits). */
static inline uint64_t rsm_amo_combine(uint32_t op, uint32_t flags, uint64_t old, uint64_t operand)
{
    const bool narrow = flags & RSM_AMO_32BIT;
    if (narrow) {                   /* a 4-byte operation sees 4 bytes of its operand */
        old = (uint32_t) old;
        operand = (uint32_t) operand;
    }
    if (flags & RSM_AMO_FLOAT) {
        if (op == RSM_AMO_SWAP) {
            return operand;
        }
        if (narrow) {
            float a, b, r;
            uint32_t ua = (uint32_t) old, ub = (uint32_t) operand, ur;
            memcpy(&a, &ua, 4);
            memcpy(&b, &ub, 4);
            r = op == RSM_AMO_ADD ? a + b : op == RSM_AMO_MIN ? (b < a ? b : a) : (b > a ? b : a);
            memcpy(&ur, &r, 4);
            return ur;
        }
        double a, b, r;
        uint64_t ur;
        memcpy(&a, &old, 8);
        memcpy(&b, &operand, 8);
        r = op == RSM_AMO_ADD ? a + b : op == RSM_AMO_MIN ? (b < a ? b : a) : (b > a ? b : a);
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
    case RSM_AMO_ADD: r = old + operand; break;
    case RSM_AMO_AND: r = old & operand; break;
    case RSM_AMO_OR: r = old | operand; break;
    case RSM_AMO_XOR: r = old ^ operand; break;
    case RSM_AMO_LAND: r = (old != 0 && operand != 0); break;
    case RSM_AMO_LOR: r = (old != 0 || operand != 0); break;
    case RSM_AMO_LXOR: r = ((old != 0) != (operand != 0)); break;
    case RSM_AMO_MIN: r = (uint64_t) (sb < sa ? sb : sa); break;
    case RSM_AMO_MAX: r = (uint64_t) (sb > sa ? sb : sa); break;
    default: r = operand; break;    /* SWAP */
    }
    return narrow ? (uint32_t) r : r;
}

/* Apply a checked request to the word at ADDR; returns the word's old value.
 * Every operation is one atomic read-modify-write of that word. */
static inline uint64_t rsm_amo_apply(void *addr, const rsm_amo_req_t *req)
{
    if (req->flags & RSM_AMO_32BIT) {
        uint32_t *w = addr, old = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (req->op == RSM_AMO_CSWAP) {
            old = (uint32_t) req->compare;
            __atomic_compare_exchange_n(w, &old, (uint32_t) req->operand, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST);
            return old;
        }
        uint32_t want;
        do {
            want = (uint32_t) rsm_amo_combine(req->op, req->flags, old, req->operand);
        } while (!__atomic_compare_exchange_n(w, &old, want, true, __ATOMIC_SEQ_CST,
                                              __ATOMIC_RELAXED));
        return old;
    }
    uint64_t *w = addr;
    if (!(req->flags & RSM_AMO_FLOAT)) {    /* the ones the CPU has as one instruction */
        switch (req->op) {
        case RSM_AMO_ADD: return __atomic_fetch_add(w, req->operand, __ATOMIC_SEQ_CST);
        case RSM_AMO_AND: return __atomic_fetch_and(w, req->operand, __ATOMIC_SEQ_CST);
        case RSM_AMO_OR: return __atomic_fetch_or(w, req->operand, __ATOMIC_SEQ_CST);
        case RSM_AMO_XOR: return __atomic_fetch_xor(w, req->operand, __ATOMIC_SEQ_CST);
        case RSM_AMO_SWAP: return __atomic_exchange_n(w, req->operand, __ATOMIC_SEQ_CST);
        default: break;
        }
    }
    uint64_t old = __atomic_load_n(w, __ATOMIC_RELAXED);
    if (req->op == RSM_AMO_CSWAP) {
        old = req->compare;
        __atomic_compare_exchange_n(w, &old, req->operand, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return old;
    }
    uint64_t want;
    do {
        want = rsm_amo_combine(req->op, req->flags, old, req->operand);
    } while (!__atomic_compare_exchange_n(w, &old, want, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
    return old;
}

#endif
