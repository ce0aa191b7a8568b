/* hardware/cluster.c — a cluster of nodes as fluid resources (hardware/topology.c builds
 * them), node specs, kernels with stragglers and jitter, host copies, host-CPU steps and
 * NVMe transfers (ZeRO-Offload / ZeRO-Infinity); see cluster.h.
 *
 * Invariants: the cluster owns a deep copy of its node spec (hw_node_spec_copy_into), so the
 * caller's spec may be freed at once; slowdown[r] >= 1 for every rank; the jitter GRand is
 * only drawn from when cv > 0, one pair of uniforms per kernel in start order, so a run is
 * reproducible from (scenario, seed) alone (DESIGN §6).
 * Units: s, B, FLOP, B/s (SI). Reference for the roofline: Williams et al., CACM 2009; for
 * Box–Muller: Box & Muller, Ann. Math. Statist. 29 (1958).
 */
#include "config.h"
#include "hardware/cluster.h"
#include "hardware/cluster-private.h"
#include "hardware/node_catalog.h"
#include "hardware/topology.h"
#include "sim/vec.h"

#include <math.h>
#include <string.h>

/* Lower clamp of the jitter factor (cluster.h): a kernel never runs more than twice as fast
 * as its model, nor above the GPU's peak (jitter_floor), whatever the draw. */
#define JITTER_MIN_FACTOR 0.5

/* A persistent GEMM as launched (hw_cluster_start_kernel_after), kept for the instant of its
 * launch: a collective that takes SMs on its GPU at that same instant relaunches it with the
 * tail it then has (same_instant_relaunch). */
typedef struct
{
  guint rank;
  HwKernelShape shape;
  double tc, bytes, delay; /* compute weight before any tail (jitter drawn), B, s */
  SimActivityDoneFunc done;
  gpointer user_data;
  SimActivityId id;
} LaunchedGemm;

struct _HwCluster
{
  HwNodeSpec node;
  HwFabricSpec fabric;
  guint n_nodes;
  SimFluid *fluid;
  HwTopology *topo;
  double *slowdown; /* per rank, >= 1 */
  /* per rank: its GPU's compute and HBM resources (2 r, 2 r + 1), the topology's, read at
   * every kernel's launch */
  SimResourceId *gpu_res;
  double *sm_held;       /* per rank: fraction of the SMs running collectives hold, >= 0 */
  guint *n_sm_holds;     /* per rank: collectives holding SMs there */
  double *sm_hold_until; /* per rank: latest expected end of those holds (s), 0 when none */
  /* persistent GEMMs started at the instant `launched_at` (s; −1: none), to be relaunched
   * if a collective takes SMs on their GPU at that same instant (LaunchedGemm) */
  SimVec launched; /* LaunchedGemm, inline pushes (one per GEMM kernel launched) */
  double launched_at;
  double jitter_cv; /* 0: no jitter */
  GRand *jitter_rng;
  guint64 next_collective_id;
  GHashTable *kernel_memo; /* KernelMemo* (owned key, no value): shaped-kernel efficiencies */
  const struct KernelMemo **memo_hint; /* MEMO_HINTS entries of kernel_memo, or NULL, owned */
  HwRankShift shift;       /* rank classes: one simulated rank per orbit (rank_shift.h) */
  GArray *resource_scratch; /* double, zero between uses (hw_cluster_resource_scratch) */
  GHashTable *lower_memo;   /* collective lowerings (hw_cluster_lower_memo) */
  GHashTable *live;         /* collectives in flight (hw_cluster_live_collectives), or NULL */
  gpointer groups;          /* collective groups (hw_cluster_collective_groups), or NULL */
  GDestroyNotify groups_free;
};

/* One memoized hw_kernel_efficiency (node.gpu, dtype, shape): the function is pure and the
 * cluster's GPU never changes, and the ranks of a step run the same few shapes thousands of
 * times, so each distinct (dtype, shape) is computed once per cluster (the GEMM tile search
 * was 11 % of an 8-GPU step). The result is the very same double, so nothing downstream
 * depends on the memo. */
typedef struct KernelMemo
{
  HwKernelShape shape;
  HwDtype dtype;
  double efficiency;
} KernelMemo;

/* In front of kernel_memo, a direct-mapped cache by the shape's address: a plan's kernels
 * pass the same HwKernelShape step after step, and hashing its six doubles was 1.5 % of an
 * 8-GPU step. An entry serves only a key equal to its own (memo_shape_equal), so a slot
 * another shape took costs a table lookup, never a wrong efficiency. */
#define MEMO_HINTS 1024 /* a power of two */

static void
lower_entry_free (gpointer p)
{
  HwLowerEntry *e = p;
  g_ptr_array_unref (e->plan);
  g_free (e);
}

static guint
lower_key_hash (gconstpointer p)
{
  const HwLowerKey *k = p;
  guint h = k->kind * 31u + k->algorithm;
  h = h * 31u + g_double_hash (&k->bytes);
  for (guint i = 0; i < k->n_ranks; i++)
    h = h * 31u + k->ranks[i];
  return h;
}

static gboolean
lower_key_equal (gconstpointer pa, gconstpointer pb)
{
  const HwLowerKey *a = pa, *b = pb;
  return a->kind == b->kind && a->algorithm == b->algorithm && a->bytes == b->bytes
         && a->n_ranks == b->n_ranks
         && memcmp (a->ranks, b->ranks, a->n_ranks * sizeof (guint)) == 0;
}

static guint
kernel_memo_hash (gconstpointer p)
{
  const KernelMemo *k = p;
  const double f[] = { k->shape.m, k->shape.n, k->shape.k, k->shape.batch, k->shape.seq,
                       k->shape.head_dim };
  guint h = (guint) k->shape.cls * 31u + (guint) k->dtype * 7u + (k->shape.causal ? 1u : 0u);
  for (guint i = 0; i < G_N_ELEMENTS (f); i++)
    {
      double x = f[i] + 0.0; /* -0 → +0, so equal keys hash equally */
      h = h * 1000003u ^ g_double_hash (&x);
    }
  return h;
}

/* The memo's notion of one shape (kernel_memo_hash reads the same fields). */
static gboolean
memo_shape_equal (const HwKernelShape *a, const HwKernelShape *b)
{
  return a->cls == b->cls && !a->causal == !b->causal && a->m == b->m && a->n == b->n
         && a->k == b->k && a->batch == b->batch && a->seq == b->seq
         && a->head_dim == b->head_dim;
}

static gboolean
kernel_memo_equal (gconstpointer pa, gconstpointer pb)
{
  const KernelMemo *a = pa, *b = pb;
  return a->dtype == b->dtype && memo_shape_equal (&a->shape, &b->shape);
}

/* The memo_hint slot of a shape's address. */
static guint
memo_hint_slot (const HwKernelShape *shape)
{
  guint64 h = (guint64) (guintptr) shape * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);
  return (guint) (h >> 40) & (MEMO_HINTS - 1);
}

/* hw_kernel_efficiency (cluster's GPU, dtype, shape), computed once per distinct key. */
static double
kernel_efficiency (const HwCluster *c, HwDtype dtype, const HwKernelShape *shape)
{
  if (shape == NULL || shape->cls == HW_KERNEL_PLAIN)
    return hw_kernel_efficiency (c->node.gpu, dtype, shape);
  const KernelMemo **hint = &c->memo_hint[memo_hint_slot (shape)];
  if (*hint != NULL && (*hint)->dtype == dtype && memo_shape_equal (&(*hint)->shape, shape))
    return (*hint)->efficiency;
  KernelMemo key = { .shape = *shape, .dtype = dtype };
  const KernelMemo *hit = g_hash_table_lookup (c->kernel_memo, &key);
  if (hit == NULL)
    {
      KernelMemo *m = g_new (KernelMemo, 1);
      *m = key;
      m->efficiency = hw_kernel_efficiency (c->node.gpu, dtype, shape);
      g_hash_table_add (c->kernel_memo, m);
      hit = m;
    }
  *hint = hit; /* entries live as long as the table: until hw_cluster_free */
  return hit->efficiency;
}

void
hw_node_spec_clear (HwNodeSpec *spec)
{
  if (spec == NULL)
    return;
  g_clear_pointer (&spec->name, g_free);
  g_clear_pointer (&spec->gpu, hw_gpu_spec_free);
  g_clear_pointer (&spec->source, g_free);
  g_clear_pointer (&spec->description, g_free);
}

void
hw_node_spec_copy_into (HwNodeSpec *dst, const HwNodeSpec *src)
{
  g_return_if_fail (dst != NULL && src != NULL && dst != src);
  *dst = *src;
  dst->name = g_strdup (src->name);
  dst->gpu = src->gpu != NULL ? hw_gpu_spec_copy (src->gpu) : NULL;
  dst->source = g_strdup (src->source);
  dst->description = g_strdup (src->description);
}

HwCluster *
hw_cluster_new (const HwNodeSpec *node, guint n_nodes, SimFluid *fluid)
{
  const HwFabricSpec non_blocking = { .spine_oversubscription = 1.0 };
  return hw_cluster_new_with_fabric (node, n_nodes, &non_blocking, fluid);
}

HwCluster *
hw_cluster_new_with_fabric (const HwNodeSpec *node, guint n_nodes, const HwFabricSpec *fabric,
                            SimFluid *fluid)
{
  g_return_val_if_fail (node != NULL && node->gpu != NULL && node->n_gpus > 0, NULL);
  g_return_val_if_fail (n_nodes > 0 && fluid != NULL && fabric != NULL, NULL);
  g_return_val_if_fail (fabric->spine_oversubscription >= 1.0, NULL);
  g_return_val_if_fail (fabric->nodes_per_pod == 0 || n_nodes % fabric->nodes_per_pod == 0
                            || n_nodes <= fabric->nodes_per_pod,
                        NULL);
  g_return_val_if_fail (fabric->pod_oversubscription == 0 || fabric->pod_oversubscription >= 1.0,
                        NULL);
  g_return_val_if_fail (n_nodes == 1 || (node->n_nics > 0 && node->nic_bandwidth > 0), NULL);
  HwCluster *c = g_new0 (HwCluster, 1);
  hw_node_spec_copy_into (&c->node, node);
  c->fabric = *fabric;
  c->n_nodes = n_nodes;
  c->fluid = fluid;
  c->topo = hw_topology_new (&c->node, n_nodes, &c->fabric, fluid);
  guint n_ranks = n_nodes * node->n_gpus;
  c->shift = hw_rank_shift_identity (n_ranks);
  c->slowdown = g_new (double, n_ranks);
  c->gpu_res = g_new (SimResourceId, 2 * n_ranks);
  for (guint r = 0; r < n_ranks; r++)
    {
      c->gpu_res[2 * r] = hw_topology_gpu_resource (c->topo, r, HW_GPU_COMPUTE);
      c->gpu_res[2 * r + 1] = hw_topology_gpu_resource (c->topo, r, HW_GPU_HBM);
    }
  for (guint r = 0; r < n_ranks; r++)
    c->slowdown[r] = 1.0;
  c->sm_held = g_new0 (double, n_ranks);
  c->n_sm_holds = g_new0 (guint, n_ranks);
  c->sm_hold_until = g_new0 (double, n_ranks);
  c->launched = (SimVec) SIM_VEC_INIT;
  c->launched_at = -1;
  c->kernel_memo = g_hash_table_new_full (kernel_memo_hash, kernel_memo_equal, g_free, NULL);
  c->memo_hint = g_new0 (const KernelMemo *, MEMO_HINTS);
  c->resource_scratch = g_array_new (FALSE, TRUE, sizeof (double));
  c->lower_memo = g_hash_table_new_full (lower_key_hash, lower_key_equal, g_free,
                                         lower_entry_free);
  return c;
}

/* See cluster-private.h. */
GHashTable *
hw_cluster_lower_memo (const HwCluster *cluster)
{
  g_return_val_if_fail (cluster != NULL, NULL);
  return cluster->lower_memo;
}

/* See cluster-private.h. */
GHashTable *
hw_cluster_live_collectives (HwCluster *cluster, GDestroyNotify free_run)
{
  g_return_val_if_fail (cluster != NULL && free_run != NULL, NULL);
  if (cluster->live == NULL)
    cluster->live = g_hash_table_new_full (g_direct_hash, g_direct_equal, free_run, NULL);
  return cluster->live;
}

/* See cluster-private.h. */
gpointer
hw_cluster_collective_groups (const HwCluster *cluster, gpointer (*make) (void),
                              GDestroyNotify free_groups)
{
  g_return_val_if_fail (cluster != NULL && make != NULL && free_groups != NULL, NULL);
  HwCluster *c = (HwCluster *) cluster; /* a memo: made on first use, as the lowering memo */
  if (c->groups == NULL)
    {
      c->groups = make ();
      c->groups_free = free_groups;
    }
  return c->groups;
}

/* See cluster-private.h. */
double *
hw_cluster_resource_scratch (const HwCluster *cluster, guint n)
{
  g_return_val_if_fail (cluster != NULL, NULL);
  if (cluster->resource_scratch->len < n)
    g_array_set_size (cluster->resource_scratch, n); /* new elements cleared */
  return (double *) cluster->resource_scratch->data;
}

void
hw_cluster_set_no_host_copies (HwCluster *cluster)
{
  g_return_if_fail (cluster != NULL);
  hw_topology_set_no_host_copies (cluster->topo);
}

gboolean
hw_cluster_shift_invariant (const HwCluster *cluster, const HwRankShift *shift)
{
  g_return_val_if_fail (cluster != NULL && shift != NULL, FALSE);
  guint n = hw_cluster_n_ranks (cluster);
  if (shift->n != n || !hw_rank_shift_valid (shift))
    return FALSE;
  if (hw_rank_shift_is_identity (shift))
    return TRUE;
  if (cluster->jitter_cv > 0)
    return FALSE;
  HwRankShift gen[HW_RANK_SHIFT_LEVELS];
  guint k = hw_rank_shift_generators (shift, gen);
  /* the cheap refusal first: a shift the topology cannot take (no permutation built) */
  for (guint i = 0; i < k; i++)
    if (!hw_topology_shift_valid (cluster->topo, &gen[i]))
      return FALSE;
  for (guint i = 0; i < k; i++)
    for (guint r = 0; r < n; r++)
      if (cluster->slowdown[r] != cluster->slowdown[hw_rank_shift_image (&gen[i], r)])
        return FALSE;
  g_autofree SimResourceId *perm = g_new (SimResourceId, sim_fluid_n_resources (cluster->fluid));
  for (guint i = 0; i < k; i++)
    if (!hw_topology_shift_map (cluster->topo, &gen[i], perm))
      return FALSE;
  return TRUE;
}

/* The root of u's tree in the union-find forest `parent` (roots: parent[u] = u; every
 * parent below its child, so the root is the least id of the class), halving the path. */
static SimResourceId
find_root (SimResourceId *parent, SimResourceId u)
{
  while (parent[u] != u)
    u = parent[u] = parent[parent[u]];
  return u;
}

void
hw_cluster_set_shift (HwCluster *cluster, const HwRankShift *shift)
{
  g_return_if_fail (cluster != NULL && hw_cluster_shift_invariant (cluster, shift));
  guint nr = sim_fluid_n_resources (cluster->fluid);
  cluster->shift = *shift;
  if (hw_rank_shift_is_identity (shift))
    {
      cluster->shift = hw_rank_shift_identity (shift->n);
      sim_fluid_set_fold (cluster->fluid, NULL, NULL);
      return;
    }
  /* Orbits of resources under the group the generators' permutations generate: the
   * classes of the union of their cycles (union-find, each root its class's least id); each
   * folds onto its least id with scale m / |orbit| (sim/fluid.h). */
  HwRankShift gen[HW_RANK_SHIFT_LEVELS];
  guint k = hw_rank_shift_generators (shift, gen);
  g_autofree SimResourceId *perm = g_new (SimResourceId, nr);
  g_autofree SimResourceId *canon = g_new (SimResourceId, nr);
  g_autofree double *scale = g_new (double, nr);
  g_autofree guint *size = g_new0 (guint, nr);
  for (guint u = 0; u < nr; u++)
    canon[u] = u;
  for (guint i = 0; i < k; i++)
    {
      hw_topology_shift_map (cluster->topo, &gen[i], perm);
      for (guint u = 0; u < nr; u++)
        {
          SimResourceId a = find_root (canon, u), b = find_root (canon, perm[u]);
          if (a != b)
            canon[MAX (a, b)] = MIN (a, b);
        }
    }
  for (guint u = 0; u < nr; u++)
    size[canon[u] = find_root (canon, u)]++;
  double m = (double) hw_rank_shift_multiplicity (shift);
  for (guint u = 0; u < nr; u++)
    scale[u] = m / size[canon[u]];
  sim_fluid_set_fold (cluster->fluid, canon, scale);
}

const HwRankShift *
hw_cluster_shift (const HwCluster *cluster)
{
  g_return_val_if_fail (cluster != NULL, NULL);
  return &cluster->shift;
}

void
hw_cluster_set_slowdown (HwCluster *cluster, guint rank, double factor)
{
  g_return_if_fail (cluster != NULL && rank < hw_cluster_n_ranks (cluster));
  g_return_if_fail (isfinite (factor) && factor >= 1.0);
  cluster->slowdown[rank] = factor;
}

static SimActivityId launch_kernel (HwCluster *cluster, guint rank, const HwKernelShape *shape,
                                    double tc, double bytes, double delay,
                                    SimActivityDoneFunc done, gpointer user_data);

/* A kernel and a collective issued at one instant on a GPU run in the order their events
 * came; the kernel starts its CTAs after its launch latency, when the collective already
 * holds its SMs, so the order must not matter (nor make equivalent ranks differ: rank
 * classes replay one of them). The persistent GEMMs launched on `rank` at this instant are
 * launched again, none of their work done yet, with the tail the hold now gives them. */
static void
same_instant_relaunch (HwCluster *cluster, guint rank)
{
  if (cluster->launched_at != sim_fluid_now (cluster->fluid))
    return;
  /* taken out first: each relaunch records its GEMM again */
  g_autoptr (GArray) again = g_array_new (FALSE, FALSE, sizeof (LaunchedGemm));
  SimVec *launched = &cluster->launched;
  guint kept = 0; /* the other ranks' GEMMs stay, in their order */
  for (guint i = 0; i < launched->len; i++)
    {
      LaunchedGemm *k = &SIM_VEC_AT (launched, LaunchedGemm, i);
      if (k->rank != rank)
        {
          SIM_VEC_AT (launched, LaunchedGemm, kept++) = *k;
          continue;
        }
      if (sim_fluid_cancel (cluster->fluid, k->id))
        g_array_append_val (again, *k);
    }
  launched->len = kept;
  for (guint i = 0; i < again->len; i++)
    {
      const LaunchedGemm *k = &g_array_index (again, LaunchedGemm, i);
      launch_kernel (cluster, k->rank, &k->shape, k->tc, k->bytes, k->delay, k->done,
                     k->user_data);
    }
}

void
hw_cluster_sm_hold_begin (HwCluster *cluster, guint rank, double fraction, double until)
{
  g_return_if_fail (cluster != NULL && rank < hw_cluster_n_ranks (cluster));
  g_return_if_fail (isfinite (fraction) && fraction > 0 && isfinite (until));
  cluster->sm_held[rank] += fraction;
  cluster->n_sm_holds[rank]++;
  cluster->sm_hold_until[rank] = MAX (cluster->sm_hold_until[rank], until);
  same_instant_relaunch (cluster, rank);
}

void
hw_cluster_sm_hold_end (HwCluster *cluster, guint rank, double fraction)
{
  g_return_if_fail (cluster != NULL && rank < hw_cluster_n_ranks (cluster));
  g_return_if_fail (cluster->n_sm_holds[rank] > 0);
  if (--cluster->n_sm_holds[rank] == 0)
    {
      cluster->sm_held[rank] = 0; /* no rounding residue once the last hold ends */
      cluster->sm_hold_until[rank] = 0;
    }
  else
    cluster->sm_held[rank] = MAX (0.0, cluster->sm_held[rank] - fraction);
}

void
hw_cluster_set_jitter (HwCluster *cluster, double cv, guint32 seed)
{
  g_return_if_fail (cluster != NULL && isfinite (cv) && cv >= 0);
  g_clear_pointer (&cluster->jitter_rng, g_rand_free);
  cluster->jitter_cv = cv;
  if (cv > 0)
    cluster->jitter_rng = g_rand_new_with_seed (seed);
}

void
hw_cluster_reset (HwCluster *cluster, guint32 seed)
{
  g_return_if_fail (cluster != NULL);
  guint n = hw_cluster_n_ranks (cluster);
  memset (cluster->sm_held, 0, n * sizeof *cluster->sm_held);
  memset (cluster->n_sm_holds, 0, n * sizeof *cluster->n_sm_holds);
  memset (cluster->sm_hold_until, 0, n * sizeof *cluster->sm_hold_until);
  cluster->launched.len = 0;
  cluster->launched_at = -1;
  cluster->next_collective_id = 0;
  if (cluster->live != NULL) /* collectives cut off mid-flight: their flows went with the fluid */
    g_hash_table_remove_all (cluster->live);
  if (cluster->jitter_cv > 0)
    hw_cluster_set_jitter (cluster, cluster->jitter_cv, seed);
}

void
hw_cluster_free (HwCluster *cluster)
{
  if (cluster == NULL)
    return;
  hw_topology_free (cluster->topo);
  hw_node_spec_clear (&cluster->node);
  g_clear_pointer (&cluster->jitter_rng, g_rand_free);
  g_free (cluster->slowdown);
  g_free (cluster->gpu_res);
  g_free (cluster->sm_held);
  g_free (cluster->n_sm_holds);
  g_free (cluster->sm_hold_until);
  sim_vec_clear (&cluster->launched);
  g_hash_table_unref (cluster->kernel_memo);
  g_free (cluster->memo_hint);
  g_array_unref (cluster->resource_scratch);
  g_hash_table_unref (cluster->lower_memo);
  g_clear_pointer (&cluster->live, g_hash_table_unref);
  if (cluster->groups != NULL)
    cluster->groups_free (cluster->groups);
  g_free (cluster);
}

guint
hw_cluster_n_ranks (const HwCluster *cluster)
{
  return cluster->n_nodes * cluster->node.n_gpus;
}

guint
hw_cluster_n_nodes (const HwCluster *cluster)
{
  return cluster->n_nodes;
}

const HwGpuSpec *
hw_cluster_gpu (const HwCluster *cluster, guint rank)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster), NULL);
  return cluster->node.gpu;
}

const HwNodeSpec *
hw_cluster_node_spec (const HwCluster *cluster)
{
  return &cluster->node;
}

SimFluid *
hw_cluster_fluid (const HwCluster *cluster)
{
  return cluster->fluid;
}

const HwFabricSpec *
hw_cluster_fabric (const HwCluster *cluster)
{
  return &cluster->fabric;
}

const HwTopology *
hw_cluster_topology (const HwCluster *cluster)
{
  return cluster->topo;
}

guint64
hw_cluster_take_collective_id (HwCluster *cluster)
{
  return ++cluster->next_collective_id;
}

/* Compute weight per kernel: seconds of the whole GPU the FLOPs need at the achievable
 * rate peak × efficiency, times the rank's slow-down. A dtype the GPU lacks falls back to
 * fp32 (the CUDA cores), which is what frameworks do when a tensor-core format is
 * unavailable. Same expression as hw_kernel_compute_seconds, with the memoized efficiency.
 * base_seconds is the part before the slow-down (0 without FLOPs). */
static double
base_seconds (const HwCluster *c, HwDtype dtype, const HwKernelShape *shape, double flops)
{
  if (flops <= 0)
    return 0.0;
  return flops / (hw_kernel_peak_flops (c->node.gpu, dtype) * kernel_efficiency (c, dtype, shape));
}

static double
compute_seconds (const HwCluster *c, guint rank, HwDtype dtype, const HwKernelShape *shape,
                 double flops)
{
  g_return_val_if_fail (dtype < HW_N_DTYPES, 0.0);
  return base_seconds (c, dtype, shape, flops) * c->slowdown[rank];
}

double
hw_cluster_kernel_base_seconds (const HwCluster *cluster, HwDtype dtype,
                                const HwKernelShape *shape, double flops)
{
  g_return_val_if_fail (cluster != NULL && dtype < HW_N_DTYPES && flops >= 0, -1.0);
  return base_seconds (cluster, dtype, shape, flops);
}

/* The least jitter factor of a kernel: a jittered kernel may run faster than its model, but
 * never faster than half of it, nor the FLOPs it computes above the GPU's peak — the
 * fraction of peak its model runs at (the efficiency, of the half of the s² square a causal
 * FlashAttention kernel computes: hardware/kernel.h counts the whole square) over the
 * rank's slow-down. */
static double
jitter_floor (const HwCluster *c, guint rank, HwDtype dtype, const HwKernelShape *shape)
{
  double eff = kernel_efficiency (c, dtype, shape) * hw_kernel_executed_fraction (shape);
  return MAX (JITTER_MIN_FACTOR, eff / c->slowdown[rank]);
}

/* One jitter factor max(least, 1 + cv·N(0,1)); N(0,1) by Box–Muller from two uniforms, with
 * u1 in (0, 1] so the logarithm is finite. `least`: jitter_floor. */
static double
jitter_factor (HwCluster *c, double least)
{
  if (c->jitter_cv <= 0)
    return 1.0;
  double u1 = 1.0 - g_rand_double (c->jitter_rng);
  double u2 = g_rand_double (c->jitter_rng);
  double z = sqrt (-2.0 * log (u1)) * cos (2.0 * G_PI * u2);
  return MAX (least, 1.0 + c->jitter_cv * z);
}

/* Jitter is random, so the closed form leaves it out (its factor has mean ≈ 1); the
 * deterministic slow-down is in. */
double
hw_cluster_kernel_time_alone (const HwCluster *cluster, guint rank, HwDtype dtype,
                              double flops, double bytes)
{
  return hw_cluster_kernel_time_alone_shaped (cluster, rank, dtype, NULL, flops, bytes);
}

double
hw_cluster_kernel_time_alone_shaped (const HwCluster *cluster, guint rank, HwDtype dtype,
                                     const HwKernelShape *shape, double flops, double bytes)
{
  const HwGpuSpec *g = hw_cluster_gpu (cluster, rank);
  double tc = compute_seconds (cluster, rank, dtype, shape, flops);
  double tm = bytes / (g->hbm_bandwidth * g->hbm_efficiency);
  return g->kernel_latency + MAX (tc, tm);
}

SimActivityId
hw_cluster_start_kernel (HwCluster *cluster, guint rank, HwDtype dtype, double flops,
                         double bytes, SimActivityDoneFunc done, gpointer user_data)
{
  return hw_cluster_start_kernel_shaped (cluster, rank, dtype, NULL, flops, bytes, done,
                                         user_data);
}

SimActivityId
hw_cluster_start_kernel_shaped (HwCluster *cluster, guint rank, HwDtype dtype,
                                const HwKernelShape *shape, double flops, double bytes,
                                SimActivityDoneFunc done, gpointer user_data)
{
  return hw_cluster_start_kernel_after (cluster, rank, dtype, shape, flops, bytes, 0, done,
                                        user_data);
}

/* A persistent GEMM (hw_kernel_persistent_ctas > 0; kernel.c, "Persistent GEMMs") that
 * starts at t_s while collectives hold the fraction `held` of the rank's SMs until about
 * t_s + H: its CTAs that fit on the free SMs run their share at full speed and end after its
 * time alone t0 = max(tc, bytes / HBM rate); the others start when SMs free up, at the hold's
 * end or when the first ones finish, whichever is first, and take t0 too, so the kernel
 * takes t0 + min(H, t0). On the fluid that is a start delay of min(H, t0) (*wait grows by
 * it) and, when the hold outlasts the delay, a compute weight tc·(1 − held), so that beside
 * the hold (which the fluid gives `held` of the compute resource) the kernel still runs its
 * resident CTAs in t0. A GEMM whose CTAs all fit on the free SMs, any other kernel, or a
 * GPU whose GEMMs are not persistent is left to the fluid's share alone. Returns the compute
 * weight (s). Approximation: a collective that starts while a persistent GEMM runs is not
 * delayed until the GEMM ends (as NCCL's CTAs would wait for SMs); the fluid slows the
 * GEMM by the share instead. */
static double
persistent_tail (const HwCluster *c, guint rank, const HwKernelShape *shape, double tc,
                 double bytes, double *wait)
{
  const HwGpuSpec *g = c->node.gpu;
  double ctas = hw_kernel_persistent_ctas (g, shape), held = MIN (c->sm_held[rank], 0.9);
  if (ctas <= 0 || ctas <= floor (g->sm_count * (1 - held)))
    return tc;
  double t_start = sim_fluid_now (c->fluid) + g->kernel_latency + *wait;
  double h = c->sm_hold_until[rank] - t_start;
  if (h <= 0)
    return tc;
  double t0 = MAX (tc, bytes / (g->hbm_bandwidth * g->hbm_efficiency));
  double tail = MIN (h, t0);
  *wait += tail;
  return h > tail ? tc * (1 - held) : tc;
}

/* Starts a kernel of compute weight `tc` (s, jitter included) and `bytes` of HBM traffic on
 * `rank` after `delay` (s) and the launch latency, a persistent GEMM with the tail the SM
 * holds give it, and records a persistent GEMM for same_instant_relaunch. */
/* A kernel's fluid uses (2 at most) for compute weight `w` (s) and `bytes`; returns their
 * count. */
static guint
kernel_uses (const HwCluster *cluster, guint rank, double w, double bytes, SimUse *uses)
{
  guint n = 0;
  if (w > 0)
    uses[n++] = (SimUse){ cluster->gpu_res[2 * rank], w };
  if (bytes > 0)
    uses[n++] = (SimUse){ cluster->gpu_res[2 * rank + 1], bytes };
  return n;
}

/* A kernel's compute weight (s): its compute time on `rank` times one jitter factor drawn
 * (the generator advances once a kernel when jitter is on). */
static double
kernel_weight_of (HwCluster *cluster, guint rank, HwDtype dtype, const HwKernelShape *shape,
                  double tc)
{
  double least = cluster->jitter_cv > 0 && tc > 0 ? jitter_floor (cluster, rank, dtype, shape)
                                                  : JITTER_MIN_FACTOR;
  return tc * jitter_factor (cluster, least);
}

static double
kernel_weight (HwCluster *cluster, guint rank, HwDtype dtype, const HwKernelShape *shape,
               double flops)
{
  return kernel_weight_of (cluster, rank, dtype, shape,
                           compute_seconds (cluster, rank, dtype, shape, flops));
}

static SimActivityId
launch_kernel (HwCluster *cluster, guint rank, const HwKernelShape *shape, double tc,
               double bytes, double delay, SimActivityDoneFunc done, gpointer user_data)
{
  const HwGpuSpec *g = cluster->node.gpu;
  SimUse uses[2];
  double w = tc, wait = MAX (0.0, delay);
  if (cluster->sm_held[rank] > 0 && cluster->n_sm_holds[rank] > 0)
    w = persistent_tail (cluster, rank, shape, tc, bytes, &wait);
  guint n = kernel_uses (cluster, rank, w, bytes, uses);
  SimActivityId id = sim_fluid_start (cluster->fluid, 1.0, g->kernel_latency + wait, INFINITY,
                                      uses, n, done, user_data);
  if (hw_kernel_is_persistent (g, shape))
    {
      double now = sim_fluid_now (cluster->fluid);
      if (cluster->launched_at != now)
        {
          cluster->launched.len = 0;
          cluster->launched_at = now;
        }
      SIM_VEC_PUSH (&cluster->launched, LaunchedGemm,
                    ((LaunchedGemm){ rank, *shape, tc, bytes, delay, done, user_data, id }));
    }
  return id;
}

SimActivityId
hw_cluster_start_kernel_after (HwCluster *cluster, guint rank, HwDtype dtype,
                               const HwKernelShape *shape, double flops, double bytes,
                               double delay, SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster) && flops >= 0 && bytes >= 0, 0);
  double tc = kernel_weight (cluster, rank, dtype, shape, flops);
  return launch_kernel (cluster, rank, shape, tc, bytes, delay, done, user_data);
}

gboolean
hw_cluster_run_kernel (HwCluster *cluster, guint rank, HwDtype dtype, const HwKernelShape *shape,
                       double flops, double bytes, double delay, gboolean off_engine,
                       SimActivityDoneFunc done, gpointer user_data, double *end)
{
  g_return_val_if_fail (cluster != NULL && dtype < HW_N_DTYPES && flops >= 0, FALSE);
  return hw_cluster_run_kernel_base (cluster, rank, dtype, shape,
                                     base_seconds (cluster, dtype, shape, flops), bytes, delay,
                                     off_engine, done, user_data, end);
}

gboolean
hw_cluster_run_kernel_base (HwCluster *cluster, guint rank, HwDtype dtype,
                            const HwKernelShape *shape, double base, double bytes, double delay,
                            gboolean off_engine, SimActivityDoneFunc done, gpointer user_data,
                            double *end)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster) && !(base < 0) && bytes >= 0, FALSE);
  g_return_val_if_fail (end != NULL, FALSE);
  double tc = kernel_weight_of (cluster, rank, dtype, shape, base * cluster->slowdown[rank]);
  if (off_engine && (cluster->sm_held[rank] == 0 || cluster->n_sm_holds[rank] == 0))
    {
      /* launch_kernel's start without SMs held; a persistent GEMM's launch record is only
       * read by a hold beginning at this instant, which the skipped run leaves behind */
      SimUse uses[2];
      guint n = kernel_uses (cluster, rank, tc, bytes, uses);
      if (sim_fluid_run_lone (cluster->fluid, 1.0,
                              cluster->node.gpu->kernel_latency + MAX (0.0, delay), uses, n,
                              end))
        return TRUE;
    }
  launch_kernel (cluster, rank, shape, tc, bytes, delay, done, user_data);
  return FALSE;
}

double
hw_cluster_kernel_lone_end (HwCluster *cluster, guint rank, HwDtype dtype,
                            const HwKernelShape *shape, double flops, double bytes,
                            double delay, double now)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster) && flops >= 0 && bytes >= 0, NAN);
  g_return_val_if_fail (cluster->sm_held[rank] == 0 || cluster->n_sm_holds[rank] == 0, NAN);
  double tc = kernel_weight (cluster, rank, dtype, shape, flops);
  SimUse uses[2];
  guint n = kernel_uses (cluster, rank, tc, bytes, uses);
  /* launch_kernel's start without SMs held: latency kernel_latency + max(0, delay) */
  return sim_fluid_lone_end (cluster->fluid, now, 1.0,
                             cluster->node.gpu->kernel_latency + MAX (0.0, delay), INFINITY,
                             uses, n);
}

SimActivityId
hw_cluster_start_copy (HwCluster *cluster, guint rank, HwCopyDirection dir, double bytes,
                       SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster) && bytes > 0, 0);
  SimResourceId route[HW_ROUTE_MAX];
  guint n = hw_topology_host_route (cluster->topo, rank, dir, route);
  SimUse uses[HW_ROUTE_MAX];
  for (guint i = 0; i < n; i++)
    uses[i] = (SimUse){ route[i], 1.0 };
  return sim_fluid_start (cluster->fluid, bytes, cluster->node.gpu->pcie_latency, INFINITY,
                          uses, n, done, user_data);
}

SimActivityId
hw_cluster_start_host_compute (HwCluster *cluster, guint rank, double params,
                               SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster) && params > 0, 0);
  guint node = hw_topology_node_of (cluster->topo, rank);
  SimResourceId cpu = hw_topology_node_resource (cluster->topo, node, HW_NODE_CPU);
  g_return_val_if_fail (cpu != G_MAXUINT, 0);
  SimUse use = { cpu, 1.0 };
  return sim_fluid_start (cluster->fluid, params, 0, INFINITY, &use, 1, done, user_data);
}

SimActivityId
hw_cluster_start_nvme (HwCluster *cluster, guint rank, HwNvmeDirection dir, gboolean via_gpu,
                       double bytes, SimActivityDoneFunc done, gpointer user_data)
{
  g_return_val_if_fail (rank < hw_cluster_n_ranks (cluster) && bytes > 0, 0);
  guint node = hw_topology_node_of (cluster->topo, rank);
  gboolean read = dir == HW_NVME_READ;
  SimResourceId drive = hw_topology_node_resource (cluster->topo, node,
                                                   read ? HW_NODE_NVME_READ : HW_NODE_NVME_WRITE);
  g_return_val_if_fail (drive != G_MAXUINT, 0);
  SimUse uses[HW_ROUTE_MAX + 2];
  guint n = 0;
  uses[n++] = (SimUse){ drive, 1.0 };
  uses[n++] = (SimUse){ hw_topology_node_resource (cluster->topo, node, HW_NODE_NVME_TOTAL), 1.0 };
  double latency = HW_NVME_LATENCY;
  if (via_gpu)
    {
      SimResourceId route[HW_ROUTE_MAX];
      guint k = hw_topology_host_route (cluster->topo, rank, read ? HW_COPY_H2D : HW_COPY_D2H,
                                        route);
      for (guint i = 0; i < k; i++)
        uses[n++] = (SimUse){ route[i], 1.0 };
      latency += cluster->node.gpu->pcie_latency;
    }
  return sim_fluid_start (cluster->fluid, bytes, latency, INFINITY, uses, n, done, user_data);
}

gboolean
hw_cluster_resource_is_link (const HwCluster *cluster, SimResourceId resource)
{
  /* The devices' own capacities: every GPU's compute and HBM, every node's CPU. */
  const HwTopology *topo = hw_cluster_topology (cluster);
  for (guint r = 0; r < hw_cluster_n_ranks (cluster); r++)
    if (resource == hw_topology_gpu_resource (topo, r, HW_GPU_COMPUTE)
        || resource == hw_topology_gpu_resource (topo, r, HW_GPU_HBM))
      return FALSE;
  for (guint n = 0; n < hw_cluster_n_nodes (cluster); n++)
    if (resource == hw_topology_node_resource (topo, n, HW_NODE_CPU))
      return FALSE;
  return resource < sim_fluid_n_resources (hw_cluster_fluid (cluster));
}
