# Tests: plain-C unit tests (TAP), MPI programs with data verification, external suites.
# `make check` builds them; test/run runs everything and prints the summary.
check_PROGRAMS += test/unit/t_pattern test/unit/t_version
test_unit_t_pattern_SOURCES = test/unit/t_pattern.c bench/xb_pattern.c
test_unit_t_pattern_CPPFLAGS = -I$(top_srcdir)/bench -I$(top_srcdir)/test/unit
test_unit_t_version_SOURCES = test/unit/t_version.c common/xbtl_version.c
test_unit_t_version_CPPFLAGS = -I$(top_srcdir)/common -I$(top_srcdir)/test/unit
test_unit_t_version_LDADD =
test_unit_t_pattern_LDADD =

# `make check` only builds; the runner (test/run) decides what runs and counts it.
check-local:
	@echo "built the tests; run them with: test/run"

# MPI programs the test scripts launch with mpirun (not run alone by test/run).
check_PROGRAMS += test/mpi/mpi_p2p
test_mpi_mpi_p2p_SOURCES = test/mpi/mpi_p2p.c bench/xb_pattern.c
test_mpi_mpi_p2p_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
test_mpi_mpi_p2p_LDADD = $(MPI_LIBS)

# one message larger than 4 GiB, verified (test/mpi/t-huge.sh, t-pmeth-vcluster)
check_PROGRAMS += test/mpi/mpi_huge
test_mpi_mpi_huge_SOURCES = test/mpi/mpi_huge.c bench/xb_pattern.c
test_mpi_mpi_huge_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
test_mpi_mpi_huge_LDADD = $(MPI_LIBS)

# The virtual cluster's host test (test/vcluster/t-hosts.sh): host names, the shared-memory
# split and one verified stream between two chosen ranks.
check_PROGRAMS += test/vcluster/vc_hosts
test_vcluster_vc_hosts_SOURCES = test/vcluster/vc_hosts.c bench/xb_pattern.c
test_vcluster_vc_hosts_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
test_vcluster_vc_hosts_LDADD = $(MPI_LIBS)

# MPI_T reader of btl rsm's performance variables (test/mpi/t-mpit.sh, test/build/t-optin.sh).
check_PROGRAMS += test/mpi/mpit_read
test_mpi_mpit_read_SOURCES = test/mpi/mpit_read.c test/mpi/mpit_bind.h bench/xb_pattern.c
test_mpi_mpit_read_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
test_mpi_mpit_read_LDADD = $(MPI_LIBS)
# several threads a rank sending and progressing at once, MPI_THREAD_MULTIPLE
# (test/mpi/t-threads.sh, t-pmeth-vcluster, t-rsm-verbs)
check_PROGRAMS += test/mpi/mpi_threads
test_mpi_mpi_threads_SOURCES = test/mpi/mpi_threads.c bench/xb_pattern.c
test_mpi_mpi_threads_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
test_mpi_mpi_threads_LDADD = $(MPI_LIBS) -lpthread
# a rank away from MPI when its peer first sends to it (pmeth's probes, rsm's connection
# requests: t-pmeth-vcluster, t-rsm-verbs)
check_PROGRAMS += test/mpi/mpi_late
test_mpi_mpi_late_SOURCES = test/mpi/mpi_late.c bench/xb_pattern.c
test_mpi_mpi_late_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench
test_mpi_mpi_late_LDADD = $(MPI_LIBS)

# btl pmeth's memory per process (test/pmeth/t-pmeth-memory.sh): the MPI program that reads
# it through MPI_T after an all-to-all, and the sizes its formula is made of in this build.
check_PROGRAMS += test/pmeth/pmeth_memory test/pmeth/pmeth_memory_sizes
test_pmeth_pmeth_memory_SOURCES = test/pmeth/pmeth_memory.c test/mpi/mpit_bind.h bench/xb_pattern.c
test_pmeth_pmeth_memory_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench -I$(top_srcdir)/test/mpi
test_pmeth_pmeth_memory_LDADD = $(MPI_LIBS)
# btl pmeth's path migration, timed: pauses of a verified ping-pong through link faults
# (bench/pmeth-failover.sh), and the apm variables read through MPI_T.
check_PROGRAMS += test/pmeth/pmeth_away
test_pmeth_pmeth_away_SOURCES = test/pmeth/pmeth_away.c test/mpi/mpit_bind.h bench/xb_pattern.c
test_pmeth_pmeth_away_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench -I$(top_srcdir)/test/mpi
test_pmeth_pmeth_away_LDADD = $(MPI_LIBS)
check_PROGRAMS += test/pmeth/pmeth_rma_away
test_pmeth_pmeth_rma_away_SOURCES = test/pmeth/pmeth_rma_away.c test/mpi/mpit_bind.h bench/xb_pattern.c
test_pmeth_pmeth_rma_away_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench -I$(top_srcdir)/test/mpi
test_pmeth_pmeth_rma_away_LDADD = $(MPI_LIBS)
# a receiver away from MPI while frames to it are in flight: no path may be blamed
# (test/pmeth/t-pmeth-apm.sh)
check_PROGRAMS += test/pmeth/pmeth_recv_away
test_pmeth_pmeth_recv_away_SOURCES = test/pmeth/pmeth_recv_away.c
test_pmeth_pmeth_recv_away_CPPFLAGS = $(MPI_CFLAGS)
test_pmeth_pmeth_recv_away_LDADD = $(MPI_LIBS)
check_PROGRAMS += test/pmeth/pmeth_failover
test_pmeth_pmeth_failover_SOURCES = test/pmeth/pmeth_failover.c test/mpi/mpit_bind.h bench/xb_pattern.c
test_pmeth_pmeth_failover_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/bench -I$(top_srcdir)/test/mpi
test_pmeth_pmeth_failover_LDADD = $(MPI_LIBS)
test_pmeth_pmeth_memory_sizes_SOURCES = test/pmeth/pmeth_memory_sizes.c btl_pmeth/pmeth_window.c
test_pmeth_pmeth_memory_sizes_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS) -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/apm
test_pmeth_pmeth_memory_sizes_LDADD = apm/libapm.la -lpthread
