/* tests/unit/cli/test_tp_validation.c — tensor-parallel validation cases of
 * ../shared/validation/published.md: T3 (Korthikanti et al. 2022, arXiv 2205.05198,
 * Table 4: one layer of the 22B GPT at TP8, MBS 4, seq 2048, A100-80GB, forward and
 * backward ms under five variants) and Korthikanti's MFU formula (§6, the FLOPs
 * accounting) reproduced from a predicted step time.
 *
 * T3 is simulated from tests/validation/t1a-gpt-22b-tp8-full-recompute.ini (the same 22B
 * model, node and stack as T1) with [training] checkpointing and [parallel]
 * sequence_parallel set per variant. A layer's times are read from the replay of rank 0,
 * micro-batch 0, layer 20 (a middle layer, so neither the embedding nor the head is in
 * the window): forward = start of layer 21's forward − start of layer 20's (its compute
 * and its tp collectives on the critical path: g's all-reduces, or SP's all-gathers and
 * reduce-scatters); backward = start of layer 19's first backward-phase task (recompute or
 * backward) − start of layer 20's (its recompute, its gradient kernels and the tp
 * collectives it waits for). The variants without checkpointing do not fit 80 GB at 48
 * layers (the replay continues past the OOM; the paper timed them too).
 *
 * Tolerance 10 % (issue 14, chosen before simulating). Every cell passes. The backward
 * cells rest on the point-wise ops' real backward traffic (graph_layer.c, bwd_factor per op
 * with its PyTorch / Megatron source): dropout and the residual add move what their
 * forward moved (1×), softmax and GELU read two tensors and write one (1.5×); LayerNorm
 * stays at the default 2× (Apex persistent LN 1.5×, PyTorch native two kernels 2.5×).
 * Measured when writing this: backward −0.7 … +3.4 % ("none" 12.02 ms for 11.9, +1.0 %).
 * The forward cells are +6 % each: g's two all-reduces of 4·2048·6144·2 B = 96 MiB take
 * 0.83 ms each (NCCL ring on NVSwitch, ≈ 211 GB/s bus bandwidth), and the layer's compute
 * 6.47 ms, of which 0.65 ms are norms, dropouts and residual adds; Megatron fuses the
 * residual dropout with the bias and the add (bias_dropout_add_fused_train, a
 * torch.jit.script nvFuser kernel) where the op graph runs two kernels (≈ 0.2 ms).
 * Sequence parallelism's forward gain (7.7 → 7.2 ms measured, 8.14 → 7.45 ms predicted)
 * comes from those point-wise kernels running on s/t tokens (plan_tp_layer_kernels). */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include "models/plan/simulate.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "models/ops/cost.h"
#include "sim/recorder.h"
#include "tests/testlib.h"

#define T3_FILE "tests/validation/t1a-gpt-22b-tp8-full-recompute.ini"
#define T3_TOLERANCE 0.10
#define T3_LAYER 20

typedef struct
{
  const char *name;
  const char *ckpt;
  const char *sp;
  double fwd, bwd;           /* ms measured (Table 4) */
  gboolean fwd_miss, bwd_miss; /* known misses (file header) */
} T3Row;

static const T3Row t3_rows[] = {
  { "none", "none", "false", 7.7, 11.9, FALSE, FALSE },
  { "sequence parallel", "none", "true", 7.2, 11.8, FALSE, FALSE },
  { "full recompute", "full", "false", 7.7, 19.5, FALSE, FALSE },
  { "selective recompute", "selective", "false", 7.7, 13.2, FALSE, FALSE },
  { "selective + SP", "selective", "true", 7.2, 13.1, FALSE, FALSE },
};

/* Loads T3_FILE with `sets` and replays it into a recorder (owned by the caller). */
static SimRecorder *
replay (const char *const *sets, ModelSimResult *res, CliScenario **sc_out)
{
  g_autofree char *path = stepsim_test_srcpath (T3_FILE);
  g_autoptr (GError) e = NULL;
  CliScenario *sc = cli_scenario_load (path, sets, &e);
  if (sc == NULL)
    {
      g_printerr ("\n  %s: %s\n", T3_FILE, e->message);
      return NULL;
    }
  ModelSimInput in = cli_scenario_sim_input (sc);
  SimRecorder *rec = sim_recorder_new ();
  if (!model_simulate (&in, rec, res, &e))
    {
      g_printerr ("\n  %s: %s\n", T3_FILE, e->message);
      sim_recorder_free (rec);
      cli_scenario_free (sc);
      return NULL;
    }
  *sc_out = sc;
  return rec;
}

/* Earliest start of rank 0's micro-batch-0 task of `layer` among `kinds` (a bit per
 * ModelTaskKind), on the compute stream; NAN when there is none. */
static double
first_start (const SimRecorder *rec, gint layer, guint kinds)
{
  double t = NAN;
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *r = sim_recorder_task (rec, i);
      if (r->rank != 0 || r->layer != layer || r->micro_batch != 0
          || r->stream != MODEL_STREAM_COMPUTE || !(kinds & (1u << r->kind)))
        continue;
      if (isnan (t) || r->start < t)
        t = r->start;
    }
  return t;
}

static void
check_cell (const char *variant, const char *pass, double predicted, double measured,
            gboolean miss)
{
  double err = predicted / measured - 1;
  printf ("\n  T3 %-20s %s %.2f ms, measured %.1f ms (%+.1f %%)%s", variant, pass, predicted,
          measured, 100 * err, miss ? " known miss" : "");
  gboolean ok = miss ? err > T3_TOLERANCE && err <= 0.15 : fabs (err) <= T3_TOLERANCE;
  CU_ASSERT (ok);
}

static void
test_t3_layer_times (void)
{
  const guint fwd = 1u << MODEL_TASK_KIND_FORWARD;
  const guint bwd = (1u << MODEL_TASK_KIND_BACKWARD) | (1u << MODEL_TASK_KIND_RECOMPUTE);
  for (gsize i = 0; i < G_N_ELEMENTS (t3_rows); i++)
    {
      const T3Row *row = &t3_rows[i];
      g_autofree char *ck = g_strdup_printf ("training.checkpointing=%s", row->ckpt);
      g_autofree char *sp = g_strdup_printf ("parallel.sequence_parallel=%s", row->sp);
      const char *sets[] = { ck, sp, NULL };
      ModelSimResult res;
      CliScenario *sc = NULL;
      g_autoptr (SimRecorder) rec = replay (sets, &res, &sc);
      CU_ASSERT_PTR_NOT_NULL_FATAL (rec);
      double f = first_start (rec, T3_LAYER + 1, fwd) - first_start (rec, T3_LAYER, fwd);
      double b = first_start (rec, T3_LAYER - 1, bwd) - first_start (rec, T3_LAYER, bwd);
      CU_ASSERT_FATAL (f > 0 && b > 0);
      check_cell (row->name, "fwd", 1e3 * f, row->fwd, row->fwd_miss);
      check_cell (row->name, "bwd", 1e3 * b, row->bwd, row->bwd_miss);
      model_sim_result_clear (&res);
      cli_scenario_free (sc);
    }
}

/* Korthikanti §6: model FLOPs per step 72·B·L·s·h²·(1 + s/6h + V/12hL) (B the global
 * batch) over step time × GPUs × 312 TFLOP/s is the paper's MFU; the simulator's MFU,
 * from its own FLOPs accounting (3 × the forward's matrix products: 24·B·s·h² per layer
 * for the linears, 12·B·s²·h for QKᵀ and A·V over the full square, 6·B·s·h·V for the
 * head), must be the same number for the predicted step time of T1 (b). The formula
 * counts the head over the unpadded vocabulary (51200 = 400·128, no padding at tp 8). */
static void
test_korthikanti_mfu (void)
{
  ModelSimResult res;
  CliScenario *sc = NULL;
  const char *sets[] = { "training.checkpointing=selective", "parallel.sequence_parallel=true",
                         NULL };
  g_autoptr (SimRecorder) rec = replay (sets, &res, &sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (rec);
  double flops = model_cost_korthikanti_flops (4, 48, 2048, 6144, 51200);
  double mfu = flops / (res.step_time * 8 * 312e12);
  printf ("\n  T1b MFU %.2f %% (formula %.2f %%)", 100 * res.mfu, 100 * mfu);
  STEPSIM_ASSERT_REL (res.mfu, mfu, 1e-3);
  model_sim_result_clear (&res);
  cli_scenario_free (sc);
}

int
main (void)
{
  static const StepsimTest tests[] = {
    { "T3: one 22B layer's forward/backward at TP8, five variants", test_t3_layer_times },
    { "Korthikanti's MFU formula from the predicted T1b step time", test_korthikanti_mfu },
  };
  return STEPSIM_RUN_TESTS ("cli/tp_validation", tests);
}
