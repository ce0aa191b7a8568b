/* models/memory/allocator_free.c — a pool's free blocks in size buckets (allocator-private.h
 * AllocFreeList): the caching allocator's best fit, insertion and removal without a search
 * or a move over the whole pool.
 *
 * Why: the pool's free blocks were one array sorted by (size, segment id, offset). Every
 * insertion and removal moved its tail (~40 pointers on average, up to ~500) and every
 * operation searched it, comparing blocks through their pointers: the searches and moves were
 * most of the allocator model's cost, itself a third of a single-GPU scenario's simulation
 * (bench/RESULTS.md, 2026-12-07 sections). Two insertions in three meet no free block of
 * their size (a replay's split remainders have sizes of their own), so a class per exact
 * size is made and dropped for most of them (tried: more instructions than the one array);
 * ranges of sizes work. As in TLSF (Masmano et al., "TLSF: a new dynamic memory allocator for
 * real-time systems", ECRTS 2004), a size of u = size / 512 units falls in bucket u for
 * u < 8 and otherwise in one of 8 equal sub-ranges of its power of two [2^f, 2^(f+1)):
 * bucket 8 (f − 2) + the three bits below the leading one. Buckets are ordered as the sizes
 * are (the bucket of a larger size is never a lower one), each holds its blocks sorted by
 * (size, segment id, offset), and a bitmap marks the non-empty ones. So the pool's order is
 * the buckets' in turn, and the best fit for a size — the first block not below (size,
 * segment 0, offset 0) — is the lower bound in the size's own bucket or, past its end, the
 * first block of the next non-empty bucket (a bit scan): the same block as in one sorted
 * array. A bucket holds a few blocks, so its searches and moves are short; one that holds
 * thousands is a tree (below).
 *
 * Invariants: buckets[k] holds exactly the blocks of fl whose size maps to bucket k (the
 * first len of v, or, iff seq != NULL, seq's n_tree > BUCKET_ARRAY_AT with len = cap = 0),
 * in strictly increasing (size, segment id, offset) order; bit k of `used` is set iff
 * buckets[k] is non-empty; k < n_buckets for every non-empty bucket; n_blocks = Σ lengths;
 * an array's cap is 0 or a power of two from 16 up to BUCKET_TREE_FROM. */
#include "config.h"
#include "models/memory/allocator-private.h"

#include <string.h>

/* A bucket is a sorted array while it is short (nearly all of them: a replay's buckets hold a
 * few blocks) and a GSequence, a balanced tree, while it is long. Where a run keeps thousands
 * of free blocks of one size range (a padded batch's activations, an OOM run's cache), every
 * insertion and removal moved (and every removal scanned) the array's blocks: 77 % of a
 * 2 min 47 s run's time (bench/RESULTS.md, 2026-12-08). A bucket becomes a tree when an
 * insertion finds BUCKET_TREE_FROM blocks in it and an array again when a removal leaves
 * BUCKET_ARRAY_AT (the gap keeps a bucket near either length from converting back and forth).
 * Both hold the blocks in the same (size, segment id, offset) order. */
enum { BUCKET_TREE_FROM = ALLOC_FREE_TREE_FROM, BUCKET_ARRAY_AT = ALLOC_FREE_ARRAY_AT };

/* A tree bucket has len = cap = 0 (its array empty, v NULL), so the array's paths see an
 * empty array and only their slow paths (growing the array, a search past its end, a block
 * not found in it) check for a tree: the common case pays nothing for the trees. */
struct _FreeBucket
{
  Block **v;      /* array: cap slots, the first len in use; owned; NULL for a tree */
  guint len, cap;
  GSequence *seq; /* tree: the blocks (borrowed), in order; owned; NULL for an array */
  guint n_tree;   /* tree: its blocks; 0 for an array */
};

void
alloc_free_init (AllocFreeList *fl)
{
  *fl = (AllocFreeList){ 0 };
}

void
alloc_free_clear (AllocFreeList *fl)
{
  for (guint k = 0; k < fl->n_buckets; k++)
    {
      g_free (fl->buckets[k].v);
      if (fl->buckets[k].seq != NULL)
        g_sequence_free (fl->buckets[k].seq);
    }
  g_free (fl->buckets);
  *fl = (AllocFreeList){ 0 };
}

guint
alloc_free_bucket (guint64 size)
{
  guint64 u = size >> 9; /* 512 B units: every block size is a multiple */
  if (u < 8)
    return (guint) u;
  guint f = 63 - (guint) __builtin_clzll (u);
  return 8 * (f - 2) + (guint) ((u >> (f - 3)) & 7);
}

/* x before y in the pool's order: (size, segment id, offset). */
static inline gboolean
block_before (const Block *x, guint64 size, guint seg_id, guint64 offset)
{
  if (x->size != size)
    return x->size < size;
  if (x->seg_id != seg_id)
    return x->seg_id < seg_id;
  return x->offset < offset;
}

/* The index of the first block of array bucket c not below (size, seg_id, offset). */
static inline guint
bucket_lower_bound (const FreeBucket *c, guint64 size, guint seg_id, guint64 offset)
{
  guint lo = 0, hi = c->len;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      if (block_before (c->v[mid], size, seg_id, offset))
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

/* A tree bucket's order (GCompareDataFunc): (size, segment id, offset); `data` unused. */
static int
seq_key_cmp (gconstpointer x, gconstpointer y, gpointer data)
{
  const Block *a = x, *b = y;
  (void) data;
  if (a->size != b->size)
    return a->size < b->size ? -1 : 1;
  if (a->seg_id != b->seg_id)
    return a->seg_id < b->seg_id ? -1 : 1;
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* A best fit's probe against a tree bucket's blocks (GCompareDataFunc, `probe` the probe,
 * either argument): the probe comes before every block of at least its size and after every
 * smaller one, never equal, so a search for it lands on the first block of at least its
 * size — the lower bound of (size, segment 0, offset 0), as in an array bucket. */
static int
seq_fit_cmp (gconstpointer x, gconstpointer y, gpointer probe)
{
  guint64 size = ((const Block *) probe)->size;
  if (x == probe)
    return ((const Block *) y)->size < size ? 1 : -1;
  return ((const Block *) x)->size < size ? -1 : 1;
}

/* Array bucket c (len == BUCKET_TREE_FROM) as a tree. */
static void
bucket_to_tree (FreeBucket *c)
{
  c->seq = g_sequence_new (NULL);
  for (guint i = 0; i < c->len; i++)
    g_sequence_append (c->seq, c->v[i]); /* in order already */
  g_clear_pointer (&c->v, g_free);
  c->n_tree = c->len;
  c->len = c->cap = 0;
}

/* Tree bucket c (n_tree == BUCKET_ARRAY_AT) as an array. */
static void
bucket_to_array (FreeBucket *c)
{
  c->cap = 2 * BUCKET_ARRAY_AT;
  c->v = g_new (Block *, c->cap);
  for (GSequenceIter *it = g_sequence_get_begin_iter (c->seq); !g_sequence_iter_is_end (it);
       it = g_sequence_iter_next (it))
    c->v[c->len++] = g_sequence_get (it);
  g_assert (c->len == c->n_tree);
  c->n_tree = 0;
  g_clear_pointer (&c->seq, g_sequence_free);
}

/* The first block of at least `size` of tree bucket c, or its end. */
static G_GNUC_NO_INLINE GSequenceIter *
tree_fit (const FreeBucket *c, guint64 size)
{
  Block probe = { .size = size };
  return g_sequence_search (c->seq, &probe, seq_fit_cmp, &probe);
}

/* Block b (at `it`) out of tree bucket k of fl; the bucket an array again at
 * BUCKET_ARRAY_AT blocks (so it never empties). */
static G_GNUC_NO_INLINE void
tree_remove (AllocFreeList *fl, guint k, Block *b, GSequenceIter *it)
{
  FreeBucket *c = &fl->buckets[k];
  g_sequence_remove (it);
  if (--c->n_tree == BUCKET_ARRAY_AT)
    bucket_to_array (c);
  b->in_free = FALSE;
  fl->n_blocks--;
}

/* Block b into bucket k of fl, a tree or an array of BUCKET_TREE_FROM blocks (made a tree). */
static G_GNUC_NO_INLINE void
tree_insert (AllocFreeList *fl, guint k, Block *b)
{
  FreeBucket *c = &fl->buckets[k];
  if (c->seq == NULL)
    bucket_to_tree (c);
  g_sequence_insert_sorted (c->seq, b, seq_key_cmp, NULL);
  c->n_tree++;
  fl->used[k / 64] |= (guint64) 1 << (k % 64);
  b->in_free = TRUE;
  fl->n_blocks++;
}

/* Block i of array bucket k out of fl (i < its length). */
static inline void
bucket_remove_at (AllocFreeList *fl, guint k, guint i)
{
  FreeBucket *c = &fl->buckets[k];
  Block *b = c->v[i];
  c->len--;
  for (guint j = i; j < c->len; j++)
    c->v[j] = c->v[j + 1];
  if (c->len == 0)
    fl->used[k / 64] &= ~((guint64) 1 << (k % 64));
  b->in_free = FALSE;
  fl->n_blocks--;
}

/* The best fit's bucket and index in it (an array bucket), or its bucket (a tree bucket,
 * whose best fit is tree_fit's); FALSE if none. */
static inline gboolean
best_fit_at (const AllocFreeList *fl, guint64 size, guint *bucket, guint *index)
{
  guint k = alloc_free_bucket (size);
  if (k < fl->n_buckets)
    {
      /* the first block of the bucket of at least `size`: (size, segment 0, offset 0) is
       * below every block of that size, so sizes alone decide */
      const FreeBucket *c = &fl->buckets[k];
      guint lo = 0, hi = c->len;
      while (lo < hi)
        {
          guint mid = lo + (hi - lo) / 2;
          if (c->v[mid]->size < size)
            lo = mid + 1;
          else
            hi = mid;
        }
      if (lo < c->len
          || (G_UNLIKELY (c->seq != NULL) && !g_sequence_iter_is_end (tree_fit (c, size))))
        {
          *bucket = k;
          *index = lo;
          return TRUE;
        }
    }
  /* the first block of the next non-empty bucket (tree_fit's in a tree: every block of the
   * bucket is at least `size`) */
  for (guint w = (k + 1) / 64; w < G_N_ELEMENTS (fl->used); w++)
    {
      guint64 bits = fl->used[w];
      if (w == (k + 1) / 64)
        bits &= ~(guint64) 0 << ((k + 1) % 64);
      if (bits != 0)
        {
          *bucket = 64 * w + (guint) __builtin_ctzll (bits);
          *index = 0;
          return TRUE;
        }
    }
  return FALSE;
}

Block *
alloc_free_best_fit (const AllocFreeList *fl, guint64 size)
{
  guint k, i;
  if (!best_fit_at (fl, size, &k, &i))
    return NULL;
  const FreeBucket *c = &fl->buckets[k];
  if (G_UNLIKELY (c->seq != NULL))
    return g_sequence_get (tree_fit (c, size));
  return c->v[i];
}

Block *
alloc_free_take_best_fit (AllocFreeList *fl, guint64 size)
{
  guint k, i;
  if (!best_fit_at (fl, size, &k, &i))
    return NULL;
  const FreeBucket *c = &fl->buckets[k];
  if (G_UNLIKELY (c->seq != NULL))
    {
      GSequenceIter *it = tree_fit (c, size);
      Block *b = g_sequence_get (it);
      tree_remove (fl, k, b, it);
      return b;
    }
  Block *b = c->v[i];
  bucket_remove_at (fl, k, i);
  return b;
}

void
alloc_free_insert (AllocFreeList *fl, Block *b)
{
  g_assert (!b->in_free);
  guint k = alloc_free_bucket (b->size);
  if (k >= fl->n_buckets)
    {
      guint n = MAX (k + 1, 2 * fl->n_buckets);
      fl->buckets = g_renew (FreeBucket, fl->buckets, n);
      memset (&fl->buckets[fl->n_buckets], 0, (n - fl->n_buckets) * sizeof (FreeBucket));
      fl->n_buckets = n;
    }
  FreeBucket *c = &fl->buckets[k];
  if (c->len == c->cap)
    {
      /* a tree (len = cap = 0), or an array of BUCKET_TREE_FROM blocks (its capacity: a
       * power of two from 16, doubled when full, so exactly that) */
      if (G_UNLIKELY (c->seq != NULL || c->len == BUCKET_TREE_FROM))
        {
          tree_insert (fl, k, b);
          return;
        }
      c->cap = MAX (16u, 2 * c->cap);
      c->v = g_renew (Block *, c->v, c->cap);
    }
  guint i;
  if (c->len <= 8)
    {
      /* a short bucket (most): the blocks after b's place move up as they are compared,
       * one pass from the end, no separate search */
      i = c->len;
      while (i > 0 && !block_before (c->v[i - 1], b->size, b->seg_id, b->offset))
        {
          c->v[i] = c->v[i - 1];
          i--;
        }
    }
  else
    {
      i = bucket_lower_bound (c, b->size, b->seg_id, b->offset);
      for (guint j = c->len; j > i; j--)
        c->v[j] = c->v[j - 1];
    }
  c->v[i] = b;
  c->len++;
  fl->used[k / 64] |= (guint64) 1 << (k % 64);
  b->in_free = TRUE;
  fl->n_blocks++;
}

void
alloc_free_remove (AllocFreeList *fl, Block *b)
{
  g_assert (b->in_free);
  guint k = alloc_free_bucket (b->size);
  g_assert (k < fl->n_buckets);
  const FreeBucket *c = &fl->buckets[k];
  /* b itself, by its address: an array bucket holds a few blocks, and comparing pointers
   * costs less than a search comparing keys (in a long bucket, the scan to b and the move
   * after it together pass over the bucket once, as the move after a search could) */
  guint i = 0;
  while (i < c->len && c->v[i] != b)
    i++;
  if (G_UNLIKELY (i == c->len))
    {
      /* not in the array: a tree's (found by its key, keys are distinct) */
      g_assert (c->seq != NULL);
      GSequenceIter *it = g_sequence_lookup (c->seq, b, seq_key_cmp, NULL);
      g_assert (it != NULL && g_sequence_get (it) == b);
      tree_remove (fl, k, b, it);
      return;
    }
  bucket_remove_at (fl, k, i);
}

void
alloc_free_blocks (const AllocFreeList *fl, GPtrArray *out)
{
  for (guint k = 0; k < fl->n_buckets; k++)
    {
      const FreeBucket *c = &fl->buckets[k];
      for (guint i = 0; i < c->len; i++)
        g_ptr_array_add (out, c->v[i]);
      if (c->seq != NULL)
        for (GSequenceIter *it = g_sequence_get_begin_iter (c->seq);
             !g_sequence_iter_is_end (it); it = g_sequence_iter_next (it))
          g_ptr_array_add (out, g_sequence_get (it));
    }
}

guint
alloc_free_n_trees (const AllocFreeList *fl)
{
  guint n = 0;
  for (guint k = 0; k < fl->n_buckets; k++)
    n += fl->buckets[k].seq != NULL;
  return n;
}
