/*
 * Copy into the pool with non-temporal (streaming) stores.
 *
 * Why: a pool block written with ordinary stores sits dirty in the sender's
 * cache until the receiver reads it, and where the two cores share no cache
 * (another CCD or socket) every line then crosses as a cache-to-cache transfer.
 * On the test machine that halved or thirded the two-copy pipeline (a thread
 * pair copying through a shared ring: 2.8-5.4 GB/s) whenever the host placed the
 * vCPUs apart; streaming the copy-in to memory gave 9-11 GB/s either way.  Used
 * for large fragments only (btl_rsm_nt_min): a small message is read while still
 * in cache, which is faster where the cores share one.
 */
#ifndef RSM_COPY_H
#define RSM_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

/* DST and SRC may have any alignment; the streaming part starts at DST's first
 * 64-byte boundary (the pool skews payloads so SRC is then aligned alike).  Ends
 * with a store fence: streaming stores are weakly ordered, and the caller's
 * release barrier must order them before the pointer postbox. */
static inline void rsm_copy_stream(void *dst, const void *src, size_t len)
{
    char *d = dst;
    const char *s = src;
    size_t head = (64 - ((uintptr_t) d & 63)) & 63;
    if (len < head + 64) {
        memcpy(d, s, len);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, len -= head;
    for (; len >= 64; d += 64, s += 64, len -= 64) {
        __m128i a = _mm_loadu_si128((const __m128i *) s), b = _mm_loadu_si128((const __m128i *) (s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *) (s + 32)), e = _mm_loadu_si128((const __m128i *) (s + 48));
        _mm_stream_si128((__m128i *) d, a);
        _mm_stream_si128((__m128i *) (d + 16), b);
        _mm_stream_si128((__m128i *) (d + 32), c);
        _mm_stream_si128((__m128i *) (d + 48), e);
    }
    memcpy(d, s, len);
    _mm_sfence();
}
#else
static inline void rsm_copy_stream(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}
#endif

#endif
