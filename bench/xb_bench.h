/*
 * Shared frame of the xb-* MPI micro-benchmarks: options, size sweep,
 * iteration counts, verification bookkeeping and output (OSU-style columns on
 * stdout plus one JSON line per row, which bench/compare.py reads).
 */
#ifndef XB_BENCH_H
#define XB_BENCH_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "xb_pattern.h"

struct xb_opts {
    size_t min_size, max_size; /* sweep min..max in powers of two (0 first when min is 0) */
    int iters;                 /* iterations at small sizes; scaled down for large ones */
    int warmup;                /* untimed iterations before each size */
    int window;                /* messages in flight per iteration (bandwidth tests) */
    bool verify;               /* check every received byte (-n turns it off for timing) */
};

extern int xb_rank, xb_nprocs;
extern const char *xb_name;

/* A benchmark's own option, taken out of argv before xb_init sees the rest: NAME
 * alone (a flag: returns NAME) or NAME VALUE (returns VALUE); NULL when absent. */
const char *xb_take_option(int *argc, char **argv, const char *name, bool has_value);

/* MPI_Init, then parse options over the given defaults.  Exits with usage on bad input. */
void xb_init(int *argc, char ***argv, const char *name, const char *summary, struct xb_opts *o);

/* Next size of the sweep after `size`, or 0 when done.  Start with xb_first_size(). */
size_t xb_first_size(const struct xb_opts *o);
size_t xb_next_size(const struct xb_opts *o, size_t size);

/* Iterations for this size: o->iters up to 16 KiB, then inversely to size (at least 10). */
int xb_iters_for(const struct xb_opts *o, size_t size);

/* Window for this size: o->window, capped so window * size stays within 64 MiB. */
int xb_window_for(const struct xb_opts *o, size_t size);

/* Bytes a window of the sweep's largest size needs: the most any size of it needs,
 * since window * size only grows with size until the 64 MiB cap. */
size_t xb_window_bytes(const struct xb_opts *o);

/* Median of v[0..n) (reorders v).  The benchmarks time each window (or block of
 * round trips) and report the median, so a host preempting a vCPU for a few ms
 * moves one sample, not the row; the mean goes into the JSON beside it. */
double xb_median(double *v, int n);

/* Page-aligned, zeroed, touched allocation; aborts the job when out of memory. */
void *xb_alloc(size_t bytes);

/* Check a received message against its pattern; records and reports a mismatch. */
void xb_check(const void *buf, size_t len, int src, unsigned long iter, int tag);

/* Half the round trip of one cache line between ranks 0 and 1 in ns (the cores'
 * placement, see xb_bench.c), or -1 when they do not share a node.  Collective. */
double xb_probe(void);

/* Column header (rank 0 prints it). */
void xb_header(const char *columns);

/* One result row: fields are "name", value pairs, printed as columns and as JSON,
 * with the placement probe taken before and after the row ("probe_ns").  Collective
 * (every rank calls it), only rank 0 prints.  `extra_json` (may be NULL) is appended verbatim inside the object. */
void xb_row(size_t size, int iters, int nfields, const char *const names[], const double values[],
            const char *extra_json);

/* Reduce verification failures over all ranks, finalize; returns the process exit status. */
int xb_finish(void);

#endif
