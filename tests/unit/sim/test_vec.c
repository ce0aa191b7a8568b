/* tests/unit/sim/test_vec.c — sim/vec.h: the inline-append scratch vector and the small
 * sorts used by the engine's slot pool and the fluid solver. */
#include "config.h"
#include "sim/vec.h"
#include "tests/testlib.h"

typedef struct
{
  guint64 a;
  double b;
  guint c;
} Wide;

/* Appends keep order and values across growths (8, 16, 32, … elements: 1,000 appends of
 * a 24-byte struct cross seven); len counts them, cap ≥ len; reset by len = 0 keeps the
 * storage; clear frees it and leaves the vector empty and reusable. */
static void
test_append_grow (void)
{
  SimVec v = SIM_VEC_INIT;
  for (guint i = 0; i < 1000; i++)
    SIM_VEC_PUSH (&v, Wide, ((Wide){ .a = i * 3u, .b = i + 0.5, .c = i }));
  CU_ASSERT_EQUAL (v.len, 1000);
  CU_ASSERT_TRUE (v.cap >= 1000 && v.cap < 2000);
  gboolean ok = TRUE;
  for (guint i = 0; i < 1000; i++)
    {
      const Wide *w = &SIM_VEC_AT (&v, Wide, i);
      ok &= w->a == i * 3u && w->b == i + 0.5 && w->c == i;
    }
  CU_ASSERT_TRUE (ok);
  guint cap = v.cap;
  gpointer data = v.data;
  v.len = 0;
  SIM_VEC_PUSH (&v, Wide, ((Wide){ .c = 7 }));
  CU_ASSERT_PTR_EQUAL (v.data, data);
  CU_ASSERT_EQUAL (v.cap, cap);
  CU_ASSERT_EQUAL (SIM_VEC_AT (&v, Wide, 0).c, 7);
  sim_vec_clear (&v);
  CU_ASSERT_PTR_NULL (v.data);
  CU_ASSERT_EQUAL (v.len, 0);
  CU_ASSERT_EQUAL (v.cap, 0);
  sim_vec_clear (&v); /* empty: a no-op */
  SIM_VEC_PUSH (&v, guint, 42u);
  CU_ASSERT_EQUAL (SIM_VEC_AT (&v, guint, 0), 42u);
  CU_ASSERT_EQUAL (v.cap, 8); /* the first growth allocates 8 */
  sim_vec_grow (&v, sizeof (guint), 100);
  CU_ASSERT_EQUAL (v.cap, 128); /* doubled from 8 until ≥ 100 */
  CU_ASSERT_EQUAL (SIM_VEC_AT (&v, guint, 0), 42u);
  sim_vec_clear (&v);
}

static int
compare_ints_by_value (const void *a, const void *b)
{
  int x = *(const int *) *(gpointer const *) a, y = *(const int *) *(gpointer const *) b;
  return x < y ? -1 : x > y;
}

/* Both sorts against an independent order (every pair compared after sorting) on every
 * length 0…40 — both sides of the 16-element switch to qsort — of pseudo-random distinct
 * keys, including already sorted and reversed inputs. */
static void
test_sorts (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (5);
  int values[64];
  gpointer ptrs[64];
  guint uints[64];
  gboolean ok = TRUE;
  for (guint n = 0; n <= 40; n++)
    for (int pattern = 0; pattern < 3; pattern++)
      {
        for (guint i = 0; i < n; i++)
          {
            /* Distinct keys: i in the high bits keeps them apart. */
            guint key = pattern == 0 ? (g_rand_int_range (rng, 0, 1000) * 64u + i)
                        : pattern == 1 ? i : n - i;
            values[i] = (int) key;
            uints[i] = key;
            ptrs[i] = &values[i];
          }
        sim_sort_ptrs (ptrs, n, compare_ints_by_value);
        sim_sort_uints (uints, n);
        for (guint i = 0; i + 1 < n; i++)
          {
            ok &= *(int *) ptrs[i] < *(int *) ptrs[i + 1];
            ok &= uints[i] < uints[i + 1];
          }
        /* A permutation: every input pointer is still there once. */
        guint64 sum = 0;
        for (guint i = 0; i < n; i++)
          sum += (guint64) ((int *) ptrs[i] - values);
        ok &= sum == (guint64) n * (n > 0 ? n - 1 : 0) / 2;
      }
  CU_ASSERT_TRUE (ok);
}

int main (void);

int
main (void)
{
  static const StepsimTest tests[] = {
    { "append, growth, reset and clear", test_append_grow },
    { "small and large sorts give ascending order", test_sorts },
  };
  return STEPSIM_RUN_TESTS ("sim/vec", tests);
}
