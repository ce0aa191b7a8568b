/* models/memory/allocator.c — PyTorch CUDA caching allocator model; see allocator.h for the rules
 * and their source.
 *
 * Invariants: blocks of a segment tile it in address order (prev/next); no two adjacent
 * blocks of a segment are both free (they are merged on free); every free block is in its
 * pool's sorted `free` list, ordered by (size, segment id, offset), every allocated one is
 * not; reserved = Σ segment sizes (expandable: Σ mapped pages × page size); an expandable
 * page is mapped whenever an allocated block overlaps it (refs > 0).
 * Units: bytes (guint64). Determinism: segments are kept in creation order in a GPtrArray;
 * no hash table is involved.
 */
#include "config.h"
#include "models/memory/allocator-private.h"

#include <math.h>
#include <string.h>

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
  return (guint64) ceil (MIN (bytes, MODEL_ALLOCATOR_MAX_REQUEST));
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

/* (size, segment id, offset): distinct for distinct blocks (blocks of one segment do not
 * overlap), so the free lists' order is total. */
static int
block_cmp (const Block *x, const Block *y)
{
  if (x->size != y->size)
    return x->size < y->size ? -1 : 1;
  if (x->seg_id != y->seg_id)
    return x->seg_id < y->seg_id ? -1 : 1;
  if (x->offset != y->offset)
    return x->offset < y->offset ? -1 : 1;
  return 0;
}

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
    a->free[p] = g_ptr_array_new ();
  a->blocks = g_ptr_array_new ();
  g_ptr_array_add (a->blocks, NULL); /* id 0 means "none" */
  /* small blocks of the pools: each is zeroed when taken, and a ledger makes several
   * allocators per replay */
  sim_slots_init (&a->block_pool, sizeof (Block), 32);
  sim_slots_init (&a->segment_pool, sizeof (Segment), 16);
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
    g_ptr_array_unref (alloc->free[p]);
  g_ptr_array_unref (alloc->segments);
  g_ptr_array_unref (alloc->blocks);
  sim_slots_clear (&alloc->block_pool);
  sim_slots_clear (&alloc->segment_pool);
  g_free (alloc);
}

/* ---- free lists ---------------------------------------------------------------------------- */

/* Each pool's free blocks sit in a GPtrArray sorted by block_cmp: a search finds a
 * position in O(log n), insertion and removal move the tail (a few hundred pointers at most
 * in the shipped scenarios). It replaced a GSequence, whose sorted insert and search
 * allocate and free a temporary sequence per call (GLib gsequence.c
 * g_sequence_insert_sorted_iter, g_sequence_search_iter): 27 % of an 8-GPU step's
 * simulation. Same order, so the same best fit.
 *
 * Searches start from a finger: the position the pool's previous search found. A replay's
 * requests and frees come in runs of equal sizes (a layer's tensors, then the next layer's),
 * so most answers lie at the finger or beside it: over a sweep of single-GPU scenarios 70 %
 * of best fits and 84 % of a split's remainders land exactly at the finger, and most
 * frees' positions within one of it (bench/RESULTS.md, 2026-12-07). A galloping search
 * (Bentley & Yao 1976, "An almost optimal algorithm for unbounded searching") costs
 * O(log d) comparisons for an answer d places away, 2 at the finger, against ~6 for a
 * binary search of ~40 free blocks, whose branches a predictor cannot learn (the binary
 * search was the largest single cost of a sweep by `perf`). It executes slightly more
 * instructions and saves mispredictions: ~5 % of a sweep's CPU time. The answer is the
 * same lower bound. */

/* Index of the first free block of list[lo, hi) not below `key` in block_cmp order (hi if
 * none). */
static guint
lower_bound_in (const GPtrArray *list, const Block *key, guint lo, guint hi)
{
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (block_cmp (g_ptr_array_index (list, mid), key) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

static gboolean
below (const GPtrArray *list, guint i, const Block *key)
{
  return block_cmp (g_ptr_array_index (list, i), key) < 0;
}

guint
alloc_lower_bound_near (const GPtrArray *list, const Block *key, guint lo, guint hi, guint hint)
{
  g_assert (lo <= hi && hi <= list->len);
  /* the answer a: list[i] is below key for lo ≤ i < a, not below for a ≤ i < hi */
  hint = CLAMP (hint, lo, hi);
  if (hint < hi && below (list, hint, key))
    {
      /* a ≥ l; probe l + d − 1 with d = 1, 2, 4, …: below means a ≥ l + d */
      guint l = hint + 1, d = 1;
      while (l + d - 1 < hi && below (list, l + d - 1, key))
        {
          l += d;
          d *= 2;
        }
      return lower_bound_in (list, key, l, MIN (l + d - 1, hi));
    }
  /* a ≤ r; probe r − d with d = 1, 2, 4, …: not below means a ≤ r − d */
  guint r = hint, d = 1;
  while (r >= lo + d && !below (list, r - d, key))
    {
      r -= d;
      d *= 2;
    }
  return lower_bound_in (list, key, r >= lo + d ? r - d + 1 : lo, r);
}

/* alloc_lower_bound_near in pool's list from the pool's finger, which moves to the answer. */
static guint
search (ModelAllocator *a, int pool, const Block *key, guint lo, guint hi)
{
  guint i = alloc_lower_bound_near (a->free[pool], key, lo, hi, a->finger[pool]);
  a->finger[pool] = i;
  return i;
}

static void
free_insert (ModelAllocator *a, Block *b)
{
  int pool = b->seg->pool;
  GPtrArray *list = a->free[pool];
  g_ptr_array_insert (list, (gint) search (a, pool, b, 0, list->len), b);
  b->in_free = TRUE;
}

/* The index of free block b in its pool's list. */
static guint
free_index (ModelAllocator *a, const Block *b)
{
  int pool = b->seg->pool;
  const GPtrArray *list = a->free[pool];
  guint i = search (a, pool, b, 0, list->len);
  g_assert (b->in_free && i < list->len && g_ptr_array_index (list, i) == b);
  return i;
}

static void
free_remove (ModelAllocator *a, Block *b)
{
  g_ptr_array_remove_index (a->free[b->seg->pool], free_index (a, b)); /* keeps the order */
  b->in_free = FALSE;
}

/* Puts free block r in place of pool's list[i] (taken out of the list), r before it in
 * block_cmp order (a split's remainder is smaller than the block it came from): the blocks
 * between r's place and i move up by one, in one move instead of a removal and an
 * insertion. */
static void
free_replace_down (ModelAllocator *a, int pool, guint i, Block *r)
{
  GPtrArray *list = a->free[pool];
  guint j = search (a, pool, r, 0, i);
  Block *out = g_ptr_array_index (list, i);
  out->in_free = FALSE;
  memmove (&list->pdata[j + 1], &list->pdata[j], (i - j) * sizeof (gpointer));
  list->pdata[j] = r;
  r->in_free = TRUE;
}

/* The same for b after list[k] in block_cmp order (a merge holding list[k] is larger than
 * it): the blocks between k and b's place move down by one. */
static void
free_replace_up (ModelAllocator *a, int pool, guint k, Block *b)
{
  GPtrArray *list = a->free[pool];
  guint j = search (a, pool, b, k + 1, list->len);
  Block *out = g_ptr_array_index (list, k);
  out->in_free = FALSE;
  memmove (&list->pdata[k], &list->pdata[k + 1], (j - k - 1) * sizeof (gpointer));
  list->pdata[j - 1] = b;
  b->in_free = TRUE;
}

/* Best fit: the first free block of `pool` with size ≥ `size` (get_free_block): the lower
 * bound of (size, segment 0, offset 0), below every real block of that size; *index its
 * place in the pool's list. */
static Block *
best_fit (ModelAllocator *a, int pool, guint64 size, guint *index)
{
  Block key = { .size = size, .seg_id = 0, .offset = 0 };
  GPtrArray *list = a->free[pool];
  *index = search (a, pool, &key, 0, list->len);
  return *index < list->len ? g_ptr_array_index (list, *index) : NULL;
}

/* ---- segments -------------------------------------------------------------------------------- */

/* A block set to `init`, from the block pool. */
static Block *
block_new (ModelAllocator *a, Block init)
{
  guint slot;
  Block *b = sim_slots_take (&a->block_pool, &slot);
  *b = init;
  b->seg_id = init.seg->id;
  b->slot = slot;
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
      s->page = pool == POOL_SMALL ? SMALL_BUFFER : LARGE_BUFFER;
      s->refs = g_array_new (FALSE, TRUE, sizeof (guint32));
      s->mapped = g_array_new (FALSE, TRUE, sizeof (guint8));
    }
  if (size > 0)
    {
      Block *b = block_new (a, (Block){ .offset = 0, .size = size, .seg = s });
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
  gboolean split = b->seg->pool == POOL_SMALL || a->expandable ? rest >= MIN_BLOCK
                                                               : rest > SMALL_SIZE;
  if (!split)
    return NULL;
  Block *r = block_new (a, (Block){ .offset = b->offset + size, .size = rest, .seg = b->seg,
                                    .prev = b, .next = b->next });
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
  guint i;
  Block *b = best_fit (a, pool, size, &i);
  if (b != NULL)
    {
      /* taken out of the list, its remainder (if split) put in its place */
      Block *r = split_off (a, b, size);
      if (r != NULL)
        free_replace_down (a, pool, i, r);
      else
        {
          g_ptr_array_remove_index (a->free[pool], i);
          b->in_free = FALSE;
        }
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
  guint i;
  Block *b = best_fit (a, pool, size, &i);
  if (b != NULL)
    {
      g_ptr_array_remove_index (a->free[pool], i);
      b->in_free = FALSE;
      return b;
    }
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
  b = block_new (a, (Block){ .offset = s->size, .size = size, .seg = s, .prev = tail });
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
  g_return_val_if_fail (alloc != NULL && bytes > 0, 0);
  alloc->reserved_before = alloc->reserved;
  alloc->peak_reserved_before = alloc->peak_reserved;
  gboolean over = bytes > MODEL_ALLOCATOR_MAX_REQUEST;
  guint64 size = round_size (to_bytes (bytes));
  int pool = size <= SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
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
  g_ptr_array_add (alloc->blocks, b);
  return alloc->blocks->len - 1;
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
  g_return_if_fail (alloc != NULL && id > 0 && id < alloc->blocks->len);
  Block *b = g_ptr_array_index (alloc->blocks, id);
  g_assert (b != NULL && b->allocated);
  g_ptr_array_index (alloc->blocks, id) = NULL;
  if (alloc->expandable)
    alloc_pages_ref (alloc, b, -1);
  b->allocated = FALSE;
  alloc->allocated -= b->size;
  alloc->released_since_pass = TRUE;
  Block *prev = b->prev != NULL && !b->prev->allocated ? b->prev : NULL;
  Block *next = b->next != NULL && !b->next->allocated ? b->next : NULL;
  if (prev == NULL && next == NULL)
    {
      free_insert (alloc, b);
      return;
    }
  /* the merged block is larger than either free neighbour it holds: it takes the place
   * of one in the list (free_replace_up), the other is removed */
  if (prev != NULL && next != NULL)
    free_remove (alloc, next);
  Block *kept = prev != NULL ? prev : next;
  guint k = free_index (alloc, kept);
  if (prev != NULL)
    absorb (alloc, b, prev);
  if (next != NULL)
    absorb (alloc, b, next);
  free_replace_up (alloc, b->seg->pool, k, b);
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
