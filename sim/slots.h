/* sim/slots.h — a generational slot pool: fixed-size elements in fixed blocks (stable
 * addresses, no malloc per element), freed slots reused through a free list, and 64-bit ids
 * that name a slot and its generation, so a lookup needs no hashing and a stale id (its slot
 * freed or reused) never matches. Used by the event engine (sim/engine.c) and the fluid
 * solver's activities (sim/fluid.c).
 *
 * An id is (generation << 32) | (slot + 1): never 0. The generation lives in the element
 * (the caller's struct), bumped by the caller at each reuse; this module hands out slots.
 */
#ifndef STEPSIM_SIM_SLOTS_H
#define STEPSIM_SIM_SLOTS_H

#include <glib.h>

#include "sim/vec.h"

typedef struct
{
  GPtrArray *blocks; /* element blocks, each block_len × elem_size bytes, owned; zeroed at
                      * creation unless `raw` */
  gsize elem_size;   /* bytes per element */
  guint block_len;   /* elements per block, a power of two */
  guint block_shift; /* log2 (block_len): a slot's block and place are a shift and a mask,
                      * not a division (tens of cycles, on every take and lookup) */
  guint n_slots;     /* slots handed out so far (in use or free) */
  SimVec free;       /* guint slot indices ready for reuse */
  gboolean raw;      /* new blocks are not zeroed (sim_slots_init_raw) */
} SimSlots;

/* Makes `slots` an empty pool of elements of `elem_size` bytes (> 0), `block_len` (a power
 * of two) per block. Release with sim_slots_clear(). */
void sim_slots_init (SimSlots *slots, gsize elem_size, guint block_len);

/* sim_slots_init, but new blocks are not zeroed, so a new slot's bytes are undefined: for
 * callers that set every field of each element they take (the allocator model's blocks and
 * segments, the ledger's buffers: a few thousand a scenario, whose zeroing was ~3 % of a
 * sweep's instructions by callgrind, which counts each byte `rep stosb` stores). */
void sim_slots_init_raw (SimSlots *slots, gsize elem_size, guint block_len);

/* Frees every block (elements' own allocations are the caller's to free first). */
void sim_slots_clear (SimSlots *slots);

/* Gives every slot handed out back, so that the next takes return slots 0, 1, 2, … in
 * order, as on a new pool; the blocks stay allocated and each element keeps its bytes
 * (generation counters included: the caller reinitialises what it takes). The elements'
 * own allocations are the caller's to free first. */
void sim_slots_reset (SimSlots *slots);

/* The element at `slot` (< n_slots, asserted): a stable pointer for the pool's life.
 * Inline: every event and activity lookup uses it. */
static inline gpointer
sim_slots_at (const SimSlots *slots, guint slot)
{
  g_assert (slot < slots->n_slots);
  guchar *block = g_ptr_array_index (slots->blocks, slot >> slots->block_shift);
  return block + (gsize) (slot & (slots->block_len - 1)) * slots->elem_size;
}

/* sim_slots_take's path for a new slot (no freed one to reuse); use sim_slots_take. */
gpointer sim_slots_take_new (SimSlots *slots, guint *slot);

/* Takes a slot, a freed one first (last freed, first reused), else a new one in a new
 * block; stores its index in *slot and returns its element, whose bytes are as last left
 * (zero for a new slot, undefined in a raw pool). NULL when 2^32 − 1 slots are in use.
 * Inline for the reuse, which is every event and activity after the first few (a call was
 * ~1 % of an 8-GPU step). */
static inline gpointer
sim_slots_take (SimSlots *slots, guint *slot)
{
  if (G_LIKELY (slots->free.len > 0))
    {
      *slot = SIM_VEC_AT (&slots->free, guint, --slots->free.len);
      return sim_slots_at (slots, *slot);
    }
  return sim_slots_take_new (slots, slot);
}

/* Gives `slot` (< n_slots) back for reuse; its element stays readable until taken again. */
static inline void
sim_slots_give (SimSlots *slots, guint slot)
{
  g_assert (slot < slots->n_slots);
  SIM_VEC_PUSH (&slots->free, guint, slot);
}

/* The id of `slot` at generation `gen`: (gen << 32) | (slot + 1). */
static inline guint64
sim_slot_id (guint32 gen, guint slot)
{
  return ((guint64) gen << 32) | ((guint64) slot + 1);
}

/* The slot an id names, if it is within the slots handed out (the caller compares the
 * element's stored id to reject a stale one); FALSE for 0 or out of range. */
static inline gboolean
sim_slot_of_id (const SimSlots *slots, guint64 id, guint *slot)
{
  guint32 low = (guint32) id;
  if (low == 0 || low > slots->n_slots)
    return FALSE;
  *slot = low - 1;
  return TRUE;
}

#endif
