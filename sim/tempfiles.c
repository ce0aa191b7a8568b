/* sim/tempfiles.c — registry of files to remove on interruption; see tempfiles.h. */
#include "config.h"
#include "sim/tempfiles.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* A slot holds a g_strdup'ed path or NULL; the signal handler only loads the pointers. */
static _Atomic (char *) slots[SIM_TEMPFILES_MAX];

void
sim_tempfiles_add (const char *path)
{
  g_return_if_fail (path != NULL);
  char *copy = g_strdup (path);
  for (guint i = 0; i < SIM_TEMPFILES_MAX; i++)
    {
      char *expected = NULL;
      if (atomic_compare_exchange_strong (&slots[i], &expected, copy))
        return;
    }
  g_warning ("more than %d temporary files registered; %s is not removed on interruption",
             SIM_TEMPFILES_MAX, path);
  g_free (copy);
}

void
sim_tempfiles_forget (const char *path)
{
  for (guint i = 0; path != NULL && i < SIM_TEMPFILES_MAX; i++)
    {
      char *p = atomic_load (&slots[i]);
      if (p != NULL && g_strcmp0 (p, path) == 0)
        {
          char *expected = p;
          if (atomic_compare_exchange_strong (&slots[i], &expected, NULL))
            g_free (p);
          return;
        }
    }
}

void
sim_tempfiles_forget_all (void)
{
  for (guint i = 0; i < SIM_TEMPFILES_MAX; i++)
    g_free (atomic_exchange (&slots[i], NULL));
}

void
sim_tempfiles_unlink_all (void)
{
  for (guint i = 0; i < SIM_TEMPFILES_MAX; i++)
    {
      const char *p = atomic_load (&slots[i]);
      if (p != NULL)
        (void) unlink (p);
    }
  for (guint i = 0; i < SIM_TEMPFILES_MAX; i++) /* the directories, emptied above */
    {
      const char *p = atomic_load (&slots[i]);
      if (p != NULL)
        (void) rmdir (p);
    }
}

char *
sim_tempfiles_new_path (const char *path, const char *suffix)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_autofree char *tail = g_strdup_printf (".tmp.%ld%s", (long) getpid (), suffix ? suffix : "");
  const char *slash = strrchr (path, '/');
  gsize dir = slash != NULL ? (gsize) (slash + 1 - path) : 0;
  gsize base = strlen (path) - dir;
  char *tmp;
  if (base + strlen (tail) <= SIM_TEMPFILES_NAME_MAX)
    tmp = g_strconcat (path, tail, NULL);
  else
    {
      /* a name near the file system's limit (QA: a 236-byte output name failed after the
       * run): its first bytes and a serial number, unique in the process */
      static atomic_uint serial;
      g_autofree char *mark = g_strdup_printf ("~%u", atomic_fetch_add (&serial, 1));
      gsize keep = SIM_TEMPFILES_NAME_MAX - strlen (tail) - strlen (mark);
      tmp = g_strdup_printf ("%.*s%s%s", (int) (dir + MIN (keep, base)), path, mark, tail);
    }
  sim_tempfiles_add (tmp);
  return tmp;
}

gboolean
sim_tempfiles_set_contents (const char *path, const char *data, gsize len, GError **error)
{
  g_return_val_if_fail (path != NULL && (data != NULL || len == 0), FALSE);
  g_autofree char *tmp = sim_tempfiles_new_path (path, NULL);
  FILE *f = g_fopen (tmp, "wb");
  int err = 0;
  if (f == NULL)
    err = errno;
  else
    {
      if (len > 0 && fwrite (data, 1, len, f) != len)
        err = errno ? errno : EIO;
      if (fclose (f) != 0 && err == 0)
        err = errno;
      if (err == 0 && g_rename (tmp, path) != 0)
        err = errno;
    }
  if (err != 0)
    {
      g_remove (tmp);
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err), "cannot write %s: %s",
                   path, g_strerror (err));
    }
  sim_tempfiles_forget (tmp);
  return err == 0;
}

/* ---- Staged outputs ----------------------------------------------------------------- */

typedef struct
{
  char *staged; /* NULL once renamed */
  char *path;
} Staged;

struct SimStaged
{
  GArray *files; /* of Staged, in the order added */
};

SimStaged *
sim_staged_new (void)
{
  SimStaged *s = g_new0 (SimStaged, 1);
  s->files = g_array_new (FALSE, FALSE, sizeof (Staged));
  return s;
}

const char *
sim_staged_add (SimStaged *s, const char *path, const char *ext)
{
  g_return_val_if_fail (s != NULL && path != NULL, NULL);
  Staged f = { sim_tempfiles_new_path (path, ext), g_strdup (path) };
  g_array_append_val (s->files, f);
  return f.staged;
}

void
sim_staged_name_paths (const SimStaged *s, GError *error)
{
  g_return_if_fail (s != NULL);
  if (error == NULL)
    return;
  GString *m = g_string_new (error->message);
  for (guint i = 0; i < s->files->len; i++)
    {
      const Staged *f = &g_array_index (s->files, Staged, i);
      if (f->staged != NULL)
        g_string_replace (m, f->staged, f->path, 0);
    }
  g_free (error->message);
  error->message = g_string_free (m, FALSE);
}

const char *
sim_staged_path (const SimStaged *s, guint i)
{
  g_return_val_if_fail (s != NULL, NULL);
  return i < s->files->len ? g_array_index (s->files, Staged, i).path : NULL;
}

gboolean
sim_staged_commit (SimStaged *s, GError **error)
{
  g_return_val_if_fail (s != NULL, FALSE);
  for (guint i = 0; i < s->files->len; i++)
    {
      Staged *f = &g_array_index (s->files, Staged, i);
      if (f->staged == NULL)
        continue;
      if (g_rename (f->staged, f->path) != 0)
        {
          int err = errno;
          g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
                       "cannot rename %s to %s: %s", f->staged, f->path, g_strerror (err));
          return FALSE;
        }
      sim_tempfiles_forget (f->staged);
      g_clear_pointer (&f->staged, g_free);
    }
  return TRUE;
}

void
sim_staged_free (SimStaged *s)
{
  if (s == NULL)
    return;
  for (guint i = 0; i < s->files->len; i++)
    {
      Staged *f = &g_array_index (s->files, Staged, i);
      if (f->staged != NULL)
        {
          g_unlink (f->staged);
          sim_tempfiles_forget (f->staged);
          g_free (f->staged);
        }
      g_free (f->path);
    }
  g_array_free (s->files, TRUE);
  g_free (s);
}
