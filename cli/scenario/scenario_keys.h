/* cli/scenario/scenario_keys.h — the typed getters of cli/scenario/scenario_keys.c, shared by
 * cli/scenario/scenario.c and every cli/scenario/scenario_*.c group parser (through
 * scenario_private.h). Not for other folders. Every error they set names the group and key;
 * the caller prefixes the file name.
 */
#pragma once

#include <glib.h>
#include "sim/units.h"

#define PREFIX_KEY(error, group, key) g_prefix_error (error, "group [%s], key '%s': ", group, key)

/* TRUE when the file has group/key (g_key_file_has_key, without the GError GLib makes and
 * drops for an absent group). */
gboolean cli_scenario_has_key (GKeyFile *kf, const char *group, const char *key);

/* The stripped value of group/key (caller frees), or NULL: an error if `required`, else
 * absent without error. */
char *cli_scenario_get_raw (GKeyFile *kf, const char *group, const char *key,
                            gboolean required, GError **error);

/* The same as a success flag: FALSE + error when `required` and missing; TRUE with *out the
 * stripped value (caller frees), or NULL when optional and absent. */
gboolean cli_scenario_get_value (GKeyFile *kf, const char *group, const char *key,
                                 gboolean required, char **out, GError **error);

/* An integer count in [1, max], the key's real range (left untouched when optional and
 * absent): 0, a negative, fractional or exponent-form number, one above max or beyond 64
 * bits are one error giving the range, "group [G], key 'K': '1e30' is not a whole number in
 * [1, 65536] (…)" or "… '0' is outside [1, 65536]" (sim_units_parse_count_in). */
gboolean cli_scenario_get_count (GKeyFile *kf, const char *group, const char *key,
                                 gboolean required, guint64 max, guint64 *out, GError **error);

/* A positive dimensioned quantity parsed with strict units (SI into *out). */
gboolean cli_scenario_get_quantity (GKeyFile *kf, const char *group, const char *key,
                                    SimDimension dim, gboolean required, double *out,
                                    GError **error);
