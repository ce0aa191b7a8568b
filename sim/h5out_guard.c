/* sim/h5out_guard.c — reads an HDF5 file in a child process, so that a corrupt file cannot
 * crash or hang the command that reads it (sim_h5out_export_tsv, sim_h5out_read_text_attr,
 * the typed reads of sim/h5out_read.c).
 *
 * Why: stepsim's own reader checks every count, size, type and shape it reads
 * (h5out_export.c, h5out_series.c), but libhdf5 (1.10, Debian 12) trusts some fields of its
 * own metadata: a flipped byte in a global heap collection makes H5HG_read copy past the
 * heap (SIGSEGV reading a variable-length string), one in a version-2 B-tree header makes
 * H5F__accum_read copy past its buffer, one in a metadata cache entry frees it twice
 * (SIGABRT). No public call validates those structures, so the read runs in a fork()ed child;
 * the parent turns a signal, a non-zero exit or a read running past its deadline into one
 * error naming the file and object, and writes the child's output only when it succeeded,
 * so a failed export leaves no partial output.
 *
 * Protocol on the pipe (child → parent, native byte order: same binary): GuardHeader, then
 * msg_len bytes of error message, then payload_len bytes of result (TSV text or attribute).
 * The child leaves by _exit, so no atexit handler or stdio buffer of the parent runs twice.
 */
#include "config.h"
#include "sim/h5out.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <hdf5.h>
#include "sim/h5out-private.h"

typedef struct
{
  guint32 ok;   /* 1: payload is the result; 0: the error below */
  gint32 code;  /* SimH5outError of the child's error */
  guint64 msg_len, payload_len;
} GuardHeader;

/* Seconds a read may take: GUARD_BASE_S plus GUARD_PER_MIB_S per MiB of file (a run file of
 * a large model exports in well under a second per MiB). */
enum
{
  GUARD_BASE_S = 10,
  GUARD_PER_MIB_S = 2,
};

static gboolean
write_all (int fd, const void *buf, gsize len)
{
  const char *p = buf;
  while (len > 0)
    {
      ssize_t w = write (fd, p, len);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        return FALSE;
      p += w;
      len -= (gsize) w;
    }
  return TRUE;
}

/* In the child: runs the read, sends its outcome, leaves. Never returns. */
static G_GNUC_NORETURN void
child_main (int fd, SimH5GuardFunc func, gpointer data)
{
  GError *error = NULL;
  GString *payload = g_string_new (NULL);
  gboolean ok = func (data, payload, &error);
  GuardHeader h = { ok ? 1 : 0, error != NULL ? error->code : SIM_H5OUT_ERROR_FORMAT, 0, 0 };
  const char *msg = ok ? "" : error != NULL ? error->message : "failed without a message";
  h.msg_len = strlen (msg);
  h.payload_len = ok ? payload->len : 0;
  gboolean sent = write_all (fd, &h, sizeof h) && write_all (fd, msg, h.msg_len)
                  && write_all (fd, payload->str, h.payload_len);
  /* freed by hand: _exit runs no cleanup, and a leak checker (valgrind --leak-check=full
   * --error-exitcode) would otherwise fail the child, and so the read (QA) */
  g_string_free (payload, TRUE);
  g_clear_error (&error);
  _exit (sent ? 0 : 3);
}

/* Reads everything from `fd` into `buf` until EOF or the deadline (monotonic µs). */
static gboolean
read_until (int fd, GByteArray *buf, gint64 deadline)
{
  guint8 chunk[65536];
  for (;;)
    {
      gint64 left_ms = (deadline - g_get_monotonic_time ()) / 1000;
      if (left_ms <= 0)
        return FALSE;
      struct pollfd pfd = { fd, POLLIN, 0 };
      int r = poll (&pfd, 1, (int) MIN (left_ms, (gint64) G_MAXINT));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return FALSE;
      ssize_t n = read (fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return TRUE; /* EOF (or an error: the header check below reports it) */
      g_byte_array_append (buf, chunk, (guint) n);
    }
}

gboolean
sim_h5_guarded (const char *path, const char *what, SimH5GuardFunc func, gpointer data,
                GString *result, GError **error)
{
  GStatBuf st;
  guint64 mib = g_stat (path, &st) == 0 ? (guint64) st.st_size >> 20 : 0;
  gint64 seconds = GUARD_BASE_S + (gint64) MIN (mib, (guint64) 1 << 30) * GUARD_PER_MIB_S;
  int fds[2];
  fflush (NULL); /* nothing buffered may be written twice, by the child too */
  if (pipe (fds) != 0)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s: cannot create a pipe: %s",
                   path, what, g_strerror (errno));
      return FALSE;
    }
  pid_t pid = fork ();
  if (pid < 0)
    {
      int e = errno;
      close (fds[0]);
      close (fds[1]);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s: cannot fork a reader: %s",
                   path, what, g_strerror (e));
      return FALSE;
    }
  if (pid == 0)
    {
      close (fds[0]);
      child_main (fds[1], func, data);
    }
  close (fds[1]);
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  gboolean in_time = read_until (fds[0], buf, g_get_monotonic_time () + seconds * G_USEC_PER_SEC);
  close (fds[0]);
  if (!in_time)
    kill (pid, SIGKILL);
  int status = 0;
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  GuardHeader h;
  if (!in_time)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: %s: reading did not finish within %" G_GINT64_FORMAT
                   " s (a corrupt file makes libhdf5 loop)", path, what, seconds);
      return FALSE;
    }
  if (WIFSIGNALED (status))
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: %s: the file is corrupt: the reader process died (%s)", path, what,
                   g_strsignal (WTERMSIG (status)));
      return FALSE;
    }
  if (!WIFEXITED (status) || WEXITSTATUS (status) != 0 || buf->len < sizeof h)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: %s: the reader exited with status %d without an answer", path, what,
                   WIFEXITED (status) ? WEXITSTATUS (status) : -1);
      return FALSE;
    }
  memcpy (&h, buf->data, sizeof h);
  if (h.msg_len > buf->len - sizeof h || h.payload_len != buf->len - sizeof h - h.msg_len)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: %s: the reader's answer is truncated", path, what);
      return FALSE;
    }
  const char *msg = (const char *) buf->data + sizeof h;
  if (!h.ok)
    {
      g_set_error (error, SIM_H5OUT_ERROR, h.code, "%.*s", (int) h.msg_len, msg);
      return FALSE;
    }
  g_string_append_len (result, msg + h.msg_len, (gssize) h.payload_len);
  return TRUE;
}
