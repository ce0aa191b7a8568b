/* tests/unit/models/test_ledger.c — the per-rank memory ledger. */
#include "config.h"

#include <math.h>
#include "models/ledger.h"
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
}

static void
test_category_names (void)
{
  CU_ASSERT_STRING_EQUAL (model_ledger_category_name (MODEL_MEM_OPTIMIZER_STATE), "optimizer_state");
  CU_ASSERT_STRING_EQUAL (model_ledger_category_name (MODEL_MEM_MASTER_WEIGHTS), "master_weights");
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "peak, its time, task and mix", test_peak_and_mix },
    { "series of categories and total", test_series },
    { "free by handle", test_free_by_handle },
    { "category names", test_category_names },
  };
  return STEPSIM_RUN_TESTS ("models/ledger", tests);
}
