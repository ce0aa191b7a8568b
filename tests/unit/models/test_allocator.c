/* tests/unit/models/test_allocator.c — the caching-allocator model against hand-worked
 * sequences of PyTorch's rules (c10/cuda/CUDACachingAllocator.cpp, see models/memory/allocator.h).
 * MiB = 2^20 B throughout. */
#include "config.h"

#include <math.h>
#include "models/memory/allocator.h"
#include "models/memory/allocator-private.h"
#include "tests/testlib.h"

#define MiB (1024.0 * 1024.0)

/* round_size: at least 512 B, multiples of 512 B. get_allocation_size: ≤ 1 MiB → 2 MiB
 * segment; (1 MiB, 10 MiB) → 20 MiB; ≥ 10 MiB → rounded up to 2 MiB. */
static void
test_rounding (void)
{
  CU_ASSERT_EQUAL (model_allocator_round_size (1), 512);
  CU_ASSERT_EQUAL (model_allocator_round_size (512), 512);
  CU_ASSERT_EQUAL (model_allocator_round_size (513), 1024);
  CU_ASSERT_EQUAL (model_allocator_segment_size (1 * MiB), 2 * MiB);
  CU_ASSERT_EQUAL (model_allocator_segment_size (1 * MiB + 1), 20 * MiB);
  CU_ASSERT_EQUAL (model_allocator_segment_size (10 * MiB - 512), 20 * MiB);
  CU_ASSERT_EQUAL (model_allocator_segment_size (10 * MiB), 10 * MiB);
  /* 10 MiB + 1 B rounds to 10 MiB + 512 B, then up to the next 2 MiB: 12 MiB. */
  CU_ASSERT_EQUAL (model_allocator_segment_size (10 * MiB + 1), 12 * MiB);
}

/* Small pool: 2048 requests of 1 KiB fill exactly one 2 MiB segment (2048 × 1 KiB = 2 MiB);
 * the 2049th needs a second one. A 100 B request is counted as 512 B allocated. */
static void
test_small_segments (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  for (int i = 0; i < 2048; i++)
    model_allocator_malloc (a, 1024, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 2 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 1);
  model_allocator_malloc (a, 100, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 4 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 2 * MiB + 512);
}

/* Large pool below 10 MiB: five 4 MiB tensors share one 20 MiB segment (the fifth takes
 * the 4 MiB remainder whole); a sixth opens a second segment. */
static void
test_large_segments (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  for (int i = 0; i < 5; i++)
    model_allocator_malloc (a, 4 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 20 * MiB);
  model_allocator_malloc (a, 4 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 40 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 24 * MiB);
}

/* Best fit: with cached free blocks of 30 and 12 MiB, an 11 MiB request takes the 12 MiB
 * one (the smallest that fits) whole: the 1 MiB remainder is not > 1 MiB, so no split and
 * allocated counts 12 MiB. No new segment. */
static void
test_best_fit_reuse (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  guint x = model_allocator_malloc (a, 30 * MiB, NULL);
  guint y = model_allocator_malloc (a, 12 * MiB, NULL);
  model_allocator_release (a, x);
  model_allocator_release (a, y);
  model_allocator_malloc (a, 11 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 42 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 12 * MiB);
  /* The 30 MiB block is still whole: a 30 MiB request fits without a new segment. */
  model_allocator_malloc (a, 30 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 42 * MiB);
}

/* Reserved memory is not monotone in the sizes asked for: PyTorch's rules, not a modelling
 * slip (S1, Llama 3.2 1B fp32 on an A100-80GB, full checkpointing, reserves 62.22 GiB at
 * micro-batch 11 and 55.71 GiB at 12; this is its mechanism at MiB scale). The sequence of
 * "micro-batch" m: a hole of h = 4m MiB is left in a segment, two cached whole segments of
 * w = 40 + 2m MiB (the head's logit-sized workspace), then a long-lived G = 12 MiB tensor
 * (the embedding's gradient, the same at every m) and again two requests of w. Rules
 * (c10/cuda/CUDACachingAllocator.cpp): get_free_block takes the first block of the pool's
 * set ordered by (stream, size, address) not below the request (lower_bound: the smallest
 * that fits, the lower address on a tie); should_split splits a large-pool block when the
 * remainder is > kSmallSize (1 MiB); get_allocation_size rounds a request ≥ kMinLargeAlloc
 * (10 MiB) up to kRoundLarge (2 MiB) for a new segment (alloc_block's cudaMalloc); cached
 * blocks are released only when cudaMalloc fails (release_cached_blocks), never here.
 *   m = 2 (h 8, w 44): P = 28 (a 28 MiB segment S0), freed; x = 8 takes it, split (20 > 1
 *   MiB left); y = 20 takes the remainder whole; x freed: an 8 MiB hole before y. W1, W2 =
 *   44: the hole is too small, two new segments S1, S2 (reserved 116), freed. G = 12: free
 *   blocks 8 (S0), 44 (S1), 44 (S2): the smallest ≥ 12 is S1's 44, split (32 left). W3 =
 *   44 takes S2; W4 = 44 fits neither 8 nor 32: a new segment S3. Reserved 28 + 3 × 44 =
 *   160 MiB; allocated at most 20 + 12 + 2 × 44 = 120 (y, G, W3, W4).
 *   m = 3 (h 12, w 46): P = 32, x = 12 (split, 20 left), y = 20, x freed: a 12 MiB hole.
 *   W1, W2 = 46: S1, S2 (reserved 124), freed. G = 12 takes the 12 MiB hole exactly (no
 *   split), W3, W4 = 46 take S1, S2: reserved 32 + 2 × 46 = 124 MiB; allocated at most
 *   20 + 12 + 2 × 46 = 124.
 * So m = 3 allocates more (124 > 120 MiB) and reserves less (124 < 160 MiB): whether G
 * finds a hole decides whether it splits a cached segment the next large request needed.
 * In S1 the hole is in the segment that held the first step's head workspace and then its
 * gradients and optimizer states: at the second step's backward of the head its largest
 * hole is 0.85 GB at micro-batch 11 and 2.06 GB at 12, against G = 1,050,681,344 B. */
static double
reserved_after_hole (double m, double *peak_allocated)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  double h = 4 * m * MiB, w = (40 + 2 * m) * MiB;
  model_allocator_release (a, model_allocator_malloc (a, h + 20 * MiB, NULL));
  guint x = model_allocator_malloc (a, h, NULL);
  model_allocator_malloc (a, 20 * MiB, NULL);
  model_allocator_release (a, x);
  guint w1 = model_allocator_malloc (a, w, NULL);
  guint w2 = model_allocator_malloc (a, w, NULL);
  model_allocator_release (a, w1);
  model_allocator_release (a, w2);
  model_allocator_malloc (a, 12 * MiB, NULL);
  model_allocator_malloc (a, w, NULL);
  model_allocator_malloc (a, w, NULL);
  *peak_allocated = model_allocator_peak_allocated (a);
  return model_allocator_reserved (a);
}

static void
test_reserved_not_monotone (void)
{
  double alloc2, alloc3;
  CU_ASSERT_EQUAL (reserved_after_hole (2, &alloc2), 160 * MiB);
  CU_ASSERT_EQUAL (reserved_after_hole (3, &alloc3), 124 * MiB);
  CU_ASSERT_EQUAL (alloc2, 120 * MiB);
  CU_ASSERT_EQUAL (alloc3, 124 * MiB);
}

/* Split then merge: two 4 MiB tensors split one 20 MiB segment (4 + 4 + 12 free). Freed,
 * the three pieces merge back to 20 MiB, so a 20 MiB request reuses it. Without merging
 * the largest piece would be 12 MiB and a second segment would be needed. */
static void
test_split_and_merge (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  guint x = model_allocator_malloc (a, 4 * MiB, NULL);
  guint y = model_allocator_malloc (a, 4 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 20 * MiB);
  model_allocator_release (a, x);
  model_allocator_release (a, y);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 0);
  model_allocator_malloc (a, 20 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 20 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 1);
}

/* Fragmentation, the worked case of both modes (capacity 480 MiB):
 *   A = 400 MiB (segment of 400), freed; B = 160 and C = 160 split it: B [0,160),
 *   C [160,320), free [320,400); B freed: holes of 160 and 80 MiB, 240 MiB free in all.
 *   D = 200 MiB fits no hole.
 * Caching segments: D needs a new 200 MiB segment: 400 + 200 > 480; no segment is fully
 *   free to release, so it is an OOM although only 360 MiB are allocated.
 * Expandable (20 MiB pages): D extends the free tail to [320,520): pages 16..25, of which
 *   20..25 are new (+120 MiB → 520 > 480). Unmapping pages no live block touches (0..7 of
 *   B's hole, 16..19 of the tail) leaves C's pages 8..15 (160 MiB); D then maps its ten
 *   pages (200 MiB): reserved 360 MiB = allocated, no OOM. */
/* A request no GPU could hold (1e22 B: eager scores of a 16M-token sequence) is out of
 * memory, booked at MODEL_ALLOCATOR_MAX_REQUEST, in both modes, whatever the capacity; a
 * later small request still works. */
static void
test_oversized_request (void)
{
  for (int expandable = 0; expandable <= 1; expandable++)
    {
      g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, expandable);
      gboolean oom = FALSE;
      guint id = model_allocator_malloc (a, 1e22, &oom);
      CU_ASSERT_TRUE (oom);
      CU_ASSERT (model_allocator_allocated (a) >= MODEL_ALLOCATOR_MAX_REQUEST);
      model_allocator_release (a, id);
      oom = TRUE;
      model_allocator_malloc (a, 1 * MiB, &oom);
      CU_ASSERT_FALSE (oom);
    }
}

static void
fragment (ModelAllocator *a, gboolean *oom)
{
  model_allocator_release (a, model_allocator_malloc (a, 400 * MiB, NULL));
  guint b = model_allocator_malloc (a, 160 * MiB, NULL);
  model_allocator_malloc (a, 160 * MiB, NULL);
  model_allocator_release (a, b);
  model_allocator_malloc (a, 200 * MiB, oom);
}

static void
test_fragmentation (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (480 * MiB, FALSE);
  gboolean oom = FALSE;
  fragment (a, &oom);
  CU_ASSERT_TRUE (oom);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 360 * MiB);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 600 * MiB); /* granted over capacity */
  CU_ASSERT (model_allocator_reserved (a) > model_allocator_allocated (a));
}

static void
test_expandable_removes_fragmentation (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (480 * MiB, TRUE);
  gboolean oom = TRUE;
  fragment (a, &oom);
  CU_ASSERT_FALSE (oom);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 360 * MiB);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 360 * MiB);
  CU_ASSERT_EQUAL (model_allocator_peak_reserved (a), 400 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_releases (a), 1);
}

/* Release and retry (capacity 64 MiB): two 30 MiB segments, one freed (cached). A 32 MiB
 * request needs a new segment: 60 + 32 > 64, so cached segments are released (30 MiB
 * back), then 30 + 32 = 62 ≤ 64 succeeds. If both stay live, 92 > 64 is an OOM. */
static void
test_release_and_retry (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (64 * MiB, FALSE);
  guint x = model_allocator_malloc (a, 30 * MiB, NULL);
  model_allocator_malloc (a, 30 * MiB, NULL);
  model_allocator_release (a, x);
  gboolean oom = TRUE;
  model_allocator_malloc (a, 32 * MiB, &oom);
  CU_ASSERT_FALSE (oom);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 62 * MiB);
  CU_ASSERT_EQUAL (model_allocator_peak_reserved (a), 62 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_releases (a), 1);

  g_autoptr (ModelAllocator) b = model_allocator_new (64 * MiB, FALSE);
  model_allocator_malloc (b, 30 * MiB, NULL);
  model_allocator_malloc (b, 30 * MiB, NULL);
  model_allocator_malloc (b, 32 * MiB, &oom);
  CU_ASSERT_TRUE (oom);
}

/* The figures before a request (model_allocator_before_last), capacity 64 MiB: two 30 MiB
 * segments, one freed (reserved 60 MiB, cached 30). A 40 MiB request releases the cached
 * segment (reserved 30) and still does not fit (30 + 40 > 64): an OOM, granted, reserved
 * 70 MiB. Before it, reserved and its peak were 60 MiB: neither the 30 after the release
 * nor the 70 after the grant. */
static void
test_before_last (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (64 * MiB, FALSE);
  double reserved = -1, peak = -1;
  model_allocator_before_last (a, &reserved, &peak);
  CU_ASSERT_EQUAL (reserved, 0);
  CU_ASSERT_EQUAL (peak, 0);
  guint x = model_allocator_malloc (a, 30 * MiB, NULL);
  model_allocator_malloc (a, 30 * MiB, NULL);
  model_allocator_release (a, x);
  gboolean oom = FALSE;
  model_allocator_malloc (a, 40 * MiB, &oom);
  CU_ASSERT_TRUE (oom);
  CU_ASSERT_EQUAL (model_allocator_n_releases (a), 1);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 70 * MiB);
  model_allocator_before_last (a, &reserved, &peak);
  CU_ASSERT_EQUAL (reserved, 60 * MiB);
  CU_ASSERT_EQUAL (peak, 60 * MiB);
}

/* Small and large requests never share a pool: a 512 B tensor opens a 2 MiB segment even
 * when a large segment has free room. */
static void
test_pools_apart (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  model_allocator_malloc (a, 4 * MiB, NULL); /* 20 MiB segment, 16 MiB free */
  model_allocator_malloc (a, 512, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 22 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 2);
}

/* Streams (allocator.h): a block freed on stream 1 is cached for stream 1 only. A 30 MiB
 * tensor on stream 1, freed: reserved 30 MiB, all cached. The same request on stream 0
 * finds nothing of its own stream and opens a segment (60 MiB reserved); on stream 1 it
 * takes the cached block back (reserved unchanged). */
static void
test_streams_apart (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  model_allocator_release (a, model_allocator_malloc_on (a, 30 * MiB, 1, NULL));
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 30 * MiB);
  model_allocator_malloc_on (a, 30 * MiB, 0, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 60 * MiB);
  model_allocator_malloc_on (a, 30 * MiB, 1, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 60 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 60 * MiB);
  /* model_allocator_malloc is stream 0: it does not reuse a stream-3 block either */
  g_autoptr (ModelAllocator) b = model_allocator_new (INFINITY, FALSE);
  model_allocator_release (b, model_allocator_malloc_on (b, 4 * MiB, 3, NULL));
  model_allocator_malloc (b, 4 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (b), 40 * MiB); /* two 20 MiB segments */
}

/* Only release_cached_blocks crosses streams: capacity 64 MiB, 30 MiB cached for stream 2
 * and 30 MiB live on stream 0; a 32 MiB stream-0 request does not fit beside both
 * (92 > 64), so the cached stream-2 segment is released and the request fits (62 MiB). */
static void
test_streams_release (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (64 * MiB, FALSE);
  model_allocator_release (a, model_allocator_malloc_on (a, 30 * MiB, 2, NULL));
  model_allocator_malloc_on (a, 30 * MiB, 0, NULL);
  gboolean oom = TRUE;
  model_allocator_malloc_on (a, 32 * MiB, 0, &oom);
  CU_ASSERT_FALSE (oom);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 62 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_releases (a), 1);
}

/* Under expandable_segments each stream grows its own segment (find_expandable_block
 * takes the stream): 40 MiB mapped for stream 1 and freed stays mapped for it, so a
 * 40 MiB stream-0 request maps 40 MiB more (80 reserved); without the stream the free
 * pages would serve it (40). */
static void
test_streams_expandable (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, TRUE);
  model_allocator_release (a, model_allocator_malloc_on (a, 40 * MiB, 1, NULL));
  model_allocator_malloc_on (a, 40 * MiB, 0, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 80 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 2);
  g_autoptr (ModelAllocator) b = model_allocator_new (INFINITY, TRUE);
  model_allocator_release (b, model_allocator_malloc_on (b, 40 * MiB, 1, NULL));
  model_allocator_malloc_on (b, 40 * MiB, 1, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (b), 40 * MiB);
}

/* The loss head (allocator.h): HF's upcast loss for L logits in bf16. U = 256 MiB stands for
 * one byte a logit: e-byte logits 2U = 512 MiB, fp32 tensors 4U = 1024 MiB; the LM head's
 * gradient 128 MiB. Every size is a multiple of 2 MiB, so segments are the sizes.
 * Booked as one block a pass: the saved log-probabilities C (1024, segment 1), the forward's
 * 6U lump (1536, segment 2) freed; the gradient takes the 1536 block (the only free one)
 * split to 128 + 1408 (1408 > 1 MiB); the backward's 8U lump (2048) fits no cached block
 * and blocks of two segments never merge, so segment 3: reserved 1024 + 1536 + 2048 =
 * 4608 MiB, allocated 1024 + 128 + 2048 = 3200 MiB, 1408 MiB cached. */
static void
test_loss_head_lumped (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  model_allocator_malloc (a, 1024 * MiB, NULL);
  model_allocator_release (a, model_allocator_malloc (a, 1536 * MiB, NULL));
  model_allocator_malloc (a, 128 * MiB, NULL);
  model_allocator_malloc (a, 2048 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 4608 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 3200 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 3);
}

/* The same step as PyTorch allocates it, tensor by tensor: C (1024), the logits A (512)
 * and the fp32 copy B (1024), each a segment; B then A freed. The gradient takes the
 * smallest free block that fits, A's 512, split to 128 + 384; nll_loss_backward's D (1024)
 * takes B's block exactly; _log_softmax_backward_data's E (1024) fits only a new segment:
 * reserved 1024 + 512 + 1024 + 1024 = 3584 MiB, allocated 1024 + 128 + 1024 + 1024 =
 * 3200 MiB (as lumped), 384 MiB cached. */
static void
test_loss_head_tensors (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  model_allocator_malloc (a, 1024 * MiB, NULL);
  guint logits = model_allocator_malloc (a, 512 * MiB, NULL);
  guint f32 = model_allocator_malloc (a, 1024 * MiB, NULL);
  model_allocator_release (a, f32);
  model_allocator_release (a, logits);
  model_allocator_malloc (a, 128 * MiB, NULL);
  model_allocator_malloc (a, 1024 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 2560 * MiB);
  model_allocator_malloc (a, 1024 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 3584 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 3200 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 4);
}

/* transformers 4.46–4.48's shifted copy: the forward allocates A (512), B (1024), the
 * shifted copy G (1000) and the saved log-probabilities C' (1000), then frees B, G and A;
 * the gradient splits A's 512 block; D' (1000) takes G's block exactly; E' (1000) takes B's
 * 1024 split (24 MiB > 1 MiB remain): no segment is added, reserved stays 512 + 1024 + 1000
 * + 1000 = 3536 MiB with allocated 128 + 3 × 1000 = 3128 MiB. */
static void
test_loss_head_shift (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  guint logits = model_allocator_malloc (a, 512 * MiB, NULL);
  guint f32 = model_allocator_malloc (a, 1024 * MiB, NULL);
  guint shift = model_allocator_malloc (a, 1000 * MiB, NULL);
  model_allocator_malloc (a, 1000 * MiB, NULL);
  model_allocator_release (a, f32);
  model_allocator_release (a, shift);
  model_allocator_release (a, logits);
  model_allocator_malloc (a, 128 * MiB, NULL);
  model_allocator_malloc (a, 1000 * MiB, NULL);
  model_allocator_malloc (a, 1000 * MiB, NULL);
  CU_ASSERT_EQUAL (model_allocator_reserved (a), 3536 * MiB);
  CU_ASSERT_EQUAL (model_allocator_allocated (a), 3128 * MiB);
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), 4);
}

/* should_split: a cached 40 MiB block serving 39.5 MiB leaves 0.5 MiB. Without expandable
 * segments a large-pool remainder must be > 1 MiB, so the block goes out whole (40 MiB
 * allocated); with them any remainder ≥ 512 B is split off (39.5 MiB allocated). */
static void
test_expandable_split (void)
{
  for (int expandable = 0; expandable <= 1; expandable++)
    {
      g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, expandable);
      model_allocator_release (a, model_allocator_malloc (a, 40 * MiB, NULL));
      model_allocator_malloc (a, 39.5 * MiB, NULL);
      CU_ASSERT_EQUAL (model_allocator_allocated (a), expandable ? 39.5 * MiB : 40 * MiB);
      CU_ASSERT_EQUAL (model_allocator_reserved (a), 40 * MiB);
    }
}

/* The free lists against a linear-scan oracle, over 4,000 pseudo-random requests and
 * releases of 512 B – 24 MiB (both pools, splits, merges, several segments; caching and
 * expandable segments, each without a capacity and with 256 MiB, where cached segments or
 * pages are released and requests run out of memory): after every
 * step each pool's list is strictly increasing in (size, segment id, offset) and holds
 * exactly the free blocks of that pool's segments (walked through prev/next), no segment
 * of a caching allocator is all free unless released_since_pass says a release left one
 * (the pass it lets be skipped would give it back); and each
 * request that some free block can hold starts at the block a scan of all free blocks
 * names: the smallest size ≥ the rounded request, then the oldest segment, then the lowest
 * offset (CUDACachingAllocator get_free_block: lower_bound in a set ordered by
 * (stream, size, address), with our segment id and offset standing for the address). */
static gboolean
before (const Block *x, const Block *y)
{
  if (x->size != y->size)
    return x->size < y->size;
  if (x->seg->id != y->seg->id)
    return x->seg->id < y->seg->id;
  return x->offset < y->offset;
}

static void
check_free_lists (const ModelAllocator *a)
{
  /* no segment all free unless a release since the last pass left one (caching) */
  for (guint i = 0; i < a->segments->len && !a->expandable && !a->released_since_pass; i++)
    {
      const Segment *s = g_ptr_array_index (a->segments, i);
      CU_ASSERT_FALSE (s->first->next == NULL && !s->first->allocated);
    }
  for (int p = 0; p < N_POOLS; p++)
    {
      g_autoptr (GPtrArray) list = g_ptr_array_new ();
      alloc_free_blocks (&a->free[p], list);
      CU_ASSERT_EQUAL (a->free[p].n_blocks, list->len);
      guint n_free = 0;
      for (guint i = 0; i < a->segments->len; i++)
        {
          const Segment *s = g_ptr_array_index (a->segments, i);
          if (s->pool != p)
            continue;
          for (const Block *b = s->first; b != NULL; b = b->next)
            {
              CU_ASSERT_EQUAL (b->in_free, !b->allocated);
              n_free += !b->allocated;
            }
        }
      CU_ASSERT_EQUAL (list->len, n_free);
      for (guint i = 0; i < list->len; i++)
        {
          const Block *b = g_ptr_array_index (list, i);
          CU_ASSERT_FALSE (b->allocated);
          CU_ASSERT_EQUAL (b->seg->pool, p);
          if (i > 0)
            CU_ASSERT_TRUE (before (g_ptr_array_index (list, i - 1), b));
        }
    }
}

static const Block *
scan_best_fit (const ModelAllocator *a, int pool, guint64 size)
{
  const Block *best = NULL;
  for (guint i = 0; i < a->segments->len; i++)
    {
      const Segment *s = g_ptr_array_index (a->segments, i);
      if (s->pool != pool)
        continue;
      for (const Block *b = s->first; b != NULL; b = b->next)
        if (!b->allocated && b->size >= size && (best == NULL || before (b, best)))
          best = b;
    }
  return best;
}

/* model_allocator_malloc of `bytes`, checked against scan_best_fit: where a cached block
 * fits, the request gets the one the scan finds (same segment and offset), counted in
 * *n_reused. Returns the block id. */
static guint
malloc_as_scan (ModelAllocator *a, double bytes, guint *n_reused)
{
  guint64 size = (guint64) model_allocator_round_size (bytes);
  int pool = size <= MODEL_ALLOC_SMALL_SIZE ? POOL_SMALL : POOL_LARGE;
  const Block *fit = scan_best_fit (a, pool, size);
  const Segment *fit_seg = fit != NULL ? fit->seg : NULL;
  guint64 fit_offset = fit != NULL ? fit->offset : 0;
  guint id = model_allocator_malloc (a, bytes, NULL);
  const Block *b = SIM_VEC_AT (&a->blocks, Block *, id);
  if (fit != NULL)
    {
      CU_ASSERT_PTR_EQUAL (b->seg, fit_seg);
      CU_ASSERT_EQUAL (b->offset, fit_offset);
      (*n_reused)++;
    }
  return id;
}

static void
oracle_run (double capacity, gboolean expandable)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (capacity, expandable);
  g_autoptr (GArray) live = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GRand) rng = g_rand_new_with_seed (17);
  guint n_reused = 0;
  for (int step = 0; step < 4000; step++)
    {
      if (live->len > 0 && g_rand_int_range (rng, 0, 100) < 45)
        {
          guint k = (guint) g_rand_int_range (rng, 0, (gint32) live->len);
          model_allocator_release (a, g_array_index (live, guint, k));
          g_array_remove_index_fast (live, k);
        }
      else
        {
          double bytes = g_rand_boolean (rng) ? g_rand_int_range (rng, 1, 1 << 20)
                                              : g_rand_int_range (rng, 1, 24 << 20);
          guint id = malloc_as_scan (a, bytes, &n_reused);
          g_array_append_val (live, id);
        }
      check_free_lists (a);
    }
  CU_ASSERT_TRUE (n_reused > 500); /* the oracle was exercised, not only new segments */
  if (isfinite (capacity))
    CU_ASSERT_TRUE (model_allocator_n_releases (a) > 0); /* and the releases */
}

static void
test_free_lists_oracle (void)
{
  for (int expandable = 0; expandable <= 1; expandable++)
    {
      oracle_run (INFINITY, expandable);
      oracle_run (256 * MiB, expandable);
    }
}

/* The bucket of a size: u = size / 512 for u < 8, then 8 sub-ranges of each power of two;
 * never lower for a larger size (so the buckets in turn keep the sizes' order), every
 * bucket of a power of two used, and sizes up to 2^64 − 512 below 512 buckets. */
static void
test_free_bucket (void)
{
  CU_ASSERT_EQUAL (alloc_free_bucket (512), 1);
  CU_ASSERT_EQUAL (alloc_free_bucket (7 * 512), 7);
  CU_ASSERT_EQUAL (alloc_free_bucket (8 * 512), 8);
  CU_ASSERT_EQUAL (alloc_free_bucket (15 * 512), 15);
  CU_ASSERT_EQUAL (alloc_free_bucket (16 * 512), 16);
  CU_ASSERT_EQUAL (alloc_free_bucket (17 * 512), 16); /* [16, 18) */
  CU_ASSERT_EQUAL (alloc_free_bucket (18 * 512), 17);
  CU_ASSERT_EQUAL (alloc_free_bucket (31 * 512), 23);
  CU_ASSERT_EQUAL (alloc_free_bucket (32 * 512), 24);
  CU_ASSERT_EQUAL (alloc_free_bucket (2 * 1024 * 1024), 8 * (12 - 2)); /* u = 2^12 */
  CU_ASSERT_TRUE (alloc_free_bucket (G_MAXUINT64 - 511) < 512);
  guint prev = 0;
  for (guint64 u = 1; u < 1 << 16; u++)
    {
      guint k = alloc_free_bucket (512 * u);
      CU_ASSERT_TRUE (k == prev || k == prev + 1); /* rising, no bucket skipped */
      prev = k;
    }
  for (guint f = 16; f < 55; f++)
    {
      guint64 u = (guint64) 1 << f;
      CU_ASSERT_EQUAL (alloc_free_bucket (512 * u - 512), 8 * (f - 2) - 1);
      CU_ASSERT_EQUAL (alloc_free_bucket (512 * u), 8 * (f - 2));
    }
}

/* The cached state an allocator's later requests see: reserved, allocated, segments, and
 * each pool's free blocks by key (size, segment id, offset), in list order. */
static void
assert_same_state (const ModelAllocator *a, const ModelAllocator *b)
{
  CU_ASSERT_EQUAL (model_allocator_allocated (a), model_allocator_allocated (b));
  CU_ASSERT_EQUAL (model_allocator_reserved (a), model_allocator_reserved (b));
  CU_ASSERT_EQUAL (model_allocator_peak_reserved (a), model_allocator_peak_reserved (b));
  CU_ASSERT_EQUAL (model_allocator_n_segments (a), model_allocator_n_segments (b));
  CU_ASSERT_EQUAL (model_allocator_n_releases (a), model_allocator_n_releases (b));
  for (int p = 0; p < N_POOLS; p++)
    {
      g_autoptr (GPtrArray) x = g_ptr_array_new ();
      g_autoptr (GPtrArray) y = g_ptr_array_new ();
      alloc_free_blocks (&a->free[p], x);
      alloc_free_blocks (&b->free[p], y);
      CU_ASSERT_EQUAL_FATAL (x->len, y->len);
      for (guint i = 0; i < x->len; i++)
        {
          const Block *u = g_ptr_array_index (x, i), *v = g_ptr_array_index (y, i);
          CU_ASSERT_TRUE (u->size == v->size && u->seg_id == v->seg_id
                          && u->offset == v->offset);
        }
    }
}

/* model_allocator_release_n = model_allocator_release of each block in turn: two allocators
 * side by side get the same 3,000 pseudo-random buffers of 1 – 24 tensors (512 B – 24 MiB,
 * both pools, two streams; caching and expandable segments, without a capacity and with
 * 256 MiB, so cached segments are released and requests run out of memory); one frees a
 * buffer's blocks in one call, the other one by one, in the order of the buffer's tensors or
 * the reverse. After every step both hold the same figures and the same free blocks (the
 * invariants of each checked as in test_free_lists_oracle), every tensor lies at the same
 * segment and offset in both, and enough buffers had tensors side by side for the batch's
 * merges to be exercised. */
static void
release_n_run (double capacity, gboolean expandable)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (capacity, expandable);
  g_autoptr (ModelAllocator) b = model_allocator_new (capacity, expandable);
  g_autoptr (GPtrArray) live_a = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  g_autoptr (GPtrArray) live_b = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  g_autoptr (GRand) rng = g_rand_new_with_seed (29);
  guint n_adjacent = 0;
  for (int step = 0; step < 3000; step++)
    {
      if (live_a->len > 0 && g_rand_int_range (rng, 0, 100) < 45)
        {
          guint k = (guint) g_rand_int_range (rng, 0, (gint32) live_a->len);
          GArray *ia = g_ptr_array_index (live_a, k), *ib = g_ptr_array_index (live_b, k);
          if (g_rand_boolean (rng)) /* the reverse order in both */
            for (guint i = 0; i < ia->len / 2; i++)
              {
                guint j = ia->len - 1 - i, t = g_array_index (ia, guint, i);
                g_array_index (ia, guint, i) = g_array_index (ia, guint, j);
                g_array_index (ia, guint, j) = t;
                t = g_array_index (ib, guint, i);
                g_array_index (ib, guint, i) = g_array_index (ib, guint, j);
                g_array_index (ib, guint, j) = t;
              }
          for (guint i = 0; i + 1 < ia->len; i++)
            {
              const Block *x = SIM_VEC_AT (&a->blocks, Block *, g_array_index (ia, guint, i));
              const Block *y
                  = SIM_VEC_AT (&a->blocks, Block *, g_array_index (ia, guint, i + 1));
              n_adjacent += x->next == y || y->next == x;
            }
          model_allocator_release_n (a, (const guint *) ia->data, ia->len);
          for (guint i = 0; i < ib->len; i++)
            model_allocator_release (b, g_array_index (ib, guint, i));
          g_ptr_array_remove_index_fast (live_a, k);
          g_ptr_array_remove_index_fast (live_b, k);
        }
      else
        {
          guint n = (guint) g_rand_int_range (rng, 1, 25), stream = g_rand_boolean (rng);
          gboolean large = g_rand_boolean (rng);
          GArray *ia = g_array_new (FALSE, FALSE, sizeof (guint));
          GArray *ib = g_array_new (FALSE, FALSE, sizeof (guint));
          for (guint i = 0; i < n; i++)
            {
              double bytes = large ? g_rand_int_range (rng, 1, 24 << 20)
                                   : g_rand_int_range (rng, 1, 1 << 18);
              gboolean oa = FALSE, ob = FALSE;
              guint x = model_allocator_malloc_on (a, bytes, stream, &oa);
              guint y = model_allocator_malloc_on (b, bytes, stream, &ob);
              CU_ASSERT_EQUAL (oa, ob);
              const Block *u = SIM_VEC_AT (&a->blocks, Block *, x);
              const Block *v = SIM_VEC_AT (&b->blocks, Block *, y);
              CU_ASSERT_TRUE (u->seg_id == v->seg_id && u->offset == v->offset
                              && u->size == v->size);
              g_array_append_val (ia, x);
              g_array_append_val (ib, y);
            }
          g_ptr_array_add (live_a, ia);
          g_ptr_array_add (live_b, ib);
        }
      assert_same_state (a, b);
      check_free_lists (a);
    }
  CU_ASSERT_TRUE (n_adjacent > 1000);
  if (isfinite (capacity))
    CU_ASSERT_TRUE (model_allocator_n_releases (a) > 0);
}

static void
test_release_n (void)
{
  for (int expandable = 0; expandable <= 1; expandable++)
    {
      release_n_run (INFINITY, expandable);
      release_n_run (256 * MiB, expandable);
    }
}

static int
key_cmp (gconstpointer x, gconstpointer y)
{
  const Block *a = *(Block *const *) x, *b = *(Block *const *) y;
  if (a->size != b->size)
    return a->size < b->size ? -1 : 1;
  if (a->seg_id != b->seg_id)
    return a->seg_id < b->seg_id ? -1 : 1;
  return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* An AllocFreeList against a plain sorted array (the structure it replaced), over 60,000
 * pseudo-random insertions, removals (the first block, the last, any) and best fits: the
 * same blocks in the same order after every step, and every best fit — for sizes present,
 * absent, between buckets, below and above all — the array's lower bound of (size, segment
 * 0, offset 0). Sizes cluster in runs of equal sizes (as a replay's do) and spread over
 * 512 B – 2^60 B, so buckets hold many blocks of one size, many sizes, or one block, and
 * the bitmap's words are all crossed. */
static void
test_free_list_oracle (void)
{
  enum { N = 600 };
  static Block blocks[N];
  g_autoptr (GRand) rng = g_rand_new_with_seed (23);
  AllocFreeList fl;
  alloc_free_init (&fl);
  g_autoptr (GPtrArray) ref = g_ptr_array_new ();
  g_autoptr (GPtrArray) got = g_ptr_array_new ();
  static const guint64 common[] = { 512, 1024, 2 << 20, 20 << 20, 64 << 20, 3 << 29 };
  guint n_fits = 0, n_next_bucket = 0;
  for (guint i = 0; i < N; i++)
    {
      guint64 size;
      switch (g_rand_int_range (rng, 0, 4))
        {
        case 0: size = common[g_rand_int_range (rng, 0, G_N_ELEMENTS (common))]; break;
        case 1: size = 512 * (guint64) g_rand_int_range (rng, 1, 64); break;
        case 2: size = 512 * (guint64) g_rand_int_range (rng, 1, 1 << 20); break;
        default: size = (guint64) 512 << g_rand_int_range (rng, 0, 52); break;
        }
      blocks[i] = (Block){ .size = size, .seg_id = (guint) g_rand_int_range (rng, 0, 40),
                           .offset = 512 * (guint64) i };
    }
  for (guint step = 0; step < 60000; step++)
    {
      int op = g_rand_int_range (rng, 0, 10);
      if (op < 4) /* insert a block not in the list */
        {
          Block *b = &blocks[g_rand_int_range (rng, 0, N)];
          if (!b->in_free)
            {
              alloc_free_insert (&fl, b);
              g_ptr_array_add (ref, b);
              g_ptr_array_sort (ref, key_cmp);
            }
        }
      else if (op < 6 && ref->len > 0) /* remove one: the first, the last or any */
        {
          guint i = op == 4 ? (guint) g_rand_int_range (rng, 0, (gint) ref->len)
                            : g_rand_boolean (rng) ? 0 : ref->len - 1;
          alloc_free_remove (&fl, g_ptr_array_index (ref, i));
          CU_ASSERT_FALSE (((Block *) g_ptr_array_index (ref, i))->in_free);
          g_ptr_array_remove_index (ref, i);
        }
      else /* best fit, taken or not */
        {
          guint64 size = g_rand_boolean (rng) && ref->len > 0
                             ? ((Block *) g_ptr_array_index (
                                    ref, g_rand_int_range (rng, 0, (gint) ref->len)))
                                       ->size
                                   + 512 * (guint64) g_rand_int_range (rng, -1, 2)
                             : (guint64) 512 << g_rand_int_range (rng, 0, 58);
          size = MAX (size, 512);
          guint want = 0;
          while (want < ref->len && ((Block *) g_ptr_array_index (ref, want))->size < size)
            want++;
          Block *w = want < ref->len ? g_ptr_array_index (ref, want) : NULL;
          Block *fit = alloc_free_best_fit (&fl, size);
          CU_ASSERT_PTR_EQUAL (fit, w);
          if (fit != w)
            break;
          n_fits += w != NULL;
          n_next_bucket += w != NULL && alloc_free_bucket (w->size) != alloc_free_bucket (size);
          if (op == 9)
            {
              CU_ASSERT_PTR_EQUAL (alloc_free_take_best_fit (&fl, size), w);
              if (w != NULL)
                {
                  CU_ASSERT_FALSE (w->in_free);
                  g_ptr_array_remove_index (ref, want);
                }
            }
        }
      g_ptr_array_set_size (got, 0);
      alloc_free_blocks (&fl, got);
      CU_ASSERT_EQUAL (fl.n_blocks, ref->len);
      gboolean same = got->len == ref->len;
      for (guint i = 0; same && i < ref->len; i++)
        same = g_ptr_array_index (got, i) == g_ptr_array_index (ref, i)
               && ((Block *) g_ptr_array_index (ref, i))->in_free;
      CU_ASSERT_TRUE (same);
      if (!same)
        break; /* one failure, not one a step */
    }
  CU_ASSERT_TRUE (n_fits > 5000 && n_next_bucket > 1000); /* both paths of a best fit */
  alloc_free_clear (&fl);
}

/* The first index of sorted `ref` whose block is not before (size, seg_id, offset). */
static guint
ref_lower_bound (const GPtrArray *ref, guint64 size, guint seg_id, guint64 offset)
{
  guint lo = 0, hi = ref->len;
  while (lo < hi)
    {
      guint mid = lo + (hi - lo) / 2;
      const Block *x = g_ptr_array_index (ref, mid);
      gboolean below = x->size != size       ? x->size < size
                       : x->seg_id != seg_id ? x->seg_id < seg_id
                                             : x->offset < offset;
      if (below)
        lo = mid + 1;
      else
        hi = mid;
    }
  return lo;
}

/* Long buckets (ALLOC_FREE_TREE_FROM and up: trees) against a plain sorted array: 6,000
 * blocks whose sizes fall in three buckets (2 MiB + 0 – 15 × 512 B: thousands of one size,
 * ties broken by segment id and offset; 2.5 MiB + a few sizes; 512 B – 3.5 KiB), pushed up
 * to 4,000 free blocks, down to 20, and up and down again by insertions, removals (any
 * block) and best fits (taken or not). After every step the best fit for sizes present,
 * absent, in the buckets and between them is the array's lower bound of (size, segment 0,
 * offset 0) and n_blocks its length; every 50 steps and at each turn the list's order is
 * the array's. Buckets became trees on the way up and arrays again on the way down, so
 * both forms and both conversions were run against the array. */
static void
test_free_list_long_buckets (void)
{
  enum { N = 6000 };
  static Block blocks[N];
  g_autoptr (GRand) rng = g_rand_new_with_seed (31);
  AllocFreeList fl;
  alloc_free_init (&fl);
  g_autoptr (GPtrArray) ref = g_ptr_array_new ();
  g_autoptr (GPtrArray) got = g_ptr_array_new ();
  for (guint i = 0; i < N; i++)
    {
      guint64 size;
      switch (g_rand_int_range (rng, 0, 8))
        {
        case 0: size = 512 * (guint64) g_rand_int_range (rng, 1, 8); break;
        case 1: size = (5 << 19) + 512 * (guint64) g_rand_int_range (rng, 0, 4); break;
        default: size = (2 << 20) + 512 * (guint64) g_rand_int_range (rng, 0, 16); break;
        }
      blocks[i] = (Block){ .size = size, .seg_id = (guint) g_rand_int_range (rng, 0, 50),
                           .offset = 512 * (guint64) g_rand_int_range (rng, 0, 1 << 20) };
      /* keys distinct: a repeated (size, segment, offset) gets a fresh offset */
      for (guint j = 0; j < i; j++)
        if (key_cmp (&(Block *){ &blocks[j] }, &(Block *){ &blocks[i] }) == 0)
          {
            blocks[i].offset = 512 * ((guint64) (1 << 20) + i);
            break;
          }
    }
  guint max_trees = 0, n_turns = 0, n_fits = 0;
  gboolean trees_gone = FALSE, ok = TRUE;
  for (guint phase = 0; phase < 4 && ok; phase++)
    {
      gboolean up = phase % 2 == 0;
      for (guint step = 0; ok && step < 200000 && (up ? ref->len < 4000 : ref->len > 20); step++)
        {
          int op = g_rand_int_range (rng, 0, 10);
          gboolean grow = up ? op < 7 : op < 2;
          if (grow)
            {
              Block *b = &blocks[g_rand_int_range (rng, 0, N)];
              if (!b->in_free)
                {
                  alloc_free_insert (&fl, b);
                  g_ptr_array_insert (ref,
                                      (gint) ref_lower_bound (ref, b->size, b->seg_id,
                                                              b->offset),
                                      b);
                }
            }
          else if (op < 8 && ref->len > 0)
            {
              guint i = (guint) g_rand_int_range (rng, 0, (gint) ref->len);
              alloc_free_remove (&fl, g_ptr_array_index (ref, i));
              g_ptr_array_remove_index (ref, i);
            }
          else
            {
              guint64 size;
              if (g_rand_boolean (rng) && ref->len > 0)
                size = ((Block *) g_ptr_array_index (
                            ref, g_rand_int_range (rng, 0, (gint) ref->len)))
                           ->size
                       + 512 * (guint64) g_rand_int_range (rng, -1, 2);
              else
                size = 512 * (guint64) g_rand_int_range (rng, 1, 6 << 11);
              size = MAX (size, 512);
              guint want = ref_lower_bound (ref, size, 0, 0);
              Block *w = want < ref->len ? g_ptr_array_index (ref, want) : NULL;
              Block *fit = g_rand_boolean (rng) ? alloc_free_take_best_fit (&fl, size)
                                                : alloc_free_best_fit (&fl, size);
              CU_ASSERT_PTR_EQUAL (fit, w);
              ok = fit == w;
              n_fits += w != NULL;
              if (fit != NULL && !fit->in_free)
                g_ptr_array_remove_index (ref, want);
            }
          CU_ASSERT_EQUAL (fl.n_blocks, ref->len);
          max_trees = MAX (max_trees, alloc_free_n_trees (&fl));
          gboolean turn = up ? ref->len >= 4000 : ref->len <= 20;
          if (step % 50 == 0 || turn)
            {
              g_ptr_array_set_size (got, 0);
              alloc_free_blocks (&fl, got);
              gboolean same = got->len == ref->len;
              for (guint i = 0; same && i < ref->len; i++)
                same = g_ptr_array_index (got, i) == g_ptr_array_index (ref, i)
                       && ((Block *) g_ptr_array_index (ref, i))->in_free;
              CU_ASSERT_TRUE (same);
              ok = ok && same;
            }
          if (turn)
            {
              n_turns++;
              if (!up)
                trees_gone = alloc_free_n_trees (&fl) == 0;
            }
        }
    }
  CU_ASSERT_EQUAL (n_turns, 4);
  CU_ASSERT_TRUE (max_trees >= 2); /* the 2 MiB and 2.5 MiB buckets became trees */
  CU_ASSERT_TRUE (trees_gone);     /* and arrays again */
  CU_ASSERT_TRUE (n_fits > 2000);
  alloc_free_clear (&fl);
}

/* An allocator whose large pool holds thousands of free blocks of a few sizes (6,000
 * requests of 2 MiB + 0 – 7 × 512 B, 20 MiB segments split ~9 ways, every other one freed:
 * no merges) serves 3,000 more requests and releases, each request at the block a scan of
 * every free block names where one holds it (as in test_free_lists_oracle), with the free
 * list checked against the segments every 100 steps; a bucket was a tree on the way. */
static void
test_allocator_long_buckets (void)
{
  g_autoptr (ModelAllocator) a = model_allocator_new (INFINITY, FALSE);
  g_autoptr (GArray) live = g_array_new (FALSE, FALSE, sizeof (guint));
  g_autoptr (GRand) rng = g_rand_new_with_seed (37);
  for (guint i = 0; i < 6000; i++)
    {
      guint id = model_allocator_malloc (a, (2 << 20) + 512 * g_rand_int_range (rng, 0, 8),
                                         NULL);
      if (i % 2 == 0)
        model_allocator_release (a, id);
      else
        g_array_append_val (live, id);
    }
  guint max_trees = alloc_free_n_trees (&a->free[POOL_LARGE]), n_reused = 0;
  check_free_lists (a);
  for (int step = 0; step < 3000; step++)
    {
      if (g_rand_int_range (rng, 0, 100) < 40)
        {
          guint k = (guint) g_rand_int_range (rng, 0, (gint32) live->len);
          model_allocator_release (a, g_array_index (live, guint, k));
          g_array_remove_index_fast (live, k);
        }
      else
        {
          double bytes = (2 << 20) + 512 * g_rand_int_range (rng, -2, 10);
          guint id = malloc_as_scan (a, bytes, &n_reused);
          g_array_append_val (live, id);
        }
      max_trees = MAX (max_trees, alloc_free_n_trees (&a->free[POOL_LARGE]));
      if (step % 100 == 0)
        check_free_lists (a);
    }
  check_free_lists (a);
  CU_ASSERT_TRUE (max_trees >= 1);
  CU_ASSERT_TRUE (n_reused > 1000);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "a request beyond any GPU is out of memory", test_oversized_request },
    { "rounding to 512 B and segment sizes", test_rounding },
    { "small pool: 2 MiB segments", test_small_segments },
    { "large pool: 20 MiB segments below 10 MiB", test_large_segments },
    { "best fit reuses the smallest cached block", test_best_fit_reuse },
    { "split blocks merge back on free", test_split_and_merge },
    { "reserved is not monotone in the request sizes", test_reserved_not_monotone },
    { "fragmentation: reserved > allocated, OOM", test_fragmentation },
    { "expandable segments remove the fragmentation", test_expandable_removes_fragmentation },
    { "OOM: release cached segments and retry", test_release_and_retry },
    { "small and large pools are apart", test_pools_apart },
    { "a stream's cached blocks serve only that stream", test_streams_apart },
    { "an OOM retry releases every stream's cached segments", test_streams_release },
    { "expandable segments grow per stream", test_streams_expandable },
    { "the figures before the last request", test_before_last },
    { "loss head booked as two lumps: a new segment", test_loss_head_lumped },
    { "loss head as tensors: the fp32 copy's block reused", test_loss_head_tensors },
    { "shifted loss head: the forward's blocks serve the backward", test_loss_head_shift },
    { "expandable segments split any remainder", test_expandable_split },
    { "free lists sorted; best fit as a linear scan", test_free_lists_oracle },
    { "size buckets keep the sizes' order", test_free_bucket },
    { "free list by size buckets = one sorted array", test_free_list_oracle },
    { "long buckets (trees) = one sorted array", test_free_list_long_buckets },
    { "thousands of free blocks of a size: best fit as a scan", test_allocator_long_buckets },
    { "releasing a buffer's blocks at once = one by one", test_release_n },
  };
  return STEPSIM_RUN_TESTS ("models/allocator", tests);
}
