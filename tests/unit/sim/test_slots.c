/* tests/unit/sim/test_slots.c — sim/slots.h: the generational slot pool shared by the event
 * engine and the fluid solver. */
#include "config.h"
#include "sim/slots.h"
#include "tests/testlib.h"

typedef struct
{
  guint32 gen;
  guint64 id;
  double payload[3];
} Elem;

/* Slots are handed out 0, 1, 2, …; a given-back slot is reused last-freed-first; new
 * slots' bytes are zero; addresses stay put when new blocks are added (block_len 4, so 10
 * slots span three blocks). */
static void
test_take_give (void)
{
  SimSlots s;
  sim_slots_init (&s, sizeof (Elem), 4);
  Elem *first = NULL;
  for (guint i = 0; i < 10; i++)
    {
      guint slot = G_MAXUINT;
      Elem *e = sim_slots_take (&s, &slot);
      CU_ASSERT_EQUAL (slot, i);
      CU_ASSERT_EQUAL (e->gen, 0);
      CU_ASSERT_EQUAL (e->payload[2], 0.0);
      e->payload[0] = i;
      if (i == 0)
        first = e;
    }
  CU_ASSERT_PTR_EQUAL (sim_slots_at (&s, 0), first);
  CU_ASSERT_EQUAL (((Elem *) sim_slots_at (&s, 9))->payload[0], 9.0);
  sim_slots_give (&s, 3);
  sim_slots_give (&s, 7);
  guint slot;
  Elem *e = sim_slots_take (&s, &slot);
  CU_ASSERT_EQUAL (slot, 7);
  CU_ASSERT_EQUAL (e->payload[0], 7.0); /* bytes as last left */
  sim_slots_take (&s, &slot);
  CU_ASSERT_EQUAL (slot, 3);
  sim_slots_take (&s, &slot);
  CU_ASSERT_EQUAL (slot, 10); /* free list empty: a new slot */
  CU_ASSERT_EQUAL (s.n_slots, 11);
  sim_slots_clear (&s);
}

/* Ids: (gen << 32) | (slot + 1); 0 and ids past the handed-out slots name no slot; a stale id
 * (its slot reused at a newer generation) names the slot but no longer matches the element. */
static void
test_ids (void)
{
  SimSlots s;
  sim_slots_init (&s, sizeof (Elem), 2);
  guint slot;
  Elem *e = sim_slots_take (&s, &slot);
  e->gen++;
  e->id = sim_slot_id (e->gen, slot);
  CU_ASSERT_EQUAL (e->id, ((guint64) 1 << 32) | 1);
  guint found = G_MAXUINT;
  CU_ASSERT_TRUE (sim_slot_of_id (&s, e->id, &found));
  CU_ASSERT_EQUAL (found, 0);
  CU_ASSERT_FALSE (sim_slot_of_id (&s, 0, &found));
  CU_ASSERT_FALSE (sim_slot_of_id (&s, sim_slot_id (1, 5), &found));
  guint64 stale = e->id;
  sim_slots_give (&s, slot);
  e = sim_slots_take (&s, &slot);
  e->gen++;
  e->id = sim_slot_id (e->gen, slot);
  CU_ASSERT_TRUE (sim_slot_of_id (&s, stale, &found));
  CU_ASSERT_NOT_EQUAL (((Elem *) sim_slots_at (&s, found))->id, stale);
  sim_slots_clear (&s);
}

/* sim_slots_reset: every slot free again, taken back in the order a new pool hands them out
 * (0, 1, 2, …), at the same addresses, keeping their bytes; new slots after them. */
static void
test_reset (void)
{
  SimSlots s;
  sim_slots_init (&s, sizeof (guint64), 4);
  guint slot;
  guint64 *first = NULL;
  for (guint i = 0; i < 6; i++)
    {
      guint64 *e = sim_slots_take (&s, &slot);
      *e = 100 + i;
      if (i == 0)
        first = e;
    }
  sim_slots_give (&s, 4);
  sim_slots_give (&s, 1);
  sim_slots_reset (&s);
  for (guint i = 0; i < 6; i++)
    {
      guint64 *e = sim_slots_take (&s, &slot);
      CU_ASSERT_EQUAL (slot, i);
      CU_ASSERT_EQUAL (*e, 100 + i);
      if (i == 0)
        CU_ASSERT_PTR_EQUAL (e, first);
    }
  sim_slots_take (&s, &slot);
  CU_ASSERT_EQUAL (slot, 6);
  CU_ASSERT_EQUAL (s.n_slots, 7);
  sim_slots_clear (&s);
}

/* A raw pool (sim_slots_init_raw) hands out the same slots in the same order as a zeroing
 * one, at stable addresses, bytes as the caller last left them; and a zeroing pool's new
 * blocks stay zeroed beside it. */
static void
test_raw (void)
{
  SimSlots raw, zero;
  sim_slots_init_raw (&raw, sizeof (Elem), 4);
  sim_slots_init (&zero, sizeof (Elem), 4);
  CU_ASSERT_TRUE (raw.raw);
  CU_ASSERT_FALSE (zero.raw);
  Elem *at[10];
  for (guint i = 0; i < 10; i++)
    {
      guint slot = G_MAXUINT, zslot = G_MAXUINT;
      at[i] = sim_slots_take (&raw, &slot);
      *at[i] = (Elem){ .gen = i, .id = 100 + i };
      Elem *z = sim_slots_take (&zero, &zslot);
      CU_ASSERT_EQUAL (slot, i);
      CU_ASSERT_EQUAL (zslot, i);
      CU_ASSERT_EQUAL (z->id, 0);
    }
  for (guint i = 0; i < 10; i++)
    {
      CU_ASSERT_PTR_EQUAL (sim_slots_at (&raw, i), at[i]);
      CU_ASSERT_EQUAL (at[i]->id, 100 + i);
    }
  sim_slots_give (&raw, 6);
  sim_slots_give (&raw, 2);
  guint slot;
  Elem *e = sim_slots_take (&raw, &slot);
  CU_ASSERT_EQUAL (slot, 2);
  CU_ASSERT_EQUAL (e->id, 102);
  sim_slots_take (&raw, &slot);
  CU_ASSERT_EQUAL (slot, 6);
  sim_slots_take (&raw, &slot);
  CU_ASSERT_EQUAL (slot, 10);
  sim_slots_clear (&raw);
  sim_slots_clear (&zero);
}

int
main (void)
{

  const StepsimTest tests[] = {
    { "take, give back, reuse; stable addresses", test_take_give },
    { "ids name slot and generation; stale ids do not match", test_ids },
    { "reset: every slot free, taken in a new pool's order", test_reset },
    { "a raw pool hands out slots as a zeroing one", test_raw },
  };
  return STEPSIM_RUN_TESTS ("sim/slots", tests);
}
