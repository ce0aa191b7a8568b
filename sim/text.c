/* sim/text.c — nearest-name hints for error messages (Levenshtein distance, Wagner–Fischer
 * dynamic programme, one row of O(n) memory). */
#include "config.h"
#include "sim/text.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
  /* and at most half the longer name's letters changed: "foo" is two edits from "moe",
   * within the limit, yet shares one letter with it */
  return best_d <= limit && 2 * best_d <= MAX (strlen (word), strlen (best)) ? best : NULL;
}

/* Whether `word` (non-empty) begins `name`, ignoring ASCII case. */
static gboolean
is_prefix (const char *word, const char *name)
{
  return *word != '\0' && g_ascii_strncasecmp (word, name, strlen (word)) == 0;
}

char *
sim_text_with_hint (char *message, const char *word, const char *const *candidates)
{
  /* The nearest name, then the names `word` begins: a short name ("H100") is many edits
   * from the full ones it begins ("H100-SXM", "H100-PCIE"), and the nearest by edits may
   * not be what was meant ("B200": 'GB200' one edit away, 'B200-SXM' begun) */
  g_autoptr (GPtrArray) hints = g_ptr_array_new ();
  const char *near = sim_text_nearest (word, candidates);
  if (near != NULL)
    g_ptr_array_add (hints, (gpointer) near);
  guint n = 0;
  for (const char *const *c = candidates; c != NULL && *c != NULL; c++)
    n += is_prefix (word, *c) && *c != near;
  for (const char *const *c = candidates; c != NULL && *c != NULL; c++)
    if (n <= SIM_TEXT_MAX_PREFIX_HINTS && is_prefix (word, *c) && *c != near)
      g_ptr_array_add (hints, (gpointer) *c);
  if (hints->len == 0)
    return message;
  GString *out = g_string_new (message);
  g_string_append (out, "; did you mean ");
  for (guint i = 0; i < hints->len; i++)
    g_string_append_printf (out, "%s'%s'", i == 0 ? "" : i + 1 == hints->len ? " or " : ", ",
                            (const char *) g_ptr_array_index (hints, i));
  g_string_append_c (out, '?');
  g_free (message);
  return g_string_free (out, FALSE);
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

/* One source character (or invalid byte) at `p`: sets *bytes to the bytes it takes and
 * returns the characters of its printable form; appends that form to `out` unless NULL. */
static gsize
printable_unit (const char *p, const char *end, gsize *bytes, GString *out)
{
  gunichar c = g_utf8_get_char_validated (p, end - p);
  if (c == (gunichar) -1 || c == (gunichar) -2)
    {
      if (out != NULL)
        g_string_append_printf (out, "\\x%02X", (guchar) *p);
      *bytes = 1;
      return 4;
    }
  *bytes = (gsize) (g_utf8_next_char (p) - p);
  if (c >= 0x20 && !(c >= 0x7f && c <= 0x9f))
    {
      if (out != NULL)
        g_string_append_len (out, p, (gssize) *bytes);
      return 1;
    }
  for (gsize i = 0; out != NULL && i < *bytes; i++)
    g_string_append_printf (out, "\\x%02X", (guchar) p[i]);
  return 4 * *bytes;
}

char *
sim_text_printable (const char *text, gsize max_chars)
{
  g_return_val_if_fail (text != NULL, NULL);
  /* Streaming, no allocation per character: a message may quote a 16 MiB line. Pass 1
   * measures; pass 2 copies the head, skips to where the tail fits and copies it. Units
   * (a character or its escapes) are never cut. */
  const char *end = text + strlen (text);
  gsize total = 0, n;
  for (const char *p = text; p < end; p += n)
    total += printable_unit (p, end, &n, NULL);
  GString *out = g_string_sized_new (MIN (total, max_chars ? max_chars : total) * 2 + 4);
  gboolean cut = max_chars != 0 && total > max_chars;
  gsize budget = cut ? max_chars - 1 : total; /* one character for "…" */
  gsize head = budget - budget / 2, tail = budget / 2, seen = 0;
  gboolean in_head = TRUE;
  for (const char *p = text; p < end; p += n)
    {
      gsize w = printable_unit (p, end, &n, NULL);
      if (!cut || (in_head && seen + w <= head))
        printable_unit (p, end, &n, out);
      else
        {
          if (in_head)
            g_string_append (out, "…");
          in_head = FALSE;
          if (total - seen <= tail) /* the rest fits: the tail */
            printable_unit (p, end, &n, out);
        }
      seen += w;
    }
  return g_string_free (out, FALSE);
}

char *
sim_text_format_double (char *buf, double v)
{
  static const char *const formats[] = { "%.15g", "%.16g" };
  for (gsize i = 0; i < G_N_ELEMENTS (formats); i++)
    {
      g_ascii_formatd (buf, G_ASCII_DTOSTR_BUF_SIZE, formats[i], v);
      if (g_ascii_strtod (buf, NULL) == v)
        return buf;
    }
  return g_ascii_formatd (buf, G_ASCII_DTOSTR_BUF_SIZE, "%.17g", v);
}

gboolean
sim_text_lookup (const char *const *names, const char *what, const char *s, int *out,
                 GError **error)
{
  g_return_val_if_fail (names != NULL && what != NULL && out != NULL, FALSE);
  for (int i = 0; s != NULL && names[i] != NULL; i++)
    if (strcmp (names[i], s) == 0)
      {
        *out = i;
        return TRUE;
      }
  g_autofree char *list = g_strjoinv (", ", (char **) names);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "unknown %s '%s' (expected one of: %s)", what, s ? s : "", list);
  return FALSE;
}

const char *
sim_text_file_kind (unsigned mode)
{
  if (S_ISDIR (mode))
    return "a directory";
  if (S_ISCHR (mode) || S_ISBLK (mode))
    return "a device";
  if (S_ISFIFO (mode))
    return "a FIFO";
  if (S_ISSOCK (mode))
    return "a socket";
  return "not a plain file";
}

gboolean
sim_text_read_file (const char *path, char **text, gsize *length, GError **error)
{
  g_return_val_if_fail (path != NULL && text != NULL, FALSE);
  int fd = g_open (path, O_RDONLY | O_CLOEXEC, 0);
  int err = fd < 0 ? errno : 0;
  const char *what = "open";
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  while (fd >= 0 && err == 0)
    {
      guint8 chunk[65536];
      gssize n = read (fd, chunk, sizeof chunk);
      if (n < 0 && errno != EINTR)
        err = errno, what = "read";
      else if (n == 0)
        break;
      else if (n > 0)
        g_byte_array_append (buf, chunk, (guint) n);
    }
  if (fd >= 0)
    close (fd);
  if (err != 0)
    {
      g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err), "%s: cannot %s: %s",
                   path, what, g_strerror (err));
      return FALSE;
    }
  /* a parser of the text would stop at a NUL byte and take what precedes it (json-glib does:
   * QA, a config.json with a NUL and garbage after its object ran) */
  const guint8 *nul = buf->len > 0 ? memchr (buf->data, '\0', buf->len) : NULL;
  if (nul != NULL)
    {
      g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                   "%s: holds a NUL byte at offset %" G_GSIZE_FORMAT ": not a text file", path,
                   (gsize) (nul - buf->data));
      return FALSE;
    }
  if (length != NULL)
    *length = buf->len;
  g_byte_array_append (buf, (const guint8 *) "", 1);
  *text = (char *) g_byte_array_free (g_steal_pointer (&buf), FALSE);
  return TRUE;
}

gunichar
sim_text_first_control (const char *text)
{
  for (const char *c = text; c != NULL && *c != '\0'; c = g_utf8_next_char (c))
    if (g_unichar_iscntrl (g_utf8_get_char (c)))
      return g_utf8_get_char (c);
  return 0;
}

/* Writes the decimal digits of v backwards ending at `end`; returns the first digit. */
static char *
digits_before (char *end, guint64 v)
{
  do
    *--end = (char) ('0' + v % 10);
  while ((v /= 10) != 0);
  return end;
}

gssize
sim_text_vformat (char *buf, gsize size, const char *fmt, va_list ap)
{
  gsize n = 0;
  for (const char *f = fmt; *f != '\0'; f++)
    {
      char tmp[24]; /* a guint64's 20 digits, or a sign and a gint's 10 */
      const char *piece;
      gsize len;
      if (*f != '%')
        {
          piece = f;
          len = 1;
        }
      else if (f[1] == '%')
        {
          piece = ++f;
          len = 1;
        }
      else if (f[1] == 's')
        {
          f++;
          piece = va_arg (ap, const char *);
          if (piece == NULL)
            return -1; /* printf's "(null)" is glibc's own: not reproduced */
          len = strlen (piece);
        }
      else if (f[1] == 'u' || f[1] == 'd')
        {
          f++;
          guint64 v;
          gboolean minus = FALSE;
          if (*f == 'u')
            v = va_arg (ap, unsigned);
          else
            {
              int d = va_arg (ap, int);
              minus = d < 0;
              v = minus ? (guint64) - (gint64) d : (guint64) d;
            }
          char *p = digits_before (tmp + sizeof tmp, v);
          if (minus)
            *--p = '-';
          piece = p;
          len = (gsize) (tmp + sizeof tmp - p);
        }
      else if (f[1] == 'l' && f[2] == 'u' && sizeof (unsigned long) == sizeof (guint64))
        {
          f += 2;
          char *p = digits_before (tmp + sizeof tmp, va_arg (ap, unsigned long));
          piece = p;
          len = (gsize) (tmp + sizeof tmp - p);
        }
      else
        return -1; /* any other conversion, flag, width or precision */
      if (len >= size - n)
        return -1;
      memcpy (buf + n, piece, len);
      n += len;
    }
  if (n >= size)
    return -1;
  buf[n] = '\0';
  return (gssize) n;
}

gssize
sim_text_format (char *buf, gsize size, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  gssize n = sim_text_vformat (buf, size, fmt, ap);
  va_end (ap);
  return n;
}

const char *
sim_text_vlabel (char *buf, gsize size, char **slow, const char *fmt, va_list ap)
{
  g_return_val_if_fail (buf != NULL && size >= 1 && slow != NULL && fmt != NULL, NULL);
  va_list copy;
  va_copy (copy, ap);
  gssize n = sim_text_vformat (buf, size, fmt, copy);
  va_end (copy);
  if (n >= 0)
    return buf;
  *slow = g_strdup_vprintf (fmt, ap);
  return *slow;
}

const char *
sim_text_label (char *buf, gsize size, char **slow, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  const char *text = sim_text_vlabel (buf, size, slow, fmt, ap);
  va_end (ap);
  return text;
}

char *
sim_text_keyfile_string (GKeyFile *kf, const char *group, const char *key, GError **error)
{
  GError *e = NULL;
  char *text = g_key_file_get_string (kf, group, key, &e);
  if (e == NULL)
    return text;
  g_free (text);
  if (!g_error_matches (e, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE))
    {
      g_propagate_error (error, e);
      return NULL;
    }
  g_error_free (e);
  /* the value as written, escaped for printing as every quoted value is */
  g_autofree char *raw = g_key_file_get_value (kf, group, key, NULL);
  g_autofree char *shown = sim_text_printable (raw != NULL ? g_strstrip (raw) : "", 0);
  g_set_error (error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
               "'%s': a backslash starts an escape (\\s, \\n, \\t, \\r; \\\\ for a "
               "backslash)", shown);
  return NULL;
}
