/* sim/heap.h — private intrusive binary min-heap ordered by (key, tie), used by the event
 * engine (key = event time, tie = insertion sequence) and by the fluid solver (key = finish
 * time or fill level, tie = activity or resource id).
 *
 * Invariants: every node in the heap satisfies heap order on (key, tie) compared
 * lexicographically, and node->index is its slot in the heap (SIM_HEAP_NONE when the node is
 * in no heap). Ties must be unique per heap for the order to be total (deterministic).
 * Nodes are embedded in the caller's structs and are never owned by the heap.
 * Units: whatever the caller's key is (seconds for the engine).
 * Reference: Cormen et al., "Introduction to Algorithms", 3rd ed., §6.5 (priority queues).
 */
#pragma once

#include <glib.h>

#define SIM_HEAP_NONE G_MAXUINT

typedef struct
{
  double key;  /* primary order */
  guint64 tie; /* secondary order, unique per heap */
  guint index; /* slot in the heap, SIM_HEAP_NONE when not in a heap */
} SimHeapNode;

/* A heap slot: the node's order copied in (compared without chasing the node) and the node.
 * The structs are here only so that peek and size are inline (the event loop and the fluid
 * peek ~100,000 times a step); their fields are heap.c's. */
typedef struct
{
  double key;
  guint64 tie;
  SimHeapNode *node;
} SimHeapSlot;

typedef struct _SimHeap
{
  SimHeapSlot *slots;
  guint len;
  guint cap;
} SimHeap;

/* Creates an empty heap. Never NULL; free with sim_heap_free() (which does not touch nodes). */
SimHeap *sim_heap_new (void);

/* Frees the heap's array; nodes still in it get index SIM_HEAP_NONE. NULL is a no-op. */
void sim_heap_free (SimHeap *heap);

/* Number of nodes in the heap. */
static inline guint
sim_heap_size (const SimHeap *heap)
{
  return heap->len;
}

/* Inserts `node` (borrowed, must not be in a heap) in O(log n). */
void sim_heap_push (SimHeap *heap, SimHeapNode *node);

/* Smallest node, or NULL if empty. O(1). */
static inline SimHeapNode *
sim_heap_peek (const SimHeap *heap)
{
  return heap->len > 0 ? heap->slots[0].node : NULL;
}

/* Removes and returns the smallest node, or NULL if empty. O(log n). */
SimHeapNode *sim_heap_pop (SimHeap *heap);

/* Removes `node` (must be in this heap) in O(log n). */
void sim_heap_remove (SimHeap *heap, SimHeapNode *node);

/* Restores heap order after the caller changed node->key of a node in this heap. O(log n). */
void sim_heap_update (SimHeap *heap, SimHeapNode *node);

/* Removes every node (each gets index SIM_HEAP_NONE). O(n). */
void sim_heap_clear (SimHeap *heap);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimHeap, sim_heap_free)
