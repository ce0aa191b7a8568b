/* sim/h5out.c — writes a SimRecorder to HDF5 and exports datasets as TSV (see h5out.h and
 * doc/hdf5-layout.md for the layout). The only file of the project that includes hdf5.h.
 *
 * Invariants:
 *   - every hid_t lives in a g_auto (H5Id) variable, so it is closed on every path, and the
 *     file is opened with H5F_CLOSE_STRONG so closing it also closes anything left open;
 *   - the file is written to "<path>.tmp.<pid>" and renamed onto `path` only after H5Fclose
 *     succeeded; on any failure the temporary file is removed;
 *   - the same recorder gives byte-identical files: object timestamps are disabled on every
 *     creation property list, and nothing iterates a hash table;
 *   - every group tracks and indexes link creation order, so export lists children in the
 *     order they were written (the recorder's creation order); intermediate groups are
 *     created here one level at a time, because HDF5's automatic intermediate groups would
 *     get default (untracked, timestamped) properties;
 *   - HDF5's automatic error printing is switched off; failures become GErrors carrying the
 *     innermost message of HDF5's error stack.
 * Units: raw SI doubles as recorded; each dataset's `unit` attribute names the unit.
 * Arrays are 1-D chunked datasets with maximum size H5S_UNLIMITED, extended and written one
 * block at a time (BLOCK elements); the chunk is the block size, or the data size rounded
 * up to MIN_CHUNK when smaller, so short series do not cost a full 32 KiB chunk each.
 */
#include "config.h"
#include "sim/h5out.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK (stepsim-h5out-error-quark, sim_h5out_error)

enum
{
  BLOCK = 4096,    /* doubles per write block and largest chunk of a series dataset */
  TASK_BLOCK = 1024, /* rows per write block and largest chunk of /tasks */
  MIN_CHUNK = 16,
};

/* ---- handles and errors ---------------------------------------------------------------- */

typedef hid_t H5Id;

static void
h5_close (H5Id id)
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

G_DEFINE_AUTO_CLEANUP_FREE_FUNC (H5Id, h5_close, H5I_INVALID_HID)

static herr_t
first_desc (unsigned n, const H5E_error2_t *err, void *data)
{
  (void) n;
  GString *s = data;
  if (s->len == 0 && err->desc != NULL && err->desc[0] != '\0')
    g_string_append (s, err->desc);
  return 0;
}

/* Sets `error` to the formatted context plus the most specific HDF5 message, and clears
 * HDF5's error stack. Always returns FALSE. */
G_GNUC_PRINTF (3, 4)
static gboolean
h5_fail (GError **error, int code, const char *fmt, ...)
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

static void
silence_hdf5 (void)
{
  H5Eset_auto2 (H5E_DEFAULT, NULL, NULL);
}

/* A variable-length UTF-8 string type; caller closes. */
static H5Id
vlstr_type (void)
{
  H5Id t = H5Tcopy (H5T_C_S1);
  if (t >= 0 && (H5Tset_size (t, H5T_VARIABLE) < 0 || H5Tset_cset (t, H5T_CSET_UTF8) < 0))
    {
      h5_close (t);
      return H5I_INVALID_HID;
    }
  return t;
}

/* ---- writing --------------------------------------------------------------------------- */

typedef struct
{
  H5Id file;
  H5Id gcpl; /* groups: creation order tracked + indexed, no timestamps */
  H5Id lcpl; /* links: UTF-8 names */
} Writer;

static gboolean
writer_open (Writer *w, const char *tmp, GError **error)
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
    return h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot set up HDF5 property lists");
  w->file = H5Fcreate (tmp, H5F_ACC_TRUNC, fcpl, fapl);
  if (w->file < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot create %s", tmp);
  return TRUE;
}

/* Closes everything; reports a failing H5Fclose only when `ok` (the first error wins). */
static gboolean
writer_close (Writer *w, gboolean ok, const char *tmp, GError **error)
{
  h5_close (w->gcpl);
  h5_close (w->lcpl);
  w->gcpl = w->lcpl = H5I_INVALID_HID;
  if (w->file >= 0 && H5Fclose (w->file) < 0 && ok)
    ok = h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot close %s", tmp);
  w->file = H5I_INVALID_HID;
  return ok;
}

static gboolean
write_str_attr (H5Id obj, const char *name, const char *value, GError **error)
{
  g_auto (H5Id) type = vlstr_type ();
  g_auto (H5Id) space = H5Screate (H5S_SCALAR);
  g_auto (H5Id) attr = H5I_INVALID_HID;
  if (type >= 0 && space >= 0)
    attr = H5Acreate2 (obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (attr < 0 || H5Awrite (attr, type, &value) < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot write attribute %s", name);
  return TRUE;
}

/* Creates every missing group of the absolute path `group` ("/series/rank0/memory"). */
static gboolean
ensure_groups (Writer *w, const char *group, GError **error)
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
        return h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot create group %s", prefix->str);
    }
  return TRUE;
}

/* Creates the parent groups of the absolute object path `name`. */
static gboolean
ensure_parent (Writer *w, const char *name, GError **error)
{
  g_autofree char *parent = g_path_get_dirname (name);
  return ensure_groups (w, parent, error);
}

static hsize_t
chunk_for (gsize n, gsize max)
{
  gsize c = (n + MIN_CHUNK - 1) / MIN_CHUNK * MIN_CHUNK;
  return (hsize_t) CLAMP (c, (gsize) MIN_CHUNK, max);
}

/* Creates an empty 1-D dataset of `ftype` that can grow without limit. Caller closes. */
static H5Id
create_extendible (Writer *w, const char *name, H5Id ftype, hsize_t chunk, GError **error)
{
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  g_auto (H5Id) space = H5Screate_simple (1, &zero, &unlimited);
  g_auto (H5Id) dcpl = H5Pcreate (H5P_DATASET_CREATE);
  H5Id d = H5I_INVALID_HID;
  if (space >= 0 && dcpl >= 0 && H5Pset_chunk (dcpl, 1, &chunk) >= 0
      && H5Pset_obj_track_times (dcpl, 0) >= 0)
    d = H5Dcreate2 (w->file, name, ftype, space, w->lcpl, dcpl, H5P_DEFAULT);
  if (d < 0)
    h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot create dataset %s", name);
  return d;
}

/* Grows `dset` to offset+count elements and writes `buf` (count elements of `mtype`). */
static gboolean
append_block (H5Id dset, H5Id mtype, hsize_t offset, hsize_t count, const void *buf,
              GError **error)
{
  hsize_t size = offset + count;
  if (H5Dset_extent (dset, &size) < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot extend dataset");
  g_auto (H5Id) fspace = H5Dget_space (dset);
  g_auto (H5Id) mspace = H5Screate_simple (1, &count, NULL);
  if (fspace < 0 || mspace < 0
      || H5Sselect_hyperslab (fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL) < 0
      || H5Dwrite (dset, mtype, mspace, fspace, H5P_DEFAULT, buf) < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot write rows %llu..%llu",
                    (unsigned long long) offset, (unsigned long long) size);
  return TRUE;
}

static gboolean
write_doubles (Writer *w, const char *name, const double *data, gsize n, const char *unit,
               GError **error)
{
  g_auto (H5Id) d = create_extendible (w, name, H5T_IEEE_F64LE, chunk_for (n, BLOCK), error);
  if (d < 0)
    return FALSE;
  for (gsize off = 0; off < n; off += BLOCK)
    if (!append_block (d, H5T_NATIVE_DOUBLE, off, MIN (BLOCK, n - off), data + off, error))
      {
        g_prefix_error (error, "%s: ", name);
        return FALSE;
      }
  return write_str_attr (d, "unit", unit, error);
}

/* Creates the scalar dataset `name` of `ftype` holding *buf (of `mtype`). Caller closes. */
static H5Id
write_scalar (Writer *w, const char *name, H5Id ftype, H5Id mtype, const void *buf,
              GError **error)
{
  g_auto (H5Id) space = H5Screate (H5S_SCALAR);
  g_auto (H5Id) dcpl = H5Pcreate (H5P_DATASET_CREATE);
  H5Id d = H5I_INVALID_HID;
  if (space >= 0 && dcpl >= 0 && H5Pset_obj_track_times (dcpl, 0) >= 0)
    d = H5Dcreate2 (w->file, name, ftype, space, w->lcpl, dcpl, H5P_DEFAULT);
  if (d >= 0 && H5Dwrite (d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0)
    return d;
  h5_close (d);
  h5_fail (error, SIM_H5OUT_ERROR_IO, "cannot write dataset %s", name);
  return H5I_INVALID_HID;
}

static gboolean
write_root (Writer *w, const SimH5Meta *meta, GError **error)
{
  return write_str_attr (w->file, "program", meta->program ? meta->program : "stepsim", error)
         && write_str_attr (w->file, "version", meta->version ? meta->version : PACKAGE_VERSION,
                            error)
         && write_str_attr (w->file, "scenario",
                            meta->scenario_text ? meta->scenario_text : "", error);
}

static gboolean
write_summary (Writer *w, const SimRecorder *rec, GError **error)
{
  if (!ensure_groups (w, "/summary", error))
    return FALSE;
  g_auto (H5Id) str = vlstr_type ();
  for (guint i = 0; i < sim_recorder_n_summary (rec); i++)
    {
      const SimSummaryEntry *e = sim_recorder_summary_entry (rec, i);
      g_autofree char *name = g_strconcat ("/summary/", e->name, NULL);
      if (!ensure_parent (w, name, error))
        return FALSE;
      g_auto (H5Id) d = H5I_INVALID_HID;
      if (e->text != NULL)
        d = write_scalar (w, name, str, str, &e->text, error);
      else
        d = write_scalar (w, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &e->value, error);
      if (d < 0 || (e->text == NULL && !write_str_attr (d, "unit", e->unit, error)))
        return FALSE;
    }
  return TRUE;
}

static gboolean
write_all_series (Writer *w, const SimRecorder *rec, GError **error)
{
  if (!ensure_groups (w, "/series", error))
    return FALSE;
  for (guint i = 0; i < sim_recorder_n_series (rec); i++)
    {
      const double *t = NULL, *v = NULL;
      guint n = sim_recorder_series_points (rec, i, &t, &v);
      g_autofree char *group = g_strconcat ("/series/", sim_recorder_series_path (rec, i), NULL);
      g_autofree char *tname = g_strconcat (group, "/time", NULL);
      g_autofree char *vname = g_strconcat (group, "/value", NULL);
      if (!ensure_groups (w, group, error) || !write_doubles (w, tname, t, n, "s", error)
          || !write_doubles (w, vname, v, n, sim_recorder_series_unit (rec, i), error))
        return FALSE;
    }
  return TRUE;
}

/* One /tasks row in memory; the file type has the same fields packed, little-endian. */
typedef struct
{
  guint32 id, rank, stream, kind;
  char label[SIM_TASK_LABEL_MAX];
  gint32 layer, micro_batch;
  double start, end, flops, bytes;
} TaskRow;

/* An enum over u32 naming values 0..n-1, or plain u32 when there are no names. */
static H5Id
names_enum (const char *const *names, guint n, gboolean file)
{
  H5Id base = file ? H5T_STD_U32LE : H5T_NATIVE_UINT32;
  if (n == 0)
    return H5Tcopy (base);
  H5Id t = H5Tenum_create (base);
  for (guint i = 0; i < n && t >= 0; i++)
    {
      guint32 v = file ? GUINT32_TO_LE (i) : i; /* value in the base type's byte order */
      if (names[i] == NULL || H5Tenum_insert (t, names[i], &v) < 0)
        {
          h5_close (t);
          t = H5I_INVALID_HID;
        }
    }
  return t;
}

static H5Id
task_type (gboolean file, H5Id stream_t, H5Id kind_t, H5Id label_t)
{
  H5Id u32 = file ? H5T_STD_U32LE : H5T_NATIVE_UINT32;
  H5Id i32 = file ? H5T_STD_I32LE : H5T_NATIVE_INT32;
  H5Id f64 = file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
  const struct
  {
    const char *name;
    size_t offset;
    H5Id type;
  } m[] = {
    { "id", offsetof (TaskRow, id), u32 },
    { "rank", offsetof (TaskRow, rank), u32 },
    { "stream", offsetof (TaskRow, stream), stream_t },
    { "kind", offsetof (TaskRow, kind), kind_t },
    { "label", offsetof (TaskRow, label), label_t },
    { "layer", offsetof (TaskRow, layer), i32 },
    { "micro_batch", offsetof (TaskRow, micro_batch), i32 },
    { "start", offsetof (TaskRow, start), f64 },
    { "end", offsetof (TaskRow, end), f64 },
    { "flops", offsetof (TaskRow, flops), f64 },
    { "bytes", offsetof (TaskRow, bytes), f64 },
  };
  size_t packed = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (m); i++)
    packed += H5Tget_size (m[i].type);
  H5Id t = H5Tcreate (H5T_COMPOUND, file ? packed : sizeof (TaskRow));
  size_t off = 0;
  for (gsize i = 0; i < G_N_ELEMENTS (m) && t >= 0; i++)
    {
      if (H5Tinsert (t, m[i].name, file ? off : m[i].offset, m[i].type) < 0)
        {
          h5_close (t);
          t = H5I_INVALID_HID;
        }
      off += H5Tget_size (m[i].type);
    }
  return t;
}

/* Checks that every task's kind and stream has a name when names are given. */
static gboolean
check_task_names (const SimRecorder *rec, const SimH5Meta *meta, GError **error)
{
  for (guint i = 0; i < sim_recorder_n_tasks (rec); i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, i);
      if ((meta->n_kind_names > 0 && t->kind >= meta->n_kind_names)
          || (meta->n_stream_names > 0 && t->stream >= meta->n_stream_names))
        {
          g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                       "task %u: kind %u or stream %u has no name (%u kinds, %u streams named)",
                       t->id, t->kind, t->stream, meta->n_kind_names, meta->n_stream_names);
          return FALSE;
        }
    }
  return TRUE;
}

static void
fill_rows (const SimRecorder *rec, guint first, guint count, TaskRow *rows)
{
  memset (rows, 0, count * sizeof (TaskRow)); /* no stray bytes in the file */
  for (guint i = 0; i < count; i++)
    {
      const SimTaskRecord *t = sim_recorder_task (rec, first + i);
      TaskRow *r = &rows[i];
      *r = (TaskRow){ .id = t->id, .rank = t->rank, .stream = t->stream, .kind = t->kind,
                      .layer = t->layer, .micro_batch = t->micro_batch, .start = t->start,
                      .end = t->end, .flops = t->flops, .bytes = t->bytes };
      g_strlcpy (r->label, t->label, sizeof r->label);
    }
}

static gboolean
write_task_rows (Writer *w, const SimRecorder *rec, H5Id ftype, H5Id mtype, GError **error)
{
  guint n = sim_recorder_n_tasks (rec);
  g_auto (H5Id) d = create_extendible (w, "/tasks", ftype, chunk_for (n, TASK_BLOCK), error);
  if (d < 0)
    return FALSE;
  g_autofree TaskRow *rows = g_new (TaskRow, MAX (1u, MIN (n, (guint) TASK_BLOCK)));
  for (guint off = 0; off < n; off += TASK_BLOCK)
    {
      guint count = MIN ((guint) TASK_BLOCK, n - off);
      fill_rows (rec, off, count, rows);
      if (!append_block (d, mtype, off, count, rows, error))
        {
          g_prefix_error (error, "/tasks: ");
          return FALSE;
        }
    }
  return write_str_attr (d, "unit_start", "s", error) && write_str_attr (d, "unit_end", "s", error)
         && write_str_attr (d, "unit_flops", "FLOP", error)
         && write_str_attr (d, "unit_bytes", "B", error);
}

static gboolean
write_tasks (Writer *w, const SimRecorder *rec, const SimH5Meta *meta, GError **error)
{
  if (!check_task_names (rec, meta, error))
    return FALSE;
  g_auto (H5Id) label_t = H5Tcopy (H5T_C_S1);
  g_auto (H5Id) kind_f = names_enum (meta->kind_names, meta->n_kind_names, TRUE);
  g_auto (H5Id) kind_m = names_enum (meta->kind_names, meta->n_kind_names, FALSE);
  g_auto (H5Id) stream_f = names_enum (meta->stream_names, meta->n_stream_names, TRUE);
  g_auto (H5Id) stream_m = names_enum (meta->stream_names, meta->n_stream_names, FALSE);
  if (label_t < 0 || H5Tset_size (label_t, SIM_TASK_LABEL_MAX) < 0
      || H5Tset_strpad (label_t, H5T_STR_NULLTERM) < 0
      || H5Tset_cset (label_t, H5T_CSET_UTF8) < 0 || kind_f < 0 || kind_m < 0 || stream_f < 0
      || stream_m < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                    "cannot build the /tasks types (kind and stream names must be unique)");
  g_auto (H5Id) ftype = task_type (TRUE, stream_f, kind_f, label_t);
  g_auto (H5Id) mtype = task_type (FALSE, stream_m, kind_m, label_t);
  if (ftype < 0 || mtype < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot build the /tasks row type");
  return write_task_rows (w, rec, ftype, mtype, error);
}

gboolean
sim_h5out_write (const char *path, const SimRecorder *rec, const SimH5Meta *meta,
                 GError **error)
{
  g_return_val_if_fail (path != NULL && rec != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  static const SimH5Meta defaults = { "stepsim", PACKAGE_VERSION, "", NULL, 0, NULL, 0 };
  if (meta == NULL)
    meta = &defaults;
  silence_hdf5 ();
  g_autofree char *tmp = g_strdup_printf ("%s.tmp.%ld", path, (long) getpid ());
  Writer w = { H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID };
  gboolean ok = writer_open (&w, tmp, error) && write_root (&w, meta, error)
                && write_summary (&w, rec, error) && write_all_series (&w, rec, error)
                && write_tasks (&w, rec, meta, error);
  ok = writer_close (&w, ok, tmp, error);
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
  return ok;
}

/* ---- export ---------------------------------------------------------------------------- */

static void
put_double (FILE *out, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  fputs (g_ascii_formatd (buf, sizeof buf, "%.17g", v), out);
}

/* Writes `s` (at most `max` bytes, stopping at NUL) with backslash, tab, newline and
 * carriage return escaped as \\ \t \n \r, so every row stays one TSV line. */
static void
put_escaped (FILE *out, const char *s, gsize max)
{
  for (gsize i = 0; i < max && s[i] != '\0'; i++)
    switch (s[i])
      {
      case '\\': fputs ("\\\\", out); break;
      case '\t': fputs ("\\t", out); break;
      case '\n': fputs ("\\n", out); break;
      case '\r': fputs ("\\r", out); break;
      default: fputc (s[i], out); break;
      }
}

/* TRUE if every component of `object` exists (H5Lexists fails on a missing parent, so the
 * path is walked one level at a time). */
static gboolean
object_exists (H5Id file, const char *object)
{
  g_auto (GStrv) parts = g_strsplit (object, "/", -1);
  g_autoptr (GString) prefix = g_string_new (NULL);
  for (char **p = parts; *p != NULL; p++)
    {
      if (**p == '\0')
        continue;
      g_string_append_printf (prefix, "/%s", *p);
      if (H5Lexists (file, prefix->str, H5P_DEFAULT) <= 0)
        return FALSE;
    }
  return TRUE;
}

/* Names of the links of `group`, in creation order when the group tracks it, else by name. */
static GPtrArray *
list_children (H5Id group)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  g_auto (H5Id) gcpl = H5Gget_create_plist (group);
  unsigned flags = 0;
  H5_index_t idx = H5_INDEX_NAME;
  if (gcpl >= 0 && H5Pget_link_creation_order (gcpl, &flags) >= 0
      && (flags & H5P_CRT_ORDER_TRACKED))
    idx = H5_INDEX_CRT_ORDER;
  H5G_info_t info;
  if (H5Gget_info (group, &info) < 0)
    return names;
  for (hsize_t i = 0; i < info.nlinks; i++)
    {
      ssize_t len = H5Lget_name_by_idx (group, ".", idx, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
      if (len < 0)
        continue;
      char *name = g_malloc ((gsize) len + 1);
      H5Lget_name_by_idx (group, ".", idx, H5_ITER_INC, i, name, (size_t) len + 1, H5P_DEFAULT);
      g_ptr_array_add (names, name);
    }
  return names;
}

/* Reads a string dataset or attribute (fixed or variable length). NULL + error if `obj` does
 * not hold a string. */
static char *
read_string (H5Id obj, gboolean is_attr, GError **error)
{
  g_auto (H5Id) ftype = is_attr ? H5Aget_type (obj) : H5Dget_type (obj);
  if (ftype < 0 || H5Tget_class (ftype) != H5T_STRING)
    {
      h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a string");
      return NULL;
    }
  gboolean vl = H5Tis_variable_str (ftype) > 0;
  gsize size = vl ? sizeof (char *) : H5Tget_size (ftype);
  g_auto (H5Id) mtype = vl ? vlstr_type () : H5Tcopy (H5T_C_S1);
  g_autofree char *buf = g_malloc0 (size + 1);
  herr_t r = -1;
  if (mtype >= 0 && (vl || H5Tset_size (mtype, size) >= 0))
    r = is_attr ? H5Aread (obj, mtype, buf) : H5Dread (obj, mtype, H5S_ALL, H5S_ALL,
                                                        H5P_DEFAULT, buf);
  if (r < 0)
    {
      h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read string");
      return NULL;
    }
  if (!vl)
    return g_steal_pointer (&buf);
  char *p = NULL;
  memcpy (&p, buf, sizeof p);
  char *s = g_strdup (p != NULL ? p : "");
  H5free_memory (p);
  return s;
}

/* Reads the numeric dataset `d` (scalar or 1-D) as doubles; `name` is for messages. */
static GArray *
read_doubles_of (H5Id d, const char *name, GError **error)
{
  g_auto (H5Id) type = H5Dget_type (d);
  g_auto (H5Id) space = H5Dget_space (d);
  H5T_class_t cls = type >= 0 ? H5Tget_class (type) : H5T_NO_CLASS;
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || space < 0
      || H5Sget_simple_extent_ndims (space) > 1)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s is not a scalar or 1-D numeric dataset", name);
      return NULL;
    }
  hssize_t n = MAX (H5Sget_simple_extent_npoints (space), 0);
  GArray *a = g_array_sized_new (FALSE, TRUE, sizeof (double), (guint) n);
  g_array_set_size (a, (guint) n);
  if (n > 0 && H5Dread (d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data) < 0)
    {
      g_array_unref (a);
      h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read %s", name);
      return NULL;
    }
  return a;
}

/* Reads the numeric dataset `name` below `loc` as doubles. */
static GArray *
read_doubles (H5Id loc, const char *name, GError **error)
{
  if (H5Lexists (loc, name, H5P_DEFAULT) <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "no dataset %s", name);
      return NULL;
    }
  g_auto (H5Id) d = H5Dopen2 (loc, name, H5P_DEFAULT);
  if (d < 0)
    {
      h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "%s is not a dataset", name);
      return NULL;
    }
  return read_doubles_of (d, name, error);
}

typedef struct
{
  char *name; /* column name: path relative to the exported group */
  GArray *time, *value;
} SeriesCol;

static void
series_col_free (gpointer p)
{
  SeriesCol *c = p;
  g_free (c->name);
  g_clear_pointer (&c->time, g_array_unref);
  g_clear_pointer (&c->value, g_array_unref);
  g_free (c);
}

static gboolean
is_series_group (H5Id group)
{
  return H5Lexists (group, "time", H5P_DEFAULT) > 0 && H5Lexists (group, "value", H5P_DEFAULT) > 0;
}

static SeriesCol *
read_series (H5Id group, const char *name, GError **error)
{
  SeriesCol *c = g_new0 (SeriesCol, 1);
  c->name = g_strdup (name);
  c->time = read_doubles (group, "time", error);
  c->value = c->time != NULL ? read_doubles (group, "value", error) : NULL;
  if (c->value != NULL && c->value->len != c->time->len)
    g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                 "series %s: %u times but %u values", name, c->time->len, c->value->len);
  if (c->value == NULL || c->value->len != c->time->len)
    {
      series_col_free (c);
      return NULL;
    }
  return c;
}

/* Appends every series below `group` (depth first, creation order) to `cols`, named by
 * their path relative to the exported group. */
static gboolean
collect_series (H5Id group, const char *prefix, GPtrArray *cols, GError **error)
{
  g_autoptr (GPtrArray) names = list_children (group);
  for (guint i = 0; i < names->len; i++)
    {
      const char *child = g_ptr_array_index (names, i);
      g_auto (H5Id) obj = H5Oopen (group, child, H5P_DEFAULT);
      if (obj < 0 || H5Iget_type (obj) != H5I_GROUP)
        continue;
      g_autofree char *name = g_strconcat (prefix, child, NULL);
      if (is_series_group (obj))
        {
          SeriesCol *c = read_series (obj, name, error);
          if (c == NULL)
            return FALSE;
          g_ptr_array_add (cols, c);
        }
      else
        {
          g_autofree char *sub = g_strconcat (name, "/", NULL);
          if (!collect_series (obj, sub, cols, error))
            return FALSE;
        }
    }
  return TRUE;
}

static gint
cmp_double (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* The sorted union of all columns' change times, without duplicates. */
static GArray *
union_times (GPtrArray *cols)
{
  GArray *all = g_array_new (FALSE, FALSE, sizeof (double));
  for (guint k = 0; k < cols->len; k++)
    {
      const SeriesCol *c = g_ptr_array_index (cols, k);
      g_array_append_vals (all, c->time->data, c->time->len);
    }
  g_array_sort (all, cmp_double);
  guint kept = 0;
  for (guint i = 0; i < all->len; i++)
    if (kept == 0 || g_array_index (all, double, i) != g_array_index (all, double, kept - 1))
      g_array_index (all, double, kept++) = g_array_index (all, double, i);
  g_array_set_size (all, kept);
  return all;
}

/* Writes the columns as a step-function table over the union of their change times; each
 * column holds the value of its last point at or before the row's time, 0 before any. */
static void
put_merged (FILE *out, GPtrArray *cols)
{
  fputs ("time", out);
  for (guint k = 0; k < cols->len; k++)
    fprintf (out, "\t%s", ((const SeriesCol *) g_ptr_array_index (cols, k))->name);
  fputc ('\n', out);
  g_autoptr (GArray) times = union_times (cols);
  g_autofree guint *next = g_new0 (guint, MAX (cols->len, 1u));
  for (guint i = 0; i < times->len; i++)
    {
      double t = g_array_index (times, double, i);
      put_double (out, t);
      for (guint k = 0; k < cols->len; k++)
        {
          const SeriesCol *c = g_ptr_array_index (cols, k);
          while (next[k] < c->time->len && g_array_index (c->time, double, next[k]) <= t)
            next[k]++;
          fputc ('\t', out);
          put_double (out, next[k] == 0 ? 0.0 : g_array_index (c->value, double, next[k] - 1));
        }
      fputc ('\n', out);
    }
}

static gboolean
export_series_group (H5Id group, FILE *out, GError **error)
{
  if (is_series_group (group))
    {
      SeriesCol *c = read_series (group, "value", error);
      if (c == NULL)
        return FALSE;
      g_autoptr (GPtrArray) one = g_ptr_array_new_with_free_func (series_col_free);
      g_ptr_array_add (one, c);
      put_merged (out, one); /* one column: exactly its points */
      return TRUE;
    }
  g_autoptr (GPtrArray) cols = g_ptr_array_new_with_free_func (series_col_free);
  if (!collect_series (group, "", cols, error))
    return FALSE;
  if (cols->len == 0)
    {
      g_set_error_literal (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                           "group holds no series (time/value pairs)");
      return FALSE;
    }
  put_merged (out, cols);
  return TRUE;
}

/* Writes one /summary row per dataset below `group` (creation order, recursing into
 * subgroups, names relative to /summary): numbers with their `unit` attribute, texts
 * escaped with an empty unit. */
static gboolean
put_summary_rows (H5Id group, const char *prefix, FILE *out, GError **error)
{
  g_autoptr (GPtrArray) names = list_children (group);
  for (guint i = 0; i < names->len; i++)
    {
      const char *child = g_ptr_array_index (names, i);
      g_autofree char *name = g_strconcat (prefix, child, NULL);
      g_auto (H5Id) obj = H5Oopen (group, child, H5P_DEFAULT);
      if (obj >= 0 && H5Iget_type (obj) == H5I_GROUP)
        {
          g_autofree char *sub = g_strconcat (name, "/", NULL);
          if (!put_summary_rows (obj, sub, out, error))
            return FALSE;
          continue;
        }
      g_auto (H5Id) type = obj >= 0 ? H5Dget_type (obj) : H5I_INVALID_HID;
      g_autofree char *unit = NULL;
      if (H5Aexists (obj, "unit") > 0)
        {
          g_auto (H5Id) attr = H5Aopen (obj, "unit", H5P_DEFAULT);
          if ((unit = read_string (attr, TRUE, error)) == NULL)
            return FALSE;
        }
      put_escaped (out, name, G_MAXSIZE);
      fputc ('\t', out);
      if (type >= 0 && H5Tget_class (type) == H5T_STRING)
        {
          g_autofree char *text = read_string (obj, FALSE, error);
          if (text == NULL)
            return FALSE;
          put_escaped (out, text, G_MAXSIZE);
        }
      else
        {
          g_autoptr (GArray) v = read_doubles (group, child, error);
          if (v == NULL || v->len != 1)
            return v == NULL ? FALSE : h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                                                "summary entry %s is not a scalar", name);
          put_double (out, g_array_index (v, double, 0));
        }
      fputc ('\t', out);
      put_escaped (out, unit != NULL ? unit : "", G_MAXSIZE);
      fputc ('\n', out);
    }
  return TRUE;
}

static gboolean
unsupported_field (H5Id mt, GError **error)
{
  g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
               "compound field of an unsupported type (class %d, %zu bytes)",
               (int) H5Tget_class (mt), H5Tget_size (mt));
  return FALSE;
}

/* Prints a native integer of type `mt` stored (possibly unaligned) at `p`. */
static gboolean
put_integer (FILE *out, H5Id mt, const char *p, GError **error)
{
  size_t size = H5Tget_size (mt);
  gboolean sign = H5Tget_sign (mt) == H5T_SGN_2;
  guint8 b1;
  guint16 b2;
  guint32 b4;
  guint64 u;
  switch (size)
    {
    case 1: memcpy (&b1, p, 1); u = sign ? (guint64) (gint64) (gint8) b1 : b1; break;
    case 2: memcpy (&b2, p, 2); u = sign ? (guint64) (gint64) (gint16) b2 : b2; break;
    case 4: memcpy (&b4, p, 4); u = sign ? (guint64) (gint64) (gint32) b4 : b4; break;
    case 8: memcpy (&u, p, 8); break;
    default: return unsupported_field (mt, error);
    }
  if (sign)
    fprintf (out, "%" G_GINT64_FORMAT, (gint64) u);
  else
    fprintf (out, "%" G_GUINT64_FORMAT, u);
  return TRUE;
}

/* Prints the field of compound member type `mt` (native layout) stored at `p`: integers
 * and floats as numbers, enums by name (by number if the value has none), strings escaped. */
static gboolean
put_field (FILE *out, H5Id mt, const char *p, GError **error)
{
  size_t size = H5Tget_size (mt);
  H5T_class_t cls = H5Tget_class (mt);
  if (cls == H5T_ENUM)
    {
      char name[256];
      if (H5Tenum_nameof (mt, p, name, sizeof name) >= 0)
        {
          put_escaped (out, name, sizeof name);
          return TRUE;
        }
      H5Eclear2 (H5E_DEFAULT);
      g_auto (H5Id) super = H5Tget_super (mt);
      return put_integer (out, super, p, error);
    }
  if (cls == H5T_INTEGER)
    return put_integer (out, mt, p, error);
  if (cls == H5T_FLOAT && size == sizeof (double))
    {
      double d;
      memcpy (&d, p, sizeof d);
      put_double (out, d);
      return TRUE;
    }
  if (cls == H5T_FLOAT && size == sizeof (float))
    {
      float f;
      memcpy (&f, p, sizeof f);
      put_double (out, f);
      return TRUE;
    }
  if (cls == H5T_STRING && H5Tis_variable_str (mt) > 0)
    {
      const char *vs = NULL;
      memcpy (&vs, p, sizeof vs);
      put_escaped (out, vs != NULL ? vs : "", G_MAXSIZE);
      return TRUE;
    }
  if (cls == H5T_STRING)
    {
      put_escaped (out, p, size);
      return TRUE;
    }
  return unsupported_field (mt, error);
}

static void
clear_id (gpointer p)
{
  h5_close (*(H5Id *) p);
}

/* Reads rows [offset, offset+count) of table `dset` as `mtype` and prints them; `members`
 * holds the member types of `mtype`. Variable-length data is reclaimed after printing. */
static gboolean
put_table_block (FILE *out, H5Id dset, H5Id mtype, GArray *members, hsize_t offset,
                 hsize_t count, char *buf, GError **error)
{
  g_auto (H5Id) fspace = H5Dget_space (dset);
  g_auto (H5Id) mspace = H5Screate_simple (1, &count, NULL);
  if (fspace < 0 || mspace < 0
      || H5Sselect_hyperslab (fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL) < 0
      || H5Dread (dset, mtype, mspace, fspace, H5P_DEFAULT, buf) < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read table rows");
  size_t rsize = H5Tget_size (mtype);
  gboolean ok = TRUE;
  for (hsize_t r = 0; r < count && ok; r++)
    {
      for (guint m = 0; m < members->len && ok; m++)
        {
          if (m > 0)
            fputc ('\t', out);
          size_t off = H5Tget_member_offset (mtype, m);
          ok = put_field (out, g_array_index (members, H5Id, m), buf + r * rsize + off, error);
        }
      fputc ('\n', out);
    }
  if (H5Tdetect_class (mtype, H5T_VLEN) > 0 || H5Tdetect_class (mtype, H5T_STRING) > 0)
    H5Dvlen_reclaim (mtype, mspace, H5P_DEFAULT, buf);
  return ok;
}

/* Prints a 1-D compound dataset: a header of its field names, then one line per row. */
static gboolean
export_table (H5Id dset, H5Id ftype, FILE *out, GError **error)
{
  g_auto (H5Id) mtype = H5Tget_native_type (ftype, H5T_DIR_ASCEND);
  g_auto (H5Id) space = H5Dget_space (dset);
  if (mtype < 0 || space < 0 || H5Sget_simple_extent_ndims (space) != 1)
    return h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a 1-D table");
  int nm = H5Tget_nmembers (mtype);
  g_autoptr (GArray) members = g_array_new (FALSE, FALSE, sizeof (H5Id));
  g_array_set_clear_func (members, clear_id);
  for (int m = 0; m < nm; m++)
    {
      H5Id mt = H5Tget_member_type (mtype, (unsigned) m);
      g_array_append_val (members, mt);
      char *name = H5Tget_member_name (mtype, (unsigned) m);
      fprintf (out, "%s%s", m > 0 ? "\t" : "", name != NULL ? name : "?");
      H5free_memory (name);
    }
  fputc ('\n', out);
  hsize_t n = (hsize_t) H5Sget_simple_extent_npoints (space);
  g_autofree char *buf = g_malloc0 (H5Tget_size (mtype) * TASK_BLOCK);
  for (hsize_t off = 0; off < n; off += TASK_BLOCK)
    if (!put_table_block (out, dset, mtype, members, off, MIN ((hsize_t) TASK_BLOCK, n - off),
                          buf, error))
      return FALSE;
  return TRUE;
}

/* Prints a dataset: a compound table, or a "value" column of numbers or one text. */
static gboolean
export_dataset (H5Id dset, FILE *out, GError **error)
{
  g_auto (H5Id) type = H5Dget_type (dset);
  H5T_class_t cls = type >= 0 ? H5Tget_class (type) : H5T_NO_CLASS;
  if (cls == H5T_COMPOUND)
    return export_table (dset, type, out, error);
  if (cls == H5T_STRING)
    {
      g_autofree char *text = read_string (dset, FALSE, error);
      if (text == NULL)
        return FALSE;
      fputs ("value\n", out);
      put_escaped (out, text, G_MAXSIZE);
      fputc ('\n', out);
      return TRUE;
    }
  g_autoptr (GArray) v = read_doubles_of (dset, "dataset", error);
  if (v == NULL)
    return FALSE;
  fputs ("value\n", out);
  for (guint i = 0; i < v->len; i++)
    {
      put_double (out, g_array_index (v, double, i));
      fputc ('\n', out);
    }
  return TRUE;
}

/* TRUE if the normalised object path is /summary or lies below it. */
static gboolean
is_summary_path (const char *object)
{
  while (*object == '/')
    object++;
  return g_str_has_prefix (object, "summary") && (object[7] == '\0' || object[7] == '/');
}

static gboolean
export_object (H5Id file, const char *object, FILE *out, GError **error)
{
  if (!object_exists (file, object))
    {
      g_set_error_literal (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "no such object");
      return FALSE;
    }
  g_auto (H5Id) obj = H5Oopen (file, object, H5P_DEFAULT);
  if (obj < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot open");
  H5I_type_t type = H5Iget_type (obj);
  if (type == H5I_DATASET)
    return export_dataset (obj, out, error);
  if (type != H5I_GROUP)
    return h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "neither a group nor a dataset");
  if (!is_summary_path (object))
    return export_series_group (obj, out, error);
  fputs ("name\tvalue\tunit\n", out);
  return put_summary_rows (obj, "", out, error);
}

gboolean
sim_h5out_export_tsv (const char *path, const char *object, FILE *out, GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL && out != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  silence_hdf5 ();
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: no such file", path);
      return FALSE;
    }
  g_auto (H5Id) file = H5Fopen (path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0)
    return h5_fail (error, SIM_H5OUT_ERROR_IO, "%s: cannot open as HDF5", path);
  if (!export_object (file, object, out, error))
    {
      g_prefix_error (error, "%s: %s: ", path, object);
      return FALSE;
    }
  if (fflush (out) != 0 || ferror (out))
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s: write error: %s", path,
                   object, g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

char *
sim_h5out_read_text_attr (const char *path, const char *object, const char *name,
                          GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL && name != NULL, NULL);
  silence_hdf5 ();
  g_auto (H5Id) file = g_file_test (path, G_FILE_TEST_IS_REGULAR)
                           ? H5Fopen (path, H5F_ACC_RDONLY, H5P_DEFAULT)
                           : H5I_INVALID_HID;
  if (file < 0)
    {
      h5_fail (error, SIM_H5OUT_ERROR_IO, "%s: cannot open as HDF5", path);
      return NULL;
    }
  g_auto (H5Id) obj = object_exists (file, object) ? H5Oopen (file, object, H5P_DEFAULT)
                                                    : H5I_INVALID_HID;
  if (obj < 0 || H5Aexists (obj, name) <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                   "%s: %s: no attribute '%s'", path, object, name);
      return NULL;
    }
  g_auto (H5Id) attr = H5Aopen (obj, name, H5P_DEFAULT);
  char *text = attr >= 0 ? read_string (attr, TRUE, error) : NULL;
  if (text == NULL)
    g_prefix_error (error, "%s: %s: attribute %s: ", path, object, name);
  return text;
}
