/*
 * Shared by the ring layer's test program (pmeth_ringtest.c) and the raw-frame
 * floor (pmeth_floor.c): options, opening a ring, the test frame layout.
 *
 * Test frames use pmeth's fixed offsets, which the kernel filters on (BPF on
 * AF_PACKET, the XDP program on AF_XDP), and nothing else of the pmeth header:
 *   0 dst MAC | 6 src MAC | 12 EtherType (BE) | 14 job key (LE) | 18 dst id (LE)
 *   | 22 src id (LE) | 26 seq (LE) | 30 payload length (LE) | 34 payload
 */
#ifndef PMETH_RING_COMMON_H
#define PMETH_RING_COMMON_H

#define _GNU_SOURCE
#include "pmeth_ring.h"
#include "pmeth_wire.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TF_HDR 34u
#define TF_STOP 0xffffffffu

#define TF_MAX_LINKS 8

struct opts {
    const char *ifname;     /* the first of ifnames (mac, peer_mac likewise) */
    const char *ifnames[TF_MAX_LINKS];
    int nlinks;             /* --if a,b,c: several links (floor's blast and sink stripe) */
    uint8_t macs[TF_MAX_LINKS][6], peer_macs[TF_MAX_LINKS][6];
    int nmacs, npeer_macs;
    char iflist[256];
    enum pmeth_io_mode mode;
    uint16_t ethertype;
    uint32_t key, me;
    uint32_t peers[8];
    int npeers;
    uint8_t mac[6], peer_mac[6];
    uint32_t mtu;
    uint32_t tx_frames, rx_frames;
    bool bypass;
    uint32_t direct_max;    /* cfg.direct_max: lone frames past the ring (floor's ping-pong) */
    long count;             /* frames (ringtest) or iterations (floor) */
    uint32_t size;          /* frame size (floor) */
    double seconds;         /* stream duration (floor) */
    int window;
    int foreign_every;      /* ringtest: foreign frames after every Nth data frame */
    int hold_every;         /* ringtest: keep every Nth frame until its echo, then repost it */
    double timeout;
};

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/* payload byte I of frame SEQ from process SRC: differs per frame, offset and sender */
static inline uint8_t tf_byte(uint32_t src, uint32_t seq, uint32_t i)
{
    uint32_t x = (src * 0x9e3779b1u) ^ (seq * 0x85ebca6bu) ^ (i * 0xc2b2ae35u);
    x ^= x >> 15;
    return (uint8_t) (x ^ (x >> 8));
}

/* Build a test frame of LEN bytes (>= TF_HDR) in F. */
static inline void tf_build(uint8_t *f, uint32_t len, const uint8_t dst_mac[6],
                            const uint8_t src_mac[6], uint16_t ethertype, uint32_t key,
                            uint32_t dst, uint32_t src, uint32_t seq)
{
    memcpy(f, dst_mac, 6);
    memcpy(f + 6, src_mac, 6);
    f[12] = (uint8_t) (ethertype >> 8);
    f[13] = (uint8_t) ethertype;
    pmeth_put32(f + 14, key);
    pmeth_put32(f + 18, dst);
    pmeth_put32(f + 22, src);
    pmeth_put32(f + 26, seq);
    pmeth_put32(f + 30, len - TF_HDR);
    for (uint32_t i = 0; i < len - TF_HDR; i++) {
        f[TF_HDR + i] = tf_byte(src, seq, i);
    }
}

/* 0 when F (LEN bytes) is a well-formed test frame whose payload is right
 * (a NIC pads short frames to 60 bytes: the stated length may be shorter) */
static inline int tf_check(const uint8_t *f, uint32_t len)
{
    if (len < TF_HDR) {
        return -1;
    }
    uint32_t plen = pmeth_get32(f + 30);
    if (plen > len - TF_HDR || (plen != len - TF_HDR && len > 60)) {
        return -1;
    }
    uint32_t src = pmeth_get32(f + 22), seq = pmeth_get32(f + 26);
    for (uint32_t i = 0; i < plen; i++) {
        if (f[TF_HDR + i] != tf_byte(src, seq, i)) {
            return -1;
        }
    }
    return 0;
}

static inline int parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6) {
        return -1;
    }
    for (int i = 0; i < 6; i++) {
        mac[i] = (uint8_t) v[i];
    }
    return 0;
}

/* "aa:bb:..,cc:dd:.." into up to TF_MAX_LINKS addresses; their number, or -1 */
static inline int parse_macs(const char *s, uint8_t macs[][6])
{
    int n = 0;
    while (n < TF_MAX_LINKS) {
        if (parse_mac(s, macs[n]) != 0) {
            return -1;
        }
        n++;
        s = strchr(s, ',');
        if (s == NULL) {
            return n;
        }
        s++;
    }
    return -1;
}

static void usage_common(const char *prog)
{
    fprintf(stderr,
            "usage: %s ROLE --if NAME[,NAME..] --mac MAC[,MAC..] [--mode packet|xdp] [--key K]\n"
            "   [--me ID]"
            " [--peer ID]... [--peer-mac MAC[,MAC..]] [--mtu N] [--tx N] [--rx N] [--bypass]\n"
            "   [--count N] [--size N] [--seconds S] [--window N] [--foreign N] [--hold N]\n"
            "   [--timeout S] [--ethertype N] [--direct BYTES]\n", prog);
    exit(2);
}

static inline void parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"if", 1, 0, 'i'}, {"mode", 1, 0, 'M'}, {"key", 1, 0, 'k'}, {"me", 1, 0, 'm'},
        {"peer", 1, 0, 'p'}, {"mac", 1, 0, 'a'}, {"peer-mac", 1, 0, 'A'}, {"mtu", 1, 0, 'u'},
        {"tx", 1, 0, 't'}, {"rx", 1, 0, 'r'}, {"bypass", 0, 0, 'b'}, {"count", 1, 0, 'n'},
        {"size", 1, 0, 's'}, {"seconds", 1, 0, 'S'}, {"window", 1, 0, 'w'},
        {"foreign", 1, 0, 'f'}, {"hold", 1, 0, 'h'}, {"timeout", 1, 0, 'T'},
        {"ethertype", 1, 0, 'e'}, {"direct", 1, 0, 'D'}, {0, 0, 0, 0}};
    memset(o, 0, sizeof(*o));
    o->mode = PMETH_IO_PACKET;
    o->ethertype = 0x88b5;
    o->key = 0x5eed1234;
    o->me = 1;
    o->mtu = 1500;
    o->tx_frames = 256;
    o->rx_frames = 1024;
    o->count = 1000;
    o->size = 64;
    o->seconds = 1.0;
    o->window = 64;
    o->timeout = 30;
    o->direct_max = PMETH_RING_DIRECT_MAX_DEFAULT;     /* as the BTL sends */
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'i': {
            /* a comma-separated list: one ring per name */
            snprintf(o->iflist, sizeof(o->iflist), "%s", optarg);
            o->nlinks = 0;
            for (char *save = NULL, *t = strtok_r(o->iflist, ",", &save);
                 t != NULL && o->nlinks < TF_MAX_LINKS; t = strtok_r(NULL, ",", &save)) {
                o->ifnames[o->nlinks++] = t;
            }
            o->ifname = o->nlinks > 0 ? o->ifnames[0] : NULL;
            break;
        }
        case 'M':
            if (strcmp(optarg, "xdp") == 0) {
                o->mode = PMETH_IO_XDP;
            } else if (strcmp(optarg, "packet") != 0) {
                usage_common(argv[0]);
            }
            break;
        case 'k': o->key = (uint32_t) strtoul(optarg, NULL, 0); break;
        case 'm': o->me = (uint32_t) strtoul(optarg, NULL, 0); break;
        case 'p':
            if (o->npeers < 8) {
                o->peers[o->npeers++] = (uint32_t) strtoul(optarg, NULL, 0);
            }
            break;
        case 'a':
            if ((o->nmacs = parse_macs(optarg, o->macs)) < 0) usage_common(argv[0]);
            memcpy(o->mac, o->macs[0], 6);
            break;
        case 'A':
            if ((o->npeer_macs = parse_macs(optarg, o->peer_macs)) < 0) usage_common(argv[0]);
            memcpy(o->peer_mac, o->peer_macs[0], 6);
            break;
        case 'u': o->mtu = (uint32_t) strtoul(optarg, NULL, 0); break;
        case 't': o->tx_frames = (uint32_t) strtoul(optarg, NULL, 0); break;
        case 'r': o->rx_frames = (uint32_t) strtoul(optarg, NULL, 0); break;
        case 'b': o->bypass = true; break;
        case 'n': o->count = strtol(optarg, NULL, 0); break;
        case 's': o->size = (uint32_t) strtoul(optarg, NULL, 0); break;
        case 'S': o->seconds = strtod(optarg, NULL); break;
        case 'w': o->window = atoi(optarg); break;
        case 'f': o->foreign_every = atoi(optarg); break;
        case 'h': o->hold_every = atoi(optarg); break;
        case 'T': o->timeout = strtod(optarg, NULL); break;
        case 'e': o->ethertype = (uint16_t) strtoul(optarg, NULL, 0); break;
        case 'D': o->direct_max = (uint32_t) strtoul(optarg, NULL, 0); break;
        default: usage_common(argv[0]);
        }
    }
    if (o->ifname == NULL || optind != argc - 1) {
        usage_common(argv[0]);
    }
    if ((o->nmacs > 0 && o->nmacs != o->nlinks)
        || (o->npeer_macs > 0 && o->npeer_macs != o->nlinks)) {
        fprintf(stderr, "--mac and --peer-mac need one address per --if name\n");
        exit(2);
    }
}

/* the ring of link LINK (an index into ifnames) */
static inline struct pmeth_ring *open_link_ring_or_die(const struct opts *o, int link)
{
    struct pmeth_ring_config cfg = {
        .ifname = o->ifnames[link], .mode = o->mode, .ethertype = o->ethertype,
        .job_key = o->key, .my_id = o->me, .frame_size = o->mtu + 14,
        .tx_frames = o->tx_frames, .rx_frames = o->rx_frames, .qdisc_bypass = o->bypass,
        .direct_max = o->direct_max, .fd = -1};
    char err[256] = "";
    struct pmeth_ring *r;
    int rc = pmeth_ring_open(&cfg, &r, err, sizeof(err));
    if (rc != 0) {
        printf("open-failed rc=%d %s\n", rc, err);
        fflush(stdout);
        exit(3);
    }
    return r;
}

static inline struct pmeth_ring *open_ring_or_die(const struct opts *o)
{
    return open_link_ring_or_die(o, 0);
}

#endif
