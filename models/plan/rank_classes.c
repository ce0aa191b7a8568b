/* models/plan/rank_classes.c — the period of a run's rank symmetry; see rank_classes.h.
 *
 * The plan check compares rank r's task list with rank (r + d) mod n's, for every r (the
 * shifts compose, so one step of d over all ranks, wrap-around included, proves every
 * power of it). References inside the plan are compared through what they mean, not their
 * numbers: a dependency as (rank offset, position in that rank's list), a buffer handle as
 * (rank offset of its allocating rank, ordinal among that rank's allocations), a collective
 * instance as its member list, whose image under the shift must be the other rank's
 * instance, member by member (memoized per instance: each list is read once). */
#include "config.h"
#include "models/plan/rank_classes.h"

#include <string.h>
#include "hardware/collective.h"
#include "models/parallel/mesh.h"

typedef struct
{
  const ModelPlan *plan;
  guint n;              /* ranks */
  guint *first;         /* per rank: index into `order` of its first task; n + 1 entries */
  guint *order;         /* task ids grouped by rank, in plan order */
  guint *pos;           /* per task: position in its rank's list */
  guint *handle_rank;   /* per handle: allocating rank (G_MAXUINT: none seen) */
  guint *handle_ord;    /* per handle: ordinal among that rank's allocations */
  guint n_handles;
} Index;

static void
index_clear (Index *x)
{
  g_free (x->first);
  g_free (x->order);
  g_free (x->pos);
  g_free (x->handle_rank);
  g_free (x->handle_ord);
}

static guint
handle_bound (const ModelPlan *plan)
{
  guint h = 0;
  guint n = model_plan_n_ranks (plan);
  for (guint r = 0; r < n; r++)
    for (guint c = 0; c < MODEL_N_MEM; c++)
      h = MAX (h, model_plan_initial_handle (plan, r, c));
  for (guint t = 0; t < model_plan_n_tasks (plan); t++)
    {
      const ModelTask *task = model_plan_task (plan, t);
      for (guint i = 0; i < task->n_effects; i++)
        h = MAX (h, model_plan_effect (plan, task->first_effect + i)->handle);
    }
  return h + 1;
}

static void
note_handle (Index *x, guint h, guint rank, guint *count)
{
  if (h == 0 || h >= x->n_handles || x->handle_rank[h] != G_MAXUINT)
    return;
  x->handle_rank[h] = rank;
  x->handle_ord[h] = count[rank]++;
}

static void
index_build (Index *x, const ModelPlan *plan)
{
  guint n = model_plan_n_ranks (plan), nt = model_plan_n_tasks (plan);
  *x = (Index){ .plan = plan, .n = n };
  x->first = g_new0 (guint, n + 1);
  x->order = g_new (guint, MAX (nt, 1));
  x->pos = g_new (guint, MAX (nt, 1));
  for (guint t = 0; t < nt; t++)
    x->first[model_plan_task (plan, t)->rank + 1]++;
  for (guint r = 0; r < n; r++)
    x->first[r + 1] += x->first[r];
  g_autofree guint *fill = g_memdup2 (x->first, n * sizeof (guint));
  for (guint t = 0; t < nt; t++)
    {
      guint r = model_plan_task (plan, t)->rank;
      x->pos[t] = fill[r] - x->first[r];
      x->order[fill[r]++] = t;
    }
  x->n_handles = handle_bound (plan);
  x->handle_rank = g_new (guint, x->n_handles);
  x->handle_ord = g_new0 (guint, x->n_handles);
  for (guint h = 0; h < x->n_handles; h++)
    x->handle_rank[h] = G_MAXUINT;
  g_autofree guint *count = g_new0 (guint, n);
  for (guint r = 0; r < n; r++)
    {
      for (guint c = 0; c < MODEL_N_MEM; c++)
        note_handle (x, model_plan_initial_handle (plan, r, c), r, count);
      for (guint i = x->first[r]; i < x->first[r + 1]; i++)
        {
          const ModelTask *task = model_plan_task (plan, x->order[i]);
          for (guint e = 0; e < task->n_effects; e++)
            {
              const ModelMemEffect *m = model_plan_effect (plan, task->first_effect + e);
              if (m->bytes > 0)
                note_handle (x, m->handle, r, count);
            }
        }
    }
}

/* Handles h (in rank a's list) and k (in rank b = σa's) mean the same buffer: k is
 * allocated by the image under σ of h's allocating rank, with the same ordinal there. */
static gboolean
handles_match (const Index *x, const HwRankShift *sh, guint h, guint k)
{
  if (h == 0 || k == 0)
    return h == k;
  if (h >= x->n_handles || k >= x->n_handles)
    return FALSE;
  guint ra = x->handle_rank[h], rb = x->handle_rank[k];
  if (ra == G_MAXUINT || rb == G_MAXUINT)
    return ra == rb && h == k;
  return hw_rank_shift_image (sh, ra) == rb && x->handle_ord[h] == x->handle_ord[k];
}

static gboolean
effects_equal (const Index *x, const HwRankShift *sh, const ModelMemEffect *e,
               const ModelMemEffect *f)
{
  if (e->category != f->category || e->bytes != f->bytes || e->when != f->when
      || e->where != f->where || e->stream != f->stream
      || e->n_tensors != f->n_tensors
      || !handles_match (x, sh, e->handle, f->handle))
    return FALSE;
  if (e->n_tensors > 1
      && memcmp (model_plan_tensor_sizes (x->plan, e->first_tensor),
                 model_plan_tensor_sizes (x->plan, f->first_tensor),
                 e->n_tensors * sizeof (double)) != 0)
    return FALSE;
  return TRUE;
}

/* Collective instance cb must be the image of ca under the shift σ: the same instance
 * whose member set the shift maps onto itself (whether its flows do is
 * hw_collective_shift_invariant's question), or another instance listing the shifted
 * members in the same order. `image` memoizes verified images (G_MAXUINT: not yet);
 * `scratch` is n zero bytes, left zero. */
static gboolean
instance_maps (const ModelPlan *plan, gint ca, gint cb, const HwRankShift *sh, guint *image,
               guint8 *scratch)
{
  if (ca < 0 || cb < 0)
    return ca == cb;
  if (image[ca] != G_MAXUINT)
    return image[ca] == (guint) cb;
  const ModelCollective *p = model_plan_collective (plan, (guint) ca);
  const ModelCollective *q = model_plan_collective (plan, (guint) cb);
  if (p->kind != q->kind || p->algorithm != q->algorithm || p->bytes != q->bytes
      || p->n_ranks != q->n_ranks || p->ub_sms != q->ub_sms)
    return FALSE;
  gboolean ok = TRUE;
  if (ca == cb)
    {
      for (guint i = 0; i < p->n_ranks; i++)
        scratch[p->ranks[i]] = 1;
      for (guint i = 0; ok && i < p->n_ranks; i++)
        ok = scratch[hw_rank_shift_image (sh, p->ranks[i])] != 0;
      for (guint i = 0; i < p->n_ranks; i++)
        scratch[p->ranks[i]] = 0;
    }
  else
    for (guint i = 0; ok && i < p->n_ranks; i++)
      ok = q->ranks[i] == hw_rank_shift_image (sh, p->ranks[i]);
  if (ok)
    image[ca] = (guint) cb;
  return ok;
}

static gboolean
tasks_equal (const Index *x, const ModelTask *s, const ModelTask *t, const HwRankShift *sh,
             guint *image, guint8 *scratch)
{
  const ModelPlan *plan = x->plan;
  if (s->stream != t->stream || s->kind != t->kind || s->layer != t->layer
      || s->micro_batch != t->micro_batch || s->n_kernels != t->n_kernels
      || s->n_deps != t->n_deps || s->n_effects != t->n_effects || s->flops != t->flops
      || s->bytes != t->bytes || s->offload != t->offload || s->amount != t->amount
      || strcmp (s->label, t->label) != 0
      || !instance_maps (plan, s->collective, t->collective, sh, image, scratch))
    return FALSE;
  for (guint k = 0; s->first_kernel != t->first_kernel && k < s->n_kernels; k++)
    if (!model_kernel_equal (model_plan_kernel (plan, s->first_kernel + k),
                             model_plan_kernel (plan, t->first_kernel + k)))
      return FALSE;
  for (guint k = 0; k < s->n_deps; k++)
    {
      guint ds = model_plan_dep (plan, s->first_dep + k), dt = model_plan_dep (plan, t->first_dep + k);
      guint rs = model_plan_task (plan, ds)->rank, rt = model_plan_task (plan, dt)->rank;
      if (hw_rank_shift_image (sh, rs) != rt || x->pos[ds] != x->pos[dt])
        return FALSE;
    }
  for (guint k = 0; k < s->n_effects; k++)
    if (!effects_equal (x, sh, model_plan_effect (plan, s->first_effect + k),
                        model_plan_effect (plan, t->first_effect + k)))
      return FALSE;
  return TRUE;
}

/* Rank a's plan-level state (initial allocations, creation tasks, state bytes) against b's. */
static gboolean
rank_state_equal (const Index *x, const HwRankShift *sh, guint a, guint b)
{
  const ModelPlan *plan = x->plan;
  if (model_plan_state_bytes (plan, a) != model_plan_state_bytes (plan, b)
      || x->first[a + 1] - x->first[a] != x->first[b + 1] - x->first[b])
    return FALSE;
  for (guint c = 0; c < MODEL_N_MEM; c++)
    {
      guint ha = model_plan_initial_handle (plan, a, c), hb = model_plan_initial_handle (plan, b, c);
      guint ta = model_plan_creation_task (plan, a, c), tb = model_plan_creation_task (plan, b, c);
      if (!handles_match (x, sh, ha, hb) || (ta == G_MAXUINT) != (tb == G_MAXUINT)
          || (ta != G_MAXUINT && x->pos[ta] != x->pos[tb]))
        return FALSE;
      if (ha != 0 && hb != 0
          && model_plan_allocation (plan, ha)->bytes != model_plan_allocation (plan, hb)->bytes)
        return FALSE;
    }
  return TRUE;
}

/* Whether the plain shift `sh` maps the plan onto itself. */
static gboolean
plain_invariant (const Index *x, const HwRankShift *sh)
{
  guint n = x->n;
  guint nc = model_plan_n_collectives (x->plan);
  g_autofree guint *image = g_new (guint, MAX (nc, 1));
  for (guint i = 0; i < nc; i++)
    image[i] = G_MAXUINT;
  g_autofree guint8 *scratch = g_new0 (guint8, n);
  for (guint a = 0; a < n; a++)
    {
      guint b = hw_rank_shift_image (sh, a);
      if (!rank_state_equal (x, sh, a, b))
        return FALSE;
      for (guint i = 0; i < x->first[a + 1] - x->first[a]; i++)
        if (!tasks_equal (x, model_plan_task (x->plan, x->order[x->first[a] + i]),
                          model_plan_task (x->plan, x->order[x->first[b] + i]), sh, image,
                          scratch))
          return FALSE;
    }
  return TRUE;
}

/* Whether the shift's group maps the plan onto itself: each generator does. */
static gboolean
shift_invariant (const Index *x, const HwRankShift *sh)
{
  if (sh->n != x->n || !hw_rank_shift_valid (sh))
    return FALSE;
  HwRankShift gen[HW_RANK_SHIFT_LEVELS];
  guint k = hw_rank_shift_generators (sh, gen);
  for (guint i = 0; i < k; i++)
    if (!plain_invariant (x, &gen[i]))
      return FALSE;
  return TRUE;
}

gboolean
model_plan_shift_invariant (const ModelPlan *plan, const HwRankShift *shift)
{
  g_return_val_if_fail (plan != NULL && shift != NULL, FALSE);
  g_return_val_if_fail (model_plan_n_built (plan) == model_plan_n_ranks (plan), FALSE);
  Index x;
  index_build (&x, plan);
  gboolean ok = shift_invariant (&x, shift);
  index_clear (&x);
  return ok;
}

/* A collective instance as a value (kind, algorithm, bytes, members in order): a plan
 * repeats the same collective for every layer and micro-batch under other names. The hash
 * reads three members, not all (O(1): a group's instances share one list, plan_comm.c, and
 * hashing 131,072 members per instance dominated a ZeRO-3 plan at that size); equality
 * compares every member unless the lists are the same array. */
static guint
collective_hash (gconstpointer a)
{
  const ModelCollective *c = a;
  guint h = (guint) c->kind * 31u + (guint) c->algorithm;
  h = h * 31u + g_double_hash (&c->bytes);
  h = h * 31u + c->n_ranks;
  if (c->n_ranks > 0)
    h = ((h * 31u + c->ranks[0]) * 31u + c->ranks[c->n_ranks / 2]) * 31u
        + c->ranks[c->n_ranks - 1];
  return h;
}

static gboolean
collective_equal (gconstpointer a, gconstpointer b)
{
  const ModelCollective *c = a, *d = b;
  return c->kind == d->kind && c->algorithm == d->algorithm && c->bytes == d->bytes
         && c->n_ranks == d->n_ranks
         && (c->ranks == d->ranks
             || memcmp (c->ranks, d->ranks, c->n_ranks * sizeof (guint)) == 0);
}

/* Every collective a representative takes part in maps its flows onto themselves
 * (hw_collective_shift_invariant), each distinct collective asked once. */
static gboolean
collectives_invariant (const ModelPlan *plan, const HwCluster *cluster, const HwRankShift *sh)
{
  guint nc = model_plan_n_collectives (plan);
  g_autofree guint8 *asked = g_new0 (guint8, MAX (nc, 1));
  /* the distinct collectives found invariant: the first few in a list searched in order
   * (a plan has few: the 8-GPU ZeRO-3 bench step 4, against 784 asked), the rest in
   * a hash table; either way an equal one (collective_equal) is found */
  const ModelCollective *few[16];
  guint n_few = 0;
  g_autoptr (GHashTable) seen = NULL;
  for (guint t = 0; t < model_plan_n_tasks (plan); t++)
    {
      const ModelTask *task = model_plan_task (plan, t);
      if (!hw_rank_shift_is_rep (sh, task->rank) || task->collective < 0
          || asked[task->collective])
        continue;
      asked[task->collective] = 1;
      const ModelCollective *c = model_plan_collective (plan, (guint) task->collective);
      gboolean found = FALSE;
      for (guint i = 0; i < n_few && !found; i++)
        found = collective_equal (few[i], c);
      if (found)
        continue; /* an equal collective was found invariant already */
      if (n_few < G_N_ELEMENTS (few))
        few[n_few++] = c;
      else
        {
          if (seen == NULL)
            seen = g_hash_table_new (collective_hash, collective_equal);
          if (!g_hash_table_add (seen, (gpointer) c))
            continue;
        }
      if (!hw_collective_shift_invariant (cluster, c->kind, c->algorithm, c->ranks, c->n_ranks,
                                          c->bytes, sh))
        return FALSE;
    }
  return TRUE;
}

/* The block the rank classes of a mesh's ranks are searched in: one pipeline stage's ranks
 * where the stages are blocks (pp outermost, mesh.h; all n without stages), all n
 * otherwise (tp-cp-ep-pp-dp: the candidates are then filtered to those keeping every rank
 * in its stage, model_mesh_shift_keeps_stages, such as shifts by whole pipeline replicas
 * of pp·cp·tp ranks). */
static guint
stage_block (const ModelMesh *mesh)
{
  return model_mesh_stages_contiguous (mesh) ? model_mesh_stage_size (mesh)
                                             : model_mesh_size (mesh);
}

/* The shift whose representatives are one rank of each stage (the first): the plain shift
 * by one inside stage blocks, or under tp-cp-ep-pp-dp the shift by a whole pipeline
 * replica (pp·cp·tp ranks) with a second level shifting by one inside each stage's run of
 * cp·tp ranks. */
static HwRankShift
one_per_stage (const ModelMesh *mesh)
{
  guint n = model_mesh_size (mesh), block = stage_block (mesh);
  if (model_mesh_stages_contiguous (mesh))
    return hw_rank_shift_plain (n, block, 1);
  guint run = model_mesh_stride (mesh, MODEL_MESH_PP);
  HwRankShift sh = hw_rank_shift_plain (n, n, run * mesh->degree[MODEL_MESH_PP]);
  return run > 1 ? hw_rank_shift_with_level (sh, 1, run, 1) : sh;
}

static gint
fewer_reps (gconstpointer a, gconstpointer b)
{
  guint x = hw_rank_shift_n_reps (a), y = hw_rank_shift_n_reps (b);
  return (x > y) - (x < y);
}

/* The shifts rank classes try on n ranks in pipeline-stage blocks of `stage` ranks, fewest
 * representatives first (ties: the order below), the identity left out. The levels are
 * the plain shifts by d places inside blocks of g ranks, for every g dividing the stage and
 * every proper divisor d of g, that keep every rank in its stage and map `cluster` onto
 * itself (hw_cluster_shift_invariant: a group does when each generator does, so every
 * candidate below is cluster-invariant and need not be asked again). The candidates are
 * those levels alone, then each with a second level whose block divides its d, then each of
 * those with a third level whose block divides the second's d (rank_shift.h), as many as
 * HW_RANK_SHIFT_LEVELS allows. A level whose block is the stage moves ranks between pods
 * or nodes (d whole pods, or whole nodes) or inside one; smaller blocks move whole nodes
 * inside one pod, or rotate ranks inside each node (hw_topology_shift_map says which the
 * cluster allows): with pods, a stage of several pods takes all three, pods, nodes in a pod
 * and GPUs in a node. GArray of HwRankShift, new. */
static GArray *
candidates (const ModelMesh *mesh, const HwCluster *cluster)
{
  guint n = model_mesh_size (mesh), stage = stage_block (mesh);
  gboolean filter = !model_mesh_stages_contiguous (mesh);
  g_autoptr (GArray) levels = g_array_new (FALSE, FALSE, sizeof (HwRankShift));
  for (guint g = stage; g >= 2; g--)
    if (stage % g == 0)
      for (guint d = 1; d < g; d++)
        if (g % d == 0)
          {
            HwRankShift sh = hw_rank_shift_plain (n, g, d);
            if ((!filter || model_mesh_shift_keeps_stages (mesh, &sh))
                && hw_cluster_shift_invariant (cluster, &sh))
              g_array_append_val (levels, sh);
          }
  GArray *out = g_array_new (FALSE, FALSE, sizeof (HwRankShift));
  g_array_append_vals (out, levels->data, levels->len);
  for (guint l = 1, from = 0; l < HW_RANK_SHIFT_LEVELS; l++)
    {
      guint to = out->len; /* the candidates with l levels: [from, to) */
      for (guint c = from; c < to; c++)
        for (guint k = 0; k < levels->len; k++)
          {
            HwRankShift above = g_array_index (out, HwRankShift, c);
            const HwRankShiftLevel *lv = &g_array_index (levels, HwRankShift, k).level[0];
            if (above.level[l - 1].d % lv->block != 0)
              continue;
            HwRankShift sh = hw_rank_shift_with_level (above, l, lv->block, lv->d);
            g_array_append_val (out, sh);
          }
      from = to;
    }
  g_array_sort (out, fewer_reps); /* g_array_sort is stable (GLib ≥ 2.76 documents it;
                                   * ties are further broken by rank_classes' checks alone) */
  return out;
}

/* One plain level's answer to a check, asked once (rank_classes tries many compositions of
 * the same few levels). */
typedef struct
{
  HwRankShiftLevel level;
  gboolean ok;
} LevelAnswer;

typedef gboolean (*LevelCheck) (const HwRankShift *level, gconstpointer data);

/* Whether every generator of `sh` (a plain shift each, hw_rank_shift_generators) passes
 * `check`, each level's answer kept in `memo` (GArray of LevelAnswer, grown) and reused. A
 * check that each generator must pass for the group to (a necessary condition) rules a
 * candidate out as soon as one of its levels fails. */
static gboolean
levels_pass (GArray *memo, const HwRankShift *sh, LevelCheck check, gconstpointer data)
{
  HwRankShift gen[HW_RANK_SHIFT_LEVELS];
  guint k = hw_rank_shift_generators (sh, gen);
  for (guint i = 0; i < k; i++)
    {
      const HwRankShiftLevel *lv = &gen[i].level[0];
      guint j = 0;
      while (j < memo->len
             && (g_array_index (memo, LevelAnswer, j).level.block != lv->block
                 || g_array_index (memo, LevelAnswer, j).level.d != lv->d))
        j++;
      if (j == memo->len)
        {
          LevelAnswer a = { *lv, check (&gen[i], data) };
          g_array_append_val (memo, a);
        }
      if (!g_array_index (memo, LevelAnswer, j).ok)
        return FALSE;
    }
  return TRUE;
}

static gboolean
plain_check (const HwRankShift *level, gconstpointer data)
{
  return plain_invariant (data, level);
}

HwRankShift
model_rank_classes_shift (const ModelPlan *plan, const HwCluster *cluster)
{
  guint n = plan != NULL ? model_plan_n_ranks (plan) : 1;
  HwRankShift none = hw_rank_shift_identity (n);
  g_return_val_if_fail (plan != NULL && cluster != NULL, none);
  g_return_val_if_fail (hw_cluster_n_ranks (cluster) == n, none);
  if (model_plan_n_built (plan) < n) /* built for its representatives: proven then */
    return *model_plan_built (plan);
  g_autoptr (GArray) cands = candidates (model_plan_mesh (plan), cluster);
  Index x;
  index_build (&x, plan);
  HwRankShift found = none;
  g_autoptr (GArray) memo = g_array_new (FALSE, FALSE, sizeof (LevelAnswer));
  for (guint i = 0; i < cands->len; i++)
    {
      /* the plan maps onto itself under the group when it does under each generator
       * (shift_invariant): asked once per level */
      const HwRankShift *sh = &g_array_index (cands, HwRankShift, i);
      if (levels_pass (memo, sh, plain_check, &x) && collectives_invariant (plan, cluster, sh))
        {
          found = *sh;
          break;
        }
    }
  index_clear (&x);
  return found;
}

/* ---- building the representatives only ------------------------------------------------- */

static int
guint_cmp (gconstpointer a, gconstpointer b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;
  return x < y ? -1 : x > y;
}

/* Whether the group g (k members, in its listing order) maps onto a group: s holds the
 * images of g's members (reordered here), h the k_h members of the group of s[0]: onto that
 * group member by member, or onto g itself as a set (g in increasing order). */
static gboolean
group_maps (const guint *g, guint *s, guint k, const guint *h, guint kh)
{
  if (kh != k)
    return FALSE;
  if (memcmp (h, s, k * sizeof (guint)) == 0)
    return TRUE; /* onto another group, in order */
  qsort (s, k, sizeof (guint), guint_cmp);
  return memcmp (g, s, k * sizeof (guint)) == 0;
}

/* groups_shift for the expert groups along `dim` (Megatron's carving inside a stage,
 * models/parallel/mesh.h model_mesh_expert_group, listed in increasing rank order): each
 * onto itself as a set, or onto another member by member. O(ranks · group). */
static gboolean
expert_groups_shift (const ModelMesh *mesh, ModelMeshExpertDim dim, const HwRankShift *sh)
{
  guint n = model_mesh_size (mesh);
  g_autofree guint *g = g_new (guint, n), *h = g_new (guint, n), *s = g_new (guint, n);
  for (guint r = 0; r < n; r++)
    {
      guint k = model_mesh_expert_group (mesh, r, dim, g);
      if (g[0] != r)
        continue; /* each group once, from its least member */
      for (guint i = 0; i < k; i++)
        s[i] = hw_rank_shift_image (sh, g[i]);
      if (!group_maps (g, s, k, h, model_mesh_expert_group (mesh, s[0], dim, h)))
        return FALSE;
    }
  return TRUE;
}

/* Whether the shift σ maps every mesh group over `dims` onto a group over `dims`, as
 * instance_maps() asks of collective instances: a group onto itself (as a set), or onto
 * another group member by member in model_mesh_group's order. O(ranks · log group). */
static gboolean
groups_shift (const ModelMesh *mesh, guint dims, const HwRankShift *sh)
{
  if (dims & MODEL_COLLECTIVE_EXPERT_BIT)
    return expert_groups_shift (mesh, (ModelMeshExpertDim) (dims & ~MODEL_COLLECTIVE_EXPERT_BIT),
                                sh);
  guint n = model_mesh_size (mesh);
  g_autofree guint *g = g_new (guint, n), *h = g_new (guint, n), *s = g_new (guint, n);
  for (guint r = 0; r < n; r++)
    {
      guint coords[MODEL_MESH_N_DIMS];
      model_mesh_coords (mesh, r, coords);
      gboolean first = TRUE; /* each group once, from its first member: 0 on its dims */
      for (guint x = 0; x < MODEL_MESH_N_DIMS; x++)
        first = first && (!(dims & MODEL_MESH_BIT (x)) || coords[x] == 0);
      if (!first)
        continue;
      guint k = model_mesh_group (mesh, r, dims, g, NULL);
      g_assert (g[0] == r);
      for (guint i = 0; i < k; i++)
        s[i] = hw_rank_shift_image (sh, g[i]);
      /* model_mesh_group lists in rank order */
      if (!group_maps (g, s, k, h, model_mesh_group (mesh, s[0], dims, h, NULL)))
        return FALSE;
    }
  return TRUE;
}

/* Whether a plan of built representatives is structural in the sense of rank_classes.h:
 * every dependency inside its rank, every collective a mesh group (or two members of one
 * pp group, or an expert group). Collects the group dimension sets its collectives use
 * into `dims` (guint, distinct). */
static gboolean
structural (const ModelPlan *plan, GArray *dims)
{
  for (guint t = 0; t < model_plan_n_tasks (plan); t++)
    {
      const ModelTask *task = model_plan_task (plan, t);
      for (guint k = 0; k < task->n_deps; k++)
        if (model_plan_task (plan, model_plan_dep (plan, task->first_dep + k))->rank
            != task->rank)
          return FALSE;
    }
  for (guint i = 0; i < model_plan_n_collectives (plan); i++)
    {
      guint m = model_plan_collective (plan, i)->dims;
      if (m == 0)
        return FALSE;
      gboolean seen = FALSE;
      for (guint j = 0; j < dims->len && !seen; j++)
        seen = g_array_index (dims, guint, j) == m;
      if (!seen)
        g_array_append_val (dims, m);
    }
  return TRUE;
}

/* What one plain level must satisfy on the plan of one rank per stage: it maps every mesh
 * group the plan uses onto a group (groups_shift), and every collective of that plan
 * (collectives_invariant). */
typedef struct
{
  const ModelMesh *mesh;
  const GArray *dims;
  const ModelPlan *one;
  const HwCluster *cluster;
} OneCheck;

static gboolean
one_check (const HwRankShift *level, gconstpointer data)
{
  const OneCheck *c = data;
  for (guint i = 0; i < c->dims->len; i++)
    if (!groups_shift (c->mesh, g_array_index (c->dims, guint, i), level))
      return FALSE;
  return collectives_invariant (c->one, c->cluster, level);
}

ModelPlan *
model_rank_classes_plan (const ModelArch *arch, const ModelStack *stack,
                         const ModelParallel *par, double paged_spill, const HwCluster *cluster,
                         HwRankShift *shift, GError **error)
{
  g_return_val_if_fail (arch != NULL && stack != NULL && par != NULL && cluster != NULL
                          && shift != NULL, NULL);
  guint n = MAX (par->degree, 1);
  g_return_val_if_fail (hw_cluster_n_ranks (cluster) == n, NULL);
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  if (model_mesh_stage_size (&mesh) > 1)
    {
      /* one rank of each stage: the plan of every class is its stage's and its groups' */
      HwRankShift base = one_per_stage (&mesh);
      ModelPlan *one = model_plan_new_representatives (arch, stack, par, paged_spill, &base,
                                                       error);
      if (one == NULL)
        return NULL;
      g_autoptr (GArray) dims = g_array_new (FALSE, FALSE, sizeof (guint));
      gboolean ok = structural (one, dims);
      g_autoptr (GArray) cands = candidates (&mesh, cluster);
      g_autoptr (GArray) memo = g_array_new (FALSE, FALSE, sizeof (LevelAnswer));
      OneCheck data = { &mesh, dims, one, cluster };
      for (guint c = 0; ok && c < cands->len; c++)
        {
          const HwRankShift *sh = &g_array_index (cands, HwRankShift, c);
          /* each generator maps the groups (what the plan needs of the group), and the
           * collectives of the first rank of each stage (a representative of every
           * candidate) under it alone (necessary: its stabilizer's generator is one of the
           * group's), asked once per level; then the group's: a collective of that rank the
           * shift breaks rules the shift out before the representatives' plan is built */
          if (!levels_pass (memo, sh, one_check, &data)
              || !collectives_invariant (one, cluster, sh))
            continue;

          gboolean same = hw_rank_shift_equal (sh, &base);
          ModelPlan *reps = same ? one
                                 : model_plan_new_representatives (arch, stack, par,
                                                                   paged_spill, sh, error);
          if (reps == NULL)
            {
              model_plan_free (one);
              return NULL;
            }
          if (collectives_invariant (reps, cluster, sh))
            {
              if (reps != one)
                model_plan_free (one);
              *shift = *sh;
              return reps;
            }
          if (reps != one)
            model_plan_free (reps);
        }
      model_plan_free (one);
      if (ok)
        {
          /* A structural plan's candidates were decided above by what also decides them
           * on the full plan (its groups map, or its task lists differ; the same
           * collectives): none holds, so every rank is its own class, without comparing
           * the full plan's tasks again for each candidate. */
          *shift = hw_rank_shift_identity (n);
          return model_plan_new_representatives (arch, stack, par, paged_spill, NULL, error);
        }
    }
  /* the general path: every rank's plan, compared task by task */
  ModelPlan *full = model_plan_new_representatives (arch, stack, par, paged_spill, NULL, error);
  if (full != NULL)
    *shift = model_rank_classes_shift (full, cluster);
  return full;
}
