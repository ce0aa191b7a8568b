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
 * array. A bucket holds a few blocks, so its searches and moves are short.
 *
 * Invariants: buckets[k] holds exactly the blocks of fl whose size maps to bucket k, in
 * strictly increasing (size, segment id, offset) order; bit k of `used` is set iff
 * buckets[k] is non-empty; k < n_buckets for every non-empty bucket; n_blocks = Σ lengths. */
#include "config.h"
#include "models/memory/allocator-private.h"

#include <string.h>

struct _FreeBucket
{
  Block **v; /* cap slots, the first len in use; owned */
  guint len, cap;
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
    g_free (fl->buckets[k].v);
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

/* The index of the first block of bucket c not below (size, seg_id, offset). */
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

/* Block i of bucket k out of fl (i < its length). */
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

/* The best fit's bucket and index in it; FALSE if none. */
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
      if (lo < c->len)
        {
          *bucket = k;
          *index = lo;
          return TRUE;
        }
    }
  /* the first block of the next non-empty bucket */
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
  return best_fit_at (fl, size, &k, &i) ? fl->buckets[k].v[i] : NULL;
}

Block *
alloc_free_take_best_fit (AllocFreeList *fl, guint64 size)
{
  guint k, i;
  if (!best_fit_at (fl, size, &k, &i))
    return NULL;
  Block *b = fl->buckets[k].v[i];
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
  /* b itself, by its address: a bucket holds a few blocks, and comparing pointers costs
   * less than a search comparing keys (in a long bucket, the scan to b and the move after
   * it together pass over the bucket once, as the move after a search could) */
  guint i = 0;
  while (i < c->len && c->v[i] != b)
    i++;
  g_assert (i < c->len);
  bucket_remove_at (fl, k, i);
}

void
alloc_free_blocks (const AllocFreeList *fl, GPtrArray *out)
{
  for (guint k = 0; k < fl->n_buckets; k++)
    for (guint i = 0; i < fl->buckets[k].len; i++)
      g_ptr_array_add (out, fl->buckets[k].v[i]);
}
