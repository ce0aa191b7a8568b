/* sim/h5out_writer.c — the HDF5 handle, error and writing primitives that the run file's
 * writer (h5out.c), the tables' writer (h5out_table.c) and the readers (h5out_export.c,
 * h5out_series.c, h5out_read.c) share through sim/h5out-private.h: a file created under a
 * temporary name and renamed onto its path only when everything succeeded (removed on any
 * failure), groups that track and index link creation order without timestamps (so the same
 * data gives byte-identical files), 1-D chunked datasets that grow one block at a time, and
 * HDF5's error stack turned into GErrors. Only sim/h5out*.c include hdf5.h. */
#include "config.h"
#include "sim/h5out.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <string.h>
#include <unistd.h>
#include "sim/h5out-private.h"
#include "sim/tempfiles.h"

G_DEFINE_QUARK (stepsim-h5out-error-quark, sim_h5out_error)

/* ---- handles and errors ---------------------------------------------------------------- */

void
sim_h5_close (H5Id id)
{
  if (H5Iis_valid (id) <= 0)
    return;
  switch (H5Iget_type (id))
    {
    case H5I_FILE: H5Fclose (id); break;
    case H5I_GROUP: H5Gclose (id); break;
    case H5I_DATASET: H5Dclose (id); break;
    case H5I_DATASPACE: H5Sclose (id); break;
    case H5I_DATATYPE: H5Tclose (id); break;
    case H5I_ATTR: H5Aclose (id); break;
    case H5I_GENPROP_LST: H5Pclose (id); break;
    default: H5Idec_ref (id); break;
    }
}

/* The first (most specific) description of HDF5's error stack into the GString `data`; a
 * system call's failure as its errno's text ("file write failed: No space left on device"),
 * not the dump of the call HDF5 writes ("time = …, filename = …, errno = 28, …"). */
static herr_t
first_desc (unsigned n, const H5E_error2_t *err, void *data)
{
  (void) n;
  GString *s = data;
  if (s->len > 0 || err->desc == NULL || err->desc[0] == '\0')
    return 0;
  const char *at = strstr (err->desc, ", errno = ");
  const char *colon = strstr (err->desc, ": ");
  char *end = NULL;
  guint64 e = at != NULL ? g_ascii_strtoull (at + 10, &end, 10) : 0;
  if (colon != NULL && colon < at && end != at + 10 && (*end == ',' || *end == '\0') && e > 0
      && e < 4096)
    g_string_append_printf (s, "%.*s: %s", (int) (colon - err->desc), err->desc,
                            g_strerror ((int) e));
  else
    g_string_append (s, err->desc);
  return 0;
}

/* Sets `error` to the formatted context plus the most specific HDF5 message, and clears
 * HDF5's error stack. Always returns FALSE. */
gboolean
sim_h5_fail (GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  g_autofree char *what = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_autoptr (GString) desc = g_string_new (NULL);
  H5Ewalk2 (H5E_DEFAULT, H5E_WALK_UPWARD, first_desc, desc);
  H5Eclear2 (H5E_DEFAULT);
  if (desc->len > 0)
    g_set_error (error, SIM_H5OUT_ERROR, code, "%s (HDF5: %s)", what, desc->str);
  else
    g_set_error (error, SIM_H5OUT_ERROR, code, "%s", what);
  return FALSE;
}

void
sim_h5_silence (void)
{
  /* Before the library starts (the first call; a no-op after): no HDF5 termination at exit.
   * A file whose H5Fclose failed (a full disk) stays half-closed in HDF5's tables, and
   * HDF5 1.10's termination then crashes on it (H5F__close_cb, SIGSEGV after our error
   * message). Every file is closed explicitly; the process's memory goes with it. */
  H5dont_atexit ();
  H5Eset_auto2 (H5E_DEFAULT, NULL, NULL);
}

/* A variable-length UTF-8 string type; caller closes. */
H5Id
sim_h5_vlstr_type (void)
{
  H5Id t = H5Tcopy (H5T_C_S1);
  if (t >= 0 && (H5Tset_size (t, H5T_VARIABLE) < 0 || H5Tset_cset (t, H5T_CSET_UTF8) < 0))
    {
      sim_h5_close (t);
      return H5I_INVALID_HID;
    }
  return t;
}

/* ---- writing --------------------------------------------------------------------------- */

gboolean
sim_h5_writer_open (SimH5Writer *w, const char *tmp, GError **error)
{
  g_auto (H5Id) fcpl = H5Pcreate (H5P_FILE_CREATE);
  g_auto (H5Id) fapl = H5Pcreate (H5P_FILE_ACCESS);
  unsigned order = H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED;
  w->gcpl = H5Pcreate (H5P_GROUP_CREATE);
  w->lcpl = H5Pcreate (H5P_LINK_CREATE);
  if (fcpl < 0 || fapl < 0 || w->gcpl < 0 || w->lcpl < 0
      || H5Pset_link_creation_order (fcpl, order) < 0
      || H5Pset_obj_track_times (fcpl, 0) < 0
      || H5Pset_link_creation_order (w->gcpl, order) < 0
      || H5Pset_obj_track_times (w->gcpl, 0) < 0
      || H5Pset_char_encoding (w->lcpl, H5T_CSET_UTF8) < 0
      || H5Pset_fclose_degree (fapl, H5F_CLOSE_STRONG) < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot set up HDF5 property lists");
  /* Try the file system first: its errno makes one clean message ("Permission denied",
   * "Read-only file system"), where HDF5's error stack would name its internals. */
  int fd = g_open (tmp, O_WRONLY | O_CREAT, 0644);
  if (fd < 0)
    {
      int err = errno;
      g_autofree char *dir = g_path_get_dirname (tmp);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "cannot create a file in %s: %s",
                   dir, g_strerror (err));
      return FALSE;
    }
  close (fd);
  w->file = H5Fcreate (tmp, H5F_ACC_TRUNC, fcpl, fapl);
  if (w->file < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot create %s", tmp);
  return TRUE;
}

/* Closes everything; reports a failing H5Fclose only when `ok` (the first error wins); the
 * caller's "writing PATH: " prefix names the file. */
gboolean
sim_h5_writer_close (SimH5Writer *w, gboolean ok, GError **error)
{
  sim_h5_close (w->gcpl);
  sim_h5_close (w->lcpl);
  w->gcpl = w->lcpl = H5I_INVALID_HID;
  if (w->file >= 0 && H5Fclose (w->file) < 0 && ok)
    ok = sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot close the file");
  w->file = H5I_INVALID_HID;
  return ok;
}

gboolean
sim_h5_writer_finish (SimH5Writer *w, gboolean ok, const char *tmp, const char *path,
                      GError **error)
{
  ok = sim_h5_writer_close (w, ok, error);
  if (ok && g_rename (tmp, path) != 0)
    {
      int e = errno;
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "cannot rename %s: %s", tmp,
                   g_strerror (e));
      ok = FALSE;
    }
  if (!ok)
    {
      g_remove (tmp);
      g_prefix_error (error, "writing %s: ", path);
    }
  sim_tempfiles_forget (tmp);
  return ok;
}

gboolean
sim_h5_write_str_attr (H5Id obj, const char *name, const char *value, GError **error)
{
  g_auto (H5Id) type = sim_h5_vlstr_type ();
  g_auto (H5Id) space = H5Screate (H5S_SCALAR);
  g_auto (H5Id) attr = H5I_INVALID_HID;
  if (type >= 0 && space >= 0)
    attr = H5Acreate2 (obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr < 0 || H5Awrite (attr, type, &value) < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot write attribute %s", name);
  return TRUE;
}

/* Creates every missing group of the absolute path `group` ("/series/rank0/memory"). */
gboolean
sim_h5_ensure_groups (SimH5Writer *w, const char *group, GError **error)
{
  g_auto (GStrv) parts = g_strsplit (group, "/", -1);
  g_autoptr (GString) prefix = g_string_new (NULL);
  for (char **p = parts; *p != NULL; p++)
    {
      if (**p == '\0')
        continue;
      g_string_append_printf (prefix, "/%s", *p);
      if (H5Lexists (w->file, prefix->str, H5P_DEFAULT) > 0)
        continue;
      g_auto (H5Id) g = H5Gcreate2 (w->file, prefix->str, w->lcpl, w->gcpl, H5P_DEFAULT);
      if (g < 0)
        return sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot create group %s", prefix->str);
    }
  return TRUE;
}

hsize_t
sim_h5_chunk_for (gsize n, gsize max)
{
  gsize c = (n + MIN_CHUNK - 1) / MIN_CHUNK * MIN_CHUNK;
  return (hsize_t) CLAMP (c, (gsize) MIN_CHUNK, max);
}

/* Creates an empty 1-D dataset of `ftype` that can grow without limit. Caller closes. */
H5Id
sim_h5_create_extendible (SimH5Writer *w, const char *name, H5Id ftype, hsize_t chunk, GError **error)
{
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  g_auto (H5Id) space = H5Screate_simple (1, &zero, &unlimited);
  g_auto (H5Id) dcpl = H5Pcreate (H5P_DATASET_CREATE);
  H5Id d = H5I_INVALID_HID;
  if (space >= 0 && dcpl >= 0 && H5Pset_chunk (dcpl, 1, &chunk) >= 0
      && H5Pset_obj_track_times (dcpl, 0) >= 0)
    d = H5Dcreate2 (w->file, name, ftype, space, w->lcpl, dcpl, H5P_DEFAULT);
  if (d < 0)
    sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot create dataset %s", name);
  return d;
}

/* Grows `dset` to offset+count elements and writes `buf` (count elements of `mtype`).
 * The transfer's type-conversion buffer is sized to the block, between 64 KiB and libhdf5's
 * default of 1 MiB: libhdf5 allocates it zeroed, with a background buffer of the same size,
 * for every write that converts (compound rows, strings), and 2 MiB of fresh pages a write
 * cost more than the write itself for the small blocks of one step (3.5 of the 7.8 ms that
 * writing S1's file took; H5Pset_buffer; HDF5 1.10 H5D__typeinfo_init). The block's bytes
 * are doubled because libhdf5 sizes a variable-length string member larger than
 * H5Tget_size reports, and refuses a buffer that cannot hold one element. */
gboolean
sim_h5_append_block (H5Id dset, H5Id mtype, hsize_t offset, hsize_t count, const void *buf,
              GError **error)
{
  hsize_t size = offset + count;
  if (H5Dset_extent (dset, &size) < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot extend dataset");
  g_auto (H5Id) fspace = H5Dget_space (dset);
  g_auto (H5Id) mspace = H5Screate_simple (1, &count, NULL);
  g_auto (H5Id) ftype = H5Dget_type (dset);
  g_auto (H5Id) dxpl = H5Pcreate (H5P_DATASET_XFER);
  size_t elem = ftype >= 0 ? MAX (H5Tget_size (mtype), H5Tget_size (ftype)) : 0;
  size_t conversion = CLAMP (2 * (size_t) count * elem, (size_t) 64 << 10, (size_t) 1 << 20);
  if (fspace < 0 || mspace < 0 || dxpl < 0 || elem == 0
      || H5Pset_buffer (dxpl, conversion, NULL, NULL) < 0
      || H5Sselect_hyperslab (fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL) < 0
      || H5Dwrite (dset, mtype, mspace, fspace, dxpl, buf) < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot write rows %llu..%llu",
                    (unsigned long long) offset, (unsigned long long) size);
  return TRUE;
}
