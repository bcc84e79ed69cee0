/*
 * Raw-frame floor through pmeth's ring layer (no MPI, no protocol): what the
 * rings alone cost, the bound the BTL's latency and bandwidth are judged by.
 * Both ends busy-poll.  Run under `flock /tmp/xbtl-bench.lock` (the machine
 * is shared); test/pmeth/floor.sh drives it between two namespaces.
 *
 *   pong   echoes every frame addressed to it, same length; prints the half
 *          round trip it sees between successive arrivals (its own clock)
 *   ping   --count round trips of --size byte frames (after 10% warm-up);
 *          prints median / min / 90th percentile of the half round trip
 *   sink   counts frames for a stream; prints frames/s, Gbit/s and MB/s of what
 *          arrived (first to last frame), checking sequence numbers per link
 *   blast  sends --size byte frames for --seconds as fast as the rings take
 *          them, one kick per 32 frames; prints frames/s offered
 *   duplex blast and sink at once in one process (run one on each end: the
 *          floor of a bidirectional stream); prints what it received
 * sink and blast take several links (--if a,b,.. with one --mac and --peer-mac
 * address per link, comma-separated): the blaster stripes frames round-robin,
 * the floor of a striped stream.
 * Output: one JSON line.
 */
#include "ring_common.h"

#include <unistd.h>

#define TF_HELLO 0xfffffffeu            /* duplex: "I am here", before the stream */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
    return x < y ? -1 : x > y;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static bool ours(const struct opts *o, const uint8_t *f, uint32_t len)
{
    return len >= TF_HDR && pmeth_get32(f + 18) == o->me && pmeth_get32(f + 14) == o->key;
}

static int send_one(struct pmeth_ring *r, const struct opts *o, uint32_t len, uint32_t seq,
                    uint32_t dst)
{
    void *f;
    uint32_t cap;
    int id;
    while ((id = pmeth_ring_tx_get(r, &f, &cap)) < 0) {
        (void) pmeth_ring_tx_kick(r);
    }
    if (cap < len) {
        return -1;
    }
    /* header only: the floor times the rings, not a payload loop */
    tf_build(f, TF_HDR, o->peer_mac, o->mac, o->ethertype, o->key, dst, o->me, seq);
    pmeth_put32((uint8_t *) f + 30, len - TF_HDR);
    /* as the BTL sends a lone frame: past the ring when --direct allows it */
    if (!pmeth_ring_tx_post_now(r, id, len, false)) {
        (void) pmeth_ring_tx_kick(r);
    }
    pmeth_ring_tx_put(r, id);
    return 0;
}

static int pong(const struct opts *o, struct pmeth_ring *r)
{
    uint64_t deadline = now_ns() + (uint64_t) (o->timeout * 1e9);
    long n = 0, cap = o->count + 16;
    uint64_t *t = malloc((size_t) cap * sizeof(*t));
    struct pmeth_rx_frame in[8];
    bool stop = false;
    while (!stop && now_ns() < deadline) {
        int k = pmeth_ring_rx_poll(r, in, 8);
        for (int i = 0; i < k; i++) {
            const uint8_t *f = in[i].frame;
            uint32_t len = in[i].len, seq = ours(o, f, len) ? pmeth_get32(f + 26) : 0;
            uint32_t src = ours(o, f, len) ? pmeth_get32(f + 22) : 0;
            bool mine = ours(o, f, len);
            pmeth_ring_rx_put(r, in[i].id);
            if (!mine) {
                continue;
            }
            if (seq == TF_STOP) {
                stop = true;
                break;
            }
            if (n < cap) {
                t[n++] = now_ns();
            }
            send_one(r, o, len, seq, src);
        }
    }
    long warm = n / 10, m = 0;
    uint64_t *d = malloc((size_t) (n > 0 ? n : 1) * sizeof(*d));
    for (long i = warm + 1; i < n; i++) {
        d[m++] = t[i] - t[i - 1];
    }
    qsort(d, (size_t) m, sizeof(*d), cmp_u64);
    printf("{\"role\": \"pong\", \"mode\": \"%s\", \"size\": %u, \"frames\": %ld, "
           "\"half_rtt_us_median\": %.3f}\n", pmeth_ring_mode_name(r), o->size, n,
           m > 0 ? d[m / 2] / 2000.0 : -1.0);
    free(t);
    free(d);
    return n > 0 ? 0 : 1;
}

static int ping(const struct opts *o, struct pmeth_ring *r)
{
    long warm = o->count / 10, total = o->count + warm;
    uint64_t *d = malloc((size_t) o->count * sizeof(*d));
    struct pmeth_rx_frame in[8];
    uint64_t deadline = now_ns() + (uint64_t) (o->timeout * 1e9);
    long done = 0;
    for (long i = 0; i < total && now_ns() < deadline; i++) {
        uint64_t t0 = now_ns();
        if (send_one(r, o, o->size, (uint32_t) i, o->peers[0]) != 0) {
            fprintf(stderr, "ping: frame size %u over the ring's capacity\n", o->size);
            return 2;
        }
        bool back = false;
        while (!back && now_ns() < deadline) {
            int k = pmeth_ring_rx_poll(r, in, 8);
            for (int j = 0; j < k; j++) {
                const uint8_t *f = in[j].frame;
                if (ours(o, f, in[j].len) && pmeth_get32(f + 26) == (uint32_t) i
                    && in[j].len == o->size) {
                    back = true;
                }
                pmeth_ring_rx_put(r, in[j].id);
            }
        }
        if (!back) {
            break;
        }
        if (i >= warm) {
            d[done++] = now_ns() - t0;
        }
    }
    for (int rep = 0; rep < 3; rep++) {
        send_one(r, o, TF_HDR, TF_STOP, o->peers[0]);
        usleep(1000);
    }
    /* also as bench/xb-latency states an MPI ping-pong: the round trips cut into
     * FLOOR_BLOCKS blocks in the order they ran, the median of the blocks' means.
     * A block's mean keeps the short stalls a single round trip's median drops,
     * so a transport is judged against the floor by the same statistic. */
    enum { FLOOR_BLOCKS = 20 };
    double block[FLOOR_BLOCKS], sum = 0;
    long per_block = done / FLOOR_BLOCKS;
    for (long i = 0; i < done; i++) {
        sum += (double) d[i];
    }
    for (int b = 0; b < FLOOR_BLOCKS && per_block > 0; b++) {
        double s = 0;
        for (long i = b * per_block; i < (b + 1) * per_block; i++) {
            s += (double) d[i];
        }
        block[b] = s / (double) per_block;
    }
    qsort(d, (size_t) done, sizeof(*d), cmp_u64);
    double block_median = -1.0;
    if (per_block > 0) {
        qsort(block, FLOOR_BLOCKS, sizeof(block[0]), cmp_double);
        block_median = (block[FLOOR_BLOCKS / 2 - 1] + block[FLOOR_BLOCKS / 2]) / 4000.0;
    }
    printf("{\"role\": \"ping\", \"mode\": \"%s\", \"direct_max\": %u, \"size\": %u, \"iterations\": %ld, "
           "\"half_rtt_us_median\": %.3f, \"half_rtt_us_min\": %.3f, \"half_rtt_us_p90\": %.3f, "
           "\"half_rtt_us_mean\": %.3f, \"half_rtt_us_block_median\": %.3f}\n",
           pmeth_ring_mode_name(r), o->direct_max, o->size, done, done ? d[done / 2] / 2000.0 : -1.0,
           done ? d[0] / 2000.0 : -1.0, done ? d[done * 9 / 10] / 2000.0 : -1.0,
           done ? sum / (double) done / 2000.0 : -1.0, block_median);
    free(d);
    return done == o->count ? 0 : 1;
}

/* What a sink counts of the frames addressed to it. */
struct sink_count {
    bool hello;                         /* the peer's TF_HELLO (duplex) came */
    uint64_t first, last;
    unsigned long frames, bytes, out_of_order;
    uint32_t expect[TF_MAX_LINKS], sent;
    int stopped;
    bool stop_seen[TF_MAX_LINKS];
};

/* Take what the rings hold.  A link is FIFO: per link the sequence only grows
 * (the blaster numbers frames across all links, so a gap is another link's
 * frame or a drop). */
static void sink_poll(const struct opts *o, struct pmeth_ring **rings, int nrings,
                      struct sink_count *sc)
{
    struct pmeth_rx_frame in[64];
    for (int l = 0; l < nrings; l++) {
        int k = pmeth_ring_rx_poll(rings[l], in, 64);
        for (int i = 0; i < k; i++) {
            const uint8_t *f = in[i].frame;
            if (ours(o, f, in[i].len)) {
                uint32_t seq = pmeth_get32(f + 26);
                if (seq == TF_STOP) {
                    sc->stopped += !sc->stop_seen[l];
                    sc->stop_seen[l] = true;
                } else if (seq == TF_HELLO) {
                    sc->hello = true;
                } else {
                    sc->out_of_order += seq < sc->expect[l];
                    sc->expect[l] = seq + 1;
                    sc->sent = seq + 1 > sc->sent ? seq + 1 : sc->sent;
                    sc->last = now_ns();
                    if (sc->frames++ == 0) {
                        sc->first = sc->last;
                    }
                    sc->bytes += in[i].len;
                }
            }
            pmeth_ring_rx_put(rings[l], in[i].id);
        }
    }
}

static int sink_report(const char *role, const struct opts *o, struct pmeth_ring **rings,
                       int nrings, const struct sink_count *sc)
{
    double secs = (sc->last - sc->first) / 1e9;
    unsigned long long drops = 0;
    for (int l = 0; l < nrings; l++) {
        struct pmeth_ring_stats st;
        pmeth_ring_get_stats(rings[l], &st);
        drops += st.kernel_drops;
    }
    printf("{\"role\": \"%s\", \"mode\": \"%s\", \"links\": %d, \"frames\": %lu, "
           "\"sent_by_peer\": %u, \"seconds\": %.3f, \"frames_per_s\": %.0f, "
           "\"gbit_per_s\": %.3f, \"mbyte_per_s\": %.1f, \"out_of_order\": %lu, "
           "\"kernel_drops\": %llu}\n", role, pmeth_ring_mode_name(rings[0]), nrings, sc->frames,
           sc->sent, secs, secs > 0 ? sc->frames / secs : 0.0,
           secs > 0 ? sc->bytes * 8 / secs / 1e9 : 0.0, secs > 0 ? sc->bytes / secs / 1e6 : 0.0,
           sc->out_of_order, drops);
    return sc->frames > 0 && sc->out_of_order == 0 ? 0 : 1;
}

static int sink(const struct opts *o, struct pmeth_ring **rings, int nrings)
{
    uint64_t deadline = now_ns() + (uint64_t) (o->timeout * 1e9);
    struct sink_count sc = {0};
    while (sc.stopped < nrings && now_ns() < deadline) {
        sink_poll(o, rings, nrings, &sc);
    }
    return sink_report("sink", o, rings, nrings, &sc);
}

/* What a blaster keeps between frames. */
struct blast_state {
    uint32_t seq;
    int batch[TF_MAX_LINKS], link;
};

/* One frame onto the next link round-robin, as fast as each ring takes them: a
 * full ring (the kernel still holds its frames, e.g. queued in a shaper) is
 * kicked and skipped. */
static void blast_one(const struct opts *o, struct pmeth_ring **rings, int nrings,
                      struct blast_state *bs)
{
    void *f;
    uint32_t cap;
    int l = bs->link = (bs->link + 1) % nrings;
    int id = pmeth_ring_tx_get(rings[l], &f, &cap);
    if (id < 0) {
        (void) pmeth_ring_tx_kick(rings[l]);
        bs->batch[l] = 0;
        return;
    }
    tf_build(f, TF_HDR, o->peer_macs[l], o->macs[l], o->ethertype, o->key, o->peers[0], o->me,
             bs->seq++);
    pmeth_put32((uint8_t *) f + 30, o->size - TF_HDR);
    pmeth_ring_tx_post(rings[l], id, o->size);
    pmeth_ring_tx_put(rings[l], id);
    if (++bs->batch[l] == 32) {
        (void) pmeth_ring_tx_kick(rings[l]);
        bs->batch[l] = 0;
    }
}

/* The end of a stream: what is posted goes, then three stop frames per link. */
static void blast_stop(const struct opts *o, struct pmeth_ring **rings, int nrings)
{
    for (int l = 0; l < nrings; l++) {
        (void) pmeth_ring_tx_kick(rings[l]);
    }
    usleep(20000);
    for (int rep = 0; rep < 3; rep++) {
        for (int l = 0; l < nrings; l++) {
            /* send_one uses the first link's addresses: build the stop frame per link */
            void *f;
            uint32_t cap;
            int id;
            while ((id = pmeth_ring_tx_get(rings[l], &f, &cap)) < 0) {
                (void) pmeth_ring_tx_kick(rings[l]);
            }
            tf_build(f, TF_HDR, o->peer_macs[l], o->macs[l], o->ethertype, o->key, o->peers[0],
                     o->me, TF_STOP);
            pmeth_ring_tx_post(rings[l], id, TF_HDR);
            pmeth_ring_tx_put(rings[l], id);
            (void) pmeth_ring_tx_kick(rings[l]);
        }
        usleep(2000);
    }
}

static int blast(const struct opts *o, struct pmeth_ring **rings, int nrings)
{
    uint64_t t0 = now_ns(), end = t0 + (uint64_t) (o->seconds * 1e9);
    struct blast_state bs = {0};
    while (now_ns() < end) {
        blast_one(o, rings, nrings, &bs);
    }
    double secs = (now_ns() - t0) / 1e9;
    blast_stop(o, rings, nrings);
    unsigned long long kicks = 0;
    for (int l = 0; l < nrings; l++) {
        struct pmeth_ring_stats st;
        pmeth_ring_get_stats(rings[l], &st);
        kicks += st.kicks;
    }
    printf("{\"role\": \"blast\", \"mode\": \"%s\", \"links\": %d, \"size\": %u, "
           "\"frames\": %u, \"frames_per_s\": %.0f, \"kicks\": %llu}\n",
           pmeth_ring_mode_name(rings[0]), nrings, o->size, bs.seq, bs.seq / secs, kicks);
    return 0;
}

/* Both at once in one process, as a rank of a bidirectional stream is: blast
 * for --seconds while taking the peer's frames (a poll of every ring after each
 * round of the links), then take the rest until the peer's stop frames.  What
 * it received is its half of the bidirectional floor.  The two ends start
 * together: each says hello (every millisecond, on the first link) until it
 * hears the peer's, or its data. */
static int duplex(const struct opts *o, struct pmeth_ring **rings, int nrings)
{
    struct blast_state bs = {0};
    struct sink_count sc = {0};
    uint64_t give_up = now_ns() + (uint64_t) (o->timeout * 1e9);
    while (!sc.hello && sc.frames == 0 && now_ns() < give_up) {
        void *f;
        uint32_t cap;
        int id = pmeth_ring_tx_get(rings[0], &f, &cap);
        if (id >= 0) {
            tf_build(f, TF_HDR, o->peer_macs[0], o->macs[0], o->ethertype, o->key, o->peers[0],
                     o->me, TF_HELLO);
            pmeth_ring_tx_post(rings[0], id, TF_HDR);
            pmeth_ring_tx_put(rings[0], id);
        }
        (void) pmeth_ring_tx_kick(rings[0]);
        uint64_t next = now_ns() + 1000000;
        while (!sc.hello && sc.frames == 0 && now_ns() < next) {
            sink_poll(o, rings, nrings, &sc);
        }
    }
    if (!sc.hello && sc.frames == 0) {
        fprintf(stderr, "duplex: no word from the peer within %.0f s\n", o->timeout);
        return 1;
    }
    uint64_t end = now_ns() + (uint64_t) (o->seconds * 1e9);
    uint64_t deadline = end + (uint64_t) (o->timeout * 1e9);
    while (now_ns() < end) {
        for (int l = 0; l < nrings; l++) {
            blast_one(o, rings, nrings, &bs);
        }
        sink_poll(o, rings, nrings, &sc);
    }
    blast_stop(o, rings, nrings);
    while (sc.stopped < nrings && now_ns() < deadline) {
        sink_poll(o, rings, nrings, &sc);
    }
    return sink_report("duplex", o, rings, nrings, &sc);
}

int main(int argc, char **argv)
{
    struct opts o;
    parse_opts(argc, argv, &o);
    const char *role = argv[argc - 1];
    if (o.size < TF_HDR) {
        o.size = TF_HDR;
    }
    bool sends = !strcmp(role, "ping") || !strcmp(role, "blast") || !strcmp(role, "duplex");
    if (strcmp(role, "pong") && strcmp(role, "ping") && strcmp(role, "sink")
        && strcmp(role, "blast") && strcmp(role, "duplex")) {
        usage_common(argv[0]);
    }
    if (sends && o.npeers == 0) {
        fprintf(stderr, "%s needs --peer\n", role);
        return 2;
    }
    if (o.nlinks > 1 && (!strcmp(role, "pong") || !strcmp(role, "ping"))) {
        fprintf(stderr, "%s runs over one link\n", role);
        return 2;
    }
    if ((o.nlinks > 1 || (sends && strcmp(role, "ping"))) && (o.nmacs == 0 || o.npeer_macs == 0)) {
        fprintf(stderr, "%s needs --mac and --peer-mac, one per link\n", role);
        return 2;
    }
    struct pmeth_ring *rings[TF_MAX_LINKS];
    for (int l = 0; l < o.nlinks; l++) {
        rings[l] = open_link_ring_or_die(&o, l);
    }
    printf("ready\n");
    fflush(stdout);
    int rc = !strcmp(role, "pong") ? pong(&o, rings[0])
             : !strcmp(role, "ping") ? ping(&o, rings[0])
             : !strcmp(role, "sink") ? sink(&o, rings, o.nlinks)
             : !strcmp(role, "duplex") ? duplex(&o, rings, o.nlinks) : blast(&o, rings, o.nlinks);
    for (int l = 0; l < o.nlinks; l++) {
        pmeth_ring_close(rings[l]);
    }
    return rc;
}
