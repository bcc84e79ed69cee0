/* Which answers to path migration's probes count: see pmeth_pathprobe.h. */
#include "pmeth_pathprobe.h"

#include <string.h>

#include "pmeth_window.h"       /* pmeth_seq_lt */

void pmeth_pathprobe_init(pmeth_pathprobe_t *b, uint32_t first_serial)
{
    memset(b, 0, sizeof(*b));
    b->last = first_serial - 1;
}

/* FIRST <= SERIAL <= the last probe sent, in serial arithmetic */
static bool sent_since(const pmeth_pathprobe_t *b, uint32_t first, uint32_t serial)
{
    return !pmeth_seq_lt(serial, first) && !pmeth_seq_lt(b->last, serial);
}

void pmeth_pathprobe_load_begin(pmeth_pathprobe_t *b)
{
    b->load_first = b->last + 1;
    b->load_open = true;
}

void pmeth_pathprobe_load_end(pmeth_pathprobe_t *b)
{
    b->load_open = false;
}

uint32_t pmeth_pathprobe_next(pmeth_pathprobe_t *b)
{
    return ++b->last;
}

void pmeth_pathprobe_health_sent(pmeth_pathprobe_t *b, unsigned p, uint32_t serial, uint64_t now)
{
    if (p >= PMETH_PATHPROBE_PATHS || pmeth_pathprobe_health_open(b, p)) {
        return;
    }
    b->health_out |= 1u << p;
    b->round_first[p] = serial;
    b->round_ns[p] = now;
}

void pmeth_pathprobe_health_failed(pmeth_pathprobe_t *b, unsigned p)
{
    if (p < PMETH_PATHPROBE_PATHS) {
        b->health_out &= ~(1u << p);
    }
}

bool pmeth_pathprobe_load_answer(pmeth_pathprobe_t *b, uint32_t serial)
{
    if (!b->load_open || !sent_since(b, b->load_first, serial)) {
        return false;
    }
    b->load_open = false;
    return true;
}

bool pmeth_pathprobe_health_answer(pmeth_pathprobe_t *b, unsigned p, uint32_t serial)
{
    if (!pmeth_pathprobe_health_open(b, p) || !sent_since(b, b->round_first[p], serial)) {
        return false;
    }
    b->health_out &= ~(1u << p);
    return true;
}
