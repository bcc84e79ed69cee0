/*
 * libFuzzer target: the postbox parser gets arbitrary peer-written postboxes.
 * Whatever it accepts is then read exactly as the BTL would read it (inline
 * bytes, pool runs in buffers of the layout's size), so AddressSanitizer
 * catches any range the parser let through that it should not have.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rsm_postbox.h"

static rsm_layout_t lay;
static uint8_t *pool[2];
static uint8_t staging[512 + RSM_PB_DATA];
static volatile uint32_t sink;

static void use(const rsm_assembler_t *a)
{
    uint32_t sum = 0;
    if (a->type == RSM_PB_INLINE) {
        const uint8_t *p = a->single != NULL ? a->single : a->staging;
        for (uint32_t i = 0; i < a->total; i++) sum += p[i];
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
    a.staging = staging;
    a.staging_cap = sizeof(staging);
    for (size_t off = 0; off + RSM_POSTBOX_SIZE <= size; off += RSM_POSTBOX_SIZE) {
        rsm_postbox_t snap;
        memcpy(&snap, data + off, sizeof(snap));
        if (rsm_assembler_feed(&a, &lay, &snap) == RSM_PB_DONE) use(&a);
    }
    return 0;
}
