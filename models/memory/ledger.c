/* models/memory/ledger.c — per-rank memory ledger with an allocator model per rank; see ledger.h.
 *
 * Invariants: `live` holds exactly the allocated, not yet released handles of a rank; each
 * Buffer keeps the allocator blocks of its tensors, so releasing a handle returns exactly
 * those blocks. The OOM snapshot is taken once, at the first OOM, before the failing
 * request is granted. Units: bytes, seconds.
 */
#include "config.h"
#include "models/memory/ledger.h"
#include "sim/slots.h"

#include <math.h>
#include <string.h>

static const char *const category_names[MODEL_N_MEM] = {
  "weights",     "master_weights", "gradients",       "optimizer_state", "activations",
  "workspace",   "comm_buffers",   "offload_staging", "lora",            "quantization",
};

typedef struct _Buffer Buffer;

typedef struct
{
  gboolean happened;
  double time, requested, reserved, peak_reserved, peak_allocated;
  ModelMemCategory category;
  char *task;
  double mix[MODEL_N_MEM];
  ModelLedgerHolder holders[MODEL_LEDGER_MAX_HOLDERS];
  guint n_holders;
} OomRecord;

typedef struct
{
  double current[MODEL_N_MEM];
  double category_peak[MODEL_N_MEM];
  double total;
  double peak;
  double peak_time;
  double peak_mix[MODEL_N_MEM];
  const char *peak_task; /* in the ledger's labels, or a literal */
  guint series[MODEL_N_MEM];
  guint series_total;
  guint series_reserved;
  /* handle → Buffer (NULL: not live): live[h − live_base] for live_base ≤ h < live_base +
   * n_live_slots. A plan numbers each rank's handles in one run of ids (its initial states,
   * then its step's buffers), so a table over the rank's span of handles (a hash table's
   * insert and steal were 3 % of a simulation; one from handle 0 took every earlier rank's
   * span too: 6 GB for 512 ranks without rank classes). What is read in table order gives
   * the same result in any order (the allocator's free blocks are sorted; the OOM snapshot
   * sorts). */
  Buffer **live;
  guint live_base;
  guint n_live_slots;
  ModelAllocator *alloc;
  double moved_peak_reserved; /* B: the high-water mark of allocators moved out of this rank */
  OomRecord oom;
} RankLedger;

struct _Buffer
{
  guint handle;
  ModelMemCategory category;
  double bytes;
  const char *task; /* label of the allocating task, in the owning ledger's labels */
  guint n_blocks;
  guint *blocks;    /* n_blocks allocator block ids, one per tensor: &block for one tensor
                     * (most buffers), else an array of their own */
  guint block;
  SimSlots *pool;   /* the owning ledger's buffers, and the slot there */
  guint slot;
};

struct _ModelLedger
{
  guint n_ranks;
  double capacity;  /* B available to each allocator (INFINITY: unlimited) */
  RankLedger *ranks;
  SimRecorder *rec;
  gboolean used;    /* an allocation happened: the allocators are fixed */
  /* Copies of the task labels the buffers and peaks name, kept for the ledger's life (a
   * replay's ledger books a few hundred buffers: one chunk, not a heap string each). */
  GStringChunk *labels;
  const char *last_label; /* the label last copied (the caller's pointer, not read but to */
  const char *last_copy;  /* compare) and its copy in `labels`; NULL: none */
  /* The Buffers of every rank (a slot pool, sim/slots.h: no heap block per buffer). */
  SimSlots buffers;
};

/* The live buffer `handle` of rl, or NULL. */
static inline Buffer *
live_get (const RankLedger *rl, guint handle)
{
  /* unsigned: a handle below the base wraps to a large index */
  return handle - rl->live_base < rl->n_live_slots ? rl->live[handle - rl->live_base] : NULL;
}

/* Takes live buffer `handle` out of rl's table: the buffer, or NULL if it was not live. */
static inline Buffer *
live_take (RankLedger *rl, guint handle)
{
  Buffer *b = live_get (rl, handle);
  if (b != NULL)
    rl->live[handle - rl->live_base] = NULL;
  return b;
}

/* Puts b in rl's table under b->handle, which must not be live. */
static void
live_put (RankLedger *rl, Buffer *b)
{
  guint h = b->handle;
  if (rl->n_live_slots == 0)
    rl->live_base = h;
  if (h < rl->live_base)
    {
      /* the span grows down to h, with as much room again below it (halving the moves) */
      guint end = rl->live_base + rl->n_live_slots;
      guint base = h - MIN (h, MAX (64u, rl->n_live_slots));
      Buffer **v = g_new0 (Buffer *, end - base);
      memcpy (v + (rl->live_base - base), rl->live, rl->n_live_slots * sizeof (Buffer *));
      g_free (rl->live);
      rl->live = v;
      rl->live_base = base;
      rl->n_live_slots = end - base;
    }
  else if (h - rl->live_base >= rl->n_live_slots)
    {
      guint n = MAX (h - rl->live_base + 1, MAX (64u, 2 * rl->n_live_slots));
      rl->live = g_renew (Buffer *, rl->live, n);
      memset (rl->live + rl->n_live_slots, 0, (n - rl->n_live_slots) * sizeof (Buffer *));
      rl->n_live_slots = n;
    }
  g_assert (rl->live[h - rl->live_base] == NULL);
  rl->live[h - rl->live_base] = b;
}

/* A copy of `label` in the ledger's labels (NULL stays NULL): the last copy made when the
 * caller passes the same string again (a task's allocations pass its label one after
 * another; the pointer alone is not trusted: a freed label's storage may hold another). */
static const char *
ledger_label (ModelLedger *ledger, const char *label)
{
  if (label == NULL)
    return NULL;
  if (label != ledger->last_label || strcmp (label, ledger->last_copy) != 0)
    {
      ledger->last_label = label;
      ledger->last_copy = g_string_chunk_insert (ledger->labels, label);
    }
  return ledger->last_copy;
}

/* A Buffer in a new slot of the ledger's pool, a copy of *init with its pool and slot (and
 * its blocks at &block when init's are NULL or init's own). */
static Buffer *
buffer_new (ModelLedger *ledger, const Buffer *init)
{
  guint slot;
  Buffer *b = sim_slots_take (&ledger->buffers, &slot);
  *b = *init;
  b->pool = &ledger->buffers;
  b->slot = slot;
  if (init->blocks == NULL || init->blocks == &init->block)
    b->blocks = &b->block;
  return b;
}

/* Frees what b owns and gives its slot back. */
static void
buffer_free (Buffer *b)
{
  if (b->blocks != &b->block)
    g_free (b->blocks);
  sim_slots_give (b->pool, b->slot);
}

const char *
model_ledger_category_name (ModelMemCategory category)
{
  g_return_val_if_fail (category < MODEL_N_MEM, NULL);
  return category_names[category];
}

ModelLedger *
model_ledger_new (guint n_ranks, SimRecorder *rec)
{
  return model_ledger_new_named (n_ranks, NULL, rec);
}

ModelLedger *
model_ledger_new_named (guint n_ranks, const guint *names, SimRecorder *rec)
{
  g_return_val_if_fail (n_ranks > 0, NULL);
  ModelLedger *l = g_new0 (ModelLedger, 1);
  l->n_ranks = n_ranks;
  l->capacity = INFINITY;
  l->ranks = g_new0 (RankLedger, n_ranks);
  l->rec = rec;
  l->labels = g_string_chunk_new (4096);
  sim_slots_init_raw (&l->buffers, sizeof (Buffer), 64); /* buffer_new copies a whole Buffer */
  for (guint r = 0; r < n_ranks; r++)
    {
      l->ranks[r].alloc = model_allocator_new (INFINITY, FALSE);
    }
  if (rec == NULL)
    return l;
  /* All categories are created up front, in enum order, so every rank's memory group has
   * the same columns in the same order (stacked plots, DESIGN §8). */
  for (guint r = 0; r < n_ranks; r++)
    {
      guint name = names != NULL ? names[r] : r;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        {
          g_autofree char *path = g_strdup_printf ("rank%u/memory/%s", name, category_names[c]);
          l->ranks[r].series[c] = sim_recorder_series (rec, path, "B");
          sim_recorder_set (rec, l->ranks[r].series[c], 0.0, 0.0);
        }
      g_autofree char *path = g_strdup_printf ("rank%u/allocated", name);
      l->ranks[r].series_total = sim_recorder_series (rec, path, "B");
      sim_recorder_set (rec, l->ranks[r].series_total, 0.0, 0.0);
      g_autofree char *rpath = g_strdup_printf ("rank%u/reserved", name);
      l->ranks[r].series_reserved = sim_recorder_series (rec, rpath, "B");
      sim_recorder_set (rec, l->ranks[r].series_reserved, 0.0, 0.0);
    }
  return l;
}

void
model_ledger_free (ModelLedger *ledger)
{
  if (ledger == NULL)
    return;
  for (guint r = 0; r < ledger->n_ranks; r++)
    {
      for (guint h = 0; h < ledger->ranks[r].n_live_slots; h++)
        if (ledger->ranks[r].live[h] != NULL)
          buffer_free (ledger->ranks[r].live[h]);
      g_free (ledger->ranks[r].live);
      model_allocator_free (ledger->ranks[r].alloc);
      g_free (ledger->ranks[r].oom.task);
      for (guint i = 0; i < ledger->ranks[r].oom.n_holders; i++)
        g_free ((char *) ledger->ranks[r].oom.holders[i].task);
    }
  g_free (ledger->ranks);
  g_string_chunk_free (ledger->labels);
  sim_slots_clear (&ledger->buffers); /* after the live tables gave their buffers back */
  g_free (ledger);
}

static void
change (ModelLedger *ledger, guint rank, ModelMemCategory category, double delta, double time,
        const char *task_label)
{
  RankLedger *rl = &ledger->ranks[rank];
  rl->current[category] += delta;
  rl->total += delta;
  /* Tolerate rounding residue of sums of doubles, never a real over-free. */
  /* MAX, not fmax (a libm call each change): delta is finite */
  g_assert (rl->current[category] >= -1e-6 * MAX (1.0, fabs (delta)));
  if (rl->current[category] < 0)
    rl->current[category] = 0;
  if (rl->current[category] > rl->category_peak[category])
    rl->category_peak[category] = rl->current[category];
  if (rl->total > rl->peak)
    {
      rl->peak = rl->total;
      rl->peak_time = time;
      for (guint c = 0; c < MODEL_N_MEM; c++)
        rl->peak_mix[c] = rl->current[c];
      rl->peak_task = ledger_label (ledger, task_label);
    }
  if (ledger->rec != NULL)
    {
      sim_recorder_set (ledger->rec, rl->series[category], time, rl->current[category]);
      sim_recorder_set (ledger->rec, rl->series_total, time, rl->total);
      /* what the allocator can hold: an OOM's overshoot is demand, not reserved memory */
      sim_recorder_set (ledger->rec, rl->series_reserved, time,
                        MIN (model_allocator_reserved (rl->alloc), ledger->capacity));
    }
}

void
model_ledger_set_allocator (ModelLedger *ledger, double capacity, gboolean expandable_segments)
{
  g_return_if_fail (ledger != NULL && !ledger->used && capacity > 0);
  ledger->capacity = capacity;
  for (guint r = 0; r < ledger->n_ranks; r++)
    {
      model_allocator_free (ledger->ranks[r].alloc);
      ledger->ranks[r].alloc = model_allocator_new (capacity, expandable_segments);
    }
}

/* Releases every buffer still live on `src` (freed blocks merge with their free neighbours,
 * so once all are free each segment is one free block whatever the order) and moves its
 * allocator to `dst`, leaving `src` a fresh one; `src` keeps its reserved high-water mark
 * (model_ledger_peak_reserved). */
static void
move_allocator (RankLedger *dst, RankLedger *src)
{
  for (guint k = 0; k < src->n_live_slots; k++)
    {
      Buffer *b = live_take (src, src->live_base + k);
      if (b == NULL)
        continue;
      for (guint i = 0; i < b->n_blocks; i++)
        model_allocator_release (src->alloc, b->blocks[i]);
      buffer_free (b);
    }
  for (guint c = 0; c < MODEL_N_MEM; c++)
    src->current[c] = 0;
  src->total = 0;
  src->moved_peak_reserved = MAX (src->moved_peak_reserved,
                                  model_allocator_peak_reserved (src->alloc));
  model_allocator_free (dst->alloc);
  dst->alloc = src->alloc;
  src->alloc = model_allocator_new (INFINITY, FALSE);
}

void
model_ledger_inherit_allocators (ModelLedger *to, ModelLedger *from)
{
  g_return_if_fail (to != NULL && from != NULL && to != from && !to->used);
  g_return_if_fail (to->n_ranks == from->n_ranks);
  for (guint r = 0; r < from->n_ranks; r++)
    move_allocator (&to->ranks[r], &from->ranks[r]);
  to->capacity = from->capacity;
}

/* The carried buffers of `dst` are its state at time 0: peak, category peaks and series. */
static void
start_with_carried (ModelLedger *ledger, guint rank)
{
  RankLedger *rl = &ledger->ranks[rank];
  rl->peak = rl->total;
  rl->peak_time = 0;
  memcpy (rl->peak_mix, rl->current, sizeof rl->peak_mix);
  memcpy (rl->category_peak, rl->current, sizeof rl->category_peak);
  rl->peak_task = "carried over";
  if (ledger->rec == NULL)
    return;
  for (guint c = 0; c < MODEL_N_MEM; c++)
    sim_recorder_set (ledger->rec, rl->series[c], 0.0, rl->current[c]);
  sim_recorder_set (ledger->rec, rl->series_total, 0.0, rl->total);
  sim_recorder_set (ledger->rec, rl->series_reserved, 0.0,
                    MIN (model_allocator_reserved (rl->alloc), ledger->capacity));
}

void
model_ledger_continue (ModelLedger *to, ModelLedger *from, const guint *keep_from,
                       const guint *keep_to, guint n_keep)
{
  g_return_if_fail (to != NULL && from != NULL && to != from && !to->used);
  g_return_if_fail (to->n_ranks == from->n_ranks);
  g_return_if_fail (n_keep == 0 || (keep_from != NULL && keep_to != NULL));
  for (guint r = 0; r < from->n_ranks; r++)
    {
      RankLedger *src = &from->ranks[r], *dst = &to->ranks[r];
      for (guint i = 0; i < n_keep; i++)
        {
          guint h = keep_from[r * n_keep + i], nh = keep_to[r * n_keep + i];
          Buffer *old = h != 0 && nh != 0 ? live_take (src, h) : NULL;
          if (old == NULL)
            continue;
          src->current[old->category] -= old->bytes;
          src->total -= old->bytes;
          /* into `to`'s pool and labels (`from` may be freed first) */
          Buffer *b = buffer_new (to, old);
          b->handle = nh;
          b->task = ledger_label (to, old->task);
          sim_slots_give (old->pool, old->slot);
          live_put (dst, b);
          dst->current[b->category] += b->bytes;
          dst->total += b->bytes;
        }
      move_allocator (dst, src);
      /* the kept buffers' blocks stay allocated in the allocator that moved with them */
      model_allocator_reset_peak (dst->alloc);
      start_with_carried (to, r);
    }
  to->capacity = from->capacity;
  to->used = TRUE;
}

gboolean
model_ledger_live (const ModelLedger *ledger, guint rank, guint handle)
{
  g_return_val_if_fail (rank < ledger->n_ranks, FALSE);
  return live_get (&ledger->ranks[rank], handle) != NULL;
}

static gint
holder_cmp (gconstpointer a, gconstpointer b)
{
  const Buffer *x = *(Buffer *const *) a, *y = *(Buffer *const *) b;
  if (x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  return x->handle < y->handle ? -1 : (x->handle > y->handle);
}

/* The first OOM of a rank: the tensor that failed (`bytes` of `category`), the reserved bytes
 * before it and their high-water mark, and what was live, largest first (sorted, so the live
 * table's order never shows). `partial` (may be NULL) is the buffer being allocated when
 * the tensors before the failing one are already granted: they count as live, under
 * `partial_bytes`. */
static void
record_oom (RankLedger *rl, ModelMemCategory category, double bytes, const Buffer *partial,
            double partial_bytes, double reserved, double peak_reserved, double time)
{
  OomRecord *o = &rl->oom;
  o->happened = TRUE;
  o->time = time;
  o->requested = bytes;
  o->category = category;
  o->reserved = reserved;
  o->peak_reserved = MAX (peak_reserved, reserved);
  o->peak_allocated = MAX (rl->peak, rl->total + partial_bytes);
  o->task = g_strdup (partial->task);
  memcpy (o->mix, rl->current, sizeof o->mix);
  g_autoptr (GPtrArray) all = g_ptr_array_new ();
  for (guint h = 0; h < rl->n_live_slots; h++)
    if (rl->live[h] != NULL)
      g_ptr_array_add (all, rl->live[h]);
  Buffer granted = { 0 };
  if (partial_bytes > 0)
    {
      granted = *partial;
      granted.bytes = partial_bytes;
      o->mix[category] += partial_bytes;
      g_ptr_array_add (all, &granted);
    }
  g_ptr_array_sort (all, holder_cmp);
  for (guint i = 0; i < all->len && i < MODEL_LEDGER_MAX_HOLDERS; i++)
    {
      const Buffer *b = g_ptr_array_index (all, i);
      o->holders[i] = (ModelLedgerHolder){ g_strdup (b->task), b->category, b->bytes };
      o->n_holders++;
    }
}

/* model_ledger_whole_bytes, inline where it is exact already: a whole number below 2^63 is
 * its own result (there near = bytes): most sizes, one a tensor. */
static inline double
whole_bytes (double bytes)
{
  if (bytes > 0 && bytes < 9.2e18 && (double) (guint64) bytes == bytes)
    return bytes;
  return model_ledger_whole_bytes (bytes);
}

double
model_ledger_whole_bytes (double bytes)
{
  double near = nearbyint (bytes);
  return fabs (bytes - near) <= 1e-12 * fabs (bytes) ? near : ceil (bytes);
}

void
model_ledger_alloc_tensors (ModelLedger *ledger, guint rank, ModelMemCategory category,
                            const double *sizes, guint n_tensors, ModelAllocStream stream,
                            guint handle, double time, const char *task_label)
{
  g_return_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM);
  g_return_if_fail (stream < MODEL_N_ALLOC_STREAMS);
  g_return_if_fail (handle > 0 && n_tensors > 0 && sizes != NULL);
  RankLedger *rl = &ledger->ranks[rank];
  ledger->used = TRUE;
  for (guint i = 0; i < n_tensors; i++)
    g_return_if_fail (sizes[i] > 0 && isfinite (sizes[i]));
  guint slot;
  Buffer *b = sim_slots_take (&ledger->buffers, &slot); /* every field set below */
  b->handle = handle;
  b->category = category;
  b->bytes = 0; /* the sum of its tensors', set once all are granted */
  b->task = ledger_label (ledger, task_label);
  b->n_blocks = n_tensors;
  b->blocks = n_tensors > 1 ? g_new (guint, n_tensors) : &b->block;
  b->pool = &ledger->buffers;
  b->slot = slot;
  double bytes = 0; /* bytes of the tensors before tensor i, already allocated */
  for (guint i = 0; i < n_tensors; i++)
    {
      gboolean over = FALSE;
      double size = whole_bytes (sizes[i]);
      guint id = model_allocator_malloc_on (rl->alloc, size, stream, &over);
      /* PyTorch raises on the tensor that does not fit, with the ones before it granted */
      if (over && !rl->oom.happened)
        {
          double before, high;
          model_allocator_before_last (rl->alloc, &before, &high);
          record_oom (rl, category, size, b, bytes, before, high, time);
        }
      bytes += size;
      b->blocks[i] = id;
    }
  b->bytes = bytes;
  live_put (rl, b);
  change (ledger, rank, category, bytes, time, task_label);
}

void
model_ledger_alloc (ModelLedger *ledger, guint rank, ModelMemCategory category, double bytes,
                    guint handle, double time, const char *task_label)
{
  g_return_if_fail (bytes > 0 && isfinite (bytes));
  model_ledger_alloc_tensors (ledger, rank, category, &bytes, 1, MODEL_ALLOC_STREAM_COMPUTE,
                              handle, time, task_label);
}

void
model_ledger_release (ModelLedger *ledger, guint rank, guint handle, double time,
                      const char *task_label)
{
  g_return_if_fail (rank < ledger->n_ranks);
  RankLedger *rl = &ledger->ranks[rank];
  Buffer *b = live_take (rl, handle);
  g_assert (b != NULL);
  ModelMemCategory category = b->category;
  double bytes = b->bytes;
  if (b->n_blocks == 1)
    model_allocator_release (rl->alloc, b->block); /* most buffers: one call less */
  else
    model_allocator_release_n (rl->alloc, b->blocks, b->n_blocks);
  buffer_free (b);
  change (ledger, rank, category, -bytes, time, task_label);
}

guint
model_ledger_n_ranks (const ModelLedger *ledger)
{
  return ledger->n_ranks;
}

double
model_ledger_current (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].current[category];
}

double
model_ledger_current_total (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].total;
}

double
model_ledger_category_peak (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].category_peak[category];
}

double
model_ledger_peak (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].peak;
}

double
model_ledger_peak_time (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].peak_time;
}

const char *
model_ledger_peak_task (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, NULL);
  return ledger->ranks[rank].peak_task;
}

double
model_ledger_peak_mix (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].peak_mix[category];
}

double
model_ledger_current_reserved (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return model_allocator_reserved (ledger->ranks[rank].alloc);
}

double
model_ledger_peak_reserved (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  /* Never below what was allocated: a request beyond any GPU is booked by the allocator at
   * MODEL_ALLOCATOR_MAX_REQUEST, while the ledger keeps its real size. */
  const RankLedger *rl = &ledger->ranks[rank];
  return MAX (MAX (model_allocator_peak_reserved (rl->alloc), rl->moved_peak_reserved),
              model_ledger_peak (ledger, rank));
}

gboolean
model_ledger_oom (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, FALSE);
  return ledger->ranks[rank].oom.happened;
}

double
model_ledger_oom_time (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].oom.time;
}

const char *
model_ledger_oom_task (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, NULL);
  return ledger->ranks[rank].oom.task;
}

double
model_ledger_oom_requested (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].oom.requested;
}

double
model_ledger_oom_reserved (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].oom.reserved;
}

double
model_ledger_oom_mix (const ModelLedger *ledger, guint rank, ModelMemCategory category)
{
  g_return_val_if_fail (rank < ledger->n_ranks && category < MODEL_N_MEM, 0);
  return ledger->ranks[rank].oom.mix[category];
}

guint
model_ledger_oom_n_holders (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].oom.n_holders;
}

const ModelLedgerHolder *
model_ledger_oom_holder (const ModelLedger *ledger, guint rank, guint i)
{
  g_return_val_if_fail (rank < ledger->n_ranks, NULL);
  g_return_val_if_fail (i < ledger->ranks[rank].oom.n_holders, NULL);
  return &ledger->ranks[rank].oom.holders[i];
}

ModelMemCategory
model_ledger_oom_category (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, MODEL_MEM_WORKSPACE);
  return ledger->ranks[rank].oom.category;
}

double
model_ledger_oom_peak_reserved (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].oom.peak_reserved;
}

double
model_ledger_oom_peak_allocated (const ModelLedger *ledger, guint rank)
{
  g_return_val_if_fail (rank < ledger->n_ranks, 0);
  return ledger->ranks[rank].oom.peak_allocated;
}
