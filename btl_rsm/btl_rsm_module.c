/*
 * The BTL module: peers (add_procs/del_procs), descriptors (alloc, free,
 * prepare_src) and teardown.  Single copy (get, registration) is btl_rsm_get.c.
 */
#define _GNU_SOURCE
#include "btl_rsm.h"
#include "btl_rsm_frag.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/show_help.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static mca_btl_base_module_error_cb_fn_t rsm_error_cb;

/* Can we read PEER's memory with process_vm_readv?  Yama's ptrace_scope, a
 * seccomp filter or another user namespace may say no. */
static bool cma_probe(const rsm_modex_t *peer, int *err)
{
    uint64_t word = 0;
    struct iovec local = {.iov_base = &word, .iov_len = sizeof(word)};
    struct iovec remote = {.iov_base = (void *) (uintptr_t) peer->probe_addr,
                           .iov_len = sizeof(word)};
    ssize_t n = process_vm_readv(peer->pid, &local, 1, &remote, 1, 0);
    *err = n < 0 ? errno : 0;
    return n == (ssize_t) sizeof(word) && word == RSM_CTL_MAGIC;
}

static void single_copy_off(const char *why)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (!c->single_copy_on) {
        return;
    }
    c->single_copy_on = false;
    c->eager_short = c->eager_full;     /* rendezvous would now take the two-copy pipeline */
    c->eager_loaded = c->eager_full;
    mca_btl_rsm.btl_eager_limit = c->eager_full;
    if (!c->verbs_single_copy_on) {     /* RDMA reads for other hosts are another matter */
        mca_btl_rsm.btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
    }
    RSM_VERBOSE(1, "single copy (CMA) disabled: %s; large messages take the pipelined "
                "two-copy path", why);
}

static void rma_off(const char *why)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    if (!c->rma_on) {
        return;
    }
    c->rma_on = false;
    mca_btl_rsm.btl_flags &= ~(uint32_t) (MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_ATOMIC_OPS
                                          | MCA_BTL_FLAGS_ATOMIC_FOPS);
    if (!c->single_copy_on && !c->verbs_single_copy_on) {
        mca_btl_rsm.btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
    }
    RSM_VERBOSE(1, "one-sided put, get and atomics (btl_rsm_rma) not offered: %s; windows "
                "need osc pt2pt", why);
}

static int rsm_add_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                         mca_btl_base_endpoint_t **peers, opal_bitmap_t *reachable)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    const opal_proc_t *me = opal_proc_local_get();
    int rc = OPAL_SUCCESS;

    RSM_LOCK();
    for (size_t i = 0; i < nprocs; i++) {
        opal_proc_t *proc = procs[i];
        rsm_modex_t *modex = NULL;
        size_t msize = 0;
        peers[i] = NULL;
        if (proc == me) {
            continue;
        }
        /* another host (or every peer, with btl_rsm_verbs 2): the RDMA back end */
        if (!OPAL_PROC_ON_LOCAL_NODE(proc->proc_flags) || c->verbs == 2
            || proc->proc_name.jobid != me->proc_name.jobid || c->ctl.base == NULL) {
            mca_btl_base_endpoint_t *vep = rsm_verbs_add_proc(proc);
            if (vep != NULL) {
                peers[i] = vep;
                opal_bitmap_set_bit(reachable, (int) i);
            }
            continue;
        }
        int mrc;
        OPAL_MODEX_RECV(mrc, &c->super.btl_version, &proc->proc_name, (void **) &modex, &msize);
        if (mrc != OPAL_SUCCESS || msize != sizeof(*modex) || modex->version != RSM_MODEX_VERSION
            || modex->local_rank >= c->nlocal || modex->local_rank == c->my_local_rank) {
            free(modex);
            continue;
        }
        if (modex->params != c->params) {
            opal_show_help("help-btl-rsm.txt", "params-mismatch", true, opal_process_info.nodename,
                           OPAL_NAME_PRINT(proc->proc_name));
            free(modex);
            continue;
        }
        mca_btl_base_endpoint_t *ep = c->by_local_rank[modex->local_rank];
        if (ep == NULL) {
            ep = calloc(1, sizeof(*ep));
            if (ep == NULL) {
                free(modex);
                rc = OPAL_ERR_OUT_OF_RESOURCE;
                break;
            }
            ep->proc = proc;
            ep->local_rank = modex->local_rank;
            ep->pid = modex->pid;
            ep->numa_node = modex->numa_node;
            ep->q_mask = c->layout.queue_len - 1;
            ep->q_shift = c->layout.queue_shift;
            ep->inline_max = c->local_inline_max;
            memcpy(ep->tag, modex->tag, sizeof(ep->tag));
            ep->tag[sizeof(ep->tag) - 1] = '\0';
            c->by_local_rank[modex->local_rank] = ep;
        }
        if (c->single_copy_on || c->rma_on) {
            int err;
            if (!cma_probe(modex, &err)) {
                char why[160];
                snprintf(why, sizeof(why), "process_vm_readv of pid %d refused (%s)",
                         (int) modex->pid, err ? strerror(err) : "short read");
                single_copy_off(why);
                rma_off(why);
            }
        }
        peers[i] = ep;
        opal_bitmap_set_bit(reachable, (int) i);
        RSM_VERBOSE(10, "peer %s on %s: shm", OPAL_NAME_PRINT(proc->proc_name),
                    opal_process_info.nodename);
        free(modex);
    }
    RSM_UNLOCK();
    return rc;
}

static int rsm_del_procs(mca_btl_base_module_t *btl, size_t nprocs, opal_proc_t **procs,
                         mca_btl_base_endpoint_t **peers)
{
    /* endpoints stay until finalize: a peer's area may still be polled */
    return OPAL_SUCCESS;
}

static int rsm_finalize(mca_btl_base_module_t *btl)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    uint64_t paired = 0;
    RSM_LOCK();
    rsm_rma_finalize();                 /* replies still held name endpoints freed below */
    for (uint32_t i = 0; c->by_local_rank != NULL && i < c->nlocal; i++) {
        if (c->by_local_rank[i] != NULL) {
            paired += c->by_local_rank[i]->sent_paired;
            rsm_pvar_retire(c->by_local_rank[i]);
            rsm_endpoint_release(c->by_local_rank[i]);
            free(c->by_local_rank[i]);
            c->by_local_rank[i] = NULL;
        }
    }
    rsm_verbs_finalize();
    rsm_frag_release_all();
    rsm_areas_release();
    rsm_ctl_release();
    free(c->by_local_rank);
    free(c->inbound);
    free(c->outbound);
    c->by_local_rank = NULL;
    c->inbound = c->outbound = NULL;
    c->n_inbound = c->n_outbound = 0;
    RSM_VERBOSE(10, "%" PRIu64 " single-copy gets, %" PRIu64 " bytes; %" PRIu64 " halves written "
                "for receivers, %" PRIu64 " bytes", c->gets, c->get_bytes, c->helped, c->help_bytes);
    if (c->verbs_open) {
        RSM_VERBOSE(10, "%" PRIu64 " single-copy RDMA reads, %" PRIu64 " bytes (%" PRIu64
                    " striped, %" PRIu64 " bytes over further rails); %" PRIu64
                    " user-buffer registrations, %" PRIu64 " bytes left registered at the end",
                    c->v_reads, c->v_read_bytes, c->v_striped_reads, c->v_rail_read_bytes,
                    c->v_user_registrations, c->v_user_registered);
        RSM_VERBOSE(10, "%" PRIu64 " RDMA writes in %" PRIu64 " posts: %" PRIu64 " pool messages "
                    "as one write (direct units), %" PRIu64 " ack writes, %" PRIu64 " units "
                    "carrying acks; the pool found full %" PRIu64 " times", c->v_writes,
                    c->v_posts, c->v_direct, c->v_ack_writes, c->v_acks_piggybacked, c->pool_full);
    }
    if (c->rma_on) {
        /* t-rsm-rma reads the first numbers by position: new ones go at the end */
        RSM_VERBOSE(10, "one-sided: %" PRIu64 " puts, %" PRIu64 " bytes; %" PRIu64 " atomics "
                    "asked of peers (%" PRIu64 " refused by them), %" PRIu64 " done for peers; %"
                    PRIu64 " puts striped over rails, %" PRIu64 " bytes over further rails; %"
                    PRIu64 " atomics held (asked for in a callback, sent from progress)",
                    c->rma_puts, c->rma_put_bytes, c->amo_sent, c->amo_refused, c->amo_served,
                    c->rma_striped_puts, c->rma_rail_put_bytes, c->amo_held);
    }
    RSM_VERBOSE(10, "%" PRIu64 " message starts staged while the pool was full, %" PRIu64
                " refused; %" PRIu64 " tiny messages sent in a postbox's second half", c->staged,
                c->refused, paired);
    if (c->dropped > 0) {
        RSM_VERBOSE(1, "%" PRIu64 " malformed postboxes were dropped", c->dropped);
    }
    RSM_UNLOCK();
    return OPAL_SUCCESS;
}

/* A descriptor of SIZE bytes for ob1 to fill (rsm_alloc, and rsm_sendi when it
 * cannot post at once); NULL when refused. */
mca_btl_rsm_frag_t *rsm_frag_for(mca_btl_base_endpoint_t *ep, size_t size, uint32_t flags,
                                 uint8_t order)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    mca_btl_rsm_frag_t *frag = NULL;
    if (OPAL_UNLIKELY(!ep->out_connected) && !rsm_endpoint_can_pack(ep)) {
        return NULL;
    }
    if (size <= ep->inline_max) {
        frag = rsm_frag_get(ep, RSM_FRAG_INLINE);
        if (frag != NULL) {
            frag->segments[0].seg_len = size;
        }
    } else if (size <= c->layout.max_msg) {
        frag = rsm_frag_get(ep, RSM_FRAG_POOL);
        /* ob1 writes header and data contiguously: one run, no striping;
         * the header size is not known here: no skew.  Pool full: staged. */
        if (frag != NULL && rsm_frag_alloc_runs(frag, size, false, 0) != 0
            && (!rsm_frag_must_stage(flags) || rsm_frag_stage(frag, size) != 0)) {
            rsm_frag_put(frag);
            frag = NULL;
        }
    }
    if (frag != NULL) {
        frag->base.des_flags = flags;
        frag->base.order = order;
    }
    return frag;
}

mca_btl_base_descriptor_t *rsm_alloc(mca_btl_base_module_t *btl, mca_btl_base_endpoint_t *ep,
                                     uint8_t order, size_t size, uint32_t flags)
{
    RSM_LOCK();
    mca_btl_rsm_frag_t *frag = rsm_frag_for(ep, size, flags, order);
    mca_btl_rsm_component.refused += frag == NULL && rsm_frag_must_stage(flags);
    RSM_UNLOCK();
    return frag != NULL ? &frag->base : NULL;
}

static int rsm_free(mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    RSM_LOCK();
    rsm_frag_put((mca_btl_rsm_frag_t *) des);
    RSM_UNLOCK();
    return OPAL_SUCCESS;
}

/* Pack straight into the pool blocks the receiver will read. */
static mca_btl_base_descriptor_t *rsm_prepare_src(mca_btl_base_module_t *btl,
                                                  mca_btl_base_endpoint_t *ep,
                                                  struct opal_convertor_t *convertor,
                                                  uint8_t order, size_t reserve, size_t *size,
                                                  uint32_t flags)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    mca_btl_rsm_frag_t *frag = NULL;
    struct iovec iov[RSM_MAX_STRIPES];
    uint32_t iov_count = 1;
    size_t max_data;

    RSM_LOCK();
    if (OPAL_UNLIKELY(!ep->out_connected) && !rsm_endpoint_can_pack(ep)) {
        goto out;
    }
    if (reserve + *size > c->layout.max_msg) {
        *size = c->layout.max_msg - reserve;
    }
    max_data = *size;
    if (reserve + *size <= ep->inline_max) {
        frag = rsm_frag_get(ep, RSM_FRAG_INLINE);
        if (frag == NULL) {
            goto out;
        }
        iov[0].iov_base = frag->data + reserve;
        iov[0].iov_len = *size;
    } else {
        frag = rsm_frag_get(ep, RSM_FRAG_POOL);
        if (frag == NULL) {
            goto out;
        }
        void *src = NULL;
        if (!opal_convertor_need_buffers(convertor)) {
            opal_convertor_get_current_pointer(convertor, &src);
        }
        /* only contiguous data is striped: the convertor packs whole elements
         * into each piece and may leave a piece's last bytes empty (ob1's
         * 14-byte match header before 4-byte ints), which the receiver would
         * read as data; one piece has no such gap */
        if (rsm_frag_alloc_runs(frag, reserve + *size, src != NULL, rsm_payload_skew(src, reserve))
            != 0) {
            if (!rsm_frag_must_stage(flags) || rsm_frag_stage(frag, reserve + *size) != 0) {
                rsm_frag_put(frag);
                frag = NULL;
                goto out;
            }
            RSM_VERBOSE(30, "pool full: a %zu-byte fragment to local rank %u waits in private memory",
                        reserve + *size, ep->local_rank);
        }
        if (frag->kind == RSM_FRAG_STAGED) {
            iov[0].iov_base = frag->staged + reserve;
            iov[0].iov_len = *size;
        } else {
            iov_count = frag->nruns;
            for (unsigned i = 0; i < frag->nruns; i++) {
                size_t skip = i == 0 ? reserve : 0;
                iov[i].iov_base = (char *) frag->segments[i].seg_addr.pval + skip;
                iov[i].iov_len = frag->segments[i].seg_len - skip;
            }
        }
    }
    if (*size > 0 && rsm_pack(convertor, iov, iov_count, &max_data,
                              frag->kind == RSM_FRAG_POOL && rsm_stream_to(ep, *size)) != 0) {
        rsm_frag_put(frag);
        frag = NULL;
        goto out;
    }
    if (*size == 0) {
        max_data = 0;
    }
    /* the convertor may have packed less than asked: trim the pieces */
    size_t left = reserve + max_data;
    for (unsigned i = 0; i < (frag->kind == RSM_FRAG_POOL ? frag->nruns : 1u); i++) {
        size_t cap = frag->kind == RSM_FRAG_POOL ? frag->segments[i].seg_len : left;
        frag->segments[i].seg_len = left < cap ? left : cap;
        left -= frag->segments[i].seg_len;
    }
    if (frag->kind == RSM_FRAG_POOL && frag->segments[0].seg_len == 0) {
        rsm_frag_put(frag);     /* nothing to point at */
        frag = NULL;
        goto out;
    }
    *size = max_data;
    frag->base.des_flags = flags;
    frag->base.order = order;
out:
    c->refused += frag == NULL && rsm_frag_must_stage(flags);
    RSM_UNLOCK();
    return frag != NULL ? &frag->base : NULL;
}

static int rsm_register_error(mca_btl_base_module_t *btl, mca_btl_base_module_error_cb_fn_t cb)
{
    rsm_error_cb = cb;
    return OPAL_SUCCESS;
}

/* Why the next rsm_fatal happens, in one line.  The help text that explains it
 * goes to mpirun, which Open MPI 4.1 loses now and then when ranks abort right
 * after sending it (ORTE_ERROR_LOG in orte/util/show_help.c); the line ob1's
 * error handler prints goes out on the rank's own stderr, so it carries the
 * reason too. */
static char rsm_fatal_why[256];

void rsm_fatal_reason(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rsm_fatal_why, sizeof(rsm_fatal_why), fmt, ap);
    va_end(ap);
}

void rsm_fatal(mca_btl_base_endpoint_t *ep, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (rsm_fatal_why[0] != '\0' && n >= 0 && (size_t) n < sizeof(line)) {
        snprintf(line + n, sizeof(line) - (size_t) n, ": %s", rsm_fatal_why);
    }
    rsm_fatal_why[0] = '\0';
    if (rsm_error_cb != NULL) {
        rsm_error_cb(&mca_btl_rsm, MCA_BTL_ERROR_FLAGS_FATAL, ep != NULL ? ep->proc : NULL, line);
    }
}

mca_btl_base_module_t mca_btl_rsm = {
    .btl_component = &mca_btl_rsm_component.super,
    .btl_add_procs = rsm_add_procs,
    .btl_del_procs = rsm_del_procs,
    .btl_finalize = rsm_finalize,
    .btl_alloc = rsm_alloc,
    .btl_free = rsm_free,
    .btl_prepare_src = rsm_prepare_src,
    .btl_send = rsm_send,
    .btl_sendi = rsm_sendi,
    .btl_get = rsm_get,
    .btl_put = rsm_put,
    .btl_atomic_op = rsm_atomic_op,
    .btl_atomic_fop = rsm_atomic_fop,
    .btl_atomic_cswap = rsm_atomic_cswap,
    .btl_register_mem = rsm_register_mem,
    .btl_deregister_mem = rsm_deregister_mem,
    .btl_register_error = rsm_register_error,
};
