/* tests/unit/cli/test_mtp_scenario.c — [training] mtp_layers (cli/scenario/scenario_groups.c,
 * checked by models/plan/plan.c check_mtp): it loads (default 0), a DeepSeek-V3 cut with
 * Megatron's M17 layout Ett|(tt|)*6mL simulates with it, and every bad value is one error
 * naming the file, the group and the key. */
#include "config.h"

#include <string.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "tests/testlib.h"

/* DeepSeek-V3 cut to 14 layers and 16 experts on 4 H100s, pp 4 interleaved; the
 * [parallel] and [training] lines of each case are appended to their groups */
static const char base[] = "[model]\nhf_config = deepseek-v3\nnum_hidden_layers = 14\n"
                           "num_local_experts = 16\n"
                           "[cluster]\ngpu = H100-SXM\ngpus_per_node = 4\n"
                           "[parallel]\npp = 4\npipeline_schedule = interleaved\n%s"
                           "[training]\nmicro_batch = 1\nseq_len = 512\ngrad_accum = 4\n"
                           "precision = bf16_mixed\nframework = megatron\n%s";

static char *tmpdir;

/* `extra`: "[parallel] lines@[training] lines" */
static CliScenario *
load (const char *extra, GError **error, char **path_out)
{
  g_auto (GStrv) parts = g_strsplit (extra, "@", 2);
  g_autofree char *text = g_strdup_printf (base, parts[0] ? parts[0] : "",
                                           parts[0] && parts[1] ? parts[1] : "");
  char *path = g_build_filename (tmpdir, "mtp.ini", NULL);
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

/* The key loads; absent it is 0; the M17 layout with mtp_layers = 1 simulates, and its
 * model FLOPs exceed the same cut without MTP (layout Ett|(tt|)*6L). */
static void
test_m17_layout_runs (void)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *path = NULL;
  g_autoptr (CliScenario) sc
    = load ("pipeline_layout = Ett|(tt|)*6mL\n@mtp_layers = 1\n", &e, &path);
  if (sc == NULL)
    g_printerr ("\n  %s\n", e->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.mtp_layers, 1);
  ModelSimInput in = cli_scenario_sim_input (sc);
  ModelSimResult res;
  gboolean ok = model_simulate (&in, NULL, &res, &e);
  if (!ok)
    g_printerr ("\n  %s\n", e->message);
  CU_ASSERT_FATAL (ok);
  CU_ASSERT (res.step_time > 0);
  g_autoptr (GError) e0 = NULL;
  g_autofree char *path0 = NULL;
  g_autoptr (CliScenario) off = load ("pipeline_layout = Ett|(tt|)*6L\n@", &e0, &path0);
  CU_ASSERT_PTR_NOT_NULL_FATAL (off);
  CU_ASSERT_EQUAL (off->stack.mtp_layers, 0);
  ModelSimInput in0 = cli_scenario_sim_input (off);
  ModelSimResult res0;
  CU_ASSERT_FATAL (model_simulate (&in0, NULL, &res0, &e0));
  CU_ASSERT (res.model_flops > res0.model_flops);
  CU_ASSERT (res.step_time > res0.step_time);
  model_sim_result_clear (&res);
  model_sim_result_clear (&res0);
}

/* Bad values, each naming the file, [training] and mtp_layers (or the layout): not a count,
 * too many, more than the config's num_nextn_predict_layers, a model without MTP modules,
 * a layout whose 'm' count differs. */
static void
test_bad_values (void)
{
  expect_error ("@mtp_layers = -1\n", "group [training], key 'mtp_layers'", NULL);
  expect_error ("@mtp_layers = one\n", "group [training], key 'mtp_layers'", NULL);
  expect_error ("@mtp_layers = 65\n", "group [training], key 'mtp_layers'",
                "'65' is outside [0, 64]");
  expect_error ("@mtp_layers = 2\n", "group [training], key 'mtp_layers'",
                "num_nextn_predict_layers");
  expect_error ("pipeline_layout = Ett|(tt|)*6mL\n@", "group [parallel], key 'pipeline_layout'",
                "[training] mtp_layers = 0");
  expect_error ("pipeline_layout = Ett|(tt|)*6mmL\n@mtp_layers = 1\n",
                "group [parallel], key 'pipeline_layout'", "places 2 MTP layers");
  const char v2[] = "[model]\nhf_config = deepseek-v2-lite\n[cluster]\nnode = DGX-H100\n"
                    "[training]\nmicro_batch = 1\nseq_len = 512\nprecision = bf16_mixed\n"
                    "mtp_layers = 1\n";
  g_autofree char *path = g_build_filename (tmpdir, "v2.ini", NULL);
  g_assert (g_file_set_contents (path, v2, -1, NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, NULL, &e);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT (strstr (e->message, path) != NULL
             && strstr (e->message, "group [training], key 'mtp_layers'") != NULL
             && strstr (e->message, "has 0") != NULL);
}

int main (void);

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-mtp-XXXXXX");
  static const StepsimTest tests[] = {
    { "mtp_layers loads; M17's layout with 'm' simulates", test_m17_layout_runs },
    { "bad mtp_layers values name file, group and key", test_bad_values },
  };
  int rc = STEPSIM_RUN_TESTS ("cli/scenario/mtp", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (tmpdir);
  return rc;
}
