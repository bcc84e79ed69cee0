/*
 * The job's side of the pmeth helper (pmeth_helper_proto.h): ask pmeth-helperd
 * for an AF_PACKET socket (or an AF_XDP one) when this process may not open
 * one itself.  No MPI;
 * the component calls it from its ring-opening path.
 */
#ifndef PMETH_HELPER_CLIENT_H
#define PMETH_HELPER_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "pmeth_helper_proto.h"

/* Ask the helper listening at PATH for a socket for RQ, within TIMEOUT_MS for
 * the whole exchange.  0 with the reply's descriptors in FDS (close-on-exec;
 * op 1: FDS[0], checked to be an AF_PACKET raw socket, and FDS[1], the send
 * socket, likewise, when RQ asked for it; op 2: FDS[0..2], the AF_XDP socket
 * (checked), its UMEM's memfd (checked to be a file) and the BPF link) and the
 * reply's *FLAGS; or -errno with a sentence in WHY:
 *   -ENOENT, -ECONNREFUSED, -EACCES, -ETIMEDOUT, ...  no helper reachable there;
 *   -EPERM   the helper refused: WHY quotes its reply;
 *   -EBADMSG it refused the request as malformed (a helper older than a flag asked for);
 *   -EOPNOTSUPP  op 2: it hands out no AF_XDP sockets at all (PMETH_HELPER_XDP_OFF);
 *   -EPROTO  its reply was malformed or came without what it should carry. */
int pmeth_helper_ask(const char *path, const struct pmeth_helper_request *rq, int timeout_ms,
                     int fds[PMETH_HELPER_MAX_FDS], uint16_t *flags, char *why, size_t whylen);

#endif
