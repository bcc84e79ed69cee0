# btl pmeth: PM/Ethernet-HXB's buffer arrays (seeds 001, 003) over raw Ethernet.
# The protocol core (pmeth_*.c: wire format and parser, reliability window, ring
# I/O) needs no MPI and is also linked into the unit tests and the fuzz target.
PMETH_CORE_SOURCES = \
	btl_pmeth/pmeth_wire.h btl_pmeth/pmeth_wire.c \
	btl_pmeth/pmeth_window.h btl_pmeth/pmeth_window.c \
	btl_pmeth/pmeth_ring.h btl_pmeth/pmeth_ring_packet.c

ompicomp_LTLIBRARIES += btl_pmeth/mca_btl_pmeth.la
btl_pmeth_mca_btl_pmeth_la_SOURCES = \
	$(PMETH_CORE_SOURCES) \
	btl_pmeth/btl_pmeth.h \
	btl_pmeth/btl_pmeth_component.c \
	btl_pmeth/btl_pmeth_module.c \
	btl_pmeth/btl_pmeth_endpoint.c \
	btl_pmeth/btl_pmeth_frag.h btl_pmeth/btl_pmeth_frag.c \
	btl_pmeth/btl_pmeth_send.c \
	btl_pmeth/btl_pmeth_recv.c \
	btl_pmeth/btl_pmeth_pvar.c
btl_pmeth_mca_btl_pmeth_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS)
btl_pmeth_mca_btl_pmeth_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS) -O3
btl_pmeth_mca_btl_pmeth_la_LDFLAGS = -module -avoid-version $(XBTL_COMPONENT_LDFLAGS)
btl_pmeth_mca_btl_pmeth_la_LIBADD = common/libxbtl_common.la $(OPAL_LIBS)
ompihelp_DATA += btl_pmeth/help-btl-pmeth.txt
EXTRA_DIST += btl_pmeth/help-btl-pmeth.txt btl_pmeth/README.md

# Unit tests of the protocol core (TAP, run by test/run).
check_PROGRAMS += test/unit/t_pmeth_wire test/unit/t_pmeth_window
test_unit_t_pmeth_wire_SOURCES = test/unit/t_pmeth_wire.c btl_pmeth/pmeth_wire.c
test_unit_t_pmeth_wire_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_wire_LDADD =
test_unit_t_pmeth_window_SOURCES = test/unit/t_pmeth_window.c btl_pmeth/pmeth_window.c
test_unit_t_pmeth_window_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_window_LDADD =
