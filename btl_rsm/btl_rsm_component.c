/*
 * btl rsm: the component.  Registers every parameter (here and only here),
 * creates this rank's control segment, publishes what peers need in the modex,
 * and drives the receive side from opal_progress.
 */
#define _GNU_SOURCE
#include "btl_rsm.h"
#include "btl_rsm_frag.h"
#include "rsm_cache.h"
#include "rsm_verbs.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/show_help.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "xbtl_compat.h"

#define RSM_INLINE_SHALLOW 1088     /* 1 KiB of payload and ob1's header */
#define RSM_INLINE_DEEP 2112        /* 2 KiB of payload and ob1's header */

/* A group of K postboxes may need a pad of K - 1 before it (a group never
 * wraps) and the postbox kept in reserve after it, while the receiver keeps
 * HELD postboxes unacknowledged for as long as it likes: 2K + HELD must fit
 * the queue, or a sender waits for acks that never come while its receiver
 * waits for its message.  A local receiver acks every postbox it consumes
 * (HELD 2: half the queue less one, as before); one on another host lets
 * fewer than an eighth of the queue ride on its own messages (note_acks in
 * btl_rsm_verbs.c).  A short queue lowers the limit. */
static unsigned int fit_inline(unsigned int want, uint32_t postboxes, uint32_t held,
                               const char *which)
{
    /* K = (postboxes - held) / 2 of at least 1: a queue of 4, the least there is,
     * still takes a one-postbox message (until 2026-12-07 K had to be 2, and a
     * local queue of 4 was refused unless btl_rsm_inline_max was 56) */
    const bool fits_one = postboxes >= 2 + held;
    unsigned int cap = fits_one ? RSM_PB_DATA + ((postboxes - held) / 2 - 1) * RSM_POSTBOX_SIZE : 0;
    if (cap > 0xffff) {
        cap = 0xffff;
    }
    if (fits_one && want > cap) {
        RSM_VERBOSE(1, "inline limit of %s peers lowered from %u to %u bytes to fit %u-postbox "
                    "queues", which, want, cap, postboxes);
        return cap;
    }
    return want;
}

/* Every rank of the job on this host (no peer for the verbs back end)?  False
 * when the job size is not known. */
static bool job_on_one_host(void)
{
    opal_process_name_t wildcard = {.jobid = OPAL_PROC_MY_NAME.jobid, .vpid = OPAL_VPID_WILDCARD};
    uint32_t size = 0, *sizep = &size;
    int rc;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, OPAL_PMIX_JOB_SIZE, &wildcard, &sizep, OPAL_UINT32);
    return rc == OPAL_SUCCESS && size == (uint32_t) opal_process_info.num_local_peers + 1;
}

/* Was btl_rsm_NAME left at its default (not set by the user or a file)? */
static bool param_default(const char *name)
{
    mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
    int idx = mca_base_var_find("opal", "btl", "rsm", name);
    return idx < 0 || mca_base_var_get_value(idx, NULL, &source, NULL) != OPAL_SUCCESS
           || source == MCA_BASE_VAR_SOURCE_DEFAULT;
}

static int rsm_component_register(void);

/* The eager limit of a job that is all on this host.  64 KiB of payload still
 * goes eager: both copies, each a few microseconds in cache on two cores, beat
 * ob1's rendezvous, whose extra round trip costs more than the second copy
 * saves (2026-11-27, ucx beside: 64 KiB near latency 1.68 us instead of 1.85,
 * ucx 1.68; far bw 2.6x ucx instead of 1.2x; bibw +12% near, +57% far).  128 KiB
 * eager lost bibw: the window's messages then outgrow the 4 MiB pool.  The
 * limit must fit the large blocks of each pool the job may use: a small
 * btl_rsm_pool_size, and the verbs pools where that back end is open (it serves
 * peers of other hosts a one-host job may still meet: MPI_Comm_spawn, or all
 * peers with btl_rsm_verbs 2).  So a smaller pool gets 32 KiB, or the default.
 * Across hosts it stays at 16 KiB, where the verbs back end's single copy was
 * measured to win.  btl_rsm_one_host_eager_limit sets the first choice. */
static size_t one_host_eager_limit(const mca_btl_rsm_component_t *c, size_t dflt, bool verbs_pools)
{
    size_t room = rsm_pool_large_bytes(c->pool_size, c->stripes, c->small_block, c->large_block);
    if (verbs_pools) {
        size_t vroom = rsm_pool_large_bytes(c->verbs_pool_size, 1, c->verbs_block,
                                            c->verbs_block);
        room = vroom < room ? vroom : room;
    }
    const size_t want = c->one_host_eager, small = RSM_EAGER_ONE_HOST_SMALL_POOL;
    if (want <= dflt) {
        return dflt;
    }
    if (want <= room) {
        return want;
    }
    return small < want && small > dflt && small <= room ? small : dflt;
}

/* The node's layout for the module's limits: each stripe's pool must hold the
 * largest message ob1 may hand over (eager, a pipeline fragment, a rendezvous
 * start). */
static int node_layout_init(mca_btl_rsm_component_t *c, const mca_btl_base_module_t *m,
                            const char **why)
{
    size_t max_msg = m->btl_eager_limit > m->btl_max_send_size ? m->btl_eager_limit
                                                               : m->btl_max_send_size;
    if (m->btl_rndv_eager_limit > max_msg) {
        max_msg = m->btl_rndv_eager_limit;
    }
    max_msg = rsm_round64(max_msg);
    if (max_msg >= (1ull << 31)) {     /* no pool holds it; and not cut to 32 bits below */
        *why = "each stripe's pool must hold the largest message, and stay below 2 GiB";
        return -1;
    }
    return rsm_layout_init(&c->layout, c->nlocal, c->local_postboxes, c->stripes, c->pool_size,
                           c->small_block, c->large_block, c->local_inline_max, (uint32_t) max_msg,
                           why);
}

static int rsm_component_open(void);
static int rsm_component_close(void);
/* One-sided (btl_rsm_rma.c): osc rdma wants put, get and atomics to every rank
 * of a window, on this host (CMA and inline messages) and on others (RDMA write
 * and read, the same messages over the verbs back end).  The get stays ob1's too:
 * whether ob1 reads a message is still decided by registration (rsm_register_mem),
 * and the put pipeline stays off (btl_min_rdma_pipeline_size). */
static void rma_offer(mca_btl_rsm_component_t *c, mca_btl_base_module_t *m)
{
    c->rma_on = c->rma;
    if (!c->rma_on) {
        return;
    }
    m->btl_flags |= MCA_BTL_FLAGS_PUT | MCA_BTL_FLAGS_GET | MCA_BTL_FLAGS_ATOMIC_OPS
                    | MCA_BTL_FLAGS_ATOMIC_FOPS;
    /* MIN and MAX: on float and double; on integers refused per operation (amo_start:
     * no signedness in the interface), which osc rdma 4.1.4 takes as "emulate" */
    m->btl_atomic_flags = MCA_BTL_ATOMIC_SUPPORTS_ADD | MCA_BTL_ATOMIC_SUPPORTS_AND
        | MCA_BTL_ATOMIC_SUPPORTS_OR | MCA_BTL_ATOMIC_SUPPORTS_XOR | MCA_BTL_ATOMIC_SUPPORTS_LAND
        | MCA_BTL_ATOMIC_SUPPORTS_LOR | MCA_BTL_ATOMIC_SUPPORTS_LXOR
        | MCA_BTL_ATOMIC_SUPPORTS_SWAP | MCA_BTL_ATOMIC_SUPPORTS_MIN
        | MCA_BTL_ATOMIC_SUPPORTS_MAX | MCA_BTL_ATOMIC_SUPPORTS_CSWAP
        | MCA_BTL_ATOMIC_SUPPORTS_32BIT | MCA_BTL_ATOMIC_SUPPORTS_GLOB
        | (c->float_atomics ? MCA_BTL_ATOMIC_SUPPORTS_FLOAT : 0);
    m->btl_put_limit = SIZE_MAX;
    m->btl_put_alignment = 0;
    /* no local registration: without these osc rdma copies every put and get below
     * its 32 KiB buffer size through a buffer of its own.  CMA needs none; toward
     * another host the back end registers the buffer itself (through the cache) or
     * sends a short put inline (btl_rsm_verbs.c, onesided_local) */
    m->btl_put_local_registration_threshold = SIZE_MAX;
    m->btl_get_local_registration_threshold = SIZE_MAX;
}

static mca_btl_base_module_t **rsm_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads);
static int rsm_component_progress(void);

__attribute__((visibility("default")))
mca_btl_rsm_component_t mca_btl_rsm_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("rsm"),
            .mca_open_component = rsm_component_open,
            .mca_close_component = rsm_component_close,
            .mca_register_component_params = rsm_component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = rsm_component_init,
        .btl_progress = rsm_component_progress,
    },
};

static bool lock_constructed;

static void reg(const char *name, const char *help, mca_base_var_type_t type, void *storage,
                int level)
{
    (void) mca_base_component_var_register(&mca_btl_rsm_component.super.btl_version, name, help,
                                           type, NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY,
                                           storage);
}

static int rsm_component_register(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;

    c->postboxes = 0;
    reg("postboxes", "Postboxes (64 bytes each) in each queue, one queue per (sender, receiver); "
        "a power of two.  Bounds how many messages a sender may have unacknowledged per "
        "receiver.  0 (default): on a node, 4096 with up to 4 local ranks (a ring long enough "
        "that a streaming sender stays ahead of its receiver); with more, as many as make a "
        "sender's queues 256 KiB together (512 with 5-8 local ranks, halved each time they "
        "double, never below 128); "
        "to a rank on another host (verbs), 128",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->postboxes, OPAL_INFO_LVL_5);
    /* 8 MiB: a window of 64 eager messages of 64 KiB (17 large blocks each)
     * outgrows 4 MiB, and the rest were staged (a third copy, one at a time):
     * bibw at 64 KiB between cores that share no cache 4,100-5,500 MB/s
     * against 9,800-11,300 with the window in the pool (2026-12-07, AMD EPYC).
     * Memory is given to the pool where messages land, and next fit keeps to
     * the lap (at most 4 MiB), so the second half has memory only once a
     * window outgrew the first. */
    c->pool_size = 8 * 1024 * 1024;
    reg("pool_size", "Bytes of block pool in each sender's area (all stripes together); one area "
        "per sender per NUMA node, shared by every receiver there.  Memory is given to it "
        "where messages land: next fit keeps to the first btl_rsm_pool_lap bytes and goes past "
        "them only when a window of messages outgrows them (64 in flight of 64 KiB each need "
        "4.25 MiB).  Left at its default, it is halved (down to 256 KiB a stripe) until the "
        "areas of all local ranks take at most half of /dev/shm (a container's is 64 MiB "
        "unless raised)",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->pool_size, OPAL_INFO_LVL_5);
    c->small_block = 2048;
    reg("small_block", "Small block size (bytes, power of two): the unit for messages that fit "
        "one small block", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->small_block, OPAL_INFO_LVL_6);
    c->large_block = 4096;
    reg("large_block", "Large block size (bytes, power of two): longer messages take a run of "
        "large blocks", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->large_block, OPAL_INFO_LVL_6);
    c->inline_max = 0;
    reg("inline_max", "Short-message limit: messages up to this many bytes (ob1 header included) "
        "travel inside a group of postboxes (56 bytes in the first, 64 in each next), without a "
        "barrier, and are handed up in place.  0 (default): 2112 (2 KiB of payload) on a node "
        "whose queues have 512 postboxes or more, else 1088; 1088 to ranks on other hosts.  "
        "Never more than half a queue",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->inline_max, OPAL_INFO_LVL_5);
    c->pair_tiny = true;
    reg("pair_tiny", "Messages of up to 24 bytes (ob1 header included: 1-10 bytes of MPI payload) "
        "to a rank on this node share a postbox two by two: the second goes into the second half "
        "of the first's cache line when nothing else was sent in between.  Halves the cache lines "
        "a stream of such messages moves, since a stream's receiver mostly finds both halves "
        "written; see btl_rsm_pair_min_ns for whom (receivers always accept both forms)",
        MCA_BASE_VAR_TYPE_BOOL, &c->pair_tiny, OPAL_INFO_LVL_5);
    c->pair_min_ns = 0;
    reg("pair_min_ns", "With btl_rsm_pair_tiny: pair tiny messages only to receivers whose cache "
        "lines reach us in at least this many ns (the distance btl_rsm_nt_far_ns measures; a "
        "receiver not yet measured gets none).  0 (default): to every receiver on this node.  "
        "For a host whose nearest cores pass lines so fast that a receiver reads every half as "
        "it lands (it then checks two flags for nothing); 110, as btl_rsm_nt_far_ns: only to "
        "receivers sharing no cache with us (the rule of earlier versions)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->pair_min_ns, OPAL_INFO_LVL_6);
    c->pipeline_size = 32 * 1024;
    reg("pipeline_size", "Fragment size of the pipelined two-copy path: each fragment is one run "
        "of pool blocks and one pointer postbox, and the receiver drains fragment k while the "
        "sender fills k+1.  Default of btl_rsm_max_send_size",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->pipeline_size, OPAL_INFO_LVL_5);
    c->one_host_eager = RSM_EAGER_ONE_HOST;
    reg("one_host_eager_limit", "Eager limit of a job whose ranks are all on this host, used when "
        "btl_rsm_eager_limit is left at its default (which then serves only jobs that span "
        "hosts).  Two copies through the pool beat ob1's rendezvous up to ~64 KiB on one host "
        "whose last-level cache is large (16448 on a smaller one: btl_rsm_two_copy_llc_min).  "
        "Lowered to 32832 (32 KiB + ob1's header) where a pool cannot hold it: a small "
        "btl_rsm_pool_size, or, when an RDMA port is open, the verbs pools "
        "(btl_rsm_verbs_pool_size).  At or below btl_rsm_eager_limit: no raise.  Lowered to "
        "btl_rsm_eager_limit while a receiver is at the middle distance "
        "(btl_rsm_short_eager_ns; on a host with a small cache, btl_rsm_two_copy_llc_min, while "
        "a receiver is far, btl_rsm_nt_far_ns), unless set.  The btl_base_verbose 10 start-up line gives "
        "the limit in use and why",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->one_host_eager, OPAL_INFO_LVL_5);
    c->nt_min = 4096;
    reg("nt_min", "Contiguous data of at least this many bytes is copied into the pool with "
        "non-temporal (streaming) stores when the receiver is far (btl_rsm_nt_far_ns), so it "
        "reads them from memory rather than line by line from the sender's cache: 1.3-3x "
        "faster when the two cores share no cache (other CCD or socket).  SIZE_MAX "
        "(18446744073709551615): never",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->nt_min, OPAL_INFO_LVL_5);
    c->nt_far_ns = RSM_NT_FAR_NS;
    reg("nt_far_ns", "Stream (btl_rsm_nt_min) only to receivers whose core is far from ours: "
        "the median time a cache line the receiver wrote (its acks) takes to reach us, over "
        "15 samples, is at least this many ns (a receiver measured near: this and an eighth "
        "more, so medians spread about the threshold do not flip the stores).  Near "
        "receivers get ordinary stores, which are faster where the two cores share a cache.  "
        "Measured continuously; a receiver counts as far until measured.  Measured: 30-50 ns for cores sharing a last-level "
        "cache; 70-116 ns, most of them 85-104, for the cores of one large mesh die (ordinary "
        "stores win there); 115-154 ns across dies.  0: stream to every receiver",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->nt_far_ns, OPAL_INFO_LVL_5);
    c->two_copy_ns = rsm_two_copy_ns_default();
    reg("two_copy_ns", "With btl_rsm_single_copy on: rendezvous messages to receivers whose "
        "cache lines reach us in less than this many ns (the same measurement as "
        "btl_rsm_nt_far_ns) take the pipelined two-copy path, which is the faster one where "
        "the cores pass lines quickly (the pool stays in the cache they share); the others, "
        "and receivers not yet measured, are read by single copy.  Default 65 ns: an Intel "
        "Xeon's cores of one mesh die pass lines in 70-116 ns, and single copy won there from "
        "128 KiB, while cores sharing a cache elsewhere read 30-60 ns.  On AMD CPUs 110 ns, "
        "btl_rsm_nt_far_ns's default: there cores share a cache only within a core complex "
        "(40-90 ns on an EPYC guest, where two copies won at every size) and none across "
        "complexes (200+ ns), so nothing lies between.  0: single copy for every receiver",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->two_copy_ns, OPAL_INFO_LVL_5);
    c->two_copy_llc_min = RSM_TWO_COPY_LLC_MIN;
    reg("two_copy_llc_min", "Two copies through the pool for messages above 16 KiB (eager up "
        "to btl_rsm_one_host_eager_limit, the pipelined path under btl_rsm_two_copy_ns) only on "
        "a host whose last-level cache holds at least this many bytes (CPU 0's, from sysfs: "
        "every rank of the host reads the same).  On a smaller one, with those two parameters "
        "at their defaults, a job all on the host sends eager up to 16448 bytes (16 KiB + "
        "ob1's header) to near receivers and 16384 to far ones (btl_rsm_nt_far_ns: there a "
        "16 KiB message's two copies took 4.6 us, its single copy 3.4), and reads every longer "
        "message by single copy.  Why: two copies move "
        "each byte through memory twice; on hosts with a 32 MiB or larger cache they beat "
        "single copy up to 64 KiB, on an AMD EPYC guest with an 8 MiB L3 they took twice its "
        "time from 32 KiB (btl_rsm/README.md, \"Hosts whose memory is the bottleneck\").  "
        "0: two copies whatever the cache",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->two_copy_llc_min, OPAL_INFO_LVL_5);
    c->short_eager_ns = 130;
    reg("short_eager_ns", "In a job all on this host, with btl_rsm_eager_limit and "
        "btl_rsm_one_host_eager_limit at their defaults: while any receiver is read by single "
        "copy (not nearer than btl_rsm_two_copy_ns) and its cache lines reach us in less than "
        "this many ns (the same measurement as btl_rsm_nt_far_ns), the eager limit is "
        "btl_rsm_eager_limit's default (16 KiB), not the one-host limit: there two copies of "
        "16-64 KiB took 2-3x as long as a rendezvous read by single copy (lines in 100-120 ns), "
        "where closer cores (two copies) and cores sharing no cache (streaming stores) measured "
        "eager up to 64 KiB better.  Raised again when no receiver is in that band.  The "
        "MPI_T variable btl_rsm_eager_limit_lowered counts the changes.  0: never lowered",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->short_eager_ns, OPAL_INFO_LVL_5);
    c->loaded_eager = 4096 + 64;
    reg("loaded_eager_limit", "With the shorter eager limit in effect (a receiver in the middle "
        "band, btl_rsm_short_eager_ns): while this rank also takes in bulk data (pool "
        "messages or single-copy reads: ping-pong, traffic both ways), the eager limit is this "
        "(bytes, ob1's header included), and longer messages go by rendezvous, read by single "
        "copy.  Why: there each core then copies a message once instead of twice, and two "
        "copies of 8 KiB took longer than one read (ping-pong 8 KiB 1.66 us eager, 1.16 by "
        "rendezvous), while a one-way stream's sender, which takes in only small replies, "
        "keeps the longer limit that streams best (bw 8 KiB 15.3 GB/s eager, 10.7 by "
        "rendezvous).  Judged from the distance samples, two in a row.  The MPI_T variable "
        "btl_rsm_eager_limit_load_lowered counts the changes.  0: never",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->loaded_eager, OPAL_INFO_LVL_5);
    c->stream_sends = 3;
    reg("stream_sends", "With btl_rsm_loaded_eager_limit in effect: once this rank has sent "
        "this many messages to one peer with none from that peer in between, it streams to "
        "it, until a run of fewer sends between messages from it; while it streams to any "
        "peer the eager limit is the short one (btl_rsm_short_eager_ns), not the one under "
        "load.  Why: a rank that exchanges windows of messages both ways takes in bulk data "
        "as a ping-pong does, but its windows go faster eager (bibw 8 KiB 14.7 GB/s against "
        "13.3 by rendezvous), while a ping-pong's turn is one message, or two by rendezvous "
        "(ob1's FIN and the reply), and its reply is faster read by single copy.  "
        "0: never a stream (the limit under load holds for every send, and "
        "btl_rsm_stream_eager_limit never applies)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->stream_sends, OPAL_INFO_LVL_6);
    c->stream_eager = 16 * 1024 + 64;
    reg("stream_eager_limit", "With the shorter eager limit in effect (a receiver in the middle "
        "band, btl_rsm_short_eager_ns): while this rank streams to a peer "
        "(btl_rsm_stream_sends) and takes in no bulk data (a one-way stream's sender), the "
        "eager limit is this (bytes, ob1's header included; kept between the shorter limit "
        "and the one-host limit).  Why: such a stream of 16 KiB messages moved 16.5 GB/s "
        "eager and 11.2 by rendezvous, while 32 and 64 KiB streamed as well or better by "
        "rendezvous and ping-pongs of 16 KiB go faster by rendezvous.  At or below "
        "btl_rsm_eager_limit: no raise",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->stream_eager, OPAL_INFO_LVL_6);
    c->distance_load_holds = true;
    reg("distance_load_holds", "Receiver distances (btl_rsm_nt_far_ns, btl_rsm_two_copy_ns, "
        "btl_rsm_short_eager_ns) are measured from the time our loads of a receiver's acks "
        "take.  When on, a set of those samples taken mostly while this rank took in bulk "
        "data (pool messages or single-copy reads: traffic both ways) decides nothing once a "
        "set taken without such load has decided: under load both ways the loads queue "
        "behind both cores' copies and read up to 2.5x the placement's time, and the choices "
        "followed the load (bi-directional 16-64 KiB lost up to 40%).  The MPI_T variable "
        "btl_rsm_distance_sets_loaded counts the sets held.  Off: every set decides",
        MCA_BASE_VAR_TYPE_BOOL, &c->distance_load_holds, OPAL_INFO_LVL_6);
    c->stripes = 1;
    reg("stripes", "Segments each area's pool is striped over (1..8); long fragments of "
        "contiguous data are cut into one piece per stripe", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->stripes,
        OPAL_INFO_LVL_5);
    c->single_copy = true;
    reg("single_copy", "Let ob1 read large contiguous messages straight from the sender's memory "
        "(RDMA get): on this host through CMA / process_vm_readv (probed at start; turned off "
        "with one verbose line when the kernel refuses), from other hosts by one RDMA read "
        "(btl_rsm_verbs_single_copy_min).  Off: every message takes the pipelined two-copy path",
        MCA_BASE_VAR_TYPE_BOOL, &c->single_copy,
        OPAL_INFO_LVL_4);
    /* Every rendezvous message goes by get by default, and from single_copy_split
     * on the get is shared with the sender (btl_rsm_get.c), except to a receiver
     * closer than two_copy_ns (rsm_distance.h), which gets the pipelined two-copy
     * path.  Why (README, "Single copy" and "Three distances"): the two-copy path
     * with ordinary stores is the faster one where the cores pass lines in 30-50 ns
     * (the pool stays in the cache they share), the split get where they do not. */
    c->single_copy_min = 0;
    reg("single_copy_min", "With btl_rsm_single_copy on: contiguous messages past the eager limit "
        "of at least this many bytes are read by the receiver straight from the sender's memory "
        "(one copy); shorter ones take the pipelined two-copy path.  0: every such message.  "
        "SIZE_MAX (18446744073709551615): none (single copy stays unused and unprobed).  The "
        "two-copy path is faster only where sender and receiver share a last-level cache",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->single_copy_min, OPAL_INFO_LVL_4);
    c->pool_next_fit = true;
    reg("pool_next_fit", "Allocate pool blocks on this node by next fit: each message's blocks "
        "follow the last message's, round the pool, so a block is reused a lap after the "
        "receiver read it, when its cache lines are no longer in the receiver's core.  Off: "
        "first fit (the lowest free blocks, reused at once), which keeps the pool's working set "
        "smaller but makes the sender's stores wait for lines the receiver has just read.  A "
        "message that answers one from the same peer (a ping-pong) takes first fit either way.  "
        "Pools to other hosts (verbs) always use first fit",
        MCA_BASE_VAR_TYPE_BOOL, &c->pool_next_fit, OPAL_INFO_LVL_5);
    c->pool_lap = 0;
    reg("pool_lap", "Next fit goes round this many bytes of each pool (each block size its "
        "share) and takes blocks past them only when those are all in use.  The lap is the "
        "pool's working set: two ranks sending both ways go round two pools, and where the two "
        "laps do not fit the last-level cache every block comes back from memory.  0: an eighth "
        "of the host's last-level cache, at least 1.5 MiB and at most 4 MiB (4 MiB from a 32 MiB "
        "cache on, and when the cache is unknown; the rest of the pool takes the windows that "
        "outgrow the lap).  A value of at least btl_rsm_pool_size: the whole pool",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->pool_lap, OPAL_INFO_LVL_5);
    c->pool_answer_hot = true;
    reg("pool_answer_hot", "A message that answers one from the same peer (a ping-pong's turn) "
        "takes the lowest free blocks (first fit) even in a next-fit pool: blocks the sender "
        "wrote a round trip ago, still in its cache.  Off: answers take the next blocks of the "
        "lap like every other message.  On by default; off on hosts whose last-level cache is "
        "under btl_rsm_two_copy_llc_min, where the receiver's fresh copies of those lines made "
        "4-8 KiB round trips 15% longer than next fit's",
        MCA_BASE_VAR_TYPE_BOOL, &c->pool_answer_hot, OPAL_INFO_LVL_5);
    c->single_copy_near = false;
    reg("single_copy_near", "Use single copy also for receivers measured closer than "
        "btl_rsm_two_copy_ns.  Off: those get the pipelined two-copy path with ordinary "
        "stores, which is faster there (the pool stays in the shared cache); single copy is "
        "used for the others and for receivers not yet measured",
        MCA_BASE_VAR_TYPE_BOOL, &c->single_copy_near, OPAL_INFO_LVL_5);
    c->single_copy_both_ways = true;
    reg("single_copy_both_ways", "Use single copy also for receivers measured closer than "
        "btl_rsm_two_copy_ns while bulk data runs both ways between the two ranks (a "
        "bi-directional exchange): there both cores are busy copying anyway, and one copy per "
        "byte beats the pipeline's two.  Seen when a large message from the receiver waits for "
        "us as we start one to it, or when we read from it while it may read from us; lasts "
        "for the next 128 such messages to it.  Off: two copies to near receivers always "
        "(btl_rsm_single_copy_near off)",
        MCA_BASE_VAR_TYPE_BOOL, &c->single_copy_both_ways, OPAL_INFO_LVL_5);
    /* 32 KiB since the eager limit falls to 16 KiB for receivers at the middle
     * distance (short_eager_ns): 32-64 KiB then go by get, and unsplit they kept
     * the sender idle (2026-12-02: bw 32 KiB 7,400-8,400 MB/s unsplit, 10,600-11,100
     * split; latency 2.44-2.76 us, 2.34-2.51).  Not 16 KiB: a 16 KiB message
     * split took 2.02-2.07 us a turn instead of 1.61-1.80. */
    c->single_copy_split = 32 * 1024;
    reg("single_copy_split", "Single-copy reads of at least this many bytes are split in two: the "
        "receiver reads the first half while the sender writes the second (process_vm_writev), so "
        "both cores copy.  Each byte is still copied once.  If the sender is busy the receiver "
        "takes the second half back.  0: never split",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->single_copy_split, OPAL_INFO_LVL_5);
    c->rma = true;
    reg("rma", "Offer Open MPI's one-sided component (osc rdma) put, get and atomics, so that "
        "MPI_Win_create, MPI_Win_create_dynamic and MPI_Win_allocate windows work over rsm "
        "(Debian's configuration turns osc pt2pt, the other way, off).  On this host put and "
        "get by CMA (process_vm_writev / process_vm_readv, probed at start; without it, off "
        "with one verbose line); to other hosts (btl_rsm_verbs) by RDMA write and read, "
        "windows then registered with the device too.  Atomics are applied by the target "
        "process with its CPU's atomics when it next makes progress.  Open MPI 4.1.1-4.1.4's "
        "osc rdma hangs on dynamic windows spanning hosts (its pull request 10473): rsm ends "
        "such a job with a message instead (run it with --mca osc pt2pt)",
        MCA_BASE_VAR_TYPE_BOOL, &c->rma, OPAL_INFO_LVL_5);
    /* Open MPI up to 4.1.4: osc rdma runs a get-accumulate of up to osc_rdma_network_max_amo
     * elements as the BTL's fetching atomics, and with a derived result datatype unpacks the
     * results from a pointer it has moved past them (fixed in 4.1.5, its pull request 10654).
     * vader offers integer atomics only, so there MPI_FLOAT and MPI_DOUBLE go by get-op-put
     * and come out right; rsm offering float atomics made them wrong over rsm alone. */
    c->float_atomics = OMPI_MAJOR_VERSION > 4
        || (OMPI_MAJOR_VERSION == 4 && (OMPI_MINOR_VERSION > 1 || OMPI_RELEASE_VERSION >= 5));
    reg("float_atomics", "Offer osc rdma atomics on float and double too (with btl_rsm_rma): "
        "MPI_Accumulate, MPI_Get_accumulate and MPI_Fetch_and_op of one MPI_FLOAT or "
        "MPI_DOUBLE become one message to the target instead of osc rdma's get-op-put under "
        "its accumulate lock.  Off by default with Open MPI 4.1.0-4.1.4, whose osc rdma then "
        "returns wrong results to an MPI_Get_accumulate with a derived result datatype (its "
        "pull request 10654, fixed in 4.1.5); turn it on where no job does that",
        MCA_BASE_VAR_TYPE_BOOL, &c->float_atomics, OPAL_INFO_LVL_5);
    c->numa_place = true;
    reg("numa_place", "Place each sender's area on the NUMA node of the receivers it serves",
        MCA_BASE_VAR_TYPE_BOOL, &c->numa_place, OPAL_INFO_LVL_6);
    c->site_default = false;
    reg("site_default", "Run also in jobs that do not name rsm in their btl list (no list, or "
        "an exclusion list such as Debian's default \"^uct,openib,ofi\").  Off: an installed "
        "rsm is used only where a job asks for it (--mca btl self,rsm,...); one line "
        "\"btl_rsm_site_default = 1\" in openmpi-mca-params.conf makes it the site's default",
        MCA_BASE_VAR_TYPE_BOOL, &c->site_default, OPAL_INFO_LVL_3);
    c->verbs = 1;
    reg("verbs", "The RDMA-write back end (libibverbs RC queue pairs: InfiniBand, RoCE, "
        "soft-RoCE): 0 off (only peers on this host are served); 1 peers on other hosts "
        "(default; quietly none when no RDMA port is active); 2 every peer, also those on "
        "this host (for testing the back end on one host)",
        MCA_BASE_VAR_TYPE_INT, &c->verbs, OPAL_INFO_LVL_4);
    c->verbs_devices = NULL;
    reg("verbs_devices", "RDMA ports to use, \"device[:port]\" separated by commas (e.g. "
        "\"mlx5_0:1\" or \"rxe0,rxe1\"): the first active one carries every connection; with "
        "btl_rsm_verbs_rails above 1 the next active ones listed become further rails, over which "
        "large messages are striped (rail r of a process connects to rail r of its peer: list the "
        "ports in the same order on every host, rail r on the network of every host's rail r).  "
        "Empty: the first active port of any device, one rail", MCA_BASE_VAR_TYPE_STRING,
        &c->verbs_devices, OPAL_INFO_LVL_4);
    c->verbs_rails = RSM_RAILS_MAX;
    reg("verbs_rails", "Most ports (rails, 1..4) one connection to another host uses, taken in "
        "order from btl_rsm_verbs_devices: single-copy reads and one-sided puts and gets of at "
        "least btl_rsm_verbs_stripe_min bytes are cut across them, one piece per rail (seed 000, "
        "3.3).  A connection uses as many as both ends have.  1: no striping",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_rails, OPAL_INFO_LVL_4);
    c->verbs_stripe_min = 64 * 1024;
    reg("verbs_stripe_min", "Single-copy reads from another host, and one-sided puts and gets to "
        "it, of at least this many bytes are cut across the connection's rails "
        "(btl_rsm_verbs_rails); shorter ones take the first rail",
        MCA_BASE_VAR_TYPE_SIZE_T, &c->verbs_stripe_min, OPAL_INFO_LVL_5);
    c->verbs_pool_size = 55 * 1024;  /* with a connection's queue, under 64 KiB a remote sender */
    reg("verbs_pool_size", "Bytes of block pool per remote sender and destination host: the "
        "receivers a sender reaches on one host share one pool there (a shared-memory segment, "
        "registered by each of them), and each connection adds its postbox queue (64 bytes x "
        "btl_rsm_postboxes, 8 KiB by default), so a remote sender that talks to one rank of a "
        "host costs it under 64 KiB by default.  Must hold the largest fragment "
        "(btl_rsm_max_send_size)", MCA_BASE_VAR_TYPE_SIZE_T, &c->verbs_pool_size,
        OPAL_INFO_LVL_5);
    /* 1 KiB, not the shm pools' 4 KiB: a 4 KiB message with ob1's header, its
     * skew and a direct unit's postbox took two 4 KiB blocks, half of them empty,
     * and the pools between hosts are small (soft-RoCE guest, bibw 4-8 KiB:
     * btl_rsm/README.md, "Blocks of 1 KiB between hosts") */
    c->verbs_block = 1024;
    reg("verbs_block", "Block size of the verbs pools (bytes, power of two, 64..65536): a "
        "message between hosts takes whole blocks, so smaller blocks fit more messages into "
        "btl_rsm_verbs_pool_size", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_block,
        OPAL_INFO_LVL_6);
    c->verbs_pool_chunks = 3;   /* 1,000 senders streaming to 8 ranks of a host: 225 MiB there */
    reg("verbs_pool_chunks", "Chunks of btl_rsm_verbs_pool_size a verbs pool (per remote sender "
        "and destination host) may grow to, 1..4: every pool starts as one chunk, and only a "
        "sender that keeps finding its pool full (it streams) grows it, one chunk at a time; "
        "1: never", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_pool_chunks, OPAL_INFO_LVL_5);
    c->verbs_grow_after = 16;
    reg("verbs_grow_after", "Fragments that must find a verbs pool full (after its acks are "
        "collected) before it grows by a chunk", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->verbs_grow_after, OPAL_INFO_LVL_6);
    c->verbs_sq_depth = 512;
    reg("verbs_sq_depth", "Send work requests each RDMA queue pair may have outstanding",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_sq_depth, OPAL_INFO_LVL_6);
    c->verbs_srq_depth = 1024;
    reg("verbs_srq_depth", "Receive work requests in the shared receive queue (one per message "
        "published by any peer; refilled every progress call)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_srq_depth, OPAL_INFO_LVL_6);
    c->verbs_signal = 32;
    reg("verbs_signal_interval", "Request a send completion for every this many RDMA writes "
        "(the others are vouched for by it); at most half of btl_rsm_verbs_sq_depth",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_signal, OPAL_INFO_LVL_6);
    c->verbs_connect_timeout_ms = 10000;
    reg("verbs_connect_timeout_ms", "Give up connecting to a peer that has not answered the "
        "connection request (resent every btl_rsm_verbs_resend_ms) within this many ms of "
        "this process's time in MPI (time away from MPI does not count).  A peer that is "
        "away from MPI answers from its listener thread (btl_rsm_verbs_listener)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_connect_timeout_ms, OPAL_INFO_LVL_5);
    c->verbs_resend_ms = 200;
    reg("verbs_resend_ms", "Resend a connection request or a pool's growth request (datagrams, "
        "which the fabric may drop) that has had no answer for this many ms, 1..60000; each "
        "answer to a request sent twice arrives twice, and the late one is ignored",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_resend_ms, OPAL_INFO_LVL_6);
    /* 0: in the soft-RoCE guest a delay of 1 ms cut a stream's packets by 2% and its
     * time by nothing that could be told from the guest's noise (btl_rsm/README.md) */
    c->verbs_ack_delay_us = 0;
    reg("verbs_ack_delay_us", "A receiver on another host acks its sender's pool messages when "
        "it finds nothing more to receive (each ack is an RDMA write and its acknowledgement, "
        "two packets).  Above 0: every second pool message so, and a single one only once it "
        "has been owed this long (microseconds; a streaming sender sends the next one first), "
        "so a sender whose pool is full may wait up to this long for the blocks of receivers "
        "that took one message each and went quiet.  0: every pool message",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_ack_delay_us, OPAL_INFO_LVL_6);
    c->verbs_direct = 1;
    reg("verbs_direct", "Send a pool message of one run to a peer on another host as one RDMA "
        "write: its pointer postbox travels in the 64 bytes ahead of the payload and the write's "
        "immediate says where (a direct unit).  0: a write of the blocks and a write of the "
        "postbox, two work requests a message.  Off by itself with queues of more than 16384 "
        "postboxes", MCA_BASE_VAR_TYPE_BOOL, &c->verbs_direct, OPAL_INFO_LVL_6);
    c->verbs_listener = 1;
    reg("verbs_listener", "Answer peers' connection requests from a thread while this process "
        "is away from MPI (computing, reading input), in jobs that span hosts.  The thread "
        "sleeps in the kernel until a request arrives and leaves it to progress when the "
        "process is in MPI.  0: requests are answered only while the process calls MPI, so a "
        "peer that first sends to a process away for longer than "
        "btl_rsm_verbs_connect_timeout_ms ends the job.  2: the thread answers every request "
        "it sees, in MPI or not (it and progress then share the handshake queue: a test of "
        "that path)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_listener, OPAL_INFO_LVL_5);
    /* 0: every rendezvous message.  In the soft-RoCE guest single copy beat the
     * two-copy pipeline from the eager limit on: bw 1.4-1.8x at 16-64 KiB, 1.1-1.4x
     * at 128 KiB-4 MiB, bibw 1.7-2.7x (btl_rsm/README.md, "Single copy between hosts") */
    c->verbs_single_copy_min = 0;
    reg("verbs_single_copy_min", "With btl_rsm_single_copy on: contiguous messages past the eager "
        "limit to a peer on another host, of at least this many bytes, are read by the receiver "
        "straight from the sender's buffer with one RDMA read (both buffers registered through "
        "Open MPI's registration cache, rcache grdma); shorter ones take the pipelined two-copy "
        "path through the pool.  0: every such message.  SIZE_MAX (18446744073709551615): never",
        MCA_BASE_VAR_TYPE_SIZE_T,
        &c->verbs_single_copy_min, OPAL_INFO_LVL_4);
    c->verbs_timeout = 18;
    reg("verbs_timeout", "RC retransmission timeout, InfiniBand encoding: 4.096 us x 2^value "
        "(0-31; default 18, 1.07 s, as UCX).  Too short and a loaded host (or soft-RoCE under "
        "emulation: 14, 67 ms, made a stream retransmit its whole window ~100 times a second) "
        "resends what was only late; a dead link is reported after about timeout x (retry "
        "count + 1)", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_timeout, OPAL_INFO_LVL_6);
    c->verbs_retry_count = 6;
    reg("verbs_retry_count", "RC retransmissions (0-7) before a write fails and the job is "
        "told the peer is lost.  Not 7: soft-RoCE (rxe) takes 7 as \"retry for ever\" (as the "
        "specification does only for receiver-not-ready retries), and a job behind a dead "
        "link then hangs instead of ending with a message", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->verbs_retry_count,
        OPAL_INFO_LVL_6);
    c->verbs_gid_index = -1;
    reg("verbs_gid_index", "GID table index for RoCE addressing; -1: the first RoCE v2 GID "
        "holding an IPv4 address", MCA_BASE_VAR_TYPE_INT, &c->verbs_gid_index, OPAL_INFO_LVL_6);
    c->poll_budget = 16;
    reg("poll_budget", "Messages taken from one sender per progress call (at least 1)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->poll_budget, OPAL_INFO_LVL_6);
    c->first_seq = 0;
    reg("first_seq", "For testing: the sequence number every postbox queue starts at.  Set it "
        "for the whole job (both ends of a connection start there); 4294960000 takes a job "
        "across the wrap of the 32-bit sequence numbers after 7,296 postboxes",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->first_seq, OPAL_INFO_LVL_9);

    /* the standard BTL parameters: eager/max-send/rndv limits, latency, bandwidth,
     * exclusivity, flags... registered by the base with these defaults */
    mca_btl_base_module_t *m = &mca_btl_rsm;
    /* One above vader (and self, which only reaches this rank, where rsm has no
     * endpoint): with equal exclusivity ob1 keeps both for local peers and sends
     * eager messages round-robin, half through each (seen through btl_rsm's
     * MPI_T counters: 10 of 20 with --mca btl self,vader,rsm).  rsm runs only
     * where a job or the site asked for it (xbtl_optin.h), so where it runs it
     * carries all local traffic. */
    m->btl_exclusivity = MCA_BTL_EXCLUSIVITY_HIGH + 1;
    /* two copies in parallel on two cores beat a rendezvous here; raised to
     * btl_rsm_one_host_eager_limit at init when the whole job is on this host */
    m->btl_eager_limit = 16 * 1024;
    m->btl_rndv_eager_limit = 4 * 1024;
    m->btl_max_send_size = c->pipeline_size;
    m->btl_rdma_pipeline_send_length = m->btl_eager_limit;
    m->btl_rdma_pipeline_frag_size = c->pipeline_size;
    m->btl_min_rdma_pipeline_size = SIZE_MAX;   /* no put pipeline: forced again at init */
    m->btl_latency = 1;
    m->btl_bandwidth = 40000;
    m->btl_flags = MCA_BTL_FLAGS_SEND | (c->single_copy ? MCA_BTL_FLAGS_GET : 0);
    m->btl_registration_handle_size = RSM_HANDLE_WIRE;    /* a verbs rkey per rail (btl_rsm.h) */
    m->btl_get_limit = SIZE_MAX;
    m->btl_get_alignment = 0;
    m->btl_get_local_registration_threshold = 0;
    rsm_pvar_register();
    return mca_btl_base_param_register(&c->super.btl_version, m);
}

static int rsm_component_open(void)
{
    return xbtl_component_check("btl", "rsm");
}

static int rsm_component_close(void)
{
    if (lock_constructed) {
        OBJ_DESTRUCT(&mca_btl_rsm_component.lock);
        lock_constructed = false;
    }
    return OPAL_SUCCESS;
}

uint64_t rsm_layout_fingerprint(const rsm_layout_t *lay)
{
    const uint64_t fields[] = {lay->nqueues, lay->queue_len, lay->stripes, lay->small_block,
                               lay->large_block, lay->small_count, lay->large_count,
                               lay->max_inline, lay->max_msg};
    uint64_t h = 1469598103934665603ull;        /* FNV-1a */
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        h = (h ^ fields[i]) * 1099511628211ull;
    }
    return h;
}

static int my_numa_node(void)
{
    unsigned cpu = 0, node = 0;
    /* after mpirun's binding this is the node our core belongs to */
    return getcpu(&cpu, &node) == 0 ? (int) node : 0;
}

/* NUMA nodes online (each sender keeps an area per node it sends to); 1 when
 * the kernel does not say. */
static unsigned numa_nodes_online(void)
{
    FILE *f = fopen("/sys/devices/system/node/online", "r");
    unsigned n = 0, a, b;
    if (f != NULL) {
        int got;
        while ((got = fscanf(f, "%u-%u", &a, &b)) >= 1) {
            n += got == 2 && b >= a ? b - a + 1 : 1;
            if (fgetc(f) != ',') {
                break;
            }
        }
        fclose(f);
    }
    return n > 0 ? n : 1;
}

/* A pool that /dev/shm can hold.  Every rank of the host that sends keeps an
 * area there (its queues, and its pool from its first long message), and the
 * pages get their memory when first needed (rsm_seg_reserve): a /dev/shm too
 * small for all of them ends the job with shm-full.  A container's /dev/shm is
 * 64 MiB unless raised, and 16 ranks' areas of 8 MiB + 256 KiB overfill it.
 * So where btl_rsm_pool_size is left at its default, the pool is halved until
 * the areas of every local rank (one per NUMA node) take at most half of
 * /dev/shm, leaving the rest to the application, Open MPI and other jobs; not
 * below 256 KiB a stripe, where a 64 KiB eager message still fits.  The input is
 * the filesystem's size, not what is free now, so that every rank of the host
 * computes the same layout (a peer whose layout differs is not reached). */
static void fit_pool_to_shm(mca_btl_rsm_component_t *c)
{
    size_t total = rsm_shm_total_bytes();
    if (!param_default("pool_size") || c->nlocal < 2 || total == 0) {
        return;
    }
    const size_t areas = (size_t) c->nlocal * numa_nodes_online();
    const size_t queues = (size_t) c->nlocal * c->local_postboxes * RSM_POSTBOX_SIZE;
    const size_t floor = (size_t) RSM_POOL_FIT_MIN * (c->stripes > 0 ? c->stripes : 1);
    size_t pool = c->pool_size;
    while (pool / 2 >= floor && areas * (queues + pool) > total / 2) {
        pool /= 2;
    }
    if (pool != c->pool_size) {
        RSM_VERBOSE(1, "/dev/shm holds %zu bytes: a pool of %zu bytes instead of %zu, so that "
                    "the areas of %u local rank(s) on %zu NUMA node(s) take at most half of it "
                    "(set btl_rsm_pool_size to choose)", total, pool, c->pool_size, c->nlocal,
                    areas / c->nlocal);
        c->pool_size = pool;
    }
}

/* A parameter out of range: the message naming it, once per node on stderr
 * (xbtl_show_help_per_node: mpirun 4.1 lost every copy of it relayed with
 * opal_show_help in about one job in five), and the same sentence from every
 * rank at btl_base_verbose 1. */
static void bad_params(const char *why)
{
    RSM_VERBOSE(1, "cannot start with the parameters given: %s", why);
    xbtl_show_help_per_node("help-btl-rsm.txt", "bad-params", opal_process_info.nodename, why);
}

static mca_btl_base_module_t **rsm_component_init(int *num_btls, bool enable_progress_threads,
                                                  bool enable_mpi_threads)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    mca_btl_base_module_t *m = &mca_btl_rsm;
    const char *why = NULL;
    char name[RSM_SEG_NAME_MAX];
    int rc;

    *num_btls = 0;
    c->ctl_hold = -1;
    /* before anything is created: a job that did not ask for rsm never sees it */
    if (!xbtl_component_wanted("btl", "rsm", c->site_default,
                               opal_btl_base_framework.framework_output)) {
        return NULL;
    }
    if (opal_process_info.my_local_rank < 0) {
        return NULL;
    }
    /* alone on this host: no shared-memory back end, only the RDMA one */
    bool have_local = opal_process_info.num_local_peers > 0;
    c->nlocal = (uint32_t) (have_local ? opal_process_info.num_local_peers : 0) + 1;
    c->my_local_rank = (uint32_t) opal_process_info.my_local_rank;
    if (c->my_local_rank >= c->nlocal) {
        return NULL;
    }
    /* ob1 hands sends to every BTL it selected: without "send" it crashes in
     * MPI_Isend (vader does too), so refuse with a message instead */
    if (!(m->btl_flags & MCA_BTL_FLAGS_SEND)) {
        bad_params("btl_rsm_flags must include \"send\"");
        return NULL;
    }
    const uint32_t rsm_has = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_GET;
    if (m->btl_flags & ~rsm_has) {
        RSM_VERBOSE(1, "btl_rsm_flags: rsm has only send and get; the other flags are ignored");
        m->btl_flags &= rsm_has;
    }
    /* 0 would never take a message from a queue: the job would hang */
    if (c->poll_budget == 0) {
        bad_params("btl_rsm_poll_budget must be at least 1");
        return NULL;
    }
    if (c->verbs < 0 || c->verbs > 2) {
        bad_params("btl_rsm_verbs must be 0, 1 or 2");
        return NULL;
    }
    if (c->verbs_pool_chunks < 1 || c->verbs_pool_chunks > RSM_VPOOL_CHUNKS_MAX
        || c->verbs_srq_depth == 0) {
        bad_params("btl_rsm_verbs_pool_chunks must be 1..4 and btl_rsm_verbs_srq_depth at "
                   "least 1");
        return NULL;
    }
    if (c->verbs_timeout > 31 || c->verbs_retry_count > 7) {
        bad_params("btl_rsm_verbs_timeout must be 0..31 and btl_rsm_verbs_retry_count 0..7");
        return NULL;
    }
    if (c->verbs_block < RSM_POSTBOX_SIZE || c->verbs_block > 65536
        || (c->verbs_block & (c->verbs_block - 1)) != 0) {
        bad_params("btl_rsm_verbs_block must be a power of two in 64..65536");
        return NULL;
    }
    if (c->verbs_resend_ms < 1 || c->verbs_resend_ms > 60000) {
        bad_params("btl_rsm_verbs_resend_ms must be 1..60000");
        return NULL;
    }
    if (c->verbs_ack_delay_us > 1000000) {
        bad_params("btl_rsm_verbs_ack_delay_us must be 0..1000000 (at most a second)");
        return NULL;
    }
    if (c->verbs_listener > 2) {
        bad_params("btl_rsm_verbs_listener must be 0, 1 or 2");
        return NULL;
    }
    if (c->verbs_signal == 0 || c->verbs_signal > c->verbs_sq_depth / 2) {
        bad_params("btl_rsm_verbs_signal_interval must be 1 .. btl_rsm_verbs_sq_depth / 2");
        return NULL;
    }
    c->numa_node = my_numa_node();
    c->llc_bytes = rsm_llc_bytes("/sys/devices/system/cpu/cpu0/cache");
    c->small_cache = rsm_small_cache(c->llc_bytes, c->two_copy_llc_min);
    if (c->small_cache) {
        /* what the user set stays; the layout is the same on every rank of the
         * host, which read the same CPU's cache */
        if (param_default("one_host_eager_limit")) {
            c->one_host_eager = RSM_EAGER_ONE_HOST_SMALL_CACHE;
        }
        if (param_default("two_copy_ns")) {
            c->two_copy_ns = 0;
        }
        if (param_default("pool_answer_hot")) {
            c->pool_answer_hot = false;
        }
        RSM_VERBOSE(10, "a last-level cache of %zu KiB, under btl_rsm_two_copy_llc_min (%zu KiB): "
                    "one-host eager limit %zu bytes, rendezvous %s, answers %s", c->llc_bytes >> 10,
                    c->two_copy_llc_min >> 10, c->one_host_eager,
                    c->two_copy_ns == 0 ? "by single copy for every receiver"
                                        : "by two copies to near receivers (btl_rsm_two_copy_ns)",
                    c->pool_answer_hot ? "in the lowest free blocks" : "in the next blocks of the lap");
    }
    if (!c->small_cache && param_default("two_copy_ns") && c->two_copy_ns == RSM_TWO_COPY_NS_AMD) {
        RSM_VERBOSE(10, "an AMD CPU: rendezvous messages by two copies to receivers nearer than "
                    "%u ns (btl_rsm_two_copy_ns), with no middle band below btl_rsm_nt_far_ns",
                    c->two_copy_ns);
    }
    const uint32_t cycles_per_us = rsm_cycles_for_ns(1000);    /* ~200 us, once */
    c->nt_far_cycles = rsm_cycles_scale(cycles_per_us, c->nt_far_ns);
    c->two_copy_cycles = rsm_cycles_scale(cycles_per_us, c->two_copy_ns);
    c->short_eager_cycles = rsm_cycles_scale(cycles_per_us, c->short_eager_ns);
    c->pair_min_cycles = rsm_cycles_scale(cycles_per_us, c->pair_min_ns);

    c->local_postboxes = c->postboxes ? c->postboxes : rsm_queue_len_auto(c->nlocal);
    c->remote_postboxes = c->postboxes ? c->postboxes : RSM_QUEUE_AUTO_MIN;
    if (c->remote_postboxes > RSM_VIMM_PACKED_QLEN_MAX) {
        c->verbs_direct = false;    /* the immediate has no room to say where */
    }
    fit_pool_to_shm(c);
    if (c->pool_lap == 0) {
        c->pool_lap = rsm_pool_lap_for_cache(c->llc_bytes);
    }
    if (c->pool_next_fit && c->pool_lap != 0 && c->pool_lap < c->pool_size) {
        RSM_VERBOSE(10, "next fit goes round %zu KiB of each %zu KiB pool (btl_rsm_pool_lap)",
                    c->pool_lap >> 10, c->pool_size >> 10);
    }

    const bool one_host = job_on_one_host();
    c->job_spans_hosts = !one_host;
    const bool eager_default = param_default("eager_limit");
    c->eager_short = m->btl_eager_limit;        /* the limit of jobs that span hosts */
    if (eager_default && one_host) {
        /* as if the verbs back end will open; raised below when it does not */
        m->btl_eager_limit = one_host_eager_limit(c, m->btl_eager_limit, c->verbs != 0);
        m->btl_rdma_pipeline_send_length = m->btl_eager_limit;
    }
    /* 2 KiB messages inline where queues are deep enough to hold many such
     * groups: no pool block, no barrier, no pointer postbox (near: latency of
     * 2 KiB 0.47 us instead of 0.64) */
    if (c->inline_max != 0 && c->inline_max < RSM_PB_DATA) {
        /* a postbox carries 56 bytes whatever the limit, and rsm's own short
         * messages (paired tiny ones, the one-sided requests) need 40 */
        RSM_VERBOSE(1, "inline limit raised from %u to %u bytes (one postbox)", c->inline_max,
                    (unsigned) RSM_PB_DATA);
        c->inline_max = RSM_PB_DATA;
    }
    c->local_inline_max = fit_inline(c->inline_max ? c->inline_max
                                     : c->local_postboxes >= 512 ? RSM_INLINE_DEEP : RSM_INLINE_SHALLOW,
                                     c->local_postboxes, 2, "local");
    c->remote_inline_max = fit_inline(c->inline_max ? c->inline_max : RSM_INLINE_SHALLOW,
                                      c->remote_postboxes, c->remote_postboxes / 8,
                                      "remote (verbs)");
    c->inline_max = c->local_inline_max > c->remote_inline_max ? c->local_inline_max
                                                               : c->remote_inline_max;
    if (node_layout_init(c, m, &why) != 0) {
        bad_params(why);
        return NULL;
    }
    bool have_verbs = c->verbs_open = rsm_verbs_init(one_host);
    if (eager_default && one_host && !have_verbs) {
        size_t eager = one_host_eager_limit(c, m->btl_eager_limit, false);
        if (eager != m->btl_eager_limit) {
            m->btl_eager_limit = eager;
            m->btl_rdma_pipeline_send_length = eager;
            (void) node_layout_init(c, m, &why);    /* fits: checked against the pool */
        }
    }
    const char *eager_why = !eager_default ? "btl_rsm_eager_limit"
                            : !one_host ? "the job spans hosts"
                            : m->btl_eager_limit == c->one_host_eager ? "the whole job on this host"
                            : c->one_host_eager < m->btl_eager_limit
                                ? "the whole job on this host, btl_rsm_one_host_eager_limit is lower"
                            : have_verbs ? "the whole job on this host, less for the verbs pools"
                                         : "the whole job on this host, less for the pool's size";
    c->eager_full = m->btl_eager_limit;
    if (!eager_default || !one_host || !param_default("one_host_eager_limit")) {
        c->eager_short = c->eager_full;     /* a limit the user chose stays put */
    }
    c->params = rsm_layout_fingerprint(&c->layout);
    c->verbs_single_copy_on = have_verbs && c->single_copy && c->verbs_single_copy_min != SIZE_MAX;
    if (!have_local && !have_verbs) {
        RSM_VERBOSE(10, "no other rank on this node and no RDMA back end: no module");
        return NULL;
    }
    OBJ_CONSTRUCT(&c->lock, opal_recursive_mutex_t);
    lock_constructed = true;
    if (!have_local) {
        /* no CMA (single copy only by RDMA read), and never a put pipeline (below) */
        if (!c->verbs_single_copy_on) {
            m->btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
        }
        m->btl_min_rdma_pipeline_size = SIZE_MAX;
        c->single_copy_on = false;
        rma_offer(c, m);
        goto modules;
    }
    /* segments left by processes of this user that died with their launcher */
    int swept = rsm_shm_sweep("/dev/shm", RSM_CTL_MAGIC);
    if (swept > 0) {
        RSM_VERBOSE(1, "removed %d names in /dev/shm of rsm segments whose processes ended "
                    "without their launcher's clean-up (mpirun killed, or a job that aborted)", swept);
    }
    if ((rc = rsm_seg_random_tag(c->tag)) != 0) {
        opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                       "name", "(random tag)", (size_t) 0, strerror(-rc));
        goto fail;
    }
    rsm_seg_name(name, sizeof(name), c->tag, "ctl", 0, 0);
    if ((rc = rsm_export_registered(&c->ctl, name, rsm_ctl_size(&c->layout), c->numa_node)) != 0) {
        opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                       "export", name, rsm_ctl_size(&c->layout), strerror(-rc));
        goto fail;
    }
    if (rsm_reserve_or_say(&c->ctl, 0, rsm_ctl_size(&c->layout), rsm_ctl_size(&c->layout),
                           "its control segment") != OPAL_SUCCESS) {
        goto fail;
    }
    if ((c->ctl_hold = rsm_shm_hold(name)) < 0) {
        opal_show_help("help-btl-rsm.txt", "segment-failed", true, opal_process_info.nodename,
                       "lock", name, rsm_ctl_size(&c->layout), strerror(-c->ctl_hold));
        goto fail;
    }
    ((rsm_ctl_t *) c->ctl.base)->magic = RSM_CTL_MAGIC;     /* after the lock: rsm_seg.h */
    c->by_local_rank = calloc(c->nlocal, sizeof(*c->by_local_rank));
    if (c->by_local_rank == NULL) {
        goto fail;
    }

    /* We have get but no put.  When the sender refuses a get (below
     * btl_rsm_single_copy_min) ob1 sends a contiguous rendezvous; a receiver would then
     * schedule a put pipeline for the part past bml's btl_send_limit (the largest
     * btl_min_rdma_pipeline_size) because we are in the endpoint's rdma list.  With
     * no put that must never happen: the whole message goes by the send pipeline. */
    m->btl_min_rdma_pipeline_size = SIZE_MAX;
    c->single_copy_on = (m->btl_flags & MCA_BTL_FLAGS_GET) != 0;
    if (c->single_copy_on && c->single_copy_min == SIZE_MAX) {
        /* no message would be sent by CMA: no probe, no PR_SET_PTRACER: exactly the
         * single-copy-off path (and not in ob1's rdma list unless RDMA reads are on) */
        c->single_copy_on = false;
        RSM_VERBOSE(10, "single copy allowed but btl_rsm_single_copy_min is SIZE_MAX: not "
                    "offered; large messages take the pipelined two-copy path");
    }
    if (!c->single_copy_on && !c->verbs_single_copy_on) {
        m->btl_flags &= ~(uint32_t) MCA_BTL_FLAGS_GET;
    }
    rma_offer(c, m);
    if (!c->single_copy_on || c->single_copy_min > c->eager_short
        || (c->small_cache ? c->nt_far_cycles : c->short_eager_cycles) == 0) {
        c->eager_short = c->eager_full;   /* the shorter limit pays only with single copy */
    }
    /* the limit under load: only below the shorter one, and only where single copy
     * takes what it leaves (a shorter limit with the two-copy pipeline loses).  On
     * a small cache the shorter limit is the far receivers' (eager_follows), and
     * the rule of the middle band does not apply */
    c->eager_loaded = c->loaded_eager != 0 && c->loaded_eager < c->eager_short && !c->small_cache
                      && c->single_copy_min < c->loaded_eager ? c->loaded_eager : c->eager_short;
    /* the limit of a one-way stream: between the shorter one and the full one */
    c->eager_streaming = c->stream_eager < c->eager_short ? c->eager_short
                         : c->stream_eager > c->eager_full ? c->eager_full : c->stream_eager;
    c->probe_word = RSM_CTL_MAGIC;
    if (c->single_copy_on || c->rma_on) {
        /* Yama (ptrace_scope 1) lets only a declared tracer read (or write) us */
        (void) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    }
    if (!c->single_copy_on && c->single_copy_min != SIZE_MAX) {
        RSM_VERBOSE(1, "single copy (CMA) disabled by parameter; large messages take the "
                    "pipelined two-copy path");
    }

    rsm_modex_t modex = {
        .version = RSM_MODEX_VERSION,
        .local_rank = c->my_local_rank,
        .numa_node = c->numa_node,
        .pid = (int32_t) getpid(),
        .probe_addr = (uint64_t) (uintptr_t) &c->probe_word,
        .params = c->params,
    };
    memcpy(modex.tag, c->tag, sizeof(modex.tag));
    OPAL_MODEX_SEND(rc, OPAL_PMIX_LOCAL, &c->super.btl_version, &modex, sizeof(modex));
    if (rc != OPAL_SUCCESS) {
        goto fail;
    }
    char short_eager[256] = "";
    if (c->eager_short < c->eager_full && c->small_cache) {
        snprintf(short_eager, sizeof(short_eager), "; %zu while a receiver is far, "
                 "btl_rsm_nt_far_ns", c->eager_short);
    } else if (c->eager_short < c->eager_full) {
        snprintf(short_eager, sizeof(short_eager), "; %zu while a receiver is at the middle "
                 "distance, btl_rsm_short_eager_ns, %zu if this rank also takes in bulk data, "
                 "btl_rsm_loaded_eager_limit, %zu while it streams one way, "
                 "btl_rsm_stream_eager_limit", c->eager_short, c->eager_loaded, c->eager_streaming);
    }
    RSM_VERBOSE(10, "local rank %u of %u, NUMA node %d, control segment %s (%zu bytes), "
                "%u-byte areas, queues of %u postboxes, inline up to %u bytes, eager up to %zu "
                "bytes (%s%s), cleanup at job end %s", c->my_local_rank, c->nlocal, c->numa_node,
                name, rsm_ctl_size(&c->layout), (unsigned) rsm_layout_seg_size(&c->layout, 0),
                c->layout.queue_len, c->layout.max_inline, m->btl_eager_limit, eager_why,
                short_eager,
                c->cleanup_registered ? "registered" : "NOT registered");
modules:;
    /* the BTL base frees this array */
    mca_btl_base_module_t **modules = malloc(sizeof(*modules));
    if (modules == NULL) {
        goto fail;
    }
    modules[0] = m;
    *num_btls = 1;
    return modules;
fail:
    rsm_ctl_release();
    free(c->by_local_rank);
    c->by_local_rank = NULL;
    rsm_verbs_finalize();
    c->verbs_open = false;
    return NULL;
}

static int rsm_component_progress(void)
{
    mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    int count = 0;
    RSM_LOCK();
    if (c->in_progress) {       /* a callback called progress: do not deliver out of order */
        RSM_UNLOCK();
        return 0;
    }
    c->in_progress = true;
    rsm_ctl_t *ctl = c->ctl.base;
    if (OPAL_UNLIKELY(c->verbs_open)) {
        count += rsm_verbs_progress();
    }
    if (OPAL_UNLIKELY(ctl == NULL)) {
        /* alone on this host: the RDMA back end only */
    } else if (OPAL_UNLIKELY(atomic_load_explicit(&ctl->connect_gen, memory_order_relaxed)
                             != c->seen_gen || c->accept_pending)) {
        int accepted = rsm_accept_connections();
        if (OPAL_UNLIKELY(accepted < 0)) {
            rsm_fatal(NULL, "btl rsm: a connection could not be accepted");
        } else {
            count += accepted;
        }
    }
    for (uint32_t i = 0; i < c->n_inbound; i++) {
        count += rsm_poll(c->inbound[i], c->poll_budget);
    }
    if (OPAL_UNLIKELY(c->n_parked > 0)) {
        count += rsm_get_progress();
    }
    if (OPAL_UNLIKELY(c->amo_replies_held + c->amo_requests_held > 0)) {
        count += rsm_rma_progress();
    }
    if (c->outbound_busy > 0) {
        for (uint32_t i = 0; i < c->n_outbound; i++) {
            if (c->outbound[i]->pending_head != NULL) {
                count += rsm_send_pending(c->outbound[i]);
            }
        }
    }
    c->in_progress = false;
    RSM_UNLOCK();
    return count;
}
