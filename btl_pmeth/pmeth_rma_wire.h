/*
 * What pmeth's one-sided messages (btl_pmeth_rma.c) carry, and the checks of
 * them that need no registrations: PUT, GET and their answers PUT_DONE and
 * GET_DATA share one header; atomics use common/xbtl_amo.h.  Every message is
 * copied out of its frames once and checked here before anything in it is
 * used; the length a header states must be exactly what arrived.  No MPI:
 * t_pmeth_rma feeds these forged headers.
 */
#ifndef PMETH_RMA_WIRE_H
#define PMETH_RMA_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { PMETH_RMA_DONE = 0, PMETH_RMA_REFUSED = 1 };
#define PMETH_RMA_DONE_MAX 128      /* ids one PUT_DONE may list (1 KiB) */

typedef struct pmeth_rma_hdr {
    uint64_t addr;                  /* PUT, GET: in the target's address space */
    uint64_t id;                    /* the origin's, echoed (PUT_DONE: unused, the ids follow) */
    uint32_t len;                   /* PUT, GET_DATA: data bytes after the header; GET: bytes
                                     * asked; PUT_DONE: ids after the header */
    uint32_t status;                /* answers: PMETH_RMA_DONE or PMETH_RMA_REFUSED */
} pmeth_rma_hdr_t;

/* [ADDR, ADDR + LEN) inside [BASE, BASE + SIZE), without overflow */
static inline bool pmeth_rma_range_inside(uint64_t base, uint64_t size, uint64_t addr,
                                          uint64_t len)
{
    return addr >= base && len <= size && addr - base <= size - len;
}

/* A PUT of BYTES in all: its data is exactly what the header says. */
static inline bool pmeth_rma_put_ok(const pmeth_rma_hdr_t *h, size_t bytes)
{
    return bytes >= sizeof(*h) && bytes - sizeof(*h) == h->len;
}

/* A GET: the header alone, asking for at most LIMIT bytes. */
static inline bool pmeth_rma_get_ok(const pmeth_rma_hdr_t *h, size_t bytes, size_t limit)
{
    return bytes == sizeof(*h) && h->len <= limit;
}

/* An answer (PUT_DONE when PUT_DONE, else GET_DATA) of BYTES in all: a known
 * status; a PUT_DONE that says done lists 1-PMETH_RMA_DONE_MAX ids; a refusal
 * carries nothing; a GET's data is exactly what the header says. */
static inline bool pmeth_rma_answer_ok(const pmeth_rma_hdr_t *h, size_t bytes, bool put_done)
{
    if (bytes < sizeof(*h) || (h->status != PMETH_RMA_DONE && h->status != PMETH_RMA_REFUSED)) {
        return false;
    }
    const size_t extra = bytes - sizeof(*h);
    if (h->status == PMETH_RMA_REFUSED) {
        return extra == 0;
    }
    if (put_done) {
        return h->len >= 1 && h->len <= PMETH_RMA_DONE_MAX && extra == h->len * sizeof(uint64_t);
    }
    return extra == h->len;
}

#endif
