/* cli/scenario/scenario.h — loading a scenario file (GKeyFile INI, DESIGN §7) into a model, a
 * hardware description and a technique stack.
 *
 * Strictness: unknown groups and keys, duplicate groups or keys, inline comments after a
 * value, missing required keys, dimensioned values without their unit and non-positive
 * sizes are errors naming the file, group and key (with the nearest valid name as a hint).
 * `--set group.key=value` overrides are applied before validation, so they are checked the
 * same way. Nothing is written by loading. A [baseline] group (group.key = value overrides
 * naming the baseline stack of a batch or fit search) is accepted and left to its users.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "models/arch/arch.h"
#include "models/parallel/parallel.h"
#include "models/plan/simulate.h"
#include "models/stack/stack.h"
#include "models/stack/ds_config.h"

/* [plan] and [cost] (cli/scenario/scenario_plan.c): the training run a step is part of and its
 * prices. Everything SI: money per second for prices, kg CO2 per J for the intensity. */
typedef struct
{
  gboolean given;            /* [plan] is present (tokens or train_steps) */
  double tokens;             /* [plan] tokens to train; 0 when train_steps is given */
  guint64 train_steps;       /* [plan] train_steps; 0 when tokens is given */
  gboolean has_price;        /* a price applies to this scenario's GPU type */
  gboolean price_per_node;   /* node_hour (per node) rather than gpu_hour (per GPU) */
  gboolean price_for_type;   /* the price came from a gpu_hour.TYPE / node_hour.TYPE key */
  double price;              /* currency per GPU-second (or per node-second) */
  double fixed;              /* [cost] fixed, currency (0 when absent) */
  char currency[4];          /* ISO 4217 code of every price ("" without one) */
  char currency_key[64];     /* the [cost] key that set it (a later price must agree) */
  double pue;                /* [cost] pue, >= 1 (default 1: the IT equipment's energy) */
  gboolean has_carbon;
  double carbon_intensity;   /* [cost] carbon_intensity, kg CO2 per J */
} CliTrainingInputs;

typedef struct
{
  char *path;        /* the scenario file as given */
  char *name;        /* [scenario] name, or the file's stem */
  GKeyFile *resolved; /* the key file after --set (a reference; not changed after the load):
                       * its text is cli_scenario_text's, made only when asked (a batch
                       * never asks) */
  ModelArch *arch;
  HwNodeSpec node;   /* GPU type, GPUs per node, host memory */
  guint n_nodes;
  HwFabricSpec fabric;
  ModelStack stack;
  ModelParallel par; /* degree = all GPUs of the cluster */
  /* [run]: repetitions, stragglers and jitter */
  guint steps;          /* steps simulated (each with its own jitter draw), >= 1 */
  guint32 seed;         /* seed of the kernel-time jitter */
  double kernel_jitter; /* coefficient of variation of kernel compute times, >= 0 */
  gboolean all_ranks;   /* [run] rank_classes = off: replay every rank (default auto) */
  GArray *slowdowns;    /* CliSlowdown, ranks running slower than the rest */
  GPtrArray *warnings;  /* char *, owned: keys set that have no effect under the chosen stack,
                         * one line each naming the file, group and key and why
                         * (cli/scenario/scenario_warnings.c); printed by cli_scenario_print_warnings */
  CliTrainingInputs plan; /* [plan] and [cost] */
  /* [training] deepspeed_config (cli/scenario/scenario_framework.c): the resolved path
   * (owned, NULL without one) and what it says (cleared with the scenario) */
  char *ds_path;
  gboolean has_ds;
  ModelDsConfig ds;
} CliScenario;

/* A straggler of [run] stragglers: the plan layer's type, so the array's data is the
 * simulation's input as it stands (cli/scenario/sim_input.h). */
typedef ModelSimSlowdown CliSlowdown;

enum
{
  CLI_SCENARIO_MESSAGE_MAX = 512, /* characters of an error message (sim_text_printable) */
  CLI_SCENARIO_PATH_MAX = 96,     /* characters of a path named in one (its middle elided) */
};

/* Loads `path` (a regular file of at most 16 MiB, cli/scenario/input.h), applying `sets`
 * (NULL-terminated "group.key=value" strings in the syntax of cli_sweep_parse_set, later
 * ones winning; may be NULL). Returns NULL and sets an error whose message starts with the
 * file name on any problem; when the problem concerns an override (cli_scenario_error_source)
 * the name is followed by "(with group.key=value)". Messages are printable and at most
 * CLI_SCENARIO_MESSAGE_MAX characters. */
CliScenario *cli_scenario_load (const char *path, const char *const *sets, GError **error);

/* An origins array for cli_scenario_load_origins(): `origin` ("--set") once for each of
 * `sets` (may be NULL). NULL-terminated, caller frees with g_strfreev. */
char **cli_scenario_origins (const char *const *sets, const char *origin);

/* As cli_scenario_load, with `origins` parallel to `sets` (may be NULL; an entry may be
 * NULL) naming where each override came from in messages: "--set", "variation",
 * "SWEEP.ini [axes]"…: "s1.ini (with --set cluster.node=DGX-A100): group [cluster], …". */
CliScenario *cli_scenario_load_origins (const char *path, const char *const *sets,
                                        const char *const *origins, GError **error);

/* The source to name in a message about scenario `path` loaded with `sets` and `origins`
 * (as cli_scenario_load_origins): the path, followed by " (with ORIGIN group.key=value, …)"
 * listing every effective override (none later sets the same key) `message` is about —
 * each whose group it names ("[G]") and whose key it names ("key 'K'", "[G] K", or K as a
 * word: "dp_replicate 2 × dp_shard 2" lists both overrides), in the order given; failing
 * that, those whose group it names or whose key it quotes ("'K'"); just the path when none.
 * One line; caller frees. */
char *cli_scenario_error_source (const char *path, const char *const *sets,
                                 const char *const *origins, const char *message);
void cli_scenario_free (CliScenario *sc); /* NULL is a no-op */
/* The resolved scenario text (the file after its --set overrides, as GKeyFile writes it out),
 * stored in a run's HDF5 file; "" for a scenario not made by a load. Newly allocated on each
 * call; caller frees. */
char *cli_scenario_text (const CliScenario *sc);
/* Checks the group and key names of the scenario keyfile `kf` as cli_scenario_load does
 * (every group known, every key of its group; [gpu.NAME] and [node.NAME] groups read in
 * full; [baseline] keys naming scenario keys), without requiring [model] and [training]:
 * for a command that reads part of a scenario (collective: its [cluster]), so that a typo
 * anywhere in the file is refused there too. FALSE + G_KEY_FILE_ERROR naming group and key
 * (without the file's path). */
gboolean cli_scenario_check_names (GKeyFile *kf, GError **error);

/* Prints `message` on stderr as every warning reads: "PROGRAM: warning: MESSAGE", PROGRAM
 * the command ("stepsim run", g_get_prgname), MESSAGE printable on one line and shortened
 * (sim_text_printable, CLI_SCENARIO_MESSAGE_MAX). */
void cli_scenario_warn (const char *message);
/* Prints each of sc->warnings on stderr as "PROGRAM: warning: MESSAGE", once per process
 * (a message already printed, by any scenario, is not repeated; thread-safe). The commands
 * call it after a scenario loads; the loader itself prints nothing. */
void cli_scenario_print_warnings (const CliScenario *sc);
/* Prints a warning on stderr for each of `sets` (NULL-terminated; may be NULL) that sets the
 * baseline (`baseline.GROUP.KEY=VALUE`), named by its origin (parallel to `sets`, may be
 * NULL: "--set"): for the commands that run no baseline (run, compare), where it would be
 * accepted and do nothing. */
void cli_scenario_warn_baseline_sets (const char *const *sets, const char *const *origins);

/* The checks GKeyFile does not make, on the text of a key file (scenario or sweep): a group
 * or key that appears twice, a comment after a value (except in `description`). FALSE +
 * G_KEY_FILE_ERROR naming the line, group and key. Used by cli/scenario/sweep.c. */
gboolean cli_scenario_prescan (const char *text, GError **error);
/* Reads the scenario-syntax file `path` (cli_input_read's checks) into `kf` with the
 * scenario's own syntax checks first (cli_scenario_prescan: messages naming the line, a key
 * or group given twice, a comment after a value), then GKeyFile's. FALSE + error prefixed
 * with `path`. For the commands that read a scenario without loading it whole (collective,
 * validate's case header). */
gboolean cli_scenario_load_keyfile (GKeyFile *kf, const char *path, GError **error);

/* The JSON files that loading `path` with `sets` would read, after the --set overrides: the
 * [model] hf_config (a shipped config's name resolved in cli_scenario_models_dir(), a path
 * relative to the scenario's folder) and the [training] deepspeed_config (a path relative
 * to the scenario's folder); none when `path` cannot be read or parsed (then loading fails
 * before it reads one). Malformed `sets` are skipped. Nothing is validated: this is for the
 * output-path checks (cli/scenario/output.h). Never NULL; caller frees (g_strfreev). */
GStrv cli_scenario_json_files (const char *path, const char *const *sets);
/* A path `value` of the scenario file `path` (deepspeed_config): as given when absolute,
 * else relative to the scenario's folder. Caller frees. */
char *cli_scenario_resolve_path (const char *value, const char *path);

/* Applies "group.key=value" overrides (NULL-terminated, may be NULL) to `kf` as the loader
 * does: an empty value removes the key. A malformed one is skipped (loading the scenario
 * with it reports it). */
void cli_scenario_keyfile_apply_sets (GKeyFile *kf, const char *const *sets);
/* Whether one of `sets` (NULL-terminated --set overrides, may be NULL; malformed ones name
 * nothing) sets [model] hf_config or [training] deepspeed_config, the only keys
 * cli_scenario_json_files() reads: without one, it answers for `path` and `sets` as for
 * `path` alone. */
gboolean cli_scenario_sets_name_json_files (const char *const *sets);

/* Directory holding the shipped Hugging Face configs (models/configs in the source tree or
 * $(pkgdatadir)/models once installed). Static string. This and the next:
 * cli/scenario/scenario_configs.c. */
const char *cli_scenario_models_dir (void);

/* The names of the shipped configs (file names without ".json"), sorted: a new
 * NULL-terminated string vector (g_strfreev); empty when the directory cannot be read. */
char **cli_scenario_shipped_models (void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliScenario, cli_scenario_free)
