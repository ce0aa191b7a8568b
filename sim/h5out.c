/* sim/h5out.c — writes a SimRecorder to HDF5 (see h5out.h and doc/hdf5-layout.md for the
 * layout) with the writing primitives of h5out_writer.c, and the /summary row type the
 * readers share (sim/h5out-private.h). Only sim/h5out*.c include hdf5.h.
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
 * Units: raw SI doubles as recorded; /series/index and /summary carry each unit in a field.
 * The object count is fixed (/summary, /series/{index,time,value}, /tasks): tables and point
 * arrays are 1-D chunked datasets with maximum size H5S_UNLIMITED, extended and written one
 * block at a time (TASK_BLOCK rows, SERIES_BLOCK points); the chunk is the block size, or the
 * data size rounded up to MIN_CHUNK when smaller.
 */
#include "config.h"
#include "sim/h5out.h"

#include <fcntl.h>
#include <math.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <hdf5.h>
#include "sim/h5out-private.h"
#include "sim/tempfiles.h"
#include <stddef.h>
#include <string.h>
#include <unistd.h>

static gboolean
write_root (SimH5Writer *w, const SimH5Meta *meta, GError **error)
{
  return sim_h5_write_str_attr (w->file, "program", meta->program ? meta->program : "stepsim", error)
         && sim_h5_write_str_attr (w->file, "version", meta->version ? meta->version : PACKAGE_VERSION,
                            error)
         && sim_h5_write_str_attr (w->file, "scenario",
                            meta->scenario_text ? meta->scenario_text : "", error);
}

H5Id
sim_h5_summary_type (gboolean file, H5Id str)
{
  H5Id base = file ? H5T_STD_U8LE : H5T_NATIVE_UINT8;
  g_auto (H5Id) kind = H5Tenum_create (base);
  guint8 number = SIM_H5_SUMMARY_NUMBER, text = SIM_H5_SUMMARY_TEXT;
  if (kind < 0 || H5Tenum_insert (kind, "number", &number) < 0
      || H5Tenum_insert (kind, "text", &text) < 0)
    return H5I_INVALID_HID;
  size_t ss = H5Tget_size (str);
  H5Id f64 = file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
  H5Id t = H5Tcreate (H5T_COMPOUND, file ? 3 * ss + 1 + 8 : sizeof (SimH5SummaryRow));
  if (t >= 0
      && (H5Tinsert (t, "name", file ? 0 : offsetof (SimH5SummaryRow, name), str) < 0
          || H5Tinsert (t, "kind", file ? ss : offsetof (SimH5SummaryRow, kind), kind) < 0
          || H5Tinsert (t, "value", file ? ss + 1 : offsetof (SimH5SummaryRow, value), f64) < 0
          || H5Tinsert (t, "unit", file ? ss + 9 : offsetof (SimH5SummaryRow, unit), str) < 0
          || H5Tinsert (t, "text", file ? 2 * ss + 9 : offsetof (SimH5SummaryRow, text), str)
               < 0))
    {
      sim_h5_close (t);
      t = H5I_INVALID_HID;
    }
  return t;
}

/* /summary: one compound table, a row per entry in recorded order. */
static gboolean
write_summary (SimH5Writer *w, const SimRecorder *rec, GError **error)
{
  guint n = sim_recorder_n_summary (rec);
  g_auto (H5Id) str = sim_h5_vlstr_type ();
  g_auto (H5Id) ftype = str >= 0 ? sim_h5_summary_type (TRUE, str) : H5I_INVALID_HID;
  g_auto (H5Id) mtype = str >= 0 ? sim_h5_summary_type (FALSE, str) : H5I_INVALID_HID;
  if (ftype < 0 || mtype < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot build the /summary type");
  g_autofree SimH5SummaryRow *rows = g_new0 (SimH5SummaryRow, MAX (n, 1u));
  static char empty[] = "";
  for (guint i = 0; i < n; i++)
    {
      const SimSummaryEntry *e = sim_recorder_summary_entry (rec, i);
      gboolean text = e->text != NULL;
      rows[i] = (SimH5SummaryRow){ e->name, text ? SIM_H5_SUMMARY_TEXT : SIM_H5_SUMMARY_NUMBER,
                                   text ? NAN : e->value,
                                   !text && e->unit != NULL ? e->unit : empty,
                                   text ? e->text : empty };
    }
  g_auto (H5Id) d = sim_h5_create_extendible (w, "/summary", ftype,
                                              sim_h5_chunk_for (n, TASK_BLOCK), error);
  if (d < 0)
    return FALSE;
  for (guint off = 0; off < n; off += TASK_BLOCK)
    if (!sim_h5_append_block (d, mtype, off, MIN ((guint) TASK_BLOCK, n - off), rows + off,
                              error))
      return g_prefix_error (error, "/summary: "), FALSE;
  return TRUE;
}

/* ---- /series: one index table and two point arrays (doc/hdf5-layout.md) ---------------- */

/* One /series/index row in memory; the file type packs the same fields little-endian. */
typedef struct
{
  const char *path, *unit; /* borrowed from the recorder */
  guint64 first, count;
} SeriesRow;

static H5Id
series_index_type (gboolean file, H5Id str)
{
  H5Id u64 = file ? H5T_STD_U64LE : H5T_NATIVE_UINT64;
  size_t strsize = H5Tget_size (str);
  size_t size = file ? 2 * strsize + 16 : sizeof (SeriesRow);
  H5Id t = H5Tcreate (H5T_COMPOUND, size);
  if (t >= 0
      && (H5Tinsert (t, "path", file ? 0 : offsetof (SeriesRow, path), str) < 0
          || H5Tinsert (t, "unit", file ? strsize : offsetof (SeriesRow, unit), str) < 0
          || H5Tinsert (t, "first", file ? 2 * strsize : offsetof (SeriesRow, first), u64) < 0
          || H5Tinsert (t, "count", file ? 2 * strsize + 8 : offsetof (SeriesRow, count), u64)
               < 0))
    {
      sim_h5_close (t);
      t = H5I_INVALID_HID;
    }
  return t;
}

/* A series and its path's components as sibling ranks (series_tree_order). */
typedef struct
{
  guint id;
  GArray *key;
} TreeKey;

static gint
cmp_tree_key (gconstpointer a, gconstpointer b)
{
  const GArray *x = ((const TreeKey *) a)->key, *y = ((const TreeKey *) b)->key;
  for (guint i = 0; i < MIN (x->len, y->len); i++)
    {
      guint p = g_array_index (x, guint, i), q = g_array_index (y, guint, i);
      if (p != q)
        return p < q ? -1 : 1;
    }
  return (x->len > y->len) - (x->len < y->len);
}

/* The recorder's series in the order the layout stores them: depth first over their paths'
 * components, siblings in order of first appearance (the order the former one-group-per-
 * series layout listed them in, so a prefix's series are contiguous and exports keep their
 * column order). Returns series ids; caller frees. */
static GArray *
series_tree_order (const SimRecorder *rec)
{
  guint n = sim_recorder_n_series (rec);
  /* prefix -> 1 + its index among its parent's children; parent -> children so far */
  g_autoptr (GHashTable) rank = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GHashTable) kids = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr (GArray) keys = g_array_sized_new (FALSE, FALSE, sizeof (TreeKey), n);
  for (guint i = 0; i < n; i++)
    {
      g_auto (GStrv) parts = g_strsplit (sim_recorder_series_path (rec, i), "/", -1);
      GArray *key = g_array_new (FALSE, FALSE, sizeof (guint));
      g_autoptr (GString) prefix = g_string_new (NULL);
      for (char **p = parts; *p != NULL; p++)
        {
          g_autofree char *parent = g_strdup (prefix->str);
          g_string_append_printf (prefix, "%s%s", prefix->len > 0 ? "/" : "", *p);
          guint r = GPOINTER_TO_UINT (g_hash_table_lookup (rank, prefix->str));
          if (r == 0)
            {
              r = GPOINTER_TO_UINT (g_hash_table_lookup (kids, parent)) + 1;
              g_hash_table_insert (kids, g_steal_pointer (&parent), GUINT_TO_POINTER (r));
              g_hash_table_insert (rank, g_strdup (prefix->str), GUINT_TO_POINTER (r));
            }
          g_array_append_val (key, r);
        }
      TreeKey k = { i, key };
      g_array_append_val (keys, k);
    }
  /* keys are distinct (ranks are unique among siblings; a prefix sorts first) */
  g_array_sort (keys, cmp_tree_key);
  GArray *order = g_array_sized_new (FALSE, FALSE, sizeof (guint), n);
  for (guint i = 0; i < n; i++)
    {
      TreeKey *k = &g_array_index (keys, TreeKey, i);
      g_array_append_val (order, k->id);
      g_array_unref (k->key);
    }
  return order;
}

/* Buffered appends to an extendible 1-D double dataset. */
typedef struct
{
  H5Id dset;
  double *buf;
  gsize used, written;
} PointSink;

static gboolean
sink_flush (PointSink *s, GError **error)
{
  if (s->used > 0
      && !sim_h5_append_block (s->dset, H5T_NATIVE_DOUBLE, s->written, s->used, s->buf, error))
    return FALSE;
  s->written += s->used;
  s->used = 0;
  return TRUE;
}

static gboolean
sink_put (PointSink *s, const double *v, gsize n, GError **error)
{
  while (n > 0)
    {
      gsize k = MIN (n, (gsize) SERIES_BLOCK - s->used);
      memcpy (s->buf + s->used, v, k * sizeof *v);
      s->used += k;
      v += k;
      n -= k;
      if (s->used == SERIES_BLOCK && !sink_flush (s, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
write_all_series (SimH5Writer *w, const SimRecorder *rec, GError **error)
{
  if (!sim_h5_ensure_groups (w, "/series", error))
    return FALSE;
  guint n = sim_recorder_n_series (rec);
  g_autoptr (GArray) order = series_tree_order (rec);
  g_autofree SeriesRow *rows = g_new0 (SeriesRow, MAX (n, 1u));
  guint64 total = 0;
  for (guint k = 0; k < n; k++)
    {
      guint i = g_array_index (order, guint, k);
      const char *path = sim_recorder_series_path (rec, i);
      g_autofree char *head = g_strndup (path, strcspn (path, "/"));
      if (strcmp (head, "index") == 0 || strcmp (head, "time") == 0
          || strcmp (head, "value") == 0)
        {
          g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                       "series %s: a path may not begin with index, time or value (the "
                       "datasets of /series)", path);
          return FALSE;
        }
      const double *t = NULL, *v = NULL;
      rows[k] = (SeriesRow){ path, sim_recorder_series_unit (rec, i), total,
                             sim_recorder_series_points (rec, i, &t, &v) };
      total += rows[k].count;
    }
  g_auto (H5Id) str = sim_h5_vlstr_type ();
  g_auto (H5Id) ftype = str >= 0 ? series_index_type (TRUE, str) : H5I_INVALID_HID;
  g_auto (H5Id) mtype = str >= 0 ? series_index_type (FALSE, str) : H5I_INVALID_HID;
  if (ftype < 0 || mtype < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot build the /series/index type");
  g_auto (H5Id) index = sim_h5_create_extendible (w, "/series/index", ftype,
                                                  sim_h5_chunk_for (n, TASK_BLOCK), error);
  if (index < 0)
    return FALSE;
  for (guint off = 0; off < n; off += TASK_BLOCK)
    if (!sim_h5_append_block (index, mtype, off, MIN ((guint) TASK_BLOCK, n - off), rows + off,
                              error))
      return g_prefix_error (error, "/series/index: "), FALSE;
  hsize_t chunk = sim_h5_chunk_for (total, SERIES_BLOCK);
  g_auto (H5Id) td = sim_h5_create_extendible (w, "/series/time", H5T_IEEE_F64LE, chunk, error);
  g_auto (H5Id) vd = td >= 0 ? sim_h5_create_extendible (w, "/series/value", H5T_IEEE_F64LE,
                                                         chunk, error)
                             : H5I_INVALID_HID;
  if (vd < 0)
    return FALSE;
  gsize block = (gsize) MIN (total, (guint64) SERIES_BLOCK);
  g_autofree double *tbuf = g_new (double, MAX (block, 1u));
  g_autofree double *vbuf = g_new (double, MAX (block, 1u));
  PointSink ts = { td, tbuf, 0, 0 }, vs = { vd, vbuf, 0, 0 };
  for (guint k = 0; k < n; k++)
    {
      const double *t = NULL, *v = NULL;
      guint m = sim_recorder_series_points (rec, g_array_index (order, guint, k), &t, &v);
      if (!sink_put (&ts, t, m, error) || !sink_put (&vs, v, m, error))
        return g_prefix_error (error, "/series: "), FALSE;
    }
  if (!sink_flush (&ts, error) || !sink_flush (&vs, error))
    return g_prefix_error (error, "/series: "), FALSE;
  return sim_h5_write_str_attr (td, "unit", "s", error);
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
          sim_h5_close (t);
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
          sim_h5_close (t);
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
write_task_rows (SimH5Writer *w, const SimRecorder *rec, H5Id ftype, H5Id mtype, GError **error)
{
  guint n = sim_recorder_n_tasks (rec);
  g_auto (H5Id) d = sim_h5_create_extendible (w, "/tasks", ftype, sim_h5_chunk_for (n, TASK_BLOCK), error);
  if (d < 0)
    return FALSE;
  g_autofree TaskRow *rows = g_new (TaskRow, MAX (1u, MIN (n, (guint) TASK_BLOCK)));
  for (guint off = 0; off < n; off += TASK_BLOCK)
    {
      guint count = MIN ((guint) TASK_BLOCK, n - off);
      fill_rows (rec, off, count, rows);
      if (!sim_h5_append_block (d, mtype, off, count, rows, error))
        {
          g_prefix_error (error, "/tasks: ");
          return FALSE;
        }
    }
  return sim_h5_write_str_attr (d, "unit_start", "s", error) && sim_h5_write_str_attr (d, "unit_end", "s", error)
         && sim_h5_write_str_attr (d, "unit_flops", "FLOP", error)
         && sim_h5_write_str_attr (d, "unit_bytes", "B", error);
}

static gboolean
write_tasks (SimH5Writer *w, const SimRecorder *rec, const SimH5Meta *meta, GError **error)
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
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                    "cannot build the /tasks types (kind and stream names must be unique)");
  g_auto (H5Id) ftype = task_type (TRUE, stream_f, kind_f, label_t);
  g_auto (H5Id) mtype = task_type (FALSE, stream_m, kind_m, label_t);
  if (ftype < 0 || mtype < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot build the /tasks row type");
  return write_task_rows (w, rec, ftype, mtype, error);
}

/* The recorder's further tables, each as /<name> (sim_recorder_add_table). */
static gboolean
write_tables (SimH5Writer *w, const SimRecorder *rec, GError **error)
{
  for (guint i = 0; i < sim_recorder_n_tables (rec); i++)
    {
      const char *name = NULL;
      const SimTable *t = sim_recorder_table (rec, i, &name);
      g_autofree char *dataset = g_strconcat ("/", name, NULL);
      if (!sim_h5_write_table_rows (w, dataset, t, error))
        return FALSE;
    }
  return TRUE;
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
  sim_h5_silence ();
  g_autofree char *tmp = sim_tempfiles_new_path (path, NULL);
  SimH5Writer w = { H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID };
  gboolean ok = sim_h5_writer_open (&w, tmp, error) && write_root (&w, meta, error)
                && write_summary (&w, rec, error) && write_all_series (&w, rec, error)
                && write_tasks (&w, rec, meta, error) && write_tables (&w, rec, error);
  ok = sim_h5_writer_finish (&w, ok, tmp, path, error);
  return ok;
}
