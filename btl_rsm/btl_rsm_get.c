/*
 * Single copy: ob1's RDMA get, served by reading the sender's memory with
 * process_vm_readv (CMA), and for large messages split with the sender.  (For a
 * peer on another host, by one RDMA read: rsm_verbs_get in btl_rsm_verbs.c.)
 *
 * Why split: a get is one copy on one core while the sender's core only polls
 * (when the receiver is itself sending by single copy, it does not split: below).
 * For a get of at least btl_rsm_single_copy_split bytes the receiver copies the
 * first half and asks the sender (an internal inline message, RSM_TAG_HELP) to
 * write the second half into it with process_vm_writev.  Both halves go at once,
 * each byte is still copied exactly once, from user buffer to user buffer.
 *
 * The split's state is one line in the receiver's control segment (rsm_help_slot_t,
 * `gen << 8 | status`).  The receiver posts it (POSTED) before asking; the sender
 * claims it with a compare-and-swap (POSTED -> TAKEN) and ends with DONE or FAILED;
 * the receiver, once its own half is copied, tries to take the second half back
 * (POSTED -> MINE) and copies it itself if the sender has not started.  So a
 * sender busy elsewhere never delays a get by more than it takes the receiver to
 * copy everything, and a help request that arrives late finds the slot moved on
 * (another generation) and is dropped.
 *
 * The sender trusts nothing in a help request: the slot index is checked, the
 * source range must lie inside a buffer it registered for remote reading by that
 * same peer and has not deregistered (ob1 deregisters only after the receiver's FIN, which comes
 * after the split is over), and the destination is written through the kernel,
 * which confines it to the receiver's own address space.
 */
#define _GNU_SOURCE
#include "btl_rsm.h"

#include "opal/util/show_help.h"
#include "rsm_help.h"

#include <errno.h>
#include <string.h>
#include <sys/uio.h>

enum { RSM_HELP_FREE = 0, RSM_HELP_POSTED, RSM_HELP_TAKEN, RSM_HELP_DONE, RSM_HELP_FAILED,
       RSM_HELP_MINE };

typedef struct rsm_parked_get {     /* a split get waiting for the sender's half */
    mca_btl_base_endpoint_t *ep;
    uint64_t gen;
    void *local_address, *dst;
    uint64_t src;
    size_t size, half_len;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t cbfunc;
    void *cbcontext, *cbdata;
} rsm_parked_get_t;

/* A REMOTE_READ registration: the ranges a peer may ask us to write from. */
typedef struct rsm_reg {
    struct mca_btl_base_registration_handle_t h;    /* first: ob1 sends its wire part */
    struct rsm_reg *prev, *next;
    mca_btl_base_endpoint_t *ep;    /* the peer it was registered for (NULL: any) */
    bool offered;                   /* counted in ep->reads_offered (a message's, not a window's) */
    uintptr_t base;
    size_t size;
    struct mca_btl_base_registration_handle_t *device;  /* a window's, for other hosts */
} rsm_reg_t;

static rsm_reg_t live_regs = {.prev = &live_regs, .next = &live_regs};
/* Registrations for one-sided access (osc rdma's windows and state, with
 * MCA_BTL_REG_FLAG_REMOTE_ATOMIC): a peer may ask for atomics inside them, and
 * split reads of them.  Kept apart from live_regs, whose emptiness says that no
 * peer is reading a message of ours (rsm_get), while a window lives for the job. */
static rsm_reg_t rma_regs = {.prev = &rma_regs, .next = &rma_regs};
/* the handle of every local registration for a CMA get (nothing to register) */
static struct mca_btl_base_registration_handle_t rsm_reg_token = {.kind = RSM_REG_TOKEN};

/* Copy LEN bytes between us and PID: read (into our LOCAL) or write (from LOCAL). */
int rsm_cma_copy(pid_t pid, bool write, void *local_addr, uint64_t remote_addr, size_t len)
{
    struct iovec local = {.iov_base = local_addr, .iov_len = len};
    struct iovec remote = {.iov_base = (void *) (uintptr_t) remote_addr, .iov_len = len};
    while (local.iov_len > 0) {
        ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
                          : process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return n < 0 ? errno : EIO;
        }
        local.iov_base = (char *) local.iov_base + n;
        local.iov_len -= (size_t) n;
        remote.iov_base = (char *) remote.iov_base + n;
        remote.iov_len -= (size_t) n;
    }
    return 0;
}

static int get_failed(mca_btl_base_endpoint_t *ep, int err)
{
    opal_show_help("help-btl-rsm.txt", "cma-failed", true, opal_process_info.nodename,
                   (int) ep->pid, strerror(err));
    return OPAL_ERROR;
}

static rsm_help_slot_t *my_slot(unsigned i)
{
    return rsm_ctl_help(&mca_btl_rsm_component.layout, mca_btl_rsm_component.ctl.base, i);
}

/* Post a split: a free slot, POSTED, and the request in the sender's queue.
 * Returns the slot, or -1 (no slot, no connection or no room: copy it all). */
static int help_post(mca_btl_base_endpoint_t *ep, uint64_t src, void *dst, size_t len, uint64_t *gen)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int slot = -1;
    for (int i = 0; i < RSM_HELP_SLOTS; i++) {
        if (c->parked[i] == NULL
            && (atomic_load_explicit(&my_slot(i)->state, memory_order_relaxed) & 0xff) == RSM_HELP_FREE) {
            slot = i;
            break;
        }
    }
    if (slot < 0 || (!ep->out_connected && rsm_endpoint_connect(ep) != OPAL_SUCCESS)) {
        return -1;
    }
    *gen = ++c->help_gen;
    rsm_help_req_t req = {.src = src, .dst = (uint64_t) (uintptr_t) dst, .len = len, .gen = *gen,
                          .slot = (uint32_t) slot};
    atomic_store_explicit(&my_slot(slot)->state, *gen << 8 | RSM_HELP_POSTED, memory_order_release);
    if (!rsm_send_internal(ep, RSM_TAG_HELP, &req, sizeof(req))) {
        atomic_store_explicit(&my_slot(slot)->state, RSM_HELP_FREE, memory_order_relaxed);
        return -1;
    }
    return slot;
}

/* Free a posted split whose get failed in its own read: ob1 then has the region sent
 * instead and may complete the receive at once, so the sender must not write into
 * the buffer after this.  A request still on its way finds the slot FREE and is
 * dropped; a sender already writing (TAKEN) is waited for, one process_vm_writev of
 * at most half the get.  (Left POSTED, the slot was also never free again.) */
static void help_withdraw(int slot, uint64_t gen)
{
    _Atomic uint64_t *state = &my_slot((unsigned) slot)->state;
    uint64_t seen = gen << 8 | RSM_HELP_POSTED;
    if (!atomic_compare_exchange_strong(state, &seen, RSM_HELP_FREE)) {
        while ((seen & 0xff) == RSM_HELP_TAKEN) {
            seen = atomic_load_explicit(state, memory_order_acquire);
        }
        atomic_store_explicit(state, RSM_HELP_FREE, memory_order_relaxed);
    }
}

/* Both ways: single copy to a near receiver while bulk data also comes from it.
 *
 * Why: to a receiver under btl_rsm_two_copy_ns the pipeline's two copies beat
 * one (rsm_distance.h) because they run on both cores at once, the sender's
 * copy-in beside the receiver's copy-out, in a cache both share.  When both
 * ranks send each other large messages at once, both cores copy anyway, and
 * the pipeline costs each of them two copies per byte it takes in or gives out
 * where single copy costs one (one way, the pipeline keeps its lead: 64 KiB
 * 14,035 MB/s against 7,632 by single copy).  Measured on an AMD EPYC guest,
 * near cores, medians of 6-16 runs: bi-directional 64 / 128 / 256 KiB 7,351 /
 * 6,637 / 6,464 MB/s with this against 6,844 / 5,720 / 5,925 without, 512 KiB
 * to 4 MiB within the runs' spread (docs/results-2026-12-07-rsm-both-ways/).
 *
 * Seen at two moments, each one cache line at most: when we start a message
 * past the eager limit to EP and a pool message of at least RSM_BOTH_WAYS_MIN
 * bytes from it waits in our queue (it sends the two-copy way), and when we
 * read from EP by single copy while it may read from us or our pool data to it
 * is unconsumed.  A ping-pong is neither: each side starts its message after
 * taking in (and acking) the other's, and ob1's own control messages (its ACK,
 * FIN and RGET headers) are inline.  Once seen, the next RSM_BOTH_WAYS_STARTS
 * starts to EP go by single copy, so that an exchange repeated in windows
 * keeps the choice from one window to the next, and a pattern that turns
 * one-way returns to two copies after that many. */
#define RSM_BOTH_WAYS_MIN 4096
#define RSM_BOTH_WAYS_STARTS 128

static void both_ways_seen(mca_btl_base_endpoint_t *ep)
{
    if (ep->both_ways_left == 0) {
        RSM_VERBOSE(20, "local rank %u is near and sends us bulk data as we send it ours: "
                    "single copy to it for the next %d large messages", ep->local_rank,
                    RSM_BOTH_WAYS_STARTS);
    }
    ep->both_ways_left = RSM_BOTH_WAYS_STARTS;
}

/* We read from EP (a get): do large messages of ours to it run at the same time? */
static void both_ways_seen_reading(mca_btl_base_endpoint_t *ep)
{
    if (!mca_btl_rsm_component.single_copy_both_ways || !ep->dist.two_copy) {
        return;
    }
    if (ep->reads_offered == 0 && ep->slots_with_runs > 0) {
        rsm_endpoint_reclaim(ep, true);     /* acks not yet collected are not traffic */
    }
    if (ep->reads_offered > 0 || ep->slots_with_runs > 0) {
        both_ways_seen(ep);
    }
}

/* A message past the eager limit to near EP starts: single copy this time? */
static bool both_ways_offer(mca_btl_base_endpoint_t *ep)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (!c->single_copy_both_ways) {
        return false;
    }
    RSM_LOCK();
    if (ep->in_connected
        && rsm_pb_waiting_pool_bytes(&ep->in_queue[ep->head & ep->q_mask], ep->head)
               >= RSM_BOTH_WAYS_MIN) {
        both_ways_seen(ep);
    }
    const bool offer = ep->both_ways_left > 0;
    if (offer) {
        ep->both_ways_left--;
        c->both_ways_offers++;
    }
    RSM_UNLOCK();
    return offer;
}

int rsm_get(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep, void *local_address,
            uint64_t remote_address, struct mca_btl_base_registration_handle_t *local_handle,
            struct mca_btl_base_registration_handle_t *remote_handle, size_t size, int flags,
            int order, mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext, void *cbdata)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    size_t first = size;
    int slot = -1, err;
    uint64_t gen = 0;

    if (ep == NULL) {
        /* osc rdma reaching its own window (no endpoint: MCA_BTL_ATOMIC_SUPPORTS_GLOB) */
        memcpy(local_address, (const void *) (uintptr_t) remote_address, size);
        cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
        return OPAL_SUCCESS;
    }
    if (ep->remote) {
        RSM_LOCK();     /* the back end's state is progress's too */
        int rc = rsm_verbs_get(ep, local_address, remote_address, local_handle, remote_handle,
                               size, cbfunc, cbcontext, cbdata);
        RSM_UNLOCK();
        return rc;
    }
    RSM_LOCK();
    both_ways_seen_reading(ep);
    /* Split only when we are not ourselves waiting for peers to read from us (no live
     * REMOTE_READ registration): then our peers' cores are busy with our data, as in
     * a bi-directional exchange, and a split only adds a message and moves half the
     * copy onto a core that has its own (measured: bibw 64 KiB 0.83x vader split,
     * 0.95x not). */
    if (c->single_copy_split > 0 && size >= c->single_copy_split && live_regs.next == &live_regs) {
        first = (size / 2 + 4095) & ~(size_t) 4095;   /* page-aligned halves where the buffers are */
        if (first >= size
            || (slot = help_post(ep, remote_address + first, (char *) local_address + first,
                                 size - first, &gen)) < 0) {
            first = size;
        }
    }
    RSM_UNLOCK();
    if ((err = rsm_cma_copy(ep->pid, false, local_address, remote_address, first)) != 0) {
        if (slot >= 0) {
            help_withdraw(slot, gen);
        }
        return get_failed(ep, err);
    }
    c->gets++;                          /* statistics only: races are harmless */
    c->get_bytes += size;
    c->splits += slot >= 0;
    if (slot >= 0) {
        _Atomic uint64_t *state = &my_slot(slot)->state;
        uint64_t seen = gen << 8 | RSM_HELP_POSTED;
        if (!atomic_compare_exchange_strong(state, &seen, gen << 8 | RSM_HELP_MINE)
            && (seen & 0xff) == RSM_HELP_TAKEN) {
            /* the sender is writing it: finish from progress */
            rsm_parked_get_t *p = malloc(sizeof(*p));
            if (p != NULL) {
                *p = (rsm_parked_get_t){.ep = ep, .gen = gen, .local_address = local_address,
                                        .dst = (char *) local_address + first,
                                        .src = remote_address + first, .size = size,
                                        .half_len = size - first, .local_handle = local_handle,
                                        .cbfunc = cbfunc, .cbcontext = cbcontext, .cbdata = cbdata};
                RSM_LOCK();
                c->parked[slot] = p;
                c->n_parked++;
                RSM_UNLOCK();
                return OPAL_SUCCESS;
            }
            while (((seen = atomic_load_explicit(state, memory_order_acquire)) & 0xff)
                   == RSM_HELP_TAKEN) {
            }
        }
        err = 0;
        if ((seen & 0xff) != RSM_HELP_DONE) {
            /* the sender had not started (the slot is MINE now) or could not (FAILED) */
            err = rsm_cma_copy(ep->pid, false, (char *) local_address + first, remote_address + first,
                               size - first);
            c->taken_back++;
        }
        atomic_store_explicit(state, RSM_HELP_FREE, memory_order_relaxed);
        if (err != 0) {
            return get_failed(ep, err);
        }
    }
    cbfunc(btl, ep, local_address, local_handle, cbcontext, cbdata, OPAL_SUCCESS);
    return OPAL_SUCCESS;
}

/* From progress: complete the split gets whose second half the sender finished. */
int rsm_get_progress(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int done = 0;
    for (unsigned i = 0; i < RSM_HELP_SLOTS && c->n_parked > 0; i++) {
        rsm_parked_get_t *p = c->parked[i];
        if (p == NULL) {
            continue;
        }
        uint64_t st = atomic_load_explicit(&my_slot(i)->state, memory_order_acquire);
        int rc = OPAL_SUCCESS;
        if ((st & 0xff) == RSM_HELP_TAKEN) {
            continue;
        }
        if ((st & 0xff) != RSM_HELP_DONE) {     /* FAILED: the sender could not write it */
            c->taken_back++;
            int err = rsm_cma_copy(p->ep->pid, false, p->dst, p->src, p->half_len);
            if (err != 0) {
                rc = get_failed(p->ep, err);
            }
        }
        atomic_store_explicit(&my_slot(i)->state, RSM_HELP_FREE, memory_order_relaxed);
        c->parked[i] = NULL;
        c->n_parked--;
        p->cbfunc(&mca_btl_rsm, p->ep, p->local_address, p->local_handle, p->cbcontext, p->cbdata,
                  rc);
        free(p);
        done++;
    }
    return done;
}

/* The sender's side: a receiver (EP) asks us to write part of its get. */
void rsm_help_serve(mca_btl_base_endpoint_t *ep, const void *data, uint32_t len)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    rsm_help_req_t req;             /* the peer may change it under us: read it once */
    if (ep->peer_ctl.base == NULL || !rsm_help_req_read(data, len, &req)) {
        c->dropped++;
        c->dropped_help++;
        RSM_VERBOSE(1, "dropped a malformed single-copy request from local rank %u (%u bytes); %"
                    PRIu64 " dropped so far", ep->local_rank, len, c->dropped);
        return;
    }
    _Atomic uint64_t *state = &rsm_ctl_help(&c->layout, ep->peer_ctl.base, req.slot)->state;
    uint64_t posted = req.gen << 8 | RSM_HELP_POSTED;
    if (!atomic_compare_exchange_strong(state, &posted, req.gen << 8 | RSM_HELP_TAKEN)) {
        return;                         /* the receiver copied it itself, or it is stale */
    }
    bool inside = false;
    for (rsm_reg_t *r = live_regs.next; r != &live_regs; r = r->next) {
        if ((r->ep == NULL || r->ep == ep) && rsm_range_inside(r->base, r->size, req.src, req.len)) {
            inside = true;
            break;
        }
    }
    for (rsm_reg_t *r = rma_regs.next; r != &rma_regs && !inside; r = r->next) {
        inside = (r->ep == NULL || r->ep == ep) && rsm_range_inside(r->base, r->size, req.src, req.len);
    }
    int err = EFAULT;
    if (!inside
        || (err = rsm_cma_copy(ep->pid, true, (void *) (uintptr_t) req.src, req.dst, req.len)) != 0) {
        if (!inside) {
            c->dropped++;
            c->dropped_help++;
        }
        RSM_VERBOSE(1, "could not write %" PRIu64 " bytes of local rank %u's get (%s); it reads "
                    "them itself", req.len, ep->local_rank,
                    inside ? strerror(err) : "not inside a buffer registered for reading");
        atomic_store_explicit(state, req.gen << 8 | RSM_HELP_FAILED, memory_order_release);
        return;
    }
    c->helped++;
    c->help_bytes += req.len;
    atomic_store_explicit(state, req.gen << 8 | RSM_HELP_DONE, memory_order_release);
}

/* ob1 (4.1) has no size threshold of its own for RDMA get: past the eager limit it
 * sends an RGET for any contiguous buffer that every rdma BTL can "register"
 * (mca_pml_ob1_rdma_btls), otherwise a rendezvous followed by the send pipeline.
 * Registration is therefore where we choose: nothing needs pinning for CMA, but
 * asking to register a send buffer for remote reading (MCA_BTL_REG_FLAG_REMOTE_READ,
 * the sender's question) below btl_rsm_single_copy_min bytes fails, and ob1 takes
 * the two-copy pipeline for that message.  The receiver's own registrations
 * (LOCAL_WRITE) always succeed: a get, once announced, must not be refused.  A
 * REMOTE_READ registration is remembered until deregistered: it is what a help
 * request may ask us to write from.  For a peer on another host both sides
 * register with the device (btl_rsm_verbs.c, "single copy between hosts") and
 * the threshold is btl_rsm_verbs_single_copy_min; should the receiver's
 * registration fail after all (the locked-memory limit), ob1 asks the sender to
 * send that message instead (4.1's ob1 does not retry a get: its
 * rdma_retries_limit is fixed at 0). */
struct mca_btl_base_registration_handle_t *rsm_register_mem(mca_btl_base_module_t *btl,
                                                            mca_btl_base_endpoint_t *ep, void *base,
                                                            size_t size, uint32_t flags)
{
    const mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (ep == MCA_BTL_ENDPOINT_ANY) {
        ep = NULL;                      /* osc rdma's windows: for every peer */
    }
    /* osc rdma's windows (MCA_BTL_REG_FLAG_ACCESS_ANY): always, whatever their size */
    const bool one_sided = (flags & MCA_BTL_REG_FLAG_REMOTE_ATOMIC) && c->rma_on;
    if (ep != NULL && ep->remote && !one_sided) {
        /* another host: the receiver reads by RDMA, so both buffers are registered
         * with the device (the receiver's too: the read lands through its lkey) */
        if (!c->verbs_single_copy_on
            || ((flags & MCA_BTL_REG_FLAG_REMOTE_READ) && size < c->verbs_single_copy_min)) {
            return NULL;    /* ob1 takes the pipelined two-copy path through the pool */
        }
        RSM_LOCK();
        struct mca_btl_base_registration_handle_t *h = rsm_verbs_register(base, size, false);
        RSM_UNLOCK();
        if (h == NULL) {
            RSM_VERBOSE(1, "a message of %zu bytes to %s takes the two-copy path: its buffer "
                        "could not be registered", size,
                        ep->proc != NULL ? OPAL_NAME_PRINT(ep->proc->proc_name) : "a rank");
        }
        return h;
    }
    if (!(flags & MCA_BTL_REG_FLAG_REMOTE_READ) && !one_sided) {
        return &rsm_reg_token;
    }
    if (!one_sided && (!c->single_copy_on || size < c->single_copy_min)) {
        return NULL;
    }
    if (!one_sided && ep != NULL && ep->dist.two_copy && !c->single_copy_near
        && !both_ways_offer(ep)) {
        return NULL;    /* a receiver this close: the two-copy pipeline is faster (rsm_distance.h) */
    }
    rsm_reg_t *r = malloc(sizeof(*r));
    if (r == NULL) {
        return NULL;                    /* ob1 falls back to the two-copy pipeline */
    }
    r->h = (struct mca_btl_base_registration_handle_t){.kind = RSM_REG_CMA};
    r->ep = ep;
    r->base = (uintptr_t) base;
    r->size = size;
    r->device = NULL;
    rsm_reg_t *list = one_sided ? &rma_regs : &live_regs;
    RSM_LOCK();
    if (one_sided && rsm_verbs_has_peers()) {
        /* peers on other hosts put and get by RDMA: the window's keys go in the
         * handle osc rdma hands them; atomics stay messages, checked against the
         * range as on this host (no remote-atomic access is granted) */
        if ((r->device = rsm_verbs_register(base, size, true)) == NULL) {
            RSM_UNLOCK();
            opal_show_help("help-btl-rsm.txt", "window-register-failed", true,
                           opal_process_info.nodename, size);
            free(r);
            return NULL;
        }
        memcpy(r->h.rkey, r->device->rkey, sizeof(r->h.rkey));
        memcpy(r->h.lkey, r->device->lkey, sizeof(r->h.lkey));
        r->h.kind = RSM_REG_WINDOW;
    }
    r->next = list->next;
    r->prev = list;
    list->next->prev = r;
    list->next = r;
    r->offered = !one_sided && ep != NULL;
    if (r->offered) {
        ep->reads_offered++;
    }
    RSM_UNLOCK();
    return &r->h;
}

bool rsm_rma_atomic_allowed(const mca_btl_base_endpoint_t *ep, uint64_t addr, uint64_t len)
{
    for (const rsm_reg_t *r = rma_regs.next; r != &rma_regs; r = r->next) {
        if ((r->ep == NULL || r->ep == ep) && rsm_range_inside(r->base, r->size, addr, len)) {
            return true;
        }
    }
    return false;
}

int rsm_deregister_mem(mca_btl_base_module_t *btl, struct mca_btl_base_registration_handle_t *handle)
{
    if (handle == NULL || handle->kind == RSM_REG_TOKEN) {
        return OPAL_SUCCESS;
    }
    if (handle->kind == RSM_REG_VERBS) {
        RSM_LOCK();
        int rc = rsm_verbs_deregister(handle);
        RSM_UNLOCK();
        return rc;
    }
    rsm_reg_t *r = (rsm_reg_t *) handle;
    RSM_LOCK();
    r->prev->next = r->next;
    r->next->prev = r->prev;
    if (r->offered) {
        r->ep->reads_offered--;
    }
    if (r->device != NULL) {
        (void) rsm_verbs_deregister(r->device);
    }
    RSM_UNLOCK();
    free(r);
    return OPAL_SUCCESS;
}
