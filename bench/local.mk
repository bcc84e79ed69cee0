# MPI micro-benchmarks (verified payloads, OSU-style columns + JSON lines) and their runner.
XB_BENCH_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
XB_BENCH_LDADD = bench/libxbbench.a $(MPI_LIBS)
noinst_LIBRARIES = bench/libxbbench.a
bench_libxbbench_a_SOURCES = bench/xb_bench.c bench/xb_bench.h bench/xb_pattern.c bench/xb_pattern.h
bench_libxbbench_a_CPPFLAGS = $(XB_BENCH_CPPFLAGS)
bench_libxbbench_a_CFLAGS = $(XBTL_WARN_CFLAGS) -O2

XB_BENCHMARKS = bench/xb-latency bench/xb-bw bench/xb-bibw bench/xb-mbw-mr bench/xb-halo3d \
	bench/xb-ring bench/xb-alltoall bench/xb-dense bench/xb-incast
noinst_PROGRAMS += $(XB_BENCHMARKS)
bench_xb_latency_SOURCES = bench/xb_latency.c
bench_xb_bw_SOURCES = bench/xb_bw.c
bench_xb_bibw_SOURCES = bench/xb_bw.c
bench_xb_bibw_CPPFLAGS = $(XB_BENCH_CPPFLAGS) -DXB_BIDIR
bench_xb_mbw_mr_SOURCES = bench/xb_mbw_mr.c
bench_xb_halo3d_SOURCES = bench/xb_halo3d.c
bench_xb_ring_SOURCES = bench/xb_ring.c
bench_xb_alltoall_SOURCES = bench/xb_alltoall.c
bench_xb_dense_SOURCES = bench/xb_dense.c
bench_xb_incast_SOURCES = bench/xb_incast.c
AM_CPPFLAGS = $(XB_BENCH_CPPFLAGS)
AM_CFLAGS = $(XBTL_WARN_CFLAGS) -O2
LDADD = $(XB_BENCH_LDADD)
EXTRA_DIST += bench/compare.py
