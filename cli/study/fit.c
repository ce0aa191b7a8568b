/* cli/study/fit.c — what every fit search shares: target names, options, the report, the
 * candidate memo (each distinct candidate simulated once), integer probes and the largest /
 * smallest bisections; see fit.h for the searches and why they are valid. The searches
 * (fit_size.c, fit_gpus.c, fit_stack.c) call these, and cli/study/fit_search.c picks the
 * search: nothing here calls back into them.
 *
 * Invariants: candidates are kept in evaluation order; a memo (GHashTable from the joined
 * overrides to the candidate index, looked up and never iterated) makes each distinct
 * candidate simulated once. Memory in B, time in s.
 */
#include "config.h"
#include "cli/study/fit-private.h"

#include <math.h>
#include <string.h>
#include "cli/scenario/sim_input.h"
#include "cli/scenario/scenario.h"
#include "models/memory/ledger.h"
#include "sim/arith.h"
#include "sim/units.h"


static const char *const target_names[] = { "micro_batch", "seq_len", "gpus", "stack", NULL };

const char *
cli_fit_target_name (CliFitTarget target)
{
  return target_names[target];
}

gboolean
cli_fit_target_from_string (const char *s, CliFitTarget *out)
{
  for (guint i = 0; target_names[i] != NULL; i++)
    if (g_strcmp0 (s, target_names[i]) == 0)
      {
        *out = (CliFitTarget) i;
        return TRUE;
      }
  return FALSE;
}

void
cli_fit_options_init (CliFitOptions *opt)
{
  *opt = (CliFitOptions){ .max_micro_batch = 4096, .max_seq_len = 1048576, .multiple_of = 1,
                          .max_gpus_per_node = 0, .max_nodes = 64 };
}

static void
candidate_free (gpointer p)
{
  CliFitCandidate *c = p;
  g_free (c->label);
  g_strfreev (c->sets);
  g_free (c->reason);
  g_free (c);
}

CliFitReport *
cli_fit_report_new (void)
{
  CliFitReport *r = g_new0 (CliFitReport, 1);
  r->candidates = g_ptr_array_new_with_free_func (candidate_free);
  r->best = -1;
  r->baseline_tokens = NAN;
  r->notes.floor = r->notes.shardable = r->notes.capacity = NAN;
  return r;
}

void
cli_fit_report_free (CliFitReport *report)
{
  if (report == NULL)
    return;
  g_ptr_array_unref (report->candidates);
  g_free (report->notes.why);
  g_free (report->notes.advice);
  g_free (report->notes.skipped);
  g_free (report->notes.baseline);
  g_free (report);
}

guint
cli_fit_report_n_candidates (const CliFitReport *report)
{
  return report->candidates->len;
}

const CliFitCandidate *
cli_fit_report_candidate (const CliFitReport *report, guint i)
{
  g_return_val_if_fail (i < report->candidates->len, NULL);
  return g_ptr_array_index (report->candidates, i);
}

gint
cli_fit_report_best (const CliFitReport *report)
{
  return report->best;
}

guint64
cli_fit_report_value (const CliFitReport *report)
{
  return report->value;
}

double
cli_fit_report_baseline_tokens (const CliFitReport *report)
{
  return report->baseline_tokens;
}

const CliFitNotes *
cli_fit_report_notes (const CliFitReport *report)
{
  return &report->notes;
}

/* ---- generic searches --------------------------------------------------------------------- */

guint64
cli_fit_largest (guint64 lo, guint64 hi, guint64 step, CliFitPredicate ok, gpointer data)
{
  g_return_val_if_fail (step >= 1 && lo >= step && lo % step == 0, 0);
  guint64 hi_u = hi / step, good = lo / step;
  if (good > hi_u || !ok (good * step, data))
    return 0;
  guint64 bad = hi_u + 1; /* first multiple known not to fit, or past the range */
  for (;;)
    {
      guint64 probe = MIN (good * 2, hi_u); /* doubling, capped at the range */
      if (probe <= good)
        break;
      if (!ok (probe * step, data))
        {
          bad = probe;
          break;
        }
      good = probe;
    }
  while (bad - good > 1)
    {
      guint64 mid = good + (bad - good) / 2;
      if (ok (mid * step, data))
        good = mid;
      else
        bad = mid;
    }
  return good * step;
}

guint64
cli_fit_smallest (guint64 lo, guint64 hi, CliFitPredicate ok, gpointer data)
{
  g_return_val_if_fail (lo >= 1 && lo <= hi, 0);
  if (ok (lo, data))
    return lo;
  if (!ok (hi, data))
    return 0;
  guint64 good = hi, bad = lo; /* ok (good), !ok (bad) */
  while (good - bad > 1)
    {
      guint64 mid = bad + (good - bad) / 2;
      if (ok (mid, data))
        good = mid;
      else
        bad = mid;
    }
  return good;
}

/* ---- evaluating one candidate ------------------------------------------------------------- */

/* "OOM by X: demands Y > capacity Z[ in the first step | while loading]; largest at the
 * peak: C W (P %)": Y is what the whole run demands on this GPU (models/plan/simulate.h
 * lifetime_device: the load, the first step and the steady-state step as planned), never
 * called device-used, nor what it needs: on a GPU of Y the caching allocator releases its
 * cache later and the run can reserve more (`stepsim run` searches that, fits_from); the
 * category is the steady-state step's (fit-private.h). */
char *
cli_fit_oom_reason (const ModelSimResult *res)
{
  if (res->gpu_fits || res->lifetime_device <= res->capacity)
    {
      g_autofree char *need = sim_units_format (res->lifetime_device, SIM_DIM_BYTES, 2);
      g_autofree char *cap = sim_units_format (res->capacity, SIM_DIM_BYTES, 2);
      return res->gpu_fits ? g_strdup (!res->host_fits ? "OOM: host memory is short"
                                                       : "OOM: NVMe capacity is short")
                           : g_strdup_printf ("OOM: a request failed (demands %s of %s: "
                                              "the allocator's segments)", need, cap);
    }
  guint top = 0;
  for (guint c = 1; c < MODEL_N_MEM; c++)
    if (res->peak_mix[c] > res->peak_mix[top])
      top = c;
  double need = res->lifetime_device;
  const char *when = need > res->need_device
                       ? (res->first_step_reserved >= res->load_peak ? " in the first step"
                                                                      : " while loading")
                       : "";
  g_autofree char *by = sim_units_format (need - res->capacity, SIM_DIM_BYTES, 2);
  g_autofree char *used = sim_units_format (need, SIM_DIM_BYTES, 2);
  g_autofree char *cap = sim_units_format (res->capacity, SIM_DIM_BYTES, 2);
  g_autofree char *cat = sim_units_format (res->peak_mix[top], SIM_DIM_BYTES, 2);
  return g_strdup_printf ("OOM by %s: demands %s > capacity %s%s; largest category at the "
                          "peak: %s %s (%.0f %%)", by, used, cap, when,
                          model_ledger_category_name (top), cat,
                          100 * res->peak_mix[top] / MAX (res->need_allocated, 1.0));
}

void
cli_fit_simulate (const Ctx *ctx, CliFitCandidate *c)
{
  /* the user's --set first, then the candidate's own overrides, each named as such */
  g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
  g_autoptr (GStrvBuilder) o = g_strv_builder_new ();
  for (guint i = 0; ctx->sets != NULL && ctx->sets[i] != NULL; i++)
    g_strv_builder_add (b, ctx->sets[i]), g_strv_builder_add (o, "--set");
  for (guint i = 0; c->sets[i] != NULL; i++)
    g_strv_builder_add (b, c->sets[i]),
      g_strv_builder_add (o, c->origin != NULL ? c->origin : "candidate");
  g_auto (GStrv) all = g_strv_builder_end (b);
  g_auto (GStrv) origins = g_strv_builder_end (o);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load_origins (ctx->path, (const char *const *) all,
                                                          (const char *const *) origins, &e);
  ModelSimResult res = { 0 };
  if (sc == NULL || !cli_scenario_simulate (sc, NULL, &res, &e))
    {
      c->status = CLI_FIT_INFEASIBLE;
      c->reason = g_strdup_printf ("not feasible: %s", e->message);
      model_sim_result_clear (&res);
      return;
    }
  c->step_time = res.step_time;
  c->tokens_per_s = res.tokens_per_s;
  /* the need of the whole run (load, first step, steady state): a rejection shows how far
   * over it is */
  c->device_used = res.lifetime_device;
  c->capacity = res.capacity;
  c->peak_allocated = res.lifetime_allocated; /* the run as planned, as device_used */
  c->cuda_context = res.cuda_context;
  c->host_peak = res.host_peak;
  memcpy (c->peak_mix, res.peak_mix, sizeof c->peak_mix);
  c->status = res.fits ? CLI_FIT_FITS : CLI_FIT_OOM;
  /* The bytes in use would fit; the caching allocator's segments do not (fragmentation,
   * models/memory/allocator.h): a cliff of the allocator, not of the memory the step needs. */
  c->allocator_cliff = !res.gpu_fits && res.lifetime_allocated + res.cuda_context <= res.capacity;
  if (!res.fits)
    c->reason = cli_fit_oom_reason (&res);
  model_sim_result_clear (&res);
}

/* The candidate `sets` (taken), simulated once; returns its index. */
guint
cli_fit_evaluate (Ctx *ctx, const char *label, char **sets)
{
  char *key = g_strjoinv ("\n", sets);
  guint index = GPOINTER_TO_UINT (g_hash_table_lookup (ctx->memo, key));
  if (index > 0)
    {
      g_free (key);
      g_strfreev (sets);
      return index - 1;
    }
  CliFitCandidate *c = g_new0 (CliFitCandidate, 1);
  c->label = g_strdup (label);
  c->sets = sets;
  c->step_time = c->tokens_per_s = c->device_used = c->capacity = NAN;
  c->peak_allocated = c->cuda_context = c->host_peak = NAN;
  cli_fit_simulate (ctx, c);
  g_ptr_array_add (ctx->report->candidates, c);
  g_hash_table_insert (ctx->memo, key, GUINT_TO_POINTER (ctx->report->candidates->len));
  return ctx->report->candidates->len - 1;
}

gboolean
cli_fit_fits_at (Ctx *ctx, guint i)
{
  return cli_fit_report_candidate (ctx->report, i)->status == CLI_FIT_FITS;
}

/* ---- probes ------------------------------------------------------------------------------- */

guint64
cli_fit_layout_unit (const CliScenario *sc)
{
  /* the data-parallel mesh degrees the scenario gives itself (0: from the mode, any) */
  guint64 mp = (guint64) MAX (sc->par.tp, 1) * MAX (sc->par.cp, 1)
               * MAX (sc->par.dp_shard, 1) * MAX (sc->par.dp_replicate, 1);
  guint64 ex = (guint64) MAX (sc->par.ep, 1) * MAX (sc->par.etp, 1);
  return sim_lcm64 (mp, ex) * MAX (sc->par.pp, 1);
}

static char *
probe_label (const Probe *p, guint64 x, gboolean extended)
{
  GString *l = g_string_new (NULL);
  if (p->fmt == NULL && p->per_node == 0)
    g_string_printf (l, "gpus_per_node=%" G_GUINT64_FORMAT ", nodes=1", x * MAX (p->gpu_step, 1));
  else if (p->fmt == NULL)
    g_string_printf (l, "gpus_per_node=%u, nodes=%" G_GUINT64_FORMAT, p->per_node,
                     x * MAX (p->node_step, 1));
  else
    g_string_printf (l, "%s=%" G_GUINT64_FORMAT, p->name, x);
  if (extended)
    g_string_append (l, " (positions extended)");
  if (p->extra != NULL)
    g_string_append (l, p->extra_label);
  return g_string_free (l, FALSE);
}

guint
cli_fit_probe_index (Probe *p, guint64 x)
{
  gboolean extended = p->positions_cap > 0 && x > p->positions_cap;
  g_autofree char *label = probe_label (p, x, extended);
  GPtrArray *a = g_ptr_array_new ();
  if (p->fmt == NULL)
    {
      guint64 per_node = p->per_node == 0 ? x * MAX (p->gpu_step, 1) : p->per_node;
      guint64 nodes = p->per_node == 0 ? 1 : x * MAX (p->node_step, 1);
      g_ptr_array_add (a, g_strdup_printf ("cluster.gpus_per_node=%" G_GUINT64_FORMAT, per_node));
      g_ptr_array_add (a, g_strdup_printf ("cluster.nodes=%" G_GUINT64_FORMAT, nodes));
    }
  else
    g_ptr_array_add (a, g_strdup_printf ("%s=%" G_GUINT64_FORMAT, p->fmt, x));
  if (extended)
    g_ptr_array_add (a, g_strdup_printf ("model.max_position_embeddings=%" G_GUINT64_FORMAT, x));
  if (p->extra != NULL)
    g_ptr_array_add (a, g_strdup (p->extra));
  g_ptr_array_add (a, NULL);
  guint i = cli_fit_evaluate (p->ctx, label, (char **) g_ptr_array_free (a, FALSE));
  if (p->seen != NULL)
    g_array_append_val (p->seen, i);
  return i;
}

gboolean
cli_fit_probe_fits (guint64 x, gpointer probe)
{
  Probe *p = probe;
  return cli_fit_fits_at (p->ctx, cli_fit_probe_index (p, x));
}

gint
cli_fit_find_label (const CliFitReport *r, const char *label)
{
  for (guint i = 0; i < r->candidates->len; i++)
    if (g_strcmp0 (cli_fit_report_candidate (r, i)->label, label) == 0)
      return (gint) i;
  return -1;
}
