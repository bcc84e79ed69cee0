/*
 * The sizes btl pmeth's memory formula is made of, as this build's compiler
 * lays them out (test/pmeth/t-pmeth-memory.sh evaluates the formula with them):
 * an endpoint, path migration's connection per peer (with 2 links or more), the
 * two reliability windows of WINDOW frames, a pointer of the
 * by-id table, and what the AF_PACKET ring geometry starts from (the kernel's
 * TPACKET_V2 header and alignment, the page size).  No MPI, nothing run.
 *
 *   pmeth_memory_sizes WINDOW      one JSON object
 */
#include "btl_pmeth.h"

#include <linux/if_packet.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s WINDOW\n", argv[0]);
        return 2;
    }
    uint32_t window = (uint32_t) strtoul(argv[1], NULL, 0);
    printf("{\"endpoint\":%zu,\"apm_conn\":%zu,\"txwin\":%zu,\"rxwin\":%zu,\"pointer\":%zu,"
           "\"tpacket2_hdrlen\":%zu,\"tpacket_alignment\":%d,\"page\":%ld}\n",
           sizeof(struct mca_btl_base_endpoint_t), apm_conn_bytes(), pmeth_txwin_bytes(window),
           pmeth_rxwin_bytes(window), sizeof(mca_btl_base_endpoint_t *),
           (size_t) TPACKET2_HDRLEN, TPACKET_ALIGNMENT, sysconf(_SC_PAGESIZE));
    return 0;
}
