/* sim/vec.c — the growable scratch array and small sorts of sim/vec.h. */
#include "config.h"
#define G_LOG_DOMAIN "stepsim-sim"
#include "sim/vec.h"

#include <stdlib.h>

void
sim_vec_grow (SimVec *v, gsize elt, guint min_cap)
{
  g_return_if_fail (v != NULL && elt > 0);
  if (min_cap <= v->cap)
    return;
  guint cap = v->cap == 0 ? 8 : v->cap;
  while (cap < min_cap)
    {
      g_assert (cap <= G_MAXUINT / 2);
      cap *= 2;
    }
  v->data = g_realloc_n (v->data, cap, elt);
  v->cap = cap;
}

void
sim_vec_clear (SimVec *v)
{
  g_return_if_fail (v != NULL);
  g_clear_pointer (&v->data, g_free);
  v->len = 0;
  v->cap = 0;
}

#define SMALL_SORT 16

void
sim_sort_ptrs (gpointer *v, guint n, int (*cmp) (const void *, const void *))
{
  if (n > SMALL_SORT)
    {
      qsort (v, n, sizeof (gpointer), cmp);
      return;
    }
  for (guint i = 1; i < n; i++)
    {
      gpointer x = v[i];
      guint j = i;
      while (j > 0 && cmp (&v[j - 1], &x) > 0)
        {
          v[j] = v[j - 1];
          j--;
        }
      v[j] = x;
    }
}

static int
compare_uints (const void *a, const void *b)
{
  guint x = *(const guint *) a, y = *(const guint *) b;
  return x < y ? -1 : x > y;
}

void
sim_sort_uints (guint *v, guint n)
{
  if (n > SMALL_SORT)
    {
      qsort (v, n, sizeof (guint), compare_uints);
      return;
    }
  for (guint i = 1; i < n; i++)
    {
      guint x = v[i];
      guint j = i;
      while (j > 0 && v[j - 1] > x)
        {
          v[j] = v[j - 1];
          j--;
        }
      v[j] = x;
    }
}
