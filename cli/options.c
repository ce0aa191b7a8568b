/* cli/options.c — the command line's options as every command reads them: short options
 * with an attached value split as getopt would before GOption parses, an operand after
 * "--" kept as one, and GOption's errors worded as the other errors; see commands.h. */
#include "config.h"

#include <string.h>
#include "cli/commands.h"
#include "sim/text.h"

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

/* `e` as the messages name it: "-o" for an output, else its long name ("--trace"). */
static char *
option_name (const GOptionEntry *e)
{
  return e->short_name == 'o' ? g_strdup ("-o") : g_strconcat ("--", e->long_name, NULL);
}

/* The first value of `args` (`n` of them, argv[0] the command) that an option of `entries`
 * reads as text (G_OPTION_ARG_STRING, _STRING_ARRAY), which GOption converts from the
 * locale's encoding, that does not convert: FALSE + G_OPTION_ERROR_BAD_VALUE naming the
 * option and quoting the value ("--set 'scenario.name=a\xFF': not valid text in this
 * locale's encoding (UTF-8)"; GOption's own error names neither). */
static gboolean
check_text_values (const GOptionEntry *entries, int n, char **args, GError **error)
{
  const GOptionEntry *value_of = NULL; /* the option the next argument is the value of */
  for (int i = 1; i < n; i++)
    {
      const char *a = args[i], *value = NULL;
      const GOptionEntry *e = NULL;
      if (value_of != NULL)
        e = value_of, value = a, value_of = NULL;
      else if (strcmp (a, "--") == 0)
        break;
      else if (a[0] == '-' && a[1] == '-')
        {
          for (const GOptionEntry *c = entries; c->long_name != NULL && e == NULL; c++)
            {
              gsize len = strlen (c->long_name);
              if (strncmp (a + 2, c->long_name, len) == 0 && a[2 + len] == '=')
                e = c, value = a + 3 + len;
              else if (strcmp (a + 2, c->long_name) == 0 && takes_value (c))
                value_of = c;
            }
        }
      else if (a[0] == '-' && a[1] != '\0')
        {
          /* a group of short options ("-qs"; an attached value is split off by now): the
           * last one may read the next argument */
          const GOptionEntry *c = short_entry (entries, a[strlen (a) - 1]);
          value_of = c != NULL && takes_value (c) ? c : NULL;
        }
      if (e == NULL || (e->arg != G_OPTION_ARG_STRING && e->arg != G_OPTION_ARG_STRING_ARRAY))
        continue;
      g_autofree char *text = g_locale_to_utf8 (value, -1, NULL, NULL, NULL);
      if (text != NULL)
        continue;
      const char *charset;
      g_get_charset (&charset);
      g_autofree char *name = option_name (e);
      g_autofree char *shown = sim_text_printable (value, 80);
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s '%s': not valid text in this locale's encoding (%s)", name, shown,
                   charset);
      return FALSE;
    }
  return TRUE;
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
    return check_text_values (entries, *argc, *argv, error)
           && g_option_context_parse (ctx, argc, argv, error);
  g_ptr_array_add (args, NULL);
  int n = (int) args->len - 1;
  char **v = (char **) args->pdata;
  if (!check_text_values (entries, n, v, error) || !g_option_context_parse (ctx, &n, &v, error))
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

/* An option that names a file or directory (G_OPTION_ARG_FILENAME) given an empty value:
 * FALSE + G_OPTION_ERROR_BAD_VALUE "-o needs a non-empty name", a usage error whichever
 * option it is (QA: `--trace ''` exited 1 where `-o ''` exited 2). */
static gboolean
check_file_names (const GOptionEntry *entries, GError **error)
{
  for (const GOptionEntry *e = entries; e->long_name != NULL; e++)
    {
      const char *const *value = e->arg_data;
      if (e->arg != G_OPTION_ARG_FILENAME || value == NULL || *value == NULL
          || (*value)[0] != '\0')
        continue;
      g_autofree char *name = option_name (e);
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "%s needs a non-empty name", name);
      return FALSE;
    }
  return TRUE;
}

gboolean
cli_option_parse (GOptionContext *ctx, const GOptionEntry *entries, int *argc, char ***argv,
                  GError **error)
{
  if (!split_and_parse (ctx, entries, argc, argv, error) || !check_file_names (entries, error))
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

gboolean
cli_option_check_file_output (const char *what, const char *value, const char *kind,
                              const char *stdout_hint, GError **error)
{
  if (value == NULL || strcmp (value, "-") != 0)
    return TRUE;
  /* HDF5 writes its file in place (the superblock last, at its start): no pipe or terminal
   * can take it; a trace beside the summary would mix into it; "-" would otherwise be a
   * file of that name (QA: batch -o - and run --trace - wrote one) */
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "%s -: %s, it cannot be written to standard output; name a file (./- for one "
               "named '-')%s%s", what, kind, stdout_hint != NULL ? "; " : "",
               stdout_hint != NULL ? stdout_hint : "");
  return FALSE;
}
