/*
 * pmeth_tc: an interface's qdiscs as rtnetlink reports them, and which of them
 * AF_XDP frames would skip.  Needs root (a network namespace of its own, with a
 * veth pair set up by ip(8) and tc(8)); skipped otherwise.
 */
#define _GNU_SOURCE
#include <net/if.h>
#include <string.h>

#include "pmeth_tc.h"
#include "tap.h"
#include "tap_netns.h"

static pmeth_tc_state_t read_tc(const char *ifname, int *rc)
{
    pmeth_tc_state_t s;
    char err[160] = "";
    *rc = pmeth_tc_read((int) if_nametoindex(ifname), &s, err, sizeof(err));
    if (*rc != 0) {
        printf("# pmeth_tc_read(%s): %s\n", ifname, err);
    }
    return s;
}

int main(void)
{
    char why[160];
    const char *skip = tap_netns_veth("pmtc0", "pmtc1", "command -v tc >/dev/null 2>&1", why,
                                      sizeof(why));
    if (skip != NULL) {
        printf("ok %d - qdiscs of a veth pair # SKIP %s\n", ++tap_n, skip);
        return tap_done();
    }
    int rc;
    char phrase[128];
    pmeth_tc_state_t s = read_tc("pmtc0", &rc);
    CHECK(rc == 0 && strcmp(s.root_kind, "noqueue") == 0 && s.root_plain && s.ingress_kind[0] == '\0',
          "a fresh veth: root qdisc noqueue, which only queues, no ingress qdisc (root '%s')", s.root_kind);
    CHECK(!pmeth_tc_skipped_by_xdp(&s, true, phrase, sizeof(phrase)),
          "AF_XDP skips nothing there, sending or receiving");

    CHECK(system("tc qdisc replace dev pmtc0 root tbf rate 1gbit burst 64kb latency 10ms") == 0,
          "tc: tbf set as pmtc0's root qdisc");
    s = read_tc("pmtc0", &rc);
    CHECK(rc == 0 && strcmp(s.root_kind, "tbf") == 0 && !s.root_plain,
          "rtnetlink reports it: root '%s', one that shapes", s.root_kind);
    bool send_skip = pmeth_tc_skipped_by_xdp(&s, true, phrase, sizeof(phrase));
    CHECK(send_skip && strstr(phrase, "tbf") != NULL,
          "frames sent through AF_XDP would skip it: \"%s\"", phrase);
    CHECK(!pmeth_tc_skipped_by_xdp(&s, false, phrase, sizeof(phrase)),
          "frames only received through AF_XDP (jumbo frames: sent through AF_PACKET) skip nothing");
    s = read_tc("pmtc1", &rc);
    CHECK(rc == 0 && s.root_plain && s.ingress_kind[0] == '\0',
          "the other end's qdiscs are its own (root '%s')", s.root_kind);

    CHECK(system("tc qdisc add dev pmtc1 clsact") == 0, "tc: a clsact qdisc on pmtc1");
    s = read_tc("pmtc1", &rc);
    CHECK(rc == 0 && strcmp(s.ingress_kind, "clsact") == 0, "rtnetlink reports it ('%s')",
          s.ingress_kind);
    CHECK(pmeth_tc_skipped_by_xdp(&s, false, phrase, sizeof(phrase)) && strstr(phrase, "clsact"),
          "frames received through AF_XDP would skip its filters: \"%s\"", phrase);

    CHECK(system("tc qdisc replace dev pmtc0 root pfifo limit 100") == 0
              && (s = read_tc("pmtc0", &rc), rc == 0) && strcmp(s.root_kind, "pfifo") == 0
              && s.root_plain && !pmeth_tc_skipped_by_xdp(&s, true, phrase, sizeof(phrase)),
          "pfifo as root: a plain queue, skipped by nothing ('%s')", s.root_kind);
    s = read_tc("lo", &rc);
    CHECK(rc == 0 && s.root_plain && s.ingress_kind[0] == '\0',
          "lo: nothing set (root '%s')", s.root_kind);
    pmeth_tc_state_t none;
    char err[160] = "";
    rc = pmeth_tc_read(1 << 30, &none, err, sizeof(err));
    CHECK(rc == 0 && none.root_kind[0] == '\0' && none.root_plain,
          "an interface index nobody has: no qdisc, nothing skipped (rc %d %s)", rc, err);
    return tap_done();
}
