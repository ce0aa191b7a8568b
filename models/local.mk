# models/: architectures, cost formulas, technique stack, plan, ledger, executor.
noinst_LIBRARIES += models/libstepsim_models.a
models_libstepsim_models_a_SOURCES = \
	models/arch.c models/arch_tensors.c models/arch.h \
	models/hf_config.c \
	models/cost.c models/cost_ends.c models/cost.h models/cost-private.h \
	models/finetune.c models/finetune.h \
	models/stack.c models/stack_params.c models/stack.h \
	models/parallel.c models/parallel.h \
	models/plan.c models/plan.h models/plan-private.h models/plan_state.c models/plan_step.c models/plan_step-private.h models/plan_ckpt.c models/plan_comm.c \
	models/offload.c models/offload.h models/plan_offload.c models/plan_offload.h \
	models/plan_offload-private.h models/host_ledger.c models/host_ledger.h \
	models/plan_paged.c models/plan_paged.h models/plan_paged-private.h \
	models/ledger.c models/ledger.h \
	models/allocator.c models/allocator_pages.c models/allocator.h models/allocator-private.h \
	models/executor.c models/executor.h

# The shipped Hugging Face configs: models/configs in the tree, $(pkgdatadir)/models installed.
modelsdir = $(pkgdatadir)/models
dist_models_DATA = $(wildcard $(srcdir)/models/configs/*.json)
