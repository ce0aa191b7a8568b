/* tests/unit/cli/test_sweep.c — sweep files (cli/scenario/sweep.h): lists and ranges, --set parsing,
 * Cartesian product and zip order, strictness (unknown groups and keys with a hint), and the
 * override order [set] → axes → command line. Sweeps are written to a temporary folder next
 * to a copy-free reference to the shipped S1 scenario (an absolute path). */
#include "config.h"
#include "cli/scenario/sweep.h"
#include "tests/testlib.h"

#include <glib/gstdio.h>
#include <string.h>

static char *tmpdir;

static char *
write_sweep (const char *name, const char *body)
{
  g_autofree char *s1 = stepsim_test_srcpath ("scenarios/s1-llama-3.2-1b-fp32.ini");
  g_autofree char *text = g_strdup_printf ("[sweep]\nscenario = %s\n%s", s1, body);
  char *path = g_build_filename (tmpdir, name, NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static void
assert_list (const char *list, const char *expected)
{
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) v = cli_sweep_parse_list (list, TRUE, &error);
  g_autofree char *joined = v ? g_strjoinv ("|", v) : g_strdup (error->message);
  if (strcmp (joined, expected) != 0)
    g_printerr ("\n  list '%s' → '%s', expected '%s'\n", list, joined, expected);
  CU_ASSERT_STRING_EQUAL (joined, expected);
}

static void
test_lists_and_ranges (void)
{
  assert_list ("1, 2 ,4", "1|2|4");
  assert_list ("80 GiB, 40 GiB", "80 GiB|40 GiB");           /* values verbatim */
  assert_list ("1:4", "1|2|3|4");                             /* step 1, LAST included */
  assert_list ("512:2048:512", "512|1024|1536|2048");
  assert_list ("10:1:-4", "10|6|2");                          /* descending */
  assert_list ("1:100:*4", "1|4|16|64");                      /* geometric, LAST not reached */
  assert_list ("0:0.3:0.1", "0|0.1|0.2|0.3");                 /* index-based: no drift */
  assert_list ("1, 8:32:*2, 48", "1|8|16|32|48");             /* ranges inside lists */
  /* a double-quoted item is one value as written, commas and ':' too (QA: a
   * moe.expert_load histogram could not be swept); spaces inside kept, around dropped */
  assert_list ("\"8, 3, 5\" , \"1:2\", 4", "8, 3, 5|1:2|4");
  assert_list ("\"8, 3", "item 1 of the list opens a '\"' it does not close");
  assert_list ("\"8\" 3, 4", "item 1 of the list has text after its closing '\"'");
  assert_list ("4, 8\"", "item 2 of the list has a '\"' inside it: quote the whole item");
  assert_list ("4, \"\"", "item 2 of the list is empty");
  /* a bound that is no finite number: refused by name, never a value (QA: nan:3 was one) */
  assert_list ("nan:3", "range 'nan:3': FIRST 'nan' is not a finite number");
  assert_list ("1:nan", "range '1:nan': LAST 'nan' is not a finite number");
  assert_list ("-INF:2", "range '-INF:2': FIRST '-INF' is not a finite number");
  assert_list ("1e400:2", "range '1e400:2': FIRST '1e400' is not a finite number");
  assert_list ("1:3:nan", "range '1:3:nan': STEP 'nan' is not a finite number");
  assert_list ("1:8:*inf", "range '1:8:*inf': FACTOR 'inf' is not a finite number");
  /* a key that takes ranges has no ':' of its own: any item with one is a range or refused
   * (QA: ':4' was taken as a value, '1:' refused) */
  const char *not_range = "' is not a range FIRST:LAST, FIRST:LAST:STEP or FIRST:LAST:*FACTOR "
                          "whose step reaches LAST (FACTOR > 1, FIRST > 0)";
  const char *bad[] = { "a:b", ":4", "1:" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *want = g_strdup_printf ("'%s%s", bad[i], not_range);
      assert_list (bad[i], want);
    }
}

static void
test_bad_lists (void)
{
  const char *bad[] = { "1,,2", "", "4:1", "1:4:0", "1:8:*1", "0:8:*2", "1:x" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autoptr (GError) error = NULL;
      g_auto (GStrv) v = cli_sweep_parse_list (bad[i], TRUE, &error);
      if (v != NULL)
        g_printerr ("\n  '%s' accepted\n", bad[i]);
      CU_ASSERT_PTR_NULL (v);
      CU_ASSERT_TRUE (g_error_matches (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE));
    }
}

static void
test_parse_set (void)
{
  g_autofree char *g = NULL, *k = NULL, *v = NULL;
  CU_ASSERT_TRUE_FATAL (cli_sweep_parse_set ("gpu.My.GPU.memory = 96 GiB", &g, &k, &v, NULL));
  CU_ASSERT_STRING_EQUAL (g, "gpu.My.GPU"); /* a named group: the key after the last dot */
  CU_ASSERT_STRING_EQUAL (k, "memory");
  CU_ASSERT_STRING_EQUAL (v, "96 GiB");
  /* Other groups end at the first dot: [cost] gpu_hour.TYPE and [baseline] group.key keys
   * hold dots (the last dot once made "cost.gpu_hour" the group). */
  const char *dotted[][3] = { { "cost.gpu_hour.H100-SXM = 2.5 USD/h", "cost", "gpu_hour.H100-SXM" },
                              { "baseline.training.checkpointing=full", "baseline",
                                "training.checkpointing" },
                              { " node . My.Node . nic_bandwidth=1 GB/s", "node . My.Node",
                                "nic_bandwidth" } };
  for (guint i = 0; i < G_N_ELEMENTS (dotted); i++)
    {
      g_autofree char *a = NULL, *b = NULL, *c = NULL;
      CU_ASSERT_TRUE_FATAL (cli_sweep_parse_set (dotted[i][0], &a, &b, &c, NULL));
      CU_ASSERT_STRING_EQUAL (a, dotted[i][1]);
      CU_ASSERT_STRING_EQUAL (b, dotted[i][2]);
    }
  /* Spaces around group, key and value are not part of them (as in a file). */
  const char *spaced[] = { "training.micro_batch = 2", "training.micro_batch =2",
                           "training. micro_batch=2", " training .micro_batch\t= 2 " };
  for (guint i = 0; i < G_N_ELEMENTS (spaced); i++)
    {
      g_autofree char *a = NULL, *b = NULL, *c = NULL;
      CU_ASSERT_TRUE_FATAL (cli_sweep_parse_set (spaced[i], &a, &b, &c, NULL));
      CU_ASSERT_STRING_EQUAL (a, "training");
      CU_ASSERT_STRING_EQUAL (b, "micro_batch");
      CU_ASSERT_STRING_EQUAL (c, "2");
      g_autofree char *n = cli_sweep_normalize_set (spaced[i], NULL);
      CU_ASSERT_STRING_EQUAL (n, "training.micro_batch=2");
    }
  /* What GKeyFile cannot store (its g_key_file_set_value CRITICAL) is an error. */
  const char *bad[] = { "training.micro_batch", "micro_batch=2", ".k=1", "training.=1",
                        "training.micro[batch=2", "training.micro]batch=2", "train[ing.k=1",
                        "training.micro\x01" "batch=2", "training.k=a\nb", "training.k=\xff",
                        " . =1", "training. =2",
                        /* a line break at an end is one as any other (QA: dropped as space) */
                        "training.k=2\n", "training.k=\r2", "\ntraining.k=2",
                        "training.k\n=2" };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *a = NULL, *b = NULL, *c = NULL;
      g_autoptr (GError) error = NULL;
      CU_ASSERT_FALSE (cli_sweep_parse_set (bad[i], &a, &b, &c, &error));
      CU_ASSERT_TRUE (g_error_matches (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE));
    }
}

/* 2 × 3 product: the first axis varies slowest. */
static void
test_product_order (void)
{
  g_autofree char *path = write_sweep ("product.ini", "[axes]\ntraining.checkpointing = none, full\n"
                                                      "training.micro_batch = 1:3\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (CliSweep) sw = cli_sweep_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  CU_ASSERT_EQUAL (cli_sweep_n_points (sw), 6);
  const char *expect[] = { "checkpointing=none, micro_batch=1", "checkpointing=none, micro_batch=2",
                           "checkpointing=none, micro_batch=3", "checkpointing=full, micro_batch=1",
                           "checkpointing=full, micro_batch=2", "checkpointing=full, micro_batch=3" };
  for (guint p = 0; p < 6; p++)
    {
      g_autofree char *label = cli_sweep_label (sw, p);
      CU_ASSERT_STRING_EQUAL (label, expect[p]);
    }
  CU_ASSERT_FALSE (cli_sweep_axis_numeric (sw, 0));
  CU_ASSERT_TRUE (cli_sweep_axis_numeric (sw, 1));
}

/* [zip] pairs values; the bundle is crossed with [axes] as the fastest axis: 2 × 2 = 4. */
static void
test_zip (void)
{
  g_autofree char *path = write_sweep ("zip.ini", "[axes]\ntraining.precision = fp32, bf16_mixed\n"
                                                  "[zip]\ntraining.micro_batch = 1, 4\n"
                                                  "training.seq_len = 4096, 1024\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (CliSweep) sw = cli_sweep_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  CU_ASSERT_EQUAL (cli_sweep_n_points (sw), 4);
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 1, 0), "fp32");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 1, 1), "4");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 1, 2), "1024");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 2, 0), "bf16_mixed");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 2, 1), "1");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 2, 2), "4096");
}

/* Keys whose values have ':' in their syntax take their items as written, in [axes] and
 * [zip] alike (QA: "3:1.25" was refused as a range, "0:2, 5:7" swept six single ranks);
 * ';' separates the stragglers of one value, as in a scenario; a numeric key beside them
 * keeps its ranges. */
static void
test_literal_keys (void)
{
  CU_ASSERT_FALSE (cli_sweep_key_takes_ranges ("run.stragglers"));
  CU_ASSERT_FALSE (cli_sweep_key_takes_ranges ("moe.expert_load"));
  CU_ASSERT_TRUE (cli_sweep_key_takes_ranges ("training.micro_batch"));
  g_autofree char *path = write_sweep ("literal.ini",
                                       "[axes]\nrun . stragglers = 3:1.25, 0:2; 5:7\n"
                                       "training.micro_batch = 1:2\n"
                                       "[zip]\nmoe.expert_load = 2:1, zipf:1.1\n"
                                       "training.seq_len = 1024:2048:1024\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (CliSweep) sw = cli_sweep_load (path, &error);
  if (sw == NULL)
    g_printerr ("\n  %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  CU_ASSERT_EQUAL (cli_sweep_n_points (sw), 2 * 2 * 2);
  CU_ASSERT_STRING_EQUAL (cli_sweep_axis_key (sw, 0), "run.stragglers");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 0, 0), "3:1.25");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 4, 0), "0:2; 5:7");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 1, 2), "zipf:1.1");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 2, 1), "2");
  CU_ASSERT_STRING_EQUAL (cli_sweep_value (sw, 1, 3), "2048");
  CU_ASSERT_FALSE (cli_sweep_axis_numeric (sw, 0));
  CU_ASSERT_TRUE (cli_sweep_axis_numeric (sw, 1));
}

static void
test_zip_lengths_must_match (void)
{
  g_autofree char *path = write_sweep ("zipbad.ini", "[zip]\ntraining.micro_batch = 1, 4\n"
                                                     "training.seq_len = 4096\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (CliSweep) sw = cli_sweep_load (path, &error);
  CU_ASSERT_PTR_NULL (sw);
  CU_ASSERT_PTR_NOT_NULL (error ? strstr (error->message, "key 'training.seq_len'") : NULL);
  /* one value is "1 value" (QA: "1 values") */
  CU_ASSERT_PTR_NOT_NULL (
    error ? strstr (error->message, "'training.seq_len': 1 value, but the zipped axes before it "
                                    "have 2") : NULL);
}

/* [set], then axes, then the command line: later ones win in cli_scenario_load. */
static void
test_set_order (void)
{
  g_autofree char *path = write_sweep ("sets.ini", "[set]\ntraining.grad_accum = 2\n"
                                                   "[axes]\ntraining.micro_batch = 1, 2\n");
  g_autoptr (CliSweep) sw = cli_sweep_load (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  const char *extra[] = { "training.micro_batch=8", NULL };
  g_auto (GStrv) sets = cli_sweep_sets (sw, 1, extra);
  g_autofree char *joined = g_strjoinv ("|", sets);
  CU_ASSERT_STRING_EQUAL (joined, "training.grad_accum=2|training.micro_batch=2|training.micro_batch=8");
}

static void
expect_error (const char *name, const char *body, const char *needle)
{
  g_autofree char *path = write_sweep (name, body);
  g_autoptr (GError) error = NULL;
  g_autoptr (CliSweep) sw = cli_sweep_load (path, &error);
  CU_ASSERT_PTR_NULL (sw);
  gboolean ok = error != NULL && g_str_has_prefix (error->message, path)
                && strstr (error->message, needle) != NULL;
  if (!ok)
    g_printerr ("\n  %s: %s (wanted '%s')\n", name, error ? error->message : "no error", needle);
  CU_ASSERT_TRUE (ok);
}

static void
test_strictness (void)
{
  expect_error ("g.ini", "[axis]\ntraining.micro_batch = 1\n", "group [axis]: unknown group; did you mean 'axes'?");
  expect_error ("k.ini", "[axes]\ntraining.micro_bach = 1, 2\n",
                "group [axes], key 'training.micro_bach'");
  expect_error ("h.ini", "[axes]\ntraining.micro_bach = 1, 2\n", "did you mean 'micro_batch'?");
  expect_error ("s.ini", "nam = x\n", "group [sweep], key 'nam': unknown key; did you mean 'name'?");
  expect_error ("d.ini", "[axes]\ntraining.seq_len = 1\ntraining.seq_len = 2\n", "appears twice");
  expect_error ("c.ini", "[axes]\ntraining.seq_len = 1, 2 # two\n", "comments after a value");
  expect_error ("r.ini", "[axes]\ntraining.seq_len = 8:1\n", "key 'training.seq_len'");
  expect_error ("e.ini", "[axes]\ntraining.precision = fp32, fp\x1b[31m16\n",
                "group [axes], key 'training.precision': value 'fp\\x1B[31m16' cannot contain "
                "control characters");
}

/* A key in two of [set], [axes] and [zip] (or twice, spelt with other spaces) would give two
 * results columns of one name and a value that silently wins: an error naming the file,
 * both groups and the key. [baseline] may override an axis (that is its purpose), not
 * itself. */
static void
test_key_in_two_groups (void)
{
  expect_error ("az.ini", "[axes]\ntraining.micro_batch = 1, 2\n[zip]\ntraining.micro_batch = 4, 8\n",
                "group [zip], key 'training.micro_batch': already given in group [axes]");
  expect_error ("sa.ini", "[set]\ntraining.micro_batch = 2\n[axes]\ntraining.micro_batch = 1, 2\n",
                "group [axes], key 'training.micro_batch': already given in group [set]");
  expect_error ("sz.ini", "[set]\ntraining.seq_len = 512\n[zip]\ntraining.seq_len = 1024, 2048\n",
                "group [zip], key 'training.seq_len': already given in group [set]");
  expect_error ("sp.ini", "[axes]\ntraining.micro_batch = 1, 2\ntraining. micro_batch = 3\n",
                "group [axes], key 'training.micro_batch': already given in group [axes]");
  expect_error ("bb.ini", "[baseline]\ntraining.checkpointing = none\ntraining .checkpointing = full\n",
                "group [baseline], key 'training.checkpointing': already given in group [baseline]");
  /* a value twice on a product axis; a zipped column may repeat */
  expect_error ("dv.ini", "[axes]\ntraining.checkpointing = none, full, none\n",
                "group [axes], key 'training.checkpointing': 'none' is in the list twice");
  g_autofree char *zp = write_sweep ("zr.ini", "[zip]\ntraining.micro_batch = 1, 1\n"
                                               "training.seq_len = 1024, 2048\n");
  g_autoptr (CliSweep) zs = cli_sweep_load (zp, NULL);
  CU_ASSERT_PTR_NOT_NULL (zs);
  g_autofree char *path = write_sweep ("ba.ini", "[axes]\ntraining.checkpointing = none, full\n"
                                                 "[baseline]\ntraining.checkpointing = none\n");
  g_autoptr (CliSweep) sw = cli_sweep_load (path, NULL);
  CU_ASSERT_PTR_NOT_NULL (sw);
}

/* Keys are stored without the spaces the file may put around group and key. */
static void
test_keys_normalized (void)
{
  g_autofree char *path = write_sweep ("n.ini", "[set]\ntraining .grad_accum = 2\n"
                                                "[axes]\ntraining. micro_batch = 1, 2\n");
  g_autoptr (CliSweep) sw = cli_sweep_load (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  CU_ASSERT_STRING_EQUAL (cli_sweep_axis_key (sw, 0), "training.micro_batch");
  const char *extra[] = { "training.seq_len = 1024", NULL };
  g_auto (GStrv) sets = cli_sweep_sets (sw, 0, extra);
  g_autofree char *joined = g_strjoinv ("|", sets);
  CU_ASSERT_STRING_EQUAL (joined, "training.grad_accum=2|training.micro_batch=1|training.seq_len=1024");
  g_auto (GStrv) origins = cli_sweep_set_origins (sw, extra);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (origins), 3);
  CU_ASSERT_TRUE (g_str_has_suffix (origins[0], "n.ini [set]"));
  CU_ASSERT_TRUE (g_str_has_suffix (origins[1], "n.ini [axes]"));
  CU_ASSERT_STRING_EQUAL (origins[2], "--set");
}

/* A command-line --set of an axis would run every scenario with one value while labels
 * and axis columns say otherwise: refused, naming the key; a [set] key may be overridden. */
static void
test_extra_set_on_axis (void)
{
  g_autofree char *path = write_sweep ("x.ini", "[set]\ntraining.grad_accum = 2\n"
                                                "[axes]\ntraining.micro_batch = 1, 2\n"
                                                "[zip]\ntraining.seq_len = 512, 1024\n");
  g_autoptr (CliSweep) sw = cli_sweep_load (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  const char *ok[] = { "training.grad_accum=4", "training.precision=bf16_mixed", NULL };
  CU_ASSERT_TRUE (cli_sweep_check_extra_sets (sw, ok, NULL));
  const char *on_axis[][2] = { { "training.micro_batch=3", "[axes]" },
                               { "training . micro_batch = 3", "[axes]" },
                               { "training.seq_len=2048", "[zip]" } };
  for (guint i = 0; i < G_N_ELEMENTS (on_axis); i++)
    {
      const char *extra[] = { on_axis[i][0], NULL };
      g_autoptr (GError) e = NULL;
      CU_ASSERT_FALSE (cli_sweep_check_extra_sets (sw, extra, &e));
      CU_ASSERT_TRUE (g_error_matches (e, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE));
      CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "is an axis of") : NULL);
      CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, on_axis[i][1]) : NULL);
      CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "x.ini") : NULL);
    }
}

/* Command-line --set name scenario keys taken together, with the sweep's [set] and axes
 * (QA: each was checked alone, so --set gpu.X.base=… --set gpu.X.memory=… was refused for
 * the memory's [gpu.X], which lacks hbm_bandwidth without its base); a group they leave
 * incomplete, or a key of no group, is refused naming the --set, group and key. */
static void
test_extra_names_together (void)
{
  g_autofree char *path = write_sweep ("t.ini", "[axes]\ntraining.micro_batch = 1, 2\n");
  g_autofree char *begun = write_sweep ("tb.ini", "[set]\ngpu.X.base = A100-80GB-SXM\n"
                                                  "[axes]\ntraining.micro_batch = 1, 2\n");
  g_autoptr (CliSweep) sw = cli_sweep_load (path, NULL);
  g_autoptr (CliSweep) sb = cli_sweep_load (begun, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sb);
  const char *whole[] = { "gpu.X.base=A100-80GB-SXM", "gpu.X.memory = 40 GiB", "cluster.gpu=X",
                          NULL };
  g_autoptr (GError) e0 = NULL;
  CU_ASSERT_TRUE (cli_sweep_check_extra_names (sw, whole, &e0));
  if (e0 != NULL)
    g_printerr ("\n  %s\n", e0->message);
  const char *rest[] = { "gpu.X.memory=40 GiB", "cluster.gpu=X", NULL };
  CU_ASSERT_TRUE (cli_sweep_check_extra_names (sb, rest, NULL));
  /* without a base, and the sweep beginning none: hbm_bandwidth is missing */
  g_autoptr (GError) e = NULL;
  CU_ASSERT_FALSE (cli_sweep_check_extra_names (sw, rest, &e));
  CU_ASSERT_TRUE (g_error_matches (e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND));
  CU_ASSERT_PTR_NOT_NULL (e ? strstr (e->message, "(with --set gpu.X.memory=40 GiB): group "
                                                  "[gpu.X]: key 'hbm_bandwidth' is required")
                            : NULL);
  /* an unknown key names its --set alone, not the axis it looks like */
  const char *typo[] = { "gpu.X.base=A100-80GB-SXM", "training.micro_bach=2", NULL };
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_FALSE (cli_sweep_check_extra_names (sw, typo, &e2));
  CU_ASSERT_PTR_NOT_NULL (e2 ? strstr (e2->message, "(with --set training.micro_bach=2): "
                                                    "group [training], key 'micro_bach'")
                             : NULL);
  /* a bad value is each scenario's to say, and [baseline]'s overrides are checked apart */
  const char *other[] = { "training.precision=fp13", "baseline.training.micro_bach=2", NULL };
  CU_ASSERT_TRUE (cli_sweep_check_extra_names (sw, other, NULL));
}

/* A bad value is the scenario's problem, not the sweep's: it loads. */
static void
test_bad_value_is_per_scenario (void)
{
  g_autofree char *path = write_sweep ("v.ini", "[axes]\ntraining.precision = fp32, fp13\n");
  g_autoptr (GError) error = NULL;
  g_autoptr (CliSweep) sw = cli_sweep_load (path, &error);
  CU_ASSERT_PTR_NOT_NULL (sw);
}

static void
test_no_axes_is_one_point (void)
{
  g_autofree char *path = write_sweep ("one.ini", "name = just S1\n[baseline]\ntraining.checkpointing = none\n");
  g_autoptr (CliSweep) sw = cli_sweep_load (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sw);
  CU_ASSERT_EQUAL (cli_sweep_n_points (sw), 1);
  g_autofree char *label = cli_sweep_label (sw, 0);
  CU_ASSERT_STRING_EQUAL (label, "just S1");
  CU_ASSERT_STRING_EQUAL (cli_sweep_baseline (sw)[0], "training.checkpointing=none");
  CU_ASSERT_PTR_NULL (cli_sweep_baseline (sw)[1]);
}

/* A baseline override as the one parser reads it: spaces dropped; another group, a key
 * named baseline or a malformed set is not one. */
static void
test_set_is_baseline (void)
{
  CU_ASSERT_TRUE (cli_sweep_set_is_baseline ("baseline.training.micro_batch=2"));
  CU_ASSERT_TRUE (cli_sweep_set_is_baseline (" baseline . training.micro_batch = 2"));
  CU_ASSERT_FALSE (cli_sweep_set_is_baseline ("training.micro_batch=2"));
  CU_ASSERT_FALSE (cli_sweep_set_is_baseline ("training.baseline=2"));
  CU_ASSERT_FALSE (cli_sweep_set_is_baseline ("baseline.training.micro_batch"));
}


int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-sweep-XXXXXX");
  static const StepsimTest tests[] = {
    { "lists and ranges expand", test_lists_and_ranges },
    { "bad lists are errors", test_bad_lists },
    { "--set syntax group.key=value, spaces dropped, bad names refused", test_parse_set },
    { "product: first axis slowest", test_product_order },
    { "zip pairs values, crossed with axes", test_zip },
    { "zip lengths must match", test_zip_lengths_must_match },
    { "keys with ':' in their values take items as written", test_literal_keys },
    { "override order: [set], axes, command line", test_set_order },
    { "unknown groups and keys name file, group, key, hint", test_strictness },
    { "a key in two of [set], [axes], [zip] is an error", test_key_in_two_groups },
    { "keys stored without spaces, with their origins", test_keys_normalized },
    { "--set of an axis is an error", test_extra_set_on_axis },
    { "--set names checked together, with [set] and axes", test_extra_names_together },
    { "a bad value fails its scenario, not the sweep", test_bad_value_is_per_scenario },
    { "no axes: one point named after the sweep", test_no_axes_is_one_point },
    { "an override of the baseline", test_set_is_baseline },
  };
  int rc = STEPSIM_RUN_TESTS ("sweep", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) system (cmd);
  g_free (tmpdir);
  return rc;
}
