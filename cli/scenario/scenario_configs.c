/* cli/scenario/scenario_configs.c — the shipped Hugging Face configs: the folder that holds
 * them and their names (scenario.h). A leaf: the [model] group (hf_config by bare name,
 * cli/scenario/scenario_groups.c) and `stepsim list models` call it; it calls no other
 * scenario file (tests/layering.sh).
 */
#include "config.h"
#include "cli/scenario/scenario.h"

#include <string.h>

const char *
cli_scenario_models_dir (void)
{
  static char *dir; /* set once, thread-safe (batches load scenarios in parallel) */
  if (g_once_init_enter (&dir))
    {
      char *src = g_build_filename (STEPSIM_SRCDIR, "models", "configs", NULL);
      if (!g_file_test (src, G_FILE_TEST_IS_DIR))
        {
          g_free (src);
          src = g_build_filename (STEPSIM_DATADIR, "models", NULL);
        }
      g_once_init_leave (&dir, src);
    }
  return dir;
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(const char *const *) a, *(const char *const *) b);
}

char **
cli_scenario_shipped_models (void)
{
  GPtrArray *names = g_ptr_array_new ();
  g_autoptr (GDir) dir = g_dir_open (cli_scenario_models_dir (), 0, NULL);
  for (const char *n; dir != NULL && (n = g_dir_read_name (dir)) != NULL;)
    if (g_str_has_suffix (n, ".json"))
      g_ptr_array_add (names, g_strndup (n, strlen (n) - 5));
  g_ptr_array_sort (names, compare_names); /* readdir order is not stable */
  g_ptr_array_add (names, NULL);
  return (char **) g_ptr_array_free (names, FALSE);
}
