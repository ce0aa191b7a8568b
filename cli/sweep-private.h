/* cli/sweep-private.h — what the two halves of the sweep loader share: cli/sweep.c (loading,
 * points) and cli/sweep_list.c (LIST and --set syntax). Not a public header: nothing
 * outside cli/sweep*.c includes it.
 */
#pragma once

#include <glib.h>

enum
{
  MAX_VALUES = 100000, /* per list, and per sweep */
};

/* Parses all of `s` as a finite number into *out; *integer tells whether it was written as
 * one (no '.', 'e' or 'E', and |v| < 9e15). FALSE, outputs untouched, otherwise. */
gboolean cli_sweep_parse_number (const char *s, double *out, gboolean *integer);
