/* cli/scenario/input.c — input text files read whole, within limits; see input.h.
 *
 * The file is opened without blocking (a FIFO would otherwise wait for a writer), checked
 * with fstat on the open descriptor (no window between the check and the read), and read
 * up to one byte past the limit, so a file that grows while being read is still refused.
 */
#include "config.h"
#include "cli/scenario/input.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "sim/text.h"

const char *
cli_input_path_problem (const char *path)
{
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "no such file" : "cannot be read";
  if (S_ISREG (st.st_mode))
    return NULL;
  if (S_ISDIR (st.st_mode))
    return "is a directory, not a file";
  if (S_ISCHR (st.st_mode) || S_ISBLK (st.st_mode))
    return "is a device, not a file";
  if (S_ISFIFO (st.st_mode))
    return "is a FIFO, not a file";
  return "is not a regular file";
}

/* ---- the input memo ------------------------------------------------------------------------ */

typedef struct
{
  gpointer value;
  GDestroyNotify free_value;
} Kept;

static void
kept_free (gpointer data)
{
  Kept *k = data;
  k->free_value (k->value);
  g_free (k);
}

/* "kind\npath" → Kept*, NULL when no memo is active; guarded by memo_lock (workers of a
 * batch load scenarios in parallel). */
static GHashTable *memo;
static GMutex memo_lock;

void
cli_input_memo_begin (void)
{
  g_mutex_lock (&memo_lock);
  g_assert (memo == NULL);
  memo = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, kept_free);
  g_mutex_unlock (&memo_lock);
}

void
cli_input_memo_end (void)
{
  g_mutex_lock (&memo_lock);
  g_clear_pointer (&memo, g_hash_table_unref);
  g_mutex_unlock (&memo_lock);
}

gconstpointer
cli_input_memo_lookup (const char *kind, const char *path)
{
  g_return_val_if_fail (kind != NULL && path != NULL, NULL);
  g_autofree char *key = g_strconcat (kind, "\n", path, NULL);
  g_mutex_lock (&memo_lock);
  const Kept *k = memo != NULL ? g_hash_table_lookup (memo, key) : NULL;
  g_mutex_unlock (&memo_lock);
  return k != NULL ? k->value : NULL;
}

void
cli_input_memo_keep (const char *kind, const char *path, gpointer value,
                     GDestroyNotify free_value)
{
  g_return_if_fail (kind != NULL && path != NULL && free_value != NULL);
  char *key = g_strconcat (kind, "\n", path, NULL);
  g_mutex_lock (&memo_lock);
  gboolean keep = memo != NULL && !g_hash_table_contains (memo, key);
  if (keep)
    {
      Kept *k = g_new (Kept, 1);
      *k = (Kept){ value, free_value };
      g_hash_table_insert (memo, key, k);
    }
  g_mutex_unlock (&memo_lock);
  if (!keep)
    {
      g_free (key);
      free_value (value);
    }
}

static gboolean
memo_active (void)
{
  g_mutex_lock (&memo_lock);
  gboolean active = memo != NULL;
  g_mutex_unlock (&memo_lock);
  return active;
}

/* A file's text as cli_input_read returns it, kept in the memo. */
typedef struct
{
  char *text; /* NUL-terminated */
  gsize length; /* bytes without the NUL */
} Text;

static void
text_free (gpointer data)
{
  Text *t = data;
  g_free (t->text);
  g_free (t);
}

/* ---- reading ------------------------------------------------------------------------------ */

static gboolean
set_errno_error (GError **error, const char *path, const char *what, int err)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err), "%s: cannot %s: %s", path,
               what, g_strerror (err));
  return FALSE;
}

/* Reads at most CLI_INPUT_MAX_BYTES + 1 bytes of `fd` into `buf`. */
static gboolean
read_all (int fd, const char *path, GByteArray *buf, GError **error)
{
  guint8 chunk[65536];
  while (buf->len <= CLI_INPUT_MAX_BYTES)
    {
      gssize n = read (fd, chunk, MIN (sizeof chunk, CLI_INPUT_MAX_BYTES + 1 - buf->len));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0)
        return set_errno_error (error, path, "read", errno);
      if (n == 0)
        return TRUE;
      g_byte_array_append (buf, chunk, (guint) n);
    }
  return TRUE;
}

gboolean
cli_input_read (const char *path, char **text, gsize *length, GError **error)
{
  g_return_val_if_fail (path != NULL && text != NULL, FALSE);
  const Text *kept = cli_input_memo_lookup ("text", path);
  if (kept != NULL)
    {
      *text = g_memdup2 (kept->text, kept->length + 1);
      if (length != NULL)
        *length = kept->length;
      return TRUE;
    }
  int fd = g_open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0);
  if (fd < 0)
    return set_errno_error (error, path, "open", errno);
  GStatBuf st;
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  gboolean ok = FALSE;
  if (fstat (fd, &st) != 0)
    set_errno_error (error, path, "read", errno);
  else if (!S_ISREG (st.st_mode))
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                 "%s: not a regular file of at most 16 MiB (it is %s)", path,
                 sim_text_file_kind (st.st_mode));
  else if (read_all (fd, path, buf, error))
    ok = TRUE;
  g_close (fd, NULL);
  if (!ok)
    return FALSE;
  if (buf->len > CLI_INPUT_MAX_BYTES)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: not a regular file of at most 16 MiB (it is larger)", path);
      return FALSE;
    }
  const guint8 *nul = buf->len > 0 ? memchr (buf->data, '\0', buf->len) : NULL; /* data is NULL when empty */
  if (nul != NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: holds a NUL byte at offset %u: not a text file", path,
                   (guint) (nul - buf->data));
      return FALSE;
    }
  const char *bad = NULL;
  if (!g_utf8_validate ((const char *) buf->data, buf->len, &bad))
    {
      guint line = 1;
      for (const guint8 *p = buf->data; p < (const guint8 *) bad; p++)
        line += *p == '\n';
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: line %u: byte 0x%02X is not UTF-8: not a text file (stepsim reads "
                   "its scenario, sweep and measurement files as UTF-8)", path, line,
                   (guint) (guint8) *bad);
      return FALSE;
    }
  /* a UTF-8 byte-order mark (what some Windows editors write first) is not content */
  if (buf->len >= 3 && memcmp (buf->data, "\xEF\xBB\xBF", 3) == 0)
    g_byte_array_remove_range (buf, 0, 3);
  if (length != NULL)
    *length = buf->len;
  gsize n = buf->len;
  g_byte_array_append (buf, (const guint8 *) "", 1);
  *text = (char *) g_byte_array_free (g_steal_pointer (&buf), FALSE);
  if (memo_active ())
    {
      Text *copy = g_new (Text, 1);
      *copy = (Text){ g_memdup2 (*text, n + 1), n };
      cli_input_memo_keep ("text", path, copy, text_free);
    }
  return TRUE;
}

gboolean
cli_input_load_keyfile (GKeyFile *kf, const char *path, GError **error)
{
  g_return_val_if_fail (kf != NULL && path != NULL, FALSE);
  g_autofree char *text = NULL;
  gsize length = 0;
  if (!cli_input_read (path, &text, &length, error)) /* its message names the file */
    return FALSE;
  if (!g_key_file_load_from_data (kf, text, length, G_KEY_FILE_NONE, error))
    return g_prefix_error (error, "%s: ", path), FALSE;
  return TRUE;
}

char *
cli_file_stem (const char *path)
{
  char *base = g_path_get_basename (path);
  char *dot = strrchr (base, '.');
  if (dot != NULL && dot != base)
    *dot = '\0';
  return base;
}
