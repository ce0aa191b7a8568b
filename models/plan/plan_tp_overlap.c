/* models/plan/plan_tp_overlap.c — where a block's tp collectives run against its compute task
 * under [parallel] tp_comm_overlap (ModelTpCommOverlap, models/parallel/parallel.h), after
 * Transformer Engine's userbuffers overlaps as Megatron's --tp-comm-overlap configures them
 * (transformer_engine/pytorch/module/base.py, initialize_ub: the default `methods` and
 * get_default_config).
 *
 *   NONE       Megatron without --tp-comm-overlap: the forward's collectives after the
 *              block's task, the next compute task waiting for them; in the backward the
 *              critical ones (SP's output-gradient all-gathers) before the task and the
 *              async ones (dgrad re-gather, input-gradient reduce-scatter / all-reduce;
 *              ModelTpComm.overlapped) beside it. Issued exactly as plan_tp_issue does.
 *   BULK       as NONE, the bulk overlaps (ModelTpComm.ub == MODEL_TP_UB_BULK: qkv_dgrad,
 *              qkv_wgrad, fc1_dgrad, fc1_wgrad) run by TE's kernels, which hold num_sm = 16
 *              SMs (get_default_config: "num_sm": 16 for every method but ring_exchange)
 *              instead of NCCL's CTAs (hardware/catalog.c comm_sm_fraction).
 *   PIPELINED  as BULK, and the ring-exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad:
 *              the all-gathers before a column-parallel GEMM and of a row-parallel GEMM's
 *              output gradient) and pipeline (proj_fprop, fc2_fprop: the reduce-scatters
 *              after a row-parallel GEMM) overlaps split into chunks that run beside the
 *              chunked GEMM: num_splits = tp for ring_exchange, 4 for pipeline
 *              (get_default_config). Built from events, each chunk its own collective task
 *              on MODEL_STREAM_TP of bytes / num_splits:
 *                - an all-gather's first chunk runs before the block's task (the first GEMM
 *                  chunk needs its input), its other chunks beside it;
 *                - a reduce-scatter's chunks but the last run beside the task, its last
 *                  chunk after it (the last GEMM chunk's output is reduced last);
 *              so a block exposes about one chunk per collective plus whatever of the rest
 *              the TP stream cannot hide beside the task: first/last chunk + max(compute,
 *              comm) emerges from the schedule, not from a formula. Approximate: the
 *              overlap window is the block's whole task (one task per layer and pass), not
 *              the one GEMM; TE's ring exchange computes its first GEMM chunk on the local
 *              shard, so its exposed piece is really the last GEMM chunk after the last
 *              receive (of the same order, 1/num_splits of the work), here a first
 *              communication chunk.
 *
 * SM sharing. A userbuffers collective's kernels hold num_sm SMs of each GPU while they run
 * (1 for ring_exchange, which moves data with the copy engines, use_ce; 16 for pipeline and
 * bulk, whose GEMMs TE launches on the remaining SMs, set_sm_margin). The collective task
 * carries that count (ModelCollective.ub_sms) and hardware/collective.c's hold gives the
 * GPU's compute resource to it in the fraction num_sm / sm_count (hardware/gpu.h sm_count,
 * the datasheet's: H100 SXM 132, A100 108): a compute-bound GEMM overlapping it then runs
 * at (sm_count − num_sm) / sm_count of its throughput, i.e. takes sm_count / (sm_count −
 * num_sm) times longer. Approximate: the slowdown lasts while the collective runs (TE's
 * margin lasts the whole overlapped GEMM), and a GEMM's waves on the fewer SMs are not
 * re-quantized. */
#include "config.h"
#include "models/plan/plan-private.h"

#include "models/parallel/tensor_parallel.h"

/* Transformer Engine's default num_sm (get_default_config). */
#define UB_RING_SMS 1.0
#define UB_SMS 16.0
/* Its default num_splits for the pipeline method (ring_exchange: tp). */
#define UB_PIPELINE_SPLITS 4u

/* The userbuffers method comm `m` runs with under `mode` (NONE: NCCL, as Megatron without
 * the overlap). */
static ModelTpUb
method (ModelTpCommOverlap mode, const ModelTpComm *m)
{
  if (mode == MODEL_TP_OVERLAP_NONE)
    return MODEL_TP_UB_NONE;
  if (m->ub == MODEL_TP_UB_BULK || mode == MODEL_TP_OVERLAP_PIPELINED)
    return m->ub;
  return MODEL_TP_UB_NONE;
}

static guint
issue_one (ModelPlan *p, guint rank, const ModelTpComm *m, ModelTpUb ub, double bytes,
           guint chunk, guint n_chunks, guint last, gint layer, gint micro_batch)
{
  g_autofree char *what = n_chunks > 1
                            ? g_strdup_printf ("%s chunk %u/%u", m->name, chunk + 1, n_chunks)
                            : g_strdup (m->name);
  guint id = plan_collective_on (p, rank, MODEL_STREAM_TP, MODEL_MESH_BIT (m->dim), m->kind,
                                 bytes, layer, micro_batch, what);
  if (id == G_MAXUINT)
    return last;
  if (ub != MODEL_TP_UB_NONE)
    {
      ModelCollective *c = &g_array_index (p->collectives, ModelCollective,
                                           plan_current (p)->collective);
      c->ub_sms = ub == MODEL_TP_UB_RING ? UB_RING_SMS : UB_SMS;
    }
  plan_task_dep (p, last);
  return id;
}

guint
plan_tp_overlap_issue (ModelPlan *p, guint rank, PlanTpBlock block, guint pass, PlanTpPart part,
                       guint after, gint layer, gint micro_batch)
{
  const GArray *comms = p->tp.comms[block][pass];
  ModelTpCommOverlap mode = p->par.tp_comm_overlap;
  guint last = after;
  for (guint i = 0; comms != NULL && i < comms->len; i++)
    {
      const ModelTpComm *m = &g_array_index (comms, ModelTpComm, i);
      ModelTpUb ub = method (mode, m);
      guint lo = 0, hi = 0, n = 1; /* chunks [lo, hi) of n go into `part` */
      if (ub == MODEL_TP_UB_RING)
        {
          n = MAX (p->tp.tp, 1);
          lo = part == PLAN_TP_PART_BEFORE ? 0 : 1;
          hi = part == PLAN_TP_PART_BEFORE ? 1 : part == PLAN_TP_PART_BESIDE ? n : 1;
        }
      else if (ub == MODEL_TP_UB_PIPELINE)
        {
          n = UB_PIPELINE_SPLITS;
          lo = part == PLAN_TP_PART_AFTER ? n - 1 : 0;
          hi = part == PLAN_TP_PART_AFTER ? n : part == PLAN_TP_PART_BESIDE ? n - 1 : 0;
        }
      else
        {
          /* whole: the async ones beside; the others after a forward task, before a
           * backward one (Megatron's order, plan_step.c) */
          PlanTpPart where = m->overlapped                 ? PLAN_TP_PART_BESIDE
                             : pass == MODEL_TP_FORWARD ? PLAN_TP_PART_AFTER
                                                          : PLAN_TP_PART_BEFORE;
          hi = where == part ? 1 : 0;
        }
      for (guint k = lo; k < hi; k++)
        last = issue_one (p, rank, m, ub, m->bytes / n, k, n, last, layer, micro_batch);
    }
  return last;
}
