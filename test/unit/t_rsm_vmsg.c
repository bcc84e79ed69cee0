/* The verbs back end's checks on what a peer sends (rsm_verbs.h): handshake
 * messages (length, magic, version, type, addressee, queue pair and packet
 * numbers, the remote region's length and wrap, the pool's tag and length) and the immediate that names a
 * queue's new tail (only forward, never past a whole queue), and the further
 * rails a REQ or REP offers (count, each one's address and queue pair); and
 * how a sender reads a GROWN while its pool grows (an answer to an earlier,
 * resent GROW is stale). */
#include <string.h>

#include "rsm_verbs.h"
#include "tap.h"

static rsm_vmsg_t good(void)
{
    rsm_vmsg_t m;
    memset(&m, 0, sizeof(m));
    m.magic = RSM_VMSG_MAGIC;
    m.version = RSM_VMSG_VERSION;
    m.type = RSM_VMSG_REQ;
    m.from = 0x100000001ull;
    m.to = 0x100000002ull;
    m.addr.mtu = 3;
    m.addr.global = 1;
    m.qpn = 0x11;
    m.psn = 0xabcdef;
    m.raddr = 0x7f0000001000ull;
    m.rkey = 5;
    m.rlen = 128;
    memcpy(m.pool_tag, "0123456789abcdef0123456789abcdef", RSM_VPOOL_TAG);
    m.pool_chunks = 1;
    m.rails = 1;
    return m;
}

/* a REQ or REP with a second rail */
static rsm_vmsg_t with_rail(rsm_vmsg_t m)
{
    m.rails = 2;
    m.rail[0].addr.mtu = 3;
    m.rail[0].addr.global = 1;
    m.rail[0].qpn = 0x12;
    m.rail[0].psn = 0x123456;
    return m;
}

static rsm_vmsg_t good_rep(void)
{
    rsm_vmsg_t m = good();
    m.type = RSM_VMSG_REP;
    memset(m.pool_tag, 0, sizeof(m.pool_tag));
    m.pool_raddr[0] = 0x7f0000100000ull;
    m.pool_rkey[0] = 6;
    m.pool_len = 4096;
    return m;
}

int main(void)
{
    const uint64_t me = 0x100000002ull;
    rsm_vmsg_t m = good();
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a well-formed REQ passes");
    CHECK(rsm_vmsg_check(&m, sizeof(m) + 40, me, 128, 4096) == NULL, "trailing bytes are ignored");
    CHECK(rsm_vmsg_check(&m, sizeof(m) - 1, me, 128, 4096) != NULL, "one byte short: refused");
    CHECK(rsm_vmsg_check(&m, 0, me, 128, 4096) != NULL, "empty: refused");
    CHECK(rsm_vmsg_check(&m, sizeof(m), me + 1, 128, 4096) != NULL, "addressed to another process");
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 129, 4096) != NULL, "a region shorter than needed");

    m = good(); m.magic ^= 1;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "bad magic");
    m = good(); m.version = RSM_VMSG_VERSION + 1;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "another version");
    m = good(); m.type = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "type 0");
    m = good(); m.type = 9;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "unknown type");
    m = good(); m.qpn = 0x1000000;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "queue pair number over 24 bits");
    m = good(); m.psn = 0x1000000;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "packet sequence number over 24 bits");
    m = good(); m.addr.mtu = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "MTU 0");
    m = good(); m.addr.mtu = 6;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "MTU past 4096");
    m = good(); m.addr.global = 2;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "addressing mode 2");
    m = good(); m.raddr = UINT64_MAX - 10;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a region that wraps the address space");
    m = good_rep();
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a well-formed REP passes");
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4097) != NULL, "a REP with a pool too short");
    m = good_rep(); m.pool_raddr[0] = UINT64_MAX - 100;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REP whose pool wraps");
    m = good_rep(); m.pool_chunks = 2; m.pool_raddr[1] = UINT64_MAX - 100;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REP whose second chunk wraps");
    m = good_rep(); m.pool_chunks = 4; m.pool_raddr[3] = 0x7f0000200000ull;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a REP of 4 chunks passes");
    m.type = RSM_VMSG_GROWN; m.asked = 4;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a GROWN of 4 chunks passes");
    m.asked = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a GROWN answering a GROW of 0 chunks");
    m.asked = 5;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a GROWN answering a GROW of 5 chunks");
    m.asked = 3;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL,
          "a GROWN with more mapped than its GROW asked for passes (a later GROW's chunk)");
    /* a pool growing from 2 to 3 chunks: the duplicate answer to the resent GROW
     * of the growth from 1 to 2 (asked 2, mapped 2) must not end the growth */
    CHECK(rsm_vgrown_verdict(2, 2, 3) == RSM_VGROWN_STALE,
          "growing to 3: a late second answer to the GROW for 2 is stale, not a failure");
    CHECK(rsm_vgrown_verdict(2, 3, 3) == RSM_VGROWN_STALE,
          "growing to 3: an answer to the GROW for 2 is stale even when it shows chunk 3");
    CHECK(rsm_vgrown_verdict(3, 2, 3) == RSM_VGROWN_SHORT,
          "growing to 3: the receiver answers the GROW for 3 with 2 mapped: it could not map");
    CHECK(rsm_vgrown_verdict(3, 3, 3) == RSM_VGROWN_MAPPED, "growing to 3: 3 mapped");
    CHECK(rsm_vgrown_verdict(4, 4, 3) == RSM_VGROWN_MAPPED, "growing to 3: more than 3 mapped");
    m = good_rep(); m.pool_chunks = 5;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REP of 5 chunks: refused");
    m = good(); m.pool_chunks = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REQ of 0 chunks: refused");
    m = good(); m.type = RSM_VMSG_GROW; m.pool_chunks = 3;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a well-formed GROW passes");
    m.pool_tag[7] = '.';
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a GROW whose pool tag has a '.'");
    m = good(); m.type = RSM_VMSG_GROWN + 1;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "type 6: refused");
    m = good(); m.pool_tag[5] = '/';
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REQ whose pool tag has a '/'");
    m = good(); m.pool_tag[31] = 'A';
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REQ whose pool tag has upper case");
    m = good(); m.pool_tag[0] = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REQ whose pool tag is short");
    m = good(); m.type = RSM_VMSG_REJ; m.rlen = 0; m.qpn = 0xffffffff;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a REJ carries no region");

    m = good(); m.rails = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REQ of 0 rails: refused");
    m = good(); m.rails = RSM_VRAILS_MAX + 1;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a REQ of 5 rails: refused");
    m = with_rail(good());
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a REQ with a second rail passes");
    m = with_rail(good_rep());
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a REP with a second rail passes");
    m = with_rail(good()); m.rail[0].qpn = 0x1000000;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a rail's queue pair number over 24 bits");
    m = with_rail(good()); m.rail[0].qpn = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a rail's queue pair number 0");
    m = with_rail(good_rep()); m.rail[0].psn = 0x1000000;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a rail's packet sequence number over 24 bits");
    m = with_rail(good()); m.rail[0].addr.mtu = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a rail's MTU 0");
    m = with_rail(good_rep()); m.rail[0].addr.global = 7;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a rail's addressing mode 7");
    m = with_rail(good()); m.rails = 3;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) != NULL, "a third rail left empty: refused");
    m = good(); m.type = RSM_VMSG_GROW; m.rails = 0;
    CHECK(rsm_vmsg_check(&m, sizeof(m), me, 128, 4096) == NULL, "a GROW carries no rails");

    /* immediates: head 10 (consumed through 9), published 12, queue of 16 */
    CHECK(rsm_vimm_valid(13, 10, 12, 16), "the next unit's tail");
    CHECK(rsm_vimm_valid(26, 10, 12, 16), "a tail a whole queue past head");
    CHECK(!rsm_vimm_valid(27, 10, 12, 16), "past a whole queue: refused");
    CHECK(!rsm_vimm_valid(12, 10, 12, 16), "no movement: refused");
    CHECK(!rsm_vimm_valid(11, 10, 12, 16), "backwards: refused");
    CHECK(rsm_vimm_valid(3, 0xfffffffeu, 0xffffffffu, 16), "across the 32-bit wrap");
    CHECK(!rsm_vimm_valid(0x80000000u, 10, 12, 16), "far away: refused");

    /* packed immediates (queues up to RSM_VIMM_PACKED_QLEN_MAX): tail | consumed << 16 */
    uint32_t c = 0;
    uint32_t imm = rsm_vimm_pack(0x12345678u, 0x0abc1234u);
    CHECK(rsm_vimm_tail(imm, 0x12345600u) == 0x12345678u, "packed: the tail from the last one");
    CHECK(rsm_vimm_tail(rsm_vimm_pack(0x00010003u, 0), 0x0000fffeu) == 0x00010003u,
          "packed: a tail across a 16-bit wrap");
    CHECK(rsm_vimm_tail(rsm_vimm_pack(2, 0), 0xfffffff0u) == 2, "packed: a tail across the 32-bit wrap");
    CHECK(rsm_vimm_consumed(imm, 0x0abc1200u, 0x0abc1240u, &c) && c == 0x0abc1234u,
          "packed: consumed, within what we sent");
    CHECK(rsm_vimm_consumed(rsm_vimm_pack(0, 0x00020001u), 0x0001fff0u, 0x00020010u, &c)
          && c == 0x00020001u, "packed: consumed across a 16-bit wrap");
    CHECK(rsm_vimm_consumed(rsm_vimm_pack(0, 5), 0xfffffff8u, 9, &c) && c == 5,
          "packed: consumed across the 32-bit wrap");
    CHECK(rsm_vimm_consumed(rsm_vimm_pack(0, 0x40), 0x40, 0x50, &c) && c == 0x40,
          "packed: nothing new consumed is accepted");
    CHECK(!rsm_vimm_consumed(rsm_vimm_pack(0, 0x51), 0x40, 0x50, &c),
          "packed: consumed past what we sent: refused");
    CHECK(!rsm_vimm_consumed(rsm_vimm_pack(0, 0x3f), 0x40, 0x50, &c),
          "packed: consumed going back: refused");
    CHECK(!rsm_vimm_consumed(rsm_vimm_pack(0, 0x8000), 0x40, 0x50, &c),
          "packed: consumed far away: refused");
    CHECK(!rsm_vimm_is_direct(rsm_vimm_pack(0xffffffffu, 0xffffu)),
          "packed: a tail never reads as a direct unit");
    CHECK(rsm_vimm_tail(rsm_vimm_pack(0x00008003u, 0), 0x00007ffeu) == 0x00008003u,
          "packed: a tail across a 15-bit wrap");

    /* direct units: a chunk and a block of it (blocks of 1 KiB here), beside the consumed half */
    unsigned chunk = 9;
    size_t off = 1;
    CHECK(rsm_vimm_direct_fits(0, 0, 1024) && rsm_vimm_direct_fits(3, 8192 * 1024 - 1024, 1024),
          "direct: the first and the last block of 4 chunks of 8 MiB fit");
    CHECK(!rsm_vimm_direct_fits(4, 0, 1024), "direct: a fifth chunk does not fit");
    CHECK(!rsm_vimm_direct_fits(0, 8192 * 1024, 1024), "direct: past 8,192 blocks does not fit");
    CHECK(!rsm_vimm_direct_fits(1, 4096 + 64, 1024), "direct: an offset off a block does not fit");
    CHECK(rsm_vimm_direct_fits(1, 4096 + 64, 64), "direct: with blocks of 64 bytes it does");
    imm = rsm_vimm_pack_direct(2, 54 * 1024, 1024, 0x0abc1234u);
    rsm_vimm_direct_at(imm, 1024, &chunk, &off);
    CHECK(rsm_vimm_is_direct(imm) && chunk == 2 && off == 54 * 1024,
          "direct: chunk and offset come back");
    CHECK(rsm_vimm_consumed(imm, 0x0abc1200u, 0x0abc1240u, &c) && c == 0x0abc1234u,
          "direct: the consumed half as in any unit");
    rsm_vimm_direct_at(0xffffffffu, 1024, &chunk, &off);
    CHECK(chunk == 3 && off == (size_t) (RSM_VIMM_DIRECT_UNITS - 1) * 1024,
          "direct: any immediate decodes within 4 chunks of 8,192 blocks (checked against the map)");
    return tap_done();
}
