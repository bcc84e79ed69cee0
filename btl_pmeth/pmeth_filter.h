/*
 * The classic BPF program that demultiplexes pmeth's frames in the kernel: a
 * socket gets only frames of our EtherType carrying its job key and process id
 * (pmeth_wire.h's fixed offsets), so ranks sharing an interface each see their
 * own frames only.  The ring layer attaches it to its sockets; pmeth-helperd
 * attaches it, bound to one interface, to the sockets it opens for users (and
 * may lock it there).  No MPI.
 */
#ifndef PMETH_FILTER_H
#define PMETH_FILTER_H

#include <stdint.h>

#define PMETH_FILTER_MAX_LEN 10
struct sock_filter;

/* Writes the program into CODE (room for PMETH_FILTER_MAX_LEN instructions)
 * and returns its length.  IFINDEX > 0 also requires the frame to have arrived
 * on that interface; 0 takes any. */
unsigned pmeth_filter_build(struct sock_filter *code, uint16_t ethertype, uint32_t job_key,
                            uint32_t dest_id, int ifindex);

#endif
