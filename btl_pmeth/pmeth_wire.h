/*
 * pmeth's wire format: what crosses the Ethernet, and its parser.  No MPI.
 *
 * A frame is a 14-byte Ethernet header (EtherType 0x88B5 by default, IEEE 802
 * "local experimental 1") and a 50-byte pmeth header, then the payload, which
 * starts 64 bytes into the frame (8-byte aligned when the frame is):
 *
 *   off size field
 *    0   6   destination MAC
 *    6   6   source MAC
 *   12   2   EtherType (network order, as Ethernet has it)
 *   14   4   job key        \  fixed offsets: the kernel filters on them
 *   18   4   destination id  } (classic BPF on AF_PACKET) so a frame reaches
 *   22   4   source id      /   only the process it is for
 *   26   1   version (2; 1 had no bytes 56-63)
 *   27   1   type (DATA, ACK, PROBE, PROBE_REPLY, PATH_DOWN; PEEK, GRANT, CREDIT
 *            and PATH_PROBE are reserved: grants ride on DATA and ACK frames, in
 *            byte 35 under the CREDIT flag)
 *   28   1   flags: bit 0 ECHO (bytes 34 and 52-55 hold an echo); bit 1
 *            CURRENT (sent on the path the sender's path migration (apm)
 *            runs on: the receiver sends its standalone acks back on that
 *            path, so a link dead one way loses neither direction); bit 2
 *            CREDIT (byte 35 holds a grant, pmeth_credit.h); bit 3 MORE (DATA:
 *            this frame uses up the sender's grant, ack it at once); bit 4 CONT
 *            (DATA: the payload goes on in the frame with the next sequence
 *            number: one ob1 fragment over several frames, seed 001's buffer
 *            array, at most PMETH_WIRE_ARRAY_MAX frames); bit 5 DELAY
 *            (DATA, ACK: bytes 60-63 hold a one-way delay); others 0
 *   29   1   link: the sender's link index
 *   30   1   BTL tag (DATA only)
 *   31   1   transmission (DATA): 0 the first, n the n-th resend (at most 255)
 *   32   2   payload length
 *   34   1   echo: the transmission number of the resent frame echoed
 *   35   1   credit (with CREDIT, else 0): frames the sender of this frame
 *            lets its receiver have in flight beyond the ack below, in units
 *            of max(1, window / 256); 255 = no limit
 *   36   4   sequence number (DATA)
 *   40   4   cumulative ack: the next sequence number the sender of this frame
 *            expects from its receiver
 *   44   8   selective acks: bit i set = frame ack+1+i is held by the sender of
 *            this frame
 *   52   4   echo: the sequence number of the newest resent DATA frame the
 *            sender of this frame received.  It tells the sender which copy
 *            of a resent frame got through, so an ack of the original is not
 *            taken for an answer to the resend (Karn's ambiguity, for loss
 *            detection: see pmeth_window.h)
 *   56   4   stamp (DATA, ACK; else 0): the sender's clock when it posted the
 *            frame, microseconds modulo 2^32
 *   60   4   delay (with DELAY, else 0): the least one-way delay of the DATA
 *            frames the sender of this frame received from its receiver since
 *            it last sent it one: its own clock at their arrival minus their
 *            stamps, modulo 2^32.  The two clocks differ by an unknown constant,
 *            so only changes of the delay mean anything: they are the queue
 *            on the way (the sender's delay limit, pmeth_pace.h)
 *
 * Every multi-byte pmeth field is little-endian.  The parser never trusts a
 * length, offset or index from the wire: it checks each against the frame it
 * has and the limits the caller gives, and names the cause of every drop.
 */
#ifndef PMETH_WIRE_H
#define PMETH_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PMETH_WIRE_ETHERTYPE 0x88B5
#define PMETH_WIRE_VERSION 2
#define PMETH_WIRE_ETH_LEN 14
#define PMETH_WIRE_HDR_LEN 64           /* Ethernet + pmeth header: the payload offset */
#define PMETH_WIRE_MAX_LINKS 8

#define PMETH_WIRE_F_ECHO 0x01
#define PMETH_WIRE_F_CURRENT 0x02
#define PMETH_WIRE_F_CREDIT 0x04
#define PMETH_WIRE_F_MORE 0x08
#define PMETH_WIRE_F_CONT 0x10
#define PMETH_WIRE_F_DELAY 0x20
#define PMETH_WIRE_F_ALL                                                                  \
    (PMETH_WIRE_F_ECHO | PMETH_WIRE_F_CURRENT | PMETH_WIRE_F_CREDIT | PMETH_WIRE_F_MORE \
     | PMETH_WIRE_F_CONT | PMETH_WIRE_F_DELAY)

/* Frames of one buffer array (one ob1 fragment): ob1 takes at most 16
 * segments in a received descriptor (MCA_BTL_DES_MAX_SEGMENTS). */
#define PMETH_WIRE_ARRAY_MAX 16

/* offsets the kernel-side filters use */
#define PMETH_WIRE_OFF_ETHERTYPE 12
#define PMETH_WIRE_OFF_KEY 14
#define PMETH_WIRE_OFF_DST 18

typedef enum pmeth_wire_type {
    PMETH_WIRE_DATA = 1,
    PMETH_WIRE_ACK = 2,
    PMETH_WIRE_PROBE = 3,
    PMETH_WIRE_PROBE_REPLY = 4,
    PMETH_WIRE_PEEK = 5,                /* reserved: announce of a large transfer */
    PMETH_WIRE_GRANT = 6,               /* reserved (grants ride on acks: F_CREDIT) */
    PMETH_WIRE_CREDIT = 7,              /* reserved (requests ride on data: F_MORE) */
    PMETH_WIRE_PATH_PROBE = 8,          /* reserved */
    PMETH_WIRE_PATH_DOWN = 9,           /* path migration: "the pair of links in the payload
                                           (byte 0 mine, byte 1 yours) is dead" */
    PMETH_WIRE_TYPE_MAX = 9,
} pmeth_wire_type_t;

typedef enum pmeth_wire_verdict {
    PMETH_WIRE_OK = 0,
    PMETH_WIRE_TRUNCATED,               /* shorter than the header, or than header + length */
    PMETH_WIRE_OVERSIZED,               /* longer than the link allows, or a length over it */
    PMETH_WIRE_FOREIGN,                 /* another EtherType, job, destination or version */
    PMETH_WIRE_MALFORMED,               /* bad type, reserved bits, inconsistent fields */
    PMETH_WIRE_NVERDICTS
} pmeth_wire_verdict_t;

/* PROBE and PROBE_REPLY payload: which pair of links, and what got through. */
#define PMETH_WIRE_PROBE_LEN 24
typedef struct pmeth_wire_probe {
    uint64_t nonce;                     /* the prober's, echoed */
    uint8_t from_link, to_link;         /* prober's link, the link of ours it addressed */
    uint8_t full;                       /* the full-MTU probe (else the small one) */
    uint32_t mtu;                       /* PROBE: the prober's MTU; REPLY: the replier's */
    uint32_t frame_len;                 /* PROBE: as sent; REPLY: as it arrived */
} pmeth_wire_probe_t;

/* A path probe of path migration (btl_pmeth_apm.c) names its endpoint's path
 * probes by BASE's upper half and itself by a serial in the lower half, so an
 * answer says which probe it answers: a late answer to a probe already given up
 * (or to a load of an earlier generation) is not credited to the one now out.
 * Start-up probes' nonces differ from BASE in the upper half. */
static inline uint64_t pmeth_path_probe_nonce(uint64_t base, uint32_t serial)
{
    return base ^ serial;
}

static inline bool pmeth_path_probe_serial(uint64_t nonce, uint64_t base, uint32_t *serial)
{
    if ((nonce ^ base) >> 32 != 0) {
        return false;
    }
    *serial = (uint32_t) (nonce ^ base);
    return true;
}

typedef struct pmeth_wire_expect {
    uint16_t ethertype;
    uint32_t job_key;
    uint32_t my_id;
    uint32_t max_frame;                 /* the link's MTU + 14 */
    uint32_t nlinks;                    /* link indices the peer may use (<= 8) */
} pmeth_wire_expect_t;

typedef struct pmeth_wire_view {
    uint8_t type, tag, link;
    uint8_t xmit;                       /* DATA: which transmission of the frame this is */
    bool echo;                          /* echo_seq / echo_xmit are set */
    bool current;                       /* sent on the sender's current path (apm) */
    bool has_credit;                    /* credit holds the sender's grant to us */
    bool more;                          /* DATA: the sender used up its grant */
    bool cont;                          /* DATA: the fragment goes on in the next frame */
    bool has_delay;                     /* delay holds a one-way delay (DATA, ACK) */
    uint32_t stamp;                     /* the sender's clock at posting, us (DATA, ACK) */
    uint32_t delay;                     /* see bytes 60-63 above */
    uint8_t credit;
    uint8_t echo_xmit;
    uint32_t echo_seq;
    uint32_t src_id, dst_id;
    uint32_t seq, ack;
    uint64_t sack;
    uint32_t len;                       /* payload bytes, checked against the frame */
    uint32_t frame_len;
    const uint8_t *payload;
    const uint8_t *src_mac;
    pmeth_wire_probe_t probe;           /* PROBE / PROBE_REPLY */
} pmeth_wire_view_t;

/* Little-endian access that compiles to plain loads and stores on x86. */
static inline void pmeth_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t) v; p[1] = (uint8_t) (v >> 8); }
static inline void pmeth_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t) (v >> (8 * i));
    }
}
static inline void pmeth_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t) (v >> (8 * i));
    }
}
static inline uint16_t pmeth_get16(const uint8_t *p) { return (uint16_t) (p[0] | (p[1] << 8)); }
static inline uint32_t pmeth_get32(const uint8_t *p)
{
    return (uint32_t) p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}
static inline uint64_t pmeth_get64(const uint8_t *p)
{
    return (uint64_t) pmeth_get32(p) | (uint64_t) pmeth_get32(p + 4) << 32;
}

/* The common header of every frame, written in place (frames live in rings). */
static inline void pmeth_wire_build_hdr(void *frame, const uint8_t dst_mac[6],
                                        const uint8_t src_mac[6], uint16_t ethertype,
                                        uint32_t key, uint32_t dst, uint32_t src, uint8_t type,
                                        uint8_t link, uint8_t tag, uint16_t len, uint32_t seq,
                                        uint32_t ack, uint64_t sack)
{
    uint8_t *f = frame;
    memcpy(f, dst_mac, 6);
    memcpy(f + 6, src_mac, 6);
    f[12] = (uint8_t) (ethertype >> 8);
    f[13] = (uint8_t) ethertype;
    pmeth_put32(f + 14, key);
    pmeth_put32(f + 18, dst);
    pmeth_put32(f + 22, src);
    f[26] = PMETH_WIRE_VERSION;
    f[27] = type;
    f[28] = 0;
    f[29] = link;
    f[30] = tag;
    f[31] = 0;
    pmeth_put16(f + 32, len);
    pmeth_put16(f + 34, 0);
    pmeth_put32(f + 36, seq);
    pmeth_put32(f + 40, ack);
    pmeth_put64(f + 44, sack);
    pmeth_put32(f + 52, 0);
    pmeth_put64(f + 56, 0);
}

static inline void pmeth_wire_build_data(void *frame, const uint8_t dst_mac[6],
                                         const uint8_t src_mac[6], uint16_t ethertype,
                                         uint32_t key, uint32_t dst, uint32_t src, uint8_t link,
                                         uint8_t tag, uint32_t seq, uint32_t ack, uint64_t sack,
                                         uint16_t len)
{
    pmeth_wire_build_hdr(frame, dst_mac, src_mac, ethertype, key, dst, src, PMETH_WIRE_DATA, link,
                         tag, len, seq, ack, sack);
}

static inline void pmeth_wire_build_ack(void *frame, const uint8_t dst_mac[6],
                                        const uint8_t src_mac[6], uint16_t ethertype,
                                        uint32_t key, uint32_t dst, uint32_t src, uint8_t link,
                                        uint32_t ack, uint64_t sack)
{
    pmeth_wire_build_hdr(frame, dst_mac, src_mac, ethertype, key, dst, src, PMETH_WIRE_ACK, link,
                         0, 0, 0, ack, sack);
}

/* Refresh the acks a frame carries (before it is sent again). */
static inline void pmeth_wire_set_ack(void *frame, uint32_t ack, uint64_t sack)
{
    pmeth_put32((uint8_t *) frame + 40, ack);
    pmeth_put64((uint8_t *) frame + 44, sack);
}

/* Which transmission of a DATA frame this copy is (before it is sent again). */
static inline void pmeth_wire_set_xmit(void *frame, uint8_t xmit) { ((uint8_t *) frame)[31] = xmit; }

/* Sent on the path our path migration runs on (or not, when a frame moves). */
static inline void pmeth_wire_set_current(void *frame, bool on)
{
    uint8_t *f = frame;
    f[28] = (uint8_t) (on ? f[28] | PMETH_WIRE_F_CURRENT : f[28] & ~PMETH_WIRE_F_CURRENT);
}

/* Our grant to the receiver of this frame (DATA and ACK frames). */
static inline void pmeth_wire_set_credit(void *frame, uint8_t credit)
{
    uint8_t *f = frame;
    f[28] |= PMETH_WIRE_F_CREDIT;
    f[35] = credit;
}

/* A DATA frame that uses up the grant we hold.  A frame sent again keeps the
 * flag: when the first copy was lost, the copy sent again is the receiver's
 * only cue to ack at once (and grant more); when it was not, the duplicate
 * costs one ack. */
static inline void pmeth_wire_set_more(void *frame, bool on)
{
    uint8_t *f = frame;
    f[28] = (uint8_t) (on ? f[28] | PMETH_WIRE_F_MORE : f[28] & ~PMETH_WIRE_F_MORE);
}

/* A DATA frame whose fragment goes on in the frame with the next sequence number. */
static inline void pmeth_wire_set_cont(void *frame)
{
    ((uint8_t *) frame)[28] |= PMETH_WIRE_F_CONT;
}

/* Our clock as the frame goes (DATA and ACK frames; before it is sent again). */
static inline void pmeth_wire_set_stamp(void *frame, uint32_t stamp_us)
{
    pmeth_put32((uint8_t *) frame + 56, stamp_us);
}

/* The least one-way delay of the DATA frames we received from the receiver of
 * this frame since we last sent it one (DATA and ACK frames). */
static inline void pmeth_wire_set_delay(void *frame, uint32_t delay)
{
    uint8_t *f = frame;
    f[28] |= PMETH_WIRE_F_DELAY;
    pmeth_put32(f + 60, delay);
}

/* No delay report (a frame sent again: the one it carried is stale). */
static inline void pmeth_wire_clear_delay(void *frame)
{
    uint8_t *f = frame;
    f[28] &= (uint8_t) ~PMETH_WIRE_F_DELAY;
    pmeth_put32(f + 60, 0);
}

/* Echo the newest resent frame we received (DATA and ACK frames). */
static inline void pmeth_wire_set_echo(void *frame, uint32_t seq, uint8_t xmit)
{
    uint8_t *f = frame;
    f[28] |= PMETH_WIRE_F_ECHO;
    f[34] = xmit;
    pmeth_put32(f + 52, seq);
}

/* A PROBE or PROBE_REPLY of FRAME_LEN bytes in all (at least the header and
 * the probe; a full probe is padded with zeros to the MTU). */
/* The protocol a host's own stack (or its NIC) runs on EtherType ET, or NULL.  pmeth
 * must not take one of these: its frames would be handed to that protocol on every
 * host of the network, and the socket would receive that protocol's traffic. */
const char *pmeth_wire_ethertype_owner(unsigned int et);

void pmeth_wire_build_probe(void *frame, uint32_t frame_len, const uint8_t dst_mac[6],
                            const uint8_t src_mac[6], uint16_t ethertype, uint32_t key,
                            uint32_t dst, uint32_t src, uint8_t type,
                            const pmeth_wire_probe_t *probe);

/* The receiver's rule for buffer arrays, applied to each DATA frame in
 * sequence order: a frame with CONT opens an array (or adds to it), the next
 * without CONT completes it.  An array longer than PMETH_WIRE_ARRAY_MAX frames
 * or mixing tags did not come from a pmeth sender: it is dropped whole, and so
 * are its frames still to come, up to its last. */
typedef struct pmeth_wire_array {
    uint8_t frames;                     /* kept so far */
    uint8_t tag;                        /* of the first */
    bool discard;                       /* dropping the rest of a malformed array */
} pmeth_wire_array_t;

typedef enum pmeth_wire_array_step {
    PMETH_ARRAY_SINGLE,                 /* a fragment of one frame: deliver it */
    PMETH_ARRAY_KEEP,                   /* keep it: the array goes on */
    PMETH_ARRAY_COMPLETE,               /* keep it and deliver the array (frames kept + 1) */
    PMETH_ARRAY_DROP_ALL,               /* malformed: drop the frames kept and this one */
    PMETH_ARRAY_DROP,                   /* the rest of a dropped array: drop this one */
} pmeth_wire_array_step_t;

/* Whether a frame of CONT and TAG must be held rather than delivered alone. */
static inline bool pmeth_wire_array_holds(const pmeth_wire_array_t *a, bool cont)
{
    return cont || a->frames > 0 || a->discard;
}

pmeth_wire_array_step_t pmeth_wire_array_next(pmeth_wire_array_t *a, bool cont, uint8_t tag);

pmeth_wire_verdict_t pmeth_wire_parse(const void *frame, size_t frame_len,
                                      const pmeth_wire_expect_t *expect, pmeth_wire_view_t *out);

const char *pmeth_wire_verdict_name(int verdict);

#endif
