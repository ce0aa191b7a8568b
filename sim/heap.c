/* sim/heap.c — intrusive binary min-heap on (key, tie); see sim/heap.h.
 *
 * Layout: an array of node pointers, children of slot i at 2i+1 and 2i+2 (Cormen et al.
 * §6.1). Every move of a node rewrites node->index, which is what makes O(log n) removal of
 * an arbitrary node (event cancel, activity re-keying) possible without a search.
 */
#include "config.h"
#include "sim/heap.h"

struct _SimHeap
{
  SimHeapNode **nodes;
  guint len;
  guint cap;
};

static inline gboolean
node_less (const SimHeapNode *a, const SimHeapNode *b)
{
  return a->key < b->key || (a->key == b->key && a->tie < b->tie);
}

static inline void
place (SimHeap *heap, guint i, SimHeapNode *node)
{
  heap->nodes[i] = node;
  node->index = i;
}

/* Moves the node at slot i towards the root while it is smaller than its parent. */
static void
sift_up (SimHeap *heap, guint i)
{
  SimHeapNode *node = heap->nodes[i];
  while (i > 0)
    {
      guint parent = (i - 1) / 2;
      if (!node_less (node, heap->nodes[parent]))
        break;
      place (heap, i, heap->nodes[parent]);
      i = parent;
    }
  place (heap, i, node);
}

/* Moves the node at slot i towards the leaves while a child is smaller. */
static void
sift_down (SimHeap *heap, guint i)
{
  SimHeapNode *node = heap->nodes[i];
  for (;;)
    {
      guint child = 2 * i + 1;
      if (child >= heap->len)
        break;
      if (child + 1 < heap->len && node_less (heap->nodes[child + 1], heap->nodes[child]))
        child++;
      if (!node_less (heap->nodes[child], node))
        break;
      place (heap, i, heap->nodes[child]);
      i = child;
    }
  place (heap, i, node);
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
  g_free (heap->nodes);
  g_free (heap);
}

guint
sim_heap_size (const SimHeap *heap)
{
  return heap->len;
}

void
sim_heap_push (SimHeap *heap, SimHeapNode *node)
{
  g_assert (node->index == SIM_HEAP_NONE);
  if (heap->len == heap->cap)
    {
      heap->cap = heap->cap == 0 ? 64 : heap->cap * 2;
      heap->nodes = g_renew (SimHeapNode *, heap->nodes, heap->cap);
    }
  place (heap, heap->len++, node);
  sift_up (heap, heap->len - 1);
}

SimHeapNode *
sim_heap_peek (const SimHeap *heap)
{
  return heap->len > 0 ? heap->nodes[0] : NULL;
}

SimHeapNode *
sim_heap_pop (SimHeap *heap)
{
  if (heap->len == 0)
    return NULL;
  SimHeapNode *top = heap->nodes[0];
  sim_heap_remove (heap, top);
  return top;
}

void
sim_heap_remove (SimHeap *heap, SimHeapNode *node)
{
  guint i = node->index;
  g_assert (i < heap->len && heap->nodes[i] == node);
  node->index = SIM_HEAP_NONE;
  SimHeapNode *last = heap->nodes[--heap->len];
  if (i == heap->len)
    return;
  /* The last node fills the hole; it may belong above or below it. */
  place (heap, i, last);
  if (i > 0 && node_less (last, heap->nodes[(i - 1) / 2]))
    sift_up (heap, i);
  else
    sift_down (heap, i);
}

void
sim_heap_update (SimHeap *heap, SimHeapNode *node)
{
  guint i = node->index;
  g_assert (i < heap->len && heap->nodes[i] == node);
  if (i > 0 && node_less (node, heap->nodes[(i - 1) / 2]))
    sift_up (heap, i);
  else
    sift_down (heap, i);
}

void
sim_heap_clear (SimHeap *heap)
{
  for (guint i = 0; i < heap->len; i++)
    heap->nodes[i]->index = SIM_HEAP_NONE;
  heap->len = 0;
}
