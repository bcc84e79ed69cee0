# apm: path migration (seed 004) as a plain-C library -- paths, connections, the
# MIGRATED -> REARM -> ARMED -> MIGRATED state machine and its event thread.  No MPI:
# a convenience library the transports link in (btl_pmeth first), built with hidden
# symbols like the components it goes into.
noinst_LTLIBRARIES += apm/libapm.la
apm_libapm_la_SOURCES = apm/apm.h apm/apm_path.c \
	apm/apm_resync.h apm/apm_ring.h apm/apm_thread.h apm/apm_thread.c
apm_libapm_la_CFLAGS = $(XBTL_WARN_CFLAGS) $(XBTL_COMPONENT_CFLAGS) -pthread
apm_libapm_la_LIBADD = -lpthread
EXTRA_DIST += apm/README.md

# Every transition, legal or not; random event orders against an invariant checker;
# the thread racing the main thread; netlink link changes from a veth pair in a
# namespace of the test's own.
check_PROGRAMS += test/unit/t_apm
test_unit_t_apm_SOURCES = test/unit/t_apm.c
test_unit_t_apm_CPPFLAGS = -I$(top_srcdir)/apm -I$(top_srcdir)/test/unit
test_unit_t_apm_CFLAGS = $(XBTL_WARN_CFLAGS) -pthread
test_unit_t_apm_LDADD = apm/libapm.la -lpthread

# The paper's micro-benchmark (Figs. 5-6): MIGRATED -> ARMED and ARMED -> MIGRATED
# for 1..512 connections through the event thread.  Built by make check, not a test.
check_PROGRAMS += test/apm/apm_bench
test_apm_apm_bench_SOURCES = test/apm/apm_bench.c
test_apm_apm_bench_CPPFLAGS = -I$(top_srcdir)/apm
test_apm_apm_bench_CFLAGS = $(XBTL_WARN_CFLAGS) -O2 -pthread
test_apm_apm_bench_LDADD = apm/libapm.la -lpthread
