/*
 * btl pmeth's memory per process, as a tool sees it (test/pmeth/t-pmeth-memory.sh).
 *
 * After MPI_Init every rank exchanges verified messages with every other rank
 * (all to all, a short and a rendezvous-sized one per pair), so that each remote
 * peer has its reliability windows; then it reads the BTL's memory through MPI_T
 * (btl_pmeth_memory_bytes and its parts, btl_pmeth_pvar.c) and its own VmRSS
 * from /proc/self/status.  The same figures are also read right after MPI_Init,
 * before any message: Open MPI adds remote peers at their first message, so a
 * peer nobody talked to should cost nothing yet.
 *
 * Rank 0 prints one JSON line per rank, in rank order; the exit status is 1 when
 * a payload was wrong or the variables could not be read.
 *
 *   pmeth_memory [-s SHORT] [-l LONG]    message sizes (default 100 and 40000 bytes)
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpit_bind.h"
#include "xb_pattern.h"

static const char *names[] = {"memory_bytes", "memory_ring_bytes", "peers_known",
                              "peers_with_windows"};
enum { MEM, RINGS, PEERS, PEERS_WIN, NVARS };

static MPI_T_pvar_session session;
static MPI_T_pvar_handle handle[NVARS];

/* Bind every variable; false when pmeth's are not there (pmeth not in this job). */
static bool bind_all(void)
{
    return mpit_bind(&session, handle, "btl_pmeth_", names, NVARS, MPI_T_PVAR_CLASS_LEVEL);
}

static bool read_all(unsigned long v[NVARS])
{
    for (int i = 0; i < NVARS; i++) {
        if (MPI_T_pvar_read(session, handle[i], &v[i]) != MPI_SUCCESS) {
            return false;
        }
    }
    return true;
}

/* VmRSS of this process in KiB (0 when /proc says nothing). */
static long vmrss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib;
}

/* One message of LEN bytes from every rank to every other, each verified: the
 * seed names sender, receiver and round, so a misdelivered message fails too.
 * Returns the number of wrong payloads received. */
static long all_to_all(int rank, int size, size_t len, int round)
{
    unsigned char *out = malloc(len * (size_t) size), *in = malloc(len * (size_t) size);
    MPI_Request *req = malloc(2 * (size_t) size * sizeof(*req));
    int nreq = 0;
    long bad = 0;
    if (out == NULL || in == NULL || req == NULL) {
        fprintf(stderr, "rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int step = 1; step < size; step++) {
        /* receives first, and partners in a staggered order, so that no rank
         * is the target of everyone at once */
        int from = (rank - step + size) % size;
        MPI_Irecv(in + (size_t) from * len, (int) len, MPI_BYTE, from, round, MPI_COMM_WORLD,
                  &req[nreq++]);
    }
    for (int step = 1; step < size; step++) {
        int to = (rank + step) % size;
        unsigned char *b = out + (size_t) to * len;
        xb_fill(b, len, xb_seed(rank, (uint64_t) to, round));
        MPI_Isend(b, (int) len, MPI_BYTE, to, round, MPI_COMM_WORLD, &req[nreq++]);
    }
    MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
    for (int from = 0; from < size; from++) {
        if (from != rank
            && xb_mismatch(in + (size_t) from * len, len, xb_seed(from, (uint64_t) rank, round)) >= 0) {
            fprintf(stderr, "rank %d: wrong payload of %zu bytes from rank %d\n", rank, len, from);
            bad++;
        }
    }
    free(out);
    free(in);
    free(req);
    return bad;
}

int main(int argc, char **argv)
{
    size_t lens[2] = {100, 40000};
    int opt, rank, size, local, provided;
    while ((opt = getopt(argc, argv, "s:l:")) != -1) {
        switch (opt) {
        case 's': lens[0] = strtoul(optarg, NULL, 0); break;
        case 'l': lens[1] = strtoul(optarg, NULL, 0); break;
        default:
            fprintf(stderr, "usage: %s [-s SHORT] [-l LONG]\n", argv[0]);
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    unsigned long before[NVARS] = {0}, after[NVARS] = {0};
    bool have = bind_all() && read_all(before);

    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Comm_size(host, &local);
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int nlen;
    MPI_Get_processor_name(name, &nlen);

    long bad = 0;
    for (int i = 0; i < 2; i++) {
        bad += all_to_all(rank, size, lens[i], i);
    }
    /* every rank's receives completed: its windows with every remote peer exist */
    MPI_Barrier(MPI_COMM_WORLD);
    have = have && read_all(after);
    long rss = vmrss_kib();

    char line[640];
    snprintf(line, sizeof(line),
             "{\"rank\":%d,\"ranks\":%d,\"host\":\"%s\",\"ranks_on_host\":%d,"
             "\"remote_peers\":%d,\"verified\":%s,\"pvars\":%s,"
             "\"before\":{\"memory_bytes\":%lu,\"memory_ring_bytes\":%lu,\"peers_known\":%lu,"
             "\"peers_with_windows\":%lu},"
             "\"memory_bytes\":%lu,\"memory_ring_bytes\":%lu,\"peers_known\":%lu,"
             "\"peers_with_windows\":%lu,\"vmrss_kib\":%ld}",
             rank, size, name, local, size - local, bad == 0 ? "true" : "false",
             have ? "true" : "false", before[MEM], before[RINGS], before[PEERS], before[PEERS_WIN],
             after[MEM], after[RINGS], after[PEERS], after[PEERS_WIN], rss);
    char *all = rank == 0 ? malloc(sizeof(line) * (size_t) size) : NULL;
    MPI_Gather(line, sizeof(line), MPI_CHAR, all, sizeof(line), MPI_CHAR, 0, MPI_COMM_WORLD);
    int failed = bad != 0 || !have, any_failed = 0;
    MPI_Reduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) {
            printf("%s\n", all + (size_t) r * sizeof(line));
        }
        fflush(stdout);
        free(all);
    }
    MPI_Comm_free(&host);
    if (have) {
        for (int i = 0; i < NVARS; i++) {
            MPI_T_pvar_handle_free(session, &handle[i]);
        }
        MPI_T_pvar_session_free(&session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return rank == 0 && any_failed ? 1 : 0;
}
