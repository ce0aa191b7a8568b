/* models/memory/allocator-private.h — the caching allocator's blocks and segments, shared by
 * models/memory/allocator.c (sizes, free lists, segments, malloc/free) and models/memory/allocator_pages.c
 * (expandable segments' pages). Not a public header; invariants in allocator.c. */
#pragma once

#include "models/memory/allocator.h"

enum { POOL_SMALL, POOL_LARGE, N_POOLS };

typedef struct _Segment Segment;
typedef struct _Block Block;

struct _Block
{
  guint64 offset, size;
  gboolean allocated;
  Segment *seg;
  Block *prev, *next;
  GSequenceIter *free_iter; /* in the pool's free sequence when free */
};

struct _Segment
{
  guint id;
  int pool;
  guint64 size;     /* bytes of address range (expandable: the grown end) */
  Block *first;
  Block *last;
  /* expandable only: page bookkeeping */
  guint64 page;     /* page size */
  GArray *refs;     /* guint32 per page: allocated blocks overlapping it */
  GArray *mapped;   /* guint8 per page */
};

struct _ModelAllocator
{
  guint64 capacity;
  gboolean expandable;
  GPtrArray *segments;           /* Segment*, creation order */
  GSequence *free[N_POOLS];      /* Block*, by (size, segment id, offset) */
  GPtrArray *blocks;             /* id → Block* while live (NULL once freed); id 0 unused */
  Segment *grow[N_POOLS];        /* expandable: the pool's segment */
  guint next_segment_id;
  guint64 allocated, reserved, peak_reserved, peak_allocated;
  guint n_releases;
  /* A block was released since the last release_cached(): only a release can leave a
   * segment (or an expandable page) with nothing allocated in it, so without one a new pass
   * would free nothing. Saves the O(segments) scan on every request of a run that is out
   * of memory (it made a 4000-layer run quadratic). */
  gboolean released_since_pass;
};

/* allocator.c */
void alloc_free_remove (Block *b);
/* Best fit: the first free block of `pool` with size >= `size` in (size, segment id,
 * offset) order (get_free_block), or NULL. */
Block *alloc_best_fit (ModelAllocator *a, int pool, guint64 size);
/* A new segment of `size` B in `pool` (page arrays when expandable), one block spanning it
 * when size > 0, registered in creation order; the caller counts it in reserved. */
Segment *alloc_segment_new (ModelAllocator *a, int pool, guint64 size);

/* allocator_pages.c: expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments). */
/* Bytes of the pages block b covers that are not mapped yet. */
guint64 alloc_unmapped_bytes (const Block *b);
/* Adds `delta` to the references of the pages b covers, mapping (and reserving) any page
 * newly referenced. */
void alloc_pages_ref (ModelAllocator *a, const Block *b, int delta);
/* A free block of at least `size` in `pool`, extending the pool's segment when none is
 * large enough (not yet split, allocated or mapped). */
Block *alloc_expandable_block (ModelAllocator *a, int pool, guint64 size);
