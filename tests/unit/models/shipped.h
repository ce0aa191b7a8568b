/* tests/unit/models/shipped.h — fixtures for the tests that read the shipped model configs
 * (test_finetune.c, test_inventory.c, test_tensor_parallel.c, test_context_parallel.c,
 * test_expert_parallel.c, test_plan_tp.c, test_graph.c): a config by name, and a fine-tuning
 * setting.
 * Header-only (static inline). */
#pragma once

#include "models/arch/arch.h"
#include "models/arch/finetune.h"
#include "tests/testlib.h"

/* models/configs/NAME.json of the source tree, loaded as a Hugging Face config. Aborts the
 * test program when it does not load (a shipped config always should). Caller frees
 * (g_autoptr (ModelArch)). */
static inline ModelArch *
shipped (const char *name)
{
  g_autofree char *rel = g_strdup_printf ("models/configs/%s.json", name);
  g_autofree char *path = stepsim_test_srcpath (rel);
  ModelArch *a = model_arch_load_hf_config (path, NULL);
  g_assert (a != NULL);
  return a;
}

/* A fine-tuning setting: model_finetune_init_defaults with method `m`, adapter rank `r` and
 * LoRA targets `t` (the other fields at their defaults: double quantization on). */
static inline ModelFinetune
ft (ModelFinetuneMethod m, guint64 r, ModelLoraTargets t)
{
  ModelFinetune f;
  model_finetune_init_defaults (&f);
  f.method = m;
  f.rank = r;
  f.targets = t;
  return f;
}
