/* cli/scenario/scenario_parallel.c — the [parallel] and [run] groups of a scenario.
 *
 * [parallel]: data_parallel (ddp | zero1 | zero2 | zero3 | fsdp_full_shard |
 * fsdp_shard_grad_op | fsdp_no_shard | fsdp_hybrid_shard; default ddp), bucket_size
 * (default 25 MiB), prefetch (layers, default 1), algorithm (auto | ring | tree |
 * hierarchical | nvls), reduce_dtype (fp32 | bf16 | fp16 | fp8; the gradients' by default),
 * the device mesh's degrees (models/parallel/mesh.h) dp_replicate, dp_shard (default from
 * data_parallel: ddp and fsdp_no_shard replicate over every data-parallel rank,
 * fsdp_hybrid_shard shards over a node's and replicates across nodes, the others shard over
 * every data-parallel rank; one given, the other is the rest), tp (Megatron tensor
 * parallelism, models/parallel/tensor_parallel.h; default 1), pp (pipeline stages,
 * models/parallel/pipeline_schedule.h and models/plan/plan_pp.c; default 1) with
 * pipeline_schedule (gpipe | 1f1b | interleaved | zb-h1; default 1f1b, interleaved with
 * virtual_stages > 1), virtual_stages (model chunks per pipeline rank), layers_per_stage
 * (comma-separated decoder layers per virtual stage) or pipeline_layout (Megatron's
 * layout string), cp (context parallelism, models/parallel/context_parallel.h;
 * default 1) and cp_variant (ring | all_gather | ulysses; default ring, Megatron/TE's
 * cp_comm_type "p2p"); pp × dp_replicate × dp_shard × cp × tp must be the GPU count, so
 * the data-parallel degree GPUs / (tp·pp·cp) must be whole. sequence_parallel (true |
 * false, default false: Megatron's --sequence-parallel), tp_comm_overlap (none | bulk |
 * pipelined, default none: Megatron without --tp-comm-overlap; bulk and pipelined are
 * Transformer Engine's userbuffers overlaps, need sequence_parallel; models/parallel/
 * parallel.h, models/plan/plan_tp_overlap.c). order (Megatron's rank order, innermost
 * first: tp-cp-ep-dp-pp, the default, or tp-cp-ep-pp-dp, --use-tp-pp-dp-mapping; the short
 * forms without ep- or cp- too; models/parallel/mesh.h).
 * [run]: steps (default 1), seed (default 1), kernel_jitter (coefficient of variation,
 * default 0), stragglers ("RANK:FACTOR; RANK:FACTOR", factors in [1, 100]).
 */
#include "config.h"
#include "cli/scenario/scenario_private.h"

#include <math.h>
#include <string.h>
#include "models/parallel/tensor_parallel.h"

static gboolean
get_text (GKeyFile *kf, const char *group, const char *key, char **out)
{
  *out = cli_scenario_get_raw (kf, group, key, FALSE, NULL);
  return *out != NULL;
}

static gboolean
load_parallel_enums (GKeyFile *kf, ModelParallel *par, GError **error)
{
  g_autofree char *mode = NULL, *algo = NULL, *dtype = NULL, *order = NULL;
  if (get_text (kf, "parallel", "data_parallel", &mode)
      && !model_parallel_mode_from_string (mode, &par->mode, error))
    return PREFIX_KEY (error, "parallel", "data_parallel"), FALSE;
  if (get_text (kf, "parallel", "algorithm", &algo)
      && !hw_collective_algorithm_from_string (algo, &par->algorithm, error))
    return PREFIX_KEY (error, "parallel", "algorithm"), FALSE;
  if (get_text (kf, "parallel", "order", &order)
      && !model_mesh_order_from_string (order, &par->order, error))
    return PREFIX_KEY (error, "parallel", "order"), FALSE;
  if (get_text (kf, "parallel", "reduce_dtype", &dtype))
    {
      /* hw_dtype_from_string's list names tf32, which this key refuses below (QA: 'TF32'
       * was told to give tf32) */
      if (!hw_dtype_from_string (dtype, &par->reduce_dtype, NULL))
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key 'reduce_dtype': unknown dtype '%s' (expected "
                       "fp32, bf16, fp16 or fp8)", dtype);
          return FALSE;
        }
      /* tf32 is how fp32 GEMMs run on tensor cores, not a dtype tensors are stored or
       * reduced in (QA: it ran as fp32, silently) */
      if (par->reduce_dtype == HW_DTYPE_TF32)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key 'reduce_dtype': tf32 is a math mode of fp32 "
                       "matrix multiplies, not a dtype gradients are reduced in (expected "
                       "fp32, bf16, fp16 or fp8)");
          return FALSE;
        }
      par->reduce_dtype_set = TRUE;
    }
  return TRUE;
}

/* The error of model-parallel degrees whose product does not divide the GPUs: it names
 * every key in that product (those above 1, and `key`, the one being checked) and their
 * numbers: "group [parallel], keys 'tp' and 'pp': tp 2 × pp 3 = 6 does not divide the 8 GPUs
 * (…)". `cp` and `pp` are 1 before they are read. FALSE. */
static gboolean
mesh_indivisible (GError **error, const char *key, guint64 tp, guint64 cp, guint64 pp,
                  guint degree)
{
  const char *const names[] = { "tp", "cp", "pp" };
  const guint64 values[] = { tp, cp, pp };
  g_autoptr (GString) keys = g_string_new (NULL), terms = g_string_new (NULL);
  guint n = 0, last = 0;
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (values[i] > 1 || strcmp (names[i], key) == 0)
      last = i, n++;
  for (guint i = 0, k = 0; i < G_N_ELEMENTS (names); i++)
    if (values[i] > 1 || strcmp (names[i], key) == 0)
      {
        g_string_append_printf (keys, "%s'%s'", k == 0 ? "" : i == last ? " and " : ", ",
                                names[i]);
        g_string_append_printf (terms, "%s%s %" G_GUINT64_FORMAT, k++ == 0 ? "" : " × ",
                                names[i], values[i]);
      }
  if (n > 1)
    g_string_append_printf (terms, " = %" G_GUINT64_FORMAT, tp * cp * pp);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "group [parallel], key%s %s: %s does not divide the %u GPU%s (the "
               "data-parallel degree GPUs / (tp · cp · pp) must be whole)", n > 1 ? "s" : "",
               keys->str, terms->str, degree, degree == 1 ? "" : "s");
  return FALSE;
}

/* [parallel] tp, sequence_parallel, tp_comm_overlap. tp must divide the GPUs (the
 * data-parallel degree GPUs / tp is whole) and the model (model_tp_check: heads, KV heads,
 * MLP size). */
static gboolean
load_tp (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelParallel *par = &sc->par;
  guint64 tp = 1;
  if (!cli_scenario_get_count (kf, "parallel", "tp", FALSE, par->degree, &tp, error))
    return FALSE;
  if (tp < 1 || tp > par->degree || par->degree % tp != 0)
    return mesh_indivisible (error, "tp", tp, 1, 1, par->degree);
  par->tp = (guint) tp;
  g_autofree char *sp = NULL, *overlap = NULL;
  if (get_text (kf, "parallel", "sequence_parallel", &sp)
      && !sim_units_parse_bool (sp, &par->sequence_parallel, error))
    return PREFIX_KEY (error, "parallel", "sequence_parallel"), FALSE;
  if (get_text (kf, "parallel", "tp_comm_overlap", &overlap))
    {
      g_strstrip (overlap);
      if (g_strcmp0 (overlap, "none") != 0 && g_strcmp0 (overlap, "bulk") != 0
          && g_strcmp0 (overlap, "pipelined") != 0)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key 'tp_comm_overlap': unknown value '%s' "
                       "(expected one of: none, bulk, pipelined)", overlap);
          return FALSE;
        }
      par->tp_comm_overlap = g_strcmp0 (overlap, "bulk") == 0 ? MODEL_TP_OVERLAP_BULK
                             : g_strcmp0 (overlap, "pipelined") == 0
                               ? MODEL_TP_OVERLAP_PIPELINED
                               : MODEL_TP_OVERLAP_NONE;
      /* Megatron validate_args (megatron/training/arguments.py): "Tensor parallel
       * communication/GEMM overlap can happen only when sequence parallelism is enabled"
       * (TE's userbuffers overlap all-gathers and reduce-scatters, not all-reduces). */
      if (par->tp_comm_overlap != MODEL_TP_OVERLAP_NONE && tp > 1 && !par->sequence_parallel)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key 'tp_comm_overlap': '%s' needs [parallel] "
                       "sequence_parallel = true (Megatron: tensor-parallel "
                       "communication/GEMM overlap needs sequence parallelism)", overlap);
          return FALSE;
        }
    }
  if (tp == 1)
    return TRUE;
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  if (!model_tp_check (sc->arch, &mesh, error))
    return g_prefix_error (error, "group [parallel], key 'tp': "), FALSE;
  return TRUE;
}

/* [parallel] cp, cp_variant (after tp). tp·cp must divide the GPUs, and the sequence and
 * heads suit the variant (model_cp_check: seq_len a multiple of 2·cp under ring and
 * all_gather's load balancing, Ulysses's heads of a tp rank multiples of cp). */
static gboolean
load_cp (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelParallel *par = &sc->par;
  guint64 cp = 1;
  g_autofree char *variant = NULL;
  if (!cli_scenario_get_count (kf, "parallel", "cp", FALSE, par->degree, &cp, error))
    return FALSE;
  if (get_text (kf, "parallel", "cp_variant", &variant))
    {
      g_strstrip (variant);
      if (!model_cp_variant_from_string (variant, &par->cp_variant, error))
        return PREFIX_KEY (error, "parallel", "cp_variant"), FALSE;
    }
  if (cp < 1 || par->degree % (par->tp * cp) != 0)
    return mesh_indivisible (error, "cp", par->tp, cp, 1, par->degree);
  par->cp = (guint) cp;
  if (cp == 1)
    return TRUE;
  ModelMesh mesh;
  model_parallel_mesh (par, &mesh);
  ModelCpParams p;
  model_cp_params_init (&p, sc->arch, &mesh, par->cp_variant, sc->stack.micro_batch,
                        sc->stack.seq_len, model_stack_activation_bytes (&sc->stack));
  if (!model_cp_check (sc->arch, &mesh, par->degree, &p, error))
    return g_prefix_error (error, "group [parallel], key 'cp': "), FALSE;
  return TRUE;
}

/* [parallel] layers_per_stage: "8, 8, 7, 9" (p·v counts in model order). */
static gboolean
load_layers_per_stage (GKeyFile *kf, ModelParallel *par, GError **error)
{
  g_autofree char *text = NULL;
  if (!get_text (kf, "parallel", "layers_per_stage", &text))
    return TRUE;
  g_auto (GStrv) items = g_strsplit (text, ",", -1);
  for (guint i = 0; items[i] != NULL; i++)
    {
      guint64 n;
      g_strstrip (items[i]);
      if (par->pp_n_layers_per_stage >= MODEL_PP_MAX_STAGES)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "at most %u stages", MODEL_PP_MAX_STAGES);
          return PREFIX_KEY (error, "parallel", "layers_per_stage"), FALSE;
        }
      if (!sim_units_parse_count (items[i], &n, error) || n > G_MAXUINT)
        {
          if (*error == NULL)
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE, "too large");
          return PREFIX_KEY (error, "parallel", "layers_per_stage"), FALSE;
        }
      par->pp_layers_per_stage[par->pp_n_layers_per_stage++] = (guint) n;
    }
  return TRUE;
}

/* [parallel] pp, pipeline_schedule, virtual_stages, layers_per_stage, pipeline_layout
 * (models/parallel/pipeline_schedule.h). pp must divide GPUs / (tp·cp); the stage
 * partition and the schedule are checked by the plan (model_plan_validate: layers not a
 * multiple of pp·v without an explicit split, interleaving with grad_accum not a multiple
 * of pp, DeepSpeed's ZeRO-2/3). The schedule defaults to Megatron's: 1F1B, interleaved
 * 1F1B when virtual_stages > 1 (schedules.py get_forward_backward_func). */
static gboolean
load_pp (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelParallel *par = &sc->par;
  guint64 pp = 1, vpp = 0;
  g_autofree char *schedule = NULL, *layout = NULL;
  if (!cli_scenario_get_count (kf, "parallel", "pp", FALSE, par->degree, &pp, error)
      || !cli_scenario_get_count (kf, "parallel", "virtual_stages", FALSE, MODEL_PP_MAX_STAGES,
                                  &vpp, error))
    return FALSE;
  if (pp < 1 || par->degree % (par->tp * par->cp * pp) != 0)
    return mesh_indivisible (error, "pp", par->tp, par->cp, pp, par->degree);
  if (vpp > MODEL_PP_MAX_STAGES || pp * MAX (vpp, 1) > MODEL_PP_MAX_STAGES)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'virtual_stages': pp × virtual_stages at most %u",
                   MODEL_PP_MAX_STAGES);
      return FALSE;
    }
  par->pp = (guint) pp;
  par->pp_virtual = (guint) vpp;
  if (!load_layers_per_stage (kf, par, error))
    return FALSE;
  if (get_text (kf, "parallel", "pipeline_layout", &layout))
    par->pp_layout = g_intern_string (g_strstrip (layout));
  par->pp_schedule = vpp > 1 ? MODEL_PP_INTERLEAVED : MODEL_PP_1F1B;
  if (get_text (kf, "parallel", "pipeline_schedule", &schedule)
      && !model_pp_schedule_from_name (g_strstrip (schedule), &par->pp_schedule))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'pipeline_schedule': unknown schedule '%s' "
                   "(expected one of: gpipe, 1f1b, interleaved, zb-h1)", schedule);
      return FALSE;
    }
  return TRUE;
}

/* [parallel] tp, pp, cp, dp_replicate, dp_shard: the mesh degrees (>= 1). */
static gboolean
load_mesh (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelParallel *par = &sc->par;
  if (!load_tp (kf, sc, error) || !load_cp (kf, sc, error) || !load_pp (kf, sc, error))
    return FALSE;
  guint dp = par->degree / (par->tp * par->cp * par->pp);
  static const char *const dp_dims[] = { "dp_replicate", "dp_shard" };
  guint *out[] = { &par->dp_replicate, &par->dp_shard };
  for (guint i = 0; i < G_N_ELEMENTS (dp_dims); i++)
    {
      guint64 v = 0;
      if (!cli_scenario_get_count (kf, "parallel", dp_dims[i], FALSE, par->degree, &v, error))
        return FALSE;
      if (v > 0 && dp % v != 0)
        {
          g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                       "group [parallel], key '%s': %" G_GUINT64_FORMAT " does not divide the "
                       "data-parallel degree %u (%u GPUs / (tp %u · cp %u · pp %u); the "
                       "product of the mesh degrees must be the GPU count)", dp_dims[i], v, dp,
                       par->degree, par->tp, par->cp, par->pp);
          return FALSE;
        }
      *out[i] = (guint) v;
    }
  return TRUE;
}

gboolean
cli_scenario_load_parallel (GKeyFile *kf, CliScenario *sc, GError **error)
{
  ModelParallel *par = &sc->par;
  model_parallel_init_defaults (par);
  par->degree = sc->node.n_gpus * sc->n_nodes;
  par->gpus_per_node = sc->node.n_gpus;
  guint64 prefetch = par->prefetch;
  if (!load_parallel_enums (kf, par, error)
      || !cli_scenario_get_quantity (kf, "parallel", "bucket_size", SIM_DIM_BYTES, FALSE,
                                     &par->bucket_size, error)
      || !cli_scenario_get_count (kf, "parallel", "prefetch", FALSE,
                                  MAX (sc->arch->n_layers, 1), &prefetch, error)
      || !load_mesh (kf, sc, error))
    return FALSE;
  par->prefetch = (guint) MIN (prefetch, G_MAXUINT);
  if (prefetch > sc->arch->n_layers)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'prefetch': %" G_GUINT64_FORMAT
                   " layers ahead, but the model has %" G_GUINT64_FORMAT,
                   prefetch, sc->arch->n_layers);
      return FALSE;
    }
  /* PyTorch DDP never splits a parameter across buckets; tiny buckets only multiply
   * latency-bound collectives (and plan size). */
  if (par->bucket_size < 1024.0 * 1024)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [parallel], key 'bucket_size': at least 1 MiB");
      return FALSE;
    }
  /* Errors naming a key ("key 'dp_shard': …") take the house form "group [G], key 'K': …". */
  if (!model_parallel_validate (par, error))
    return g_prefix_error (error, g_str_has_prefix ((*error)->message, "key '")
                                    ? "group [parallel], " : "group [parallel]: "),
           FALSE;
  return TRUE;
}

/* "3:1.25" → rank 3 runs its kernels 1.25× slower. */
static gboolean
parse_straggler (const char *item, guint n_ranks, CliSlowdown *out, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (item, ":", -1);
  guint64 rank;
  double factor;
  if (g_strv_length (parts) != 2)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "'%s': expected RANK:FACTOR, e.g. 3:1.25", item);
      return FALSE;
    }
  g_strstrip (parts[0]);
  g_strstrip (parts[1]);
  if (!sim_units_parse_count (parts[0], &rank, error) || !sim_units_parse_number (parts[1], &factor, error))
    return FALSE;
  /* a straggler 100× slower is already a broken GPU; far larger factors only overflow times */
  if (rank >= n_ranks || !(factor >= 1 && factor <= 100))
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "'%s': rank must be below %u and the factor in [1, 100]", item, n_ranks);
      return FALSE;
    }
  *out = (CliSlowdown){ (guint) rank, factor };
  return TRUE;
}

static gboolean
load_stragglers (GKeyFile *kf, CliScenario *sc, GError **error)
{
  if (!g_key_file_has_key (kf, "run", "stragglers", NULL))
    return TRUE;
  gsize n = 0;
  g_auto (GStrv) items = g_key_file_get_string_list (kf, "run", "stragglers", &n, NULL);
  for (gsize i = 0; i < n; i++)
    {
      CliSlowdown s;
      g_strstrip (items[i]);
      if (items[i][0] == '\0')
        continue;
      if (!parse_straggler (items[i], sc->par.degree, &s, error))
        return PREFIX_KEY (error, "run", "stragglers"), FALSE;
      for (guint j = 0; j < sc->slowdowns->len; j++)
        if (g_array_index (sc->slowdowns, CliSlowdown, j).rank == s.rank)
          {
            g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                         "group [run], key 'stragglers': rank %u given twice", s.rank);
            return FALSE;
          }
      g_array_append_val (sc->slowdowns, s);
    }
  return TRUE;
}

gboolean
cli_scenario_load_run (GKeyFile *kf, CliScenario *sc, GError **error)
{
  guint64 steps = 1, seed = 1;
  sc->slowdowns = g_array_new (FALSE, FALSE, sizeof (CliSlowdown));
  g_autofree char *seed_text = cli_scenario_get_raw (kf, "run", "seed", FALSE, NULL);
  g_autofree char *jitter = cli_scenario_get_raw (kf, "run", "kernel_jitter", FALSE, NULL);
  if (!cli_scenario_get_count (kf, "run", "steps", FALSE, 1000, &steps, error))
    return FALSE;
  if (seed_text != NULL && !sim_units_parse_count_in (seed_text, 0, G_MAXUINT32, &seed, error))
    return PREFIX_KEY (error, "run", "seed"), FALSE;
  if (jitter != NULL && (!sim_units_parse_number (jitter, &sc->kernel_jitter, error)
                         || !(sc->kernel_jitter >= 0 && sc->kernel_jitter < 1)))
    {
      if (error != NULL && *error == NULL)
        g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                     "'%s' is outside [0, 1)", g_strstrip (jitter));
      return PREFIX_KEY (error, "run", "kernel_jitter"), FALSE;
    }
  sc->steps = (guint) steps;
  sc->seed = (guint32) seed;
  g_autofree char *classes = cli_scenario_get_raw (kf, "run", "rank_classes", FALSE, NULL);
  if (classes != NULL && g_strcmp0 (classes, "auto") != 0 && g_strcmp0 (classes, "off") != 0)
    {
      g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                   "group [run], key 'rank_classes': '%s' is not auto or off", classes);
      return FALSE;
    }
  sc->all_ranks = g_strcmp0 (classes, "off") == 0;
  return load_stragglers (kf, sc, error);
}
