/* models/memory/allocator-private.h — the caching allocator's blocks and segments, shared by
 * models/memory/allocator.c (sizes, free lists, segments, malloc/free) and its leaf
 * models/memory/allocator_pages.c (the page map of expandable segments). Not a public header; invariants in allocator.c. */
#pragma once

#include "models/memory/allocator.h"
#include "sim/slots.h"

enum { POOL_SMALL, POOL_LARGE, N_POOLS };

typedef struct _Segment Segment;
typedef struct _Block Block;

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
  GPtrArray *free[N_POOLS];      /* free Block*, sorted by (size, segment id, offset): distinct keys */
  GPtrArray *blocks;             /* id → Block* while live (NULL once freed); id 0 unused */
  Segment *grow[N_POOLS];        /* expandable: the pool's segment */
  guint finger[N_POOLS];         /* where the pool's last free-list search ended (a hint) */
  guint next_segment_id;
  guint64 allocated, reserved, peak_reserved, peak_allocated;
  guint64 reserved_before, peak_reserved_before; /* B: at the start of the last malloc */
  guint n_releases;
  /* A block was released since the last release_cached(): only a release can leave a
   * segment (or an expandable page) with nothing allocated in it, so without one a new pass
   * would free nothing. Saves the O(segments) scan on every request of a run that is out
   * of memory (it made a 4000-layer run quadratic). */
  gboolean released_since_pass;
  /* Blocks and segments live in slot pools (stable addresses, no heap call per block):
   * splits and merges come in pairs on every malloc/free of a run, and a segment is made
   * per large request, so the heap stays out of the allocator model's hot path. A block
   * absorbed by a merge, or a segment given back, is reused by the next one made. */
  SimSlots block_pool;
  SimSlots segment_pool;
};

/* allocator.c: the index of the first block of list[lo, hi) (Block*, sorted by size, segment
 * id, offset; lo ≤ hi ≤ length) not below `key` in that order, hi if none: the lower bound,
 * found by galloping outward from index `hint` (any value: clamped to [lo, hi]), so an answer
 * d places from the hint costs O(log d) comparisons. */
guint alloc_lower_bound_near (const GPtrArray *list, const Block *key, guint lo, guint hi,
                              guint hint);

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
