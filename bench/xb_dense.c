/*
 * Dense communication patterns (seed 002, section 3.3, after Fatoohi et al.,
 * "Performance Evaluation of High-Speed Interconnects using Dense Communication
 * Patterns"): every rank exchanges at once, in phases, four ways.
 *
 *   aapc        congestion-controlled all-to-all personalized exchange: in
 *               phase k (1..n-1) each rank sends to rank+k and receives from
 *               rank-k (mod n), so after n-1 phases each pair has exchanged once
 *               and no rank ever has two senders at a time
 *   pairwise    simple pairwise: in phase k (1..n-1) ranks pair at distance k
 *               (rank r with r+k when r/k is even, with r-k when odd) and each pair
 *               exchanges full duplex; a rank whose partner would lie outside
 *               0..n-1 sits the phase out
 *   cumulative  cumulative pairwise: pairs (r, r + n/2) as in xb-mbw-mr; in phase
 *               p (1..n/2) the first p pairs exchange, from one pair to all
 *   random      random pairwise: in each phase the ranks are shuffled (the same
 *               seeded shuffle on every rank) and consecutive ones pair up;
 *               -P phases (default n-1)
 *
 * Each phase runs ITERS exchanges (MPI_Sendrecv) of SIZE bytes; its figure is
 * the bytes every rank sent together over the slowest rank's time.  A row per
 * size gives each pattern's aggregate over all its phases (the columns compare.py
 * tabulates), and the per-phase figures follow in the row's JSON ("phases") and as
 * comment lines.  Every received message is verified (seeded by sender, iteration,
 * pattern and phase) unless -n is given.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xb_bench.h"

enum { AAPC, PAIRWISE, CUMULATIVE, RANDOM, NPATTERNS };
static const char *const pattern_names[NPATTERNS] = {"aapc", "pairwise", "cumulative", "random"};

/* Rank r's partners in phase K of pattern PAT (K from 1): where it sends and
 * where it receives from, or -1 for both when it sits the phase out. */
static void partners(int pat, int k, int r, int n, const int *perm, int *dst, int *src)
{
    *dst = *src = -1;
    switch (pat) {
    case AAPC:
        *dst = (r + k) % n;
        *src = (r - k + n) % n;
        break;
    case PAIRWISE: {
        int p = (r / k) % 2 == 0 ? r + k : r - k;
        if (p >= 0 && p < n) {
            *dst = *src = p;
        }
        break;
    }
    case CUMULATIVE: {
        int half = n / 2;
        if (r < k) {
            *dst = *src = r + half;
        } else if (r >= half && r < half + k) {
            *dst = *src = r - half;
        }
        break;
    }
    case RANDOM: {
        int pos = 0;
        while (perm[pos] != r) {
            pos++;
        }
        int q = pos ^ 1;
        if (q < n) {
            *dst = *src = perm[q];
        }
        break;
    }
    }
}

static int phases_of(int pat, int n, int random_phases)
{
    switch (pat) {
    case CUMULATIVE:
        return n / 2;
    case RANDOM:
        return random_phases;
    default:
        return n - 1;
    }
}

/* The shuffle of phase K, the same on every rank (Fisher-Yates over a 64-bit LCG). */
static void shuffle(int *perm, int n, int k)
{
    uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t) (k + 1);
    for (int i = 0; i < n; i++) {
        perm[i] = i;
    }
    for (int i = n - 1; i > 0; i--) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int j = (int) ((s >> 33) % (uint64_t) (i + 1));
        int t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

int main(int argc, char **argv)
{
    const char *p_opt = xb_take_option(&argc, argv, "-P", true);   /* -P PHASES */
    int random_phases = p_opt != NULL ? atoi(p_opt) : 0;
    struct xb_opts o = {.min_size = 1024, .max_size = 1 << 20, .iters = 200, .warmup = 5, .window = 1};
    xb_init(&argc, &argv, "xb-dense",
            "dense patterns per phase: aapc, simple / cumulative / random pairwise "
            "(-P PHASES: random phases, default n-1)", &o);
    const int n = xb_nprocs, me = xb_rank;
    if (n < 2) {
        if (me == 0) {
            fprintf(stderr, "xb-dense: needs at least 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (random_phases <= 0) {
        random_phases = n - 1;
    }
    char *sbuf = xb_alloc(o.max_size), *rbuf = xb_alloc(o.max_size);
    int *perm = malloc(sizeof(int) * (size_t) n);
    size_t json_cap = 64 + (size_t) NPATTERNS * (size_t) (n + random_phases) * 24;
    char *json = malloc(json_cap);
    double *phase_mbps = malloc(sizeof(double) * (size_t) (n + random_phases));
    xb_header("# size(B)      aapc(MB/s)  pairwise(MB/s) cumulative(MB/s) random(MB/s)");
    size_t size = xb_first_size(&o);
    do {
        const int iters = xb_iters_for(&o, size);
        double agg[NPATTERNS];
        size_t jl = (size_t) snprintf(json, json_cap, "\"phases\":{");
        for (int pat = 0; pat < NPATTERNS; pat++) {
            const int nph = phases_of(pat, n, random_phases);
            double bytes_all = 0, time_all = 0;
            for (int k = 1; k <= nph; k++) {
                if (pat == RANDOM) {
                    shuffle(perm, n, k);
                }
                int dst, src;
                partners(pat, k, me, n, perm, &dst, &src);
                /* the seed's tag: pattern and phase, so a message of another
                 * phase or pattern delivered here fails the check */
                const int seed_tag = 1000 * (pat + 1) + k;
                if (!o.verify && dst >= 0) {
                    xb_fill(sbuf, size, xb_seed(me, 0, seed_tag));
                }
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = 0;
                for (int i = 0; i < iters + o.warmup; i++) {
                    if (i == o.warmup) {
                        t0 = MPI_Wtime();
                    }
                    if (dst < 0) {
                        continue;
                    }
                    if (o.verify) {
                        xb_fill(sbuf, size, xb_seed(me, (uint64_t) i, seed_tag));
                    }
                    MPI_Sendrecv(sbuf, (int) size, MPI_BYTE, dst, 5, rbuf, (int) size, MPI_BYTE,
                                 src, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    if (o.verify) {
                        xb_check(rbuf, size, src, (unsigned long) i, seed_tag);
                    }
                }
                double t = MPI_Wtime() - t0, tmax, sent = dst >= 0 ? (double) size * iters : 0,
                       sent_all;
                MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                MPI_Allreduce(&sent, &sent_all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
                phase_mbps[k - 1] = tmax > 0 ? sent_all / tmax / 1e6 : 0;
                bytes_all += sent_all;
                time_all += tmax;
            }
            agg[pat] = time_all > 0 ? bytes_all / time_all / 1e6 : 0;
            jl += (size_t) snprintf(json + jl, json_cap - jl, "%s\"%s\":[", pat ? "," : "",
                                    pattern_names[pat]);
            for (int k = 0; k < nph; k++) {
                jl += (size_t) snprintf(json + jl, json_cap - jl, "%s%.1f", k ? "," : "",
                                        phase_mbps[k]);
            }
            jl += (size_t) snprintf(json + jl, json_cap - jl, "]");
            if (me == 0) {
                printf("#   %zu B %-10s per phase (MB/s, all ranks):", size, pattern_names[pat]);
                for (int k = 0; k < nph; k++) {
                    printf(" %.0f", phase_mbps[k]);
                }
                printf("\n");
            }
        }
        snprintf(json + jl, json_cap - jl, "}");
        static const char *const names[] = {"aapc_mbps", "pairwise_mbps", "cumulative_mbps",
                                            "random_mbps"};
        xb_row(size, iters, NPATTERNS, names, agg, json);
    } while ((size = xb_next_size(&o, size)) != 0);
    free(json);
    free(phase_mbps);
    free(perm);
    free(sbuf);
    free(rbuf);
    return xb_finish();
}
