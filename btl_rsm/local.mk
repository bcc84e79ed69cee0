# btl rsm: Sun-MPI memory-to-memory messaging (seed 000).
ompicomp_LTLIBRARIES += btl_rsm/mca_btl_rsm.la
btl_rsm_mca_btl_rsm_la_SOURCES = \
	btl_rsm/btl_rsm_component.c
btl_rsm_mca_btl_rsm_la_CPPFLAGS = $(XBTL_COMPONENT_CPPFLAGS)
btl_rsm_mca_btl_rsm_la_CFLAGS = $(XBTL_COMPONENT_CFLAGS) $(XBTL_WARN_CFLAGS)
btl_rsm_mca_btl_rsm_la_LDFLAGS = -module -avoid-version $(XBTL_COMPONENT_LDFLAGS)
btl_rsm_mca_btl_rsm_la_LIBADD = common/libxbtl_common.la $(OPAL_LIBS)
