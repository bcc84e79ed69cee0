/*
 * btl pmeth: an interface's traffic control and netfilter chains, read from
 * rtnetlink and nfnetlink (pmeth_tc.h).
 */
#include "pmeth_tc.h"

#include <errno.h>
#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* root qdiscs that only queue what is sent, in order and at the device's pace */
static const char *const plain_kinds[] = {"noqueue", "pfifo_fast", "pfifo", "bfifo",
                                          "fq_codel", "fq", "mq"};

static bool is_plain(const char *kind)
{
    for (size_t i = 0; i < sizeof(plain_kinds) / sizeof(plain_kinds[0]); i++) {
        if (strcmp(kind, plain_kinds[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* One RTM_NEWQDISC message H of a dump: noted in OUT if it is IFINDEX's root or
 * ingress qdisc.  Nothing in it is trusted for a length beyond the message. */
static void take_qdisc(const struct nlmsghdr *h, int ifindex, pmeth_tc_state_t *out)
{
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct tcmsg))) {
        return;
    }
    const struct tcmsg *t = NLMSG_DATA(h);
    if (t->tcm_ifindex != ifindex) {
        return;
    }
    char kind[sizeof(out->root_kind)] = "";
    int left = (int) (h->nlmsg_len - NLMSG_LENGTH(sizeof(*t)));
    for (const struct rtattr *a = TCA_RTA(t); RTA_OK(a, left); a = RTA_NEXT(a, left)) {
        if (a->rta_type == TCA_KIND) {
            size_t n = RTA_PAYLOAD(a) < sizeof(kind) - 1 ? RTA_PAYLOAD(a) : sizeof(kind) - 1;
            memcpy(kind, RTA_DATA(a), n);
            kind[n] = '\0';
        }
    }
    if (kind[0] == '\0') {
        return;
    }
    if (t->tcm_parent == TC_H_ROOT) {
        memcpy(out->root_kind, kind, sizeof(kind));
        out->root_plain = is_plain(kind);
    } else if (t->tcm_parent == TC_H_INGRESS) {     /* ingress, or clsact (the same handle) */
        memcpy(out->ingress_kind, kind, sizeof(kind));
    }
}

/* Sends REQ (REQLEN bytes, a dump request) on a netlink socket of PROTOCOL and
 * hands each answer of type WANT to TAKE.  0, or -errno with a sentence naming
 * WHAT in ERR. */
static int netlink_dump(int protocol, const void *req, size_t reqlen, uint16_t want,
                        void (*take)(const struct nlmsghdr *, void *), void *ctx,
                        const char *what, char *err, size_t errlen)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "netlink socket for %s: %s", what, strerror(e));
        return -e;
    }
    /* the kernel answers a dump at once; a second is far more than it needs */
    struct timeval limit = {.tv_sec = 1, .tv_usec = 0};
    (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, req, reqlen, 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0) {
        int e = errno;
        snprintf(err, errlen, "asking for %s: %s", what, strerror(e));
        close(fd);
        return -e;
    }
    union {
        struct nlmsghdr align;
        char bytes[16384];
    } buf;
    int rc = 0;
    for (bool done = false; !done;) {
        ssize_t n = recv(fd, buf.bytes, sizeof(buf.bytes), 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            rc = n < 0 ? -errno : -EPROTO;
            snprintf(err, errlen, "reading %s: %s", what,
                     n < 0 ? strerror(errno) : "the socket closed");
            break;
        }
        size_t len = (size_t) n;
        for (const struct nlmsghdr *h = &buf.align; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type == NLMSG_DONE) {
                done = true;
                break;
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                rc = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error < 0 ? e->error : -EPROTO;
                snprintf(err, errlen, "the kernel refused to list %s: %s", what, strerror(-rc));
                done = true;
                break;
            }
            if (h->nlmsg_type == want) {
                take(h, ctx);
            }
        }
    }
    close(fd);
    return rc;
}

struct qdisc_ctx {
    int ifindex;
    pmeth_tc_state_t *out;
};

static void take_qdisc_cb(const struct nlmsghdr *h, void *ctx)
{
    const struct qdisc_ctx *q = ctx;
    take_qdisc(h, q->ifindex, q->out);
}

/* Attributes of netfilter's messages: struct nlattr, type in the low 14 bits. */
#define NFT_ATTR_OK(a, left) \
    ((left) >= (int) sizeof(struct nlattr) && (a)->nla_len >= sizeof(struct nlattr) \
     && (int) (a)->nla_len <= (left))
#define NFT_ATTR_NEXT(a, left) \
    ((left) -= NLA_ALIGN((a)->nla_len), \
     (const struct nlattr *) ((const char *) (a) + NLA_ALIGN((a)->nla_len)))
#define NFT_ATTR_DATA(a) ((const char *) (a) + NLA_HDRLEN)
#define NFT_ATTR_LEN(a) ((int) (a)->nla_len - NLA_HDRLEN)
#define NFT_ATTR_TYPE(a) ((a)->nla_type & NLA_TYPE_MASK)

/* Whether attribute A (a string, not trusted to end in a NUL) is NAME. */
static bool attr_is(const struct nlattr *a, const char *name)
{
    size_t n = strlen(name);
    int len = NFT_ATTR_LEN(a);
    return len >= (int) n && memcmp(NFT_ATTR_DATA(a), name, n) == 0
           && (len == (int) n || NFT_ATTR_DATA(a)[n] == '\0');
}

static void attr_string(const struct nlattr *a, char *to, size_t tolen)
{
    size_t n = (size_t) NFT_ATTR_LEN(a);
    n = memchr(NFT_ATTR_DATA(a), '\0', n) ? strlen(NFT_ATTR_DATA(a)) : n;
    n = n < tolen - 1 ? n : tolen - 1;
    memcpy(to, NFT_ATTR_DATA(a), n);
    to[n] = '\0';
}

struct chain_ctx {
    const char *ifname;
    pmeth_tc_state_t *out;
};

/* One NFT_MSG_NEWCHAIN message H of a dump of every family's chains: noted in
 * OUT if its hook is bound to the interface (a netdev chain, ingress or egress,
 * or an inet chain on the ingress hook). */
static void take_chain(const struct nlmsghdr *h, void *ctx)
{
    const struct chain_ctx *cc = ctx;
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg))) {
        return;
    }
    const struct nfgenmsg *g = NLMSG_DATA(h);
    char table[32] = "?", chain[32] = "?";
    bool ours = false, egress = false;
    int left = (int) (h->nlmsg_len - NLMSG_LENGTH(sizeof(*g)));
    const struct nlattr *a = (const struct nlattr *) ((const char *) g + NLMSG_ALIGN(sizeof(*g)));
    for (; NFT_ATTR_OK(a, left); a = NFT_ATTR_NEXT(a, left)) {
        if (NFT_ATTR_TYPE(a) == NFTA_CHAIN_TABLE) {
            attr_string(a, table, sizeof(table));
        } else if (NFT_ATTR_TYPE(a) == NFTA_CHAIN_NAME) {
            attr_string(a, chain, sizeof(chain));
        } else if (NFT_ATTR_TYPE(a) == NFTA_CHAIN_HOOK) {
            int hleft = NFT_ATTR_LEN(a);
            for (const struct nlattr *k = (const struct nlattr *) NFT_ATTR_DATA(a);
                 NFT_ATTR_OK(k, hleft); k = NFT_ATTR_NEXT(k, hleft)) {
                if (NFT_ATTR_TYPE(k) == NFTA_HOOK_HOOKNUM && NFT_ATTR_LEN(k) >= 4) {
                    uint32_t num;
                    memcpy(&num, NFT_ATTR_DATA(k), sizeof(num));
                    egress = g->nfgen_family == NFPROTO_NETDEV && ntohl(num) == NF_NETDEV_EGRESS;
                } else if (NFT_ATTR_TYPE(k) == NFTA_HOOK_DEV) {
                    ours = ours || attr_is(k, cc->ifname);
                } else if (NFT_ATTR_TYPE(k) == NFTA_HOOK_DEVS) {
                    int dleft = NFT_ATTR_LEN(k);
                    for (const struct nlattr *d = (const struct nlattr *) NFT_ATTR_DATA(k);
                         NFT_ATTR_OK(d, dleft); d = NFT_ATTR_NEXT(d, dleft)) {
                        ours = ours || (NFT_ATTR_TYPE(d) == NFTA_DEVICE_NAME
                                        && attr_is(d, cc->ifname));
                    }
                }
            }
        }
    }
    if (ours) {
        char *to = egress ? cc->out->nft_egress : cc->out->nft_ingress;
        snprintf(to, sizeof(cc->out->nft_ingress), "%s/%s", table, chain);
    }
}

int pmeth_tc_read(int ifindex, const char *ifname, pmeth_tc_state_t *out, char *err,
                  size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->root_plain = true;
    struct {
        struct nlmsghdr nh;
        struct tcmsg tc;
    } qreq = {
        .nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)), .nlmsg_type = RTM_GETQDISC,
               .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1},
        .tc = {.tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex},
    };
    struct qdisc_ctx q = {.ifindex = ifindex, .out = out};
    int rc = netlink_dump(NETLINK_ROUTE, &qreq, qreq.nh.nlmsg_len, RTM_NEWQDISC, take_qdisc_cb, &q,
                          "the qdiscs", err, errlen);
    if (rc != 0) {
        return rc;
    }
    /* every family's chains: nftables binds netdev chains, and inet ingress
     * chains, to devices by name */
    struct {
        struct nlmsghdr nh;
        struct nfgenmsg g;
    } nreq = {
        .nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct nfgenmsg)),
               .nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETCHAIN,
               .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 2},
        .g = {.nfgen_family = NFPROTO_UNSPEC, .version = NFNETLINK_V0},
    };
    struct chain_ctx cc = {.ifname = ifname, .out = out};
    int nrc = netlink_dump(NETLINK_NETFILTER, &nreq, nreq.nh.nlmsg_len,
                           (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWCHAIN, take_chain, &cc,
                           "netfilter's chains", out->nft_unread, sizeof(out->nft_unread));
    if (nrc != 0 && out->nft_unread[0] == '\0') {
        snprintf(out->nft_unread, sizeof(out->nft_unread), "%s", strerror(-nrc));
    }
    return 0;
}

bool pmeth_tc_skipped_by_xdp(const pmeth_tc_state_t *state, bool sending, char *why,
                             size_t whylen)
{
    if (sending && !state->root_plain) {
        snprintf(why, whylen, "its root qdisc %s shapes or schedules what it sends",
                 state->root_kind);
        return true;
    }
    if (state->ingress_kind[0] != '\0') {
        snprintf(why, whylen, "its %s qdisc may filter its frames", state->ingress_kind);
        return true;
    }
    if (sending && state->nft_egress[0] != '\0') {
        snprintf(why, whylen, "netfilter chain %s filters what it sends", state->nft_egress);
        return true;
    }
    if (state->nft_ingress[0] != '\0') {
        snprintf(why, whylen, "netfilter chain %s filters what it receives", state->nft_ingress);
        return true;
    }
    return false;
}
