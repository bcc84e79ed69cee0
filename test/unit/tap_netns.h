/*
 * For unit tests that need interfaces of their own: move this process into a
 * network namespace of its own and create a veth pair there, up.  The pair
 * lives in that namespace only and goes with the process.  Needs root and
 * ip(8), and the programs named in NEED (a shell command list that must
 * succeed, e.g. "command -v tc"); callers define _GNU_SOURCE before any include.
 */
#ifndef XB_TAP_NETNS_H
#define XB_TAP_NETNS_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* NULL once the process is in its namespace with veth A-B up; else why not
 * (in WHY or a constant), for a "# SKIP" line */
static inline const char *tap_netns_veth(const char *a, const char *b, const char *need,
                                         char *why, size_t whylen)
{
    char cmd[256];
    if (geteuid() != 0) {
        return "not root: cannot create a network namespace";
    }
    snprintf(cmd, sizeof(cmd), "command -v ip >/dev/null 2>&1%s%s", need ? " && " : "",
             need ? need : "");
    if (system(cmd) != 0) {
        snprintf(why, whylen, "ip(8)%s%s failed", need ? " or " : "", need ? need : "");
        return why;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        snprintf(why, whylen, "unshare(CLONE_NEWNET): %s", strerror(errno));
        return why;
    }
    snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %s && ip link set %s up "
             "&& ip link set %s up", a, b, a, b);
    if (system(cmd) != 0) {
        return "cannot create a veth pair in the new namespace";
    }
    return NULL;
}

#endif
