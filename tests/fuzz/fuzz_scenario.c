/* tests/fuzz/fuzz_scenario.c — libFuzzer harness of the scenario loader (cli/scenario*.c):
 * the input is a scenario file, loaded as `stepsim run` loads it — strict GKeyFile schema,
 * units (sim/units.c), the [model] hf_config resolution (a shipped name, or a path relative
 * to the scenario: the scratch directory holds `configs/`, a link to models/configs, so
 * "hf_config = configs/gpt2.json" reads a real file), the GPU and node catalogs and
 * model_plan_validate — plus cli_scenario_json_files, which the output checks call.
 * A scenario is user input: any crash, sanitizer report, leak or timeout is a finding.
 */
#include "config.h"
#include "tests/fuzz/fuzz-common.h"

#include "cli/scenario/scenario.h"

static char *scenario_path;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  (void) argc;
  (void) argv;
  const char *dir = fuzz_scratch_dir ();
  scenario_path = g_build_filename (dir, "fuzz.ini", NULL);
  g_autofree char *configs = g_build_filename (dir, "configs", NULL);
  g_autofree char *shipped = g_build_filename (STEPSIM_SRCDIR, "models", "configs", NULL);
  if (symlink (shipped, configs) != 0 && errno != EEXIST)
    abort ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  fuzz_write_file (scenario_path, data, size);
  g_autoptr (GError) error = NULL;
  CliScenario *sc = cli_scenario_load (scenario_path, NULL, &error);
  if (sc == NULL && (error == NULL || error->message == NULL))
    abort ();
  cli_scenario_free (sc);
  g_strfreev (cli_scenario_json_files (scenario_path, NULL));
  return 0;
}
