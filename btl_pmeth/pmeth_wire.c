/* pmeth's frame parser and the probe builder (pmeth_wire.h). */
#include "pmeth_wire.h"

void pmeth_wire_build_probe(void *frame, uint32_t frame_len, const uint8_t dst_mac[6],
                            const uint8_t src_mac[6], uint16_t ethertype, uint32_t key,
                            uint32_t dst, uint32_t src, uint8_t type,
                            const pmeth_wire_probe_t *probe)
{
    uint8_t *f = frame;
    uint32_t len = frame_len - PMETH_WIRE_HDR_LEN;
    pmeth_wire_build_hdr(frame, dst_mac, src_mac, ethertype, key, dst, src, type, probe->from_link,
                         0, (uint16_t) len, 0, 0, 0);
    uint8_t *p = f + PMETH_WIRE_HDR_LEN;
    memset(p, 0, len);
    pmeth_put64(p, probe->nonce);
    p[8] = probe->from_link;
    p[9] = probe->to_link;
    p[10] = probe->full ? 1 : 0;
    p[11] = 0;
    pmeth_put32(p + 12, probe->mtu);
    pmeth_put32(p + 16, probe->frame_len);
    pmeth_put32(p + 20, 0);
}

static pmeth_wire_verdict_t parse_probe(const uint8_t *p, uint32_t len, uint32_t nlinks,
                                        pmeth_wire_probe_t *out)
{
    if (len < PMETH_WIRE_PROBE_LEN) {
        return PMETH_WIRE_MALFORMED;
    }
    out->nonce = pmeth_get64(p);
    out->from_link = p[8];
    out->to_link = p[9];
    out->full = p[10];
    out->mtu = pmeth_get32(p + 12);
    out->frame_len = pmeth_get32(p + 16);
    if (out->from_link >= nlinks || out->to_link >= nlinks || out->full > 1 || p[11] != 0
        || pmeth_get32(p + 20) != 0) {
        return PMETH_WIRE_MALFORMED;
    }
    return PMETH_WIRE_OK;
}

pmeth_wire_verdict_t pmeth_wire_parse(const void *frame, size_t frame_len,
                                      const pmeth_wire_expect_t *e, pmeth_wire_view_t *v)
{
    const uint8_t *f = frame;
    if (frame == NULL || frame_len < PMETH_WIRE_HDR_LEN) {
        return PMETH_WIRE_TRUNCATED;
    }
    if (frame_len > e->max_frame) {
        return PMETH_WIRE_OVERSIZED;
    }
    if (((uint16_t) (f[12] << 8 | f[13])) != e->ethertype || pmeth_get32(f + 14) != e->job_key
        || pmeth_get32(f + 18) != e->my_id || f[26] != PMETH_WIRE_VERSION) {
        return PMETH_WIRE_FOREIGN;
    }
    uint8_t type = f[27];
    uint8_t flags = f[28];
    bool echo = (flags & PMETH_WIRE_F_ECHO) != 0;
    bool credit = (flags & PMETH_WIRE_F_CREDIT) != 0;
    bool more = (flags & PMETH_WIRE_F_MORE) != 0;
    bool cont = (flags & PMETH_WIRE_F_CONT) != 0;
    bool delay = (flags & PMETH_WIRE_F_DELAY) != 0;
    bool acks = type == PMETH_WIRE_DATA || type == PMETH_WIRE_ACK;
    if (type == 0 || type > PMETH_WIRE_TYPE_MAX || (flags & ~PMETH_WIRE_F_ALL) != 0
        || (!credit && f[35] != 0) || (more && type != PMETH_WIRE_DATA)
        || (cont && type != PMETH_WIRE_DATA)
        || (credit && !acks) || (delay && !acks) || (!delay && pmeth_get32(f + 60) != 0)
        || (!acks && pmeth_get32(f + 56) != 0)
        || (!echo && (f[34] != 0 || pmeth_get32(f + 52) != 0))
        || (type != PMETH_WIRE_DATA && f[31] != 0) || f[29] >= e->nlinks
        || e->nlinks > PMETH_WIRE_MAX_LINKS) {
        return PMETH_WIRE_MALFORMED;
    }
    uint32_t len = pmeth_get16(f + 32);
    if (len > e->max_frame - PMETH_WIRE_HDR_LEN) {
        return PMETH_WIRE_OVERSIZED;
    }
    /* the frame may be longer than stated (Ethernet pads short frames to 60
     * bytes), never shorter */
    if ((size_t) PMETH_WIRE_HDR_LEN + len > frame_len) {
        return PMETH_WIRE_TRUNCATED;
    }
    v->type = type;
    v->tag = f[30];
    v->link = f[29];
    v->xmit = f[31];
    v->echo = echo;
    v->current = (flags & PMETH_WIRE_F_CURRENT) != 0;
    v->has_credit = credit;
    v->more = more;
    v->cont = cont;
    v->has_delay = delay;
    v->stamp = pmeth_get32(f + 56);
    v->delay = pmeth_get32(f + 60);
    v->credit = f[35];
    v->echo_xmit = f[34];
    v->echo_seq = pmeth_get32(f + 52);
    v->dst_id = pmeth_get32(f + 18);
    v->src_id = pmeth_get32(f + 22);
    v->seq = pmeth_get32(f + 36);
    v->ack = pmeth_get32(f + 40);
    v->sack = pmeth_get64(f + 44);
    v->len = len;
    v->frame_len = (uint32_t) frame_len;
    v->payload = f + PMETH_WIRE_HDR_LEN;
    v->src_mac = f + 6;
    switch (type) {
    case PMETH_WIRE_DATA:
        if (len == 0) {
            return PMETH_WIRE_MALFORMED;        /* ob1 sends at least its header */
        }
        break;
    case PMETH_WIRE_ACK:
        if (len != 0 || v->tag != 0 || v->seq != 0) {
            return PMETH_WIRE_MALFORMED;
        }
        break;
    case PMETH_WIRE_PROBE:
    case PMETH_WIRE_PROBE_REPLY:
        if (v->tag != 0 || v->seq != 0 || v->ack != 0 || v->sack != 0 || echo) {
            return PMETH_WIRE_MALFORMED;
        }
        return parse_probe(v->payload, len, e->nlinks, &v->probe);
    default:
        break;          /* reserved types: well-formed headers, ignored by this version */
    }
    return PMETH_WIRE_OK;
}

pmeth_wire_array_step_t pmeth_wire_array_next(pmeth_wire_array_t *a, bool cont, uint8_t tag)
{
    if (a->discard) {
        a->discard = cont;
        return PMETH_ARRAY_DROP;
    }
    if (a->frames == 0 && !cont) {
        return PMETH_ARRAY_SINGLE;
    }
    if ((a->frames > 0 && tag != a->tag) || (cont && a->frames + 1 >= PMETH_WIRE_ARRAY_MAX)) {
        a->frames = 0;
        a->discard = cont;
        return PMETH_ARRAY_DROP_ALL;
    }
    if (a->frames == 0) {
        a->tag = tag;
    }
    if (cont) {
        a->frames++;
        return PMETH_ARRAY_KEEP;
    }
    a->frames = 0;
    return PMETH_ARRAY_COMPLETE;
}

const char *pmeth_wire_verdict_name(int verdict)
{
    static const char *names[PMETH_WIRE_NVERDICTS] = {
        [PMETH_WIRE_OK] = "ok",
        [PMETH_WIRE_TRUNCATED] = "truncated",
        [PMETH_WIRE_OVERSIZED] = "oversized",
        [PMETH_WIRE_FOREIGN] = "foreign (EtherType, job, destination or version)",
        [PMETH_WIRE_MALFORMED] = "malformed",
    };
    return verdict >= 0 && verdict < PMETH_WIRE_NVERDICTS ? names[verdict] : "unknown";
}

const char *pmeth_wire_ethertype_owner(unsigned int et)
{
    static const struct {
        unsigned int type;
        const char *name;
    } taken[] = {
        {0x0800, "IPv4"},          {0x0806, "ARP"},           {0x8035, "RARP"},
        {0x86DD, "IPv6"},          {0x8100, "802.1Q VLAN"},   {0x88A8, "802.1ad VLAN"},
        {0x9100, "VLAN (QinQ)"},   {0x8847, "MPLS"},          {0x8848, "MPLS"},
        {0x8863, "PPPoE"},         {0x8864, "PPPoE"},         {0x888E, "802.1X"},
        {0x88CC, "LLDP"},          {0x8906, "FCoE"},          {0x8914, "FCoE"},
        {0x8915, "RoCE v1"},       {0x88F7, "PTP"},           {0x8809, "slow protocols (LACP)"},
        {0x88E5, "MACsec"},        {0x8808, "Ethernet flow control"},
    };
    for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
        if (taken[i].type == et) {
            return taken[i].name;
        }
    }
    return NULL;
}
