/* hardware/collective.c — running a lowered collective on the fluid, its closed-form time on
 * an idle cluster, names and nccl-tests bandwidths; see collective.h. The algorithms (the
 * lowering to phases of flows) are in hardware/collective_lower.c, the closed form of a
 * lowered plan (its derivation) in hardware/collective_time.c.
 *
 * Running: phase k's flows start together, each a fluid activity of its bytes with weight 1
 * on every resource of its route (hardware/topology.h) after its latency; when the last one
 * completes, phase k+1 starts; after the last phase `done` is called. An empty plan (one
 * rank, zero bytes) completes through a zero-latency activity with no resources, so `done`
 * always comes from an engine event.
 *
 * Units: B, s, B/s.
 */
#include "config.h"
#include "hardware/collective-private.h"
#include "hardware/cluster-private.h"
#include "hardware/topology.h"
#include "sim/vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[HW_N_COLLECTIVES] = {
  [HW_COLLECTIVE_ALL_REDUCE] = "all_reduce",         [HW_COLLECTIVE_ALL_GATHER] = "all_gather",
  [HW_COLLECTIVE_REDUCE_SCATTER] = "reduce_scatter", [HW_COLLECTIVE_BROADCAST] = "broadcast",
  [HW_COLLECTIVE_ALL_TO_ALL] = "all_to_all",         [HW_COLLECTIVE_SEND_RECV] = "send_recv",
};

static const char *const algorithm_names[HW_N_ALGORITHMS + 1] = {
  [HW_ALGORITHM_AUTO] = "auto", [HW_ALGORITHM_RING] = "ring",
  [HW_ALGORITHM_TREE] = "tree", [HW_ALGORITHM_HIERARCHICAL] = "hierarchical",
  [HW_ALGORITHM_NVLS] = "nvls", [HW_N_ALGORITHMS] = NULL,
};

const char *
hw_collective_kind_name (HwCollectiveKind kind)
{
  g_return_val_if_fail (kind < HW_N_COLLECTIVES, NULL);
  return kind_names[kind];
}

const char *
hw_collective_algorithm_name (HwCollectiveAlgorithm algorithm)
{
  g_return_val_if_fail (algorithm < HW_N_ALGORITHMS, NULL);
  return algorithm_names[algorithm];
}

gboolean
hw_collective_algorithm_from_string (const char *text, HwCollectiveAlgorithm *out, GError **error)
{
  g_return_val_if_fail (text != NULL && out != NULL, FALSE);
  for (guint i = 0; i < HW_N_ALGORITHMS; i++)
    if (g_strcmp0 (text, algorithm_names[i]) == 0)
      {
        *out = (HwCollectiveAlgorithm) i;
        return TRUE;
      }
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown collective algorithm '%s' (expected auto, ring, tree, hierarchical or nvls)",
               text);
  return FALSE;
}

/* ---- running ---------------------------------------------------------------------------- */

typedef struct
{
  HwCluster *cluster;
  GPtrArray *plan;
  guint phase;       /* index of the running phase */
  guint outstanding; /* flows of it not yet completed */
  HwCollectiveDoneFunc done;
  gpointer user_data;
  SimVec holds;      /* SimActivityId: the SMs its kernels hold on each rank */
  SimVec sm_ranks;   /* guint: ranks whose SMs it holds (hw_cluster_sm_hold_begin) */
  double comm_sms;   /* SMs its kernels hold per GPU, or < 0: the GPU's comm_sm_fraction */
} Run;

/* The fraction of rank r's SMs the collective's kernels hold: comm_sms / sm_count when the
 * caller gave a count (hw_collective_start_sms; capped at 0.9, so that a kernel beside it
 * still runs), else the GPU's NCCL comm_sm_fraction. */
static double
sm_fraction (const Run *run, guint r)
{
  const HwGpuSpec *g = hw_cluster_gpu (run->cluster, r);
  if (run->comm_sms < 0 || g->sm_count <= 0)
    return g->comm_sm_fraction;
  return MIN (0.9, run->comm_sms / g->sm_count);
}

static void start_phase (Run *run);

static void
flow_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) fluid, (void) id;
  Run *run = user_data;
  g_assert (run->outstanding > 0);
  if (--run->outstanding > 0)
    return;
  run->phase++;
  start_phase (run);
}

/* Frees a run's own memory (its flows, holds and SM counts are the fluid's and the
 * cluster's: finish ends them, a reset drops them). */
static void
run_free (gpointer data)
{
  Run *run = data;
  sim_vec_clear (&run->holds);
  sim_vec_clear (&run->sm_ranks);
  g_ptr_array_unref (run->plan);
  g_free (run);
}

static void run_recycle (Run *run);

static void
finish (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) fluid, (void) id;
  Run *run = user_data;
  g_hash_table_steal (hw_cluster_live_collectives (run->cluster, run_free), run);
  for (guint i = 0; i < run->holds.len; i++)
    sim_fluid_cancel (hw_cluster_fluid (run->cluster), SIM_VEC_AT (&run->holds, SimActivityId, i));
  for (guint i = 0; i < run->sm_ranks.len; i++)
    {
      guint r = SIM_VEC_AT (&run->sm_ranks, guint, i);
      hw_cluster_sm_hold_end (run->cluster, r, sm_fraction (run, r));
    }
  if (run->done != NULL)
    run->done (run->user_data);
  run_recycle (run);
}

static void
start_phase (Run *run)
{
  SimFluid *fluid = hw_cluster_fluid (run->cluster);
  if (run->phase == run->plan->len)
    {
      /* From inside a completion callback: finish at once; the engine event is the one
       * that completed the last flow. */
      finish (fluid, 0, run);
      return;
    }
  const HwTopology *topo = hw_cluster_topology (run->cluster);
  GArray *flows = g_ptr_array_index (run->plan, run->phase);
  run->outstanding = flows->len;
  for (guint i = 0; i < flows->len; i++)
    {
      const HwFlow *f = &g_array_index (flows, HwFlow, i);
      SimResourceId route[HW_ROUTE_MAX];
      SimUse uses[HW_ROUTE_MAX];
      guint n = hw_topology_route (topo, f->src, f->dst, route, NULL);
      for (guint k = 0; k < n; k++)
        uses[k] = (SimUse){ route[k], 1.0 };
      sim_fluid_start (fluid, f->bytes, f->latency, f->rate, uses, n, flow_done, run);
    }
}

/* While a collective runs its kernels hold comm_sm_fraction f of each participant's SMs
 * (hardware/catalog.c). Modelled as an activity on the GPU's compute resource that never
 * completes on its own, with a tiny rate bound B and weight f/B: max-min filling saturates
 * it at once at f, and a kernel running meanwhile gets the remaining 1 − f, so a
 * compute-bound kernel overlapping a collective takes 1/(1 − f) times longer. Cancelled
 * when the collective completes. The hold is also registered with the cluster
 * (hw_cluster_sm_hold_begin/_end, expected to last the plan's time alone), so that a
 * persistent GEMM starting meanwhile waits for its tail (hardware/cluster.c).
 * The kernels also move data through HBM: every byte a GPU sends is read from its memory and
 * every byte it receives written to it (NCCL stages both through FIFO buffers in device
 * memory, src/device/prims_simple.h, so 2 bytes of HBM per byte sent is a lower bound). A
 * GPU sending W wire bytes in a collective of idle time T thus holds h = 2W/(T·C) of its HBM
 * bandwidth C (at most 0.9), the same way; a memory-bound kernel overlapping it takes
 * 1/(1 − h) times longer (overlap slow-downs of 19 % on average, up to 40 %, are measured:
 * Lee et al., arXiv 2507.03114). Held on the n members `reps` that represent their orbit
 * under the stabilizer (rank classes; every member without), `sent`[i] the B reps[i] sends
 * in the whole plan (member_sent), t the plan's time alone. */
static void
hold_gpu (Run *run, const guint *reps, const double *sent, guint n, double t)
{
  const double bound = 1e-6, h_max = 0.9;
  SimFluid *fluid = hw_cluster_fluid (run->cluster);
  const HwTopology *topo = hw_cluster_topology (run->cluster);
  for (guint i = 0; i < n; i++)
    {
      double f = sm_fraction (run, reps[i]);
      if (f > 0)
        {
          SimUse use = { hw_topology_gpu_resource (topo, reps[i], HW_GPU_COMPUTE), f / bound };
          SimActivityId id = sim_fluid_start (fluid, 1e300, 0, bound, &use, 1, NULL, NULL);
          SIM_VEC_PUSH (&run->holds, SimActivityId, id);
          if (run->comm_sms < 0) /* NCCL's CTAs; a caller-given count (hw_collective_start_sms:
                                    TE userbuffers, which launch their GEMMs on the SMs left,
                                    set_sm_margin) leaves no persistent GEMM waiting */
            {
              hw_cluster_sm_hold_begin (run->cluster, reps[i], f, sim_fluid_now (fluid) + t);
              SIM_VEC_PUSH (&run->sm_ranks, guint, reps[i]);
            }
        }
      SimResourceId hbm = hw_topology_gpu_resource (topo, reps[i], HW_GPU_HBM);
      double c = sim_fluid_resource_capacity (fluid, hbm);
      double h = t > 0 && c > 0 ? MIN (h_max, 2 * sent[i] / (t * c)) : 0;
      if (h > 0)
        {
          SimUse use = { hbm, h * c / bound };
          SimActivityId id = sim_fluid_start (fluid, 1e300, 0, bound, &use, 1, NULL, NULL);
          SIM_VEC_PUSH (&run->holds, SimActivityId, id);
        }
    }
}

/* B each of the n members `reps` sends in the whole `plan` (into sent[0 .. n−1]), summed
 * over its flows in plan order: through the cluster's zeroed scratch (an array per call
 * cost O(cluster ranks)), cleared again. */
static void
member_sent (const HwCluster *cluster, const GPtrArray *plan, const guint *reps, guint n,
             double *out)
{
  double *sent = hw_cluster_resource_scratch (cluster, hw_cluster_n_ranks (cluster));
  for (guint p = 0; p < plan->len; p++)
    {
      GArray *flows = g_ptr_array_index (plan, p);
      for (guint k = 0; k < flows->len; k++)
        sent[g_array_index (flows, HwFlow, k).src] += g_array_index (flows, HwFlow, k).bytes;
    }
  for (guint i = 0; i < n; i++)
    out[i] = sent[reps[i]];
  for (guint p = 0; p < plan->len; p++)
    {
      GArray *flows = g_ptr_array_index (plan, p);
      for (guint k = 0; k < flows->len; k++)
        sent[g_array_index (flows, HwFlow, k).src] = 0;
    }
}

/* Every rank exists and none repeats: one pass with a bit per cluster rank, O(n + R/8)
 * instead of the pairwise O(n²) check (a 512-rank all-gather is 131 k comparisons). */
static gboolean
ranks_valid (const HwCluster *cluster, HwCollectiveKind kind, const guint *ranks, guint n)
{
  if (kind == HW_COLLECTIVE_SEND_RECV && n < 2)
    return FALSE;
  guint n_cluster = hw_cluster_n_ranks (cluster);
  g_autofree guint8 *seen = g_new0 (guint8, n_cluster / 8 + 1);
  for (guint i = 0; i < n; i++)
    {
      guint r = ranks[i];
      if (r >= n_cluster || (seen[r / 8] & (1u << (r % 8))) != 0)
        return FALSE;
      seen[r / 8] |= (guint8) (1u << (r % 8));
    }
  return TRUE;
}

/* ---- rank classes ------------------------------------------------------------------------
 *
 * With the cluster's shift group G (hw_cluster_set_shift; generated by one shift per level
 * of rank_shift.h, d_i places inside blocks of B_i ranks) one instance C of each
 * orbit of instances {g C : g ∈ G} runs. Its flows stand for every instance of the orbit: a
 * flow f of C and its images g f in g C are one orbit, and so are two flows of C that the
 * stabilizer of C maps onto each other. The stabilizer is the group of the same kind
 * generated, at every level i, by the shift by s_i inside the same blocks, s_i the least
 * multiple of d_i dividing B_i that maps C's members onto themselves (B_i when none but the
 * identity does); hw_collective_shift_invariant refuses a C that some element outside that
 * product maps onto itself. G acts freely on ranks, so each flow orbit has
 * exactly one flow of C whose source is a representative of the stabilizer, and that one
 * runs (its weights scaled by the fluid's fold); the same for the SMs and HBM its kernels
 * hold on each member. */
static int
guint_cmp (const void *a, const void *b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;
  return (x > y) - (x < y);
}

/* Whether r is one of the n sorted ranks. */
static gboolean
member (const guint *sorted, guint n, guint r)
{
  return bsearch (&r, sorted, n, sizeof (guint), guint_cmp) != NULL;
}

/* Whether the plain shift `g` maps the n ranks (sorted: the same, sorted) onto themselves. */
static gboolean
fixes (const HwRankShift *g, const guint *ranks, const guint *sorted, guint n)
{
  for (guint i = 0; i < n; i++)
    if (!member (sorted, n, hw_rank_shift_image (g, ranks[i])))
      return FALSE;
  return TRUE;
}

/* The least multiple s of `step` dividing `block`, below it, whose plain shift inside blocks
 * of `block` fixes the ranks; `block` when none does. */
static guint
least_fixing (guint total, guint block, guint step, const guint *ranks, const guint *sorted,
              guint n)
{
  /* the candidates are step · k for the divisors k of block / step, in increasing order:
   * the small ones counted up to √m, the large ones their cofactors, counted down */
  guint m = block / step, n_large = 0, root = 1;
  while ((root + 1) * (root + 1) <= m)
    root++;
  g_autofree guint *large = g_new (guint, root + 1); /* one cofactor per small divisor */
  for (guint k = 1; k <= root && k < m; k++)
    {
      if (m % k != 0)
        continue;
      HwRankShift g = hw_rank_shift_plain (total, block, step * k);
      if (fixes (&g, ranks, sorted, n))
        return step * k;
      if (m / k != k && m / k < m)
        large[n_large++] = m / k;
    }
  for (guint i = n_large; i-- > 0;)
    {
      HwRankShift g = hw_rank_shift_plain (total, block, step * large[i]);
      if (fixes (&g, ranks, sorted, n))
        return step * large[i];
    }
  return block;
}

/* Membership by binary search in a sorted copy: O(members · log members) a shift, not
 * O(cluster ranks) (this runs at every collective start). `sorted`: n entries, filled. */
static HwRankShift
stabilizer (const HwRankShift *shift, const guint *ranks, guint n, guint *sorted)
{
  memcpy (sorted, ranks, n * sizeof (guint));
  qsort (sorted, n, sizeof (guint), guint_cmp);
  HwRankShift sh = *shift;
  if (hw_rank_shift_is_identity (&sh))
    return sh;
  for (guint i = 0; i < HW_RANK_SHIFT_LEVELS; i++)
    sh.level[i].d = least_fixing (sh.n, sh.level[i].block, shift->level[i].d, ranks, sorted, n);
  return sh;
}

/* Rank offset j (< level 0's block) moved by `by` (per level i, a multiple of the level
 * below's block: the places its digit moves, rank_shift.h). */
static guint
move_offset (const HwRankShift *group, guint j, const guint *by)
{
  guint moved = 0;
  for (guint i = 0; i < HW_RANK_SHIFT_LEVELS; i++)
    {
      guint b = group->level[i].block;
      guint below = i + 1 < HW_RANK_SHIFT_LEVELS ? group->level[i + 1].block : 1;
      guint digit = j % b - j % below; /* this level's digit, in ranks */
      moved += (digit + by[i]) % b;
    }
  return moved;
}

/* Whether some element of `group` outside the product `stab` maps the n ranks onto
 * themselves. Such an element takes the least member c0 to a member c of its outermost
 * block: one candidate per member, found from the offsets (level i moves the digit
 * ⌊(r mod B_i) / B_{i+1}⌋, rank_shift.h), checked when it is no element of `stab`. */
static gboolean
diagonal_fixes (const HwRankShift *group, const HwRankShift *stab, const guint *ranks,
                const guint *sorted, guint n)
{
  guint b = group->level[0].block, c0 = sorted[0], j0 = c0 % b;
  for (guint i = 1; i < n; i++)
    {
      guint c = sorted[i], j = c % b;
      if (c / b != c0 / b)
        continue;
      guint by[HW_RANK_SHIFT_LEVELS]; /* per level: places its digit moves, mod its block */
      gboolean in_group = TRUE, in_stab = TRUE;
      for (guint l = 0; l < HW_RANK_SHIFT_LEVELS; l++)
        {
          guint bl = group->level[l].block;
          guint below = l + 1 < HW_RANK_SHIFT_LEVELS ? group->level[l + 1].block : 1;
          guint dj = j % bl - j % below, d0 = j0 % bl - j0 % below;
          by[l] = (dj + bl - d0) % bl;
          in_group = in_group && by[l] % group->level[l].d == 0;
          in_stab = in_stab && by[l] % stab->level[l].d == 0;
        }
      if (!in_group)
        continue; /* no element of the group takes c0 to c */
      if (in_stab)
        continue; /* an element of stab: it fixes them */
      gboolean all = TRUE;
      for (guint k = 0; all && k < n; k++)
        {
          guint r = ranks[k], q = r % b;
          all = member (sorted, n, r - q + move_offset (group, q, by));
        }
      if (all)
        return TRUE;
    }
  return FALSE;
}

/* A new plan of the flows of `plan` whose source represents its orbit under the stabilizer
 * `stab` (every flow under the identity), in the same phases and order; `plan` unchanged.
 * Only the kept flows are copied (a 131,072-rank ring's 4 MB of flows were copied whole
 * and then filtered down to a few). */
static GPtrArray *
kept_flows (const GPtrArray *plan, const HwRankShift *stab)
{
  GPtrArray *kept = g_ptr_array_new_full (plan->len, (GDestroyNotify) g_array_unref);
  gboolean all = hw_rank_shift_is_identity (stab);
  for (guint p = 0; p < plan->len; p++)
    {
      GArray *flows = g_ptr_array_index (plan, p);
      if (all)
        {
          g_ptr_array_add (kept, g_array_copy (flows));
          continue;
        }
      GArray *phase = g_array_new (FALSE, FALSE, sizeof (HwFlow));
      for (guint i = 0; i < flows->len; i++)
        if (hw_rank_shift_is_rep (stab, g_array_index (flows, HwFlow, i).src))
          g_array_append_val (phase, g_array_index (flows, HwFlow, i));
      g_assert (phase->len > 0 || flows->len == 0); /* every orbit has a representative */
      g_ptr_array_add (kept, phase);
    }
  return kept;
}

/* Flows as values (source, destination, bytes, latency, rate). */
static gboolean
flow_equal (const HwFlow *f, const HwFlow *g)
{
  return f->src == g->src && f->dst == g->dst && f->bytes == g->bytes
         && f->latency == g->latency && f->rate == g->rate;
}

/* Whether the images of a phase's n flows under the plain shift `g` are the same multiset
 * as the flows: two flows between the same pair (NCCL's two trees over 3 nodes share the
 * edge 2 → 0) load its links twice, so the images must come with the same multiplicities,
 * not merely name the same pairs. Each image takes an unused equal flow of the same source
 * (found through the flows indexed by source, `first`/`order`: n_cluster + 1 and n
 * entries); equality being an equivalence, taking any such flow is as good as any other,
 * so this holds exactly when a one-to-one matching exists. O(n · flows per source +
 * n_cluster), no hashing (a hash of every flow per generator was most of the class search
 * at 131,072 ranks). */
static gboolean
phase_maps_onto_itself (const HwFlow *flows, guint n, const HwRankShift *g, guint n_cluster,
                        guint *first, guint *order, guint8 *used)
{
  memset (first, 0, (n_cluster + 1) * sizeof (guint));
  for (guint i = 0; i < n; i++)
    first[flows[i].src + 1]++;
  for (guint r = 0; r < n_cluster; r++)
    first[r + 1] += first[r];
  for (guint i = 0; i < n; i++)
    order[first[flows[i].src]++] = i; /* first[r] now the end of r's flows */
  for (guint r = n_cluster; r > 0; r--)
    first[r] = first[r - 1];
  first[0] = 0;
  memset (used, 0, n);
  for (guint i = 0; i < n; i++)
    {
      HwFlow img = flows[i];
      img.src = hw_rank_shift_image (g, img.src);
      img.dst = hw_rank_shift_image (g, img.dst);
      gboolean found = FALSE;
      for (guint k = first[img.src]; !found && k < first[img.src + 1]; k++)
        if (!used[order[k]] && flow_equal (&img, &flows[order[k]]))
          used[order[k]] = 1, found = TRUE;
      if (!found)
        return FALSE;
    }
  return TRUE;
}

/* hw_collective_shift_invariant's answer, computed (arguments checked there). */
static gboolean
shift_invariant_answer (const HwCluster *cluster, HwCollectiveKind kind,
                        HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                        double bytes, const HwRankShift *shift)
{
  g_autofree guint *sorted = g_new (guint, n_ranks);
  HwRankShift sh = stabilizer (shift, ranks, n_ranks, sorted); /* not yet the cluster's */
  if (diagonal_fixes (shift, &sh, ranks, sorted, n_ranks))
    return FALSE; /* a stabilizer that is no product of the two shifts' */
  if (hw_rank_shift_is_identity (&sh))
    return TRUE; /* only the identity fixes C: every flow is its own orbit */
  const GPtrArray *plan /* read only: the memo's, not a copy (131,072-flow rings) */
      = hw_collective_lower_borrowed (cluster, kind, algorithm, ranks, n_ranks, bytes, NULL);
  HwRankShift gen[HW_RANK_SHIFT_LEVELS];
  guint n_gen = hw_rank_shift_generators (&sh, gen);
  guint n_cluster = hw_cluster_n_ranks (cluster), most = 1;
  for (guint p = 0; p < plan->len; p++)
    most = MAX (most, ((GArray *) g_ptr_array_index (plan, p))->len);
  g_autofree guint *first = g_new (guint, n_cluster + 1);
  g_autofree guint *order = g_new (guint, most);
  g_autofree guint8 *used = g_new (guint8, most);
  for (guint p = 0; p < plan->len; p++)
    {
      GArray *flows = g_ptr_array_index (plan, p);
      for (guint e = 0; e < n_gen; e++)
        if (!phase_maps_onto_itself ((const HwFlow *) flows->data, flows->len, &gen[e],
                                     n_cluster, first, order, used))
          return FALSE;
    }
  return TRUE;
}

guint64
hw_collective_start (HwCluster *cluster, HwCollectiveKind kind, HwCollectiveAlgorithm algorithm,
                     const guint *ranks, guint n_ranks, double bytes, HwCollectiveDoneFunc done,
                     gpointer user_data)
{
  return hw_collective_start_sms (cluster, kind, algorithm, ranks, n_ranks, bytes, -1, done,
                                  user_data);
}

/* ---- collective groups -------------------------------------------------------------------
 *
 * A step starts thousands of collectives on a few member lists (a ZeRO-3 step of Llama-3.1-8B
 * at GA 64: ~6,000 on one data-parallel group). Everything a start needs beyond the flows it
 * runs is a pure function of the members, the kind, algorithm and bytes, the topology and
 * the rank shift: whether the members are valid, their stabilizer, the lowering and its
 * time alone, the flows kept (one per orbit), the representative members and the bytes each
 * sends. A group interns a member list once (hw_collective_group); each distinct (group,
 * kind, algorithm, bytes) is prepared once under the cluster's shift (again when the shift
 * changes), so a start costs only its kept flows and representative members, not a sort,
 * a hash and a stabilizer search (a binary search per member and candidate) of all its
 * members: 504 k instructions a start at 512 ranks, 7 k now (bench/RESULTS.md). The runs
 * share the prepared flows (read only). */

typedef struct
{
  guint *ranks; /* the members in the collective's order (owned) */
  guint n_ranks;
  gboolean valid;    /* every rank exists and none repeats (ranks_valid but the kind) */
  gboolean has_stab; /* stab and reps are those under `shift` */
  HwRankShift shift, stab;
  GArray *reps; /* guint: the members representing their orbit under stab, in member order */
} Group;

typedef struct
{
  guint group, kind, algorithm;
  double bytes;
} PreparedKey;

typedef struct
{
  PreparedKey key;
  HwRankShift shift;  /* the cluster's shift it was prepared under */
  GPtrArray *plan;    /* the lowered plan, its flows kept one per orbit (owned; runs ref it) */
  double time_alone;  /* hw_collective_plan_time of the whole plan, s */
  double *sent;       /* per representative member (Group reps): B it sends in the whole plan */
} Prepared;

typedef struct
{
  GHashTable *by_ranks; /* Group* (content key, owned) → id */
  GPtrArray *groups;    /* Group* by id − 1 (borrowed from by_ranks) */
  GHashTable *prepared; /* Prepared* (owned), keyed by its key */
  guint n_prepared;     /* preparations made (hw_collective_group_n_prepared) */
  GHashTable *answers;  /* InvariantKey* (owned) → answer + 1 (hw_collective_shift_invariant) */
  SimVec spare;         /* Run* (owned) that finished, for the next starts: their vectors keep
                         * their storage (a step starts ~800 collectives) */
} Groups;

static guint
group_hash (gconstpointer p)
{
  const Group *g = p;
  guint h = g->n_ranks;
  for (guint i = 0; i < g->n_ranks; i++)
    h = h * 31u + g->ranks[i];
  return h;
}

static gboolean
group_equal (gconstpointer pa, gconstpointer pb)
{
  const Group *a = pa, *b = pb;
  return a->n_ranks == b->n_ranks && memcmp (a->ranks, b->ranks, a->n_ranks * sizeof (guint)) == 0;
}

static void
group_free (gpointer p)
{
  Group *g = p;
  g_free (g->ranks);
  if (g->reps != NULL)
    g_array_unref (g->reps);
  g_free (g);
}

static guint
prepared_hash (gconstpointer p)
{
  const PreparedKey *k = p;
  return ((k->group * 31u + k->kind) * 31u + k->algorithm) * 31u + g_double_hash (&k->bytes);
}

static gboolean
prepared_equal (gconstpointer pa, gconstpointer pb)
{
  const PreparedKey *a = pa, *b = pb;
  return a->group == b->group && a->kind == b->kind && a->algorithm == b->algorithm
         && a->bytes == b->bytes;
}

/* A rank-class question: a collective (its group, kind, algorithm, bytes) and a shift. */
typedef struct
{
  PreparedKey collective;
  HwRankShift shift;
} InvariantKey;

static guint
invariant_hash (gconstpointer p)
{
  const InvariantKey *k = p;
  guint h = prepared_hash (&k->collective) * 31u + k->shift.n;
  for (guint i = 0; i < HW_RANK_SHIFT_LEVELS; i++)
    h = (h * 31u + k->shift.level[i].block) * 31u + k->shift.level[i].d;
  return h;
}

static gboolean
invariant_equal (gconstpointer pa, gconstpointer pb)
{
  const InvariantKey *a = pa, *b = pb;
  return prepared_equal (&a->collective, &b->collective)
         && hw_rank_shift_equal (&a->shift, &b->shift);
}

static void
prepared_free (gpointer p)
{
  Prepared *e = p;
  g_ptr_array_unref (e->plan);
  g_free (e->sent);
  g_free (e);
}

static gpointer
groups_new (void)
{
  Groups *gs = g_new0 (Groups, 1);
  gs->by_ranks = g_hash_table_new_full (group_hash, group_equal, group_free, NULL);
  gs->groups = g_ptr_array_new ();
  gs->prepared = g_hash_table_new_full (prepared_hash, prepared_equal, prepared_free, NULL);
  gs->answers = g_hash_table_new_full (invariant_hash, invariant_equal, g_free, NULL);
  return gs;
}

static void
groups_free (gpointer p)
{
  Groups *gs = p;
  for (guint i = 0; i < gs->spare.len; i++)
    {
      Run *run = SIM_VEC_AT (&gs->spare, Run *, i);
      sim_vec_clear (&run->holds);
      sim_vec_clear (&run->sm_ranks);
      g_free (run);
    }
  sim_vec_clear (&gs->spare);
  g_hash_table_unref (gs->answers);
  g_hash_table_unref (gs->prepared);
  g_ptr_array_unref (gs->groups);
  g_hash_table_unref (gs->by_ranks);
  g_free (gs);
}

static Groups *
cluster_groups (const HwCluster *cluster)
{
  return hw_cluster_collective_groups (cluster, groups_new, groups_free);
}

/* A finished run's memory kept for a later start (run_take): its plan dropped, its vectors'
 * storage kept. */
static void
run_recycle (Run *run)
{
  g_clear_pointer (&run->plan, g_ptr_array_unref);
  SIM_VEC_PUSH (&cluster_groups (run->cluster)->spare, Run *, run);
}

/* A run for a start on `cluster`, as g_new0 gives it but for the vectors' storage: a
 * recycled one (run_recycle) or a new one. */
static Run *
run_take (Groups *gs, HwCluster *cluster)
{
  Run *run;
  if (gs->spare.len > 0)
    {
      run = SIM_VEC_AT (&gs->spare, Run *, --gs->spare.len);
      SimVec holds = run->holds, sm_ranks = run->sm_ranks;
      holds.len = sm_ranks.len = 0; /* (run_recycle emptied them: kept empty here too) */
      *run = (Run){ .holds = holds, .sm_ranks = sm_ranks };
    }
  else
    run = g_new0 (Run, 1);
  run->cluster = cluster;
  return run;
}

/* The id of the group of `ranks` in the cluster's registry, interned on first sight. */
static guint
intern (const HwCluster *cluster, const guint *ranks, guint n_ranks)
{
  Groups *gs = cluster_groups (cluster);
  Group probe = { .ranks = (guint *) ranks, .n_ranks = n_ranks };
  gpointer id = g_hash_table_lookup (gs->by_ranks, &probe);
  if (id == NULL)
    {
      Group *g = g_new0 (Group, 1);
      g->ranks = g_memdup2 (ranks, n_ranks * sizeof (guint));
      g->n_ranks = n_ranks;
      g->valid = ranks_valid (cluster, HW_COLLECTIVE_ALL_REDUCE, ranks, n_ranks);
      g_ptr_array_add (gs->groups, g);
      id = GUINT_TO_POINTER (gs->groups->len);
      g_hash_table_insert (gs->by_ranks, g, id);
    }
  return GPOINTER_TO_UINT (id);
}

/* Each distinct question once per cluster: the class search asks the same collectives
 * under the same shift several times (per level, then for the group, then on the
 * representatives' plan), and each answer lowers and matches every flow. */
gboolean
hw_collective_shift_invariant (const HwCluster *cluster, HwCollectiveKind kind,
                               HwCollectiveAlgorithm algorithm, const guint *ranks,
                               guint n_ranks, double bytes, const HwRankShift *shift)
{
  g_return_val_if_fail (cluster != NULL && ranks != NULL && n_ranks >= 1 && shift != NULL,
                        FALSE);
  g_return_val_if_fail (ranks_valid (cluster, kind, ranks, n_ranks), FALSE);
  g_return_val_if_fail (shift->n == hw_cluster_n_ranks (cluster), FALSE);
  InvariantKey key = { { intern (cluster, ranks, n_ranks), kind, algorithm, bytes }, *shift };
  GHashTable *answers = cluster_groups (cluster)->answers;
  gpointer hit = g_hash_table_lookup (answers, &key);
  if (hit != NULL)
    return GPOINTER_TO_INT (hit) - 1;
  gboolean ok = shift_invariant_answer (cluster, kind, algorithm, ranks, n_ranks, bytes, shift);
  g_hash_table_insert (answers, g_memdup2 (&key, sizeof key), GINT_TO_POINTER (ok + 1));
  return ok;
}

guint
hw_collective_group (HwCluster *cluster, const guint *ranks, guint n_ranks)
{
  g_return_val_if_fail (cluster != NULL && ranks != NULL && n_ranks >= 1, 0);
  return intern (cluster, ranks, n_ranks);
}

guint
hw_collective_group_n_prepared (HwCluster *cluster)
{
  g_return_val_if_fail (cluster != NULL, 0);
  return cluster_groups (cluster)->n_prepared;
}

/* The group's stabilizer and representative members under the cluster's shift (computed
 * once per shift). */
static void
group_stabilize (HwCluster *cluster, Group *g)
{
  const HwRankShift *shift = hw_cluster_shift (cluster);
  if (g->has_stab && hw_rank_shift_equal (&g->shift, shift))
    return;
  g_autofree guint *sorted = g_new (guint, g->n_ranks);
  g->stab = stabilizer (shift, g->ranks, g->n_ranks, sorted);
  g->shift = *shift;
  if (g->reps == NULL)
    g->reps = g_array_new (FALSE, FALSE, sizeof (guint));
  g_array_set_size (g->reps, 0);
  for (guint i = 0; i < g->n_ranks; i++)
    if (hw_rank_shift_is_rep (&g->stab, g->ranks[i]))
      g_array_append_val (g->reps, g->ranks[i]);
  g->has_stab = TRUE;
}

/* The prepared start of (group, kind, algorithm, bytes) under the cluster's shift. */
static const Prepared *
prepare (HwCluster *cluster, Groups *gs, Group *g, const PreparedKey *key)
{
  const HwRankShift *shift = hw_cluster_shift (cluster);
  Prepared *e = g_hash_table_lookup (gs->prepared, key);
  if (e != NULL && hw_rank_shift_equal (&e->shift, shift))
    return e;
  group_stabilize (cluster, g);
  e = g_new0 (Prepared, 1);
  e->key = *key;
  e->shift = *shift;
  const GPtrArray *whole /* the memo's (read only) */
      = hw_collective_lower_borrowed (cluster, key->kind, key->algorithm, g->ranks, g->n_ranks,
                                      key->bytes, &e->time_alone);
  e->sent = g_new0 (double, MAX (g->reps->len, 1));
  member_sent (cluster, whole, (const guint *) g->reps->data, g->reps->len, e->sent);
  e->plan = kept_flows (whole, &g->stab);
  g_hash_table_replace (gs->prepared, &e->key, e); /* frees a stale entry of the same key */
  gs->n_prepared++;
  return e;
}

guint64
hw_collective_start_group (HwCluster *cluster, HwCollectiveKind kind,
                           HwCollectiveAlgorithm algorithm, guint group, double bytes,
                           double comm_sms, HwCollectiveDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (cluster != NULL, 0);
  g_return_val_if_fail (kind < HW_N_COLLECTIVES && algorithm < HW_N_ALGORITHMS, 0);
  g_return_val_if_fail (isfinite (bytes) && bytes >= 0, 0);
  Groups *gs = cluster_groups (cluster);
  g_return_val_if_fail (group >= 1 && group <= gs->groups->len, 0);
  Group *g = g_ptr_array_index (gs->groups, group - 1);
  g_return_val_if_fail (g->valid && (kind != HW_COLLECTIVE_SEND_RECV || g->n_ranks >= 2), 0);
  PreparedKey key = { group, kind, algorithm, bytes };
  const Prepared *e = prepare (cluster, gs, g, &key);
  Run *run = run_take (gs, cluster);
  g_hash_table_add (hw_cluster_live_collectives (cluster, run_free), run);
  run->plan = g_ptr_array_ref (e->plan);
  run->done = done;
  run->user_data = user_data;
  run->comm_sms = comm_sms;
  if (run->plan->len > 0)
    hold_gpu (run, (const guint *) g->reps->data, e->sent, g->reps->len, e->time_alone);
  if (run->plan->len == 0)
    sim_fluid_start (hw_cluster_fluid (cluster), 1.0, 0.0, INFINITY, NULL, 0, finish, run);
  else
    start_phase (run);
  return hw_cluster_take_collective_id (cluster);
}

guint64
hw_collective_start_sms (HwCluster *cluster, HwCollectiveKind kind,
                         HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                         double bytes, double comm_sms, HwCollectiveDoneFunc done,
                         gpointer user_data)
{
  g_return_val_if_fail (cluster != NULL && ranks != NULL && n_ranks >= 1, 0);
  g_return_val_if_fail (kind < HW_N_COLLECTIVES && algorithm < HW_N_ALGORITHMS, 0);
  g_return_val_if_fail (isfinite (bytes) && bytes >= 0, 0);
  g_return_val_if_fail (ranks_valid (cluster, kind, ranks, n_ranks), 0);
  return hw_collective_start_group (cluster, kind, algorithm,
                                    hw_collective_group (cluster, ranks, n_ranks), bytes,
                                    comm_sms, done, user_data);
}

/* ---- closed form ------------------------------------------------------------------------ */

double
hw_collective_time_alone (const HwCluster *cluster, HwCollectiveKind kind,
                          HwCollectiveAlgorithm algorithm, const guint *ranks, guint n_ranks,
                          double bytes)
{
  g_return_val_if_fail (cluster != NULL && ranks != NULL && n_ranks >= 1, 0.0);
  g_return_val_if_fail (kind < HW_N_COLLECTIVES && algorithm < HW_N_ALGORITHMS, 0.0);
  g_return_val_if_fail (ranks_valid (cluster, kind, ranks, n_ranks), 0.0);
  double t = 0;
  hw_collective_lower_borrowed (cluster, kind, algorithm, ranks, n_ranks, bytes, &t);
  return t;
}

/* ---- nccl-tests bandwidths -------------------------------------------------------------- */

double
hw_collective_algbw (double bytes, double time)
{
  g_return_val_if_fail (time > 0, 0.0);
  return bytes / time;
}

/* Bus-bandwidth factors of nccl-tests doc/PERFORMANCE.md: the fraction of the data each
 * rank's busiest link must carry relative to an ideal point-to-point copy. */
double
hw_collective_busbw (HwCollectiveKind kind, guint n_ranks, double bytes, double time)
{
  g_return_val_if_fail (kind < HW_N_COLLECTIVES && n_ranks >= 1, 0.0);
  double n = n_ranks, factor = 1.0;
  switch (kind)
    {
    case HW_COLLECTIVE_ALL_REDUCE:
      factor = 2.0 * (n - 1) / n;
      break;
    case HW_COLLECTIVE_ALL_GATHER:
    case HW_COLLECTIVE_REDUCE_SCATTER:
    case HW_COLLECTIVE_ALL_TO_ALL:
      factor = (n - 1) / n;
      break;
    default:
      factor = 1.0;
    }
  return hw_collective_algbw (bytes, time) * factor;
}
