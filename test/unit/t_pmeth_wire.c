/*
 * t_pmeth_wire: pmeth's wire format (pmeth_wire.h).  Frames built with the
 * builders must parse back field for field; forged frames must be dropped with
 * the verdict that names their fault; and the parser must never look past the
 * frame it is given (checked against a guard page, so a stray read faults).
 */
#define _DEFAULT_SOURCE 1       /* MAP_ANONYMOUS under -std=c11 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pmeth_wire.h"
#include "tap.h"

#define KEY 0x5eed1e55u
#define ME 41u
#define PEER 17u
#define MAXF 1514u                      /* MTU 1500 + 14 */
#define MAXLEN (MAXF - PMETH_WIRE_HDR_LEN)

static const uint8_t mac_me[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x01};
static const uint8_t mac_peer[6] = {0x02, 0x11, 0x22, 0x33, 0x44, 0x02};

static pmeth_wire_expect_t expect(uint32_t nlinks)
{
    return (pmeth_wire_expect_t){.ethertype = PMETH_WIRE_ETHERTYPE, .job_key = KEY, .my_id = ME,
                                 .max_frame = MAXF, .nlinks = nlinks};
}

static uint8_t buf[4096];

static uint8_t pattern(uint32_t i) { return (uint8_t) (i * 31u + 7u); }

/* A DATA frame from PEER to ME on link 2 with LEN payload bytes of pattern(). */
static size_t make_data(uint16_t len)
{
    memset(buf, 0xee, sizeof(buf));     /* bytes past the frame are garbage */
    pmeth_wire_build_data(buf, mac_me, mac_peer, PMETH_WIRE_ETHERTYPE, KEY, ME, PEER, 2, 0x41,
                          0xfffffffeu, 0x80000001u, 0xa5a5000000000001ull, len);
    for (uint32_t i = 0; i < len; i++) {
        buf[PMETH_WIRE_HDR_LEN + i] = pattern(i);
    }
    return PMETH_WIRE_HDR_LEN + len;
}

static size_t make_ack(void)
{
    memset(buf, 0xee, sizeof(buf));
    pmeth_wire_build_ack(buf, mac_me, mac_peer, PMETH_WIRE_ETHERTYPE, KEY, ME, PEER, 1, 123456789u,
                         0x8000000000000003ull);
    return PMETH_WIRE_HDR_LEN;
}

static const pmeth_wire_probe_t probe_sample = {.nonce = 0x0102030405060708ull, .from_link = 3,
                                                .to_link = 5, .full = 1, .mtu = 1500,
                                                .frame_len = MAXF};

static size_t make_probe(uint8_t type, uint32_t frame_len, const pmeth_wire_probe_t *p)
{
    memset(buf, 0xee, sizeof(buf));
    pmeth_wire_build_probe(buf, frame_len, mac_me, mac_peer, PMETH_WIRE_ETHERTYPE, KEY, ME, PEER,
                           type, p);
    return frame_len;
}

static pmeth_wire_verdict_t parse_n(size_t n, uint32_t nlinks, pmeth_wire_view_t *v)
{
    pmeth_wire_expect_t e = expect(nlinks);
    return pmeth_wire_parse(buf, n, &e, v);
}

static pmeth_wire_verdict_t parse(size_t n)
{
    pmeth_wire_view_t v;
    return parse_n(n, 8, &v);
}

/* Everything an OK verdict promises about the view, for frame F of N bytes. */
static bool view_sane(const uint8_t *f, size_t n, const pmeth_wire_expect_t *e,
                      const pmeth_wire_view_t *v)
{
    return n >= PMETH_WIRE_HDR_LEN && n <= e->max_frame && v->payload == f + PMETH_WIRE_HDR_LEN
           && v->len <= n - PMETH_WIRE_HDR_LEN && v->frame_len == n && v->src_mac == f + 6
           && v->link < e->nlinks && v->type >= 1 && v->type <= PMETH_WIRE_TYPE_MAX
           && v->dst_id == e->my_id;
}

static void test_round_trips(void)
{
    pmeth_wire_view_t v;
    pmeth_wire_expect_t e = expect(8);

    size_t n = make_data(300);
    memset(&v, 0x5a, sizeof(v));
    CHECK(pmeth_wire_parse(buf, n, &e, &v) == PMETH_WIRE_OK, "DATA of 300 bytes parses");
    CHECK(v.type == PMETH_WIRE_DATA && v.link == 2 && v.tag == 0x41 && v.src_id == PEER
              && v.dst_id == ME && v.seq == 0xfffffffeu && v.ack == 0x80000001u
              && v.sack == 0xa5a5000000000001ull && v.len == 300 && v.frame_len == n,
          "DATA: type, link, tag, ids, seq, ack, sack, len, frame_len round-trip");
    bool bytes_ok = v.payload == buf + PMETH_WIRE_HDR_LEN;
    for (uint32_t i = 0; bytes_ok && i < v.len; i++) {
        bytes_ok = v.payload[i] == pattern(i);
    }
    CHECK(bytes_ok, "DATA: the payload is read in place and all 300 bytes are the ones written");
    CHECK(memcmp(v.src_mac, mac_peer, 6) == 0 && memcmp(buf, mac_me, 6) == 0,
          "DATA: destination MAC first, the view's source MAC is the sender's");

    /* the layout the kernel filter and the peer rely on, byte for byte */
    CHECK(buf[12] == 0x88 && buf[13] == 0xB5, "EtherType at 12 in network order");
    CHECK(pmeth_get32(buf + PMETH_WIRE_OFF_KEY) == KEY && buf[14] == 0x55 && buf[17] == 0x5e,
          "job key at 14, little-endian");
    CHECK(pmeth_get32(buf + PMETH_WIRE_OFF_DST) == ME && pmeth_get32(buf + 22) == PEER,
          "destination id at 18, source id at 22");
    CHECK(buf[26] == PMETH_WIRE_VERSION && buf[27] == PMETH_WIRE_DATA && buf[28] == 0
              && buf[29] == 2 && buf[30] == 0x41 && buf[31] == 0,
          "version 26, type 27, flags 28, link 29, tag 30, reserved 31");
    CHECK(buf[32] == (300 & 0xff) && buf[33] == (300 >> 8) && buf[34] == 0 && buf[35] == 0
              && buf[36] == 0xfe && buf[39] == 0xff && buf[40] == 0x01 && buf[43] == 0x80
              && buf[44] == 0x01 && buf[51] == 0xa5 && pmeth_get32(buf + 52) == 0,
          "len 32, reserved 34, seq 36, ack 40, sack 44 (little-endian), reserved 52");

    n = make_data(MAXLEN);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.len == MAXLEN && v.payload[MAXLEN - 1] == pattern(MAXLEN - 1),
          "DATA filling the MTU (%u payload bytes) parses", MAXLEN);
    n = make_data(1);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.len == 1, "DATA of one byte parses");

    n = make_ack();
    memset(&v, 0x5a, sizeof(v));
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.type == PMETH_WIRE_ACK && v.link == 1
              && v.ack == 123456789u && v.sack == 0x8000000000000003ull && v.len == 0
              && v.seq == 0 && v.tag == 0 && v.src_id == PEER,
          "ACK round-trips its link, cumulative and selective acks, with no payload");

    pmeth_wire_probe_t small = probe_sample;
    small.full = 0;
    small.frame_len = PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN;
    n = make_probe(PMETH_WIRE_PROBE, PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, &small);
    memset(&v, 0x5a, sizeof(v));
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.type == PMETH_WIRE_PROBE
              && v.len == PMETH_WIRE_PROBE_LEN && v.link == 3 && v.probe.nonce == small.nonce
              && v.probe.from_link == 3 && v.probe.to_link == 5 && v.probe.full == 0
              && v.probe.mtu == 1500 && v.probe.frame_len == small.frame_len,
          "small PROBE round-trips nonce, links, full flag, MTU and frame length");

    n = make_probe(PMETH_WIRE_PROBE_REPLY, MAXF, &probe_sample);
    bool zeros = true;
    for (size_t i = PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN; i < MAXF; i++) {
        zeros = zeros && buf[i] == 0;
    }
    CHECK(zeros && buf[MAXF] == 0xee, "a full probe is padded with zeros up to its frame length, not past it");
    memset(&v, 0x5a, sizeof(v));
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.type == PMETH_WIRE_PROBE_REPLY
              && v.len == MAXLEN && v.frame_len == MAXF && v.probe.nonce == probe_sample.nonce
              && v.probe.from_link == 3 && v.probe.to_link == 5 && v.probe.full == 1
              && v.probe.mtu == 1500 && v.probe.frame_len == MAXF,
          "full-MTU PROBE_REPLY round-trips");
}

static void test_padding(void)
{
    pmeth_wire_view_t v;
    /* a frame may arrive longer than stated (padding: every pmeth frame is
     * past Ethernet's 60-byte minimum, but a NIC or a switch may add some) */
    make_data(1);
    CHECK(parse_n(PMETH_WIRE_HDR_LEN + 8, 8, &v) == PMETH_WIRE_OK && v.len == 1
              && v.frame_len == PMETH_WIRE_HDR_LEN + 8 && v.payload[0] == pattern(0),
          "DATA of 1 byte in a frame 7 bytes longer: OK, len stays 1");
    make_ack();
    CHECK(parse_n(PMETH_WIRE_HDR_LEN + 8, 8, &v) == PMETH_WIRE_OK && v.len == 0
              && v.type == PMETH_WIRE_ACK,
          "ACK in a frame 8 bytes longer: OK");
    make_data(100);
    CHECK(parse_n(MAXF, 8, &v) == PMETH_WIRE_OK && v.len == 100,
          "a frame padded up to max_frame still parses with its stated length");
    make_probe(PMETH_WIRE_PROBE, PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN, &probe_sample);
    CHECK(parse_n(PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN + 16, 8, &v) == PMETH_WIRE_OK
              && v.len == PMETH_WIRE_PROBE_LEN,
          "a padded probe parses");
}

static void test_sizes(void)
{
    pmeth_wire_view_t v;
    pmeth_wire_expect_t e = expect(8);
    make_data(100);
    CHECK(pmeth_wire_parse(NULL, 200, &e, &v) == PMETH_WIRE_TRUNCATED, "no frame: truncated");
    CHECK(parse(0) == PMETH_WIRE_TRUNCATED && parse(14) == PMETH_WIRE_TRUNCATED
              && parse(PMETH_WIRE_HDR_LEN - 1) == PMETH_WIRE_TRUNCATED,
          "0, 14 and 63 bytes (shorter than the header): truncated");
    CHECK(parse(PMETH_WIRE_HDR_LEN) == PMETH_WIRE_TRUNCATED
              && parse(PMETH_WIRE_HDR_LEN + 99) == PMETH_WIRE_TRUNCATED,
          "stated length 100 but only 0 or 99 payload bytes in the frame: truncated");
    CHECK(parse(PMETH_WIRE_HDR_LEN + 100) == PMETH_WIRE_OK, "exactly header + stated length: OK");
    CHECK(parse(MAXF + 1) == PMETH_WIRE_OVERSIZED && parse(4000) == PMETH_WIRE_OVERSIZED,
          "a frame longer than max_frame: oversized");
    make_data(MAXLEN);
    pmeth_put16(buf + 32, MAXLEN + 1);
    CHECK(parse(MAXF) == PMETH_WIRE_OVERSIZED, "stated length one past the MTU's payload: oversized");
    pmeth_put16(buf + 32, 0xffff);
    CHECK(parse(MAXF) == PMETH_WIRE_OVERSIZED && parse(200) == PMETH_WIRE_OVERSIZED,
          "stated length 65535: oversized whatever the frame's size");
    /* a smaller link limit applies to the frame and to the length */
    pmeth_wire_expect_t small = e;
    small.max_frame = 256;
    make_data(256 - PMETH_WIRE_HDR_LEN);
    CHECK(pmeth_wire_parse(buf, 256, &small, &v) == PMETH_WIRE_OK
              && pmeth_wire_parse(buf, 257, &small, &v) == PMETH_WIRE_OVERSIZED,
          "max_frame 256: 256 bytes pass, 257 do not");
    make_data(256 - PMETH_WIRE_HDR_LEN + 1);
    CHECK(pmeth_wire_parse(buf, 256, &small, &v) == PMETH_WIRE_OVERSIZED,
          "max_frame 256: a stated length of 193 (> 256 - 64) is oversized");
}

static void test_foreign(void)
{
    static const struct {
        int off;
        const char *what;
    } field[] = {{12, "EtherType high byte"}, {13, "EtherType low byte"}, {14, "job key byte 0"},
                 {15, "job key byte 1"},      {16, "job key byte 2"},     {17, "job key byte 3"},
                 {18, "destination byte 0"},  {19, "destination byte 1"}, {20, "destination byte 2"},
                 {21, "destination byte 3"}};
    for (unsigned i = 0; i < sizeof(field) / sizeof(field[0]); i++) {
        size_t n = make_data(64);
        buf[field[i].off] ^= 0x01;
        CHECK(parse(n) == PMETH_WIRE_FOREIGN, "another %s: foreign", field[i].what);
    }
    size_t n = make_data(64);
    buf[12] = 0x08;
    buf[13] = 0x00;
    CHECK(parse(n) == PMETH_WIRE_FOREIGN, "an IPv4 EtherType: foreign");
    for (uint8_t ver = 0; ver <= 3; ver++) {
        if (ver == PMETH_WIRE_VERSION) {
            continue;
        }
        n = make_data(64);
        buf[26] = ver;
        CHECK(parse(n) == PMETH_WIRE_FOREIGN, "version %u: foreign", ver);
    }
    /* the same frame is ours under another expectation */
    n = make_data(64);
    pmeth_wire_expect_t e = expect(8);
    e.ethertype = 0x88B6;
    pmeth_wire_view_t v;
    CHECK(pmeth_wire_parse(buf, n, &e, &v) == PMETH_WIRE_FOREIGN, "our frame under another configured EtherType: foreign");
    /* a source id or source MAC is not filtered on */
    n = make_data(64);
    buf[6] ^= 0xff;
    buf[22] ^= 0xff;
    CHECK(parse(n) == PMETH_WIRE_OK, "another source MAC and source id: still OK");
}

static void test_malformed(void)
{
    size_t n;
    pmeth_wire_view_t v;
    uint8_t types[] = {0, PMETH_WIRE_TYPE_MAX + 1, 100, 255};
    for (unsigned i = 0; i < sizeof(types); i++) {
        n = make_data(64);
        buf[27] = types[i];
        CHECK(parse(n) == PMETH_WIRE_MALFORMED, "type %u: malformed", types[i]);
    }
    bool all_flags = true;
    for (int bit = 6; bit < 8; bit++) {
        n = make_data(64);
        buf[28] = (uint8_t) (1u << bit);
        all_flags = all_flags && parse(n) == PMETH_WIRE_MALFORMED;
    }
    CHECK(all_flags, "any undefined flag bit set (each of bits 6-7): malformed");
    n = make_data(64);
    pmeth_wire_set_current(buf, true);
    pmeth_wire_view_t cv;
    bool cur_on = parse_n(n, 8, &cv) == PMETH_WIRE_OK && cv.current;
    pmeth_wire_set_current(buf, false);
    bool cur_off = parse_n(n, 8, &cv) == PMETH_WIRE_OK && !cv.current && buf[28] == 0;
    CHECK(cur_on && cur_off, "the CURRENT flag (bit 1) is parsed, set and cleared");
    int reserved[] = {35};
    for (unsigned i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
        n = make_data(64);
        buf[reserved[i]] = 0x10;
        CHECK(parse(n) == PMETH_WIRE_MALFORMED, "reserved byte %d nonzero: malformed", reserved[i]);
    }
    int echo_bytes[] = {34, 52, 53, 54, 55};
    bool echo_needs_flag = true;
    for (unsigned i = 0; i < sizeof(echo_bytes) / sizeof(echo_bytes[0]); i++) {
        n = make_data(64);
        buf[echo_bytes[i]] = 0x10;
        echo_needs_flag = echo_needs_flag && parse(n) == PMETH_WIRE_MALFORMED;
        buf[28] = PMETH_WIRE_F_ECHO;
        echo_needs_flag = echo_needs_flag && parse(n) == PMETH_WIRE_OK;
    }
    CHECK(echo_needs_flag, "echo bytes (34, 52-55) nonzero: malformed without the ECHO flag, OK with it");
    n = make_ack();
    buf[31] = 1;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "a transmission number on an ACK: malformed");
    n = make_data(64);                  /* sent on link 2 */
    CHECK(parse_n(n, 3, &v) == PMETH_WIRE_OK && parse_n(n, 2, &v) == PMETH_WIRE_MALFORMED
              && parse_n(n, 1, &v) == PMETH_WIRE_MALFORMED,
          "link 2: OK when the peer may use 3 links, malformed with 2 or 1");
    buf[29] = PMETH_WIRE_MAX_LINKS;
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_MALFORMED, "link %d with 8 links: malformed", PMETH_WIRE_MAX_LINKS);
    buf[29] = 255;
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_MALFORMED, "link 255: malformed");
    buf[29] = 0;
    CHECK(parse_n(n, 9, &v) == PMETH_WIRE_MALFORMED && parse_n(n, 0, &v) == PMETH_WIRE_MALFORMED,
          "an expectation of 9 or 0 links accepts nothing");

    n = make_data(0);
    CHECK(parse(n) == PMETH_WIRE_MALFORMED && parse(n + 8) == PMETH_WIRE_MALFORMED,
          "DATA with length 0 (padded or not): malformed");

    n = make_ack();
    pmeth_put16(buf + 32, 1);
    CHECK(parse(n + 1) == PMETH_WIRE_MALFORMED, "ACK with a 1-byte payload: malformed");
    pmeth_put16(buf + 32, 8);
    CHECK(parse(n + 8) == PMETH_WIRE_MALFORMED, "ACK with an 8-byte payload: malformed");
    n = make_ack();
    buf[30] = 9;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "ACK with a BTL tag: malformed");
    n = make_ack();
    pmeth_put32(buf + 36, 5);
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "ACK with a sequence number: malformed");

    /* probes: the payload is checked as well as the header */
    const size_t plen = PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN;
    for (int t = PMETH_WIRE_PROBE; t <= PMETH_WIRE_PROBE_REPLY; t++) {
        const char *name = t == PMETH_WIRE_PROBE ? "PROBE" : "PROBE_REPLY";
        pmeth_wire_probe_t p = probe_sample;
        p.from_link = 8;
        make_probe((uint8_t) t, plen, &p);
        buf[29] = 3;                    /* keep the header's link valid */
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s from link 8: malformed", name);
        p = probe_sample;
        make_probe((uint8_t) t, plen, &p);
        CHECK(parse_n(plen, 6, &v) == PMETH_WIRE_OK && parse_n(plen, 5, &v) == PMETH_WIRE_MALFORMED,
              "%s to link 5: OK with 6 links, malformed with 5", name);
        p.to_link = 200;
        make_probe((uint8_t) t, plen, &p);
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s to link 200: malformed", name);
        make_probe((uint8_t) t, plen, &probe_sample);
        buf[PMETH_WIRE_HDR_LEN + 10] = 2;
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s with full flag 2: malformed", name);
        make_probe((uint8_t) t, plen, &probe_sample);
        buf[PMETH_WIRE_HDR_LEN + 11] = 1;
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s with its reserved byte 11 set: malformed", name);
        make_probe((uint8_t) t, plen, &probe_sample);
        buf[PMETH_WIRE_HDR_LEN + 23] = 1;
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s with its reserved bytes 20-23 set: malformed", name);
        make_probe((uint8_t) t, plen, &probe_sample);
        pmeth_put16(buf + 32, PMETH_WIRE_PROBE_LEN - 1);
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s payload of 23 bytes (< 24): malformed", name);
        pmeth_put16(buf + 32, 0);
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s without payload: malformed", name);
        make_probe((uint8_t) t, plen, &probe_sample);
        pmeth_put32(buf + 40, 1);
        CHECK(parse(plen) == PMETH_WIRE_MALFORMED, "%s carrying an ack: malformed", name);
    }
}

static void test_set_ack(void)
{
    size_t n = make_data(200);
    uint8_t before[sizeof(buf)];
    memcpy(before, buf, sizeof(buf));
    pmeth_wire_set_ack(buf, 0x01020304u, 0x1112131415161718ull);
    bool only_ack = true;
    for (size_t i = 0; i < sizeof(buf); i++) {
        if ((i < 40 || i >= 52) && buf[i] != before[i]) {
            only_ack = false;
        }
    }
    CHECK(only_ack, "set_ack changes no byte outside 40..51");
    pmeth_wire_view_t v;
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.ack == 0x01020304u && v.sack == 0x1112131415161718ull
              && v.seq == 0xfffffffeu && v.tag == 0x41 && v.len == 200 && v.payload[199] == pattern(199),
          "after set_ack the frame parses with the new acks and its old seq, tag and payload");
}

static void test_echo_and_xmit(void)
{
    size_t n = make_data(100);
    pmeth_wire_view_t v;
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && !v.echo && v.xmit == 0,
          "a fresh DATA frame: first transmission, no echo");
    pmeth_wire_set_xmit(buf, 7);
    pmeth_wire_set_echo(buf, 0xfedcba98u, 200);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.echo && v.echo_seq == 0xfedcba98u
              && v.echo_xmit == 200 && v.xmit == 7 && v.seq == 0xfffffffeu && v.len == 100
              && v.payload[99] == pattern(99),
          "set_xmit and set_echo round-trip; seq and payload untouched");
    n = make_ack();
    pmeth_wire_set_echo(buf, 5, 1);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.echo && v.echo_seq == 5 && v.echo_xmit == 1,
          "an ACK carries an echo");
}

/* Grants (pmeth_credit.h): byte 35 under the CREDIT flag, on DATA and ACK
 * only; MORE on DATA only; a credit byte without its flag is malformed. */
static void test_credit(void)
{
    pmeth_wire_view_t v;
    size_t n = make_data(64);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && !v.has_credit && !v.more && v.credit == 0,
          "a DATA frame without a grant says so");
    pmeth_wire_set_credit(buf, 200);
    pmeth_wire_set_more(buf, true);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.has_credit && v.credit == 200 && v.more
              && v.seq == 0xfffffffeu && v.payload[63] == pattern(63),
          "set_credit and set_more round-trip on DATA; seq and payload untouched");
    pmeth_wire_set_more(buf, false);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && !v.more && v.has_credit, "MORE clears");
    n = make_ack();
    pmeth_wire_set_credit(buf, 255);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.has_credit && v.credit == 255,
          "an ACK carries a grant (255: no limit)");
    buf[28] |= PMETH_WIRE_F_MORE;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "MORE on an ACK is malformed");
    n = make_ack();
    buf[35] = 9;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "a credit byte without the CREDIT flag is malformed");
    n = make_probe(PMETH_WIRE_PROBE, 100, &probe_sample);
    pmeth_wire_set_credit(buf, 3);
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "a grant on a PROBE is malformed");
}

/* The stamp and the one-way delay (bytes 56-63, the DELAY flag). */
static void test_stamp_delay(void)
{
    pmeth_wire_view_t v;
    size_t n = make_data(64);
    pmeth_wire_set_stamp(buf, 0xfedcba98u);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.stamp == 0xfedcba98u && !v.has_delay
              && v.delay == 0 && v.payload[0] == pattern(0),
          "a stamp round-trips on DATA (any value, no flag needed); the payload stays at 64");
    pmeth_wire_set_delay(buf, 0x80000001u);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.has_delay && v.delay == 0x80000001u
              && v.stamp == 0xfedcba98u,
          "set_delay sets the DELAY flag and bytes 60-63");
    n = make_ack();
    pmeth_wire_set_stamp(buf, 7);
    pmeth_wire_set_delay(buf, 0);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.has_delay && v.delay == 0 && v.stamp == 7,
          "an ACK carries a stamp and a delay (0 is a delay like any other)");
    n = make_data(64);
    pmeth_wire_set_delay(buf, 0x12345678u);
    pmeth_wire_clear_delay(buf);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && !v.has_delay && v.delay == 0
              && v.payload[0] == pattern(0),
          "clear_delay: a frame sent again carries no delay (flag and bytes cleared, it parses)");
    pmeth_wire_clear_delay(buf);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && !v.has_delay, "clear_delay on no delay: still none");
    n = make_ack();
    buf[62] = 1;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "delay bytes without the DELAY flag: malformed");
    n = make_probe(PMETH_WIRE_PROBE, 100, &probe_sample);
    pmeth_wire_set_delay(buf, 5);
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "a delay on a PROBE: malformed");
    n = make_probe(PMETH_WIRE_PROBE, 100, &probe_sample);
    pmeth_wire_set_stamp(buf, 5);
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "a stamp on a PROBE: malformed");
    n = make_data(64);
    buf[26] = 1;
    CHECK(parse(n) == PMETH_WIRE_FOREIGN, "a version-1 frame (no bytes 56-63): foreign");
}

static void test_reserved_types(void)
{
    for (int t = PMETH_WIRE_PEEK; t <= PMETH_WIRE_PATH_DOWN; t++) {
        pmeth_wire_view_t v;
        size_t n = make_data(32);
        buf[27] = (uint8_t) t;
        CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.type == t && v.len == 32
                  && v.payload == buf + PMETH_WIRE_HDR_LEN,
              "type %d (reserved, or PATH_DOWN) parses OK with its payload", t);
    }
}

/* Every value of every header byte of a DATA frame: the verdict must be the
 * one the field's rule predicts, and an OK view must lie within the frame. */
static void test_every_header_byte(void)
{
    pmeth_wire_expect_t e = expect(4);
    const uint16_t len = 40;
    size_t n = make_data(len);
    buf[29] = 3;
    uint8_t orig[PMETH_WIRE_HDR_LEN];
    memcpy(orig, buf, sizeof(orig));
    unsigned wrong = 0, insane = 0, runs = 0;
    for (int off = 0; off < PMETH_WIRE_HDR_LEN; off++) {
        for (int val = 0; val < 256; val++) {
            memcpy(buf, orig, sizeof(orig));
            buf[off] = (uint8_t) val;
            pmeth_wire_verdict_t want;
            bool same = val == orig[off];
            if (same || off < 12 || (off >= 22 && off < 26) || off == 30 || off == 31
                || (off >= 36 && off < 52) || (off >= 56 && off < 60) || (off == 28 && (val & ~PMETH_WIRE_F_ALL) == 0 && !(val & PMETH_WIRE_F_ECHO && orig[34]))) {
                /* MACs, source id, tag, transmission, seq, ack, sack, stamp: any
                 * value; the ECHO or DELAY flag with an all-zero echo or delay, the
                 * CURRENT flag */
                want = PMETH_WIRE_OK;
            } else if (off < 22 || off == 26) {
                want = PMETH_WIRE_FOREIGN;
            } else if (off == 27) {
                want = (val == PMETH_WIRE_DATA || (val >= PMETH_WIRE_PEEK && val <= PMETH_WIRE_TYPE_MAX))
                           ? PMETH_WIRE_OK : PMETH_WIRE_MALFORMED;
            } else if (off == 29) {
                want = val < 4 ? PMETH_WIRE_OK : PMETH_WIRE_MALFORMED;
            } else if (off == 32 || off == 33) {
                uint32_t l = pmeth_get16(buf + 32);
                want = l > MAXLEN ? PMETH_WIRE_OVERSIZED
                       : PMETH_WIRE_HDR_LEN + l > n ? PMETH_WIRE_TRUNCATED
                       : l == 0 ? PMETH_WIRE_MALFORMED : PMETH_WIRE_OK;
            } else {
                want = PMETH_WIRE_MALFORMED;  /* other flags, reserved bytes, an echo without its flag */
            }
            pmeth_wire_view_t v;
            pmeth_wire_verdict_t got = pmeth_wire_parse(buf, n, &e, &v);
            runs++;
            if (got != want) {
                if (wrong++ < 5) {
                    printf("# byte %d = %d: %s, expected %s\n", off, val, pmeth_wire_verdict_name(got),
                           pmeth_wire_verdict_name(want));
                }
            }
            if (got == PMETH_WIRE_OK && !view_sane(buf, n, &e, &v)) {
                insane++;
            }
        }
    }
    CHECK(wrong == 0, "all %u single-byte header mutations give the predicted verdict (%u differ)", runs, wrong);
    CHECK(insane == 0, "every one accepted describes a payload inside the frame");
}

/* The parser reads nothing past frame_len: frames end exactly at a page the
 * process may not touch, cut at every length. */
static void test_guard_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *map = mmap(NULL, 2 * (size_t) pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED || mprotect(map + pg, (size_t) pg, PROT_NONE) != 0) {
        CHECK(0, "guard page set up");
        return;
    }
    uint8_t *end = map + pg;
    pmeth_wire_expect_t e = expect(8);
    unsigned ok = 0, parses = 0;
    for (int kind = 0; kind < 3; kind++) {
        size_t full = kind == 0 ? make_data(MAXLEN)
                      : kind == 1 ? make_ack()
                                  : make_probe(PMETH_WIRE_PROBE, PMETH_WIRE_HDR_LEN + PMETH_WIRE_PROBE_LEN,
                                               &probe_sample);
        for (size_t cut = 0; cut <= full; cut++) {
            memcpy(end - cut, buf, cut);
            pmeth_wire_view_t v;
            pmeth_wire_verdict_t r = pmeth_wire_parse(end - cut, cut, &e, &v);
            parses++;
            ok += r == PMETH_WIRE_OK;
            if (r == PMETH_WIRE_OK && !view_sane(end - cut, cut, &e, &v)) {
                ok += 1000000;
            }
        }
    }
    /* accepted: the full DATA frame only, ACKs from 64 bytes up (any padding), the full probe */
    CHECK(ok == 1 + 1 + 1, "%u frames cut at every length against a guard page: no fault, "
                           "only the complete ones accepted (%u)", parses, ok);
    munmap(map, 2 * (size_t) pg);
}

static void test_random_frames(void)
{
    uint64_t x = 0x9e3779b97f4a7c15ull;
    pmeth_wire_expect_t e = expect(8);
    unsigned accepted = 0, insane = 0;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        size_t n = (size_t) (x % 1600);
        int kind = (int) ((x >> 20) % 3);
        if (kind == 0) {
            make_data((uint16_t) ((x >> 24) % MAXLEN + 1));
        } else if (kind == 1) {
            make_ack();
        } else {
            make_probe(PMETH_WIRE_PROBE, MAXF, &probe_sample);
        }
        for (int k = 0; k < (int) ((x >> 40) % 4); k++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            buf[x % 80] = (uint8_t) (x >> 32);
        }
        pmeth_wire_view_t v;
        if (pmeth_wire_parse(buf, n, &e, &v) == PMETH_WIRE_OK) {
            accepted++;
            insane += !view_sane(buf, n, &e, &v);
        }
    }
    CHECK(insane == 0 && accepted > 0, "100000 random cut and mutated frames: %u accepted, all within their frame",
          accepted);
}

static void test_ethertype_owner(void)
{
    CHECK(pmeth_wire_ethertype_owner(PMETH_WIRE_ETHERTYPE) == NULL,
          "the default EtherType (0x88B5, local experimental) is free");
    CHECK(pmeth_wire_ethertype_owner(0x88B6) == NULL, "0x88B6 (local experimental 2) is free");
    CHECK(pmeth_wire_ethertype_owner(0x0800) != NULL
              && strcmp(pmeth_wire_ethertype_owner(0x0800), "IPv4") == 0,
          "0x0800 is IPv4's");
    CHECK(pmeth_wire_ethertype_owner(0x86DD) != NULL && pmeth_wire_ethertype_owner(0x0806) != NULL
              && pmeth_wire_ethertype_owner(0x8100) != NULL
              && pmeth_wire_ethertype_owner(0x8915) != NULL,
          "IPv6, ARP, VLAN tags and RoCE v1 are taken");
}

static void test_names(void)
{
    bool named = true;
    for (int i = 0; i < PMETH_WIRE_NVERDICTS; i++) {
        const char *s = pmeth_wire_verdict_name(i);
        named = named && s != NULL && strcmp(s, "unknown") != 0;
        for (int j = 0; j < i; j++) {
            named = named && strcmp(s, pmeth_wire_verdict_name(j)) != 0;
        }
    }
    CHECK(named, "every verdict has its own name");
    CHECK(strcmp(pmeth_wire_verdict_name(-1), "unknown") == 0
              && strcmp(pmeth_wire_verdict_name(PMETH_WIRE_NVERDICTS), "unknown") == 0,
          "out-of-range verdicts are 'unknown'");
}

/* The buffer array (seed 001): CONT on DATA says the fragment goes on in the
 * next frame; on any other type it is malformed. */
static void test_cont(void)
{
    pmeth_wire_view_t v;
    size_t n = make_data(64);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && !v.cont, "a DATA frame ends its fragment by default");
    pmeth_wire_set_cont(buf);
    CHECK(parse_n(n, 8, &v) == PMETH_WIRE_OK && v.cont && v.len == 64 && v.payload[63] == pattern(63)
              && v.seq == 0xfffffffeu,
          "set_cont round-trips on DATA; length, payload and seq untouched");
    n = make_ack();
    buf[28] |= PMETH_WIRE_F_CONT;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "CONT on an ACK is malformed");
    n = make_probe(PMETH_WIRE_PROBE, 100, &probe_sample);
    buf[28] |= PMETH_WIRE_F_CONT;
    CHECK(parse(n) == PMETH_WIRE_MALFORMED, "CONT on a PROBE is malformed");
}

/* The receiver's buffer-array rule, frame by frame (pmeth_wire_array_next). */
static void test_array_rule(void)
{
    pmeth_wire_array_t a = {0};
    CHECK(!pmeth_wire_array_holds(&a, false) && pmeth_wire_array_next(&a, false, 65) == PMETH_ARRAY_SINGLE,
          "a frame without CONT, no array open: delivered alone, nothing held");
    bool keeps = true;
    for (int i = 0; i < 15; i++) {
        keeps = keeps && pmeth_wire_array_holds(&a, true)
                && pmeth_wire_array_next(&a, true, 65) == PMETH_ARRAY_KEEP;
    }
    CHECK(keeps && a.frames == 15 && pmeth_wire_array_holds(&a, false)
              && pmeth_wire_array_next(&a, false, 65) == PMETH_ARRAY_COMPLETE && a.frames == 0,
          "15 CONT frames are kept, the 16th (no CONT) completes the array: ob1's 16 segments");
    CHECK(pmeth_wire_array_next(&a, false, 66) == PMETH_ARRAY_SINGLE,
          "after a complete array the next frame stands alone");
    for (int i = 0; i < 15; i++) {
        (void) pmeth_wire_array_next(&a, true, 65);
    }
    CHECK(pmeth_wire_array_next(&a, true, 65) == PMETH_ARRAY_DROP_ALL && a.discard,
          "a 16th CONT frame (a 17th would follow): the array is dropped whole");
    CHECK(pmeth_wire_array_holds(&a, false) && pmeth_wire_array_next(&a, true, 65) == PMETH_ARRAY_DROP
              && pmeth_wire_array_next(&a, false, 65) == PMETH_ARRAY_DROP && !a.discard,
          "its frames still to come are dropped, up to its last (no CONT)");
    CHECK(pmeth_wire_array_next(&a, false, 65) == PMETH_ARRAY_SINGLE,
          "then frames are delivered again");
    (void) pmeth_wire_array_next(&a, true, 65);
    CHECK(pmeth_wire_array_next(&a, false, 70) == PMETH_ARRAY_DROP_ALL && !a.discard && a.frames == 0,
          "an array whose last frame has another tag is dropped whole (nothing after it dropped)");
    (void) pmeth_wire_array_next(&a, true, 65);
    CHECK(pmeth_wire_array_next(&a, true, 70) == PMETH_ARRAY_DROP_ALL && a.discard,
          "tags changing mid-array: dropped, and the rest of it");
}

/* Path probes name themselves (serial under the endpoint's base), so answers
 * to probes given up are told from the answer to the probe out now. */
static void test_path_probe_serials(void)
{
    const uint64_t base = 0x1234abcd00ff00ffull, startup = base ^ 0xa9a9a9a9a9a9a9a9ull;
    uint32_t s = 0;
    CHECK(pmeth_path_probe_serial(pmeth_path_probe_nonce(base, 7), base, &s) && s == 7,
          "a path probe's serial comes back from its nonce");
    CHECK(pmeth_path_probe_serial(pmeth_path_probe_nonce(base, 0xffffffffu), base, &s)
              && s == 0xffffffffu, "serial 2^32-1 too");
    CHECK(pmeth_path_probe_nonce(base, 7) != pmeth_path_probe_nonce(base, 8),
          "two probes, two nonces: the answer to one is not the other's");
    CHECK(!pmeth_path_probe_serial(startup, base, &s)
              && !pmeth_path_probe_serial(startup ^ 0x5a5a000000000001ull, base, &s),
          "a start-up probe's nonce (and its small companions') is no path probe's");
    CHECK(!pmeth_path_probe_serial(base ^ (1ull << 32), base, &s),
          "a nonce off in the upper half is no path probe's");
}

int main(void)
{
    test_round_trips();
    test_padding();
    test_sizes();
    test_foreign();
    test_malformed();
    test_set_ack();
    test_echo_and_xmit();
    test_credit();
    test_cont();
    test_array_rule();
    test_stamp_delay();
    test_reserved_types();
    test_every_header_byte();
    test_guard_page();
    test_random_frames();
    test_names();
    test_ethertype_owner();
    test_path_probe_serials();
    return tap_done();
}
