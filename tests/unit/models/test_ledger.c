/* tests/unit/models/test_ledger.c — the per-rank memory ledger. */
#include "config.h"

#include <math.h>
#include "models/memory/ledger.h"
#include "tests/testlib.h"

/* Peak is the first moment the maximum total is reached; the mix is the categories then. */
static void
test_peak_and_mix (void)
{
  g_autoptr (ModelLedger) l = model_ledger_new (2, NULL);
  model_ledger_alloc (l, 0, MODEL_MEM_WEIGHTS, 100, 1, 0.0, "init");
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 50, 2, 1.0, "fwd");
  model_ledger_alloc (l, 0, MODEL_MEM_WORKSPACE, 30, 3, 2.0, "bwd");  /* total 180: peak */
  model_ledger_release (l, 0, 3, 3.0, "bwd");
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 30, 4, 4.0, "x");  /* total 180 again */
  CU_ASSERT_EQUAL (model_ledger_peak (l, 0), 180);
  CU_ASSERT_EQUAL (model_ledger_peak_time (l, 0), 2.0);
  CU_ASSERT_STRING_EQUAL (model_ledger_peak_task (l, 0), "bwd");
  CU_ASSERT_EQUAL (model_ledger_peak_mix (l, 0, MODEL_MEM_WORKSPACE), 30);
  CU_ASSERT_EQUAL (model_ledger_peak_mix (l, 0, MODEL_MEM_ACTIVATIONS), 50);
  CU_ASSERT_EQUAL (model_ledger_category_peak (l, 0, MODEL_MEM_ACTIVATIONS), 80);
  CU_ASSERT_EQUAL (model_ledger_current_total (l, 0), 180);
  CU_ASSERT_EQUAL (model_ledger_peak (l, 1), 0); /* ranks are independent */
}

/* Series are change points of each category and of the total, in bytes. */
static void
test_series (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  g_autoptr (ModelLedger) l = model_ledger_new (1, rec);
  model_ledger_alloc (l, 0, MODEL_MEM_GRADIENTS, 10, 7, 1.0, NULL);
  model_ledger_release (l, 0, 7, 2.0, NULL);
  guint found = G_MAXUINT, total = G_MAXUINT;
  for (guint i = 0; i < sim_recorder_n_series (rec); i++)
    {
      if (g_strcmp0 (sim_recorder_series_path (rec, i), "rank0/memory/gradients") == 0)
        found = i;
      if (g_strcmp0 (sim_recorder_series_path (rec, i), "rank0/allocated") == 0)
        total = i;
    }
  CU_ASSERT_NOT_EQUAL_FATAL (found, G_MAXUINT);
  CU_ASSERT_NOT_EQUAL_FATAL (total, G_MAXUINT);
  const double *t, *v;
  guint n = sim_recorder_series_points (rec, found, &t, &v);
  CU_ASSERT_EQUAL_FATAL (n, 3); /* 0 at t=0, 10 at 1, 0 at 2 */
  CU_ASSERT_EQUAL (v[1], 10);
  CU_ASSERT_EQUAL (t[2], 2.0);
  CU_ASSERT_EQUAL (v[2], 0);
  CU_ASSERT_EQUAL (sim_recorder_series_max (rec, total), 10);
  CU_ASSERT_STRING_EQUAL (sim_recorder_series_unit (rec, found), "B");
}

/* Bytes are whole: float noise of a share × a total snaps to its integer, a true fraction
 * (a shard the ranks do not divide) rounds up, as FSDP and ZeRO pad; the ledger holds and
 * frees the whole sizes. */
static void
test_whole_bytes (void)
{
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (28971122687.999996), 28971122688.0);
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (18044362752.000214), 18044362752.0);
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (14508589591.122826), 14508589592.0);
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (10.0 / 3.0), 4.0);
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (7.0), 7.0);
  /* whole numbers on both sides of the fast path's bound (2^63), and below one byte */
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (9007199254740993.0), 9007199254740993.0);
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (1e19), 1e19);
  CU_ASSERT_EQUAL (model_ledger_whole_bytes (0.25), 1.0);
  g_autoptr (ModelLedger) l = model_ledger_new (1, NULL);
  const double sizes[] = { 10.0 / 3.0, 2.5 };
  model_ledger_alloc_tensors (l, 0, MODEL_MEM_WEIGHTS, sizes, 2, MODEL_ALLOC_STREAM_COMPUTE,
                              1, 0.0, "w");
  CU_ASSERT_EQUAL (model_ledger_current_total (l, 0), 7.0);
  CU_ASSERT_EQUAL (model_ledger_peak (l, 0), 7.0);
  model_ledger_release (l, 0, 1, 1.0, "free");
  CU_ASSERT_EQUAL (model_ledger_current_total (l, 0), 0.0);
}

/* A free releases exactly its own buffer, whatever else lives in the category. */
static void
test_free_by_handle (void)
{
  g_autoptr (ModelLedger) l = model_ledger_new (1, NULL);
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 70, 1, 0.0, NULL);
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 5, 2, 0.0, NULL);
  model_ledger_release (l, 0, 1, 1.0, NULL);
  CU_ASSERT_EQUAL (model_ledger_current (l, 0, MODEL_MEM_ACTIVATIONS), 5);
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 9, 1, 2.0, NULL); /* handle reusable once freed */
  CU_ASSERT_EQUAL (model_ledger_current_total (l, 0), 14);
  /* handles beyond the table's first size, one after the other and far apart, each its own */
  for (guint h = 3; h < 200; h++)
    model_ledger_alloc (l, 0, MODEL_MEM_WEIGHTS, h, h, 3.0, NULL);
  model_ledger_alloc (l, 0, MODEL_MEM_WEIGHTS, 7, 100000, 3.0, NULL);
  CU_ASSERT_TRUE (model_ledger_live (l, 0, 199) && model_ledger_live (l, 0, 100000));
  CU_ASSERT_FALSE (model_ledger_live (l, 0, 200) || model_ledger_live (l, 0, 99999));
  CU_ASSERT_FALSE (model_ledger_live (l, 0, 1u << 30)); /* never seen: not live */
  model_ledger_release (l, 0, 150, 4.0, NULL);
  model_ledger_release (l, 0, 100000, 4.0, NULL);
  CU_ASSERT_FALSE (model_ledger_live (l, 0, 150) || model_ledger_live (l, 0, 100000));
  CU_ASSERT_TRUE (model_ledger_live (l, 0, 149) && model_ledger_live (l, 0, 151));
  CU_ASSERT_EQUAL (model_ledger_current (l, 0, MODEL_MEM_WEIGHTS), 199 * 200 / 2 - 3 - 150);
  /* a rank whose first handle is large, then lower ones (its table reaches down to them),
   * then a larger one: each live on its own, none on the other rank */
  g_autoptr (ModelLedger) two = model_ledger_new (2, NULL);
  const guint hs[] = { 5000, 4999, 10, 4990, 70000 };
  for (guint i = 0; i < G_N_ELEMENTS (hs); i++)
    model_ledger_alloc (two, 1, MODEL_MEM_ACTIVATIONS, 1 + i, hs[i], 1.0, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (hs); i++)
    CU_ASSERT_TRUE (model_ledger_live (two, 1, hs[i]) && !model_ledger_live (two, 0, hs[i]));
  CU_ASSERT_FALSE (model_ledger_live (two, 1, 9) || model_ledger_live (two, 1, 11)
                   || model_ledger_live (two, 1, 4991) || model_ledger_live (two, 1, 69999));
  model_ledger_release (two, 1, 10, 2.0, NULL);
  model_ledger_release (two, 1, 5000, 2.0, NULL);
  CU_ASSERT_FALSE (model_ledger_live (two, 1, 10) || model_ledger_live (two, 1, 5000));
  CU_ASSERT_TRUE (model_ledger_live (two, 1, 4999) && model_ledger_live (two, 1, 70000));
  CU_ASSERT_EQUAL (model_ledger_current (two, 1, MODEL_MEM_ACTIVATIONS), 2 + 4 + 5);
}

static void
test_category_names (void)
{
  CU_ASSERT_STRING_EQUAL (model_ledger_category_name (MODEL_MEM_OPTIMIZER_STATE), "optimizer_state");
  CU_ASSERT_STRING_EQUAL (model_ledger_category_name (MODEL_MEM_MASTER_WEIGHTS), "master_weights");
}

#define MiB (1024.0 * 1024.0)

/* A tensor beyond any GPU (1e22 B, the eager scores of a 16M-token sequence) is booked by
 * the allocator at 16 TiB; the peak reserved reported is still at least the 1e22 B the
 * ledger holds, so device-used never shows less than was allocated. */
static void
test_reserved_never_below_allocated (void)
{
  g_autoptr (ModelLedger) l = model_ledger_new (1, NULL);
  const double sizes[] = { 1e22 };
  model_ledger_alloc_tensors (l, 0, MODEL_MEM_ACTIVATIONS, sizes, 1,
                              MODEL_ALLOC_STREAM_COMPUTE, 1, 1.0, "fwd");
  CU_ASSERT (model_ledger_peak_reserved (l, 0) >= model_ledger_peak (l, 0));
  CU_ASSERT_EQUAL (model_ledger_peak (l, 0), 1e22);
}

/* Reserved bytes after a 30 MiB gradient buffer allocated on `stream` is freed and a
 * 30 MiB activation is then asked for on the compute stream. */
static double
reserved_after_reuse (ModelAllocStream stream)
{
  const double sizes[] = { 30 * MiB };
  g_autoptr (ModelLedger) l = model_ledger_new (1, NULL);
  model_ledger_alloc_tensors (l, 0, MODEL_MEM_GRADIENTS, sizes, 1, stream, 1, 1.0,
                              "reduce_scatter");
  model_ledger_release (l, 0, 1, 2.0, "optimizer");
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 30 * MiB, 2, 3.0, "fwd");
  return model_ledger_current_reserved (l, 0);
}

/* A buffer allocated on a side stream (FSDP's gradient shards on its reduce-scatter
 * stream) and freed stays cached for that stream: the same 30 MiB asked for on the compute
 * stream takes a new segment (60 MiB reserved), where a compute-stream buffer's block
 * would have been reused (30 MiB). */
static void
test_reserved_per_stream (void)
{
  CU_ASSERT_EQUAL (reserved_after_reuse (MODEL_ALLOC_STREAM_REDUCE_SCATTER), 60 * MiB);
  CU_ASSERT_EQUAL (reserved_after_reuse (MODEL_ALLOC_STREAM_COMPUTE), 30 * MiB);
}

/* Reserved follows the allocator: two 4 MiB tensors of one buffer share a 20 MiB segment
 * (models/memory/allocator.h: large requests < 10 MiB come from 20 MiB segments), which stays
 * cached after the release; the series rank0/reserved records it. */
static void
test_reserved (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  g_autoptr (ModelLedger) l = model_ledger_new (1, rec);
  const double sizes[] = { 4 * MiB, 4 * MiB };
  model_ledger_alloc_tensors (l, 0, MODEL_MEM_ACTIVATIONS, sizes, 2,
                              MODEL_ALLOC_STREAM_COMPUTE, 1, 1.0, "fwd");
  CU_ASSERT_EQUAL (model_ledger_current_total (l, 0), 8 * MiB);
  CU_ASSERT_EQUAL (model_ledger_current_reserved (l, 0), 20 * MiB);
  model_ledger_release (l, 0, 1, 2.0, "bwd");
  CU_ASSERT_EQUAL (model_ledger_current_total (l, 0), 0);
  CU_ASSERT_EQUAL (model_ledger_current_reserved (l, 0), 20 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak_reserved (l, 0), 20 * MiB);
  guint found = G_MAXUINT;
  for (guint i = 0; i < sim_recorder_n_series (rec); i++)
    if (g_strcmp0 (sim_recorder_series_path (rec, i), "rank0/reserved") == 0)
      found = i;
  CU_ASSERT_NOT_EQUAL_FATAL (found, G_MAXUINT);
  CU_ASSERT_EQUAL (sim_recorder_series_max (rec, found), 20 * MiB);
  CU_ASSERT_FALSE (model_ledger_oom (l, 0));
}

/* A later step inherits the allocators of an earlier one (models/memory/ledger.h; the caching
 * allocator's rules, models/memory/allocator.h). Step 1: a 100 MiB weight and a 60 MiB
 * activation, each its own segment (≥ 10 MiB: rounded to 2 MiB), the activation freed.
 * Inherited, everything is free and cached: reserved 160 MiB in `to`, `from` holds nothing.
 * Step 2: the weight again takes the cached 100 MiB block (best fit, exact), reserved
 * stays 160; an 80 MiB activation fits no cached block (60 MiB is left) and cudaMalloc
 * succeeds, so a new segment: 240 MiB (nothing is given back); a 50 MiB one is split from
 * the 60 MiB block (remainder 10 MiB > 1 MiB): still 240. */
static void
test_inherit_allocators (void)
{
  g_autoptr (ModelLedger) a = model_ledger_new (1, NULL);
  model_ledger_alloc (a, 0, MODEL_MEM_WEIGHTS, 100 * MiB, 1, 0.0, "initial state");
  model_ledger_alloc (a, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  model_ledger_release (a, 0, 2, 2.0, "bwd");
  g_autoptr (ModelLedger) b = model_ledger_new (1, NULL);
  model_ledger_inherit_allocators (b, a);
  CU_ASSERT_EQUAL (model_ledger_current_total (a, 0), 0);
  CU_ASSERT_EQUAL (model_ledger_current_reserved (a, 0), 0);
  CU_ASSERT_EQUAL (model_ledger_current_total (b, 0), 0);
  CU_ASSERT_EQUAL (model_ledger_current_reserved (b, 0), 160 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak_reserved (b, 0), 160 * MiB);
  model_ledger_alloc (b, 0, MODEL_MEM_WEIGHTS, 100 * MiB, 1, 0.0, "initial state");
  CU_ASSERT_EQUAL (model_ledger_current_reserved (b, 0), 160 * MiB);
  model_ledger_alloc (b, 0, MODEL_MEM_ACTIVATIONS, 80 * MiB, 2, 1.0, "fwd");
  CU_ASSERT_EQUAL (model_ledger_current_reserved (b, 0), 240 * MiB);
  model_ledger_alloc (b, 0, MODEL_MEM_ACTIVATIONS, 50 * MiB, 3, 1.5, "fwd");
  CU_ASSERT_EQUAL (model_ledger_current_reserved (b, 0), 240 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak (b, 0), 230 * MiB); /* the ledger's own peak: step 2 */
}

/* Under a capacity the inherited cache is given back only when cudaMalloc would fail
 * (release_cached_blocks, then retry): capacity 200 MiB, 100 + 60 MiB cached and free; a
 * 120 MiB request fits neither block and 160 + 120 > 200, so both segments are released and
 * the request gets its own: reserved 120 MiB, no OOM; the high-water mark stays 160 MiB. */
static void
test_inherit_releases_on_failure (void)
{
  g_autoptr (ModelLedger) a = model_ledger_new (1, NULL);
  model_ledger_set_allocator (a, 200 * MiB, FALSE);
  model_ledger_alloc (a, 0, MODEL_MEM_WEIGHTS, 100 * MiB, 1, 0.0, "initial state");
  model_ledger_alloc (a, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  g_autoptr (ModelLedger) b = model_ledger_new (1, NULL);
  model_ledger_inherit_allocators (b, a);
  model_ledger_alloc (b, 0, MODEL_MEM_ACTIVATIONS, 120 * MiB, 1, 0.0, "fwd");
  CU_ASSERT_EQUAL (model_ledger_current_reserved (b, 0), 120 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak_reserved (b, 0), 160 * MiB);
  CU_ASSERT_FALSE (model_ledger_oom (b, 0));
}

/* The first step's lazily created optimizer state splits a freed block, and the second
 * step, starting with that state live, needs a new segment (model_ledger_continue; the
 * allocator's rules, models/memory/allocator.h: ≥ 10 MiB requests get a segment of their
 * size rounded to 2 MiB, large-pool blocks split when the rest is > 1 MiB, best fit).
 * Step 1: weight 100 MiB (segment A), activation 60 MiB (segment B), freed by the backward;
 * the optimizer step creates a 40 MiB state: best fit is B's free 60 MiB block, split into
 * 40 + 20 MiB. Reserved 100 + 60 = 160 MiB, allocated peak 160 (weight + activation).
 * Step 2 keeps the weight and the state (renamed 1 → 11, 3 → 13): 140 MiB allocated at
 * its start, reserved 160, its high-water mark reset to 160. The 60 MiB activation fits
 * no free block (B's 20 MiB is all that is free), and cudaMalloc succeeds: a new 60 MiB
 * segment, reserved 220 MiB; allocated peak 100 + 40 + 60 = 200 MiB. A fresh replay with
 * both states allocated first needs 100 + 40 + 60 = 200 MiB reserved: the steady state
 * reserves 20 MiB more than a fresh allocator, 60 more than the first step. Step 1's
 * figures stay readable in `a` (peak 160, reserved peak 160) after its allocator moved. */
static void
test_continue_keeps_states (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  g_autoptr (ModelLedger) a = model_ledger_new (1, NULL);
  model_ledger_alloc (a, 0, MODEL_MEM_WEIGHTS, 100 * MiB, 1, 0.0, "initial state");
  model_ledger_alloc (a, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  model_ledger_release (a, 0, 2, 2.0, "bwd");
  model_ledger_alloc (a, 0, MODEL_MEM_OPTIMIZER_STATE, 40 * MiB, 3, 3.0, "optimizer step");
  CU_ASSERT_EQUAL (model_ledger_current_reserved (a, 0), 160 * MiB);
  g_autoptr (ModelLedger) b = model_ledger_new (1, rec);
  const guint from[] = { 1, 3 }, to[] = { 11, 13 };
  model_ledger_continue (b, a, from, to, 2);
  CU_ASSERT_EQUAL (model_ledger_peak (a, 0), 160 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak_reserved (a, 0), 160 * MiB);
  CU_ASSERT_EQUAL (model_ledger_current_reserved (a, 0), 0);
  CU_ASSERT_FALSE (model_ledger_live (a, 0, 3));
  CU_ASSERT_TRUE (model_ledger_live (b, 0, 11));
  CU_ASSERT_TRUE (model_ledger_live (b, 0, 13));
  CU_ASSERT_FALSE (model_ledger_live (b, 0, 1));
  CU_ASSERT_EQUAL (model_ledger_current_total (b, 0), 140 * MiB);
  CU_ASSERT_EQUAL (model_ledger_current (b, 0, MODEL_MEM_OPTIMIZER_STATE), 40 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak (b, 0), 140 * MiB);
  CU_ASSERT_STRING_EQUAL (model_ledger_peak_task (b, 0), "carried over");
  CU_ASSERT_EQUAL (model_ledger_peak_reserved (b, 0), 160 * MiB);
  model_ledger_alloc (b, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  CU_ASSERT_EQUAL (model_ledger_current_reserved (b, 0), 220 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak (b, 0), 200 * MiB);
  model_ledger_release (b, 0, 2, 2.0, "bwd");
  model_ledger_release (b, 0, 13, 3.0, "end"); /* the kept blocks free like any other */
  CU_ASSERT_EQUAL (model_ledger_current_total (b, 0), 100 * MiB);
  /* the series of step 2 start at the carried state */
  guint found = G_MAXUINT;
  for (guint i = 0; i < sim_recorder_n_series (rec); i++)
    if (g_strcmp0 (sim_recorder_series_path (rec, i), "rank0/memory/optimizer_state") == 0)
      found = i;
  CU_ASSERT_NOT_EQUAL_FATAL (found, G_MAXUINT);
  const double *t, *v;
  guint n = sim_recorder_series_points (rec, found, &t, &v);
  CU_ASSERT_TRUE_FATAL (n >= 1);
  CU_ASSERT_EQUAL (t[0], 0.0);
  CU_ASSERT_EQUAL (v[0], 40 * MiB);
  /* the fresh replay of the same step: 200 MiB */
  g_autoptr (ModelLedger) c = model_ledger_new (1, NULL);
  model_ledger_alloc (c, 0, MODEL_MEM_WEIGHTS, 100 * MiB, 1, 0.0, "initial state");
  model_ledger_alloc (c, 0, MODEL_MEM_OPTIMIZER_STATE, 40 * MiB, 3, 0.0, "initial state");
  model_ledger_alloc (c, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  CU_ASSERT_EQUAL (model_ledger_peak_reserved (c, 0), 200 * MiB);
}

/* The same two steps on a 210 MiB device: the fresh replay (200 MiB) would fit, but the
 * second step's activation needs 160 + 60 = 220 > 210 MiB; PyTorch then frees the cached
 * segments that are wholly free (release_cached_blocks) and retries — here none: A holds
 * the weight, B the state beside its free 20 MiB — so it raises: an OOM of the steady state
 * that neither the first step nor a fresh replay shows. */
static void
test_continue_oom_after_release (void)
{
  g_autoptr (ModelLedger) a = model_ledger_new (1, NULL);
  model_ledger_set_allocator (a, 210 * MiB, FALSE);
  model_ledger_alloc (a, 0, MODEL_MEM_WEIGHTS, 100 * MiB, 1, 0.0, "initial state");
  model_ledger_alloc (a, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  model_ledger_release (a, 0, 2, 2.0, "bwd");
  model_ledger_alloc (a, 0, MODEL_MEM_OPTIMIZER_STATE, 40 * MiB, 3, 3.0, "optimizer step");
  CU_ASSERT_FALSE (model_ledger_oom (a, 0));
  g_autoptr (ModelLedger) b = model_ledger_new (1, NULL);
  model_ledger_set_allocator (b, 210 * MiB, FALSE);
  const guint keep[] = { 1, 3 };
  model_ledger_continue (b, a, keep, keep, 2);
  g_clear_pointer (&a, model_ledger_free); /* the carried buffers' labels are b's own */
  model_ledger_alloc (b, 0, MODEL_MEM_ACTIVATIONS, 60 * MiB, 2, 1.0, "fwd");
  CU_ASSERT_TRUE (model_ledger_oom (b, 0));
  CU_ASSERT_EQUAL (model_ledger_oom_reserved (b, 0), 160 * MiB);
  CU_ASSERT_EQUAL_FATAL (model_ledger_oom_n_holders (b, 0), 2);
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_holder (b, 0, 0)->task, "initial state");
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_holder (b, 0, 1)->task, "optimizer step");
  /* the carried buffers' blocks are b's own too */
  model_ledger_release (b, 0, 1, 4.0, "end");
  model_ledger_release (b, 0, 3, 4.0, "end");
  CU_ASSERT_FALSE (model_ledger_live (b, 0, 1));
  CU_ASSERT_FALSE (model_ledger_live (b, 0, 3));
}

/* OOM diagnosis: capacity 100 MiB; weights 40 MiB ("initial state"), activations 30 MiB
 * ("fwd L0") and 20 MiB ("fwd L1") live, each its own segment (≥ 10 MiB: rounded to 2 MiB).
 * A 30 MiB workspace in "bwd L1" needs 90 + 30 > 100 and nothing is cached: OOM. The
 * record names the task, the request, the mix before it and the holders, largest first. */
static void
test_oom_diagnosis (void)
{
  g_autoptr (ModelLedger) l = model_ledger_new (1, NULL);
  model_ledger_set_allocator (l, 100 * MiB, FALSE);
  model_ledger_alloc (l, 0, MODEL_MEM_WEIGHTS, 40 * MiB, 1, 0.0, "initial state");
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 20 * MiB, 2, 1.0, "fwd L1");
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 30 * MiB, 3, 0.5, "fwd L0");
  CU_ASSERT_FALSE (model_ledger_oom (l, 0));
  model_ledger_alloc (l, 0, MODEL_MEM_WORKSPACE, 30 * MiB, 4, 2.0, "bwd L1");
  CU_ASSERT_TRUE_FATAL (model_ledger_oom (l, 0));
  CU_ASSERT_EQUAL (model_ledger_oom_time (l, 0), 2.0);
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_task (l, 0), "bwd L1");
  CU_ASSERT_EQUAL (model_ledger_oom_requested (l, 0), 30 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_reserved (l, 0), 90 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_mix (l, 0, MODEL_MEM_ACTIVATIONS), 50 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_mix (l, 0, MODEL_MEM_WORKSPACE), 0);
  CU_ASSERT_EQUAL_FATAL (model_ledger_oom_n_holders (l, 0), 3);
  const ModelLedgerHolder *h0 = model_ledger_oom_holder (l, 0, 0);
  const ModelLedgerHolder *h1 = model_ledger_oom_holder (l, 0, 1);
  const ModelLedgerHolder *h2 = model_ledger_oom_holder (l, 0, 2);
  CU_ASSERT_STRING_EQUAL (h0->task, "initial state");
  CU_ASSERT_EQUAL (h0->category, MODEL_MEM_WEIGHTS);
  CU_ASSERT_STRING_EQUAL (h1->task, "fwd L0");
  CU_ASSERT_EQUAL (h1->bytes, 30 * MiB);
  CU_ASSERT_STRING_EQUAL (h2->task, "fwd L1");
  /* Only the first OOM is kept. */
  model_ledger_alloc (l, 0, MODEL_MEM_WORKSPACE, 50 * MiB, 5, 3.0, "later");
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_task (l, 0), "bwd L1");
}

/* A buffer of three 30 MiB tensors (gradients of "bwd L1") on a 100 MiB device holding
 * 40 MiB of weights: tensors 1 and 2 fit (40 + 30 + 30 = 100 MiB), tensor 3 does not. As
 * PyTorch reports it, the request that failed is the third tensor (30 MiB, not the buffer's
 * 90), reserved then (100 MiB) holds the first two, and they are live: 60 MiB of gradients
 * in the mix and a 60 MiB holder of "bwd L1". The peaks measured until the OOM are 100 MiB
 * (never above the capacity), and the reserved series stops at the capacity although the
 * step as planned goes on (the planned need, 130 MiB, stays the ledger's peak). */
static void
test_oom_part_way_through_a_buffer (void)
{
  g_autoptr (SimRecorder) rec = sim_recorder_new ();
  g_autoptr (ModelLedger) l = model_ledger_new (1, rec);
  model_ledger_set_allocator (l, 100 * MiB, FALSE);
  model_ledger_alloc (l, 0, MODEL_MEM_WEIGHTS, 40 * MiB, 1, 0.0, "initial state");
  const double sizes[] = { 30 * MiB, 30 * MiB, 30 * MiB };
  model_ledger_alloc_tensors (l, 0, MODEL_MEM_GRADIENTS, sizes, 3,
                              MODEL_ALLOC_STREAM_COMPUTE, 2, 1.0, "bwd L1");
  CU_ASSERT_TRUE_FATAL (model_ledger_oom (l, 0));
  CU_ASSERT_EQUAL (model_ledger_oom_requested (l, 0), 30 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_category (l, 0), MODEL_MEM_GRADIENTS);
  CU_ASSERT_EQUAL (model_ledger_oom_reserved (l, 0), 100 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_peak_reserved (l, 0), 100 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_peak_allocated (l, 0), 100 * MiB);
  CU_ASSERT_EQUAL (model_ledger_oom_mix (l, 0, MODEL_MEM_GRADIENTS), 60 * MiB);
  CU_ASSERT_EQUAL_FATAL (model_ledger_oom_n_holders (l, 0), 2);
  const ModelLedgerHolder *h = model_ledger_oom_holder (l, 0, 0); /* largest first */
  CU_ASSERT_STRING_EQUAL (h->task, "bwd L1");
  CU_ASSERT_EQUAL (h->category, MODEL_MEM_GRADIENTS);
  CU_ASSERT_EQUAL (h->bytes, 60 * MiB);
  CU_ASSERT_EQUAL (model_ledger_peak (l, 0), 130 * MiB);
  guint found = G_MAXUINT;
  for (guint i = 0; i < sim_recorder_n_series (rec); i++)
    if (g_strcmp0 (sim_recorder_series_path (rec, i), "rank0/reserved") == 0)
      found = i;
  CU_ASSERT_NOT_EQUAL_FATAL (found, G_MAXUINT);
  CU_ASSERT_EQUAL (sim_recorder_series_max (rec, found), 100 * MiB);
}

/* The ledger keeps its own copies of the task labels: a caller that passes one string again
 * gets the copy made before, but a caller's storage that holds another text by the next call
 * (a label freed and its memory reused, or a buffer rewritten) is copied again. Two OOM
 * holders and the peak name what the label read at each allocation. */
static void
test_label_storage_reused (void)
{
  g_autoptr (ModelLedger) l = model_ledger_new (1, NULL);
  model_ledger_set_allocator (l, 100 * MiB, FALSE);
  char label[32];
  g_strlcpy (label, "fwd L0", sizeof label);
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 30 * MiB, 1, 0.0, label);
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 20 * MiB, 2, 1.0, label); /* same text */
  g_strlcpy (label, "fwd L1", sizeof label);
  model_ledger_alloc (l, 0, MODEL_MEM_ACTIVATIONS, 40 * MiB, 3, 2.0, label);
  CU_ASSERT_STRING_EQUAL (model_ledger_peak_task (l, 0), "fwd L1");
  g_strlcpy (label, "bwd L1", sizeof label);
  model_ledger_alloc (l, 0, MODEL_MEM_WORKSPACE, 30 * MiB, 4, 3.0, label);
  g_strlcpy (label, "overwritten", sizeof label); /* the ledger's copies stay as they were */
  CU_ASSERT_TRUE_FATAL (model_ledger_oom (l, 0));
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_task (l, 0), "bwd L1");
  CU_ASSERT_EQUAL_FATAL (model_ledger_oom_n_holders (l, 0), 3);
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_holder (l, 0, 0)->task, "fwd L1"); /* 40 MiB */
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_holder (l, 0, 1)->task, "fwd L0"); /* 30 MiB */
  CU_ASSERT_STRING_EQUAL (model_ledger_oom_holder (l, 0, 2)->task, "fwd L0"); /* 20 MiB */
  CU_ASSERT_STRING_EQUAL (model_ledger_peak_task (l, 0), "bwd L1");
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "peak reserved never below peak allocated", test_reserved_never_below_allocated },
    { "peak, its time, task and mix", test_peak_and_mix },
    { "series of categories and total", test_series },
    { "free by handle", test_free_by_handle },
    { "bytes are whole: noise snapped, fractions rounded up", test_whole_bytes },
    { "category names", test_category_names },
    { "reserved bytes from the allocator", test_reserved },
    { "a side stream's freed blocks stay its own", test_reserved_per_stream },
    { "a later step inherits the cached segments", test_inherit_allocators },
    { "inherited cache released only when cudaMalloc fails", test_inherit_releases_on_failure },
    { "next step: lazily created state splits a block, a new segment", test_continue_keeps_states },
    { "next step: OOM when no cached segment is wholly free", test_continue_oom_after_release },
    { "OOM: moment, task, request, mix and holders", test_oom_diagnosis },
    { "task labels copied again when the caller's storage changes", test_label_storage_reused },
    { "OOM part-way through a buffer: the failing tensor, the granted ones live",
      test_oom_part_way_through_a_buffer },
  };
  return STEPSIM_RUN_TESTS ("models/ledger", tests);
}
