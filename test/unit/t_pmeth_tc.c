/*
 * pmeth_tc: an interface's qdiscs as rtnetlink reports them, and which of them
 * AF_XDP frames would skip.  Needs root (a network namespace of its own, with a
 * veth pair set up by ip(8) and tc(8)); skipped otherwise.
 */
#define _GNU_SOURCE
#include <net/if.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pmeth_tc.h"
#include "tap.h"
#include "tap_netns.h"

static pmeth_tc_state_t read_tc(const char *ifname, int *rc)
{
    pmeth_tc_state_t s;
    char err[160] = "";
    *rc = pmeth_tc_read((int) if_nametoindex(ifname), ifname, &s, err, sizeof(err));
    if (*rc != 0) {
        printf("# pmeth_tc_read(%s): %s\n", ifname, err);
    }
    return s;
}

/* nftables: chains bound to a device (netdev ingress and egress, inet
 * ingress), as the virtual cluster's injected loss binds them */
static void nft_checks(void)
{
    int rc;
    char phrase[128];
    if (system("command -v nft >/dev/null 2>&1") != 0) {
        printf("ok %d - netfilter chains # SKIP nft(8) is not installed\n", ++tap_n);
        return;
    }
    CHECK(system("tc qdisc del dev pmtc1 clsact") == 0, "tc: pmtc1's clsact removed");
    pmeth_tc_state_t s = read_tc("pmtc1", &rc);
    CHECK(rc == 0 && s.ingress_kind[0] == '\0' && s.nft_ingress[0] == '\0' && s.nft_egress[0] == '\0' && s.nft_unread[0] == '\0',
          "no nftables chain yet, and root may read them ('%s')", s.nft_unread);
    CHECK(system("nft -f - <<'EOF'\n"
                 "table netdev xbvc_pmtc1 {\n chain loss {\n"
                 "  type filter hook ingress device \"pmtc1\" priority 0; policy accept;\n"
                 "  numgen random mod 1000000 < 10000 counter drop\n }\n}\nEOF") == 0,
          "nft: a netdev ingress chain on pmtc1 dropping 1%% (the virtual cluster's loss)");
    s = read_tc("pmtc1", &rc);
    CHECK(rc == 0 && strcmp(s.nft_ingress, "xbvc_pmtc1/loss") == 0 && s.nft_egress[0] == '\0',
          "nfnetlink reports it bound to pmtc1's ingress ('%s')", s.nft_ingress);
    CHECK(pmeth_tc_skipped_by_xdp(&s, false, phrase, sizeof(phrase))
              && strstr(phrase, "xbvc_pmtc1/loss") != NULL,
          "frames received through AF_XDP would skip it: \"%s\"", phrase);
    s = read_tc("pmtc0", &rc);
    CHECK(rc == 0 && s.nft_ingress[0] == '\0' && s.nft_egress[0] == '\0',
          "pmtc0 has no chain of its own ('%s')", s.nft_ingress);

    if (system("nft add table netdev pmtc_out && nft add chain netdev pmtc_out out "
               "'{ type filter hook egress device \"pmtc0\" priority 0; }' 2>/dev/null") != 0) {
        printf("ok %d - a netdev egress chain # SKIP this kernel or nft has no egress hook\n", ++tap_n);
    } else {
        s = read_tc("pmtc0", &rc);
        CHECK(rc == 0 && strcmp(s.nft_egress, "pmtc_out/out") == 0 && s.nft_ingress[0] == '\0',
              "a netdev egress chain on pmtc0: reported as egress ('%s')", s.nft_egress);
        CHECK(pmeth_tc_skipped_by_xdp(&s, true, phrase, sizeof(phrase))
                  && !pmeth_tc_skipped_by_xdp(&s, false, phrase, sizeof(phrase)),
              "AF_XDP frames sent would skip it; frames only received skip nothing");
        CHECK(system("nft delete table netdev pmtc_out") == 0, "nft: the egress chain removed");
    }

    if (system("nft add table inet pmtc_in && nft add chain inet pmtc_in in "
               "'{ type filter hook ingress device \"pmtc0\" priority 0; }' 2>/dev/null") != 0) {
        printf("ok %d - an inet ingress chain # SKIP this kernel or nft has no inet ingress\n", ++tap_n);
    } else {
        s = read_tc("pmtc0", &rc);
        CHECK(rc == 0 && strcmp(s.nft_ingress, "pmtc_in/in") == 0,
              "an inet chain on pmtc0's ingress hook: reported as ingress ('%s')", s.nft_ingress);
        CHECK(system("nft delete table inet pmtc_in") == 0, "nft: the inet chain removed");
    }

    CHECK(system("nft delete table netdev xbvc_pmtc1 && nft add table netdev pmtc_two && "
                 "nft add chain netdev pmtc_two both '{ type filter hook ingress devices = "
                 "{ pmtc0, pmtc1 } priority 0; }'") == 0,
          "nft: one netdev chain on both ends (a device list)");
    pmeth_tc_state_t s0 = read_tc("pmtc0", &rc), s1 = read_tc("pmtc1", &rc);
    CHECK(strcmp(s0.nft_ingress, "pmtc_two/both") == 0 && strcmp(s1.nft_ingress, "pmtc_two/both") == 0,
          "each end sees it ('%s', '%s')", s0.nft_ingress, s1.nft_ingress);

    /* an ordinary user may read the qdiscs but not the chains */
    pid_t pid = fork();
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) {
            _exit(3);
        }
        pmeth_tc_state_t u = read_tc("pmtc0", &rc);
        _exit(rc != 0 ? 4 : u.nft_unread[0] == '\0' ? 5 : u.nft_ingress[0] != '\0' ? 6 : 0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "as user 65534: the qdiscs read, the chains reported unread, none claimed (exit %d)",
          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    CHECK(system("nft delete table netdev pmtc_two") == 0, "nft: removed");
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
    nft_checks();
    s = read_tc("lo", &rc);
    CHECK(rc == 0 && s.root_plain && s.ingress_kind[0] == '\0',
          "lo: nothing set (root '%s')", s.root_kind);
    pmeth_tc_state_t none;
    char err[160] = "";
    rc = pmeth_tc_read(1 << 30, "pmtc-none", &none, err, sizeof(err));
    CHECK(rc == 0 && none.root_kind[0] == '\0' && none.root_plain,
          "an interface index nobody has: no qdisc, nothing skipped (rc %d %s)", rc, err);
    return tap_done();
}
