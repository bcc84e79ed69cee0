/*
 * libFuzzer target: the pmeth helper's protocol (pmeth_helper_proto.h), whose
 * requests a root daemon takes from any local user and whose replies a job
 * takes from whoever listens at the helper's path.  The first input byte picks
 * the parser; the rest, copied into a buffer of exactly its size (so
 * AddressSanitizer sees any read past it), is the message.  Whatever is taken
 * must keep the parser's promises, and must encode back to the very bytes it
 * came from: the format has no slack a forged message could hide in.  A broken
 * promise aborts, which libFuzzer reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_require.h"
#include "pmeth_helper_proto.h"

static int pow2_in(uint16_t n)
{
    return n >= 8 && n <= PMETH_HELPER_XDP_FRAMES_MAX && (n & (n - 1)) == 0;
}

static void request(const uint8_t *msg, size_t n)
{
    struct pmeth_helper_request rq;
    if (pmeth_helper_parse_request(msg, n, &rq) != PMETH_HELPER_OK) {
        return;
    }
    REQUIRE(n == PMETH_HELPER_REQ_LEN);
    REQUIRE(pmeth_helper_ifname_ok(rq.ifname));
    REQUIRE(rq.ethertype >= 0x0600);
    REQUIRE(rq.op == PMETH_HELPER_OP_OPEN_PACKET || rq.op == PMETH_HELPER_OP_OPEN_XDP);
    if (rq.op == PMETH_HELPER_OP_OPEN_XDP) {
        int rx_only = (rq.xdp_flags & PMETH_HELPER_XDP_RECEIVE_ONLY) != 0;
        REQUIRE((rq.xdp_flags & ~(PMETH_HELPER_XDP_RECEIVE_ONLY | PMETH_HELPER_XDP_CHUNK_2K
                                  | PMETH_HELPER_XDP_IF_OFFERED)) == 0);
        REQUIRE(!(rx_only && (rq.xdp_flags & PMETH_HELPER_XDP_CHUNK_2K)));
        REQUIRE(pow2_in(rq.rx_frames));
        REQUIRE(rx_only ? rq.tx_frames == 0 : pow2_in(rq.tx_frames));
    } else {
        REQUIRE((rq.packet_flags & ~PMETH_HELPER_PACKET_SEND_SOCKET) == 0);
        REQUIRE(rq.xdp_flags == 0 && rq.rx_frames == 0 && rq.tx_frames == 0);
    }
    uint8_t again[PMETH_HELPER_REQ_LEN];
    pmeth_helper_encode_request(&rq, again);
    REQUIRE(memcmp(again, msg, PMETH_HELPER_REQ_LEN) == 0);
}

static void reply(const uint8_t *msg, size_t n)
{
    struct pmeth_helper_reply r;
    if (pmeth_helper_parse_reply(msg, n, &r) != PMETH_HELPER_OK) {
        REQUIRE(r.status != PMETH_HELPER_GRANTED);      /* a refused reply is never a grant */
        return;
    }
    REQUIRE(n >= PMETH_HELPER_REPLY_HDR_LEN && n <= PMETH_HELPER_REPLY_MAX);
    REQUIRE((unsigned) r.status < PMETH_HELPER_STATUS_COUNT);
    size_t len = strlen(r.text);
    REQUIRE(len == n - PMETH_HELPER_REPLY_HDR_LEN);
    for (size_t i = 0; i < len; i++) {
        REQUIRE(r.text[i] >= 0x20 && r.text[i] < 0x7f);
    }
    uint8_t again[PMETH_HELPER_REPLY_MAX];
    size_t m = pmeth_helper_encode_reply(r.status, r.flags, r.text, again);
    REQUIRE(m == n && memcmp(again, msg, n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    size_t n = size - 1;
    uint8_t *msg = malloc(n ? n : 1);
    memcpy(msg, data + 1, n);
    if (data[0] & 1) {
        reply(msg, n);
    } else {
        request(msg, n);
    }
    free(msg);
    return 0;
}
