/* tests/fuzz/fuzz_sweep.c — libFuzzer harness of the sweep loader (cli/sweep*.c): the input
 * is a sweep file, loaded and expanded as `stepsim batch` does (strict schema, lists and
 * ranges, [set]/[axes]/[zip]/[baseline], keys checked against the base scenario's schema),
 * then every point's label and overrides are built and the first scenario is loaded with
 * its overrides as `batch` loads it. The file lies in a `sweeps/` folder of
 * the scratch directory whose parent holds links to the shipped scenarios, so the shipped
 * sweeps ("scenario = ../s1-llama-3.2-1b-fp32.ini") are valid seeds as they are.
 * A sweep is user input: any crash, sanitizer report, leak or timeout is a finding.
 */
#include "config.h"
#include "tests/fuzz/fuzz-common.h"

#include "cli/scenario/scenario.h"
#include "cli/scenario/sweep.h"

static char *sweep_path;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  const char *dir = fuzz_scratch_dir ();
  g_autofree char *sweeps = g_build_filename (dir, "sweeps", NULL);
  if (g_mkdir_with_parents (sweeps, 0700) != 0)
    abort ();
  sweep_path = g_build_filename (sweeps, "fuzz.ini", NULL);
  g_autofree char *shipped = g_build_filename (STEPSIM_SRCDIR, "scenarios", NULL);
  g_autoptr (GDir) d = g_dir_open (shipped, 0, NULL);
  const char *name;
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, ".ini"))
      {
        g_autofree char *from = g_build_filename (shipped, name, NULL);
        g_autofree char *to = g_build_filename (dir, name, NULL);
        if (symlink (from, to) != 0 && errno != EEXIST)
          abort ();
      }
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  fuzz_write_file (sweep_path, data, size);
  g_autoptr (GError) error = NULL;
  CliSweep *sw = cli_sweep_load (sweep_path, &error);
  if (sw == NULL && (error == NULL || error->message == NULL))
    abort ();
  if (sw != NULL)
    {
      guint n = cli_sweep_n_points (sw);
      for (guint p = 0; p < n && p < 64; p++)
        {
          g_free (cli_sweep_label (sw, p));
          g_strfreev (cli_sweep_sets (sw, p, NULL));
        }
      /* The first scenario as the batch loads it: the overrides' values are checked there. */
      g_auto (GStrv) sets = cli_sweep_sets (sw, 0, NULL);
      g_auto (GStrv) origins = cli_sweep_set_origins (sw, NULL);
      g_autoptr (GError) e2 = NULL;
      cli_scenario_free (cli_scenario_load_origins (cli_sweep_scenario (sw),
                                                    (const char *const *) sets,
                                                    (const char *const *) origins, &e2));
      cli_sweep_free (sw);
    }
  return 0;
}
