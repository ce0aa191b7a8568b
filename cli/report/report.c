/* cli/report/report.c — printing and recording the summary of a run; see report.h. */
#include "config.h"
#include "cli/report/report.h"

#include "cli/report/op_report.h"
#include "cli/report/training.h"

#include <string.h>
#include "hardware/kernel.h"
#include "models/parallel/expert_parallel.h"
#include "sim/text.h"
#include "sim/units.h"

/* The search's ceiling, HW_GPU_MAX_MEMORY, in PiB (QA: "1048576.00 GiB"; the byte unit
 * stops at GiB elsewhere, for sizes on the 0.01 GiB grid the searches simulate). */
static char *
max_memory_text (void)
{
  return g_strdup_printf ("%g PiB", HW_GPU_MAX_MEMORY / 0x1p50); /* 2^50 B a PiB */
}

static void
print_quantity (FILE *out, const char *name, double value, SimDimension dim)
{
  g_autofree char *s = sim_units_format (value, dim, 2);
  fprintf (out, "  %-22s %14s\n", name, s);
}

/* "model states 4.89 GiB per GPU", or with offloading where they are: "model states per
 * GPU: 0.00 B on the GPU, 41.50 GiB in host DRAM, 12.00 GiB on NVMe". */
static char *
states_text (const ModelSimResult *res)
{
  g_autofree char *gpu = sim_units_format (res->state_bytes, SIM_DIM_BYTES, 2);
  if (res->state_host <= 0 && res->state_nvme <= 0)
    return g_strdup_printf ("model states %s per GPU", gpu);
  GString *t = g_string_new (NULL);
  g_autofree char *host = sim_units_format (res->state_host, SIM_DIM_BYTES, 2);
  g_string_printf (t, "model states per GPU: %s on the GPU, %s in host DRAM", gpu, host);
  if (res->state_nvme > 0)
    {
      g_autofree char *nvme = sim_units_format (res->state_nvme, SIM_DIM_BYTES, 2);
      g_string_append_printf (t, ", %s on NVMe", nvme);
    }
  return g_string_free (t, FALSE);
}

/* Pipeline stages (pp > 1): stage s's peak, the most of its ranks — the mesh's
 * (models/parallel/mesh.h model_mesh_stage_rank: under the default order GPUs [s·G,
 * (s+1)·G) with G = GPUs / pp, under tp-cp-ep-pp-dp runs of cp·tp GPUs pp·cp·tp apart).
 * `alloc`, `dev`: B. */
static void
stage_peak (const CliScenario *sc, const ModelSimResult *res, guint stage, double *alloc,
            double *dev)
{
  ModelMesh mesh;
  model_parallel_mesh (&sc->par, &mesh);
  guint g = model_mesh_stage_size (&mesh);
  *alloc = *dev = 0;
  for (guint i = 0; i < g; i++)
    {
      guint r = model_mesh_stage_rank (&mesh, stage, i);
      if (r >= res->n_ranks)
        break;
      *alloc = MAX (*alloc, res->rank_peak_allocated[r]);
      *dev = MAX (*dev, res->rank_device_used[r]);
    }
}

/* The pipeline stage of global `rank` under the scenario's mesh order. */
static guint
stage_of (const CliScenario *sc, guint rank)
{
  ModelMesh mesh;
  model_parallel_mesh (&sc->par, &mesh);
  return model_mesh_stage_of (&mesh, rank);
}

static void
print_stages (FILE *out, const CliScenario *sc, const ModelSimResult *res)
{
  if (sc->par.pp <= 1 || res->rank_peak_allocated == NULL)
    return;
  fprintf (out, "pipeline stages (peak of each stage's GPUs; worst: stage %u)\n",
           stage_of (sc, res->worst_rank));
  for (guint st = 0; st < sc->par.pp; st++)
    {
      double alloc, dev;
      stage_peak (sc, res, st, &alloc, &dev);
      g_autofree char *a = sim_units_format (alloc, SIM_DIM_BYTES, 2);
      g_autofree char *d = sim_units_format (dev, SIM_DIM_BYTES, 2);
      fprintf (out, "  stage %-3u %14s allocated  %14s device-used\n", st, a, d);
    }
}

/* Fits: the measured figures. OOM: what the step as planned needs and how far short the
 * GPU is (never a "reserved" or "device-used" above the capacity); the figures measured when
 * the OOM is raised are in print_oom. */
/* Where a run that does not fit its GPU runs short, for the capacity line: ": a request
 * failed; see below" when its demand fits (fragmentation), else the part of the run whose
 * demand is over ("while loading the model", "in a padded batch", "in the first step"), or
 * "" for the reported step. */
static const char *
oom_where (const ModelSimResult *res)
{
  if (res->lifetime_device <= res->capacity)
    return ": a request failed; see below";
  if (res->load_peak + res->cuda_context > res->capacity)
    return ", while loading the model";
  if (res->oom_padded_batch > 0)
    return ", in a padded batch";
  if (res->need_device <= res->capacity)
    return ", in the first step";
  return "";
}

static void
print_memory (FILE *out, const ModelSimResult *res)
{
  gboolean over = !res->gpu_fits;
  fprintf (out, "memory (rank %u, %speak at t = %.4f s during \"%s\")\n", res->worst_rank,
           over ? "the step as planned: " : "", res->peak_time,
           res->peak_task ? res->peak_task : "-");
  for (guint c = 0; c < MODEL_N_MEM; c++)
    if (res->peak_mix[c] > 0)
      {
        double pct = 100 * res->peak_mix[c] / res->need_allocated;
        g_autofree char *s = sim_units_format (res->peak_mix[c], SIM_DIM_BYTES, 2);
        fprintf (out, "  %-22s %14s  %5.1f %%\n", model_ledger_category_name (c), s, pct);
      }
  g_autofree char *load = sim_units_format (res->load_bytes, SIM_DIM_BYTES, 2);
  fprintf (out, "  %-22s %14s  (allocated before the first forward)\n", "after model load", load);
  if (res->load_peak > res->load_bytes)
    {
      g_autofree char *lp = sim_units_format (res->load_peak, SIM_DIM_BYTES, 2);
      fprintf (out, "  %-22s %14s  (allocated at the load's peak: quantization transients)\n",
               "loading peak", lp);
    }
  if (over)
    {
      print_quantity (out, "needs, tensors", res->need_allocated, SIM_DIM_BYTES);
      print_quantity (out, "needs, allocator", res->need_reserved, SIM_DIM_BYTES);
      print_quantity (out, "CUDA context", res->cuda_context, SIM_DIM_BYTES);
      print_quantity (out, "needs on the device", res->need_device, SIM_DIM_BYTES);
    }
  else
    {
      print_quantity (out, "peak allocated", res->peak_allocated, SIM_DIM_BYTES);
      print_quantity (out, "peak reserved", res->peak_reserved, SIM_DIM_BYTES);
      print_quantity (out, "CUDA context", res->cuda_context, SIM_DIM_BYTES);
      print_quantity (out, "device-used", res->device_used, SIM_DIM_BYTES);
    }
  if (res->padded_sequences > 0)
    {
      g_autofree char *lo = sim_units_format (res->padded_reserved_min, SIM_DIM_BYTES, 2);
      g_autofree char *hi = sim_units_format (res->padded_reserved_max, SIM_DIM_BYTES, 2);
      g_autofree char *failed
          = res->padded_oom_sequences == 0
              ? g_strdup ("")
              : g_strdup_printf ("; %u ran out of memory: see below", res->padded_oom_sequences);
      fprintf (out, "  %-22s %s to %s reserved (%u orders of %u padded batches, median kept%s)\n",
               "padded batches", lo, hi, res->padded_sequences, res->padded_batches, failed);
    }
  if (res->process_steps > 1)
    {
      g_autofree char *a = sim_units_format (res->first_step_allocated, SIM_DIM_BYTES, 2);
      g_autofree char *r = sim_units_format (res->first_step_reserved, SIM_DIM_BYTES, 2);
      static const char *const states[] = {
        [MODEL_STATES_AT_FIRST_STEP] = "optimizer states created at its optimizer step",
        [MODEL_STATES_FROM_LOAD] = "optimizer states on the GPU from the load",
        [MODEL_STATES_NOT_ON_GPU] = "no optimizer states on the GPU",
        [MODEL_STATES_PAGED] = "paged optimizer states: on the GPU from the load as far as "
                               "they fit, the rest paged in for its optimizer step",
      };
      fprintf (out, "  %-22s %s allocated, %s reserved (%s%s)\n", "first step", a, r,
               states[res->first_step_states], res->first_step_oom ? "; OOM" : "");
    }
  if (res->lifetime_device > res->need_device)
    {
      print_quantity (out, "lifetime allocated", res->lifetime_allocated, SIM_DIM_BYTES);
      print_quantity (out, "lifetime device-used", res->lifetime_device, SIM_DIM_BYTES);
    }
  g_autofree char *cap = sim_units_format (res->capacity, SIM_DIM_BYTES, 2);
  g_autofree char *room = sim_units_format (ABS (res->capacity - res->lifetime_device),
                                            SIM_DIM_BYTES, 2);
  if (res->gpu_fits)
    fprintf (out, "  %-22s %14s  FITS (%s free)\n", "capacity", cap, room);
  else if (res->fits_from > 0)
    {
      g_autofree char *by = sim_units_format_up (res->fits_from - res->capacity,
                                                 SIM_DIM_BYTES, 2);
      g_autofree char *least = sim_units_format_up (res->fits_from, SIM_DIM_BYTES, 2);
      fprintf (out, "  %-22s %14s  OOM (%s short%s)\n", "capacity", cap, by, oom_where (res));
      /* the demand above is this GPU's: a larger one caches more before it must release */
      fprintf (out, "  %-22s %14s  (the least memory per GPU found to hold the run, "
               "within %.1f %%: simulated there)\n", "fits from", least,
               100 * MODEL_FITS_FROM_TOLERANCE);
      if (res->fits_from_island > 0)
        {
          g_autofree char *island = sim_units_format_up (res->fits_from_island, SIM_DIM_BYTES, 2);
          g_autofree char *gap = sim_units_format_up (res->fits_from_island_short,
                                                      SIM_DIM_BYTES, 2);
          fprintf (out, "  %-22s %14s  (holds it too, but %s does not: the allocator's "
                   "fragmentation)\n", "also fits in", island, gap);
        }
    }
  else if (res->fits_from_short > 0)
    {
      g_autofree char *most = max_memory_text ();
      fprintf (out, "  %-22s %14s  OOM\n", "capacity", cap);
      fprintf (out, "  %-22s %14s  (no GPU memory up to %s holds the run%s)\n", "fits from",
               "none", most,
               res->fits_from_request_cap
                 ? ": one tensor is over the 16 TiB any request may take" : "");
    }
  else if (res->lifetime_device > res->capacity)
    fprintf (out, "  %-22s %14s  OOM (%s short%s)\n", "capacity", cap, room, oom_where (res));
  else /* a request failed although the need fits: fragmentation, or the cache */
    fprintf (out, "  %-22s %14s  OOM (a request failed; see below)\n", "capacity", cap);
}

/* "  host capacity   512.00 GiB  FITS (300.00 GiB free)" or OOM (… short). */
static void
print_capacity (FILE *out, const char *name, double peak, double capacity, gboolean fits)
{
  g_autofree char *cap = sim_units_format (capacity, SIM_DIM_BYTES, 2);
  g_autofree char *room = sim_units_format (ABS (capacity - peak), SIM_DIM_BYTES, 2);
  fprintf (out, "  %-22s %14s  %s (%s %s)\n", name, cap, fits ? "FITS" : "OOM", room,
           fits ? "free" : "short");
}

/* Host DRAM and NVMe ledgers and the offload traffic (only when something is offloaded). */
static void
print_host (FILE *out, const CliScenario *sc, const ModelSimResult *res)
{
  if (!res->offloads)
    return;
  fprintf (out, "host memory (node %u, at its peak)\n", res->host_node);
  for (guint c = 0; c < MODEL_N_MEM; c++)
    if (res->host_peak_mix[c] > 0)
      print_quantity (out, model_ledger_category_name (c), res->host_peak_mix[c], SIM_DIM_BYTES);
  print_quantity (out, "host peak", res->host_peak, SIM_DIM_BYTES);
  print_capacity (out, "host capacity", res->host_peak, res->host_capacity, res->host_fits);
  if (res->nvme_peak > 0)
    {
      print_quantity (out, "NVMe peak", res->nvme_peak, SIM_DIM_BYTES);
      print_capacity (out, "NVMe capacity", res->nvme_peak, res->nvme_capacity, res->nvme_fits);
    }
  if (res->cpu_step_params > 0)
    {
      /* the host CPU's optimizer step: cpu_cores × cpu_adam_rate parameters/s per node,
       * shared by the node's ranks (hardware/node_catalog.h for the rate's source) */
      g_autofree char *t = sim_units_format (res->cpu_step_time, SIM_DIM_TIME, 2);
      g_autofree char *n = sim_text_group_digits ((guint64) res->cpu_step_params);
      fprintf (out, "  %-22s %14s  (%s parameters; %u cores x %.0f Mparam/s per node)\n",
               "CPU optimizer step", t, n, sc->node.cpu_cores, sc->node.cpu_adam_rate / 1e6);
    }
  fprintf (out, "offload traffic (rank 0, one step)\n");
  print_quantity (out, "host to GPU", res->offload_h2d, SIM_DIM_BYTES);
  print_quantity (out, "GPU to host", res->offload_d2h, SIM_DIM_BYTES);
  if (res->offload_nvme_read > 0 || res->offload_nvme_write > 0)
    {
      print_quantity (out, "NVMe read", res->offload_nvme_read, SIM_DIM_BYTES);
      print_quantity (out, "NVMe write", res->offload_nvme_write, SIM_DIM_BYTES);
    }
}

/* Paged optimizer (models/plan/plan_paged.h): the states paged out to host and the time their
 * migrations took (only with a paged optimizer). */
static void
print_paged (FILE *out, const CliScenario *sc, const ModelSimResult *res)
{
  if (!model_stack_optimizer_is_paged (&sc->stack))
    return;
  fprintf (out, "paged optimizer (per rank)\n");
  print_quantity (out, "states paged out", res->paged_spill, SIM_DIM_BYTES);
  print_quantity (out, "page in + out (rank 0)", res->paged_time, SIM_DIM_TIME);
}

/* "4.00 GiB optimizer_state (initial state); 1.00 GiB activations (fwd L3 mb0); …" */
static char *
oom_holders_text (const ModelSimResult *res)
{
  GString *t = g_string_new (NULL);
  for (guint i = 0; i < res->oom_n_holders; i++)
    {
      const ModelLedgerHolder *h = &res->oom_holders[i];
      g_autofree char *b = sim_units_format (h->bytes, SIM_DIM_BYTES, 2);
      g_string_append_printf (t, "%s%s %s (%s)", i > 0 ? "; " : "", b,
                              model_ledger_category_name (h->category), h->task ? h->task : "-");
    }
  return g_string_free (t, FALSE);
}

/* What ran out of memory: the moment, the task, the request (the tensor that did not fit),
 * what was reserved then, the figures PyTorch and nvidia-smi would show when the OOM is
 * raised, the categories then and the largest buffers holding memory with the tasks that
 * allocated them (the failing buffer's tensors granted before it included). */
static void
print_oom (FILE *out, const ModelSimResult *res)
{
  if (!res->oom)
    return;
  g_autofree char *req = sim_units_format (res->oom_requested, SIM_DIM_BYTES, 2);
  g_autofree char *rsv = sim_units_format (res->oom_reserved, SIM_DIM_BYTES, 2);
  g_autofree char *where
      = res->oom_padded_batch > 0
          ? g_strdup_printf ("in padded batch %u of %u (%" G_GUINT64_FORMAT " tokens) ",
                             res->oom_padded_batch, res->padded_batches + 1,
                             res->oom_padded_seq_len)
          /* the load's states are the first step's initial state (t = 0): said as the
           * capacity line says it (QA: "while loading" there, "in the first step" here) */
          : g_strdup (res->oom_in_first_step && res->oom_time <= 0
                          && res->load_peak + res->cuda_context > res->capacity
                        ? "while loading the model (the first step's initial state) "
                      : res->oom_in_first_step ? "in the first step "
                                               : "");
  fprintf (out, "out of memory (rank %u) %sat t = %.4f s during \"%s\": %s of %s requested "
                "with %s reserved\n", res->worst_rank, where, res->oom_time,
           res->oom_task ? res->oom_task : "-", req,
           model_ledger_category_name (res->oom_category), rsv);
  print_quantity (out, "peak allocated then", res->peak_allocated, SIM_DIM_BYTES);
  print_quantity (out, "peak reserved then", res->peak_reserved, SIM_DIM_BYTES);
  print_quantity (out, "device-used then", res->device_used, SIM_DIM_BYTES);
  for (guint c = 0; c < MODEL_N_MEM; c++)
    if (res->oom_mix[c] > 0)
      print_quantity (out, model_ledger_category_name (c), res->oom_mix[c], SIM_DIM_BYTES);
  if (res->oom_n_holders == 0) /* e.g. the model's weights at load: nothing live yet */
    {
      fprintf (out, "  largest live buffers   none yet\n");
      return;
    }
  fprintf (out, "  largest live buffers (allocated by):\n");
  for (guint i = 0; i < res->oom_n_holders; i++)
    {
      const ModelLedgerHolder *h = &res->oom_holders[i];
      g_autofree char *b = sim_units_format (h->bytes, SIM_DIM_BYTES, 2);
      fprintf (out, "    %14s  %-16s %s\n", b, model_ledger_category_name (h->category),
               h->task ? h->task : "-");
    }
}

char *
cli_report_format_rate (double tokens_per_s)
{
  /* below 1 token/s, "%.0f" would print 0 (QA: an extremely slow step read "0 tokens/s") */
  return g_strdup_printf (tokens_per_s >= 1 ? "%.0f" : "%.3g", tokens_per_s);
}

static void
print_time (FILE *out, const CliScenario *sc, const ModelSimResult *res)
{
  /* PyTorch would have stopped at the OOM: these are the figures of the step as planned */
  fprintf (out, res->gpu_fits ? "time\n"
                              : "time (of the step as planned: it does not fit, so it would not "
                                "run)\n");
  print_quantity (out, "step time", res->step_time, SIM_DIM_TIME);
  g_autofree char *rate = cli_report_format_rate (res->tokens_per_s);
  fprintf (out, "  %-22s %14s\n", "tokens/s", rate);
  fprintf (out, "  %-22s %12.1f %%\n", "MFU", 100 * res->mfu);
  fprintf (out, "  %-22s %12.1f %%\n", "HFU", 100 * res->hfu);
  if (res->steps > 1)
    {
      g_autofree char *lo = sim_units_format (res->step_time_min, SIM_DIM_TIME, 3);
      g_autofree char *p99 = sim_units_format (res->step_time_p99, SIM_DIM_TIME, 3);
      g_autofree char *med = sim_units_format (res->step_time_median, SIM_DIM_TIME, 3);
      fprintf (out, "  %-22s %14s  (median of %u steps; min %s, p99 %s)\n", "step time dist.",
               med, res->steps, lo, p99);
    }
  if (res->n_ranks > 1)
    print_quantity (out, "exposed communication", res->exposed_comm, SIM_DIM_TIME);
  if (res->ep_rows_mean > 0)
    {
      /* the expert-parallel stream's collectives: the dispatcher's (expert_parallel.h) */
      print_quantity (out, sc->par.moe_dispatcher == MODEL_EP_DISPATCHER_ALLGATHER
                             ? "exposed all-gather/RS" : "exposed all-to-all",
                      res->exposed_all_to_all, SIM_DIM_TIME);
      fprintf (out, "  %-22s %14.0f  routed rows a MoE layer on the slowest EP rank, %.2fx "
               "the mean rank's %.0f (least loaded rank %.0f)\n", "expert load",
               res->ep_rows_slowest, res->ep_rows_slowest / res->ep_rows_mean,
               res->ep_rows_mean, res->ep_rows_least);
    }
  if (res->offload_stall > 0)
    print_quantity (out, "exposed offload", res->offload_stall, SIM_DIM_TIME);
  if (sc->par.pp > 1)
    print_quantity (out, "pipeline bubble", res->pipeline_bubble, SIM_DIM_TIME);
  for (guint k = 0; k < MODEL_N_TASK_KINDS; k++)
    if (res->time_by_kind[k] > 0)
      {
        /* with several steps, the passes are the first step's (its tasks, series and
         * kernels), the step time their median; "step 1" follows the value so the label
         * keeps to its column ("collective (rank 0, step 1)" would not) */
        g_autofree char *name = g_strdup_printf ("%s (rank 0)", model_plan_task_kind_name (k));
        g_autofree char *s = sim_units_format (res->time_by_kind[k], SIM_DIM_TIME, 2);
        /* each kind's tasks' durations added up: on several streams (communication beside
         * compute, several collective streams) they overlap, and the sum can pass the step */
        fprintf (out, "  %-22s %14s%s%s\n", name, s, res->steps > 1 ? "  (step 1)" : "",
                 res->time_by_kind[k] > res->step_time
                   ? "  (its tasks' times added up; they overlap on several streams)" : "");
      }
}

void
cli_report_print_verdict (FILE *out, const CliScenario *sc, const ModelSimResult *res)
{
  g_autofree char *cap = sim_units_format (res->capacity, SIM_DIM_BYTES, 2);
  /* the name defaults to the file's, which may hold any byte: escaped as in messages */
  g_autofree char *name = sim_text_printable (sc->name, 0);
  if (res->fits)
    {
      /* the run's peak on the device: loading, the first step or the steady step */
      g_autofree char *used = sim_units_format (res->lifetime_device, SIM_DIM_BYTES, 2);
      g_autofree char *step = sim_units_format (res->step_time, SIM_DIM_TIME, 3);
      g_autofree char *rate = cli_report_format_rate (res->tokens_per_s);
      fprintf (out, "%s: FITS, %s of %s per GPU, step %s, %s tokens/s\n", name, used, cap,
               step, rate);
      return;
    }
  /* every store that is short, the GPU first: "OOM, needs … (… short); host memory is short
   * (… of … per node)" */
  g_autoptr (GString) why = g_string_new (NULL);
  if (!res->gpu_fits && res->fits_from > 0)
    {
      /* the least memory found to fit, rounded up: a GPU of the printed size has the room */
      g_autofree char *least = sim_units_format_up (res->fits_from, SIM_DIM_BYTES, 2);
      g_autofree char *by = sim_units_format_up (res->fits_from - res->capacity,
                                                 SIM_DIM_BYTES, 2);
      g_string_append_printf (why, "needs %s of %s per GPU (%s short)", least, cap, by);
    }
  else if (!res->gpu_fits && res->fits_from_short > 0)
    {
      g_autofree char *most = max_memory_text ();
      g_string_append_printf (why, "no GPU memory up to %s fits it%s (has %s per GPU)", most,
                              res->fits_from_request_cap
                                ? ": one tensor is over the 16 TiB any request may take" : "",
                              cap);
    }
  else if (!res->gpu_fits) /* not searched: the demand on this GPU */
    {
      g_autofree char *need = sim_units_format (res->lifetime_device, SIM_DIM_BYTES, 2);
      if (res->lifetime_device > res->capacity)
        g_string_append_printf (why, "demands %s of %s per GPU", need, cap);
      else
        g_string_append_printf (why, "a request failed (demands %s of %s per GPU)", need, cap);
    }
  if (!res->host_fits)
    {
      g_autofree char *peak = sim_units_format (res->host_peak, SIM_DIM_BYTES, 2);
      g_autofree char *hcap = sim_units_format (res->host_capacity, SIM_DIM_BYTES, 2);
      g_string_append_printf (why, "%shost memory is short (%s of %s per node)",
                              why->len > 0 ? "; " : "", peak, hcap);
    }
  if (!res->nvme_fits)
    {
      g_autofree char *peak = sim_units_format (res->nvme_peak, SIM_DIM_BYTES, 2);
      g_autofree char *ncap = sim_units_format (res->nvme_capacity, SIM_DIM_BYTES, 2);
      g_string_append_printf (why, "%sNVMe capacity is short (%s of %s per node)",
                              why->len > 0 ? "; " : "", peak, ncap);
    }
  fprintf (out, "%s: OOM, %s\n", name, why->str);
}

void
cli_report_print (FILE *out, const CliScenario *sc, const ModelSimResult *res,
                  gboolean ops_listed)
{
  const ModelArch *a = sc->arch;
  const ModelStack *s = &sc->stack;
  g_autofree char *mem = sim_units_format (sc->node.gpu->memory_capacity, SIM_DIM_BYTES, 2);
  /* a file name may hold a line break or an escape sequence: shown as messages show it */
  g_autofree char *name = sim_text_printable (sc->name, 0);
  g_autofree char *path = sim_text_printable (sc->path, 0);
  fprintf (out, "scenario   %s (%s)\n", name, path);
  g_autofree char *params = sim_text_group_digits (model_arch_n_params (a));
  /* a mixture of experts: the parameters a token goes through too (its model FLOPs, MFU's) */
  g_autofree char *active = a->n_experts > 0
                              ? sim_text_group_digits (model_arch_n_params_active (a)) : NULL;
  /* the family, unless the name already begins with it ("deepseek_v3 130.2B (…)") */
  const char *family = model_arch_family_name (a->family);
  g_autofree char *fam = g_str_has_prefix (a->name, family) && a->name[strlen (family)] == ' '
                           ? g_strdup ("") : g_strdup_printf (" (%s)", family);
  fprintf (out, "model      %s%s: %s parameters%s%s%s, %" G_GUINT64_FORMAT " layer%s, hidden %"
                G_GUINT64_FORMAT "\n",
           a->name, fam, params, active ? " (" : "",
           active ? active : "", active ? " active a token)" : "", a->n_layers,
           a->n_layers == 1 ? "" : "s", a->hidden_size);
  fprintf (out, "hardware   %u x %s (%s each)", res->n_ranks, sc->node.gpu->name, mem);
  if (res->n_ranks > 1)
    fprintf (out, " in %u x %s of %u", sc->n_nodes, sc->node.name ? sc->node.name : "node",
             sc->node.n_gpus);
  /* the fabric between nodes when it is not non-blocking one tier (hardware/cluster.h) */
  const HwFabricSpec *f = &sc->fabric;
  gboolean pods = f->nodes_per_pod > 0 && f->nodes_per_pod < sc->n_nodes;
  if (sc->n_nodes > 1 && f->spine_oversubscription > 1)
    fprintf (out, ", leaf-spine %g:1", f->spine_oversubscription);
  if (sc->n_nodes > 1 && pods)
    fprintf (out, ", %u pods of %u nodes (%g:1 to the core)", sc->n_nodes / f->nodes_per_pod,
             f->nodes_per_pod, MAX (f->pod_oversubscription, 1.0));
  fputc ('\n', out);
  guint replayed = hw_rank_shift_n_reps (&res->classes);
  if (replayed < res->n_ranks) /* rank classes (models/plan/rank_classes.h) */
    fprintf (out, "replay     %u of %u ranks, each for a class of %u equivalent ranks "
                  "([run] rank_classes = off replays every rank)\n",
             replayed, res->n_ranks, hw_rank_shift_multiplicity (&res->classes));
  g_autofree char *states = states_text (res);
  if (sc->par.pp > 1)
    {
      g_autofree char *chunks = sc->par.pp_virtual > 1
                                  ? g_strdup_printf (", %u chunks per rank", sc->par.pp_virtual)
                                  : g_strdup ("");
      guint g = res->n_ranks / sc->par.pp;
      guint run = MAX (sc->par.tp, 1) * MAX (sc->par.cp, 1);
      g_autofree char *where
        = sc->par.order == MODEL_MESH_ORDER_TP_CP_EP_DP_PP
            ? g_strdup_printf ("GPUs [%u·s, %u·s + %u)", g, g, g)
            : g_strdup_printf ("the GPUs r with (r / %u) mod %u = s (order %s: a pipeline's "
                               "stages %u GPU%s apart, data-parallel replicas %u apart)",
                               run, sc->par.pp, model_mesh_order_name (sc->par.order), run,
                               run == 1 ? "" : "s", run * sc->par.pp);
      fprintf (out, "pipeline   pp %u, %s schedule%s, %" G_GUINT64_FORMAT " micro-batch%s per "
                    "step; stage s on %s\n",
               sc->par.pp, model_pp_schedule_name (sc->par.pp_schedule), chunks,
               s->grad_accum, s->grad_accum == 1 ? "" : "es", where);
    }
  /* a non-default rank order ([parallel] order, mesh.h) closes the parallel line */
  g_autofree char *order
    = sc->par.order == MODEL_MESH_ORDER_TP_CP_EP_DP_PP
        ? g_strdup ("")
        : g_strdup_printf ("; rank order %s", model_mesh_order_name (sc->par.order));
  /* the mesh's dimensions within a stage, innermost first: tp, cp, then dp (pp has its own
   * line above, ep and etp the experts line below) */
  guint tp = MAX (sc->par.tp, 1), cp = MAX (sc->par.cp, 1);
  g_autofree char *tp_part
    = tp > 1 ? g_strdup_printf ("tensor parallel tp %u%s%s%s x ", tp,
                                sc->par.sequence_parallel ? " + sequence parallel" : "",
                                sc->par.tp_comm_overlap != MODEL_TP_OVERLAP_NONE
                                  ? ", comm overlap " : "",
                                sc->par.tp_comm_overlap != MODEL_TP_OVERLAP_NONE
                                  ? model_parallel_tp_overlap_name (sc->par.tp_comm_overlap)
                                  : "")
             : g_strdup ("");
  g_autofree char *cp_part
    = cp > 1 ? g_strdup_printf ("context parallel cp %u (%s) x ", cp,
                                model_cp_variant_name (sc->par.cp_variant))
             : g_strdup ("");
  /* which FSDP wraps the model ([training] fsdp_version): FSDP1's flat shards or FSDP2's
   * per-parameter DTensors, what the optimizer steps (ModelOptimizerView) */
  ModelDataParallel dp_mode = sc->par.mode;
  gboolean fsdp = model_parallel_is_fsdp (dp_mode);
  if (res->n_ranks > 1)
    fprintf (out, "parallel   %s%sdata parallel %s%s over %u%s (ZeRO stage %u, shard group %u), "
                  "%s%s\n",
             tp_part, cp_part, model_parallel_mode_name (dp_mode),
             !fsdp ? "" : s->framework.fsdp2 ? " (FSDP2)" : " (FSDP1)",
             model_parallel_dp_degree (&sc->par), tp * cp > 1 ? "" : " GPUs",
             model_parallel_stage (&sc->par), model_parallel_shard_size (&sc->par), states,
             order);
  ModelMesh mesh;
  model_parallel_mesh (&sc->par, &mesh);
  if (res->n_ranks > 1 && a->n_experts > 0 && model_mesh_expert_dp_own (&mesh))
    {
      /* the expert grid each stage carves from its dp·cp·tp ranks (mesh.h) */
      guint edp = model_mesh_expert_degree (&mesh, MODEL_MESH_EXPERT_DP);
      guint ep = MAX (sc->par.ep, 1), etp = MAX (sc->par.etp, 1);
      g_autofree char *split
        = etp > 1 ? g_strdup_printf (" × etp %u", etp) : g_strdup ("");
      g_autofree char *each
        = etp > 1 ? g_strdup_printf (", each split over %u GPUs (expert tensor parallel)", etp)
                  : g_strdup ("");
      g_autoptr (ModelInventory) inv = model_stack_inventory (&sc->stack, sc->arch);
      g_autofree char *dispatch
        = sc->par.moe_dispatcher == MODEL_EP_DISPATCHER_ALLGATHER
            ? g_strdup_printf ("allgather (every token all-gathered over %u GPUs, the "
                               "experts' output reduce-scattered)", ep * etp)
            : g_strdup ("alltoall");
      fprintf (out, "experts    ep %u%s: %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                    " experts a GPU%s; expert data parallel over %u GPU%s: %s; token "
                    "dispatcher %s%s\n",
               ep, split, a->n_experts / ep, a->n_experts, each, edp, edp == 1 ? "" : "s",
               !model_ep_trains_experts (inv) ? "the experts are frozen (no expert gradients "
                                                "or optimizer states)"
               : edp == 1 ? "each GPU's expert gradients and states are its own"
               : model_parallel_stage (&sc->par) == 1
                 ? "expert gradients reduce-scattered, expert optimizer states sharded"
                 : "expert gradients all-reduced, expert states replicated",
               dispatch,
               sc->par.moe_a2a_overlap && s->grad_accum > 1
                 ? "; all-to-alls overlapped across micro-batches (a2a_overlap: combined 1F1B)"
                 : "");
    }
  /* selective recompute's modules when they are not the attention core alone */
  g_autofree char *ckpt = g_strdup (model_stack_checkpointing_name (s->checkpointing));
  if (s->checkpointing == MODEL_CHECKPOINTING_SELECTIVE && s->recompute_modules != 0
      && s->recompute_modules != MODEL_RECOMPUTE_CORE_ATTN)
    {
      /* the MODEL_RECOMPUTE_* bits in order (models/ops/cost.h) */
      const char *names[] = { "core_attn", "layernorm", "moe_act", "mlp",
                              "moe",       "shared_experts", "mla_up_proj" };
      GString *m = g_string_new (ckpt);
      g_string_append (m, " (");
      for (guint k = 0, n = 0; k < G_N_ELEMENTS (names); k++)
        if (s->recompute_modules & (1u << k))
          g_string_append_printf (m, "%s%s", n++ ? ", " : "", names[k]);
      g_string_append_c (m, ')');
      g_free (ckpt);
      ckpt = g_string_free (m, FALSE);
    }
  fprintf (out,
           "training   micro-batch %" G_GUINT64_FORMAT " x seq %" G_GUINT64_FORMAT
           ", GA %" G_GUINT64_FORMAT ", %s, %s, checkpointing %s, attention %s\n",
           s->micro_batch, s->seq_len, s->grad_accum, model_stack_precision_name (s->precision),
           model_stack_optimizer_name (s->optimizer), ckpt,
           model_stack_attention_label (s, sc->node.gpu, a->head_dim));
  if (s->mtp_layers > 0) /* [training] mtp_layers: their parameters beside the main count */
    {
      ModelArch one = *a;
      one.deepseek.n_mtp_layers = s->mtp_layers;
      g_autofree char *n = sim_text_group_digits (model_arch_n_params_mtp (&one));
      fprintf (out, "mtp        %u multi-token-prediction layer%s trained beside the loss: "
                    "%s parameters more\n",
               s->mtp_layers, s->mtp_layers == 1 ? "" : "s", n);
    }
  if (model_finetune_active (&s->finetune))
    {
      double n = model_stack_trainable_params (s, a);
      g_autofree char *tr = sim_text_group_digits ((guint64) n);
      g_autofree char *targets = model_finetune_targets_text (&s->finetune);
      fprintf (out, "finetune   %s rank %" G_GUINT64_FORMAT " on %s: %s trainable parameters "
                    "(%.2f %%)%s\n",
               s->finetune.method == MODEL_FINETUNE_QLORA ? "QLoRA" : "LoRA", s->finetune.rank,
               targets, tr,
               100 * n / ((double) model_arch_n_params (a) + n),
               s->finetune.method != MODEL_FINETUNE_QLORA ? ""
               : s->finetune.double_quant             ? ", NF4 base, double quantization"
                                                      : ", NF4 base");
      if (a->mxfp4_experts) /* gpt_oss: the checkpoint's experts (inventory.h) */
        fprintf (out, "           experts %s\n", s->finetune.dequantize
                                                   ? "dequantized from MXFP4 to the weight dtype"
                                                   : "kept MXFP4 (4.25 bits a weight)");
    }
  const ModelFramework *fw = &s->framework;
  ModelFramework custom;
  model_framework_apply_profile (&custom, MODEL_FRAMEWORK_CUSTOM);
  if (fw->kind != MODEL_FRAMEWORK_CUSTOM || fw->main_grad_fp32 || fw->optimizer_in_backward
      || fw->optimizer_impl != MODEL_OPTIMIZER_IMPL_FOREACH || fw->reduce_bucket_elements > 0
      || fw->loss != custom.loss || fw->loss_chunks != custom.loss_chunks
      || fw->kv_repeat != custom.kv_repeat || fw->kv_repeat_sdpa != custom.kv_repeat_sdpa
      || fw->compile != custom.compile || fw->host_sync_micro_batch
      || fw->host_op_time != custom.host_op_time
      || fw->host_backward_op_time != custom.host_backward_op_time
      || fw->rope_table != custom.rope_table)
    {
      g_autofree char *chunks = fw->loss == MODEL_LOSS_CHUNKED
                                    || fw->loss == MODEL_LOSS_CHUNKED_HEAD
                                  ? g_strdup_printf (" (%u chunks)", fw->loss_chunks)
                                  : g_strdup ("");
      /* forward / backward host time per op, each with its unit ("12.84 us / 4.00 us";
       * %g printed a 10 ms op as "1e+04/4 us") */
      g_autofree char *fwd = sim_units_format (fw->host_op_time, SIM_DIM_TIME, 2);
      g_autofree char *bwd = sim_units_format (fw->host_backward_op_time, SIM_DIM_TIME, 2);
      g_autofree char *host = g_strdup_printf ("%s / %s", fwd, bwd);
      /* the rotary table the GPU keeps (in the weights), when the model has rotary positions */
      g_autofree char *rope = fw->rope_table != MODEL_ROPE_TABLE_NONE
                                  && model_arch_rotary_dim (a) > 0
                                ? g_strdup_printf (", rope_table %s",
                                                   model_framework_rope_table_name (fw->rope_table))
                                : g_strdup ("");
      fprintf (out,
               "framework  %s: loss %s%s, kv_repeat %s, compile %s, optimizer %s%s%s%s%s, host %s "
               "an op%s\n",
               model_framework_name (fw->kind), model_framework_loss_name (fw->loss), chunks,
               fw->kv_repeat ? "on"
               : !fw->kv_repeat_sdpa ? "off"
               : s->attention_sdpa ? "before sdpa"
               : s->flash_attention ? "before sdpa (none before flash-attn)"
                                    : "before sdpa (eager expands them anyway)",
               fw->compile ? "on" : "off",
               model_framework_optimizer_impl_name (model_stack_optimizer_impl (s)),
               model_stack_main_grad_fp32 (s) ? ", fp32 main_grad" : "",
               fw->optimizer_in_backward ? ", optimizer in backward" : "",
               fw->reduce_bucket_elements > 0 ? ", DeepSpeed buckets" : "", rope, host,
               fw->host_sync_micro_batch && sc->par.pp <= 1
                 ? ", waits for each micro-batch" : "");
    }
  if (model_offload_any (&s->offload))
    fprintf (out, "offload    optimizer %s, parameters %s, activations %s, %s host memory\n",
             model_offload_target_name (s->offload.optimizer),
             model_offload_target_name (s->offload.parameters),
             model_offload_target_name (s->offload.activations),
             s->offload.pageable ? "pageable" : "pinned");
  if (res->n_ranks == 1 && (res->state_host > 0 || res->state_nvme > 0))
    fprintf (out, "states     %s\n", states);
  if (s->seq_len > a->max_positions)
    fprintf (out, "note       seq_len %" G_GUINT64_FORMAT " exceeds the model's %" G_GUINT64_FORMAT
                  " positions: simulated as given (the model would need position scaling)\n",
             s->seq_len, a->max_positions);
  print_memory (out, res);
  print_stages (out, sc, res);
  print_oom (out, res);
  print_host (out, sc, res);
  print_paged (out, sc, res);
  print_time (out, sc, res);
  cli_report_print_kernel_classes (out, res, ops_listed);
  cli_training_print (out, sc, res);
}

/* Offload choices, host DRAM and NVMe ledgers, offload traffic (zeros without offload). */
static void
fill_host_summary (SimRecorder *rec, const CliScenario *sc, const ModelSimResult *res)
{
  const ModelOffload *o = &sc->stack.offload;
  sim_recorder_summary_text (rec, "offload_optimizer", model_offload_target_name (o->optimizer));
  sim_recorder_summary_text (rec, "offload_parameters", model_offload_target_name (o->parameters));
  sim_recorder_summary_text (rec, "offload_activations",
                             model_offload_target_name (o->activations));
  sim_recorder_summary_scalar (rec, "host_peak", res->host_peak, "B");
  sim_recorder_summary_scalar (rec, "host_capacity", res->host_capacity, "B");
  sim_recorder_summary_scalar (rec, "host_fits", res->host_fits ? 1 : 0, "1");
  sim_recorder_summary_scalar (rec, "nvme_peak", res->nvme_peak, "B");
  sim_recorder_summary_scalar (rec, "nvme_capacity", res->nvme_capacity, "B");
  sim_recorder_summary_scalar (rec, "nvme_fits", res->nvme_fits ? 1 : 0, "1");
  for (guint c = 0; c < MODEL_N_MEM; c++)
    {
      g_autofree char *name = g_strdup_printf ("host_peak_%s", model_ledger_category_name (c));
      sim_recorder_summary_scalar (rec, name, res->host_peak_mix[c], "B");
    }
  sim_recorder_summary_scalar (rec, "offload_h2d", res->offload_h2d, "B");
  sim_recorder_summary_scalar (rec, "offload_d2h", res->offload_d2h, "B");
  sim_recorder_summary_scalar (rec, "offload_nvme_read", res->offload_nvme_read, "B");
  sim_recorder_summary_scalar (rec, "offload_nvme_write", res->offload_nvme_write, "B");
  sim_recorder_summary_scalar (rec, "cpu_step_params", res->cpu_step_params, "1");
  sim_recorder_summary_scalar (rec, "cpu_step_time", res->cpu_step_time, "s");
  sim_recorder_summary_scalar (rec, "paged_spill", res->paged_spill, "B");
  sim_recorder_summary_scalar (rec, "paged_time", res->paged_time, "s");
}

void
cli_report_fill_summary (SimRecorder *rec, const CliScenario *sc, const ModelSimResult *res)
{
  sim_recorder_summary_text (rec, "scenario", sc->name);
  sim_recorder_summary_text (rec, "model", sc->arch->name);
  sim_recorder_summary_text (rec, "gpu", sc->node.gpu->name);
  sim_recorder_summary_scalar (rec, "n_gpus", res->n_ranks, "1");
  if (sc->n_nodes > 1)
    {
      /* the fabric (hardware/cluster.h): a pod of every node when none is given */
      const HwFabricSpec *f = &sc->fabric;
      guint pod = f->nodes_per_pod > 0 ? MIN (f->nodes_per_pod, sc->n_nodes) : sc->n_nodes;
      sim_recorder_summary_scalar (rec, "n_nodes", sc->n_nodes, "1");
      sim_recorder_summary_scalar (rec, "nodes_per_pod", pod, "1");
      sim_recorder_summary_scalar (rec, "spine_oversubscription", f->spine_oversubscription, "1");
      sim_recorder_summary_scalar (rec, "pod_oversubscription",
                                   MAX (f->pod_oversubscription, 1.0), "1");
    }
  sim_recorder_summary_scalar (rec, "ranks_replayed", hw_rank_shift_n_reps (&res->classes),
                               "1");
  sim_recorder_summary_scalar (rec, "n_params", (double) model_arch_n_params (sc->arch), "1");
  sim_recorder_summary_scalar (rec, "n_active_params",
                               (double) model_arch_n_params_active (sc->arch), "1");
  sim_recorder_summary_scalar (rec, "n_trainable_params",
                               model_stack_trainable_params (&sc->stack, sc->arch), "1");
  sim_recorder_summary_scalar (rec, "step_time", res->step_time, "s");
  sim_recorder_summary_scalar (rec, "tokens_per_step", res->tokens_per_step, "token");
  sim_recorder_summary_scalar (rec, "tokens_per_s", res->tokens_per_s, "token/s");
  sim_recorder_summary_scalar (rec, "model_flops", res->model_flops, "FLOP");
  sim_recorder_summary_scalar (rec, "hardware_flops", res->hardware_flops, "FLOP");
  sim_recorder_summary_scalar (rec, "peak_flops_per_gpu", res->peak_flops, "FLOP/s");
  sim_recorder_summary_scalar (rec, "mfu", res->mfu, "1");
  sim_recorder_summary_scalar (rec, "hfu", res->hfu, "1");
  sim_recorder_summary_scalar (rec, "exposed_communication", res->exposed_comm, "s");
  sim_recorder_summary_scalar (rec, "exposed_all_to_all", res->exposed_all_to_all, "s");
  sim_recorder_summary_scalar (rec, "ep_rows_slowest", res->ep_rows_slowest, "1");
  sim_recorder_summary_scalar (rec, "ep_rows_mean", res->ep_rows_mean, "1");
  sim_recorder_summary_scalar (rec, "ep_rows_least", res->ep_rows_least, "1");
  sim_recorder_summary_scalar (rec, "offload_stall", res->offload_stall, "s");
  sim_recorder_summary_scalar (rec, "pipeline_bubble", res->pipeline_bubble, "s");
  sim_recorder_summary_scalar (rec, "steps", res->steps, "1");
  sim_recorder_summary_scalar (rec, "step_time_min", res->step_time_min, "s");
  sim_recorder_summary_scalar (rec, "step_time_median", res->step_time_median, "s");
  sim_recorder_summary_scalar (rec, "step_time_p99", res->step_time_p99, "s");
  sim_recorder_summary_scalar (rec, "model_state_bytes", res->state_bytes, "B");
  sim_recorder_summary_scalar (rec, "model_state_bytes_host", res->state_host, "B");
  sim_recorder_summary_scalar (rec, "model_state_bytes_nvme", res->state_nvme, "B");
  sim_recorder_summary_text (rec, "data_parallel", model_parallel_mode_name (sc->par.mode));
  sim_recorder_summary_text (rec, "framework", model_framework_name (sc->stack.framework.kind));
  sim_recorder_summary_text (rec, "loss", model_framework_loss_name (sc->stack.framework.loss));
  sim_recorder_summary_text (rec, "attention", model_stack_attention_name (&sc->stack));
  if (sc->arch->n_experts > 0) /* [moe] dispatcher (expert_parallel.h) */
    sim_recorder_summary_text (rec, "moe_dispatcher",
                               model_ep_dispatcher_name (sc->par.moe_dispatcher));
  sim_recorder_summary_scalar (rec, "memory_after_load", res->load_bytes, "B");
  /* steady state (peak_allocated … need_device) against the whole process (models/plan/simulate.h) */
  sim_recorder_summary_scalar (rec, "load_peak", res->load_peak, "B");
  sim_recorder_summary_scalar (rec, "lifetime_allocated", res->lifetime_allocated, "B");
  sim_recorder_summary_scalar (rec, "lifetime_device_used", res->lifetime_device, "B");
  sim_recorder_summary_scalar (rec, "process_steps", res->process_steps, "1");
  sim_recorder_summary_scalar (rec, "first_step_allocated", res->first_step_allocated, "B");
  sim_recorder_summary_scalar (rec, "first_step_reserved", res->first_step_reserved, "B");
  sim_recorder_summary_scalar (rec, "first_step_oom", res->first_step_oom, "1");
  sim_recorder_summary_scalar (rec, "peak_allocated", res->peak_allocated, "B");
  sim_recorder_summary_scalar (rec, "peak_reserved", res->peak_reserved, "B");
  sim_recorder_summary_scalar (rec, "cuda_context", res->cuda_context, "B");
  sim_recorder_summary_scalar (rec, "device_used", res->device_used, "B");
  /* what the step as planned needs on this GPU (= the measured figures when it fits); the
   * least memory that fits where it was searched (a run's file); the shortfall, how far
   * short the GPU is, is the figure the "capacity … OOM (… short)" line prints: from the
   * least memory that fits where searched, else (a batch's rows, fit's candidates: "OOM by
   * …") from the whole run's demand here (lifetime device-used: loading and the first step
   * can need more than the steady state) */
  sim_recorder_summary_scalar (rec, "need_allocated", res->need_allocated, "B");
  sim_recorder_summary_scalar (rec, "need_reserved", res->need_reserved, "B");
  sim_recorder_summary_scalar (rec, "need_device", res->need_device, "B");
  sim_recorder_summary_scalar (rec, "fits_from", res->fits_from, "B");
  sim_recorder_summary_scalar (rec, "fits_from_short", res->fits_from_short, "B");
  double over = res->fits_from > 0 ? res->fits_from : res->lifetime_device;
  sim_recorder_summary_scalar (rec, "shortfall", MAX (0.0, over - res->capacity), "B");
  sim_recorder_summary_scalar (rec, "capacity", res->capacity, "B");
  sim_recorder_summary_scalar (rec, "fits", res->fits ? 1 : 0, "1");
  sim_recorder_summary_scalar (rec, "gpu_fits", res->gpu_fits ? 1 : 0, "1");
  sim_recorder_summary_scalar (rec, "peak_rank", res->worst_rank, "1");
  /* pipeline stages: the worst and each one's peak (print_stages) */
  if (sc->par.pp > 1 && res->rank_peak_allocated != NULL)
    {
      sim_recorder_summary_scalar (rec, "pp_stages", sc->par.pp, "1");
      sim_recorder_summary_scalar (rec, "peak_stage", stage_of (sc, res->worst_rank), "1");
      /* under a non-default order, where stage s's first GPU is (s · this; plot --stage) */
      if (sc->par.order != MODEL_MESH_ORDER_TP_CP_EP_DP_PP)
        {
          ModelMesh mesh;
          model_parallel_mesh (&sc->par, &mesh);
          sim_recorder_summary_scalar (rec, "pp_rank_stride",
                                       model_mesh_stride (&mesh, MODEL_MESH_PP), "1");
        }
      for (guint st = 0; st < sc->par.pp; st++)
        {
          double alloc, dev;
          stage_peak (sc, res, st, &alloc, &dev);
          g_autofree char *na = g_strdup_printf ("stage%u_peak_allocated", st);
          g_autofree char *nd = g_strdup_printf ("stage%u_device_used", st);
          sim_recorder_summary_scalar (rec, na, alloc, "B");
          sim_recorder_summary_scalar (rec, nd, dev, "B");
        }
    }
  sim_recorder_summary_scalar (rec, "peak_time", res->peak_time, "s");
  sim_recorder_summary_text (rec, "peak_task", res->peak_task ? res->peak_task : "");
  /* OOM diagnosis (zeros and empty text when the step fits the allocator). */
  sim_recorder_summary_scalar (rec, "oom", res->oom ? 1 : 0, "1");
  sim_recorder_summary_scalar (rec, "oom_time", res->oom_time, "s");
  sim_recorder_summary_text (rec, "oom_task", res->oom_task ? res->oom_task : "");
  sim_recorder_summary_scalar (rec, "oom_requested", res->oom_requested, "B");
  sim_recorder_summary_text (rec, "oom_category",
                             res->oom ? model_ledger_category_name (res->oom_category) : "");
  sim_recorder_summary_scalar (rec, "oom_reserved", res->oom_reserved, "B");
  g_autofree char *holders = oom_holders_text (res);
  sim_recorder_summary_text (rec, "oom_holders", holders);
  /* the OOM's padded batch, when a padded order ran out ([training] padding = longest) */
  sim_recorder_summary_scalar (rec, "oom_padded_batch", res->oom_padded_batch, "1");
  sim_recorder_summary_scalar (rec, "oom_padded_seq_len", res->oom_padded_seq_len, "1");
  sim_recorder_summary_scalar (rec, "padded_oom_sequences", res->padded_oom_sequences, "1");
  for (guint c = 0; c < MODEL_N_MEM; c++)
    {
      g_autofree char *name = g_strdup_printf ("peak_%s", model_ledger_category_name (c));
      sim_recorder_summary_scalar (rec, name, res->peak_mix[c], "B");
    }
  for (guint k = 0; k < MODEL_N_TASK_KINDS; k++)
    {
      g_autofree char *name = g_strdup_printf ("time_%s", model_plan_task_kind_name (k));
      sim_recorder_summary_scalar (rec, name, res->time_by_kind[k], "s");
    }
  fill_host_summary (rec, sc, res);
  cli_training_fill_summary (rec, sc, res);
  cli_report_fill_ops (rec, res);
  for (guint r = 0; r < res->n_ranks; r++)
    {
      g_autofree char *a = g_strdup_printf ("ranks/rank%u/peak_allocated", r);
      g_autofree char *d = g_strdup_printf ("ranks/rank%u/device_used", r);
      sim_recorder_summary_scalar (rec, a, res->rank_peak_allocated[r], "B");
      sim_recorder_summary_scalar (rec, d, res->rank_device_used[r], "B");
    }
}
