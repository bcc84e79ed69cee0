/* pmeth's wire format: builders and the parser, with forged frames for every drop cause. */
#include <stdlib.h>
#include <string.h>

#include "pmeth_wire.h"
#include "tap.h"

static const uint8_t A[6] = {2, 0x58, 0x56, 0, 0, 1}, B[6] = {2, 0x58, 0x56, 0, 0, 2};
static const pmeth_wire_expect_t E = {.ethertype = PMETH_WIRE_ETHERTYPE, .job_key = 0xabcd1234,
                                      .my_id = 7, .max_frame = 1514, .nlinks = 8};
static uint8_t f[2048];

static size_t data_frame(uint16_t len)
{
    memset(f, 0, sizeof(f));
    pmeth_wire_build_data(f, B, A, PMETH_WIRE_ETHERTYPE, E.job_key, 7, 3, 1, 65, 1000, 77,
                          0x5ull, len);
    for (uint16_t i = 0; i < len; i++) {
        f[PMETH_WIRE_HDR_LEN + i] = (uint8_t) (i * 7 + 1);
    }
    return PMETH_WIRE_HDR_LEN + len;
}

static int parse(size_t n, pmeth_wire_view_t *v)
{
    return pmeth_wire_parse(f, n, &E, v);
}

int main(void)
{
    pmeth_wire_view_t v;
    size_t n = data_frame(100);
    CHECK(parse(n, &v) == PMETH_WIRE_OK, "a DATA frame parses");
    CHECK(v.type == PMETH_WIRE_DATA && v.tag == 65 && v.link == 1 && v.src_id == 3 && v.dst_id == 7
              && v.seq == 1000 && v.ack == 77 && v.sack == 5 && v.len == 100,
          "every DATA field round-trips");
    CHECK(v.payload == f + PMETH_WIRE_HDR_LEN && v.payload[99] == (uint8_t) (99 * 7 + 1)
              && memcmp(v.src_mac, A, 6) == 0,
          "the payload is read in place, the source MAC is the sender's");
    CHECK(PMETH_WIRE_HDR_LEN % 8 == 0, "the payload starts 8-byte aligned in the frame");
    CHECK(f[12] == 0x88 && f[13] == 0xB5 && f[14] == 0x34 && f[18] == 7,
          "EtherType in network order, key and destination little-endian at 14 and 18");

    /* Ethernet pads short frames: a longer frame than stated is fine */
    n = data_frame(1);
    CHECK(parse(60, &v) == PMETH_WIRE_OK && v.len == 1, "a padded 60-byte frame parses with its own length");

    /* truncation */
    n = data_frame(100);
    CHECK(parse(PMETH_WIRE_HDR_LEN - 1, &v) == PMETH_WIRE_TRUNCATED, "shorter than the header: truncated");
    CHECK(parse(n - 1, &v) == PMETH_WIRE_TRUNCATED, "shorter than header + stated length: truncated");
    CHECK(pmeth_wire_parse(NULL, 100, &E, &v) == PMETH_WIRE_TRUNCATED, "no frame at all: truncated");
    pmeth_put16(f + 32, 60000);
    CHECK(parse(n, &v) == PMETH_WIRE_OVERSIZED, "a stated length over the link's maximum: oversized");
    n = data_frame(100);
    CHECK(parse(1515, &v) == PMETH_WIRE_OVERSIZED, "a frame over MTU + 14: oversized");

    /* foreign */
    struct { int off; uint8_t val; const char *what; } foreign[] = {
        {12, 0x08, "another EtherType"}, {14, 0x35, "another job key"},
        {18, 8, "another destination"}, {26, 2, "another version"}};
    for (unsigned i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++) {
        n = data_frame(100);
        f[foreign[i].off] = foreign[i].val;
        CHECK(parse(n, &v) == PMETH_WIRE_FOREIGN, "%s: foreign", foreign[i].what);
    }

    /* malformed */
    struct { int off; uint8_t val; const char *what; } bad[] = {
        {27, 0, "type 0"}, {27, PMETH_WIRE_TYPE_MAX + 1, "type past the last"}, {28, 1, "a flag set"},
        {29, 8, "a link index past the last"}, {31, 1, "reserved byte 31"}, {34, 1, "reserved bytes 34-35"},
        {52, 1, "reserved bytes 52-55"}};
    for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        n = data_frame(100);
        f[bad[i].off] = bad[i].val;
        CHECK(parse(n, &v) == PMETH_WIRE_MALFORMED, "%s: malformed", bad[i].what);
    }
    n = data_frame(0);
    CHECK(parse(n, &v) == PMETH_WIRE_MALFORMED, "DATA without payload: malformed");

    /* ACK */
    memset(f, 0, sizeof(f));
    pmeth_wire_build_ack(f, B, A, PMETH_WIRE_ETHERTYPE, E.job_key, 7, 3, 0, 4242, 0x8000000000000001ull);
    CHECK(parse(PMETH_WIRE_HDR_LEN, &v) == PMETH_WIRE_OK && v.type == PMETH_WIRE_ACK && v.ack == 4242
              && v.sack == 0x8000000000000001ull,
          "an ACK parses with its cumulative and selective acks");
    pmeth_put16(f + 32, 4);
    CHECK(parse(PMETH_WIRE_HDR_LEN + 4, &v) == PMETH_WIRE_MALFORMED, "an ACK with payload: malformed");

    /* set_ack rewrites exactly the ack fields */
    n = data_frame(64);
    uint8_t before[2048];
    memcpy(before, f, n);
    pmeth_wire_set_ack(f, 99, 0x77);
    CHECK(parse(n, &v) == PMETH_WIRE_OK && v.ack == 99 && v.sack == 0x77
              && memcmp(before, f, 40) == 0 && memcmp(before + 52, f + 52, n - 52) == 0,
          "set_ack changes the acks and nothing else");

    /* probes */
    pmeth_wire_probe_t p = {.nonce = 0x1122334455667788ull, .from_link = 2, .to_link = 3, .full = 1,
                            .mtu = 1500, .frame_len = 1514};
    memset(f, 0, sizeof(f));
    pmeth_wire_build_probe(f, 1514, B, A, PMETH_WIRE_ETHERTYPE, E.job_key, 7, 3, PMETH_WIRE_PROBE, &p);
    CHECK(parse(1514, &v) == PMETH_WIRE_OK && v.type == PMETH_WIRE_PROBE && v.probe.nonce == p.nonce
              && v.probe.from_link == 2 && v.probe.to_link == 3 && v.probe.full == 1
              && v.probe.mtu == 1500 && v.probe.frame_len == 1514,
          "a full-MTU PROBE round-trips");
    memset(f, 0, sizeof(f));
    pmeth_wire_build_probe(f, PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, B, A, PMETH_WIRE_ETHERTYPE,
                           E.job_key, 7, 3, PMETH_WIRE_PROBE_REPLY, &p);
    CHECK(parse(PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, &v) == PMETH_WIRE_OK
              && v.type == PMETH_WIRE_PROBE_REPLY,
          "a small PROBE_REPLY round-trips");
    f[PMETH_WIRE_HDR_LEN + 9] = 8;
    CHECK(parse(PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, &v) == PMETH_WIRE_MALFORMED,
          "a probe naming a link past the last: malformed");
    f[PMETH_WIRE_HDR_LEN + 9] = 3;
    f[PMETH_WIRE_HDR_LEN + 10] = 2;
    CHECK(parse(PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, &v) == PMETH_WIRE_MALFORMED,
          "a probe with a bad full flag: malformed");
    pmeth_put16(f + 32, PMETH_WIRE_PROBE_LEN - 1);
    CHECK(parse(PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, &v) == PMETH_WIRE_MALFORMED,
          "a probe payload too short: malformed");

    /* reserved types: well-formed, left to later protocol steps */
    n = data_frame(8);
    f[27] = PMETH_WIRE_GRANT;
    f[30] = 0;
    CHECK(parse(n, &v) == PMETH_WIRE_OK && v.type == PMETH_WIRE_GRANT, "a reserved type parses (ignored by the BTL)");

    /* random garbage never crashes and an OK verdict always lies within the frame */
    srand(1);
    unsigned ok_inside = 1;
    for (int i = 0; i < 200000; i++) {
        size_t len = (size_t) (rand() % 1600);
        data_frame((uint16_t) (rand() % 1400 + 1));
        for (int k = 0; k < 4; k++) {
            f[rand() % 64] = (uint8_t) rand();
        }
        if (pmeth_wire_parse(f, len, &E, &v) == PMETH_WIRE_OK) {
            ok_inside &= v.payload + v.len <= f + len && len <= E.max_frame;
        }
    }
    CHECK(ok_inside, "200000 mutated frames: every accepted one has its payload inside the frame");
    CHECK(strcmp(pmeth_wire_verdict_name(PMETH_WIRE_TRUNCATED), "truncated") == 0
              && strcmp(pmeth_wire_verdict_name(99), "unknown") == 0,
          "verdicts have names for the statistics");
    return tap_done();
}
