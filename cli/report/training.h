/* cli/report/training.h — from one simulated step to the whole training run: time to train,
 * GPU-hours, cost, energy and emissions ([plan] and [cost], cli/scenario/scenario_plan.c).
 *
 * Formulas (SI inside; N GPUs in n nodes, step time T, tokens per step S):
 *   steps        = train_steps, or tokens ÷ S (fractional: the run is tokens long)
 *   time         = tokens ÷ tokens/s = steps × T                                   [s]
 *   GPU time     = N × time  (printed as GPU-hours)                                [s]
 *   cost         = GPU time × price per GPU-second + fixed
 *                  (node_hour: n × time × price per node-second + fixed)  [currency]
 *   u            = compute-busy fraction: the seconds a rank's compute stream runs a task
 *                  (forward, backward, recompute, GPU optimizer), divided by T, the mean
 *                  over ranks (models/plan/simulate.h compute_busy)
 *   P_gpu        = P_idle + (P_max − P_idle) × u when the catalog gives an idle power, else
 *                  P_max (the board power under load, an upper bound) — the linear
 *                  utilisation model of Fan, Weber and Barroso, "Power Provisioning for a
 *                  Warehouse-sized Computer", ISCA 2007, §4.1                      [W]
 *   P_overhead   = the node's power beyond its GPUs, per GPU (hardware/node_catalog.c) [W]
 *   energy       = N × (P_gpu + P_overhead) × time × PUE                           [J]
 *   emissions    = energy × carbon intensity                                   [kg CO2]
 * A scenario that does not fit (OOM) gets none of these: there is no run to price.
 */
#pragma once

#include <glib.h>
#include <stdio.h>
#include "models/plan/simulate.h"
#include "cli/scenario/scenario.h"
#include "sim/recorder.h"

typedef struct
{
  gboolean valid;        /* [plan] given and the step fits */
  double steps;          /* optimizer steps of the run */
  double tokens;         /* tokens of the run */
  double time;           /* s */
  double gpu_time;       /* GPU-seconds */
  gboolean has_cost;
  double cost;           /* in inputs.currency */
  gboolean has_energy;   /* the GPU has a board power in the catalog */
  double utilisation;    /* u, in [0, 1] */
  double gpu_power;      /* W per GPU (P_gpu) */
  double overhead_power; /* W per GPU (P_overhead) */
  double energy;         /* J */
  gboolean has_emissions;
  double emissions;      /* kg CO2 */
} CliTrainingEstimate;

/* Fills *est from the scenario's [plan]/[cost] and its simulated step (valid FALSE, all
 * else zero, when there is no plan or the step does not fit). */
void cli_training_estimate (const CliScenario *sc, const ModelSimResult *res,
                            CliTrainingEstimate *est);

/* Prints the "training run" block (nothing without [plan]; a line saying why nothing is
 * estimated for an OOM) and the error band of the prediction (cli/report/error_band.h). */
void cli_training_print (FILE *out, const CliScenario *sc, const ModelSimResult *res);

/* /summary entries: train_steps ("1"), train_tokens ("token"), train_time ("s"),
 * train_gpu_time ("s", GPU-seconds), train_cost (the currency code), train_energy ("J"),
 * train_emissions ("kg"), train_gpu_power and train_overhead_power ("W"),
 * train_utilisation ("1") — each only when it is estimated — and the error band
 * (cli/report/error_band.h) of every run. */
void cli_training_fill_summary (SimRecorder *rec, const CliScenario *sc, const ModelSimResult *res);
