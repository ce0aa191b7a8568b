/* tests/unit/models/test_paged.c — paged optimizer states in a plan (models/plan/plan_paged.h)
 * against closed forms. S is the spill per rank (B), K_total the tiny model's 8-bit AdamW
 * state bytes (model_stack_optimizer_state_total), B the tiny GPU's PCIe bandwidth, α its
 * copy latency, e = MODEL_PAGED_MIGRATION_EFFICIENCY. */
#include "config.h"

#include <math.h>
#include "hardware/cluster.h"
#include "models/plan/executor.h"
#include "models/memory/host_ledger.h"
#include "models/plan/plan_offload.h"
#include "models/plan/plan_paged.h"
#include "sim/engine.h"
#include "sim/fluid.h"
#include "sim/recorder.h"
#include "tests/testlib.h"
#include "tests/unit/models/replay.h"
#include "tests/unit/models/tiny.h"

#define MiB (1024.0 * 1024.0)
#define SPILL 3e6 /* B: about a third of the tiny model's 8-bit states */

static ModelStack
paged_stack (void)
{
  ModelStack s = tiny_stack ();
  s.optimizer = MODEL_OPTIMIZER_PAGED_ADAMW_8BIT;
  return s;
}


/* Replays a one-rank `plan` on the tiny GPU with 1 TB of host DRAM. */
static Run
replay (const ModelPlan *plan)
{
  Run r = { 0 };
  r.engine = sim_engine_new ();
  r.fluid = sim_fluid_new (r.engine);
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = 1, .host_memory = 1e12 };
  r.cluster = hw_cluster_new (&node, 1, r.fluid);
  r.rec = sim_recorder_new ();
  r.ledger = model_ledger_new (1, NULL);
  r.host = model_host_ledger_new (1, 1, node.host_memory, 0, NULL);
  hw_node_spec_clear (&node);
  r.exec = model_executor_new (plan, r.cluster, r.engine, r.ledger, r.rec);
  model_executor_set_host_ledger (r.exec, r.host);
  model_executor_start (r.exec);
  sim_engine_run (r.engine);
  g_assert (model_executor_n_done (r.exec) == model_plan_n_tasks (plan));
  return r;
}

/* The recorded task of rank 0 labelled `label` (NULL if none). */
static const SimTaskRecord *
task_named (const SimRecorder *rec, const char *label)
{
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      if (g_strcmp0 (t->label, label) == 0)
        return t;
    }
  return NULL;
}

/* The GPU keeps K_total − S from time 0; the host holds S (category optimizer_state); S goes
 * up once and down once per step; the GPU's optimizer-state peak is the whole K_total, when
 * the paged-in pages join the resident ones for the step. */
static void
test_spill_placement (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = paged_stack ();
  double states = model_stack_optimizer_state_total (&s, a);
  CU_ASSERT_FATAL (SPILL < states);
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, SPILL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_EQUAL (model_plan_paged_spill (p), SPILL);
  STEPSIM_ASSERT_REL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE), states - SPILL,
                      1e-12);
  CU_ASSERT_EQUAL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_PAGE_IN), SPILL);
  CU_ASSERT_EQUAL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_PAGE_OUT), SPILL);
  Run r = replay (p);
  CU_ASSERT_EQUAL (model_host_ledger_peak (r.host, 0, MODEL_MEM_ON_HOST), SPILL);
  CU_ASSERT_EQUAL (model_host_ledger_peak_mix (r.host, 0, MODEL_MEM_ON_HOST,
                                               MODEL_MEM_OPTIMIZER_STATE), SPILL);
  STEPSIM_ASSERT_REL (model_ledger_category_peak (r.ledger, 0, MODEL_MEM_OPTIMIZER_STATE), states,
                      1e-12);
  /* After the page-out the GPU is back to the resident part, the host to S. */
  STEPSIM_ASSERT_REL (model_ledger_current (r.ledger, 0, MODEL_MEM_OPTIMIZER_STATE),
                      states - SPILL, 1e-12);
  CU_ASSERT_EQUAL (model_host_ledger_current (r.host, 0, MODEL_MEM_ON_HOST,
                                              MODEL_MEM_OPTIMIZER_STATE), SPILL);
  run_clear (&r);
}

/* A spill above the states is clamped to them: nothing stays on the GPU. */
static void
test_spill_clamped (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = paged_stack ();
  double states = model_stack_optimizer_state_total (&s, a);
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, 10 * states, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_paged_spill (p), states, 1e-12);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE), 0);
}

/* No spill: the paged plan has no migration and no host bytes, and replays exactly as the
 * same stack with plain adamw_8bit (same kernels, same schedule). */
static void
test_no_spill_is_plain_8bit (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = paged_stack ();
  ModelStack plain = s;
  plain.optimizer = MODEL_OPTIMIZER_ADAMW_8BIT;
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, 0, NULL);
  g_autoptr (ModelPlan) q = model_plan_new (a, &plain, NULL, NULL);
  CU_ASSERT_EQUAL (model_plan_n_tasks (p), model_plan_n_tasks (q));
  CU_ASSERT_EQUAL (model_plan_offload_amount (p, 0, MODEL_OFFLOAD_OP_PAGE_IN), 0);
  Run rp = replay (p), rq = replay (q);
  CU_ASSERT_EQUAL (model_executor_rank_end (rp.exec, 0), model_executor_rank_end (rq.exec, 0));
  CU_ASSERT_EQUAL (model_host_ledger_peak (rp.host, 0, MODEL_MEM_ON_HOST), 0);
  run_clear (&rp);
  run_clear (&rq);
}

/* Each migration is alone on its PCIe direction: α + S / (e·B) (hardware/cluster.h copy =
 * latency + bytes / bandwidth, the bytes counted 1/e times). The optimizer waits for the
 * page-in and the page-out follows the optimizer, nothing overlaps them on one rank, so the
 * step is longer than without spill by exactly 2 (α + S / (e·B)). */
static void
test_migration_time (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  g_autoptr (HwGpuSpec) g = tiny_gpu ();
  ModelStack s = paged_stack ();
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, SPILL, NULL);
  g_autoptr (ModelPlan) q = model_plan_new_paged (a, &s, NULL, 0, NULL);
  Run rp = replay (p), rq = replay (q);
  double one = g->pcie_latency + SPILL / (MODEL_PAGED_MIGRATION_EFFICIENCY * g->pcie_bandwidth);
  const SimTaskRecord *in = task_named (rp.rec, "page in optimizer states");
  const SimTaskRecord *opt = task_named (rp.rec, "optimizer step");
  const SimTaskRecord *out = task_named (rp.rec, "page out optimizer states");
  CU_ASSERT_FATAL (in != NULL && opt != NULL && out != NULL);
  STEPSIM_ASSERT_REL (in->end - in->start, one, 1e-9);
  STEPSIM_ASSERT_REL (out->end - out->start, one, 1e-9);
  CU_ASSERT (in->end <= opt->start && opt->end <= out->start);
  STEPSIM_ASSERT_REL (model_executor_rank_end (rp.exec, 0) - model_executor_rank_end (rq.exec, 0),
                      2 * one, 1e-9);
  run_clear (&rp);
  run_clear (&rq);
}

/* Whole 2 MiB UVM blocks, at most the states. */
static void
test_round_to_blocks (void)
{
  CU_ASSERT_EQUAL (model_plan_paged_round (0, 1e9), 0);
  CU_ASSERT_EQUAL (model_plan_paged_round (1, 1e9), 2 * MiB);
  CU_ASSERT_EQUAL (model_plan_paged_round (2 * MiB, 1e9), 2 * MiB);
  CU_ASSERT_EQUAL (model_plan_paged_round (2 * MiB + 1, 1e9), 4 * MiB);
  CU_ASSERT_EQUAL (model_plan_paged_round (3 * MiB, 3.5 * MiB), 3.5 * MiB);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "paged spill: GPU K - S, host S, S up and down", test_spill_placement },
    { "paged spill clamped to the states", test_spill_clamped },
    { "paged without spill replays as adamw_8bit", test_no_spill_is_plain_8bit },
    { "page in/out each alpha + S/(e B), step longer by both", test_migration_time },
    { "spill rounded to 2 MiB UVM blocks", test_round_to_blocks },
  };
  return STEPSIM_RUN_TESTS ("models/paged", tests);
}
