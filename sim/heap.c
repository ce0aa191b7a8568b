/* sim/heap.c — intrusive binary min-heap on (key, tie); see sim/heap.h.
 *
 * Layout: an array of slots (key, tie, node pointer), children of slot i at 2i+1 and 2i+2
 * (Cormen et al. §6.1). Every move of a node rewrites node->index, which is what makes
 * O(log n) removal of an arbitrary node (event cancel, activity re-keying) possible without
 * a search.
 */
#include "config.h"
#include "sim/heap.h"

/* A slot keeps a copy of its node's key and tie, so that comparisons read only the heap's
 * own contiguous array; following node pointers in every comparison made sift_down
 * cache-miss bound (measured with bench/bench_engine). */
typedef SimHeapSlot Slot; /* sim/heap.h */

static inline gboolean
slot_less (const Slot *a, const Slot *b)
{
  return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static inline void
place (SimHeap *heap, guint i, Slot s)
{
  heap->slots[i] = s;
  s.node->index = i;
}

/* Moves the slot at i towards the root while it is smaller than its parent. */
static void
sift_up (SimHeap *heap, guint i)
{
  Slot s = heap->slots[i];
  while (i > 0)
    {
      guint parent = (i - 1) / 2;
      if (!slot_less (&s, &heap->slots[parent]))
        break;
      place (heap, i, heap->slots[parent]);
      i = parent;
    }
  place (heap, i, s);
}

/* Moves the slot at i towards the leaves while a child is smaller. */
static void
sift_down (SimHeap *heap, guint i)
{
  Slot s = heap->slots[i];
  for (;;)
    {
      guint child = 2 * i + 1;
      if (child >= heap->len)
        break;
      if (child + 1 < heap->len && slot_less (&heap->slots[child + 1], &heap->slots[child]))
        child++;
      if (!slot_less (&heap->slots[child], &s))
        break;
      place (heap, i, heap->slots[child]);
      i = child;
    }
  place (heap, i, s);
}

static inline Slot
slot_of (SimHeapNode *node)
{
  return (Slot){ node->key, node->tie, node };
}

/* Re-places slot i, which may now belong above or below where it is. */
static void
restore (SimHeap *heap, guint i)
{
  if (i > 0 && slot_less (&heap->slots[i], &heap->slots[(i - 1) / 2]))
    sift_up (heap, i);
  else
    sift_down (heap, i);
}

SimHeap *
sim_heap_new (void)
{
  return g_new0 (SimHeap, 1);
}

void
sim_heap_free (SimHeap *heap)
{
  if (heap == NULL)
    return;
  sim_heap_clear (heap);
  g_free (heap->slots);
  g_free (heap);
}

void
sim_heap_push (SimHeap *heap, SimHeapNode *node)
{
  g_assert (node->index == SIM_HEAP_NONE);
  if (heap->len == heap->cap)
    {
      heap->cap = heap->cap == 0 ? 64 : heap->cap * 2;
      heap->slots = g_renew (Slot, heap->slots, heap->cap);
    }
  place (heap, heap->len++, slot_of (node));
  sift_up (heap, heap->len - 1);
}

SimHeapNode *
sim_heap_pop (SimHeap *heap)
{
  if (heap->len == 0)
    return NULL;
  SimHeapNode *top = heap->slots[0].node;
  sim_heap_remove (heap, top);
  return top;
}

void
sim_heap_remove (SimHeap *heap, SimHeapNode *node)
{
  guint i = node->index;
  g_assert (i < heap->len && heap->slots[i].node == node);
  node->index = SIM_HEAP_NONE;
  Slot last = heap->slots[--heap->len];
  if (i == heap->len)
    return;
  place (heap, i, last); /* the last slot fills the hole */
  restore (heap, i);
}

void
sim_heap_update (SimHeap *heap, SimHeapNode *node)
{
  guint i = node->index;
  g_assert (i < heap->len && heap->slots[i].node == node);
  heap->slots[i] = slot_of (node);
  restore (heap, i);
}

void
sim_heap_clear (SimHeap *heap)
{
  for (guint i = 0; i < heap->len; i++)
    heap->slots[i].node->index = SIM_HEAP_NONE;
  heap->len = 0;
}
