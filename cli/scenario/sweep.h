/* cli/scenario/sweep.h — sweep files: a base scenario and axes of `group.key` values, expanded into
 * the scenarios of a batch (README, "Batches, fit search and charts").
 *
 * Format (GKeyFile INI, strict like scenarios: unknown groups or keys, duplicates and
 * comments after a value are errors naming the file, group and key):
 *
 *   [sweep]      scenario = PATH (required, relative to the sweep file), name, description
 *   [set]        group.key = value — applied to every scenario
 *   [axes]       group.key = LIST — crossed as a Cartesian product, in file order, the first
 *                axis varying slowest
 *   [zip]        group.key = LIST — all the same length, the i-th values taken together;
 *                the zipped bundle is one more axis of the product, varying fastest
 *   [baseline]   group.key = value — the baseline stack: every scenario is also run with
 *                these overrides on top, and its throughput penalty against that is
 *                reported (a [baseline] group in the base scenario is used when the sweep
 *                has none)
 *
 * A LIST is comma-separated items; each item is a value (taken verbatim, e.g. "80 GiB") or a
 * numeric range FIRST:LAST (step 1), FIRST:LAST:STEP (additive) or FIRST:LAST:*FACTOR
 * (geometric), LAST included when reached. The keys whose values have ':' in their syntax
 * or are text (cli_sweep_key_takes_ranges) take every item verbatim: "run.stragglers =
 * 3:1.25, 0:1.1; 7:1.5" is two scenarios, the second with two stragglers (';' separates
 * them in one value, as in a scenario). An item in double quotes is one value as written,
 * commas and ':' included ("8, 3, 5" for moe.expert_load). Values cannot contain control
 * characters. A key (spaces around group and key dropped) is in only one of [set], [axes]
 * and [zip], once; [baseline] may override any of them, but not repeat a key itself.
 * Keys are checked against the scenario schema when the sweep is loaded (an unknown one is
 * an error with the scenario loader's hint); values are checked per scenario, so a bad
 * value makes that scenario fail, not the sweep.
 */
#pragma once

#include <glib.h>

typedef struct _CliSweep CliSweep;

/* Loads and expands `path`. NULL + error (G_KEY_FILE_ERROR, or G_FILE_ERROR when a file
 * cannot be read) whose message starts with the sweep file's name. */
CliSweep *cli_sweep_load (const char *path, GError **error);
void cli_sweep_free (CliSweep *sweep); /* NULL is a no-op */

const char *cli_sweep_path (const CliSweep *sweep);
/* [sweep] name, or the file's stem. */
const char *cli_sweep_name (const CliSweep *sweep);
/* The base scenario's path (resolved against the sweep file's folder). */
const char *cli_sweep_scenario (const CliSweep *sweep);
/* The sweep file's text. */
const char *cli_sweep_text (const CliSweep *sweep);

/* Axes ([axes] then [zip], file order): their "group.key" names (spaces dropped: a key is
 * in only one of [set], [axes] and [zip], once, else the sweep does not load) and value
 * counts. */
guint cli_sweep_n_axes (const CliSweep *sweep);
const char *cli_sweep_axis_key (const CliSweep *sweep, guint axis);
/* TRUE when every value of the axis is a plain number (a numeric column in results). */
gboolean cli_sweep_axis_numeric (const CliSweep *sweep, guint axis);

/* Number of scenarios: the product of the [axes] lengths times the [zip] length (1 with no
 * axes: the base scenario alone). */
guint cli_sweep_n_points (const CliSweep *sweep);
/* Value of `axis` in scenario `point` (borrowed). */
const char *cli_sweep_value (const CliSweep *sweep, guint point, guint axis);
/* "key=value, key=value" over the axes with the group left out ("micro_batch=2"), or the
 * sweep's name when there are no axes. Caller frees. */
char *cli_sweep_label (const CliSweep *sweep, guint point);
/* The --set list of scenario `point`: [set], then the axes, then `extra` (command-line
 * --set, may be NULL), later ones winning; every "group.key=value" with the spaces around
 * group, key and value dropped. NULL-terminated; caller frees (g_strfreev). */
char **cli_sweep_sets (const CliSweep *sweep, guint point, const char *const *extra);
/* Where each override of cli_sweep_sets (same point count and `extra`) comes from, for
 * messages (cli_scenario_load_origins): "SWEEP [set]", "SWEEP [axes]", "SWEEP [zip]" or
 * "--set". NULL-terminated; caller frees (g_strfreev). */
char **cli_sweep_set_origins (const CliSweep *sweep, const char *const *extra);
/* The baseline overrides ("group.key=value", NULL-terminated, borrowed); empty when none. */
const char *const *cli_sweep_baseline (const CliSweep *sweep);
/* Where the baseline comes from: "SWEEP [baseline]" or "SCENARIO [baseline]"; NULL when
 * there is none. Borrowed. */
const char *cli_sweep_baseline_origin (const CliSweep *sweep);

/* Checks that the command-line overrides (but [baseline]'s, see below) name keys of the
 * sweep's base scenario, once for the batch rather than once for each of its scenarios:
 * they are judged together, with the first scenario's [set] and axes, as each scenario
 * takes them (a [gpu.NAME] group made by several --set is one group). FALSE + the loader's
 * error ("SCENARIO (with --set …): group [G], key 'K': unknown key", "group [gpu.X]: key
 * 'hbm_bandwidth' is required when no 'base' GPU is given") when that scenario loads
 * without them and not with them, on an unknown or incomplete group or key. Values are
 * checked where the scenarios run. */
gboolean cli_sweep_check_extra_names (const CliSweep *sweep, const char *const *extra,
                                      GError **error);

/* Adds the command-line overrides of group [baseline] ("baseline.group.key=value", as a
 * scenario's [baseline] writes them) to the sweep's baseline, after the sweep's or the base
 * scenario's own [baseline] (so they win), and names "--set baseline.*" in its origin. Each
 * must name a key of the scenario schema: else FALSE + the loader's error prefixed with the
 * --set (its value is checked when the baseline runs). Overrides of other groups are left
 * alone. */
gboolean cli_sweep_add_extra_baseline (CliSweep *sweep, const char *const *extra,
                                       GError **error);

/* Checks command-line overrides against the sweep: each must parse (cli_sweep_parse_set)
 * and must not set an axis (every scenario would run with the one value while its label
 * and axis column say otherwise). FALSE + G_OPTION_ERROR_BAD_VALUE naming the --set, the
 * key and the sweep file. A key of [set] may be overridden (it is applied first). */
gboolean cli_sweep_check_extra_sets (const CliSweep *sweep, const char *const *extra,
                                     GError **error);

/* Expands one LIST (see above) into its values; with `ranges` FALSE every item is a value
 * as written (a key whose values may hold ':', cli_sweep_key_takes_ranges), and so is a
 * double-quoted item always. NULL + G_KEY_FILE_ERROR_INVALID_VALUE on an empty item, a quote
 * left open or inside an unquoted item, a malformed range, a step that does not progress
 * toward LAST, or more than 100000 values. Caller frees (g_strfreev). */
char **cli_sweep_parse_list (const char *list, gboolean ranges, GError **error);

/* Whether the LIST of "group.key" (spaces dropped) may hold ranges: FALSE for the keys
 * whose values have ':' in their syntax (run.stragglers RANK:FACTOR; RANK:FACTOR,
 * moe.expert_load zipf:S) or are text or file names (scenario.name, model.hf_config, …),
 * whose items are taken as written. */
gboolean cli_sweep_key_takes_ranges (const char *key);

/* The dot of "group.key" (no "=value") that ends the group, NULL when there is none: the
 * last dot for the named groups gpu.NAME and node.NAME (their keys have no dot), else the
 * first (a key may have dots: [cost] gpu_hour.H100-SXM, [baseline] training.checkpointing).
 * Points into `lhs`. */
const char *cli_sweep_key_dot (const char *lhs);

/* Splits "group.key=value" (the --set syntax; where the group ends: cli_sweep_key_dot)
 * into its parts (caller frees each). Spaces around the group, the key and
 * the value are dropped ("training. micro_batch = 2" is training / micro_batch / 2). FALSE +
 * G_OPTION_ERROR_BAD_VALUE, message "'SET': …" with SET printable and shortened, when there
 * is no '=', no dot, an empty group or key, a group or key with '[', ']' or control
 * characters (GKeyFile cannot store them), or a value with control characters; a group,
 * key or value that is not UTF-8 is refused too. The one parser of overrides: --set of
 * every command, compare variations, sweep files and cli_scenario_load. */
gboolean cli_sweep_parse_set (const char *set, char **group, char **key, char **value,
                              GError **error);
/* Whether `set` is an override of the baseline ("baseline.group.key=value", as
 * cli_sweep_parse_set reads it: spaces dropped); a malformed one is not. */
gboolean cli_sweep_set_is_baseline (const char *set);

/* "group.key=value" with the spaces cli_sweep_parse_set drops removed; NULL + its error.
 * Caller frees. */
char *cli_sweep_normalize_set (const char *set, GError **error);

/* The value check of cli_sweep_parse_set alone (UTF-8, no control characters but tab):
 * FALSE + G_OPTION_ERROR_BAD_VALUE "value '…' …". */
gboolean cli_sweep_check_value (const char *value, GError **error);

/* Checks the syntax of every override of `sets` (NULL-terminated, may be NULL) before
 * anything runs, so a command can exit 2 on it. FALSE + the first error prefixed by `what`
 * and a space ("--set 'x': expected group.key=value"). */
gboolean cli_sweep_check_sets (const char *what, const char *const *sets, GError **error);

/* Command-line overrides name files from where the user types them: a --set
 * model.hf_config=PATH whose PATH is relative (it has a '/' or ends in .json; a bare name is
 * a shipped config) or a training.deepspeed_config=PATH whose PATH is relative is rewritten
 * in place to the absolute path from the current directory, where one written in the
 * scenario file is relative to that file. `sets` (NULL-terminated,
 * may be NULL) must hold checked overrides (cli_sweep_check_sets); its strings are g_free'd
 * and replaced. */
void cli_sweep_sets_from_cwd (char **sets);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliSweep, cli_sweep_free)
