/*
 * btl pmeth: what the kernel's traffic control and netfilter do on an
 * interface, as far as AF_XDP frames would skip it.
 *
 * Frames an AF_XDP socket sends leave past the interface's queueing discipline
 * (on veth in copy mode, and on NICs in zero-copy mode), and frames our XDP
 * program takes in never reach tc's ingress hook or netfilter's: a site's
 * shaping (tbf, htb, netem, ...), tc filters or nftables chains bound to the
 * device would not apply to them.  btl_pmeth_io_mode auto uses AF_XDP only where
 * none of these is set (btl_pmeth/README.md, "Rings").  The qdiscs come from
 * rtnetlink (RTM_GETQDISC), which needs no privilege; the chains from
 * nfnetlink (NFT_MSG_GETCHAIN), which needs CAP_NET_ADMIN, as does attaching an
 * XDP program.  Rules loaded after the job started are not seen.
 */
#ifndef PMETH_TC_H
#define PMETH_TC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pmeth_tc_state {
    /* the root qdisc's kind ("" if none was reported), and whether it only
     * queues (noqueue, pfifo_fast, pfifo, bfifo, fq_codel, fq, mq): anything
     * else may shape, delay, drop or reorder what the interface sends */
    char root_kind[16];
    bool root_plain;
    /* an ingress or clsact qdisc: tc filters may act on what arrives */
    char ingress_kind[16];
    /* "table/chain" of an nftables chain bound to the interface: netdev
     * ingress (or inet's ingress hook), netdev egress */
    char nft_ingress[72];
    char nft_egress[72];
    /* why netfilter's chains could not be read ("" if they were): without
     * CAP_NET_ADMIN they cannot be, nor can this process attach XDP itself */
    char nft_unread[96];
} pmeth_tc_state_t;

/* The qdiscs and netfilter chains of interface IFINDEX, named IFNAME, in this
 * process's network namespace.  0, or -errno with a sentence in ERR if the
 * qdiscs could not be read; chains that could not be read are noted in
 * OUT->nft_unread. */
int pmeth_tc_read(int ifindex, const char *ifname, pmeth_tc_state_t *out, char *err,
                  size_t errlen);

/* Whether frames received, and with SENDING frames sent, through AF_XDP would
 * skip something of STATE; if so, a phrase for a log line in WHY ("its root
 * qdisc tbf shapes or schedules what it sends"). */
bool pmeth_tc_skipped_by_xdp(const pmeth_tc_state_t *state, bool sending, char *why,
                             size_t whylen);

#endif
