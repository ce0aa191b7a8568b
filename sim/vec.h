/* sim/vec.h — a growable array of fixed-size elements whose append, index and reset are
 * inline, for the engine's and the fluid solver's per-event scratch lists (the dirty sets,
 * a component's activities and resources, a resource's members, the slot pool's free list).
 *
 * Why not GArray/GPtrArray: their append is an out-of-line call that copies the element
 * with memcpy (GArray) or checks and may grow (GPtrArray), and set_size(0) runs the free
 * function machinery; on the 8-GPU Llama 3.1 8B ZeRO-3 step (bench/) those calls were
 * 12 % of the simulation's instructions, for lists that mostly hold 0–3 elements.
 * Growth doubles the capacity (amortized O(1) append); nothing is ever shrunk.
 *
 * Invariants: len ≤ cap; data holds cap elements of the size given at every call (the
 * caller always passes the same elt for one vector); data is NULL iff cap is 0.
 * Ownership: the vector owns data; sim_vec_clear frees it (elements own nothing here).
 */
#ifndef STEPSIM_SIM_VEC_H
#define STEPSIM_SIM_VEC_H

#include <glib.h>

typedef struct
{
  gpointer data; /* cap elements, the first len in use; owned */
  guint len;     /* elements in use */
  guint cap;     /* elements allocated */
} SimVec;

#define SIM_VEC_INIT { NULL, 0, 0 }

/* Grows v to hold at least `min_cap` elements of `elt` bytes (doubling, from 8); aborts
 * like g_realloc when memory runs out. Out of line: the rare path of sim_vec_append. */
void sim_vec_grow (SimVec *v, gsize elt, guint min_cap);

/* Frees v's storage and leaves it empty (len = cap = 0); a no-op on an empty vector. */
void sim_vec_clear (SimVec *v);

/* Appends one element of `elt` bytes and returns its address (uninitialized; valid until
 * the next append or clear). */
static inline gpointer
sim_vec_append (SimVec *v, gsize elt)
{
  if (G_UNLIKELY (v->len == v->cap))
    sim_vec_grow (v, elt, v->len + 1);
  return (guchar *) v->data + (gsize) v->len++ * elt;
}

/* Element i (< len) of a vector of T. */
#define SIM_VEC_AT(v, T, i) (((T *) (v)->data)[i])
/* Appends x, a value of type T. */
#define SIM_VEC_PUSH(v, T, x) (*(T *) sim_vec_append ((v), sizeof (T)) = (x))

/* Sorts the n pointers of `v` by `cmp` (a qsort comparator on gpointer*), which must be a
 * total order (distinct keys): then the result does not depend on the algorithm. Insertion
 * sort up to 16 elements (no call to qsort, which allocates for its merge sort), qsort
 * beyond. */
void sim_sort_ptrs (gpointer *v, guint n, int (*cmp) (const void *, const void *));

/* Sorts n guint values ascending (insertion sort up to 16, qsort beyond). */
void sim_sort_uints (guint *v, guint n);

#endif
