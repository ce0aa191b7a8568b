/* tests/unit/models/moe_fixture.h — the stack and model the mixture-of-experts plan tests
 * share (test_plan_ep.c, test_plan_ep_allgather.c, test_plan_ep_cp.c, test_plan_tp_moe.c).
 * Header-only (static inline). */
#pragma once

#include "hardware/cluster.h"
#include "models/arch/arch.h"
#include "models/memory/ledger.h"
#include "models/plan/executor.h"
#include "models/stack/stack.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "tests/unit/models/tiny.h"

/* bf16 mixed precision, FlashAttention, micro-batch 1 of `s` tokens, GA 1, no recompute. */
static inline ModelStack
bf16_stack (guint64 s)
{
  ModelStack st;
  model_stack_init_defaults (&st);
  st.precision = MODEL_PRECISION_BF16_MIXED;
  st.flash_attention = TRUE;
  st.micro_batch = 1;
  st.seq_len = s;
  return st;
}

/* The tiny llama (tiny.h: h = 256, 4 layers) as a MoE: 8 SwiGLU experts of i = 688, top-2.
 * Owned by the caller (model_arch_free). */
static inline ModelArch *
tiny_moe (void)
{
  ModelArch *a = tiny_arch ();
  a->family = MODEL_FAMILY_MIXTRAL;
  a->n_experts = 8;
  a->experts_per_token = 2;
  return a;
}

/* A replay of a plan on one node (an engine, its fluid, the node's cluster, a ledger and
 * the executor), run to its end; moe_replay_clear frees it. */
typedef struct
{
  SimEngine *engine;
  SimFluid *fluid;
  HwCluster *cluster;
  ModelLedger *ledger;
  ModelExecutor *exec;
} MoeReplay;

/* Replays `plan` on one `node` into *r (the caller's; moe_replay_clear frees its members). */
static inline void
moe_replay_run (const ModelPlan *plan, const HwNodeSpec *node, MoeReplay *r)
{
  r->engine = sim_engine_new ();
  r->fluid = sim_fluid_new (r->engine);
  r->cluster = hw_cluster_new (node, 1, r->fluid);
  r->ledger = model_ledger_new (model_plan_n_ranks (plan), NULL);
  r->exec = model_executor_new (plan, r->cluster, r->engine, r->ledger, NULL);
  model_executor_start (r->exec);
  sim_engine_run (r->engine);
}

static inline void
moe_replay_clear (MoeReplay *r)
{
  g_clear_pointer (&r->exec, model_executor_free);
  g_clear_pointer (&r->ledger, model_ledger_free);
  g_clear_pointer (&r->cluster, hw_cluster_free);
  g_clear_pointer (&r->fluid, sim_fluid_free);
  g_clear_pointer (&r->engine, sim_engine_free);
}
