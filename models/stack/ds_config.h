/* models/stack/ds_config.h — a DeepSpeed ds_config.json read for what stepsim models
 * ([training] deepspeed_config = path; json-glib).
 *
 * Read (DeepSpeed's names and units; sizes in elements, as deepspeed/runtime/zero/config.py
 * means them): zero_optimization.stage, reduce_bucket_size, allgather_bucket_size,
 * stage3_prefetch_bucket_size, stage3_param_persistence_threshold,
 * stage3_max_live_parameters, overlap_comm, contiguous_gradients, offload_optimizer.device,
 * offload_param.device (none | cpu | nvme), offload_*.pin_memory; fp16.enabled,
 * bf16.enabled; gradient_accumulation_steps; train_micro_batch_size_per_gpu;
 * train_batch_size (the caller checks DeepSpeed's train_batch_size == micro × GA × data-
 * parallel world, deepspeed/runtime/config.py _batch_assertion); optimizer.type;
 * communication_data_type (fp32 | fp16 | bf16, any case: config.py
 * get_communication_data_type; the dtype the engine's gradient reductions run in, the
 * caller's [parallel] reduce_dtype); zero_allow_untested_optimizer (a boolean: without it
 * DeepSpeed's engine stops on an optimizer that ZeRO has not been tested with, the caller
 * warns). Any of them may be "auto" (the Hugging Face integration's placeholder):
 * then the scenario's value stands — for the three bucket sizes HF's own values, from the
 * model's hidden size h: reduce_bucket_size h², stage3_prefetch_bucket_size 0.9 h²,
 * stage3_param_persistence_threshold 10 h (transformers integrations/deepspeed.py
 * HfTrainerDeepSpeedConfig.trainer_config_finalize).
 *
 * Keys stepsim does not model: those that change memory or time materially are an error
 * naming the file and key (zero_hpz_partition_size > 1, zero_quantized_weights,
 * zero_quantized_gradients, zero_quantized_nontrainable_weights, mics_shard_size > 0,
 * offload_optimizer.ratio < 1, activation_checkpointing partition/cpu checkpointing,
 * amp, pipeline, sparse_attention, compression_training, data_types,
 * elasticity, an optimizer.type other than Adam/AdamW); known keys without a material
 * effect here (logging, scheduler, clipping, loss-scale details, …) are accepted silently;
 * any other key is accepted and listed in `ignored` so the caller warns naming it.
 *
 * Ownership: a value struct whose `ignored` array (char *, "zero_optimization.foo") is owned;
 * model_ds_config_clear() frees it.
 */
#pragma once

#include <glib.h>
#include "hardware/gpu.h"
#include "models/memory/offload.h"

typedef enum
{
  MODEL_DS_UNSET = -1, /* absent from the file */
  MODEL_DS_AUTO = -2,  /* "auto": the scenario's value */
} ModelDsSpecial;

typedef struct
{
  gint stage;                      /* 0–3, or MODEL_DS_UNSET / MODEL_DS_AUTO */
  /* elements; NAN when absent or "auto" (then *_auto is TRUE) */
  double reduce_bucket, allgather_bucket, prefetch_bucket, persistence, max_live;
  gboolean reduce_bucket_auto, prefetch_bucket_auto, persistence_auto;
  gint overlap_comm;               /* 0/1, or MODEL_DS_UNSET / MODEL_DS_AUTO */
  gint contiguous_gradients;       /* 0/1, or unset/auto */
  gint offload_optimizer;          /* ModelOffloadTarget, or unset */
  gint offload_param;              /* ModelOffloadTarget, or unset */
  gint pin_memory;                 /* 0/1 (either offload block's), or unset */
  gint fp16, bf16;                 /* enabled: 0/1, or unset/auto */
  gint64 grad_accum;               /* >= 1, or unset/auto */
  gint64 micro_batch;              /* >= 1, or unset/auto */
  gint64 train_batch;              /* train_batch_size >= 1, or unset/auto */
  gint allow_untested;             /* zero_allow_untested_optimizer: 0/1, or unset/auto */
  gint comm_dtype;                 /* communication_data_type: an HwDtype (fp32, fp16, bf16),
                                    * or unset/auto (null: the engine's default, the model's
                                    * dtype) */
  GPtrArray *ignored;              /* char *, owned: keys not modelled, to warn about */
} ModelDsConfig;

/* Reads `path`. FALSE + an error "PATH: key 'K': …" (G_KEY_FILE_ERROR_INVALID_VALUE) for an
 * unreadable or malformed file (json-glib's line:column), a key given twice in one object
 * ("PATH: key 'zero_optimization.stage' appears twice": json-glib, like Python's json, would
 * keep the last silently), a value of the wrong type or range, or an unmodelled key that
 * matters (above). On success *out is filled (clear it after). */
gboolean model_ds_config_load (const char *path, ModelDsConfig *out, GError **error);
void model_ds_config_clear (ModelDsConfig *c);
