# btl rsm: Sun-MPI memory-to-memory messaging (seed 000) over a segment transport.
# The protocol core (rsm_*.c: postboxes and parser, block pool, segment transport)
# needs no MPI and is also linked into the unit tests and the fuzz target.
RSM_CORE_SOURCES = \
	btl_rsm/rsm_seg.h btl_rsm/rsm_seg_shm.c \
	btl_rsm/rsm_postbox.h btl_rsm/rsm_postbox.c \
	btl_rsm/rsm_pool.h btl_rsm/rsm_pool.c

ompicomp_LTLIBRARIES += btl_rsm/mca_btl_rsm.la
btl_rsm_mca_btl_rsm_la_SOURCES = \
	$(RSM_CORE_SOURCES) \
	btl_rsm/btl_rsm.h \
	btl_rsm/btl_rsm_component.c \
	btl_rsm/btl_rsm_module.c \
	btl_rsm/btl_rsm_endpoint.c \
	btl_rsm/btl_rsm_frag.h btl_rsm/btl_rsm_frag.c \
	btl_rsm/btl_rsm_send.c \
	btl_rsm/btl_rsm_recv.c
btl_rsm_mca_btl_rsm_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS)
btl_rsm_mca_btl_rsm_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS) -O3
btl_rsm_mca_btl_rsm_la_LDFLAGS = -module -avoid-version $(XBTL_COMPONENT_LDFLAGS)
btl_rsm_mca_btl_rsm_la_LIBADD = common/libxbtl_common.la $(OPAL_LIBS)
ompihelp_DATA += btl_rsm/help-btl-rsm.txt
EXTRA_DIST += btl_rsm/help-btl-rsm.txt test/fuzz test/rsm

# The libFuzzer target for the postbox parser is built by clang from its test
# script (test/fuzz/t-rsm-fuzz.sh), since the project's CC may be gcc.
