# models/: architectures, cost formulas, technique stack, plan, ledger, executor.
noinst_LIBRARIES += models/libstepsim_models.a
models_libstepsim_models_a_SOURCES = \
	models/arch/arch.c models/arch/arch.h models/arch/inventory.c models/arch/inventory.h models/arch/arch_counts.c \
	models/arch/hf_config.c models/arch/json_unique.c models/arch/json_unique.h \
	models/arch/attention_window.c \
	models/ops/cost.c models/ops/cost_ends.c models/ops/cost.h models/ops/cost-private.h \
	models/ops/graph.c models/ops/graph.h models/ops/graph_layer.c \
	models/arch/finetune.c models/arch/finetune_counts.c models/arch/finetune.h \
	models/stack/stack.c models/stack/stack_params.c models/stack/stack.h models/stack/stack-private.h models/stack/framework.h models/stack/stack_framework.c models/stack/framework.c models/stack/ds_config.c models/stack/ds_config.h \
	models/parallel/parallel.c models/parallel/parallel.h \
	models/parallel/mesh.c models/parallel/mesh.h models/parallel/placement.c models/parallel/placement.h \
	models/parallel/tensor_parallel.c models/parallel/tensor_parallel.h \
	models/parallel/expert_parallel.c models/parallel/expert_parallel.h \
	models/parallel/context_parallel.c models/parallel/context_parallel.h \
	models/parallel/pipeline_schedule.c models/parallel/pipeline_schedule.h \
	models/plan/plan.c models/plan/plan_task.c models/plan/plan.h models/plan/plan-private.h models/plan/plan_state.c models/plan/plan_step.c models/plan/plan_step-private.h models/plan/plan_ckpt.c models/plan/plan_comm.c models/plan/plan_tp.c models/plan/plan_tp_overlap.c models/plan/plan_cp.c models/plan/plan_pp.c models/plan/plan_ep.c \
	models/memory/offload.c models/memory/offload.h models/plan/plan_offload.c models/plan/plan_offload.h \
	models/plan/plan_offload-private.h models/memory/host_ledger.c models/memory/host_ledger.h \
	models/plan/plan_paged.c models/plan/plan_paged.h models/plan/plan_paged-private.h \
	models/plan/rank_classes.c models/plan/rank_classes.h models/plan/plan_pools.c \
	models/plan/plan_optimizer_view.c \
	models/memory/ledger.c models/memory/ledger.h \
	models/memory/allocator.c models/memory/allocator_free.c models/memory/allocator_pages.c models/memory/allocator.h models/memory/allocator-private.h \
	models/plan/executor.c models/plan/executor.h models/plan/op_times.c models/plan/op_times.h \
	models/plan/simulate.c models/plan/simulate.h

# The shipped Hugging Face configs: models/configs in the tree, $(pkgdatadir)/models installed.
modelsdir = $(pkgdatadir)/models
dist_models_DATA = $(wildcard $(srcdir)/models/configs/*.json)
