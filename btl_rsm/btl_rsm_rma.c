/*
 * One-sided communication for Open MPI's osc rdma, on this host and to others:
 * MPI_Win_create, MPI_Win_create_dynamic and the operations on them (put,
 * get, accumulate, fetch-and-op, compare-and-swap).  osc rdma takes a window
 * only over a BTL that reaches every rank of it with put, get and atomics; osc
 * pt2pt, the other way, is turned off by Debian's openmpi-mca-params.conf.  So
 * without these a job over `--mca btl self,rsm` could not create such a window
 * at all (MPI_ERR_WIN), where one over self,vader could.
 *
 * - put: one process_vm_writev into the target's memory (CMA, probed at start
 *   like the single-copy get, which serves osc's gets too: btl_rsm_get.c).
 * - atomics: the target's memory is its own (no xpmem), so the origin asks the
 *   target, in an internal inline message (RSM_TAG_AMO), to apply the operation
 *   with the CPU's atomic instructions; the target checks the request
 *   (xbtl_amo.h) and that the word lies in memory it registered for remote
 *   atomics, applies it and answers with the old value (RSM_TAG_AMO_REPLY).  The
 *   operation completes at the origin on that reply.  Because the target uses
 *   CPU atomics these mix with osc's own on the same words
 *   (MCA_BTL_ATOMIC_SUPPORTS_GLOB).  As with vader's atomics without xpmem, a
 *   target completes them when it makes progress (is inside MPI).
 * - the window's own rank: osc rdma has no endpoint for it and asks with none;
 *   done here in place.
 *
 * - between hosts (the verbs back end): put by RDMA write and get by RDMA read
 *   (btl_rsm_verbs.c: rsm_verbs_put, rsm_verbs_get), the atomics as the same
 *   messages, all on our own connection to the target, so an atomic arrives
 *   after the puts posted before it.  A window registers with the device too
 *   when such peers exist (rsm_register_mem: its handle then carries the keys).
 */
#include "btl_rsm.h"
#include "xbtl_amo.h"

#include "opal/util/show_help.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* atomics this process has asked for and not yet seen answered */
#define RSM_AMO_INFLIGHT 256

typedef struct rsm_amo_wait {
    mca_btl_base_endpoint_t *ep;
    void *local_address;            /* where the old value goes (fetching ones) */
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
    uint32_t result_bytes;          /* 0 (no fetch), 4 or 8 */
    uint32_t gen;                   /* in the id: a late or forged reply finds another */
    bool busy;
    bool takes_lock;                /* osc rdma taking an exclusive lock (below) */
    uint64_t addr;
} rsm_amo_wait_t;

static rsm_amo_wait_t amo_waits[RSM_AMO_INFLIGHT];
static uint16_t amo_free[RSM_AMO_INFLIGHT];
static uint32_t amo_nfree;
static bool amo_ready;

/* Open MPI 4.1.1-4.1.4's osc rdma deadlocks on a dynamic window over several
 * hosts (xbtl_amo.h says how), on any rank's region lock, this process's own
 * included: the watch turns it into an error.  A job of one host keeps none
 * (osc takes its locks there with the CPU's atomics, without us). */
static xbtl_lock_watch_t lock_watch;

/* before an add to EP's word ADDR (EP NULL: in place, in our own memory):
 * false if it is the deadlock */
static bool held_lock_check(mca_btl_base_endpoint_t *ep, uint64_t addr, uint64_t operand)
{
    if (!mca_btl_rsm_component.job_spans_hosts
        || xbtl_lock_watch_add_ok(&lock_watch, ep, addr, operand)) {
        return true;
    }
    char whose[96];
    snprintf(whose, sizeof(whose), "%s%s",
             ep == NULL ? OPAL_NAME_PRINT(OPAL_PROC_MY_NAME)
             : ep->proc != NULL ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a rank",
             ep == NULL ? ", this very rank" : "");
    opal_show_help("help-btl-rsm.txt", "osc-dynamic-deadlock", true, opal_process_info.nodename,
                   whose);
    rsm_fatal(ep, "btl rsm: osc rdma (Open MPI 4.1.1-4.1.4) would wait for ever on a lock it "
              "holds itself (a dynamic window over several hosts): run with --mca osc pt2pt");
    return false;
}

/* replies that found no room in the origin's queue: sent from progress */
typedef struct rsm_held_reply {
    struct rsm_held_reply *next;
    mca_btl_base_endpoint_t *ep;
    xbtl_amo_reply_t rep;
} rsm_held_reply_t;
static rsm_held_reply_t *held_head, **held_tail = &held_head;

/* Atomics that could not be sent at once while rsm was inside its own
 * progress: a completion callback (osc rdma releasing a lock when a put
 * completes, starting the next step of an accumulate) that gets "out of
 * resource" retries in a loop around opal_progress, but rsm's progress does
 * nothing while it is already running (it must not deliver out of order), so
 * what would free the resource (replies to our atomics, ob1's queued fragments
 * going out, a connection being made) never comes.  Such an atomic is held
 * here and sent by progress, in order; later ones queue behind it. */
typedef struct rsm_held_amo {
    struct rsm_held_amo *next;
    mca_btl_base_endpoint_t *ep;
    xbtl_amo_req_t req;
    rsm_amo_wait_t wait;            /* what the reply completes */
} rsm_held_amo_t;
static rsm_held_amo_t *held_amo_head, **held_amo_tail = &held_amo_head;

/* Send the atomic REQ to EP, its reply to complete W; OPAL_ERR_OUT_OF_RESOURCE
 * when it cannot go now. */
static int amo_send(mca_btl_base_endpoint_t *ep, xbtl_amo_req_t *req, const rsm_amo_wait_t *w)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (!amo_ready) {
        for (uint32_t i = 0; i < RSM_AMO_INFLIGHT; i++) {
            amo_free[i] = (uint16_t) (RSM_AMO_INFLIGHT - 1 - i);
        }
        amo_nfree = RSM_AMO_INFLIGHT;
        amo_ready = true;
    }
    int rc = ep->out_connected ? OPAL_SUCCESS : rsm_endpoint_connect(ep);
    if (rc != OPAL_SUCCESS) {
        /* another host's connection under way: asked again once made */
        return rc == OPAL_ERR_RESOURCE_BUSY ? OPAL_ERR_OUT_OF_RESOURCE : rc;
    }
    if (amo_nfree == 0) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    if (req->op == XBTL_AMO_ADD && (req->flags & (XBTL_AMO_32BIT | XBTL_AMO_FLOAT)) == 0
        && !held_lock_check(ep, req->addr, req->operand)) {
        return OPAL_ERROR;
    }
    const uint32_t i = amo_free[--amo_nfree];
    const uint32_t gen = amo_waits[i].gen + 1;
    req->id = (uint64_t) gen << 16 | i;
    if (!rsm_send_internal(ep, RSM_TAG_AMO, req, sizeof(*req))) {
        amo_free[amo_nfree++] = (uint16_t) i;
        return OPAL_ERR_OUT_OF_RESOURCE;    /* no room in the queue yet */
    }
    amo_waits[i] = *w;
    amo_waits[i].gen = gen;
    amo_waits[i].busy = true;
    c->amo_sent++;
    return OPAL_SUCCESS;
}

static int amo_start(mca_btl_base_endpoint_t *ep, void *local_address,
                     struct mca_btl_base_registration_handle_t *local_handle, uint64_t remote_address,
                     const struct mca_btl_base_registration_handle_t *remote_handle, uint32_t op,
                     int flags, uint64_t operand, uint64_t compare, bool fetch,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    xbtl_amo_req_t req = {.addr = remote_address, .operand = operand, .compare = compare,
                         .op = op, .flags = xbtl_amo_flags_from_btl(flags)}, checked;
    const uint32_t result_bytes = fetch ? xbtl_amo_width(req.flags) : 0;
    if (op == 0 || !xbtl_amo_req_read(&req, sizeof(req), &checked)) {
        return OPAL_ERR_NOT_SUPPORTED;  /* an operation we do not offer, or a misaligned word */
    }
    /* Integer MIN and MAX: the BTL interface does not say whether the type is
     * signed (osc rdma maps MPI_MAX on MPI_UINT64_T and on MPI_INT64_T alike),
     * and one compare cannot be right for both: a signed one made MIN(5, 2^63)
     * 2^63.  Refused, so osc rdma falls back to its get-op-put under the
     * accumulate lock, which applies the real type. */
    if ((op == XBTL_AMO_MIN || op == XBTL_AMO_MAX) && !(flags & MCA_BTL_ATOMIC_FLAG_FLOAT)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    if (ep != NULL && remote_handle == NULL && ep->remote) {
        return OPAL_ERROR;              /* no mapping of another host's memory is ours */
    }
    const bool takes_lock = c->job_spans_hosts
                            && xbtl_lock_watch_takes(op, compare, operand, result_bytes);
    if (ep == NULL || remote_handle == NULL) {
        /* the word is in our own memory as osc rdma sees it: our own window (no
         * endpoint), or a window of MPI_Win_allocate in a segment every rank of the
         * host maps, where osc rdma names a peer's word by our mapping of it and
         * passes no handle (its registrations are all non-NULL) */
        RSM_LOCK();                     /* the watch is progress's too (replies) */
        const bool ok = op != XBTL_AMO_ADD || (checked.flags & (XBTL_AMO_32BIT | XBTL_AMO_FLOAT))
                        || held_lock_check(NULL, remote_address, operand);
        if (ok) {
            xbtl_amo_in_place(&lock_watch, &checked, local_address, result_bytes, takes_lock);
        }
        RSM_UNLOCK();
        if (!ok) {
            return OPAL_ERROR;
        }
        cbfunc(&mca_btl_rsm, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }
    const rsm_amo_wait_t w = {.ep = ep, .local_address = local_address,
                              .local_handle = local_handle, .cbfunc = cbfunc,
                              .cbcontext = cbcontext, .cbdata = cbdata,
                              .result_bytes = result_bytes, .takes_lock = takes_lock,
                              .addr = remote_address};
    RSM_LOCK();
    int rc = held_amo_head == NULL ? amo_send(ep, &req, &w) : OPAL_ERR_OUT_OF_RESOURCE;
    if (rc == OPAL_ERR_OUT_OF_RESOURCE && (c->in_progress || held_amo_head != NULL)) {
        rsm_held_amo_t *h = malloc(sizeof(*h));
        if (h != NULL) {
            *h = (rsm_held_amo_t){.ep = ep, .req = req, .wait = w};
            *held_amo_tail = h;
            held_amo_tail = &h->next;
            c->amo_requests_held++;
            c->amo_held++;
            rc = OPAL_SUCCESS;          /* sent from progress; the reply completes it */
        }
    }
    RSM_UNLOCK();
    return rc;
}

int rsm_atomic_op(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, uint64_t remote_address,
                  struct mca_btl_base_registration_handle_t *remote_handle,
                  mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                  mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return amo_start(ep, NULL, NULL, remote_address, remote_handle, xbtl_amo_op_from_btl(op), flags,
                     operand, 0, false, cbfunc, cbcontext, cbdata);
}

int rsm_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                   uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                   struct mca_btl_base_registration_handle_t *remote_handle,
                   mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                   mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return amo_start(ep, local_address, local_handle, remote_address, remote_handle,
                     xbtl_amo_op_from_btl(op), flags, operand, 0, true, cbfunc, cbcontext,
                     cbdata);
}

int rsm_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                     uint64_t value, int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata)
{
    return amo_start(ep, local_address, local_handle, remote_address, remote_handle, XBTL_AMO_CSWAP,
                     flags, value, compare, true, cbfunc, cbcontext, cbdata);
}

int rsm_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
            uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
            struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
            int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (ep == NULL) {                   /* our own window */
        memcpy((void *) (uintptr_t) remote_address, local_address, size);
    } else if (ep->remote) {
        RSM_LOCK();     /* the back end's state is progress's too */
        int rc = rsm_verbs_put(ep, local_address, remote_address, local_handle, remote_handle,
                               size, cbfunc, cbcontext, cbdata);
        RSM_UNLOCK();
        return rc;      /* completes when the write does */
    } else {
        int err = rsm_cma_copy(ep->pid, true, local_address, remote_address, size);
        if (err != 0) {
            opal_show_help("help-btl-rsm.txt", "cma-put-failed", true, opal_process_info.nodename,
                           (int) ep->pid, strerror(err));
            return OPAL_ERROR;
        }
        c->rma_puts++;                  /* statistics only: races are harmless */
        c->rma_put_bytes += size;
    }
    cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

/* who a peer is, for a verbose line */
static const char *peer_desc(const mca_btl_base_endpoint_t *ep, char *buf, size_t len)
{
    if (!ep->remote) {
        snprintf(buf, len, "local rank %u", ep->local_rank);
    } else {
        snprintf(buf, len, "%s on another host",
                 ep->proc != NULL ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a rank");
    }
    return buf;
}

static void send_reply(mca_btl_base_endpoint_t *ep, const xbtl_amo_reply_t *rep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int rc = ep->out_connected ? OPAL_SUCCESS : rsm_endpoint_connect(ep);
    if (rc != OPAL_SUCCESS && rc != OPAL_ERR_RESOURCE_BUSY && rc != OPAL_ERR_OUT_OF_RESOURCE) {
        return;                         /* said why (rsm_fatal); the job is going down */
    }
    /* (BUSY: our connection to a peer on another host is being made; OUT_OF_RESOURCE:
     * no memory for the connection's bookkeeping yet, tried again from progress: held) */
    if (rc == OPAL_SUCCESS && held_head == NULL
        && rsm_send_internal(ep, RSM_TAG_AMO_REPLY, rep, sizeof(*rep))) {
        return;
    }
    /* the operation is done: its reply must not be lost, only delayed */
    rsm_held_reply_t *h = malloc(sizeof(*h));
    if (h == NULL) {
        rsm_fatal(ep, "btl rsm: out of memory holding the reply to a one-sided atomic");
        return;
    }
    *h = (rsm_held_reply_t){.ep = ep, .rep = *rep};
    *held_tail = h;
    held_tail = &h->next;
    c->amo_replies_held++;
}

/* The target's side: apply a peer's atomic to our memory and answer. */
static void amo_serve(mca_btl_base_endpoint_t *ep, const void *data, uint32_t len)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    char who[64];
    xbtl_amo_req_t req;
    xbtl_amo_reply_t rep = {.status = XBTL_AMO_REFUSED};
    if (len != sizeof(req)) {
        c->dropped++;
        c->dropped_amo++;
        RSM_VERBOSE(1, "dropped a malformed one-sided atomic from %s (%u bytes)",
                    peer_desc(ep, who, sizeof(who)), len);
        return;                         /* no id to answer */
    }
    const bool well_formed = xbtl_amo_req_read(data, len, &req);
    rep.id = req.id;
    if (!well_formed || !rsm_rma_atomic_allowed(ep, req.addr, xbtl_amo_width(req.flags))) {
        /* answered all the same, so the origin reports it instead of waiting */
        c->dropped++;
        c->dropped_amo++;
        RSM_VERBOSE(1, "refused a one-sided atomic from %s (operation %u, flags 0x%x, "
                    "address 0x%" PRIx64 "): %s", peer_desc(ep, who, sizeof(who)), req.op,
                    req.flags, req.addr,
                    well_formed ? "not in memory registered for remote atomics" : "malformed");
    } else {
        rep.old = xbtl_amo_apply((void *) (uintptr_t) req.addr, &req);
        rep.status = XBTL_AMO_DONE;
        c->amo_served++;
    }
    send_reply(ep, &rep);
}

/* The origin's side: the target's answer completes one of our atomics. */
static void amo_finish(mca_btl_base_endpoint_t *ep, const void *data, uint32_t len)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    char who[64];
    xbtl_amo_reply_t rep;            /* the peer may change it under us: read it once */
    const bool well_formed = xbtl_amo_reply_read(data, len, &rep);
    const uint32_t i = well_formed ? (uint32_t) (rep.id & 0xffff) : RSM_AMO_INFLIGHT;
    if (i >= RSM_AMO_INFLIGHT || !amo_waits[i].busy
        || amo_waits[i].ep != ep || rep.id >> 16 != amo_waits[i].gen) {
        c->dropped++;
        c->dropped_amo++;
        RSM_VERBOSE(1, "dropped a reply to a one-sided atomic from %s that answers "
                    "nothing we asked (%u bytes)", peer_desc(ep, who, sizeof(who)), len);
        return;
    }
    rsm_amo_wait_t w = amo_waits[i];
    amo_waits[i].busy = false;
    amo_free[amo_nfree++] = (uint16_t) i;
    int status = OPAL_SUCCESS;
    if (rep.status == XBTL_AMO_DONE) {
        xbtl_amo_store_old(w.local_address, w.result_bytes, rep.old);
        if (w.takes_lock) {
            xbtl_lock_watch_taken(&lock_watch, ep, w.addr, rep.old);
        }
    } else {
        c->amo_refused++;
        status = OPAL_ERROR;
        RSM_VERBOSE(1, "%s refused a one-sided atomic of ours: the word is not in "
                    "memory it registered for remote atomics", peer_desc(ep, who, sizeof(who)));
    }
    w.cbfunc(&mca_btl_rsm, ep, w.local_address, w.local_handle, w.cbcontext, w.cbdata, status);
}

void rsm_rma_deliver(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *data, uint32_t len)
{
    if (tag == RSM_TAG_AMO) {
        amo_serve(ep, data, len);
    } else {
        amo_finish(ep, data, len);
    }
}

int rsm_rma_progress(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int sent = 0;
    while (held_head != NULL
           && (held_head->ep->out_connected || rsm_endpoint_connect(held_head->ep) == OPAL_SUCCESS)
           && rsm_send_internal(held_head->ep, RSM_TAG_AMO_REPLY, &held_head->rep,
                                sizeof(held_head->rep))) {
        rsm_held_reply_t *h = held_head;
        held_head = h->next;
        if (held_head == NULL) {
            held_tail = &held_head;
        }
        free(h);
        c->amo_replies_held--;
        sent++;
    }
    while (held_amo_head != NULL) {
        rsm_held_amo_t *h = held_amo_head;
        int rc = amo_send(h->ep, &h->req, &h->wait);
        if (rc == OPAL_ERR_OUT_OF_RESOURCE) {
            break;
        }
        held_amo_head = h->next;
        if (held_amo_head == NULL) {
            held_amo_tail = &held_amo_head;
        }
        c->amo_requests_held--;
        if (rc != OPAL_SUCCESS) {
            h->wait.cbfunc(&mca_btl_rsm, h->ep, h->wait.local_address, h->wait.local_handle,
                           h->wait.cbcontext, h->wait.cbdata, rc);
        }
        free(h);
        sent++;
    }
    return sent;
}

void rsm_rma_finalize(void)
{
    while (held_head != NULL) {
        rsm_held_reply_t *h = held_head;
        held_head = h->next;
        free(h);
    }
    held_tail = &held_head;
    mca_btl_rsm_component.amo_replies_held = 0;
    while (held_amo_head != NULL) {     /* the job ends: nobody waits for them */
        rsm_held_amo_t *h = held_amo_head;
        held_amo_head = h->next;
        free(h);
    }
    held_amo_tail = &held_amo_head;
    mca_btl_rsm_component.amo_requests_held = 0;
}
