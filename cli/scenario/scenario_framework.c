/* cli/scenario/scenario_framework.c — [training] framework, its per-key overrides and
 * [training] deepspeed_config (models/stack/framework.h, models/stack/ds_config.h).
 *
 *   framework = custom | hf_trainer | accelerate_fsdp | torchtune | torchtitan | megatron |
 *               deepspeed | nanotron          profile defaults (default custom), applied
 *                                             before any other [training] key is read
 *   deepspeed_config = PATH                   a ds_config.json (relative to the scenario's
 *                                             folder): its values replace the profile's
 *   main_grad_fp32, optimizer_in_backward, activation_offload = true|false
 *   host_op_time, host_backward_op_time = TIME   host time per PyTorch op (0 … 10 ms)
 *   host_sync_micro_batch = true|false        the host waits for each micro-batch
 *   optimizer_impl = per_tensor | foreach | fused | cpu_adam
 *   fsdp_end_units = true|false               the embedding and the head FSDP units of
 *                                             their own (torchtitan; torchtune's
 *                                             custom_sharded_layers), not the root's
 *   fsdp_version = 1 | 2                      FSDP1 (FlatParameter: the optimizer steps
 *                                             1-D shard views) or FSDP2 (fully_shard)
 *   rope_table = none | max_positions | seq_len | per_layer
 *                                             the rotary table as a GPU buffer over the
 *                                             model's max_position_embeddings (torchtune),
 *                                             the training seq_len (torchtitan before
 *                                             2026-06), one over seq_len in each attention
 *                                             layer (torchtitan since), or computed in
 *                                             each forward (none: HF)
 *   optimizer_foreach = true|false            the older spelling: foreach | per_tensor
 *   reduce_bucket_size, allgather_bucket_size, stage3_prefetch_bucket_size,
 *   stage3_param_persistence_threshold, stage3_max_live_parameters = ELEMENTS
 *                                             DeepSpeed's sizes, in elements (5e8 allowed)
 *
 * Order: profile < ds_config < the explicit key. A ds_config value and the scenario's own
 * key for the same quantity (micro_batch, grad_accum, precision, [parallel] data_parallel
 * and reduce_dtype (communication_data_type),
 * [offload] optimizer/parameters/pin_memory, a bucket size) must agree; "auto" takes the
 * scenario's. train_batch_size must be micro_batch × grad_accum × data-parallel ranks
 * (GPUs / (tp · cp · pp)), or gives the GA
 * when neither side does (DeepSpeed's config.py). Errors name the group and key (the caller prefixes the file).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

#include <math.h>
#include <string.h>

static gboolean
has (GKeyFile *kf, const char *key)
{
  return g_key_file_has_key (kf, "training", key, NULL);
}

static gboolean
get_bool (GKeyFile *kf, const char *key, gboolean *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "training", key, FALSE, NULL);
  if (v != NULL && !sim_units_parse_bool (v, out, error))
    return PREFIX_KEY (error, "training", key), FALSE;
  return TRUE;
}

/* A host time per op: a time with its unit, from 0 (CUDA graphs: no host work per op) to
 * MODEL_FRAMEWORK_MAX_HOST_OP_TIME. */
static gboolean
get_host_time (GKeyFile *kf, const char *key, double *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "training", key, FALSE, NULL);
  if (v == NULL)
    return TRUE;
  double x;
  if (!sim_units_parse (v, SIM_DIM_TIME, &x, error))
    return PREFIX_KEY (error, "training", key), FALSE;
  if (!(x >= 0 && x <= MODEL_FRAMEWORK_MAX_HOST_OP_TIME))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key '%s': '%s' is not a host time per op from 0 to "
                   "10 ms", key, v);
      return FALSE;
    }
  *out = x;
  return TRUE;
}

/* A whole number of elements in [0, MODEL_FRAMEWORK_MAX_ELEMENTS] ("5e8" or "500000000"). */
static gboolean
get_elements (GKeyFile *kf, const char *key, double *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, "training", key, FALSE, NULL);
  if (v == NULL)
    return TRUE;
  char *end = NULL;
  double x = g_ascii_strtod (v, &end);
  if (end == v || *end != '\0' || !isfinite (x) || x < 0 || x != floor (x)
      || x > MODEL_FRAMEWORK_MAX_ELEMENTS)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key '%s': '%s' is not a whole number of elements from 0 "
                   "to 2^40 (DeepSpeed counts elements, e.g. 5e8)", key, v);
      return FALSE;
    }
  *out = x;
  return TRUE;
}

/* One DeepSpeed size: the ds_config's (unless absent or "auto": then `auto_value`, NAN for
 * none) replaces the profile's; the scenario's key must not say something else too. */
static gboolean
ds_size (GKeyFile *kf, const CliScenario *sc, const char *key, double ds, gboolean is_auto,
         double auto_value, double *field, GError **error)
{
  double v = !isnan (ds) ? ds : is_auto ? auto_value : NAN;
  if (isnan (v))
    return TRUE;
  if (has (kf, key))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key '%s': also set by deepspeed_config %s "
                   "(zero_optimization.%s); give it in one place", key, sc->ds_path, key);
      return FALSE;
    }
  *field = v;
  return TRUE;
}

char *
cli_scenario_resolve_path (const char *value, const char *scenario_path)
{
  if (g_path_is_absolute (value))
    return g_strdup (value);
  g_autofree char *dir = g_path_get_dirname (scenario_path);
  return g_build_filename (dir, value, NULL);
}

/* The ds_config's ZeRO sizes into the framework (HF's "auto" values from the hidden size). */
static gboolean
apply_ds_sizes (GKeyFile *kf, CliScenario *sc, GError **error)
{
  const ModelDsConfig *d = &sc->ds;
  ModelFramework *fw = &sc->stack.framework;
  double h = (double) sc->arch->hidden_size;
  /* contiguous_gradients = false: no flat reduce bucket is allocated (stage_1_and_2.py) */
  double reduce = d->contiguous_gradients == 0 ? 0 : d->reduce_bucket;
  if (!ds_size (kf, sc, "reduce_bucket_size", reduce, d->reduce_bucket_auto, h * h,
                &fw->reduce_bucket_elements, error)
      || !ds_size (kf, sc, "allgather_bucket_size", d->allgather_bucket, FALSE, NAN,
                   &fw->allgather_bucket_elements, error)
      || !ds_size (kf, sc, "stage3_prefetch_bucket_size", d->prefetch_bucket,
                   d->prefetch_bucket_auto, 0.9 * h * h, &fw->stage3_prefetch_bucket_elements,
                   error)
      || !ds_size (kf, sc, "stage3_param_persistence_threshold", d->persistence,
                   d->persistence_auto, 10 * h, &fw->stage3_param_persistence_threshold, error)
      || !ds_size (kf, sc, "stage3_max_live_parameters", d->max_live, FALSE, NAN,
                   &fw->stage3_max_live_parameters, error))
    return FALSE;
  if (d->overlap_comm >= 0)
    fw->ds_overlap_comm = d->overlap_comm == 1;
  return TRUE;
}

/* deepspeed_config under a profile whose framework never runs DeepSpeed's engine: a
 * contradiction, refused naming both keys. torchtune's recipes shard with FSDP2 and build
 * their own optimizer (recipes/full_finetune_distributed.py), torchtitan likewise
 * (torchtitan/distributed/), nanotron has its own ZeRO-1 (nanotron/optim/zero.py), and
 * Accelerate's FSDP and DeepSpeed plugins are exclusive (accelerate/state.py: one
 * distributed_type). DeepSpeed, the HF Trainer (--deepspeed), custom code and Megatron
 * (the Megatron-DeepSpeed fork) can; custom and megatron are warned about
 * (cli/scenario/scenario_warnings.c). */
static gboolean
ds_framework (ModelFrameworkKind kind, GError **error)
{
  if (kind != MODEL_FRAMEWORK_TORCHTUNE && kind != MODEL_FRAMEWORK_TORCHTITAN
      && kind != MODEL_FRAMEWORK_NANOTRON && kind != MODEL_FRAMEWORK_ACCELERATE_FSDP)
    return TRUE;
  const char *why = kind == MODEL_FRAMEWORK_ACCELERATE_FSDP
                      ? "Accelerate runs either its FSDP plugin or its DeepSpeed one"
                    : kind == MODEL_FRAMEWORK_NANOTRON
                      ? "nanotron shards with its own ZeRO-1, not DeepSpeed's engine"
                      : "its recipes shard with FSDP and build their own optimizer, never "
                        "DeepSpeed's engine";
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [training], key 'deepspeed_config': given with key 'framework' = %s, "
               "which does not run DeepSpeed (%s); remove one of the two, or use framework = "
               "deepspeed (or hf_trainer for the Trainer's --deepspeed)",
               model_framework_name (kind), why);
  return FALSE;
}

gboolean
cli_scenario_load_framework (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelFramework *fw = &sc->stack.framework;
  g_autofree char *name = cli_scenario_get_raw (kf, "training", "framework", FALSE, NULL);
  ModelFrameworkKind kind = MODEL_FRAMEWORK_CUSTOM;
  if (name != NULL && !model_framework_from_string (name, &kind, error))
    return PREFIX_KEY (error, "training", "framework"), FALSE;
  model_framework_apply_profile (fw, kind);

  g_autofree char *ds = cli_scenario_get_raw (kf, "training", "deepspeed_config", FALSE, NULL);
  if (ds != NULL && g_strstrip (ds)[0] == '\0')
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'deepspeed_config': the value is empty (give the "
                   "path of a ds_config.json, or remove the key)");
      return FALSE;
    }
  if (ds != NULL && !ds_framework (kind, error))
    return FALSE;
  if (ds != NULL)
    {
      /* a ds_config means DeepSpeed's engine runs, whatever the profile: its ZeRO sizes
       * default as DeepSpeed's (zero/config.py), before the file's own */
      if (kind != MODEL_FRAMEWORK_DEEPSPEED)
        {
          ModelFramework d;
          model_framework_apply_profile (&d, MODEL_FRAMEWORK_DEEPSPEED);
          fw->reduce_bucket_elements = d.reduce_bucket_elements;
          fw->allgather_bucket_elements = d.allgather_bucket_elements;
          fw->stage3_prefetch_bucket_elements = d.stage3_prefetch_bucket_elements;
          fw->stage3_param_persistence_threshold = d.stage3_param_persistence_threshold;
          fw->stage3_max_live_parameters = d.stage3_max_live_parameters;
          fw->ds_overlap_comm = d.ds_overlap_comm;
        }
      fw->deepspeed_engine = TRUE;
      sc->ds_path = cli_scenario_resolve_path (ds, sc->path);
      if (!model_ds_config_load (sc->ds_path, &sc->ds, error))
        return PREFIX_KEY (error, "training", "deepspeed_config"), FALSE;
      sc->has_ds = TRUE;
      if (!apply_ds_sizes (kf, sc, error))
        return FALSE;
    }

  /* the explicit keys */
  if (has (kf, "optimizer_foreach") && has (kf, "optimizer_impl"))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'optimizer_foreach': the older spelling of "
                   "optimizer_impl (foreach | per_tensor); give only optimizer_impl");
      return FALSE;
    }
  gboolean foreach = TRUE;
  if (has (kf, "optimizer_foreach"))
    {
      if (!get_bool (kf, "optimizer_foreach", &foreach, error))
        return FALSE;
      fw->optimizer_impl = foreach ? MODEL_OPTIMIZER_IMPL_FOREACH
                                   : MODEL_OPTIMIZER_IMPL_PER_TENSOR;
    }
  g_autofree char *impl = cli_scenario_get_raw (kf, "training", "optimizer_impl", FALSE, NULL);
  if (impl != NULL && !model_framework_optimizer_impl_from_string (impl, &fw->optimizer_impl,
                                                                   error))
    return PREFIX_KEY (error, "training", "optimizer_impl"), FALSE;
  if (has (kf, "fsdp_version"))
    {
      guint64 version = 0;
      if (!cli_scenario_get_count (kf, "training", "fsdp_version", TRUE, 2, &version, error))
        return FALSE;
      fw->fsdp2 = version == 2; /* the count is in [1, 2] */
    }
  g_autofree char *rope = cli_scenario_get_raw (kf, "training", "rope_table", FALSE, NULL);
  if (rope != NULL && !model_framework_rope_table_from_string (rope, &fw->rope_table, error))
    return PREFIX_KEY (error, "training", "rope_table"), FALSE;
  return get_bool (kf, "main_grad_fp32", &fw->main_grad_fp32, error)
         && get_host_time (kf, "host_op_time", &fw->host_op_time, error)
         && get_host_time (kf, "host_backward_op_time", &fw->host_backward_op_time, error)
         && get_bool (kf, "host_sync_micro_batch", &fw->host_sync_micro_batch, error)
         && get_bool (kf, "fsdp_end_units", &fw->fsdp_end_units, error)
         && get_bool (kf, "optimizer_in_backward", &fw->optimizer_in_backward, error)
         && get_bool (kf, "activation_offload", &fw->activation_offload, error)
         && get_elements (kf, "reduce_bucket_size", &fw->reduce_bucket_elements, error)
         && get_elements (kf, "allgather_bucket_size", &fw->allgather_bucket_elements, error)
         && get_elements (kf, "stage3_prefetch_bucket_size",
                          &fw->stage3_prefetch_bucket_elements, error)
         && get_elements (kf, "stage3_param_persistence_threshold",
                          &fw->stage3_param_persistence_threshold, error)
         && get_elements (kf, "stage3_max_live_parameters", &fw->stage3_max_live_parameters,
                          error);
}

/* A ds_config value against the scenario's own key for it: "auto" or absent in the
 * ds_config keeps the scenario's; an absent scenario key takes the ds_config's; both given
 * must agree. */
static gboolean
conflict (GError **error, const CliScenario *sc, const char *group, const char *key,
          const char *ds_key, const char *ds_value, const char *ours)
{
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [%s], key '%s': %s, but deepspeed_config %s says %s = %s", group, key,
               ours, sc->ds_path, ds_key, ds_value);
  return FALSE;
}

/* train_batch_size against micro × GA × the data-parallel world, GPUs / (tp · cp · pp): the
 * world DeepSpeed's config reads from the model-parallel unit it is given
 * (mpu.get_data_parallel_world_size(), Megatron-DeepSpeed's, the pipeline engine's grid), as
 * each tp, cp or pp group trains one micro-batch. DeepSpeed asserts train_batch == micro × GA ×
 * world when all three are given, and
 * derives GA = train_batch / (micro × world) when GA is not (deepspeed/runtime/config.py
 * _set_batch_related_parameters, _batch_assertion); the micro batch is always given here
 * ([training] micro_batch is required). */
static gboolean
train_batch (GKeyFile *kf, CliScenario *sc, GError **error)
{
  const ModelDsConfig *d = &sc->ds;
  ModelStack *s = &sc->stack;
  guint64 tb = (guint64) d->train_batch, world = model_parallel_dp_degree (&sc->par);
  guint64 per_step = s->micro_batch * world;
  gboolean ga_given = d->grad_accum >= 1 || has (kf, "grad_accum");
  if (!ga_given && tb % per_step == 0 && tb / per_step >= 1
      && tb / per_step <= CLI_SCENARIO_MAX_GRAD_ACCUM)
    {
      s->grad_accum = tb / per_step;
      return TRUE;
    }
  if (ga_given && tb == per_step * s->grad_accum)
    return TRUE;
  if (ga_given)
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "group [training], key 'deepspeed_config': %s: key 'train_batch_size' is %"
                 G_GUINT64_FORMAT ", but micro_batch %" G_GUINT64_FORMAT " × grad_accum %"
                 G_GUINT64_FORMAT " × %" G_GUINT64_FORMAT " data-parallel ranks = %"
                 G_GUINT64_FORMAT " (DeepSpeed asserts they are equal)", sc->ds_path, tb,
                 s->micro_batch, s->grad_accum, world, per_step * s->grad_accum);
  else
    g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                 "group [training], key 'deepspeed_config': %s: key 'train_batch_size' is %"
                 G_GUINT64_FORMAT ", not a multiple of micro_batch %" G_GUINT64_FORMAT " × %"
                 G_GUINT64_FORMAT " data-parallel ranks = %" G_GUINT64_FORMAT " giving at most "
                 "%d accumulation steps (DeepSpeed derives gradient_accumulation_steps = "
                 "train_batch_size / (micro × ranks))", sc->ds_path, tb, s->micro_batch, world,
                 per_step, CLI_SCENARIO_MAX_GRAD_ACCUM);
  return FALSE;
}

/* fp16.enabled → fp16 with an fp32 master, bf16.enabled → bf16 with an fp32 master (ZeRO's
 * fp32 partitions, deepspeed/runtime/zero/stage_1_and_2.py single_partition_of_fp32_groups);
 * neither → fp32 (DeepSpeed's default). "auto" is the Hugging Face integration's placeholder
 * for the Trainer's own --fp16/--bf16 (transformers integrations/deepspeed.py
 * trainer_config_process fills it): the scenario's precision, which must then be given; an
 * explicit false still contradicts the scenario's mixed precision of that dtype, and the
 * other block explicitly true any precision but its own. */
static gboolean
late_precision (GKeyFile *kf, CliScenario *sc, GError **error)
{
  const ModelDsConfig *d = &sc->ds;
  ModelStack *s = &sc->stack;
  if (d->fp16 == 1 && d->bf16 == 1)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'deepspeed_config': %s: keys 'fp16.enabled' and "
                   "'bf16.enabled' are both true", sc->ds_path);
      return FALSE;
    }
  gboolean given = has (kf, "precision");
  if (d->fp16 == MODEL_DS_AUTO || d->bf16 == MODEL_DS_AUTO)
    {
      const char *ds_key = d->fp16 == MODEL_DS_AUTO ? "fp16.enabled" : "bf16.enabled";
      if (!given)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_KEY_NOT_FOUND,
                       "group [training], key 'precision': required key is missing "
                       "(deepspeed_config %s says %s = \"auto\", which takes the scenario's "
                       "precision)", sc->ds_path, ds_key);
          return FALSE;
        }
      /* the other block explicitly true: the scenario's precision must be that one */
      if (d->fp16 == 1 && s->precision != MODEL_PRECISION_FP16_MIXED)
        return conflict (error, sc, "training", "precision", "fp16.enabled", "true",
                         model_stack_precision_name (s->precision));
      if (d->bf16 == 1 && s->precision != MODEL_PRECISION_BF16_MIXED)
        return conflict (error, sc, "training", "precision", "bf16.enabled", "true",
                         model_stack_precision_name (s->precision));
      if (d->fp16 == 0 && s->precision == MODEL_PRECISION_FP16_MIXED)
        return conflict (error, sc, "training", "precision", "fp16.enabled", "false",
                         model_stack_precision_name (s->precision));
      if (d->bf16 == 0 && s->precision == MODEL_PRECISION_BF16_MIXED)
        return conflict (error, sc, "training", "precision", "bf16.enabled", "false",
                         model_stack_precision_name (s->precision));
      return TRUE;
    }
  ModelPrecision p = d->fp16 == 1   ? MODEL_PRECISION_FP16_MIXED
                     : d->bf16 == 1 ? MODEL_PRECISION_BF16_MIXED
                                    : MODEL_PRECISION_FP32;
  if (!given)
    s->precision = p;
  else if (s->precision != p && p != MODEL_PRECISION_FP32)
    return conflict (error, sc, "training", "precision", d->fp16 == 1 ? "fp16.enabled"
                     : "bf16.enabled", "true", model_stack_precision_name (s->precision));
  else if (s->precision != p)
    {
      /* name only the keys the file has: neither block means DeepSpeed's fp32 default */
      const char *said = d->fp16 == 0 && d->bf16 == 0 ? "fp16.enabled = false and "
                                                        "bf16.enabled = false"
                         : d->fp16 == 0 ? "fp16.enabled = false and no bf16 block"
                         : d->bf16 == 0 ? "bf16.enabled = false and no fp16 block"
                                        : "no fp16 or bf16 block";
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'precision': %s, but deepspeed_config %s has %s "
                   "(fp32, DeepSpeed's default); enable the fp16 or bf16 block, or make it "
                   "\"auto\"", model_stack_precision_name (s->precision), sc->ds_path, said);
      return FALSE;
    }
  return TRUE;
}

static gboolean
late_batch (GKeyFile *kf, CliScenario *sc, GError **error)
{
  const ModelDsConfig *d = &sc->ds;
  ModelStack *s = &sc->stack;
  if (d->micro_batch >= 1 && (guint64) d->micro_batch != s->micro_batch)
    {
      g_autofree char *v = g_strdup_printf ("%" G_GINT64_FORMAT, d->micro_batch);
      g_autofree char *o = g_strdup_printf ("%" G_GUINT64_FORMAT, s->micro_batch);
      return conflict (error, sc, "training", "micro_batch", "train_micro_batch_size_per_gpu",
                       v, o);
    }
  if (d->grad_accum >= 1)
    {
      if (!has (kf, "grad_accum"))
        s->grad_accum = (guint64) d->grad_accum;
      else if ((guint64) d->grad_accum != s->grad_accum)
        {
          g_autofree char *v = g_strdup_printf ("%" G_GINT64_FORMAT, d->grad_accum);
          g_autofree char *o = g_strdup_printf ("%" G_GUINT64_FORMAT, s->grad_accum);
          return conflict (error, sc, "training", "grad_accum", "gradient_accumulation_steps",
                           v, o);
        }
    }
  if (d->train_batch >= 1 && !train_batch (kf, sc, error))
    return FALSE;
  return late_precision (kf, sc, error);
}

static gboolean
late_stage (GKeyFile *kf, CliScenario *sc, GError **error)
{
  const ModelDsConfig *d = &sc->ds;
  if (d->stage < 0)
    return TRUE;
  static const ModelDataParallel modes[] = { MODEL_DP_DDP, MODEL_DP_ZERO1, MODEL_DP_ZERO2,
                                             MODEL_DP_ZERO3 };
  ModelDataParallel m = modes[d->stage];
  if (!g_key_file_has_key (kf, "parallel", "data_parallel", NULL))
    sc->par.mode = m;
  else if (sc->par.mode != m)
    {
      g_autofree char *v = g_strdup_printf ("%d (%s)", d->stage, model_parallel_mode_name (m));
      return conflict (error, sc, "parallel", "data_parallel", "zero_optimization.stage", v,
                       model_parallel_mode_name (sc->par.mode));
    }
  return TRUE;
}

/* communication_data_type: the dtype DeepSpeed's engine reduces gradients in, stepsim's
 * [parallel] reduce_dtype (engine.py allreduce_bucket / the ZeRO optimizers'
 * communication_data_type: tensor.to(dtype) before the collective). */
static gboolean
late_comm_dtype (GKeyFile *kf, CliScenario *sc, GError **error)
{
  gint ds = sc->ds.comm_dtype;
  if (ds < 0)
    return TRUE;
  if (!g_key_file_has_key (kf, "parallel", "reduce_dtype", NULL))
    {
      sc->par.reduce_dtype = (HwDtype) ds;
      sc->par.reduce_dtype_set = TRUE;
      return TRUE;
    }
  if (sc->par.reduce_dtype != (HwDtype) ds)
    return conflict (error, sc, "parallel", "reduce_dtype", "communication_data_type",
                     hw_dtype_name ((HwDtype) ds), hw_dtype_name (sc->par.reduce_dtype));
  return TRUE;
}

static gboolean
late_offload_target (GKeyFile *kf, CliScenario *sc, const char *key, const char *ds_key,
                     gint ds, ModelOffloadTarget *field, GError **error)
{
  if (ds < 0)
    return TRUE;
  if (!g_key_file_has_key (kf, "offload", key, NULL))
    *field = (ModelOffloadTarget) ds;
  else if (*field != (ModelOffloadTarget) ds)
    return conflict (error, sc, "offload", key, ds_key,
                     model_offload_target_name ((ModelOffloadTarget) ds),
                     model_offload_target_name (*field));
  return TRUE;
}

/* A ds_config's offload_optimizer where gradients are not sharded as they accumulate
 * (ZeRO stage 0 or 1). DeepSpeed runs stage 1 with it (stage 1 and 2 are one class,
 * deepspeed/runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer: full gradients stay on the
 * GPU until the accumulation boundary, then each rank's partition is copied to the CPU);
 * the plan models the offloaded step only over sharded gradients (models/memory/offload.c
 * model_offload_validate), so it is refused here naming the ds_config's key, not with
 * [offload]'s message for a key the scenario does not have. */
static gboolean
ds_offload_stage (const CliScenario *sc, GError **error)
{
  const ModelDsConfig *d = &sc->ds;
  if (d->offload_optimizer <= MODEL_OFFLOAD_NONE || sc->par.degree < 1
      || model_parallel_state_sharded (&sc->par, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE))
    return TRUE;
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [training], key 'deepspeed_config': %s: key "
               "'zero_optimization.offload_optimizer': device %s with %s (gradients not "
               "sharded) is not modelled: DeepSpeed runs it (stage 1 keeps whole gradients on "
               "the GPU until the step), stepsim's offloaded step needs them sharded; use "
               "zero_optimization.stage 2 (the same DeepSpeed optimizer, gradients partitioned)",
               sc->ds_path, model_offload_target_name ((ModelOffloadTarget) d->offload_optimizer),
               model_parallel_mode_name (sc->par.mode));
  return FALSE;
}

gboolean
cli_scenario_load_framework_late (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelStack *s = &sc->stack;
  ModelFramework *fw = &s->framework;
  if (sc->has_ds)
    {
      const ModelDsConfig *d = &sc->ds;
      if (!late_batch (kf, sc, error) || !late_stage (kf, sc, error)
          || !late_comm_dtype (kf, sc, error)
          || !late_offload_target (kf, sc, "optimizer", "zero_optimization.offload_optimizer."
                                   "device", d->offload_optimizer, &s->offload.optimizer, error)
          || !late_offload_target (kf, sc, "parameters", "zero_optimization.offload_param."
                                   "device", d->offload_param, &s->offload.parameters, error)
          || !ds_offload_stage (sc, error))
        return FALSE;
      if (d->pin_memory >= 0)
        {
          if (!g_key_file_has_key (kf, "offload", "pin_memory", NULL))
            s->offload.pageable = d->pin_memory == 0;
          else if (s->offload.pageable != (d->pin_memory == 0))
            return conflict (error, sc, "offload", "pin_memory",
                             "zero_optimization.offload_*.pin_memory",
                             d->pin_memory ? "true" : "false", s->offload.pageable ? "false"
                                                                                 : "true");
        }
    }
  /* DeepSpeed's engine shards by ZeRO stage (deepspeed.initialize wraps the model in its
   * own engine, not PyTorch's FSDP): an fsdp_* mode under it is a contradiction, refused as
   * a deepspeed_config is under the frameworks that run no DeepSpeed engine */
  gboolean fsdp = sc->par.mode == MODEL_DP_FSDP_FULL_SHARD
                  || sc->par.mode == MODEL_DP_FSDP_SHARD_GRAD_OP
                  || sc->par.mode == MODEL_DP_FSDP_NO_SHARD
                  || sc->par.mode == MODEL_DP_FSDP_HYBRID_SHARD;
  if (fw->deepspeed_engine && fsdp)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'data_parallel': %s is PyTorch's FSDP, which the "
                   "DeepSpeed engine (%s) does not run; use ddp, zero1, zero2 or zero3",
                   model_parallel_mode_name (sc->par.mode),
                   sc->has_ds ? "[training] deepspeed_config" : "[training] framework = "
                                                                "deepspeed");
      return FALSE;
    }
  /* The frameworks that shard with PyTorch's FSDP (torchtune's and torchtitan's FSDP2,
   * accelerate's FSDP plugin) run none of DeepSpeed's ZeRO stages, whose buckets, prefetch
   * and persistence the zero* modes model: the same contradiction the other way round */
  gboolean fsdp_framework = fw->kind == MODEL_FRAMEWORK_TORCHTUNE
                            || fw->kind == MODEL_FRAMEWORK_TORCHTITAN
                            || fw->kind == MODEL_FRAMEWORK_ACCELERATE_FSDP;
  if (fsdp_framework && !sc->has_ds && model_parallel_is_zero (sc->par.mode))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'data_parallel': %s is DeepSpeed's ZeRO, which %s "
                   "does not run (it shards with PyTorch's FSDP); use ddp, fsdp_full_shard, "
                   "fsdp_shard_grad_op, fsdp_hybrid_shard or fsdp_no_shard",
                   model_parallel_mode_name (sc->par.mode), model_framework_name (fw->kind));
      return FALSE;
    }
  /* An offloaded optimizer steps on the host with DeepSpeed's CPU-Adam (ZeRO-Offload §4.2),
   * whose states are fp32 (csrc/adam/cpu_adam_impl.cpp): bitsandbytes' 8-bit optimizers
   * run on the GPU only, and DeepSpeed has no 8-bit host optimizer (the others are warned
   * about: scenario_warnings.c) */
  if (s->offload.optimizer != MODEL_OFFLOAD_NONE
      && (s->optimizer == MODEL_OPTIMIZER_ADAMW_8BIT
          || s->optimizer == MODEL_OPTIMIZER_PAGED_ADAMW_8BIT))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'optimizer': %s with [offload] optimizer = %s: the "
                   "step runs on the host with DeepSpeed's CPU-Adam and fp32 states, and "
                   "bitsandbytes keeps its 8-bit states on the GPU: use adamw, or no offload",
                   model_stack_optimizer_name (s->optimizer),
                   model_offload_target_name (s->offload.optimizer));
      return FALSE;
    }
  if (s->offload.optimizer != MODEL_OFFLOAD_NONE)
    {
      if (!has (kf, "optimizer_impl"))
        {
          if (s->optimizer == MODEL_OPTIMIZER_ADAMW)
            fw->optimizer_impl = MODEL_OPTIMIZER_IMPL_CPU_ADAM;
        }
      else if (fw->optimizer_impl != MODEL_OPTIMIZER_IMPL_CPU_ADAM)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [training], key 'optimizer_impl': with [offload] optimizer = %s "
                       "the step runs on the host CPU (DeepSpeedCPUAdam): cpu_adam, not %s",
                       model_offload_target_name (s->offload.optimizer),
                       model_framework_optimizer_impl_name (fw->optimizer_impl));
          return FALSE;
        }
    }
  if (fw->activation_offload && g_key_file_has_key (kf, "offload", "activations", NULL)
      && s->offload.activations == MODEL_OFFLOAD_NONE)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'activation_offload': true moves the saved "
                   "activations to host memory, but [offload] activations = none");
      return FALSE;
    }
  /* A profile's fp32 main_grad buffer (Megatron, nanotron) where gradients are sharded: say
   * it is the profile's, not a key the scenario wrote (model_stack_validate_framework would
   * name main_grad_fp32). */
  if (fw->main_grad_fp32 && !has (kf, "main_grad_fp32") && sc->par.degree > 1
      && model_parallel_state_sharded (&sc->par, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [training], key 'framework': %s keeps a full-size fp32 main_grad "
                   "buffer (main_grad_fp32 = true), not modelled with gradients sharded by "
                   "[parallel] data_parallel = %s; use zero1 (its distributed optimizer) or "
                   "set main_grad_fp32 = false", model_framework_name (fw->kind),
                   model_parallel_mode_name (sc->par.mode));
      return FALSE;
    }
  model_stack_resolve_framework (s);
  /* [parallel] prefetch (layers) or DeepSpeed's stage-3 prefetch bucket (elements): one */
  if (g_key_file_has_key (kf, "parallel", "prefetch", NULL)
      && !isnan (fw->stage3_prefetch_bucket_elements))
    {
      gboolean ours = has (kf, "stage3_prefetch_bucket_size")
                      || (sc->has_ds && !isnan (sc->ds.prefetch_bucket));
      if (ours)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key 'prefetch': the stage-3 prefetch is also given "
                       "in elements ([training] stage3_prefetch_bucket_size or the "
                       "deepspeed_config); give one");
          return FALSE;
        }
      /* the explicit layer count wins (the profile's budgets no longer cap it) */
      fw->stage3_prefetch_bucket_elements = fw->stage3_max_live_parameters = NAN;
    }
  return TRUE;
}
