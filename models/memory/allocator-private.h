/* models/memory/allocator-private.h — the caching allocator's blocks and segments, shared by
 * models/memory/allocator.c (sizes, free lists, segments, malloc/free) and its leaf
 * models/memory/allocator_pages.c (the page map of expandable segments). Not a public header; invariants in allocator.c. */
#pragma once

#include "models/memory/allocator.h"
#include "sim/slots.h"
#include "sim/vec.h"

enum { POOL_SMALL, POOL_LARGE, N_POOLS };

typedef struct _Segment Segment;
typedef struct _Block Block;

struct _Block
{
  guint64 offset, size;
  gboolean allocated;
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
  /* B: where the segment starts in the allocator's own address order: the sum of the sizes
   * of the segments made before it (allocator.c segment_new), so a later segment starts
   * past the end of every earlier one and base + offset orders blocks as (segment id,
   * offset) does. An expandable segment grows past its base, but it is its pool's only
   * segment, and the free lists are per pool. */
  guint64 base;
  Block *first;
  Block *last;
  /* expandable only: page bookkeeping */
  guint64 page;     /* page size */
  GArray *refs;     /* guint32 per page: allocated blocks overlapping it */
  GArray *mapped;   /* guint8 per page */
};

/* One free block in its pool's free list, with its sort key inline, so that a search reads
 * consecutive memory instead of following a pointer per comparison (the searches were the
 * largest single cost of a sweep of single-GPU scenarios by `perf`: bench/RESULTS.md,
 * 2026-12-07, issue 17). Order: size, then addr; two free blocks of one pool never share
 * a key (blocks of one segment do not overlap, segments do not overlap in base order). */
typedef struct
{
  guint64 size;  /* B: block->size */
  guint64 addr;  /* B: block->seg->base + block->offset */
  Block *block;  /* borrowed from the block pool */
} FreeEntry;

struct _ModelAllocator
{
  guint64 capacity;
  gboolean expandable;
  GPtrArray *segments;           /* Segment*, creation order */
  SimVec free[N_POOLS];          /* FreeEntry of the pool's free blocks, sorted by (size,
                                  * addr): distinct keys */
  SimVec blocks;                 /* Block*: id → block while live (NULL once freed); id 0
                                  * unused */
  Segment *grow[N_POOLS];        /* expandable: the pool's segment */
  guint next_segment_id;
  guint64 next_base;             /* B: the base of the next segment made (Segment.base) */
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

/* allocator.c: the index of the first entry of list[lo, hi) (FreeEntry, sorted by size then
 * addr; lo ≤ hi ≤ the list's length) not below the key (size, addr) in that order, hi if
 * none: the lower bound, by a branch-free binary search. */
guint alloc_lower_bound (const FreeEntry *list, guint64 size, guint64 addr, guint lo, guint hi);

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
