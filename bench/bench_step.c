/* bench/bench_step.c — in-process cost of one scenario's step: the time to load the
 * scenario (GKeyFile, the Hugging Face config), to simulate it without a recorder (the
 * simulation alone: plan, replay, allocator, summary figures; what `batch` and `fit` pay
 * per scenario), with a recorder (what `run` records for its file), and to write that
 * recording as HDF5 — each the median of N repetitions in one process, so start-up
 * (dynamic loading) is not in them.
 *
 * Each also as the median of the thread's CPU time (CLOCK_THREAD_CPUTIME_ID, the *_cpu_median
 * lines): on a machine other processes share, the elapsed figures take their preemptions,
 * the CPU times only their cache traffic.
 *
 * Not a test: prints "name<TAB>value<TAB>unit" lines (bench/run.sh format).
 * Usage: bench_step SCENARIO.ini [N] (default N = 50).
 */
#include "config.h"
#include "cli/malloc_tuning.h"
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "sim/h5out.h"

#include <stdio.h>
#include <stdlib.h>
#include <glib/gstdio.h>
#include <time.h>
#include <unistd.h>

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The median of the n values of v (sorted in place), in seconds. */
static double
median (double *v, guint n)
{
  qsort (v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double
now_s (void)
{
  return g_get_monotonic_time () / 1e6;
}

/* The calling thread's CPU time (s). */
static double
cpu_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main (int argc, char **argv)
{
  if (argc < 2 || argc > 3)
    {
      fprintf (stderr, "usage: bench_step SCENARIO.ini [N]\n");
      return 2;
    }
  cli_malloc_tune (); /* as stepsim's main: the figures are those of its process */
  guint n = argc == 3 ? (guint) strtoul (argv[2], NULL, 10) : 50;
  if (n == 0)
    n = 1;
  g_autofree double *load = g_new (double, n);
  g_autofree double *bare = g_new (double, n);
  g_autofree double *recorded = g_new (double, n);
  g_autofree double *written = g_new (double, n);
  g_autofree double *bare_cpu = g_new (double, n);
  g_autofree double *recorded_cpu = g_new (double, n);
  g_autofree char *dir = g_dir_make_tmp ("bench_step-XXXXXX", NULL);
  g_autofree char *h5 = g_build_filename (dir, "step.h5", NULL);
  g_autoptr (GError) error = NULL;
  for (guint i = 0; i < n; i++)
    {
      double t0 = now_s ();
      g_autoptr (CliScenario) sc = cli_scenario_load (argv[1], NULL, &error);
      double t1 = now_s (), c1 = cpu_s ();
      ModelSimResult res = { 0 };
      gboolean ok = sc != NULL && cli_scenario_simulate (sc, NULL, &res, &error);
      model_sim_result_clear (&res);
      double t2 = now_s (), c2 = cpu_s ();
      g_autoptr (SimRecorder) rec = sim_recorder_new ();
      ok = ok && cli_scenario_simulate (sc, rec, &res, &error);
      model_sim_result_clear (&res);
      double t3 = now_s (), c3 = cpu_s ();
      ok = ok && sim_h5out_write (h5, rec, NULL, &error);
      double t4 = now_s ();
      if (!ok)
        {
          fprintf (stderr, "bench_step: %s\n", error->message);
          return 1;
        }
      load[i] = t1 - t0;
      bare[i] = t2 - t1;
      recorded[i] = t3 - t2;
      written[i] = t4 - t3;
      bare_cpu[i] = c2 - c1;
      recorded_cpu[i] = c3 - c2;
    }
  unlink (h5);
  g_rmdir (dir);
  printf ("step_load_median\t%.6f\ts\n", median (load, n));
  printf ("step_simulate_median\t%.6f\ts\n", median (bare, n));
  printf ("step_simulate_recorded_median\t%.6f\ts\n", median (recorded, n));
  printf ("step_h5_write_median\t%.6f\ts\n", median (written, n));
  printf ("step_simulate_cpu_median\t%.6f\ts\n", median (bare_cpu, n));
  printf ("step_simulate_recorded_cpu_median\t%.6f\ts\n", median (recorded_cpu, n));
  return 0;
}
