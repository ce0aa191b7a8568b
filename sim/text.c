/* sim/text.c — nearest-name hints for error messages (Levenshtein distance, Wagner–Fischer
 * dynamic programme, one row of O(n) memory). */
#include "config.h"
#include "sim/text.h"

#include <string.h>

static guint
levenshtein (const char *a, const char *b)
{
  gsize la = strlen (a), lb = strlen (b);
  g_autofree guint *row = g_new (guint, lb + 1);
  for (gsize j = 0; j <= lb; j++)
    row[j] = (guint) j;
  for (gsize i = 1; i <= la; i++)
    {
      guint diag = row[0];
      row[0] = (guint) i;
      for (gsize j = 1; j <= lb; j++)
        {
          guint up = row[j];
          guint cost = g_ascii_tolower (a[i - 1]) == g_ascii_tolower (b[j - 1]) ? 0 : 1;
          guint best = MIN (row[j] + 1, row[j - 1] + 1);
          row[j] = MIN (best, diag + cost);
          diag = up;
        }
    }
  return row[lb];
}

const char *
sim_text_nearest (const char *word, const char *const *candidates)
{
  g_return_val_if_fail (word != NULL, NULL);
  if (candidates == NULL)
    return NULL;
  guint limit = MAX (2, (guint) strlen (word) / 3);
  const char *best = NULL;
  guint best_d = G_MAXUINT;
  for (const char *const *c = candidates; *c != NULL; c++)
    {
      guint d = levenshtein (word, *c);
      if (d < best_d)
        {
          best_d = d;
          best = *c;
        }
    }
  return best_d <= limit ? best : NULL;
}

char *
sim_text_with_hint (char *message, const char *word, const char *const *candidates)
{
  const char *near = sim_text_nearest (word, candidates);
  if (near == NULL)
    return message;
  char *out = g_strdup_printf ("%s; did you mean '%s'?", message, near);
  g_free (message);
  return out;
}

char *
sim_text_group_digits (guint64 n)
{
  g_autofree char *plain = g_strdup_printf ("%" G_GUINT64_FORMAT, n);
  GString *out = g_string_new (NULL);
  gsize len = strlen (plain);
  for (gsize i = 0; i < len; i++)
    {
      if (i > 0 && (len - i) % 3 == 0)
        g_string_append_c (out, ',');
      g_string_append_c (out, plain[i]);
    }
  return g_string_free (out, FALSE);
}
