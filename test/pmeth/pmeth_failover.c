/*
 * Traffic flowing through link faults (btl pmeth's path migration, issue 11):
 * ranks 0 and 1 ping-pong verified messages for a given time -- or, with -w,
 * rank 0 streams windows of messages one way and rank 1 answers each window
 * with a 4-byte ack, as xb-bw does -- and every pause in the flow longer than
 * a threshold is printed with its start and end in CLOCK_REALTIME, so a script
 * that injected faults at known times (bench/pmeth-failover.sh) can tell how
 * long each fault stopped the traffic.  The run is bounded by time, not by a
 * count, so faults scheduled from the job's start land inside it however fast
 * the links are.
 * At the end rank 0 reads btl pmeth's path-migration variables through MPI_T
 * (a tool's view) and prints them with the totals, one JSON object per line:
 *   {"stall": {"from": T0, "to": T1}}          a pause (seconds since the epoch)
 *   {"rate": {"t": T, "mbps": R}}              MB/s over the last 0.5 s, both ways together
 *   {"done": ..., "iterations": N, "verified_mb": M, "errors": E, "mpit": {...}}
 *
 *   pmeth_failover [-s BYTES] [-t SECONDS] [-g PAUSE_MS] [-w WINDOW]
 *      message size (default 65536: striped over the links), run time (10),
 *      what counts as a pause (2 ms), messages per window of a one-way
 *      stream (default 0: ping-pong)
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
    int opt, window = 0;
    while ((opt = getopt(argc, argv, "s:t:g:w:")) != -1) {
        switch (opt) {
        case 's': size = strtoul(optarg, NULL, 0); break;
        case 't': seconds = atof(optarg); break;
        case 'g': pause_ms = atof(optarg); break;
        case 'w': window = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: pmeth_failover [-s BYTES] [-t SECONDS] [-g PAUSE_MS] [-w WINDOW]\n");
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
    /* ping-pong: one buffer each way; a stream: a buffer per message of the window */
    int slots = window > 0 ? window : 1;
    size_t bytes = (size ? size : 1) * (size_t) slots;
    char *out = malloc(bytes), *in = malloc(bytes);
    MPI_Request *req = malloc((size_t) slots * sizeof(*req));
    int peer = 1 - rank, stop = 0;
    long iters = 0, errors = 0;
    double start = realtime(), last = start, gap = pause_ms * 1e-3, tick = start;
    long tick_iters = 0;
    /* bytes that cross the links per iteration, both ways together */
    double per_iter = window > 0 ? (double) window * size : 2.0 * size;
    while (!stop) {
        /* rank 0 decides when to stop and says so in the message's tag */
        int tag = rank == 0 && realtime() - start >= seconds ? 2 : 1;
        if (window > 0) {
            /* rank 1 learns of the end from the window's tag */
            if (rank == 0) {
                for (int j = 0; j < window; j++) {
                    char *p = out + (size_t) j * size;
                    xb_fill(p, size, xb_seed(rank, (uint64_t) iters * window + j, 1));
                    MPI_Isend(p, (int) size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[j]);
                }
                MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
                int ack;
                MPI_Recv(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                stop = tag == 2;
            } else {
                MPI_Status st[2];
                for (int j = 0; j < window; j++) {
                    MPI_Irecv(in + (size_t) j * size, (int) size, MPI_BYTE, peer, MPI_ANY_TAG,
                              MPI_COMM_WORLD, &req[j]);
                }
                MPI_Waitall(1, req, st);
                MPI_Waitall(window - 1, req + 1, MPI_STATUSES_IGNORE);
                for (int j = 0; j < window; j++) {
                    if (xb_mismatch(in + (size_t) j * size, size,
                                    xb_seed(peer, (uint64_t) iters * window + j, 1)) >= 0) {
                        errors++;
                    }
                }
                int ack = 0;
                MPI_Send(&ack, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
                stop = st[0].MPI_TAG == 2;
            }
        } else {
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
        }
        double now = realtime();
        if (rank == 0 && now - last > gap) {
            printf("{\"stall\": {\"from\": %.6f, \"to\": %.6f}}\n", last, now);
        }
        if (rank == 0 && now - tick >= 0.5) {
            printf("{\"rate\": {\"t\": %.6f, \"mbps\": %.1f}}\n", now,
                   (iters + 1 - tick_iters) * per_iter / (now - tick) / 1e6);
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
        printf("{\"done\": %.6f, \"iterations\": %ld, \"size\": %zu, \"window\": %d, \"seconds\": %.3f, "
               "\"verified_mb\": %.1f, \"errors\": %ld, \"mpit_read\": %s, \"mpit\": {",
               realtime(), iters, size, window, realtime() - start, iters * per_iter / 1e6, errors_all,
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
    free(req);
    free(out);
    free(in);
    MPI_T_finalize();
    MPI_Finalize();
    return errors_all == 0 && have_all ? 0 : 1;
}
