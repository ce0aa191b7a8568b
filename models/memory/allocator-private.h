/* models/memory/allocator-private.h — the caching allocator's blocks and segments, shared by
 * models/memory/allocator.c (sizes, segments, malloc/free) and its leaves
 * models/memory/allocator_free.c (the free lists) and models/memory/allocator_pages.c (the
 * page map of expandable segments). Not a public header; invariants in allocator.c. */
#pragma once

#include "models/memory/allocator.h"
#include "sim/slots.h"

/* A pool is a (stream, size class) pair: index stream × N_SIZE_CLASSES + class. */
enum { POOL_SMALL, POOL_LARGE, N_SIZE_CLASSES };
#define N_POOLS (N_SIZE_CLASSES * MODEL_ALLOCATOR_N_STREAMS)
#define POOL_IS_SMALL(pool) ((pool) % N_SIZE_CLASSES == POOL_SMALL)

typedef struct _Segment Segment;
typedef struct _Block Block;
typedef struct _FreeBucket FreeBucket;

struct _Block
{
  guint64 offset, size;
  gboolean allocated;
  guint seg_id;     /* seg->id, kept here for the free lists' order (block_cmp) */
  guint slot;       /* in the allocator's block pool */
  Segment *seg;
  Block *prev, *next;
  gboolean in_free; /* in its pool's free list (iff free) */
};

struct _Segment
{
  guint id;
  guint slot;       /* in the allocator's segment pool */
  int pool;         /* its stream's small or large pool (index into free[], grow[]) */
  guint64 size;     /* bytes of address range (expandable: the grown end) */
  Block *first;
  Block *last;
  /* expandable only: page bookkeeping */
  guint64 page;     /* page size */
  GArray *refs;     /* guint32 per page: allocated blocks overlapping it */
  GArray *mapped;   /* guint8 per page */
};

/* allocator_free.c: a pool's free blocks in (size, segment id, offset) order, kept in
 * buckets of size ranges (8 a power of two), each sorted (an array, or a tree while long),
 * with a bitmap of the non-empty ones (invariants in allocator_free.c). Blocks are
 * borrowed: the list owns its buckets. */
typedef struct
{
  FreeBucket *buckets; /* n_buckets, grown to the highest bucket used; owned */
  guint n_buckets;
  guint n_blocks;      /* free blocks in the list */
  guint64 used[8];     /* bit k: buckets[k] is non-empty (sizes < 2^64 map below 512) */
} AllocFreeList;

/* Makes fl empty; alloc_free_clear frees its arrays and classes (not the blocks). */
void alloc_free_init (AllocFreeList *fl);
void alloc_free_clear (AllocFreeList *fl);
/* The best fit: the first block of fl in (size, segment id, offset) order with size ≥
 * `size` (bytes), or NULL. It stays in the list. */
Block *alloc_free_best_fit (const AllocFreeList *fl, guint64 size);
/* alloc_free_best_fit, taken out of fl (in_free cleared); NULL if none. */
Block *alloc_free_take_best_fit (AllocFreeList *fl, guint64 size);
/* Puts free block b (not in a list: asserted) in fl, setting in_free. Its key
 * (size, seg_id, offset) must differ from every block's in fl and stay unchanged while it
 * is there. */
void alloc_free_insert (AllocFreeList *fl, Block *b);
/* Takes block b (in fl: asserted) out of it, clearing in_free. */
void alloc_free_remove (AllocFreeList *fl, Block *b);
/* The bucket of a block of `size` bytes (a multiple of 512): u = size / 512 for u < 8, else
 * 8 (f − 2) + the 3 bits below u's leading bit f; never lower for a larger size. */
guint alloc_free_bucket (guint64 size);
/* Appends fl's blocks to `out` in (size, segment id, offset) order (tests, checks). */
void alloc_free_blocks (const AllocFreeList *fl, GPtrArray *out);
/* A bucket is a sorted array until an insertion finds ALLOC_FREE_TREE_FROM blocks in it,
 * then an ordered tree (GSequence) until a removal leaves ALLOC_FREE_ARRAY_AT; either form
 * keeps the same order. alloc_free_n_trees: fl's buckets that are trees now (tests). */
#define ALLOC_FREE_TREE_FROM 256
#define ALLOC_FREE_ARRAY_AT 64
guint alloc_free_n_trees (const AllocFreeList *fl);

struct _ModelAllocator
{
  guint64 capacity;
  gboolean expandable;
  GPtrArray *segments;           /* Segment*, creation order */
  AllocFreeList free[N_POOLS];   /* each pool's free blocks; (size, seg id, offset) distinct */
  SimVec blocks;                 /* Block*: id → block while live (NULL once freed); 0 unused */
  Segment *grow[N_POOLS];        /* expandable: the pool's segment */
  guint next_segment_id;
  guint64 allocated, reserved, peak_reserved, peak_allocated;
  guint64 reserved_before, peak_reserved_before; /* B: at the start of the last malloc */
  guint n_releases;
  /* A release since the last release_cached() left a segment all free (a caching
   * allocator: its merged block spans the segment) or released any block (expandable): only
   * such a release can leave a segment (or an expandable page) with nothing allocated in
   * it, since a pass gives back every all-free segment and a new segment's first block is
   * allocated at once; so without one a new pass would free nothing. Saves the
   * O(segments) scan on every request of a run that is out of memory (it made a 4000-layer
   * run quadratic; and an OOM run with thousands of segments, releasing blocks between its
   * new segments but rarely a whole segment, scanned them at each). */
  gboolean released_since_pass;
  /* Blocks and segments live in slot pools (stable addresses, no heap call per block):
   * splits and merges come in pairs on every malloc/free of a run, and a segment is made
   * per large request, so the heap stays out of the allocator model's hot path. A block
   * absorbed by a merge, or a segment given back, is reused by the next one made. */
  SimSlots block_pool;
  SimSlots segment_pool;
};

/* allocator_pages.c: the page map of expandable segments
 * (PYTORCH_CUDA_ALLOC_CONF=expandable_segments). */
/* Bytes of the pages block b covers that are not mapped yet (grows the page arrays to
 * cover b). */
guint64 alloc_unmapped_bytes (const Block *b);
/* Adds `delta` to the references of the pages b covers, mapping (and reserving) any page
 * newly referenced. */
void alloc_pages_ref (ModelAllocator *a, const Block *b, int delta);
/* Unmaps (and unreserves) every page of expandable segment s that no allocated block
 * overlaps (release_cached_blocks). */
void alloc_pages_unmap_unused (ModelAllocator *a, Segment *s);
