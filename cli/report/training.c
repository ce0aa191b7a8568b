/* cli/report/training.c — time to train, GPU-hours, cost, energy and emissions; see training.h. */
#include "config.h"
#include "cli/report/training.h"

#include <math.h>
#include "cli/report/error_band.h"
#include "cli/report/op_report.h"
#include "sim/text.h"
#include "sim/units.h"

void
cli_training_estimate (const CliScenario *sc, const ModelSimResult *res, CliTrainingEstimate *est)
{
  *est = (CliTrainingEstimate){ 0 };
  const CliTrainingInputs *p = &sc->plan;
  if (!p->given || !res->fits || !(res->step_time > 0) || !(res->tokens_per_step > 0))
    return;
  est->valid = TRUE;
  est->steps = p->train_steps > 0 ? (double) p->train_steps : p->tokens / res->tokens_per_step;
  est->tokens = p->train_steps > 0 ? (double) p->train_steps * res->tokens_per_step : p->tokens;
  est->time = est->steps * res->step_time; /* = tokens ÷ tokens/s */
  est->gpu_time = res->n_ranks * est->time;
  if (p->has_price)
    {
      est->has_cost = TRUE;
      double billed = p->price_per_node ? sc->n_nodes * est->time : est->gpu_time;
      est->cost = billed * p->price + p->fixed;
    }
  const HwGpuSpec *gpu = sc->node.gpu;
  if (gpu->board_power > 0)
    {
      est->has_energy = TRUE;
      est->utilisation = CLAMP (res->compute_busy, 0.0, 1.0);
      est->gpu_power = gpu->idle_power > 0
                         ? gpu->idle_power + (gpu->board_power - gpu->idle_power) * est->utilisation
                         : gpu->board_power;
      est->overhead_power = sc->node.overhead_power;
      est->energy = res->n_ranks * (est->gpu_power + est->overhead_power) * est->time * p->pue;
      if (p->has_carbon)
        {
          est->has_emissions = TRUE;
          est->emissions = est->energy * p->carbon_intensity;
        }
    }
}

/* A whole amount (GPU-hours, money) for the summary: its digits from 100 up to 1e12, beyond
 * that in exponent form (four significant digits), so that no estimate prints as a wall of
 * digits; below 100 three significant digits, so that a small run (plan.tokens = 1: some
 * 1e-7 GPU-hours) does not print as 0. */
static char *
amount_text (double v)
{
  if (fabs (v) >= 1e12)
    return g_strdup_printf ("%.4g", v);
  return fabs (v) >= 100 || v == 0 ? g_strdup_printf ("%.0f", v) : g_strdup_printf ("%.3g", v);
}

/* The run's optimizer steps as computed: whole when train_steps gave them; tokens ÷ tokens per
 * step has a fraction, kept (two decimals from 1 up to 1e12, three significant digits below
 * 1): rounded to a whole count it read as the plan's own (QA). */
static char *
steps_text (double v)
{
  if (v == floor (v) || fabs (v) >= 1e12)
    return amount_text (v);
  return fabs (v) >= 1 ? g_strdup_printf ("%.2f", v) : g_strdup_printf ("%.3g", v);
}

/* A quantity (MWh, t, d) with two decimals from 1 up to 1e9, beyond that in exponent form;
 * below 1 three significant digits (0.00 hid a short run's energy and days). */
static char *
decimal_text (double v)
{
  if (fabs (v) >= 1e9)
    return g_strdup_printf ("%.4g", v);
  return fabs (v) >= 1 || v == 0 ? g_strdup_printf ("%.2f", v) : g_strdup_printf ("%.3g", v);
}

/* "2.49 USD/h" of the price, for the summary. */
static char *
price_text (const CliTrainingInputs *p)
{
  return g_strdup_printf ("%.4g %s/h per %s", p->price * 3600, p->currency,
                          p->price_per_node ? "node" : "GPU");
}

static void
print_energy (FILE *out, const CliScenario *sc, const CliTrainingEstimate *e)
{
  if (!e->has_energy)
    {
      fprintf (out, "  %-22s %14s  (%s has no board power in the catalog: set power in a "
                    "[gpu.NAME] group)\n", "energy", "-", sc->node.gpu->name);
      return;
    }
  g_autofree char *power = g_strdup_printf ("%.0f W", e->gpu_power);
  g_autofree char *over = g_strdup_printf ("%.1f W", e->overhead_power);
  g_autofree char *busy = sc->node.gpu->idle_power > 0
                            ? g_strdup_printf (" at %.0f %% compute-busy", 100 * e->utilisation)
                            : g_strdup ("");
  g_autofree char *energy = decimal_text (e->energy / 3.6e9);
  g_autofree char *emissions = decimal_text (e->emissions / 1e3);
  double gpus = e->gpu_time / e->time;
  fprintf (out, "  %-22s %10s MWh  (%.0f GPU%s x (%s per GPU%s + %s node overhead%s) x PUE "
                "%.2f)\n",
           "energy", energy, gpus, gpus == 1 ? "" : "s", power, busy, over,
           e->overhead_power > 0 ? "" : " (none in the catalog)", sc->plan.pue);
  if (e->has_emissions)
    fprintf (out, "  %-22s %10s t CO2  (at %.0f gCO2/kWh)\n", "emissions", emissions,
             sc->plan.carbon_intensity * 3.6e9);
}

void
cli_training_print (FILE *out, const CliScenario *sc, const ModelSimResult *res)
{
  const CliTrainingInputs *p = &sc->plan;
  g_autofree char *band_t = cli_error_band_text (sc->node.gpu->name, CLI_BAND_STEP_TIME);
  g_autofree char *band_m = cli_error_band_text (sc->node.gpu->name, CLI_BAND_MEMORY);
  fprintf (out, "error band\n  %s\n  %s\n", band_t, band_m);
  /* the band's cases are GPU-bound; a launch-bound step rests on the host time per op
   * (models/stack/framework.c: one measured eager forward; the backward's unchecked) */
  double host = model_op_times_rank_host_seconds (res->op_times,
                                                  cli_report_ops_busiest_rank (res), NULL);
  if (res->step_time > 0 && host >= 0.8 * res->step_time)
    fprintf (out, "  launch-bound: no validation case is; the host time per op comes from one "
                  "measured eager forward, the backward's is unchecked\n");
  if (!p->given)
    return;
  fprintf (out, "training run\n");
  CliTrainingEstimate e;
  cli_training_estimate (sc, res, &e);
  if (!e.valid)
    {
      fprintf (out, "  not estimated: the step does not fit (OOM), so there is no run to "
                    "price\n");
      return;
    }
  g_autofree char *steps = steps_text (e.steps); /* "30517.58", not "3.052e+04" */
  /* whole tokens with their digits grouped, as the model line's parameters (QA: "2e+09") */
  g_autofree char *tokens = e.tokens < 1e19 ? sim_text_group_digits ((guint64) llround (e.tokens))
                                            : g_strdup_printf ("%.4g", e.tokens);
  fprintf (out, "  %-22s %14s  (%s steps of %.0f tokens)\n", "tokens", tokens, steps,
           res->tokens_per_step);
  g_autofree char *days = decimal_text (e.time / 86400);
  fprintf (out, "  %-22s %12s d  (tokens / tokens/s)\n", "time to train", days);
  g_autofree char *gpu_hours = amount_text (e.gpu_time / 3600);
  fprintf (out, "  %-22s %14s\n", "GPU-hours", gpu_hours);
  if (e.has_cost)
    {
      g_autofree char *price = price_text (p);
      g_autofree char *cost = amount_text (e.cost), *fixed = amount_text (p->fixed);
      fprintf (out, "  %-22s %10s %s  (%s", "cost", cost, p->currency, price);
      if (p->fixed > 0)
        fprintf (out, " + %s %s fixed", fixed, p->currency);
      fprintf (out, ")\n");
    }
  else
    fprintf (out, "  %-22s %14s  (no [cost] price for %s)\n", "cost", "-", sc->node.gpu->name);
  print_energy (out, sc, &e);
}

static void
fill_band (SimRecorder *rec, const char *gpu, CliBandKind kind, const char *name)
{
  CliErrorBand b;
  cli_error_band_get (gpu, kind, &b);
  g_autofree char *cases = g_strdup_printf ("%s_cases", name);
  g_autofree char *worst = g_strdup_printf ("%s_largest", name);
  sim_recorder_summary_scalar (rec, name, b.median, "1");
  sim_recorder_summary_scalar (rec, cases, b.n_cases, "1");
  sim_recorder_summary_scalar (rec, worst, b.worst, "1");
}

void
cli_training_fill_summary (SimRecorder *rec, const CliScenario *sc, const ModelSimResult *res)
{
  fill_band (rec, sc->node.gpu->name, CLI_BAND_STEP_TIME, "band_step_time");
  fill_band (rec, sc->node.gpu->name, CLI_BAND_MEMORY, "band_memory");
  CliTrainingEstimate e;
  cli_training_estimate (sc, res, &e);
  if (!e.valid)
    return;
  sim_recorder_summary_scalar (rec, "train_steps", e.steps, "1");
  sim_recorder_summary_scalar (rec, "train_tokens", e.tokens, "token");
  sim_recorder_summary_scalar (rec, "train_time", e.time, "s");
  sim_recorder_summary_scalar (rec, "train_gpu_time", e.gpu_time, "s");
  if (e.has_cost)
    sim_recorder_summary_scalar (rec, "train_cost", e.cost, sc->plan.currency);
  if (e.has_energy)
    {
      sim_recorder_summary_scalar (rec, "train_utilisation", e.utilisation, "1");
      sim_recorder_summary_scalar (rec, "train_gpu_power", e.gpu_power, "W");
      sim_recorder_summary_scalar (rec, "train_overhead_power", e.overhead_power, "W");
      sim_recorder_summary_scalar (rec, "train_energy", e.energy, "J");
    }
  if (e.has_emissions)
    sim_recorder_summary_scalar (rec, "train_emissions", e.emissions, "kg");
}
