# btl pmeth: PM/Ethernet-HXB's buffer arrays (seeds 001, 003) over raw Ethernet.
# The protocol core (pmeth_*.c: wire format and parser, reliability window, ring
# I/O) needs no MPI and is also linked into the unit tests and the fuzz target.
PMETH_CORE_SOURCES = \
	btl_pmeth/pmeth_wire.h btl_pmeth/pmeth_wire.c \
	btl_pmeth/pmeth_window.h btl_pmeth/pmeth_window.c \
	btl_pmeth/pmeth_credit.h btl_pmeth/pmeth_credit.c \
	btl_pmeth/pmeth_pace.h btl_pmeth/pmeth_pace.c \
	btl_pmeth/pmeth_pathprobe.h btl_pmeth/pmeth_pathprobe.c \
	btl_pmeth/pmeth_ring.h btl_pmeth/pmeth_ring_packet.c \
	btl_pmeth/pmeth_filter.h btl_pmeth/pmeth_filter.c \
	btl_pmeth/pmeth_tc.h btl_pmeth/pmeth_tc.c \
	btl_pmeth/pmeth_rma_wire.h

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
	btl_pmeth/btl_pmeth_apm.c \
	btl_pmeth/btl_pmeth_keeper.c \
	btl_pmeth/btl_pmeth_rma.c \
	btl_pmeth/btl_pmeth_pvar.c
btl_pmeth_mca_btl_pmeth_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS) -I$(top_srcdir)/apm
# optimised as CFLAGS say (-g -O2 by default; see btl_rsm/local.mk)
btl_pmeth_mca_btl_pmeth_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS)
btl_pmeth_mca_btl_pmeth_la_LDFLAGS = -module -avoid-version $(XBTL_COMPONENT_LDFLAGS)
btl_pmeth_mca_btl_pmeth_la_LIBADD = common/libxbtl_common.la apm/libapm.la $(OPAL_LIBS) -lpthread
ompihelp_DATA += btl_pmeth/help-btl-pmeth.txt
EXTRA_DIST += btl_pmeth/help-btl-pmeth.txt btl_pmeth/README.md

# Unit tests of the protocol core (TAP, run by test/run).
check_PROGRAMS += test/unit/t_pmeth_wire test/unit/t_pmeth_window test/unit/t_pmeth_credit \
	test/unit/t_pmeth_pace test/unit/t_pmeth_pathprobe test/unit/t_pmeth_rma test/unit/t_pmeth_tc
test_unit_t_pmeth_wire_SOURCES = test/unit/t_pmeth_wire.c btl_pmeth/pmeth_wire.c
test_unit_t_pmeth_wire_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_wire_LDADD =
test_unit_t_pmeth_tc_SOURCES = test/unit/t_pmeth_tc.c btl_pmeth/pmeth_tc.c
test_unit_t_pmeth_tc_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_tc_LDADD =
test_unit_t_pmeth_window_SOURCES = test/unit/t_pmeth_window.c btl_pmeth/pmeth_window.c
test_unit_t_pmeth_window_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_window_LDADD =
test_unit_t_pmeth_credit_SOURCES = test/unit/t_pmeth_credit.c btl_pmeth/pmeth_credit.c
test_unit_t_pmeth_credit_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_credit_LDADD =
test_unit_t_pmeth_pace_SOURCES = test/unit/t_pmeth_pace.c btl_pmeth/pmeth_pace.c
test_unit_t_pmeth_pace_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_pace_LDADD =
test_unit_t_pmeth_pathprobe_SOURCES = test/unit/t_pmeth_pathprobe.c btl_pmeth/pmeth_pathprobe.c
test_unit_t_pmeth_pathprobe_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_pathprobe_LDADD =
test_unit_t_pmeth_rma_SOURCES = test/unit/t_pmeth_rma.c btl_pmeth/pmeth_rma_wire.h
test_unit_t_pmeth_rma_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_rma_LDADD =

# ---- Ring I/O: the AF_XDP back end (built when configure found libxdp, libbpf and clang) ----
# Our XDP program (pmeth_xdp_kern.c) is compiled for the BPF target and embedded in the
# component as a byte array, so nothing has to be installed beside it.  Without these
# tools the AF_PACKET rings are the only back end and PMETH_IO_XDP says it was not built.
PMETH_RING_SRC = btl_pmeth/pmeth_ring.h btl_pmeth/pmeth_ring_packet.c \
	btl_pmeth/pmeth_filter.h btl_pmeth/pmeth_filter.c
PMETH_RING_DEFS =
PMETH_RING_LINK =
PMETH_XDP_SRC =
PMETH_XDP_GEN =
EXTRA_DIST += btl_pmeth/pmeth_xdp_kern.c
if HAVE_XDP
if HAVE_CLANG
PMETH_XDP_SRC += btl_pmeth/pmeth_ring_xdp.c
PMETH_XDP_GEN += btl_pmeth/pmeth_xdp_kern_obj.c
btl_pmeth_mca_btl_pmeth_la_SOURCES += $(PMETH_XDP_SRC)
nodist_btl_pmeth_mca_btl_pmeth_la_SOURCES = $(PMETH_XDP_GEN)
btl_pmeth_mca_btl_pmeth_la_CPPFLAGS += -DPMETH_RING_HAVE_XDP=1
btl_pmeth_mca_btl_pmeth_la_LIBADD += $(XDP_LIBS)
PMETH_RING_DEFS += -DPMETH_RING_HAVE_XDP=1
PMETH_RING_LINK += $(XDP_LIBS)
CLEANFILES += btl_pmeth/pmeth_xdp_kern.bpf.o btl_pmeth/pmeth_xdp_kern_obj.c
# -target bpf does not search the multiarch include directory (asm/types.h)
btl_pmeth/pmeth_xdp_kern.bpf.o: $(top_srcdir)/btl_pmeth/pmeth_xdp_kern.c
	@mkdir -p btl_pmeth
	$(CLANG) -O2 -g -Wall -target bpf -I/usr/include/$$($(CC) -dumpmachine) -c $< -o $@
btl_pmeth/pmeth_xdp_kern_obj.c: btl_pmeth/pmeth_xdp_kern.bpf.o
	{ echo '/* generated from btl_pmeth/pmeth_xdp_kern.c: the XDP program, embedded */'; \
	  echo '#include <stddef.h>'; \
	  echo 'extern const unsigned char pmeth_xdp_kern_obj[];'; \
	  echo 'extern const size_t pmeth_xdp_kern_obj_len;'; \
	  echo 'const unsigned char pmeth_xdp_kern_obj[] = {'; \
	  od -An -v -tx1 btl_pmeth/pmeth_xdp_kern.bpf.o | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; \
	  echo 'const size_t pmeth_xdp_kern_obj_len = sizeof(pmeth_xdp_kern_obj);'; } > $@.tmp
	mv $@.tmp $@
endif
endif

# The ring layer's test program (test/pmeth/t-pmeth-ring.sh runs it in namespaces) and the
# raw-frame ping-pong floor (test/pmeth/pmeth_floor): no MPI, the ring API only.
check_PROGRAMS += test/pmeth/pmeth_ringtest test/pmeth/pmeth_floor
test_pmeth_pmeth_ringtest_SOURCES = test/pmeth/pmeth_ringtest.c test/pmeth/ring_common.h $(PMETH_RING_SRC) \
	$(PMETH_XDP_SRC)
nodist_test_pmeth_pmeth_ringtest_SOURCES = $(PMETH_XDP_GEN)
test_pmeth_pmeth_ringtest_CPPFLAGS = -I$(top_srcdir)/btl_pmeth $(PMETH_RING_DEFS)
test_pmeth_pmeth_ringtest_CFLAGS = $(XBTL_WARN_CFLAGS) -O2
test_pmeth_pmeth_ringtest_LDADD = $(PMETH_RING_LINK)
test_pmeth_pmeth_floor_SOURCES = test/pmeth/pmeth_floor.c test/pmeth/ring_common.h $(PMETH_RING_SRC) \
	$(PMETH_XDP_SRC)
nodist_test_pmeth_pmeth_floor_SOURCES = $(PMETH_XDP_GEN)
test_pmeth_pmeth_floor_CPPFLAGS = -I$(top_srcdir)/btl_pmeth $(PMETH_RING_DEFS)
test_pmeth_pmeth_floor_CFLAGS = $(XBTL_WARN_CFLAGS) -O2
test_pmeth_pmeth_floor_LDADD = $(PMETH_RING_LINK)

# ---- Ordinary users without CAP_NET_RAW: pmeth-helperd opens the sockets for them ----
# The protocol (pmeth_helper_proto.*) and the job's side (pmeth_helper_client.*) are
# plain C, linked into the component, the root daemon and the unit test.
PMETH_HELPER_SRC = btl_pmeth/pmeth_helper_proto.h btl_pmeth/pmeth_helper_proto.c
btl_pmeth_mca_btl_pmeth_la_SOURCES += $(PMETH_HELPER_SRC) \
	btl_pmeth/pmeth_helper_client.h btl_pmeth/pmeth_helper_client.c

# The daemon runs as root and parses what any local user sends: hardened build.
sbin_PROGRAMS = btl_pmeth/helper/pmeth-helperd
btl_pmeth_helper_pmeth_helperd_SOURCES = btl_pmeth/helper/pmeth_helperd.c $(PMETH_HELPER_SRC) \
	btl_pmeth/pmeth_filter.h btl_pmeth/pmeth_filter.c btl_pmeth/pmeth_wire.h btl_pmeth/pmeth_wire.c
btl_pmeth_helper_pmeth_helperd_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -D_FORTIFY_SOURCE=2
btl_pmeth_helper_pmeth_helperd_CFLAGS = $(XBTL_WARN_CFLAGS) -O2 -fstack-protector-strong -fPIE
btl_pmeth_helper_pmeth_helperd_LDFLAGS = -pie -Wl,-z,relro,-z,now
btl_pmeth_helper_pmeth_helperd_LDADD =
if HAVE_XDP
if HAVE_CLANG
# where the site allows it, the helper sets up AF_XDP sockets with the ring layer's own code
btl_pmeth_helper_pmeth_helperd_SOURCES += $(PMETH_XDP_SRC)
nodist_btl_pmeth_helper_pmeth_helperd_SOURCES = $(PMETH_XDP_GEN)
btl_pmeth_helper_pmeth_helperd_CPPFLAGS += -DPMETH_RING_HAVE_XDP=1
btl_pmeth_helper_pmeth_helperd_LDADD += $(XDP_LIBS)
endif
endif
EXTRA_DIST += btl_pmeth/helper/pmeth-helper.conf btl_pmeth/helper/pmeth-helperd.service
# The same daemon as it was before the protocol's optional flags (pmeth_helper_proto.h):
# t-pmeth-helper.sh runs jobs against it, which must ask again without them.
check_PROGRAMS += test/pmeth/pmeth_helperd_before
test_pmeth_pmeth_helperd_before_SOURCES = $(btl_pmeth_helper_pmeth_helperd_SOURCES)
nodist_test_pmeth_pmeth_helperd_before_SOURCES = $(nodist_btl_pmeth_helper_pmeth_helperd_SOURCES)
test_pmeth_pmeth_helperd_before_CPPFLAGS = $(btl_pmeth_helper_pmeth_helperd_CPPFLAGS) \
	-DPMETH_HELPER_BEFORE_FLAGS=1
test_pmeth_pmeth_helperd_before_CFLAGS = $(XBTL_WARN_CFLAGS) -O2
test_pmeth_pmeth_helperd_before_LDADD = $(btl_pmeth_helper_pmeth_helperd_LDADD)

check_PROGRAMS += test/unit/t_pmeth_helper test/pmeth/pmeth_helper_ask
test_unit_t_pmeth_helper_SOURCES = test/unit/t_pmeth_helper.c $(PMETH_HELPER_SRC) \
	btl_pmeth/pmeth_helper_client.h btl_pmeth/pmeth_helper_client.c \
	btl_pmeth/pmeth_filter.h btl_pmeth/pmeth_filter.c
test_unit_t_pmeth_helper_CPPFLAGS = -I$(top_srcdir)/btl_pmeth -I$(top_srcdir)/test/unit
test_unit_t_pmeth_helper_CFLAGS = $(XBTL_WARN_CFLAGS)
test_unit_t_pmeth_helper_LDADD =
# what a user can do with a helper's socket (test/pmeth/t-pmeth-helper.sh runs it as nobody)
test_pmeth_pmeth_helper_ask_SOURCES = test/pmeth/pmeth_helper_ask.c $(PMETH_HELPER_SRC) \
	btl_pmeth/pmeth_helper_client.h btl_pmeth/pmeth_helper_client.c
test_pmeth_pmeth_helper_ask_CPPFLAGS = -I$(top_srcdir)/btl_pmeth
test_pmeth_pmeth_helper_ask_CFLAGS = $(XBTL_WARN_CFLAGS) -O2
test_pmeth_pmeth_helper_ask_LDADD =
