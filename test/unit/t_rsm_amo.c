/* One-sided atomics as the target applies them (rsm_amo.h): every operation,
 * 8 and 4 bytes, integer and floating point, against a plain computation; the
 * reader refuses forged requests (size, operation, flags, alignment). */
#include <stdint.h>
#include <string.h>

#include "rsm_amo.h"
#include "tap.h"

static uint64_t run(uint64_t *word, uint32_t op, uint32_t flags, uint64_t operand, uint64_t compare)
{
    rsm_amo_req_t req = {.addr = (uint64_t) (uintptr_t) word, .operand = operand,
                         .compare = compare, .id = 1, .op = op, .flags = flags};
    rsm_amo_req_t got;
    if (!rsm_amo_req_read(&req, sizeof(req), &got)) {
        return UINT64_MAX - 1;
    }
    return rsm_amo_apply(word, &got);
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
        {RSM_AMO_ADD, "add"}, {RSM_AMO_AND, "and"}, {RSM_AMO_OR, "or"}, {RSM_AMO_XOR, "xor"},
        {RSM_AMO_LAND, "land"}, {RSM_AMO_LOR, "lor"}, {RSM_AMO_LXOR, "lxor"},
        {RSM_AMO_SWAP, "swap"}, {RSM_AMO_MIN, "min"}, {RSM_AMO_MAX, "max"}};
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
            case RSM_AMO_ADD: want = a + b; break;
            case RSM_AMO_AND: want = a & b; break;
            case RSM_AMO_OR: want = a | b; break;
            case RSM_AMO_XOR: want = a ^ b; break;
            case RSM_AMO_LAND: want = a && b; break;
            case RSM_AMO_LOR: want = a || b; break;
            case RSM_AMO_LXOR: want = !a != !b; break;
            case RSM_AMO_SWAP: want = b; break;
            case RSM_AMO_MIN: want = (uint64_t) (sa < sb ? sa : sb); break;
            default: want = (uint64_t) (sa > sb ? sa : sb); break;
            }
            uint64_t w = a;
            bad64 += run(&w, ops[k].op, 0, b, 0) != a || w != want;

            uint32_t a32 = (uint32_t) a, b32 = (uint32_t) b, want32;
            int32_t s32a = (int32_t) a32, s32b = (int32_t) b32;
            switch (ops[k].op) {
            case RSM_AMO_ADD: want32 = a32 + b32; break;
            case RSM_AMO_AND: want32 = a32 & b32; break;
            case RSM_AMO_OR: want32 = a32 | b32; break;
            case RSM_AMO_XOR: want32 = a32 ^ b32; break;
            case RSM_AMO_LAND: want32 = a32 && b32; break;
            case RSM_AMO_LOR: want32 = a32 || b32; break;
            case RSM_AMO_LXOR: want32 = !a32 != !b32; break;
            case RSM_AMO_SWAP: want32 = b32; break;
            case RSM_AMO_MIN: want32 = (uint32_t) (s32a < s32b ? s32a : s32b); break;
            default: want32 = (uint32_t) (s32a > s32b ? s32a : s32b); break;
            }
            /* the 4-byte word sits beside another that must not change */
            uint32_t pair[2] = {a32, 0xdeadbeefu};
            rsm_amo_req_t req = {.addr = (uint64_t) (uintptr_t) &pair[0], .operand = b32,
                                 .op = ops[k].op, .flags = RSM_AMO_32BIT}, got;
            bad32 += !rsm_amo_req_read(&req, sizeof(req), &got)
                     || rsm_amo_apply(&pair[0], &got) != a32 || pair[0] != want32
                     || pair[1] != 0xdeadbeefu;
        }
        CHECK(bad64 == 0, "%s, 8 bytes: 200 random pairs give the old value and the new one", ops[k].name);
        CHECK(bad32 == 0, "%s, 4 bytes: 200 random pairs, the neighbouring word untouched", ops[k].name);
    }

    uint64_t w = 7;
    CHECK(run(&w, RSM_AMO_CSWAP, 0, 9, 7) == 7 && w == 9, "cswap that matches stores and returns the old value");
    CHECK(run(&w, RSM_AMO_CSWAP, 0, 11, 7) == 9 && w == 9, "cswap that does not match leaves the word");
    uint32_t w32[2] = {5, 6};
    rsm_amo_req_t cs = {.addr = (uint64_t) (uintptr_t) &w32[0], .operand = 8, .compare = 5,
                        .op = RSM_AMO_CSWAP, .flags = RSM_AMO_32BIT}, got;
    CHECK(rsm_amo_req_read(&cs, sizeof(cs), &got) && rsm_amo_apply(&w32[0], &got) == 5
          && w32[0] == 8 && w32[1] == 6, "cswap of 4 bytes");

    uint32_t land[2] = {5, 9};
    rsm_amo_req_t lr = {.addr = (uint64_t) (uintptr_t) &land[0], .operand = 0xffffffff00000000ull,
                        .op = RSM_AMO_LAND, .flags = RSM_AMO_32BIT};
    CHECK(rsm_amo_req_read(&lr, sizeof(lr), &got) && rsm_amo_apply(&land[0], &got) == 5
          && land[0] == 0 && land[1] == 9,
          "4-byte logical and ignores the operand's upper 4 bytes (their value is 0 here)");

    uint64_t d = dbits(1.5);
    CHECK(run(&d, RSM_AMO_ADD, RSM_AMO_FLOAT, dbits(2.25), 0) == dbits(1.5) && d == dbits(3.75),
          "double add: 1.5 + 2.25 = 3.75");
    CHECK(run(&d, RSM_AMO_MIN, RSM_AMO_FLOAT, dbits(-1.0), 0) == dbits(3.75) && d == dbits(-1.0),
          "double min");
    CHECK(run(&d, RSM_AMO_MAX, RSM_AMO_FLOAT, dbits(-2.0), 0) == dbits(-1.0) && d == dbits(-1.0),
          "double max keeps the larger");
    uint32_t f[2] = {fbits(0.5f), 0x12345678u};
    rsm_amo_req_t fa = {.addr = (uint64_t) (uintptr_t) &f[0], .operand = fbits(0.25f),
                        .op = RSM_AMO_ADD, .flags = RSM_AMO_32BIT | RSM_AMO_FLOAT};
    CHECK(rsm_amo_req_read(&fa, sizeof(fa), &got) && rsm_amo_apply(&f[0], &got) == fbits(0.5f)
          && f[0] == fbits(0.75f) && f[1] == 0x12345678u, "float add of 4 bytes: 0.5 + 0.25");

    /* forged requests */
    uint64_t target = 0;
    rsm_amo_req_t good = {.addr = (uint64_t) (uintptr_t) &target, .operand = 1, .id = 42,
                          .op = RSM_AMO_ADD}, r;
    CHECK(rsm_amo_req_read(&good, sizeof(good), &r) && r.id == 42, "a well-formed request is read whole");
    CHECK(!rsm_amo_req_read(&good, sizeof(good) - 1, &r), "short message refused");
    CHECK(!rsm_amo_req_read(&good, sizeof(good) + 8, &r), "long message refused");
    rsm_amo_req_t bad = good;
    bad.op = 0;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "operation 0 refused");
    bad.op = RSM_AMO_OPS;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "operation past the last refused");
    bad = good;
    bad.flags = 0x4;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "an unknown flag refused");
    bad = good;
    bad.addr += 4;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "8-byte word at a 4-byte boundary refused");
    bad.flags = RSM_AMO_32BIT;
    CHECK(rsm_amo_req_read(&bad, sizeof(bad), &r), "... accepted as a 4-byte word");
    bad.addr += 2;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "4-byte word at a 2-byte boundary refused");
    bad = good;
    bad.addr = 0;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "address 0 refused");
    bad = good;
    bad.op = RSM_AMO_XOR;
    bad.flags = RSM_AMO_FLOAT;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "bitwise operation on a double refused");
    bad.op = RSM_AMO_LAND;
    CHECK(!rsm_amo_req_read(&bad, sizeof(bad), &r), "logical operation on a double refused");

    rsm_amo_reply_t rep = {.id = 3, .old = 4, .status = RSM_AMO_DONE}, rr;
    CHECK(rsm_amo_reply_read(&rep, sizeof(rep), &rr) && rr.id == 3 && rr.old == 4, "a reply is read whole");
    CHECK(!rsm_amo_reply_read(&rep, sizeof(rep) - 4, &rr), "short reply refused");
    rep.status = 7;
    CHECK(!rsm_amo_reply_read(&rep, sizeof(rep), &rr), "reply with an unknown status refused");
    return tap_done();
}
