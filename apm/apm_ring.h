/*
 * A single-producer, single-consumer ring of apm requests: how the main
 * thread hands work to apm's thread without a lock.  The producer owns head,
 * the consumer tail; each publishes its index with a release store and reads
 * the other's with an acquire load, so a slot is read only after it was
 * written and rewritten only after it was read.  Indices run free (32-bit,
 * wrapping); the size is a power of two.
 */
#ifndef APM_RING_H
#define APM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "apm_thread.h"

typedef struct apm_ring {
    _Alignas(64) _Atomic uint32_t head;     /* the next slot the producer fills */
    _Alignas(64) _Atomic uint32_t tail;     /* the next slot the consumer takes */
    _Alignas(64) uint32_t mask;
    apm_request_t *slot;
} apm_ring_t;

/* SIZE: a power of two, 2 .. 2^20. */
static inline bool apm_ring_init(apm_ring_t *r, uint32_t size)
{
    if (size < 2 || size > (1u << 20) || (size & (size - 1)) != 0) {
        return false;
    }
    r->slot = calloc(size, sizeof(*r->slot));
    if (r->slot == NULL) {
        return false;
    }
    r->mask = size - 1;
    atomic_init(&r->head, 0);
    atomic_init(&r->tail, 0);
    return true;
}

static inline void apm_ring_fini(apm_ring_t *r)
{
    free(r->slot);
    r->slot = NULL;
}

/* Producer only.  False when full. */
static inline bool apm_ring_push(apm_ring_t *r, const apm_request_t *req)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail > r->mask) {
        return false;
    }
    r->slot[head & r->mask] = *req;
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return true;
}

/* Consumer only: the oldest request, left in place until apm_ring_pop(). */
static inline bool apm_ring_peek(apm_ring_t *r, apm_request_t *out)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    if (tail == head) {
        return false;
    }
    *out = r->slot[tail & r->mask];
    return true;
}

static inline void apm_ring_pop(apm_ring_t *r)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
}

/* Either side: requests pushed and not yet popped (a snapshot). */
static inline uint32_t apm_ring_count(apm_ring_t *r)
{
    return atomic_load_explicit(&r->head, memory_order_acquire)
           - atomic_load_explicit(&r->tail, memory_order_acquire);
}

#endif
