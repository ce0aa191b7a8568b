/* tests/unit/cli/test_scenario.c — scenario loading: every kind of bad input gets one
 * error naming the file, the group and the key; good input and --set overrides load. */
#include "config.h"

#include <glib/gstdio.h>
#include <string.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/scenario_private.h"
#include "tests/testlib.h"

static const char base[] =
  "[model]\nhf_config = llama-3.2-1b\n"
  "[cluster]\ngpu = A100-80GB-SXM\n"
  "[training]\nmicro_batch = 1\nseq_len = 2048\nprecision = fp32\n";

static char *tmpdir;

/* Writes `text` to a scenario file in the temp dir and loads it with `sets`. */
static CliScenario *
load_text (const char *text, const char *const *sets, GError **error, char **path_out)
{
  char *path = g_build_filename (tmpdir, "case.ini", NULL);
  g_assert (g_file_set_contents (path, text, -1, NULL));
  CliScenario *sc = cli_scenario_load (path, sets, error);
  if (path_out != NULL)
    *path_out = path;
  else
    g_free (path);
  return sc;
}

/* Loads `text` (+ sets), expects failure whose message contains every needle and the
 * file's path. */
static void
expect_error (const char *text, const char *const *sets, const char *const *needles)
{
  g_autoptr (GError) e = NULL;
  g_autofree char *path = NULL;
  g_autoptr (CliScenario) sc = load_text (text, sets, &e, &path);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, path));
  for (guint i = 0; needles[i] != NULL; i++)
    {
      gboolean found = strstr (e->message, needles[i]) != NULL;
      if (!found)
        g_printerr ("\n  message \"%s\" lacks \"%s\"\n", e->message, needles[i]);
      CU_ASSERT (found);
    }
}

static char *
with (const char *extra)
{
  return g_strconcat (base, extra, NULL);
}

static void
test_good_scenario (void)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (base, NULL, &e, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (model_arch_n_params (sc->arch), 1235814400);
  CU_ASSERT_EQUAL (sc->stack.seq_len, 2048);
  CU_ASSERT_EQUAL (sc->stack.precision, MODEL_PRECISION_FP32);
  CU_ASSERT_EQUAL (sc->node.n_gpus, 1);
  CU_ASSERT_STRING_EQUAL (sc->node.gpu->name, "A100-80GB-SXM");
}

/* [scenario] name and description are printed text: a C0 control (ESC), DEL or a C1 control
 * (U+009B, the one-character CSI; U+0085) is one error naming the key and the character,
 * in the file or from --set; other non-ASCII text loads. */
static void
test_scenario_text_controls (void)
{
  static const char *const bad[][2] = {
    { "name = red\x1b[31m\n", "key 'name': contains a control character (U+001B)" },
    { "name = red\xc2\x9b" "31m\n", "key 'name': contains a control character (U+009B)" },
    { "name = a\x7f\n", "key 'name': contains a control character (U+007F)" },
    { "description = next\xc2\x85line\n",
      "key 'description': contains a control character (U+0085)" },
    { "description = red\x1b[31m\n",
      "key 'description': contains a control character (U+001B)" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *t = g_strdup_printf ("[scenario]\n%s%s", bad[i][0], base);
      expect_error (t, NULL, (const char *[]){ "group [scenario]", bad[i][1], NULL });
    }
  expect_error (base, (const char *[]){ "scenario.name=a\xc2\x9b" "b", NULL },
                (const char *[]){ "key 'name': contains a control character (U+009B)", NULL });
  g_autofree char *good = g_strconcat ("[scenario]\nname = Llama \xe2\x80\x93 M\xc3\xbcnchen\n"
                                       "description = 8\xc3\x97 H100 \xe2\x80\x94 ok\n", base,
                                       NULL);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (good, NULL, &e, NULL);
  CU_ASSERT_PTR_NOT_NULL (sc);
  CU_ASSERT_PTR_NULL (e);
}

static void
test_set_overrides (void)
{
  const char *sets[] = { "training.micro_batch=4", "model.num_hidden_layers=2",
                         "cluster.gpu=H100-SXM", NULL };
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (base, sets, &e, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.micro_batch, 4);
  CU_ASSERT_EQUAL (sc->arch->n_layers, 2);
  CU_ASSERT_STRING_EQUAL (sc->node.gpu->name, "H100-SXM");
  g_autofree char *text = cli_scenario_text (sc);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "micro_batch=4"));
}

static void
test_custom_gpu_group (void)
{
  g_autofree char *t = g_strconcat (
    "[model]\nhf_config = gpt2\n[cluster]\ngpu = Mine\n"
    "[training]\nmicro_batch = 1\nseq_len = 1024\nprecision = bf16_mixed\n"
    "[gpu.Mine]\nbase = A100-80GB-SXM\nmemory = 40 GiB\n", NULL);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (t, NULL, &e, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->node.gpu->memory_capacity, 40.0 * 1024 * 1024 * 1024);
}

static void
test_missing_file (void)
{
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (cli_scenario_load ("/nonexistent/x.ini", NULL, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "/nonexistent/x.ini"));
}

/* cli_scenario_has_key: present only when both the group and the key are; an absent group
 * is a plain FALSE (and the optional getter's NULL without error on top of it). */
static void
test_has_key (void)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  CU_ASSERT_TRUE_FATAL (g_key_file_load_from_data (kf, "[a]\nx = 1\n", (gsize) -1,
                                                   G_KEY_FILE_NONE, NULL));
  CU_ASSERT_TRUE (cli_scenario_has_key (kf, "a", "x"));
  CU_ASSERT_FALSE (cli_scenario_has_key (kf, "a", "y"));
  CU_ASSERT_FALSE (cli_scenario_has_key (kf, "b", "x"));
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (cli_scenario_get_raw (kf, "b", "x", FALSE, &e));
  CU_ASSERT_PTR_NULL (e);
  g_autofree char *v = cli_scenario_get_raw (kf, "a", "x", FALSE, &e);
  CU_ASSERT_STRING_EQUAL (v, "1");
  CU_ASSERT_PTR_NULL (cli_scenario_get_raw (kf, "b", "x", TRUE, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "required key is missing"));
}

/* The prescan remembers the last text it accepted: a text refused after it is still
 * refused, and one refused before is refused again (never remembered). */
static void
test_prescan_memo (void)
{
  const char *good = "[a]\nx = 1\n", *twice = "[a]\nx = 1\nx = 2\n";
  for (int round = 0; round < 2; round++)
    {
      g_autoptr (GError) e = NULL;
      CU_ASSERT_TRUE (cli_scenario_prescan (good, NULL));
      CU_ASSERT_FALSE (cli_scenario_prescan (twice, &e));
      CU_ASSERT_PTR_NOT_NULL_FATAL (e);
      CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "appears twice"));
      CU_ASSERT_FALSE (cli_scenario_prescan ("", NULL));
    }
}

static void
test_unknown_key_hint (void)
{
  g_autofree char *t = with ("grad_acum = 2\n");
  expect_error (t, NULL, (const char *[]){ "[training]", "grad_acum", "grad_accum", NULL });
}

static void
test_unknown_group_hint (void)
{
  g_autofree char *t = with ("[trainng]\nx = 1\n");
  expect_error (t, NULL, (const char *[]){ "[trainng]", "training", NULL });
}

static void
test_duplicate_key (void)
{
  g_autofree char *t = with ("micro_batch = 2\n");
  expect_error (t, NULL, (const char *[]){ "[training]", "micro_batch", "twice", NULL });
}

static void
test_duplicate_group (void)
{
  g_autofree char *t = with ("[cluster]\nnodes = 1\n");
  expect_error (t, NULL, (const char *[]){ "[cluster]", "twice", NULL });
}

static void
test_inline_comment (void)
{
  const char *t = "[model]\nhf_config = llama-3.2-1b\n[cluster]\ngpu = A100-80GB-SXM\n"
                  "[training]\nmicro_batch = 1 # one\nseq_len = 2048\nprecision = fp32\n";
  expect_error (t, NULL, (const char *[]){ "[training]", "micro_batch", "comment", NULL });
}

static void
test_missing_unit (void)
{
  g_autofree char *t = with ("[gpu.X]\nbase = A100-80GB-SXM\nmemory = 80\n");
  expect_error (t, NULL, (const char *[]){ "[gpu.X]", "memory", NULL });
  g_autofree char *u = g_strconcat (base, "", NULL);
  expect_error (u, (const char *[]){ "cluster.host_memory=512", NULL },
                (const char *[]){ "[cluster]", "host_memory", NULL });
}

static void
test_wrong_unit (void)
{
  expect_error (base, (const char *[]){ "cluster.host_memory=512 GB/s", NULL },
                (const char *[]){ "[cluster]", "host_memory", NULL });
}

static void
test_non_positive (void)
{
  expect_error (base, (const char *[]){ "training.micro_batch=0", NULL },
                (const char *[]){ "[training]", "micro_batch", NULL });
  expect_error (base, (const char *[]){ "training.seq_len=-5", NULL },
                (const char *[]){ "[training]", "seq_len", NULL });
  expect_error (base, (const char *[]){ "cluster.host_memory=0 GiB", NULL },
                (const char *[]){ "[cluster]", "host_memory", NULL });
}

static void
test_missing_required (void)
{
  const char *t = "[model]\nhf_config = llama-3.2-1b\n[cluster]\ngpu = A100-80GB-SXM\n"
                  "[training]\nmicro_batch = 1\nprecision = fp32\n";
  expect_error (t, NULL, (const char *[]){ "[training]", "seq_len", "missing", NULL });
  expect_error ("[model]\nhf_config = gpt2\n[training]\nmicro_batch = 1\n", NULL,
                (const char *[]){ "[cluster]", "missing", NULL });
}

static void
test_unknown_family_and_config (void)
{
  expect_error (base, (const char *[]){ "model.hf_config=no-such-model", NULL },
                (const char *[]){ "[model]", "hf_config", "no-such-model", NULL });
  const char *t = "[model]\nfamily = t5\nhidden_size = 64\n[cluster]\ngpu = A100-80GB-SXM\n"
                  "[training]\nmicro_batch = 1\nseq_len = 16\nprecision = fp32\n";
  expect_error (t, NULL, (const char *[]){ "[model]", "family", "t5", NULL });
  /* neither a config nor a family: the key to give is hf_config (with the other way) */
  const char *none = "[model]\n[cluster]\ngpu = A100-80GB-SXM\n"
                     "[training]\nmicro_batch = 1\nseq_len = 16\nprecision = fp32\n";
  expect_error (none, NULL, (const char *[]){ "group [model], key 'hf_config': required",
                                              "list models", "family", NULL });
}

static void
test_bad_enum_and_gpu (void)
{
  expect_error (base, (const char *[]){ "training.precision=fp64", NULL },
                (const char *[]){ "[training]", "precision", "fp64", "bf16_mixed", NULL });
  expect_error (base, (const char *[]){ "cluster.gpu=A100-80GB-SMX", NULL },
                (const char *[]){ "[cluster]", "gpu", "A100-80GB-SXM", NULL });
}

/* Keys that would be silently ignored or cannot hold: checkpoint_every without any
 * checkpointing key (the default is none), prefetch beyond the model's layers (16 here). With
 * an explicit checkpointing, checkpoint_every applies where it means something. */
static void
test_ignored_or_impossible_keys (void)
{
  expect_error (base, (const char *[]){ "training.checkpoint_every=3", NULL },
                (const char *[]){ "[training]", "checkpoint_every", "every_k", NULL });
  g_autoptr (CliScenario) ok = load_text (
    base, (const char *[]){ "training.checkpoint_every=3", "training.checkpointing=full", NULL },
    NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL (ok);
  expect_error (base, (const char *[]){ "parallel.prefetch=17", NULL },
                (const char *[]){ "[parallel]", "prefetch", "16", NULL });
  /* a straggler factor that would overflow the simulated times */
  expect_error (base, (const char *[]){ "run.stragglers=0:1e308", NULL },
                (const char *[]){ "[run]", "stragglers", "[1, 100]", NULL });
}

/* The framework switches parse as booleans, default off, and reject anything else naming
 * the key. */
static void
test_framework_switches (void)
{
  g_autoptr (CliScenario) plain = load_text (base, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plain);
  CU_ASSERT_FALSE (plain->stack.softmax_saves_input);
  g_autoptr (CliScenario) old = load_text (
    base, (const char *[]){ "training.softmax_saves_input=true", NULL }, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (old);
  CU_ASSERT_TRUE (old->stack.softmax_saves_input);
  expect_error (base, (const char *[]){ "training.softmax_saves_input=1.10", NULL },
                (const char *[]){ "[training]", "softmax_saves_input", "1.10", NULL });
}

/* The op-graph keys (models/stack/framework.h): defaults are the custom framework's (upcast
 * loss, one chunk, fp32 RMSNorm, no compile, no k/v repeat); each parses, and a bad value is
 * one error naming the group, the key and the value. */
static void
test_op_graph_keys (void)
{
  g_autoptr (CliScenario) plain = load_text (base, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plain);
  const ModelFramework *f = &plain->stack.framework;
  CU_ASSERT_EQUAL (f->loss, MODEL_LOSS_UPCAST);
  CU_ASSERT_EQUAL (f->loss_chunks, 1);
  CU_ASSERT_TRUE (f->norm_fp32);
  CU_ASSERT_FALSE (f->compile);
  CU_ASSERT_FALSE (f->kv_repeat);
  CU_ASSERT_FALSE (f->kv_repeat_sdpa);
  CU_ASSERT_TRUE (f->softmax_fp32);
  CU_ASSERT_FALSE (f->logits_kept);
  CU_ASSERT_FALSE (plain->stack.pad_to_longest);
  g_autoptr (CliScenario) tt = load_text (
    base, (const char *[]){ "training.loss=chunked", "training.loss_chunks=8",
                            "training.norm_fp32=false", "training.compile=true",
                            "training.kv_repeat=true", "training.logits_kept=true",
                            "training.padding=longest", "training.kv_repeat_sdpa=true",
                            "training.softmax_fp32=false", NULL }, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (tt);
  f = &tt->stack.framework;
  CU_ASSERT_EQUAL (f->loss, MODEL_LOSS_CHUNKED);
  CU_ASSERT_EQUAL (f->loss_chunks, 8);
  CU_ASSERT_FALSE (f->norm_fp32);
  CU_ASSERT_TRUE (f->compile);
  CU_ASSERT_TRUE (f->kv_repeat);
  CU_ASSERT_TRUE (f->kv_repeat_sdpa);
  CU_ASSERT_FALSE (f->softmax_fp32);
  CU_ASSERT_TRUE (f->logits_kept);
  CU_ASSERT_TRUE (tt->stack.pad_to_longest);
  g_autoptr (CliScenario) fixed = load_text (base, (const char *[]){ "training.padding=max_length",
                                                                     NULL }, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (fixed);
  CU_ASSERT_FALSE (fixed->stack.pad_to_longest);
  expect_error (base, (const char *[]){ "training.padding=shortest", NULL },
                (const char *[]){ "[training]", "padding", "shortest", "longest", NULL });
  expect_error (base, (const char *[]){ "training.logits_kept=maybe", NULL },
                (const char *[]){ "[training]", "logits_kept", NULL });
  expect_error (base, (const char *[]){ "training.loss=softmax", NULL },
                (const char *[]){ "[training]", "loss", "softmax", "chunked", NULL });
  expect_error (base, (const char *[]){ "training.loss_chunks=0", NULL },
                (const char *[]){ "[training]", "loss_chunks", NULL });
  expect_error (base, (const char *[]){ "training.loss_chunks=1e9", NULL },
                (const char *[]){ "[training]", "loss_chunks", NULL });
  /* loss = chunked with no count: torchtune's 8 (CEWithChunkedOutputLoss), not 1 */
  g_autoptr (CliScenario) ch = load_text (base, (const char *[]){ "training.loss=chunked",
                                                                  NULL }, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (ch);
  CU_ASSERT_EQUAL (ch->stack.framework.loss_chunks, 8);
  g_autoptr (CliScenario) one = load_text (
    base, (const char *[]){ "training.loss=chunked", "training.loss_chunks=1", NULL }, NULL,
    NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (one);
  CU_ASSERT_EQUAL (one->stack.framework.loss_chunks, 1);
  /* more chunks than the 2048 tokens of a sequence */
  expect_error (base, (const char *[]){ "training.loss=chunked", "training.loss_chunks=2049",
                                        NULL },
                (const char *[]){ "[training]", "loss_chunks", "2048", NULL });
  expect_error (base, (const char *[]){ "training.framework=torchtune", "training.seq_len=4",
                                        NULL },
                (const char *[]){ "[training]", "seq_len", "8 loss chunks", NULL });
  expect_error (base, (const char *[]){ "training.compile=maybe", NULL },
                (const char *[]){ "[training]", "compile", "maybe", NULL });
  expect_error (base, (const char *[]){ "training.norm_fp32=2", NULL },
                (const char *[]){ "[training]", "norm_fp32", NULL });
}

/* A key overrides its field only when present: what a framework profile set before the keys
 * are read (here set by hand) survives a file that names other keys. */
static void
test_op_graph_keys_override_only_present (void)
{
  g_autoptr (GKeyFile) kf = g_key_file_new ();
  CU_ASSERT_TRUE_FATAL (g_key_file_load_from_data (kf, "[training]\nloss = plain\n", -1,
                                                   G_KEY_FILE_NONE, NULL));
  g_autofree CliScenario *sc = g_new0 (CliScenario, 1);
  model_stack_init_defaults (&sc->stack);
  sc->stack.framework.compile = TRUE;
  sc->stack.framework.norm_fp32 = FALSE;
  sc->stack.framework.loss_chunks = 8;
  sc->stack.framework.kv_repeat = TRUE;
  g_autoptr (GError) e = NULL;
  CU_ASSERT_TRUE (cli_scenario_load_memory (kf, sc, &e));
  CU_ASSERT_EQUAL (sc->stack.framework.loss, MODEL_LOSS_PLAIN);
  CU_ASSERT_TRUE (sc->stack.framework.compile);
  CU_ASSERT_FALSE (sc->stack.framework.norm_fp32);
  CU_ASSERT_EQUAL (sc->stack.framework.loss_chunks, 8);
  CU_ASSERT_TRUE (sc->stack.framework.kv_repeat);
}

static void
test_bad_set_syntax (void)
{
  expect_error (base, (const char *[]){ "micro_batch=4", NULL },
                (const char *[]){ "--set", "group.key=value", NULL });
  expect_error (base, (const char *[]){ "training.micro_btch=4", NULL },
                (const char *[]){ "[training]", "micro_btch", "micro_batch", NULL });
}

/* Spaces around group, key and value are dropped; a key GKeyFile cannot store is an error
 * (never g_key_file_set_value's CRITICAL and the old value). */
static void
test_set_spaces_and_bad_keys (void)
{
  g_autoptr (CliScenario) sc = load_text (
    base, (const char *[]){ "training. micro_batch = 2", " training .seq_len =1024", NULL },
    NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->stack.micro_batch, 2);
  CU_ASSERT_EQUAL (sc->stack.seq_len, 1024);
  expect_error (base, (const char *[]){ "training.micro[batch=2", NULL },
                (const char *[]){ "--set 'training.micro[batch=2'", "key 'micro[batch'", NULL });
  expect_error (base, (const char *[]){ "train]ing.micro_batch=2", NULL },
                (const char *[]){ "group 'train]ing'", NULL });
  expect_error (base, (const char *[]){ "training.precision=fp32\n[model]", NULL },
                (const char *[]){ "control characters", NULL });
}

/* Loads `base` with `sets` and `origins`; the message must start with `source`. */
static void
expect_source (const char *const *sets, const char *const *origins, const char *source)
{
  g_autofree char *path = g_build_filename (tmpdir, "case.ini", NULL);
  g_assert (g_file_set_contents (path, base, -1, NULL));
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (path, sets, origins, &e);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  g_autofree char *want = g_strconcat (path, source, NULL);
  gboolean ok = g_str_has_prefix (e->message, want);
  if (!ok)
    g_printerr ("\n  message \"%s\" does not start with \"%s\"\n", e->message, want);
  CU_ASSERT_TRUE (ok);
}

/* An error about a value that came from an override says so, with its origin; overrides
 * it is not about are not named; a file's own error names the file alone. */
static void
test_error_names_override (void)
{
  const char *const set[] = { "--set", "--set", NULL };
  expect_source ((const char *[]){ "training.seq_len=512", "cluster.node=DGX-A100", NULL }, set,
                 " (with --set cluster.node=DGX-A100): group [cluster], key 'gpu': give 'node'");
  expect_source ((const char *[]){ "training.micro_batch = 0", NULL },
                 (const char *[]){ "sw.ini [axes]", NULL },
                 " (with sw.ini [axes] training.micro_batch=0): group [training], key "
                 "'micro_batch'");
  /* pods must be whole groups of nodes: the file, the override, the group and the key */
  expect_source ((const char *[]){ "cluster.nodes=3", "cluster.nodes_per_pod=2", NULL }, set,
                 " (with --set cluster.nodes=3, --set cluster.nodes_per_pod=2): group "
                 "[cluster], key 'nodes_per_pod': nodes = 3 is not a multiple of nodes_per_pod"
                 " = 2");
  /* no origin given: the override is still named */
  expect_source ((const char *[]){ "training.precision=fp13", NULL }, NULL,
                 " (with training.precision=fp13): group [training], key 'precision'");
  /* only the effective (last) one of a key set twice */
  expect_source ((const char *[]){ "training.precision=bf16", "training.precision=fp13", NULL },
                 set, " (with --set training.precision=fp13): group");
  /* an override the error is not about is not named */
  g_autofree char *t = with ("grad_acum = 2\n");
  g_autofree char *path = g_build_filename (tmpdir, "case.ini", NULL);
  g_assert (g_file_set_contents (path, t, -1, NULL));
  g_autoptr (GError) e = NULL;
  CU_ASSERT_PTR_NULL (cli_scenario_load_origins (
    path, (const char *[]){ "cluster.nodes=1", NULL }, set, &e));
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  g_autofree char *plain = g_strconcat (path, ": group [training], key 'grad_acum'", NULL);
  CU_ASSERT_TRUE (g_str_has_prefix (e->message, plain));
}

/* A long or binary value is echoed printable and short (at most CLI_SCENARIO_MESSAGE_MAX). */
static void
test_message_printable_and_short (void)
{
  /* in the file: a --set with a control character is refused before (its syntax) */
  g_autofree char *x = g_strnfill (5000, 'x');
  g_autofree char *t = g_strdup_printf ("%sdropout = \x1b[2J%s\n", base, x);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (t, NULL, &e, NULL);
  CU_ASSERT_PTR_NULL (sc);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  CU_ASSERT_TRUE (g_utf8_strlen (e->message, -1) <= CLI_SCENARIO_MESSAGE_MAX);
  for (const char *c = e->message; *c != '\0'; c++)
    CU_ASSERT_FALSE (g_ascii_iscntrl (*c));
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "\\x1B[2J"));
  CU_ASSERT_PTR_NOT_NULL (strstr (e->message, "group [training], key 'dropout'"));
}

static void
test_unreadable_json (void)
{
  g_autofree char *json = g_build_filename (tmpdir, "bad.json", NULL);
  g_assert (g_file_set_contents (json, "{ \"model_type\": \"llama\", ", -1, NULL));
  expect_error (base, (const char *[]){ "model.hf_config=bad.json", NULL },
                (const char *[]){ "[model]", "hf_config", "bad.json", NULL });
}

static void
test_localised_key (void)
{
  g_autofree char *t = with ("precision[de] = fp16\n");
  expect_error (t, NULL, (const char *[]){ "[training]", "precision[de]", "localised", NULL });
}

static void
test_unknown_shipped_model_lists_them (void)
{
  expect_error (base, (const char *[]){ "model.hf_config=llama-3.1-9b", NULL },
                (const char *[]){ "[model]", "hf_config", "llama-3.1-8b", "shipped:", NULL });
}

/* Without hf_config the sizes HF cannot derive are required; the rest are derived:
 * llama-3.2-1b's shape (tied, GQA 32/8) gives its exact published count. */
static void
test_family_and_sizes (void)
{
  const char *head = "[model]\nfamily = llama\nhidden_size = 2048\nnum_hidden_layers = 16\n"
                     "num_attention_heads = 32\nnum_key_value_heads = 8\nvocab_size = 128256\n"
                     "max_position_embeddings = 131072\n";
  const char *tail = "[cluster]\ngpu = A100-80GB-SXM\n[training]\nmicro_batch = 1\n"
                     "seq_len = 2048\nprecision = fp32\n";
  g_autofree char *missing = g_strconcat (head, tail, NULL);
  expect_error (missing, NULL, (const char *[]){ "[model]", "intermediate_size", "required", NULL });
  g_autofree char *full = g_strconcat (head, "intermediate_size = 8192\ntie_word_embeddings = true\n",
                                       tail, NULL);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (full, NULL, &e, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sc);
  CU_ASSERT_EQUAL (sc->arch->head_dim, 64);
  CU_ASSERT_EQUAL (model_arch_n_params (sc->arch), 1235814400);
}

/* The warnings loading `text` with `sets` gives, joined by newlines ("" for none). */
static char *
warnings_of (const char *text, const char *const *sets)
{
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = load_text (text, sets, &e, NULL);
  if (sc == NULL)
    {
      g_printerr ("\n  does not load: %s\n", e->message);
      return NULL;
    }
  g_ptr_array_add (sc->warnings, NULL);
  char *all = g_strjoinv ("\n", (char **) sc->warnings->pdata);
  g_ptr_array_remove_index (sc->warnings, sc->warnings->len - 1);
  return all;
}

/* A key that has no effect under the chosen stack is accepted with one warning naming the
 * file, group and key and why (cli/scenario/scenario_warnings.c); where it has an effect, none. On
 * the base scenario (one A100, fp32, flash, no offload, no jitter) unless `text` says. */
static void
test_no_effect_warnings (void)
{
  static const char dgx2[] = "[model]\nhf_config = llama-3.2-1b\n"
                             "[cluster]\nnode = DGX-A100\nnodes = 2\n"
                             "[training]\nmicro_batch = 1\nseq_len = 2048\nprecision = fp32\n";
  static const char offload[] = "[model]\nhf_config = llama-3.2-1b\n"
                                "[cluster]\ngpu = A100-80GB-SXM\n"
                                "[parallel]\ndata_parallel = zero3\n"
                                "[training]\nmicro_batch = 1\nseq_len = 2048\n"
                                "precision = bf16_mixed\n"
                                "[offload]\noptimizer = nvme\nparameters = nvme\n";
  const struct
  {
    const char *text;
    const char *sets[4];
    const char *key; /* "group [G], key 'K'" expected in a warning, or NULL for none */
  } cases[] = {
    /* no effect */
    { base, { "parallel.bucket_size=50 MiB" }, "group [parallel], key 'bucket_size'" },
    { base, { "cluster.gpus_per_node=8", "parallel.data_parallel=zero2",
              "parallel.bucket_size=50 MiB" }, "group [parallel], key 'bucket_size'" },
    { base, { "cluster.gpus_per_node=8", "parallel.data_parallel=fsdp_full_shard",
              "parallel.bucket_size=50 MiB" }, "group [parallel], key 'bucket_size'" },
    { base, { "cluster.gpus_per_node=8", "parallel.prefetch=2" },
      "group [parallel], key 'prefetch'" },
    { base, { "cluster.gpus_per_node=8", "parallel.data_parallel=zero2", "parallel.prefetch=2" },
      "group [parallel], key 'prefetch'" },
    { base, { "parallel.reduce_dtype=bf16" }, "group [parallel], key 'reduce_dtype'" },
    { base, { "parallel.algorithm=ring" }, "group [parallel], key 'algorithm'" },
    { base, { "parallel.data_parallel=zero3" }, "group [parallel], key 'data_parallel'" },
    { base, { "training.checkpointing=full", "training.checkpoint_every=3" },
      "group [training], key 'checkpoint_every'" },
    { base, { "training.checkpointing=selective" }, "key 'checkpointing': has almost no effect" },
    { base, { "training.loss_chunks=8" }, "group [training], key 'loss_chunks'" },
    { base, { "training.precision=bf16_amp", "training.norm_fp32=true" },
      "group [training], key 'norm_fp32'" },
    { base, { "training.precision=bf16_mixed", "training.tf32=true" },
      "group [training], key 'tf32'" },
    { base, { "training.optimizer=sgd_momentum", "training.optimizer_foreach=false" },
      "group [training], key 'optimizer_foreach'" },
    { base, { "offload.pin_memory=false" }, "group [offload], key 'pin_memory'" },
    { base, { "run.seed=7" }, "group [run], key 'seed'" },
    { base, { "training.precision=bf16_mixed", "finetune.method=lora",
              "finetune.double_quant=false" }, "group [finetune], key 'double_quant'" },
    { base, { "finetune.method=none", "finetune.rank=16" }, "group [finetune], key 'rank'" },
    { base, { "cluster.cpu_adam_rate=50 Mparam/s" }, "group [cluster], key 'cpu_adam_rate'" },
    { base, { "cluster.nvme_drives=2" }, "group [cluster], key 'nvme_drives'" },
    { base, { "cluster.nic_bandwidth=100 Gbit/s" }, "group [cluster], key 'nic_bandwidth'" },
    { base, { "training.main_grad_fp32=true" }, "group [training], key 'main_grad_fp32'" },
    /* an effect: no warning */
    { base, { "training.precision=bf16_mixed", "training.main_grad_fp32=true" }, NULL },
    { base, { "training.loss=chunked", "training.loss_chunks=8" }, NULL },
    { base, { "training.precision=bf16", "training.norm_fp32=false" }, NULL },
    { base, { "cluster.gpus_per_node=8", "parallel.bucket_size=50 MiB" }, NULL },
    { base, { "cluster.gpus_per_node=8", "parallel.data_parallel=zero3", "parallel.prefetch=2" },
      NULL },
    { base, { "cluster.gpus_per_node=8", "parallel.reduce_dtype=bf16", "parallel.algorithm=ring" },
      NULL },
    { base, { "training.checkpointing=every_k", "training.checkpoint_every=3" }, NULL },
    { base, { "training.checkpointing=selective", "training.attention=eager" }, NULL },
    { base, { "training.tf32=true", "training.optimizer_foreach=false" }, NULL },
    { base, { "run.seed=7", "run.kernel_jitter=0.05" }, NULL },
    { base, { "training.precision=bf16_mixed", "finetune.method=qlora",
              "finetune.double_quant=false" }, NULL },
    { offload, { "offload.pin_memory=false", "parallel.prefetch=2", "cluster.cpu_cores=16" },
      NULL },
    { offload, { "cluster.nvme_drives=2" }, NULL },
    { dgx2, { "cluster.nic_bandwidth=100 Gbit/s" }, NULL },
    /* pods: one node has no fabric, one pod no core links */
    { base, { "cluster.nodes_per_pod=1" }, "group [cluster], key 'nodes_per_pod'" },
    { dgx2, { "cluster.pod_oversubscription=2" }, "group [cluster], key 'pod_oversubscription'" },
    { dgx2, { "cluster.nodes_per_pod=1", "cluster.pod_oversubscription=2" }, NULL },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *w = warnings_of (cases[i].text, cases[i].sets);
      CU_ASSERT_PTR_NOT_NULL_FATAL (w);
      gboolean ok = cases[i].key != NULL
                      ? strstr (w, cases[i].key) != NULL && strstr (w, "case.ini") != NULL
                          && strchr (w, '\n') == NULL /* once, and only this one */
                      : w[0] == '\0';
      if (!ok)
        g_printerr ("\n  case %u (%s …): expected %s, got '%s'\n", i,
                    cases[i].sets[0] ? cases[i].sets[0] : "", cases[i].key ? cases[i].key : "none",
                    w);
      CU_ASSERT (ok);
    }
}

/* A model is named after itself, never after the scenario file (case.ini here): a config of
 * the user's by its _name_or_path, else by family and size (1,235,814,400 parameters:
 * "llama 1.2B"); a config.json next to the scenario is not named after the directory; a
 * shipped config keeps its name; [model] sizes alone give family and size ("gpt2 125M"), and sizes
 * changed on top of a config say so. */
static void
test_model_names (void)
{
  const char *json = "{\"model_type\": \"llama\", \"hidden_size\": 2048, \"num_hidden_layers\": 16,"
                     " \"num_attention_heads\": 32, \"num_key_value_heads\": 8,"
                     " \"intermediate_size\": 8192, \"vocab_size\": 128256,"
                     " \"max_position_embeddings\": 131072, \"tie_word_embeddings\": true";
  const char *tail = "[cluster]\ngpu = A100-80GB-SXM\n[training]\nmicro_batch = 1\n"
                     "seq_len = 2048\nprecision = fp32\n";
  g_autofree char *cfg = g_build_filename (tmpdir, "config.json", NULL);
  g_autofree char *plain = g_strconcat (json, "}", NULL);
  g_assert (g_file_set_contents (cfg, plain, -1, NULL));
  g_autofree char *t1 = g_strconcat ("[model]\nhf_config = config.json\n", tail, NULL);
  g_autoptr (CliScenario) a = load_text (t1, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_STRING_EQUAL (a->arch->name, "llama 1.2B");
  g_autofree char *named = g_strconcat (json, ", \"_name_or_path\": \"meta-llama/Llama-3.2-1B\"}", NULL);
  g_assert (g_file_set_contents (cfg, named, -1, NULL));
  g_autoptr (CliScenario) b = load_text (t1, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_STRING_EQUAL (b->arch->name, "meta-llama/Llama-3.2-1B");
  g_autofree char *t2 = g_strconcat ("[model]\nhf_config = config.json\nnum_hidden_layers = 2\n",
                                     tail, NULL);
  g_autoptr (CliScenario) c = load_text (t2, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_PTR_NOT_NULL (strstr (c->arch->name, "meta-llama/Llama-3.2-1B with [model] sizes"));
  g_autoptr (CliScenario) d = load_text (base, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  CU_ASSERT_STRING_EQUAL (d->arch->name, "llama-3.2-1b");
  g_autofree char *t3 = g_strconcat ("[model]\nfamily = gpt2\nhidden_size = 768\nnum_hidden_layers = 12\n"
                                     "num_attention_heads = 12\nvocab_size = 50257\n"
                                     "max_position_embeddings = 2048\n", tail, NULL);
  g_autoptr (GError) err = NULL;
  g_autoptr (CliScenario) e = load_text (t3, NULL, &err, NULL);
  if (err != NULL)
    g_printerr ("%s\n", err->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (e);
  /* gpt2 small: 124,439,808 parameters with 1024 positions; 1024 more × 768 = 125,226,240 */
  CU_ASSERT_STRING_EQUAL (e->arch->name, "gpt2 125M");
  g_unlink (cfg);
}

/* --set on the model, the GPU or the precision makes another scenario: its name shows the
 * overrides (the last of a key), so the summary and the HDF5 never carry the file's name
 * alone for what the file does not say; [scenario] overrides are not repeated. */
static void
test_name_shows_overrides (void)
{
  const char *sets[] = { "training.precision=fp16_mixed", "cluster.gpu=H100-SXM",
                         "training.precision = bf16_mixed", NULL };
  g_autoptr (CliScenario) a = load_text (base, sets, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_STRING_EQUAL (a->name, "case (cluster.gpu=H100-SXM, training.precision=bf16_mixed)");
  const char *named[] = { "scenario.name=mine", NULL };
  g_autoptr (CliScenario) b = load_text (base, named, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_STRING_EQUAL (b->name, "mine");
  g_autoptr (CliScenario) c = load_text (base, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_STRING_EQUAL (c->name, "case");
}

/* attention = sdpa (HF attn_implementation="sdpa") loads as a fused kernel: the same stack as
 * flash (PyTorch dispatches causal fp16/bf16 to FlashAttention, fp32 to the memory-efficient
 * kernel; neither keeps the s × s scores), not as eager; an unknown value lists sdpa. */
static void
test_attention_sdpa (void)
{
  g_autofree char *sdpa = g_strconcat (base, "attention = sdpa\n", NULL);
  g_autofree char *eager = g_strconcat (base, "attention = eager\n", NULL);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) a = load_text (sdpa, NULL, &e, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_TRUE (a->stack.flash_attention);
  g_autoptr (CliScenario) b = load_text (eager, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_FALSE (b->stack.flash_attention);
  CU_ASSERT_EQUAL (a->stack.attention_kernel, HW_ATTN_FA2);
  g_autofree char *bad = g_strconcat (base, "attention = flash2\n", NULL);
  const char *needles[] = { "[training]", "'attention'", "eager, flash, flash1, sdpa, triton", NULL };
  expect_error (bad, NULL, needles);
}

/* attention = triton (llm-foundry attn_impl: triton) and flash1 (flash-attn 1.x) are fused
 * FlashAttention for memory, with their own kernel for time (hardware/kernel.h). */
static void
test_attention_kernels (void)
{
  g_autofree char *tri = g_strconcat (base, "attention = triton\n", NULL);
  g_autofree char *fa1 = g_strconcat (base, "attention = flash1\n", NULL);
  g_autoptr (CliScenario) a = load_text (tri, NULL, NULL, NULL);
  g_autoptr (CliScenario) b = load_text (fa1, NULL, NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_TRUE (a->stack.flash_attention && b->stack.flash_attention);
  CU_ASSERT_EQUAL (a->stack.attention_kernel, HW_ATTN_TRITON);
  CU_ASSERT_EQUAL (b->stack.attention_kernel, HW_ATTN_FA1);
}

/* Which --set lists can change the JSON files a scenario reads (the batch's input list
 * reads the scenario file once for all the others): only a set of [model] hf_config or
 * [training] deepspeed_config, as loading reads it (spaces dropped); other keys, other
 * groups and malformed sets do not. */
static void
test_sets_name_json_files (void)
{
  const char *none[] = { "training.seq_len=128", "model.hidden_size=64", "hf_config=x",
                         "model.deepspeed_config=x", NULL };
  const char *one[] = { "training.seq_len=128", " model . hf_config = gpt2", NULL };
  const char *ds[] = { "training . deepspeed_config=ds.json", NULL };
  const char *bad[] = { "model.hf_config", "[model].hf_config=x", NULL };
  CU_ASSERT_FALSE (cli_scenario_sets_name_json_files (NULL));
  CU_ASSERT_FALSE (cli_scenario_sets_name_json_files (none));
  CU_ASSERT_TRUE (cli_scenario_sets_name_json_files (one));
  CU_ASSERT_TRUE (cli_scenario_sets_name_json_files (ds));
  CU_ASSERT_FALSE (cli_scenario_sets_name_json_files (bad));
}

/* The JSON files a scenario reads, for the output checks: its hf_config resolved among the
 * shipped configs, its deepspeed_config beside the scenario file (QA: an output could
 * overwrite the ds_config), a --set one in its place; an unreadable scenario names none. */
static void
test_json_files (void)
{
  g_autofree char *ini = g_build_filename (tmpdir, "json-files.ini", NULL);
  g_assert_true (g_file_set_contents (
    ini, "[model]\nhf_config = gpt2\n[training]\ndeepspeed_config = ds.json\n", -1, NULL));
  g_auto (GStrv) files = cli_scenario_json_files (ini, NULL);
  g_autofree char *ds = g_build_filename (tmpdir, "ds.json", NULL);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (files), 2);
  CU_ASSERT_TRUE (g_str_has_suffix (files[0], "gpt2.json"));
  CU_ASSERT_STRING_EQUAL (files[1], ds);
  const char *sets[] = { "training.deepspeed_config=/abs/other.json", NULL };
  g_auto (GStrv) set = cli_scenario_json_files (ini, sets);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (set), 2);
  CU_ASSERT_STRING_EQUAL (set[1], "/abs/other.json");
  g_auto (GStrv) missing = cli_scenario_json_files ("/nonexistent/x.ini", NULL);
  CU_ASSERT_EQUAL (g_strv_length (missing), 0);
}

int main (void);

int
main (void)
{
  tmpdir = stepsim_test_tmpdir ("stepsim-test-XXXXXX");
  static const StepsimTest tests[] = {
    { "attention = sdpa is a fused kernel (as flash)", test_attention_sdpa },
    { "attention = triton / flash1: fused, with their own kernel", test_attention_kernels },
    { "a model is named after itself, not the scenario file", test_model_names },
    { "a scenario's name shows its --set overrides", test_name_shows_overrides },
    { "good scenario loads", test_good_scenario },
    { "keys without effect under the stack: one warning each", test_no_effect_warnings },
    { "[scenario] name and description: no C0 or C1 control", test_scenario_text_controls },
    { "--set overrides", test_set_overrides },
    { "custom [gpu.NAME] group", test_custom_gpu_group },
    { "missing file", test_missing_file },
    { "a key is there when its group and it are", test_has_key },
    { "the prescan's memo passes only the text it accepted", test_prescan_memo },
    { "unknown key with hint", test_unknown_key_hint },
    { "unknown group with hint", test_unknown_group_hint },
    { "duplicate key", test_duplicate_key },
    { "duplicate group", test_duplicate_group },
    { "inline comment", test_inline_comment },
    { "missing unit", test_missing_unit },
    { "wrong unit", test_wrong_unit },
    { "non-positive sizes", test_non_positive },
    { "missing required key or group", test_missing_required },
    { "unknown model config or family", test_unknown_family_and_config },
    { "bad enum value and GPU name", test_bad_enum_and_gpu },
    { "framework switch softmax_saves_input", test_framework_switches },
    { "op-graph keys: loss, loss_chunks, norm_fp32, compile, kv_repeat", test_op_graph_keys },
    { "op-graph keys override only when present", test_op_graph_keys_override_only_present },
    { "keys that would be ignored or cannot hold", test_ignored_or_impossible_keys },
    { "--set: spaces dropped, bad keys refused", test_set_spaces_and_bad_keys },
    { "an override's error names it and its origin", test_error_names_override },
    { "messages printable and short", test_message_printable_and_short },
    { "bad --set syntax and key", test_bad_set_syntax },
    { "unreadable JSON", test_unreadable_json },
    { "localised key", test_localised_key },
    { "unknown shipped model lists them", test_unknown_shipped_model_lists_them },
    { "family and sizes without a config", test_family_and_sizes },
    { "--set lists that change the JSON files", test_sets_name_json_files },
    { "the JSON files a scenario reads", test_json_files },
  };
  int rc = STEPSIM_RUN_TESTS ("cli/scenario", tests);
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmpdir);
  (void) !system (cmd);
  g_free (tmpdir);
  return rc;
}
