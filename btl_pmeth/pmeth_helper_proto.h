/*
 * The pmeth helper's protocol: how a job without CAP_NET_RAW gets an AF_PACKET
 * socket (or, where the site allows it, an AF_XDP socket) from pmeth-helperd
 * (btl_pmeth/helper/), a root daemon that opens it on an interface the site
 * allowed and passes it back over a unix socket (SCM_RIGHTS).  No MPI; shared by the daemon, the component's client
 * (pmeth_helper_client.c) and the unit test.
 *
 * One request and one reply per connection, each a single SOCK_SEQPACKET
 * message of fixed layout, integers little-endian (as on pmeth's wire):
 *
 *   request, exactly PMETH_HELPER_REQ_LEN (40) bytes
 *     0  magic "PMHQ"          4  version (1), u16     6  op, u16 (1: a packet socket,
 *                                                          2: an AF_XDP socket)
 *     8  interface name, 16 bytes: 1-15 name bytes, NUL padded to the end
 *    24  EtherType, u16       26  flags, u16 (op 1: PMETH_HELPER_PACKET_*; op 2:
 *                                                  PMETH_HELPER_XDP_*)
 *    28  job key, u32         32  destination id, u32
 *    36  op 1: reserved, u32 (0)
 *        op 2: receive frames, u16; send frames, u16 (powers of two from 8 to
 *              PMETH_HELPER_XDP_FRAMES_MAX; no send frames when receive-only)
 *
 *   reply, PMETH_HELPER_REPLY_HDR_LEN (12) + text bytes, nothing more
 *     0  magic "PMHR"          4  version (1), u16     6  status (enum pmeth_helper_status), u16
 *     8  flags, u16 (PMETH_HELPER_FILTER_LOCKED, PMETH_HELPER_MARKED, PMETH_HELPER_XDP_GENERIC)
 *    10  text length, u16 (at most PMETH_HELPER_TEXT_MAX); the text: printable ASCII, no NUL
 *
 * A granted reply carries exactly one descriptor for op 1 (the packet socket),
 * two with PMETH_HELPER_PACKET_SEND_SOCKET (then the send socket), and three
 * for op 2, in this order: the bound AF_XDP socket, the memfd of its UMEM, the
 * BPF link of the XDP program that feeds it (pmeth_ring.h, struct
 * pmeth_xdp_handover); any other reply carries none.  A helper of an earlier
 * version refuses op 2 as an unknown operation, and the job falls back; it
 * refuses the send-socket flag as malformed, and the job asks again without.
 * Everything is checked on both sides: a message of another length, an
 * unknown version, op or flag, a non-zero reserved field, an interface name
 * with a byte outside [A-Za-z0-9_.-] or bytes after its NUL, "." or ".." is
 * refused with the fault named (enum pmeth_helper_fault).
 *
 * The job key and destination id are the ones the ring layer's receive filter
 * matches (pmeth_ring_packet.c): the helper attaches the same filter,
 * restricted to the interface asked for, so that it may lock it.
 */
#ifndef PMETH_HELPER_PROTO_H
#define PMETH_HELPER_PROTO_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PMETH_HELPER_VERSION 1
#define PMETH_HELPER_OP_OPEN_PACKET 1
#define PMETH_HELPER_OP_OPEN_XDP 2
#define PMETH_HELPER_MAX_FDS 3              /* descriptors a granted reply carries, at most */
#define PMETH_HELPER_XDP_FRAMES_MAX 32768

/* request flags of op 1 */
#define PMETH_HELPER_PACKET_SEND_SOCKET 0x1 /* also a socket for lone frames: bound to the
                                               interface with protocol 0, no rings, a locked
                                               filter that takes nothing (pmeth_ring.h,
                                               tx_post_now); marked like the first */
/* request flags of op 2 */
#define PMETH_HELPER_XDP_RECEIVE_ONLY 0x1   /* no send ring: frames up to one 4 KiB chunk in */
#define PMETH_HELPER_XDP_CHUNK_2K 0x2       /* 2 KiB chunks (frames up to 1792 B), else 4 KiB */
#define PMETH_HELPER_XDP_IF_OFFERED 0x4     /* the job falls back to AF_PACKET when refused
                                               (btl_pmeth_io_mode auto): a helper that hands
                                               out no AF_XDP sockets says so
                                               (PMETH_HELPER_XDP_OFF) without logging it, as
                                               every rank of every job would ask */
/* The request flags this build takes.  PMETH_HELPER_BEFORE_FLAGS builds the protocol as
 * it was before its optional flags (the send socket of 2026-11-28, IF_OFFERED of
 * 2026-12-07): such a helper refuses either as malformed and refuses AF_XDP as not
 * allowed.  Only test/pmeth's pmeth_helperd_before is built so, to test a new job
 * against an old helper with the daemon's own code. */
#ifdef PMETH_HELPER_BEFORE_FLAGS
#define PMETH_HELPER_PACKET_FLAGS_KNOWN 0
#define PMETH_HELPER_XDP_FLAGS_KNOWN (PMETH_HELPER_XDP_RECEIVE_ONLY | PMETH_HELPER_XDP_CHUNK_2K)
#else
#define PMETH_HELPER_PACKET_FLAGS_KNOWN PMETH_HELPER_PACKET_SEND_SOCKET
#define PMETH_HELPER_XDP_FLAGS_KNOWN (PMETH_HELPER_XDP_RECEIVE_ONLY | PMETH_HELPER_XDP_CHUNK_2K \
                                      | PMETH_HELPER_XDP_IF_OFFERED)
#endif
#define PMETH_HELPER_REQ_LEN 40
#define PMETH_HELPER_REPLY_HDR_LEN 12
#define PMETH_HELPER_TEXT_MAX 240
#define PMETH_HELPER_REPLY_MAX (PMETH_HELPER_REPLY_HDR_LEN + PMETH_HELPER_TEXT_MAX)
#define PMETH_HELPER_DEFAULT_SOCKET "/run/pmeth-helper.sock"

/* reply flags */
#define PMETH_HELPER_FILTER_LOCKED 0x1  /* SO_LOCK_FILTER: the receive filter cannot be changed */
#define PMETH_HELPER_MARKED 0x2         /* SO_MARK set: the site's egress rules know its frames */
#define PMETH_HELPER_XDP_GENERIC 0x4    /* op 2: the program runs at the generic (skb) hook */

enum pmeth_helper_status {
    PMETH_HELPER_GRANTED = 0,
    PMETH_HELPER_BAD_REQUEST,           /* malformed: the text names the fault */
    PMETH_HELPER_NOT_ALLOWED,           /* interface not in the site's list */
    PMETH_HELPER_NO_INTERFACE,          /* allowed, but not present in the helper's namespace */
    PMETH_HELPER_WRONG_ETHERTYPE,       /* the helper serves one EtherType only */
    PMETH_HELPER_OTHER_NAMESPACE,       /* the client is in another network namespace */
    PMETH_HELPER_FAILED,                /* the helper's own socket calls failed */
    PMETH_HELPER_XDP_OFF,               /* op 2: this helper hands out no AF_XDP sockets at
                                           all (its 'xdp' setting is off, or it was built
                                           without): the job need not ask again for
                                           another interface.  A client of before this
                                           status reads it as a malformed reply, a refusal
                                           all the same */
    PMETH_HELPER_STATUS_COUNT
};

enum pmeth_helper_fault {
    PMETH_HELPER_OK = 0,
    PMETH_HELPER_FAULT_LENGTH,
    PMETH_HELPER_FAULT_MAGIC,
    PMETH_HELPER_FAULT_VERSION,
    PMETH_HELPER_FAULT_OP,
    PMETH_HELPER_FAULT_IFNAME,
    PMETH_HELPER_FAULT_ETHERTYPE,
    PMETH_HELPER_FAULT_FLAGS,
    PMETH_HELPER_FAULT_RESERVED,
    PMETH_HELPER_FAULT_STATUS,
    PMETH_HELPER_FAULT_TEXT,
    PMETH_HELPER_FAULT_RING,
    PMETH_HELPER_FAULT_COUNT
};

struct pmeth_helper_request {
    uint16_t op;                        /* 0 is taken as PMETH_HELPER_OP_OPEN_PACKET */
    char ifname[IFNAMSIZ];              /* NUL-terminated */
    uint16_t ethertype;
    uint32_t job_key, dest_id;
    uint16_t packet_flags;              /* op 1 */
    uint16_t xdp_flags;                 /* op 2 */
    uint16_t rx_frames, tx_frames;      /* op 2 */
};

struct pmeth_helper_reply {
    enum pmeth_helper_status status;
    uint16_t flags;
    char text[PMETH_HELPER_TEXT_MAX + 1];   /* NUL-terminated */
};

const char *pmeth_helper_status_name(enum pmeth_helper_status s);
const char *pmeth_helper_fault_name(enum pmeth_helper_fault f);

/* Is NAME a plausible interface name: 1-15 bytes of [A-Za-z0-9_.-], not "." or ".."?
 * (Stricter than the kernel, which also takes most punctuation.) */
int pmeth_helper_ifname_ok(const char *name);

/* Encoders write exactly PMETH_HELPER_REQ_LEN bytes / return the reply's length;
 * the request's interface name must pass pmeth_helper_ifname_ok. */
void pmeth_helper_encode_request(const struct pmeth_helper_request *rq,
                                 uint8_t out[PMETH_HELPER_REQ_LEN]);
size_t pmeth_helper_encode_reply(enum pmeth_helper_status status, uint16_t flags,
                                 const char *text, uint8_t out[PMETH_HELPER_REPLY_MAX]);

/* Parsers: PMETH_HELPER_OK and *OUT filled, or the first fault found. */
enum pmeth_helper_fault pmeth_helper_parse_request(const void *msg, size_t len,
                                                   struct pmeth_helper_request *out);
enum pmeth_helper_fault pmeth_helper_parse_reply(const void *msg, size_t len,
                                                 struct pmeth_helper_reply *out);

/* The number of descriptors a granted reply to RQ carries. */
unsigned pmeth_helper_granted_fds(const struct pmeth_helper_request *rq);

/* One message on a SOCK_SEQPACKET socket, with the NFDS descriptors FDS
 * attached (at most PMETH_HELPER_MAX_FDS).  0, or -errno. */
int pmeth_helper_send(int sock, const void *msg, size_t len, const int *fds, unsigned nfds);

/* One message into BUF.  Its length, or -errno: -EMSGSIZE when it did not fit
 * (it is discarded), -ECONNRESET at end of stream.  FDS[0 .. *NFDS) get the
 * descriptors that came with it, in order.  When more than MAXFDS came (or the
 * kernel cut some off) none is kept: all are closed, *NFDS is 0 and
 * *EXTRA_FDS is non-zero.  Received descriptors are close-on-exec. */
ssize_t pmeth_helper_recv(int sock, void *buf, size_t cap, int *fds, unsigned maxfds,
                          unsigned *nfds, unsigned *extra_fds);

/* The receive filter of a helper-opened socket is pmeth_filter_build()'s
 * (pmeth_filter.h) bound to the interface asked for. */

#endif
