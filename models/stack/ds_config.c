/* models/stack/ds_config.c — reads a DeepSpeed ds_config.json (ds_config.h) with json-glib.
 * Key names and defaults: deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig),
 * deepspeed/runtime/zero/offload_config.py, deepspeed/runtime/config.py (fp16, bf16,
 * batch keys) at microsoft/DeepSpeed 38327e0.
 */
#include "config.h"
#include "models/stack/ds_config.h"
#include "models/arch/arch.h"
#include "models/arch/json_unique.h"
#include "models/stack/framework.h"
#include "models/stack/stack.h"
#include "sim/text.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <sys/stat.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DS_CONFIG_MAX_BYTES (16 << 20)

typedef struct
{
  const char *path;
  ModelDsConfig *out;
} Reader;

static gboolean
fail (const Reader *r, GError **error, const char *key, const char *fmt, ...) G_GNUC_PRINTF (4, 5);

static gboolean
fail (const Reader *r, GError **error, const char *key, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *why = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s: key '%s': %s",
               r->path, key, why);
  return FALSE;
}

static gboolean
is_auto (JsonNode *n)
{
  return JSON_NODE_HOLDS_VALUE (n) && json_node_get_value_type (n) == G_TYPE_STRING
         && strcmp (json_node_get_string (n), "auto") == 0;
}

static gboolean
is_number (JsonNode *n)
{
  if (!JSON_NODE_HOLDS_VALUE (n))
    return FALSE;
  GType t = json_node_get_value_type (n);
  return t == G_TYPE_INT64 || t == G_TYPE_DOUBLE;
}

/* A whole count of elements in [0, MODEL_FRAMEWORK_MAX_ELEMENTS] (DeepSpeed's pp_int
 * fields accept 5e8 as a number). */
static gboolean
read_elements (const Reader *r, JsonNode *n, const char *key, double *out, gboolean *autov,
               GError **error)
{
  if (is_auto (n))
    {
      *out = NAN;
      if (autov != NULL)
        *autov = TRUE;
      return TRUE;
    }
  if (!is_number (n))
    return fail (r, error, key, "must be a number of elements or \"auto\"");
  double v = json_node_get_double (n);
  if (!isfinite (v) || v < 0 || v != floor (v) || v > MODEL_FRAMEWORK_MAX_ELEMENTS)
    return fail (r, error, key, "must be a whole number of elements from 0 to 2^40 (%.0f), "
                 "not %g", MODEL_FRAMEWORK_MAX_ELEMENTS, v);
  *out = v;
  return TRUE;
}

static gboolean
read_bool (const Reader *r, JsonNode *n, const char *key, gint *out, GError **error)
{
  if (is_auto (n))
    return *out = MODEL_DS_AUTO, TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_BOOLEAN)
    return fail (r, error, key, "must be true, false or \"auto\"");
  *out = json_node_get_boolean (n) ? 1 : 0;
  return TRUE;
}

static gboolean
read_int (const Reader *r, JsonNode *n, const char *key, gint64 lo, gint64 hi, gint64 *out,
          GError **error)
{
  if (is_auto (n))
    return *out = MODEL_DS_AUTO, TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_INT64
      || json_node_get_int (n) < lo || json_node_get_int (n) > hi)
    {
      /* the value as written (JSON), quoted as every bad value is */
      g_autofree char *json = json_to_string (n, FALSE);
      g_autofree char *shown = sim_text_printable (json != NULL ? json : "", 64);
      return fail (r, error, key, "'%s' must be an integer in [%" G_GINT64_FORMAT ", %"
                   G_GINT64_FORMAT "] or \"auto\"", shown, lo, hi);
    }
  *out = json_node_get_int (n);
  return TRUE;
}

/* Whether a value is "on": true, or a number above `above`. */
static gboolean
truthy (JsonNode *n, double above)
{
  if (!JSON_NODE_HOLDS_VALUE (n))
    return FALSE;
  if (json_node_get_value_type (n) == G_TYPE_BOOLEAN)
    return json_node_get_boolean (n);
  return is_number (n) && json_node_get_double (n) > above;
}

static JsonObject *
object_of (const Reader *r, JsonNode *n, const char *key, GError **error)
{
  if (!JSON_NODE_HOLDS_OBJECT (n))
    return fail (r, error, key, "must be an object"), NULL;
  return json_node_get_object (n);
}

static void
ignore (const Reader *r, const char *key)
{
  g_ptr_array_add (r->out->ignored, g_strdup (key));
}

static gboolean
in (const char *const *names, const char *name)
{
  return g_strv_contains (names, name);
}

/* offload_optimizer / offload_param: {"device": "none"|"cpu"|"nvme", "pin_memory", ...} */
static gboolean
read_offload (const Reader *r, JsonObject *o, const char *block, gint *target, GError **error)
{
  static const char *const quiet[] = { "buffer_count", "buffer_size", "max_in_cpu", "nvme_path",
                                       "pipeline_read", "pipeline_write", "fast_init",
                                       "pipeline", NULL };
  g_autoptr (GList) members = json_object_get_members (o);
  for (GList *m = members; m != NULL; m = m->next)
    {
      const char *k = m->data;
      JsonNode *n = json_object_get_member (o, k);
      g_autofree char *key = g_strdup_printf ("zero_optimization.%s.%s", block, k);
      if (strcmp (k, "device") == 0)
        {
          if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
            return fail (r, error, key, "must be \"none\", \"cpu\" or \"nvme\"");
          ModelOffloadTarget t;
          GError *e = NULL;
          if (!model_offload_target_from_string (json_node_get_string (n), &t, &e))
            {
              fail (r, error, key, "%s", e->message);
              g_error_free (e);
              return FALSE;
            }
          *target = (gint) t;
        }
      else if (strcmp (k, "pin_memory") == 0)
        {
          if (!read_bool (r, n, key, &r->out->pin_memory, error))
            return FALSE;
        }
      else if (strcmp (k, "ratio") == 0)
        {
          if (!is_number (n) || json_node_get_double (n) > 1 || json_node_get_double (n) < 0)
            return fail (r, error, key, "must be a number in [0, 1]");
          if (json_node_get_double (n) < 1)
            return fail (r, error, key, "a partial optimizer offload (ratio < 1, ZeRO-Offload++) "
                         "is not modelled");
        }
      else if (!in (quiet, k))
        ignore (r, key);
    }
  return TRUE;
}

static gboolean
read_zero (const Reader *r, JsonObject *z, GError **error)
{
  ModelDsConfig *c = r->out;
  static const char *const quiet[] = {
    "allgather_partitions", "round_robin_gradients",
    "stage3_max_reuse_distance", "max_reuse_distance", "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save", "gather_16bit_weights_on_model_save",
    "load_from_fp32_weights", "elastic_checkpoint", "ignore_unused_parameters",
    "use_multi_rank_bucket_allreduce", "legacy_stage1", "sub_group_size",
    "stage3_model_persistence_threshold", "model_persistence_threshold",
    "memory_efficient_linear", "override_module_apply", "log_trace_cache_warnings",
    "stage3_module_granularity_threshold", "stage3_use_all_reduce_for_fetch_params",
    "pipeline_loading_checkpoint", "mics_hierarchical_params_gather", "zeropp_loco_param",
    "cpu_offload_use_pin_memory", NULL,
  };
  /* memory- or time-changing features stepsim does not model: on (true / > threshold) is an
   * error */
  static const struct { const char *key; double above; const char *what; } unmodelled[] = {
    { "zero_hpz_partition_size", 1, "ZeRO++ hierarchical partitioning (hpZ)" },
    { "zero_quantized_weights", 0, "ZeRO++ quantized weight communication (qwZ)" },
    { "zero_quantized_gradients", 0, "ZeRO++ quantized gradient communication (qgZ)" },
    { "zero_quantized_nontrainable_weights", 0, "quantized frozen weights" },
    { "mics_shard_size", 0, "MiCS sharding" },
  };
  gint reduce_scatter = MODEL_DS_UNSET;
  g_autoptr (GList) members = json_object_get_members (z);
  for (GList *m = members; m != NULL; m = m->next)
    {
      const char *k = m->data;
      JsonNode *n = json_object_get_member (z, k);
      g_autofree char *key = g_strdup_printf ("zero_optimization.%s", k);
      gboolean handled = FALSE;
      for (guint i = 0; i < G_N_ELEMENTS (unmodelled); i++)
        if (strcmp (k, unmodelled[i].key) == 0)
          {
            if (truthy (n, unmodelled[i].above))
              return fail (r, error, key, "%s changes memory and communication and is not "
                           "modelled", unmodelled[i].what);
            handled = TRUE;
          }
      if (handled)
        continue;
      gint64 stage;
      if (strcmp (k, "stage") == 0)
        {
          if (!read_int (r, n, key, 0, 3, &stage, error))
            return FALSE;
          c->stage = (gint) stage;
        }
      else if (strcmp (k, "reduce_bucket_size") == 0)
        {
          if (!read_elements (r, n, key, &c->reduce_bucket, &c->reduce_bucket_auto, error))
            return FALSE;
        }
      else if (strcmp (k, "allgather_bucket_size") == 0)
        {
          if (!read_elements (r, n, key, &c->allgather_bucket, NULL, error))
            return FALSE;
        }
      else if (strcmp (k, "stage3_prefetch_bucket_size") == 0
               || strcmp (k, "prefetch_bucket_size") == 0)
        {
          if (!read_elements (r, n, key, &c->prefetch_bucket, &c->prefetch_bucket_auto, error))
            return FALSE;
        }
      else if (strcmp (k, "stage3_param_persistence_threshold") == 0
               || strcmp (k, "param_persistence_threshold") == 0)
        {
          if (!read_elements (r, n, key, &c->persistence, &c->persistence_auto, error))
            return FALSE;
        }
      else if (strcmp (k, "stage3_max_live_parameters") == 0
               || strcmp (k, "max_live_parameters") == 0)
        {
          if (!read_elements (r, n, key, &c->max_live, NULL, error))
            return FALSE;
        }
      else if (strcmp (k, "overlap_comm") == 0)
        {
          if (!read_bool (r, n, key, &c->overlap_comm, error))
            return FALSE;
        }
      else if (strcmp (k, "contiguous_gradients") == 0)
        {
          if (!read_bool (r, n, key, &c->contiguous_gradients, error))
            return FALSE;
        }
      else if (strcmp (k, "reduce_scatter") == 0)
        {
          if (!read_bool (r, n, key, &reduce_scatter, error))
            return FALSE;
        }
      else if (strcmp (k, "offload_optimizer") == 0 || strcmp (k, "offload_param") == 0)
        {
          JsonObject *o = object_of (r, n, key, error);
          gint *target = k[8] == 'o' ? &c->offload_optimizer : &c->offload_param;
          if (o == NULL || !read_offload (r, o, k, target, error))
            return FALSE;
        }
      else if (strcmp (k, "cpu_offload") == 0 || strcmp (k, "cpu_offload_param") == 0)
        {
          /* the deprecated booleans (zero/config.py: "use offload_optimizer / offload_param") */
          gint on = MODEL_DS_UNSET;
          if (!read_bool (r, n, key, &on, error))
            return FALSE;
          if (on == 1)
            *(strcmp (k, "cpu_offload") == 0 ? &c->offload_optimizer : &c->offload_param)
              = MODEL_OFFLOAD_CPU;
        }
      else if (!in (quiet, k))
        ignore (r, key);
    }
  /* stages 1–2 with reduce_scatter false all-reduce each gradient bucket instead
   * (stage_1_and_2.py average_tensor: gradient_reduction_w_predivide): twice the traffic of
   * the reduce-scatter the plan's placements give; stage 3 reduce-scatters whatever it says */
  if (reduce_scatter == 0 && (c->stage == 1 || c->stage == 2))
    return fail (r, error, "zero_optimization.reduce_scatter", "false at stage %d all-reduces "
                 "the gradients instead of reduce-scattering them (more communication), which "
                 "is not modelled", c->stage);
  return TRUE;
}

/* fp16 / bf16: {"enabled": …, loss-scale details} */
static gboolean
read_precision (const Reader *r, JsonObject *o, const char *block, gint *enabled, GError **error)
{
  static const char *const quiet[] = { "loss_scale", "initial_scale_power", "loss_scale_window",
                                       "hysteresis", "consecutive_hysteresis", "min_loss_scale",
                                       "auto_cast", "immediate_grad_update", NULL };
  static const char *const unmodelled[] = { "fp16_master_weights_and_grads",
                                            "bf16_master_weights_and_grads",
                                            "bf16_optimizer_states", NULL };
  g_autoptr (GList) members = json_object_get_members (o);
  for (GList *m = members; m != NULL; m = m->next)
    {
      const char *k = m->data;
      JsonNode *n = json_object_get_member (o, k);
      g_autofree char *key = g_strdup_printf ("%s.%s", block, k);
      if (strcmp (k, "enabled") == 0)
        {
          if (!read_bool (r, n, key, enabled, error))
            return FALSE;
        }
      else if (in (unmodelled, k))
        {
          if (truthy (n, 0))
            return fail (r, error, key, "16-bit master weights, gradients or optimizer states "
                         "change the model-state bytes and are not modelled");
        }
      else if (!in (quiet, k))
        ignore (r, key);
    }
  return TRUE;
}

static gboolean
read_optimizer (const Reader *r, JsonObject *o, GError **error)
{
  JsonNode *t = json_object_get_member (o, "type");
  if (t != NULL && !is_auto (t))
    {
      if (!JSON_NODE_HOLDS_VALUE (t) || json_node_get_value_type (t) != G_TYPE_STRING)
        return fail (r, error, "optimizer.type", "must be a string");
      const char *v = json_node_get_string (t);
      if (g_ascii_strcasecmp (v, "adam") != 0 && g_ascii_strcasecmp (v, "adamw") != 0)
        return fail (r, error, "optimizer.type", "'%s' is not modelled (Adam and AdamW are; "
                     "set [training] optimizer for the others)", v);
    }
  return TRUE;
}

/* communication_data_type (deepspeed/runtime/config.py get_communication_data_type): a
 * string fp32, fp16 or bf16 in any case, or null (the engine's default: fp16 or bf16 when
 * enabled, else fp32, engine.py communication_data_type); "auto" leaves it unset too. */
static gboolean
read_comm_dtype (const Reader *r, JsonNode *n, const char *key, gint *out, GError **error)
{
  if (JSON_NODE_HOLDS_NULL (n) || is_auto (n))
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return fail (r, error, key, "must be a string: fp32, fp16 or bf16");
  const char *v = json_node_get_string (n);
  static const struct { const char *name; HwDtype dtype; } dtypes[] = {
    { "fp32", HW_DTYPE_FP32 }, { "fp16", HW_DTYPE_FP16 }, { "bf16", HW_DTYPE_BF16 },
  };
  for (guint i = 0; i < G_N_ELEMENTS (dtypes); i++)
    if (g_ascii_strcasecmp (v, dtypes[i].name) == 0)
      {
        *out = (gint) dtypes[i].dtype;
        return TRUE;
      }
  g_autofree char *shown = sim_text_printable (v, 64);
  return fail (r, error, key, "'%s' is not one of DeepSpeed's fp32, fp16 or bf16", shown);
}

static gboolean
read_root (const Reader *r, JsonObject *root, GError **error)
{
  ModelDsConfig *c = r->out;
  static const char *const quiet[] = {
    "scheduler", "gradient_clipping", "steps_per_print",
    "wall_clock_breakdown", "prescale_gradients", "gradient_predivide_factor",
    "zero_force_ds_cpu_optimizer", "dump_state",
    "flops_profiler", "tensorboard", "wandb", "csv_monitor", "comms_logger", "comet",
    "memory_breakdown", "checkpoint", "aio", "monitor_config", "seed", "disable_allgather",
    "sparse_gradients", "timers", NULL,
  };
  static const struct { const char *key; const char *what; } unmodelled[] = {
    { "amp", "Apex AMP" },
    { "pipeline", "DeepSpeed pipeline parallelism" },
    { "sparse_attention", "sparse attention" },
    { "compression_training", "compression training" },
    { "data_types", "data_types (e.g. grad_accum_dtype: the gradient accumulation dtype)" },
    { "elasticity", "elastic batch sizes" },
    { "curriculum_learning", "curriculum learning (the sequence length changes)" },
    { "data_efficiency", "data efficiency (curriculum, token dropping)" },
  };
  g_autoptr (GList) members = json_object_get_members (root);
  for (GList *m = members; m != NULL; m = m->next)
    {
      const char *k = m->data;
      JsonNode *n = json_object_get_member (root, k);
      gboolean refused = FALSE;
      for (guint i = 0; i < G_N_ELEMENTS (unmodelled); i++)
        if (strcmp (k, unmodelled[i].key) == 0)
          refused = TRUE, fail (r, error, k, "%s changes memory or time and is not modelled",
                                unmodelled[i].what);
      if (refused)
        return FALSE;
      JsonObject *o;
      if (strcmp (k, "zero_optimization") == 0)
        {
          if ((o = object_of (r, n, k, error)) == NULL || !read_zero (r, o, error))
            return FALSE;
        }
      else if (strcmp (k, "fp16") == 0 || strcmp (k, "bf16") == 0)
        {
          if ((o = object_of (r, n, k, error)) == NULL
              || !read_precision (r, o, k, k[0] == 'f' ? &c->fp16 : &c->bf16, error))
            return FALSE;
        }
      else if (strcmp (k, "optimizer") == 0)
        {
          if ((o = object_of (r, n, k, error)) == NULL || !read_optimizer (r, o, error))
            return FALSE;
        }
      else if (strcmp (k, "gradient_accumulation_steps") == 0)
        {
          if (!read_int (r, n, k, 1, MODEL_STACK_MAX_GRAD_ACCUM, &c->grad_accum, error))
            return FALSE;
        }
      else if (strcmp (k, "train_micro_batch_size_per_gpu") == 0)
        {
          if (!read_int (r, n, k, 1, G_MAXINT32, &c->micro_batch, error))
            return FALSE;
        }
      else if (strcmp (k, "zero_allow_untested_optimizer") == 0)
        {
          if (!read_bool (r, n, k, &c->allow_untested, error))
            return FALSE;
        }
      else if (strcmp (k, "communication_data_type") == 0)
        {
          if (!read_comm_dtype (r, n, k, &c->comm_dtype, error))
            return FALSE;
        }
      else if (strcmp (k, "train_batch_size") == 0)
        {
          if (!read_int (r, n, k, 1, G_MAXINT32, &c->train_batch, error))
            return FALSE;
        }
      else if (strcmp (k, "activation_checkpointing") == 0)
        {
          /* deepspeed.checkpointing's options: partitioning or CPU checkpoints change memory */
          if ((o = object_of (r, n, k, error)) == NULL)
            return FALSE;
          const char *const on[] = { "partition_activations", "cpu_checkpointing",
                                     "contiguous_memory_optimization" };
          for (guint i = 0; i < G_N_ELEMENTS (on); i++)
            {
              JsonNode *v = json_object_get_member (o, on[i]);
              if (v != NULL && truthy (v, 0))
                {
                  g_autofree char *key = g_strdup_printf ("%s.%s", k, on[i]);
                  return fail (r, error, key, "DeepSpeed activation partitioning / CPU "
                               "checkpointing is not modelled (use [training] checkpointing "
                               "and [offload] activations)");
                }
            }
        }
      else if (!in (quiet, k))
        ignore (r, k);
    }
  return TRUE;
}

gboolean
model_ds_config_load (const char *path, ModelDsConfig *out, GError **error)
{
  g_return_val_if_fail (path != NULL && out != NULL, FALSE);
  *out = (ModelDsConfig){
    .stage = MODEL_DS_UNSET, .reduce_bucket = NAN, .allgather_bucket = NAN,
    .prefetch_bucket = NAN, .persistence = NAN, .max_live = NAN,
    .overlap_comm = MODEL_DS_UNSET, .contiguous_gradients = MODEL_DS_UNSET,
    .offload_optimizer = MODEL_DS_UNSET, .offload_param = MODEL_DS_UNSET,
    .pin_memory = MODEL_DS_UNSET, .fp16 = MODEL_DS_UNSET, .bf16 = MODEL_DS_UNSET,
    .grad_accum = MODEL_DS_UNSET, .micro_batch = MODEL_DS_UNSET, .comm_dtype = MODEL_DS_UNSET,
    .allow_untested = MODEL_DS_UNSET,
    .train_batch = MODEL_DS_UNSET,
    .ignored = g_ptr_array_new_with_free_func (g_free),
  };
  Reader r = { .path = path, .out = out };
  g_autofree char *text = NULL;
  GError *e = NULL;
  /* a regular file of sane size: /dev/zero or a FIFO would never end */
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    {
      /* worded as a scenario file that cannot be opened (cli/scenario/input.c) */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: cannot open: %s", path, g_strerror (errno));
      model_ds_config_clear (out);
      return FALSE;
    }
  if (!S_ISREG (st.st_mode) || st.st_size > DS_CONFIG_MAX_BYTES)
    {
      if (!S_ISREG (st.st_mode))
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "%s: is %s, not a DeepSpeed JSON file", path,
                     sim_text_file_kind (st.st_mode));
      else
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "%s: larger than %d MiB, not a DeepSpeed JSON file", path,
                     DS_CONFIG_MAX_BYTES >> 20);
      model_ds_config_clear (out);
      return FALSE;
    }
  if (!sim_text_read_file (path, &text, NULL, &e))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "%s", e->message);
      g_error_free (e);
      model_ds_config_clear (out);
      return FALSE;
    }
  if (model_json_depth (text) > MODEL_JSON_MAX_DEPTH)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: not valid JSON: arrays and objects nested deeper than %d levels", path,
                   MODEL_JSON_MAX_DEPTH);
      model_ds_config_clear (out);
      return FALSE;
    }
  gssize nul = model_json_escaped_nul (text);
  if (nul >= 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: an escaped NUL (\\u0000) at offset %" G_GSSIZE_FORMAT " would cut its "
                   "name or value short there", path, nul);
      model_ds_config_clear (out);
      return FALSE;
    }
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autofree char *dup_path = NULL;
  gboolean parsed = model_json_load_unique (parser, text, &dup_path, &e);
  if (!parsed)
    {
      /* json-glib says "<data>:LINE:COL: …" (QA: "<data>:1:34" named no file) */
      guint line, col;
      int at = 0;
      if (sscanf (e->message, "<data>:%u:%u: %n", &line, &col, &at) == 2 && at > 0)
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "%s: not valid JSON at line %u, column %u: %s", path, line, col,
                     e->message + at);
      else
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "%s: not valid JSON: %s", path, e->message);
      g_error_free (e);
      model_ds_config_clear (out);
      return FALSE;
    }
  JsonNode *root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: a ds_config must be a JSON object", path);
      model_ds_config_clear (out);
      return FALSE;
    }
  if (dup_path != NULL)
    {
      /* JSON parsers, DeepSpeed's json.load too, keep the last silently */
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "%s: key '%s' appears twice (JSON parsers keep the last silently; give it "
                   "once)", path, dup_path);
      model_ds_config_clear (out);
      return FALSE;
    }
  if (!read_root (&r, json_node_get_object (root), error))
    {
      model_ds_config_clear (out);
      return FALSE;
    }
  return TRUE;
}

void
model_ds_config_clear (ModelDsConfig *c)
{
  if (c != NULL && c->ignored != NULL)
    g_ptr_array_unref (g_steal_pointer (&c->ignored));
}
