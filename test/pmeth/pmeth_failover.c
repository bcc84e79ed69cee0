/*
 * Traffic flowing through link faults (btl pmeth's path migration, issue 11):
 * ranks 0 and 1 ping-pong verified messages for a given time, and every pause
 * in the flow longer than a threshold is printed with its start and end in
 * CLOCK_REALTIME, so a script that injected faults at known times
 * (bench/pmeth-failover.sh) can tell how long each fault stopped the traffic.
 * At the end rank 0 reads btl pmeth's path-migration variables through MPI_T
 * (a tool's view) and prints them with the totals, one JSON object per line:
 *   {"stall": {"from": T0, "to": T1}}          a pause (seconds since the epoch)
 *   {"rate": {"t": T, "mbps": R}}              MB/s both ways over the last 0.5 s
 *   {"done": ..., "iterations": N, "verified_mb": M, "errors": E, "mpit": {...}}
 *
 *   pmeth_failover [-s BYTES] [-t SECONDS] [-g PAUSE_MS]
 *      message size (default 65536: striped over the links), run time (10),
 *      what counts as a pause (2 ms)
 * Exit status 1 on a wrong payload or when the variables could not be read.
 */
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpit_bind.h"
#include "xb_pattern.h"

static const char *counters[] = {"apm_migrations", "apm_migrations_fault", "apm_failbacks",
                                 "apm_rearms", "apm_paths_dead", "apm_frames_moved",
                                 "apm_recoveries"};
enum { NCOUNTERS = 7 };
static const char *levels[] = {"apm_recover_last_us", "apm_recover_worst_us", "apm_rejoin_last_us",
                               "apm_rejoin_worst_us"};
enum { NLEVELS = 4 };

static double realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t size = 65536;
    double seconds = 10, pause_ms = 2;
    int opt;
    while ((opt = getopt(argc, argv, "s:t:g:")) != -1) {
        switch (opt) {
        case 's': size = strtoul(optarg, NULL, 0); break;
        case 't': seconds = atof(optarg); break;
        case 'g': pause_ms = atof(optarg); break;
        default:
            fprintf(stderr, "usage: pmeth_failover [-s BYTES] [-t SECONDS] [-g PAUSE_MS]\n");
            return 2;
        }
    }
    int provided, rank, np;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (np != 2) {
        if (rank == 0) {
            fprintf(stderr, "pmeth_failover: 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* a tool's view of the path migration: counters count from when their
     * handle is made, so bind now, read at the end */
    MPI_T_pvar_session s1, s2;
    MPI_T_pvar_handle hc[NCOUNTERS], hl[NLEVELS];
    bool have = mpit_bind(&s1, hc, "btl_pmeth_", counters, NCOUNTERS, MPI_T_PVAR_CLASS_COUNTER)
                && mpit_bind(&s2, hl, "btl_pmeth_", levels, NLEVELS, MPI_T_PVAR_CLASS_LEVEL);
    char *out = malloc(size ? size : 1), *in = malloc(size ? size : 1);
    int peer = 1 - rank, stop = 0;
    long iters = 0, errors = 0;
    double start = realtime(), last = start, gap = pause_ms * 1e-3, tick = start;
    long tick_iters = 0;
    while (!stop) {
        /* rank 0 decides when to stop and says so in the message's tag */
        int tag = rank == 0 && realtime() - start >= seconds ? 2 : 1;
        uint64_t seed = xb_seed(rank, (uint64_t) iters, 1);
        xb_fill(out, size, seed);
        MPI_Status st;
        if (rank == 0) {
            MPI_Send(out, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
            MPI_Recv(in, (int) size, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            stop = tag == 2;
        } else {
            MPI_Recv(in, (int) size, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            stop = st.MPI_TAG == 2;
            MPI_Send(out, (int) size, MPI_BYTE, peer, st.MPI_TAG, MPI_COMM_WORLD);
        }
        if (xb_mismatch(in, size, xb_seed(peer, (uint64_t) iters, 1)) >= 0) {
            errors++;
        }
        double now = realtime();
        if (rank == 0 && now - last > gap) {
            printf("{\"stall\": {\"from\": %.6f, \"to\": %.6f}}\n", last, now);
        }
        if (rank == 0 && now - tick >= 0.5) {
            printf("{\"rate\": {\"t\": %.6f, \"mbps\": %.1f}}\n", now,
                   2.0 * (iters + 1 - tick_iters) * size / (now - tick) / 1e6);
            tick = now;
            tick_iters = iters + 1;
        }
        last = now;
        iters++;
    }
    /* summed over both ranks (the recovery times: the larger) */
    unsigned long c[NCOUNTERS] = {0}, l[NLEVELS] = {0}, csum[NCOUNTERS], lmax[NLEVELS];
    for (int i = 0; have && i < NCOUNTERS; i++) {
        have = MPI_T_pvar_read(s1, hc[i], &c[i]) == MPI_SUCCESS;
    }
    for (int i = 0; have && i < NLEVELS; i++) {
        have = MPI_T_pvar_read(s2, hl[i], &l[i]) == MPI_SUCCESS;
    }
    int have_all, ok = have;
    MPI_Allreduce(&ok, &have_all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Reduce(c, csum, NCOUNTERS, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(l, lmax, NLEVELS, MPI_UNSIGNED_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    long errors_all = 0;
    MPI_Reduce(&errors, &errors_all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("{\"done\": %.6f, \"iterations\": %ld, \"size\": %zu, \"seconds\": %.3f, "
               "\"verified_mb\": %.1f, \"errors\": %ld, \"mpit_read\": %s, \"mpit\": {",
               realtime(), iters, size, realtime() - start, 2.0 * iters * size / 1e6, errors_all,
               have_all ? "true" : "false");
        for (int i = 0; i < NCOUNTERS; i++) {
            printf("\"%s\": %lu, ", counters[i], csum[i]);
        }
        for (int i = 0; i < NLEVELS; i++) {
            printf("\"%s\": %lu%s", levels[i], lmax[i], i + 1 < NLEVELS ? ", " : "}}\n");
        }
        if (errors_all == 0 && have_all) {
            printf("# pmeth_failover: all payloads verified\n");
        }
    }
    free(out);
    free(in);
    MPI_T_finalize();
    MPI_Finalize();
    return errors_all == 0 && have_all ? 0 : 1;
}
