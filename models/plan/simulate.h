/* models/plan/simulate.h — simulates one training step end to end and condenses the result.
 *
 * One call (model_simulate) takes the architecture, the technique stack, the parallel layout
 * and the cluster (node type, node count, fabric, stragglers, kernel jitter), builds the plan
 * (models/plan/plan.h), the cluster on an engine and fluid (hardware/, sim/; built once per
 * call and reset to a new one's state before each replay), replays the plan with the
 * executor and reads the ledgers. Memory figures per rank:
 * allocated (the ledger's peak, PyTorch's max_memory_allocated), reserved (what the caching
 * allocator model holds, models/memory/allocator.h: max_memory_reserved) and device-used
 * (reserved + CUDA context: what nvidia-smi shows). After an OOM these are the values when it is
 * raised; the need_* figures keep what the step as planned would take (the replay goes on). MFU and HFU follow Korthikanti et al.
 * 2022 §6: FLOPs per step ÷ (step time × GPUs × peak FLOP/s of the compute dtype).
 * With steps = K the step is replayed K times, each with its own jitter draw (step 0 from
 * seed itself, step k from a mix of seed and k, so that two seeds share no step):
 * step_time is the median, with min and p99 beside it; memory, series and
 * tasks come from the first replay. With offloading, host DRAM and NVMe are ledgers per node
 * (models/memory/host_ledger.h): peak and capacity of the worst node, and the verdict `fits`
 * holds only if the GPU, the host and the NVMe all fit. A paged optimizer (models/plan/plan_paged.h) is simulated
 * twice: a first replay without spill finds the peak of everything else, and the states
 * that do not fit beside it are paged out to host DRAM in the run that is reported.
 * The command layer (cli/scenario/sim_input.h) only turns a scenario file into a ModelSimInput.
 */
#pragma once

#include <glib.h>
#include "hardware/cluster.h"
#include "models/arch/arch.h"
#include "models/memory/ledger.h"
#include "models/parallel/parallel.h"
#include "models/plan/op_times.h"
#include "models/plan/plan.h"
#include "models/stack/stack.h"
#include "sim/recorder.h"

/* A rank whose kernels run slower than the rest (a straggler). */
/* When a run's optimizer states come to the GPU (ModelSimResult.first_step_states). */
typedef enum
{
  MODEL_STATES_AT_FIRST_STEP, /* made by the first optimizer step (torch.optim, bitsandbytes) */
  MODEL_STATES_FROM_LOAD,     /* present from the load: DeepSpeed's ZeRO, paged states,
                               * optimizer_in_backward (plan.h model_plan_creation_task) */
  MODEL_STATES_NOT_ON_GPU,    /* none on the GPU (offloaded optimizer, none to keep) */
  MODEL_STATES_PAGED,         /* a paged optimizer spilling some (plan_paged.h): those that
                               * fit on the GPU from the load, the rest in host DRAM, paged
                               * in for each optimizer step */
} ModelStatesMade;

typedef struct
{
  guint rank;
  double factor; /* >= 1: compute time multiplier of that rank's kernels */
} ModelSimSlowdown;

/* What one simulation needs; every pointer is borrowed for the duration of the call. */
typedef struct
{
  const ModelArch *arch;
  const ModelStack *stack;
  const ModelParallel *par;      /* degree = all GPUs of the cluster */
  const HwNodeSpec *node;        /* GPU type, GPUs per node, host memory, NVMe */
  guint n_nodes;
  const HwFabricSpec *fabric;
  guint steps;                   /* steps simulated (each with its own jitter draw); 0 reads as 1 */
  guint32 seed;                  /* seed of the kernel-time jitter (step k > 0: a mix of both) */
  double kernel_jitter;          /* coefficient of variation of kernel compute times, >= 0 */
  const ModelSimSlowdown *slowdowns; /* n_slowdowns entries, may be NULL when 0 */
  guint n_slowdowns;
  gboolean op_times;             /* collect ModelSimResult.op_times (kernel seconds per op) */
  gboolean all_ranks;            /* TRUE: replay every rank ([run] rank_classes = off);
                                    FALSE: one rank per class of equivalent ranks
                                    (models/plan/rank_classes.h), the same figures */
  gboolean engine_only;          /* TRUE: every replay runs on the engine, also those
                                    model_executor_run_alone would run without it, and
                                    every kernel through the fluid's events
                                    (model_executor_set_on_engine; the same figures;
                                    tests compare the two) */
  gboolean find_fits_from;       /* TRUE: when the GPU's memory is short, also search the
                                    least memory per GPU at which the run fits
                                    (ModelSimResult.fits_from; several more simulations) */
} ModelSimInput;

typedef struct
{
  guint n_ranks;
  double step_time;         /* s */
  double tokens_per_step;   /* all ranks */
  double tokens_per_s;
  double model_flops;       /* FLOP per step, all ranks, no recompute */
  double hardware_flops;    /* FLOP per step, all ranks, with recompute */
  double peak_flops;        /* FLOP/s per GPU at the compute dtype */
  double mfu, hfu;          /* fractions */
  double capacity;          /* B of GPU memory */
  double cuda_context;      /* B */
  double load_bytes;        /* B allocated per rank right after model load and initialisation,
                               before the first forward (model_plan_load_bytes) */
  /* Memory of the worst rank (the highest need_device). Measured figures (what PyTorch and
   * nvidia-smi would report; after an OOM, their values when it is raised, so never above
   * the capacity) and the need of the step as planned (the simulation goes on past an OOM:
   * equal to the measured figures when the step fits). */
  double peak_allocated;    /* B: max_memory_allocated() */
  double peak_reserved;     /* B: max_memory_reserved() */
  double device_used;       /* B: reserved + context, what nvidia-smi shows */
  double need_allocated;    /* B: the step as planned, allocated at its peak */
  double need_reserved;     /* B: the step as planned, reserved at its peak */
  double need_device;       /* B: need_reserved + context; > capacity: OOM by the difference */
  /* Steady state against the whole run (models/plan/simulate.c, "the process"). The
   * figures above are the steady-state step: the second step of the process, whose
   * optimizer states exist from its start, replayed on the caching allocator the first step
   * left (torch.cuda.reset_peak_memory_stats() between the two: reserved starts at what the
   * first step reserved, and only grows). The first step creates PyTorch optimizers' states
   * at its optimizer step (model_plan_creation_task), among the blocks its backward freed:
   * its allocated peak is at most the steady state's, its reserved peak can differ either
   * way. With padded batches the process is those batches (the first of them its first
   * step) and the reported step comes after them. The lifetime adds model loading:
   * load_peak is allocated at the load's peak (model_plan_load_peak_bytes: QLoRA's
   * quantization and fp32-cast transients), on the device as allocated + context (the
   * load's tensors are large: one segment each). */
  guint process_steps;      /* steps of the process replayed, the reported one included */
  double first_step_allocated; /* B: the first step's allocated peak (the highest rank) */
  double first_step_reserved;  /* B: its reserved peak (need, may exceed the capacity) */
  gboolean first_step_oom;  /* a request of the first step failed */
  ModelStatesMade first_step_states; /* when the GPU's optimizer states are made, as modelled
                                      * (plan.h model_plan_creation_task) */
  /* Padded batches ([training] padding = longest, ModelStack.pad_to_longest): before the
   * step, the allocator replays a seeded sample of micro-batches padded to shorter lengths
   * (models/plan/simulate.c "padded batches": padded_sequences sequences of padded_batches
   * batches, the longest, seq_len, last; the optimizer states created by the first and kept
   * through the rest), without emptying its cache, and the step continues the median
   * sequence's process: peak_reserved, need_reserved and device_used are then the step's
   * own on the cache those batches left (reserved only grows unless a cudaMalloc fails),
   * and padded_reserved_min / _max the lowest and highest reserved over all the batches of
   * a sequence, over the sequences (B). All zero when every batch is seq_len long. */
  guint padded_batches, padded_sequences;
  double padded_reserved_min, padded_reserved_max;
  /* Orders whose replay ran out of memory: a request no cached block served and no new
   * segment fitted even after the free cached segments were released. PyTorch raises there,
   * so such an order stops at that batch, its reserved figure is what max_memory_reserved()
   * reads then (never above the capacity less the context), and the run does not fit
   * (gpu_fits FALSE): the OOM below is the first such order's, in its batch
   * oom_padded_batch (1-based) of oom_padded_seq_len tokens. 0 when none. */
  guint padded_oom_sequences;
  double load_peak;         /* B allocated at the peak of model loading */
  double lifetime_allocated;/* B: max(load_peak, every step's allocated need):
                               max_memory_allocated() over the whole process */
  double lifetime_device;   /* B: max(load_peak, every step's reserved need, every padded
                               order's reserved peak) + context */
  guint worst_rank;
  double peak_time;         /* s, when the worst rank peaked */
  char *peak_task;          /* task running then (owned) */
  double peak_mix[MODEL_N_MEM]; /* B per category at that peak */
  double category_peak[MODEL_N_MEM]; /* B, largest value of each category over the step */
  double model_states;      /* B, weights + master + gradients + optimizer states: their
                               category peaks, which coexist during the optimizer step */
  gboolean fits;            /* gpu_fits, host_fits and nvme_fits */
  gboolean gpu_fits;        /* lifetime_device <= capacity and no allocation of any step
                               ran out of memory: the load and every step fit */
  /* B per GPU: with ModelSimInput.find_fits_from and !gpu_fits, the least GPU memory found
   * at which the run's GPU memory suffices (simulated there: gpu_fits holds), a bisection's
   * threshold within MODEL_FITS_FROM_TOLERANCE of a size found short; 0 when not searched
   * or none fits. The caching allocator's fragmentation can make a GPU slightly larger than
   * one that holds the run fall short, so it is the least found, not a bound every larger
   * size keeps. Host memory and NVMe are not part of it (host_fits, nvme_fits). Not
   * lifetime_device: PyTorch's caching allocator frees its cached blocks and retries when
   * cudaMalloc fails (models/memory/allocator.h), so the need reserved on a smaller GPU is
   * lower than on a larger one, and a paged optimizer's spill follows the capacity: the
   * demand on this GPU is not a size that fits. */
  double fits_from;
  double fits_from_short;   /* B: the largest memory per GPU the search found short (at
                               least the capacity); 0 when not searched. fits_from == 0
                               with this > 0: no GPU memory up to HW_GPU_MAX_MEMORY fits */
  double fits_from_island;  /* B: a smaller size the search found to hold the run, below one
                               (fits_from_island_short) that does not: fits_from is then the
                               size from which the sizes 1-8 % above it hold it too; 0: none */
  double fits_from_island_short;
  gboolean fits_from_request_cap; /* none fits because a tensor is over the largest request
                                     the allocator model takes (MODEL_ALLOCATOR_MAX_REQUEST) */
  /* Host DRAM and NVMe of the node with the highest peak (offloading, models/memory/offload.h;
   * zeros and fits without it). */
  gboolean offloads;        /* the stack offloads something */
  guint host_node;
  double host_peak, host_capacity;     /* B */
  double host_peak_mix[MODEL_N_MEM];   /* B per category at the host peak */
  gboolean host_fits;       /* host_peak <= host_capacity */
  double nvme_peak, nvme_capacity;     /* B */
  gboolean nvme_fits;
  /* Offload traffic of rank 0 per step (B), and parameters its host CPU step updated. */
  double offload_h2d, offload_d2h, offload_nvme_read, offload_nvme_write, cpu_step_params;
  double cpu_step_time;     /* s rank 0's host CPU spent in optimizer steps (0 without) */
  /* Paged optimizer (models/plan/plan_paged.h): optimizer-state bytes per rank paged out to host
   * (0 when they fit or the optimizer is not paged; its page-in and page-out are counted in
   * offload_h2d and offload_d2h), and seconds rank 0's migrations took. */
  double paged_spill;       /* B */
  double paged_time;        /* s */
  /* First OOM of the worst rank (the allocator could not serve a request even after
   * releasing its cache): when, in which task, how much was asked, the categories then and
   * the largest live buffers with the tasks that allocated them (largest first). */
  gboolean oom;
  gboolean oom_in_first_step; /* the OOM below is the first step's (the steady state had none) */
  guint oom_padded_batch;     /* > 0: the OOM below is that padded batch's (1-based; the
                               * order stopped there: padded_oom_sequences) */
  guint64 oom_padded_seq_len; /* its length (tokens) */
  double oom_time;          /* s */
  char *oom_task;           /* owned, may be NULL */
  double oom_requested;     /* B: the tensor that did not fit */
  ModelMemCategory oom_category; /* its category */
  double oom_reserved;      /* B reserved just before the request */
  double oom_mix[MODEL_N_MEM];
  guint oom_n_holders;
  ModelLedgerHolder oom_holders[MODEL_LEDGER_MAX_HOLDERS]; /* task strings owned */
  double time_by_kind[MODEL_N_TASK_KINDS]; /* s of rank 0 busy per task kind */
  ModelOpTimes *op_times;   /* with ModelSimInput.op_times, the reported step's kernel
                               seconds per (replayed rank, task kind, op),
                               models/plan/op_times.h (owned); else NULL */
  double exposed_comm;      /* s, the most any rank's comm stream ran while its compute idled */
  double exposed_all_to_all; /* s, the most any rank's expert-parallel collectives (dispatch
                               and combine, stream ep: the all-to-alls and, under etp > 1,
                               the etp all-gathers and reduce-scatters) ran while its compute
                               idled */
  double ep_rows_slowest, ep_rows_mean, ep_rows_least; /* routed rows a MoE layer and
                               micro-batch gives the slowest, the mean and the least loaded
                               expert-parallel rank (model_plan_ep_load); 0 without
                               dispatched experts */
  double compute_busy;      /* fraction of the step a rank's compute stream runs a task, the
                               mean over ranks (the utilisation the power estimate of cli/report/training.h uses) */
  double pipeline_bubble;   /* s, rank 0's pipeline idle time: none of its streams but the
                               pipeline's P2P ones ran (model_executor_pipeline_idle); 0
                               without pipeline stages */
  double offload_stall;     /* s, the most any rank's offload transfers ran while its compute,
                               comm and CPU streams idled (model_executor_exposed_offload) */
  double state_bytes;       /* B of model states per rank (ZeRO Figure 1 quantity), worst rank */
  double state_host;        /* B of model states per rank kept in host DRAM / on NVMe by */
  double state_nvme;        /*   offloading (the most of any rank; 0 without offload) */
  double *rank_peak_allocated; /* B per rank (n_ranks, owned) */
  double *rank_device_used;    /* B per rank (owned; measured, as device_used) */
  guint steps;              /* steps simulated (ModelSimInput.steps, at least 1) */
  double step_time_min, step_time_median, step_time_p99; /* s over the steps */
  guint n_tasks;
  guint64 n_events;
  guint n_alone_replays;    /* replays run without the engine, a single GPU's tasks one after
                               another (models/plan/executor.h model_executor_run_alone; the
                               same figures as on the engine) */
  guint64 n_off_engine;     /* kernels of the engine's replays run off it (models/plan/
                               executor.h model_executor_set_on_engine; the same figures) */
  HwRankShift classes;      /* the rank classes (models/plan/rank_classes.h,
                               hardware/rank_shift.h; the identity with all_ranks or when
                               no symmetry holds): hw_rank_shift_n_reps ranks replayed; rank
                               r's per-rank figures and series are those of its
                               representative hw_rank_shift_rep (&classes, r) */
} ModelSimResult;

/* Simulates `in`; fills `res` (free its members with model_sim_result_clear; zeroed first)
 * and, when `rec` is not NULL, records series, tasks and the summary into it. FALSE + error
 * (G_KEY_FILE_ERROR naming the group and key at fault) when the GPU lacks the stack's compute
 * dtype, the plan cannot be built or the replay does not complete; `res` then holds nothing
 * to free. */
gboolean model_simulate (const ModelSimInput *in, SimRecorder *rec, ModelSimResult *res,
                         GError **error);
void model_sim_result_clear (ModelSimResult *res); /* frees the owned members */

/* Padded batches (models/plan/simulate.c "padded batches"): each of MODEL_SIM_PADDED_SEQUENCES
 * orders replays MODEL_SIM_PADDED_BATCHES drawn lengths, then seq_len. */
#define MODEL_SIM_PADDED_BATCHES 100
#define MODEL_SIM_PADDED_SEQUENCES 5
/* The sequence lengths (tokens) of order `k` (< MODEL_SIM_PADDED_SEQUENCES) of `in`'s padded
 * batches into `lengths` (MODEL_SIM_PADDED_BATCHES + 1 of them, caller's; the last is
 * [training] seq_len): drawn from [max(1, loss_chunks), seq_len] by a GRand seeded from
 * in->seed and k, each rounded up to model_plan_seq_len_multiple (in->arch, in->stack,
 * in->par), never above seq_len. Reads in->arch, stack, par and seed only. */
void model_sim_padded_lengths (const ModelSimInput *in, guint k, guint64 *lengths);

/* ModelSimResult.fits_from's search: bisection over the GPU's memory between a capacity
 * found short and one simulated to hold the run, until the two are within this fraction of
 * the upper one, which is reported. Every capacity tried is one that prints exactly
 * (sim_units_format_up, 2 decimals: 0.01 GiB steps above 1 GiB), so the printed size is the
 * simulated one. */
#define MODEL_FITS_FROM_TOLERANCE (1.0 / 256)

/* The names of ModelTaskKind and ModelStream values, NULL-terminated static tables indexed
 * by the enum (for the HDF5 enums and the charts). */
const char *const *model_sim_kind_names (void);
const char *const *model_sim_stream_names (void);
