/* models/memory/offload.h — what a run offloads from the GPU, and the operations that move it.
 *
 * Three independent choices (DESIGN §4–5):
 *   optimizer   none | cpu | nvme   ZeRO-Offload (Ren et al. 2021, arXiv 2101.06840, §4):
 *               the fp32 master weights, the optimizer states and fp32 gradients live in
 *               host DRAM; gradients move device-to-host as the backward produces them
 *               (§4.1: the D2H overlaps the backward), the optimizer step runs on the host
 *               CPU (DeepSpeed CPU-Adam, §4.2), the updated 16-bit parameters move
 *               host-to-device after it (§4.1). `nvme` (ZeRO-Infinity, Rajbhandari et al.
 *               2021, arXiv 2104.07857, §5): master weights and optimizer states on NVMe,
 *               read into host swap buffers and written back once per step around the CPU
 *               step; gradients in host DRAM.
 *   parameters  none | cpu | nvme   ZeRO-3 parameter offload (ZeRO-Infinity §5): the 16-bit
 *               parameter shard lives in host DRAM (or on NVMe) and is copied to the GPU
 *               before each layer's all-gather; needs stage 3 and an offloaded optimizer.
 *   activations none | cpu          each layer's saved activations (under checkpointing, its
 *               checkpointed input) move D2H after the layer's forward and back H2D before
 *               its backward (DeepSpeed activation checkpointing's cpu_checkpointing;
 *               Rhu et al. 2016, vDNN, MICRO, §3 for the scheme).
 *   pin_memory  true | false        pinned host buffers (DeepSpeed's default); pageable
 *               copies run at HW_PAGEABLE_COPY_EFFICIENCY of the PCIe bandwidth.
 * DeepSpeed's one-step delayed parameter update (ZeRO-Offload §4.3, DPU) is NOT modelled:
 * the CPU step and the parameter copy of a step are on its critical path.
 *
 * Host-side bytes per parameter of the shard (Ψ/N parameters per rank): master weights 4,
 * optimizer states K (8 for AdamW), fp32 gradients 4 (DeepSpeed accumulates gradients into
 * an fp32 partition on the host) — 16 B/param, DeepSpeed's estimate_zero2/3 "16" — and
 * with parameter offload the 16-bit parameters w (2): 18 B/param, the estimator's "18".
 * Units: B, parameters.
 */
#pragma once

#include <glib.h>
#include "models/parallel/parallel.h"

typedef enum
{
  MODEL_OFFLOAD_NONE,
  MODEL_OFFLOAD_CPU,
  MODEL_OFFLOAD_NVME,
  MODEL_N_OFFLOAD_TARGETS
} ModelOffloadTarget;

typedef struct
{
  ModelOffloadTarget optimizer;
  ModelOffloadTarget parameters;
  ModelOffloadTarget activations; /* NONE or CPU */
  gboolean pageable;              /* pin_memory = false */
} ModelOffload;

/* What an offload task does (models/plan/plan.h ModelTask.offload; amount in ModelTask.amount). */
typedef enum
{
  MODEL_OFFLOAD_OP_NONE,       /* kernels or a collective */
  MODEL_OFFLOAD_OP_H2D,        /* B host → GPU over PCIe */
  MODEL_OFFLOAD_OP_D2H,        /* B GPU → host */
  MODEL_OFFLOAD_OP_NVME_READ,  /* B drive → host */
  MODEL_OFFLOAD_OP_NVME_WRITE, /* B host → drive */
  MODEL_OFFLOAD_OP_NVME_TO_GPU, /* B drive → (host bounce buffer) → GPU */
  MODEL_OFFLOAD_OP_CPU_STEP,   /* parameters updated by the host CPU's optimizer step */
  MODEL_OFFLOAD_OP_PAGE_IN,    /* B of paged optimizer state migrated host → GPU (models/plan/plan_paged.h) */
  MODEL_OFFLOAD_OP_PAGE_OUT,   /* B of paged optimizer state evicted GPU → host */
  MODEL_N_OFFLOAD_OPS
} ModelOffloadOp;

/* Where a memory effect applies (models/plan/plan.h ModelMemEffect.where). */
typedef enum
{
  MODEL_MEM_ON_GPU,
  MODEL_MEM_ON_HOST,
  MODEL_MEM_ON_NVME,
  MODEL_N_MEM_PLACES
} ModelMemPlace;

/* Nothing offloaded, pinned memory. */
void model_offload_init_defaults (ModelOffload *o);
gboolean model_offload_any (const ModelOffload *o);

/* "none", "cpu", "nvme"; parsing sets G_KEY_FILE_ERROR_INVALID_VALUE listing the names. */
const char *model_offload_target_name (ModelOffloadTarget t);
gboolean model_offload_target_from_string (const char *s, ModelOffloadTarget *out,
                                           GError **error);
/* "none", "h2d", "d2h", "nvme_read", "nvme_write", "nvme_to_gpu", "cpu_step", "page_in",
 * "page_out". */
const char *model_offload_op_name (ModelOffloadOp op);
/* "gpu", "host", "nvme". */
const char *model_offload_place_name (ModelMemPlace place);

/* Checks the choices against the data-parallel mode's placements (models/parallel/
 * parallel.h): an offloaded optimizer needs gradients sharded as they accumulate (ZeRO
 * stage >= 2: reduced per layer; DeepSpeed also offloads under stage 1, which stepsim does
 * not model, and the message says so), an offloaded
 * parameter set weights sharded at rest (stage 3) and an offloaded optimizer, activations
 * none or cpu. FALSE + G_KEY_FILE_ERROR_INVALID_VALUE naming the key ("parameters = cpu
 * needs …"). */
gboolean model_offload_validate (const ModelOffload *o, const ModelParallel *par,
                                 GError **error);
