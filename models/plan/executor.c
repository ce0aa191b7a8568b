/* models/plan/executor.c — CUDA-stream replay of a plan; see executor.h.
 *
 * State per task: dependencies still pending, next kernel, start time. State per (rank,
 * stream): index of the next task in its queue and whether a task is running. A task
 * starts when it heads its queue, its stream is idle and no dependency is pending.
 * Host dispatch: the CPU issues a rank's kernels in program order (plan order), each taking
 * the host time of the PyTorch ops it stands for (ModelOp.host_ops × the framework's
 * host_op_time, or host_backward_op_time in a backward task, which the autograd engine
 * runs in C++) plus the GPU's host_dispatch (HwGpuSpec), and a kernel starts no earlier
 * than the host has issued it. CUDA launches are asynchronous, so the host runs ahead of
 * the GPU, except at a task marked host_sync (a `.item()`): the host waits until every
 * earlier task of its rank has ended, and issues the rest from then on. With short
 * kernels the GPU idles behind the host, as an eager PyTorch model does when it is
 * launch-bound. The host's clock of a rank is host_offset + the host time of everything
 * issued before (host_before, a prefix sum in plan order): a sync raises host_offset to
 * the sync's start less the host time before it.
 * Traces (model_executor_keep_trace): a task's start and end go through trace_add, the
 * memory effects and records of an end through end_task, so a replay from a trace
 * (model_executor_run_trace) makes the same ledger, host-ledger and recorder calls in the
 * same order as the engine's run did, and nothing else.
 */
#include "config.h"
#include "models/plan/executor.h"

#include "hardware/collective.h"
#include "hardware/topology.h"
#include "models/plan/plan_offload.h"
#include "sim/vec.h"

#include <math.h>

typedef struct _ModelExecutor ModelExecutor;

typedef struct
{
  ModelExecutor *exec;
  guint id;
  guint pending_deps;
  guint next_kernel;
  double start;
  double end;
  double kernel_start; /* s, when its running kernel was launched (op_times) */
  double host_issued;  /* s of host time its kernels issued so far took */
  double kernel_host;  /* s of host time its running kernel's issue took (op_times) */
  gboolean done;
  gboolean rep; /* its rank is a representative (hw_rank_shift_is_rep) */
  guint row;    /* its rank's row (ledger_row), found once: a kernel's issue reads it */
} TaskState;

typedef struct
{
  ModelExecutor *exec;
  guint index;       /* into the plan's collectives */
  SimVec arrived;    /* guint task ids that started */
  guint group;       /* hw_collective_group of its members, 0 until its first start */
} CollectiveState;

/* A plan's member list by identity: its address (the plan's, shared by a group's
 * collectives) and length. */
typedef struct
{
  const guint *ranks;
  guint n_ranks;
} MemberList;

static guint
member_list_hash (gconstpointer p)
{
  const MemberList *l = p;
  return g_direct_hash (l->ranks) * 31u + l->n_ranks;
}

static gboolean
member_list_equal (gconstpointer pa, gconstpointer pb)
{
  const MemberList *a = pa, *b = pb;
  return a->ranks == b->ranks && a->n_ranks == b->n_ranks;
}

/* A task's busy time on its stream, s. The executor's growing lists (busy intervals, a
 * collective's arrivals, the trace) are SimVecs (sim/vec.h: an inline append), not GArrays,
 * whose out-of-line appends, headers and sorted unions were 6 % of the instructions of the
 * 8-GPU ZeRO-3 bench (bench/RESULTS.md, 2026-12-07). */
typedef struct
{
  double start, end;
} Interval;

typedef struct
{
  GArray *queue; /* guint task ids in plan order */
  guint next;
  gboolean busy;
} StreamState;

struct _ModelExecutor
{
  const ModelPlan *plan;
  HwCluster *cluster;
  SimEngine *engine;
  const double *clock; /* sim_engine_clock (engine): the time read at each kernel */
  ModelLedger *ledger;
  SimRecorder *rec;
  TaskState *tasks;
  guint *dep_first;      /* per task (n + 1): its waiting tasks are dep_list[dep_first[i] ..
                          * dep_first[i + 1]) */
  guint *dep_list;       /* task ids waiting on each task, in plan order */
  StreamState *streams;  /* rows (ledger_row) × MODEL_N_STREAMS */
  guint n_done;
  double *rank_end;  /* per representative (row, ledger_row) */
  double *kind_time; /* rows × MODEL_N_TASK_KINDS */
  CollectiveState *collectives;
  /* member list (MemberList*, owned; the plan's lists: a group's collectives share one,
   * plan_comm.c) → its hw_collective_group, so a start hashes no member list */
  GHashTable *groups;
  SimVec *busy;      /* rows × MODEL_N_STREAMS vectors of Interval, in start order (a
                      * stream runs one task at a time) */
  ModelHostLedger *host; /* host DRAM / NVMe effects; NULL: ignored */
  ModelOpTimes *op_times; /* kernel seconds per op; NULL: not collected */
  double *host_before;   /* per task: s of host time issuing earlier tasks of its rank took
                          * (plan order) */
  double *host_offset;   /* per representative: when its host clock started, raised by each
                          * host sync (file comment) */
  guint *sync_task;      /* per representative: its next host_sync task not started, or
                          * G_MAXUINT */
  guint *sync_left;      /* per representative: its tasks before sync_task not ended */
  guint *next_sync;      /* per task: the next host_sync task of its rank after it, or
                          * G_MAXUINT */
  gboolean first_step;   /* the process's first step: lazily created states (set_first_step) */
  guint *creation;       /* with first_step: rows × MODEL_N_MEM, the task that creates each
                          * category's states on the row's rank (model_plan_creation_task),
                          * found at the first task's start; NULL before */
  double t0;             /* when the step started (model_executor_start) */
  /* Rank classes (rank_classes.h): the representatives of `shift` are replayed
   * (hw_rank_shift_is_rep), each rank standing for its class's; the identity: every rank
   * runs (the full replay). Ledger rows are the representatives' dense indices. */
  HwRankShift shift;
  gboolean classes;      /* `shift` is not the identity */
  gboolean indexed;      /* index_run has run (model_executor_start, run_alone) */
  guint n_expected;      /* tasks that run: those of the representatives */
  guint *rank_first;     /* per rank: index into rank_order of its first task (n_ranks + 1) */
  guint *rank_order;     /* task ids grouped by rank, in plan order */
  guint *task_pos;       /* per task: its position in its rank's list */
  guint *orbit;          /* per representative task of a collective: the instance that runs
                          * for its orbit (G_MAXUINT elsewhere); NULL in the full replay */
  guint *orbit_need;     /* per instance that runs: representative tasks it waits for */
  double *host_mult;     /* per representative (dense index): ranks of its class on its node */
  ModelExecutorTrace *trace; /* borrowed: starts and ends recorded there
                              * (model_executor_keep_trace); NULL: none */
  gboolean on_engine;    /* every kernel through the fluid's events (set_on_engine) */
  guint64 n_off_engine;  /* kernels run off the engine (run_next_kernel) */
  /* per plan kernel (index_run, n_kernel_base of them): its hw_cluster_kernel_base_seconds
   * on this cluster, NAN until its first run (layers and micro-batches share kernel ranges,
   * plan_task_add_pass: the 8-GPU bench step's 11,585 kernel runs use 39 plan kernels);
   * NULL before index_run */
  double *kernel_base;
  guint n_kernel_base;
};

/* A task's start or end at `time` (s), or a caller's mark, in the order the replay made
 * them. */
typedef enum
{
  TRACE_START,
  TRACE_END,
  TRACE_MARK
} TraceKind;

typedef struct
{
  guint id;       /* the task; a mark's id */
  TraceKind kind;
  double time;
  double value;   /* a mark's value */
} TraceEntry;

struct _ModelExecutorTrace
{
  double t0;     /* s: the replay's start (model_executor_start) */
  SimVec steps;  /* TraceEntry */
};

static void try_start (ModelExecutor *exec, guint rank, ModelStream stream);
static void try_start_row (ModelExecutor *exec, guint rank, guint row, ModelStream stream,
                           TaskState **tail);

/* The row of `rank`'s representative in the ledger and the per-representative arrays. */
static guint
ledger_row (const ModelExecutor *e, guint rank)
{
  return hw_rank_shift_index (&e->shift, rank);
}

static StreamState *
stream_state (ModelExecutor *exec, guint rank, ModelStream stream)
{
  return &exec->streams[ledger_row (exec, rank) * MODEL_N_STREAMS + stream];
}

/* The representative task of task `id`: the task at the same position of its rank's
 * representative. */
static guint
rep_task (const ModelExecutor *e, guint id)
{
  guint r = hw_rank_shift_rep (&e->shift, model_plan_task (e->plan, id)->rank);
  return e->rank_order[e->rank_first[r] + e->task_pos[id]];
}


static void
index_ranks (ModelExecutor *e)
{
  guint n_ranks = model_plan_n_ranks (e->plan), n = model_plan_n_tasks (e->plan);
  e->rank_first = g_new0 (guint, n_ranks + 1);
  e->rank_order = g_new (guint, MAX (n, 1));
  e->task_pos = g_new (guint, MAX (n, 1));
  for (guint id = 0; id < n; id++)
    e->rank_first[model_plan_task (e->plan, id)->rank + 1]++;
  for (guint r = 0; r < n_ranks; r++)
    e->rank_first[r + 1] += e->rank_first[r];
  g_autofree guint *fill = g_memdup2 (e->rank_first, n_ranks * sizeof (guint));
  for (guint id = 0; id < n; id++)
    {
      guint r = model_plan_task (e->plan, id)->rank;
      e->task_pos[id] = fill[r] - e->rank_first[r];
      e->rank_order[fill[r]++] = id;
    }
}

/* Representative task `rt` waits in instance `c` (once). */
static void
join_orbit (ModelExecutor *e, guint rt, guint c)
{
  if (e->orbit[rt] != G_MAXUINT)
    return;
  e->orbit[rt] = c;
  e->orbit_need[c]++;
}

/* The distinct representatives of the members of `col` that are no representatives, in
 * first-occurrence order (a new array), computed once per member list (`memo`: MemberList*
 * → GArray*, both owned by it): a group's collectives share their list (plan_comm.c), and
 * a data-parallel group of 131,072 equivalent ranks has one (rank 0). */
static const GArray *
non_rep_reps (ModelExecutor *e, GHashTable *memo, const ModelCollective *col)
{
  MemberList key = { col->ranks, col->n_ranks };
  GArray *reps = g_hash_table_lookup (memo, &key);
  if (reps != NULL)
    return reps;
  reps = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GHashTable) seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  for (guint k = 0; k < col->n_ranks; k++)
    if (!hw_rank_shift_is_rep (&e->shift, col->ranks[k]))
      {
        guint r = hw_rank_shift_rep (&e->shift, col->ranks[k]);
        if (g_hash_table_add (seen, GUINT_TO_POINTER (r + 1)))
          g_array_append_val (reps, r);
      }
  g_hash_table_insert (memo, g_memdup2 (&key, sizeof key), reps);
  return reps;
}

/* Rank classes: one instance runs per orbit of collective instances. The orbit of the
 * instance c a representative task first reaches holds, for each member m of c, the
 * representative of m's task in c (m's representative, same position): those are the
 * tasks the instance waits for, each counted once (rank_classes.h). */
static void
collective_orbits (ModelExecutor *e)
{
  guint n = model_plan_n_tasks (e->plan), nc = model_plan_n_collectives (e->plan);
  g_autofree guint *first = g_new0 (guint, nc + 1);
  g_autofree guint *members = g_new (guint, MAX (n, 1));
  g_autoptr (GHashTable) memo = g_hash_table_new_full (member_list_hash, member_list_equal,
                                                       g_free, (GDestroyNotify) g_array_unref);
  for (guint id = 0; id < n; id++)
    {
      gint c = model_plan_task (e->plan, id)->collective;
      if (c >= 0)
        first[c + 1]++;
    }
  for (guint c = 0; c < nc; c++)
    first[c + 1] += first[c];
  g_autofree guint *fill = g_memdup2 (first, MAX (nc, 1) * sizeof (guint));
  for (guint id = 0; id < n; id++)
    {
      gint c = model_plan_task (e->plan, id)->collective;
      if (c >= 0)
        members[fill[c]++] = id;
    }
  e->orbit = g_new (guint, MAX (n, 1));
  e->orbit_need = g_new0 (guint, MAX (nc, 1));
  for (guint id = 0; id < n; id++)
    e->orbit[id] = G_MAXUINT;
  guint n_reps = hw_rank_shift_n_reps (&e->shift);
  for (guint i = 0; i < n_reps; i++)
    for (guint r = hw_rank_shift_rank (&e->shift, i), j = e->rank_first[r];
         j < e->rank_first[r + 1]; j++)
      {
        guint id = e->rank_order[j];
        gint c = model_plan_task (e->plan, id)->collective;
        if (c < 0 || e->orbit[id] != G_MAXUINT)
          continue;
        if (model_plan_n_built (e->plan) < model_plan_n_ranks (e->plan))
          {
            /* Built for the representatives (rank_classes.h model_rank_classes_plan): the
             * built members' own tasks in c (a pipeline pair's two ends, both
             * representatives), and for a member m not built, the task at id's position of
             * m's representative: m's list is its representative's, in the same stage.
             * Joining is idempotent, so each distinct representative is joined once. */
            for (guint k = first[c]; k < first[c + 1]; k++)
              join_orbit (e, members[k], (guint) c);
            const GArray *reps
                = non_rep_reps (e, memo, model_plan_collective (e->plan, (guint) c));
            for (guint k = 0; k < reps->len; k++)
              join_orbit (e,
                          e->rank_order[e->rank_first[g_array_index (reps, guint, k)]
                                        + e->task_pos[id]],
                          (guint) c);
          }
        else
          for (guint k = first[c]; k < first[c + 1]; k++)
            join_orbit (e, rep_task (e, members[k]), (guint) c);
        g_assert (e->orbit[id] == (guint) c);
      }
}

/* Host DRAM and NVMe are per node: a representative's host effects stand for every rank of
 * its class on its node. */
static void
host_multiplicity (ModelExecutor *e)
{
  guint n_ranks = model_plan_n_ranks (e->plan);
  const HwTopology *topo = hw_cluster_topology (e->cluster);
  e->host_mult = g_new0 (double, hw_rank_shift_n_reps (&e->shift));
  for (guint q = 0; q < n_ranks; q++)
    {
      guint r = hw_rank_shift_rep (&e->shift, q);
      if (hw_topology_node_of (topo, q) == hw_topology_node_of (topo, r))
        e->host_mult[ledger_row (e, r)] += 1;
    }
}

/* The tasks waiting on each task, in plan order (dep_first, dep_list): a dependency on
 * another class's rank waits for its representative; other classes' tasks have none. Two
 * passes, counting then filling, instead of an array grown per task. */
static void
index_dependents (ModelExecutor *e, gboolean classes)
{
  guint n = model_plan_n_tasks (e->plan);
  e->dep_first = g_new0 (guint, n + 1);
  g_autofree guint *fill = NULL;
  for (guint pass = 0; pass < 2; pass++)
    {
      for (guint id = 0; id < n; id++)
        {
          const ModelTask *t = model_plan_task (e->plan, id);
          if (!hw_rank_shift_is_rep (&e->shift, t->rank))
            continue;
          for (guint d = 0; d < t->n_deps; d++)
            {
              guint dep = model_plan_dep (e->plan, t->first_dep + d);
              g_assert (dep < id); /* plans are built in a topological order */
              if (classes)
                dep = rep_task (e, dep);
              if (pass == 0)
                e->dep_first[dep + 1]++;
              else
                e->dep_list[fill[dep]++] = id;
            }
        }
      if (pass == 1)
        break;
      for (guint i = 0; i < n; i++)
        e->dep_first[i + 1] += e->dep_first[i];
      e->dep_list = g_new (guint, MAX (e->dep_first[n], 1));
      fill = g_memdup2 (e->dep_first, (n + 1) * sizeof (guint));
    }
}

/* s of host time issuing kernel `k` of task `t` takes (file comment). */
static double
kernel_host_time (const ModelExecutor *e, const ModelTask *t, const ModelKernel *k)
{
  const ModelFramework *fw = &model_plan_stack (e->plan)->framework;
  double per_op = t->kind == MODEL_TASK_KIND_BACKWARD ? fw->host_backward_op_time
                                                      : fw->host_op_time;
  return hw_cluster_gpu (e->cluster, t->rank)->host_dispatch
         + model_op_host_ops (&k->op) * per_op;
}

/* Task t's host time before and through its kernels: *issued plus each kernel's
 * kernel_host_time, added one by one in order (the same sums), the task's per-op time and
 * its GPU's dispatch taken once rather than per kernel. */
static void
add_task_host_time (const ModelExecutor *e, const ModelFramework *fw, const ModelTask *t,
                    double *issued)
{
  if (t->n_kernels == 0)
    return;
  double per_op = t->kind == MODEL_TASK_KIND_BACKWARD ? fw->host_backward_op_time
                                                      : fw->host_op_time;
  double dispatch = hw_cluster_gpu (e->cluster, t->rank)->host_dispatch;
  const ModelKernel *k = model_plan_kernel (e->plan, t->first_kernel);
  double sum = *issued;
  for (guint j = 0; j < t->n_kernels; j++)
    sum += dispatch + model_op_host_ops (&k[j].op) * per_op;
  *issued = sum;
}

/* host_before, next_sync and each representative's first sync (sync_task, sync_left). */
static void
index_host (ModelExecutor *e)
{
  guint n = model_plan_n_tasks (e->plan), n_ranks = model_plan_n_ranks (e->plan);
  guint rows = hw_rank_shift_n_reps (&e->shift);
  e->host_before = g_new0 (double, MAX (n, 1));
  e->next_sync = g_new (guint, MAX (n, 1));
  e->sync_task = g_new (guint, rows);
  e->sync_left = g_new0 (guint, rows);
  g_autofree double *issued = g_new0 (double, n_ranks);
  const ModelFramework *fw = &model_plan_stack (e->plan)->framework;
  for (guint id = 0; id < n; id++)
    {
      const ModelTask *t = model_plan_task (e->plan, id);
      e->host_before[id] = issued[t->rank];
      add_task_host_time (e, fw, t, &issued[t->rank]);
    }
  for (guint i = 0; i < rows; i++)
    {
      guint r = hw_rank_shift_rank (&e->shift, i), next = G_MAXUINT;
      for (guint j = e->rank_first[r + 1]; j-- > e->rank_first[r];)
        {
          guint id = e->rank_order[j];
          e->next_sync[id] = next;
          if (model_plan_task (e->plan, id)->host_sync)
            next = id;
        }
      e->sync_task[i] = next;
      e->sync_left[i] = next != G_MAXUINT ? e->task_pos[next] : 0;
    }
}

/* TRUE while the host of task `id`'s rank has not issued it: a host sync before it has not
 * started, or it is that sync and an earlier task of the rank has not ended. */
static gboolean
held_by_host (const ModelExecutor *e, guint row, guint id)
{
  guint sync = e->sync_task[row];
  return sync != G_MAXUINT && (id > sync || (id == sync && e->sync_left[row] > 0));
}

ModelExecutor *
model_executor_new (const ModelPlan *plan, HwCluster *cluster, SimEngine *engine,
                    ModelLedger *ledger, SimRecorder *rec)
{
  g_return_val_if_fail (plan && cluster && engine && ledger, NULL);
  HwRankShift all = hw_rank_shift_identity (model_plan_n_ranks (plan));
  return model_executor_new_classes (plan, cluster, engine, ledger, rec, &all);
}

ModelExecutor *
model_executor_new_classes (const ModelPlan *plan, HwCluster *cluster, SimEngine *engine,
                            ModelLedger *ledger, SimRecorder *rec, const HwRankShift *shift)
{
  g_return_val_if_fail (plan && cluster && engine && ledger && shift, NULL);
  guint n_ranks = model_plan_n_ranks (plan), n = model_plan_n_tasks (plan);
  g_return_val_if_fail (hw_cluster_n_ranks (cluster) >= n_ranks, NULL);
  g_return_val_if_fail (shift->n == n_ranks && hw_rank_shift_valid (shift), NULL);
  const HwRankShift *built = model_plan_built (plan);
  g_return_val_if_fail (hw_rank_shift_is_identity (built) || hw_rank_shift_equal (built, shift),
                        NULL);
  g_return_val_if_fail (model_ledger_n_ranks (ledger) == hw_rank_shift_n_reps (shift), NULL);
  gboolean classes = !hw_rank_shift_is_identity (shift);
  ModelExecutor *e = g_new0 (ModelExecutor, 1);
  *e = (ModelExecutor){ .plan = plan, .cluster = cluster, .engine = engine,
                        .clock = sim_engine_clock (engine), .ledger = ledger, .rec = rec,
                        .shift = *shift };
  if (!classes)
    e->shift = hw_rank_shift_identity (n_ranks);
  e->tasks = g_new (TaskState, MAX (n, 1)); /* each set below (a compound literal) */
  /* per-representative state, a row each (ledger_row): O(representatives), not O(ranks) */
  guint rows = hw_rank_shift_n_reps (&e->shift);
  e->streams = g_new0 (StreamState, rows * MODEL_N_STREAMS);
  e->rank_end = g_new0 (double, rows);
  e->kind_time = g_new0 (double, rows * MODEL_N_TASK_KINDS);
  e->busy = g_new0 (SimVec, rows * MODEL_N_STREAMS);
  for (guint i = 0; i < rows * MODEL_N_STREAMS; i++)
    e->streams[i].queue = g_array_new (FALSE, FALSE, sizeof (guint));
  guint nc = model_plan_n_collectives (plan);
  e->collectives = g_new0 (CollectiveState, MAX (nc, 1));
  for (guint i = 0; i < nc; i++)
    e->collectives[i] = (CollectiveState){ e, i, SIM_VEC_INIT, 0 };
  e->groups = g_hash_table_new_full (member_list_hash, member_list_equal, g_free, NULL);
  index_ranks (e);
  e->classes = classes;
  if (classes)
    host_multiplicity (e);
  e->host_offset = g_new0 (double, rows);
  for (guint id = 0; id < n; id++)
    {
      const ModelTask *t = model_plan_task (plan, id);
      e->tasks[id] = (TaskState){ .exec = e, .id = id, .pending_deps = t->n_deps,
                                  .rep = hw_rank_shift_is_rep (&e->shift, t->rank),
                                  .row = ledger_row (e, t->rank) };
      if (e->tasks[id].rep)
        e->n_expected++;
    }
  return e;
}

/* What only the engine's run (model_executor_start, model_executor_run_alone) reads: the
 * collective orbits, the dependents, the host clock's index and the streams' queues. Built
 * once, at the run's start: a replay from a trace (model_executor_run_trace) needs none of
 * it. */
static void
index_run (ModelExecutor *e)
{
  if (e->indexed)
    return;
  e->indexed = TRUE;
  if (e->classes)
    collective_orbits (e);
  index_dependents (e, e->classes);
  index_host (e);
  guint n_kernels = 0;
  for (guint id = 0, n = model_plan_n_tasks (e->plan); id < n; id++)
    {
      const ModelTask *t = model_plan_task (e->plan, id);
      if (hw_rank_shift_is_rep (&e->shift, t->rank))
        {
          g_array_append_val (stream_state (e, t->rank, t->stream)->queue, id);
          if (t->n_kernels > 0)
            n_kernels = MAX (n_kernels, t->first_kernel + t->n_kernels);
        }
    }
  e->n_kernel_base = n_kernels;
  e->kernel_base = g_new (double, MAX (n_kernels, 1));
  for (guint i = 0; i < n_kernels; i++)
    e->kernel_base[i] = NAN;
}

void
model_executor_free (ModelExecutor *exec)
{
  if (exec == NULL)
    return;
  guint n_streams = hw_rank_shift_n_reps (&exec->shift) * MODEL_N_STREAMS;
  for (guint i = 0; i < n_streams; i++)
    {
      g_array_unref (exec->streams[i].queue);
      sim_vec_clear (&exec->busy[i]);
    }
  g_free (exec->busy);
  for (guint i = 0; i < model_plan_n_collectives (exec->plan); i++)
    sim_vec_clear (&exec->collectives[i].arrived);
  g_free (exec->collectives);
  g_hash_table_unref (exec->groups);
  g_free (exec->streams);
  g_free (exec->dep_first);
  g_free (exec->dep_list);
  g_free (exec->tasks);
  g_free (exec->rank_first);
  g_free (exec->rank_order);
  g_free (exec->task_pos);
  g_free (exec->orbit);
  g_free (exec->orbit_need);
  g_free (exec->host_mult);
  g_free (exec->host_before);
  g_free (exec->host_offset);
  g_free (exec->creation);
  g_free (exec->sync_task);
  g_free (exec->sync_left);
  g_free (exec->next_sync);
  g_free (exec->rank_end);
  g_free (exec->kind_time);
  g_free (exec->kernel_base);
  g_free (exec);
}

/* One allocation: a single block, or one block per tensor of the buffer. */
static void
ledger_alloc (ModelExecutor *exec, guint row, const ModelMemEffect *e, double now,
              const char *label)
{
  if (e->n_tensors > 1)
    model_ledger_alloc_tensors (exec->ledger, row, e->category,
                                model_plan_tensor_sizes (exec->plan, e->first_tensor),
                                e->n_tensors, e->stream, e->handle, now, label);
  else
    model_ledger_alloc_tensors (exec->ledger, row, e->category, &e->bytes, 1, e->stream,
                                e->handle, now, label);
}

/* The initial allocation of `category` on `rank`, unless it is live already (carried over
 * from the step before: model_ledger_continue). */
static void
initial_alloc (ModelExecutor *exec, guint rank, ModelMemCategory category, double now,
               const char *label)
{
  guint h = model_plan_initial_handle (exec->plan, rank, category);
  guint row = ledger_row (exec, rank);
  if (h != 0 && !model_ledger_live (exec->ledger, row, h))
    ledger_alloc (exec, row, model_plan_allocation (exec->plan, h), now, label);
}

/* In the first step, the states task t (on row `row`) creates (model_plan_creation_task, in
 * exec->creation), before its own start effects: _init_group runs before the update's
 * temporaries exist. */
static void
create_states (ModelExecutor *exec, const ModelTask *t, guint row, double now)
{
  if (!exec->first_step)
    return;
  if (exec->creation == NULL)
    {
      guint n_reps = hw_rank_shift_n_reps (&exec->shift);
      exec->creation = g_new (guint, n_reps * MODEL_N_MEM);
      for (guint i = 0; i < n_reps; i++)
        for (guint c = 0; c < MODEL_N_MEM; c++)
          exec->creation[i * MODEL_N_MEM + c]
              = model_plan_creation_task (exec->plan, hw_rank_shift_rank (&exec->shift, i), c);
    }
  for (guint c = 0; c < MODEL_N_MEM; c++)
    if (exec->creation[row * MODEL_N_MEM + c] == t->id)
      initial_alloc (exec, t->rank, c, now, t->label);
}

/* Task t's memory effects of `when`, at `now` (s). */
static void
apply_effects (ModelExecutor *exec, const ModelTask *t, guint row, ModelEffectWhen when,
               double now)
{
  if (t->n_effects == 0)
    return;
  /* the task's effects are consecutive in the plan: one look-up, not one a effect */
  const ModelMemEffect *effects = model_plan_effect (exec->plan, t->first_effect);
  for (guint i = 0; i < t->n_effects; i++)
    {
      const ModelMemEffect *e = &effects[i];
      if (e->when != when)
        continue;
      if (e->where != MODEL_MEM_ON_GPU)
        {
          if (exec->host != NULL)
            model_host_ledger_apply (exec->host, t->rank, e->where, e->category,
                                     exec->host_mult != NULL ? e->bytes * exec->host_mult[row]
                                                             : e->bytes,
                                     now);
          continue;
        }
      if (e->bytes > 0)
        ledger_alloc (exec, row, e, now, t->label);
      else
        model_ledger_release (exec->ledger, row, e->handle, now,
                              t->label);
    }
}

static void
record_task (ModelExecutor *exec, const ModelTask *t, double start, double end)
{
  if (exec->rec == NULL)
    return;
  SimTaskRecord r = {
    .id = t->id, .rank = t->rank, .stream = t->stream, .kind = t->kind, .label = t->label,
    .layer = t->layer, .micro_batch = t->micro_batch, .start = start, .end = end,
    .flops = t->flops, .bytes = t->bytes,
  };
  sim_recorder_add_task (exec->rec, &r);
}

static void
trace_add (ModelExecutor *exec, guint task, TraceKind kind, double time)
{
  if (exec->trace != NULL)
    SIM_VEC_PUSH (&exec->trace->steps, TraceEntry, ((TraceEntry){ task, kind, time, 0 }));
}

/* What starting task ts (plan task t) at `now` (s) changes besides its stream: its start,
 * the states it creates in a first step and its start effects. */
static void
begin_task (ModelExecutor *exec, TaskState *ts, const ModelTask *t, double now)
{
  ts->start = now;
  trace_add (exec, ts->id, TRACE_START, now);
  create_states (exec, t, ts->row, now);
  apply_effects (exec, t, ts->row, MODEL_EFFECT_AT_START, now);
}

/* What ending task ts at `now` (s) changes besides the streams and the tasks waiting on
 * it: its end effects, its record, the rank's end, busy time and busy intervals. */
static void
end_task (ModelExecutor *exec, TaskState *ts, double now)
{
  const ModelTask *t = model_plan_task (exec->plan, ts->id);
  trace_add (exec, ts->id, TRACE_END, now);
  apply_effects (exec, t, ts->row, MODEL_EFFECT_AT_END, now);
  record_task (exec, t, ts->start, now);
  ts->end = now;
  ts->done = TRUE;
  exec->n_done++;
  guint row = ts->row;
  exec->rank_end[row] = MAX (exec->rank_end[row], now);
  exec->kind_time[row * MODEL_N_TASK_KINDS + t->kind] += now - ts->start;
  SIM_VEC_PUSH (&exec->busy[row * MODEL_N_STREAMS + t->stream], Interval,
                ((Interval){ ts->start, now }));
}

/* Ends task ts now: its end, its stream's next task and the tasks waiting on it may start.
 * With `tail` (the caller's engine event does nothing after this), a kernel task that the
 * last step, its stream's next, starts is returned with its first kernel not yet run
 * (try_start_row), for the caller to run in its place; else NULL. */
static TaskState *
finish_task (TaskState *ts, gboolean tail)
{
  ModelExecutor *exec = ts->exec;
  const ModelTask *t = model_plan_task (exec->plan, ts->id);
  end_task (exec, ts, *exec->clock);
  guint row = ts->row, sync = exec->sync_task[row];
  StreamState *ss = &exec->streams[row * MODEL_N_STREAMS + t->stream];
  ss->busy = FALSE;
  ss->next++;
  /* (a task that ran is its rank's representative's) */
  if (sync != G_MAXUINT && ts->id < sync && --exec->sync_left[row] == 0)
    try_start_row (exec, t->rank, row, model_plan_task (exec->plan, sync)->stream, NULL);
  for (guint i = exec->dep_first[ts->id]; i < exec->dep_first[ts->id + 1]; i++)
    {
      TaskState *w = &exec->tasks[exec->dep_list[i]];
      g_assert (w->pending_deps > 0);
      if (--w->pending_deps == 0 && w->rep)
        try_start_row (exec, model_plan_task (exec->plan, w->id)->rank, w->row,
                       model_plan_task (exec->plan, w->id)->stream, NULL);
    }
  TaskState *next = NULL;
  try_start_row (exec, t->rank, row, t->stream, tail ? &next : NULL);
  return next;
}

static void run_next_kernel (TaskState *ts, gboolean tail);

static void
kernel_done (SimFluid *fluid, SimActivityId id, gpointer user_data)
{
  (void) fluid;
  (void) id;
  TaskState *ts = user_data;
  ModelExecutor *exec = ts->exec;
  /* an offload task's transfer or host step ends here too, with no kernel run */
  if (exec->op_times != NULL && ts->next_kernel > 0)
    {
      const ModelTask *t = model_plan_task (exec->plan, ts->id);
      const ModelKernel *k
        = model_plan_kernel (exec->plan, t->first_kernel + ts->next_kernel - 1);
      model_op_times_add (exec->op_times, t->rank, t->kind, &k->op,
                          *exec->clock - ts->kernel_start, ts->kernel_host);
    }
  /* the fluid calls this as the last thing its completion event does (a kernel's: the
   * batch's last callback; sim_fluid_run_lone checks it) */
  run_next_kernel (ts, TRUE);
}

static void
empty_task_event (SimEngine *engine, gpointer user_data)
{
  (void) engine;
  TaskState *next = finish_task (user_data, TRUE);
  if (next != NULL)
    run_next_kernel (next, TRUE);
}

/* Takes the task's next kernel `k`: its host time is added to the task's issued host
 * time, and its start is the later of `now` and its issue by the host clock. Returns the
 * issue time, s (the engine path starts the kernel after issue − now; run_alone ends it in
 * closed form). */
static double
issue_kernel (ModelExecutor *exec, TaskState *ts, const ModelTask *t, const ModelKernel *k,
              double now)
{
  ts->kernel_host = kernel_host_time (exec, t, k);
  ts->host_issued += ts->kernel_host;
  double issue = exec->host_offset[ts->row] + exec->host_before[ts->id]
                 + ts->host_issued;
  ts->kernel_start = MAX (issue, now);
  return issue;
}

/* Starts the task's next kernel, or finishes the task when none is left. A task without
 * kernels finishes through a zero-delay event so callbacks never nest unboundedly.
 * With `tail` (the current engine event does nothing after this call), a kernel that the
 * engine's run would run with nothing else happening from its start to its end (an idle
 * fluid, no event due before its end: hw_cluster_run_kernel, sim_fluid_run_lone) runs off
 * the engine: the clock moves to its end and kernel_done's work follows at once, in a loop,
 * the next kernel again in tail position; so does the next task of the stream when the
 * task's end starts it (finish_task). The same calls in the same order at the same times as
 * the engine's run, events and sequence numbers counted as it would; only the kernels'
 * fluid activities are not made. */
static void
run_next_kernel (TaskState *ts, gboolean tail)
{
  ModelExecutor *exec = ts->exec;
  gboolean off = tail && !exec->on_engine;
  for (;;)
    {
      const ModelTask *t = model_plan_task (exec->plan, ts->id);
      if (ts->next_kernel == t->n_kernels)
        {
          ts = finish_task (ts, off);
          if (ts == NULL)
            return;
          continue;
        }
      guint index = t->first_kernel + ts->next_kernel++;
      const ModelKernel *k = model_plan_kernel (exec->plan, index);
      double issue = issue_kernel (exec, ts, t, k, *exec->clock), end;
      g_assert (index < exec->n_kernel_base);
      double *base = &exec->kernel_base[index];
      if (isnan (*base))
        *base = hw_cluster_kernel_base_seconds (exec->cluster, k->dtype, &k->op.shape,
                                                k->op.flops);
      if (!hw_cluster_run_kernel_base (exec->cluster, t->rank, k->dtype, &k->op.shape, *base,
                                       k->op.bytes, issue - *exec->clock, off, kernel_done, ts,
                                       &end))
        return;
      /* kernel_done at its end (the clock's time now) */
      exec->n_off_engine++;
      if (exec->op_times != NULL)
        model_op_times_add (exec->op_times, t->rank, t->kind, &k->op,
                            *exec->clock - ts->kernel_start, ts->kernel_host);
    }
}

static void
collective_done (gpointer user_data)
{
  CollectiveState *cs = user_data;
  /* Finish in rank order; finishing may start further tasks (and collectives): the list is
   * taken first, so the instance starts empty again. */
  SimVec tasks = cs->arrived;
  cs->arrived = (SimVec) SIM_VEC_INIT;
  for (guint i = 0; i < tasks.len; i++)
    finish_task (&cs->exec->tasks[SIM_VEC_AT (&tasks, guint, i)], FALSE);
  sim_vec_clear (&tasks);
}

/* A rank's task of a collective has started: the collective runs once all have. */
static void
arrive (ModelExecutor *exec, TaskState *ts, const ModelTask *t)
{
  guint index = exec->orbit != NULL ? exec->orbit[ts->id] : (guint) t->collective;
  CollectiveState *cs = &exec->collectives[index];
  const ModelCollective *c = model_plan_collective (exec->plan, index);
  SIM_VEC_PUSH (&cs->arrived, guint, ts->id);
  if (cs->arrived.len < (exec->orbit != NULL ? exec->orbit_need[index] : c->n_ranks))
    return;
  if (cs->group == 0)
    {
      /* the plan's lists live as long as the executor: a list by its address and length */
      MemberList key = { c->ranks, c->n_ranks };
      cs->group = GPOINTER_TO_UINT (g_hash_table_lookup (exec->groups, &key));
      if (cs->group == 0)
        {
          cs->group = hw_collective_group (exec->cluster, c->ranks, c->n_ranks);
          g_hash_table_insert (exec->groups, g_memdup2 (&key, sizeof key),
                               GUINT_TO_POINTER (cs->group));
        }
    }
  hw_collective_start_group (exec->cluster, c->kind, c->algorithm, cs->group, c->bytes,
                             c->ub_sms > 0 ? c->ub_sms : -1, collective_done, cs);
}

/* Task `id` of representative `row` starts at `now` (s): when it is the rank's next host
 * sync, the host resumes now (what it issues next follows from here) and the next sync
 * becomes the one that holds it. TRUE if it was that sync. */
static gboolean
host_sync (ModelExecutor *exec, guint row, guint id, double now)
{
  if (exec->sync_task[row] != id)
    return FALSE;
  exec->host_offset[row] = MAX (exec->host_offset[row], now - exec->host_before[id]);
  guint next = exec->next_sync[id];
  exec->sync_task[row] = next;
  exec->sync_left[row] = next != G_MAXUINT ? exec->task_pos[next] - exec->task_pos[id] : 0;
  return TRUE;
}

static void
try_start (ModelExecutor *exec, guint rank, ModelStream stream)
{
  if (!hw_rank_shift_is_rep (&exec->shift, rank))
    return; /* rank classes: stood for by its representative */
  try_start_row (exec, rank, ledger_row (exec, rank), stream, NULL);
}

/* try_start for a representative `rank` whose row (ledger_row) is `row`. With `tail`
 * (nothing happens after this call in the current event), a task that runs kernels and is
 * not its rank's next host sync is begun and put in *tail without its first kernel run,
 * for the caller to run at once (run_next_kernel); *tail is left alone otherwise. */
static void
try_start_row (ModelExecutor *exec, guint rank, guint row, ModelStream stream,
               TaskState **tail)
{
  StreamState *ss = &exec->streams[row * MODEL_N_STREAMS + stream];
  if (ss->busy || ss->next >= ss->queue->len)
    return;
  TaskState *ts = &exec->tasks[g_array_index (ss->queue, guint, ss->next)];
  if (ts->pending_deps > 0 || held_by_host (exec, row, ts->id))
    return;
  const ModelTask *t = model_plan_task (exec->plan, ts->id);
  ss->busy = TRUE;
  double now = *exec->clock;
  gboolean synced = host_sync (exec, row, ts->id, now);
  begin_task (exec, ts, t, now);
  if (t->collective >= 0)
    arrive (exec, ts, t);
  else if (t->offload != MODEL_OFFLOAD_OP_NONE)
    model_plan_offload_start (exec->plan, exec->cluster, t, kernel_done, ts);
  else if (t->n_kernels == 0)
    sim_engine_schedule_after (exec->engine, 0, empty_task_event, ts, NULL);
  else if (tail != NULL && !synced)
    *tail = ts;
  else
    run_next_kernel (ts, FALSE);
  if (synced) /* the tasks the host held behind this one may start */
    for (guint st = 0; st < MODEL_N_STREAMS; st++)
      if (st != stream)
        try_start_row (exec, rank, row, st, NULL);
}

/* The step's start at `now` (s): every representative's initial state. */
static void
initial_state (ModelExecutor *exec, double now)
{
  exec->t0 = now;
  guint n_reps = hw_rank_shift_n_reps (&exec->shift);
  for (guint i = 0; i < n_reps; i++)
    {
      exec->host_offset[i] = now;
      for (guint r = hw_rank_shift_rank (&exec->shift, i), c = 0; c < MODEL_N_MEM; c++)
        if (!exec->first_step || model_plan_creation_task (exec->plan, r, c) == G_MAXUINT)
          initial_alloc (exec, r, c, now, "initial state");
    }
}

void
model_executor_start (ModelExecutor *exec)
{
  index_run (exec);
  initial_state (exec, sim_engine_now (exec->engine));
  if (exec->trace != NULL)
    exec->trace->t0 = exec->t0;
  guint n_reps = hw_rank_shift_n_reps (&exec->shift);
  for (guint i = 0; i < n_reps; i++)
    for (guint r = hw_rank_shift_rank (&exec->shift, i), s = 0; s < MODEL_N_STREAMS; s++)
      try_start (exec, r, s);
}

gboolean
model_executor_runs_alone (const ModelExecutor *exec)
{
  g_return_val_if_fail (exec != NULL, FALSE);
  guint n = model_plan_n_tasks (exec->plan);
  if (model_plan_n_ranks (exec->plan) != 1 || n == 0)
    return FALSE;
  ModelStream stream = model_plan_task (exec->plan, 0)->stream;
  for (guint id = 0; id < n; id++)
    {
      const ModelTask *t = model_plan_task (exec->plan, id);
      if (t->stream != stream || t->collective >= 0 || t->offload != MODEL_OFFLOAD_OP_NONE)
        return FALSE;
    }
  return TRUE;
}

/* The engine's run of a plan model_executor_runs_alone accepts, step by step: its one stream
 * runs the tasks in plan order, each as soon as the one before has ended (its dependencies
 * are earlier tasks of that stream, a host sync finds every earlier task ended), so task i
 * starts at the end of task i − 1 (the first at the start) and ends after its kernels,
 * each started when the one before ended (run_next_kernel, called from kernel_done) and
 * alone on the GPU (hw_cluster_kernel_lone_end: the fluid's bits); a task without kernels
 * ends at its start through a zero-delay event. The calls into the ledger, the host ledger,
 * the recorder, the trace and the op times are those of the engine's run, in its order. */
guint64
model_executor_run_alone (ModelExecutor *exec)
{
  g_return_val_if_fail (exec != NULL && exec->n_done == 0 && model_executor_runs_alone (exec),
                        0);
  index_run (exec);
  double now = sim_engine_now (exec->engine);
  initial_state (exec, now);
  if (exec->trace != NULL)
    exec->trace->t0 = exec->t0;
  guint64 events = 0;
  for (guint id = 0, n = model_plan_n_tasks (exec->plan); id < n; id++)
    {
      TaskState *ts = &exec->tasks[id];
      const ModelTask *t = model_plan_task (exec->plan, id);
      guint row = ledger_row (exec, t->rank);
      host_sync (exec, row, id, now);
      begin_task (exec, ts, t, now);
      if (t->n_kernels == 0)
        events++; /* empty_task_event, scheduled after 0 s: `now` does not move */
      while (ts->next_kernel < t->n_kernels)
        {
          /* run_next_kernel, then kernel_done at the kernel's end */
          const ModelKernel *k
            = model_plan_kernel (exec->plan, t->first_kernel + ts->next_kernel++);
          double issue = issue_kernel (exec, ts, t, k, now);
          now = hw_cluster_kernel_lone_end (exec->cluster, t->rank, k->dtype, &k->op.shape,
                                            k->op.flops, k->op.bytes, issue - now, now);
          events += 2; /* its latency end (which flushes at once: nothing else is due) and
                        * its completion */
          if (exec->op_times != NULL)
            model_op_times_add (exec->op_times, t->rank, t->kind, &k->op,
                                now - ts->kernel_start, ts->kernel_host);
        }
      end_task (exec, ts, now);
      StreamState *ss = stream_state (exec, t->rank, t->stream);
      ss->next++;
      if (exec->sync_task[row] != G_MAXUINT && id < exec->sync_task[row])
        exec->sync_left[row]--;
    }
  return events;
}

ModelExecutorTrace *
model_executor_trace_new (void)
{
  return g_new0 (ModelExecutorTrace, 1);
}

void
model_executor_trace_free (ModelExecutorTrace *trace)
{
  if (trace == NULL)
    return;
  sim_vec_clear (&trace->steps);
  g_free (trace);
}

void
model_executor_keep_trace (ModelExecutor *exec, ModelExecutorTrace *trace)
{
  g_return_if_fail (exec != NULL && trace != NULL);
  /* a start and an end per task that runs, reserved at once (the load marks come on top) */
  trace->steps.len = 0;
  sim_vec_grow (&trace->steps, sizeof (TraceEntry), 2 * exec->n_expected);
  exec->trace = trace;
}

void
model_executor_trace_mark (ModelExecutorTrace *trace, guint id, double time, double value)
{
  g_return_if_fail (trace != NULL);
  SIM_VEC_PUSH (&trace->steps, TraceEntry, ((TraceEntry){ id, TRACE_MARK, time, value }));
}

void
model_executor_run_trace (ModelExecutor *exec, const ModelExecutorTrace *trace,
                          ModelTraceMarkFunc mark, gpointer user_data)
{
  g_return_if_fail (exec != NULL && trace != NULL && exec->n_done == 0);
  initial_state (exec, trace->t0);
  for (guint i = 0; i < trace->steps.len; i++)
    {
      const TraceEntry *e = &SIM_VEC_AT (&trace->steps, TraceEntry, i);
      if (e->kind == TRACE_MARK)
        {
          if (mark != NULL)
            mark (e->id, e->time, e->value, user_data);
          continue;
        }
      TaskState *ts = &exec->tasks[e->id];
      if (e->kind == TRACE_END)
        {
          end_task (exec, ts, e->time);
          continue;
        }
      begin_task (exec, ts, model_plan_task (exec->plan, e->id), e->time);
    }
}

void
model_executor_set_on_engine (ModelExecutor *exec, gboolean on_engine)
{
  g_return_if_fail (exec != NULL);
  exec->on_engine = on_engine;
}

guint64
model_executor_n_off_engine (const ModelExecutor *exec)
{
  g_return_val_if_fail (exec != NULL, 0);
  return exec->n_off_engine;
}

void
model_executor_set_first_step (ModelExecutor *exec, gboolean first_step)
{
  g_return_if_fail (exec != NULL);
  exec->first_step = first_step;
}

void
model_executor_set_host_ledger (ModelExecutor *exec, ModelHostLedger *host)
{
  g_return_if_fail (exec != NULL);
  exec->host = host;
}

void
model_executor_set_op_times (ModelExecutor *exec, ModelOpTimes *times)
{
  g_return_if_fail (exec != NULL);
  exec->op_times = times;
}

guint
model_executor_n_done (const ModelExecutor *exec)
{
  return exec->n_done;
}

guint
model_executor_n_expected (const ModelExecutor *exec)
{
  return exec->n_expected;
}

const HwRankShift *
model_executor_shift (const ModelExecutor *exec)
{
  return &exec->shift;
}

double
model_executor_rank_end (const ModelExecutor *exec, guint rank)
{
  g_return_val_if_fail (rank < model_plan_n_ranks (exec->plan), 0);
  return exec->rank_end[ledger_row (exec, rank)];
}

/* Length of [a0, a1) covered by the sorted disjoint intervals of `iv` (Interval), starting
 * the scan at *cursor (advanced; callers scan in increasing a0). */
static double
covered (const SimVec *iv, guint *cursor, double a0, double a1)
{
  const Interval *b = iv->data;
  double sum = 0;
  while (*cursor < iv->len && b[*cursor].end <= a0)
    (*cursor)++;
  for (guint i = *cursor; i < iv->len; i++)
    {
      if (b[i].start >= a1)
        break;
      sum += MIN (a1, b[i].end) - MAX (a0, b[i].start);
    }
  return sum;
}

/* The union of the busy intervals of `streams` (n ≤ MODEL_N_STREAMS) of `rank`: sorted
 * disjoint intervals (Interval) into `out` (emptied first). Each stream's list is in start
 * order already (end_task), so they are merged, not sorted: the head with the lowest start
 * next (the lowest stream on ties; the union does not depend on the order of equal starts),
 * joined to the last output interval when it starts before that one ends. */
static void
busy_union (const ModelExecutor *exec, guint rank, const ModelStream *streams, guint n,
            SimVec *out)
{
  const SimVec *lists[MODEL_N_STREAMS];
  guint next[MODEL_N_STREAMS] = { 0 };
  g_assert (n <= MODEL_N_STREAMS);
  for (guint i = 0; i < n; i++)
    lists[i] = &exec->busy[ledger_row (exec, rank) * MODEL_N_STREAMS + streams[i]];
  out->len = 0;
  for (;;)
    {
      const Interval *p = NULL;
      guint from = 0;
      for (guint i = 0; i < n; i++)
        if (next[i] < lists[i]->len)
          {
            const Interval *q = &SIM_VEC_AT (lists[i], Interval, next[i]);
            if (p == NULL || q->start < p->start)
              p = q, from = i;
          }
      if (p == NULL)
        return;
      next[from]++;
      g_assert (next[from] == lists[from]->len || p->start <= (p + 1)->start);
      Interval *last = out->len > 0 ? &SIM_VEC_AT (out, Interval, out->len - 1) : NULL;
      if (last != NULL && p->start <= last->end)
        last->end = MAX (last->end, p->end);
      else
        SIM_VEC_PUSH (out, Interval, *p);
    }
}

/* Length of the intervals of `a` (sorted, disjoint) not covered by those of `b`. */
static double
uncovered (const SimVec *a, const SimVec *b)
{
  double exposed = 0;
  guint cursor = 0;
  for (guint i = 0; i < a->len; i++)
    {
      const Interval *x = &SIM_VEC_AT (a, Interval, i);
      exposed += (x->end - x->start) - covered (b, &cursor, x->start, x->end);
    }
  return exposed;
}

/* Time the union of `streams` (n) of `rank` was busy while its compute stream was idle. */
static double
exposed_of (const ModelExecutor *exec, guint rank, const ModelStream *streams, guint n)
{
  SimVec comm = SIM_VEC_INIT;
  busy_union (exec, rank, streams, n, &comm);
  double exposed
    = uncovered (&comm, &exec->busy[ledger_row (exec, rank) * MODEL_N_STREAMS
                                    + MODEL_STREAM_COMPUTE]);
  sim_vec_clear (&comm);
  return exposed;
}

double
model_executor_exposed_comm (const ModelExecutor *exec, guint rank)
{
  g_return_val_if_fail (rank < model_plan_n_ranks (exec->plan), 0);
  /* data-parallel (comm), tensor-parallel (tp), context-parallel (cp) and expert-parallel
   * (ep) collectives, where they run while no compute does. Not the pipeline's P2P
   * streams: a send or a receive waits for its peer through the bubble, and that idle time
   * is the bubble's (a transfer on the critical path shows in the step time, not here) */
  static const ModelStream comms[] = { MODEL_STREAM_COMM, MODEL_STREAM_TP, MODEL_STREAM_CP,
                                       MODEL_STREAM_EP };
  return exposed_of (exec, rank, comms, G_N_ELEMENTS (comms));
}

double
model_executor_exposed_stream (const ModelExecutor *exec, guint rank, ModelStream stream)
{
  g_return_val_if_fail (rank < model_plan_n_ranks (exec->plan) && stream < MODEL_N_STREAMS, 0);
  return exposed_of (exec, rank, &stream, 1);
}

double
model_executor_exposed_offload (const ModelExecutor *exec, guint rank)
{
  g_return_val_if_fail (rank < model_plan_n_ranks (exec->plan), 0);
  static const ModelStream transfers[] = { MODEL_STREAM_H2D, MODEL_STREAM_D2H,
                                           MODEL_STREAM_NVME_READ, MODEL_STREAM_NVME_WRITE };
  static const ModelStream busy[] = { MODEL_STREAM_COMPUTE, MODEL_STREAM_COMM, MODEL_STREAM_TP,
                                      MODEL_STREAM_CP, MODEL_STREAM_EP, MODEL_STREAM_CPU };
  SimVec moving = SIM_VEC_INIT, working = SIM_VEC_INIT;
  busy_union (exec, rank, transfers, G_N_ELEMENTS (transfers), &moving);
  if (moving.len == 0)
    {
      sim_vec_clear (&moving);
      return 0; /* uncovered's sum over no interval: the other union is not needed */
    }
  busy_union (exec, rank, busy, G_N_ELEMENTS (busy), &working);
  double exposed = uncovered (&moving, &working);
  sim_vec_clear (&moving);
  sim_vec_clear (&working);
  return exposed;
}

double
model_executor_pipeline_idle (const ModelExecutor *exec, guint rank)
{
  g_return_val_if_fail (rank < model_plan_n_ranks (exec->plan), 0);
  /* every stream but the pipeline's P2P ones: a receive waiting for its peer is the bubble */
  static const ModelStream working[] = { MODEL_STREAM_COMPUTE, MODEL_STREAM_COMM,
                                         MODEL_STREAM_H2D,     MODEL_STREAM_D2H,
                                         MODEL_STREAM_CPU,     MODEL_STREAM_NVME_READ,
                                         MODEL_STREAM_NVME_WRITE, MODEL_STREAM_TP,
                                         MODEL_STREAM_CP,      MODEL_STREAM_EP };
  SimVec busy = SIM_VEC_INIT;
  busy_union (exec, rank, working, G_N_ELEMENTS (working), &busy);
  guint cursor = 0;
  double end = model_executor_rank_end (exec, rank);
  double idle = MAX (0.0, end - covered (&busy, &cursor, 0, end));
  sim_vec_clear (&busy);
  return idle;
}

double
model_executor_kind_time (const ModelExecutor *exec, guint rank, ModelTaskKind kind)
{
  g_return_val_if_fail (rank < model_plan_n_ranks (exec->plan) && kind < MODEL_N_TASK_KINDS, 0);
  return exec->kind_time[ledger_row (exec, rank) * MODEL_N_TASK_KINDS + kind];
}

double
model_executor_task_time (const ModelExecutor *exec, guint task)
{
  g_return_val_if_fail (task < model_plan_n_tasks (exec->plan), 0);
  if (exec->classes)
    task = rep_task (exec, task);
  const TaskState *ts = &exec->tasks[task];
  return ts->done ? ts->end - ts->start : 0;
}
