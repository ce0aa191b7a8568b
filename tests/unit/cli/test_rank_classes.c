/* tests/unit/cli/test_rank_classes.c — rank classes (models/plan/rank_classes.h) change no
 * figure: every shipped scenario of at most 512 GPUs (every .ini of scenarios/ and the bench/ cases)
 * is simulated with one rank per class ([run] rank_classes = auto) and with every rank
 * (off); step time and every rank's allocated and device-used peak agree to 1e-9 relative
 * (issue 17); so do pipeline-parallel runs, whose stages are classes of their own. The
 * collapse must also happen where the symmetry holds (fewer ranks replayed than GPUs on the
 * 8-GPU, multi-node and pipeline cases), and a straggler, which breaks the shift that would
 * move it, must split the classes. The plan built for the representatives only
 * (model_rank_classes_plan) must hold, rank by rank, the full plan's tasks of those ranks,
 * with the shift the full comparison finds. */
#include "config.h"

#include <math.h>
#include "cli/scenario/scenario.h"
#include "cli/scenario/sim_input.h"
#include "models/plan/rank_classes.h"
#include "models/plan/simulate.h"
#include "sim/fluid.h"
#include "tests/testlib.h"

#include <string.h>

static gboolean
close_rel (double a, double b)
{
  return fabs (a - b) <= 1e-9 * MAX (fabs (a), fabs (b));
}

/* Simulates `rel` with `sets` (NULL-terminated, may be NULL) into res; FALSE if it does not
 * load or run (then the test fails). */
static gboolean
simulate (const char *rel, const char *const *sets, ModelSimResult *res)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  if (sc == NULL)
    {
      g_printerr ("%s: %s\n", rel, e->message);
      return FALSE;
    }
  if (!cli_scenario_simulate (sc, NULL, res, &e))
    {
      g_printerr ("%s: %s\n", rel, e->message);
      return FALSE;
    }
  return TRUE;
}

/* Collapsed against full on `rel`; returns the ranks the collapsed run replayed. */
static guint
check_equivalent_with (const char *rel, const char *const *sets)
{
  g_autoptr (GPtrArray) off = g_ptr_array_new ();
  for (guint i = 0; sets != NULL && sets[i] != NULL; i++)
    g_ptr_array_add (off, (gpointer) sets[i]);
  g_ptr_array_add (off, "run.rank_classes=off");
  g_ptr_array_add (off, NULL);
  ModelSimResult a = { 0 }, b = { 0 };
  CU_ASSERT_FATAL (simulate (rel, sets, &a));
  CU_ASSERT_FATAL (simulate (rel, (const char *const *) off->pdata, &b));
  CU_ASSERT_EQUAL (hw_rank_shift_n_reps (&b.classes), b.n_ranks);
  CU_ASSERT_EQUAL (a.n_ranks, b.n_ranks);
  gboolean same = close_rel (a.step_time, b.step_time) && a.fits == b.fits
                  && close_rel (a.device_used, b.device_used)
                  && close_rel (a.lifetime_device, b.lifetime_device);
  for (guint r = 0; r < a.n_ranks; r++)
    same = same && close_rel (a.rank_peak_allocated[r], b.rank_peak_allocated[r])
           && close_rel (a.rank_device_used[r], b.rank_device_used[r]);
  if (!same)
    g_printerr ("%s: collapsed %.12g s, %.12g B; full %.12g s, %.12g B\n", rel, a.step_time,
                a.device_used, b.step_time, b.device_used);
  CU_ASSERT (same);
  guint classes = hw_rank_shift_n_reps (&a.classes);
  model_sim_result_clear (&a);
  model_sim_result_clear (&b);
  return classes;
}

static guint
check_equivalent (const char *rel)
{
  return check_equivalent_with (rel, NULL);
}

/* Task ids of each rank in plan order: ids[first[r] … first[r + 1]) (new arrays). */
static void
rank_lists (const ModelPlan *p, guint **first, guint **ids, guint **pos)
{
  guint n = model_plan_n_ranks (p), nt = model_plan_n_tasks (p);
  *first = g_new0 (guint, n + 1);
  *ids = g_new (guint, MAX (nt, 1));
  *pos = g_new (guint, MAX (nt, 1));
  for (guint i = 0; i < nt; i++)
    (*first)[model_plan_task (p, i)->rank + 1]++;
  for (guint r = 0; r < n; r++)
    (*first)[r + 1] += (*first)[r];
  g_autofree guint *fill = g_memdup2 (*first, (n + 1) * sizeof (guint));
  for (guint i = 0; i < nt; i++)
    {
      guint r = model_plan_task (p, i)->rank;
      (*pos)[i] = fill[r] - (*first)[r];
      (*ids)[fill[r]++] = i;
    }
}

typedef struct
{
  const ModelPlan *a, *b;   /* the representatives' plan, the full plan */
  guint *first_a, *ids_a, *pos_a, *first_b, *ids_b, *pos_b;
  GHashTable *handles;      /* a's handle → b's (each pair met must agree) */
} Pair;

/* Handle h of a stands for handle k of b: the first meeting fixes the pair, and every
 * later meeting of h must find k (0 pairs with 0 only). */
static gboolean
same_handle (Pair *x, guint h, guint k)
{
  if (h == 0 || k == 0)
    return h == k;
  gpointer v = g_hash_table_lookup (x->handles, GUINT_TO_POINTER (h));
  if (v != NULL)
    return GPOINTER_TO_UINT (v) == k;
  g_hash_table_insert (x->handles, GUINT_TO_POINTER (h), GUINT_TO_POINTER (k));
  return TRUE;
}

/* What task s of a and task t of b say and do (ids and indices into each plan's arrays
 * aside: the representatives' plan numbers its tasks, buffers and collectives in its own
 * order): the same fields, kernels, dependencies on the same rank's task at the same
 * position, memory effects on paired buffers, collectives with the same members. */
static gboolean
same_task (Pair *x, guint sid, guint tid)
{
  const ModelTask *s = model_plan_task (x->a, sid), *t = model_plan_task (x->b, tid);
  if (s->rank != t->rank || s->stream != t->stream || s->kind != t->kind
      || strcmp (s->label, t->label) != 0 || s->layer != t->layer
      || s->micro_batch != t->micro_batch || s->n_kernels != t->n_kernels
      || s->n_deps != t->n_deps || s->n_effects != t->n_effects || s->flops != t->flops
      || s->bytes != t->bytes || (s->collective < 0) != (t->collective < 0)
      || s->offload != t->offload || s->amount != t->amount)
    return FALSE;
  for (guint k = 0; k < s->n_kernels; k++)
    if (!model_kernel_equal (model_plan_kernel (x->a, s->first_kernel + k),
                             model_plan_kernel (x->b, t->first_kernel + k)))
      return FALSE;
  for (guint k = 0; k < s->n_deps; k++)
    {
      guint da = model_plan_dep (x->a, s->first_dep + k), db = model_plan_dep (x->b, t->first_dep + k);
      if (model_plan_task (x->a, da)->rank != model_plan_task (x->b, db)->rank
          || x->pos_a[da] != x->pos_b[db])
        return FALSE;
    }
  for (guint k = 0; k < s->n_effects; k++)
    {
      const ModelMemEffect *e = model_plan_effect (x->a, s->first_effect + k);
      const ModelMemEffect *f = model_plan_effect (x->b, t->first_effect + k);
      if (e->category != f->category || e->bytes != f->bytes || e->when != f->when
          || e->where != f->where || e->n_tensors != f->n_tensors
          || !same_handle (x, e->handle, f->handle))
        return FALSE;
    }
  if (s->collective >= 0)
    {
      const ModelCollective *c = model_plan_collective (x->a, (guint) s->collective);
      const ModelCollective *d = model_plan_collective (x->b, (guint) t->collective);
      if (c->kind != d->kind || c->bytes != d->bytes || c->n_ranks != d->n_ranks
          || c->dims != d->dims || c->ub_sms != d->ub_sms
          || memcmp (c->ranks, d->ranks, c->n_ranks * sizeof (guint)) != 0)
        return FALSE;
    }
  return TRUE;
}

/* On `rel`: the representatives-only plan against the full plan: each representative's
 * task list is the full plan's list of that rank, and every rank's per-rank state (state
 * bytes, initial buffers, their creation tasks) is its representative's there. Returns the
 * shift, which must be the one the full comparison finds. `sets`: as simulate(). */
static HwRankShift
check_representatives_built (const char *rel, const char *const *sets, guint *built_out)
{
  g_autofree char *path = stepsim_test_srcpath (rel);
  g_autoptr (GError) e = NULL;
  g_autoptr (CliScenario) sc = cli_scenario_load (path, sets, &e);
  CU_ASSERT_FATAL (sc != NULL);
  ModelSimInput in = cli_scenario_sim_input (sc);
  g_autoptr (SimEngine) engine = sim_engine_new ();
  g_autoptr (SimFluid) fluid = sim_fluid_new (engine);
  g_autoptr (HwCluster) cluster = hw_cluster_new_with_fabric (in.node, in.n_nodes, in.fabric,
                                                              fluid);
  g_autoptr (ModelPlan) full = model_plan_new (in.arch, in.stack, in.par, &e);
  CU_ASSERT_FATAL (full != NULL);
  HwRankShift sh = { 0 };
  g_autoptr (ModelPlan) reps = model_rank_classes_plan (in.arch, in.stack, in.par, 0, cluster,
                                                        &sh, &e);
  CU_ASSERT_FATAL (reps != NULL);
  guint n = model_plan_n_ranks (full);
  CU_ASSERT_EQUAL (model_plan_n_ranks (reps), n);
  HwRankShift found = model_rank_classes_shift (full, cluster);
  CU_ASSERT (hw_rank_shift_equal (&sh, &found));
  guint built = model_plan_n_built (reps);
  CU_ASSERT (built == hw_rank_shift_n_reps (&sh) || built == n);
  if (built_out != NULL)
    *built_out = built;
  CU_ASSERT_EQUAL (model_plan_n_tasks (reps) * (n / built), model_plan_n_tasks (full));
  Pair x = { .a = reps, .b = full };
  rank_lists (reps, &x.first_a, &x.ids_a, &x.pos_a);
  rank_lists (full, &x.first_b, &x.ids_b, &x.pos_b);
  x.handles = g_hash_table_new (NULL, NULL);
  const HwRankShift *b = model_plan_built (reps);
  gboolean same = TRUE;
  for (guint i = 0; same && i < hw_rank_shift_n_reps (b); i++)
    {
      guint r = hw_rank_shift_rank (b, i);
      guint len = x.first_a[r + 1] - x.first_a[r];
      same = len == x.first_b[r + 1] - x.first_b[r];
      for (guint k = 0; same && k < len; k++)
        same = same_task (&x, x.ids_a[x.first_a[r] + k], x.ids_b[x.first_b[r] + k]);
    }
  for (guint r = 0; same && r < n; r++) /* rank r answers for its representative */
    {
      guint q = hw_rank_shift_rep (b, r);
      same = model_plan_state_bytes (reps, r) == model_plan_state_bytes (full, q);
      for (guint c = 0; same && c < MODEL_N_MEM; c++)
        {
          guint ta = model_plan_creation_task (reps, r, c), tb = model_plan_creation_task (full, q, c);
          same = same_handle (&x, model_plan_initial_handle (reps, r, c),
                              model_plan_initial_handle (full, q, c))
                 && (ta == G_MAXUINT) == (tb == G_MAXUINT)
                 && (ta == G_MAXUINT || x.pos_a[ta] == x.pos_b[tb]);
        }
    }
  if (!same)
    g_printerr ("%s: the representatives' plan differs from the full plan's\n", rel);
  CU_ASSERT (same);
  g_hash_table_unref (x.handles);
  g_free (x.first_a), g_free (x.ids_a), g_free (x.pos_a);
  g_free (x.first_b), g_free (x.ids_b), g_free (x.pos_b);
  return sh;
}

static HwRankShift
check_representatives (const char *rel, const char *const *sets)
{
  return check_representatives_built (rel, sets, NULL);
}

/* The number of ranks check_representatives' shift replays. */
static guint
reps_of (const char *rel, const char *const *sets)
{
  HwRankShift sh = check_representatives (rel, sets);
  return hw_rank_shift_n_reps (&sh);
}

/* 32 A100s (4 DGX nodes: PCIe switches of two GPUs) in 2 pipeline stages of 2 nodes, TP 2:
 * a stage's ranks shift by one node (block 16, d 8), every node's GPUs rotate by a switch
 * (block 8, d 2) and each switch's pair swaps (block 2, d 1): three levels, 2 stages × 1
 * representative. */
static const char *const pp_two_nodes[]
    = { "cluster.nodes=4", "parallel.pp=2", "parallel.tp=2", "training.grad_accum=4", NULL };

/* 128 A100s (16 nodes) in 2 stages of 8 nodes, TP 2, ZeRO-1 (reduce-scatter and all-gather
 * rings over each stage's data-parallel groups): the same, 2 stages × 1 representative. */
static const char *const pp_eight_nodes[]
    = { "cluster.nodes=16", "parallel.pp=2", "parallel.tp=2", "parallel.data_parallel=zero1",
        "training.grad_accum=4", NULL };

/* The same under DDP: the gradient all-reduce over the stage's 8 nodes runs as an NCCL tree,
 * whose node edges one pod lays as a circulant (hardware/collective_lower.c
 * tree_edges_as_circulant, the tree's time): whole nodes shift as under ZeRO-1, 2. Split in
 * pods of 4 nodes whose core tapers 2:1, the tree itself is kept, which no shift across
 * nodes maps onto itself; every node's GPUs rotate by a switch pair and swap inside it
 * (block 8, d 2, then block 2, d 1): one representative per node, 16. */
static const char *const pp_tree[]
    = { "cluster.nodes=16", "parallel.pp=2", "parallel.tp=2", "training.grad_accum=4", NULL };
static const char *const pp_tree_tapered[]
    = { "cluster.nodes=16", "cluster.nodes_per_pod=4", "cluster.pod_oversubscription=2",
        "parallel.pp=2", "parallel.tp=2", "training.grad_accum=4", NULL };

static void
test_representatives_plan (void)
{
  /* 8 GPUs behind PCIe switches of two (the node rotated by a switch: 2 classes); 16 and 64
   * nodes, every node shifted by whole nodes and its GPUs rotated by a switch pair (2) */
  CU_ASSERT_EQUAL (reps_of ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini", NULL), 2);
  CU_ASSERT_EQUAL (reps_of ("bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini", NULL), 2);
  CU_ASSERT_EQUAL (reps_of ("bench/llama-3.1-70b-fsdp-64xdgx-h100.ini", NULL), 2);
  /* tp8 LoRA, cp8, offload */
  check_representatives ("scenarios/llama-3.1-70b-lora-tp8-dgx-h100.ini", NULL);
  check_representatives ("scenarios/cp-llama-3.1-8b-128k-dgx-h100.ini", NULL);
  check_representatives ("tests/validation/offload-s10-llama-8b-zero2-dgx-a100.ini", NULL);
  /* pipeline stages: each stage's ranks shift inside the stage, the stages built apart */
  CU_ASSERT_EQUAL (reps_of ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini", pp_two_nodes),
                   2);
  CU_ASSERT_EQUAL (reps_of ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini", pp_eight_nodes),
                   2);
  CU_ASSERT_EQUAL (reps_of ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini", pp_tree), 2);
  CU_ASSERT_EQUAL (reps_of ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini", pp_tree_tapered),
                   16);
  check_representatives ("tests/validation/t2b-gpt-175b-tp8-pp8-sp-selective.ini", NULL);
}

static void
test_shipped_scenarios (void)
{
  g_autofree char *dir = stepsim_test_srcpath ("scenarios");
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  CU_ASSERT_FATAL (d != NULL);
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  for (const char *n; (n = g_dir_read_name (d)) != NULL;)
    if (g_str_has_suffix (n, ".ini"))
      g_ptr_array_add (names, g_strdup_printf ("scenarios/%s", n));
  g_ptr_array_sort (names, (GCompareFunc) g_strcmp0); /* fixed order */
  CU_ASSERT (names->len >= 10);
  for (guint i = 0; i < names->len; i++)
    check_equivalent (g_ptr_array_index (names, i));
}

/* The bench/ cases: 8 GPUs of one DGX H100, 16 and 64 nodes. Without offloading no host
 * copy runs, so the PCIe switches carry no route (NVLink inside the node, each GPU's NIC on
 * its own switch: hardware/topology.h hw_topology_set_no_host_copies) and the rotation by
 * one GPU maps every node onto itself; whole nodes shift too: every rank is one class. */
static void
test_bench_collapse (void)
{
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini"), 1);
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-70b-tp8-dp16-16xdgx-h100.ini"), 1);
  CU_ASSERT_EQUAL (check_equivalent ("bench/llama-3.1-70b-fsdp-64xdgx-h100.ini"), 1);
}

/* Pipeline stages: the three cases of test_representatives_plan, a pipeline whose stages
 * are one node each (T2b: 8 stages of 8 A100s, each node's GPUs rotated by one, its PCIe
 * switches idle without host copies: one class per stage), and 32 DGX H100 nodes of the
 * shipped 405B scenario in 8 stages of 4 (one class per stage). Collapsed = full to 1e-9,
 * every rank's memory included (the stages differ: each is its own class). */
static void
test_pipeline_collapse (void)
{
  CU_ASSERT_EQUAL (check_equivalent_with ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini",
                                          pp_two_nodes), 2);
  CU_ASSERT_EQUAL (check_equivalent_with ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini",
                                          pp_eight_nodes), 2);
  CU_ASSERT_EQUAL (check_equivalent_with ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini",
                                          pp_tree), 2);
  CU_ASSERT_EQUAL (check_equivalent_with ("tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini",
                                          pp_tree_tapered), 16);
  CU_ASSERT_EQUAL (check_equivalent ("tests/validation/t2b-gpt-175b-tp8-pp8-sp-selective.ini"),
                   8);
  static const char *const wide[] = { "cluster.nodes=32", "training.grad_accum=8", NULL };
  CU_ASSERT_EQUAL (check_equivalent_with ("scenarios/llama-3.1-405b-tp8-pp8-h100.ini", wide), 8);
}

/* A MoE layer's shared expert under tp (plan_tp.c; Megatron SharedExpertMLP on the tp
 * group): Qwen1.5-MoE-A2.7B LoRA on one DGX H100 at tp 2 (SP), ep 4 — tp groups {0, 1} …
 * carrying the attention's and the shared expert's all-gathers and reduce-scatters, ep
 * groups {0, 2, 4, 6} and {1, 3, 5, 7}: collapsed = full to 1e-9, and the representatives'
 * plan holds the full plan's tasks of those ranks; DeepSeek-V2-Lite (MLA and shared
 * experts) likewise collapsed = full. */
static void
test_shared_expert_tp_collapse (void)
{
  static const char *const sets[] = { "model.hf_config=qwen1.5-moe-a2.7b", "parallel.tp=2",
                                      "parallel.sequence_parallel=true", "parallel.ep=4",
                                      "training.seq_len=1024", NULL };
  const char *rel = "scenarios/qwen3-30b-a3b-lora-8xh100.ini";
  check_equivalent_with (rel, sets);
  check_representatives (rel, sets);
  /* DeepSeek-V2-Lite: MLA under tp (its latents' gathers), shared experts, ep 4 */
  static const char *const mla[] = { "model.hf_config=deepseek-v2-lite", "parallel.tp=2",
                                     "parallel.sequence_parallel=true", "parallel.ep=4",
                                     "training.seq_len=1024", NULL };
  check_equivalent_with (rel, mla);
}

/* Expert tensor parallelism (plan_ep.c): Mixtral 8x7B LoRA on one DGX H100 with tp 2 (SP),
 * ep 4, etp 2 (etp groups {0, 1} …, ep groups {0, 2, 4, 6} and {1, 3, 5, 7}, the counts'
 * all-gather over all 8), and with etp carved from data-parallel ranks (tp 1, ep 2, etp 2,
 * expert-dp 2; DDP's expert gradient all-reduces over {r, r + 4}): collapsed = full to
 * 1e-9, and the representatives' plan holds the full plan's tasks of those ranks. */
static void
test_etp_collapse (void)
{
  static const char *const tp_etp[] = { "parallel.tp=2", "parallel.sequence_parallel=true",
                                        "parallel.ep=4", "parallel.etp=2", NULL };
  static const char *const dp_etp[] = { "parallel.ep=2", "parallel.etp=2", NULL };
  const char *rel = "scenarios/mixtral-8x7b-lora-ep8-dgx-h100.ini";
  check_equivalent_with (rel, tp_etp);
  check_equivalent_with (rel, dp_etp);
  check_representatives (rel, tp_etp);
  check_representatives (rel, dp_etp);
}

/* Expert groups are structural (models/plan/plan.h MODEL_COLLECTIVE_EXPERT): an EP plan's
 * classes come from the mesh and only the representatives' plans are built. Before, every
 * rank's plan was built and compared (QA: Mixtral EP8 on 1,800 DGX H100 nodes built 14,400
 * plans and hit the task cap). 4 nodes, ep 8 over each node's GPUs, ring all-reduces: the
 * rotation by one GPU maps every ep group ({8k … 8k + 7}) onto itself and whole nodes onto
 * each other: one class, collapsed = full. */
static void
test_ep_structural (void)
{
  static const char *const sets[] = { "cluster.nodes=4", "parallel.algorithm=ring", NULL };
  const char *rel = "scenarios/mixtral-8x7b-lora-ep8-dgx-h100.ini";
  CU_ASSERT_EQUAL (check_equivalent_with (rel, sets), 1);
  /* this cluster may copy to the host (no run configures it otherwise), so a node's GPUs
   * rotate by a PCIe switch pair only: two classes, two plans built, not 32 */
  guint built = 0;
  HwRankShift sh = check_representatives_built (rel, sets, &built);
  CU_ASSERT_EQUAL (built, hw_rank_shift_n_reps (&sh));
  CU_ASSERT_EQUAL (built, 2);
}

/* Pods (hardware/topology.h): 4 DGX A100 nodes, TP 2, ZeRO-1 (rings over the data-parallel
 * groups). In one pod every node shifts onto the next, each node's GPUs rotate by a switch
 * and each switch's pair swaps: 1 class. In 2 pods of 2 nodes with 4:1 pod oversubscription
 * a shift by one node would move a pair inside a pod onto a pair across pods; only whole
 * pods swap (block 32, d 16), then the GPUs inside each node as before: one class per node
 * of a pod, 2, and collapsed = full to 1e-9 with the slower core links. The same in 2 pods of
 * 4 (2:1): the data-parallel ring crosses the pods, so a node's place in its pod (first,
 * receiving over the core; last, sending over it) is no symmetry: one class per node of a
 * pod, 4 (pod swap, switch rotation, pair swap: three levels). Under fsdp_hybrid_shard with
 * TP 8 and a shard group of the 4 nodes of a pod (rings over {j, j + 8, j + 16, j + 24} inside
 * the pod, pairs {j, j + 32} across pods) pods swap, the nodes of a pod rotate and the GPUs of
 * a node rotate: pod → node → GPU, every rank one class (two levels: 2). On the plain
 * cluster of check_representatives (host copies possible: a node's GPUs rotate by a switch
 * only, and its tp ring rules out the pair swap) pod → node → switch, 2. */
static const char *const pods_one[]
    = { "cluster.nodes=4", "parallel.tp=2", "parallel.data_parallel=zero1",
        "training.grad_accum=4", NULL };
static const char *const pods_two[]
    = { "cluster.nodes=4", "cluster.nodes_per_pod=2", "cluster.pod_oversubscription=4",
        "parallel.tp=2", "parallel.data_parallel=zero1", "training.grad_accum=4", NULL };
static const char *const pods_four[]
    = { "cluster.nodes=8", "cluster.nodes_per_pod=4", "cluster.pod_oversubscription=2",
        "parallel.tp=2", "parallel.data_parallel=zero1", "training.grad_accum=4", NULL };
static const char *const pods_hybrid[]
    = { "cluster.nodes=8", "cluster.nodes_per_pod=4", "cluster.pod_oversubscription=2",
        "parallel.tp=8", "parallel.data_parallel=fsdp_hybrid_shard", "parallel.dp_shard=4",
        "training.grad_accum=4", NULL };

static void
test_pods_collapse (void)
{
  const char *rel = "tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini";
  CU_ASSERT_EQUAL (check_equivalent_with (rel, pods_one), 1);
  CU_ASSERT_EQUAL (check_equivalent_with (rel, pods_two), 2);
  CU_ASSERT_EQUAL (reps_of (rel, pods_two), 2);
  CU_ASSERT_EQUAL (check_equivalent_with (rel, pods_four), 4);
  CU_ASSERT_EQUAL (reps_of (rel, pods_four), 4);
  CU_ASSERT_EQUAL (check_equivalent_with (rel, pods_hybrid), 1);
  CU_ASSERT_EQUAL (reps_of (rel, pods_hybrid), 2);
}

/* Rank order tp-cp-ep-pp-dp ([parallel] order, mesh.h): a pipeline replica (pp·cp·tp
 * ranks) is consecutive and a stage is no rank block, so the classes come from shifts that
 * keep every rank's stage (model_mesh_shift_keeps_stages). 32 A100s (4 nodes), pp 2, tp 2:
 * a replica is 4 ranks, two per node; whole nodes shift, each node's two replicas swap
 * (block 8 by 4) and each tp pair swaps (block 2 by 1): 2 representatives, one per stage.
 * The same in 2 pods of 2 nodes (4:1): only whole pods swap, 4. 128 A100s under ZeRO-1: 2
 * again; under DDP the
 * all-reduce over each stage's 32 data-parallel ranks runs as an NCCL tree across the 16
 * nodes, laid as a circulant in one pod (the tree's time): 2 as under ZeRO-1. Mixtral on one node with
 * pp 2, tp 2 (SP), ep 2 = cp·tp: the expert grid carved as Megatron's expert generator.
 * Collapsed = full to 1e-9, and the representatives' plan holds the full plan's tasks. */
static void
test_order_collapse (void)
{
  const char *rel = "tests/validation/s10-llama-3.2-1b-ddp-8xa100.ini";
  static const char *const two_nodes[]
      = { "cluster.nodes=4", "parallel.pp=2", "parallel.tp=2", "training.grad_accum=4",
          "parallel.order=tp-cp-ep-pp-dp", NULL };
  static const char *const pods[]
      = { "cluster.nodes=4", "cluster.nodes_per_pod=2", "cluster.pod_oversubscription=4",
          "parallel.pp=2", "parallel.tp=2", "training.grad_accum=4",
          "parallel.order=tp-cp-ep-pp-dp", NULL };
  static const char *const zero1[]
      = { "cluster.nodes=16", "parallel.pp=2", "parallel.tp=2", "parallel.data_parallel=zero1",
          "training.grad_accum=4", "parallel.order=tp-pp-dp", NULL };
  static const char *const tree[]
      = { "cluster.nodes=16", "parallel.pp=2", "parallel.tp=2", "training.grad_accum=4",
          "parallel.order=tp-pp-dp", NULL };
  static const char *const experts[]
      = { "parallel.pp=2", "parallel.tp=2", "parallel.sequence_parallel=true", "parallel.ep=2",
          "parallel.order=tp-cp-ep-pp-dp", NULL };
  CU_ASSERT_EQUAL (check_equivalent_with (rel, two_nodes), 2);
  CU_ASSERT_EQUAL (check_equivalent_with (rel, pods), 4);
  CU_ASSERT_EQUAL (check_equivalent_with (rel, zero1), 2);
  CU_ASSERT_EQUAL (check_equivalent_with (rel, tree), 2);
  CU_ASSERT_EQUAL (reps_of (rel, two_nodes), 2);
  CU_ASSERT_EQUAL (reps_of (rel, pods), 4);
  CU_ASSERT_EQUAL (reps_of (rel, zero1), 2);
  const char *moe = "scenarios/mixtral-8x7b-lora-ep8-dgx-h100.ini";
  check_equivalent_with (moe, experts);
  check_representatives (moe, experts);
}

/* A straggler at rank 5 of 8 breaks every shift that moves rank 5 onto a normal rank: only
 * the identity is left, and the run replays every rank. */
static void
test_straggler_splits (void)
{
  static const char *const sets[] = { "run.stragglers=5:1.3", NULL };
  ModelSimResult a = { 0 };
  CU_ASSERT_FATAL (simulate ("bench/llama-3.1-8b-zero3-ga8-dgx-h100.ini", sets, &a));
  CU_ASSERT_EQUAL (hw_rank_shift_n_reps (&a.classes), 8);
  model_sim_result_clear (&a);
}

int
main (void)
{
  const StepsimTest tests[] = {
    { "shipped scenarios: collapsed = full to 1e-9", test_shipped_scenarios },
    { "bench cases collapse to one class", test_bench_collapse },
    { "a straggler splits the classes", test_straggler_splits },
    { "expert tensor parallelism: collapsed = full to 1e-9", test_etp_collapse },
    { "expert parallelism: structural, representatives only", test_ep_structural },
    { "shared expert and MLA under tp: collapsed = full to 1e-9", test_shared_expert_tp_collapse },
    { "pipeline stages: collapsed = full to 1e-9", test_pipeline_collapse },
    { "pods: only pod-preserving shifts; collapsed = full to 1e-9", test_pods_collapse },
    { "rank order tp-cp-ep-pp-dp: collapsed = full to 1e-9", test_order_collapse },
    { "the representatives' plan holds the full plan's tasks of those ranks",
      test_representatives_plan },
  };
  return STEPSIM_RUN_TESTS ("cli/rank_classes", tests);
}
