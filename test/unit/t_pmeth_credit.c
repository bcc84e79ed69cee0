/* pmeth's receive credits (pmeth_credit.h): the pool's shares by policy and as
 * the budget follows the receiver's live links, the wire byte, the sender's
 * lease, and senders and a receiver joined by a simulated link, where what is
 * in flight must stay within the budget and no sender may starve. */
#include <stdlib.h>
#include <string.h>

#include "pmeth_credit.h"
#include "tap.h"

#define US 1000ull
#define MS 1000000ull

static void test_policies(void)
{
    pmeth_credit_pool_t p;
    pmeth_credit_pool_init(&p, PMETH_CREDIT_OFF, 768, 8, 256, 15, 5 * MS, 0);
    CHECK(pmeth_credit_share(&p) == PMETH_CREDIT_UNLIMITED
              && pmeth_credit_encode(&p, pmeth_credit_share(&p)) == PMETH_CREDIT_WIRE_UNLIMITED,
          "OFF: no limit, sent as 255");

    pmeth_credit_pool_init(&p, PMETH_CREDIT_STATIC, 768, 8, 256, 15, 5 * MS, 0);
    CHECK(pmeth_credit_share(&p) == 51, "STATIC: 768 frames over 15 peers = 51 each (%u)",
          pmeth_credit_share(&p));
    pmeth_credit_pool_init(&p, PMETH_CREDIT_STATIC, 768, 8, 256, 999, 5 * MS, 0);
    CHECK(pmeth_credit_share(&p) == 8, "STATIC: never below the floor");
    pmeth_credit_pool_init(&p, PMETH_CREDIT_STATIC, 768, 8, 256, 1, 5 * MS, 0);
    CHECK(pmeth_credit_share(&p) == 256 && pmeth_credit_encode(&p, 256) == 255,
          "no grant beyond the reliability window (sent as 255)");

    pmeth_credit_peer_t a = {0}, b = {0}, c = {0};
    pmeth_credit_pool_init(&p, PMETH_CREDIT_DEMAND, 300, 8, 1024, 15, 5 * MS, 1000);
    CHECK(pmeth_credit_share(&p) == 300, "DEMAND, nobody sending yet: the whole budget");
    pmeth_credit_arrival(&p, &a, 2000);
    pmeth_credit_arrival(&p, &a, 3000);
    CHECK(pmeth_credit_share(&p) == 300 && p.active_now == 1,
          "one sender, many frames: counted once, the whole budget");
    pmeth_credit_arrival(&p, &b, 4000);
    CHECK(pmeth_credit_share(&p) == 150, "a second sender: half each");
    pmeth_credit_arrival(&p, &c, 5000);
    CHECK(pmeth_credit_share(&p) == 100, "a third: a third each");
    /* next epoch: only a keeps sending; b and c still may hold leases */
    pmeth_credit_arrival(&p, &a, 1000 + 5 * MS + 10);
    CHECK(pmeth_credit_share(&p) == 100,
          "an epoch later the quiet ones still count (their leases may run)");
    pmeth_credit_arrival(&p, &a, 1000 + 10 * MS + 10);
    CHECK(pmeth_credit_share(&p) == 600,
          "two epochs later they are taken back: the sender left, alone for a whole epoch, "
          "gets twice the budget (%u)", pmeth_credit_share(&p));
    pmeth_credit_arrival(&p, &b, 1000 + 10 * MS + 20);
    CHECK(pmeth_credit_share(&p) == 150,
          "... and when a second one comes, half the budget each, not half of twice it");
    pmeth_credit_arrival(&p, &a, 1000 + 15 * MS + 10);
    CHECK(pmeth_credit_share(&p) == 150,
          "an epoch later, a alone again: b may still hold a lease, so no more than half");
    uint64_t moves = p.share_changes;
    pmeth_credit_arrival(&p, &b, 1000 + 30 * MS + 1);
    CHECK(pmeth_credit_share(&p) == 300 && p.active_now == 1 && p.active_before == 0
              && p.share_changes == moves + 1,
          "after several quiet epochs b's frame clears the old counts: b alone, the whole budget "
          "(not twice: who else starts now is not known yet)");
    pmeth_credit_arrival(&p, &c, 1000 + 30 * MS + 2);
    CHECK(pmeth_credit_share(&p) == 150 && p.share_changes == moves + 2,
          "c comes back too: half each, one credit move counted");
}

/* A link of the receiver down and back: the budget of its live links, the
 * shares following at once, never below the floor. */
static void test_budget_follows_links(void)
{
    pmeth_credit_pool_t p;
    pmeth_credit_peer_t a = {0}, b = {0};
    pmeth_credit_pool_init(&p, PMETH_CREDIT_DEMAND, 2 * 192, 8, 1024, 15, 5 * MS, 0);
    pmeth_credit_arrival(&p, &a, 1000);
    pmeth_credit_arrival(&p, &b, 2000);
    CHECK(pmeth_credit_share(&p) == 192, "two links, two senders: half of 384 each");
    uint64_t moves = p.share_changes;
    pmeth_credit_pool_set_budget(&p, 192);
    CHECK(pmeth_credit_share(&p) == 96 && p.budget == 192 && p.share_changes == moves + 1,
          "one link down: its 192 frames left, 96 each, one credit move (%u)",
          pmeth_credit_share(&p));
    pmeth_credit_pool_set_budget(&p, 2 * 192);
    CHECK(pmeth_credit_share(&p) == 192, "the link back: 192 each again");
    pmeth_credit_pool_set_budget(&p, 3);
    CHECK(p.budget == 8 && pmeth_credit_share(&p) == 8, "a budget below the floor is raised to it");
    pmeth_credit_pool_init(&p, PMETH_CREDIT_STATIC, 768, 8, 256, 3, 5 * MS, 0);
    pmeth_credit_pool_set_budget(&p, 384);
    CHECK(pmeth_credit_share(&p) == 128, "STATIC: the new budget over the job's peers (%u)",
          pmeth_credit_share(&p));
    pmeth_credit_pool_init(&p, PMETH_CREDIT_OFF, 768, 8, 256, 3, 5 * MS, 0);
    pmeth_credit_pool_set_budget(&p, 384);
    CHECK(pmeth_credit_share(&p) == PMETH_CREDIT_UNLIMITED, "OFF: still no limit");
}

static void test_wire_byte(void)
{
    pmeth_credit_pool_t p;
    pmeth_credit_pool_init(&p, PMETH_CREDIT_DEMAND, 4000, 8, 256, 1, 5 * MS, 0);
    CHECK(pmeth_credit_encode(&p, 100) == 100 && pmeth_credit_decode(100, 256) == 100,
          "window 256: one frame per step");
    CHECK(pmeth_credit_encode(&p, 3) == 8, "a grant below the floor is sent as the floor");
    CHECK(pmeth_credit_encode(&p, 255) == 254 && pmeth_credit_encode(&p, 256) == 255,
          "below the window capped at 254; the window and more: 255 (no limit but the window)");
    pmeth_credit_pool_init(&p, PMETH_CREDIT_DEMAND, 4000, 8, 4096, 1, 5 * MS, 0);
    CHECK(p.unit == 16 && pmeth_credit_encode(&p, 1000) == 62
              && pmeth_credit_decode(62, 4096) == 992,
          "window 4096: 16 frames a step, rounded down (1000 -> 992)");
    CHECK(pmeth_credit_encode(&p, 5) == 1 && pmeth_credit_decode(1, 4096) == 16,
          "the floor rounds up to a whole step");
    CHECK(pmeth_credit_decode(255, 4096) == PMETH_CREDIT_UNLIMITED, "255 decodes as no limit");
}

static void test_lease(void)
{
    pmeth_credit_grant_t g;
    memset(&g, 0, sizeof(g));
    CHECK(pmeth_credit_allowed(&g, 8, 0) == 8, "nothing heard yet: the floor");
    pmeth_credit_grant_update(&g, true, 100, 50, 0x100u, 256, 1 * MS, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 2 * MS) == 100, "a grant of 100 while its lease runs");
    CHECK(pmeth_credit_allowed(&g, 8, 6 * MS + 1) == 8, "after the lease: the floor again");
    pmeth_credit_grant_update(&g, true, 30, 60, 0x100u, 256, 7 * MS, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 7 * MS) == 30, "a newer, smaller grant replaces it");
    pmeth_credit_grant_update(&g, true, 200, 55, 0x100u, 256, 7 * MS + 1, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 7 * MS + 2) == 30 && g.ack == 60,
          "a grant that came with an older ack (overtaken on another link) is ignored");
    pmeth_credit_grant_update(&g, true, 40, 60, 0x100u, 256, 7 * MS + 3, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 7 * MS + 4) == 40, "same ack, later frame: taken");
    memset(&g, 0, sizeof(g));
    pmeth_credit_grant_update(&g, true, 90, 0xfffffff0u, 0x100u, 256, 1, 5 * MS);
    pmeth_credit_grant_update(&g, true, 70, 0x10u, 0x100u, 256, 2, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 3) == 70, "acks compare in serial arithmetic (wrap)");
    pmeth_credit_grant_update(&g, false, 0, 0x20u, 0x100u, 256, 4, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 5) == PMETH_CREDIT_UNLIMITED,
          "a receiver that sends no grants limits nothing");
    pmeth_credit_grant_update(&g, true, 12, 0x21u, 0x100u, 256, 6, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 7) == 12, "... until it does");
    pmeth_credit_grant_update(&g, true, 255, 0x22u, 0x100u, 256, 8, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 9) == PMETH_CREDIT_UNLIMITED
              && pmeth_credit_allowed(&g, 8, 8 + 5 * MS) == 8,
          "255: no limit but the window, and a lease like any grant");
    memset(&g, 0, sizeof(g));
    pmeth_credit_grant_update(&g, true, 50, 0x40u, 0x100u, 256, 1, 5 * MS);
    pmeth_credit_grant_update(&g, true, 250, 0x100u + (1u << 30), 0x100u, 256, 2, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 3) == 50 && g.ack == 0x40u,
          "a grant with an ack of frames never sent (forged, another job's) is ignored");
    pmeth_credit_grant_update(&g, true, 20, 0x41u, 0x100u, 256, 4, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 5) == 20, "... and the real grants after it still count");
    pmeth_credit_grant_update(&g, true, 30, 0x100u, 0x100u, 256, 6, 5 * MS);
    CHECK(pmeth_credit_allowed(&g, 8, 7) == 30, "an ack of everything sent is taken");
}

/*
 * NS senders, each with endless frames for one receiver.  Each tick of 10 us
 * every sender sends what its grant allows; the link delivers at most
 * RATE frames a tick to the receiver, which acks each frame with its share at
 * once.  SENDING of them send; the others send one frame and then stop (idle,
 * "connected but quiet").  Returns the most frames ever in flight at once
 * (sent, not delivered) after the first epoch, and each active sender's count.
 */
#define NS 15
static uint32_t simulate(pmeth_credit_policy_t pol, int sending, uint32_t budget, uint64_t done[NS])
{
    pmeth_credit_pool_t pool;
    pmeth_credit_peer_t peer[NS];
    pmeth_credit_grant_t grant[NS];
    uint32_t sent[NS], acked[NS];
    const uint32_t floor = 8, rate = 40, window = 256;
    const uint64_t epoch = 500 * US, tick = 10 * US;
    memset(peer, 0, sizeof(peer));
    memset(grant, 0, sizeof(grant));
    memset(sent, 0, sizeof(sent));
    memset(acked, 0, sizeof(acked));
    pmeth_credit_pool_init(&pool, pol, budget, floor, window, NS, epoch, 0);
    uint32_t worst = 0;
    int rr = 0;
    for (uint64_t now = tick; now < 20 * MS; now += tick) {
        for (int s = 0; s < NS; s++) {
            uint32_t allow = pmeth_credit_allowed(&grant[s], floor, now);
            if (allow > window) {
                allow = window;
            }
            bool wants = s < sending || sent[s] == 0;
            while (wants && sent[s] - acked[s] < allow) {
                sent[s]++;
                if (s >= sending) {
                    break;
                }
            }
        }
        uint32_t inflight = 0;
        for (int s = 0; s < NS; s++) {
            inflight += sent[s] - acked[s];
        }
        if (now > 2 * epoch && inflight > worst) {
            worst = inflight;
        }
        /* the receiver takes RATE frames, round-robin over the senders */
        for (uint32_t k = 0, idle = 0; k < rate && idle < NS; rr = (rr + 1) % NS) {
            if (sent[rr] == acked[rr]) {
                idle++;
                continue;
            }
            idle = 0;
            acked[rr]++;
            k++;
            pmeth_credit_arrival(&pool, &peer[rr], now);
            uint8_t byte = pmeth_credit_encode(&pool, pmeth_credit_share(&pool));
            pmeth_credit_grant_update(&grant[rr], pol != PMETH_CREDIT_OFF, byte, acked[rr],
                                      sent[rr], window, now, epoch);
        }
    }
    for (int s = 0; s < NS; s++) {
        done[s] = acked[s];
    }
    return worst;
}

static void test_simulated(void)
{
    uint64_t done[NS];
    uint32_t worst = simulate(PMETH_CREDIT_OFF, NS, 120, done);
    CHECK(worst > 1000, "OFF, 15 senders: a window each in flight (%u frames)", worst);
    worst = simulate(PMETH_CREDIT_DEMAND, NS, 120, done);
    uint64_t least = UINT64_MAX, most = 0;
    for (int s = 0; s < NS; s++) {
        least = done[s] < least ? done[s] : least;
        most = done[s] > most ? done[s] : most;
    }
    CHECK(worst <= 120 + NS * 8, "DEMAND, 15 senders: in flight within budget + floors (%u <= %u)",
          worst, 120 + NS * 8);
    CHECK(least > 0 && most - least <= most / 10,
          "... and none starves: each delivered %llu..%llu frames",
          (unsigned long long) least, (unsigned long long) most);
    worst = simulate(PMETH_CREDIT_DEMAND, 1, 120, done);
    uint64_t alone = done[0];
    CHECK(worst <= 2 * 120 + NS,
          "DEMAND, 1 sender and 14 quiet: within twice the budget (alone for an epoch) (%u)",
          worst);
    simulate(PMETH_CREDIT_STATIC, 1, 120, done);
    uint64_t static_alone = done[0];
    /* the link takes 40 frames a 10 us tick and the grant comes back with each:
     * 8 frames in flight (120 / 15) cannot keep it busy, 120 can */
    CHECK(alone > 3 * static_alone,
          "1 sender among 15 peers: demand delivers %llu frames, the static split %llu",
          (unsigned long long) alone, (unsigned long long) static_alone);
}

int main(void)
{
    test_policies();
    test_budget_follows_links();
    test_wire_byte();
    test_lease();
    test_simulated();
    return tap_done();
}
