/*
 * pmeth_helper_ask: asks a running pmeth-helperd for a socket, as a job would,
 * and shows what its holder can and cannot do with it.  For
 * test/pmeth/t-pmeth-helper.sh, which runs it as an unprivileged user.
 *
 *   pmeth_helper_ask SOCKET IFNAME [KEY ID]  ask; print "granted flags=0x.." or the refusal
 *   pmeth_helper_ask SOCKET IFNAME --escape  also try to widen the receive filter and
 *                                            to bind to every EtherType
 *   pmeth_helper_ask SOCKET IFNAME --send-escape  ask for the send socket too, and try to
 *                                            make it receive: replace or detach its filter,
 *                                            bind it to every EtherType, then see whether a
 *                                            frame sent on the interface reaches it
 *   pmeth_helper_ask SOCKET IFNAME --xdp     ask for an AF_XDP socket (op 2) and try to
 *                                            rebind it elsewhere and to resize its rings
 *   pmeth_helper_ask SOCKET IFNAME --xdp-hold  ask for one, print "holding", and wait to be
 *                                            killed (what a killed rank leaves behind)
 *   pmeth_helper_ask SOCKET --garbage        send a malformed request, print the reply
 *
 * Exit status: 0 granted (or a reply to garbage), 3 refused, 4 no helper
 * reachable, 5 anything else.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pmeth_helper_client.h"
#include "pmeth_wire.h"

static int garbage(const char *path)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0 || connect(s, (struct sockaddr *) &sun, sizeof(sun)) != 0) {
        printf("unreachable: %s\n", strerror(errno));
        return 4;
    }
    /* a well-formed request whose interface name has a slash in it */
    struct pmeth_helper_request rq = {.ifname = "eth0", .ethertype = PMETH_WIRE_ETHERTYPE};
    uint8_t msg[PMETH_HELPER_REPLY_MAX];
    pmeth_helper_encode_request(&rq, msg);
    msg[8 + 1] = '/';
    if (pmeth_helper_send(s, msg, PMETH_HELPER_REQ_LEN, NULL, 0) != 0) {
        printf("send failed\n");
        return 5;
    }
    int fd;
    unsigned nfds, extra;
    ssize_t n = pmeth_helper_recv(s, msg, sizeof(msg), &fd, 1, &nfds, &extra);
    struct pmeth_helper_reply reply;
    if (n < 0 || pmeth_helper_parse_reply(msg, (size_t) n, &reply) != PMETH_HELPER_OK) {
        printf("no valid reply\n");
        return 5;
    }
    printf("reply (%s): %s%s\n", pmeth_helper_status_name(reply.status), reply.text,
           nfds > 0 || extra > 0 ? " (with a descriptor!)" : "");
    return reply.status == PMETH_HELPER_BAD_REQUEST && nfds == 0 && extra == 0 ? 0 : 5;
}

/* What the holder of an AF_XDP socket cannot do: bind it to another interface
 * (here: the loopback), or give it bigger rings. */
static void xdp_escape(int fd)
{
    struct sockaddr_xdp sx = {.sxdp_family = AF_XDP, .sxdp_ifindex = if_nametoindex("lo"),
                              .sxdp_flags = XDP_COPY};
    int rc = bind(fd, (struct sockaddr *) &sx, sizeof(sx));
    printf("rebind to lo: %s\n", rc == 0 ? "possible" : strerror(errno));
    int n = 32768;
    rc = setsockopt(fd, SOL_XDP, XDP_RX_RING, &n, sizeof(n));
    printf("resize the receive ring: %s\n", rc == 0 ? "possible" : strerror(errno));
    rc = setsockopt(fd, SOL_XDP, XDP_TX_RING, &n, sizeof(n));
    printf("add a send ring: %s\n", rc == 0 ? "possible" : strerror(errno));
}

/* Try to replace FD's receive filter with one that takes everything, then to
 * detach it; say how each went, each line after PREFIX. */
static void widen_filter(int fd, const char *prefix)
{
    struct sock_filter accept_all[] = {BPF_STMT(BPF_RET | BPF_K, 0x40000)};
    struct sock_fprog prog = {.len = 1, .filter = accept_all};
    int rc = setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog));
    printf("%sreplace filter: %s\n", prefix, rc == 0 ? "possible" : strerror(errno));
    int dummy = 0;
    rc = setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &dummy, sizeof(dummy));
    printf("%sdetach filter: %s\n", prefix, rc == 0 ? "possible" : strerror(errno));
}

/* The send socket (SEND) receives nothing, whatever its holder tries: the helper
 * locked a filter that takes nothing.  RING, the first socket, sends a frame on
 * IFNAME that a socket bound to every EtherType there would otherwise see. */
static void send_escape(int ring, int send, const char *ifname)
{
    widen_filter(send, "send socket: ");
    int ifindex = (int) if_nametoindex(ifname);
    struct sockaddr_ll all = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = ifindex};
    int rc = bind(send, (struct sockaddr *) &all, sizeof(all));
    printf("send socket: bind to every EtherType: %s\n", rc == 0 ? "possible" : strerror(errno));
    uint8_t frame[64] = {0};
    memset(frame, 0xff, 6);     /* broadcast, from nobody, our EtherType */
    frame[12] = PMETH_WIRE_ETHERTYPE >> 8;
    frame[13] = PMETH_WIRE_ETHERTYPE & 0xff;
    struct sockaddr_ll to = {.sll_family = AF_PACKET, .sll_protocol = htons(PMETH_WIRE_ETHERTYPE),
                             .sll_ifindex = ifindex, .sll_halen = 6};
    memset(to.sll_addr, 0xff, 6);
    int sent = 0;
    for (int i = 0; i < 5; i++) {
        sent += sendto(ring, frame, sizeof(frame), 0, (struct sockaddr *) &to, sizeof(to)) > 0;
    }
    usleep(200 * 1000);
    int got = 0;
    uint8_t buf[2048];
    while (recv(send, buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
        got++;
    }
    printf("send socket: frames received of %d sent on %s: %d\n", sent, ifname, got);
}

/* What the holder of the socket can do: replace the filter, bind to all EtherTypes. */
static void escape(int fd)
{
    widen_filter(fd, "");
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = 0};
    int rc = bind(fd, (struct sockaddr *) &sll, sizeof(sll));
    printf("bind to every EtherType on every interface: %s\n", rc == 0 ? "possible" : strerror(errno));
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[2], "--garbage") == 0) {
        return garbage(argv[1]);
    }
    if (argc < 3) {
        fprintf(stderr, "usage: pmeth_helper_ask SOCKET IFNAME [KEY ID | --escape] | SOCKET --garbage\n");
        return 5;
    }
    struct pmeth_helper_request rq = {.ethertype = PMETH_WIRE_ETHERTYPE, .job_key = 0x1234,
                                      .dest_id = 0};
    snprintf(rq.ifname, sizeof(rq.ifname), "%s", argv[2]);
    int try_escape = argc == 4 && strcmp(argv[3], "--escape") == 0;
    int try_send_escape = argc == 4 && strcmp(argv[3], "--send-escape") == 0;
    if (try_send_escape) {
        rq.packet_flags = PMETH_HELPER_PACKET_SEND_SOCKET;
    }
    int hold = argc == 4 && strcmp(argv[3], "--xdp-hold") == 0;
    int xdp = hold || (argc == 4 && strcmp(argv[3], "--xdp") == 0);
    if (xdp) {
        rq.op = PMETH_HELPER_OP_OPEN_XDP;
        rq.xdp_flags = PMETH_HELPER_XDP_RECEIVE_ONLY;
        rq.rx_frames = 64;
    }
    if (argc == 5) {
        rq.job_key = (uint32_t) strtoul(argv[3], NULL, 0);
        rq.dest_id = (uint32_t) strtoul(argv[4], NULL, 0);
    }
    char why[512];
    int fds[PMETH_HELPER_MAX_FDS];
    uint16_t flags;
    int rc = pmeth_helper_ask(argv[1], &rq, 3000, fds, &flags, why, sizeof(why));
    if (rc == -EPERM) {
        printf("refused: %s\n", why);
        return 3;
    }
    if (rc != 0) {
        printf("failed: %s\n", why);
        return rc == -EPROTO || rc == -EINVAL ? 5 : 4;
    }
    int fd = fds[0];
    uint32_t mark = 0;
    socklen_t marklen = sizeof(mark);
    (void) getsockopt(fd, SOL_SOCKET, SO_MARK, &mark, &marklen);
    printf("granted flags=0x%x mark=0x%x%s\n", flags, mark, xdp ? " AF_XDP" : "");
    if (try_escape) {
        escape(fd);
    }
    if (try_send_escape) {
        send_escape(fd, fds[1], rq.ifname);
    }
    if (hold) {
        printf("holding\n");
        fflush(stdout);
        pause();
    }
    if (xdp) {
        xdp_escape(fd);
    }
    for (unsigned i = 0; i < pmeth_helper_granted_fds(&rq); i++) {
        close(fds[i]);
    }
    return 0;
}
