/* cli/scenario/sweep-private.h — what the parts of the sweep loader share: cli/scenario/sweep.c (loading),
 * cli/scenario/sweep_points.c (points, labels, overrides) and cli/scenario/sweep_list.c (LIST and --set
 * syntax). Not a public header: nothing outside cli/sweep*.c includes it.
 */
#pragma once

#include <glib.h>
#include "cli/scenario/sweep.h"

typedef struct
{
  char *key;       /* "group.key", spaces around group and key dropped */
  char **values;
  guint n_values;
  gboolean zipped;
  gboolean numeric;
} Axis;

struct _CliSweep
{
  char *path, *name, *scenario, *text;
  GPtrArray *sets;      /* "group.key=value" of [set], owned strings, spaces dropped */
  GPtrArray *baseline;  /* of [baseline], NULL-terminated */
  GPtrArray *axes;      /* Axis * */
  guint n_points;
  /* Origins for messages: "SWEEP [set]", "SWEEP [axes]", "SWEEP [zip]", and the [baseline]
   * of the sweep or of the base scenario ("SCENARIO [baseline]"). */
  char *origin_set, *origin_axes, *origin_zip, *origin_baseline;
};


enum
{
  MAX_VALUES = 100000, /* per list, and per sweep */
};

/* Parses all of `s` as a finite number into *out; *integer tells whether it was written as
 * one (no '.', 'e' or 'E', and |v| < 9e15). FALSE, outputs untouched, otherwise. */
gboolean cli_sweep_parse_number (const char *s, double *out, gboolean *integer);
