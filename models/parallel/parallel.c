/* models/parallel/parallel.c — data-parallel modes mapped to ZeRO stages; see parallel.h. */
#include "config.h"
#include "models/parallel/parallel.h"
#include "sim/text.h"

static const char *const mode_names[] = {
  "ddp", "zero1", "zero2", "zero3", "fsdp_full_shard", "fsdp_shard_grad_op", "fsdp_no_shard",
  "fsdp_hybrid_shard", NULL,
};

void
model_parallel_init_defaults (ModelParallel *par)
{
  *par = (ModelParallel){
    .mode = MODEL_DP_DDP,
    .degree = 1,
    .gpus_per_node = 1,
    .bucket_size = 25.0 * 1024 * 1024, /* torch.nn.parallel.DistributedDataParallel bucket_cap_mb */
    .prefetch = 1,
    .algorithm = HW_ALGORITHM_AUTO,
    .tp = 1,
    .cp = 1,
    .cp_variant = MODEL_CP_RING,
    .pp = 1,
    .pp_schedule = MODEL_PP_1F1B,
    .ep = 1,
    .etp = 1,
    .moe_imbalance = 1.0,
  };
}

const char *
model_parallel_tp_overlap_name (ModelTpCommOverlap overlap)
{
  switch (overlap)
    {
    case MODEL_TP_OVERLAP_NONE: return "none";
    case MODEL_TP_OVERLAP_BULK: return "bulk";
    case MODEL_TP_OVERLAP_PIPELINED: return "pipelined";
    }
  g_return_val_if_reached (NULL);
}

const char *
model_parallel_mode_name (ModelDataParallel mode)
{
  g_return_val_if_fail (mode < MODEL_N_DP_MODES, NULL);
  return mode_names[mode];
}

gboolean
model_parallel_mode_from_string (const char *text, ModelDataParallel *out, GError **error)
{
  int i;
  if (!sim_text_lookup (mode_names, "data-parallel mode", text, &i, error))
    return FALSE;
  *out = (ModelDataParallel) i;
  return TRUE;
}

/* Which states the mode shards: the row of parallel.h's table (ZeRO §5: 1 optimizer
 * states, 2 and gradients, 3 and parameters). */
static guint
mode_row (ModelDataParallel mode)
{
  switch (mode)
    {
    case MODEL_DP_ZERO1:
      return 1;
    case MODEL_DP_ZERO2:
    case MODEL_DP_FSDP_SHARD_GRAD_OP:
      return 2;
    case MODEL_DP_ZERO3:
    case MODEL_DP_FSDP_FULL_SHARD:
    case MODEL_DP_FSDP_HYBRID_SHARD:
      return 3;
    case MODEL_DP_DDP:
    case MODEL_DP_FSDP_NO_SHARD:
    default:
      return 0;
    }
}

void
model_parallel_mesh (const ModelParallel *par, ModelMesh *mesh)
{
  model_mesh_init (mesh, par->gpus_per_node);
  guint tp = MAX (par->tp, 1), cp = MAX (par->cp, 1), shard = 1,
        d = model_parallel_dp_degree (par);
  mesh->degree[MODEL_MESH_TP] = tp;
  mesh->degree[MODEL_MESH_CP] = cp;
  mesh->degree[MODEL_MESH_PP] = MAX (par->pp, 1);
  mesh->ep = MAX (par->ep, 1);
  mesh->etp = MAX (par->etp, 1);
  mesh->order = par->order;
  if (par->dp_shard > 0)
    shard = par->dp_shard;
  else if (par->dp_replicate > 0)
    shard = MAX (d / par->dp_replicate, 1);
  else if (par->mode == MODEL_DP_FSDP_HYBRID_SHARD)
    {
      /* a node's data-parallel ranks: under tp-cp-ep-pp-dp a node's GPUs hold whole
       * pipeline replicas (pp·cp·tp each), so the dp ranks on it are GPUs / (pp·cp·tp) */
      guint per_dp = tp * cp * (par->order == MODEL_MESH_ORDER_TP_CP_EP_PP_DP ? MAX (par->pp, 1) : 1);
      shard = MIN (MAX (par->gpus_per_node / per_dp, 1), d);
    }
  else if (mode_row (par->mode) > 0)
    shard = d;
  mesh->degree[MODEL_MESH_DP_SHARD] = MAX (shard, 1);
  mesh->degree[MODEL_MESH_DP_REPLICATE] = par->dp_replicate > 0 ? par->dp_replicate
                                                                : MAX (d / MAX (shard, 1), 1);
}

ModelPlacements
model_parallel_placements (const ModelParallel *par, ModelState state, ModelPhase phase)
{
  g_return_val_if_fail (state < MODEL_N_STATES && phase < MODEL_N_PHASES,
                        model_placements_replicate ());
  guint row = mode_row (par->mode);
  ModelPlacements pl = model_placements_replicate ();
  const ModelPlacement R = { MODEL_PLACEMENT_REPLICATE, 0 }, P = { MODEL_PLACEMENT_PARTIAL, 0 },
                       S = { MODEL_PLACEMENT_SHARD, MODEL_PLACEMENT_FLAT };
  ModelPlacement *rep = &pl.on[MODEL_MESH_DP_REPLICATE], *shard = &pl.on[MODEL_MESH_DP_SHARD];
  ModelPlacement *cp = &pl.on[MODEL_MESH_CP];
  switch (state)
    {
    case MODEL_STATE_WEIGHTS:
      if (phase == MODEL_PHASE_STEP) /* each rank updates its partition from stage 1 */
        *shard = row >= 1 ? S : R;
      else if (phase != MODEL_PHASE_COMPUTE) /* stage 3 keeps only the shard */
        *shard = row >= 3 ? S : R;
      break;
    case MODEL_STATE_GRADIENTS:
      if (phase == MODEL_PHASE_COMPUTE)
        *rep = P, *shard = P; /* each rank's backward: its micro-batch's contribution */
      else if (phase == MODEL_PHASE_STEP)
        *shard = row >= 1 ? S : R;
      else if (row >= 2) /* reduced every micro-batch into the rank's shard */
        *shard = S;
      else /* accumulated locally, reduced at the last micro-batch (DDP no_sync) */
        *rep = P, *shard = P;
      break;
    case MODEL_STATE_ACTIVATIONS: /* each rank runs its own micro-batch (cp: its sequence
                                   * chunks, dimension 1 of [b, s, h]) */
      *rep = *shard = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 0 };
      *cp = (ModelPlacement){ MODEL_PLACEMENT_SHARD, 1 };
      return pl;
    case MODEL_STATE_MASTER:
    case MODEL_STATE_OPTIMIZER:
    default:
      *shard = row >= 1 ? S : R;
      break;
    }
  /* cp ranks hold the same weights and each computes the gradient of its own tokens: on
   * the cp dimension every model state lies as on dp_shard (Megatron shards the
   * distributed optimizer and reduces gradients over the dp·cp group). */
  *cp = *shard;
  return pl;
}

gboolean
model_parallel_state_sharded (const ModelParallel *par, ModelState state, ModelPhase phase)
{
  ModelPlacements pl = model_parallel_placements (par, state, phase);
  return model_placements_any_shard (&pl);
}

double
model_parallel_local_bytes (const ModelParallel *par, ModelState state, ModelPhase phase,
                            double bytes)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  ModelPlacements pl = model_parallel_placements (par, state, phase);
  return model_placement_local_bytes (&pl, &mesh, bytes);
}

double
model_parallel_local_fraction (const ModelParallel *par, ModelState state, ModelPhase phase)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  ModelPlacements pl = model_parallel_placements (par, state, phase);
  return model_placement_local_fraction (&pl, &mesh);
}

GArray *
model_parallel_redistribute (const ModelParallel *par, ModelState state, ModelPhase from,
                             ModelPhase to, double bytes)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  ModelPlacements a = model_parallel_placements (par, state, from);
  ModelPlacements b = model_parallel_placements (par, state, to);
  GArray *out = g_array_new (FALSE, FALSE, sizeof (ModelPlacementComm));
  g_autoptr (GError) error = NULL;
  if (!model_placement_redistribute (&a, &b, &mesh, bytes, out, &error))
    g_error ("parallel.c: the mode table has an impossible change: %s", error->message);
  return out;
}

guint
model_parallel_stage (const ModelParallel *par)
{
  if (model_parallel_state_sharded (par, MODEL_STATE_WEIGHTS, MODEL_PHASE_REST))
    return 3;
  if (model_parallel_state_sharded (par, MODEL_STATE_GRADIENTS, MODEL_PHASE_ACCUMULATE))
    return 2;
  if (model_parallel_state_sharded (par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP))
    return 1;
  return 0;
}

guint
model_parallel_shard_size (const ModelParallel *par)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  ModelPlacements pl = model_parallel_placements (par, MODEL_STATE_OPTIMIZER, MODEL_PHASE_STEP);
  return model_placement_ways (&pl, &mesh);
}

guint
model_parallel_dp_degree (const ModelParallel *par)
{
  return MAX (par->degree / (MAX (par->tp, 1) * MAX (par->cp, 1) * MAX (par->pp, 1)), 1);
}

guint
model_parallel_replicas (const ModelParallel *par)
{
  return model_parallel_dp_degree (par) * MAX (par->cp, 1) / model_parallel_shard_size (par);
}

ModelParallel
model_parallel_unsharded (const ModelParallel *par)
{
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  ModelParallel ddp = *par;
  ddp.mode = MODEL_DP_DDP;
  ddp.dp_shard = 1;
  /* the shard size counts cp (its ways span dp_shard·cp); the replicas are data-parallel */
  guint ways = MAX (model_parallel_shard_size (par) / mesh.degree[MODEL_MESH_CP], 1);
  ddp.dp_replicate = mesh.degree[MODEL_MESH_DP_REPLICATE] * mesh.degree[MODEL_MESH_DP_SHARD]
                     / ways;
  return ddp;
}

gboolean
model_parallel_keeps_gathered (const ModelParallel *par)
{
  return par->mode == MODEL_DP_FSDP_SHARD_GRAD_OP;
}

gboolean
model_parallel_reduces_every_micro_batch (const ModelParallel *par)
{
  return model_parallel_stage (par) >= 2;
}

gboolean
model_parallel_validate (const ModelParallel *par, GError **error)
{
  if (par->degree < 1 || !(par->bucket_size > 0))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "data-parallel degree must be >= 1 and bucket_size positive");
      return FALSE;
    }
  if (par->degree % MAX (par->tp, 1) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "key 'tp': %u does not divide the %u GPU%s (the data-parallel degree is "
                   "GPUs / (tp · pp · cp) and must be whole)", par->tp, par->degree,
                   par->degree == 1 ? "" : "s");
      return FALSE;
    }
  if (par->degree % (MAX (par->tp, 1) * MAX (par->cp, 1)) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "key 'cp': tp %u × cp %u does not divide the %u GPU%s (the data-parallel "
                   "degree is GPUs / (tp · pp · cp) and must be whole)", MAX (par->tp, 1),
                   par->cp, par->degree, par->degree == 1 ? "" : "s");
      return FALSE;
    }
  if (par->degree % (MAX (par->tp, 1) * MAX (par->cp, 1) * MAX (par->pp, 1)) != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "key 'pp': tp %u × cp %u × pp %u does not divide the %u GPU%s (the "
                   "data-parallel degree is GPUs / (tp · pp · cp) and must be whole)",
                   MAX (par->tp, 1), MAX (par->cp, 1), par->pp, par->degree,
                   par->degree == 1 ? "" : "s");
      return FALSE;
    }
  guint dp = model_parallel_dp_degree (par);
  if (par->dp_replicate > 0 || par->dp_shard > 0)
    {
      ModelMesh mesh;
      model_parallel_mesh (par, &mesh);
      const char *key = par->dp_shard > 0 ? "dp_shard" : "dp_replicate";
      if (mesh.degree[MODEL_MESH_DP_REPLICATE] * mesh.degree[MODEL_MESH_DP_SHARD] != dp)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "key '%s': mesh degrees dp_replicate %u × dp_shard %u × tp %u do not "
                       "make the %u GPUs (the product of the mesh degrees must be the GPU "
                       "count)",
                       par->dp_shard > 0 && par->dp_replicate > 0 ? "dp_replicate" : key,
                       mesh.degree[MODEL_MESH_DP_REPLICATE], mesh.degree[MODEL_MESH_DP_SHARD],
                       par->tp, par->degree);
          return FALSE;
        }
      if (mode_row (par->mode) == 0 && mesh.degree[MODEL_MESH_DP_SHARD] > 1)
        {
          /* Name the constraint on the key that was given. */
          if (par->dp_shard > 0)
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                         "key 'dp_shard': data_parallel = %s shards nothing, so dp_shard must "
                         "be 1 (here %u)", model_parallel_mode_name (par->mode),
                         mesh.degree[MODEL_MESH_DP_SHARD]);
          else
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                         "key 'dp_replicate': data_parallel = %s shards nothing, so "
                         "dp_replicate must be the data-parallel degree %u (here %u, which "
                         "leaves shard groups of %u)", model_parallel_mode_name (par->mode), dp,
                         mesh.degree[MODEL_MESH_DP_REPLICATE],
                         mesh.degree[MODEL_MESH_DP_SHARD]);
          return FALSE;
        }
      return TRUE;
    }
  ModelMesh m;
  model_parallel_mesh (par, &m);
  if (par->mode == MODEL_DP_FSDP_HYBRID_SHARD && dp % m.degree[MODEL_MESH_DP_SHARD] != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "fsdp_hybrid_shard needs the %u GPUs to be a multiple of the %u GPUs per node",
                   par->degree, par->gpus_per_node);
      return FALSE;
    }
  return TRUE;
}
