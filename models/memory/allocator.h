/* models/memory/allocator.h — a model of PyTorch's CUDA caching allocator (one device).
 *
 * Source: c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.x (DeviceCachingAllocator::malloc,
 * get_free_block, should_split, free_block/try_merge_blocks, release_cached_blocks,
 * round_size, get_allocation_size; ExpandableSegment since 2.1). Default configuration
 * (no max_split_size_mb, no roundup_power2_divisions, no garbage_collection_threshold).
 *
 *   rounding     every request is rounded up to a multiple of 512 B (kMinBlockSize), at
 *                least 512 B;
 *   pools        rounded size ≤ 1 MiB (kSmallSize) → small pool, else large pool;
 *   segments     a new segment (cudaMalloc) is 2 MiB (kSmallBuffer) for the small pool,
 *                20 MiB (kLargeBuffer) for large requests < 10 MiB (kMinLargeAlloc), and
 *                the request rounded up to 2 MiB (kRoundLarge) otherwise;
 *   streams      every block belongs to the stream it was allocated on (the current CUDA
 *                stream of the request), and a free block serves only requests of its own
 *                stream: get_free_block returns false when the best candidate's
 *                `block->stream != p.stream()` (the pools are ordered by stream first,
 *                BlockComparatorSize), so each stream has its own small and large pool and
 *                a segment holds blocks of one stream; under expandable_segments each
 *                stream grows its own segments. Only release_cached_blocks (below) crosses
 *                streams: it frees the fully free segments of every stream;
 *   best fit     the smallest free cached block of the request's pool that is large enough
 *                (ties: lowest segment, lowest offset — PyTorch orders by size, then address);
 *   split        the block is split when the remainder is ≥ 512 B (small pool, and both
 *                pools under expandable_segments) or > 1 MiB (large pool); otherwise the
 *                whole block is handed out (and counted as allocated: PyTorch's
 *                allocated_bytes counts block sizes);
 *   free         a freed block returns to its pool and merges with free neighbours of the
 *                same segment; segments stay cached (reserved);
 *   capacity     if a new segment would exceed the capacity, every fully free segment is
 *                released (release_cached_blocks, as on a failed cudaMalloc) and the
 *                segment is tried again; if it still does not fit, the request is an OOM.
 *
 * expandable_segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True): each pool has one
 * segment whose virtual range grows; physical memory is mapped in pages of 2 MiB (small
 * pool) or 20 MiB (large pool, ExpandableSegment's segment_size). A request that no free
 * block satisfies extends the end of the segment (merging with a free tail block); a block
 * maps the pages it covers. Free blocks stay mapped (cached) until capacity is exceeded;
 * then every page that no allocated block touches is unmapped (release_cached_blocks →
 * unmap_block) and the mapping retried. Reserved = mapped pages, so fragmentation across
 * segments disappears and what remains is page granularity.
 *
 * The allocator sees one block per tensor, so what it caches depends on how the plan cuts
 * a peak into tensors. The loss head is the case that shows it (pinned by test_allocator's
 * test_loss_head_*): HF's upcast loss frees the forward's e-byte logits and fp32 copy
 * (2 + 4 B a logit) and its backward then allocates two fp32 tensors (4 + 4 B a logit). As
 * tensors, the freed fp32 copy's block serves the first and one new segment the second;
 * booked as one 6 B and one 8 B block, nothing cached fits the 8 B request (best fit never
 * merges blocks of two segments, and release_cached_blocks runs only when cudaMalloc fails),
 * so a new 8 B segment would leave 6 B a logit cached. With the transformers 4.46–4.48 shift
 * copy the forward frees more than the backward asks, so neither way caches much. The plan
 * therefore books workspaces as tensors where they are known (cost.h
 * ModelPass.workspace_tensors; foreach AdamW's per-parameter temporaries).
 *
 * Reserved bytes are not monotone in the sizes asked for, in PyTorch as here: a long-lived
 * tensor that finds no cached hole large enough splits the smallest whole cached segment,
 * which the next request of that segment's size then misses, and a larger run whose hole
 * fits it does not (test_allocator's test_reserved_not_monotone; S1 at micro-batch 11 and
 * 12).
 *
 * Model limits: a freed block is reusable by its stream at once (the stream-ordered
 * semantics; no record_stream or cross-stream event waits), no per-process memory fraction,
 * a request is never served from the other pool, and an OOM request is still granted (over
 * capacity) so that a simulation can go on and report how far over it went.
 *
 * Units: bytes, exact integers (guint64) inside; doubles at the interface are rounded up.
 */
#pragma once

#include <glib.h>

#define MODEL_ALLOC_MIN_BLOCK 512.0                      /* kMinBlockSize */
#define MODEL_ALLOC_SMALL_SIZE (1024.0 * 1024)           /* kSmallSize */
#define MODEL_ALLOC_SMALL_BUFFER (2 * 1024.0 * 1024)     /* kSmallBuffer */
#define MODEL_ALLOC_LARGE_BUFFER (20 * 1024.0 * 1024)    /* kLargeBuffer */
#define MODEL_ALLOC_MIN_LARGE_ALLOC (10 * 1024.0 * 1024) /* kMinLargeAlloc */
#define MODEL_ALLOC_ROUND_LARGE (2 * 1024.0 * 1024)      /* kRoundLarge */

typedef struct _ModelAllocator ModelAllocator;

/* A device of `capacity` bytes available to the allocator (GPU memory minus the CUDA
 * context; G_MAXDOUBLE or INFINITY for unlimited). */
ModelAllocator *model_allocator_new (double capacity, gboolean expandable_segments);
void model_allocator_free (ModelAllocator *alloc); /* NULL is a no-op */

/* Allocates `bytes` (> 0). Returns the block id (> 0) for model_allocator_release().
 * *oom (may be NULL) is set TRUE when the request could not be satisfied within the
 * capacity even after releasing cached segments: PyTorch would raise "CUDA out of memory";
 * the block is granted anyway (reserved then exceeds the capacity). A request above
 * MODEL_ALLOCATOR_MAX_REQUEST (16 TiB, beyond any GPU) is always out of memory and booked
 * at that size, so sums stay exact in 64 bits. */
#define MODEL_ALLOCATOR_MAX_REQUEST 17592186044416.0 /* 2^44 B */
guint model_allocator_malloc (ModelAllocator *alloc, double bytes, gboolean *oom);

/* Streams an allocator tells apart (0 … MODEL_ALLOCATOR_N_STREAMS − 1; what each stands for
 * is the caller's: models/memory/ledger.h ModelAllocStream). */
#define MODEL_ALLOCATOR_N_STREAMS 4
/* As model_allocator_malloc(), on CUDA stream `stream` (< MODEL_ALLOCATOR_N_STREAMS, else
 * g_return 0): served from that stream's cached blocks only, or a new segment of that
 * stream. model_allocator_malloc() is stream 0. */
guint model_allocator_malloc_on (ModelAllocator *alloc, double bytes, guint stream,
                                 gboolean *oom);

/* The reserved bytes and their high-water mark (B) as they were when the last
 * model_allocator_malloc() began, before any cached segment it released: what a caller
 * reports about a request that ran out of memory (0 before any request). */
void model_allocator_before_last (const ModelAllocator *alloc, double *reserved,
                                  double *peak_reserved);

/* Frees block `id` (must be live: g_assert). */
void model_allocator_release (ModelAllocator *alloc, guint id);
/* Frees the n blocks ids[0 … n) (each live and named once: g_assert; `ids` borrowed), with
 * the same result as model_allocator_release() of each in turn (the figures, the cached
 * blocks and the blocks later requests get), in fewer steps when some lie side by side: a
 * buffer of several tensors. */
void model_allocator_release_n (ModelAllocator *alloc, const guint *ids, guint n);

/* Size PyTorch rounds a request to (≥ 512, multiple of 512), and the segment size a new
 * cudaMalloc takes for it (non-expandable mode). Bytes. */
double model_allocator_round_size (double bytes);
double model_allocator_segment_size (double bytes);

/* Current figures (B): allocated = Σ sizes of live blocks (PyTorch's allocated_bytes),
 * reserved = Σ segment sizes (mapped pages when expandable: reserved_bytes), and the
 * highest reserved so far. Number of segments (expandable: pools with mapped pages). */
double model_allocator_allocated (const ModelAllocator *alloc);
double model_allocator_reserved (const ModelAllocator *alloc);
double model_allocator_peak_reserved (const ModelAllocator *alloc);
double model_allocator_peak_allocated (const ModelAllocator *alloc);
guint model_allocator_n_segments (const ModelAllocator *alloc);
/* torch.cuda.reset_peak_memory_stats(): the high-water marks of reserved and allocated
 * bytes restart from the current figures (the cache itself is untouched). */
void model_allocator_reset_peak (ModelAllocator *alloc);
/* Number of times cached segments were released to retry a request. */
guint model_allocator_n_releases (const ModelAllocator *alloc);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (ModelAllocator, model_allocator_free)
