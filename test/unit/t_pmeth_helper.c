/*
 * t_pmeth_helper: the pmeth helper's protocol (pmeth_helper_proto.h) and the
 * job's client (pmeth_helper_client.h).  Requests and replies must parse back
 * field for field; forged ones must be refused with the fault that names them,
 * without a read past the message (guard page); descriptors must arrive as
 * many as a message may carry, never more; the client must refuse a helper
 * that answers wrongly, late or not at all, or passes the wrong kind of
 * descriptor (op 1: an AF_PACKET socket; op 2: an AF_XDP socket, its UMEM's
 * memfd and the program's link); and the receive filter the helper attaches
 * must pass exactly the frames it is meant for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <linux/filter.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmeth_helper_client.h"
#include "pmeth_filter.h"
#include "pmeth_helper_proto.h"
#include "pmeth_wire.h"
#include "tap.h"

static const struct pmeth_helper_request sample = {
    .ifname = "eth1", .ethertype = 0x88b5, .job_key = 0xdeadbeef, .dest_id = 0x01020304};

static uint8_t msg[PMETH_HELPER_REPLY_MAX + 64];

static size_t encode_sample(void)
{
    memset(msg, 0xee, sizeof(msg));
    pmeth_helper_encode_request(&sample, msg);
    return PMETH_HELPER_REQ_LEN;
}

static enum pmeth_helper_fault parse(size_t len)
{
    struct pmeth_helper_request rq;
    return pmeth_helper_parse_request(msg, len, &rq);
}

static int open_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        n += e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    return n - 1;                       /* the directory's own descriptor */
}

static void requests(void)
{
    struct pmeth_helper_request rq;
    size_t len = encode_sample();
    CHECK(pmeth_helper_parse_request(msg, len, &rq) == PMETH_HELPER_OK
              && strcmp(rq.ifname, "eth1") == 0 && rq.ethertype == 0x88b5
              && rq.job_key == 0xdeadbeef && rq.dest_id == 0x01020304,
          "a request parses back field for field");
    CHECK(memcmp(msg, "PMHQ", 4) == 0 && msg[4] == 1 && msg[5] == 0 && msg[28] == 0xef
              && msg[31] == 0xde && msg[40] == 0xee,
          "its layout: magic, little-endian integers, exactly 40 bytes written");

    static const size_t bad_lengths[] = {0, 1, 12, 39, 41, 80};
    int all = 1;
    for (size_t i = 0; i < sizeof(bad_lengths) / sizeof(bad_lengths[0]); i++) {
        encode_sample();
        all &= parse(bad_lengths[i]) == PMETH_HELPER_FAULT_LENGTH;
    }
    CHECK(all, "requests of 0, 1, 12, 39, 41 and 80 bytes: wrong length");

    struct {
        size_t off;
        uint8_t value;
        enum pmeth_helper_fault want;
        const char *what;
    } forged[] = {
        {0, 'X', PMETH_HELPER_FAULT_MAGIC, "magic"},
        {4, 2, PMETH_HELPER_FAULT_VERSION, "version 2"},
        {4, 0, PMETH_HELPER_FAULT_VERSION, "version 0"},
        {5, 1, PMETH_HELPER_FAULT_VERSION, "version 257"},
        {6, 3, PMETH_HELPER_FAULT_OP, "op 3"},
        {6, 0, PMETH_HELPER_FAULT_OP, "op 0"},
        {6, 2, PMETH_HELPER_FAULT_RING, "op 2 with no ring sizes"},
        {8, 0, PMETH_HELPER_FAULT_IFNAME, "empty interface name"},
        {9, '/', PMETH_HELPER_FAULT_IFNAME, "a slash in the name"},
        {9, ' ', PMETH_HELPER_FAULT_IFNAME, "a space in the name"},
        {9, ':', PMETH_HELPER_FAULT_IFNAME, "a colon in the name"},
        {9, '\n', PMETH_HELPER_FAULT_IFNAME, "a newline in the name"},
        {9, 0xc3, PMETH_HELPER_FAULT_IFNAME, "a non-ASCII byte in the name"},
        {13, 'x', PMETH_HELPER_FAULT_IFNAME, "a byte after the name's NUL"},
        {23, 'x', PMETH_HELPER_FAULT_IFNAME, "the name field's last byte not NUL"},
        {25, 0x05, PMETH_HELPER_FAULT_ETHERTYPE, "EtherType 0x05b5 (a length)"},
        {26, 2, PMETH_HELPER_FAULT_FLAGS, "an unknown flag set"},
        {27, 1, PMETH_HELPER_FAULT_FLAGS, "the top byte of the flags set"},
        {39, 1, PMETH_HELPER_FAULT_RESERVED, "reserved field not zero"},
    };
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        len = encode_sample();
        msg[forged[i].off] = forged[i].value;
        enum pmeth_helper_fault f = parse(len);
        CHECK(f == forged[i].want, "forged request, %s: %s", forged[i].what,
              pmeth_helper_fault_name(f));
    }

    /* a 16-byte name with no NUL, and the names "." and ".." */
    len = encode_sample();
    memset(msg + 8, 'a', 16);
    CHECK(parse(len) == PMETH_HELPER_FAULT_IFNAME, "an interface name of 16 bytes, no NUL");
    len = encode_sample();
    memset(msg + 8, 'a', 15);
    msg[23] = 0;
    CHECK(parse(len) == PMETH_HELPER_OK, "an interface name of 15 bytes is taken");
    len = encode_sample();
    memset(msg + 8, 0, 16);
    msg[8] = '.';
    CHECK(parse(len) == PMETH_HELPER_FAULT_IFNAME, "the name \".\"");
    msg[9] = '.';
    CHECK(parse(len) == PMETH_HELPER_FAULT_IFNAME, "the name \"..\"");
    msg[10] = '.';
    CHECK(parse(len) == PMETH_HELPER_OK, "the name \"...\" is taken (the kernel takes it too)");

    /* every byte value at every name position: taken exactly when the charset allows it */
    int wrong = 0;
    for (int pos = 0; pos < 15; pos++) {
        for (int v = 0; v < 256; v++) {
            len = encode_sample();
            memset(msg + 8, 'e', 15);
            msg[23] = 0;
            msg[8 + pos] = (uint8_t) v;
            int charset = (v >= 'a' && v <= 'z') || (v >= 'A' && v <= 'Z') || (v >= '0' && v <= '9')
                          || v == '_' || v == '.' || v == '-';
            /* a NUL makes the name shorter: fine only where no name byte follows it */
            int want_ok = v == 0 ? pos == 14 : charset;
            wrong += (parse(len) == PMETH_HELPER_OK) != want_ok;
        }
    }
    CHECK(wrong == 0, "every byte at every name position: taken iff in [A-Za-z0-9_.-] "
          "(%d wrong verdicts of 3840)", wrong);

    /* random requests with a valid header: whatever is taken has an acceptable name.
     * Name bytes come mostly from the allowed set with a random NUL tail, the rest of
     * the message is random one time in four, so that both verdicts occur often */
    srand(7);
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
    int taken = 0, bad_taken = 0;
    for (int i = 0; i < 200000; i++) {
        len = encode_sample();
        int name_len = rand() % 17;
        for (int k = 0; k < 16; k++) {
            uint8_t c = (uint8_t) (rand() % 8 == 0 ? rand() : allowed[rand() % (sizeof(allowed) - 1)]);
            msg[8 + k] = k < name_len ? c : (rand() % 16 == 0 ? c : 0);
        }
        for (int k = 24; k < 40 && i % 4 == 0; k++) {
            msg[k] = (uint8_t) (rand() % 4 == 0 ? 0 : rand());
        }
        if (parse(len) == PMETH_HELPER_OK) {
            taken++;
            pmeth_helper_parse_request(msg, len, &rq);
            bad_taken += !pmeth_helper_ifname_ok(rq.ifname);
        }
    }
    CHECK(bad_taken == 0, "200000 random requests: none taken with a bad name (%d taken)", taken);

    /* the parser never reads past the message: each length ends at a guard page */
    long page = sysconf(_SC_PAGESIZE);
    uint8_t *area = mmap(NULL, 2 * (size_t) page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int guarded = area != MAP_FAILED && mprotect(area + page, (size_t) page, PROT_NONE) == 0;
    for (size_t l = 0; guarded && l <= PMETH_HELPER_REQ_LEN; l++) {
        encode_sample();
        uint8_t *at = area + page - l;
        memcpy(at, msg, l);
        pmeth_helper_parse_request(at, l, &rq);
        struct pmeth_helper_reply reply;
        pmeth_helper_parse_reply(at, l, &reply);
    }
    CHECK(guarded, "requests and replies of 0..40 bytes ending at a guard page: no read past them");
    if (area != MAP_FAILED) {
        munmap(area, 2 * (size_t) page);
    }
}

/* op 2: an AF_XDP socket's request, its sizes and flags */
static void xdp_requests(void)
{
    struct pmeth_helper_request x = sample, rq;
    x.op = PMETH_HELPER_OP_OPEN_XDP;
    x.xdp_flags = PMETH_HELPER_XDP_CHUNK_2K;
    x.rx_frames = 1024;
    x.tx_frames = 512;
    memset(msg, 0xee, sizeof(msg));
    pmeth_helper_encode_request(&x, msg);
    CHECK(pmeth_helper_parse_request(msg, PMETH_HELPER_REQ_LEN, &rq) == PMETH_HELPER_OK
              && rq.op == PMETH_HELPER_OP_OPEN_XDP && rq.xdp_flags == PMETH_HELPER_XDP_CHUNK_2K
              && rq.rx_frames == 1024 && rq.tx_frames == 512 && strcmp(rq.ifname, "eth1") == 0
              && rq.job_key == 0xdeadbeef && rq.dest_id == 0x01020304 && msg[6] == 2
              && msg[36] == 0x00 && msg[37] == 0x04 && msg[40] == 0xee,
          "an AF_XDP request (op 2) parses back field for field, its ring sizes at 36 and 38");
    struct {
        uint16_t flags, rx, tx;
        enum pmeth_helper_fault want;
        const char *what;
    } cases[] = {
        {0, 8, 8, PMETH_HELPER_OK, "the smallest rings (8 / 8)"},
        {0, 32768, 32768, PMETH_HELPER_OK, "the largest rings (32768 / 32768)"},
        {PMETH_HELPER_XDP_RECEIVE_ONLY, 2048, 0, PMETH_HELPER_OK, "receive-only, no send ring"},
        {0, 0, 512, PMETH_HELPER_FAULT_RING, "no receive ring"},
        {0, 4, 512, PMETH_HELPER_FAULT_RING, "a receive ring of 4"},
        {0, 1000, 512, PMETH_HELPER_FAULT_RING, "a receive ring of 1000 (not a power of two)"},
        {0, 65535, 512, PMETH_HELPER_FAULT_RING, "a receive ring of 65535"},
        {0, 512, 0, PMETH_HELPER_FAULT_RING, "no send ring without receive-only"},
        {PMETH_HELPER_XDP_RECEIVE_ONLY, 512, 512, PMETH_HELPER_FAULT_RING,
         "a send ring with receive-only"},
        {PMETH_HELPER_XDP_RECEIVE_ONLY | PMETH_HELPER_XDP_CHUNK_2K, 512, 0,
         PMETH_HELPER_FAULT_FLAGS, "2 KiB chunks with receive-only (its frames need 4 KiB)"},
        {PMETH_HELPER_XDP_IF_OFFERED, 512, 512, PMETH_HELPER_OK,
         "asked by a job that falls back (if offered)"},
        {PMETH_HELPER_XDP_IF_OFFERED | PMETH_HELPER_XDP_RECEIVE_ONLY, 512, 0, PMETH_HELPER_OK,
         "receive-only, if offered"},
        {0x8, 512, 512, PMETH_HELPER_FAULT_FLAGS, "an unknown flag"},
        {0x8000, 512, 512, PMETH_HELPER_FAULT_FLAGS, "the top flag"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        x.xdp_flags = cases[i].flags;
        x.rx_frames = cases[i].rx;
        x.tx_frames = cases[i].tx;
        pmeth_helper_encode_request(&x, msg);
        enum pmeth_helper_fault f = pmeth_helper_parse_request(msg, PMETH_HELPER_REQ_LEN, &rq);
        CHECK(f == cases[i].want, "op 2, %s: %s", cases[i].what, pmeth_helper_fault_name(f));
    }
    /* random op-2 requests: whatever is taken has sane rings, flags and name.  The
     * sizes are powers of two (0-65536) half the time, the flags small numbers, so
     * that some are taken */
    srand(11);
    int taken = 0, bad = 0;
    for (int i = 0; i < 200000; i++) {
        x.xdp_flags = (uint16_t) (rand() % 2 ? rand() % 16 : rand());
        x.rx_frames = (uint16_t) (rand() % 2 ? 1u << (rand() % 17) : (unsigned) rand());
        x.tx_frames = (uint16_t) (rand() % 2 ? 1u << (rand() % 17) : rand() % 2 ? 0 : (unsigned) rand());
        pmeth_helper_encode_request(&x, msg);
        if (rand() % 4 == 0) {
            msg[24 + rand() % 16] = (uint8_t) rand();   /* EtherType, key, id or a size byte */
        }
        if (pmeth_helper_parse_request(msg, PMETH_HELPER_REQ_LEN, &rq) == PMETH_HELPER_OK) {
            taken++;
            bool rx_only = rq.xdp_flags & PMETH_HELPER_XDP_RECEIVE_ONLY;
            bad += rq.rx_frames < 8 || rq.rx_frames > PMETH_HELPER_XDP_FRAMES_MAX
                   || (rq.rx_frames & (rq.rx_frames - 1)) != 0
                   || (rx_only ? rq.tx_frames != 0
                               : rq.tx_frames < 8 || (rq.tx_frames & (rq.tx_frames - 1)) != 0)
                   || (rq.xdp_flags & ~(PMETH_HELPER_XDP_RECEIVE_ONLY | PMETH_HELPER_XDP_CHUNK_2K
                                        | PMETH_HELPER_XDP_IF_OFFERED))
                   || rq.ethertype < 0x0600 || !pmeth_helper_ifname_ok(rq.ifname);
        }
    }
    CHECK(bad == 0, "200000 random op-2 requests: none taken with bad rings, flags or EtherType "
          "(%d taken)", taken);
    /* op 1 keeps its flag and reserved bytes zero, whatever an op-2 request would put there */
    encode_sample();
    msg[37] = 4;
    CHECK(parse(PMETH_HELPER_REQ_LEN) == PMETH_HELPER_FAULT_RESERVED,
          "op 1 with a ring size where its reserved field is: refused");
    struct pmeth_helper_request g1 = {.op = PMETH_HELPER_OP_OPEN_PACKET},
        g2 = {.op = PMETH_HELPER_OP_OPEN_PACKET, .packet_flags = PMETH_HELPER_PACKET_SEND_SOCKET},
        g3 = {.op = PMETH_HELPER_OP_OPEN_XDP};
    CHECK(pmeth_helper_granted_fds(&g1) == 1 && pmeth_helper_granted_fds(&g2) == 2
              && pmeth_helper_granted_fds(&g3) == 3,
          "a grant carries 1 descriptor for op 1, 2 with the send socket, 3 for op 2");
    /* op 1's one flag: the send socket; any other flag is refused */
    struct pmeth_helper_request back;
    memset(g2.ifname, 0, sizeof(g2.ifname));
    memcpy(g2.ifname, "eth1", 4);
    g2.ethertype = PMETH_WIRE_ETHERTYPE;
    pmeth_helper_encode_request(&g2, msg);
    CHECK(pmeth_helper_parse_request(msg, PMETH_HELPER_REQ_LEN, &back) == PMETH_HELPER_OK
              && back.op == PMETH_HELPER_OP_OPEN_PACKET
              && back.packet_flags == PMETH_HELPER_PACKET_SEND_SOCKET && back.xdp_flags == 0,
          "op 1 asking for the send socket: the flag goes through");
    msg[26] = 0x2;
    CHECK(pmeth_helper_parse_request(msg, PMETH_HELPER_REQ_LEN, &back) == PMETH_HELPER_FAULT_FLAGS,
          "op 1 with an unknown flag: refused");
}

static void replies(void)
{
    struct pmeth_helper_reply r;
    size_t len = pmeth_helper_encode_reply(PMETH_HELPER_NOT_ALLOWED, PMETH_HELPER_MARKED,
                                           "interface eth9 is not allowed", msg);
    CHECK(len == 12 + 29 && pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_OK
              && r.status == PMETH_HELPER_NOT_ALLOWED && r.flags == PMETH_HELPER_MARKED
              && strcmp(r.text, "interface eth9 is not allowed") == 0,
          "a reply parses back field for field");
    len = pmeth_helper_encode_reply(PMETH_HELPER_FAILED, 0, "a\nb\x01" "c\xff", msg);
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_OK && strcmp(r.text, "a?b?c?") == 0,
          "control and non-ASCII bytes in a reply's text go out as '?'");
    char longtext[400];
    memset(longtext, 'x', sizeof(longtext) - 1);
    longtext[sizeof(longtext) - 1] = '\0';
    len = pmeth_helper_encode_reply(PMETH_HELPER_FAILED, 0, longtext, msg);
    CHECK(len == PMETH_HELPER_REPLY_MAX && pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_OK
              && strlen(r.text) == PMETH_HELPER_TEXT_MAX,
          "a text longer than %d bytes is cut there", PMETH_HELPER_TEXT_MAX);

    len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, 0, "granted", msg);
    CHECK(pmeth_helper_parse_reply(msg, len - 1, &r) == PMETH_HELPER_FAULT_LENGTH,
          "a reply shorter than its text length");
    CHECK(pmeth_helper_parse_reply(msg, len + 1, &r) == PMETH_HELPER_FAULT_LENGTH,
          "a reply longer than its text length");
    CHECK(pmeth_helper_parse_reply(msg, 11, &r) == PMETH_HELPER_FAULT_LENGTH,
          "a reply shorter than its header");
    CHECK(pmeth_helper_parse_reply(msg, PMETH_HELPER_REPLY_MAX + 1, &r) == PMETH_HELPER_FAULT_LENGTH,
          "a reply longer than the longest");
    len = pmeth_helper_encode_reply(PMETH_HELPER_XDP_OFF, 0, "AF_PACKET sockets only", msg);
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_OK && r.status == PMETH_HELPER_XDP_OFF
              && msg[6] == 7 && strcmp(pmeth_helper_status_name(r.status),
                                       "no AF_XDP sockets from this helper") == 0,
          "the reply of a helper that hands out no AF_XDP sockets: status 7, named");
    len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, 0, "granted", msg);
    msg[6] = PMETH_HELPER_STATUS_COUNT;
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_FAULT_STATUS
              && r.status != PMETH_HELPER_GRANTED, "a reply with an unknown status is not a grant");
    len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, 0, "granted", msg);
    msg[8] = 0x8;
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_FAULT_FLAGS, "unknown reply flags");
    len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, PMETH_HELPER_XDP_GENERIC, "granted", msg);
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_OK
              && r.flags == PMETH_HELPER_XDP_GENERIC, "the generic-hook flag of an AF_XDP grant");
    len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, 0, "granted", msg);
    msg[14] = 0;
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_FAULT_TEXT, "a NUL in a reply's text");
    len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, 0, "granted", msg);
    msg[0] = 'p';
    CHECK(pmeth_helper_parse_reply(msg, len, &r) == PMETH_HELPER_FAULT_MAGIC, "a reply's magic");
}

static void send_fds(int sock, const int *fds, int n)
{
    char byte = 'x';
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = CMSG_SPACE((size_t) n * sizeof(int))};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN((size_t) n * sizeof(int));
    memcpy(CMSG_DATA(cm), fds, (size_t) n * sizeof(int));
    if (sendmsg(sock, &mh, 0) != 1) {
        perror("sendmsg");
    }
}

static void descriptors(void)
{
    int sp[2], pipefd[2], fds[PMETH_HELPER_MAX_FDS];
    unsigned extra, nfds;
    uint8_t buf[64];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0 || pipe(pipefd) != 0) {
        CHECK(0, "socketpair/pipe");
        return;
    }
    int before = open_fds();
    CHECK(pmeth_helper_send(sp[0], "hello", 5, &pipefd[0], 1) == 0,
          "a message with a descriptor goes");
    ssize_t n = pmeth_helper_recv(sp[1], buf, sizeof(buf), fds, 1, &nfds, &extra);
    struct stat a, b;
    CHECK(n == 5 && nfds == 1 && extra == 0 && fstat(fds[0], &a) == 0
              && fstat(pipefd[0], &b) == 0 && a.st_ino == b.st_ino
              && (fcntl(fds[0], F_GETFD) & FD_CLOEXEC),
          "it arrives with the same open file, close-on-exec");
    if (nfds == 1) {
        close(fds[0]);
    }
    int two[2] = {pipefd[0], pipefd[1]};
    send_fds(sp[0], two, 2);
    n = pmeth_helper_recv(sp[1], buf, sizeof(buf), fds, 1, &nfds, &extra);
    CHECK(n == 1 && nfds == 0 && fds[0] == -1 && extra > 0 && open_fds() == before,
          "two descriptors where one may come: neither is kept, both are closed");
    int three[3] = {pipefd[1], sp[0], pipefd[0]};
    CHECK(pmeth_helper_send(sp[0], "xdp", 3, three, 3) == 0, "a message with three descriptors");
    n = pmeth_helper_recv(sp[1], buf, sizeof(buf), fds, 3, &nfds, &extra);
    struct stat c[3], w[3];
    int same = nfds == 3;
    for (int i = 0; same && i < 3; i++) {
        same = fstat(fds[i], &c[i]) == 0 && fstat(three[i], &w[i]) == 0
               && c[i].st_ino == w[i].st_ino;
    }
    CHECK(n == 3 && same && extra == 0, "three where three may come: all kept, in their order");
    for (unsigned i = 0; i < nfds; i++) {
        close(fds[i]);
    }
    int four[4] = {pipefd[0], pipefd[1], pipefd[0], pipefd[1]};
    send_fds(sp[0], four, 4);
    n = pmeth_helper_recv(sp[1], buf, sizeof(buf), fds, 3, &nfds, &extra);
    CHECK(n == 1 && nfds == 0 && extra > 0 && open_fds() == before,
          "four where three may come: none kept, all closed");
    CHECK(pmeth_helper_send(sp[0], msg, 60, &pipefd[1], 1) == 0,
          "an oversize message with a descriptor");
    n = pmeth_helper_recv(sp[1], buf, 40, fds, 1, &nfds, &extra);
    CHECK(n == -EMSGSIZE && nfds == 0 && open_fds() == before,
          "is refused as too long, its descriptor closed");
    CHECK(pmeth_helper_send(sp[0], "x", 1, three, 4) == -EINVAL,
          "more than %d descriptors are not sent", PMETH_HELPER_MAX_FDS);
    close(sp[0]);
    n = pmeth_helper_recv(sp[1], buf, sizeof(buf), fds, 1, &nfds, &extra);
    CHECK(n == -ECONNRESET, "the peer's close reads as -ECONNRESET");
    close(sp[1]);
    close(pipefd[0]);
    close(pipefd[1]);
}

/* ---- the client against scripted helpers ---- */

enum script { GRANT_PIPE, GRANT_NO_FD, REFUSE, REFUSE_AS_MALFORMED, REFUSE_XDP, MALFORMED, HANG_UP, SILENT,
              GRANT_PACKET, GRANT_PACKET_PAIR, GRANT_PACKET_AND_PIPE, GRANT_XDP_PIPES,
              GRANT_XDP_TWO, GRANT_XDP_NO_UMEM, GRANT_XDP };

static char sock_path[108];

/* A helper that accepts one connection and behaves as SCRIPT says. */
static pid_t fake_helper(enum script script)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
    unlink(sock_path);
    int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *) &sun, sizeof(sun)) != 0 || listen(ls, 4) != 0) {
        return -1;
    }
    pid_t pid = fork();
    if (pid != 0) {
        close(ls);
        return pid;
    }
    int c = accept(ls, NULL, NULL);
    uint8_t in[64], out[PMETH_HELPER_REPLY_MAX];
    int fd;
    unsigned nfds, extra;
    ssize_t n = pmeth_helper_recv(c, in, sizeof(in), &fd, 1, &nfds, &extra);
    struct pmeth_helper_request rq;
    if (n != PMETH_HELPER_REQ_LEN || pmeth_helper_parse_request(in, (size_t) n, &rq) != PMETH_HELPER_OK) {
        _exit(1);
    }
    int p[2] = {-1, -1}, three[3];
    size_t len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, 0, "granted", out);
    switch (script) {
    case GRANT_PIPE:
        if (pipe(p) != 0) {
            _exit(1);
        }
        pmeth_helper_send(c, out, len, &p[0], 1);
        break;
    case GRANT_PACKET:
        p[0] = socket(AF_PACKET, SOCK_RAW, 0);
        len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, PMETH_HELPER_FILTER_LOCKED, "granted", out);
        pmeth_helper_send(c, out, len, &p[0], 1);
        break;
    case GRANT_PACKET_PAIR:         /* the packet socket and the send socket */
    case GRANT_PACKET_AND_PIPE:     /* the packet socket and a pipe */
        if (pipe(p) != 0) {
            _exit(1);
        }
        three[0] = socket(AF_PACKET, SOCK_RAW, 0);
        three[1] = script == GRANT_PACKET_PAIR ? socket(AF_PACKET, SOCK_RAW, 0) : p[0];
        pmeth_helper_send(c, out, len, three, 2);
        break;
    case GRANT_NO_FD:
        pmeth_helper_send(c, out, len, NULL, 0);
        break;
    case GRANT_XDP_PIPES:       /* three descriptors, none of them an AF_XDP socket */
    case GRANT_XDP_TWO:         /* an AF_XDP socket and its memfd, no link */
    case GRANT_XDP_NO_UMEM:     /* an AF_XDP socket, then two pipes */
    case GRANT_XDP:             /* the right kinds (a pipe stands for the link) */
        if (pipe(p) != 0) {
            _exit(1);
        }
        three[0] = script == GRANT_XDP_PIPES ? p[0] : socket(AF_XDP, SOCK_RAW, 0);
        three[1] = script == GRANT_XDP_PIPES || script == GRANT_XDP_NO_UMEM
                       ? p[1] : memfd_create("umem", 0);
        three[2] = p[0];
        len = pmeth_helper_encode_reply(PMETH_HELPER_GRANTED, PMETH_HELPER_XDP_GENERIC,
                                        "granted", out);
        pmeth_helper_send(c, out, len, three, script == GRANT_XDP_TWO ? 2 : 3);
        break;
    case REFUSE:
        len = pmeth_helper_encode_reply(PMETH_HELPER_NOT_ALLOWED, 0, "interface eth1 is not allowed", out);
        pmeth_helper_send(c, out, len, NULL, 0);
        break;
    case REFUSE_AS_MALFORMED:       /* what a helper older than a flag answers */
        len = pmeth_helper_encode_reply(PMETH_HELPER_BAD_REQUEST, 0,
                                        "malformed request: unknown flags", out);
        pmeth_helper_send(c, out, len, NULL, 0);
        break;
    case REFUSE_XDP:                /* a helper whose 'xdp' setting is off */
        len = pmeth_helper_encode_reply(PMETH_HELPER_XDP_OFF, 0,
                                        "this helper hands out AF_PACKET sockets only", out);
        pmeth_helper_send(c, out, len, NULL, 0);
        break;
    case MALFORMED:
        out[10] = 200;                  /* a text length the message does not have */
        pmeth_helper_send(c, out, len, NULL, 0);
        break;
    case HANG_UP:
        break;
    case SILENT:
        sleep(5);
        break;
    }
    _exit(0);
}

static int ask_as(const struct pmeth_helper_request *rq, enum script script, int *fds, char *why,
                  size_t whylen, uint16_t *flags)
{
    pid_t pid = fake_helper(script);
    if (pid < 0) {
        snprintf(why, whylen, "fake helper did not start");
        return -999;
    }
    int rc = pmeth_helper_ask(sock_path, rq, 500, fds, flags, why, whylen);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return rc;
}

static int ask(enum script script, int *fds, char *why, size_t whylen, uint16_t *flags)
{
    return ask_as(&sample, script, fds, why, whylen, flags);
}

static void client(void)
{
    char why[512];
    int fd[PMETH_HELPER_MAX_FDS];
    uint16_t flags;
    snprintf(sock_path, sizeof(sock_path), "/tmp/t_pmeth_helper.%d.sock", (int) getpid());
    int before = open_fds();

    int rc = ask(GRANT_PIPE, fd, why, sizeof(why), &flags);
    CHECK(rc == -EPROTO && fd[0] == -1 && strstr(why, "other than an AF_PACKET") != NULL
              && open_fds() == before,
          "a grant with a pipe instead of a packet socket is refused, the pipe closed (%s)", why);
    rc = ask(GRANT_NO_FD, fd, why, sizeof(why), &flags);
    CHECK(rc == -EPROTO && fd[0] == -1 && strstr(why, "no descriptor") != NULL,
          "a grant without a descriptor is refused (%s)", why);
    rc = ask(REFUSE, fd, why, sizeof(why), &flags);
    CHECK(rc == -EPERM && fd[0] == -1 && strstr(why, "interface eth1 is not allowed") != NULL,
          "a refusal comes back as -EPERM quoting the helper (%s)", why);
    rc = ask(REFUSE_AS_MALFORMED, fd, why, sizeof(why), &flags);
    CHECK(rc == -EBADMSG && fd[0] == -1 && strstr(why, "unknown flags") != NULL,
          "a refusal as malformed comes back as -EBADMSG, so that the job may ask without "
          "a new flag (%s)", why);
    rc = ask(MALFORMED, fd, why, sizeof(why), &flags);
    CHECK(rc == -EPROTO && strstr(why, "malformed") != NULL, "a malformed reply (%s)", why);
    rc = ask(HANG_UP, fd, why, sizeof(why), &flags);
    CHECK(rc == -ECONNRESET && strstr(why, "gave no reply") != NULL, "a helper that hangs up (%s)", why);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = ask(SILENT, fd, why, sizeof(why), &flags);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    CHECK(rc == -ETIMEDOUT && secs < 2.0, "a helper that never answers: timed out after %.2f s (%s)",
          secs, why);
    unlink(sock_path);
    rc = pmeth_helper_ask(sock_path, &sample, 500, fd, &flags, why, sizeof(why));
    CHECK(rc == -ENOENT && strstr(why, "not reachable") != NULL, "no helper at the path (%s)", why);
    struct pmeth_helper_request bad = sample;
    strcpy(bad.ifname, "eth/1");
    rc = pmeth_helper_ask(sock_path, &bad, 500, fd, &flags, why, sizeof(why));
    CHECK(rc == -EINVAL, "the client does not send a bad interface name");
    CHECK(open_fds() == before, "no descriptor leaked by the client");

    /* op 2: what an AF_XDP grant must carry */
    struct pmeth_helper_request x = sample;
    x.op = PMETH_HELPER_OP_OPEN_XDP;
    x.rx_frames = 512;
    x.tx_frames = 512;
    rc = ask_as(&x, REFUSE_XDP, fd, why, sizeof(why), &flags);
    CHECK(rc == -EOPNOTSUPP && fd[0] == -1 && strstr(why, "AF_PACKET sockets only") != NULL,
          "a helper without AF_XDP sockets: -EOPNOTSUPP, so that the job asks no more for "
          "its other interfaces, quoting the helper (%s)", why);
    rc = ask_as(&x, GRANT_PIPE, fd, why, sizeof(why), &flags);
    CHECK(rc == -EPROTO && strstr(why, "too few descriptors") != NULL && open_fds() == before,
          "an AF_XDP grant with one descriptor is refused, it is closed (%s)", why);
    rc = ask_as(&x, GRANT_XDP_PIPES, fd, why, sizeof(why), &flags);
    CHECK(rc == -EPROTO && strstr(why, "other than an AF_XDP socket") != NULL
              && open_fds() == before,
          "an AF_XDP grant of three pipes is refused, all closed (%s)", why);
    int probe = socket(AF_XDP, SOCK_RAW, 0);
    if (probe < 0) {
        for (int i = 0; i < 4; i++) {
            printf("ok %d - AF_XDP grants # SKIP no AF_XDP socket here\n", ++tap_n);
        }
    } else {
        close(probe);
        rc = ask_as(&x, GRANT_XDP_TWO, fd, why, sizeof(why), &flags);
        CHECK(rc == -EPROTO && strstr(why, "too few") != NULL && open_fds() == before,
              "an AF_XDP socket and its UMEM without the link: refused, closed (%s)", why);
        rc = ask_as(&x, GRANT_XDP_NO_UMEM, fd, why, sizeof(why), &flags);
        CHECK(rc == -EPROTO && strstr(why, "without its UMEM") != NULL && open_fds() == before,
              "an AF_XDP socket with a pipe for its UMEM: refused, closed (%s)", why);
        rc = ask_as(&x, GRANT_XDP, fd, why, sizeof(why), &flags);
        CHECK(rc == 0 && fd[0] >= 0 && fd[1] >= 0 && fd[2] >= 0
                  && flags == PMETH_HELPER_XDP_GENERIC,
              "an AF_XDP socket, a memfd and a link are taken, in order, with the flags");
        for (int i = 0; rc == 0 && i < 3; i++) {
            close(fd[i]);
        }
        rc = ask(GRANT_XDP, fd, why, sizeof(why), &flags);
        CHECK(rc == -EPROTO && strstr(why, "more descriptors than a grant carries") != NULL
                  && open_fds() == before,
              "three descriptors for an AF_PACKET request: refused, all closed (%s)", why);
    }

    probe = socket(AF_PACKET, SOCK_RAW, 0);
    if (probe < 0) {
        for (int i = 0; i < 5; i++) {
            printf("ok %d - granted AF_PACKET sockets # SKIP no CAP_NET_RAW here\n", ++tap_n);
        }
    } else {
        close(probe);
        rc = ask(GRANT_PACKET, fd, why, sizeof(why), &flags);
        CHECK(rc == 0 && fd[0] >= 0 && flags == PMETH_HELPER_FILTER_LOCKED,
              "a granted AF_PACKET socket is taken, with the reply's flags");
        if (fd[0] >= 0) {
            close(fd[0]);
        }
        /* op 1 with the send socket asked for: two AF_PACKET sockets, no fewer */
        struct pmeth_helper_request two = sample;
        two.packet_flags = PMETH_HELPER_PACKET_SEND_SOCKET;
        rc = ask_as(&two, GRANT_PACKET, fd, why, sizeof(why), &flags);
        CHECK(rc == -EPROTO && strstr(why, "too few descriptors") != NULL && open_fds() == before,
              "the send socket asked for, one socket granted: refused, closed (%s)", why);
        rc = ask_as(&two, GRANT_PACKET_AND_PIPE, fd, why, sizeof(why), &flags);
        CHECK(rc == -EPROTO && strstr(why, "other than an AF_PACKET") != NULL
                  && open_fds() == before,
              "a packet socket and a pipe for the send socket: refused, both closed (%s)", why);
        rc = ask_as(&two, GRANT_PACKET_PAIR, fd, why, sizeof(why), &flags);
        CHECK(rc == 0 && fd[0] >= 0 && fd[1] >= 0,
              "the packet socket and the send socket are taken, in order");
        for (int i = 0; rc == 0 && i < 2; i++) {
            close(fd[i]);
        }
        rc = ask(GRANT_PACKET_PAIR, fd, why, sizeof(why), &flags);
        CHECK(rc == -EPROTO && strstr(why, "more descriptors than a grant carries") != NULL
                  && open_fds() == before,
              "two sockets where one was asked for: refused, both closed (%s)", why);
    }
    CHECK(open_fds() == before, "no descriptor left open by any of it");
    unlink(sock_path);
}

/* ---- the receive filter, run by a small classic-BPF interpreter ---- */

static uint32_t run_filter(const struct sock_filter *code, unsigned len, const uint8_t *frame,
                           size_t flen, int ifindex)
{
    uint32_t acc = 0;
    for (unsigned pc = 0; pc < len; pc++) {
        const struct sock_filter *f = &code[pc];
        switch (f->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (f->k == (uint32_t) (SKF_AD_OFF + SKF_AD_IFINDEX)) {
                acc = (uint32_t) ifindex;
            } else if (f->k + 4 <= flen) {
                acc = (uint32_t) frame[f->k] << 24 | (uint32_t) frame[f->k + 1] << 16
                      | (uint32_t) frame[f->k + 2] << 8 | frame[f->k + 3];
            } else {
                return 0;
            }
            break;
        case BPF_LD | BPF_H | BPF_ABS:
            if (f->k + 2 > flen) {
                return 0;
            }
            acc = (uint32_t) frame[f->k] << 8 | frame[f->k + 1];
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += acc == f->k ? f->jt : f->jf;
            break;
        case BPF_RET | BPF_K:
            return f->k;
        default:
            return 0xbad;
        }
    }
    return 0xbad;
}

/* the fields the filter looks at, where pmeth's header has them (pmeth_wire.h) */
static void frame_for(uint8_t *frame, uint16_t ethertype, uint32_t key, uint32_t dst)
{
    memset(frame, 0, 64);
    frame[12] = (uint8_t) (ethertype >> 8);
    frame[13] = (uint8_t) ethertype;
    pmeth_put32(frame + 14, key);
    pmeth_put32(frame + 18, dst);
}

static void filter(void)
{
    struct sock_filter code[PMETH_FILTER_MAX_LEN];
    unsigned n = pmeth_filter_build(code, 0x88b5, 0xdeadbeef, 7, 3);
    uint8_t frame[64];
    frame_for(frame, 0x88b5, 0xdeadbeef, 7);
    CHECK(run_filter(code, n, frame, sizeof(frame), 3) == 0x40000,
          "the filter passes our EtherType, job key and id on the interface asked for");
    CHECK(run_filter(code, n, frame, sizeof(frame), 4) == 0, "... not on another interface");
    CHECK(run_filter(code, n, frame, 13, 3) == 0, "... not a runt frame");
    frame_for(frame, 0x0800, 0xdeadbeef, 7);
    CHECK(run_filter(code, n, frame, sizeof(frame), 3) == 0, "... not another EtherType (IPv4)");
    frame_for(frame, 0x88b5, 0xdeadbeee, 7);
    CHECK(run_filter(code, n, frame, sizeof(frame), 3) == 0, "... not another job's key");
    frame_for(frame, 0x88b5, 0xdeadbeef, 8);
    CHECK(run_filter(code, n, frame, sizeof(frame), 3) == 0, "... not another process's frames");
}

int main(void)
{
    requests();
    xdp_requests();
    replies();
    descriptors();
    client();
    filter();
    return tap_done();
}
