/* cli/study/fit_cost.h — `stepsim fit SCENARIO --for cost --deadline TIME …`: the cheapest GPU
 * type, GPU count and technique stack that fits and finishes the [plan] within the deadline
 * (the search and its assumptions: cli/study/fit_cost.c). */
#pragma once

#include <glib.h>

/* What `fit --for cost` searches (cli/cmd_fit.c fills it from the options). */
typedef struct
{
  const char *path;        /* the scenario file */
  char **sets;             /* --set group.key=value, NULL-terminated, may be NULL; borrowed */
  double deadline;         /* s, > 0: the training run must finish within it */
  guint max_gpus;          /* most GPUs tried, >= 1 */
  gboolean allow_finetune; /* also try LoRA and QLoRA */
  const char *gpus;        /* "A,B" catalog GPU types to try; NULL: the scenario's */
} CliFitCostOptions;

/* Runs the search and prints every candidate and the answer on stdout. Returns the exit
 * status: 0 when the search ran (also when no plan meets the deadline), else 1 (bad input:
 * the scenario does not load or has no [plan]) or 2 (usage: an unknown GPU type in
 * opt->gpus) with *message set to one line for the caller to print (caller frees; NULL on
 * 0). */
int cli_fit_cost_run (const CliFitCostOptions *opt, char **message);
