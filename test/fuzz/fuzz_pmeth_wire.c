/*
 * libFuzzer target: pmeth_wire_parse() gets whatever arrives on the wire.  The
 * input is copied into a buffer of exactly its size (so AddressSanitizer sees
 * any read past the frame), parsed under an expectation taken from its first
 * bytes, and every OK verdict is checked against what the parser promises:
 * the payload lies within the frame, the fields agree with the bytes, the
 * type-specific rules hold.  A broken promise aborts, which libFuzzer reports.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_require.h"
#include "pmeth_wire.h"

static volatile uint32_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* two control bytes choose the link limits; the rest is the frame */
    if (size < 2) {
        return 0;
    }
    static const uint32_t max_frames[4] = {1514, 9014, 256, 60};
    pmeth_wire_expect_t e = {.ethertype = PMETH_WIRE_ETHERTYPE, .job_key = 0x5eed1e55u,
                             .my_id = 41, .max_frame = max_frames[data[0] & 3],
                             .nlinks = (uint32_t) (data[1] % 10)};     /* 9 is invalid on purpose */
    size_t n = size - 2;
    uint8_t *frame = n ? malloc(n) : NULL;
    if (n) {
        memcpy(frame, data + 2, n);
        /* a fuzzer rarely guesses the 10 bytes the filter checks: often plant them */
        if ((data[0] & 4) && n >= 22) {
            frame[12] = 0x88;
            frame[13] = 0xB5;
            pmeth_put32(frame + 14, e.job_key);
            pmeth_put32(frame + 18, e.my_id);
            if (n > 26) {
                frame[26] = PMETH_WIRE_VERSION;
            }
        }
    }
    pmeth_wire_view_t v;
    pmeth_wire_verdict_t r = pmeth_wire_parse(frame, n, &e, &v);
    REQUIRE(r >= PMETH_WIRE_OK && r < PMETH_WIRE_NVERDICTS);
    REQUIRE(pmeth_wire_verdict_name(r) != NULL);
    if (r == PMETH_WIRE_OK) {
        REQUIRE(frame != NULL && n >= PMETH_WIRE_HDR_LEN && n <= e.max_frame);
        REQUIRE(v.payload == frame + PMETH_WIRE_HDR_LEN && v.len <= n - PMETH_WIRE_HDR_LEN);
        REQUIRE(v.frame_len == n && v.src_mac == frame + 6);
        REQUIRE(e.nlinks <= PMETH_WIRE_MAX_LINKS && v.link < e.nlinks);
        REQUIRE(v.type >= PMETH_WIRE_DATA && v.type <= PMETH_WIRE_TYPE_MAX);
        REQUIRE(v.dst_id == e.my_id && v.len == pmeth_get16(frame + 32));
        REQUIRE(frame[26] == PMETH_WIRE_VERSION && (frame[28] & ~PMETH_WIRE_F_ALL) == 0);
        /* a grant only where its flag says, only on DATA and ACK; MORE only on DATA */
        REQUIRE(v.has_credit == ((frame[28] & PMETH_WIRE_F_CREDIT) != 0) && v.credit == frame[35]
                && (v.has_credit || frame[35] == 0));
        REQUIRE(!v.has_credit || v.type == PMETH_WIRE_DATA || v.type == PMETH_WIRE_ACK);
        REQUIRE(v.more == ((frame[28] & PMETH_WIRE_F_MORE) != 0) && (!v.more || v.type == PMETH_WIRE_DATA));
        /* the echo is what the frame says, and nothing where the flag is off */
        REQUIRE(v.echo == ((frame[28] & PMETH_WIRE_F_ECHO) != 0));
        REQUIRE(v.current == ((frame[28] & PMETH_WIRE_F_CURRENT) != 0));
        REQUIRE(v.echo ? v.echo_seq == pmeth_get32(frame + 52) && v.echo_xmit == frame[34]
                       : pmeth_get32(frame + 52) == 0 && frame[34] == 0);
        /* a transmission number only on DATA */
        REQUIRE(v.xmit == frame[31] && (v.type == PMETH_WIRE_DATA || v.xmit == 0));
        REQUIRE(v.seq == pmeth_get32(frame + 36) && v.ack == pmeth_get32(frame + 40)
                && v.sack == pmeth_get64(frame + 44));
        REQUIRE(v.cont == ((frame[28] & PMETH_WIRE_F_CONT) != 0) && (!v.cont || v.type == PMETH_WIRE_DATA));
        if (v.type == PMETH_WIRE_DATA) {
            REQUIRE(v.len > 0);
            /* the buffer-array rule over the stream of DATA frames the fuzzer
             * makes (its state lives across inputs, as a peer's does across
             * frames): never more kept than ob1 takes in one descriptor */
            static pmeth_wire_array_t arr;
            static unsigned kept;
            switch (pmeth_wire_array_next(&arr, v.cont, v.tag)) {
            case PMETH_ARRAY_KEEP:
                kept++;
                REQUIRE(kept < PMETH_WIRE_ARRAY_MAX && arr.frames == kept);
                break;
            case PMETH_ARRAY_COMPLETE:
                REQUIRE(kept >= 1 && kept + 1 <= PMETH_WIRE_ARRAY_MAX && arr.frames == 0);
                kept = 0;
                break;
            case PMETH_ARRAY_SINGLE:
                REQUIRE(kept == 0 && !v.cont && !arr.discard);
                break;
            case PMETH_ARRAY_DROP_ALL:
            case PMETH_ARRAY_DROP:
                kept = 0;
                REQUIRE(arr.frames == 0 && arr.discard == v.cont);
                break;
            }
        }
        if (v.type == PMETH_WIRE_ACK) {
            REQUIRE(v.len == 0 && v.seq == 0 && v.tag == 0);
        }
        if (v.type == PMETH_WIRE_PROBE || v.type == PMETH_WIRE_PROBE_REPLY) {
            REQUIRE(!v.echo);
            REQUIRE(v.len >= PMETH_WIRE_PROBE_LEN && v.probe.from_link < e.nlinks
                    && v.probe.to_link < e.nlinks && v.probe.full <= 1);
        }
        /* read the whole payload as the BTL would copy it out */
        uint32_t sum = 0;
        for (uint32_t i = 0; i < v.len; i++) {
            sum += v.payload[i];
        }
        sink += sum + v.src_mac[5];
    }
    free(frame);
    return 0;
}
