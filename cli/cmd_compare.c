/* cli/cmd_compare.c — `stepsim compare`: one scenario and variations of it side by side,
 * each variation's change of device memory and of step time against the scenario as given.
 *
 *   stepsim compare SCENARIO.ini [--set group.key=value]… "training.checkpointing=full" \
 *     "training.precision=bf16_mixed,training.checkpointing=full" …
 *
 * `--set` (as for `run`) applies to the scenario as given and to every variation, first; a
 * variation is a comma-separated list of overrides applied on top (it may override a --set
 * key). Changes are signed "variation − as given": "+3.30 GiB" needs more memory, "-20.6 %"
 * is faster; the memory compared is what each step needs on the device (models/plan/simulate.h
 * need_device: device-used when it fits, the demand of the step as planned when not). A
 * variation whose step trains a different number of tokens (micro_batch, grad_accum,
 * seq_len, or a tp/cp that changes the data-parallel degree) has its time change per
 * token, marked "%/tok" and explained under the table. 
 * A scenario that fails to load or simulate as given is one error, exit 1, no table.
 * A variation that fails to load or simulate has "error" in its row and its message once,
 * on stderr after the table (naming the variation's overrides the error is about: the
 * message was printed twice, in the row and on stderr); the exit status is 1 if any did.
 * A variation that is not a list of group.key=value (cli_sweep_parse_set) is a usage
 * error: exit 2 before anything runs. Nothing is written but the table. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/report/error_band.h"
#include "cli/report/report.h"
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sweep.h"
#include "sim/text.h"
#include "sim/units.h"

typedef struct
{
  gboolean ok;
  char *error;
  char *gpu; /* its GPU type's name, NULL when it did not load */
  ModelSimResult res;
} Row;

/* The settings of a variation (new strings): split at each comma that a `group.key=`
 * follows (the key's name, dots and dashes of [gpu.NAME] included, then '='), so a value
 * may hold commas of its own: "finetune.targets=q,v,training.seq_len=2048" is two
 * settings; and at a comma that nothing or another comma follows, whose empty setting
 * check_variants refuses. */
static char **
variant_sets (const char *variant)
{
  /* the setting after a separating comma */
  g_autoptr (GRegex) next
      = g_regex_new ("^\\s*($|,|[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)+\\s*=)", 0, 0, NULL);
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  const char *start = variant;
  for (const char *c = strchr (variant, ','); c != NULL; c = strchr (c + 1, ','))
    if (g_regex_match (next, c + 1, 0, NULL))
      {
        g_autofree char *one = g_strndup (start, (gsize) (c - start));
        g_strv_builder_add (b, one);
        start = c + 1;
      }
  g_strv_builder_add (b, start);
  return g_strv_builder_end (b);
}

/* The overrides of a variation and their origin ("variation") for messages. */
static void
split_variant (const char *variant, char ***sets, char ***origins)
{
  *sets = variant ? variant_sets (variant) : NULL;
  cli_sweep_sets_from_cwd (*sets); /* checked by check_variants */
  *origins = cli_scenario_origins ((const char *const *) *sets, "variation");
}

/* `common` (the --set overrides, may be NULL) first, then the variation's. */
static void
simulate (const char *path, char **common, const char *variant, Row *row)
{
  g_auto (GStrv) vsets = NULL;
  g_auto (GStrv) vorigins = NULL;
  split_variant (variant, &vsets, &vorigins);
  g_autoptr (GStrvBuilder) bs = g_strv_builder_new ();
  g_autoptr (GStrvBuilder) bo = g_strv_builder_new ();
  for (guint i = 0; common != NULL && common[i] != NULL; i++)
    g_strv_builder_add (bs, common[i]), g_strv_builder_add (bo, "--set");
  for (guint i = 0; vsets != NULL && vsets[i] != NULL; i++)
    g_strv_builder_add (bs, vsets[i]), g_strv_builder_add (bo, vorigins[i]);
  g_auto (GStrv) sets = g_strv_builder_end (bs);
  g_auto (GStrv) origins = g_strv_builder_end (bo);
  const char *const *s = (const char *const *) sets, *const *o = (const char *const *) origins;
  g_autoptr (GError) error = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (path, s, o, &error);
  if (sc != NULL)
    {
      cli_scenario_print_warnings (sc);
      row->gpu = g_strdup (sc->node.gpu->name);
    }
  row->ok = sc != NULL && cli_scenario_simulate (sc, NULL, &row->res, &error);
  if (!row->ok && sc != NULL)
    {
      g_autofree char *source = cli_scenario_error_source (path, s, o, error->message);
      g_prefix_error (&error, "%s: ", source);
    }
  if (!row->ok)
    row->error = sim_text_printable (error ? error->message : "failed",
                                     CLI_SCENARIO_MESSAGE_MAX);
}

/* Every variation must be a list of group.key=value, each key once (a usage error otherwise:
 * exit 2; "a=1,a=2" would silently keep the last). */
static gboolean
check_variants (int argc, char **argv, char **common, GError **error)
{
  if (!cli_sweep_check_sets ("--set", (const char *const *) common, error))
    return FALSE;
  cli_sweep_sets_from_cwd (common);
  cli_scenario_warn_baseline_sets ((const char *const *) common, NULL);
  for (int i = 2; i < argc; i++)
    {
      g_autofree char *stripped = g_strstrip (g_strdup (argv[i]));
      if (stripped[0] == '\0')
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                       "compare: variation %d is empty (expected group.key=value[,…])", i - 1);
          return FALSE;
        }
      g_auto (GStrv) sets = variant_sets (argv[i]);
      g_autofree char *shown = sim_text_printable (argv[i], 80);
      /* a variation of one setting is named once, by the setting's own message */
      g_autofree char *what = g_strv_length (sets) == 1
                                  ? g_strdup ("compare: variation")
                                  : g_strdup_printf ("compare: variation '%s':", shown);
      if (!cli_sweep_check_sets (what, (const char *const *) sets, error))
        return FALSE;
      g_auto (GStrv) origins = cli_scenario_origins ((const char *const *) sets, "variation");
      cli_scenario_warn_baseline_sets ((const char *const *) sets, (const char *const *) origins);
      g_autoptr (GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
      for (guint j = 0; sets[j] != NULL; j++)
        {
          g_autofree char *g = NULL, *k = NULL, *v = NULL;
          cli_sweep_parse_set (sets[j], &g, &k, &v, NULL); /* checked above */
          char *key = g_strdup_printf ("%s.%s", g, k);
          if (!g_hash_table_add (seen, key))
            {
              g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                           "%s %s is given twice", what, key);
              return FALSE;
            }
        }
    }
  return TRUE;
}

/* Whether row `r` and the scenario as given `base` (both ok) train different numbers of
 * tokens in a step (relative difference above 1e-9). */
static gboolean
per_token (const Row *r, const Row *base)
{
  double a = r->res.tokens_per_step, b = base->res.tokens_per_step;
  return a > 0 && b > 0 && fabs (a - b) > 1e-9 * MAX (a, b);
}

static void
print_row (const char *name, const Row *r, const Row *base)
{
  if (!r->ok)
    {
      printf ("%-44s  error (the message follows the table, on stderr)\n", name);
      return;
    }
  g_autofree char *mem = sim_units_format (r->res.need_device, SIM_DIM_BYTES, 2);
  g_autofree char *step = sim_units_format (r->res.step_time, SIM_DIM_TIME, 3);
  g_autofree char *dmem = NULL;
  char dtime[32] = "-";
  if (base->ok && r != base)
    {
      /* signed as the column says: variation − as given (+ needs more, − needs less) */
      double d = r->res.need_device - base->res.need_device;
      g_autofree char *abs = sim_units_format (ABS (d), SIM_DIM_BYTES, 2);
      /* No change is "0 B", unsigned: "+0.00 B" would claim a direction. */
      dmem = d == 0 ? g_strdup ("0 B") : g_strdup_printf ("%s%s", d < 0 ? "-" : "+", abs);
      /* A variation that changes the tokens in a step (the global batch: micro_batch,
       * grad_accum, seq_len, or a tp/cp that changes the data-parallel degree) is compared
       * per token: its step does different work, so the step times alone would say
       * nothing about speed. */
      if (per_token (r, base))
        g_snprintf (dtime, sizeof dtime, "%+.1f %%/tok",
                    100 * ((r->res.step_time / r->res.tokens_per_step)
                               / (base->res.step_time / base->res.tokens_per_step)
                           - 1));
      else
        g_snprintf (dtime, sizeof dtime, "%+.1f %%",
                    100 * (r->res.step_time / base->res.step_time - 1));
    }
  /* A long variation gets a line of its own, so the columns stay aligned. */
  if (g_utf8_strlen (name, -1) > 44)
    {
      printf ("%s\n", name);
      name = "";
    }
  g_autofree char *rate = cli_report_format_rate (r->res.tokens_per_s);
  printf ("%-44s %12s %13s %12s %11s %10s  %s\n", name, mem, dmem ? dmem : "-", step, dtime,
          rate, r->res.fits ? "fits" : "OOM (as planned)");
}

int
cli_cmd_compare (int argc, char **argv)
{
  g_auto (GStrv) common = NULL;
  GOptionEntry entries[] = {
    { "set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &common,
      "override a scenario value for the scenario and every variation, e.g. --set "
      "training.micro_batch=4 (repeatable; a variation may override it)", "GROUP.KEY=VALUE" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "SCENARIO.ini VARIANT… — each variation's change of device memory and step time "
    "against the scenario as given (VARIANT: group.key=value[,group.key=value…], a comma "
    "separating settings where a group.key= follows it, so a value may be a list: "
    "finetune.targets=q,v; changes are variation − as given: + more memory or slower, − "
    "less memory or faster)");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, &argc, &argv, &error))
    {
      g_autofree char *msg = cli_option_error_message ("compare", error);
      return cli_error (msg), 2;
    }
  if (argc < 3)
    return cli_error ("compare: expected a scenario and at least one variation "
                      "(see stepsim compare --help)"), 2;
  if (!check_variants (argc, argv, common, &error))
    return cli_error (error->message), 2;
  guint n = (guint) argc - 1;
  g_autofree Row *rows = g_new0 (Row, n);
  simulate (argv[1], common, NULL, &rows[0]);
  if (!rows[0].ok)
    {
      /* every change is against the scenario as given: without it there is no table, and
       * its error is said once (each variation would repeat it) */
      cli_error (rows[0].error);
      g_free (rows[0].error);
      return 1;
    }
  for (guint i = 1; i < n; i++)
    simulate (argv[1], common, argv[i + 1], &rows[i]);
  printf ("%-44s %12s %13s %12s %11s %10s  %s\n", "variation", "memory", "memory change",
          "step time", "time change", "tokens/s", "verdict");
  int rc = 0;
  gboolean any_per_token = FALSE;
  for (guint i = 0; i < n; i++)
    {
      print_row (i == 0 ? "(as given)" : argv[i + 1], &rows[i], &rows[0]);
      rc |= !rows[i].ok;
      any_per_token |= i > 0 && rows[i].ok && rows[0].ok && per_token (&rows[i], &rows[0]);
    }
  /* The table is the answer on stdout; what failed is said once, on stderr, as every other
   * command reports it (so a script that keeps only stderr still sees why) */
  fflush (stdout); /* the messages follow the table in a file holding both */
  for (guint i = 0; i < n; i++)
    if (!rows[i].ok)
      cli_error (rows[i].error);
  if (any_per_token)
    printf ("%%/tok: the variation trains a different number of tokens in a step (global "
            "batch or sequence); its time change is of the time per token\n");
  /* a GPU type no validation case checks (cli/report/error_band.h): said under the table, as
   * run says it in its summary, once per type */
  g_autoptr (GHashTable) said = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < n; i++)
    {
      CliErrorBand band;
      if (!rows[i].ok || rows[i].gpu == NULL || !g_hash_table_add (said, rows[i].gpu))
        continue;
      cli_error_band_get (rows[i].gpu, CLI_BAND_STEP_TIME, &band);
      if (band.table && band.n_cases == 0)
        printf ("%s: no validation case checks its predictions\n", rows[i].gpu);
    }
  for (guint i = 0; i < n; i++)
    {
      g_free (rows[i].error);
      g_free (rows[i].gpu);
      model_sim_result_clear (&rows[i].res);
    }
  return rc;
}
