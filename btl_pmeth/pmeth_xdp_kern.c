/*
 * pmeth's XDP program (AF_XDP back end, pmeth_ring_xdp.c).  Built with
 * `clang -O2 -target bpf` and embedded in the component, one instance per
 * process, attached through a BPF link so it goes away with the process.
 *
 * It takes only frames that are certainly ours: our EtherType, our job key
 * and our process id at the fixed offsets of the pmeth header (14 and 18),
 * arriving on the receive queue our socket is bound to.  Everything else --
 * IP, ARP, another job's frames, frames for another rank of this host (which
 * reads them through an AF_PACKET ring) -- is passed on to the kernel
 * untouched: a site's traffic is never stolen.
 *
 * The values to match are not compiled in: the loader writes them into
 * pmeth_cfg after loading; until then the EtherType is 0, which no frame has,
 * so a half-set-up program passes everything.
 *
 * Two entry points; the loader keeps one.  pmeth_xdp takes all of our frames
 * (the socket does all I/O; frames up to one 4 KiB chunk).  pmeth_xdp_small is
 * for jumbo frames: it takes only our frames that fit a chunk (acks, small
 * messages) and passes the larger ones on to the process's AF_PACKET ring.  It
 * is marked for multi-buffer packets ("xdp.frags"), which is what lets a
 * driver attach it at an MTU above a page (veth refuses a plain program
 * there); the frame's whole length is then bpf_xdp_get_buff_len's, the header
 * we read is always in the first buffer.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct pmeth_xdp_cfg {
    __u32 ethertype;        /* the wire's big-endian u16 at offset 12, as a number */
    __u32 job_key;          /* the wire's little-endian u32 at offset 14 */
    __u32 my_id;            /* the wire's little-endian u32 at offset 18 */
    __u32 queue;            /* the receive queue our socket is bound to */
    __u32 max_len;          /* pmeth_xdp_small: longest frame to take (a chunk's room) */
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct pmeth_xdp_cfg);
} pmeth_cfg SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} pmeth_xsk SEC(".maps");

/* frames seen by cause, for the tests: 0 passed (not ours), 1 redirected,
 * 2 ours but passed on for being longer than max_len (pmeth_xdp_small) */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 3);
    __type(key, __u32);
    __type(value, __u64);
} pmeth_counts SEC(".maps");

static __always_inline int count(__u32 what, int verdict)
{
    __u64 *n = bpf_map_lookup_elem(&pmeth_counts, &what);
    if (n) {
        *n += 1;
    }
    return verdict;
}

static __always_inline __u32 load_le32(const unsigned char *p)
{
    return (__u32) p[0] | (__u32) p[1] << 8 | (__u32) p[2] << 16 | (__u32) p[3] << 24;
}

/* The configuration when the frame is ours (our EtherType, job key and
 * process id, on our receive queue), else NULL. */
static __always_inline struct pmeth_xdp_cfg *ours(struct xdp_md *ctx)
{
    const unsigned char *data = (const unsigned char *) (long) ctx->data;
    const unsigned char *end = (const unsigned char *) (long) ctx->data_end;
    __u32 zero = 0;

    if (data + 22 > end) {
        return 0;               /* too short to be ours; the kernel decides */
    }
    struct pmeth_xdp_cfg *cfg = bpf_map_lookup_elem(&pmeth_cfg, &zero);
    if (!cfg) {
        return 0;
    }
    __u32 type = (__u32) data[12] << 8 | data[13];
    if (type != cfg->ethertype || load_le32(data + 14) != cfg->job_key
        || load_le32(data + 18) != cfg->my_id || ctx->rx_queue_index != cfg->queue) {
        return 0;
    }
    return cfg;
}

SEC("xdp")
int pmeth_xdp(struct xdp_md *ctx)
{
    if (!ours(ctx)) {
        return count(0, XDP_PASS);
    }
    /* with no socket in the map the frame passes (flags = fallback action) */
    return count(1, (int) bpf_redirect_map(&pmeth_xsk, 0, XDP_PASS));
}

SEC("xdp.frags")
int pmeth_xdp_small(struct xdp_md *ctx)
{
    struct pmeth_xdp_cfg *cfg = ours(ctx);
    if (!cfg) {
        return count(0, XDP_PASS);
    }
    if (bpf_xdp_get_buff_len(ctx) > cfg->max_len) {
        return count(2, XDP_PASS);      /* for the AF_PACKET ring */
    }
    return count(1, (int) bpf_redirect_map(&pmeth_xsk, 0, XDP_PASS));
}

char _license[] SEC("license") = "GPL";
