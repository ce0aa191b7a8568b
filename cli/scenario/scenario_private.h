/* cli/scenario/scenario_private.h — the group parsers of cli/scenario/scenario_*.c, which the
 * loader (cli/scenario/scenario.c) calls; they call down to the typed getters of
 * cli/scenario/scenario_keys.h, never back into scenario.c. Every error they set names the
 * group and key; the caller prefixes the file name. */
#pragma once

#include <glib.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/scenario_keys.h"

/* The most micro-batches a step accumulates: [training] grad_accum's bound, and a
 * deepspeed_config's gradient_accumulation_steps (given or derived from train_batch_size). */
#define CLI_SCENARIO_MAX_GRAD_ACCUM MODEL_STACK_MAX_GRAD_ACCUM

/* The file a [model] hf_config `value` names: a shipped config's bare name in
 * cli_scenario_models_dir(), else a path relative to the folder of `scenario_path`.
 * Caller frees. */
char *cli_scenario_resolve_hf_config (const char *value, const char *scenario_path);

/* The three content groups; `path` is the scenario file (for relative hf_config). */
gboolean cli_scenario_load_model (GKeyFile *kf, const char *path, CliScenario *sc,
                                  GError **error);
gboolean cli_scenario_load_cluster (GKeyFile *kf, CliScenario *sc, GError **error);
gboolean cli_scenario_load_training (GKeyFile *kf, CliScenario *sc, GError **error);
/* [parallel] and [run]; after [cluster] (the degree is the cluster's GPU count). */
gboolean cli_scenario_load_parallel (GKeyFile *kf, CliScenario *sc, GError **error);
gboolean cli_scenario_load_run (GKeyFile *kf, CliScenario *sc, GError **error);

/* The memory-stack keys: [training] zero_grad_to_none, softmax_saves_input and
 * [allocator] expandable_segments (booleans, optional); cli/scenario/scenario_memory.c. */
gboolean cli_scenario_load_memory (GKeyFile *kf, CliScenario *sc, GError **error);

/* [training] framework, deepspeed_config and the framework keys
 * (cli/scenario/scenario_framework.c): the profile first, before any other [training] key,
 * so that those override it; then, after [parallel] and [offload], what the ds_config says
 * about them (checked against their own keys), the host CPU-Adam under an offloaded
 * optimizer and activation_offload as [offload] activations. */
gboolean cli_scenario_load_framework (GKeyFile *kf, CliScenario *sc, GError **error);
gboolean cli_scenario_load_framework_late (GKeyFile *kf, CliScenario *sc, GError **error);

/* [parallel] ep, etp and [moe] (cli/scenario/scenario_moe.c); after [parallel]. */
gboolean cli_scenario_load_moe (GKeyFile *kf, CliScenario *sc, GError **error);

/* [offload] (cli/scenario/scenario_offload.c); after [cluster] and [parallel]. */
gboolean cli_scenario_load_offload (GKeyFile *kf, CliScenario *sc, GError **error);
/* [offload] against the data-parallel mode (model_offload_validate), once [parallel] and a
 * deepspeed_config's ZeRO stage (cli_scenario_load_framework_late) are both read: FALSE +
 * error naming group [offload] and the key. */
gboolean cli_scenario_check_offload (const CliScenario *sc, GError **error);

/* Fills sc->warnings (cli/scenario/scenario_warnings.c) once every group has loaded; `sets` and
 * `origins` as cli_scenario_load_origins, for naming an override in a message. */
void cli_scenario_collect_warnings (GKeyFile *kf, CliScenario *sc, const char *const *sets,
                                    const char *const *origins);

/* [finetune] (cli/scenario/scenario_finetune.c); after [model], [training] and [offload]. */
gboolean cli_scenario_load_finetune (GKeyFile *kf, CliScenario *sc, GError **error);

/* [plan] and [cost] (cli/scenario/scenario_plan.c); after [cluster] (prices per GPU type name the
 * scenario's GPU). Checks the keys of both groups itself. */
gboolean cli_scenario_load_plan (GKeyFile *kf, CliScenario *sc, GError **error);
