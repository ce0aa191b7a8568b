/* cli/scenario/scenario_memory.c — scenario keys of the memory stack: how PyTorch's optimizer and
 * caching allocator are configured (models/stack/stack.h, models/memory/allocator.h).
 *
 *   [training] zero_grad_to_none = true|false   zero_grad(set_to_none=…) (default true,
 *                                               PyTorch ≥ 2.0)
 *   [training] softmax_saves_input = true|false autograd keeps softmax's input too
 *                                               (default false; true for PyTorch ≤ 1.10)
 *   [allocator] expandable_segments = true|false PYTORCH_CUDA_ALLOC_CONF (default false)
 *
 * Errors name the group and key (the caller prefixes the file).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

static gboolean
get_bool (GKeyFile *kf, const char *group, const char *key, gboolean *out, GError **error)
{
  g_autofree char *v = cli_scenario_get_raw (kf, group, key, FALSE, NULL);
  if (v == NULL)
    return TRUE;
  if (!sim_units_parse_bool (v, out, error))
    return PREFIX_KEY (error, group, key), FALSE;
  return TRUE;
}

gboolean
cli_scenario_load_memory (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelStack *s = &sc->stack;
  return get_bool (kf, "training", "zero_grad_to_none", &s->zero_grad_to_none, error)
         && get_bool (kf, "training", "softmax_saves_input", &s->softmax_saves_input, error)
         && get_bool (kf, "allocator", "expandable_segments", &s->expandable_segments, error);
}
