/* cli/options.c — the command line's options as every command reads them: short options
 * with an attached value split as getopt would before GOption parses, an operand after
 * "--" kept as one, and GOption's errors worded as the other errors; see commands.h. */
#include "config.h"

#include <string.h>
#include "cli/commands.h"

char *
cli_option_error_message (const char *command, const GError *error)
{
  /* GLib's messages begin with a capital ("Unknown option --x", "Missing argument for
   * -o"): lower-cased after the command's name, as the other errors read */
  /* GOption converts string values from the locale's encoding; its message names no option
   * (QA: "invalid byte sequence in conversion input" for --title) */
  g_autofree char *text = error->domain == G_CONVERT_ERROR
                              ? g_strdup_printf ("an option's value is not valid text in this "
                                                 "locale's encoding (%s)", error->message)
                              : g_strdup (error->message);
  if (text[0] != '\0' && g_ascii_isupper (text[0]) && !g_ascii_isupper (text[1]))
    text[0] = g_ascii_tolower (text[0]);
  return g_strdup_printf ("%s: %s (see stepsim %s --help)", command, text, command);
}

/* The entry of `entries` whose short name is `c`, or NULL. */
static const GOptionEntry *
short_entry (const GOptionEntry *entries, char c)
{
  for (const GOptionEntry *e = entries; e->long_name != NULL; e++)
    if (e->short_name != 0 && e->short_name == c)
      return e;
  return NULL;
}

/* Whether `e` reads a value (in the next argument, or after '=' for its long name). */
static gboolean
takes_value (const GOptionEntry *e)
{
  return e->arg != G_OPTION_ARG_NONE
         && !(e->arg == G_OPTION_ARG_CALLBACK && (e->flags & G_OPTION_FLAG_NO_ARG) != 0);
}

/* Where the short-option group `arg` ("-qj2") splits into the option part and its
 * attached value: the index after its first short option that takes a value; 0 when no
 * such option has characters after it. `*value_next`: the group ends with an option that
 * takes a value, so the next argument is that value. */
static gsize
attached_split (const GOptionEntry *entries, const char *arg, gboolean *value_next)
{
  *value_next = FALSE;
  for (gsize j = 1; arg[j] != '\0'; j++)
    {
      const GOptionEntry *e = short_entry (entries, arg[j]);
      if (e == NULL && (arg[j] == 'h' || arg[j] == '?')) /* GOption's own help flags */
        continue;
      if (e == NULL)
        return 0; /* GOption says which is unknown */
      if (!takes_value (e))
        continue;
      if (arg[j + 1] != '\0')
        return j + 1;
      *value_next = TRUE;
      return 0;
    }
  return 0;
}

static gboolean
split_and_parse (GOptionContext *ctx, const GOptionEntry *entries, int *argc, char ***argv,
                 GError **error)
{
  g_autoptr (GPtrArray) args = g_ptr_array_new ();        /* borrowed and `made` strings */
  g_autoptr (GPtrArray) made = g_ptr_array_new_with_free_func (g_free);
  gboolean value_next = FALSE, options_end = FALSE;
  for (int i = 0; i < *argc; i++)
    {
      char *a = (*argv)[i];
      gboolean is_value = value_next;
      value_next = FALSE;
      if (i == 0 || is_value || options_end || a[0] != '-' || a[1] == '\0')
        {
          g_ptr_array_add (args, a);
          continue;
        }
      if (a[1] == '-')
        {
          options_end = a[2] == '\0';
          for (const GOptionEntry *e = entries; !options_end && e->long_name != NULL; e++)
            if (strcmp (a + 2, e->long_name) == 0)
              value_next = takes_value (e);
          g_ptr_array_add (args, a);
          continue;
        }
      gsize split = attached_split (entries, a, &value_next);
      if (split == 0)
        {
          g_ptr_array_add (args, a);
          continue;
        }
      g_ptr_array_add (made, g_strndup (a, split));
      g_ptr_array_add (args, made->pdata[made->len - 1]);
      g_ptr_array_add (made, g_strdup (a + split));
      g_ptr_array_add (args, made->pdata[made->len - 1]);
    }
  if (made->len == 0)
    return g_option_context_parse (ctx, argc, argv, error);
  g_ptr_array_add (args, NULL);
  int n = (int) args->len - 1;
  char **v = (char **) args->pdata;
  if (!g_option_context_parse (ctx, &n, &v, error))
    return FALSE;
  /* Each split pair is an option and its value, both consumed: what is left are `*argv`'s
   * own strings, no more of them than there were. */
  g_assert (n <= *argc);
  for (int i = 0; i < n; i++)
    {
      for (guint k = 0; k < made->len; k++)
        g_assert (v[i] != made->pdata[k]);
      (*argv)[i] = v[i];
    }
  if (n < *argc)
    (*argv)[n] = NULL;
  *argc = n;
  return TRUE;
}

gboolean
cli_option_parse (GOptionContext *ctx, const GOptionEntry *entries, int *argc, char ***argv,
                  GError **error)
{
  if (!split_and_parse (ctx, entries, argc, argv, error))
    return FALSE;
  /* GOption leaves the "--" that ended the options in place when an argument after it
   * starts with '-' (so that a second parse would not read it as one); every argument after
   * it is an operand, so it goes: `run -- -x.ini` reads the file -x.ini */
  for (int i = 1; i < *argc; i++)
    if (strcmp ((*argv)[i], "--") == 0)
      {
        memmove (&(*argv)[i], &(*argv)[i + 1], (gsize) (*argc - i) * sizeof (char *));
        (*argc)--;
        break;
      }
  return TRUE;
}
