/* cli/scenario/output.c — output path checks; see output.h. */
#include "config.h"
#include "cli/scenario/output.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/scenario/scenario.h"
#include "sim/tempfiles.h"

static gboolean
same_file (const GStatBuf *a, const char *other)
{
  GStatBuf b;
  return g_stat (other, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

/* The directory `dir` (holding `path`) exists and files can be created in it. */
static gboolean
dir_writable (const char *what, const char *path, const char *dir, GError **error)
{
  if (!g_file_test (dir, G_FILE_TEST_IS_DIR))
    {
      if (g_file_test (dir, G_FILE_TEST_EXISTS))
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s %s: %s is not a directory",
                     what, path, dir);
      else
        g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOENT, "%s %s: directory %s does not exist",
                     what, path, dir);
      return FALSE;
    }
  if (g_access (dir, W_OK | X_OK) == 0)
    {
      /* access() says yes to root everywhere, and on file systems that refuse new files
       * (/proc, sysfs, a read-only mount seen through permissive modes): create and remove a
       * probe, as the writers will create their temporary file there. */
      g_autofree char *probe = g_build_filename (dir, ".stepsim-probe-XXXXXX", NULL);
      int fd = g_mkstemp (probe);
      if (fd >= 0)
        {
          close (fd);
          g_unlink (probe);
          return TRUE;
        }
    }
  int err = errno;
  /* procfs answers the creation of a file in a directory that exists with ENOENT, which
   * strerror makes "No such file or directory" (QA): say what it means */
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err),
               "%s %s: cannot write in directory %s: %s", what, path, dir,
               err == ENOENT ? "its file system does not allow new files" : g_strerror (err));
  return FALSE;
}

/* `path` without its trailing separators ("new/" is the directory new; "/" stays), newly
 * allocated. */
static char *
trim_separators (const char *path)
{
  char *trimmed = g_strdup (path);
  for (gsize n = strlen (trimmed); n > 1 && G_IS_DIR_SEPARATOR (trimmed[n - 1]); n--)
    trimmed[n - 1] = '\0';
  return trimmed;
}

static gboolean
parent_exists (const char *what, const char *path, GError **error)
{
  /* "new/" is the directory new: its parent is ".", not "new" (QA: run --plot new/) */
  g_autofree char *trimmed = trim_separators (path);
  g_autofree char *dir = g_path_get_dirname (trimmed);
  return dir_writable (what, path, dir, error);
}

/* cli_output_check_name, `kind` naming what the last component is ("file", "directory"). */
static gboolean
check_name (const char *what, const char *path, const char *kind, GError **error)
{
  g_autofree char *base = g_path_get_basename (path);
  if (strlen (base) <= SIM_TEMPFILES_NAME_MAX)
    return TRUE;
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NAMETOOLONG,
               "%s %s: the %s name is %zu bytes, over the %d a file system takes", what, path,
               kind, strlen (base), SIM_TEMPFILES_NAME_MAX);
  return FALSE;
}

gboolean
cli_output_check_name (const char *what, const char *path, GError **error)
{
  return check_name (what, path, "file", error);
}

gboolean
cli_output_check (const char *what, const char *path, const char *const *inputs, GError **error)
{
  if (path == NULL || path[0] == '\0')
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: empty file name", what);
      return FALSE;
    }
  if (G_IS_DIR_SEPARATOR (path[strlen (path) - 1]))
    {
      /* else "directory x.h5 does not exist", or "x.h5 is not a directory" (QA: -o x.h5/) */
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s %s: ends in '/', a directory's name; name a file", what, path);
      return FALSE;
    }
  if (!cli_output_check_name (what, path, error))
    return FALSE;
  GStatBuf st;
  if (g_lstat (path, &st) == 0)
    {
      if (!S_ISREG (st.st_mode))
        {
          g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                       "%s %s: exists and is not a regular file (a directory, link, device or "
                       "pipe); choose another output file", what, path);
          return FALSE;
        }
      for (guint i = 0; inputs != NULL && inputs[i] != NULL; i++)
        if (same_file (&st, inputs[i]))
          {
            g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                         "%s %s: is the input %s; choose another output file", what, path,
                         inputs[i]);
            return FALSE;
          }
    }
  return parent_exists (what, path, error);
}

gboolean
cli_output_check_dir (const char *what, const char *dir, GError **error)
{
  if (dir == NULL || dir[0] == '\0')
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL, "%s: empty directory name", what);
      return FALSE;
    }
  /* "file/" names the existing file, which stat calls no directory (ENOTDIR), not a new
   * one (QA: run --plot file/ ran the simulation, then could not make the directory) */
  g_autofree char *trimmed = trim_separators (dir);
  if (g_file_test (trimmed, G_FILE_TEST_EXISTS))
    {
      if (g_file_test (trimmed, G_FILE_TEST_IS_DIR))
        return dir_writable (what, dir, dir, error);
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s %s: exists and is not a directory",
                   what, dir);
      return FALSE;
    }
  /* one to be made: a name too long is refused now, not when the outputs are written */
  return check_name (what, dir, "directory", error) && parent_exists (what, dir, error);
}

gboolean
cli_outputs_check (const char *const *whats, const char *const *paths, guint n,
                   const char *const *inputs, GError **error)
{
  for (guint i = 0; i < n; i++)
    {
      if (paths[i] == NULL)
        continue;
      if (!cli_output_check (whats[i], paths[i], inputs, error))
        return FALSE;
      g_autofree char *a = g_canonicalize_filename (paths[i], NULL);
      for (guint j = 0; j < i; j++)
        {
          if (paths[j] == NULL)
            continue;
          g_autofree char *b = g_canonicalize_filename (paths[j], NULL);
          if (g_strcmp0 (a, b) == 0)
            {
              g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                           "%s %s: the same file as %s; choose different outputs", whats[i],
                           paths[i], whats[j]);
              return FALSE;
            }
        }
    }
  return TRUE;
}

GPtrArray *
cli_inputs_new (void)
{
  GPtrArray *inputs = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (inputs, NULL);
  return inputs;
}

void
cli_inputs_add (GPtrArray *inputs, const char *path)
{
  if (path == NULL || g_strv_contains ((const char *const *) inputs->pdata, path))
    return;
  g_ptr_array_insert (inputs, (gint) inputs->len - 1, g_strdup (path));
}

void
cli_inputs_add_scenario (GPtrArray *inputs, const char *path, const char *const *sets)
{
  cli_inputs_add (inputs, path);
  g_auto (GStrv) json = cli_scenario_json_files (path, sets);
  for (guint i = 0; json[i] != NULL; i++)
    cli_inputs_add (inputs, json[i]);
}

void
cli_inputs_add_point (GPtrArray *inputs, const char *path, const char *const *sets,
                      char ***json, gboolean *have_json)
{
  if (cli_scenario_sets_name_json_files (sets))
    {
      cli_inputs_add_scenario (inputs, path, sets);
      return;
    }
  if (!*have_json)
    {
      *json = cli_scenario_json_files (path, NULL);
      *have_json = TRUE;
    }
  cli_inputs_add (inputs, path);
  for (guint i = 0; (*json)[i] != NULL; i++)
    cli_inputs_add (inputs, (*json)[i]);
}

gboolean
cli_output_check_chart (const char *what, const char *path, GError **error)
{
  g_autofree char *lower = g_ascii_strdown (path, -1);
  if (g_str_has_suffix (lower, ".png") || g_str_has_suffix (lower, ".svg"))
    return TRUE;
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
               "%s %s: a chart is written as .png or .svg; name the file so", what, path);
  return FALSE;
}

/* The errno of the first write to standard output that failed (cli_stdout_install's
 * stream), 0 while none has: stdio keeps only that one failed, and a later flush with
 * nothing left to write (g_print flushes as it prints, GOption's --help) loses why. */
static int stdout_write_errno;

/* cli_stdout_install's write: all of `buf` to descriptor 1, retried on EINTR; the first
 * failure's errno kept. */
static ssize_t
stdout_write (void *cookie, const char *buf, size_t size)
{
  (void) cookie;
  size_t done = 0;
  while (done < size)
    {
      ssize_t n = write (STDOUT_FILENO, buf + done, size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        {
          if (stdout_write_errno == 0)
            stdout_write_errno = n < 0 ? errno : EIO;
          return done > 0 ? (ssize_t) done : -1;
        }
      done += (size_t) n;
    }
  return (ssize_t) done;
}

void
cli_stdout_install (void)
{
#ifdef __GLIBC__
  static const cookie_io_functions_t io = { .write = stdout_write };
  FILE *f = fopencookie (NULL, "w", io);
  if (f == NULL)
    return;
  setvbuf (f, NULL, isatty (STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
  fflush (stdout);
  stdout = f; /* glibc: stdout is an ordinary variable (its manual, "Standard Streams") */
#endif
}

gboolean
cli_stdout_flush (GError **error)
{
  errno = 0;
  gboolean written = fflush (stdout) == 0 && !ferror (stdout);
  int err = stdout_write_errno != 0 ? stdout_write_errno : errno;
  if (written || err == EPIPE)
    return TRUE;
  GStatBuf st;
  /* an earlier write failed, its errno gone (stdout not cli_stdout_install's): into a pipe,
   * that was its reader leaving */
  if (err == 0 && fstat (STDOUT_FILENO, &st) == 0
      && (S_ISFIFO (st.st_mode) || S_ISSOCK (st.st_mode)))
    return TRUE;
  g_set_error (error, G_FILE_ERROR, err != 0 ? g_file_error_from_errno (err) : G_FILE_ERROR_IO,
               "cannot write to standard output: %s",
               err != 0 ? g_strerror (err) : "write error");
  return FALSE;
}

gboolean
cli_stdout_is_stderr (void)
{
  GStatBuf out, err;
  return fstat (STDOUT_FILENO, &out) == 0 && fstat (STDERR_FILENO, &err) == 0
         && out.st_dev == err.st_dev && out.st_ino == err.st_ino;
}
