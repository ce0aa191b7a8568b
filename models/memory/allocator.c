/* models/memory/allocator.c — PyTorch CUDA caching allocator model; see allocator.h for the rules
 * and their source.
 *
 * Invariants: blocks of a segment tile it in address order (prev/next); no two adjacent
 * blocks of a segment are both free (they are merged on free); every free block is in its
 * pool's `free` list (kept in (size, segment id, offset) order: distinct keys, since blocks
 * of one segment do not overlap), every allocated one is not; reserved = Σ segment sizes
 * (expandable: Σ mapped pages × page size); an expandable page is mapped whenever an
 * allocated block overlaps it (refs > 0).
 * Units: bytes (guint64). Determinism: segments are kept in creation order in a GPtrArray;
 * no hash table is involved.
 */
#include "config.h"
#include "models/memory/allocator-private.h"

#include <math.h>

#define MIN_BLOCK ((guint64) MODEL_ALLOC_MIN_BLOCK)
#define SMALL_SIZE ((guint64) MODEL_ALLOC_SMALL_SIZE)
#define SMALL_BUFFER ((guint64) MODEL_ALLOC_SMALL_BUFFER)
#define LARGE_BUFFER ((guint64) MODEL_ALLOC_LARGE_BUFFER)
#define MIN_LARGE_ALLOC ((guint64) MODEL_ALLOC_MIN_LARGE_ALLOC)
#define ROUND_LARGE ((guint64) MODEL_ALLOC_ROUND_LARGE)

/* ---- sizes (round_size, get_allocation_size) --------------------------------------------- */

static guint64
round_up (guint64 x, guint64 m)
{
  return (x + m - 1) / m * m;
}

static guint64
round_size (guint64 bytes)
{
  return bytes < MIN_BLOCK ? MIN_BLOCK : round_up (bytes, MIN_BLOCK);
}

static guint64
allocation_size (guint64 rounded)
{
  if (rounded <= SMALL_SIZE)
    return SMALL_BUFFER;
  if (rounded < MIN_LARGE_ALLOC)
    return LARGE_BUFFER;
  return round_up (rounded, ROUND_LARGE);
}

/* Requests are booked in whole bytes, at most MODEL_ALLOCATOR_MAX_REQUEST (a larger one
 * cannot fit any GPU: model_allocator_malloc flags it out of memory). */
static guint64
to_bytes (double bytes)
{
  g_assert (bytes > 0);
  /* ceil without the libm call (one a request): x ≤ 2^44 converts exactly; a fraction
   * cut off by the conversion rounds up */
  double x = MIN (bytes, MODEL_ALLOCATOR_MAX_REQUEST);
  guint64 n = (guint64) x;
  return (double) n < x ? n + 1 : n;
}

double
model_allocator_round_size (double bytes)
{
  return (double) round_size (to_bytes (bytes));
}

double
model_allocator_segment_size (double bytes)
{
  return (double) allocation_size (round_size (to_bytes (bytes)));
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

/* Frees what segment s owns beside its slot and its blocks' (expandable: the page arrays). */
static void
segment_clear (Segment *s)
{
  g_clear_pointer (&s->refs, g_array_unref);
  g_clear_pointer (&s->mapped, g_array_unref);
}

/* Gives segment s (out of `segments`) and its blocks back to their pools. */
static void
segment_release (ModelAllocator *a, Segment *s)
{
  for (Block *b = s->first; b != NULL; b = b->next)
    sim_slots_give (&a->block_pool, b->slot);
  segment_clear (s);
  sim_slots_give (&a->segment_pool, s->slot);
}

ModelAllocator *
model_allocator_new (double capacity, gboolean expandable_segments)
{
  g_return_val_if_fail (capacity > 0, NULL);
  ModelAllocator *a = g_new0 (ModelAllocator, 1);
  a->capacity = isfinite (capacity) && capacity < 9.0e18 ? (guint64) capacity : G_MAXUINT64;
  a->expandable = expandable_segments;
  a->segments = g_ptr_array_new ();
  for (int p = 0; p < N_POOLS; p++)
    alloc_free_init (&a->free[p]);
  a->blocks = (SimVec) SIM_VEC_INIT;
  SIM_VEC_PUSH (&a->blocks, Block *, NULL); /* id 0 means "none" */
  /* small blocks of the pools (a ledger makes several allocators per replay), not zeroed:
   * block_new and segment_new set every field */
  sim_slots_init_raw (&a->block_pool, sizeof (Block), 32);
  sim_slots_init_raw (&a->segment_pool, sizeof (Segment), 16);
  return a;
}

void
model_allocator_free (ModelAllocator *alloc)
{
  if (alloc == NULL)
    return;
  /* the pools are freed whole, so no slot is given back one by one */
  for (guint i = 0; i < alloc->segments->len; i++)
    segment_clear (g_ptr_array_index (alloc->segments, i));
  for (int p = 0; p < N_POOLS; p++)
    alloc_free_clear (&alloc->free[p]);
  g_ptr_array_unref (alloc->segments);
  sim_vec_clear (&alloc->blocks);
  sim_slots_clear (&alloc->block_pool);
  sim_slots_clear (&alloc->segment_pool);
  g_free (alloc);
}

/* ---- free lists ---------------------------------------------------------------------------- */

/* Each pool's free blocks are an AllocFreeList (allocator_free.c): buckets of size ranges
 * (8 a power of two, as TLSF's), each a short sorted array (a GSequence while it holds
 * hundreds or more: allocator_free.c), and a bitmap of the non-empty
 * ones, so that a best fit is a search of one bucket or a bit scan, and an insertion or
 * removal moves at most one bucket's blocks. It replaced one array of every free block
 * sorted by (size, segment id, offset), searched from a finger, whose searches and tail moves
 * were most of the allocator model's cost (bench/RESULTS.md, 2026-12-07, h-a); before that
 * a GSequence. Same order, so the same best fit. */

static void
free_insert (ModelAllocator *a, Block *b)
{
  alloc_free_insert (&a->free[b->seg->pool], b);
}

static void
free_remove (ModelAllocator *a, Block *b)
{
  alloc_free_remove (&a->free[b->seg->pool], b);
}

/* ---- segments -------------------------------------------------------------------------------- */

/* A free block (in no list) of segment `seg` at `offset` of `size` bytes between `prev` and
 * `next` (either may be NULL; not linked to it here), from the block pool. Every field is
 * set one by one: a Block built whole and copied in cost twice the instructions (a block is
 * made by most splits, one per request of a replay). */
static inline Block *
block_new (ModelAllocator *a, Segment *seg, guint64 offset, guint64 size, Block *prev,
           Block *next)
{
  guint slot;
  Block *b = sim_slots_take (&a->block_pool, &slot);
  b->offset = offset;
  b->size = size;
  b->allocated = FALSE;
  b->seg_id = seg->id;
  b->slot = slot;
  b->seg = seg;
  b->prev = prev;
  b->next = next;
  b->in_free = FALSE;
  return b;
}

static Segment *
segment_new (ModelAllocator *a, int pool, guint64 size)
{
  guint slot;
  Segment *s = sim_slots_take (&a->segment_pool, &slot);
  *s = (Segment){ .slot = slot };
  s->id = a->next_segment_id++;
  s->pool = pool;
  s->size = size;
  if (a->expandable)
    {
      s->page = POOL_IS_SMALL (pool) ? SMALL_BUFFER : LARGE_BUFFER;
      s->refs = g_array_new (FALSE, TRUE, sizeof (guint32));
      s->mapped = g_array_new (FALSE, TRUE, sizeof (guint8));
    }
  if (size > 0)
    {
      Block *b = block_new (a, s, 0, size, NULL, NULL);
      s->first = s->last = b;
    }
  g_ptr_array_add (a->segments, s);
  return s;
}

static void
note_reserved (ModelAllocator *a)
{
  a->peak_reserved = MAX (a->peak_reserved, a->reserved);
}

/* release_cached_blocks: fully free segments go back to the device; expandable segments
 * unmap every page no allocated block touches. */
static void
release_cached (ModelAllocator *a)
{
  a->n_releases++;
  if (!a->released_since_pass)
    return;
  a->released_since_pass = FALSE;
  for (guint i = a->segments->len; i-- > 0;)
    {
      Segment *s = g_ptr_array_index (a->segments, i);
      if (a->expandable)
        {
          alloc_pages_unmap_unused (a, s);
          continue;
        }
      Block *b = s->first;
      if (b->allocated || b->next != NULL)
        continue;
      free_remove (a, b);
      a->reserved -= s->size;
      g_ptr_array_remove_index (a->segments, i); /* keeps creation order */
      segment_release (a, s);
    }
}

/* ---- malloc / free -------------------------------------------------------------------------- */

/* Splits b to `size` when the remainder is large enough (should_split: ≥ 512 B in the
 * small pool and in every pool under expandable_segments, > 1 MiB in the large pool
 * otherwise): returns the remainder (free, in no list yet), or NULL without a split. */
static Block *
split_off (ModelAllocator *a, Block *b, guint64 size)
{
  guint64 rest = b->size - size;
  gboolean split = POOL_IS_SMALL (b->seg->pool) || a->expandable ? rest >= MIN_BLOCK
                                                               : rest > SMALL_SIZE;
  if (!split)
    return NULL;
  Block *r = block_new (a, b->seg, b->offset + size, rest, b, b->next);
  if (b->next != NULL)
    b->next->prev = r;
  else
    b->seg->last = r;
  b->next = r;
  b->size = size;
  return r;
}

/* split_off, the remainder into its free list. */
static void
maybe_split (ModelAllocator *a, Block *b, guint64 size)
{
  Block *r = split_off (a, b, size);
  if (r != NULL)
    free_insert (a, r);
}

/* Non-expandable: best fit, else a new segment (releasing cached ones if needed). */
static Block *
cached_block (ModelAllocator *a, int pool, guint64 size, gboolean *oom)
{
  Block *b = alloc_free_take_best_fit (&a->free[pool], size);
  if (b != NULL)
    {
      maybe_split (a, b, size); /* the remainder (if split) into the list */
      return b;
    }
  guint64 seg = allocation_size (size);
  if (a->reserved + seg > a->capacity)
    release_cached (a);
  if (a->reserved + seg > a->capacity)
    *oom = TRUE;
  Segment *s = segment_new (a, pool, seg);
  a->reserved += seg;
  maybe_split (a, s->first, size);
  return s->first;
}

/* Expandable: a free block of at least `size` in `pool`, extending the segment's end when
 * no free block is large enough. */
static Block *
expandable_block (ModelAllocator *a, int pool, guint64 size)
{
  Block *b = alloc_free_take_best_fit (&a->free[pool], size);
  if (b != NULL)
    return b;
  if (a->grow[pool] == NULL)
    a->grow[pool] = segment_new (a, pool, 0);
  Segment *s = a->grow[pool];
  Block *tail = s->last;
  if (tail != NULL && !tail->allocated)
    {
      free_remove (a, tail);
      s->size += size - tail->size;
      tail->size = size;
      return tail;
    }
  b = block_new (a, s, s->size, size, tail, NULL);
  if (tail != NULL)
    tail->next = b;
  else
    s->first = b;
  s->last = b;
  s->size += size;
  return b;
}

guint
model_allocator_malloc (ModelAllocator *alloc, double bytes, gboolean *oom)
{
  return model_allocator_malloc_on (alloc, bytes, 0, oom);
}

guint
model_allocator_malloc_on (ModelAllocator *alloc, double bytes, guint stream, gboolean *oom)
{
  g_return_val_if_fail (alloc != NULL && bytes > 0 && stream < MODEL_ALLOCATOR_N_STREAMS, 0);
  alloc->reserved_before = alloc->reserved;
  alloc->peak_reserved_before = alloc->peak_reserved;
  gboolean over = bytes > MODEL_ALLOCATOR_MAX_REQUEST;
  guint64 size = round_size (to_bytes (bytes));
  int pool = (int) stream * N_SIZE_CLASSES + (size <= SMALL_SIZE ? POOL_SMALL : POOL_LARGE);
  Block *b;
  if (alloc->expandable)
    {
      b = expandable_block (alloc, pool, size);
      maybe_split (alloc, b, size);
      if (alloc->reserved + alloc_unmapped_bytes (b) > alloc->capacity)
        release_cached (alloc);
      if (alloc->reserved + alloc_unmapped_bytes (b) > alloc->capacity)
        over = TRUE;
      alloc_pages_ref (alloc, b, +1);
    }
  else
    {
      gboolean full = FALSE;
      b = cached_block (alloc, pool, size, &full); /* split to `size` */
      over |= full;
    }
  b->allocated = TRUE;
  alloc->allocated += b->size;
  alloc->peak_allocated = MAX (alloc->peak_allocated, alloc->allocated);
  note_reserved (alloc);
  if (oom != NULL)
    *oom = over;
  SIM_VEC_PUSH (&alloc->blocks, Block *, b); /* inline: one a request */
  return alloc->blocks.len - 1;
}

/* Unlinks free neighbour n of b (same segment), out of the free lists already, and absorbs
 * it. */
static void
absorb (ModelAllocator *a, Block *b, Block *n)
{
  if (n == b->next)
    {
      b->size += n->size;
      b->next = n->next;
      if (n->next != NULL)
        n->next->prev = b;
      else
        b->seg->last = b;
    }
  else
    {
      b->offset = n->offset;
      b->size += n->size;
      b->prev = n->prev;
      if (n->prev != NULL)
        n->prev->next = b;
      else
        b->seg->first = b;
    }
  sim_slots_give (&a->block_pool, n->slot);
}

void
model_allocator_release (ModelAllocator *alloc, guint id)
{
  g_return_if_fail (alloc != NULL && id > 0 && id < alloc->blocks.len);
  Block *b = SIM_VEC_AT (&alloc->blocks, Block *, id);
  g_assert (b != NULL && b->allocated);
  SIM_VEC_AT (&alloc->blocks, Block *, id) = NULL;
  if (alloc->expandable)
    alloc_pages_ref (alloc, b, -1);
  b->allocated = FALSE;
  alloc->allocated -= b->size;
  Block *prev = b->prev != NULL && !b->prev->allocated ? b->prev : NULL;
  Block *next = b->next != NULL && !b->next->allocated ? b->next : NULL;
  /* the neighbours leave the list (their keys change or they go), the merged block enters */
  if (prev != NULL)
    {
      free_remove (alloc, prev);
      absorb (alloc, b, prev);
    }
  if (next != NULL)
    {
      free_remove (alloc, next);
      absorb (alloc, b, next);
    }
  free_insert (alloc, b);
  alloc->released_since_pass |= alloc->expandable || (b->prev == NULL && b->next == NULL);
}

void
model_allocator_release_n (ModelAllocator *alloc, const guint *ids, guint n)
{
  g_return_if_fail (alloc != NULL && (n == 0 || ids != NULL));
  if (n == 1)
    {
      model_allocator_release (alloc, ids[0]);
      return;
    }
  /* First every block is freed (allocated cleared, in no list yet: "pending"), its pages
   * unreferenced as in a release of its own (they take the blocks' own spans, before any
   * merge); then each block still standing absorbs every free neighbour (pending or in a
   * list) on both sides and enters its list. Once every block of the batch is free, a
   * block's run of free neighbours is final, so the one that absorbs it is a maximal run of
   * free blocks, as the releases one by one leave it (no two adjacent free blocks): the same
   * free blocks, keys and lists, without the removal and insertion of a run's merged block
   * at each of its blocks (a buffer's tensors lie side by side in one block in two cases of
   * five in the 8-GPU bench). An absorbed block (its slot given back, readable until the
   * next block_new) is marked by size 0, which no block has. */
  for (guint i = 0; i < n; i++)
    {
      g_return_if_fail (ids[i] > 0 && ids[i] < alloc->blocks.len);
      Block *b = SIM_VEC_AT (&alloc->blocks, Block *, ids[i]);
      g_assert (b != NULL && b->allocated);
      if (alloc->expandable)
        alloc_pages_ref (alloc, b, -1);
      b->allocated = FALSE;
      alloc->allocated -= b->size;
    }
  for (guint i = 0; i < n; i++)
    {
      Block *b = SIM_VEC_AT (&alloc->blocks, Block *, ids[i]);
      SIM_VEC_AT (&alloc->blocks, Block *, ids[i]) = NULL;
      if (b->size == 0)
        continue; /* absorbed by an earlier one of the batch */
      for (Block *p = b->prev; p != NULL && !p->allocated; p = b->prev)
        {
          if (p->in_free)
            free_remove (alloc, p);
          absorb (alloc, b, p);
          p->size = 0;
        }
      for (Block *x = b->next; x != NULL && !x->allocated; x = b->next)
        {
          if (x->in_free)
            free_remove (alloc, x);
          absorb (alloc, b, x);
          x->size = 0;
        }
      free_insert (alloc, b);
      alloc->released_since_pass |= b->prev == NULL && b->next == NULL;
    }
  alloc->released_since_pass |= alloc->expandable;
}

/* ---- figures -------------------------------------------------------------------------------- */

double
model_allocator_allocated (const ModelAllocator *alloc)
{
  return (double) alloc->allocated;
}

double
model_allocator_reserved (const ModelAllocator *alloc)
{
  return (double) alloc->reserved;
}

double
model_allocator_peak_reserved (const ModelAllocator *alloc)
{
  return (double) alloc->peak_reserved;
}

double
model_allocator_peak_allocated (const ModelAllocator *alloc)
{
  return (double) alloc->peak_allocated;
}

void
model_allocator_before_last (const ModelAllocator *alloc, double *reserved, double *peak_reserved)
{
  *reserved = (double) alloc->reserved_before;
  *peak_reserved = (double) alloc->peak_reserved_before;
}

void
model_allocator_reset_peak (ModelAllocator *alloc)
{
  g_return_if_fail (alloc != NULL);
  alloc->peak_reserved = alloc->reserved;
  alloc->peak_allocated = alloc->allocated;
}

guint
model_allocator_n_segments (const ModelAllocator *alloc)
{
  return alloc->segments->len;
}

guint
model_allocator_n_releases (const ModelAllocator *alloc)
{
  return alloc->n_releases;
}
