/*
 * btl pmeth: an interface's traffic control, read from rtnetlink (pmeth_tc.h).
 */
#include "pmeth_tc.h"

#include <errno.h>
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

int pmeth_tc_read(int ifindex, pmeth_tc_state_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    out->root_plain = true;
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "rtnetlink socket: %s", strerror(e));
        return -e;
    }
    /* the kernel answers a dump at once; a second is far more than it needs */
    struct timeval limit = {.tv_sec = 1, .tv_usec = 0};
    (void) setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
    struct {
        struct nlmsghdr nh;
        struct tcmsg tc;
    } req = {
        .nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)), .nlmsg_type = RTM_GETQDISC,
               .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1},
        .tc = {.tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex},
    };
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(fd, &req, req.nh.nlmsg_len, 0, (struct sockaddr *) &kernel, sizeof(kernel)) < 0) {
        int e = errno;
        snprintf(err, errlen, "asking rtnetlink for the qdiscs: %s", strerror(e));
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
            snprintf(err, errlen, "reading rtnetlink's qdiscs: %s",
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
                snprintf(err, errlen, "rtnetlink refused the qdisc dump: %s", strerror(-rc));
                done = true;
                break;
            }
            if (h->nlmsg_type == RTM_NEWQDISC) {
                take_qdisc(h, ifindex, out);
            }
        }
    }
    close(fd);
    return rc;
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
    return false;
}
