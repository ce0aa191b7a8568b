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
  /* ceil without a libm call: exact below 2^53, where every double is a whole number
   * already, and far beyond the cap */
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
    a->free[p] = (SimVec) SIM_VEC_INIT;
  a->blocks = (SimVec) SIM_VEC_INIT;
  SIM_VEC_PUSH (&a->blocks, Block *, NULL); /* id 0 means "none" */
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
    sim_vec_clear (&alloc->free[p]);
  g_ptr_array_unref (alloc->segments);
  sim_vec_clear (&alloc->blocks);
  sim_slots_clear (&alloc->block_pool);
  sim_slots_clear (&alloc->segment_pool);
  g_free (alloc);
}

/* ---- free lists ---------------------------------------------------------------------------- */

/* Each pool's free blocks sit in a SimVec of FreeEntry sorted by (size, addr)
 * (allocator-private.h): a search finds a position in O(log n), insertion and removal move
 * the tail (a few hundred entries at most in the shipped scenarios). It replaced a
 * GSequence, whose sorted insert and search allocate and free a temporary sequence per call
 * (GLib gsequence.c g_sequence_insert_sorted_iter, g_sequence_search_iter): 27 % of an 8-GPU
 * step's simulation; then a GPtrArray of Block*, whose every comparison read the block
 * through its pointer. Same order, so the same best fit.
 *
 * Searches are branch-free binary searches. They replaced a galloping search from the
 * position the previous search found (most answers lie there or beside it), which needed
 * fewer comparisons but whose direction and stopping branches a predictor could not learn:
 * a quarter of all mispredicted branches of a sweep of single-GPU scenarios (callgrind
 * --branch-sim, bench/RESULTS.md 2026-12-07), 11 % of its time by `perf`. The answer is the
 * same lower bound. */

/* Entry i of pool list `list` (a SimVec of FreeEntry). */
#define ENTRY(list, i) SIM_VEC_AT ((list), FreeEntry, (i))

/* Whether entry e is below the key (size, addr): 0 or 1, computed without a branch. */
static inline guint
below (const FreeEntry *e, guint64 size, guint64 addr)
{
  return (guint) (e->size < size) | ((guint) (e->size == size) & (guint) (e->addr < addr));
}

/* Index of the first entry of list[lo, hi) not below the key (hi if none): a binary search
 * whose steps move by a multiple of 0 or 1 instead of branching (Khuong & Morin 2017, "Array
 * layouts for comparison-based searching", the branch-free binary search), so no step is
 * mispredicted; only the loop's end depends on hi − lo. */
static inline guint
lower_bound (const FreeEntry *list, guint64 size, guint64 addr, guint lo, guint hi)
{
  if (lo >= hi)
    return lo;
  const FreeEntry *base = list + lo;
  guint n = hi - lo;
  while (n > 1)
    {
      guint half = n / 2;
      base += half * below (&base[half], size, addr); /* no branch: a multiply by 0 or 1 */
      n -= half;
    }
  return (guint) (base - list) + below (base, size, addr);
}

guint
alloc_lower_bound (const FreeEntry *list, guint64 size, guint64 addr, guint lo, guint hi)
{
  g_return_val_if_fail (lo <= hi, hi);
  return lower_bound (list, size, addr, lo, hi);
}

/* The free-list entry of block b (its key and b). */
static inline FreeEntry
entry_of (Block *b)
{
  return (FreeEntry){ .size = b->size, .addr = b->seg->base + b->offset, .block = b };
}

/* The lower bound of entry e's key in pool's list[lo, hi). */
static inline guint
search (ModelAllocator *a, int pool, const FreeEntry *e, guint lo, guint hi)
{
  g_assert (lo <= hi && hi <= a->free[pool].len);
  return lower_bound (a->free[pool].data, e->size, e->addr, lo, hi);
}

static void
free_insert (ModelAllocator *a, Block *b)
{
  int pool = b->seg->pool;
  SimVec *list = &a->free[pool];
  FreeEntry e = entry_of (b);
  guint i = search (a, pool, &e, 0, list->len);
  sim_vec_append (list, sizeof (FreeEntry)); /* room for one more; len + 1 */
  FreeEntry *v = list->data;
  memmove (&v[i + 1], &v[i], (list->len - 1 - i) * sizeof (FreeEntry));
  v[i] = e;
  b->in_free = TRUE;
}

/* Takes entry i out of pool's list (keeps the order) and marks its block not free. */
static void
free_remove_at (ModelAllocator *a, int pool, guint i)
{
  SimVec *list = &a->free[pool];
  FreeEntry *v = list->data;
  g_assert (i < list->len);
  v[i].block->in_free = FALSE;
  memmove (&v[i], &v[i + 1], (list->len - 1 - i) * sizeof (FreeEntry));
  list->len--;
}

/* The index of free block b in its pool's list. */
static guint
free_index (ModelAllocator *a, Block *b)
{
  int pool = b->seg->pool;
  FreeEntry e = entry_of (b);
  guint i = search (a, pool, &e, 0, a->free[pool].len);
  g_assert (b->in_free && i < a->free[pool].len && ENTRY (&a->free[pool], i).block == b);
  return i;
}

static void
free_remove (ModelAllocator *a, Block *b)
{
  free_remove_at (a, b->seg->pool, free_index (a, b));
}

/* Puts free block r in place of pool's list[i] (taken out of the list), r before it in
 * (size, addr) order (a split's remainder is smaller than the block it came from): the
 * entries between r's place and i move up by one, in one move instead of a removal and an
 * insertion. */
static void
free_replace_down (ModelAllocator *a, int pool, guint i, Block *r)
{
  FreeEntry e = entry_of (r);
  guint j = search (a, pool, &e, 0, i);
  FreeEntry *v = a->free[pool].data;
  v[i].block->in_free = FALSE;
  memmove (&v[j + 1], &v[j], (i - j) * sizeof (FreeEntry));
  v[j] = e;
  r->in_free = TRUE;
}

/* The same for b after list[k] in (size, addr) order (a merge holding list[k] is larger
 * than it): the entries between k and b's place move down by one. */
static void
free_replace_up (ModelAllocator *a, int pool, guint k, Block *b)
{
  FreeEntry e = entry_of (b);
  guint j = search (a, pool, &e, k + 1, a->free[pool].len);
  FreeEntry *v = a->free[pool].data;
  v[k].block->in_free = FALSE;
  memmove (&v[k], &v[k + 1], (j - k - 1) * sizeof (FreeEntry));
  v[j - 1] = e;
  b->in_free = TRUE;
}

/* Best fit: the first free block of `pool` with size ≥ `size` (get_free_block): the lower
 * bound of (size, addr 0), below every real block of that size; *index its place in the
 * pool's list. */
static Block *
best_fit (ModelAllocator *a, int pool, guint64 size, guint *index)
{
  FreeEntry key = { .size = size, .addr = 0 };
  const SimVec *list = &a->free[pool];
  *index = search (a, pool, &key, 0, list->len);
  return *index < list->len ? ENTRY (list, *index).block : NULL;
}

/* ---- segments -------------------------------------------------------------------------------- */

/* A block set to `init`, from the block pool. */
static Block *
block_new (ModelAllocator *a, Block init)
{
  guint slot;
  Block *b = sim_slots_take (&a->block_pool, &slot);
  *b = init;
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
  /* past every earlier segment (Segment.base); the sum of 2^44 B requests cannot reach 2^64
   * B in any run, but a wrap would break the free lists' order, so it is checked */
  g_assert (a->expandable ? a->grow[pool] == NULL : a->next_base <= G_MAXUINT64 - size);
  s->base = a->next_base;
  a->next_base += size;
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
        free_remove_at (a, pool, i);
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
      free_remove_at (a, pool, i);
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
  SIM_VEC_PUSH (&alloc->blocks, Block *, b);
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
