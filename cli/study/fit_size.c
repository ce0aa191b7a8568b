/* cli/study/fit_size.c — `fit --for micro_batch|seq_len`: the largest value that fits, checked.
 *
 * The bisection of cli_fit_largest assumes that fitting is a threshold. Memory is not always
 * monotone in the searched value: the caching allocator rounds requests and splits cached
 * segments (models/memory/allocator.h), a paged optimizer pages states out, bucket and checkpoint
 * layouts change in steps. So the answer is verified (it fits, the next multiple does not),
 * and when the values simulated do not look like a threshold — a failure whose bytes in use
 * would fit (an allocator cliff), or a peak allocated that falls while the value grows — a
 * local scan above the answer looks for values that fit again (then the fitting set is not
 * an interval). Where a cliff was seen, the same search with [allocator]
 * expandable_segments = true (PyTorch's remedy for fragmentation) says what would fit there.
 *
 * seq_len of a learned-position model (gpt2, bert, mpt with learned_pos_emb): the loader
 * rejects a seq_len above max_position_embeddings (models/plan/plan.c), so the search stops at
 * it; when it binds, a second search past it estimates what memory alone would allow, each
 * probe with the position table extended to the probed length.
 */
#include "config.h"
#include "cli/study/fit-private.h"

#include <stdlib.h>
#include <string.h>
#include "models/arch/arch.h"
#include "models/plan/plan.h"

/* Values scanned above an answer when the bracket is inconsistent: the next SCAN_NEAR
 * multiples, and SCAN_SPREAD more spread evenly up to the largest value simulated. */
#define SCAN_NEAR 16
#define SCAN_SPREAD 16
/* A fall in peak allocated memory smaller than this is rounding, not a non-monotone peak. */
#define FALL_TOLERANCE (1024.0 * 1024)

static guint64
gcd (guint64 a, guint64 b)
{
  while (b != 0)
    {
      guint64 r = a % b;
      a = b, b = r;
    }
  return a;
}

static const CliFitCandidate *
cand (const Ctx *ctx, guint i)
{
  return cli_fit_report_candidate (ctx->report, i);
}

/* The value a candidate of this probe stands for (its first override's number). */
static guint64
value_of (const CliFitCandidate *c)
{
  const char *eq = strchr (c->sets[0], '=');
  return eq != NULL ? g_ascii_strtoull (eq + 1, NULL, 10) : 0;
}

/* What, in the values `seen` (candidate indices), does not behave like a threshold: an
 * allocator cliff, a fit above a miss, or a peak allocated that falls as the value grows
 * (a static phrase for the notes); NULL when they look like a threshold. */
static const char *
inconsistent (const Ctx *ctx, GArray *seen)
{
  for (guint a = 0; a < seen->len; a++)
    {
      const CliFitCandidate *x = cand (ctx, g_array_index (seen, guint, a));
      if (x->allocator_cliff)
        return "a value that failed on the allocator although its bytes in use fit";
      for (guint b = 0; b < seen->len; b++)
        {
          const CliFitCandidate *y = cand (ctx, g_array_index (seen, guint, b));
          if (value_of (x) >= value_of (y) || x->status == CLI_FIT_INFEASIBLE
              || y->status == CLI_FIT_INFEASIBLE)
            continue;
          if (x->status != CLI_FIT_FITS && y->status == CLI_FIT_FITS)
            return "a smaller value that failed while a larger one fit";
          if (x->peak_allocated > y->peak_allocated + FALL_TOLERANCE)
            return "peak allocated memory falling as the value grew";
        }
    }
  return NULL;
}

static void
add_also_fits (CliFitNotes *n, guint64 x)
{
  for (guint i = 0; i < n->n_also_fits; i++)
    if (n->also_fits[i] == x)
      return;
  if (n->n_also_fits < G_N_ELEMENTS (n->also_fits))
    n->also_fits[n->n_also_fits++] = x;
}

static int
cmp_u64 (gconstpointer a, gconstpointer b)
{
  guint64 x = *(const guint64 *) a, y = *(const guint64 *) b;
  return x < y ? -1 : x > y;
}

/* Scans multiples of `step` above v (fits) up to `top`: the next SCAN_NEAR, then SCAN_SPREAD
 * spread evenly; each that fits goes to the notes' also_fits. */
static void
scan_above (Probe *p, guint64 v, guint64 top, guint64 step)
{
  CliFitNotes *n = &p->ctx->report->notes;
  g_autoptr (GHashTable) done = g_hash_table_new (g_int64_hash, g_int64_equal);
  g_autoptr (GArray) xs = g_array_new (FALSE, FALSE, sizeof (guint64));
  for (guint64 k = 1; k <= SCAN_NEAR && v + k * step <= top; k++)
    {
      guint64 x = v + k * step;
      g_array_append_val (xs, x);
    }
  for (guint64 j = 1; j <= SCAN_SPREAD && top > v; j++)
    {
      guint64 x = v + (top - v) / step * j / (SCAN_SPREAD + 1) * step;
      if (x > v + SCAN_NEAR * step)
        g_array_append_val (xs, x);
    }
  for (guint i = 0; i < xs->len; i++)
    {
      guint64 *x = &g_array_index (xs, guint64, i);
      if (g_hash_table_contains (done, x))
        continue;
      g_hash_table_add (done, x);
      n->scanned++;
      if (cli_fit_probe_fits (*x, p))
        n->n_fit_scanned++, add_also_fits (n, *x);
    }
  qsort (n->also_fits, n->n_also_fits, sizeof n->also_fits[0], cmp_u64);
}

/* The largest multiple of `step` in [lo, hi] that fits under probe p (0 when lo does not),
 * verified; fills the notes' cliff, scan and expandable fields. */
static guint64
memory_limit (Probe *p, const CliScenario *sc, guint64 lo, guint64 hi, guint64 step)
{
  CliFitNotes *n = &p->ctx->report->notes;
  g_autoptr (GArray) seen = g_array_new (FALSE, FALSE, sizeof (guint));
  p->seen = seen;
  guint64 v = cli_fit_largest (lo, hi, step, cli_fit_probe_fits, p);
  guint64 top = 0; /* the largest value simulated: the end of the bracket */
  gboolean cliff = FALSE;
  for (guint i = 0; i < seen->len; i++)
    {
      const CliFitCandidate *c = cand (p->ctx, g_array_index (seen, guint, i));
      top = MAX (top, value_of (c));
      cliff |= c->allocator_cliff;
    }
  if (v > 0 && v + step <= hi)
    {
      /* the boundary: v fits (the search's answer) and the next multiple does not */
      const CliFitCandidate *next = cand (p->ctx, cli_fit_probe_index (p, v + step));
      if (next->status != CLI_FIT_FITS)
        n->next_value = v + step;
      if (next->allocator_cliff)
        n->cliff_at = v + step;
      const char *odd = inconsistent (p->ctx, seen);
      if (odd != NULL)
        {
          n->scan_reason = odd, n->scan_from = v;
          scan_above (p, v, MAX (top, v + step), step);
        }
      for (guint i = 0; i < seen->len; i++)
        cliff |= cand (p->ctx, g_array_index (seen, guint, i))->allocator_cliff;
    }
  p->seen = NULL;
  if (cliff && !sc->stack.expandable_segments)
    {
      /* Expandable segments map pages into one growing segment per pool, so a request
       * never fails for want of a contiguous cached block (models/memory/allocator.h). */
      Probe q = *p;
      q.extra = "allocator.expandable_segments=true";
      q.extra_label = ", expandable_segments";
      guint64 from = v > 0 && cli_fit_probe_fits (v, &q) ? v : lo;
      n->expandable_value = cli_fit_largest (from, hi, step, cli_fit_probe_fits, &q);
    }
  return v;
}

void
cli_fit_search_size (Ctx *ctx, const CliScenario *sc, CliFitTarget target,
                     const CliFitOptions *opt)
{
  gboolean mb = target == CLI_FIT_MICRO_BATCH;
  Probe p = { ctx, mb ? "training.micro_batch" : "training.seq_len",
              mb ? "micro_batch" : "seq_len", 0, 0, NULL, NULL, NULL, 0, 0 };
  CliFitNotes *n = &ctx->report->notes;
  guint64 step = mb ? 1 : MAX (opt->multiple_of, 1);
  guint64 lo = step; /* the least value searched, a multiple of step */
  if (!mb)
    {
      /* only the lengths the scenario can run: a multiple of what its parallelism splits
       * evenly (tp under sequence parallelism, 2·cp, ep: model_plan_seq_len_multiple) and
       * at least the chunks of a chunked loss (scenario_memory.c), else every probe below
       * is "not feasible" and the search, starting at seq_len = 1, found nothing */
      guint64 need = model_plan_seq_len_multiple (sc->arch, &sc->stack, &sc->par);
      step = step / gcd (step, need) * need;
      ModelLossImpl loss = sc->stack.framework.loss;
      guint64 least = loss == MODEL_LOSS_CHUNKED || loss == MODEL_LOSS_CHUNKED_HEAD
                        ? MAX (sc->stack.framework.loss_chunks, 1) : 1;
      lo = (least + step - 1) / step * step;
      if (lo > opt->max_seq_len) /* none in range: the first value's rejection says why */
        step = lo = MAX (opt->multiple_of, 1);
    }
  guint64 hi = mb ? opt->max_micro_batch : opt->max_seq_len;
  /* learned positions: the loader's limit (models/plan/plan.c check_stack) caps the search */
  guint64 cap = !mb && sc->arch->learned_positions ? sc->arch->max_positions : 0;
  guint64 hi_in = cap > 0 ? MIN (hi, cap) : hi;
  guint64 v = hi_in >= lo ? cli_fit_largest (lo, hi_in, step, cli_fit_probe_fits, &p) : 0;
  if (cap > 0 && hi_in < hi && (v == 0 ? hi_in < lo : v + step > hi_in))
    {
      /* the position table, not memory, ends the search: estimate memory's own limit */
      n->position_limit = cap;
      p.positions_cap = cap;
      n->memory_value = memory_limit (&p, sc, v > 0 ? v : lo, hi, step);
    }
  else
    v = memory_limit (&p, sc, lo, hi_in, step); /* the same probes: memo hits */
  ctx->report->value = v;
  /* the answer is the end of the range searched: larger values were not tried */
  if (v > 0 && n->position_limit == 0 && v + step > hi)
    n->range_limit = hi;
  g_autofree char *label = g_strdup_printf ("%s=%" G_GUINT64_FORMAT, p.name, v);
  ctx->report->best = v > 0 ? cli_fit_find_label (ctx->report, label) : -1;
}
