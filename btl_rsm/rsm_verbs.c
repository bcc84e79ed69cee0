/*
 * Verbs plumbing of rsm's RDMA-write back end (see rsm_verbs.h): the device
 * port, queue pairs and the UD handshake.  No MPI here; the handshake checker
 * is unit-tested without a device.
 */
#define RSM_VERBS_DEVICE_API 1
#include "rsm_verbs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *rsm_vmsg_check(const void *msg, size_t len, uint64_t me, uint32_t expect_len,
                           uint32_t expect_pool_len)
{
    rsm_vmsg_t m;
    if (len < sizeof(m)) {
        return "short message";
    }
    memcpy(&m, msg, sizeof(m));
    if (m.magic != RSM_VMSG_MAGIC || m.version != RSM_VMSG_VERSION) {
        return "not an rsm handshake (magic or version)";
    }
    if (m.type < RSM_VMSG_REQ || m.type > RSM_VMSG_GROWN) {
        return "unknown message type";
    }
    if (m.to != me) {
        return "addressed to another process";
    }
    if (m.type == RSM_VMSG_REJ) {
        return NULL;
    }
    if (m.addr.global > 1 || m.addr.mtu < 1 || m.addr.mtu > 5 || (m.qpn & 0xff000000u) != 0
        || (m.psn & 0xff000000u) != 0) {
        return "bad address, queue pair number or packet sequence number";
    }
    if (m.rlen < expect_len || m.raddr + m.rlen < m.raddr) {
        return "remote region too short or wrapping";
    }
    if (m.pool_chunks < 1 || m.pool_chunks > RSM_VMSG_CHUNKS) {
        return "pool chunk count out of range";
    }
    if (m.type == RSM_VMSG_REQ || m.type == RSM_VMSG_REP) {
        if (m.rails < 1 || m.rails > RSM_VRAILS_MAX) {
            return "rail count out of range";
        }
        for (unsigned r = 1; r < m.rails; r++) {
            const rsm_vrail_t *l = &m.rail[r - 1];
            if (l->addr.global > 1 || l->addr.mtu < 1 || l->addr.mtu > 5
                || (l->qpn & 0xff000000u) != 0 || (l->psn & 0xff000000u) != 0 || l->qpn == 0) {
                return "bad address, queue pair number or packet sequence number of a rail";
            }
        }
    }
    if (m.type == RSM_VMSG_REQ || m.type == RSM_VMSG_GROW) {
        for (int i = 0; i < RSM_VPOOL_TAG; i++) {
            char ch = m.pool_tag[i];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f'))) {
                return "the pool's tag is not hex digits";   /* it becomes a file name */
            }
        }
        return NULL;
    }
    if (m.type == RSM_VMSG_GROWN && (m.asked < 1 || m.asked > RSM_VMSG_CHUNKS)) {
        return "the count of chunks asked for is out of range";
    }
    if (m.pool_len < expect_pool_len) {
        return "remote pool too short";
    }
    for (unsigned i = 0; i < m.pool_chunks; i++) {
        if (m.pool_raddr[i] + m.pool_len < m.pool_raddr[i]) {
            return "remote pool chunk wrapping";
        }
    }
    return NULL;
}

#ifndef RSM_VMSG_ONLY

const char *rsm_vmtu_str(uint8_t mtu)
{
    static const char *names[] = {"?", "256", "512", "1024", "2048", "4096"};
    return mtu < 6 ? names[mtu] : "?";
}

static int err_out(char *err, size_t errlen, int rc, const char *fmt, const char *a)
{
    snprintf(err, errlen, fmt, a);
    return rc;
}

/* A RoCE v2 GID holding an IPv4 address (::ffff:a.b.c.d), else -1. */
static int find_gid(struct ibv_context *ctx, uint8_t port, int n)
{
    for (int i = 0; i < n; i++) {
        union ibv_gid gid;
        struct ibv_gid_entry entry;
        if (ibv_query_gid(ctx, port, i, &gid) != 0) {
            continue;
        }
        static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(gid.raw, v4, sizeof(v4)) != 0) {
            continue;
        }
        if (ibv_query_gid_ex(ctx, port, (uint32_t) i, &entry, 0) == 0
            && entry.gid_type != IBV_GID_TYPE_ROCE_V2) {
            continue;
        }
        return i;
    }
    return -1;
}

static bool port_usable(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *pa)
{
    return ibv_query_port(ctx, port, pa) == 0 && pa->state == IBV_PORT_ACTIVE;
}

/* Parse one "dev[:port]" token; port 0 = any. */
static void parse_token(const char *tok, size_t toklen, char *dev, size_t devlen, int *port)
{
    const char *colon = memchr(tok, ':', toklen);
    size_t n = colon != NULL ? (size_t) (colon - tok) : toklen;
    if (n >= devlen) {
        n = devlen - 1;
    }
    memcpy(dev, tok, n);
    dev[n] = '\0';
    *port = colon != NULL ? atoi(colon + 1) : 0;
}

static int open_port(rsm_vdev_t *d, const char *spec, unsigned skip, char *err, size_t errlen)
{
    int ndev = 0;
    struct ibv_device **list = ibv_get_device_list(&ndev);
    if (list == NULL || ndev == 0) {
        if (list != NULL) {
            ibv_free_device_list(list);
        }
        errno = ENODEV;
        return err_out(err, errlen, -1, "%s", "no RDMA device (ibv_get_device_list found none)");
    }
    const char *p = spec != NULL ? spec : "";
    do {
        char want[64] = "";
        int want_port = 0;
        const char *end = strchr(p, ',');
        size_t toklen = end != NULL ? (size_t) (end - p) : strlen(p);
        parse_token(p, toklen, want, sizeof(want), &want_port);
        for (int i = 0; i < ndev && d->ctx == NULL; i++) {
            const char *name = ibv_get_device_name(list[i]);
            if (want[0] != '\0' && strcmp(name, want) != 0) {
                continue;
            }
            struct ibv_context *ctx = ibv_open_device(list[i]);
            struct ibv_device_attr da;
            if (ctx == NULL || ibv_query_device(ctx, &da) != 0) {
                if (ctx != NULL) {
                    ibv_close_device(ctx);
                }
                continue;
            }
            for (int port = 1; port <= da.phys_port_cnt; port++) {
                struct ibv_port_attr pa;
                if ((want_port != 0 && port != want_port) || !port_usable(ctx, (uint8_t) port, &pa)) {
                    continue;
                }
                if (skip > 0) {
                    skip--;         /* an earlier rail's */
                    continue;
                }
                d->ctx = ctx;
                d->port = (uint8_t) port;
                /* RDMA reads a queue pair may have outstanding, as initiator and as
                 * target (single copy, rsm_vget): the device's, at most 16 */
                d->max_rd = (uint8_t) (da.max_qp_rd_atom < da.max_qp_init_rd_atom
                                       ? da.max_qp_rd_atom : da.max_qp_init_rd_atom);
                d->max_rd = d->max_rd > 16 ? 16 : d->max_rd < 1 ? 1 : d->max_rd;
                d->self.lid = pa.lid;
                d->self.mtu = (uint8_t) pa.active_mtu;
                d->self.global = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
                snprintf(d->name, sizeof(d->name), "%s:%d", name, port);
                d->gid_index = pa.gid_tbl_len;     /* the table size, for find_gid */
                break;
            }
            if (d->ctx == NULL) {
                ibv_close_device(ctx);
            }
        }
        p = end != NULL ? end + 1 : NULL;
    } while (p != NULL && d->ctx == NULL);
    ibv_free_device_list(list);
    if (d->ctx == NULL) {
        errno = ENODEV;
        return err_out(err, errlen, -1, skip > 0 ? "no further active port among the devices "
                       "named by \"%s\"" : "no active port among the devices named by \"%s\"",
                       spec != NULL && spec[0] != '\0' ? spec : "(any)");
    }
    return 0;
}

int rsm_vdev_refill(rsm_vdev_t *d)
{
    /* WRITE WITH IMMEDIATE places its data by RDMA: the receives need no buffer,
     * and go in chains of up to 64 per post */
    struct ibv_recv_wr wr[64], *bad;
    while (d->srq_posted < d->srq_depth) {
        unsigned n = d->srq_depth - d->srq_posted;
        n = n < 64 ? n : 64;
        for (unsigned i = 0; i < n; i++) {
            wr[i] = (struct ibv_recv_wr){.wr_id = 0, .next = i + 1 < n ? &wr[i + 1] : NULL};
        }
        int rc = ibv_post_srq_recv(d->srq, wr, &bad);
        if (rc != 0) {
            return -rc;
        }
        d->srq_posted += n;
    }
    return 0;
}

static int ud_post_recv(rsm_vdev_t *d, unsigned slot)
{
    struct ibv_sge sge = {.addr = (uintptr_t) (d->ud_buf + (size_t) slot * RSM_VUD_SLOT),
                          .length = RSM_VUD_SLOT, .lkey = d->ud_mr->lkey};
    struct ibv_recv_wr wr = {.wr_id = slot, .sg_list = &sge, .num_sge = 1}, *bad;
    return ibv_post_recv(d->ud, &wr, &bad);
}

static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0 ? -1 : 0;
}

static int ud_up(rsm_vdev_t *d)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = d->ucq, .recv_cq = d->ucq, .qp_type = IBV_QPT_UD,
        .cap = {.max_send_wr = 16, .max_recv_wr = RSM_VUD_RECVS, .max_send_sge = 1,
                .max_recv_sge = 1},
    };
    d->ud = ibv_create_qp(d->pd, &ia);
    if (d->ud == NULL) {
        return -1;
    }
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = d->port,
                            .qkey = RSM_VQKEY};
    if (ibv_modify_qp(d->ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(d->ud, &a, IBV_QP_STATE)) {
        return -1;
    }
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    if (ibv_modify_qp(d->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
        return -1;
    }
    for (unsigned i = 0; i < RSM_VUD_RECVS; i++) {
        if (ud_post_recv(d, i) != 0) {
            return -1;
        }
    }
    d->self.ud_qpn = d->ud->qp_num;
    return 0;
}

int rsm_vdev_open(rsm_vdev_t *d, const char *spec, unsigned skip, bool rail_only, int gid_index,
                  unsigned sq_depth, unsigned srq_depth, char *err, size_t errlen)
{
    memset(d, 0, sizeof(*d));
    if (open_port(d, spec, skip, err, errlen) != 0) {
        return -1;
    }
    d->rail_only = rail_only;
    int table = d->gid_index;
    d->gid_index = gid_index >= 0 ? gid_index : d->self.global ? find_gid(d->ctx, d->port, table) : 0;
    union ibv_gid gid;
    if (d->gid_index < 0 || ibv_query_gid(d->ctx, d->port, d->gid_index, &gid) != 0) {
        snprintf(err, errlen, "%s has no usable GID (RoCE v2 with an IPv4 address); is its "
                 "network interface up with an address?", d->name);
        rsm_vdev_close(d);
        errno = ENODEV;
        return -1;
    }
    memcpy(d->self.gid, gid.raw, sizeof(d->self.gid));
    d->sq_depth = sq_depth;
    d->srq_depth = srq_depth;
    size_t ud_bytes = (size_t) (RSM_VUD_RECVS + 1) * RSM_VUD_SLOT;
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = srq_depth, .max_sge = 1}};
    bool ok = (d->pd = ibv_alloc_pd(d->ctx)) != NULL
              && (d->scq = ibv_create_cq(d->ctx, RSM_VSCQ_ENTRIES, NULL, NULL, 0)) != NULL;
    if (ok && !rail_only) {
        ok = (d->rcq = ibv_create_cq(d->ctx, (int) srq_depth + 64, NULL, NULL, 0)) != NULL
             && (d->uchan = ibv_create_comp_channel(d->ctx)) != NULL
             && (d->ucq = ibv_create_cq(d->ctx, RSM_VUD_RECVS + 32, NULL, d->uchan, 0)) != NULL
             && (d->srq = ibv_create_srq(d->pd, &sa)) != NULL
             && (d->ud_buf = calloc(1, ud_bytes)) != NULL
             && (d->ud_mr = ibv_reg_mr(d->pd, d->ud_buf, ud_bytes, IBV_ACCESS_LOCAL_WRITE)) != NULL
             && ud_up(d) == 0 && rsm_vdev_refill(d) == 0;
    }
    if (!ok) {
        int e = errno;          /* ENOMEM, EPERM, EAGAIN: likely the locked-memory limit */
        snprintf(err, errlen, "%s: setting up the protection domain, completion queues, shared "
                 "receive queue or handshake queue pair failed", d->name);
        rsm_vdev_close(d);
        errno = e;
        return -1;
    }
    /* asynchronous events (a port going down) are polled from progress; the
     * handshake queue's completion events are read by a thread that waits in
     * poll(2) (rsm_vud_arm) */
    if (set_nonblocking(d->ctx->async_fd) != 0
        || (d->uchan != NULL && set_nonblocking(d->uchan->fd) != 0)) {
        snprintf(err, errlen, "%s: the asynchronous event channel (%s)", d->name, strerror(errno));
        rsm_vdev_close(d);
        errno = EIO;
        return -1;
    }
    return 0;
}

int rsm_vud_arm(rsm_vdev_t *d)
{
    return ibv_req_notify_cq(d->ucq, 0) == 0 ? 0 : -1;
}

int rsm_vud_event_fd(const rsm_vdev_t *d)
{
    return d->uchan != NULL ? d->uchan->fd : -1;
}

int rsm_vud_take_events(rsm_vdev_t *d)
{
    struct ibv_cq *cq;
    void *cq_ctx;
    int n = 0;
    while (d->uchan != NULL && ibv_get_cq_event(d->uchan, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
        n++;
    }
    return n;
}

int rsm_vdev_event(rsm_vdev_t *d, rsm_vevent_t *ev)
{
    struct ibv_async_event e;
    if (ibv_get_async_event(d->ctx, &e) != 0) {
        return 0;                   /* EAGAIN: none */
    }
    ev->type = e.event_type;
    ev->qp_num = 0;
    ev->port = 0;
    switch (e.event_type) {
    case IBV_EVENT_QP_FATAL:
    case IBV_EVENT_QP_REQ_ERR:
    case IBV_EVENT_QP_ACCESS_ERR:
    case IBV_EVENT_PATH_MIG_ERR:
        ev->qp_num = e.element.qp->qp_num;
        break;
    case IBV_EVENT_PORT_ERR:
    case IBV_EVENT_PORT_ACTIVE:
    case IBV_EVENT_LID_CHANGE:
    case IBV_EVENT_GID_CHANGE:
        ev->port = (uint8_t) e.element.port_num;
        break;
    default:
        break;
    }
    ibv_ack_async_event(&e);
    return 1;
}

void rsm_vdev_close(rsm_vdev_t *d)
{
    if (d->ud != NULL) {
        ibv_destroy_qp(d->ud);
    }
    if (d->ud_mr != NULL) {
        ibv_dereg_mr(d->ud_mr);
    }
    free(d->ud_buf);
    if (d->srq != NULL) {
        ibv_destroy_srq(d->srq);
    }
    if (d->ucq != NULL) {
        ibv_destroy_cq(d->ucq);     /* its events were all acknowledged as they were read */
    }
    if (d->uchan != NULL) {
        ibv_destroy_comp_channel(d->uchan);
    }
    if (d->rcq != NULL) {
        ibv_destroy_cq(d->rcq);
    }
    if (d->scq != NULL) {
        ibv_destroy_cq(d->scq);
    }
    if (d->pd != NULL) {
        ibv_dealloc_pd(d->pd);
    }
    if (d->ctx != NULL) {
        ibv_close_device(d->ctx);
    }
    memset(d, 0, sizeof(*d));
}

struct ibv_qp *rsm_vqp_create(rsm_vdev_t *d)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = d->scq, .recv_cq = d->rcq, .srq = d->srq, .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = d->sq_depth, .max_send_sge = 1, .max_inline_data = 256},
    };
    if (d->rail_only) {
        /* reads only, either way: nothing is ever received into it */
        ia.recv_cq = d->scq;
        ia.cap.max_recv_wr = 1;
        ia.cap.max_recv_sge = 1;
        ia.cap.max_inline_data = 0;
    }
    struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);
    if (qp == NULL) {
        ia.cap.max_inline_data = 0;     /* a device without inline sends */
        qp = ibv_create_qp(d->pd, &ia);
    }
    if (qp == NULL) {
        return NULL;
    }
    d->max_inline = ia.cap.max_inline_data;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = d->port,
                            .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT
                                  | IBV_QP_ACCESS_FLAGS) != 0) {
        ibv_destroy_qp(qp);
        return NULL;
    }
    return qp;
}

static void fill_ah(const rsm_vdev_t *d, const rsm_vaddr_t *peer, struct ibv_ah_attr *ah)
{
    memset(ah, 0, sizeof(*ah));
    ah->port_num = d->port;
    ah->dlid = peer->lid;
    if (peer->global) {
        ah->is_global = 1;
        memcpy(ah->grh.dgid.raw, peer->gid, sizeof(peer->gid));
        ah->grh.sgid_index = (uint8_t) d->gid_index;
        ah->grh.hop_limit = 64;
    }
}

int rsm_vqp_connect(rsm_vdev_t *d, struct ibv_qp *qp, const rsm_vaddr_t *peer, uint32_t peer_qpn,
                    uint32_t peer_psn, uint32_t my_psn)
{
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = (enum ibv_mtu) (peer->mtu < d->self.mtu ? peer->mtu : d->self.mtu);
    a.dest_qp_num = peer_qpn;
    a.rq_psn = peer_psn;
    a.max_dest_rd_atomic = d->max_rd;
    a.min_rnr_timer = 12;           /* 0.64 ms: the shared receive queue ran dry */
    fill_ah(d, peer, &a.ah_attr);
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN
                                  | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC
                                  | IBV_QP_MIN_RNR_TIMER) != 0) {
        return -errno;
    }
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = d->timeout;         /* 4.096 us * 2^timeout per try (18: 1.07 s) ... */
    a.retry_cnt = d->retry_cnt;     /* ... then the work request fails: a dead path */
    a.rnr_retry = 7;                /* receiver-not-ready: retry for ever (it refills) */
    a.sq_psn = my_psn;
    a.max_rd_atomic = d->max_rd;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY
                                  | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        return -errno;
    }
    return 0;
}

/* Poll the UD completion queue up to SPINS times or until send WANT has
 * completed: 0 (sent), -EIO (completed in error) or 1 (not seen).  Every
 * completion of a batch is looked at: a receive polled here and left would be
 * a handshake lost, and its slot never posted again (the queue would run dry);
 * so receives are kept for rsm_vud_poll (their bytes stay in their slots until
 * the slots are posted again). */
static int ud_wait_send(rsm_vdev_t *d, uint64_t want, long spins)
{
    int sent = 1;
    for (long s = 0; sent == 1 && s < spins; s++) {
        struct ibv_wc wc[4];
        int n = ibv_poll_cq(d->ucq, 4, wc);
        for (int i = 0; i < n; i++) {
            if (wc[i].wr_id >= RSM_VUD_RECVS) {         /* a send's */
                if (wc[i].wr_id == d->ud_send_busy) {
                    d->ud_send_busy = 0;                /* the slot is ours again */
                }
                if (wc[i].wr_id == want) {
                    sent = wc[i].status == IBV_WC_SUCCESS ? 0 : -EIO;
                }
            } else if (wc[i].status == IBV_WC_SUCCESS) {
                d->ud_pending[d->ud_npending++ % RSM_VUD_RECVS] =
                    (uint32_t) wc[i].wr_id | (wc[i].byte_len << 8);
            } else {
                ud_post_recv(d, (unsigned) wc[i].wr_id);
            }
        }
    }
    return sent;
}

int rsm_vud_send(rsm_vdev_t *d, struct ibv_ah **ah, const rsm_vaddr_t *peer, const rsm_vmsg_t *msg)
{
    if (*ah == NULL) {
        struct ibv_ah_attr aa;
        fill_ah(d, peer, &aa);
        if ((*ah = ibv_create_ah(d->pd, &aa)) == NULL) {
            return -errno;
        }
    }
    /* One send slot, reused: the wait below makes it ours again.  A send that
     * outlived its wait may still be read by the device: until its completion
     * is seen the slot is not written (a message torn between two handshakes
     * could pass the receiver's checks); every handshake message is sent again
     * by its timer (REQ, GROW) or by its peer's next REQ (REP, REJ). */
    if (d->ud_send_busy != 0 && ud_wait_send(d, d->ud_send_busy, 1000) == 1) {
        return -EBUSY;
    }
    uint8_t *slot = d->ud_buf + (size_t) RSM_VUD_RECVS * RSM_VUD_SLOT;
    memcpy(slot, msg, sizeof(*msg));
    struct ibv_sge sge = {.addr = (uintptr_t) slot, .length = sizeof(*msg), .lkey = d->ud_mr->lkey};
    /* each send its own id (above every receive slot's): the completion of an
     * earlier send seen late is not taken for this one's */
    const uint64_t id = RSM_VUD_RECVS + (uint64_t) ++d->ud_sends;
    struct ibv_send_wr wr = {.wr_id = id, .sg_list = &sge, .num_sge = 1,
                             .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED}, *bad;
    wr.wr.ud.ah = *ah;
    wr.wr.ud.remote_qpn = peer->ud_qpn;
    wr.wr.ud.remote_qkey = RSM_VQKEY;
    int rc = ibv_post_send(d->ud, &wr, &bad);
    if (rc != 0) {
        return -rc;
    }
    /* wait for it to leave: a handshake is rare */
    int sent = ud_wait_send(d, id, 10000000);
    if (sent == 1) {
        d->ud_send_busy = id;
        return -ETIMEDOUT;
    }
    return sent;
}

static int take_recv(rsm_vdev_t *d, uint32_t slot, uint32_t byte_len, void *msg, size_t cap,
                     size_t *len)
{
    /* a UD receive starts with the 40-byte GRH slot, present or not */
    size_t n = byte_len > 40 ? byte_len - 40 : 0;
    if (n > cap) {
        n = cap;
    }
    memcpy(msg, d->ud_buf + (size_t) slot * RSM_VUD_SLOT + 40, n);
    *len = n;
    ud_post_recv(d, slot);
    return 1;
}

int rsm_vud_poll(rsm_vdev_t *d, void *msg, size_t cap, size_t *len)
{
    if (d->ud_ntaken != d->ud_npending) {
        uint32_t e = d->ud_pending[d->ud_ntaken++ % RSM_VUD_RECVS];
        return take_recv(d, e & 0xff, e >> 8, msg, cap, len);
    }
    struct ibv_wc wc;
    int n;
    do {                            /* past send completions seen late */
        n = ibv_poll_cq(d->ucq, 1, &wc);
        if (n <= 0) {
            return n < 0 ? -1 : 0;
        }
        if (wc.wr_id == d->ud_send_busy) {
            d->ud_send_busy = 0;
        }
    } while (wc.wr_id >= RSM_VUD_RECVS);
    if (wc.status != IBV_WC_SUCCESS) {
        ud_post_recv(d, (unsigned) wc.wr_id);
        return -1;
    }
    return take_recv(d, (uint32_t) wc.wr_id, wc.byte_len, msg, cap, len);
}

#endif
