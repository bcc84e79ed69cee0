/* One-sided atomics as the target applies them (xbtl_amo.h): every operation,
 * 8 and 4 bytes, integer and floating point, against a plain computation; the
 * reader refuses forged requests (size, operation, flags, alignment); the watch
 * for osc rdma 4.1.4's dynamic-window self-deadlock sees exactly that pattern. */
#include <stdint.h>
#include <string.h>

#include "xbtl_amo.h"
#include "tap.h"

static uint64_t run(uint64_t *word, uint32_t op, uint32_t flags, uint64_t operand, uint64_t compare)
{
    xbtl_amo_req_t req = {.addr = (uint64_t) (uintptr_t) word, .operand = operand,
                         .compare = compare, .id = 1, .op = op, .flags = flags};
    xbtl_amo_req_t got;
    if (!xbtl_amo_req_read(&req, sizeof(req), &got)) {
        return UINT64_MAX - 1;
    }
    return xbtl_amo_apply(word, &got);
}

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

int main(void)
{
    /* 8-byte integers: old value returned, new value as computed plainly */
    static const struct { uint32_t op; const char *name; } ops[] = {
        {XBTL_AMO_ADD, "add"}, {XBTL_AMO_AND, "and"}, {XBTL_AMO_OR, "or"}, {XBTL_AMO_XOR, "xor"},
        {XBTL_AMO_LAND, "land"}, {XBTL_AMO_LOR, "lor"}, {XBTL_AMO_LXOR, "lxor"},
        {XBTL_AMO_SWAP, "swap"}, {XBTL_AMO_MIN, "min"}, {XBTL_AMO_MAX, "max"}};
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (unsigned k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
        int bad64 = 0, bad32 = 0;
        for (int i = 0; i < 200; i++) {
            uint64_t a = tap_xorshift64(&seed), b = tap_xorshift64(&seed);
            if (i % 4 == 0) {
                a = 0;                          /* the logical ops' interesting case */
            } else if (i % 4 == 1) {
                b = (uint64_t) -(int64_t) (b >> 1);     /* negative operands for min / max */
            }
            int64_t sa = (int64_t) a, sb = (int64_t) b;
            uint64_t want;
            switch (ops[k].op) {
            case XBTL_AMO_ADD: want = a + b; break;
            case XBTL_AMO_AND: want = a & b; break;
            case XBTL_AMO_OR: want = a | b; break;
            case XBTL_AMO_XOR: want = a ^ b; break;
            case XBTL_AMO_LAND: want = a && b; break;
            case XBTL_AMO_LOR: want = a || b; break;
            case XBTL_AMO_LXOR: want = !a != !b; break;
            case XBTL_AMO_SWAP: want = b; break;
            case XBTL_AMO_MIN: want = (uint64_t) (sa < sb ? sa : sb); break;
            default: want = (uint64_t) (sa > sb ? sa : sb); break;
            }
            uint64_t w = a;
            bad64 += run(&w, ops[k].op, 0, b, 0) != a || w != want;

            uint32_t a32 = (uint32_t) a, b32 = (uint32_t) b, want32;
            int32_t s32a = (int32_t) a32, s32b = (int32_t) b32;
            switch (ops[k].op) {
            case XBTL_AMO_ADD: want32 = a32 + b32; break;
            case XBTL_AMO_AND: want32 = a32 & b32; break;
            case XBTL_AMO_OR: want32 = a32 | b32; break;
            case XBTL_AMO_XOR: want32 = a32 ^ b32; break;
            case XBTL_AMO_LAND: want32 = a32 && b32; break;
            case XBTL_AMO_LOR: want32 = a32 || b32; break;
            case XBTL_AMO_LXOR: want32 = !a32 != !b32; break;
            case XBTL_AMO_SWAP: want32 = b32; break;
            case XBTL_AMO_MIN: want32 = (uint32_t) (s32a < s32b ? s32a : s32b); break;
            default: want32 = (uint32_t) (s32a > s32b ? s32a : s32b); break;
            }
            /* the 4-byte word sits beside another that must not change */
            uint32_t pair[2] = {a32, 0xdeadbeefu};
            xbtl_amo_req_t req = {.addr = (uint64_t) (uintptr_t) &pair[0], .operand = b32,
                                 .op = ops[k].op, .flags = XBTL_AMO_32BIT}, got;
            bad32 += !xbtl_amo_req_read(&req, sizeof(req), &got)
                     || xbtl_amo_apply(&pair[0], &got) != a32 || pair[0] != want32
                     || pair[1] != 0xdeadbeefu;
        }
        CHECK(bad64 == 0, "%s, 8 bytes: 200 random pairs give the old value and the new one", ops[k].name);
        CHECK(bad32 == 0, "%s, 4 bytes: 200 random pairs, the neighbouring word untouched", ops[k].name);
    }

    uint64_t w = 7;
    CHECK(run(&w, XBTL_AMO_CSWAP, 0, 9, 7) == 7 && w == 9, "cswap that matches stores and returns the old value");
    CHECK(run(&w, XBTL_AMO_CSWAP, 0, 11, 7) == 9 && w == 9, "cswap that does not match leaves the word");
    uint32_t w32[2] = {5, 6};
    xbtl_amo_req_t cs = {.addr = (uint64_t) (uintptr_t) &w32[0], .operand = 8, .compare = 5,
                        .op = XBTL_AMO_CSWAP, .flags = XBTL_AMO_32BIT}, got;
    CHECK(xbtl_amo_req_read(&cs, sizeof(cs), &got) && xbtl_amo_apply(&w32[0], &got) == 5
          && w32[0] == 8 && w32[1] == 6, "cswap of 4 bytes");

    uint32_t land[2] = {5, 9};
    xbtl_amo_req_t lr = {.addr = (uint64_t) (uintptr_t) &land[0], .operand = 0xffffffff00000000ull,
                        .op = XBTL_AMO_LAND, .flags = XBTL_AMO_32BIT};
    CHECK(xbtl_amo_req_read(&lr, sizeof(lr), &got) && xbtl_amo_apply(&land[0], &got) == 5
          && land[0] == 0 && land[1] == 9,
          "4-byte logical and ignores the operand's upper 4 bytes (their value is 0 here)");

    uint64_t d = dbits(1.5);
    CHECK(run(&d, XBTL_AMO_ADD, XBTL_AMO_FLOAT, dbits(2.25), 0) == dbits(1.5) && d == dbits(3.75),
          "double add: 1.5 + 2.25 = 3.75");
    CHECK(run(&d, XBTL_AMO_MIN, XBTL_AMO_FLOAT, dbits(-1.0), 0) == dbits(3.75) && d == dbits(-1.0),
          "double min");
    CHECK(run(&d, XBTL_AMO_MAX, XBTL_AMO_FLOAT, dbits(-2.0), 0) == dbits(-1.0) && d == dbits(-1.0),
          "double max keeps the larger");
    uint32_t f[2] = {fbits(0.5f), 0x12345678u};
    xbtl_amo_req_t fa = {.addr = (uint64_t) (uintptr_t) &f[0], .operand = fbits(0.25f),
                        .op = XBTL_AMO_ADD, .flags = XBTL_AMO_32BIT | XBTL_AMO_FLOAT};
    CHECK(xbtl_amo_req_read(&fa, sizeof(fa), &got) && xbtl_amo_apply(&f[0], &got) == fbits(0.5f)
          && f[0] == fbits(0.75f) && f[1] == 0x12345678u, "float add of 4 bytes: 0.5 + 0.25");

    /* forged requests */
    uint64_t target = 0;
    xbtl_amo_req_t good = {.addr = (uint64_t) (uintptr_t) &target, .operand = 1, .id = 42,
                          .op = XBTL_AMO_ADD}, r;
    CHECK(xbtl_amo_req_read(&good, sizeof(good), &r) && r.id == 42, "a well-formed request is read whole");
    CHECK(!xbtl_amo_req_read(&good, sizeof(good) - 1, &r), "short message refused");
    CHECK(!xbtl_amo_req_read(&good, sizeof(good) + 8, &r), "long message refused");
    xbtl_amo_req_t bad = good;
    bad.op = 0;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "operation 0 refused");
    bad.op = XBTL_AMO_OPS;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "operation past the last refused");
    bad = good;
    bad.flags = 0x4;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "an unknown flag refused");
    bad = good;
    bad.addr += 4;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "8-byte word at a 4-byte boundary refused");
    bad.flags = XBTL_AMO_32BIT;
    CHECK(xbtl_amo_req_read(&bad, sizeof(bad), &r), "... accepted as a 4-byte word");
    bad.addr += 2;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "4-byte word at a 2-byte boundary refused");
    bad = good;
    bad.addr = 0;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "address 0 refused");
    bad = good;
    bad.op = XBTL_AMO_XOR;
    bad.flags = XBTL_AMO_FLOAT;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "bitwise operation on a double refused");
    bad.op = XBTL_AMO_LAND;
    CHECK(!xbtl_amo_req_read(&bad, sizeof(bad), &r), "logical operation on a double refused");

    xbtl_amo_reply_t rep = {.id = 3, .old = 4, .status = XBTL_AMO_DONE}, rr;
    CHECK(xbtl_amo_reply_read(&rep, sizeof(rep), &rr) && rr.id == 3 && rr.old == 4, "a reply is read whole");
    CHECK(!xbtl_amo_reply_read(&rep, sizeof(rep) - 4, &rr), "short reply refused");
    rep.status = 7;
    CHECK(!xbtl_amo_reply_read(&rep, sizeof(rep), &rr), "reply with an unknown status refused");
    /* the lock watch: osc's exclusive take, then its shared add on the same word */
    xbtl_lock_watch_t watch = {0};
    int peer_a, peer_b;
    const uint64_t word = 0x1000, other = 0x2000;
    CHECK(xbtl_lock_watch_takes(XBTL_AMO_CSWAP, 0, XBTL_OSC_LOCK_EXCLUSIVE, 8),
          "a fetching 8-byte compare-and-swap 0 -> 2^63 is osc's exclusive take");
    CHECK(!xbtl_lock_watch_takes(XBTL_AMO_CSWAP, 1, XBTL_OSC_LOCK_EXCLUSIVE, 8)
              && !xbtl_lock_watch_takes(XBTL_AMO_CSWAP, 0, 1, 8)
              && !xbtl_lock_watch_takes(XBTL_AMO_CSWAP, 0, XBTL_OSC_LOCK_EXCLUSIVE, 4)
              && !xbtl_lock_watch_takes(XBTL_AMO_ADD, 0, XBTL_OSC_LOCK_EXCLUSIVE, 8),
          "... another compare, value, width or operation is not");
    xbtl_lock_watch_taken(&watch, &peer_a, word, 5);
    CHECK(watch.n == 0 && xbtl_lock_watch_add_ok(&watch, &peer_a, word, 1),
          "a take that found the word held holds nothing: a shared add after it is fine");
    xbtl_lock_watch_taken(&watch, &peer_a, word, 0);
    xbtl_lock_watch_taken(&watch, &peer_a, word, 0);
    CHECK(watch.n == 1, "a take that found the word free is held once");
    CHECK(xbtl_lock_watch_add_ok(&watch, &peer_b, word, 1)
              && xbtl_lock_watch_add_ok(&watch, &peer_a, other, 1),
          "a shared add to another peer's word, or another word, is fine");
    CHECK(xbtl_lock_watch_add_ok(&watch, &peer_a, word, 2),
          "an add of another value to the held word is fine (not osc's shared acquire)");
    CHECK(!xbtl_lock_watch_add_ok(&watch, &peer_a, word, 1),
          "a shared add of 1 to the word it holds is the deadlock");
    CHECK(xbtl_lock_watch_add_ok(&watch, &peer_a, word, XBTL_OSC_LOCK_EXCLUSIVE) && watch.n == 0,
          "the add that unlocks drops the word");
    CHECK(xbtl_lock_watch_add_ok(&watch, &peer_a, word, 1), "... after which a shared add is fine");
    /* a word of our own memory, changed in place (no peer): osc's take of its own lock */
    uint64_t own_lock = 0, old_value = 7;
    xbtl_amo_req_t take = {.addr = (uint64_t) (uintptr_t) &own_lock, .op = XBTL_AMO_CSWAP,
                           .compare = 0, .operand = XBTL_OSC_LOCK_EXCLUSIVE};
    xbtl_amo_in_place(&watch, &take, &old_value, 8, true);
    CHECK(old_value == 0 && own_lock == XBTL_OSC_LOCK_EXCLUSIVE && watch.n == 1
              && !xbtl_lock_watch_add_ok(&watch, NULL, take.addr, 1),
          "in place: the take sets the word, returns the old 0, is held under no peer; a shared "
          "add of 1 to it is the deadlock");
    CHECK(xbtl_lock_watch_add_ok(&watch, &peer_a, take.addr, 1),
          "... the same address of a peer's memory is another word");
    xbtl_amo_req_t unlock = {.addr = take.addr, .op = XBTL_AMO_ADD,
                             .operand = XBTL_OSC_LOCK_EXCLUSIVE};
    CHECK(xbtl_lock_watch_add_ok(&watch, NULL, take.addr, XBTL_OSC_LOCK_EXCLUSIVE) && watch.n == 0,
          "in place: the add that unlocks drops it");
    xbtl_amo_in_place(&watch, &unlock, &old_value, 8, false);
    xbtl_amo_in_place(&watch, &take, &old_value, 8, false);
    CHECK(own_lock == XBTL_OSC_LOCK_EXCLUSIVE && old_value == 0 && watch.n == 0,
          "in place with the watch off (a job of one host): applied, nothing held");
    for (int i = 0; i < XBTL_LOCK_WATCH_MAX + 4; i++) {
        xbtl_lock_watch_taken(&watch, &peer_b, 8 * (uint64_t) (i + 1), 0);
    }
    CHECK(watch.n == XBTL_LOCK_WATCH_MAX, "the watch holds at most %d words", XBTL_LOCK_WATCH_MAX);
    return tap_done();
}
