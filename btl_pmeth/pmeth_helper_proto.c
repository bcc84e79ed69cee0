/* The pmeth helper's request/reply protocol and descriptor passing
 * (pmeth_helper_proto.h).  Nothing here trusts a length or a byte it got. */
#define _GNU_SOURCE
#include "pmeth_helper_proto.h"

#include <errno.h>
#include <linux/filter.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pmeth_wire.h"

static const char req_magic[4] = {'P', 'M', 'H', 'Q'};
static const char reply_magic[4] = {'P', 'M', 'H', 'R'};
#define REPLY_FLAGS_KNOWN (PMETH_HELPER_FILTER_LOCKED | PMETH_HELPER_MARKED \
                           | PMETH_HELPER_XDP_GENERIC)
/* no message carries more than PMETH_HELPER_MAX_FDS we want; room to see (and close) a few */
#define MAX_FDS_SEEN 8

const char *pmeth_helper_status_name(enum pmeth_helper_status s)
{
    static const char *const names[PMETH_HELPER_STATUS_COUNT] = {
        [PMETH_HELPER_GRANTED] = "granted",
        [PMETH_HELPER_BAD_REQUEST] = "malformed request",
        [PMETH_HELPER_NOT_ALLOWED] = "interface not allowed",
        [PMETH_HELPER_NO_INTERFACE] = "no such interface",
        [PMETH_HELPER_WRONG_ETHERTYPE] = "EtherType not served",
        [PMETH_HELPER_OTHER_NAMESPACE] = "client in another network namespace",
        [PMETH_HELPER_FAILED] = "helper failed",
        [PMETH_HELPER_XDP_OFF] = "no AF_XDP sockets from this helper",
    };
    return (unsigned) s < PMETH_HELPER_STATUS_COUNT ? names[s] : "unknown status";
}

const char *pmeth_helper_fault_name(enum pmeth_helper_fault f)
{
    static const char *const names[PMETH_HELPER_FAULT_COUNT] = {
        [PMETH_HELPER_OK] = "ok",
        [PMETH_HELPER_FAULT_LENGTH] = "wrong message length",
        [PMETH_HELPER_FAULT_MAGIC] = "wrong magic",
        [PMETH_HELPER_FAULT_VERSION] = "unknown protocol version",
        [PMETH_HELPER_FAULT_OP] = "unknown operation",
        [PMETH_HELPER_FAULT_IFNAME] = "bad interface name",
        [PMETH_HELPER_FAULT_ETHERTYPE] = "EtherType below 0x0600",
        [PMETH_HELPER_FAULT_FLAGS] = "unknown flags",
        [PMETH_HELPER_FAULT_RESERVED] = "reserved field not zero",
        [PMETH_HELPER_FAULT_STATUS] = "unknown status",
        [PMETH_HELPER_FAULT_TEXT] = "bad reply text",
        [PMETH_HELPER_FAULT_RING] = "AF_XDP ring sizes not powers of two from 8 to 32768 "
                                    "(no send ring when receive-only)",
    };
    return (unsigned) f < PMETH_HELPER_FAULT_COUNT ? names[f] : "unknown fault";
}

static int ifname_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
           || c == '.' || c == '-';
}

int pmeth_helper_ifname_ok(const char *name)
{
    size_t n = 0;
    while (n < IFNAMSIZ && name[n] != '\0') {
        if (!ifname_char_ok(name[n])) {
            return 0;
        }
        n++;
    }
    if (n == 0 || n >= IFNAMSIZ) {
        return 0;
    }
    return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

void pmeth_helper_encode_request(const struct pmeth_helper_request *rq,
                                 uint8_t out[PMETH_HELPER_REQ_LEN])
{
    memset(out, 0, PMETH_HELPER_REQ_LEN);
    bool xdp = rq->op == PMETH_HELPER_OP_OPEN_XDP;
    memcpy(out, req_magic, 4);
    pmeth_put16(out + 4, PMETH_HELPER_VERSION);
    pmeth_put16(out + 6, xdp ? PMETH_HELPER_OP_OPEN_XDP : PMETH_HELPER_OP_OPEN_PACKET);
    memcpy(out + 8, rq->ifname, strnlen(rq->ifname, IFNAMSIZ - 1));
    pmeth_put16(out + 24, rq->ethertype);
    pmeth_put32(out + 28, rq->job_key);
    pmeth_put32(out + 32, rq->dest_id);
    if (!xdp) {
        pmeth_put16(out + 26, rq->packet_flags);
    } else {
        pmeth_put16(out + 26, rq->xdp_flags);
        pmeth_put16(out + 36, rq->rx_frames);
        pmeth_put16(out + 38, rq->tx_frames);
    }
}

static bool ring_size_ok(uint16_t n)
{
    return n >= 8 && n <= PMETH_HELPER_XDP_FRAMES_MAX && (n & (n - 1)) == 0;
}

unsigned pmeth_helper_granted_fds(const struct pmeth_helper_request *rq)
{
    if (rq->op == PMETH_HELPER_OP_OPEN_XDP) {
        return 3;
    }
    return rq->packet_flags & PMETH_HELPER_PACKET_SEND_SOCKET ? 2 : 1;
}

enum pmeth_helper_fault pmeth_helper_parse_request(const void *msg, size_t len,
                                                   struct pmeth_helper_request *out)
{
    const uint8_t *p = msg;
    memset(out, 0, sizeof(*out));
    if (len != PMETH_HELPER_REQ_LEN) {
        return PMETH_HELPER_FAULT_LENGTH;
    }
    if (memcmp(p, req_magic, 4) != 0) {
        return PMETH_HELPER_FAULT_MAGIC;
    }
    if (pmeth_get16(p + 4) != PMETH_HELPER_VERSION) {
        return PMETH_HELPER_FAULT_VERSION;
    }
    out->op = pmeth_get16(p + 6);
    if (out->op != PMETH_HELPER_OP_OPEN_PACKET && out->op != PMETH_HELPER_OP_OPEN_XDP) {
        return PMETH_HELPER_FAULT_OP;
    }
    /* the name field: name bytes, then only NULs up to its end (at least one) */
    const char *field = (const char *) p + 8;
    size_t n = strnlen(field, IFNAMSIZ);
    if (n == 0 || n >= IFNAMSIZ) {
        return PMETH_HELPER_FAULT_IFNAME;
    }
    for (size_t i = n; i < IFNAMSIZ; i++) {
        if (field[i] != '\0') {
            return PMETH_HELPER_FAULT_IFNAME;
        }
    }
    memcpy(out->ifname, field, n);
    if (!pmeth_helper_ifname_ok(out->ifname)) {
        memset(out->ifname, 0, sizeof(out->ifname));
        return PMETH_HELPER_FAULT_IFNAME;
    }
    out->ethertype = pmeth_get16(p + 24);
    if (out->ethertype < 0x0600) {      /* below: an 802.3 length, not an EtherType */
        return PMETH_HELPER_FAULT_ETHERTYPE;
    }
    out->job_key = pmeth_get32(p + 28);
    out->dest_id = pmeth_get32(p + 32);
    if (out->op == PMETH_HELPER_OP_OPEN_PACKET) {
        out->packet_flags = pmeth_get16(p + 26);
        if ((out->packet_flags & ~PMETH_HELPER_PACKET_FLAGS_KNOWN) != 0) {
            return PMETH_HELPER_FAULT_FLAGS;
        }
        if (pmeth_get32(p + 36) != 0) {
            return PMETH_HELPER_FAULT_RESERVED;
        }
        return PMETH_HELPER_OK;
    }
    out->xdp_flags = pmeth_get16(p + 26);
    out->rx_frames = pmeth_get16(p + 36);
    out->tx_frames = pmeth_get16(p + 38);
    bool rx_only = out->xdp_flags & PMETH_HELPER_XDP_RECEIVE_ONLY;
    if ((out->xdp_flags & ~PMETH_HELPER_XDP_FLAGS_KNOWN) != 0
        || (rx_only && (out->xdp_flags & PMETH_HELPER_XDP_CHUNK_2K))) {
        return PMETH_HELPER_FAULT_FLAGS;
    }
    if (!ring_size_ok(out->rx_frames) || (rx_only ? out->tx_frames != 0
                                                   : !ring_size_ok(out->tx_frames))) {
        return PMETH_HELPER_FAULT_RING;
    }
    return PMETH_HELPER_OK;
}

size_t pmeth_helper_encode_reply(enum pmeth_helper_status status, uint16_t flags,
                                 const char *text, uint8_t out[PMETH_HELPER_REPLY_MAX])
{
    size_t n = 0;
    memcpy(out, reply_magic, 4);
    pmeth_put16(out + 4, PMETH_HELPER_VERSION);
    pmeth_put16(out + 6, (uint16_t) status);
    pmeth_put16(out + 8, flags);
    /* only printable ASCII goes out; anything else becomes '?' */
    for (; text != NULL && text[n] != '\0' && n < PMETH_HELPER_TEXT_MAX; n++) {
        char c = text[n];
        out[PMETH_HELPER_REPLY_HDR_LEN + n] = (uint8_t) (c >= 0x20 && c < 0x7f ? c : '?');
    }
    pmeth_put16(out + 10, (uint16_t) n);
    return PMETH_HELPER_REPLY_HDR_LEN + n;
}

enum pmeth_helper_fault pmeth_helper_parse_reply(const void *msg, size_t len,
                                                 struct pmeth_helper_reply *out)
{
    const uint8_t *p = msg;
    memset(out, 0, sizeof(*out));
    out->status = PMETH_HELPER_FAILED;
    if (len < PMETH_HELPER_REPLY_HDR_LEN || len > PMETH_HELPER_REPLY_MAX) {
        return PMETH_HELPER_FAULT_LENGTH;
    }
    if (memcmp(p, reply_magic, 4) != 0) {
        return PMETH_HELPER_FAULT_MAGIC;
    }
    if (pmeth_get16(p + 4) != PMETH_HELPER_VERSION) {
        return PMETH_HELPER_FAULT_VERSION;
    }
    uint16_t status = pmeth_get16(p + 6), flags = pmeth_get16(p + 8), n = pmeth_get16(p + 10);
    if (status >= PMETH_HELPER_STATUS_COUNT) {
        return PMETH_HELPER_FAULT_STATUS;
    }
    if ((flags & ~REPLY_FLAGS_KNOWN) != 0) {
        return PMETH_HELPER_FAULT_FLAGS;
    }
    if ((size_t) n != len - PMETH_HELPER_REPLY_HDR_LEN) {
        return PMETH_HELPER_FAULT_LENGTH;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[PMETH_HELPER_REPLY_HDR_LEN + i];
        if (c < 0x20 || c >= 0x7f) {
            return PMETH_HELPER_FAULT_TEXT;
        }
        out->text[i] = (char) c;
    }
    out->text[n] = '\0';
    out->status = (enum pmeth_helper_status) status;
    out->flags = flags;
    return PMETH_HELPER_OK;
}

int pmeth_helper_send(int sock, const void *msg, size_t len, const int *fds, unsigned nfds)
{
    struct iovec iov = {.iov_base = (void *) msg, .iov_len = len};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(PMETH_HELPER_MAX_FDS * sizeof(int))];
    } control;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > PMETH_HELPER_MAX_FDS) {
        return -EINVAL;
    }
    if (nfds > 0) {
        memset(&control, 0, sizeof(control));
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -errno;
    }
    return (size_t) n == len ? 0 : -EMSGSIZE;
}

static void close_all(int *fds, unsigned *n)
{
    for (unsigned i = 0; i < *n; i++) {
        close(fds[i]);
        fds[i] = -1;
    }
    *n = 0;
}

ssize_t pmeth_helper_recv(int sock, void *buf, size_t cap, int *fds, unsigned maxfds,
                          unsigned *nfds, unsigned *extra_fds)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(MAX_FDS_SEEN * sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof(control.buf)};
    *nfds = 0;
    *extra_fds = 0;
    for (unsigned i = 0; i < maxfds; i++) {
        fds[i] = -1;
    }
    ssize_t n;
    do {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        return -errno;
    }
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS
            || cm->cmsg_len < CMSG_LEN(0)) {
            continue;
        }
        size_t count = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int got;
            memcpy(&got, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
            if (*nfds < maxfds) {
                fds[(*nfds)++] = got;
            } else {
                close(got);
                (*extra_fds)++;
            }
        }
    }
    if (mh.msg_flags & MSG_CTRUNC) {
        (*extra_fds)++;                 /* the kernel closed what did not fit */
    }
    if (*extra_fds > 0 && *nfds > 0) {  /* more than asked for: none of them is trusted */
        *extra_fds += *nfds;
        close_all(fds, nfds);
    }
    if (mh.msg_flags & MSG_TRUNC) {
        close_all(fds, nfds);
        return -EMSGSIZE;
    }
    if (n == 0 && cap > 0) {
        return -ECONNRESET;             /* SOCK_SEQPACKET: 0 bytes is the peer's close */
    }
    return n;
}
