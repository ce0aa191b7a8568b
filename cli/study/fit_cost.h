/* cli/study/fit_cost.h — `stepsim fit SCENARIO --for cost --deadline TIME …`: the cheapest GPU
 * type, GPU count and technique stack that fits and finishes the [plan] within the deadline
 * (the search and its assumptions: cli/study/fit_cost.c). */
#pragma once

#include <glib.h>

/* Whether argv asks for --for cost (then cli_cmd_fit hands over to cli_cmd_fit_cost). */
gboolean cli_fit_cost_requested (int argc, char **argv);

/* The command; returns the exit status (0 ran, 1 bad input, 2 usage). */
int cli_cmd_fit_cost (int argc, char **argv);
