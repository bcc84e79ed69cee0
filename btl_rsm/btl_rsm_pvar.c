/*
 * btl rsm's statistics as MPI_T performance variables (issue 13, part 2):
 * "btl_rsm_<name>", unsigned long counters that tools read while the job runs
 * (MPI_T_pvar_read), listed by `ompi_info --level 9 --param btl rsm` too.
 *
 * Nothing is counted for MPI_T alone: the send paths bump plain per-endpoint
 * fields beside the queue tail they write anyway, everything else is counted
 * off the latency path in the component, and a read sums it all afresh
 * (common/xbtl_pvar.h).  Counts are this rank's; "sent" ones are counted by
 * the sender, get-side ones by the receiver, halves written by the sender.
 */
#include "btl_rsm.h"

#include "xbtl_pvar.h"

enum {
    PV_INLINE, PV_INLINE_BYTES, PV_POOL, PV_POOL_BYTES, PV_PAIRED, PV_STAGED, PV_PARKED,
    PV_GETS, PV_GET_BYTES, PV_SPLITS, PV_HALVES, PV_HALF_BYTES, PV_TAKEN_BACK,
    PV_NEAR, PV_FAR, PV_BOTH_WAYS, PV_DIST_LOADED, PV_EAGER_LOWERED, PV_EAGER_LOAD_LOWERED,
    PV_DROP_MALFORMED, PV_DROP_TAG, PV_DROP_HELP, PV_POOL_FULL,
    PV_RMA_PUTS, PV_RMA_PUT_BYTES, PV_AMO_SENT, PV_AMO_SERVED, PV_AMO_REFUSED, PV_AMO_HELD, PV_DROP_AMO,
    PV_V_CONNECTS, PV_V_ACCEPTS, PV_V_WRITES, PV_V_WRITE_BYTES, PV_V_ACK_WRITES, PV_V_ACKS_PIGGYBACKED, PV_V_DIRECT,
    PV_V_REGISTERED, PV_V_REGISTERED_SHARED, PV_V_POOL_GROWS, PV_V_BAD_HANDSHAKES,
    PV_V_READS, PV_V_READ_BYTES, PV_V_USER_REGISTERED, PV_V_USER_REGISTRATIONS,
    PV_V_STRIPED_READS, PV_V_RAIL_READ_BYTES, PV_V_POSTS, PV_V_ACCEPTS_AWAY, PV_V_CQ_WAITS,
    PV_RMA_STRIPED_PUTS, PV_RMA_RAIL_PUT_BYTES, PV_RMA_BOUNCED,
    PV_COUNT
};

/* the read callback fills a buffer of XBTL_PVAR_MAX values */
_Static_assert(PV_COUNT <= XBTL_PVAR_MAX, "more counters than xbtl_pvar holds");

static const xbtl_counter_def_t rsm_counters[PV_COUNT] = {
    [PV_INLINE] = {"inline_messages", "Messages (BTL fragments) sent inline, in groups of "
                   "postboxes (btl_rsm_inline_max), internal ones included"},
    [PV_INLINE_BYTES] = {"inline_bytes", "Bytes sent inline, upper-layer (ob1) headers included"},
    [PV_POOL] = {"pool_messages", "Fragments sent in pool blocks behind pointer postboxes "
                 "(eager messages past the inline limit, pipeline fragments)"},
    [PV_POOL_BYTES] = {"pool_bytes", "Bytes sent in pool blocks, upper-layer headers included"},
    [PV_PAIRED] = {"paired_messages", "Of inline_messages, those sent in the second half of a "
                   "postbox that already held one (two messages of up to 24 bytes per cache line "
                   "to a receiver on this node: btl_rsm_pair_tiny, btl_rsm_pair_min_ns)"},
    [PV_STAGED] = {"staged_starts", "Message starts staged in private memory because the "
                   "block pool was full (posted later, in order)"},
    [PV_PARKED] = {"parked_starts", "Message starts refused with no descriptor to give: ob1 "
                   "parked them on its own pending list"},
    [PV_GETS] = {"single_copy_gets", "Single-copy reads (RDMA get by process_vm_readv) this "
                 "rank did as a receiver"},
    [PV_GET_BYTES] = {"single_copy_bytes", "Bytes of those single-copy reads, both halves of "
                      "split ones included"},
    [PV_SPLITS] = {"split_gets", "Single-copy reads split with the sender "
                   "(btl_rsm_single_copy_split): the sender was asked to write the second half"},
    [PV_HALVES] = {"split_halves_written", "Second halves of a peer's split read this rank "
                   "wrote as the sender (process_vm_writev)"},
    [PV_HALF_BYTES] = {"split_halves_written_bytes", "Bytes of those second halves"},
    [PV_TAKEN_BACK] = {"split_halves_taken_back", "Second halves of split reads this rank "
                       "copied itself after all (the sender had not started, or failed)"},
    [PV_NEAR] = {"near_decisions", "Receiver-distance decisions that found the receiver near "
                 "(sharing a cache): ordinary stores (two copies for rendezvous too when under "
                 "btl_rsm_two_copy_ns)"},
    [PV_FAR] = {"far_decisions", "Receiver-distance decisions that found the receiver far: "
                "streaming stores, single copy"},
    [PV_BOTH_WAYS] = {"both_ways_offers", "Messages past the eager limit offered by single "
                      "copy to receivers near enough for two copies, because bulk data ran both "
                      "ways between the two ranks (btl_rsm_single_copy_both_ways)"},
    [PV_DIST_LOADED] = {"distance_sets_loaded", "Sets of receiver-distance samples that "
                        "decided nothing: most were taken while this rank took in bulk data "
                        "(traffic both ways inflates them), after a set without load had "
                        "decided"},
    [PV_EAGER_LOWERED] = {"eager_limit_lowered", "Times the eager limit went down from the "
                          "one-host limit to btl_rsm_eager_limit's default because a receiver "
                          "was measured in the middle band (btl_rsm_short_eager_ns)"},
    [PV_EAGER_LOAD_LOWERED] = {"eager_limit_load_lowered", "Times the eager limit went down "
                               "to btl_rsm_loaded_eager_limit: a receiver in the middle band, "
                               "and this rank taking in bulk data too (two distance samples in "
                               "a row) and streaming to no peer (btl_rsm_stream_sends)"},
    [PV_DROP_MALFORMED] = {"dropped_malformed", "Peer postboxes dropped because they failed "
                           "the parser's checks"},
    [PV_DROP_TAG] = {"dropped_unknown_tag", "Whole messages dropped because no upper layer "
                     "registered their tag"},
    [PV_DROP_HELP] = {"dropped_bad_help", "Split-read requests dropped: malformed, or asking "
                      "for memory not registered for that peer to read"},
    [PV_POOL_FULL] = {"pool_full", "New fragments that found this rank's block pool full "
                      "(after collecting acks), or held back behind staged ones"},
    [PV_RMA_PUTS] = {"rma_puts", "One-sided puts (osc rdma, btl_rsm_rma) this rank wrote into "
                     "another rank's window: by process_vm_writev on this host (its gets are "
                     "single_copy_gets), by RDMA write to another (its gets are verbs_reads)"},
    [PV_RMA_PUT_BYTES] = {"rma_put_bytes", "Bytes of those puts"},
    [PV_AMO_SENT] = {"rma_atomics_sent", "One-sided atomics this rank asked other ranks of "
                     "this host to apply to their windows"},
    [PV_AMO_SERVED] = {"rma_atomics_served", "One-sided atomics this rank applied to its own "
                       "memory for other ranks"},
    [PV_AMO_REFUSED] = {"rma_atomics_refused", "Of rma_atomics_sent, those the target refused "
                        "(the word was not in memory it registered for remote atomics)"},
    [PV_AMO_HELD] = {"rma_atomics_held", "Of rma_atomics_sent, those asked for inside a "
                     "completion callback when they could not go at once (the queue to the "
                     "target full, 256 of ours unanswered, a connection being made), held and "
                     "sent from progress"},
    [PV_DROP_AMO] = {"dropped_bad_atomics", "Peers' atomic requests refused (malformed, or "
                     "outside memory registered for remote atomics) and replies dropped "
                     "(answering nothing this rank asked)"},
    [PV_V_CONNECTS] = {"verbs_connects", "RDMA connections this rank opened as a sender "
                       "(one per peer on another host it sent to)"},
    [PV_V_ACCEPTS] = {"verbs_accepts", "RDMA connections this rank accepted as a receiver"},
    [PV_V_ACCEPTS_AWAY] = {"verbs_accepts_away", "Of verbs_accepts, those its listener thread "
                           "accepted while this process was away from MPI (any it accepted "
                           "with btl_rsm_verbs_listener 2; see that parameter)"},
    [PV_V_WRITES] = {"verbs_writes", "RDMA writes posted: published units (with immediate), "
                     "pool data and ack rows"},
    [PV_V_WRITE_BYTES] = {"verbs_write_bytes", "Bytes of those RDMA writes"},
    [PV_V_POSTS] = {"verbs_posts", "Calls to ibv_post_send for those RDMA writes (doorbells): "
                    "a pool message's block writes go in one call with its pointer postbox, "
                    "so there are fewer than writes"},
    [PV_V_CQ_WAITS] = {"verbs_cq_waits", "Times a signalled RDMA write or read waited for room "
                       "in the device's send completion queue (4096 entries shared by every "
                       "queue pair: many peers with many reads in flight)"},
    [PV_V_ACK_WRITES] = {"verbs_ack_writes", "RDMA writes of ack bytes into senders' ack rows"},
    [PV_V_ACKS_PIGGYBACKED] = {"verbs_acks_piggybacked", "Units sent to a peer whose immediate "
                               "carried the acks we owed it (no ack write needed)"},
    [PV_V_DIRECT] = {"verbs_direct_units", "Pool messages sent as one RDMA write, their "
                     "pointer postbox ahead of the payload in the blocks (a direct unit), "
                     "instead of a block write and a postbox write"},
    [PV_V_REGISTERED] = {"verbs_registered_bytes", "Bytes of memory registered with the RDMA "
                         "device right now (queues, pools, shadows, ack rows; not a running "
                         "total)", .level = true},
    [PV_V_REGISTERED_SHARED] = {"verbs_registered_shared_bytes", "Of verbs_registered_bytes, "
                                "the pools of remote senders this rank mapped from a segment "
                                "another rank of this host created: pages pinned once per "
                                "host, so a host's memory is the sum of registered_bytes "
                                "less the sum of these", .level = true},
    [PV_V_POOL_GROWS] = {"verbs_pool_grows", "Chunks this rank added, as a sender, to its pools "
                         "on other hosts (one pool per destination host; it grows only while "
                         "fragments keep finding it full, up to btl_rsm_verbs_pool_chunks), "
                         "counted once every receiver there has mapped the chunk and it is in "
                         "use (its memory is in verbs_registered_bytes from when it is made)"},
    [PV_V_BAD_HANDSHAKES] = {"verbs_bad_handshakes", "Connection handshake messages dropped "
                             "because they failed the checks"},
    [PV_V_READS] = {"verbs_reads", "RDMA reads this rank did: as a receiver, messages from "
                    "another host of at least btl_rsm_verbs_single_copy_min bytes read straight "
                    "from the sender's buffer (single copy); and one-sided gets from a window "
                    "on another host"},
    [PV_V_READ_BYTES] = {"verbs_read_bytes", "Bytes of those RDMA reads"},
    [PV_V_USER_REGISTERED] = {"verbs_user_registered_bytes", "Bytes of user buffers registered "
                              "with the RDMA device right now for single copy (held by the "
                              "registration cache; not in verbs_registered_bytes)", .level = true},
    [PV_V_USER_REGISTRATIONS] = {"verbs_user_registrations", "User-buffer registrations made "
                                 "for single copy (the cache's misses; a buffer used again is "
                                 "not registered again while it stays mapped)"},
    [PV_V_STRIPED_READS] = {"verbs_striped_reads", "Of verbs_reads, those cut across two or more "
                            "rails (btl_rsm_verbs_rails, btl_rsm_verbs_stripe_min): single-copy "
                            "reads and one-sided gets"},
    [PV_V_RAIL_READ_BYTES] = {"verbs_rail_read_bytes", "Bytes of verbs_read_bytes that came over "
                              "rails other than the first"},
    [PV_RMA_STRIPED_PUTS] = {"rma_striped_puts", "Of rma_puts to another host, those cut across "
                             "two or more rails (btl_rsm_verbs_rails, btl_rsm_verbs_stripe_min)"},
    [PV_RMA_RAIL_PUT_BYTES] = {"rma_rail_put_bytes", "Bytes of rma_put_bytes that went over rails "
                               "other than the first"},
    [PV_RMA_BOUNCED] = {"rma_bounced", "One-sided puts and gets to ranks on other hosts whose "
                        "local buffer the RDMA device could not register (read-only memory, the "
                        "locked-memory limit): they went through a registered copy"},
};

/* the send counters of endpoints already released (finalize) */
static uint64_t retired[PV_PAIRED + 1];

static void rsm_counters_read(uint64_t *v)
{
    const mca_btl_rsm_component_t *c = &mca_btl_rsm_component;
    for (unsigned i = 0; i < PV_COUNT; i++) {
        v[i] = i <= PV_PAIRED ? retired[i] : 0;
    }
    RSM_LOCK();
    for (uint32_t i = 0; c->by_local_rank != NULL && i < c->nlocal; i++) {
        const mca_btl_base_endpoint_t *ep = c->by_local_rank[i];
        if (ep != NULL) {
            v[PV_INLINE] += ep->sent_inline;
            v[PV_INLINE_BYTES] += ep->sent_inline_bytes;
            v[PV_POOL] += ep->sent_pool;
            v[PV_POOL_BYTES] += ep->sent_pool_bytes;
            v[PV_PAIRED] += ep->sent_paired;
        }
    }
    rsm_verbs_counters(&v[PV_INLINE], &v[PV_INLINE_BYTES], &v[PV_POOL], &v[PV_POOL_BYTES]);
    RSM_UNLOCK();
    v[PV_STAGED] = c->staged;
    v[PV_PARKED] = c->refused;
    v[PV_GETS] = c->gets;
    v[PV_GET_BYTES] = c->get_bytes;
    v[PV_SPLITS] = c->splits;
    v[PV_HALVES] = c->helped;
    v[PV_HALF_BYTES] = c->help_bytes;
    v[PV_TAKEN_BACK] = c->taken_back;
    v[PV_NEAR] = c->near_decisions;
    v[PV_FAR] = c->far_decisions;
    v[PV_BOTH_WAYS] = c->both_ways_offers;
    v[PV_DIST_LOADED] = c->distance_loaded;
    v[PV_EAGER_LOWERED] = c->eager_lowered;
    v[PV_EAGER_LOAD_LOWERED] = c->eager_load_lowered;
    v[PV_DROP_MALFORMED] = c->dropped_malformed;
    v[PV_DROP_TAG] = c->dropped_tag;
    v[PV_DROP_HELP] = c->dropped_help;
    v[PV_POOL_FULL] = c->pool_full;
    v[PV_RMA_PUTS] = c->rma_puts;
    v[PV_RMA_PUT_BYTES] = c->rma_put_bytes;
    v[PV_AMO_SENT] = c->amo_sent;
    v[PV_AMO_SERVED] = c->amo_served;
    v[PV_AMO_REFUSED] = c->amo_refused;
    v[PV_AMO_HELD] = c->amo_held;
    v[PV_RMA_BOUNCED] = c->rma_bounced;
    v[PV_DROP_AMO] = c->dropped_amo;
    v[PV_V_CONNECTS] = c->v_connects;
    v[PV_V_ACCEPTS] = c->v_accepts;
    v[PV_V_ACCEPTS_AWAY] = c->v_accepts_away;
    v[PV_V_WRITES] = c->v_writes;
    v[PV_V_WRITE_BYTES] = c->v_write_bytes;
    v[PV_V_POSTS] = c->v_posts;
    v[PV_V_CQ_WAITS] = c->v_cq_waits;
    v[PV_V_ACK_WRITES] = c->v_ack_writes;
    v[PV_V_ACKS_PIGGYBACKED] = c->v_acks_piggybacked;
    v[PV_V_DIRECT] = c->v_direct;
    v[PV_V_REGISTERED] = c->v_registered;
    v[PV_V_REGISTERED_SHARED] = c->v_registered_shared;
    v[PV_V_POOL_GROWS] = c->v_grows;
    v[PV_V_BAD_HANDSHAKES] = c->v_bad_handshakes;
    v[PV_V_READS] = c->v_reads;
    v[PV_V_READ_BYTES] = c->v_read_bytes;
    v[PV_V_USER_REGISTERED] = c->v_user_registered;
    v[PV_V_USER_REGISTRATIONS] = c->v_user_registrations;
    v[PV_V_STRIPED_READS] = c->v_striped_reads;
    v[PV_V_RAIL_READ_BYTES] = c->v_rail_read_bytes;
    v[PV_RMA_STRIPED_PUTS] = c->rma_striped_puts;
    v[PV_RMA_RAIL_PUT_BYTES] = c->rma_rail_put_bytes;
}

void rsm_pvar_retire(const mca_btl_base_endpoint_t *ep)
{
    retired[PV_INLINE] += ep->sent_inline;
    retired[PV_INLINE_BYTES] += ep->sent_inline_bytes;
    retired[PV_POOL] += ep->sent_pool;
    retired[PV_POOL_BYTES] += ep->sent_pool_bytes;
    retired[PV_PAIRED] += ep->sent_paired;
}

void rsm_pvar_register(void)
{
    static xbtl_pvar_set_t set;
    unsigned n = xbtl_pvar_register_counters(&set, &mca_btl_rsm_component.super.btl_version,
                                             rsm_counters, PV_COUNT, rsm_counters_read);
    if (n != PV_COUNT) {
        RSM_VERBOSE(1, "only %u of %d MPI_T performance variables registered", n, PV_COUNT);
    }
}
