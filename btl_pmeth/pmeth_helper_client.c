/* Asking pmeth-helperd for an AF_PACKET socket (pmeth_helper_client.h). */
#define _GNU_SOURCE
#include "pmeth_helper_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static int fail(char *why, size_t whylen, int e, const char *path, const char *what)
{
    snprintf(why, whylen, "the pmeth helper at %s %s (%s)", path, what, strerror(e));
    return -e;
}

static bool packet_raw_socket(int fd)
{
    int domain = 0, type = 0;
    socklen_t len = sizeof(domain);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || domain != AF_PACKET) {
        return false;
    }
    len = sizeof(type);
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_RAW;
}

/* Are the NFDS descriptors FDS what a granted reply to OP carries?  NULL, or what
 * they are not. */
static const char *not_granted_kind(uint16_t op, const int *fds, unsigned nfds)
{
    int domain = 0;
    socklen_t len = sizeof(domain);
    if (getsockopt(fds[0], SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) {
        domain = -1;    /* not a socket at all */
    }
    if (op == PMETH_HELPER_OP_OPEN_XDP) {
        struct stat st;
        if (domain != AF_XDP) {
            return "something other than an AF_XDP socket";
        }
        if (fstat(fds[1], &st) != 0 || !S_ISREG(st.st_mode)) {
            return "an AF_XDP socket without its UMEM";
        }
        return NULL;
    }
    for (unsigned i = 0; i < nfds; i++) {
        if (!packet_raw_socket(fds[i])) {
            return "something other than an AF_PACKET raw socket";
        }
    }
    return NULL;
}

int pmeth_helper_ask(const char *path, const struct pmeth_helper_request *rq, int timeout_ms,
                     int fds[PMETH_HELPER_MAX_FDS], uint16_t *flags, char *why, size_t whylen)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    unsigned nfds = 0;
    uint16_t op = rq->op == PMETH_HELPER_OP_OPEN_XDP ? PMETH_HELPER_OP_OPEN_XDP
                                                      : PMETH_HELPER_OP_OPEN_PACKET;
    for (unsigned i = 0; i < PMETH_HELPER_MAX_FDS; i++) {
        fds[i] = -1;
    }
    *flags = 0;
    if (path == NULL || path[0] == '\0' || strlen(path) >= sizeof(sun.sun_path)) {
        snprintf(why, whylen, "the pmeth helper's socket path is empty or longer than %zu bytes",
                 sizeof(sun.sun_path) - 1);
        return -EINVAL;
    }
    if (!pmeth_helper_ifname_ok(rq->ifname)) {
        snprintf(why, whylen, "interface name not acceptable to the pmeth helper");
        return -EINVAL;
    }
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0) {
        return fail(why, whylen, errno, path, "could not be asked");
    }
    /* one deadline per direction bounds connect (a full backlog), send and receive */
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    (void) setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    (void) setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int rc;
    if (connect(s, (struct sockaddr *) &sun, sizeof(sun)) != 0) {
        int e = errno == EAGAIN || errno == EINPROGRESS ? ETIMEDOUT : errno;
        rc = fail(why, whylen, e, path, "is not reachable");
        goto out;
    }
    uint8_t msg[PMETH_HELPER_REPLY_MAX];
    pmeth_helper_encode_request(rq, msg);
    rc = pmeth_helper_send(s, msg, PMETH_HELPER_REQ_LEN, NULL, 0);
    if (rc != 0) {
        rc = fail(why, whylen, -rc, path, "did not take the request");
        goto out;
    }
    unsigned extra = 0;
    ssize_t n = pmeth_helper_recv(s, msg, sizeof(msg), fds, PMETH_HELPER_MAX_FDS, &nfds, &extra);
    if (n < 0) {
        int e = n == -EAGAIN ? ETIMEDOUT : (int) -n;
        rc = fail(why, whylen, e, path, "gave no reply");
        goto out;
    }
    struct pmeth_helper_reply reply;
    enum pmeth_helper_fault f = pmeth_helper_parse_reply(msg, (size_t) n, &reply);
    if (f != PMETH_HELPER_OK || extra > 0) {
        snprintf(why, whylen, "the pmeth helper at %s sent a malformed reply (%s)", path,
                 f != PMETH_HELPER_OK ? pmeth_helper_fault_name(f) : "too many descriptors");
        rc = -EPROTO;
        goto out;
    }
    if (reply.status != PMETH_HELPER_GRANTED) {
        snprintf(why, whylen, "the pmeth helper at %s refused: %s", path,
                 reply.text[0] != '\0' ? reply.text : pmeth_helper_status_name(reply.status));
        rc = reply.status == PMETH_HELPER_BAD_REQUEST ? -EBADMSG
             : reply.status == PMETH_HELPER_XDP_OFF ? -EOPNOTSUPP : -EPERM;
        goto out;
    }
    unsigned want = pmeth_helper_granted_fds(rq);
    const char *wrong = nfds != want ? NULL : not_granted_kind(op, fds, nfds);
    if (nfds != want || wrong != NULL) {
        snprintf(why, whylen, "the pmeth helper at %s granted the request but passed %s", path,
                 wrong != NULL ? wrong
                 : nfds == 0 ? "no descriptor"
                 : nfds < want ? "too few descriptors"
                                                       : "more descriptors than a grant carries");
        rc = -EPROTO;
        goto out;
    }
    *flags = reply.flags;
    rc = 0;
out:
    if (rc != 0) {
        for (unsigned i = 0; i < nfds; i++) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
    close(s);
    return rc;
}
