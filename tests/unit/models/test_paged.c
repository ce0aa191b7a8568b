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


/* Replays a one-rank `plan` on the tiny GPU with 1 TB of host DRAM, its PCIe bandwidth
 * `pcie` B/s (0: the tiny GPU's). */
static Run
replay_pcie (const ModelPlan *plan, double pcie)
{
  Run r = { 0 };
  r.engine = sim_engine_new ();
  r.fluid = sim_fluid_new (r.engine);
  HwNodeSpec node = { .gpu = tiny_gpu (), .n_gpus = 1, .host_memory = 1e12 };
  if (pcie > 0)
    node.gpu->pcie_bandwidth = pcie;
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

static Run
replay (const ModelPlan *plan)
{
  return replay_pcie (plan, 0);
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
 * up and down once per step, in chunks; the GPU's optimizer-state peak is the whole K_total
 * here, where both of the spill's two chunks (test_migration_time) are on the GPU at once:
 * chunk 1's page-in waits for nothing but chunk 0's on the H2D stream, and chunk 0 leaves
 * only after its update. */
static void
test_spill_placement (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = paged_stack ();
  double states = model_stack_optimizer_state_total (&s, a, NULL);
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
  double states = model_stack_optimizer_state_total (&s, a, NULL);
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, 10 * states, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  STEPSIM_ASSERT_REL (model_plan_paged_spill (p), states, 1e-12);
  CU_ASSERT_EQUAL (model_plan_initial_bytes (p, MODEL_MEM_OPTIMIZER_STATE), 0);
}

/* The whole spill is never on the GPU at once: chunk i's page-in waits for the update of
 * chunk i − 2, so the GPU holds at most three chunks (one leaving, one updating, one
 * arriving). The tiny model's states (~9.1 MB) with all of them spilled in 2 MiB chunks
 * (K = 5 of S/5), over a PCIe link so fast that the migrations take no time beside the
 * updates (else the link, not the rule, would pace the page-ins): the GPU's optimizer-state
 * peak is at most 3 S/5, below S; with every page-in issued at once it would be S. */
static void
test_at_most_three_chunks (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  ModelStack s = paged_stack ();
  double states = model_stack_optimizer_state_total (&s, a, NULL);
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, states, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  guint k = 0;
  for (guint i = 0; i < model_plan_n_tasks (p); i++)
    k += model_plan_task (p, i)->offload == MODEL_OFFLOAD_OP_PAGE_IN;
  CU_ASSERT_FATAL (k == (guint) ceil (states / (2.0 * 1024 * 1024)) && k >= 4);
  Run r = replay_pcie (p, 1e18);
  double peak = model_ledger_category_peak (r.ledger, 0, MODEL_MEM_OPTIMIZER_STATE);
  CU_ASSERT (peak <= 3 * states / k * (1 + 1e-12));
  CU_ASSERT (peak > 0);
  run_clear (&r);
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

/* The spill migrates in chunks of whole UVM blocks no smaller than the largest tensor's
 * states (bitsandbytes prefetches a tensor's states before its update): the tiny model's
 * largest, 688 × 256 elements, has 0.35 MB of 8-bit states, so 2 MiB chunks and S = 3e6 B
 * in K = 2 of S/2. Each migration is alone on its PCIe direction: α + (S/K) / (e·B)
 * (hardware/cluster.h copy = latency + bytes / bandwidth, the bytes counted 1/e times).
 * Chunk 0's page-in starts with the resident states' update; chunk i's update starts when
 * its page-in and the update before it have ended; its page-out follows it; the step ends
 * with the last page-out, later than without spill. */
static void
test_migration_time (void)
{
  g_autoptr (ModelArch) a = tiny_arch ();
  g_autoptr (HwGpuSpec) g = tiny_gpu ();
  ModelStack s = paged_stack ();
  g_autoptr (ModelPlan) p = model_plan_new_paged (a, &s, NULL, SPILL, NULL);
  g_autoptr (ModelPlan) q = model_plan_new_paged (a, &s, NULL, 0, NULL);
  Run rp = replay (p), rq = replay (q);
  double one = g->pcie_latency
               + SPILL / 2 / (MODEL_PAGED_MIGRATION_EFFICIENCY * g->pcie_bandwidth);
  const SimTaskRecord *resident = task_named (rp.rec, "optimizer step");
  const SimTaskRecord *in[2], *opt[2], *out[2];
  for (guint i = 0; i < 2; i++)
    {
      g_autofree char *a_in = g_strdup_printf ("page in optimizer states %u", i);
      g_autofree char *a_opt = g_strdup_printf ("optimizer step (paged %u)", i);
      g_autofree char *a_out = g_strdup_printf ("page out optimizer states %u", i);
      in[i] = task_named (rp.rec, a_in);
      opt[i] = task_named (rp.rec, a_opt);
      out[i] = task_named (rp.rec, a_out);
      CU_ASSERT_FATAL (in[i] != NULL && opt[i] != NULL && out[i] != NULL);
      STEPSIM_ASSERT_REL (in[i]->end - in[i]->start, one, 1e-9);
      STEPSIM_ASSERT_REL (out[i]->end - out[i]->start, one, 1e-9);
      CU_ASSERT (opt[i]->end <= out[i]->start);
    }
  CU_ASSERT_FATAL (resident != NULL);
  CU_ASSERT_PTR_NULL (task_named (rp.rec, "page in optimizer states 2"));
  STEPSIM_ASSERT_REL (in[0]->start, resident->start, 1e-12);
  STEPSIM_ASSERT_REL (opt[0]->start, MAX (in[0]->end, resident->end), 1e-12);
  STEPSIM_ASSERT_REL (opt[1]->start, MAX (in[1]->end, opt[0]->end), 1e-12);
  STEPSIM_ASSERT_REL (model_executor_rank_end (rp.exec, 0), out[1]->end, 1e-12);
  CU_ASSERT (model_executor_rank_end (rp.exec, 0) > model_executor_rank_end (rq.exec, 0));
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
    { "paged chunks: at most three on the GPU", test_at_most_three_chunks },
    { "paged without spill replays as adamw_8bit", test_no_spill_is_plain_8bit },
    { "paged in and out in chunks, each alpha + (S/K)/(e B)", test_migration_time },
    { "spill rounded to 2 MiB UVM blocks", test_round_to_blocks },
  };
  return STEPSIM_RUN_TESTS ("models/paged", tests);
}
