/*
 * The split single-copy get's request (btl_rsm_get.c), receiver -> sender, and
 * the sender's checks on it.  No MPI here: t_rsm_help feeds it forged requests.
 */
#ifndef RSM_HELP_H
#define RSM_HELP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define RSM_HELP_SLOTS 8

typedef struct rsm_help_req {       /* what crosses the wire */
    uint64_t src;                   /* sender's address: the second half's source */
    uint64_t dst;                   /* receiver's address: where it goes */
    uint64_t len;
    uint64_t gen;                   /* the split's generation, 1..2^56-1 */
    uint32_t slot;                  /* its line in the receiver's control segment */
    uint32_t pad;
} rsm_help_req_t;

/* Copy a peer-written request out (once) and check what can be checked without
 * our registrations: size, slot, generation, a non-empty range.  False: drop it. */
static inline bool rsm_help_req_read(const void *data, uint32_t len, rsm_help_req_t *req)
{
    if (len != sizeof(*req)) {
        return false;
    }
    memcpy(req, data, sizeof(*req));
    return req->slot < RSM_HELP_SLOTS && req->gen != 0 && req->gen >> 56 == 0 && req->len != 0;
}

/* Is [src, src + len) inside [base, base + size)?  Written so nothing overflows. */
static inline bool rsm_range_inside(uint64_t base, uint64_t size, uint64_t src, uint64_t len)
{
    return src >= base && len <= size && src - base <= size - len;
}

#endif
