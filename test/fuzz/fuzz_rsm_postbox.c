/*
 * libFuzzer target: the postbox parser gets arbitrary peer-written postboxes.
 * Whatever it accepts is then read exactly as the BTL would read it (inline
 * bytes in place in the ring, pool runs in buffers of the layout's size), so
 * AddressSanitizer catches any range the parser let through that it should not
 * have.  The input is laid out as the ring of a 64-postbox queue, walked as the
 * receiver walks it (groups and pads move the head by several postboxes).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rsm_postbox.h"

static rsm_layout_t lay;
static uint8_t *pool[2];
static volatile uint32_t sink;

static void use(const rsm_assembler_t *a, const rsm_postbox_t *slot)
{
    uint32_t sum = 0;
    if (a->type == RSM_PB_INLINE) {
        const uint8_t *p = slot->u.data;
        for (uint32_t i = 0; i < a->total; i++) sum += p[i];
        if (a->pair) {          /* and its second half, as rsm_poll_second_half reads it */
            const rsm_half_t *half = rsm_pb_half((rsm_postbox_t *) slot);
            rsm_pb_hdr_t h = rsm_half_read_hdr(half);
            if (rsm_half_valid(h)) {
                for (uint32_t i = 0; i < h.nbytes; i++) sum += half->data[i];
            }
        }
    } else {
        for (uint32_t r = 0; r < a->nruns; r++) {
            const rsm_run_t *run = &a->runs[r];
            sum += pool[run->stripe][run->offset] + pool[run->stripe][run->offset + run->len - 1];
        }
    }
    sink += sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (pool[0] == NULL) {
        const char *why;
        if (rsm_layout_init(&lay, 4, 64, 2, 1 << 18, 2048, 4096, 512, 32768, &why) != 0) abort();
        for (int i = 0; i < 2; i++) pool[i] = malloc(lay.pool_bytes);
    }
    rsm_assembler_t a;
    memset(&a, 0, sizeof(a));
    /* the ring: exactly queue_len postboxes, so a read past its end is caught */
    size_t n = size / RSM_POSTBOX_SIZE;
    if (n > lay.queue_len) n = lay.queue_len;
    if (n == 0) return 0;
    rsm_postbox_t *ring = malloc(lay.queue_len * sizeof(*ring));
    memset(ring, 0, lay.queue_len * sizeof(*ring));
    memcpy(ring, data, n * RSM_POSTBOX_SIZE);
    uint32_t steps = 0;
    for (uint32_t head = 0; head < n && steps < 4 * lay.queue_len; steps++) {
        rsm_postbox_t snap;
        memcpy(&snap, &ring[head], sizeof(snap));
        rsm_pb_result_t r = rsm_assembler_feed(&a, &lay, &snap, head);
        if (r == RSM_PB_DONE) use(&a, &ring[head]);
        if (a.postboxes == 0 || a.postboxes > lay.queue_len - head) abort();
        head += a.postboxes;
    }
    free(ring);
    return 0;
}
