/*
 * The ring layer's test program (test/pmeth/t-pmeth-ring.sh runs it in network
 * namespaces).  No MPI, no pmeth protocol: frames of varying length through
 * the ring API (pmeth_ring.h), every byte verified.
 *
 *   server  receives frames addressed to --me, checks each byte, and answers
 *           each with an echo of its own length and contents; stops at the
 *           client's STOP frame.  Counts frames that should never have reached
 *           it (another EtherType, key or destination id): the kernel-side
 *           filter must keep them out.
 *   client  sends --count frames round robin to the --peer ids (lengths from
 *           34 bytes to a full MTU), at most --window unanswered, checks every
 *           echo.  --hold N keeps every Nth frame until its echo came back and
 *           then sends it again (a retransmit: the ring may have moved it
 *           aside meanwhile, which must not change a byte).  --foreign N sends,
 *           after every Nth frame, three foreign frames through a plain raw
 *           socket: another EtherType, another job key, an unknown id.
 *   reserve client to one --peer: takes and sends data frames, keeping each
 *           (as unacknowledged data is kept), until the ring refuses data for
 *           good; then takes control frames (tx_get_ctl) the same way until
 *           those are refused too: exactly the control reserve must be left to
 *           them (pmeth_ring_ctl_reserve), and once one is given back a control
 *           frame must be taken again while data is still refused.  Every frame
 *           must come back from the server with its bytes right.
 *
 * Each prints one line "role ... key=value ..." that the script checks; exit 0
 * when everything it saw was right.
 */
#include "ring_common.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <unistd.h>

static uint32_t client_len(const struct opts *o, uint32_t seq)
{
    uint32_t span = o->mtu + 14 - TF_HDR + 1;
    return seq % 16 == 0 ? o->mtu + 14 : TF_HDR + (seq * 40503u) % span;
}

static uint32_t echo_len(const struct opts *o, uint32_t seq)
{
    uint32_t span = o->mtu + 14 - TF_HDR + 1;
    return seq % 8 == 3 ? o->mtu + 14 : TF_HDR + ((seq * 2654435761u) >> 7) % span;
}

static void print_stats(struct pmeth_ring *r)
{
    struct pmeth_ring_stats st;
    pmeth_ring_get_stats(r, &st);
    printf(" ring=\"%s\" kicks=%llu direct_sends=%llu tx_full=%llu shadow_copies=%llu "
           "repost_copies=%llu dummies=%llu kernel_drops=%llu rx_small_xdp=%llu memory=%zu\n",
           pmeth_ring_mode_name(r), (unsigned long long) st.kicks,
           (unsigned long long) st.direct_sends,
           (unsigned long long) st.tx_full, (unsigned long long) st.shadow_copies,
           (unsigned long long) st.repost_copies, (unsigned long long) st.dummies,
           (unsigned long long) st.kernel_drops, (unsigned long long) st.rx_small_xdp,
           pmeth_ring_memory(r));
}

/* get a send frame, kicking the ring while none is free (bounded by DEADLINE) */
static int get_frame(struct pmeth_ring *r, void **f, uint32_t *cap, uint64_t deadline)
{
    int id;
    while ((id = pmeth_ring_tx_get(r, f, cap)) < 0) {
        (void) pmeth_ring_tx_kick(r);
        if (now_ns() > deadline) {
            return -1;
        }
    }
    return id;
}

static int server(const struct opts *o)
{
    struct pmeth_ring *r = open_ring_or_die(o);
    printf("ready\n");
    fflush(stdout);
    uint64_t deadline = now_ns() + (uint64_t) (o->timeout * 1e9);
    unsigned long frames = 0, bad = 0, foreign = 0, echoed = 0, lost_echo = 0;
    int stops = 0, queued = 0;
    struct pmeth_rx_frame in[32];
    while (stops == 0 && now_ns() < deadline) {
        int n = pmeth_ring_rx_poll(r, in, 32);
        for (int k = 0; k < n; k++) {
            const uint8_t *f = in[k].frame;
            uint32_t len = in[k].len;
            if (len < TF_HDR || (uint16_t) (f[12] << 8 | f[13]) != o->ethertype
                || pmeth_get32(f + 14) != o->key || pmeth_get32(f + 18) != o->me) {
                foreign++;
                pmeth_ring_rx_put(r, in[k].id);
                continue;
            }
            uint32_t seq = pmeth_get32(f + 26), src = pmeth_get32(f + 22);
            if (seq == TF_STOP) {
                stops++;
                pmeth_ring_rx_put(r, in[k].id);
                continue;
            }
            frames++;
            if (tf_check(f, len) != 0) {
                bad++;
                pmeth_ring_rx_put(r, in[k].id);
                continue;
            }
            uint8_t peer_mac[6];
            memcpy(peer_mac, f + 6, 6);
            pmeth_ring_rx_put(r, in[k].id);     /* given back before the echo is built */
            void *out;
            uint32_t cap, elen = echo_len(o, seq);
            int id = get_frame(r, &out, &cap, deadline);
            if (id < 0 || cap < elen) {
                lost_echo++;
                if (id >= 0) {
                    pmeth_ring_tx_put(r, id);
                }
                continue;
            }
            tf_build(out, elen, peer_mac, o->mac, o->ethertype, o->key, src, o->me, seq);
            /* every other echo tries the lone frames' path (as the BTL sends a frame
             * that finds nothing waiting: the ring layer decides) */
            if (seq % 2 == 0) {
                if (queued > 0) {
                    (void) pmeth_ring_tx_kick(r);   /* so that it can be lone */
                    queued = 0;
                }
                queued += !pmeth_ring_tx_post_now(r, id, elen, false);
            } else {
                pmeth_ring_tx_post(r, id, elen);
                queued++;
            }
            pmeth_ring_tx_put(r, id);
            echoed++;
        }
        if (queued > 0) {
            (void) pmeth_ring_tx_kick(r);
            queued = 0;
        }
    }
    /* let the last echoes leave before the socket goes */
    for (int i = 0; i < 100; i++) {
        (void) pmeth_ring_tx_kick(r);
        usleep(1000);
    }
    printf("server me=%u frames=%lu bad=%lu foreign=%lu lost_echo=%lu echoed=%lu stops=%d",
           o->me, frames, bad, foreign, lost_echo, echoed, stops);
    print_stats(r);
    pmeth_ring_close(r);
    return (bad == 0 && foreign == 0 && lost_echo == 0 && stops > 0) ? 0 : 1;
}

struct foreign_sender {
    int fd;
    struct sockaddr_ll to;
};

static void send_foreign(const struct opts *o, struct foreign_sender *fs, uint32_t seq,
                         unsigned long *sent)
{
    uint8_t f[128];
    uint32_t target = o->peers[seq % (uint32_t) o->npeers];
    /* each would be accepted but for one field */
    tf_build(f, 100, o->peer_mac, o->mac, (uint16_t) (o->ethertype + 1), o->key, target, o->me,
             seq);
    *sent += sendto(fs->fd, f, 100, 0, (struct sockaddr *) &fs->to, sizeof(fs->to)) == 100;
    tf_build(f, 100, o->peer_mac, o->mac, o->ethertype, o->key ^ 0x100, target, o->me, seq);
    *sent += sendto(fs->fd, f, 100, 0, (struct sockaddr *) &fs->to, sizeof(fs->to)) == 100;
    tf_build(f, 100, o->peer_mac, o->mac, o->ethertype, o->key, 0x7777, o->me, seq);
    *sent += sendto(fs->fd, f, 100, 0, (struct sockaddr *) &fs->to, sizeof(fs->to)) == 100;
}

struct held {
    int id;
    uint32_t seq;
    int state;      /* 0 waiting for the echo, 1 echo came: repost, 2 reposted: put when done */
};

static int client(const struct opts *o)
{
    if (o->npeers == 0) {
        fprintf(stderr, "client: no --peer\n");
        return 2;
    }
    struct pmeth_ring *r = open_ring_or_die(o);
    struct foreign_sender fs = {.fd = -1};
    if (o->foreign_every > 0) {
        fs.fd = socket(AF_PACKET, SOCK_RAW, 0);
        fs.to.sll_family = AF_PACKET;
        fs.to.sll_ifindex = (int) if_nametoindex(o->ifname);
        fs.to.sll_halen = 6;
        memcpy(fs.to.sll_addr, o->peer_mac, 6);
        if (fs.fd < 0) {
            perror("client: raw socket for foreign frames");
            return 2;
        }
    }
    uint64_t deadline = now_ns() + (uint64_t) (o->timeout * 1e9);
    uint32_t count = (uint32_t) o->count;
    uint8_t *echoes = calloc(count, 1);
    struct held *held = calloc(count / (o->hold_every > 0 ? (uint32_t) o->hold_every : 1) + 2,
                               sizeof(*held));
    int nheld = 0;
    unsigned long sent = 0, expected = 0, got = 0, bad = 0, foreign = 0, dup = 0,
                  foreign_sent = 0, reposts = 0, held_bad = 0, lone_held = 0;
    struct pmeth_rx_frame in[32];
    uint32_t next = 0;
    while (now_ns() < deadline) {
        /* send while the window allows */
        int posted = 0;
        while (next < count && (long) (sent - got) < o->window) {
            void *f;
            uint32_t cap, len = client_len(o, next);
            int id = pmeth_ring_tx_get(r, &f, &cap);
            if (id < 0) {
                break;
            }
            if (cap < len) {
                fprintf(stderr, "client: frame capacity %u < %u\n", cap, len);
                return 2;
            }
            uint32_t target = o->peers[next % (uint32_t) o->npeers];
            tf_build(f, len, o->peer_mac, o->mac, o->ethertype, o->key, target, o->me, next);
            /* the first frame of a burst, every other one, tries the lone frames' path,
             * and so does every other held one (--hold: then resent from its copy; the
             * others stay in the ring, to be copied aside when their slot comes round) */
            bool hold = o->hold_every > 0 && next % (uint32_t) o->hold_every == 0;
            bool hold_lone = hold && next / (uint32_t) o->hold_every % 2 == 0;
            if (hold_lone && posted > 0) {
                (void) pmeth_ring_tx_kick(r);   /* so that it can be lone */
                posted = 0;
            }
            bool try_lone = (posted == 0 && next % 2 == 0 && !hold) || hold_lone;
            /* (post_now posts it in the ring when it cannot send it at once) */
            bool lone = try_lone && pmeth_ring_tx_post_now(r, id, len, true);
            if (!try_lone) {
                pmeth_ring_tx_post(r, id, len);
            }
            if (hold) {
                lone_held += lone;
                held[nheld++] = (struct held){.id = id, .seq = next, .state = 0};
                expected++;     /* its repost is echoed too */
            } else {
                pmeth_ring_tx_put(r, id);
            }
            sent++;
            expected++;
            posted += !lone;
            if (fs.fd >= 0 && next % (uint32_t) o->foreign_every == 0) {
                send_foreign(o, &fs, next, &foreign_sent);
            }
            next++;
        }
        /* retransmit held frames whose echo came back; give back reposted ones */
        for (int h = 0; h < nheld; h++) {
            struct held *x = &held[h];
            if (x->state == 1 && pmeth_ring_tx_done(r, x->id)) {
                const uint8_t *f = pmeth_ring_tx_frame(r, x->id);
                if (tf_check(f, client_len(o, x->seq)) != 0 || pmeth_get32(f + 26) != x->seq) {
                    held_bad++;     /* the held copy changed under us */
                }
                if (pmeth_ring_tx_repost(r, x->id) == 0) {
                    x->state = 2;
                    reposts++;
                    sent++;
                    posted++;
                }
            } else if (x->state == 2 && pmeth_ring_tx_done(r, x->id)) {
                pmeth_ring_tx_put(r, x->id);
                x->state = 3;
            }
        }
        if (posted > 0) {
            (void) pmeth_ring_tx_kick(r);
        }
        int n = pmeth_ring_rx_poll(r, in, 32);
        for (int k = 0; k < n; k++) {
            const uint8_t *f = in[k].frame;
            uint32_t len = in[k].len;
            if (len < TF_HDR || (uint16_t) (f[12] << 8 | f[13]) != o->ethertype
                || pmeth_get32(f + 14) != o->key || pmeth_get32(f + 18) != o->me) {
                foreign++;
            } else {
                uint32_t seq = pmeth_get32(f + 26), src = pmeth_get32(f + 22);
                got++;
                if (seq >= count || tf_check(f, len) != 0 || len != echo_len(o, seq)
                    || src != o->peers[seq % (uint32_t) o->npeers]) {
                    bad++;
                } else if (echoes[seq]++ > 0) {
                    dup++;
                }
                if (o->hold_every > 0 && seq < count && seq % (uint32_t) o->hold_every == 0) {
                    for (int h = 0; h < nheld; h++) {
                        if (held[h].seq == seq && held[h].state == 0) {
                            held[h].state = 1;
                        }
                    }
                }
            }
            pmeth_ring_rx_put(r, in[k].id);
        }
        if (next == count && got >= expected) {
            break;
        }
    }
    unsigned long missing = 0;
    for (uint32_t s = 0; s < count; s++) {
        missing += echoes[s] == 0;
    }
    /* STOP to every server; the ring does not lose frames on an idle veth,
     * but say it three times anyway */
    for (int rep = 0; rep < 3; rep++) {
        for (int p = 0; p < o->npeers; p++) {
            void *f;
            uint32_t cap;
            int id = get_frame(r, &f, &cap, now_ns() + 1000000000ull);
            if (id >= 0) {
                tf_build(f, TF_HDR, o->peer_mac, o->mac, o->ethertype, o->key, o->peers[p], o->me,
                         TF_STOP);
                pmeth_ring_tx_post(r, id, TF_HDR);
                pmeth_ring_tx_put(r, id);
            }
        }
        (void) pmeth_ring_tx_kick(r);
        usleep(2000);
    }
    for (int h = 0; h < nheld; h++) {
        if (held[h].state != 3) {
            pmeth_ring_tx_put(r, held[h].id);
        }
    }
    printf("client me=%u sent=%lu expected=%lu got=%lu missing=%lu bad=%lu dup=%lu "
           "reposts=%lu held_bad=%lu lone_held=%lu foreign=%lu foreign_sent=%lu",
           o->me, sent, expected, got, missing, bad, dup, reposts, held_bad, lone_held, foreign,
           foreign_sent);
    print_stats(r);
    pmeth_ring_close(r);
    if (fs.fd >= 0) {
        close(fs.fd);
    }
    free(echoes);
    free(held);
    return (missing == 0 && bad == 0 && foreign == 0 && held_bad == 0 && got == expected
            && dup == reposts) ? 0 : 1;
}

/* Take a frame (control frames when CTL), kicking and waiting while the kernel
 * still sends the slot it needs: -1 once none came for 200 ms. */
static int get_until_refused(struct pmeth_ring *r, bool ctl, void **f, uint32_t *cap)
{
    uint64_t give_up = now_ns() + 200000000ull;
    for (;;) {
        int id = ctl ? pmeth_ring_tx_get_ctl(r, f, cap) : pmeth_ring_tx_get(r, f, cap);
        if (id >= 0 || now_ns() > give_up) {
            return id;
        }
        (void) pmeth_ring_tx_kick(r);
        usleep(1000);
    }
}

/* Frame ID (at F) sent to the peer as test frame SEQ and kept: ID again. */
static int send_kept(struct pmeth_ring *r, const struct opts *o, int id, void *f, uint32_t seq)
{
    uint32_t len = client_len(o, seq);
    tf_build(f, len, o->peer_mac, o->mac, o->ethertype, o->key, o->peers[0], o->me, seq);
    pmeth_ring_tx_post(r, id, len);
    (void) pmeth_ring_tx_kick(r);
    return id;
}

static int reserve_client(const struct opts *o)
{
    if (o->npeers != 1) {
        fprintf(stderr, "reserve: one --peer\n");
        return 2;
    }
    struct pmeth_ring *r = open_ring_or_die(o);
    enum { MAX_KEPT = 16384 };
    static int kept[MAX_KEPT];
    uint32_t nkept = 0, data = 0, ctl = 0, seq = 0;
    void *f;
    uint32_t cap;
    int id;
    /* data until refused, then control frames until refused, every one kept */
    for (int pass = 0; pass < 2; pass++) {
        while (nkept < MAX_KEPT && (id = get_until_refused(r, pass == 1, &f, &cap)) >= 0) {
            kept[nkept++] = send_kept(r, o, id, f, seq++);
            *(pass == 0 ? &data : &ctl) += 1;
        }
    }
    /* with data still held: one control frame given back, one can be taken
     * again; data still cannot */
    bool data_refused = get_until_refused(r, false, &f, &cap) < 0;
    bool ctl_again = false;
    uint64_t sent_by = now_ns() + 1000000000ull;
    while (ctl > 0 && !pmeth_ring_tx_done(r, kept[nkept - 1]) && now_ns() < sent_by) {
        (void) pmeth_ring_tx_kick(r);
    }
    if (ctl > 0 && pmeth_ring_tx_done(r, kept[nkept - 1])) {
        pmeth_ring_tx_put(r, kept[--nkept]);
        id = get_until_refused(r, true, &f, &cap);
        if (id >= 0) {
            ctl_again = true;
            kept[nkept++] = send_kept(r, o, id, f, seq++);
        }
    }
    /* every frame's echo, bytes checked */
    uint64_t deadline = now_ns() + (uint64_t) (o->timeout * 1e9);
    unsigned long got = 0, bad = 0;
    uint8_t *echoes = calloc(seq + 1, 1);
    struct pmeth_rx_frame in[32];
    while (got < seq && now_ns() < deadline) {
        (void) pmeth_ring_tx_kick(r);
        int n = pmeth_ring_rx_poll(r, in, 32);
        for (int k = 0; k < n; k++) {
            const uint8_t *e = in[k].frame;
            uint32_t s = pmeth_get32(e + 26);
            if (in[k].len < TF_HDR || s >= seq || tf_check(e, in[k].len) != 0
                || in[k].len != echo_len(o, s) || echoes[s]++ > 0) {
                bad++;
            } else {
                got++;
            }
            pmeth_ring_rx_put(r, in[k].id);
        }
    }
    for (uint32_t i = 0; i < nkept; i++) {
        pmeth_ring_tx_put(r, kept[i]);
    }
    /* all given back: data is taken again (the STOP frames, three as the client sends) */
    bool data_back = true;
    for (int rep = 0; rep < 3; rep++) {
        id = get_until_refused(r, false, &f, &cap);
        if (id < 0) {
            data_back = false;
            break;
        }
        tf_build(f, TF_HDR, o->peer_mac, o->mac, o->ethertype, o->key, o->peers[0], o->me,
                 TF_STOP);
        pmeth_ring_tx_post(r, id, TF_HDR);
        pmeth_ring_tx_put(r, id);
        (void) pmeth_ring_tx_kick(r);
        usleep(2000);
    }
    printf("reserve data=%u ctl=%u frames=%u reserve=%u data_refused=%d ctl_again=%d "
           "data_back=%d sent=%u got=%lu bad=%lu",
           data, ctl, data + ctl, pmeth_ring_ctl_reserve(data + ctl), data_refused, ctl_again,
           data_back, seq, got, bad);
    print_stats(r);
    pmeth_ring_close(r);
    free(echoes);
    return (ctl == pmeth_ring_ctl_reserve(data + ctl) && data_refused && ctl_again && data_back
            && got == seq && bad == 0) ? 0 : 1;
}

int main(int argc, char **argv)
{
    struct opts o;
    parse_opts(argc, argv, &o);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (strcmp(argv[argc - 1], "server") == 0) {
        return server(&o);
    }
    if (strcmp(argv[argc - 1], "client") == 0) {
        return client(&o);
    }
    if (strcmp(argv[argc - 1], "reserve") == 0) {
        return reserve_client(&o);
    }
    usage_common(argv[0]);
    return 2;
}
