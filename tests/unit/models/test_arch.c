/* tests/unit/models/test_arch.c — ModelArch: HF config loading, aliases, errors, overrides and
 * exact parameter counts.
 *
 * Oracles: the published parameter counts of the shipped configs (models/configs/, the
 * table in ../shared/models/README.md), and hand-derived counts for small shapes.
 */
#include "config.h"
#include "models/arch/arch.h"
#include "models/arch/inventory.h"
#include "tests/testlib.h"
#include "tests/unit/models/shipped.h"

#include <math.h>
#include <string.h>

static const struct
{
  const char *stem;
  guint64 params;
} published[] = {
  { "gpt2", 124439808ULL },
  { "llama-3.2-1b", 1235814400ULL },
  { "llama-3.2-3b", 3212749824ULL },
  { "llama-2-7b", 6738415616ULL },
  { "mistral-7b-v0.1", 7241732096ULL },
  { "qwen2.5-7b", 7615616512ULL },
  { "llama-3.1-8b", 8030261248ULL },
  { "qwen3-8b", 8190735360ULL },
  { "llama-2-13b", 13015864320ULL },
  { "qwen1.5-moe-a2.7b", 14315784192ULL },
  { "deepseek-v2-lite", 15706484224ULL },
  { "gpt-oss-20b", 20914757184ULL },
  { "qwen3-30b-a3b", 30532122624ULL },
  { "mixtral-8x7b", 46702792704ULL },
  { "llama-2-70b", 68976648192ULL },
  { "llama-3.1-70b", 70553706496ULL },
  { "gpt-oss-120b", 116829156672ULL },
  { "llama-3.1-405b", 405853388800ULL },
  { "deepseek-v3", 671026419200ULL }, /* main model; the MTP layer counted apart */
};

/* Each shipped config reproduces its published parameter count exactly. */
static void
test_published_counts (void)
{
  for (gsize i = 0; i < G_N_ELEMENTS (published); i++)
    {
      g_autoptr (ModelArch) arch = shipped (published[i].stem);
      CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
      guint64 n = model_arch_n_params (arch);
      if (n != published[i].params)
        g_printerr ("\n  %s: %" G_GUINT64_FORMAT " != %" G_GUINT64_FORMAT "\n",
                    published[i].stem, n, published[i].params);
      CU_ASSERT_EQUAL (n, published[i].params);
      CU_ASSERT_STRING_EQUAL (arch->name, published[i].stem);
    }
}

/* The shipped copies equal ../shared/models byte for byte (skipped when absent). */
static void
test_shipped_match_shared (void)
{
  g_autofree char *shared = stepsim_test_srcpath ("../shared/models");
  if (!g_file_test (shared, G_FILE_TEST_IS_DIR))
    return;
  for (gsize i = 0; i < G_N_ELEMENTS (published); i++)
    {
      g_autofree char *base = g_strdup_printf ("%s.json", published[i].stem);
      g_autofree char *rel = g_build_filename ("models/configs", base, NULL);
      g_autofree char *ours = stepsim_test_srcpath (rel);
      g_autofree char *theirs = g_build_filename (shared, base, NULL);
      g_autofree char *a = NULL, *b = NULL;
      gsize la = 0, lb = 0;
      CU_ASSERT_FATAL (g_file_get_contents (ours, &a, &la, NULL));
      CU_ASSERT_FATAL (g_file_get_contents (theirs, &b, &lb, NULL));
      CU_ASSERT (la == lb && memcmp (a, b, la) == 0);
    }
}

static ModelArch *
load_text (const char *json, GError **error)
{
  return model_arch_load_hf_json (json, "test/inline.json", error);
}

/* GPT-2 spellings (n_embd, n_layer, n_head, n_positions, n_inner null) map to the canonical
 * fields, with GPT-2 defaults. Hand count, h = 8, L = 2, V = 10, P = 16, i = 4h = 32:
 * per layer ln1 2h + c_attn h·3h + 3h + c_proj h² + h + ln2 2h + fc 4h² + 4h + proj 4h² + h
 * = 12h² + 13h = 872; total V·h + P·h + 2·872 + ln_f 2h = 80 + 128 + 1744 + 16 = 1968. */
static void
test_gpt2_aliases (void)
{
  const char *json = "{\"model_type\": \"gpt2\", \"n_embd\": 8, \"n_layer\": 2, \"n_head\": 2,"
                     " \"n_positions\": 16, \"n_inner\": null, \"vocab_size\": 10}";
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text (json, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  CU_ASSERT_EQUAL (arch->hidden_size, 8);
  CU_ASSERT_EQUAL (arch->n_layers, 2);
  CU_ASSERT_EQUAL (arch->n_heads, 2);
  CU_ASSERT_EQUAL (arch->n_kv_heads, 2);
  CU_ASSERT_EQUAL (arch->head_dim, 4);
  CU_ASSERT_EQUAL (arch->intermediate_size, 32);
  CU_ASSERT_EQUAL (arch->max_positions, 16);
  CU_ASSERT (arch->tied_embeddings && arch->learned_positions && arch->mlp_bias);
  CU_ASSERT_EQUAL (arch->norm, MODEL_NORM_LAYER);
  CU_ASSERT_EQUAL (arch->mlp, MODEL_MLP_GELU);
  CU_ASSERT_EQUAL (model_arch_n_params (arch), 1968);
}

/* A multimodal config: the LM is read from "text_config", not the vision tower. */
static void
test_text_config_nesting (void)
{
  const char *json
    = "{\"model_type\": \"llava\", \"vision_config\": {\"hidden_size\": 1024},"
      " \"text_config\": {\"model_type\": \"llama\", \"hidden_size\": 64,"
      " \"num_hidden_layers\": 3, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
      " \"intermediate_size\": 128, \"vocab_size\": 100}}";
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text (json, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  CU_ASSERT_EQUAL (arch->family, MODEL_FAMILY_LLAMA);
  CU_ASSERT_EQUAL (arch->hidden_size, 64);
  CU_ASSERT_EQUAL (arch->n_layers, 3);
  CU_ASSERT_EQUAL (arch->n_kv_heads, 2);
  CU_ASSERT_EQUAL (arch->head_dim, 16);
}

/* text_config without its own model_type takes the top-level one. */
static void
test_text_config_top_level_type (void)
{
  const char *json
    = "{\"model_type\": \"mistral\", \"text_config\": {\"hidden_size\": 64,"
      " \"num_hidden_layers\": 1, \"num_attention_heads\": 4, \"intermediate_size\": 128,"
      " \"vocab_size\": 100, \"sliding_window\": null}}";
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text (json, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  CU_ASSERT_EQUAL (arch->family, MODEL_FAMILY_MISTRAL);
  CU_ASSERT_EQUAL (arch->sliding_window, 0);
}

static void
expect_field_error (const char *json, const char *key)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text (json, &error);
  CU_ASSERT_PTR_NULL (arch);
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, key));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "test/inline.json"));
}

#define LLAMA_REST "\"num_attention_heads\": 4, \"intermediate_size\": 128, \"vocab_size\": 100"

/* A string, a negative or a fractional number where a count belongs is a FIELD error naming
 * the key (in the spelling the file used) and the file. */
static void
test_wrong_type_field (void)
{
  expect_field_error ("{\"model_type\": \"llama\", \"hidden_size\": \"64\","
                      " \"num_hidden_layers\": 1, " LLAMA_REST "}",
                      "'hidden_size'");
  expect_field_error ("{\"model_type\": \"llama\", \"hidden_size\": 64,"
                      " \"n_layer\": -2, " LLAMA_REST "}",
                      "'n_layer'");
  expect_field_error ("{\"model_type\": \"llama\", \"hidden_size\": 64.5,"
                      " \"num_hidden_layers\": 1, " LLAMA_REST "}",
                      "'hidden_size'");
  expect_field_error ("{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1,"
                      " \"tie_word_embeddings\": \"yes\", " LLAMA_REST "}",
                      "'tie_word_embeddings'");
}

/* A size too large for any count is called too large, not negative (2^64 overflows
 * json-glib's gint64 into a negative value) nor a fraction (1e30 is an integral double);
 * a real negative and a real fraction keep their words. */
static void
test_field_error_names_the_cause (void)
{
  static const struct { const char *value, *word; } cases[] = {
    { "18446744073709551616", "too large" }, { "1e30", "too large" },
    { "-2", "negative" }, { "-1e3", "negative" }, { "64.5", "fraction" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *json = g_strdup_printf (
        "{\"model_type\": \"llama\", \"hidden_size\": %s, \"num_hidden_layers\": 1, "
        LLAMA_REST "}", cases[i].value);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelArch) a = model_arch_load_hf_json (json, "test/inline.json", &error);
      CU_ASSERT_PTR_NULL (a);
      CU_ASSERT_PTR_NOT_NULL_FATAL (error);
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "'hidden_size'"));
      if (strstr (error->message, cases[i].word) == NULL)
        g_printerr ("\n  %s: %s", cases[i].value, error->message);
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, cases[i].word));
    }
}

/* The real-valued fields (rope_theta and the norm epsilons) must be finite numbers > 0
 * when given: negative, zero, beyond the double range (1e999 reads as inf) or a string is
 * a FIELD error naming the key and the file; a positive value or null loads. */
static void
test_real_fields (void)
{
  static const char *const keys[] = { "rope_theta", "rms_norm_eps", "layer_norm_eps",
                                      "layer_norm_epsilon" };
  static const char *const bad[] = { "-5", "0", "1e999", "-1e999", "\"1e4\"" };
  for (guint k = 0; k < G_N_ELEMENTS (keys); k++)
    {
      for (guint i = 0; i < G_N_ELEMENTS (bad); i++)
        {
          g_autofree char *json = g_strdup_printf (
            "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
            "\"%s\": %s, " LLAMA_REST "}", keys[k], bad[i]);
          g_autofree char *key = g_strdup_printf ("key '%s'", keys[k]);
          expect_field_error (json, key);
        }
      for (guint i = 0; i < 2; i++)
        {
          g_autofree char *json = g_strdup_printf (
            "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 1, "
            "\"%s\": %s, " LLAMA_REST "}", keys[k], i == 0 ? "500000.0" : "null");
          g_autoptr (ModelArch) a = load_text (json, NULL);
          CU_ASSERT_PTR_NOT_NULL (a);
        }
    }
}

/* A required size that is absent is a FIELD error naming its canonical key. */
static void
test_missing_field (void)
{
  expect_field_error ("{\"model_type\": \"llama\", \"hidden_size\": 64, " LLAMA_REST "}",
                      "num_hidden_layers");
}

/* Llama's attention_bias adds q, k, v and o biases: L·(a·d + 2·k·d + h) parameters. */
static void
test_llama_attention_bias (void)
{
#define BIAS_JSON(flag)                                                                     \
  "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 3,"                     \
  " \"num_key_value_heads\": 2, \"attention_bias\": " flag ", " LLAMA_REST "}"
  const char *with = BIAS_JSON ("true");
  const char *without = BIAS_JSON ("false");
  g_autoptr (ModelArch) a = load_text (with, NULL);
  g_autoptr (ModelArch) b = load_text (without, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  /* h = 64, a = 4, d = 16, k = 2: 3 × (64 + 2·32 + 64) = 576 */
  CU_ASSERT_EQUAL (model_arch_n_params (a) - model_arch_n_params (b), 576);
}

/* Unknown model_type: FAMILY error listing the known families. */
static void
test_unknown_family (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text ("{\"model_type\": \"t5\", \"hidden_size\": 64}",
                                          &error);
  CU_ASSERT_PTR_NULL (arch);
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FAMILY));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "t5"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "llama"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "gpt2"));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "mixtral"));
}

/* Malformed JSON: JSON error naming the origin and the line. */
static void
test_malformed_json (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text ("{\n  \"model_type\": \"llama\",\n  oops\n}", &error);
  CU_ASSERT_PTR_NULL (arch);
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON));
  /* json-glib's "<data>:LINE:COL:" with the origin in place of "<data>" */
  CU_ASSERT (g_str_has_prefix (error->message, "test/inline.json:"));
  CU_ASSERT (g_ascii_isdigit (error->message[strlen ("test/inline.json:")]));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "malformed JSON"));
}

/* A key given twice in one object (top level, or nested as rope_scaling.factor): json-glib
 * and transformers' json.load keep the last silently, so it is a FIELD error naming the
 * origin and the key's JSON path; the same name in two different objects is not a repeat. */
static void
test_duplicate_keys (void)
{
  static const char head[] = "{\"model_type\": \"llama\", \"hidden_size\": 64, "
                             "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                             "\"vocab_size\": 100, \"intermediate_size\": 128, "
                             "\"max_position_embeddings\": 128";
  const struct { const char *tail, *path; } cases[] = {
    { ", \"num_hidden_layers\": 4}", "key 'num_hidden_layers' appears twice" },
    { ", \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"llama3\", \"factor\": 4.0}}",
      "key 'rope_scaling.factor' appears twice" },
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *json = g_strconcat (head, cases[i].tail, NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelArch) arch = load_text (json, &error);
      CU_ASSERT_PTR_NULL (arch);
      CU_ASSERT_FATAL (error != NULL);
      CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD));
      CU_ASSERT (g_str_has_prefix (error->message, "test/inline.json: "));
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, cases[i].path));
    }
  g_autofree char *fine = g_strconcat (head, ", \"text_config\": {\"hidden_size\": 64}}", NULL);
  g_autoptr (ModelArch) ok = load_text (fine, NULL);
  CU_ASSERT_PTR_NOT_NULL (ok);
}

/* Nesting: 100,000 brackets (which would overflow json-glib's recursion) is a clean JSON
 * error; brackets inside strings do not count, so a config whose string values hold
 * brackets still loads past the depth check (and fails only for its missing fields). */
static void
test_deep_json (void)
{
  GString *deep = g_string_new (NULL);
  for (int i = 0; i < 100000; i++)
    g_string_append_c (deep, '[');
  for (int i = 0; i < 100000; i++)
    g_string_append_c (deep, ']');
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text (deep->str, &error);
  g_string_free (deep, TRUE);
  CU_ASSERT_PTR_NULL (arch);
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "nested deeper than"));
  g_autoptr (GError) e2 = NULL;
  g_autoptr (ModelArch) a2 = load_text ("{\"model_type\": \"llama\", \"note\": \"[[[[[[[[[[[[[[[["
                                        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                                        "[[[[[[[[[[\\\"\"}", &e2);
  CU_ASSERT_PTR_NULL (a2);
  CU_ASSERT_FATAL (e2 != NULL);
  CU_ASSERT_PTR_NULL (strstr (e2->message, "nested"));
}

/* An escaped NUL (\u0000) in a string: json-glib's C string ends there, so
 * "llama\u0000junk" loaded as llama (QA). Found in names and values, not after an escaped
 * backslash nor outside strings; the loader refuses it naming the offset. */
static void
test_escaped_nul (void)
{
  CU_ASSERT_EQUAL (model_json_escaped_nul ("{\"a\": \"x\\u0000y\"}"), 8);
  CU_ASSERT_EQUAL (model_json_escaped_nul ("{\"a\\u0000\": 1}"), 3);
  CU_ASSERT_EQUAL (model_json_escaped_nul ("{\"a\": \"x\\\\u0000y\"}"), -1);
  CU_ASSERT_EQUAL (model_json_escaped_nul ("{\"a\": \"\\u00001\"}"), 7);
  CU_ASSERT_EQUAL (model_json_escaped_nul ("{\"a\": \"\\u0001\"}"), -1);
  CU_ASSERT_EQUAL (model_json_escaped_nul ("{\"a\": 1}"), -1);
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = load_text ("{\"model_type\": \"llama\\u0000junk\"}", &error);
  CU_ASSERT_PTR_NULL (arch);
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_JSON));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "escaped NUL (\\u0000) at offset 21"));
}

/* A file that cannot be read: IO error naming the path. */
static void
test_missing_file (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (ModelArch) arch = model_arch_load_hf_config ("/nonexistent/dir/config.json", &error);
  CU_ASSERT_PTR_NULL (arch);
  CU_ASSERT_FATAL (error != NULL);
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_IO));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "/nonexistent/dir/config.json"));
  /* worded as a scenario file that cannot be opened: "PATH: cannot open: REASON" */
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "config.json: cannot open: "));
}

/* [model] overrides: halving the layers removes L/2 layers' parameters; an unknown key is a
 * FIELD error with a nearest-name hint. */
static void
test_set_field_override (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  guint64 full = model_arch_n_params (arch), layer = model_arch_n_params_layer (arch);
  CU_ASSERT (model_arch_set_field (arch, "num_hidden_layers", 16, NULL));
  CU_ASSERT_EQUAL (model_arch_n_params (arch), full - 16 * layer);
  guint64 v = 0;
  CU_ASSERT (model_arch_get_field (arch, "num_hidden_layers", &v) && v == 16);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (model_arch_set_field (arch, "hiden_size", 1, &error));
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_FIELD));
  CU_ASSERT_PTR_NOT_NULL (error != NULL ? strstr (error->message, "hidden_size") : NULL);
}

/* Every canonical key round-trips through set/get. */
static void
test_field_names_roundtrip (void)
{
  ModelArch arch = { 0 };
  guint64 n = 0;
  for (const char *const *k = model_arch_field_names (); *k != NULL; k++, n++)
    {
      guint64 v = 0;
      CU_ASSERT (model_arch_set_field (&arch, *k, 1000 + n, NULL));
      CU_ASSERT (model_arch_get_field (&arch, *k, &v));
      CU_ASSERT_EQUAL (v, 1000 + n);
    }
  CU_ASSERT_EQUAL (n, 13);
}

/* head_dim derived from hidden/heads follows an override of hidden_size (HF's rule). */
static void
test_head_dim_follows_hidden (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-2-7b"); /* 4096 / 32 = 128 */
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  CU_ASSERT (model_arch_set_field (arch, "hidden_size", 2048, NULL));
  CU_ASSERT_EQUAL (arch->head_dim, 64);
}

/* validate: 32 heads with 5 kv heads cannot form GQA groups. */
static void
test_validate_kv_heads (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  CU_ASSERT (model_arch_validate (arch, NULL));
  arch->n_kv_heads = 5;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (model_arch_validate (arch, &error));
  CU_ASSERT (g_error_matches (error, MODEL_ARCH_ERROR, MODEL_ARCH_ERROR_INVALID));
  CU_ASSERT_PTR_NOT_NULL (error != NULL ? strstr (error->message, "num_key_value_heads") : NULL);
}

/* validate: sizes beyond any model (1025 layers, hidden 2^20 + 1) are errors naming the
 * field and its bound; the bounds themselves pass. */
static void
test_validate_bounds (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  arch->n_layers = 1024;
  CU_ASSERT (model_arch_validate (arch, NULL));
  arch->n_layers = 1025;
  g_autoptr (GError) e1 = NULL;
  CU_ASSERT_FALSE (model_arch_validate (arch, &e1));
  CU_ASSERT_PTR_NOT_NULL (e1 ? strstr (e1->message, "num_hidden_layers must be in [1, 1024]") : NULL);
  arch->n_layers = 32;
  arch->hidden_size = (1u << 20) + 1;
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_FALSE (model_arch_validate (arch, &e2));
  CU_ASSERT_PTR_NOT_NULL (e2 ? strstr (e2->message, "hidden_size") : NULL);
}

/* validate_key: the same checks, the failing field(s) named for the caller's own key and
 * the message without the model's name; a valid arch passes. */
static void
test_validate_key (void)
{
  g_autoptr (ModelArch) arch = shipped ("llama-3.1-8b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  const char *keys[2] = { "x", "y" };
  CU_ASSERT (model_arch_validate_key (arch, keys, NULL));
  arch->n_layers = 2000;
  g_autoptr (GError) e1 = NULL;
  CU_ASSERT_FALSE (model_arch_validate_key (arch, keys, &e1));
  CU_ASSERT_STRING_EQUAL (keys[0], "num_hidden_layers");
  CU_ASSERT_PTR_NULL (keys[1]);
  CU_ASSERT_STRING_EQUAL (e1->message, "num_hidden_layers must be in [1, 1024], not 2000");
  arch->n_layers = 32;
  arch->n_kv_heads = 5;
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_FALSE (model_arch_validate_key (arch, keys, &e2));
  CU_ASSERT_STRING_EQUAL (keys[0], "num_attention_heads");
  CU_ASSERT_STRING_EQUAL (keys[1], "num_key_value_heads");
}

/* Mixtral's active parameters drop (E − k) experts per layer:
 * total − L·(8 − 2)·3·h·i = 46,702,792,704 − 32·6·3·4096·14336 = 12,879,925,248 (≈ 12.9 B,
 * Jiang et al. 2024 §2 "13B active"). */
static void
test_mixtral_active (void)
{
  g_autoptr (ModelArch) arch = shipped ("mixtral-8x7b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  guint64 expert = 3ULL * 4096 * 14336;
  CU_ASSERT_EQUAL (model_arch_n_params_expert (arch), expert);
  CU_ASSERT_EQUAL (model_arch_n_params_active (arch), 46702792704ULL - 32ULL * 6 * expert);
}

/* Qwen MoE active counts (../shared/models/README.md, Qwen's convention: embedding and head
 * included): every non-expert tensor, the router and shared expert whole, top-k experts.
 * qwen3-30b-a3b: 30,532,122,624 − 48·(128 − 8)·3·2048·768 = 3,353,032,704.
 * qwen1.5-moe-a2.7b: 14,315,784,192 − 24·(60 − 4)·3·2048·1408 = 2,689,173,504.
 * The new tensors carry their roles: q/k norm 2·128 per layer (qwen3), shared expert
 * 3·2048·5632 and its gate 2048 per layer (qwen2_moe), router h·E. */
static void
test_qwen_moe_active (void)
{
  g_autoptr (ModelArch) q3 = shipped ("qwen3-30b-a3b");
  g_autoptr (ModelArch) q2 = shipped ("qwen1.5-moe-a2.7b");
  g_autoptr (ModelArch) q8 = shipped ("qwen3-8b");
  CU_ASSERT_PTR_NOT_NULL_FATAL (q3);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q2);
  CU_ASSERT_PTR_NOT_NULL_FATAL (q8);
  CU_ASSERT_EQUAL (model_arch_n_params_active (q3), 3353032704ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_active (q2), 2689173504ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_active (q8), 8190735360ULL);
  CU_ASSERT_EQUAL (model_arch_n_params_expert (q3), 3ULL * 2048 * 768);
  g_autoptr (ModelInventory) i8 = model_inventory_new (q8, NULL, NULL);
  g_autoptr (ModelInventory) i3 = model_inventory_new (q3, NULL, NULL);
  g_autoptr (ModelInventory) i2 = model_inventory_new (q2, NULL, NULL);
  CU_ASSERT_EQUAL (model_inventory_n_role (i8, MODEL_INVENTORY_LAYER, MODEL_TENSOR_QK_NORM), 256);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, MODEL_INVENTORY_LAYER, MODEL_TENSOR_QK_NORM), 256);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, MODEL_INVENTORY_LAYER, MODEL_TENSOR_ROUTER),
                   2048 * 128);
  CU_ASSERT_EQUAL (model_inventory_n_role (i3, MODEL_INVENTORY_LAYER, MODEL_TENSOR_SHARED_UP), 0);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, MODEL_INVENTORY_LAYER, MODEL_TENSOR_QK_NORM), 0);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, MODEL_INVENTORY_LAYER, MODEL_TENSOR_ROUTER),
                   2048 * 60);
  guint64 shared = model_inventory_n_role (i2, MODEL_INVENTORY_LAYER, MODEL_TENSOR_SHARED_GATE)
                   + model_inventory_n_role (i2, MODEL_INVENTORY_LAYER, MODEL_TENSOR_SHARED_UP)
                   + model_inventory_n_role (i2, MODEL_INVENTORY_LAYER, MODEL_TENSOR_SHARED_DOWN);
  CU_ASSERT_EQUAL (shared, 3ULL * 2048 * 5632);
  CU_ASSERT_EQUAL (model_inventory_n_role (i2, MODEL_INVENTORY_LAYER,
                                           MODEL_TENSOR_SHARED_EXPERT_GATE), 2048);
}

/* Dense layers among qwen MoE layers (decoder_sparse_step ≠ 1, mlp_only_layers) and a
 * missing moe_intermediate_size are refused, naming the key. */
static void
test_qwen_moe_unsupported (void)
{
  const char *base = "{\"model_type\": \"qwen3_moe\", \"hidden_size\": 64, "
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
                     "\"vocab_size\": 100, \"num_experts\": 4, \"num_experts_per_tok\": 2";
  const struct { const char *tail, *key; } bad[] = {
    { ", \"moe_intermediate_size\": 32, \"decoder_sparse_step\": 2}", "decoder_sparse_step" },
    { ", \"moe_intermediate_size\": 32, \"mlp_only_layers\": [0]}", "mlp_only_layers" },
    { "}", "moe_intermediate_size" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (bad); i++)
    {
      g_autofree char *json = g_strconcat (base, bad[i].tail, NULL);
      g_autoptr (GError) error = NULL;
      g_autoptr (ModelArch) arch = load_text (json, &error);
      CU_ASSERT_PTR_NULL (arch);
      CU_ASSERT_PTR_NOT_NULL_FATAL (error);
      CU_ASSERT_PTR_NOT_NULL (strstr (error->message, bad[i].key));
    }
  g_autofree char *ok = g_strconcat (base, ", \"moe_intermediate_size\": 32}", NULL);
  g_autoptr (ModelArch) arch = load_text (ok, NULL);
  CU_ASSERT_PTR_NOT_NULL (arch);
}

/* Copy is deep (own name) and free(NULL) is a no-op. */
static void
test_copy_free (void)
{
  g_autoptr (ModelArch) arch = shipped ("gpt2");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  g_autoptr (ModelArch) copy = model_arch_copy (arch);
  CU_ASSERT (copy->name != arch->name);
  CU_ASSERT_STRING_EQUAL (copy->name, "gpt2");
  CU_ASSERT_EQUAL (model_arch_n_params (copy), model_arch_n_params (arch));
  model_arch_free (NULL);
}

/* bert-large-uncased as BertForSequenceClassification with 2 labels, counted by hand from
 * the module shapes (HF modeling_bert.py), h = 1024, L = 24, i = 4096, V = 30522, P = 512:
 *   embeddings  V·h 31,254,528 + P·h 524,288 + 2·h 2,048 + LayerNorm 2h 2,048 = 31,782,912
 *   layer       q, k, v 3·(h² + h) 3,148,800 + o h² + h 1,049,600 + LN 2,048
 *               + fc h·i + i 4,198,400 + proj i·h + h 4,195,328 + LN 2,048 = 12,596,224
 *   head        pooler h² + h 1,049,600 + classifier 2h + 2 2,050 = 1,051,650
 *   total       31,782,912 + 24 × 12,596,224 + 1,051,650 = 335,143,938. */
static void
test_bert_large_count (void)
{
  g_autoptr (ModelArch) arch = shipped ("bert-large-uncased");
  CU_ASSERT_PTR_NOT_NULL_FATAL (arch);
  CU_ASSERT_EQUAL (arch->family, MODEL_FAMILY_BERT);
  CU_ASSERT_EQUAL (model_arch_n_params_embedding (arch), 31782912);
  CU_ASSERT_EQUAL (model_arch_n_params_layer (arch), 12596224);
  CU_ASSERT_EQUAL (model_arch_n_params_lm_head (arch), 1051650);
  CU_ASSERT_EQUAL (model_arch_n_params_final_norm (arch), 0);
  CU_ASSERT_EQUAL (model_arch_n_params (arch), 335143938ULL);
  CU_ASSERT_FALSE (arch->tied_embeddings);
}

/* num_labels: explicit key, else the size of id2label, else 2. Three labels add one row
 * of the classifier: h + 1 = 9 parameters at h = 8. */
static void
test_bert_num_labels (void)
{
  const char *base = "{\"model_type\": \"bert\", \"hidden_size\": 8, \"num_hidden_layers\": 1, "
                     "\"num_attention_heads\": 2, \"intermediate_size\": 32, \"vocab_size\": 10, "
                     "\"max_position_embeddings\": 16";
  g_autofree char *two = g_strdup_printf ("%s}", base);
  g_autofree char *three = g_strdup_printf ("%s, \"id2label\": {\"0\": \"a\", \"1\": \"b\", "
                                            "\"2\": \"c\"}}", base);
  g_autoptr (ModelArch) a = load_text (two, NULL);
  g_autoptr (ModelArch) b = load_text (three, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (a);
  CU_ASSERT_PTR_NOT_NULL_FATAL (b);
  CU_ASSERT_EQUAL (a->num_labels, 2);
  CU_ASSERT_EQUAL (b->num_labels, 3);
  CU_ASSERT_EQUAL (model_arch_n_params (b) - model_arch_n_params (a), 9);
}

/* The tensor list adds up to the parameter count for every shipped config, and the
 * largest tensor of bert-large is its word embedding, V·h = 31,254,528. */
static void
test_param_tensors (void)
{
  const char *stems[G_N_ELEMENTS (published) + 1];
  for (gsize i = 0; i < G_N_ELEMENTS (published); i++)
    stems[i] = published[i].stem;
  stems[G_N_ELEMENTS (published)] = "bert-large-uncased";
  for (gsize i = 0; i < G_N_ELEMENTS (stems); i++)
    {
      g_autoptr (ModelArch) arch = shipped (stems[i]);
      g_autoptr (ModelInventory) inv = model_inventory_new (arch, NULL, NULL);
      CU_ASSERT_PTR_NOT_NULL_FATAL (inv);
      guint64 sum = 0;
      for (guint k = 0; k < inv->tensors->len; k++)
        {
          const ModelTensor *x = model_inventory_tensor (inv, k);
          sum += model_tensor_numel (x) * model_inventory_copies (inv, x, MODEL_INVENTORY_ALL);
        }
      if (sum != model_arch_n_params (arch))
        g_printerr ("\n  %s: tensors %" G_GUINT64_FORMAT "\n", stems[i], sum);
      CU_ASSERT_EQUAL (sum, model_arch_n_params (arch));
    }
  g_autoptr (ModelArch) bert = shipped ("bert-large-uncased");
  g_autoptr (ModelInventory) binv = model_inventory_new (bert, NULL, NULL);
  CU_ASSERT_EQUAL (model_inventory_largest (binv, MODEL_INVENTORY_ALL, FALSE), 31254528);
}


/* ---- the per-thread parse memo (hf_config.c) ------------------------------------------- */

typedef struct
{
  const char *text, *origin;
  ModelArch *arch;
} FreshParse;

static gpointer
fresh_parse (gpointer p)
{
  FreshParse *f = p; /* a new thread has parsed nothing yet */
  f->arch = model_arch_load_hf_json (f->text, f->origin, NULL);
  return NULL;
}

static void
assert_same_arch (const ModelArch *a, const ModelArch *b)
{
  CU_ASSERT_STRING_EQUAL (a->name, b->name);
  ModelArch x = *a, y = *b;
  x.name = y.name = NULL;
  CU_ASSERT (memcmp (&x, &y, sizeof x) == 0);
}

/* The same text and origin give a copy of the thread's last parse (its own allocation);
 * another text, another origin (the name comes from it) or a failing parse in between give
 * each what a fresh thread's parse gives. */
static void
test_hf_json_memo (void)
{
  const char *llama = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                      "\"num_attention_heads\": 4, \"intermediate_size\": 128, "
                      "\"vocab_size\": 1000}";
  const char *wider = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"num_hidden_layers\": 2, "
                      "\"num_attention_heads\": 4, \"intermediate_size\": 256, "
                      "\"vocab_size\": 1000}";
  const struct
  {
    const char *text, *origin;
  } in[] = { { llama, "a/config.json" }, { llama, "a/config.json" }, { wider, "a/config.json" },
             { llama, "a/config.json" }, { llama, "b/other.json" },  { "{", "a/config.json" },
             { llama, "a/config.json" } };
  ModelArch *prev = NULL;
  for (guint i = 0; i < G_N_ELEMENTS (in); i++)
    {
      g_autoptr (GError) e = NULL;
      ModelArch *got = model_arch_load_hf_json (in[i].text, in[i].origin, &e);
      FreshParse f = { in[i].text, in[i].origin, NULL };
      g_thread_join (g_thread_new ("fresh", fresh_parse, &f));
      CU_ASSERT_EQUAL ((got == NULL), (f.arch == NULL));
      CU_ASSERT_EQUAL ((got == NULL), (e != NULL));
      if (got != NULL && f.arch != NULL)
        assert_same_arch (got, f.arch);
      if (got != NULL && prev != NULL)
        CU_ASSERT_PTR_NOT_EQUAL (got, prev);
      model_arch_free (f.arch);
      model_arch_free (prev);
      prev = got;
    }
  model_arch_free (prev);
}

static const StepsimTest tests[] = {
    { "a size too large is called too large", test_field_error_names_the_cause },
  { "published parameter counts", test_published_counts },
  { "shipped configs match ../shared/models", test_shipped_match_shared },
  { "gpt2 aliases and defaults", test_gpt2_aliases },
  { "text_config nesting", test_text_config_nesting },
  { "text_config takes top-level model_type", test_text_config_top_level_type },
  { "wrong-type field names the key", test_wrong_type_field },
  { "missing required field", test_missing_field },
  { "rope_theta and norm epsilons: finite and > 0", test_real_fields },
  { "llama attention_bias", test_llama_attention_bias },
  { "unknown model_type", test_unknown_family },
  { "malformed JSON", test_malformed_json },
  { "a key given twice is named by its JSON path", test_duplicate_keys },
  { "JSON nested too deep is an error, not a crash", test_deep_json },
  { "an escaped NUL in a JSON string is an error", test_escaped_nul },
  { "validate: upper bounds", test_validate_bounds },
  { "missing file", test_missing_file },
  { "set_field override", test_set_field_override },
  { "field names round-trip", test_field_names_roundtrip },
  { "head_dim follows hidden_size", test_head_dim_follows_hidden },
  { "validate rejects kv heads not dividing heads", test_validate_kv_heads },
  { "validate_key names the failing fields", test_validate_key },
  { "mixtral active parameters", test_mixtral_active },
  { "qwen3 / qwen MoE active parameters and tensor roles", test_qwen_moe_active },
  { "qwen MoE dense layers and missing keys are refused", test_qwen_moe_unsupported },
  { "copy and free", test_copy_free },
  { "bert-large-uncased: 335,143,938 parameters", test_bert_large_count },
  { "bert num_labels from id2label", test_bert_num_labels },
  { "parameter tensors add up", test_param_tensors },
  { "HF config: a thread's last parse remembered", test_hf_json_memo },
};

int
main (void)
{
  return STEPSIM_RUN_TESTS ("models/arch", tests);
}
