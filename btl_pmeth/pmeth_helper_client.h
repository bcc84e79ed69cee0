/*
 * The job's side of the pmeth helper (pmeth_helper_proto.h): ask pmeth-helperd
 * for an AF_PACKET socket when this process may not open one itself.  No MPI;
 * the component calls it from its ring-opening path.
 */
#ifndef PMETH_HELPER_CLIENT_H
#define PMETH_HELPER_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "pmeth_helper_proto.h"

/* Ask the helper listening at PATH for a socket for RQ, within TIMEOUT_MS for
 * the whole exchange.  0 with *FD (close-on-exec, checked to be an AF_PACKET
 * raw socket) and the reply's *FLAGS; or -errno with a sentence in WHY:
 *   -ENOENT, -ECONNREFUSED, -EACCES, -ETIMEDOUT, ...  no helper reachable there;
 *   -EPERM   the helper refused: WHY quotes its reply;
 *   -EPROTO  its reply was malformed or came without the socket. */
int pmeth_helper_ask(const char *path, const struct pmeth_helper_request *rq, int timeout_ms,
                     int *fd, uint16_t *flags, char *why, size_t whylen);

#endif
