/*
 * One-sided communication between hosts for Open MPI's osc rdma: MPI_Win_create,
 * MPI_Win_allocate, MPI_Win_create_dynamic and the operations on them (put,
 * get, accumulate, fetch-and-op, compare-and-swap) over `--mca btl self,pmeth`.
 *
 * Why: osc rdma takes a window only over a BTL that reaches every rank of it
 * with put, get and atomics, and osc pt2pt (which needs only sends) is turned
 * off by Debian's openmpi-mca-params.conf.  Without these a pmeth job could not
 * create a window at all (MPI_ERR_WIN), as over tcp.  Where the job may select
 * osc pt2pt, which moves bulk data and accumulates faster over pmeth than these
 * messages, pmeth by default offers none of them (pmeth_rma_decide).
 *
 * How: Ethernet has no remote memory access, so each operation is a message of
 * pmeth's own (tags PMETH_TAG_RMA_*, below ob1's), carried by pmeth's
 * reliability like ob1's messages (in order, nothing lost) and served by the
 * target process when it makes progress (is inside MPI), as vader's atomics are
 * without xpmem:
 *   PUT       origin -> target: address, length, the data (one descriptor of
 *             up to the eager limit: osc rdma cuts larger puts at btl_put_limit)
 *   PUT_DONE  target -> origin: the data is in place; the origin's completion
 *             callback runs then, so osc's flush means "at the target".  One
 *             PUT_DONE answers every put of an origin served in one poll of a
 *             link (their ids listed): a stream of small puts no longer costs
 *             the target a frame each
 *   GET       origin -> target: address, length (at most btl_get_limit)
 *   GET_DATA  target -> origin: the data, copied to the origin's buffer
 *   AMO, AMO_REPLY  an atomic and its old value (xbtl_amo.h, rsm's format):
 *             the target applies it with the CPU's atomics (SUPPORTS_GLOB)
 * The target trusts nothing in a request: the header is copied out once, its
 * length must match what arrived, and the address range must lie inside memory
 * this process registered for that kind of remote access (osc's windows and
 * state, MCA_BTL_REG_FLAG_ACCESS_ANY).  A request that fails is answered
 * "refused" (the origin's callback gets an error, not a hang) and counted;
 * a malformed answer is dropped and counted.
 *
 * Keeping ob1 off it: these flags put pmeth in ob1's RDMA list too, and ob1
 * would then move large messages by RDMA get or put (its RGET / RPUT
 * protocols) instead of pmeth's buffer arrays, peek, grants and pacing.  So
 * pmeth registers only memory asked for remote atomics as well (osc asks for
 * ACCESS_ANY; ob1 never asks for atomics) and refuses ob1's registrations, which
 * makes ob1 use its send protocols; and btl_min_rdma_pipeline_size stays at
 * SIZE_MAX, so its receiver never starts the RPUT pipeline.
 */
#include "btl_pmeth.h"
#include "pmeth_rma_wire.h"
#include "xbtl_amo.h"

#include "opal/util/show_help.h"
#include "xbtl_optin.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>


/* ---- registrations ------------------------------------------------------------
 * osc copies btl_registration_handle_size bytes of a handle to its peers; pmeth's
 * peers need nothing from it (the target checks the address against its own
 * list), so it is a token. */
struct mca_btl_base_registration_handle_t {
    uint64_t token;
};

typedef struct pmeth_reg {
    struct mca_btl_base_registration_handle_t handle;   /* first: what osc holds */
    struct pmeth_reg *prev, *next;
    uint64_t base, size;
    uint32_t access;                /* MCA_BTL_REG_FLAG_* asked for */
} pmeth_reg_t;

static pmeth_reg_t regs = {.prev = &regs, .next = &regs};   /* remote-accessible memory */
static pmeth_reg_t local_only;     /* the handle of every local-only registration */

#define REMOTE_ACCESS                                                                      \
    (MCA_BTL_REG_FLAG_REMOTE_READ | MCA_BTL_REG_FLAG_REMOTE_WRITE | MCA_BTL_REG_FLAG_REMOTE_ATOMIC)

struct mca_btl_base_registration_handle_t *pmeth_register_mem(mca_btl_base_module_t *btl,
                                                              mca_btl_base_endpoint_t *ep,
                                                              void *base, size_t size,
                                                              uint32_t flags)
{
    if (!(flags & REMOTE_ACCESS)) {
        return &local_only.handle;  /* nothing to do: pmeth copies local memory itself */
    }
    if (!(flags & MCA_BTL_REG_FLAG_REMOTE_ATOMIC)) {
        return NULL;                /* ob1's RGET / RPUT: it takes the send protocols instead */
    }
    pmeth_reg_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return NULL;
    }
    r->handle.token = (uint64_t) (uintptr_t) base;
    r->base = (uint64_t) (uintptr_t) base;
    r->size = size;
    r->access = flags;
    PMETH_LOCK();
    r->next = regs.next;
    r->prev = &regs;
    regs.next->prev = r;
    regs.next = r;
    PMETH_UNLOCK();
    return &r->handle;
}

int pmeth_deregister_mem(mca_btl_base_module_t *btl,
                         struct mca_btl_base_registration_handle_t *handle)
{
    if (handle == NULL || handle == &local_only.handle) {
        return OPAL_SUCCESS;
    }
    pmeth_reg_t *r = (pmeth_reg_t *) handle;
    PMETH_LOCK();
    r->prev->next = r->next;
    r->next->prev = r->prev;
    PMETH_UNLOCK();
    free(r);
    return OPAL_SUCCESS;
}

/* [ADDR, ADDR + LEN) inside memory registered for ACCESS (overflow-safe) */
static bool rma_allowed(uint64_t addr, uint64_t len, uint32_t access)
{
    for (const pmeth_reg_t *r = regs.next; r != &regs; r = r->next) {
        if ((r->access & access) == access && pmeth_rma_range_inside(r->base, r->size, addr, len)) {
            return true;
        }
    }
    return false;
}

/* ---- the origin's bookkeeping ------------------------------------------------- */
#define PMETH_RMA_INFLIGHT 1024     /* operations asked for and not yet answered */

typedef struct pmeth_rma_wait {
    mca_btl_base_endpoint_t *ep;
    void *local_address;            /* GET: where the data goes; fetching atomics: the old value */
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
    uint64_t addr;                  /* the word, for the lock watch */
    uint32_t answer;                /* the tag that answers it */
    uint32_t len;                   /* GET: bytes asked; atomics: result bytes (0, 4, 8) */
    uint32_t gen;                   /* in the id: a late or forged answer finds another */
    bool busy;
    bool takes_lock;                /* osc's exclusive take of a peer's lock (xbtl_amo.h) */
} pmeth_rma_wait_t;

static pmeth_rma_wait_t waits[PMETH_RMA_INFLIGHT];
static uint16_t free_waits[PMETH_RMA_INFLIGHT];
static uint32_t nfree_waits;
static bool waits_ready;
static xbtl_lock_watch_t lock_watch;

/* Messages that could not go when asked (no descriptor, no free wait slot):
 * sent from progress, in order, before anything newer.  Answers must never be
 * lost, and a request asked for from inside progress (osc starting the next
 * step of an accumulate in a completion callback) cannot be refused: osc would
 * retry around opal_progress, which does nothing while pmeth's already runs. */
typedef struct pmeth_rma_held {
    struct pmeth_rma_held *next;
    mca_btl_base_endpoint_t *ep;
    uint8_t tag;
    bool request;                   /* takes a wait slot when sent (W) */
    pmeth_rma_wait_t w;
    size_t len;
    uint8_t bytes[];                /* the message: header, then data */
} pmeth_rma_held_t;
static pmeth_rma_held_t *held_head, **held_tail = &held_head;

/* Puts served and not yet answered: one batch per origin, a PUT_DONE each,
 * sent when the link's poll ends (pmeth_rma_answer_puts) or the batch fills. */
#define PMETH_RMA_BATCHES 8         /* origins answered together */
typedef struct pmeth_rma_batch {
    mca_btl_base_endpoint_t *ep;
    uint32_t n;
    uint64_t ids[PMETH_RMA_DONE_MAX];
} pmeth_rma_batch_t;
static pmeth_rma_batch_t batches[PMETH_RMA_BATCHES];
static uint32_t nbatches;

/* One message of ours to EP in one descriptor: HDR (HLEN bytes), then DATA (DLEN). */
static bool emit(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *hdr, size_t hlen,
                 const void *data, size_t dlen)
{
    mca_btl_base_descriptor_t *des =
        mca_btl_pmeth.btl_alloc(&mca_btl_pmeth, ep, MCA_BTL_NO_ORDER, hlen + dlen,
                                MCA_BTL_DES_FLAGS_PRIORITY | MCA_BTL_DES_FLAGS_BTL_OWNERSHIP);
    if (des == NULL) {
        return false;
    }
    uint8_t *p = des->des_segments[0].seg_addr.pval;
    memcpy(p, hdr, hlen);
    if (dlen > 0) {
        memcpy(p + hlen, data, dlen);
    }
    if (pmeth_send(&mca_btl_pmeth, ep, des, tag) < 0) {
        mca_btl_pmeth.btl_free(&mca_btl_pmeth, des);
        return false;
    }
    return true;
}

/* Send request BYTES (its id at ID_AT) to EP and wait for its answer as W says. */
static bool request_go(mca_btl_base_endpoint_t *ep, uint8_t tag, uint8_t *bytes, size_t hlen,
                       size_t id_at, const void *data, size_t dlen, const pmeth_rma_wait_t *w)
{
    if (!waits_ready) {
        for (uint32_t i = 0; i < PMETH_RMA_INFLIGHT; i++) {
            free_waits[i] = (uint16_t) (PMETH_RMA_INFLIGHT - 1 - i);
        }
        nfree_waits = PMETH_RMA_INFLIGHT;
        waits_ready = true;
    }
    if (nfree_waits == 0) {
        return false;
    }
    const uint32_t i = free_waits[nfree_waits - 1];
    const uint32_t gen = waits[i].gen + 1;
    const uint64_t id = (uint64_t) gen << 16 | i;
    memcpy(bytes + id_at, &id, sizeof(id));
    if (!emit(ep, tag, bytes, hlen, data, dlen)) {
        return false;
    }
    nfree_waits--;
    waits[i] = *w;
    waits[i].gen = gen;
    waits[i].busy = true;
    return true;
}

static bool hold(mca_btl_base_endpoint_t *ep, uint8_t tag, bool request, const pmeth_rma_wait_t *w,
                 const void *hdr, size_t hlen, const void *data, size_t dlen)
{
    pmeth_rma_held_t *h = malloc(sizeof(*h) + hlen + dlen);
    if (h == NULL) {
        return false;
    }
    *h = (pmeth_rma_held_t){.ep = ep, .tag = tag, .request = request, .len = hlen + dlen};
    if (w != NULL) {
        h->w = *w;
    }
    memcpy(h->bytes, hdr, hlen);
    if (dlen > 0) {
        memcpy(h->bytes + hlen, data, dlen);
    }
    *held_tail = h;
    held_tail = &h->next;
    mca_btl_pmeth_component.rma_held++;
    return true;
}

static size_t hdr_len(uint8_t tag)
{
    return tag == PMETH_TAG_RMA_AMO ? sizeof(xbtl_amo_req_t)
           : tag == PMETH_TAG_RMA_AMO_REPLY ? sizeof(xbtl_amo_reply_t)
                                            : sizeof(pmeth_rma_hdr_t);
}

static size_t id_offset(uint8_t tag)
{
    return tag == PMETH_TAG_RMA_AMO ? offsetof(xbtl_amo_req_t, id) : offsetof(pmeth_rma_hdr_t, id);
}

/* A request: sent now, or held (behind others held, or when inside progress),
 * or OPAL_ERR_OUT_OF_RESOURCE for osc to retry. */
static int request(mca_btl_base_endpoint_t *ep, uint8_t tag, void *hdr, const void *data,
                   size_t dlen, const pmeth_rma_wait_t *w)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int rc = OPAL_SUCCESS;
    PMETH_LOCK();
    if (held_head != NULL
        || !request_go(ep, tag, hdr, hdr_len(tag), id_offset(tag), data, dlen, w)) {
        rc = OPAL_ERR_OUT_OF_RESOURCE;
        if ((c->in_progress || held_head != NULL)
            && hold(ep, tag, true, w, hdr, hdr_len(tag), data, dlen)) {
            rc = OPAL_SUCCESS;
        }
    }
    PMETH_UNLOCK();
    return rc;
}

/* An answer: it must get there, so it waits when it cannot go now. */
static void answer(mca_btl_base_endpoint_t *ep, uint8_t tag, const void *hdr, size_t hlen,
                   const void *data, size_t dlen)
{
    if (held_head == NULL && emit(ep, tag, hdr, hlen, data, dlen)) {
        return;
    }
    if (!hold(ep, tag, false, NULL, hdr, hlen, data, dlen)) {
        pmeth_fatal(ep, "btl pmeth: out of memory holding the answer to a one-sided operation");
    }
}

/* Progress: what was held, in order, while it goes. */
int pmeth_rma_progress(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int sent = 0;
    while (held_head != NULL) {
        pmeth_rma_held_t *h = held_head;
        const size_t hlen = hdr_len(h->tag);
        bool ok = h->request ? request_go(h->ep, h->tag, h->bytes, hlen, id_offset(h->tag),
                                          h->bytes + hlen, h->len - hlen, &h->w)
                             : emit(h->ep, h->tag, h->bytes, hlen, h->bytes + hlen, h->len - hlen);
        if (!ok) {
            break;
        }
        held_head = h->next;
        if (held_head == NULL) {
            held_tail = &held_head;
        }
        c->rma_held--;
        free(h);
        sent++;
    }
    return sent;
}

void pmeth_rma_finalize(void)
{
    nbatches = 0;                   /* (each link's poll answered its own) */
    mca_btl_pmeth_component.rma_puts_owed = 0;
    while (held_head != NULL) {     /* the job ends: nobody waits for them */
        pmeth_rma_held_t *h = held_head;
        held_head = h->next;
        free(h);
    }
    held_tail = &held_head;
    mca_btl_pmeth_component.rma_held = 0;
    while (regs.next != &regs) {    /* osc frees its windows first; a leftover is osc's */
        pmeth_reg_t *r = regs.next;
        r->prev->next = r->next;
        r->next->prev = r->prev;
        free(r);
    }
}

/* ---- the origin's side: the BTL interface ------------------------------------ */

static const char *who(const mca_btl_base_endpoint_t *ep)
{
    return ep != NULL && ep->proc != NULL ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a rank";
}

int pmeth_put(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
              uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
              struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
              int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep == NULL) {               /* our own window */
        memcpy((void *) (uintptr_t) remote_address, local_address, size);
        cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }
    if (size > btl->btl_put_limit) {
        return OPAL_ERR_BAD_PARAM;  /* osc cuts at btl_put_limit */
    }
    pmeth_rma_hdr_t hdr = {.addr = remote_address, .len = (uint32_t) size};
    const pmeth_rma_wait_t w = {.ep = ep, .local_address = local_address,
                                .local_handle = local_handle, .cbfunc = cbfunc,
                                .cbcontext = cbcontext, .cbdata = cbdata,
                                .answer = PMETH_TAG_RMA_PUT_DONE};
    int rc = request(ep, PMETH_TAG_RMA_PUT, &hdr, local_address, size, &w);
    if (rc == OPAL_SUCCESS) {
        c->rma_puts++;
        c->rma_put_bytes += size;
    }
    return rc;
}

int pmeth_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
              uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
              struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
              int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (ep == NULL) {
        memcpy(local_address, (void *) (uintptr_t) remote_address, size);
        cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }
    if (size > btl->btl_get_limit) {
        return OPAL_ERR_BAD_PARAM;
    }
    pmeth_rma_hdr_t hdr = {.addr = remote_address, .len = (uint32_t) size};
    const pmeth_rma_wait_t w = {.ep = ep, .local_address = local_address,
                                .local_handle = local_handle, .cbfunc = cbfunc,
                                .cbcontext = cbcontext, .cbdata = cbdata,
                                .answer = PMETH_TAG_RMA_GET_DATA, .len = (uint32_t) size};
    int rc = request(ep, PMETH_TAG_RMA_GET, &hdr, NULL, 0, &w);
    if (rc == OPAL_SUCCESS) {
        c->rma_gets++;
        c->rma_get_bytes += size;
    }
    return rc;
}

static int amo_start(mca_btl_base_endpoint_t *ep, void *local_address,
                     struct mca_btl_base_registration_handle_t *local_handle,
                     uint64_t remote_address, uint32_t op, int flags, uint64_t operand,
                     uint64_t compare, bool fetch, mca_btl_base_rdma_completion_fn_t cbfunc,
                     void *cbcontext, void *cbdata)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    xbtl_amo_req_t req = {.addr = remote_address, .operand = operand, .compare = compare,
                          .op = op,
                          .flags = (flags & MCA_BTL_ATOMIC_FLAG_32BIT) ? XBTL_AMO_32BIT : 0},
                   checked;
    const uint32_t result_bytes = fetch ? xbtl_amo_width(req.flags) : 0;
    /* not offered (MIN and MAX: the interface does not say the signedness; no
     * floating point), or a misaligned word */
    if (op == 0 || op == XBTL_AMO_MIN || op == XBTL_AMO_MAX || (flags & MCA_BTL_ATOMIC_FLAG_FLOAT)
        || !xbtl_amo_req_read(&req, sizeof(req), &checked)) {
        return OPAL_ERR_NOT_SUPPORTED;
    }
    /* the lock watch (xbtl_amo.h): osc's region locks of a dynamic window,
     * its own rank's included (ep NULL: in place), while the job spans hosts
     * (osc's windows over several hosts take their locks through us; a job of
     * one host keeps none: osc uses the CPU's atomics for its locks there, and
     * a program's own atomics are not mistaken for them) */
    const bool watched = pmeth_job_spans_hosts();
    const bool takes_lock = watched && xbtl_lock_watch_takes(op, compare, operand, result_bytes);
    bool deadlock = false;
    if (watched && op == XBTL_AMO_ADD && req.flags == 0) {
        PMETH_LOCK();               /* the watch is progress's too (answers) */
        deadlock = !xbtl_lock_watch_add_ok(&lock_watch, ep, remote_address, operand);
        PMETH_UNLOCK();
    }
    if (OPAL_UNLIKELY(deadlock)) {
        char whose[96];
        snprintf(whose, sizeof(whose), "%s%s",
                 ep != NULL ? who(ep) : OPAL_NAME_PRINT(OPAL_PROC_MY_NAME),
                 ep != NULL ? "" : ", this very rank");
        opal_show_help("help-btl-pmeth.txt", "osc-dynamic-deadlock", true,
                       opal_process_info.nodename, whose);
        pmeth_fatal(ep, "btl pmeth: osc rdma (Open MPI 4.1.1-4.1.4) would wait for ever on a "
                        "lock it holds itself (a dynamic window over several hosts): run with "
                        "--mca osc pt2pt");
        return OPAL_ERROR;
    }
    if (ep == NULL) {               /* our own window: in place */
        PMETH_LOCK();
        xbtl_amo_in_place(&lock_watch, &checked, local_address, result_bytes, takes_lock);
        PMETH_UNLOCK();
        cbfunc(&mca_btl_pmeth, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }
    const pmeth_rma_wait_t w = {.ep = ep, .local_address = local_address,
                                .local_handle = local_handle, .cbfunc = cbfunc,
                                .cbcontext = cbcontext, .cbdata = cbdata,
                                .answer = PMETH_TAG_RMA_AMO_REPLY, .len = result_bytes,
                                .addr = remote_address,
                                .takes_lock = takes_lock};
    int rc = request(ep, PMETH_TAG_RMA_AMO, &req, NULL, 0, &w);
    if (rc == OPAL_SUCCESS) {
        c->rma_atomics_sent++;
    }
    return rc;
}

int pmeth_atomic_op(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                    uint64_t remote_address, struct mca_btl_base_registration_handle_t *remote_handle,
                    mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                    mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return amo_start(ep, NULL, NULL, remote_address, xbtl_amo_op_from_btl(op), flags, operand, 0,
                     false, cbfunc, cbcontext, cbdata);
}

int pmeth_atomic_fop(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
                     uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
                     struct mca_btl_base_registration_handle_t *remote_handle,
                     mca_btl_base_atomic_op_t op, uint64_t operand, int flags, int order,
                     mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return amo_start(ep, local_address, local_handle, remote_address, xbtl_amo_op_from_btl(op),
                     flags, operand, 0, true, cbfunc, cbcontext, cbdata);
}

int pmeth_atomic_cswap(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       struct mca_btl_base_registration_handle_t *local_handle,
                       struct mca_btl_base_registration_handle_t *remote_handle, uint64_t compare,
                       uint64_t value, int flags, int order,
                       mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    return amo_start(ep, local_address, local_handle, remote_address, XBTL_AMO_CSWAP, flags,
                     value, compare, true, cbfunc, cbcontext, cbdata);
}

/* ---- arrivals ------------------------------------------------------------------- */

/* Copy LEN bytes starting OFF bytes into the N segments to DST; false if they are not there. */
static bool gather(const mca_btl_base_segment_t *segs, uint32_t n, size_t off, void *dst,
                   size_t len)
{
    uint8_t *d = dst;
    for (uint32_t i = 0; i < n && len > 0; i++) {
        size_t sl = segs[i].seg_len;
        if (off >= sl) {
            off -= sl;
            continue;
        }
        size_t take = sl - off < len ? sl - off : len;
        memcpy(d, (const uint8_t *) segs[i].seg_addr.pval + off, take);
        d += take;
        len -= take;
        off = 0;
    }
    return len == 0;
}

static void batch_send(pmeth_rma_batch_t *b)
{
    pmeth_rma_hdr_t rep = {.len = b->n, .status = PMETH_RMA_DONE};
    answer(b->ep, PMETH_TAG_RMA_PUT_DONE, &rep, sizeof(rep), b->ids, b->n * sizeof(b->ids[0]));
    b->n = 0;
    mca_btl_pmeth_component.rma_put_answers++;
}

/* Answer every put served since the last call (the end of a link's poll). */
void pmeth_rma_answer_puts(void)
{
    for (uint32_t i = 0; i < nbatches; i++) {
        batch_send(&batches[i]);
    }
    nbatches = 0;
    mca_btl_pmeth_component.rma_puts_owed = 0;
}

static void put_served(mca_btl_base_endpoint_t *ep, uint64_t id)
{
    pmeth_rma_batch_t *b = NULL;
    for (uint32_t i = 0; i < nbatches && b == NULL; i++) {
        b = batches[i].ep == ep ? &batches[i] : NULL;
    }
    if (b == NULL) {
        if (nbatches == PMETH_RMA_BATCHES) {
            pmeth_rma_answer_puts();    /* many origins at once: answer those first */
        }
        b = &batches[nbatches++];
        b->ep = ep;
        b->n = 0;
    }
    b->ids[b->n++] = id;
    mca_btl_pmeth_component.rma_puts_owed++;
    if (b->n == PMETH_RMA_DONE_MAX) {
        batch_send(b);
    }
}

static void refused(mca_btl_base_endpoint_t *ep, const char *what, uint64_t addr, uint64_t len)
{
    mca_btl_pmeth_component.rma_refused++;
    PMETH_VERBOSE(1, "refused a one-sided %s from %s (address 0x%" PRIx64 ", %" PRIu64
                     " bytes): not in memory registered for it, or malformed", what, who(ep),
                  addr, len);
}

/* The target's side of PUT, GET and AMO. */
static void serve(mca_btl_base_endpoint_t *ep, uint8_t tag, const mca_btl_base_segment_t *segs,
                  uint32_t n, size_t bytes)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (tag == PMETH_TAG_RMA_AMO) {
        xbtl_amo_req_t raw, req;
        xbtl_amo_reply_t rep = {.status = XBTL_AMO_REFUSED};
        if (bytes != sizeof(raw) || !gather(segs, n, 0, &raw, sizeof(raw))) {
            c->rma_malformed++;     /* no id to answer */
            return;
        }
        rep.id = raw.id;
        if (!xbtl_amo_req_read(&raw, sizeof(raw), &req)
            || !rma_allowed(req.addr, xbtl_amo_width(req.flags), MCA_BTL_REG_FLAG_REMOTE_ATOMIC)) {
            refused(ep, "atomic", raw.addr, xbtl_amo_width(raw.flags & XBTL_AMO_32BIT));
        } else {
            rep.old = xbtl_amo_apply((void *) (uintptr_t) req.addr, &req);
            rep.status = XBTL_AMO_DONE;
            c->rma_atomics_served++;
        }
        answer(ep, PMETH_TAG_RMA_AMO_REPLY, &rep, sizeof(rep), NULL, 0);
        return;
    }
    pmeth_rma_hdr_t hdr;
    if (bytes < sizeof(hdr) || !gather(segs, n, 0, &hdr, sizeof(hdr))) {
        c->rma_malformed++;
        return;
    }
    pmeth_rma_hdr_t rep = {.id = hdr.id, .status = PMETH_RMA_REFUSED};
    if (tag == PMETH_TAG_RMA_PUT) {
        if (!pmeth_rma_put_ok(&hdr, bytes)
            || !rma_allowed(hdr.addr, hdr.len, MCA_BTL_REG_FLAG_REMOTE_WRITE)) {
            refused(ep, "put", hdr.addr, hdr.len);
            answer(ep, PMETH_TAG_RMA_PUT_DONE, &rep, sizeof(rep), NULL, 0);
        } else {
            (void) gather(segs, n, sizeof(hdr), (void *) (uintptr_t) hdr.addr, hdr.len);
            c->rma_served++;
            put_served(ep, hdr.id);
        }
        return;
    }
    /* GET */
    const void *src = NULL;
    if (!pmeth_rma_get_ok(&hdr, bytes, mca_btl_pmeth.btl_get_limit)
        || !rma_allowed(hdr.addr, hdr.len, MCA_BTL_REG_FLAG_REMOTE_READ)) {
        refused(ep, "get", hdr.addr, hdr.len);
    } else {
        src = (const void *) (uintptr_t) hdr.addr;
        rep.len = hdr.len;
        rep.status = PMETH_RMA_DONE;
        c->rma_served++;
    }
    answer(ep, PMETH_TAG_RMA_GET_DATA, &rep, sizeof(rep), src, src != NULL ? hdr.len : 0);
}

/* The origin's side: the answer (TAG) to our operation ID completes it.  For a
 * GET's data, LEN bytes at DATA_AT in the segments; for an atomic, OLD. */
static void complete(mca_btl_base_endpoint_t *ep, uint8_t tag, uint64_t id, uint32_t status,
                     const mca_btl_base_segment_t *segs, uint32_t n, size_t data_at,
                     uint32_t len, uint64_t old)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    const uint32_t i = (uint32_t) (id & 0xffff);
    if (i >= PMETH_RMA_INFLIGHT || !waits[i].busy || waits[i].ep != ep || waits[i].answer != tag
        || id >> 16 != waits[i].gen
        || (tag == PMETH_TAG_RMA_GET_DATA && status == PMETH_RMA_DONE && len != waits[i].len)) {
        c->rma_malformed++;
        PMETH_VERBOSE(1, "dropped an answer to a one-sided operation from %s that answers "
                         "nothing we asked", who(ep));
        return;
    }
    pmeth_rma_wait_t w = waits[i];
    waits[i].busy = false;
    free_waits[nfree_waits++] = (uint16_t) i;
    int rc = OPAL_SUCCESS;
    if (status != PMETH_RMA_DONE) {
        rc = OPAL_ERROR;
        c->rma_refused_by_peer++;
        PMETH_VERBOSE(1, "%s refused a one-sided operation of ours: the memory is not "
                         "registered there for it", who(ep));
    } else if (tag == PMETH_TAG_RMA_GET_DATA) {
        (void) gather(segs, n, data_at, w.local_address, len);
    } else if (tag == PMETH_TAG_RMA_AMO_REPLY) {
        xbtl_amo_store_old(w.local_address, w.len, old);
        if (w.takes_lock) {
            xbtl_lock_watch_taken(&lock_watch, ep, w.addr, old);
        }
    }
    w.cbfunc(&mca_btl_pmeth, ep, w.local_address, w.local_handle, w.cbcontext, w.cbdata, rc);
}

static void malformed_answer(mca_btl_base_endpoint_t *ep, size_t bytes)
{
    mca_btl_pmeth_component.rma_malformed++;
    PMETH_VERBOSE(1, "dropped a malformed answer to a one-sided operation from %s (%zu bytes)",
                  who(ep), bytes);
}

/* An answer from EP: read once, checked, and what it answers completed. */
static void finish(mca_btl_base_endpoint_t *ep, uint8_t tag, const mca_btl_base_segment_t *segs,
                   uint32_t n, size_t bytes)
{
    if (tag == PMETH_TAG_RMA_AMO_REPLY) {
        xbtl_amo_reply_t raw, rep;
        if (bytes != sizeof(raw) || !gather(segs, n, 0, &raw, sizeof(raw))
            || !xbtl_amo_reply_read(&raw, sizeof(raw), &rep)) {
            malformed_answer(ep, bytes);
            return;
        }
        complete(ep, tag, rep.id,
                 rep.status == XBTL_AMO_DONE ? PMETH_RMA_DONE : PMETH_RMA_REFUSED, segs, n, 0, 0,
                 rep.old);
        return;
    }
    pmeth_rma_hdr_t hdr;
    const bool put_done = tag == PMETH_TAG_RMA_PUT_DONE;
    if (bytes < sizeof(hdr) || !gather(segs, n, 0, &hdr, sizeof(hdr))
        || !pmeth_rma_answer_ok(&hdr, bytes, put_done)) {
        malformed_answer(ep, bytes);
        return;
    }
    if (put_done && hdr.status == PMETH_RMA_DONE) {
        uint64_t ids[PMETH_RMA_DONE_MAX];   /* the puts it answers, after the header */
        (void) gather(segs, n, sizeof(hdr), ids, hdr.len * sizeof(ids[0]));
        for (uint32_t k = 0; k < hdr.len; k++) {
            complete(ep, tag, ids[k], PMETH_RMA_DONE, segs, n, 0, 0, 0);
        }
        return;
    }
    complete(ep, tag, hdr.id, hdr.status, segs, n, sizeof(hdr), hdr.len, 0);
}

void pmeth_rma_deliver(mca_btl_base_endpoint_t *ep, uint8_t tag,
                       const mca_btl_base_segment_t *segs, uint32_t n, size_t bytes)
{
    if (tag == PMETH_TAG_RMA_PUT || tag == PMETH_TAG_RMA_GET || tag == PMETH_TAG_RMA_AMO) {
        serve(ep, tag, segs, n, bytes);
    } else {
        finish(ep, tag, segs, n, bytes);
    }
}

/* Offer osc rdma the operations, sized to the eager limit (the module has none
 * until this runs: its function pointers are NULL, its flags only SEND). */
static void rma_offer(mca_btl_base_module_t *m)
{
    m->btl_flags |= MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET | MCA_BTL_FLAGS_ATOMIC_OPS
                    | MCA_BTL_FLAGS_ATOMIC_FOPS;
    m->btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND
                          | MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR
                          | MCA_BTL_ATOMIC_SUPPORTS_LAND | MCA_BTL_ATOMIC_SUPPORTS_LOR
                          | MCA_BTL_ATOMIC_SUPPORTS_LXOR | MCA_BTL_ATOMIC_SUPPORTS_SWAP
                          | MCA_BTL_ATOMIC_SUPPORTS_CSWAP | MCA_BTL_ATOMIC_SUPPORTS_32BIT
                          | MCA_BTL_ATOMIC_SUPPORTS_GLOB;
    m->btl_put = pmeth_put;
    m->btl_get = pmeth_get;
    m->btl_atomic_op = pmeth_atomic_op;
    m->btl_atomic_fop = pmeth_atomic_fop;
    m->btl_atomic_cswap = pmeth_atomic_cswap;
    m->btl_register_mem = pmeth_register_mem;
    m->btl_deregister_mem = pmeth_deregister_mem;
    m->btl_registration_handle_size = sizeof(struct mca_btl_base_registration_handle_t);
    /* one descriptor of pmeth's each way (osc cuts larger ones) */
    m->btl_put_limit = m->btl_eager_limit - sizeof(pmeth_rma_hdr_t);
    m->btl_get_limit = m->btl_eager_limit - sizeof(pmeth_rma_hdr_t);
    m->btl_put_alignment = 0;
    m->btl_get_alignment = 0;
    /* local buffers are copied by pmeth itself: osc need not register them */
    m->btl_put_local_registration_threshold = SIZE_MAX;
    m->btl_get_local_registration_threshold = SIZE_MAX;
}

/* Whether pmeth offers osc rdma these, by btl_pmeth_rma: at the first
 * add_procs, because the default (2) follows the job's osc selection, and
 * Open MPI opens the osc framework (registering that selection) after the
 * BTLs' init and before their add_procs; bml reads the flags set here when it
 * adds the peers.  osc pt2pt, where allowed, moves bulk data and accumulates
 * faster over pmeth than these messages (btl_pmeth/README.md): then pmeth
 * stays out of osc's way. */
void pmeth_rma_decide(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (c->rma_decided) {
        return;
    }
    c->rma_decided = true;
    const bool pt2pt = xbtl_component_allowed("ompi", "osc", "pt2pt");
    c->rma = (c->rma_mode == 1 || (c->rma_mode == 2 && !pt2pt))
             && mca_btl_pmeth.btl_eager_limit > sizeof(pmeth_rma_hdr_t);
    if (c->rma) {
        rma_offer(&mca_btl_pmeth);
    }
    PMETH_VERBOSE(5, "one-sided operations for osc rdma: %s (btl_pmeth_rma %d%s)",
                  c->rma ? "offered" : "not offered", c->rma_mode,
                  c->rma_mode != 2 ? "" : pt2pt ? ": this job may select osc pt2pt"
                                                : ": this job's osc selection leaves out pt2pt");
}
