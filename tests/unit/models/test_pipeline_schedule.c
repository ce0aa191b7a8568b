/* tests/unit/models/test_pipeline_schedule.c — pipeline stages (even, listed, Megatron
 * layout strings and their errors) and the GPipe / 1F1B / interleaved 1F1B / ZB-H1 orders:
 * their dependencies, their step time and bubble when replayed with fixed op times and no
 * communication, and the micro-batches each rank holds at its peak.
 *
 * The replay below is the reference evaluator for the schedules' closed forms; the
 * simulator's engine replays the same ops with real kernel and P2P times. It reads only
 * each rank's order and the ops' deps (so it also checks the generator's dependencies: a
 * missing one would start an op early and shorten the step, a wrong one deadlock). Each
 * op starts when the op before it on its rank and every op it depends on have ended. */
#include "config.h"

#include <math.h>
#include <string.h>
#include "models/parallel/pipeline_schedule.h"
#include "tests/testlib.h"

/* ---- Reference replay -------------------------------------------------------------------- */

typedef struct
{
  double step;        /* s: when the last op of any rank ends */
  double busy_total;  /* s: Σ over ranks of the ops' durations */
  double bubble;      /* idle share of the step over all ranks: 1 − busy / (p·step) */
  gboolean deadlock;  /* some op never became ready */
  double rank_end[64];
} Replay;

/* Durations per op kind (s), for every virtual stage alike. */
static Replay
replay (const ModelPpSchedule *s, const double dur[4])
{
  Replay out = { 0 };
  guint p = s->pp;
  g_assert (p <= G_N_ELEMENTS (out.rank_end));
  g_autoptr (GPtrArray) ends = g_ptr_array_new_with_free_func (g_free);
  g_autofree guint *next = g_new0 (guint, p);
  g_autofree double *free_at = g_new0 (double, p);
  guint total = 0, done = 0;
  for (guint r = 0; r < p; r++)
    {
      guint n = model_pp_schedule_rank (s, r)->len;
      g_ptr_array_add (ends, g_new0 (double, n));
      total += n;
    }
  while (done < total)
    {
      gboolean progress = FALSE;
      for (guint r = 0; r < p; r++)
        {
          const GArray *ops = model_pp_schedule_rank (s, r);
          if (next[r] >= ops->len)
            continue;
          const ModelPpOp *op = &g_array_index (ops, ModelPpOp, next[r]);
          double start = free_at[r];
          gboolean ready = TRUE;
          for (guint d = 0; d < op->n_deps; d++)
            {
              const ModelPpDep *dep = &op->deps[d];
              if (dep->index >= next[dep->rank])
                ready = FALSE;
              else
                start = MAX (start, ((double *) g_ptr_array_index (ends, dep->rank))[dep->index]);
            }
          if (!ready)
            continue;
          double end = start + dur[op->kind];
          ((double *) g_ptr_array_index (ends, r))[next[r]] = end;
          free_at[r] = end;
          out.busy_total += dur[op->kind];
          next[r]++;
          done++;
          progress = TRUE;
        }
      if (!progress)
        {
          out.deadlock = TRUE;
          return out;
        }
    }
  for (guint r = 0; r < p; r++)
    {
      out.rank_end[r] = free_at[r];
      out.step = MAX (out.step, free_at[r]);
    }
  out.bubble = 1 - out.busy_total / (p * out.step);
  return out;
}

static ModelPpSchedule *
sched (ModelPpScheduleKind kind, guint p, guint m, guint v)
{
  GError *error = NULL;
  ModelPpSchedule *s = model_pp_schedule_new (kind, p, m, v, &error);
  if (s == NULL)
    g_printerr ("\n  %s p %u m %u v %u: %s\n", model_pp_schedule_name (kind), p, m, v,
                error->message);
  g_clear_error (&error);
  return s;
}

static void
durations (double out[4], double t_f, double t_b, double t_w)
{
  out[MODEL_PP_OP_F] = t_f;
  out[MODEL_PP_OP_B] = t_b;
  out[MODEL_PP_OP_W] = t_w;
  out[MODEL_PP_OP_BW] = t_b + t_w;
}

static void
assert_error (GError *error, const char *const *needles)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT (g_error_matches (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
  for (guint j = 0; needles[j] != NULL; j++)
    if (strstr (error->message, needles[j]) == NULL)
      {
        g_printerr ("\n  '%s' not in: %s\n", needles[j], error->message);
        CU_FAIL ("error message");
      }
}

/* ---- Partitioning ------------------------------------------------------------------------ */

/* Even split, L = 32: p = 4 gives 8 layers per stage, first layers 0, 8, 16, 24; p = 4,
 * v = 2 gives S = 8 stages of 4, stage k on rank k mod 4, chunk k div 4 (Megatron's
 * round-robin), the embedding on stage 0 (rank 0 chunk 0) and the loss on stage 7 (rank 3
 * chunk 1). */
static void
test_even (void)
{
  ModelPpPartitionSpec spec = { .n_layers = 32, .pp = 4 };
  g_autoptr (ModelPpPartition) a = model_pp_partition_new (&spec, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->vpp, 1);
  CU_ASSERT_EQUAL (a->stages->len, 4);
  for (guint k = 0; k < 4; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (a, k);
      CU_ASSERT_EQUAL (st->n_layers, 8);
      CU_ASSERT_EQUAL (st->first_layer, 8 * k);
      CU_ASSERT_EQUAL (st->rank, k);
      CU_ASSERT_EQUAL (st->embedding, k == 0);
      CU_ASSERT_EQUAL (st->loss, k == 3);
    }
  spec.vpp = 2;
  g_autoptr (ModelPpPartition) b = model_pp_partition_new (&spec, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_EQUAL (b->stages->len, 8);
  for (guint k = 0; k < 8; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (b, k);
      CU_ASSERT_EQUAL (st->n_layers, 4);
      CU_ASSERT_EQUAL (st->first_layer, 4 * k);
      CU_ASSERT_EQUAL (st->rank, k % 4);
      CU_ASSERT_EQUAL (st->chunk, k / 4);
    }
  CU_ASSERT (model_pp_partition_stage (b, 0)->embedding);
  CU_ASSERT (model_pp_partition_stage (b, 7)->loss && model_pp_partition_stage (b, 7)->rank == 3);
}

/* layers_per_stage {7, 9, 9, 7} of L = 32: first layers 0, 7, 16, 25. */
static void
test_layers_per_stage (void)
{
  const guint list[] = { 7, 9, 9, 7 };
  ModelPpPartitionSpec spec = { .n_layers = 32, .pp = 4, .layers_per_stage = list,
                                .n_layers_per_stage = 4 };
  g_autoptr (ModelPpPartition) a = model_pp_partition_new (&spec, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  const guint first[] = { 0, 7, 16, 25 };
  for (guint k = 0; k < 4; k++)
    {
      CU_ASSERT_EQUAL (model_pp_partition_stage (a, k)->n_layers, list[k]);
      CU_ASSERT_EQUAL (model_pp_partition_stage (a, k)->first_layer, first[k]);
    }
}

static void
test_partition_errors (void)
{
  GError *error = NULL;
  /* 30 layers over 4 stages: 7.5 each */
  ModelPpPartitionSpec spec = { .n_layers = 30, .pp = 4 };
  CU_ASSERT_PTR_NULL (model_pp_partition_new (&spec, &error));
  assert_error (error, (const char *const[]){ "[parallel] pp = 4", "num_hidden_layers = 30",
                                              "layers_per_stage", "pipeline_layout", NULL });
  g_clear_error (&error);
  /* 32 over 4 × 3 virtual stages */
  spec = (ModelPpPartitionSpec){ .n_layers = 32, .pp = 4, .vpp = 3 };
  CU_ASSERT_PTR_NULL (model_pp_partition_new (&spec, &error));
  assert_error (error, (const char *const[]){ "virtual_stages = 3", NULL });
  g_clear_error (&error);
  /* a list of the wrong length, of the wrong sum */
  const guint three[] = { 10, 11, 11 }, sum31[] = { 8, 8, 8, 7 };
  spec = (ModelPpPartitionSpec){ .n_layers = 32, .pp = 4, .layers_per_stage = three,
                                 .n_layers_per_stage = 3 };
  CU_ASSERT_PTR_NULL (model_pp_partition_new (&spec, &error));
  assert_error (error, (const char *const[]){ "layers_per_stage has 3 entries", NULL });
  g_clear_error (&error);
  spec.layers_per_stage = sum31;
  spec.n_layers_per_stage = 4;
  CU_ASSERT_PTR_NULL (model_pp_partition_new (&spec, &error));
  assert_error (error, (const char *const[]){ "places 31 layers", "num_hidden_layers is 32",
                                              NULL });
  g_clear_error (&error);
  /* both a list and a layout */
  spec.layers_per_stage = three;
  spec.layout = "Et|tL";
  CU_ASSERT_PTR_NULL (model_pp_partition_new (&spec, &error));
  assert_error (error, (const char *const[]){ "both given", NULL });
  g_clear_error (&error);
}

/* Megatron's own example (pipeline_parallel_layer_layout.py parse_str_to_list and
 * pretty_repr), DeepSeek-V3's 61 layers + 1 MTP over p = 16:
 * "Ettt|(tt|)*29,m|L" = "Ettt" + 29 × "tt" + "m" + "L": 32 stages, so v = 2; 3 + 58 = 61
 * 't'. Stage k on rank k mod 16, chunk k div 16: stage 0 (rank 0, chunk 0) E + 3 layers,
 * stages 1..29 two layers each (first layers 3, 5, …, 3 + 2·28 = 59), stage 30 the MTP
 * (rank 14, chunk 1), stage 31 the loss alone (rank 15, chunk 1). */
static void
test_layout_megatron_example (void)
{
  ModelPpPartitionSpec spec = { .n_layers = 61, .n_mtp = 1, .pp = 16,
                                .layout = "Ettt|(tt|)*29,m|L" };
  GError *error = NULL;
  g_autoptr (ModelPpPartition) a = model_pp_partition_new (&spec, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (a->vpp, 2);
  CU_ASSERT_EQUAL (a->stages->len, 32);
  const ModelPpStage *s0 = model_pp_partition_stage (a, 0);
  CU_ASSERT (s0->embedding && s0->n_layers == 3 && !s0->loss);
  for (guint k = 1; k <= 29; k++)
    {
      const ModelPpStage *st = model_pp_partition_stage (a, k);
      CU_ASSERT_EQUAL (st->n_layers, 2);
      CU_ASSERT_EQUAL (st->first_layer, 3 + 2 * (k - 1));
      CU_ASSERT (!st->embedding && !st->loss && st->n_mtp == 0);
    }
  const ModelPpStage *s30 = model_pp_partition_stage (a, 30), *s31 = model_pp_partition_stage (a, 31);
  CU_ASSERT (s30->n_mtp == 1 && s30->n_layers == 0 && s30->rank == 14 && s30->chunk == 1);
  CU_ASSERT (s31->loss && s31->n_layers == 0 && s31->rank == 15 && s31->chunk == 1);
  /* the same layout given v = 2 explicitly is accepted, v = 3 is not */
  spec.vpp = 2;
  g_autoptr (ModelPpPartition) b = model_pp_partition_new (&spec, NULL);
  CU_ASSERT_PTR_NOT_NULL (b);
  spec.vpp = 3;
  CU_ASSERT_PTR_NULL (model_pp_partition_new (&spec, &error));
  assert_error (error, (const char *const[]){ "virtual_stages = 3", "32 stages", NULL });
  g_clear_error (&error);
}

/* "Et*3|t*2" ",t|(t|)*1L": x*n repeats, commas dropped, a group repeated once:
 * "Ettt|tt" + "t|" + "tL" → stages [E t t t], [t t t], [t L]; p = 3, v = 1, L = 7. */
static void
test_layout_repeats (void)
{
  ModelPpPartitionSpec spec = { .n_layers = 7, .pp = 3, .layout = "Et*3|t*2,t|(t)*1L" };
  GError *error = NULL;
  g_autoptr (ModelPpPartition) a = model_pp_partition_new (&spec, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL (model_pp_partition_stage (a, 0)->n_layers, 3);
  CU_ASSERT_EQUAL (model_pp_partition_stage (a, 1)->n_layers, 3);
  CU_ASSERT_EQUAL (model_pp_partition_stage (a, 2)->n_layers, 1);
  CU_ASSERT_EQUAL (model_pp_partition_stage (a, 2)->first_layer, 6);
  CU_ASSERT (model_pp_partition_stage (a, 2)->loss);
}

/* Each malformed layout names what is wrong and where (1-based positions). */
static void
test_layout_errors (void)
{
  static const struct
  {
    const char *layout;
    guint pp, n_layers, n_mtp;
    const char *needle1, *needle2;
  } cases[] = {
    { "Etx|tL", 2, 3, 0, "unknown character 'x'", "position 3" },
    { "Et t|tL", 2, 3, 0, "unknown character ' '", "position 3" },
    { "E(tt|tL", 2, 3, 0, "'(' without its ')'", "position 2" },
    { "E(tt)|tL", 2, 3, 0, "not followed by \"*n\"", "position 2" },
    { "E((t)*2)*2|tL", 2, 4, 0, "nested '('", "position 3" },
    { "Et*|tL", 2, 2, 0, "'*' not followed by a repeat count", "position 3" },
    { "Et*0|tL", 2, 2, 0, "repeat count not in 1..100000", "position 4" },
    { "Et)|tL", 2, 2, 0, "unknown character ')'", "position 3" },
    { "Et*100000|tL", 2, 2, 0, "a repeat past 100000 characters", "position 2" },
    { "E(t|t*50000)*2|tL", 2, 2, 0, "a repeat past 100000 characters", "position 2" },
    { "tE|tL", 2, 2, 0, "'E' not the first layer", "position 2" },
    { "EtL|t", 2, 2, 0, "'L' not the last layer", "position 3" },
    { "Et|t|tL", 2, 3, 0, "3 stages, not a multiple of [parallel] pp = 2", NULL },
    { "Et|tL", 2, 3, 0, "places 2 transformer layers", "num_hidden_layers is 3" },
    { "Et|t", 2, 2, 0, "must start with 'E'", "end with 'L'" },
    { "Et|tmL", 2, 2, 0, "places 1 MTP layer ('m')", "[training] mtp_layers = 0" },
    { "Et|tm|t|L", 2, 3, 1, "MTP layer outside its rank's last chunk", "position 5" },
    { "Et|t|m|tL", 2, 3, 1, "transformer layer after an MTP layer", "position 8" },
  };
  for (guint j = 0; j < G_N_ELEMENTS (cases); j++)
    {
      ModelPpPartitionSpec spec = { .n_layers = cases[j].n_layers, .n_mtp = cases[j].n_mtp,
                                    .pp = cases[j].pp, .layout = cases[j].layout };
      GError *error = NULL;
      ModelPpPartition *part = model_pp_partition_new (&spec, &error);
      if (part != NULL)
        g_printerr ("\n  layout '%s' accepted\n", cases[j].layout);
      CU_ASSERT_PTR_NULL (part);
      model_pp_partition_free (part);
      assert_error (error, (const char *const[]){ "[parallel] pipeline_layout", cases[j].needle1,
                                                  cases[j].needle2, NULL });
      g_clear_error (&error);
    }
}

/* ---- Schedules: structure ----------------------------------------------------------------- */

/* Every schedule emits, per virtual stage and micro-batch, one F and either one BW or one B
 * and one W, each on the stage's rank; its deps are exactly pipeline_schedule.h's. */
static void
check_structure (const ModelPpSchedule *s)
{
  guint S = s->pp * s->vpp, m = s->n_micro;
  g_autofree guint *count = g_new0 (guint, 4 * S * m);
  for (guint r = 0; r < s->pp; r++)
    {
      const GArray *ops = model_pp_schedule_rank (s, r);
      for (guint j = 0; j < ops->len; j++)
        {
          const ModelPpOp *op = model_pp_schedule_op (s, r, j);
          CU_ASSERT_EQUAL (op->stage, r + op->chunk * s->pp);
          CU_ASSERT (op->mb < m && op->chunk < s->vpp);
          count[(op->kind * S + op->stage) * m + op->mb]++;
          for (guint d = 0; d < op->n_deps; d++)
            {
              const ModelPpOp *on = model_pp_schedule_op (s, op->deps[d].rank, op->deps[d].index);
              CU_ASSERT_EQUAL (op->deps[d].p2p, op->deps[d].rank != r);
              CU_ASSERT_EQUAL (on->mb, op->mb);
            }
          switch (op->kind)
            {
            case MODEL_PP_OP_F:
              CU_ASSERT_EQUAL (op->n_deps, op->stage > 0 ? 1 : 0);
              if (op->stage > 0)
                {
                  const ModelPpOp *on = model_pp_schedule_op (s, op->deps[0].rank,
                                                              op->deps[0].index);
                  CU_ASSERT (on->kind == MODEL_PP_OP_F && on->stage == op->stage - 1);
                }
              break;
            case MODEL_PP_OP_B:
            case MODEL_PP_OP_BW:
              {
                CU_ASSERT_EQUAL (op->n_deps, op->stage + 1 < S ? 2 : 1);
                const ModelPpOp *f = model_pp_schedule_op (s, op->deps[0].rank, op->deps[0].index);
                CU_ASSERT (f->kind == MODEL_PP_OP_F && f->stage == op->stage && !op->deps[0].p2p);
                if (op->stage + 1 < S)
                  {
                    const ModelPpOp *b = model_pp_schedule_op (s, op->deps[1].rank,
                                                               op->deps[1].index);
                    CU_ASSERT (b->kind == op->kind && b->stage == op->stage + 1);
                  }
                break;
              }
            case MODEL_PP_OP_W:
              {
                CU_ASSERT_EQUAL (op->n_deps, 1);
                const ModelPpOp *b = model_pp_schedule_op (s, op->deps[0].rank, op->deps[0].index);
                CU_ASSERT (b->kind == MODEL_PP_OP_B && b->stage == op->stage);
                break;
              }
            }
        }
    }
  gboolean split = s->kind == MODEL_PP_ZB_H1;
  for (guint k = 0; k < S; k++)
    for (guint i = 0; i < m; i++)
      {
        CU_ASSERT_EQUAL (count[(MODEL_PP_OP_F * S + k) * m + i], 1);
        CU_ASSERT_EQUAL (count[(MODEL_PP_OP_BW * S + k) * m + i], split ? 0 : 1);
        CU_ASSERT_EQUAL (count[(MODEL_PP_OP_B * S + k) * m + i], split ? 1 : 0);
        CU_ASSERT_EQUAL (count[(MODEL_PP_OP_W * S + k) * m + i], split ? 1 : 0);
      }
}

static void
test_structure (void)
{
  const guint pm[][2] = { { 1, 1 }, { 1, 4 }, { 2, 3 }, { 4, 8 }, { 4, 2 }, { 8, 16 } };
  for (guint j = 0; j < G_N_ELEMENTS (pm); j++)
    {
      ModelPpScheduleKind kinds[] = { MODEL_PP_GPIPE, MODEL_PP_1F1B, MODEL_PP_ZB_H1 };
      for (guint q = 0; q < G_N_ELEMENTS (kinds); q++)
        {
          g_autoptr (ModelPpSchedule) s = sched (kinds[q], pm[j][0], pm[j][1], 1);
          CU_ASSERT_PTR_NOT_NULL_FATAL (s);
          check_structure (s);
        }
    }
  const guint pmv[][3] = { { 2, 2, 2 }, { 2, 4, 3 }, { 4, 8, 2 }, { 4, 4, 4 }, { 8, 16, 2 } };
  for (guint j = 0; j < G_N_ELEMENTS (pmv); j++)
    {
      g_autoptr (ModelPpSchedule) s = sched (MODEL_PP_INTERLEAVED, pmv[j][0], pmv[j][1], pmv[j][2]);
      CU_ASSERT_PTR_NOT_NULL_FATAL (s);
      check_structure (s);
    }
}

/* 1F1B's order, Narayanan §2.2.1 / Megatron forward_backward_pipelining_without_
 * interleaving, p = 4, m = 6: rank r starts with p − r − 1 warm-up F, then alternates
 * F, BW; rank 0: F0 F1 F2 F3 BW0 F4 BW1 F5 BW2 BW3 BW4 BW5; rank 3: F0 BW0 F1 BW1 … F5 BW5.
 * ZB-H1 (Qi et al. §3.1; torch _get_1f1b_rank_ops) keeps that F/B order, rank 3 deferring
 * its first 3 W: F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 W3 W4 W5. GPipe, rank 1:
 * F0..F5 then BW0..BW5. */
static void
test_orders (void)
{
  static const char *const expect[] = {
    "F0 F1 F2 F3 BW0 F4 BW1 F5 BW2 BW3 BW4 BW5",
    "F0 BW0 F1 BW1 F2 BW2 F3 BW3 F4 BW4 F5 BW5",
    "F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 W3 W4 W5",
    "F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 B3 W3 B4 W4 B5 W5",
    "F0 F1 F2 F3 F4 F5 BW0 BW1 BW2 BW3 BW4 BW5",
  };
  const struct { ModelPpScheduleKind kind; guint rank; } which[] = {
    { MODEL_PP_1F1B, 0 }, { MODEL_PP_1F1B, 3 }, { MODEL_PP_ZB_H1, 3 }, { MODEL_PP_ZB_H1, 0 },
    { MODEL_PP_GPIPE, 1 },
  };
  for (guint j = 0; j < G_N_ELEMENTS (which); j++)
    {
      g_autoptr (ModelPpSchedule) s = sched (which[j].kind, 4, 6, 1);
      CU_ASSERT_PTR_NOT_NULL_FATAL (s);
      g_autoptr (GString) got = g_string_new (NULL);
      const GArray *ops = model_pp_schedule_rank (s, which[j].rank);
      for (guint i = 0; i < ops->len; i++)
        {
          const ModelPpOp *op = &g_array_index (ops, ModelPpOp, i);
          g_string_append_printf (got, "%s%s%u", i ? " " : "", model_pp_op_name (op->kind), op->mb);
        }
      if (strcmp (got->str, expect[j]) != 0)
        g_printerr ("\n  %s rank %u: %s\n  expected %s\n", model_pp_schedule_name (which[j].kind),
                    which[j].rank, got->str, expect[j]);
      CU_ASSERT_STRING_EQUAL (got->str, expect[j]);
    }
}

/* Megatron's interleaved table for p = 2, m = 4, v = 2 (get_schedule_table with groups of
 * p = 2): virtual micro-batch k → (mb, chunk) = (0,0) (1,0) (0,1) (1,1) (2,0) (3,0) (2,1)
 * (3,1). Rank 0 warms up (2 − 0 − 1)·2 + (2 − 1)·2 = 4, rank 1 (0)·2 + 2 = 2; backwards
 * take the table with chunk 1 − c. Rank 0: F0.0 F1.0 F0.1 F1.1 | F2.0 B0.1 | F3.0 B1.1 |
 * F2.1 B0.0 | F3.1 B1.0 | B2.1 B3.1 B2.0 B3.0 (Fmb.chunk). */
/* Rank r's list of `s` as "F0.0 F1.0 … BW3.0" (kind, micro-batch.chunk) equals `expect`. */
static void
assert_rank_order (const ModelPpSchedule *s, guint r, const char *expect)
{
  g_autoptr (GString) got = g_string_new (NULL);
  const GArray *ops = model_pp_schedule_rank (s, r);
  for (guint i = 0; i < ops->len; i++)
    {
      const ModelPpOp *op = &g_array_index (ops, ModelPpOp, i);
      g_string_append_printf (got, "%s%s%u.%u", i ? " " : "", model_pp_op_name (op->kind),
                              op->mb, op->chunk);
    }
  if (strcmp (got->str, expect) != 0)
    g_printerr ("\n  rank %u: %s\n  expected %s\n", r, got->str, expect);
  CU_ASSERT_STRING_EQUAL (got->str, expect);
}

static void
test_interleaved_order (void)
{
  g_autoptr (ModelPpSchedule) s = sched (MODEL_PP_INTERLEAVED, 2, 4, 2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  const char *expect0 = "F0.0 F1.0 F0.1 F1.1 F2.0 BW0.1 F3.0 BW1.1 F2.1 BW0.0 F3.1 BW1.0 "
                        "BW2.1 BW3.1 BW2.0 BW3.0";
  const char *expect1 = "F0.0 F1.0 F0.1 BW0.1 F1.1 BW1.1 F2.0 BW0.0 F3.0 BW1.0 F2.1 BW2.1 "
                        "F3.1 BW3.1 BW2.0 BW3.0";
  const char *expect[] = { expect0, expect1 };
  for (guint r = 0; r < 2; r++)
    assert_rank_order (s, r, expect[r]);
}

/* [moe] a2a_overlap: Megatron's combined 1F1B schedules one extra warm-up micro-batch
 * (schedules.py get_pp_rank_microbatches: num_warmup_microbatches + 1), so every
 * steady-state forward has a backward to be combined with. p 2, m 4, v 2: rank 0's warm-up
 * is (2 − 0 − 1)·2 + (2 − 1)·2 + 1 = 5 forwards (4 without), rank 1's 0·2 + 2 + 1 = 3 (2),
 * then F, BW pairs, then the remaining BWs; the virtual micro-batch order is the plain
 * schedule's. */
static void
test_interleaved_a2a_overlap_order (void)
{
  GError *error = NULL;
  g_autoptr (ModelPpSchedule) s
    = model_pp_schedule_new_with (MODEL_PP_INTERLEAVED, 2, 4, 2, TRUE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (s);
  const char *expect0 = "F0.0 F1.0 F0.1 F1.1 F2.0 F3.0 BW0.1 F2.1 BW1.1 F3.1 BW0.0 BW1.0 "
                        "BW2.1 BW3.1 BW2.0 BW3.0";
  const char *expect1 = "F0.0 F1.0 F0.1 F1.1 BW0.1 F2.0 BW1.1 F3.0 BW0.0 F2.1 BW1.0 F3.1 "
                        "BW2.1 BW3.1 BW2.0 BW3.0";
  const char *expect[] = { expect0, expect1 };
  for (guint r = 0; r < 2; r++)
    assert_rank_order (s, r, expect[r]);
  /* the steady F, BW pairs are marked combined, nothing else: rank 0's 3 pairs after its
   * 5 warm-up forwards, rank 1's 5 after 3. With m = p = 2 rank 0's warm-up (5) takes all
   * 4 virtual micro-batches: no steady state, no combined step (its last forward and first
   * backward are not a pair: combining them would wait on rank 1 for a gradient that
   * needs that forward's output), rank 1's 3 warm-up forwards leave one pair. */
  const guint first[2][2] = { { 5, 3 }, { 4, 3 } }, pairs[2][2] = { { 3, 5 }, { 0, 1 } };
  for (guint c = 0; c < 2; c++)
    {
      g_autoptr (ModelPpSchedule) t
        = model_pp_schedule_new_with (MODEL_PP_INTERLEAVED, 2, c == 0 ? 4 : 2, 2, TRUE, &error);
      CU_ASSERT_PTR_NOT_NULL_FATAL (t);
      for (guint r = 0; r < 2; r++)
        {
          const GArray *ops = model_pp_schedule_rank (t, r);
          for (guint i = 0; i < ops->len; i++)
            {
              gboolean want = i >= first[c][r] && i < first[c][r] + 2 * pairs[c][r];
              CU_ASSERT_EQUAL (g_array_index (ops, ModelPpOp, i).combined, want);
            }
        }
    }
}

/* ---- Schedules: replayed step time ------------------------------------------------------- */

/* Equal stages, t_f and t_b (= the BW) per stage, no communication.
 * 1F1B: the last rank starts at (p − 1)·t_f (the first micro-batch's forward through the
 * p − 1 ranks before it) and then never waits — its forwards arrive every t_f, sooner than
 * it takes them — so it ends m·(t_f + t_b) later; the last micro-batch's backward then
 * runs down the other p − 1 ranks, (p − 1)·t_b: step = (p − 1)·t_f + m·(t_f + t_b) +
 * (p − 1)·t_b = (m + p − 1)·(t_f + t_b).
 * GPipe: the last rank's last forward ends at (m + p − 1)·t_f, its m backwards follow at
 * once, then the same (p − 1)·t_b chain: the same (m + p − 1)·(t_f + t_b).
 * Each rank works m·(t_f + t_b), so the idle share is (p − 1)/(m + p − 1) (Narayanan et
 * al. 2021 §2.2.1's bubble (p − 1)/m of the ideal time, as a share of the step). Holds for
 * m < p too (1F1B warm-up is min(p − r − 1, m)). */
static void
test_gpipe_1f1b_step (void)
{
  const guint pm[][2] = { { 1, 4 }, { 2, 3 }, { 4, 8 }, { 4, 4 }, { 4, 2 }, { 8, 16 }, { 8, 64 } };
  const double tfb[][2] = { { 1.0, 2.0 }, { 3e-3, 5e-3 }, { 2.0, 1.0 } };
  ModelPpScheduleKind kinds[] = { MODEL_PP_GPIPE, MODEL_PP_1F1B };
  for (guint j = 0; j < G_N_ELEMENTS (pm); j++)
    for (guint t = 0; t < G_N_ELEMENTS (tfb); t++)
      for (guint q = 0; q < G_N_ELEMENTS (kinds); q++)
        {
          guint p = pm[j][0], m = pm[j][1];
          double tf = tfb[t][0], tb = tfb[t][1], dur[4];
          durations (dur, tf, tb, 0);
          g_autoptr (ModelPpSchedule) s = sched (kinds[q], p, m, 1);
          CU_ASSERT_PTR_NOT_NULL_FATAL (s);
          Replay rp = replay (s, dur);
          CU_ASSERT_FALSE (rp.deadlock);
          STEPSIM_ASSERT_REL (rp.step, (m + p - 1) * (tf + tb), 1e-12);
          STEPSIM_ASSERT_REL (rp.bubble + 1.0, 1.0 + (double) (p - 1) / (m + p - 1), 1e-12);
        }
}

/* Interleaved 1F1B with v chunks per rank, each chunk 1/v of a stage: t_f/v and t_b/v per
 * chunk op. Narayanan et al. 2021 §2.2.2: the bubble shrinks to (p − 1)·(t_f + t_b)/v, so
 * step = m·(t_f + t_b) + (p − 1)·(t_f + t_b)/v and the bubble relative to the ideal
 * m·(t_f + t_b) is (p − 1)/(v·m) — v times 1F1B's (p − 1)/m (m a multiple of p). */
static void
test_interleaved_step (void)
{
  const guint pmv[][3] = { { 2, 4, 2 }, { 4, 8, 2 }, { 4, 8, 4 }, { 4, 4, 2 }, { 8, 16, 2 },
                           { 8, 64, 3 }, { 4, 12, 5 } };
  for (guint j = 0; j < G_N_ELEMENTS (pmv); j++)
    {
      guint p = pmv[j][0], m = pmv[j][1], v = pmv[j][2];
      double tf = 1.5, tb = 3.25, dur[4];
      durations (dur, tf / v, tb / v, 0);
      g_autoptr (ModelPpSchedule) s = sched (MODEL_PP_INTERLEAVED, p, m, v);
      CU_ASSERT_PTR_NOT_NULL_FATAL (s);
      Replay rp = replay (s, dur);
      CU_ASSERT_FALSE (rp.deadlock);
      double ideal = m * (tf + tb);
      STEPSIM_ASSERT_REL (rp.step, ideal + (p - 1) * (tf + tb) / v, 1e-12);
      STEPSIM_ASSERT_REL ((rp.step - ideal) / ideal, (double) (p - 1) / (v * m), 1e-9);
      /* and below 1F1B's on the same work */
      g_autoptr (ModelPpSchedule) plain = sched (MODEL_PP_1F1B, p, m, 1);
      double whole[4];
      durations (whole, tf, tb, 0);
      CU_ASSERT (rp.step < replay (plain, whole).step);
    }
}

/* ZB-H1 with t_f, B (input gradient) t_b, W t_w, m >= p, t_w <= t_f and t_w <= t_b. The
 * last rank defers its first p − 1 W, so before its last B it has run m F, m B and
 * m − p W without waiting: that B ends at (p − 1)·t_f + m·(t_f + t_b) + (m − p)·t_w. The
 * last input gradient then runs down the p − 1 other ranks, (p − 1)·t_b (each is free by
 * then), and rank 0 ends with its last W: step = (p − 1)·t_f + m·(t_f + t_b) +
 * (m − p)·t_w + (p − 1)·t_b + t_w = m·(t_f + t_b + t_w) + (p − 1)·(t_f + t_b − t_w),
 * Qi et al. 2023 §3.1's ZB-H1 bubble (p − 1)·(T_F + T_B − T_W). 1F1B on the same work
 * (BW = t_b + t_w) takes (m + p − 1)·(t_f + t_b + t_w): ZB-H1 saves (p − 1)·2·t_w. */
static void
test_zb_h1_step (void)
{
  const guint pm[][2] = { { 2, 2 }, { 2, 3 }, { 4, 4 }, { 4, 8 }, { 8, 16 }, { 8, 33 } };
  const double t[][3] = { { 1, 1, 1 }, { 1, 1.2, 0.8 }, { 2, 1, 1 }, { 1, 1.5, 0.5 },
                          { 1e-3, 2e-3, 1e-3 } };
  for (guint j = 0; j < G_N_ELEMENTS (pm); j++)
    for (guint q = 0; q < G_N_ELEMENTS (t); q++)
      {
        guint p = pm[j][0], m = pm[j][1];
        double tf = t[q][0], tb = t[q][1], tw = t[q][2], dur[4];
        durations (dur, tf, tb, tw);
        g_autoptr (ModelPpSchedule) zb = sched (MODEL_PP_ZB_H1, p, m, 1);
        g_autoptr (ModelPpSchedule) f1b = sched (MODEL_PP_1F1B, p, m, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL (zb);
        Replay rz = replay (zb, dur), rf = replay (f1b, dur);
        CU_ASSERT_FALSE (rz.deadlock);
        STEPSIM_ASSERT_REL (rz.step, m * (tf + tb + tw) + (p - 1) * (tf + tb - tw), 1e-12);
        STEPSIM_ASSERT_REL (rf.step, (m + p - 1) * (tf + tb + tw), 1e-12);
        STEPSIM_ASSERT_REL (rf.step - rz.step, 2.0 * (p - 1) * tw, 1e-9);
      }
}

/* ---- In-flight micro-batches ------------------------------------------------------------- */

/* Counted from each rank's order (F done − B done):
 *   GPipe: all m forwards before the first backward: m on every rank.
 *   1F1B: rank r's warm-up p − r − 1 forwards plus the first steady F before its first BW:
 *         p − r (Narayanan §2.2.1: the first stage holds p), min(p − r, m) when m < p.
 *   ZB-H1: the same F/B order, so p − r for F − B; its W pending: rank r's deferred r W
 *         on top, p − r − 1 + 1 + r = p on every rank (1F1B's first-stage peak).
 *   interleaved: rank r's warm-up (p − r − 1)·2 + (v − 1)·p plus one, at most m·v, in chunk
 *         micro-batches; even chunks of L/(p·v) layers give rank 0 (v·p + p − 1)·L/(p·v) =
 *         (L/p)·p·(1 + (p − 1)/(p·v)) layer micro-batches — Korthikanti et al. 2022 §4.2.3's
 *         factor 1 + (p − 1)/(p·m) with its m the number of interleaved stages. */
static void
test_in_flight (void)
{
  const guint p = 4, m = 8, L = 32;
  ModelPpPartitionSpec spec = { .n_layers = L, .pp = p };
  g_autoptr (ModelPpPartition) part = model_pp_partition_new (&spec, NULL);
  ModelPpScheduleKind kinds[] = { MODEL_PP_GPIPE, MODEL_PP_1F1B, MODEL_PP_ZB_H1 };
  for (guint q = 0; q < G_N_ELEMENTS (kinds); q++)
    for (guint mm = 2; mm <= m; mm += 6)
      {
        g_autoptr (ModelPpSchedule) s = sched (kinds[q], p, mm, 1);
        g_autoptr (GArray) mem = g_array_new (FALSE, FALSE, sizeof (ModelPpRankMemory));
        model_pp_rank_memory (part, s, mem);
        CU_ASSERT_EQUAL_FATAL (mem->len, p);
        for (guint r = 0; r < p; r++)
          {
            const ModelPpRankMemory *x = &g_array_index (mem, ModelPpRankMemory, r);
            guint live = kinds[q] == MODEL_PP_GPIPE ? mm : MIN (p - r, mm);
            guint pend = kinds[q] == MODEL_PP_ZB_H1 ? MIN (p, mm) : live;
            CU_ASSERT_EQUAL (x->peak_in_flight, live);
            CU_ASSERT_EQUAL (x->peak_pending_w, pend);
            STEPSIM_ASSERT_REL (x->peak_layer_micro, live * (double) (L / p), 1e-12);
            CU_ASSERT_EQUAL (x->n_layers, L / p);
            CU_ASSERT_EQUAL (x->embedding, r == 0);
            CU_ASSERT_EQUAL (x->loss, r == p - 1);
          }
      }

  const guint pmv[][3] = { { 4, 8, 2 }, { 4, 16, 4 }, { 8, 16, 2 }, { 4, 4, 2 }, { 2, 4, 3 } };
  for (guint j = 0; j < G_N_ELEMENTS (pmv); j++)
    {
      guint pp = pmv[j][0], mm = pmv[j][1], v = pmv[j][2], layers = 8 * pp * v;
      ModelPpPartitionSpec sp = { .n_layers = layers, .pp = pp, .vpp = v };
      g_autoptr (ModelPpPartition) pv = model_pp_partition_new (&sp, NULL);
      g_autoptr (ModelPpSchedule) s = sched (MODEL_PP_INTERLEAVED, pp, mm, v);
      CU_ASSERT_PTR_NOT_NULL_FATAL (pv);
      CU_ASSERT_PTR_NOT_NULL_FATAL (s);
      g_autoptr (GArray) mem = g_array_new (FALSE, FALSE, sizeof (ModelPpRankMemory));
      model_pp_rank_memory (pv, s, mem);
      for (guint r = 0; r < pp; r++)
        {
          const ModelPpRankMemory *x = &g_array_index (mem, ModelPpRankMemory, r);
          guint live = MIN ((pp - r - 1) * 2 + (v - 1) * pp + 1, mm * v);
          CU_ASSERT_EQUAL (x->peak_in_flight, live);
          CU_ASSERT_EQUAL (x->n_layers, layers / pp);
          STEPSIM_ASSERT_REL (x->peak_layer_micro, live * (double) layers / (pp * v), 1e-12);
        }
      const ModelPpRankMemory *x0 = &g_array_index (mem, ModelPpRankMemory, 0);
      if (mm * v >= v * pp + pp - 1) /* enough micro-batches to finish the warm-up */
        STEPSIM_ASSERT_REL (x0->peak_layer_micro,
                            (layers / (double) pp) * pp * (1 + (pp - 1.0) / (pp * v)), 1e-12);
    }
}

/* Per-rank holdings from a layout with v = 2 over p = 2: "Et|tt|t|tL" → stage 0 (rank 0)
 * E + 1, stage 1 (rank 1) 2, stage 2 (rank 0 chunk 1) 1, stage 3 (rank 1 chunk 1) 1 + L:
 * rank 0 holds 2 layers and the embedding, rank 1 holds 3 layers and the loss. Interleaved
 * with m = 2: rank 0 warms up all 4 chunk micro-batches (min(2 + 2, 4)): 2 on stage 0
 * (1 layer) + 2 on stage 2 (1 layer) = 4 layer micro-batches; rank 1's warm-up of 2
 * forwards (mb 0, 1 on stage 1, 2 layers each) then F of mb 0 on stage 3 (1 layer) before
 * its first backward: 2·2 + 1 = 5. */
static void
test_rank_memory_layout (void)
{
  ModelPpPartitionSpec spec = { .n_layers = 5, .pp = 2, .layout = "Et|tt|t|tL" };
  g_autoptr (ModelPpPartition) part = model_pp_partition_new (&spec, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (part);
  g_autoptr (ModelPpSchedule) s = sched (MODEL_PP_INTERLEAVED, 2, 2, 2);
  g_autoptr (GArray) mem = g_array_new (FALSE, FALSE, sizeof (ModelPpRankMemory));
  model_pp_rank_memory (part, s, mem);
  const ModelPpRankMemory *a = &g_array_index (mem, ModelPpRankMemory, 0);
  const ModelPpRankMemory *b = &g_array_index (mem, ModelPpRankMemory, 1);
  CU_ASSERT (a->n_layers == 2 && a->embedding && !a->loss);
  CU_ASSERT (b->n_layers == 3 && !b->embedding && b->loss);
  CU_ASSERT_EQUAL (a->peak_in_flight, 4);
  STEPSIM_ASSERT_REL (a->peak_layer_micro, 4.0, 1e-12);
  CU_ASSERT_EQUAL (b->peak_in_flight, 3);
  STEPSIM_ASSERT_REL (b->peak_layer_micro, 5.0, 1e-12);
}

/* ---- Errors and warnings ------------------------------------------------------------------- */

static void
test_schedule_errors (void)
{
  GError *error = NULL;
  /* interleaved with m = 6 over p = 4 (Megatron raises) */
  CU_ASSERT_PTR_NULL (model_pp_schedule_new (MODEL_PP_INTERLEAVED, 4, 6, 2, &error));
  assert_error (error, (const char *const[]){ "[training] grad_accum = 6", "[parallel] pp = 4",
                                              "multiple", NULL });
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (model_pp_schedule_new (MODEL_PP_INTERLEAVED, 4, 8, 1, &error));
  assert_error (error, (const char *const[]){ "virtual_stages >= 2", NULL });
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (model_pp_schedule_new (MODEL_PP_1F1B, 4, 8, 2, &error));
  assert_error (error, (const char *const[]){ "virtual_stages = 2",
                                              "pipeline_schedule = interleaved", NULL });
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (model_pp_schedule_new (MODEL_PP_GPIPE, 4, 0, 1, &error));
  assert_error (error, (const char *const[]){ "grad_accum = 0", NULL });
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (model_pp_schedule_new (MODEL_PP_GPIPE, 0, 4, 1, &error));
  assert_error (error, (const char *const[]){ "[parallel] pp = 0", NULL });
  g_clear_error (&error);

  /* names round-trip */
  ModelPpScheduleKind k;
  CU_ASSERT (model_pp_schedule_from_name ("zb-h1", &k) && k == MODEL_PP_ZB_H1);
  CU_ASSERT (model_pp_schedule_from_name ("interleaved", &k) && k == MODEL_PP_INTERLEAVED);
  CU_ASSERT_FALSE (model_pp_schedule_from_name ("dualpipe", &k));
}

/* m < p: 1F1B and ZB-H1 run and warn (naming grad_accum and pp), GPipe and m >= p do not. */
static void
test_few_micro_batches_warn (void)
{
  g_autoptr (ModelPpSchedule) a = sched (MODEL_PP_1F1B, 8, 4, 1);
  g_autoptr (ModelPpSchedule) z = sched (MODEL_PP_ZB_H1, 8, 4, 1);
  g_autoptr (ModelPpSchedule) g = sched (MODEL_PP_GPIPE, 8, 4, 1);
  g_autoptr (ModelPpSchedule) e = sched (MODEL_PP_1F1B, 8, 8, 1);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_EQUAL_FATAL (a->warnings->len, 1);
  const char *w = g_ptr_array_index (a->warnings, 0);
  CU_ASSERT (strstr (w, "[training] grad_accum = 4") && strstr (w, "[parallel] pp = 8")
             && strstr (w, "idles 7 of every 11"));
  CU_ASSERT_EQUAL (z->warnings->len, 1);
  CU_ASSERT_EQUAL (g->warnings->len, 0);
  CU_ASSERT_EQUAL (e->warnings->len, 0);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "even stages, virtual stages round-robin", test_even },
    { "layers_per_stage", test_layers_per_stage },
    { "partition errors name pp and num_hidden_layers", test_partition_errors },
    { "Megatron's DeepSeek-V3 layout example", test_layout_megatron_example },
    { "layout repeats and commas", test_layout_repeats },
    { "layout errors name character and position", test_layout_errors },
    { "every op once, dependencies as documented", test_structure },
    { "1F1B, ZB-H1 and GPipe orders", test_orders },
    { "Megatron's interleaved order", test_interleaved_order },
    { "interleaved order under a2a_overlap: one more warm-up forward",
      test_interleaved_a2a_overlap_order },
    { "GPipe and 1F1B step = (m + p - 1)(t_f + t_b)", test_gpipe_1f1b_step },
    { "interleaving divides the bubble by v", test_interleaved_step },
    { "ZB-H1 bubble (p - 1)(t_f + t_b - t_w)", test_zb_h1_step },
    { "in-flight micro-batches per rank", test_in_flight },
    { "per-rank holdings from a layout", test_rank_memory_layout },
    { "schedule errors", test_schedule_errors },
    { "m < p warns", test_few_micro_batches_warn },
  };
  return STEPSIM_RUN_TESTS ("models/parallel/pipeline_schedule", tests);
}
