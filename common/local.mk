# Code shared by all components: run-time Open MPI version check, help directory.
noinst_LTLIBRARIES += common/libxbtl_common.la
common_libxbtl_common_la_SOURCES = common/xbtl_compat.c common/xbtl_version.c common/xbtl_compat.h
common_libxbtl_common_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS)
common_libxbtl_common_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS)
ompihelp_DATA += common/help-xbtl-common.txt
EXTRA_DIST += common/help-xbtl-common.txt
