# Code shared by all components: run-time Open MPI version check, help directory, the
# "named by the job?" check (xbtl_optin.h), counters as MPI_T pvars (xbtl_pvar.h) and
# one-sided atomics done by the target's CPU (xbtl_amo.h, header only: rsm and pmeth).
noinst_LTLIBRARIES += common/libxbtl_common.la
common_libxbtl_common_la_SOURCES = common/xbtl_compat.c common/xbtl_version.c common/xbtl_compat.h \
	common/xbtl_optin.c common/xbtl_optin_mca.c common/xbtl_optin.h \
	common/xbtl_pvar.c common/xbtl_pvar.h common/xbtl_amo.h
common_libxbtl_common_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS)
common_libxbtl_common_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS)
ompihelp_DATA += common/help-xbtl-common.txt
EXTRA_DIST += common/help-xbtl-common.txt

# Unit test of the selection-list check (no Open MPI needed).
check_PROGRAMS += test/unit/t_optin
test_unit_t_optin_SOURCES = test/unit/t_optin.c common/xbtl_optin.c
test_unit_t_optin_CPPFLAGS = -I$(top_srcdir)/common -I$(top_srcdir)/test/unit
test_unit_t_optin_LDADD =

# Unit test of the one-sided atomics and the osc rdma lock watch (no Open MPI needed).
check_PROGRAMS += test/unit/t_xbtl_amo
test_unit_t_xbtl_amo_SOURCES = test/unit/t_xbtl_amo.c common/xbtl_amo.h
test_unit_t_xbtl_amo_CPPFLAGS = -I$(top_srcdir)/common -I$(top_srcdir)/test/unit
test_unit_t_xbtl_amo_LDADD =
