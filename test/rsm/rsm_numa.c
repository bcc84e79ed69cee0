/*
 * NUMA placement of btl_rsm's areas, run by t-rsm-numa.sh inside a two-node guest
 * with one rank bound to each node.  Both ranks exchange verified messages of
 * 0 B..1 MiB (so every area has postbox and pool pages), then rank 0 reads its
 * /proc/self/numa_maps: an area is named /rsm-<sender>-a<D>s<stripe>, D the NUMA
 * node of the receivers it serves, and with btl_rsm_numa_place on every page of it
 * must be on node D, although its sender, on the other node, wrote it first.
 *   rsm_numa PLACE    (PLACE: the btl_rsm_numa_place the job runs with, 1 or 0)
 * Prints TAP; with PLACE 0 it only reports where first touch put the pages.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int src, size_t i, size_t len) { return (unsigned char) (src * 131 + i * 7 + len); }

int main(int argc, char **argv)
{
    int rank, size, place = argc > 1 ? atoi(argv[1]) : 1, n = 0, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned cpu = 0, node = 0;
    getcpu(&cpu, &node);
    int nodes[2] = {0, 0};
    MPI_Gather(&node, 1, MPI_INT, nodes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t max = 1 << 20;
    unsigned char *s = malloc(max), *r = malloc(max);
    unsigned long wrong = 0;
    for (size_t len = 0; len <= max; len = len ? len * 4 : 1) {
        for (size_t i = 0; i < len; i++) s[i] = pattern(rank, i, len);
        memset(r, 0, len);
        MPI_Sendrecv(s, (int) len, MPI_BYTE, 1 - rank, 7, r, (int) len, MPI_BYTE, 1 - rank, 7,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (size_t i = 0; i < len; i++) wrong += r[i] != pattern(1 - rank, i, len);
    }
    unsigned long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%sok %d - 2 ranks on NUMA nodes %d and %d exchanged 0 B..1 MiB both ways, verified\n",
               all_wrong == 0 && nodes[0] != nodes[1] ? "" : "not ", ++n, nodes[0], nodes[1]);
        bad += all_wrong != 0 || nodes[0] == nodes[1];
        FILE *f = fopen("/proc/self/numa_maps", "r");
        char line[4096];
        int areas = 0;
        while (f && fgets(line, sizeof(line), f)) {
            char *file = strstr(line, "file=/dev/shm/rsm-"), *a = NULL;
            int dest, stripe;
            /* the last "-a": the sender's tag is hex and may itself start with "a" */
            for (char *p = file; p && (p = strstr(p, "-a")) != NULL; p += 2) {
                a = p;
            }
            if (!file || !a || sscanf(a, "-a%ds%d", &dest, &stripe) != 2) {
                continue;
            }
            unsigned long on[8] = {0}, total = 0;
            for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
                int nd;
                unsigned long pages;
                if (sscanf(p, " N%d=%lu", &nd, &pages) == 2 && nd >= 0 && nd < 8) {
                    on[nd] += pages;
                    total += pages;
                }
            }
            char *end = strpbrk(file, " \n");
            if (end) *end = '\0';
            areas++;
            if (place) {
                int ok = total > 0 && on[dest] == total;
                bad += !ok;
                printf("%sok %d - %s (for node %d): %lu of %lu pages on node %d\n", ok ? "" : "not ",
                       ++n, file + 5, dest, on[dest], total, dest);
            } else {
                printf("# numa_place 0: %s (for node %d): %lu pages, node 0: %lu, node 1: %lu\n",
                       file + 5, dest, total, on[0], on[1]);
            }
        }
        if (place) {
            printf("%sok %d - rank 0 maps both areas (its own and its peer's): %d\n",
                   areas == 2 ? "" : "not ", ++n, areas);
            bad += areas != 2;
        }
        if (f) fclose(f);
        printf("1..%d\n", n);
        fflush(stdout);
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return bad ? 1 : 0;
}
