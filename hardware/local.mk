# hardware/: GPUs, links, nodes, the catalog; builds resources on sim/.
noinst_LIBRARIES += hardware/libstepsim_hw.a
hardware_libstepsim_hw_a_SOURCES = \
	hardware/gpu.c hardware/gpu.h \
	hardware/kernel.c hardware/kernel.h \
	hardware/catalog.c hardware/catalog.h \
	hardware/cluster.c hardware/cluster.h hardware/cluster-private.h \
	hardware/topology.c hardware/topology.h hardware/rank_shift.h \
	hardware/collective.c hardware/collective.h hardware/collective-private.h \
	hardware/collective_lower.c hardware/collective_nccl.c hardware/collective_time.c \
	hardware/collective_tuner.c \
	hardware/node_catalog.c hardware/node_catalog.h \
	hardware/cluster_spec.c hardware/cluster_spec.h hardware/cluster_spec-private.h \
	hardware/cluster_spec_node.c hardware/cluster_spec_keys.c
