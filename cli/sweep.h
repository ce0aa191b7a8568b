/* cli/sweep.h — sweep files: a base scenario and axes of `group.key` values, expanded into
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
 * (geometric), LAST included when reached. Values cannot contain commas.
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

/* Axes ([axes] then [zip], file order): their "group.key" names and value counts. */
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
 * --set, may be NULL), later ones winning. NULL-terminated; caller frees (g_strfreev). */
char **cli_sweep_sets (const CliSweep *sweep, guint point, const char *const *extra);
/* The baseline overrides ("group.key=value", NULL-terminated, borrowed); empty when none. */
const char *const *cli_sweep_baseline (const CliSweep *sweep);

/* Expands one LIST (see above) into its values. NULL + G_KEY_FILE_ERROR_INVALID_VALUE on an
 * empty item, a malformed range, a step that does not progress toward LAST, or more than
 * 100000 values. Caller frees (g_strfreev). */
char **cli_sweep_parse_list (const char *list, GError **error);

/* Splits "group.key=value" (the --set syntax; the group may contain dots, the key is after
 * the last one) into its parts (caller frees each). FALSE + G_OPTION_ERROR_BAD_VALUE. */
gboolean cli_sweep_parse_set (const char *set, char **group, char **key, char **value,
                              GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (CliSweep, cli_sweep_free)
