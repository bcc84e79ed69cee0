/*
 * pmeth-helperd: lets ordinary users' MPI jobs use btl pmeth without the
 * CAP_NET_RAW capability.  Runs as root, one per host (per network namespace),
 * and opens AF_PACKET sockets on the interfaces the site allowed, handing each
 * to the asking process over a unix socket (SCM_RIGHTS).  The protocol is
 * pmeth_helper_proto.h; the component's side is pmeth_helper_client.c.
 *
 * What a socket carries when it leaves here: a receive filter that passes only
 * frames of the served EtherType, with the asking job's key and process id, on
 * the interface asked for (the ring layer's own filter plus the interface);
 * locked with SO_LOCK_FILTER unless lock_filter is off, so the user cannot
 * widen it; and SO_MARK when a mark is configured, which the user cannot change and
 * the site's egress rules can match.  What it does not confine: a packet socket
 * can send any frame on any interface of this namespace (sendto with another
 * sll_ifindex).  btl_pmeth/README.md, "Running as an ordinary user", says what
 * that means for a site.  Asked for (PMETH_HELPER_PACKET_SEND_SOCKET), a second
 * socket comes with it, for the frames the job sends past its ring: it can
 * send no more than the first, and receives nothing (a locked filter that
 * takes nothing, whatever lock_filter says).
 *
 * Where the site turns on "xdp", it also hands out AF_XDP sockets (op 2): it
 * runs the ring layer's own AF_XDP open (pmeth_ring_xdp.c) with the UMEM in a
 * sealed memfd, which binds the socket to the interface asked for, attaches our
 * XDP program (taking only the job's frames: EtherType, key, id) and passes
 * the socket, the memfd and the program's BPF link.  The job can neither
 * rebind the socket nor change the program; the program goes when the job's
 * last copy of the link closes, however the job ends.  What it does not confine:
 * AF_XDP's sends leave past the interface's qdisc and netfilter's egress hook,
 * so SO_MARK rules do not see them, and one such socket serves one process per
 * interface queue (a second job there is refused and falls back to AF_PACKET).
 *
 * Each connection is served by a child process of its own, at most
 * CHILDREN_PER_UID of one user's and CHILDREN_MAX in all at a time, each
 * killed if it is not done in CHILD_DEADLINE_MS.  Why: served one at a time
 * in this process, a user could stall everyone's requests: with connections
 * that send nothing (two seconds each, the backlog full of them), or with a
 * descriptor passed along with a request that blocks the close that drops it
 * (a TCP socket with unsent data and SO_LINGER: its close waits out the
 * linger time in the closing process).  A child blocked so only holds one of
 * its own user's places until it is killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pmeth_filter.h"
#include "pmeth_helper_proto.h"
#include "pmeth_ring.h"
#include "pmeth_wire.h"

#define DEFAULT_CONFIG "/etc/openmpi/pmeth-helper.conf"
#define MAX_ALLOWED 64
#define REQUEST_TIMEOUT_MS 2000
#define CHILDREN_MAX 32
#define CHILDREN_PER_UID 4
#define CHILD_DEADLINE_MS 30000         /* the request, and an XDP program's load on a busy host */
#define XDP_MAX_FRAMES_DEFAULT 4096     /* per ring: at most 32 MiB of UMEM a socket (4 KiB chunks) */

struct policy {
    char allowed[MAX_ALLOWED][IFNAMSIZ];
    unsigned nallowed;
    char socket_path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
    char group[64];                     /* empty: the socket is open to every local user */
    mode_t mode;
    uint16_t ethertype;
    bool lock_filter;
    bool mark_set;
    uint32_t mark;
    bool xdp;                           /* hand out AF_XDP sockets too */
    unsigned xdp_max_frames;            /* largest ring (receive or send) asked for */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", localtime_r(&now, &tm));
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s pmeth-helperd[%d]: ", when, (int) getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: pmeth-helperd [-c FILE] [--allow IF[,IF...]] [--socket PATH] [--group NAME]\n"
            "                     [--mode OCTAL] [--ethertype N] [--lock-filter|--no-lock-filter]\n"
            "                     [--mark N] [--xdp|--no-xdp] [--xdp-max-frames N] [--check]\n"
            "Opens AF_PACKET sockets for btl pmeth on allowed interfaces and passes them to\n"
            "ordinary users' jobs over a unix socket.  Runs in the foreground, logs to stderr.\n"
            "  -c, --config FILE   configuration (default %s, if present)\n"
            "  -a, --allow LIST    interfaces users may open (replaces the file's 'allow')\n"
            "  -s, --socket PATH   where to listen (default %s)\n"
            "  -g, --group NAME    only this group may connect (socket mode 0660)\n"
            "  -m, --mode OCTAL    socket file mode (default 0666, or 0660 with a group)\n"
            "  -e, --ethertype N   the one EtherType served (default 0x%04x)\n"
            "      --lock-filter   lock each socket's receive filter (SO_LOCK_FILTER; default)\n"
            "      --no-lock-filter  leave it open (its holder can then receive anything)\n"
            "      --mark N        set SO_MARK N on each socket, for egress rules\n"
            "      --xdp           also hand out AF_XDP sockets fed by pmeth's XDP program\n"
            "                      (btl_pmeth_io_mode xdp/auto); their sends bypass qdiscs and\n"
            "                      netfilter's egress hook, so marks do not apply (default off)\n"
            "      --xdp-max-frames N  largest AF_XDP ring a job may ask for (default %d)\n"
            "      --check         print the policy and exit\n"
            "Configuration lines: allow IF..., socket PATH, socket_group NAME, socket_mode OCTAL,\n"
            "ethertype N, lock_filter yes|no, mark N, xdp yes|no, xdp_max_frames N; '#' starts\n"
            "a comment.\n",
            DEFAULT_CONFIG, PMETH_HELPER_DEFAULT_SOCKET, PMETH_WIRE_ETHERTYPE,
            XDP_MAX_FRAMES_DEFAULT);
}

/* "eth1,eth2" or "eth1 eth2": every name must be acceptable */
static int add_allowed(struct policy *p, const char *list, const char *where)
{
    char buf[1024];
    if (strlen(list) >= sizeof(buf)) {
        say("%s: interface list too long", where);
        return -1;
    }
    strcpy(buf, list);
    char *save = NULL;
    for (char *name = strtok_r(buf, ", \t", &save); name != NULL;
         name = strtok_r(NULL, ", \t", &save)) {
        if (!pmeth_helper_ifname_ok(name)) {
            say("%s: '%s' is not an interface name (1-15 of A-Z a-z 0-9 _ . -)", where, name);
            return -1;
        }
        if (p->nallowed == MAX_ALLOWED) {
            say("%s: more than %d interfaces", where, MAX_ALLOWED);
            return -1;
        }
        strcpy(p->allowed[p->nallowed++], name);
    }
    return 0;
}

static int parse_number(const char *text, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 0);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

static int set_ethertype(struct policy *p, const char *text, const char *where)
{
    unsigned long v;
    if (parse_number(text, 0xffff, &v) != 0 || v < 0x0600) {
        say("%s: ethertype '%s' is not a number from 0x0600 to 0xffff", where, text);
        return -1;
    }
    /* serving IPv4's (or ARP's, ...) EtherType would let any local user read that
     * protocol's traffic on the interfaces allowed */
    const char *owner = pmeth_wire_ethertype_owner((unsigned int) v);
    if (owner != NULL) {
        say("%s: ethertype '%s' is %s's; serve one no other protocol uses (0x88b5, 0x88b6)",
            where, text, owner);
        return -1;
    }
    p->ethertype = (uint16_t) v;
    return 0;
}

static int set_mark(struct policy *p, const char *text, const char *where)
{
    unsigned long v;
    if (parse_number(text, 0xffffffffu, &v) != 0 || v == 0) {
        say("%s: mark '%s' is not a number from 1 to 0xffffffff", where, text);
        return -1;
    }
    p->mark = (uint32_t) v;
    p->mark_set = true;
    return 0;
}

static int set_mode(struct policy *p, const char *text, const char *where)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(text, &end, 8);
    if (errno != 0 || end == text || *end != '\0' || text[0] == '-' || v > 0777) {
        say("%s: socket mode '%s' is not an octal file mode (e.g. 0660, 0666)", where, text);
        return -1;
    }
    p->mode = (mode_t) v;
    return 0;
}

static int set_path(char *dst, size_t cap, const char *text, const char *what, const char *where)
{
    if (text[0] != '/' || strlen(text) >= cap) {
        say("%s: %s '%s' must be an absolute path shorter than %zu bytes", where, what, text, cap);
        return -1;
    }
    strcpy(dst, text);
    return 0;
}

static int set_xdp_max(struct policy *p, const char *text, const char *where)
{
    unsigned long v;
    if (parse_number(text, PMETH_HELPER_XDP_FRAMES_MAX, &v) != 0 || v < 8) {
        say("%s: xdp_max_frames '%s' is not a number from 8 to %d", where, text,
            PMETH_HELPER_XDP_FRAMES_MAX);
        return -1;
    }
    p->xdp_max_frames = (unsigned) v;
    return 0;
}

static int set_bool(bool *dst, const char *text, const char *where)
{
    if (strcmp(text, "yes") == 0 || strcmp(text, "1") == 0 || strcmp(text, "true") == 0) {
        *dst = true;
    } else if (strcmp(text, "no") == 0 || strcmp(text, "0") == 0 || strcmp(text, "false") == 0) {
        *dst = false;
    } else {
        say("%s: '%s' is not yes or no", where, text);
        return -1;
    }
    return 0;
}

/* The configuration file: every line known, or the helper does not start. */
static int read_config(struct policy *p, const char *path, bool must_exist)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        if (errno == ENOENT && !must_exist) {
            return 0;
        }
        say("%s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024], where[PATH_MAX + 32];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        if (strchr(line, '\n') == NULL && !feof(f)) {
            say("%s: line too long", where);
            rc = -1;
            break;
        }
        char *hash = strchr(line, '#');
        if (hash != NULL) {
            *hash = '\0';
        }
        char *save = NULL, *key = strtok_r(line, " \t\r\n", &save);
        if (key == NULL) {
            continue;
        }
        char *value = strtok_r(NULL, "\r\n", &save);
        while (value != NULL && (*value == ' ' || *value == '\t')) {
            value++;
        }
        if (value == NULL || *value == '\0') {
            say("%s: '%s' needs a value", where, key);
            rc = -1;
            break;
        }
        for (char *end = value + strlen(value); end > value && (end[-1] == ' ' || end[-1] == '\t');) {
            *--end = '\0';
        }
        if (strcmp(key, "allow") == 0) {
            rc = add_allowed(p, value, where);
        } else if (strcmp(key, "socket") == 0) {
            rc = set_path(p->socket_path, sizeof(p->socket_path), value, "socket", where);
        } else if (strcmp(key, "socket_group") == 0) {
            rc = snprintf(p->group, sizeof(p->group), "%s", value) < (int) sizeof(p->group) ? 0 : -1;
        } else if (strcmp(key, "socket_mode") == 0) {
            rc = set_mode(p, value, where);
        } else if (strcmp(key, "ethertype") == 0) {
            rc = set_ethertype(p, value, where);
        } else if (strcmp(key, "lock_filter") == 0) {
            rc = set_bool(&p->lock_filter, value, where);
        } else if (strcmp(key, "mark") == 0) {
            rc = set_mark(p, value, where);
        } else if (strcmp(key, "xdp") == 0) {
            rc = set_bool(&p->xdp, value, where);
        } else if (strcmp(key, "xdp_max_frames") == 0) {
            rc = set_xdp_max(p, value, where);
        } else {
            say("%s: unknown setting '%s'", where, key);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

static bool allowed(const struct policy *p, const char *ifname)
{
    for (unsigned i = 0; i < p->nallowed; i++) {
        if (strcmp(p->allowed[i], ifname) == 0) {
            return true;
        }
    }
    return false;
}

/* Is process PID in our network namespace?  A socket made here and bound by
 * interface index there would name another interface (or none). */
static bool same_netns(pid_t pid)
{
    char path[64];
    struct stat mine, theirs;
    snprintf(path, sizeof(path), "/proc/%d/ns/net", (int) pid);
    return pid > 0 && stat("/proc/self/ns/net", &mine) == 0 && stat(path, &theirs) == 0
           && mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

/* A socket being set up failed (errno says how): closed; -errno. */
static int close_failed(int fd)
{
    int e = errno;
    close(fd);
    return -e;
}

/* The socket for RQ on interface IFINDEX, configured as the policy says; -errno. */
static int open_packet_socket(const struct policy *p, const struct pmeth_helper_request *rq,
                              int ifindex, const char **step)
{
    /* protocol 0: nothing is received until the job binds it, behind the filter */
    *step = "socket(AF_PACKET)";
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    struct sock_filter code[PMETH_FILTER_MAX_LEN];
    struct sock_fprog prog = {
        .len = (unsigned short) pmeth_filter_build(code, rq->ethertype, rq->job_key,
                                                          rq->dest_id, ifindex),
        .filter = code};
    int one = 1;
    *step = "SO_ATTACH_FILTER";
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0) {
        goto fail;
    }
    *step = "SO_LOCK_FILTER";
    if (p->lock_filter && setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) != 0) {
        goto fail;
    }
    *step = "SO_MARK";
    if (p->mark_set && setsockopt(fd, SOL_SOCKET, SO_MARK, &p->mark, sizeof(p->mark)) != 0) {
        goto fail;
    }
    return fd;
fail:
    return close_failed(fd);
}

/* Op 1's send socket (PMETH_HELPER_PACKET_SEND_SOCKET), for frames sent past
 * the ring: bound to the interface with protocol 0 and a locked filter that
 * takes nothing, so that rebinding it cannot make it receive; marked like the
 * first.  It lets the job do nothing the first socket does not (that one sends
 * any frame too).  -errno. */
static int open_send_socket(const struct policy *p, int ifindex, const char **step)
{
    *step = "socket(AF_PACKET) to send";
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    struct sock_filter nothing[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
    struct sock_fprog prog = {.len = 1, .filter = nothing};
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = 0,
                              .sll_ifindex = ifindex};
    int one = 1;
    *step = "SO_ATTACH_FILTER on the send socket";
    if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) != 0) {
        goto fail;
    }
    *step = "SO_LOCK_FILTER on the send socket";
    if (setsockopt(fd, SOL_SOCKET, SO_LOCK_FILTER, &one, sizeof(one)) != 0) {
        goto fail;
    }
    *step = "SO_MARK on the send socket";
    if (p->mark_set && setsockopt(fd, SOL_SOCKET, SO_MARK, &p->mark, sizeof(p->mark)) != 0) {
        goto fail;
    }
    *step = "bind of the send socket";
    if (bind(fd, (struct sockaddr *) &sll, sizeof(sll)) != 0) {
        goto fail;
    }
    return fd;
fail:
    return close_failed(fd);
}

static void reply(int conn, enum pmeth_helper_status status, uint16_t flags, const int *fds,
                  unsigned nfds, const char *text)
{
    uint8_t msg[PMETH_HELPER_REPLY_MAX];
    size_t len = pmeth_helper_encode_reply(status, flags, text, msg);
    int rc = pmeth_helper_send(conn, msg, len, fds, nfds);
    if (rc != 0) {
        say("  reply not delivered: %s", strerror(-rc));
    }
}

/* Op 2: an AF_XDP socket, set up by the ring layer's own open (the UMEM in a
 * memfd), handed over with the memfd and the program's link. */
static void serve_xdp(const struct policy *p, int conn, const char *who,
                      const struct pmeth_helper_request *rq, int ifindex)
{
    char text[PMETH_HELPER_TEXT_MAX + 1];
    bool rx_only = rq->xdp_flags & PMETH_HELPER_XDP_RECEIVE_ONLY;
    /* the answer to a job that falls back (btl_pmeth_io_mode auto) is not logged:
     * every rank of every job would ask, once per interface */
    bool quiet = rq->xdp_flags & PMETH_HELPER_XDP_IF_OFFERED;
    if (!p->xdp) {
        snprintf(text, sizeof(text), "this helper hands out AF_PACKET sockets only (its 'xdp' "
                 "setting is off)");
        if (!quiet) {
            say("%s: %s: AF_XDP refused: xdp off", who, rq->ifname);
        }
#ifdef PMETH_HELPER_BEFORE_FLAGS
        reply(conn, PMETH_HELPER_NOT_ALLOWED, 0, NULL, 0, text);
#else
        reply(conn, PMETH_HELPER_XDP_OFF, 0, NULL, 0, text);
#endif
        return;
    }
    if (rq->rx_frames > p->xdp_max_frames || rq->tx_frames > p->xdp_max_frames) {
        snprintf(text, sizeof(text), "AF_XDP rings of %u / %u frames asked for; this helper "
                 "gives at most %u (xdp_max_frames; btl_pmeth_rx_frames / tx_frames)",
                 rq->rx_frames, rq->tx_frames, p->xdp_max_frames);
        say("%s: %s: AF_XDP refused: rings too large", who, rq->ifname);
        reply(conn, PMETH_HELPER_NOT_ALLOWED, 0, NULL, 0, text);
        return;
    }
#ifdef PMETH_RING_HAVE_XDP
    /* frame_size only steers the ring layer's choice of chunk, as the job's does */
    uint32_t chunk = rq->xdp_flags & PMETH_HELPER_XDP_CHUNK_2K ? 2048 : 4096;
    struct pmeth_ring_config cfg = {
        .ifname = rq->ifname, .mode = PMETH_IO_XDP, .ethertype = rq->ethertype,
        .job_key = rq->job_key, .my_id = rq->dest_id, .frame_size = chunk - 256,
        .tx_frames = rq->tx_frames, .rx_frames = rq->rx_frames, .fd = -1, .umem_shared = true};
    struct pmeth_xdp *x = NULL;
    struct pmeth_xdp_handover h;
    char err[PMETH_HELPER_TEXT_MAX - 40];
    int rc = rx_only ? pmeth_xdp_open_small(&cfg, &x, err, sizeof(err))
                     : pmeth_xdp_open(&cfg, &x, err, sizeof(err));
    if (rc == 0 && (rc = pmeth_xdp_hand_over(x, &h)) != 0) {
        snprintf(err, sizeof(err), "no descriptors to hand over");
    }
    if (rc != 0) {
        snprintf(text, sizeof(text), "the helper's AF_XDP setup failed: %s", err);
        say("%s: %s: AF_XDP failed: %s", who, rq->ifname, err);
        reply(conn, PMETH_HELPER_FAILED, 0, NULL, 0, text);
        pmeth_xdp_close(x);
        return;
    }
    int fds[3] = {h.xsk_fd, h.umem_fd, h.link_fd};
    uint16_t flags = h.generic_hook ? PMETH_HELPER_XDP_GENERIC : 0;
    say("%s: %s: AF_XDP granted (ifindex %d, %s, %u receive / %u send frames of %u B, "
        "EtherType 0x%04x, job key 0x%08x, id %u)", who, rq->ifname, ifindex,
        pmeth_xdp_mode_name(x), rq->rx_frames, rq->tx_frames, chunk, rq->ethertype,
        rq->job_key, rq->dest_id);
    reply(conn, PMETH_HELPER_GRANTED, flags, fds, 3, "granted");
    pmeth_xdp_close(x);     /* our copies: the program stays with the job's link */
#else
    (void) ifindex;
    (void) rx_only;
    snprintf(text, sizeof(text), "this helper was built without AF_XDP (no libxdp, libbpf or "
             "clang at configure time)");
    /* logged even to a job that falls back: the site turned 'xdp' on and gets none */
    say("%s: %s: AF_XDP refused: not built in", who, rq->ifname);
    reply(conn, PMETH_HELPER_XDP_OFF, 0, NULL, 0, text);
#endif
}

/* CONN, from the process CRED names (serve_apart read it before it forked us) */
static void serve(const struct policy *p, int conn, struct ucred cred)
{
    struct passwd *pw = getpwuid(cred.uid);
    char who[128];
    snprintf(who, sizeof(who), "uid %u (%s) pid %d", (unsigned) cred.uid,
             pw != NULL ? pw->pw_name : "?", (int) cred.pid);

    struct pollfd pfd = {.fd = conn, .events = POLLIN};
    int ready = poll(&pfd, 1, REQUEST_TIMEOUT_MS);
    if (ready <= 0) {
        say("%s: no request within %d ms: dropped", who, REQUEST_TIMEOUT_MS);
        return;
    }
    uint8_t msg[PMETH_HELPER_REQ_LEN + 1];     /* one more: a longer message shows as truncated */
    int passed[1];
    unsigned npassed, extra;
    ssize_t n = pmeth_helper_recv(conn, msg, sizeof(msg), passed, 1, &npassed, &extra);
    if (npassed > 0) {
        close(passed[0]);               /* requests carry no descriptor */
    }
    char text[PMETH_HELPER_TEXT_MAX + 1];
    if (n == -ECONNRESET) {
        say("%s: closed without a request", who);
        return;
    }
    if (n < 0 && n != -EMSGSIZE) {
        say("%s: reading the request: %s", who, strerror((int) -n));
        return;
    }
    struct pmeth_helper_request rq;
    enum pmeth_helper_fault fault = n < 0 ? PMETH_HELPER_FAULT_LENGTH
                                          : pmeth_helper_parse_request(msg, (size_t) n, &rq);
    if (fault == PMETH_HELPER_OK && (npassed > 0 || extra > 0)) {
        fault = PMETH_HELPER_FAULT_FLAGS;
    }
    if (fault != PMETH_HELPER_OK) {
        snprintf(text, sizeof(text), "malformed request: %s", pmeth_helper_fault_name(fault));
        say("%s: refused: %s", who, text);
        reply(conn, PMETH_HELPER_BAD_REQUEST, 0, NULL, 0, text);
        return;
    }
    if (rq.ethertype != p->ethertype) {
        snprintf(text, sizeof(text), "this helper serves EtherType 0x%04x only, not 0x%04x",
                 p->ethertype, rq.ethertype);
        say("%s: %s: refused: %s", who, rq.ifname, text);
        reply(conn, PMETH_HELPER_WRONG_ETHERTYPE, 0, NULL, 0, text);
        return;
    }
    if (!allowed(p, rq.ifname)) {
        snprintf(text, sizeof(text), "interface %s is not one the site allowed for pmeth (ask "
                 "the administrator to add it to pmeth-helperd's allow list)", rq.ifname);
        say("%s: %s: refused: not allowed", who, rq.ifname);
        reply(conn, PMETH_HELPER_NOT_ALLOWED, 0, NULL, 0, text);
        return;
    }
    if (!same_netns(cred.pid)) {
        snprintf(text, sizeof(text), "the asking process is in another network namespace than "
                 "this helper (run one helper in each)");
        say("%s: %s: refused: other network namespace", who, rq.ifname);
        reply(conn, PMETH_HELPER_OTHER_NAMESPACE, 0, NULL, 0, text);
        return;
    }
    int ifindex = (int) if_nametoindex(rq.ifname);
    if (ifindex == 0) {
        snprintf(text, sizeof(text), "interface %s does not exist on this host", rq.ifname);
        say("%s: %s: refused: no such interface", who, rq.ifname);
        reply(conn, PMETH_HELPER_NO_INTERFACE, 0, NULL, 0, text);
        return;
    }
    if (rq.op == PMETH_HELPER_OP_OPEN_XDP) {
        serve_xdp(p, conn, who, &rq, ifindex);
        return;
    }
    const char *step = "";
    unsigned nfds = pmeth_helper_granted_fds(&rq);
    int fd = open_packet_socket(p, &rq, ifindex, &step), send_fd = -1;
    if (fd >= 0 && nfds == 2 && (send_fd = open_send_socket(p, ifindex, &step)) < 0) {
        close(fd);
        fd = send_fd;
    }
    int fds[2] = {fd, send_fd};
    if (fd < 0) {
        snprintf(text, sizeof(text), "the helper's %s failed: %s", step, strerror(-fd));
        say("%s: %s: failed: %s", who, rq.ifname, text);
        reply(conn, PMETH_HELPER_FAILED, 0, NULL, 0, text);
        return;
    }
    uint16_t flags = (uint16_t) ((p->lock_filter ? PMETH_HELPER_FILTER_LOCKED : 0)
                                 | (p->mark_set ? PMETH_HELPER_MARKED : 0));
    say("%s: %s: granted (ifindex %d, EtherType 0x%04x, job key 0x%08x, id %u%s%s%s)", who,
        rq.ifname, ifindex, rq.ethertype, rq.job_key, rq.dest_id,
        p->lock_filter ? ", filter locked" : "", p->mark_set ? ", marked" : "",
        nfds == 2 ? ", with a send socket" : "");
    reply(conn, PMETH_HELPER_GRANTED, flags, fds, nfds, "granted");
    for (unsigned i = 0; i < nfds; i++) {
        close(fds[i]);                  /* the job holds the only references now */
    }
}

/* ---- one child process a connection ---- */

struct child {
    pid_t pid;
    uid_t uid;
    uint64_t started_ms;
};
static struct child children[CHILDREN_MAX];
static unsigned nchildren;

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t) t.tv_sec * 1000 + (uint64_t) t.tv_nsec / 1000000;
}

/* Children that ended are forgotten; one past its deadline is killed (a kill
 * ends even a close that waits: the waits give way to a fatal signal). */
static void reap_children(void)
{
    uint64_t now = now_ms();
    for (unsigned i = 0; i < nchildren;) {
        struct child *c = &children[i];
        pid_t r = waitpid(c->pid, NULL, WNOHANG);
        if (r == c->pid || (r < 0 && errno == ECHILD)) {
            children[i] = children[--nchildren];
            continue;
        }
        if (now - c->started_ms > CHILD_DEADLINE_MS) {
            say("request of uid %u (pid %d serving it) not done in %d ms: stopped",
                (unsigned) c->uid, (int) c->pid, CHILD_DEADLINE_MS);
            kill(c->pid, SIGKILL);
            c->started_ms = now;        /* reaped at a later pass */
        }
        i++;
    }
}

static unsigned children_of(uid_t uid)
{
    unsigned n = 0;
    for (unsigned i = 0; i < nchildren; i++) {
        n += children[i].uid == uid;
    }
    return n;
}

/* CONN, just accepted: served by a child, or refused when its user has
 * CHILDREN_PER_UID requests in progress already. */
static void serve_apart(const struct policy *p, int ls, int conn)
{
    struct ucred cred = {.pid = 0, .uid = (uid_t) -1, .gid = (gid_t) -1};
    socklen_t clen = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0) {
        say("connection without peer credentials (%s): dropped", strerror(errno));
        return;
    }
    if (children_of(cred.uid) >= CHILDREN_PER_UID) {
        char text[PMETH_HELPER_TEXT_MAX + 1];
        snprintf(text, sizeof(text), "%d requests of this user are in progress already; "
                 "try again", CHILDREN_PER_UID);
        say("uid %u pid %d: refused: %s", (unsigned) cred.uid, (int) cred.pid, text);
        reply(conn, PMETH_HELPER_FAILED, 0, NULL, 0, text);
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        say("uid %u pid %d: no process to serve it (fork: %s): dropped", (unsigned) cred.uid,
            (int) cred.pid, strerror(errno));
        return;
    }
    if (pid == 0) {
        close(ls);
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        serve(p, conn, cred);
        _exit(0);
    }
    children[nchildren++] = (struct child){.pid = pid, .uid = cred.uid, .started_ms = now_ms()};
}

/* Listen at the policy's path: a stale socket left by a killed helper is
 * replaced, a live helper or a file that is not a socket is not touched. */
static int listen_at(const struct policy *p, struct stat *bound)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    memcpy(sun.sun_path, p->socket_path, strlen(p->socket_path) + 1);
    struct stat st;
    if (lstat(p->socket_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            say("%s exists and is not a socket: not touching it", p->socket_path);
            return -1;
        }
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        int live = probe >= 0 && connect(probe, (struct sockaddr *) &sun, sizeof(sun)) == 0;
        if (probe >= 0) {
            close(probe);
        }
        if (live) {
            say("another helper is listening at %s", p->socket_path);
            return -1;
        }
        unlink(p->socket_path);
    }
    gid_t gid = (gid_t) -1;
    if (p->group[0] != '\0') {
        struct group *g = getgrnam(p->group);
        if (g == NULL) {
            say("group %s does not exist", p->group);
            return -1;
        }
        gid = g->gr_gid;
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0) {
        say("socket(AF_UNIX): %s", strerror(errno));
        return -1;
    }
    /* created owner-only, widened once the group is right: never briefly too open */
    mode_t old = umask(0177);
    int rc = bind(s, (struct sockaddr *) &sun, sizeof(sun));
    umask(old);
    if (rc != 0) {
        say("bind %s: %s", p->socket_path, strerror(errno));
        close(s);
        return -1;
    }
    if ((gid != (gid_t) -1 && chown(p->socket_path, 0, gid) != 0)
        || chmod(p->socket_path, p->mode) != 0 || listen(s, 64) != 0
        || stat(p->socket_path, bound) != 0) {
        say("setting up %s: %s", p->socket_path, strerror(errno));
        unlink(p->socket_path);
        close(s);
        return -1;
    }
    return s;
}

/* Remove our socket file, unless someone replaced it meanwhile. */
static void unlink_ours(const char *path, const struct stat *bound)
{
    struct stat st;
    if (lstat(path, &st) == 0 && st.st_ino == bound->st_ino && st.st_dev == bound->st_dev) {
        unlink(path);
    }
}

int main(int argc, char **argv)
{
    struct policy p = {.mode = 0666, .ethertype = PMETH_WIRE_ETHERTYPE, .lock_filter = true,
                       .xdp_max_frames = XDP_MAX_FRAMES_DEFAULT};
    strcpy(p.socket_path, PMETH_HELPER_DEFAULT_SOCKET);
    const char *config = DEFAULT_CONFIG;
    bool config_given = false, check_only = false, mode_given = false;
    enum { OPT_LOCK = 256, OPT_NO_LOCK, OPT_MARK, OPT_CHECK, OPT_XDP, OPT_NO_XDP, OPT_XDP_MAX };
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"allow", required_argument, NULL, 'a'},
        {"socket", required_argument, NULL, 's'},  {"group", required_argument, NULL, 'g'},
        {"mode", required_argument, NULL, 'm'},    {"ethertype", required_argument, NULL, 'e'},
        {"lock-filter", no_argument, NULL, OPT_LOCK},
        {"no-lock-filter", no_argument, NULL, OPT_NO_LOCK},
        {"mark", required_argument, NULL, OPT_MARK}, {"check", no_argument, NULL, OPT_CHECK},
        {"xdp", no_argument, NULL, OPT_XDP},        {"no-xdp", no_argument, NULL, OPT_NO_XDP},
        {"xdp-max-frames", required_argument, NULL, OPT_XDP_MAX},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};

    /* the file first, whatever the order of the arguments: the command line wins */
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            config = argv[i + 1];
            config_given = true;
        }
    }
    if (read_config(&p, config, config_given) != 0) {
        return 2;
    }
    bool allow_given = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "c:a:s:g:m:e:h", opts, NULL)) != -1) {
        int rc = 0;
        switch (opt) {
        case 'c':
            break;
        case 'a':
            if (!allow_given) {
                p.nallowed = 0;
                allow_given = true;
            }
            rc = add_allowed(&p, optarg, "--allow");
            break;
        case 's':
            rc = set_path(p.socket_path, sizeof(p.socket_path), optarg, "socket", "--socket");
            break;
        case 'g':
            rc = snprintf(p.group, sizeof(p.group), "%s", optarg) < (int) sizeof(p.group) ? 0 : -1;
            break;
        case 'm':
            rc = set_mode(&p, optarg, "--mode");
            mode_given = true;
            break;
        case 'e':
            rc = set_ethertype(&p, optarg, "--ethertype");
            break;
        case OPT_LOCK:
            p.lock_filter = true;
            break;
        case OPT_NO_LOCK:
            p.lock_filter = false;
            break;
        case OPT_MARK:
            rc = set_mark(&p, optarg, "--mark");
            break;
        case OPT_CHECK:
            check_only = true;
            break;
        case OPT_XDP:
            p.xdp = true;
            break;
        case OPT_NO_XDP:
            p.xdp = false;
            break;
        case OPT_XDP_MAX:
            rc = set_xdp_max(&p, optarg, "--xdp-max-frames");
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
        if (rc != 0) {
            return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (p.group[0] != '\0' && !mode_given) {
        p.mode = 0660;
    }
    if (p.nallowed == 0) {
        say("no interface allowed: give --allow IF[,IF...] or 'allow' lines in %s", config);
        return 2;
    }
    char list[MAX_ALLOWED * IFNAMSIZ + 1] = "";
    for (unsigned i = 0; i < p.nallowed; i++) {
        strcat(list, i > 0 ? "," : "");
        strcat(list, p.allowed[i]);
    }
    if (check_only) {
        printf("allow %s\nsocket %s\nsocket_group %s\nsocket_mode %04o\nethertype 0x%04x\n"
               "lock_filter %s\nmark %u\nxdp %s\nxdp_max_frames %u\n", list, p.socket_path,
               p.group[0] != '\0' ? p.group : "(none)", (unsigned) p.mode, p.ethertype,
               p.lock_filter ? "yes" : "no", p.mark_set ? p.mark : 0, p.xdp ? "yes" : "no",
               p.xdp_max_frames);
        return 0;
    }

    struct sigaction sa = {.sa_handler = on_signal};   /* no SA_RESTART: poll returns */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct stat bound;
    int ls = listen_at(&p, &bound);
    if (ls < 0) {
        return 1;
    }
    say("listening at %s (mode %04o%s%s): interfaces %s, EtherType 0x%04x, receive filter %s%s%s",
        p.socket_path, (unsigned) p.mode, p.group[0] != '\0' ? ", group " : "", p.group, list,
        p.ethertype, p.lock_filter ? "locked" : "NOT locked (users can widen it)",
        p.mark_set ? ", sockets marked" : "", p.xdp ? ", AF_XDP sockets too" : "");
    if (!p.mark_set) {
        say("sends are not confined: a socket handed out may send any frame on any interface "
            "here; set 'mark' and an nftables egress rule to confine them (btl_pmeth/README.md, "
            "'Running as an ordinary user')");
    }
    while (!stop_signal) {
        reap_children();
        /* with every place taken, connections wait in the backlog; while children
         * run, look at them every 100 ms */
        struct pollfd pfd = {.fd = ls, .events = nchildren < CHILDREN_MAX ? POLLIN : 0};
        if (poll(&pfd, 1, nchildren > 0 ? 100 : -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            say("poll: %s", strerror(errno));
            break;
        }
        if (!(pfd.revents & POLLIN)) {
            continue;
        }
        int conn = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
                say("accept: %s", strerror(errno));
            }
            continue;
        }
        serve_apart(&p, ls, conn);
        close(conn);
    }
    for (unsigned i = 0; i < nchildren; i++) {
        kill(children[i].pid, SIGKILL);
    }
    while (nchildren > 0 && waitpid(-1, NULL, 0) > 0) {
        nchildren--;
    }
    close(ls);
    unlink_ours(p.socket_path, &bound);
    say("stopped (%s), %s removed", stop_signal ? strsignal(stop_signal) : "error", p.socket_path);
    return 0;
}
