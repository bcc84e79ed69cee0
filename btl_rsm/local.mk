# btl rsm: Sun-MPI memory-to-memory messaging (seed 000) over a segment transport.
# The protocol core (rsm_*.c: postboxes and parser, block pool, segment transport)
# needs no MPI and is also linked into the unit tests and the fuzz target.
RSM_CORE_SOURCES = \
	btl_rsm/rsm_seg.h btl_rsm/rsm_seg_shm.c \
	btl_rsm/rsm_postbox.h btl_rsm/rsm_postbox.c \
	btl_rsm/rsm_pool.h btl_rsm/rsm_pool.c \
	btl_rsm/rsm_copy.h btl_rsm/rsm_help.h btl_rsm/rsm_distance.h \
	btl_rsm/rsm_cache.h btl_rsm/rsm_cache.c

ompicomp_LTLIBRARIES += btl_rsm/mca_btl_rsm.la
btl_rsm_mca_btl_rsm_la_SOURCES = \
	$(RSM_CORE_SOURCES) \
	btl_rsm/btl_rsm.h \
	btl_rsm/btl_rsm_component.c \
	btl_rsm/btl_rsm_module.c \
	btl_rsm/btl_rsm_endpoint.c \
	btl_rsm/btl_rsm_frag.h btl_rsm/btl_rsm_frag.c \
	btl_rsm/btl_rsm_send.c \
	btl_rsm/btl_rsm_recv.c \
	btl_rsm/btl_rsm_get.c \
	btl_rsm/btl_rsm_rma.c \
	btl_rsm/btl_rsm_pvar.c \
	btl_rsm/btl_rsm_verbs.c btl_rsm/rsm_verbs.h
btl_rsm_mca_btl_rsm_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS)
# optimised as CFLAGS say (-g -O2 by default): a "-O3" here came before CFLAGS on the
# compile line and never took effect, and rsm built at -O3 measured the same as at -O2
# (latency and message rate 1-64 B, 15 runs each, 0.97-1.03; 2026-11-29)
btl_rsm_mca_btl_rsm_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS)
btl_rsm_mca_btl_rsm_la_LDFLAGS = -module -avoid-version $(XBTL_COMPONENT_LDFLAGS)
btl_rsm_mca_btl_rsm_la_LIBADD = common/libxbtl_common.la $(OPAL_LIBS)
if HAVE_VERBS
# the RDMA-write back end (btl_rsm_verbs.c); without libibverbs only local peers
btl_rsm_mca_btl_rsm_la_SOURCES += btl_rsm/rsm_verbs.c
btl_rsm_mca_btl_rsm_la_LIBADD += -libverbs
endif
ompihelp_DATA += btl_rsm/help-btl-rsm.txt
EXTRA_DIST += btl_rsm/help-btl-rsm.txt test/fuzz test/rsm

# Unit tests of the protocol core (TAP, run by test/run).
check_PROGRAMS += test/unit/t_rsm_postbox test/unit/t_rsm_pool test/unit/t_rsm_seg test/unit/t_rsm_copy test/unit/t_rsm_help \
	test/unit/t_rsm_distance test/unit/t_rsm_vmsg test/unit/t_rsm_cache
test_unit_t_rsm_postbox_SOURCES = test/unit/t_rsm_postbox.c btl_rsm/rsm_postbox.c
test_unit_t_rsm_postbox_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_postbox_LDADD =
test_unit_t_rsm_pool_SOURCES = test/unit/t_rsm_pool.c btl_rsm/rsm_pool.c btl_rsm/rsm_postbox.c
test_unit_t_rsm_pool_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_pool_LDADD =
test_unit_t_rsm_seg_SOURCES = test/unit/t_rsm_seg.c btl_rsm/rsm_seg_shm.c
test_unit_t_rsm_seg_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_seg_LDADD = -lrt
test_unit_t_rsm_copy_SOURCES = test/unit/t_rsm_copy.c btl_rsm/rsm_copy.h
test_unit_t_rsm_copy_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_copy_LDADD =
test_unit_t_rsm_help_SOURCES = test/unit/t_rsm_help.c btl_rsm/rsm_help.h
test_unit_t_rsm_help_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_help_LDADD =
test_unit_t_rsm_distance_SOURCES = test/unit/t_rsm_distance.c btl_rsm/rsm_distance.h
test_unit_t_rsm_distance_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_distance_LDADD =
test_unit_t_rsm_cache_SOURCES = test/unit/t_rsm_cache.c btl_rsm/rsm_cache.c btl_rsm/rsm_cache.h
test_unit_t_rsm_cache_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit
test_unit_t_rsm_cache_LDADD =
# the verbs handshake's checks, without a device
test_unit_t_rsm_vmsg_SOURCES = test/unit/t_rsm_vmsg.c btl_rsm/rsm_verbs.c btl_rsm/rsm_verbs.h
test_unit_t_rsm_vmsg_CPPFLAGS = -I$(top_srcdir)/btl_rsm -I$(top_srcdir)/test/unit -DRSM_VMSG_ONLY
test_unit_t_rsm_vmsg_LDADD =

# MPI programs the rsm test scripts (test/rsm/t-*.sh) launch.
check_PROGRAMS += test/rsm/rsm_soak test/rsm/rsm_abort test/rsm/rsm_floor test/rsm/rsm_numa test/rsm/rsm_rma \
	test/rsm/rsm_lapwrap test/rsm/rsm_first_send test/rsm/rsm_cma_fault test/rsm/rsm_queue_corrupt
test_rsm_rsm_rma_SOURCES = test/rsm/rsm_rma.c test/mpi/mpit_bind.h
test_rsm_rsm_rma_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/test/mpi
test_rsm_rsm_rma_LDADD = $(MPI_LIBS)
test_rsm_rsm_soak_SOURCES = test/rsm/rsm_soak.c
test_rsm_rsm_soak_CPPFLAGS = $(MPI_CFLAGS)
test_rsm_rsm_soak_LDADD = $(MPI_LIBS)
test_rsm_rsm_abort_SOURCES = test/rsm/rsm_abort.c
test_rsm_rsm_abort_CPPFLAGS = $(MPI_CFLAGS)
test_rsm_rsm_abort_LDADD = $(MPI_LIBS)
test_rsm_rsm_lapwrap_SOURCES = test/rsm/rsm_lapwrap.c
test_rsm_rsm_lapwrap_CPPFLAGS = $(MPI_CFLAGS)
test_rsm_rsm_lapwrap_LDADD = $(MPI_LIBS)
test_rsm_rsm_first_send_SOURCES = test/rsm/rsm_first_send.c
test_rsm_rsm_first_send_CPPFLAGS = $(MPI_CFLAGS)
test_rsm_rsm_first_send_LDADD = $(MPI_LIBS)
# a single-copy read that fails: process_vm_readv defined by the program itself, so the
# component's calls reach it (--export-dynamic)
test_rsm_rsm_cma_fault_SOURCES = test/rsm/rsm_cma_fault.c test/mpi/mpit_bind.h
test_rsm_rsm_cma_fault_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/test/mpi
test_rsm_rsm_cma_fault_LDFLAGS = -Wl,--export-dynamic
test_rsm_rsm_cma_fault_LDADD = $(MPI_LIBS)
# a malformed postbox group forged in a live queue: the job must end with a reason
test_rsm_rsm_queue_corrupt_SOURCES = test/rsm/rsm_queue_corrupt.c
test_rsm_rsm_queue_corrupt_CPPFLAGS = $(MPI_CFLAGS) -I$(top_srcdir)/btl_rsm
test_rsm_rsm_queue_corrupt_LDADD = $(MPI_LIBS)
test_rsm_rsm_numa_SOURCES = test/rsm/rsm_numa.c
test_rsm_rsm_numa_CPPFLAGS = $(MPI_CFLAGS)
test_rsm_rsm_numa_LDADD = $(MPI_LIBS)
# the machine's floors (cache-line ping-pong, memcpy) the speed figures are set against
test_rsm_rsm_floor_SOURCES = test/rsm/rsm_floor.c
test_rsm_rsm_floor_CFLAGS = -O2 -pthread
test_rsm_rsm_floor_LDADD = -lpthread

# The libFuzzer target for the postbox parser is built by clang from its test
# script (test/fuzz/t-rsm-fuzz.sh), since the project's CC may be gcc.
