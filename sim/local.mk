# sim/: the generic discrete-event engine, fluid sharing, recorder, HDF5 writer, units.
noinst_LIBRARIES += sim/libstepsim_sim.a
sim_libstepsim_sim_a_SOURCES = \
	sim/engine.c sim/engine.h \
	sim/heap.c sim/heap.h \
	sim/slots.c sim/slots.h \
	sim/vec.c sim/vec.h \
	sim/arith.h \
	sim/text.c sim/text.h \
	sim/variant.c sim/variant.h \
	sim/fluid.c sim/fluid.h sim/fluid-private.h sim/fluid_solve.c \
	sim/units.c sim/units.h \
	sim/recorder.c sim/recorder.h \
	sim/h5out.c sim/h5out.h sim/h5out-private.h sim/h5out_export.c sim/h5out_series.c \
	sim/h5out_guard.c sim/h5out_read.c \
	sim/h5out_table.c sim/h5out_writer.c \
	sim/table.c sim/table.h \
	sim/tempfiles.c sim/tempfiles.h
