/* sim/slots.c — the generational slot pool (sim/slots.h). */
#include "config.h"
#define G_LOG_DOMAIN "stepsim-sim"
#include "sim/slots.h"

void
sim_slots_init (SimSlots *slots, gsize elem_size, guint block_len)
{
  g_return_if_fail (slots != NULL && elem_size > 0 && block_len > 0
                    && (block_len & (block_len - 1)) == 0);
  slots->blocks = g_ptr_array_new_with_free_func (g_free);
  slots->elem_size = elem_size;
  slots->block_len = block_len;
  slots->block_shift = (guint) g_bit_nth_lsf (block_len, -1);
  slots->n_slots = 0;
  slots->free = (SimVec) SIM_VEC_INIT;
  slots->raw = FALSE;
}

void
sim_slots_init_raw (SimSlots *slots, gsize elem_size, guint block_len)
{
  sim_slots_init (slots, elem_size, block_len);
  slots->raw = TRUE;
}

void
sim_slots_clear (SimSlots *slots)
{
  g_return_if_fail (slots != NULL);
  g_clear_pointer (&slots->blocks, g_ptr_array_unref);
  sim_vec_clear (&slots->free);
  slots->n_slots = 0;
}

void
sim_slots_reset (SimSlots *slots)
{
  g_return_if_fail (slots != NULL);
  slots->free.len = 0;
  for (guint slot = slots->n_slots; slot-- > 0;) /* last freed, first reused: 0 on top */
    SIM_VEC_PUSH (&slots->free, guint, slot);
}

gpointer
sim_slots_take_new (SimSlots *slots, guint *slot)
{
  g_return_val_if_fail (slots != NULL && slot != NULL, NULL);
  g_return_val_if_fail (slots->free.len == 0, NULL); /* sim_slots_take reuses those */
  g_return_val_if_fail (slots->n_slots < G_MAXUINT32, NULL);
  if ((slots->n_slots & (slots->block_len - 1)) == 0)
    g_ptr_array_add (slots->blocks, slots->raw ? g_malloc_n (slots->block_len, slots->elem_size)
                                               : g_malloc0_n (slots->block_len, slots->elem_size));
  *slot = slots->n_slots++;
  return sim_slots_at (slots, *slot);
}
