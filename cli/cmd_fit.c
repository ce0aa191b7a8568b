/* cli/cmd_fit.c — `stepsim fit SCENARIO.ini --for micro_batch|seq_len|gpus|stack`: prints
 * every candidate the search simulated (verdict, step time, tokens/s, device memory needed, and
 * for a rejection one line saying why) and the answer. See cli/study/fit.h for the searches.
 * Exit status: 0 when the search ran (also when nothing fits: that is a result), 1 when the
 * scenario cannot be loaded, 2 usage error.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "cli/commands.h"
#include "cli/report/report.h"
#include "cli/scenario/scenario.h"
#include "cli/study/fit.h"
#include "cli/study/fit_cost.h"
#include "cli/scenario/sweep.h"
#include "hardware/cluster_spec.h"
#include "sim/units.h"

typedef struct
{
  char *target;
  char **sets;
  gint64 max_mb, max_seq, multiple_of;
  gint max_gpn, max_nodes;
  gboolean finetune, all, optimizer;
} FitOptions;

static const char *
status_word (CliFitStatus s)
{
  switch (s)
    {
    case CLI_FIT_FITS: return "FITS";
    case CLI_FIT_OOM: return "OOM";
    case CLI_FIT_INFEASIBLE: return "REJECTED";
    }
  return "?";
}

/* What the search found beside its answer (cli/study/fit.h CliFitNotes). */
static void
print_notes (const CliFitReport *r, CliFitTarget target)
{
  const CliFitNotes *n = cli_fit_report_notes (r);
  const char *what = cli_fit_target_name (target);
  guint64 v = cli_fit_report_value (r);
  if (n->next_value > 0 && n->position_limit == 0)
    printf ("check:  %s = %" G_GUINT64_FORMAT " fits and the next, %" G_GUINT64_FORMAT
            ", does not\n", what, v, n->next_value);
  if (n->position_limit > 0)
    {
      if (n->memory_value > v)
        printf ("limit:  seq_len is limited by max_position_embeddings = %" G_GUINT64_FORMAT
                ", not memory; memory would allow ~%" G_GUINT64_FORMAT " (estimated with the "
                "position table extended to that length)\n", n->position_limit, n->memory_value);
      else if (n->memory_value == v && v > 0)
        printf ("limit:  seq_len is limited by max_position_embeddings = %" G_GUINT64_FORMAT
                " and by memory alike (the next length does not fit even with the position "
                "table extended)\n", n->position_limit);
      else
        printf ("limit:  max_position_embeddings = %" G_GUINT64_FORMAT " caps seq_len; memory "
                "allows none of the lengths tried (position table extended past it)\n",
                n->position_limit);
    }
  /* past a position limit, the memory figures below are those of the extended table */
  const char *past = n->position_limit > 0 ? " (past the position limit, table extended)" : "";
  if (n->cliff_at > 0)
    printf ("limit:  %s = %" G_GUINT64_FORMAT "%s fails on the allocator, not for want of "
            "memory: its peak allocated memory + CUDA context fit the GPU, what the caching "
            "allocator reserves for it does not (an allocator cliff)\n", what, n->cliff_at, past);
  if (n->expandable_value > 0)
    printf ("limit:  with [allocator] expandable_segments = true (PYTORCH_CUDA_ALLOC_CONF=expandable_"
            "segments:True), %s up to about %" G_GUINT64_FORMAT " fits%s (found by the same "
            "search: near it the verdict can alternate)\n", what, n->expandable_value, past);
  if (n->n_also_fits > 0)
    {
      GString *l = g_string_new (NULL);
      for (guint i = 0; i < n->n_also_fits; i++)
        g_string_append_printf (l, "%s%" G_GUINT64_FORMAT, i > 0 ? ", " : "", n->also_fits[i]);
      printf ("limit:  the values that fit are not an interval: %u of %u value%s scanned above "
              "%s = %" G_GUINT64_FORMAT "%s fit (%s%s) although %s = %" G_GUINT64_FORMAT
              " does not\n", n->n_fit_scanned, n->scanned, n->scanned == 1 ? "" : "s", what,
              n->scan_from, past, l->str, n->n_fit_scanned > n->n_also_fits ? ", ..." : "", what,
              n->next_value);
      g_string_free (l, TRUE);
    }
  else if (n->scanned > 0)
    printf ("limit:  the search saw %s, so %u value%s above %s = %" G_GUINT64_FORMAT "%s %s "
            "simulated too: %s\n",
            n->scan_reason != NULL ? n->scan_reason : "values that do not behave like a threshold",
            n->scanned, n->scanned == 1 ? "" : "s", what, n->scan_from, past,
            n->scanned == 1 ? "was" : "were",
            n->scanned == 1 ? "it does not fit" : "none of them fits");
  if (n->why != NULL)
    printf ("why:    %s\n", n->why);
  if (n->advice != NULL)
    printf ("        %s\n", n->advice);
  if (n->skipped != NULL)
    printf ("note:   %s\n", n->skipped);
  if (n->baseline != NULL)
    printf ("note:   %s\n", n->baseline);
}

static void
print_report (const CliFitReport *r, CliFitTarget target)
{
  const double GiB = 1024.0 * 1024 * 1024;
  double base = cli_fit_report_baseline_tokens (r);
  gboolean stack = target == CLI_FIT_STACK && cli_fit_report_n_candidates (r) > 0;
  const CliFitCandidate *given = stack ? cli_fit_report_candidate (r, 0) : NULL;
  gboolean have_given = given != NULL && !isnan (given->step_time);
  /* a [baseline] group other than the scenario as given gets its own column */
  gboolean relative = stack && !isnan (base) && base > 0
                      && !(have_given && base == given->tokens_per_s);
  printf ("memory: what the whole run needs on the device, the CUDA context included: the most "
          "of model loading,\nthe first step (where torch.optim creates the optimizer states; "
          "DeepSpeed's ZeRO makes them at the load) and the steady-state step;\na candidate "
          "fits when none of them runs out of memory; an OOM candidate's \"demands\" is on "
          "this GPU:\na GPU of that size can still fall short (its allocator caches more "
          "before it must release): stepsim run finds the size that holds it\n");
  printf ("%-4s %-9s %-40s %10s %10s %12s%s%s\n", "", "verdict", "candidate", "step", "tokens/s",
          "memory", have_given ? "  saves (vs as given)  throughput     step" : "",
          relative ? "  vs baseline" : "");
  for (guint i = 0; i < cli_fit_report_n_candidates (r); i++)
    {
      const CliFitCandidate *c = cli_fit_report_candidate (r, i);
      printf ("%-4s %-9s %-40s", (gint) i == cli_fit_report_best (r) ? "==>" : "",
              status_word (c->status), c->label);
      if (isnan (c->step_time))
        printf (" %10s %10s %12s", "-", "-", "-");
      else
        {
          g_autofree char *rate = cli_report_format_rate (c->tokens_per_s);
          printf (" %8.3f s %10s %8.2f GiB", c->step_time, rate, c->device_used / GiB);
        }
      if (have_given && !isnan (c->step_time))
        {
          /* saves: device-used memory freed against the scenario as given (negative: it
           * needs more); costs: throughput ratio and step-time change against it */
          double saved = given->device_used - c->device_used;
          char ratio[32], step[32];
          g_snprintf (ratio, sizeof ratio, "x%.2f", c->tokens_per_s / given->tokens_per_s);
          double dt = 100 * (c->step_time / given->step_time - 1);
          g_snprintf (step, sizeof step, "%+.0f %%", fabs (dt) < 0.5 ? 0.0 : dt);
          printf ("  %8.2f GiB %5.0f %%  %10s %8s", saved / GiB, 100 * saved / given->device_used,
                  ratio, step);
        }
      else if (have_given)
        printf ("  %21s  %10s %8s", "-", "-", "-");
      if (relative && !isnan (c->tokens_per_s))
        {
          char ratio[32];
          g_snprintf (ratio, sizeof ratio, "x%.2f", c->tokens_per_s / base);
          printf ("  %11s", ratio); /* throughput relative to the baseline */
        }
      putchar ('\n');
      if (c->reason != NULL)
        printf ("%-14s %s\n", "", c->reason);
      if (c->no_change)
        printf ("%-14s %s\n", "", "not proposed: the same GPU and host memory as the scenario "
                                  "as given");
    }
  gint best = cli_fit_report_best (r);
  if (best < 0)
    {
      printf ("answer: nothing fits within the searched range\n");
      print_notes (r, target);
      return;
    }
  const CliFitCandidate *b = cli_fit_report_candidate (r, (guint) best);
  switch (target)
    {
    case CLI_FIT_MICRO_BATCH:
    case CLI_FIT_SEQ_LEN:
      {
        const CliFitNotes *n = cli_fit_report_notes (r);
        printf ("answer: largest %s that fits = %" G_GUINT64_FORMAT "%s\n",
                cli_fit_target_name (target), cli_fit_report_value (r),
                n->range_limit == 0 ? ""
                : target == CLI_FIT_MICRO_BATCH ? " (the --max-micro-batch limit; larger values "
                                                  "not tried)"
                : " (the --max-seq-len limit; larger values not tried)");
        break;
      }
    case CLI_FIT_GPUS:
      printf ("answer: fewest GPUs that fit = %" G_GUINT64_FORMAT " (%s)\n",
              cli_fit_report_value (r), b->label);
      break;
    case CLI_FIT_STACK:
      {
        g_autofree char *sets = g_strjoinv (" ", b->sets);
        printf ("answer: cheapest stack that fits = %s (%s)\n", b->label,
                b->sets[0] ? sets : "no changes");
        break;
      }
    }
  print_notes (r, target);
}

/* Not given: the limit options keep these. */
#define UNSET64 G_MININT64
#define UNSET G_MININT

/* The limit options: the search each one applies to, and its largest value — the scenario
 * loader's caps on training.micro_batch and seq_len (cli/scenario/scenario_groups.c) and on
 * cluster.gpus_per_node and nodes (hardware/cluster_spec.c). */
static const struct
{
  const char *name;
  CliFitTarget target;
  gint64 max;
} limits[] = {
  { "--max-micro-batch", CLI_FIT_MICRO_BATCH, 65536 },
  { "--max-seq-len", CLI_FIT_SEQ_LEN, 16777216 },
  { "--multiple-of", CLI_FIT_SEQ_LEN, 16777216 },
  { "--max-gpus-per-node", CLI_FIT_GPUS, HW_MAX_GPUS_PER_NODE },
  { "--max-nodes", CLI_FIT_GPUS, HW_MAX_NODES },
};

/* An option of one search (--for) that another search's option context does not know. */
typedef struct
{
  const char *option, *search;
} OptionOwner;

/* "fit: OPTION applies to --for SEARCH only" when `error` is GLib's unknown-option error
 * for one of `owners` (as "--x" or "--x=v"), else NULL. Caller frees. */
static char *
option_owner (const GError *error, const OptionOwner *owners, guint n)
{
  for (guint i = 0; error->code == G_OPTION_ERROR_UNKNOWN_OPTION && i < n; i++)
    {
      const char *at = strstr (error->message, owners[i].option);
      gsize len = strlen (owners[i].option);
      if (at != NULL && (at[len] == '\0' || at[len] == '='))
        return g_strdup_printf ("fit: %s applies to --for %s only", owners[i].option,
                                owners[i].search);
    }
  return NULL;
}

/* Usage errors of the limits and switches (a message, then 2), or 0. Each option belongs
 * to one search: given with another --for it would be ignored, so it is an error. */
static int
check_fit_options (const FitOptions *o, CliFitTarget target)
{
  const gint64 given[] = { o->max_mb, o->max_seq, o->multiple_of,
                           o->max_gpn == UNSET ? UNSET64 : o->max_gpn,
                           o->max_nodes == UNSET ? UNSET64 : o->max_nodes };
  G_STATIC_ASSERT (G_N_ELEMENTS (given) == G_N_ELEMENTS (limits));
  g_autofree char *msg = NULL;
  for (guint i = 0; i < G_N_ELEMENTS (limits) && msg == NULL; i++)
    if (given[i] == UNSET64)
      continue;
    else if (limits[i].target != target)
      msg = g_strdup_printf ("fit: %s applies to --for %s only", limits[i].name,
                             cli_fit_target_name (limits[i].target));
    else if (given[i] < 1)
      msg = g_strdup_printf ("fit: %s must be positive (got %" G_GINT64_FORMAT ")",
                             limits[i].name, given[i]);
    else if (given[i] > limits[i].max)
      msg = g_strdup_printf ("fit: %s must be at most %" G_GINT64_FORMAT " (got %" G_GINT64_FORMAT
                             ")", limits[i].name, limits[i].max, given[i]);
  if (msg == NULL && target != CLI_FIT_STACK && (o->all || o->finetune || o->optimizer))
    msg = g_strdup_printf ("fit: %s applies to --for stack only",
                           o->all ? "--all" : o->finetune ? "--allow-finetune"
                                                          : "--allow-optimizer-change");
  if (msg == NULL)
    return 0;
  cli_error (msg);
  return 2;
}

static int
parse_fit_options (int *argc, char ***argv, FitOptions *o, CliFitOptions *opt,
                   CliFitTarget *target)
{
  GOptionEntry entries[] = {
    { "for", 'f', 0, G_OPTION_ARG_STRING, &o->target,
      "what to search: micro_batch, seq_len, gpus, stack or cost (cost: its own options, see "
      "stepsim fit --for cost --help)", "TARGET" },
    { "set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &o->sets,
      "override a scenario value (repeatable)", "GROUP.KEY=VALUE" },
    { "max-micro-batch", 0, 0, G_OPTION_ARG_INT64, &o->max_mb,
      "micro_batch: largest micro-batch tried (default 4096, at most 65536)", "N" },
    { "max-seq-len", 0, 0, G_OPTION_ARG_INT64, &o->max_seq,
      "seq_len: largest sequence tried (default 1048576, at most 16777216)", "N" },
    { "multiple-of", 0, 0, G_OPTION_ARG_INT64, &o->multiple_of,
      "seq_len: sequence lengths tried are multiples of N (default 1) and of what the "
      "scenario's tp, cp, ep need", "N" },
    { "max-gpus-per-node", 0, 0, G_OPTION_ARG_INT, &o->max_gpn,
      "gpus: GPUs per node tried (default: the scenario's node's, at least 8; at most 72)",
      "N" },
    { "max-nodes", 0, 0, G_OPTION_ARG_INT, &o->max_nodes,
      "gpus: nodes tried (default 64, at most " G_STRINGIFY (HW_MAX_NODES) ")", "N" },
    { "allow-finetune", 0, 0, G_OPTION_ARG_NONE, &o->finetune,
      "stack: also try LoRA and QLoRA (fine-tuning methods)", NULL },
    { "allow-optimizer-change", 0, 0, G_OPTION_ARG_NONE, &o->optimizer,
      "stack: also try the 8-bit optimizers (adamw_8bit, paged_adamw_8bit) in place of AdamW",
      NULL },
    { "all", 0, 0, G_OPTION_ARG_NONE, &o->all,
      "stack: evaluate every candidate, not only up to the first that fits", NULL },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "SCENARIO.ini — the largest micro-batch or sequence, the fewest GPUs, the cheapest "
    "technique stack that fits, or (--for cost) the cheapest plan within a deadline");
  g_option_context_set_description (
    ctx, "An option marked with a search (micro_batch:, seq_len:, gpus:, stack:) applies to "
         "that --for only;\ngiven with another it is a usage error (exit 2).\n\n"
         "A candidate fits when the whole run fits: model loading (QLoRA's quantization\n"
         "transients), the first step (PyTorch optimizers create their states at its\n"
         "optimizer step, among the blocks its backward freed) and the steady-state step\n"
         "replayed on the allocator the first step left, each with the CUDA context and\n"
         "none out of memory (models/plan/simulate.h lifetime_device, gpu_fits).\n\n"
         "Beside the answer: micro_batch / seq_len check the boundary (the answer fits, the\n"
         "next value does not), name an allocator cliff (the bytes in use would fit, what\n"
         "the caching allocator reserves does not) with what fits under [allocator]\n"
         "expandable_segments = true, scan above the answer when the values do not behave\n"
         "like a threshold and list any that fit again; seq_len of a learned-position model\n"
         "says when max_position_embeddings, not memory, is the limit, and estimates memory's\n"
         "(~). gpus says, when nothing fits, the per-GPU floor the data-parallel mode leaves\n"
         "and what would help. stack tries only changes that lower memory, and shows what\n"
         "each saves (GiB, %) and costs (throughput x, step time) against the scenario as\n"
         "given.\n\n"
         "--for cost --deadline TIME [--gpus A,B,...] [--max-gpus N] [--allow-finetune]: the\n"
         "cheapest GPU type, count and stack that fits and trains the scenario's [plan] within\n"
         "TIME at its [cost] prices (stepsim fit --for cost --help).");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, argc, argv, &error))
    {
      /* --for cost's own options (fit_cost_command) given to another search: say whose
       * they are, as check_fit_options does for the others' */
      static const OptionOwner cost_only[] = { { "--deadline", "cost" }, { "--gpus", "cost" },
                                               { "--max-gpus", "cost" } };
      g_autofree char *whose = option_owner (error, cost_only, G_N_ELEMENTS (cost_only));
      if (whose != NULL)
        return cli_error (whose), 2;
      g_autofree char *msg = cli_option_error_message ("fit", error);
      return cli_error (msg), 2;
    }
  /* what --for takes, also when it is missing or empty (QA: "--for must be" read as if
   * given; --for '' said "--for : expected …") */
  if (o->target == NULL || *o->target == '\0')
    return cli_error ("fit: --for TARGET is required, what to search: micro_batch, seq_len, "
                      "gpus, stack or cost (see stepsim fit --help)"), 2;
  if (*argc != 2)
    return cli_error ("fit: expected exactly one scenario file (see stepsim fit --help)"), 2;
  if (!cli_sweep_check_sets ("--set", (const char *const *) o->sets, &error))
    return cli_error (error->message), 2;
  cli_sweep_sets_from_cwd (o->sets);
  if (!cli_fit_target_from_string (o->target, target))
    {
      g_autofree char *msg = g_strdup_printf ("fit: --for %s: expected micro_batch, seq_len, "
                                              "gpus, stack or cost", o->target);
      return cli_error (msg), 2;
    }
  int rc = check_fit_options (o, *target);
  if (rc != 0)
    return rc;
  cli_fit_options_init (opt);
  opt->max_micro_batch = o->max_mb != UNSET64 ? (guint64) o->max_mb : opt->max_micro_batch;
  opt->max_seq_len = o->max_seq != UNSET64 ? (guint64) o->max_seq : opt->max_seq_len;
  opt->multiple_of = o->multiple_of != UNSET64 ? (guint64) o->multiple_of : opt->multiple_of;
  opt->max_gpus_per_node = o->max_gpn != UNSET ? (guint) o->max_gpn : opt->max_gpus_per_node;
  opt->max_nodes = o->max_nodes != UNSET ? (guint) o->max_nodes : opt->max_nodes;
  opt->allow_finetune = o->finetune;
  opt->allow_optimizer = o->optimizer;
  opt->all = o->all;
  if (opt->multiple_of > opt->max_seq_len)
    {
      g_autofree char *msg = g_strdup_printf (
        "fit: --multiple-of %" G_GUINT64_FORMAT " is above the largest sequence tried (%"
        G_GUINT64_FORMAT "; see --max-seq-len)", opt->multiple_of, opt->max_seq_len);
      return cli_error (msg), 2;
    }
  return 0;
}

/* Whether argv asks for --for cost (then cli_cmd_fit hands over to fit_cost_command). */
static gboolean
fit_cost_requested (int argc, char **argv)
{
  for (int i = 1; i < argc; i++)
    if (strcmp (argv[i], "--for=cost") == 0 || strcmp (argv[i], "-f=cost") == 0
        || strcmp (argv[i], "-fcost") == 0 /* attached, as cli_option_parse reads it */
        || ((strcmp (argv[i], "--for") == 0 || strcmp (argv[i], "-f") == 0) && i + 1 < argc
            && strcmp (argv[i + 1], "cost") == 0))
      return TRUE;
  return FALSE;
}

/* `fit --for cost` (cli/study/fit_cost.h): its own options; the search prints its table. */
static int
fit_cost_command (int argc, char **argv)
{
  g_autofree char *target = NULL, *deadline = NULL, *gpus = NULL;
  g_auto (GStrv) sets = NULL;
  gint max_gpus = G_MININT;
  gboolean finetune = FALSE;
  GOptionEntry entries[] = {
    { "for", 'f', 0, G_OPTION_ARG_STRING, &target, "cost", "cost" },
    { "deadline", 0, 0, G_OPTION_ARG_STRING, &deadline,
      "the training run must finish within this time, with its unit (30d, 720 h; at most "
      "36500 d)", "TIME" },
    { "gpus", 0, 0, G_OPTION_ARG_STRING, &gpus,
      "GPU types to try, catalog names (default: the scenario's)", "A,B,…" },
    { "max-gpus", 0, 0, G_OPTION_ARG_INT, &max_gpus, "most GPUs tried (default 64)", "N" },
    { "allow-finetune", 0, 0, G_OPTION_ARG_NONE, &finetune, "also try LoRA and QLoRA", NULL },
    { "set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "override a scenario value (repeatable)",
      "GROUP.KEY=VALUE" },
    { NULL },
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "SCENARIO.ini --for cost --deadline TIME — the cheapest GPU type, count and stack that "
    "fits and trains [plan] tokens within TIME");
  g_option_context_set_description (
    ctx, "Prices come from the scenario's [cost]: gpu_hour (any GPU type) or gpu_hour.TYPE\n"
         "(one type; e.g. gpu_hour.H100-SXM = 2.49 USD/h). Exit status: 0 when the search ran\n"
         "(also when no plan meets the deadline), 1 bad input, 2 usage error.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!cli_option_parse (ctx, entries, &argc, &argv, &error))
    {
      /* the other searches' options given to --for cost: say whose they are, as the other
       * direction does (cli_cmd_fit's parse) */
      static const OptionOwner other[] = {
        { "--max-micro-batch", "micro_batch" }, { "--max-seq-len", "seq_len" },
        { "--multiple-of", "seq_len" },         { "--max-gpus-per-node", "gpus" },
        { "--max-nodes", "gpus" },              { "--all", "stack" },
        { "--allow-optimizer-change", "stack" },
      };
      g_autofree char *whose = option_owner (error, other, G_N_ELEMENTS (other));
      if (whose != NULL)
        return cli_error (whose), 2;
      g_autofree char *msg = cli_option_error_message ("fit", error);
      return cli_error (msg), 2;
    }
  if (argc != 2)
    return cli_error ("fit: expected exactly one scenario file (see stepsim fit --help)"), 2;
  if (!cli_sweep_check_sets ("--set", (const char *const *) sets, &error))
    return cli_error (error->message), 2;
  cli_sweep_sets_from_cwd (sets);
  cli_scenario_warn_baseline_sets ((const char *const *) sets, NULL); /* no baseline runs */
  CliFitCostOptions s = { .path = argv[1], .sets = sets, .max_gpus = 64,
                          .allow_finetune = finetune, .gpus = gpus };
  if (deadline == NULL)
    return cli_error ("fit: --for cost needs --deadline TIME (e.g. --deadline 30d)"), 2;
  /* at most 100 years (36500 d): a longer one is no constraint, and prints as nonsense */
  if (!sim_units_parse (deadline, SIM_DIM_TIME, &s.deadline, &error) || !(s.deadline > 0)
      || !(s.deadline <= 36500 * 86400.0))
    {
      g_autofree char *m = g_strdup_printf (
          "fit: --deadline: %s", error ? error->message
                                 : "must be positive and at most 36500 d (100 years)");
      return cli_error (m), 2;
    }
  if (max_gpus != G_MININT && (max_gpus < 1 || max_gpus > HW_MAX_GPUS))
    {
      g_autofree char *m = g_strdup_printf ("fit: --max-gpus must be in [1, %d] (got %d)",
                                            HW_MAX_GPUS, max_gpus);
      return cli_error (m), 2;
    }
  if (max_gpus != G_MININT)
    s.max_gpus = (guint) max_gpus;
  g_autofree char *message = NULL;
  int status = cli_fit_cost_run (&s, &message);
  if (message != NULL)
    cli_error (message);
  return status;
}

int
cli_cmd_fit (int argc, char **argv)
{
  if (fit_cost_requested (argc, argv))
    return fit_cost_command (argc, argv); /* its own options, above */
  FitOptions o = { .max_mb = UNSET64, .max_seq = UNSET64, .multiple_of = UNSET64,
                   .max_gpn = UNSET, .max_nodes = UNSET };
  CliFitOptions opt;
  CliFitTarget target = CLI_FIT_STACK;
  int rc = parse_fit_options (&argc, &argv, &o, &opt, &target);
  if (rc == 0)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (CliFitReport) r = cli_fit_search (argv[1], (const char *const *) o.sets,
                                                   target, &opt, &error);
      if (r == NULL)
        {
          cli_error (error->message);
          rc = 1;
        }
      else
        print_report (r, target);
    }
  g_free (o.target);
  g_strfreev (o.sets);
  return rc;
}
