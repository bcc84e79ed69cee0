/*
 * btl pmeth: the component.  Registers every parameter (here and only here),
 * opens one frame ring per chosen Ethernet interface, publishes the links in
 * the modex, and drives receive, acknowledgement and retransmission from
 * opal_progress.
 */
#define _GNU_SOURCE
#include "btl_pmeth.h"
#include "btl_pmeth_frag.h"

#include "opal/mca/pmix/pmix.h"
#include "opal/util/argv.h"
#include "opal/util/show_help.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <netpacket/packet.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmeth_helper_client.h"
#include "pmeth_tc.h"
#include "xbtl_compat.h"
#include "xbtl_optin.h"

static int pmeth_component_register(void);
static int pmeth_component_open(void);
static int pmeth_component_close(void);
static mca_btl_base_module_t **pmeth_component_init(int *num_btls, bool enable_progress_threads,
                                                    bool enable_mpi_threads);
static int pmeth_component_progress(void);

__attribute__((visibility("default")))
mca_btl_pmeth_component_t mca_btl_pmeth_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("pmeth"),
            .mca_open_component = pmeth_component_open,
            .mca_close_component = pmeth_component_close,
            .mca_register_component_params = pmeth_component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = pmeth_component_init,
        .btl_progress = pmeth_component_progress,
    },
};

static bool lock_constructed;

/* The site's helper for processes without CAP_NET_RAW (pmeth-helperd); the
 * AF_PACKET sockets it opened are ours to close after their rings (the ring
 * layer does not close a socket it was given), its AF_XDP descriptors the ring
 * layer's (pmeth_ring_config.xdp). */
static char *helper_socket;
static bool helper_always;
static bool helper_asked;       /* by the last open_ring: its refusal explains a fallback */
#define HELPER_NOTE_LEN 320     /* what the helper said, with its socket's path */
#define HELPER_SAID_BEFORE " (its answer for an earlier interface)"
/* the helper's word that it hands out no AF_XDP sockets at all: not asked again for this
 * process's other links (room left for HELPER_SAID_BEFORE in the note) */
static char helper_no_xdp[HELPER_NOTE_LEN - sizeof(HELPER_SAID_BEFORE) + 1];
static int link_helper_fd[PMETH_MAX_LINKS];
#define HELPER_TIMEOUT_MS 5000

static void reg(const char *name, const char *help, mca_base_var_type_t type, void *storage,
                int level)
{
    (void) mca_base_component_var_register(&mca_btl_pmeth_component.super.btl_version, name, help,
                                           type, NULL, 0, 0, level, MCA_BASE_VAR_SCOPE_READONLY,
                                           storage);
}

static int pmeth_component_register(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;

    c->site_default = false;
    reg("site_default", "Use pmeth in jobs that do not name it in their btl list (a site's "
        "openmpi-mca-params.conf may set this to 1).  Off: only a job that asks for it, as in "
        "--mca btl self,vader,pmeth, sends raw frames", MCA_BASE_VAR_TYPE_BOOL, &c->site_default,
        OPAL_INFO_LVL_2);
    c->if_include = NULL;
    reg("if_include", "Comma-separated list of Ethernet interface names to carry frames (e.g. "
        "eth0,eth1).  Mutually exclusive with btl_pmeth_if_exclude.  Default: every interface "
        "that is up, is Ethernet and is not loopback",
        MCA_BASE_VAR_TYPE_STRING, &c->if_include, OPAL_INFO_LVL_1);
    c->if_exclude = NULL;
    reg("if_exclude", "Comma-separated list of Ethernet interface names never to use.  Mutually "
        "exclusive with btl_pmeth_if_include", MCA_BASE_VAR_TYPE_STRING, &c->if_exclude,
        OPAL_INFO_LVL_1);
    c->io_mode = "auto";
    reg("io_mode", "How frames reach the kernel: \"packet\" (AF_PACKET rings, any interface), "
        "\"xdp\" (AF_XDP sockets with our own XDP program that takes only frames of our "
        "EtherType, job and process; copy mode on veth, zero copy where the driver offers it), "
        "or \"auto\" (the default: AF_XDP where it works, else packet, with one line at "
        "btl_base_verbose 1 saying why).  AF_XDP works for a root job, or through a helper the "
        "site started with --xdp, on an interface with one receive queue and no XDP program of "
        "another owner, for one process on it (a second one of the host falls back), and where "
        "nothing its frames would skip: they go past the interface's queueing discipline "
        "(traffic shaping) on the way out and past tc's and netfilter's ingress hooks on the "
        "way in, so auto keeps packet where a tbf or other "
        "shaping qdisc, a clsact or ingress qdisc, or an nftables chain bound to the device is "
        "set when the job starts.  An XDP program is attached for the job's lifetime (and goes "
        "with the last socket, also when the process is killed).  An AF_XDP frame is at most "
        "3840 bytes: at a larger MTU (jumbo frames) every frame is sent, and the larger ones "
        "received, through an AF_PACKET ring, and the smaller ones (acks, short messages) come "
        "in through AF_XDP.  Measured on veth at MTU 9000 (btl_pmeth/README.md, \"Rings\"): "
        "where every frame would wake another CPU, 8 B latency 0.09x of packet's and 1 MiB "
        "bandwidth 1.3x; where the sending CPU takes each frame, 1.1x and 0.85-0.88x.  Ask for "
        "packet where filters are added while jobs run",
        MCA_BASE_VAR_TYPE_STRING, &c->io_mode, OPAL_INFO_LVL_4);
    helper_socket = PMETH_HELPER_DEFAULT_SOCKET;
    reg("helper", "Unix socket of pmeth-helperd, the site's root helper that opens AF_PACKET "
        "sockets on the interfaces it allows and passes them to jobs of ordinary users (no "
        "CAP_NET_RAW needed); started with --xdp it also sets up AF_XDP sockets (io_mode xdp "
        "or auto), with our XDP program attached for the job's lifetime.  Asked only when this "
        "process may not open the socket itself, unless btl_pmeth_helper_always is set.  "
        "Empty: never ask", MCA_BASE_VAR_TYPE_STRING, &helper_socket, OPAL_INFO_LVL_3);
    helper_always = false;
    reg("helper_always", "Get every socket from the helper (btl_pmeth_helper), even "
        "where this process could open it itself (e.g. so that root's jobs too get the "
        "helper's locked, interface-bound receive filter)", MCA_BASE_VAR_TYPE_BOOL,
        &helper_always, OPAL_INFO_LVL_5);
    c->ethertype = PMETH_WIRE_ETHERTYPE;
    reg("ethertype", "EtherType of our frames (default 0x88B5, IEEE 802 local experimental 1).  "
        "All processes of a job must agree.  EtherTypes of other protocols (IPv4, ARP, IPv6, VLAN "
        "tags, RoCE v1, ...) are refused", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->ethertype,
        OPAL_INFO_LVL_6);
    c->tx_frames = 512;
    reg("tx_frames", "Send ring size per link, in frames (at least 8).  A frame stays ours until "
        "the peer acknowledges it (it is the retransmit copy), so this bounds the bytes in flight "
        "per link",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->tx_frames, OPAL_INFO_LVL_5);
    c->rx_frames = 1024;
    reg("rx_frames", "Receive ring size per link, in frames (at least 8): what the kernel can queue "
        "for this process between two progress calls before it drops (and we retransmit)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->rx_frames, OPAL_INFO_LVL_5);
    c->window = 256;
    reg("window", "Reliability window per peer and direction, in frames (a power of two, 64-4096): "
        "frames sent and not yet acknowledged.  The same in every process of the job (peers "
        "with another window are not connected over pmeth)", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->window, OPAL_INFO_LVL_5);
    c->rto_min_us = 2000;
    reg("rto_min_us", "Smallest retransmit timeout (microseconds); the timeout follows the "
        "measured round-trip time (srtt + 4 rttvar) and backs off exponentially (at least 1, "
        "at most btl_pmeth_rto_max_ms x 1000)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->rto_min_us, OPAL_INFO_LVL_5);
    c->rto_max_ms = 1000;
    reg("rto_max_ms", "Largest retransmit timeout (milliseconds, at least 1)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->rto_max_ms, OPAL_INFO_LVL_5);
    c->ack_delay_us = 100;
    reg("ack_delay_us", "A standalone acknowledgement goes out at most this many microseconds "
        "after the first unacknowledged frame when no data frame carried it back",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->ack_delay_us, OPAL_INFO_LVL_5);
    c->ack_every = 0;
    reg("ack_every", "Acknowledge at once after this many unacknowledged frames from one peer "
        "(fewer for a peer whose receive credits allow fewer in flight: a quarter of its "
        "grant, but not fewer than 8).  0 (default): frames of 64 KiB of payload together, at "
        "least 8 (45 at MTU 1500, 8 at 9000).  A standalone ack costs the receiver a system "
        "call and, on a stream, a frame the sender's host must take in: at MTU 1500 an ack "
        "every 8 frames cost a fifth of the bandwidth where each host has its own CPU",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->ack_every, OPAL_INFO_LVL_5);
    c->fast_retransmit = 3;
    reg("fast_retransmit", "Resend a frame at once when this many frames sent after it on the "
        "same link have been selectively acknowledged (0: timeouts only).  Per link, so a fast "
        "link overtaking a slow one in a stripe is not taken for loss", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->fast_retransmit, OPAL_INFO_LVL_5);
    c->resend_cap = 16;
    reg("resend_cap", "At most this many frames are retransmitted per peer per progress call, so "
        "a lossy path cannot start a retransmit storm", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->resend_cap, OPAL_INFO_LVL_5);
    c->stripe_min = 1024;
    reg("stripe_min", "Fragments of at least this many bytes are striped round-robin over every "
        "path to the peer; shorter ones take its first path, so small messages do not pay for "
        "the reordering", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->stripe_min, OPAL_INFO_LVL_4);
    c->array_frames = 16;
    reg("array_frames", "Frames one ob1 pipeline fragment may span (1-16): seed 001's buffer "
        "array.  A fragment of several frames costs ob1 one fragment to schedule and call back "
        "instead of one per frame, and goes to ob1 (one descriptor, a segment per ring frame, "
        "no copy) once its last frame is in.  1: every fragment is one frame, handed to ob1 "
        "the moment it is in order (the paper's peek).  Message starts: "
        "btl_pmeth_eager_frames.  Used for peers reached over btl_pmeth_array_min_paths paths or more",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->array_frames, OPAL_INFO_LVL_4);
    c->eager_frames = 0;
    reg("eager_frames", "Frames an eager message may span (1-16): ob1's eager limit is this many "
        "frames' payload, or btl_pmeth_eager_limit if that is lower (65,536 B unless set).  0 "
        "(default): as many as carry 32 KiB, at most 16 (4 frames, 35,800 B, at MTU 9000; 16 "
        "frames, 23,200 B, at MTU 1500, where 4 frames made every message of 8 KiB take the "
        "rendezvous round trip).  Never more than half of btl_pmeth_tx_frames.  A message of "
        "several frames is one buffer array (zero copy) and reaches ob1 when its last frame "
        "is in; longer messages take ob1's rendezvous, whose round trip waits for the receiving "
        "process.  Its first frame goes at once, as every message start; the others are bulk "
        "and go within the receiver's grant (btl_pmeth_credits), waiting for it in private "
        "memory (one copy) when it is used up.  1: one frame",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->eager_frames, OPAL_INFO_LVL_4);
    c->array_min_paths = 2;
    reg("array_min_paths", "Buffer arrays (btl_pmeth_array_frames) only for peers striped over "
        "at least this many paths; others get a frame per fragment.  Over one link a frame per "
        "fragment already fills the line and the receiver sees each frame at once; over a "
        "stripe, a frame per fragment leaves it short of the line (ob1's per-fragment work "
        "and pipeline depth), which arrays fill (README, 'Buffer arrays').  1: every peer",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->array_min_paths, OPAL_INFO_LVL_5);
    c->probe_timeout_ms = 3000;
    reg("probe_timeout_ms", "How long a peer's links are probed (a small frame on each, and a "
        "full-MTU one where the small one came back) before it is declared unreachable over "
        "pmeth.  Counts only time this process spends in MPI.  A live peer answers within "
        "milliseconds, from its keeper thread (btl_pmeth_keeper_us) while it is away from MPI; "
        "the timeout is what a rank waits, once, for peers that no link of ours reaches (at "
        "least 1)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->probe_timeout_ms, OPAL_INFO_LVL_5);
    c->probe_ahead = 32;
    reg("probe_ahead", "Open MPI adds a peer at a rank's first message to it, and the rank waits "
        "for its probes: up to btl_pmeth_probe_timeout_ms for a peer that no link of ours "
        "reaches (hosts on another switch).  MPI_Init and each first contact also start the "
        "probes of this many more peers of the job, decided in the background, so that ranks "
        "meeting many unreachable peers wait about one timeout in all, at once, rather than one "
        "for each in turn.  Costs an endpoint (1,360 B) and small probe frames for each.  0: "
        "probe only the peers asked for", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->probe_ahead,
        OPAL_INFO_LVL_6);
    c->probe_interval_ms = 20;
    reg("probe_interval_ms", "Probes that got no answer are resent after this many milliseconds",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->probe_interval_ms, OPAL_INFO_LVL_6);
    c->qdisc_bypass = false;
    reg("qdisc_bypass", "AF_PACKET: hand frames straight to the driver, skipping the interface's "
        "queueing discipline (faster, but traffic shaping and the kernel's delivery of our own "
        "frames to other processes on this host are lost)", MCA_BASE_VAR_TYPE_BOOL,
        &c->qdisc_bypass, OPAL_INFO_LVL_6);
    c->direct_max = PMETH_RING_DIRECT_MAX_DEFAULT;
    reg("direct_max", "AF_PACKET: a frame of up to this many bytes (Ethernet header included) "
        "that finds nothing of its link waiting to be sent (a message start, an ack: the "
        "latency-bound ones) is sent at once with send() on a second socket without rings, "
        "instead of through the send ring and a kick.  A frame sent from the ring travels by "
        "reference and is copied into a fresh page when received on the same host (veth), "
        "which made a small frame's half round trip ~0.4 us longer here; the copy send() "
        "makes costs little at these sizes.  The frame's bytes are kept as its retransmit "
        "copy (up to this many bytes per frame in flight).  The second socket needs "
        "CAP_NET_RAW; a job served by pmeth-helperd gets it from the helper (one from before "
        "this parameter gives none: then every frame takes the ring).  0: every frame "
        "through the ring", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->direct_max,
        OPAL_INFO_LVL_6);
    c->poll_budget = 64;
    reg("poll_budget", "Frames taken from one link's receive ring per progress call (at "
        "least 1)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->poll_budget, OPAL_INFO_LVL_6);
    c->early_completion = true;
    reg("early_completion", "Tell ob1 a fragment is done as soon as its frame is in the send ring "
        "(it stays there, for resends, until the peer acknowledges it) while the window has room; "
        "0: only once acknowledged (ob1's pipeline then waits a round trip every few fragments)",
        MCA_BASE_VAR_TYPE_BOOL, &c->early_completion, OPAL_INFO_LVL_6);
    c->yield_us = 50;
    reg("yield_us", "After this many microseconds without a frame, progress gives the CPU away "
        "once (sched_yield), and again after as many more: the kernel may be holding received "
        "frames in a softirq thread that waits for this CPU, which a busy-polling process "
        "otherwise delays by a whole scheduler time slice (milliseconds).  Costs one system "
        "call per interval while idle; 0: never", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->yield_us,
        OPAL_INFO_LVL_6);
    c->keeper_us = 2000;
    reg("keeper_us", "While the process is away from MPI (no progress call for this many "
        "microseconds), a thread resends the frames whose retransmit timers ran out and sends "
        "the acknowledgements owed, every this many microseconds: a send that completed before "
        "its acknowledgement (btl_pmeth_early_completion) is delivered even if the sender never "
        "calls MPI again, e.g. while it waits for its peer outside MPI.  It also answers "
        "peers' probes, so that a peer meeting this process while it computes does not call it "
        "unreachable (btl_pmeth_probe_timeout_ms), and serves peers' one-sided requests (puts, "
        "gets, atomics on this process's windows), so that their passive-target epochs complete "
        "while it computes.  The thread never calls ob1 or osc: messages for them wait for the "
        "process.  0: no thread (lost frames are then resent, probes answered and one-sided "
        "requests served only while the process calls MPI)", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->keeper_us, OPAL_INFO_LVL_5);
    c->send_burst = 32;
    reg("send_burst", "Frames of bulk data (ob1's pipeline fragments) one progress pass may post; "
        "more wait for the next pass.  A single acknowledgement can open room for a whole "
        "grant, and refilling it at once (packing, posting, the kernel's send path) keeps a "
        "process from its receive rings for a millisecond or more: its peer's frames wait "
        "unacknowledged, the peer's grant runs dry, and streams both ways stall each other in "
        "turn.  Message starts and control frames never wait and are not counted.  0: no limit",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->send_burst, OPAL_INFO_LVL_6);
    c->kick_batch = 16;
    reg("kick_batch", "Frames posted to a send ring before the kernel is told (one system call for "
        "the batch); latency-critical frames and the end of each progress call kick at once",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->kick_batch, OPAL_INFO_LVL_6);

    /* receive credits (pmeth_credit.h: seeds 001 and 003) */
    c->credit_policy = PMETH_CREDIT_DEMAND;
    {
        static const mca_base_var_enum_value_t policies[] = {
            {PMETH_CREDIT_OFF, "off"}, {PMETH_CREDIT_STATIC, "static"},
            {PMETH_CREDIT_DEMAND, "demand"}, {0, NULL}};
        mca_base_var_enum_t *e = NULL;
        (void) mca_base_var_enum_create("btl_pmeth_credits", policies, &e);
        (void) mca_base_component_var_register(
            &c->super.btl_version, "credits",
            "How a receiver shares the frames its rings (and the switch port ahead of it) can "
            "absorb among the peers sending to it.  \"demand\" (default): when several peers "
            "send at once (their frames arrived in the last lease period), each gets an equal "
            "part of btl_pmeth_credit_budget, granted in every acknowledgement and taken back "
            "when they go quiet, so together they cannot overflow a ring or a switch port "
            "(receiver-ready sending); a sender alone, however many idle peers the job has, "
            "gets the whole budget.  \"static\": the "
            "budget split evenly over every peer of the job, sending or not (HPVM's scheme, "
            "seed 003: for comparison).  \"off\": no limit but the reliability window.  Every "
            "process of a job should use the same setting",
            MCA_BASE_VAR_TYPE_INT, e, 0, 0, OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY,
            &c->credit_policy);
        if (e != NULL) {
            OBJ_RELEASE(e);
        }
    }
    c->credit_budget = 0;
    reg("credit_budget", "Frames a receiver lets all its peers together have in flight to it "
        "beyond its acknowledgements, all links together.  0 (default): per link, what the "
        "switch port in front of it can hold (btl_pmeth_credit_port_bytes in full-size "
        "frames), at most three quarters of the receive ring (btl_pmeth_rx_frames).  Only links "
        "that are up count: a link that goes down takes its share with it until it is back "
        "(a value set here shrinks in proportion).  At most 2^30",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->credit_budget, OPAL_INFO_LVL_4);
    c->credit_port_bytes = 262144;
    reg("credit_port_bytes", "Bytes the switch port in front of each of our links can buffer "
        "for us: senders together get no more in flight to this process, so several of them "
        "at once cannot overflow it (seed 001's lost frames above ~112 KB).  Typical "
        "commodity switches hold a few hundred KiB per port.  0: no switch to protect, the "
        "receive ring alone bounds the budget", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->credit_port_bytes, OPAL_INFO_LVL_4);
    c->credit_floor = 2;
    reg("credit_floor", "Frames of bulk data any peer may always have in flight to a receiver "
        "without a grant (before its first grant, or once its grant's lease ran out), so a "
        "sender is never stopped entirely.  Message starts (eager messages, rendezvous "
        "headers: one frame each) never wait for a grant; the fragments that follow them do.  "
        "Keep floor x senders within the switch port (at least 1)", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->credit_floor, OPAL_INFO_LVL_5);
    c->credit_lease_us = 5000;
    reg("credit_lease_us", "A grant lasts this many microseconds after the acknowledgement "
        "that carried it; a receiver counts a peer as sending for one to two such periods "
        "after its last frame.  Shorter: idle peers' shares return sooner; longer: a sender "
        "that pauses (a ping-pong's other half) keeps its grant (at least 1)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->credit_lease_us, OPAL_INFO_LVL_5);

    /* the senders' delay limit (pmeth_pace.h) */
    c->pace_target_us = 1000;
    reg("pace_target_us", "Queueing delay (microseconds) a sender lets stand on its path to a "
        "peer, measured as one-way delay: the peer reports the least delay of our frames "
        "(its kernel's arrival stamp minus our clock) and, once a round trip, a standing "
        "delay above the least ever seen by more than this shrinks the frames we may have in "
        "flight to it; they grow back, up to its grant, when none stands.  What stands in a "
        "switch port or a shaped link delays every other flow through it (a 256 KiB grant "
        "is 2 ms at 1 Gbit/s).  Lower keeps queues shorter but lets a link idle now and "
        "then (300: 4% less in streams both ways over one 1 Gbit/s link).  0: no delay "
        "limit (grants and the window alone)", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->pace_target_us, OPAL_INFO_LVL_5);

    /* path migration (btl_pmeth_apm.c, the apm/ library: seed 004) */
    c->apm_mode = 2;
    reg("apm", "Path migration between the links to a peer: 0 off, 1 on, 2 on when this process "
        "has two links or more (default).  A link that goes down, or on which frames go "
        "unanswered, leaves the peer's stripe; what was in flight on it is sent again on "
        "another; it rejoins once probes pass.  With one link, 1 still bounds how long traffic "
        "waits after that link goes down (btl_pmeth_apm_fail_timeout_ms); a last link that "
        "drops everything with its carrier up looks like a stopped peer and is waited for",
        MCA_BASE_VAR_TYPE_INT, &c->apm_mode, OPAL_INFO_LVL_4);
    c->apm_policy = 0;
    reg("apm_policy", "How the alternate path is chosen among the healthy ones: 0 round robin "
        "(the next after the last chosen), 1 ordered (the first in the peer's path order)",
        MCA_BASE_VAR_TYPE_INT, &c->apm_policy, OPAL_INFO_LVL_5);
    c->apm_detect_probes = 3;
    reg("apm_detect_probes", "A path is reported dead after this many retransmit-timer probes "
        "on its link went unanswered (and btl_pmeth_apm_detect_ms passed) while nothing sent on "
        "it was acknowledged: silent loss, or a link dead in one direction",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->apm_detect_probes, OPAL_INFO_LVL_5);
    c->apm_detect_ms = 50;
    reg("apm_detect_ms", "...and at least this many milliseconds passed since the first of "
        "those probes.  A link that goes down is known at once from the kernel (netlink)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->apm_detect_ms, OPAL_INFO_LVL_5);
    c->apm_probe_ms = 10;
    reg("apm_probe_ms", "Interval of the probes that load an alternate path and that test a "
        "repaired one (milliseconds); a load fails after 3 unanswered, a health probe after 3 "
        "intervals", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->apm_probe_ms, OPAL_INFO_LVL_5);
    c->apm_heal_probes = 3;
    reg("apm_heal_probes", "Probes in a row a repaired path must answer before it carries "
        "traffic again (fail-back to the home path included)", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->apm_heal_probes, OPAL_INFO_LVL_5);
    c->apm_holddown_ms = 50;
    reg("apm_holddown_ms", "A path that comes back is not probed for this many milliseconds; "
        "the hold-down doubles (up to 10 s) each time it fails again soon after healing, so a "
        "flapping link is kept out longer and longer", MCA_BASE_VAR_TYPE_UNSIGNED_INT,
        &c->apm_holddown_ms, OPAL_INFO_LVL_5);
    c->apm_fail_timeout_ms = 10000;
    reg("apm_fail_timeout_ms", "With no healthy path left to a peer, traffic waits this many "
        "milliseconds for one to heal; then the job ends with a message naming each path's "
        "state (instead of a hang)", MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->apm_fail_timeout_ms,
        OPAL_INFO_LVL_4);
    c->apm_migrate_ms = 0;
    reg("apm_migrate_ms", "Tests and load balancing: every this many milliseconds, every "
        "connection with an armed alternate migrates to it by hand (0: never)",
        MCA_BASE_VAR_TYPE_UNSIGNED_INT, &c->apm_migrate_ms, OPAL_INFO_LVL_9);

    c->rma_mode = 2;
    reg("rma", "Put, get and atomics for Open MPI's osc rdma, so that MPI windows "
        "(MPI_Win_create, _allocate) work over pmeth between hosts: each operation is a "
        "message the target process serves when it makes progress (is inside MPI), atomics "
        "done by its CPU.  0 off; 1 on; 2 (default) on when this job's osc selection leaves "
        "out osc pt2pt (Debian's openmpi-mca-params.conf does: osc = ^ucx,pt2pt), which "
        "carries windows over any BTL and moves bulk data and accumulates faster than these "
        "messages.  osc rdma needs one BTL that reaches every rank of a window: with "
        "several ranks on a host, pmeth reaches them over its host link (btl_pmeth_host_link)",
        MCA_BASE_VAR_TYPE_INT, &c->rma_mode, OPAL_INFO_LVL_4);
    c->host_link_mode = 2;
    reg("host_link", "Reach the job's other ranks on this host through the loopback "
        "interface (lo): our frames on it go to the processes here, filtered by the kernel "
        "as on Ethernet.  0 never (ranks here are then for a shared-memory BTL); 1 whenever "
        "the job has other ranks on this host; 2 (default) when it has and either the job "
        "names no shared-memory BTL (vader, smcuda, rsm), so pmeth must carry their "
        "messages, or pmeth offers one-sided operations (btl_pmeth_rma) in a job of several "
        "hosts: Open MPI 4.1's osc rdma makes a window only over one BTL that reaches every "
        "rank of it.  A shared-memory BTL beside pmeth keeps carrying ob1's messages (its "
        "exclusivity is higher).  The link's rings are btl_pmeth_tx_frames and _rx_frames "
        "frames, a quarter of that where a shared-memory BTL carries the messages, at the "
        "Ethernet links' MTU.  Ordinary users' jobs open it through the helper only where the "
        "site allows lo",
        MCA_BASE_VAR_TYPE_INT, &c->host_link_mode, OPAL_INFO_LVL_4);

    mca_btl_base_module_t *m = &mca_btl_pmeth;
    /* above tcp (LOW + 100): a job that names both uses pmeth for the peers it
     * reaches and tcp for the others; below vader and rsm (HIGH), which carry
     * on-host peers better.  DEFAULT is where Open MPI puts network BTLs */
    m->btl_exclusivity = MCA_BTL_EXCLUSIVITY_DEFAULT;
    /* clamped at init to btl_pmeth_eager_frames frames' payload (MTU + 14 - 64
     * bytes each): by default a message of up to 32 KiB or 16 frames is eager */
    m->btl_eager_limit = 65536;
    m->btl_rndv_eager_limit = 65536;
    m->btl_max_send_size = 65536;
    m->btl_rdma_pipeline_send_length = 8192;
    m->btl_rdma_pipeline_frag_size = 8192;
    m->btl_min_rdma_pipeline_size = SIZE_MAX;
    m->btl_latency = 10;
    m->btl_bandwidth = 1000;
    m->btl_flags = MCA_BTL_FLAGS_SEND;
    m->btl_registration_handle_size = 0;
    pmeth_pvar_register();
    return mca_btl_base_param_register(&c->super.btl_version, m);
}

static int pmeth_component_open(void)
{
    return xbtl_component_check("btl", "pmeth");
}

static int pmeth_component_close(void)
{
    pmeth_keeper_stop();        /* if finalize did not (it is a no-op then) */
    if (lock_constructed) {
        OBJ_DESTRUCT(&mca_btl_pmeth_component.lock);
        lock_constructed = false;
    }
    return OPAL_SUCCESS;
}

static bool name_in(char **list, const char *name)
{
    for (int i = 0; list != NULL && list[i] != NULL; i++) {
        if (strcmp(list[i], name) == 0) {
            return true;
        }
    }
    return false;
}

static uint32_t iface_mtu(const char *name)
{
    struct ifreq ifr;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    uint32_t mtu = 0;
    if (fd < 0) {
        return 0;
    }
    memset(&ifr, 0, sizeof(ifr));
    strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
    if (ioctl(fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0) {
        mtu = (uint32_t) ifr.ifr_mtu;
    }
    close(fd);
    return mtu;
}

/* The Ethernet interfaces this process may use, by the include/exclude lists.
 * Names asked for that do not exist (or are not usable Ethernet) are reported. */
static int choose_interfaces(pmeth_link_t *out, uint32_t *n)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    char **incl = NULL, **excl = NULL;
    struct ifaddrs *ifa = NULL;
    *n = 0;
    if (c->if_include != NULL && c->if_include[0] != '\0') {
        incl = opal_argv_split(c->if_include, ',');
    }
    if (c->if_exclude != NULL && c->if_exclude[0] != '\0') {
        excl = opal_argv_split(c->if_exclude, ',');
    }
    if (incl != NULL && excl != NULL) {
        xbtl_show_help_per_node("help-btl-pmeth.txt", "include-exclude", opal_process_info.nodename,
                                c->if_include, c->if_exclude);
        opal_argv_free(incl);
        opal_argv_free(excl);
        return OPAL_ERR_BAD_PARAM;
    }
    if (getifaddrs(&ifa) != 0) {
        opal_argv_free(incl);
        opal_argv_free(excl);
        return OPAL_ERROR;
    }
    /* one slot stays free for the host link (btl_pmeth_host_link) */
    const uint32_t room = PMETH_MAX_LINKS - (c->host_link_mode != 0);
    for (struct ifaddrs *a = ifa; a != NULL && *n < room; a = a->ifa_next) {
        if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_PACKET) {
            continue;
        }
        const struct sockaddr_ll *ll = (const struct sockaddr_ll *) a->ifa_addr;
        bool named = incl != NULL && name_in(incl, a->ifa_name);
        if ((incl != NULL && !named) || (excl != NULL && name_in(excl, a->ifa_name))) {
            continue;
        }
        const char *why = NULL;
        if (ll->sll_hatype != ARPHRD_ETHER || ll->sll_halen != 6) {
            why = "not an Ethernet interface";
        } else if (a->ifa_flags & IFF_LOOPBACK) {
            why = "loopback";
        } else if (!(a->ifa_flags & IFF_UP)) {
            why = "down";
        }
        if (why != NULL) {
            PMETH_VERBOSE(20, "interface %s skipped: %s", a->ifa_name, why);
            if (named) {
                opal_show_help("help-btl-pmeth.txt", "bad-interface", true,
                               opal_process_info.nodename, a->ifa_name, why);
            }
            continue;
        }
        pmeth_link_t *l = &out[*n];
        memset(l, 0, sizeof(*l));
        strncpy(l->ifname, a->ifa_name, IFNAMSIZ - 1);
        l->ifindex = ll->sll_ifindex;
        memcpy(l->mac, ll->sll_addr, 6);
        l->mtu = iface_mtu(a->ifa_name);
        if (l->mtu < PMETH_WIRE_HDR_LEN + 64) {
            continue;
        }
        (*n)++;
    }
    freeifaddrs(ifa);
    for (int i = 0; incl != NULL && incl[i] != NULL; i++) {
        bool found = false;
        for (uint32_t k = 0; k < *n; k++) {
            found |= strcmp(out[k].ifname, incl[i]) == 0;
        }
        if (!found) {
            PMETH_VERBOSE(1, "interface %s named in btl_pmeth_if_include is not usable here",
                          incl[i]);
        }
    }
    opal_argv_free(incl);
    opal_argv_free(excl);
    return OPAL_SUCCESS;
}

static uint32_t job_key_of(opal_jobid_t jobid)
{
    uint64_t h = 1469598103934665603ull;        /* FNV-1a over the job id */
    for (unsigned i = 0; i < sizeof(jobid); i++) {
        h = (h ^ ((jobid >> (8 * i)) & 0xff)) * 1099511628211ull;
    }
    uint32_t k = (uint32_t) (h ^ (h >> 32));
    return k != 0 ? k : 1;
}

static void close_links(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    for (uint32_t i = 0; i < c->nlinks; i++) {
        if (c->links[i].ring != NULL) {
            pmeth_ring_close(c->links[i].ring);
            c->links[i].ring = NULL;
        }
        if (link_helper_fd[i] >= 0) {
            close(link_helper_fd[i]);
            link_helper_fd[i] = -1;
        }
    }
    c->nlinks = 0;
}

static uint16_t ring_frames(unsigned n)
{
    /* as the ring layer rounds: a power of two, at least 8 (the helper takes
     * up to PMETH_HELPER_XDP_FRAMES_MAX and says so above that) */
    unsigned p = 8;
    while (p < n && p <= PMETH_HELPER_XDP_FRAMES_MAX) {
        p <<= 1;
    }
    return p > 65535 ? 65535 : (uint16_t) p;
}

/* Ask the helper for link INDEX's sockets, as RQ (with the interface, EtherType,
 * job key and id filled in) says; 0 with FDS, or -EPERM with HELPER_NOTE. */
static int ask_helper(pmeth_link_t *link, struct pmeth_helper_request *rq, int *fds,
                      uint16_t *flags, char *helper_note, size_t notelen)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    rq->ethertype = (uint16_t) c->ethertype;
    rq->job_key = c->job_key;
    rq->dest_id = c->my_id;
    memcpy(rq->ifname, link->ifname, strnlen(link->ifname, IFNAMSIZ - 1));
    helper_asked = true;
    int rc = pmeth_helper_ask(helper_socket, rq, HELPER_TIMEOUT_MS, fds, flags, helper_note,
                              notelen);
    uint16_t newer = rq->op == PMETH_HELPER_OP_OPEN_XDP ? PMETH_HELPER_XDP_IF_OFFERED
                                                        : PMETH_HELPER_PACKET_SEND_SOCKET;
    uint16_t *asked = rq->op == PMETH_HELPER_OP_OPEN_XDP ? &rq->xdp_flags : &rq->packet_flags;
    if (rc == -EBADMSG && (*asked & newer)) {
        /* a helper older than the flag (the send socket; the fallback's quiet
         * refusal) refuses it as malformed: ask as before */
        *asked &= (uint16_t) ~newer;
        rc = pmeth_helper_ask(helper_socket, rq, HELPER_TIMEOUT_MS, fds, flags, helper_note,
                              notelen);
    }
    if (rc == -EOPNOTSUPP) {
        snprintf(helper_no_xdp, sizeof(helper_no_xdp), "%s", helper_note);
    }
    return rc == 0 ? 0 : -EPERM;        /* neither way worked: the message names both */
}

/* Open link INDEX's ring in MODE; the error text is left in ERR.  Where this
 * process may not open its sockets (no CAP_NET_RAW), the site's helper is
 * asked for them: an AF_PACKET socket, an AF_XDP one, or both for the paired
 * rings of a jumbo MTU.  What it said is left in HELPER_NOTE (for the message
 * that names both ways out when neither worked). */
/* AF_XDP frames skip the interface's traffic control (pmeth_tc.h): with
 * btl_pmeth_io_mode auto a link with shaping or tc filters keeps AF_PACKET;
 * asked for by name, AF_XDP is used and the skipping said. */
static enum pmeth_io_mode xdp_or_not(const pmeth_link_t *link, bool auto_mode)
{
    pmeth_tc_state_t tc;
    char err[160] = "", why[128];
    if (pmeth_tc_read(link->ifindex, link->ifname, &tc, err, sizeof(err)) != 0) {
        PMETH_VERBOSE(5, "%s: its qdiscs could not be read (%s)", link->ifname, err);
        return PMETH_IO_XDP;
    }
    if (tc.nft_unread[0] != '\0') {
        /* only root may read them, and only root attaches XDP itself: an
         * ordinary user's job gets AF_XDP from a helper the site started with
         * --xdp, the site's word that its filters do not matter here */
        PMETH_VERBOSE(5, "%s: its netfilter chains could not be read (%s)", link->ifname,
                      tc.nft_unread);
    }
    /* above this MTU every frame is sent through the AF_PACKET ring (paired rings) */
    bool xdp_sends = link->mtu + 14 <= PMETH_XDP_FRAME_MAX;
    if (!pmeth_tc_skipped_by_xdp(&tc, xdp_sends, why, sizeof(why))) {
        return PMETH_IO_XDP;
    }
    if (auto_mode) {
        PMETH_VERBOSE(1, "%s: %s, which AF_XDP frames would skip; using AF_PACKET rings",
                      link->ifname, why);
        return PMETH_IO_PACKET;
    }
    PMETH_VERBOSE(1, "%s: %s, which its AF_XDP frames skip (btl_pmeth_io_mode xdp)",
                  link->ifname, why);
    return PMETH_IO_XDP;
}

static int open_ring(uint32_t index, pmeth_link_t *link, enum pmeth_io_mode mode, bool fallback,
                     char *err, size_t errlen, char *helper_note, size_t notelen)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    bool may_ask = helper_socket != NULL && helper_socket[0] != '\0';
    int rc;
    link_helper_fd[index] = -1;
    helper_asked = false;
    snprintf(helper_note, notelen, may_ask ? "the pmeth helper was not asked"
                                           : "no pmeth helper is set (btl_pmeth_helper is empty)");
    struct pmeth_ring_config cfg = {
        .ifname = link->ifname,
        .mode = mode,
        .ethertype = (uint16_t) c->ethertype,
        .job_key = c->job_key,
        .my_id = c->my_id,
        .frame_size = link->mtu + 14,
        .tx_frames = link->ring_tx ? link->ring_tx : c->tx_frames,
        .rx_frames = link->ring_rx ? link->ring_rx : c->rx_frames,
        .qdisc_bypass = c->qdisc_bypass,
        .direct_max = c->direct_max,
        .fd = -1,
    };
    if (!(may_ask && helper_always)) {
        rc = pmeth_ring_open(&cfg, &link->ring, err, errlen);
        if ((rc != -EPERM && rc != -EACCES) || !may_ask) {
            return rc;
        }
    } else {
        snprintf(err, errlen, "own socket not tried (btl_pmeth_helper_always)");
    }
    bool xdp = mode == PMETH_IO_XDP, paired = xdp && cfg.frame_size > PMETH_XDP_FRAME_MAX;
    if (xdp && helper_no_xdp[0] != '\0') {
        snprintf(helper_note, notelen, "%s" HELPER_SAID_BEFORE, helper_no_xdp);
        helper_asked = true;
        return -EPERM;
    }
    int fds[PMETH_HELPER_MAX_FDS];
    uint16_t flags = 0, xdp_flags = 0;
    int send_fd = -1;
    if (!xdp || paired) {
        /* and the socket for lone frames (btl_pmeth_direct_max) */
        struct pmeth_helper_request rq = {
            .op = PMETH_HELPER_OP_OPEN_PACKET,
            .packet_flags = c->direct_max > 0 ? PMETH_HELPER_PACKET_SEND_SOCKET : 0};
        if (ask_helper(link, &rq, fds, &flags, helper_note, notelen) != 0) {
            return -EPERM;
        }
        cfg.fd = fds[0];
        if (rq.packet_flags & PMETH_HELPER_PACKET_SEND_SOCKET) {
            send_fd = fds[1];
            cfg.direct_fd = &send_fd;   /* the ring layer's from here on */
        }
    }
    struct pmeth_xdp_handover handover;
    if (xdp) {
        /* the chunks the ring layer would choose itself (pmeth_ring_xdp.c) */
        bool small_chunks = !paired && cfg.frame_size + 256 <= 2048;
        struct pmeth_helper_request rq = {
            .op = PMETH_HELPER_OP_OPEN_XDP,
            .xdp_flags = (uint16_t) ((paired ? PMETH_HELPER_XDP_RECEIVE_ONLY
                                      : small_chunks ? PMETH_HELPER_XDP_CHUNK_2K : 0)
                                     | (fallback ? PMETH_HELPER_XDP_IF_OFFERED : 0)),
            .rx_frames = ring_frames(cfg.rx_frames),
            .tx_frames = paired ? 0 : ring_frames(cfg.tx_frames)};
        if (ask_helper(link, &rq, fds, &xdp_flags, helper_note, notelen) != 0) {
            if (cfg.fd >= 0) {
                close(cfg.fd);
            }
            if (send_fd >= 0) {
                close(send_fd);
            }
            return -EPERM;
        }
        handover = (struct pmeth_xdp_handover){
            .xsk_fd = fds[0], .umem_fd = fds[1], .link_fd = fds[2],
            .chunk = small_chunks ? 2048 : 4096,
            .generic_hook = (xdp_flags & PMETH_HELPER_XDP_GENERIC) != 0};
        cfg.xdp = &handover;    /* the ring layer closes these, now or with the ring */
    }
    rc = pmeth_ring_open(&cfg, &link->ring, err, errlen);
    if (rc != 0) {
        if (cfg.fd >= 0) {
            close(cfg.fd);
        }
        return rc;
    }
    link_helper_fd[index] = cfg.fd;
    if (cfg.fd >= 0) {
        PMETH_VERBOSE(10, "%s: AF_PACKET socket from the pmeth helper at %s (receive filter %s%s%s)",
                      link->ifname, helper_socket, flags & PMETH_HELPER_FILTER_LOCKED
                      ? "locked" : "not locked", flags & PMETH_HELPER_MARKED ? ", marked" : "",
                      send_fd >= 0 ? "; with a socket for lone frames" : "");
    }
    if (xdp) {
        PMETH_VERBOSE(10, "%s: AF_XDP socket from the pmeth helper at %s (%s)", link->ifname,
                      helper_socket, pmeth_ring_mode_name(link->ring));
    }
    return 0;
}

/* ---- the host link ------------------------------------------------------------
 * Frames a process sends on the loopback interface come back up the same
 * host's receive path, where every packet socket bound to lo with our EtherType
 * sees them and the kernel's filter (destination id) keeps each for the one it
 * is for: a link to the job's other ranks here, through the same rings, window
 * and probes as an Ethernet link.  pmeth needs it where nothing else reaches
 * them: a job with no shared-memory BTL, and osc rdma, which in Open MPI 4.1
 * makes a window only over one BTL that reaches every rank of it (with vader
 * or rsm beside pmeth, a window of two ranks per host across hosts had none). */

/* Does the job name a BTL that carries messages between ranks of a host? */
static bool shm_btl_in_job(void)
{
    return xbtl_component_allowed("opal", "btl", "vader")
           || xbtl_component_allowed("opal", "btl", "smcuda")
           || xbtl_component_named("btl", "rsm");
}

/* Our network stack's identity for the modex (pmeth_modex_t.netstack): the
 * boot id (one per running kernel, random at boot) and the inode of our
 * network namespace.  Zero where /proc does not say (peers then compare host
 * names). */
static void netstack_identity(uint8_t id[24])
{
    memset(id, 0, 24);
    char text[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f != NULL) {
        if (fgets(text, sizeof(text), f) == NULL) {
            text[0] = '\0';
        }
        fclose(f);
    }
    struct stat ns;
    unsigned n = 0;
    for (const char *p = text; *p != '\0' && n < 32; p++) {
        int v = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
        if (v >= 0) {
            id[n / 2] |= (uint8_t) (n % 2 ? v : v << 4);
            n++;
        }
    }
    if (n != 32 || stat("/proc/self/ns/net", &ns) != 0) {
        memset(id, 0, 24);
        return;
    }
    uint64_t ino = (uint64_t) ns.st_ino;
    memcpy(id + 16, &ino, sizeof(ino));
}

static bool find_loopback(pmeth_link_t *l)
{
    struct ifaddrs *ifa = NULL;
    bool found = false;
    if (getifaddrs(&ifa) != 0) {
        return false;
    }
    for (struct ifaddrs *a = ifa; a != NULL && !found; a = a->ifa_next) {
        if (a->ifa_addr != NULL && a->ifa_addr->sa_family == AF_PACKET
            && (a->ifa_flags & IFF_LOOPBACK) && (a->ifa_flags & IFF_UP)) {
            memset(l, 0, sizeof(*l));
            strncpy(l->ifname, a->ifa_name, IFNAMSIZ - 1);
            l->ifindex = ((const struct sockaddr_ll *) a->ifa_addr)->sll_ifindex;
            found = true;
        }
    }
    freeifaddrs(ifa);
    return found;
}

void pmeth_host_link_decide(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    if (c->host_link_decided) {
        return;
    }
    c->host_link_decided = true;
    if (!c->modex.host_link) {
        return;         /* btl_pmeth_host_link 0, or no other rank here */
    }
    const bool shm = shm_btl_in_job();
    const bool hosts = pmeth_job_spans_hosts();
    const char *why = c->host_link_mode == 1 ? "btl_pmeth_host_link 1"
                      : !shm ? "no shared-memory BTL in this job"
                      : c->rma && hosts ? "for osc rdma's windows (one BTL to every rank)"
                      : NULL;
    if (why == NULL) {
        PMETH_VERBOSE(10, "host link: not opened (a shared-memory BTL carries this host's "
                      "ranks%s)", c->rma ? "; one host" : ", and no one-sided operations");
        return;
    }
    pmeth_link_t *l = &c->links[c->nlinks];
    if (c->nlinks != c->nic_links || !find_loopback(l)) {
        PMETH_VERBOSE(1, "host link: no loopback interface that is up: ranks on this host are "
                      "not reached over pmeth");
        return;
    }
    l->on_host = true;
    l->mtu = c->modex.host_link_mtu;    /* as peers here take it (their modex of us) */
    if (shm) {
        /* only one-sided operations: a quarter of the rings */
        l->ring_tx = c->tx_frames / 4 > 64 ? c->tx_frames / 4 : 64;
        l->ring_rx = c->rx_frames / 4 > 64 ? c->rx_frames / 4 : 64;
    }
    char err[256], helper_note[HELPER_NOTE_LEN];
    err[0] = '\0';
    int rc = open_ring(c->nlinks, l, PMETH_IO_PACKET, false, err, sizeof(err), helper_note,
                       sizeof(helper_note));
    if (rc != 0) {
        PMETH_VERBOSE(1, "host link over %s not opened (%s%s%s): ranks on this host are not "
                      "reached over pmeth", l->ifname, err, helper_asked ? "; " : "",
                      helper_asked ? helper_note : "");
        memset(l, 0, sizeof(*l));
        return;
    }
    c->host_link = (int) c->nlinks;
    c->nlinks++;
    PMETH_VERBOSE(10, "link %d: %s, the host link (%s): MTU %u, rings of %u + %u frames",
                  c->host_link, l->ifname, why, l->mtu, l->ring_tx ? l->ring_tx : c->tx_frames,
                  l->ring_rx ? l->ring_rx : c->rx_frames);
}

/* A parameter out of range: the message naming it, once per node on stderr
 * (xbtl_show_help_per_node: mpirun 4.1 lost every copy of such a message
 * relayed with opal_show_help in about one job in five), and the same sentence
 * from every rank at btl_base_verbose 1. */
static void bad_param(const char *name, const char *value, const char *want)
{
    PMETH_VERBOSE(1, "parameter %s has the value %s; it must be %s", name, value, want);
    xbtl_show_help_per_node("help-btl-pmeth.txt", "bad-param", opal_process_info.nodename, name,
                            value, want);
}

/* An unsigned parameter below its smallest sensible value: say which, as for the others */
static bool param_at_least(const char *name, unsigned int value, unsigned int min)
{
    if (value >= min) {
        return true;
    }
    char v[16], want[32];
    snprintf(v, sizeof(v), "%u", value);
    snprintf(want, sizeof(want), "at least %u", min);
    bad_param(name, v, want);
    return false;
}

/* The frames the links in UP (a mask) let all peers together have in flight
 * to us beyond our acks: per link what its switch port holds, at most 3/4 of
 * its receive ring; btl_pmeth_credit_budget, when set, is for all links and
 * shrinks with them. */
static uint32_t credit_budget_over(const mca_btl_pmeth_component_t *c, uint32_t up)
{
    uint32_t budget = 0, live = 0;
    for (uint32_t i = 0; i < c->nic_links; i++) {
        if (!(up & 1u << i)) {
            continue;
        }
        live++;
        uint32_t ring = c->rx_frames / 4 * 3;
        uint32_t port = c->credit_port_bytes / (c->links[i].mtu + PMETH_WIRE_ETH_LEN);
        budget += c->credit_port_bytes > 0 && port < ring ? port : ring;
    }
    if (c->credit_budget != 0) {
        budget = (uint32_t) ((uint64_t) c->credit_budget * live
                             / (c->nic_links ? c->nic_links : 1));
    }
    return budget;
}

void pmeth_credit_follow_links(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);    /* any socket takes the ioctl */
    if (fd < 0) {
        return;
    }
    uint32_t up = 0;
    for (uint32_t i = 0; i < c->nic_links; i++) {   /* (the host link does not go down) */
        struct ifreq ifr;
        memset(&ifr, 0, sizeof(ifr));
        strncpy(ifr.ifr_name, c->links[i].ifname, IFNAMSIZ - 1);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_UP)
            && (ifr.ifr_flags & IFF_RUNNING)) {
            up |= 1u << i;
        }
    }
    close(fd);
    /* with no link up nothing arrives: the shares of the last live ones stay
     * for when the first comes back */
    if (up == c->links_up || up == 0) {
        return;
    }
    c->links_up = up;
    pmeth_credit_pool_set_budget(&c->credits, credit_budget_over(c, up));
    PMETH_VERBOSE(10, "receive credits: a budget of %u frames over the %u of %u links up",
                  c->credits.budget, (unsigned) __builtin_popcount(up), c->nic_links);
}

static mca_btl_base_module_t **pmeth_component_init(int *num_btls, bool enable_progress_threads,
                                                    bool enable_mpi_threads)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    mca_btl_base_module_t *m = &mca_btl_pmeth;
    pmeth_link_t found[PMETH_MAX_LINKS];
    uint32_t nfound = 0;
    char err[256], helper_note[HELPER_NOTE_LEN];
    int rc;

    *num_btls = 0;
    if (!xbtl_component_wanted("btl", "pmeth", c->site_default,
                               opal_btl_base_framework.framework_output)) {
        return NULL;    /* raw frames never appear on a site's network by surprise */
    }
    bool want_xdp = strcmp(c->io_mode, "xdp") == 0, auto_mode = strcmp(c->io_mode, "auto") == 0;
    if (!want_xdp && !auto_mode && strcmp(c->io_mode, "packet") != 0) {
        bad_param("btl_pmeth_io_mode", c->io_mode, "auto, packet or xdp");
        return NULL;
    }
    if (c->window < 64 || c->window > 4096 || (c->window & (c->window - 1)) != 0) {
        char v[32];
        snprintf(v, sizeof(v), "%u", c->window);
        bad_param("btl_pmeth_window", v, "a power of two from 64 to 4096");
        return NULL;
    }
    /* 0 in any of these left the job hanging (no window could be made, no frame was
     * ever taken from a ring) or every peer unreachable without a word */
    if (!param_at_least("btl_pmeth_rto_min_us", c->rto_min_us, 1)
        || !param_at_least("btl_pmeth_rto_max_ms", c->rto_max_ms, 1)
        || !param_at_least("btl_pmeth_poll_budget", c->poll_budget, 1)
        || !param_at_least("btl_pmeth_probe_timeout_ms", c->probe_timeout_ms, 1)
        /* a floor of 0 stopped a sender for good once its grant's lease ran out
         * with nothing in flight: no frame, so no ack and no new grant (with a
         * lease of 0 too, the first eager message of several frames hung) */
        || !param_at_least("btl_pmeth_credit_floor", c->credit_floor, 1)
        || !param_at_least("btl_pmeth_credit_lease_us", c->credit_lease_us, 1)
        /* the AF_PACKET ring refused fewer at open (an error naming the link, not
         * the parameter) while AF_XDP quietly took 8: one rule for both */
        || !param_at_least("btl_pmeth_tx_frames", c->tx_frames, 8)
        || !param_at_least("btl_pmeth_rx_frames", c->rx_frames, 8)) {
        return NULL;
    }
    if (c->credit_budget > PMETH_CREDIT_BUDGET_MAX) {
        char v[16], want[32];
        snprintf(v, sizeof(v), "%u", c->credit_budget);
        snprintf(want, sizeof(want), "at most %u", PMETH_CREDIT_BUDGET_MAX);
        bad_param("btl_pmeth_credit_budget", v, want);    /* twice it must fit 32 bits */
        return NULL;
    }
    if ((uint64_t) c->rto_min_us > (uint64_t) c->rto_max_ms * 1000) {
        char v[32];
        snprintf(v, sizeof(v), "%u", c->rto_min_us);
        bad_param("btl_pmeth_rto_min_us", v, "at most btl_pmeth_rto_max_ms x 1000");
        return NULL;
    }
    if (c->ethertype < 0x0600 || c->ethertype > 0xffff) {
        char v[32];
        snprintf(v, sizeof(v), "%#x", c->ethertype);
        bad_param("btl_pmeth_ethertype", v, "an EtherType from 0x0600 to 0xffff");
        return NULL;
    }
    const char *owner = pmeth_wire_ethertype_owner(c->ethertype);
    if (owner != NULL) {
        char v[32], want[96];
        snprintf(v, sizeof(v), "%#x", c->ethertype);
        snprintf(want, sizeof(want), "an EtherType no other protocol uses (%s is %s's)", v, owner);
        bad_param("btl_pmeth_ethertype", v, want);
        return NULL;
    }
    if (choose_interfaces(found, &nfound) != OPAL_SUCCESS) {
        return NULL;
    }
    if (nfound == 0) {
        /* every rank of a node finds the same interfaces: once per node (bad_param) */
        xbtl_show_help_per_node("help-btl-pmeth.txt", "no-interfaces", opal_process_info.nodename,
                                c->if_include ? c->if_include : "(all)",
                                c->if_exclude ? c->if_exclude : "(none)");
        return NULL;
    }
    c->my_id = OPAL_PROC_MY_NAME.vpid;
    c->job_key = job_key_of(OPAL_PROC_MY_NAME.jobid);
    c->nlinks = 0;
    c->host_link = -1;
    c->host_link_decided = false;
    helper_no_xdp[0] = '\0';
    for (uint32_t i = 0; i < nfound; i++) {
        pmeth_link_t *l = &c->links[c->nlinks];
        *l = found[i];
        enum pmeth_io_mode mode = (want_xdp || auto_mode) ? PMETH_IO_XDP : PMETH_IO_PACKET;
        if (mode == PMETH_IO_XDP) {
            mode = xdp_or_not(l, auto_mode);
        }
        err[0] = '\0';
        rc = open_ring(c->nlinks, l, mode, auto_mode, err, sizeof(err), helper_note,
                       sizeof(helper_note));
        if (rc != 0 && auto_mode && mode == PMETH_IO_XDP) {
            PMETH_VERBOSE(1, "%s: AF_XDP not usable (%s%s%s); using AF_PACKET rings", l->ifname,
                          err, helper_asked ? "; " : "", helper_asked ? helper_note : "");
            err[0] = '\0';
            rc = open_ring(c->nlinks, l, PMETH_IO_PACKET, false, err, sizeof(err), helper_note,
                           sizeof(helper_note));
        }
        if (rc != 0) {
            bool perm = rc == -EPERM || rc == -EACCES;
            if (perm) {
                opal_show_help("help-btl-pmeth.txt", "no-permission", true,
                               opal_process_info.nodename, l->ifname, err, helper_note);
            } else if (!auto_mode && mode == PMETH_IO_XDP && (rc == -EBUSY || rc == -EEXIST)) {
                /* asked for by name (auto fell back above): the queue or the hook taken */
                opal_show_help("help-btl-pmeth.txt", "xdp-taken", true,
                               opal_process_info.nodename, l->ifname, err);
            } else {
                opal_show_help("help-btl-pmeth.txt", "ring-failed", true,
                               opal_process_info.nodename, l->ifname, err);
            }
            close_links();
            return NULL;
        }
        PMETH_VERBOSE(10, "link %u: %s (ifindex %d, MTU %u, %s rings)", c->nlinks, l->ifname,
                      l->ifindex, l->mtu, pmeth_ring_mode_name(l->ring));
        c->nlinks++;
    }

    c->nic_links = c->nlinks;

    /* frames are sized by the smallest link's MTU: ob1's eager limit is
     * btl_pmeth_eager_frames of them, its pipeline unit btl_pmeth_array_frames */
    uint32_t lo = 0, hi = 0;
    for (uint32_t i = 1; i < c->nlinks; i++) {
        lo = c->links[i].mtu < c->links[lo].mtu ? i : lo;
        hi = c->links[i].mtu > c->links[hi].mtu ? i : hi;
    }
    uint32_t min_mtu = c->links[lo].mtu;
    if (c->links[hi].mtu != min_mtu && (c->if_include == NULL || c->if_include[0] == '\0')) {
        /* named links are the user's choice; found ones may include a stray
         * interface (a management port, a bridge) that would shrink every frame */
        opal_show_help("help-btl-pmeth.txt", "mixed-mtu", true, opal_process_info.nodename,
                       c->links[hi].ifname, c->links[hi].mtu, c->links[lo].ifname, min_mtu,
                       c->links[lo].ifname, c->links[lo].ifname);
    }
    c->frame_payload = min_mtu + PMETH_WIRE_ETH_LEN - PMETH_WIRE_HDR_LEN;
    const bool eager_auto = c->eager_frames == 0;
    if (eager_auto) {
        /* eager up to about tcp's sizes at any MTU: the rendezvous round trip
         * costs two one-way trips, each a wake-up of the peer's process */
        uint32_t n = (32768 + c->frame_payload - 1) / c->frame_payload;
        c->eager_frames = n > PMETH_WIRE_ARRAY_MAX ? PMETH_WIRE_ARRAY_MAX : n;
    }
    if (c->eager_frames < 1 || c->eager_frames > PMETH_WIRE_ARRAY_MAX) {
        PMETH_VERBOSE(1, "btl_pmeth_eager_frames %u is not within 1-%d: using %d", c->eager_frames,
                      PMETH_WIRE_ARRAY_MAX, c->eager_frames < 1 ? 1 : PMETH_WIRE_ARRAY_MAX);
        c->eager_frames = c->eager_frames < 1 ? 1 : PMETH_WIRE_ARRAY_MAX;
    }
    /* A message start is packed whole into its frames, taken from the send ring
     * before any is posted, and is never refused (ob1 4.1): a start of more
     * frames than the ring can hand out beside the frames in flight held the
     * ring until neither side could send even an ack (rings of 8 frames, starts
     * of 12: both ranks of mpi_p2p stopped).  At most half the ring. */
    uint32_t ring_half = c->tx_frames / 2 > 1 ? c->tx_frames / 2 : 1;
    if (c->eager_frames > ring_half) {
        PMETH_VERBOSE(eager_auto ? 10 : 1, "btl_pmeth_eager_frames %u is more than half the send "
                      "ring (btl_pmeth_tx_frames %u): using %u", c->eager_frames, c->tx_frames,
                      ring_half);
        c->eager_frames = ring_half;
    }
    size_t eager_max = (size_t) c->frame_payload * c->eager_frames;
    m->btl_eager_limit = m->btl_eager_limit > eager_max || m->btl_eager_limit == 0
                             ? eager_max : m->btl_eager_limit;
    if (c->array_frames < 1 || c->array_frames > PMETH_WIRE_ARRAY_MAX) {
        PMETH_VERBOSE(1, "btl_pmeth_array_frames %u is not within 1-%d: using %d", c->array_frames,
                      PMETH_WIRE_ARRAY_MAX, c->array_frames < 1 ? 1 : PMETH_WIRE_ARRAY_MAX);
        c->array_frames = c->array_frames < 1 ? 1 : PMETH_WIRE_ARRAY_MAX;
    }
    m->btl_max_send_size = (size_t) c->frame_payload * c->array_frames;
    m->btl_rndv_eager_limit = m->btl_rndv_eager_limit > c->frame_payload
                                  ? c->frame_payload : m->btl_rndv_eager_limit;
    m->btl_rdma_pipeline_send_length = m->btl_eager_limit;
    m->btl_rdma_pipeline_frag_size = c->frame_payload;
    m->btl_min_rdma_pipeline_size = SIZE_MAX;  /* ob1's RPUT pipeline never starts */
    m->btl_flags = MCA_BTL_FLAGS_SEND;
    /* put, get and atomics for osc rdma, sized to the eager limit: decided at the
     * first add_procs (pmeth_rma_decide), when the job's osc selection is known */
    c->rma_decided = false;
    m->btl_bandwidth = 1000 * c->nic_links;

    pmeth_window_config_init(&c->wcfg, c->window);
    c->wcfg.rto_min_ns = (uint64_t) c->rto_min_us * 1000;
    c->wcfg.rto_max_ns = (uint64_t) c->rto_max_ms * 1000000;
    c->wcfg.ack_delay_ns = (uint64_t) c->ack_delay_us * 1000;
    /* like TCP's ack per coalesced 64 KiB: the ack's cost is per ack, its worth per byte */
    c->wcfg.ack_every = c->ack_every != 0 ? c->ack_every
                        : c->frame_payload >= 65536 / PMETH_ACK_EVERY_MIN
                            ? PMETH_ACK_EVERY_MIN : 65536 / c->frame_payload;
    PMETH_VERBOSE(10, "frames of %u B of payload: eager messages up to %u frames (%zu B), acks at "
                  "once after %u frames", c->frame_payload, c->eager_frames,
                  m->btl_eager_limit, c->wcfg.ack_every);
    c->wcfg.fast_retransmit = c->fast_retransmit;

    c->links_up = (1u << c->nlinks) - 1;
    uint32_t budget = credit_budget_over(c, c->links_up);
    /* the static policy's split: HPVM's, over every peer of the job */
    uint32_t job_peers = pmeth_job_size() > 1 ? pmeth_job_size() - 1 : 1;
    c->credit_lease_ns = (uint64_t) c->credit_lease_us * 1000;
    pmeth_pace_config_init(&c->pace);
    c->pace.target_ns = (uint64_t) c->pace_target_us * 1000;
    c->pace.min_frames = c->credit_floor > 1 ? c->credit_floor : 2;
    if (c->credit_policy < PMETH_CREDIT_OFF || c->credit_policy > PMETH_CREDIT_DEMAND) {
        c->credit_policy = PMETH_CREDIT_DEMAND;
    }
    pmeth_credit_pool_init(&c->credits, (pmeth_credit_policy_t) c->credit_policy, budget,
                           c->credit_floor, c->window, job_peers, c->credit_lease_ns,
                           pmeth_now_ns());

    memset(&c->modex, 0, sizeof(c->modex));
    c->modex.version = PMETH_MODEX_VERSION;
    c->modex.nlinks = c->nlinks;
    c->modex.job_key = c->job_key;
    c->modex.window = c->window;
    /* the host link's MTU is the Ethernet links' (frames are sized by the smallest) */
    c->modex.host_link = c->host_link_mode != 0 && opal_process_info.num_local_peers > 0;
    c->modex.host_link_mtu = min_mtu;
    strncpy(c->modex.host, opal_process_info.nodename ? opal_process_info.nodename : "?",
            sizeof(c->modex.host) - 1);
    netstack_identity(c->modex.netstack);
    for (uint32_t i = 0; i < c->nlinks; i++) {
        memcpy(c->modex.links[i].ifname, c->links[i].ifname, IFNAMSIZ);
        memcpy(c->modex.links[i].mac, c->links[i].mac, 6);
        c->modex.links[i].mtu = c->links[i].mtu;
        c->modex.links[i].small_rx_max = (uint16_t) pmeth_ring_small_rx_max(c->links[i].ring);
    }
    OPAL_MODEX_SEND(rc, OPAL_PMIX_GLOBAL, &c->super.btl_version, &c->modex, sizeof(c->modex));
    if (rc != OPAL_SUCCESS) {
        close_links();
        return NULL;
    }
    if (pmeth_apm_init() != OPAL_SUCCESS) {
        close_links();
        return NULL;
    }
    OBJ_CONSTRUCT(&c->lock, opal_recursive_mutex_t);
    lock_constructed = true;

    mca_btl_base_module_t **modules = malloc(sizeof(*modules));
    if (modules == NULL) {
        pmeth_apm_fini();
        pmeth_apm_destroy();
        close_links();
        return NULL;
    }
    modules[0] = m;
    *num_btls = 1;
    pmeth_keeper_start();
    return modules;
}

void pmeth_component_release(void)
{
    close_links();
}

static int pmeth_component_progress(void)
{
    mca_btl_pmeth_component_t *c = &mca_btl_pmeth_component;
    int count = 0;
    if (c->nlinks == 0) {
        return 0;
    }
    if (c->keeper_on) {
        /* only "it moved" matters to the keeper: a plain store, no locked add */
        atomic_store_explicit(&c->progress_calls,
                              atomic_load_explicit(&c->progress_calls, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    PMETH_LOCK();
    if (c->in_progress) {       /* a callback called progress: do not deliver out of order */
        PMETH_UNLOCK();
        return 0;
    }
    c->in_progress = true;
    c->burst_used = 0;
    while (OPAL_UNLIKELY(c->nlazy > 0) && !c->probing) {
        /* senders met while add_procs probed: added before their kept frames are taken */
        pmeth_add_peer_lazily(c->lazy_ids[--c->nlazy]);
    }
    for (uint32_t i = 0; i < c->nlinks; i++) {
        count += pmeth_poll_link(&c->links[i], c->poll_budget);
    }
    pmeth_acks_flush();
    uint64_t now = 0;
    if (c->nactive > 0) {
        now = pmeth_now_ns();
        /* service may drop an endpoint from the list: walk it backwards */
        for (uint32_t i = c->nactive; i-- > 0;) {
            count += pmeth_endpoint_service(c->active[i], now);
        }
    }
    if (count > 0) {
        c->idle_since_ns = 0;
    } else if (c->yield_us > 0) {
        /* Nothing came for a while: give the CPU away for a moment.  The kernel
         * may be holding our frames in a softirq thread that waits for this very
         * CPU (a busy-polling process delays it by a whole time slice, ~12 ms
         * with two runnable tasks); yielding lets it run.  Nothing else waiting:
         * the call returns at once. */
        now = now ? now : pmeth_now_ns();
        if (c->idle_since_ns == 0) {
            c->idle_since_ns = now;
        } else if (now - c->idle_since_ns >= c->yield_us * 1000ull) {
            sched_yield();
            c->idle_since_ns = now;
            c->yields++;
        }
    }
    if (OPAL_UNLIKELY(pmeth_apm_busy())) {
        count += pmeth_apm_progress(now ? now : pmeth_now_ns());
    }
    count += pmeth_frag_drain_done();
    if (OPAL_UNLIKELY(c->rma_held > 0)) {
        count += pmeth_rma_progress();
    }
    count += pmeth_probe_progress();
    while (c->nlazy > 0 && !c->probing) {
        pmeth_add_peer_lazily(c->lazy_ids[--c->nlazy]);
    }
    pmeth_kick_all(true);
    c->in_progress = false;
    PMETH_UNLOCK();
    return count;
}
