/* tests/unit/cli/test_ep_scenario.c — the expert-parallel keys of a scenario
 * (cli/scenario/scenario_moe.c): [parallel] ep, etp and [moe] capacity_factor,
 * load_imbalance, pad_to_capacity, a2a_overlap, dispatcher load into the parallel setup; every bad value is one
 * error naming the file, the group and the key. */
#include "config.h"

#include <string.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/scenario_private.h"
#include "tests/testlib.h"

static const char base[] = "[model]\nhf_config = mixtral-8x7b\n"
                           "[cluster]\nnode = DGX-H100\n"
                           "[training]\nmicro_batch = 1\nseq_len = 4096\nprecision = bf16_mixed\n"
                           "[finetune]\nmethod = lora\ntargets = attention\n";

static char *tmpdir;

static CliScenario *
load (const char *extra, GError **error, char **path_out)
{
  g_autofree char *text = g_strconcat (base, extra, NULL);
  char *path = g_build_filename (tmpdir, "ep.ini", NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  CliScenario *sc = cli_scenario_load (path, NULL, error);
  *path_out = path;
  return sc;
}

static void
expect_error (const char *extra, const char *n1, const char *n2)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *path = NULL;
  g_autoptr (CliScenario) sc = load (extra, &e, &path);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  gboolean ok = strstr (e->message, path) != NULL && strstr (e->message, n1) != NULL
                && (n2 == NULL || strstr (e->message, n2) != NULL);
  if (!ok)
    g_printerr ("\n  message \"%s\" lacks \"%s\" / \"%s\"\n", e->message, n1, n2 ? n2 : "");
  CU_ASSERT (ok);
}

static void
test_keys_load (void)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *path = NULL;
  g_autoptr (CliScenario) sc
    = load ("[parallel]\nep = 8\n[moe]\ncapacity_factor = 1.25\nload_imbalance = 2\n"
            "pad_to_capacity = true\n", &e, &path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->par.ep, 8);
  CU_ASSERT_EQUAL (sc->par.etp, 1);
  CU_ASSERT (sc->par.moe_drop && sc->par.moe_pad);
  CU_ASSERT_DOUBLE_EQUAL (sc->par.moe_capacity_factor, 1.25, 0);
  CU_ASSERT_DOUBLE_EQUAL (sc->par.moe_imbalance, 2, 0);
  g_autoptr (GError) e2 = NULL;
  g_autofree char *path2 = NULL;
  g_autoptr (CliScenario) dflt = load ("", &e2, &path2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dflt);
  CU_ASSERT (dflt->par.ep == 1 && dflt->par.etp == 1 && !dflt->par.moe_drop
             && dflt->par.moe_imbalance == 1 && !dflt->par.moe_a2a_overlap);
  g_autoptr (GError) e6 = NULL;
  g_autofree char *path6 = NULL;
  g_autoptr (CliScenario) overlap = load ("[parallel]\nep = 8\n[moe]\na2a_overlap = true\n",
                                          &e6, &path6);
  CU_ASSERT_PTR_NOT_NULL_FATAL (overlap);
  CU_ASSERT (overlap->par.moe_a2a_overlap);
  g_autoptr (GError) e5 = NULL;
  g_autofree char *path5 = NULL;
  g_autoptr (CliScenario) load5 = load ("[parallel]\nep = 8\n[moe]\nexpert_load = zipf:0.5 \n",
                                        &e5, &path5);
  CU_ASSERT_PTR_NOT_NULL_FATAL (load5);
  CU_ASSERT_STRING_EQUAL (load5->par.moe_expert_load, "zipf:0.5");
  /* expert tensor parallelism: ep 4 × etp 2 on the 8 GPUs */
  g_autoptr (GError) e3 = NULL;
  g_autofree char *path3 = NULL;
  g_autoptr (CliScenario) etp = load ("[parallel]\nep = 4\netp = 2\n", &e3, &path3);
  CU_ASSERT_PTR_NOT_NULL_FATAL (etp);
  CU_ASSERT (etp->par.ep == 4 && etp->par.etp == 2);
  /* the token dispatcher: alltoall unless [moe] dispatcher says allgather */
  CU_ASSERT (dflt->par.moe_dispatcher == MODEL_EP_DISPATCHER_ALLTOALL);
  g_autoptr (GError) e4 = NULL;
  g_autofree char *path4 = NULL;
  g_autoptr (CliScenario) ag = load ("[parallel]\nep = 8\n[moe]\ndispatcher = allgather\n", &e4,
                                     &path4);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ag);
  CU_ASSERT (ag->par.moe_dispatcher == MODEL_EP_DISPATCHER_ALLGATHER);
}

/* Mixtral has 8 experts, top-2, on 8 GPUs. */
static void
test_bad_values (void)
{
  expect_error ("[parallel]\nep = 3\n", "group [parallel], key 'ep'", "num_local_experts");
  expect_error ("[parallel]\nep = 16\n", "group [parallel], key 'ep'", "'16' is outside [1, 8]");
  expect_error ("[parallel]\netp = 1e30\n", "group [parallel], key 'etp'",
                "'1e30' is not a whole number in [1, 8]");
  expect_error ("[parallel]\nep = 0\n", "group [parallel], key 'ep'", NULL);
  expect_error ("[parallel]\nep = two\n", "group [parallel], key 'ep'", NULL);
  expect_error ("[parallel]\nep = 2\netp = 3\n", "group [parallel], key 'etp'",
                "intermediate_size = 14336");
  expect_error ("[parallel]\nep = 8\netp = 2\n", "group [parallel], key 'ep'", "does not divide");
  /* the group is named once, by the key prefix ("key 'capacity_factor': capacity_factor =
   * 0 must be > 0", not "… [moe] capacity_factor = 0 …") */
  expect_error ("[parallel]\nep = 8\n[moe]\ncapacity_factor = 0\n",
                "group [moe], key 'capacity_factor'", "'capacity_factor': capacity_factor = 0 must be > 0");
  expect_error ("[parallel]\nep = 8\n[moe]\ncapacity_factor = -1\n",
                "group [moe], key 'capacity_factor'", NULL);
  expect_error ("[moe]\ncapacity_factor = big\n", "group [moe], key 'capacity_factor'", NULL);
  expect_error ("[moe]\nload_imbalance = 0.5\n", "group [moe], key 'load_imbalance'", NULL);
  expect_error ("[moe]\nload_imbalance = 5\n", "group [moe], key 'load_imbalance'", "4");
  expect_error ("[moe]\npad_to_capacity = true\n", "group [moe], key 'pad_to_capacity'",
                "capacity_factor");
  expect_error ("[moe]\npad_to_capacity = maybe\n", "group [moe], key 'pad_to_capacity'", NULL);
  expect_error ("[moe]\ncapacity = 1\n", "group [moe]", "capacity");
  /* the all-to-all overlap: Megatron's asserts, and what the combined schedule models */
  expect_error ("[moe]\na2a_overlap = maybe\n", "group [moe], key 'a2a_overlap'", NULL);
  expect_error ("[moe]\na2a_overlap = true\n", "group [moe], key 'a2a_overlap'",
                "expert model parallelism");
  expect_error ("[parallel]\nep = 4\npp = 2\n[moe]\na2a_overlap = true\n",
                "group [moe], key 'a2a_overlap'", "pp = 2");
  expect_error ("[parallel]\nep = 4\ntp = 2\nsequence_parallel = true\n[moe]\na2a_overlap = true\n",
                "group [moe], key 'a2a_overlap'", "tp = 2");
  expect_error ("[parallel]\nep = 8\n[moe]\na2a_overlap = true\ndispatcher = allgather\n",
                "group [moe], key 'a2a_overlap'", "dispatcher = allgather");
  /* expert_load: its spec against the model's 8 experts, and not with load_imbalance */
  expect_error ("[parallel]\nep = 8\n[moe]\nexpert_load = 1, 2\n",
                "group [moe], key 'expert_load'", "2 values for the model's 8 experts");
  expect_error ("[parallel]\nep = 8\n[moe]\nexpert_load = zipf:x\n",
                "group [moe], key 'expert_load'", "exponent");
  expect_error ("[parallel]\nep = 8\n[moe]\nexpert_load = zipf:1\nload_imbalance = 2\n",
                "group [moe], key 'expert_load'", "not both");
  expect_error ("[parallel]\nep = 8\n[moe]\ndispatcher = flex\n", "group [moe], key 'dispatcher'",
                "not modelled");
  expect_error ("[parallel]\nep = 8\n[moe]\ndispatcher = all2all\n",
                "group [moe], key 'dispatcher'", "alltoall, allgather");
}

/* ep > 1 (or a [moe] key) on a dense model; top-k above the expert count. */
static void
test_dense_model (void)
{
  const char dense[] = "[model]\nhf_config = llama-3.2-1b\n[cluster]\nnode = DGX-H100\n"
                       "[training]\nmicro_batch = 1\nseq_len = 1024\nprecision = bf16_mixed\n";
  const char *const cases[][3] = {
    { "[parallel]\nep = 8\n", "group [parallel], key 'ep'", "no experts" },
    { "[moe]\nload_imbalance = 2\n", "group [moe], key 'load_imbalance'", "no experts" },
    { "[moe]\na2a_overlap = true\n", "group [moe], key 'a2a_overlap'", "no experts" },
    { "[moe]\ndispatcher = allgather\n", "group [moe], key 'dispatcher'", "no experts" },
    { "[moe]\nexpert_load = zipf:1\n", "group [moe], key 'expert_load'", "no experts" },
    /* a default restated is no less a MoE setting (it was silently ignored) */
    { "[moe]\ndispatcher = alltoall\n", "group [moe], key 'dispatcher'", "no experts" },
    { "[moe]\npad_to_capacity = false\n", "group [moe], key 'pad_to_capacity'", "no experts" },
    { "[moe]\nload_imbalance = 1\n", "group [moe], key 'load_imbalance'", "no experts" },
    { "[moe]\na2a_overlap = false\n", "group [moe], key 'a2a_overlap'", "no experts" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *text = g_strconcat (dense, cases[i][0], NULL);
      g_autofree char *path = g_build_filename (tmpdir, "dense.ini", NULL);
      g_assert (g_file_set_contents (path, text, -1, NULL));
      g_autoptr (GError) e = NULL;
      g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, &e);
      CU_ASSERT_PTR_NULL (sc);
      CU_ASSERT_PTR_NOT_NULL_FATAL (e);
      CU_ASSERT (strstr (e->message, cases[i][1]) != NULL && strstr (e->message, cases[i][2]));
    }
  /* top-k above the experts: the model key */
  const char topk[] = "[model]\nhf_config = mixtral-8x7b\nnum_experts_per_tok = 9\n"
                      "[cluster]\nnode = DGX-H100\n[training]\nmicro_batch = 1\n"
                      "seq_len = 1024\nprecision = bf16_mixed\n[parallel]\nep = 8\n";
  g_autofree char *path = g_build_filename (tmpdir, "topk.ini", NULL);
  g_assert (g_file_set_contents (path, topk, -1, NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, &e);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT (strstr (e->message, "group [model], key 'num_experts_per_tok'") != NULL);
}

/* load_imbalance at ep 1 (dropless) has no effect: one warning naming it. */
static void
test_imbalance_at_ep1_warns (void)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *path = NULL;
  g_autoptr (CliScenario) sc = load ("[moe]\nload_imbalance = 2\n", &e, &path);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  guint n = 0;
  for (guint i = 0; i < sc->warnings->len; i++)
    n += strstr (g_ptr_array_index (sc->warnings, i), "key 'load_imbalance'") != NULL;
  CU_ASSERT_EQUAL (n, 1);
  g_autoptr (GError) e2 = NULL;
  g_autofree char *path2 = NULL;
  g_autoptr (CliScenario) ep8 = load ("[parallel]\nep = 8\n[moe]\nload_imbalance = 2\n", &e2,
                                      &path2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ep8);
  for (guint i = 0; i < ep8->warnings->len; i++)
    CU_ASSERT (strstr (g_ptr_array_index (ep8->warnings, i), "load_imbalance") == NULL);
  /* the allgather dispatcher gathers nothing at ep = etp = 1: one note naming the key */
  g_autoptr (GError) e3 = NULL;
  g_autofree char *path3 = NULL;
  g_autoptr (CliScenario) ag1 = load ("[moe]\ndispatcher = allgather\n", &e3, &path3);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ag1);
  n = 0;
  for (guint i = 0; i < ag1->warnings->len; i++)
    n += strstr (g_ptr_array_index (ag1->warnings, i), "key 'dispatcher'") != NULL;
  CU_ASSERT_EQUAL (n, 1);
}

int main (void);

/* a2a_overlap with one micro-batch at pp 1 pairs nothing: one note naming the key; with
 * grad_accum 2 (--set) none. */
static void
test_a2a_overlap_ga1_warns (void)
{
  g_autofree char *text = g_strconcat (base, "[parallel]\nep = 8\n[moe]\na2a_overlap = true\n",
                                       NULL);
  g_autofree char *path = g_build_filename (tmpdir, "a2a.ini", NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  const char *const ga2[] = { "training.grad_accum=2", NULL };
  for (guint c = 0; c < 2; c++)
    {
      g_autoptr (GError) e = NULL;
      g_autoptr (CliScenario) sc = cli_scenario_load (path, c == 0 ? NULL : ga2, &e);
      CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
      guint n = 0;
      for (guint i = 0; i < sc->warnings->len; i++)
        n += strstr (g_ptr_array_index (sc->warnings, i), "key 'a2a_overlap'") != NULL;
      CU_ASSERT_EQUAL (n, c == 0 ? 1 : 0);
    }
}

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-ep-XXXXXX");
  static const StepsimTest tests[] = {
    { "ep, etp and [moe] keys load; defaults", test_keys_load },
    { "bad ep / etp / [moe] values name group and key", test_bad_values },
    { "ep or [moe] on a dense model; top-k > experts", test_dense_model },
    { "load_imbalance or allgather at ep 1 warns (no effect)", test_imbalance_at_ep1_warns },
    { "a2a_overlap with one micro-batch at pp 1 warns (no effect)", test_a2a_overlap_ga1_warns },
  };
  int rc = STEPSIM_RUN_TESTS ("cli/scenario/moe", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (tmpdir);
  return rc;
}
