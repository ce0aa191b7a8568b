/* sim/h5out_read.c — typed reads of the HDF5 files stepsim writes: /summary as summary
 * entries, a compound table (/tasks, /results) as a SimTable, a group of series as a
 * SimH5Timeline (sim/h5out.h). They are what stepsim's charts read (cli/report/results_read.h),
 * so no reader of stepsim parses the TSV export back.
 *
 * Each read runs in a child process (sim_h5_guarded, sim/h5out_guard.c: libhdf5 can crash on
 * corrupt metadata) with the checks of the export (every count and size bounded by the
 * file's, sim/h5out_series.c); the child sends its result as a serialized GVariant of a fixed
 * type, and the parent rebuilds the C values from it. The answer's bytes are checked to be
 * in GVariant's normal form before they are read as trusted (sim/variant.h: GLib takes the
 * children of an untrusted array in time quadratic in their number), so a truncated or
 * corrupt answer is an error, never read past its buffer; the parent checks the shapes it
 * relies on (one value per row in every column, one per time in every series).
 *
 * Invariants: every hid_t lives in a g_auto (H5Id) variable; columns keep the file's field
 * order and series the group's creation order; nothing iterates a hash table.
 */
#include "config.h"
#include "sim/h5out.h"

#include <hdf5.h>
#include <string.h>
#include "sim/h5out-private.h"
#include "sim/variant.h"

/* GVariant types of the answers. Summary: name, unit (none for a text without one), value,
 * text (none for a scalar). Table: rows, then per column name, unit, is_text, numbers (for a
 * number column) and texts (for a text column). Timeline: times, then per series name and
 * values. */
#define SUMMARY_TYPE "a(smsdms)"
#define TABLE_TYPE "(ua(ssbadas))"
#define TIMELINE_TYPE "(ada(sad))"

typedef struct
{
  const char *path, *object;
} ReadArgs;

/* Opens `object` of the file of `file`: NOT_FOUND "no such object" when a component of its
 * path is missing (or not a hard link), FORMAT when it cannot be opened. */
static H5Id
open_object (H5Id file, const char *object, GError **error)
{
  if (!sim_h5_object_exists (file, object))
    {
      g_set_error_literal (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "no such object");
      return H5I_INVALID_HID;
    }
  H5Id obj = H5Oopen (file, object, H5P_DEFAULT);
  if (obj < 0)
    sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot open");
  return obj;
}


/* A string of the file as a GVariant string: a file's text is not trusted to be UTF-8 (a
 * damaged or foreign file), and GVariant refuses what is not (QA: GLib-CRITICAL on a task
 * label with a stray byte); invalid bytes become U+FFFD. NULL is "". */
static GVariant *
text_variant (const char *s)
{
  if (s == NULL)
    s = "";
  if (g_utf8_validate (s, -1, NULL))
    return g_variant_new_string (s);
  g_autofree char *valid = g_utf8_make_valid (s, -1);
  return g_variant_new_string (valid);
}

static GVariant *
maybe_text_variant (const char *s)
{
  return g_variant_new_maybe (G_VARIANT_TYPE_STRING, s != NULL ? text_variant (s) : NULL);
}

/* ---- /summary ----------------------------------------------------------------------------- */

static GVariant *
summary_variant (H5Id file, GError **error)
{
  gboolean table = FALSE;
  g_autoptr (GPtrArray) entries = sim_h5_summary_view (file, "/summary", &table, error);
  if (table && entries == NULL)
    return NULL;
  if (!table)
    {
      /* a file of the former layout: one dataset per entry */
      g_auto (H5Id) group = open_object (file, "/summary", error);
      if (group < 0)
        return NULL;
      if (H5Iget_type (group) != H5I_GROUP)
        return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a group"), NULL;
      entries = sim_h5_summary_entries (group, error);
      if (entries == NULL)
        return NULL;
    }
  GVariantBuilder b;
  g_variant_builder_init (&b, G_VARIANT_TYPE (SUMMARY_TYPE));
  for (guint i = 0; i < entries->len; i++)
    {
      const SimSummaryEntry *e = g_ptr_array_index (entries, i);
      g_variant_builder_add (&b, "(@s@msd@ms)", text_variant (e->name),
                             maybe_text_variant (e->unit), e->value, maybe_text_variant (e->text));
    }
  return g_variant_builder_end (&b);
}

/* ---- compound tables ---------------------------------------------------------------------- */

static void
clear_id (gpointer p)
{
  sim_h5_close (*(H5Id *) p);
}

/* The integer of native type `mt` stored (possibly unaligned) at `p`, as a double (exact up
 * to 2^53: stepsim's integer fields are 32-bit). FALSE for another size. */
static gboolean
integer_at (H5Id mt, const char *p, double *v)
{
  gboolean sign = H5Tget_sign (mt) == H5T_SGN_2;
  guint8 b1;
  guint16 b2;
  guint32 b4;
  guint64 b8;
  switch (H5Tget_size (mt))
    {
    case 1: memcpy (&b1, p, 1); *v = sign ? (double) (gint8) b1 : b1; return TRUE;
    case 2: memcpy (&b2, p, 2); *v = sign ? (double) (gint16) b2 : b2; return TRUE;
    case 4: memcpy (&b4, p, 4); *v = sign ? (double) (gint32) b4 : b4; return TRUE;
    case 8: memcpy (&b8, p, 8); *v = sign ? (double) (gint64) b8 : (double) b8; return TRUE;
    default: return FALSE;
    }
}

/* Whether member type `mt` is read as text (enum, string) rather than as a number (integer,
 * float); FALSE + error for any other class or size. */
static gboolean
field_kind (H5Id mt, const char *name, SimTableKind *kind, GError **error)
{
  H5T_class_t cls = H5Tget_class (mt);
  size_t size = H5Tget_size (mt);
  if (cls == H5T_ENUM || cls == H5T_STRING)
    return *kind = SIM_TABLE_TEXT, TRUE;
  if ((cls == H5T_INTEGER && (size == 1 || size == 2 || size == 4 || size == 8))
      || (cls == H5T_FLOAT && (size == sizeof (double) || size == sizeof (float))))
    return *kind = SIM_TABLE_DOUBLE, TRUE;
  g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
               "field '%s' is of an unsupported type (class %d, %zu bytes)", name, (int) cls,
               size);
  return FALSE;
}

/* Stores the field of member type `mt` at `p` in (row, col) of `t`, whose kind field_kind
 * chose: enums by member name (by number when the value has none), strings up to their
 * NUL or fixed size. */
static void
put_cell (SimTable *t, guint row, guint col, H5Id mt, const char *p)
{
  size_t size = H5Tget_size (mt);
  H5T_class_t cls = H5Tget_class (mt);
  double v = 0;
  if (cls == H5T_ENUM)
    {
      char name[256];
      if (H5Tenum_nameof (mt, p, name, sizeof name) >= 0)
        {
          name[sizeof name - 1] = '\0';
          sim_table_set_text (t, row, col, name);
          return;
        }
      H5Eclear2 (H5E_DEFAULT);
      g_auto (H5Id) super = H5Tget_super (mt);
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      if (super >= 0 && integer_at (super, p, &v))
        sim_table_set_text (t, row, col, g_ascii_dtostr (buf, sizeof buf, v));
      return;
    }
  if (cls == H5T_STRING)
    {
      if (H5Tis_variable_str (mt) > 0)
        {
          const char *vs = NULL;
          memcpy (&vs, p, sizeof vs);
          sim_table_set_text (t, row, col, vs != NULL ? vs : "");
        }
      else
        {
          g_autofree char *s = g_strndup (p, size);
          sim_table_set_text (t, row, col, s);
        }
      return;
    }
  if (cls == H5T_INTEGER)
    integer_at (mt, p, &v);
  else if (size == sizeof (double))
    memcpy (&v, p, sizeof v);
  else
    {
      float f;
      memcpy (&f, p, sizeof f);
      v = f;
    }
  sim_table_set_double (t, row, col, v);
}

/* Reads rows [offset, offset+count) of `dset` as `mtype` into new rows of `t`;
 * variable-length data through the bounded allocator, reclaimed after the block. */
static gboolean
read_block (SimTable *t, H5Id dset, H5Id mtype, GArray *members, hsize_t offset, hsize_t count,
            char *buf, GError **error)
{
  hsize_t file_bytes = sim_h5_file_bytes (dset);
  size_t rsize = H5Tget_size (mtype);
  g_auto (H5Id) fspace = H5Dget_space (dset);
  g_auto (H5Id) mspace = H5Screate_simple (1, &count, NULL);
  g_auto (H5Id) dxpl = H5Pcreate (H5P_DATASET_XFER);
  memset (buf, 0, rsize * count);
  if (fspace < 0 || mspace < 0 || dxpl < 0
      || H5Pset_vlen_mem_manager (dxpl, sim_h5_vlen_alloc_bounded, &file_bytes,
                                  sim_h5_vlen_free, NULL) < 0
      || H5Sselect_hyperslab (fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL) < 0
      || H5Dread (dset, mtype, mspace, fspace, dxpl, buf) < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                        "cannot read table rows %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT,
                        (guint64) offset, (guint64) (offset + count - 1));
  for (hsize_t r = 0; r < count; r++)
    {
      guint row = sim_table_add_row (t);
      for (guint m = 0; m < members->len; m++)
        put_cell (t, row, m, g_array_index (members, H5Id, m),
                  buf + r * rsize + H5Tget_member_offset (mtype, m));
    }
  if (H5Tdetect_class (mtype, H5T_VLEN) > 0 || H5Tdetect_class (mtype, H5T_STRING) > 0)
    H5Dvlen_reclaim (mtype, mspace, dxpl, buf);
  return TRUE;
}

/* A name a SimTable column can take (sim/table.h): not empty, no tab, newline or comma. */
static gboolean
column_name_ok (const char *name)
{
  return name != NULL && name[0] != '\0' && strpbrk (name, "\t\n\r,") == NULL;
}

/* Adds the column of member `m` (its name, kind and unit_<name> attribute) to `t`. */
static gboolean
add_field_column (SimTable *t, H5Id dset, H5Id mtype, H5Id mt, unsigned m, GError **error)
{
  char *raw = H5Tget_member_name (mtype, m);
  g_autofree char *name = g_strdup (raw != NULL ? raw : "");
  H5free_memory (raw);
  SimTableKind kind;
  if (!column_name_ok (name) || sim_table_find_column (t, name) != G_MAXUINT)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                        "field %u has a name a table cannot hold ('%s')", m, name);
  if (!field_kind (mt, name, &kind, error))
    return FALSE;
  g_autofree char *attr_name = g_strconcat ("unit_", name, NULL);
  g_autofree char *unit = NULL;
  if (H5Aexists (dset, attr_name) > 0)
    {
      g_auto (H5Id) attr = H5Aopen (dset, attr_name, H5P_DEFAULT);
      if ((unit = sim_h5_read_string (attr, TRUE, error)) == NULL)
        return g_prefix_error (error, "attribute %s: ", attr_name), FALSE;
    }
  H5Eclear2 (H5E_DEFAULT);
  sim_table_add_column (t, name, kind, kind == SIM_TABLE_DOUBLE ? unit : NULL);
  return TRUE;
}

/* The 1-D compound dataset `dset` as a table; the bounds are those of the export
 * (sim/h5out_export.c): rows × row size within the file before anything is allocated. */
static SimTable *
table_of (H5Id dset, GError **error)
{
  g_auto (H5Id) ftype = H5Dget_type (dset);
  if (ftype < 0 || H5Tget_class (ftype) != H5T_COMPOUND)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a compound table"), NULL;
  g_auto (H5Id) mtype = H5Tget_native_type (ftype, H5T_DIR_ASCEND);
  g_auto (H5Id) space = H5Dget_space (dset);
  if (mtype < 0 || space < 0 || H5Sget_simple_extent_ndims (space) != 1)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a 1-D table"), NULL;
  if (!sim_h5_check_layout (dset, 1, "the table", error))
    return NULL;
  hsize_t file_bytes = sim_h5_file_bytes (dset);
  size_t frsize = H5Tget_size (ftype), rsize = H5Tget_size (mtype);
  hssize_t npoints = H5Sget_simple_extent_npoints (space);
  int nm = H5Tget_nmembers (mtype);
  if (frsize == 0 || rsize == 0 || frsize > file_bytes || rsize > G_MAXSIZE / TASK_BLOCK
      || nm <= 0 || (hsize_t) nm > rsize || npoints < 0 || (hsize_t) npoints > file_bytes / frsize
      || (hsize_t) npoints > G_MAXUINT)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                   "a table of %" G_GINT64_FORMAT " rows of %zu bytes and %d fields does not "
                   "fit the file's %" G_GUINT64_FORMAT " bytes", (gint64) npoints, frsize, nm,
                   (guint64) file_bytes);
      return NULL;
    }
  g_autoptr (SimTable) t = sim_table_new ();
  g_autoptr (GArray) members = g_array_new (FALSE, FALSE, sizeof (H5Id));
  g_array_set_clear_func (members, clear_id);
  for (int m = 0; m < nm; m++)
    {
      H5Id mt = H5Tget_member_type (mtype, (unsigned) m);
      g_array_append_val (members, mt);
      size_t off = H5Tget_member_offset (mtype, (unsigned) m);
      if (mt < 0 || H5Tget_size (mt) > rsize || off > rsize - H5Tget_size (mt))
        return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                            "field %d of the table lies outside its %zu-byte row", m, rsize),
               NULL;
      if (!add_field_column (t, dset, mtype, mt, (unsigned) m, error))
        return NULL;
    }
  hsize_t n = (hsize_t) npoints;
  g_autofree char *buf = g_malloc0 (rsize * TASK_BLOCK);
  for (hsize_t off = 0; off < n; off += TASK_BLOCK)
    if (!read_block (t, dset, mtype, members, off, MIN ((hsize_t) TASK_BLOCK, n - off), buf,
                     error))
      return NULL;
  return g_steal_pointer (&t);
}

static GVariant *
table_variant (const SimTable *t)
{
  guint rows = sim_table_n_rows (t);
  GVariantBuilder cols;
  g_variant_builder_init (&cols, G_VARIANT_TYPE ("a(ssbadas)"));
  for (guint c = 0; c < sim_table_n_columns (t); c++)
    {
      gboolean text = sim_table_column_kind (t, c) == SIM_TABLE_TEXT;
      GVariantBuilder nums, texts;
      g_variant_builder_init (&nums, G_VARIANT_TYPE ("ad"));
      g_variant_builder_init (&texts, G_VARIANT_TYPE ("as"));
      for (guint r = 0; r < rows; r++)
        if (text)
          g_variant_builder_add (&texts, "@s", text_variant (sim_table_get_text (t, r, c)));
        else
          g_variant_builder_add (&nums, "d", sim_table_get_double (t, r, c));
      g_variant_builder_add (&cols, "(@s@sbadas)", text_variant (sim_table_column_name (t, c)),
                             text_variant (sim_table_column_unit (t, c)), text, &nums, &texts);
    }
  return g_variant_new ("(ua(ssbadas))", rows, &cols);
}

static GVariant *
object_table_variant (H5Id file, const char *object, GError **error)
{
  g_auto (H5Id) dset = open_object (file, object, error);
  if (dset < 0)
    return NULL;
  if (H5Iget_type (dset) != H5I_DATASET)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a dataset (a table)"), NULL;
  g_autoptr (SimTable) t = table_of (dset, error);
  return t != NULL ? table_variant (t) : NULL;
}

/* ---- series ------------------------------------------------------------------------------- */

static GVariant *
timeline_variant (H5Id file, const char *object, GError **error)
{
  g_autoptr (SimH5Timeline) m = NULL;
  if (sim_h5_is_series_view (file, object))
    m = sim_h5_view_timeline (file, object, error);
  else
    {
      /* a file of the former layout: one group per series */
      g_auto (H5Id) group = open_object (file, object, error);
      if (group < 0)
        return NULL;
      if (H5Iget_type (group) != H5I_GROUP)
        return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a group of series"), NULL;
      m = sim_h5_timeline_of (group, error);
    }
  if (m == NULL)
    return NULL;
  GVariantBuilder cols;
  g_variant_builder_init (&cols, G_VARIANT_TYPE ("a(sad)"));
  for (guint k = 0; k < m->names->len; k++)
    {
      GArray *v = g_ptr_array_index (m->values, k);
      g_variant_builder_add (&cols, "(@s@ad)", text_variant (g_ptr_array_index (m->names, k)),
                             g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, v->data, v->len,
                                                        sizeof (double)));
    }
  return g_variant_new ("(@ada(sad))",
                        g_variant_new_fixed_array (G_VARIANT_TYPE_DOUBLE, m->time->data,
                                                   m->time->len, sizeof (double)),
                        &cols);
}

/* ---- the guarded read --------------------------------------------------------------------- */

typedef GVariant *(*ReadFunc) (H5Id file, const char *object, GError **error);

typedef struct
{
  ReadArgs a;
  ReadFunc read;
} ChildArgs;

static GVariant *
summary_read (H5Id file, const char *object, GError **error)
{
  (void) object;
  return summary_variant (file, error);
}

/* In the reader process: the answer's bytes as the payload. */
static gboolean
read_in_child (gpointer data, GString *payload, GError **error)
{
  const ChildArgs *c = data;
  sim_h5_silence ();
  g_auto (H5Id) file = sim_h5_open_file (c->a.path, error);
  if (file < 0)
    return FALSE;
  g_autoptr (GVariant) v = c->read (file, c->a.object, error);
  if (v == NULL)
    return g_prefix_error (error, "%s: %s: ", c->a.path, c->a.object), FALSE;
  g_variant_ref_sink (v);
  g_string_append_len (payload, g_variant_get_data (v), (gssize) g_variant_get_size (v));
  return TRUE;
}

static gpointer
inconsistent (GError **error, const char *path, const char *object)
{
  g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
               "%s: %s: the reader's answer is inconsistent", path, object);
  return NULL;
}

/* Runs `read` on `object` of `path` in a child; the answer as a GVariant of `type` (caller
 * unrefs), checked to be in normal form and then trusted (sim/variant.h: so that taking
 * its n children costs O(n), not O(n^2)); NULL + error "inconsistent" when it is not. */
static GVariant *
guarded_read (const char *path, const char *object, ReadFunc read, const char *type,
              GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL, NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);
  ChildArgs c = { { path, object }, read };
  g_autoptr (GString) answer = g_string_new (NULL);
  if (!sim_h5_guarded (path, object, read_in_child, &c, answer, error))
    return NULL;
  gsize len = answer->len;
  g_autoptr (GBytes) bytes = g_bytes_new_take (g_string_free (g_steal_pointer (&answer), FALSE),
                                               len);
  GVariant *v = sim_variant_new_checked (G_VARIANT_TYPE (type), bytes);
  return v != NULL ? v : inconsistent (error, path, object);
}

GPtrArray *
sim_h5out_read_summary (const char *path, GError **error)
{
  g_autoptr (GVariant) v = guarded_read (path, "/summary", summary_read, SUMMARY_TYPE, error);
  if (v == NULL)
    return NULL;
  GPtrArray *entries = g_ptr_array_new_with_free_func (sim_h5_summary_entry_free);
  GVariantIter it;
  g_variant_iter_init (&it, v);
  const char *name, *unit, *text;
  double value;
  while (g_variant_iter_next (&it, "(&sm&sdm&s)", &name, &unit, &value, &text))
    {
      SimSummaryEntry *e = g_new0 (SimSummaryEntry, 1);
      e->name = g_strdup (name);
      e->unit = g_strdup (unit);
      e->value = value;
      e->text = g_strdup (text);
      g_ptr_array_add (entries, e);
    }
  return entries;
}

SimTable *
sim_h5out_read_table (const char *path, const char *object, GError **error)
{
  g_autoptr (GVariant) v = guarded_read (path, object, object_table_variant, TABLE_TYPE, error);
  if (v == NULL)
    return NULL;
  guint32 rows;
  g_autoptr (GVariantIter) it = NULL;
  g_variant_get (v, "(ua(ssbadas))", &rows, &it);
  g_autoptr (SimTable) t = sim_table_new ();
  for (guint32 r = 0; r < rows; r++)
    sim_table_add_row (t);
  const char *name, *unit;
  gboolean text;
  GVariant *nums, *texts;
  while (g_variant_iter_next (it, "(&s&sb@ad@as)", &name, &unit, &text, &nums, &texts))
    {
      g_autoptr (GVariant) n = nums, s = texts;
      gsize n_nums = 0, n_texts = 0;
      const double *d = g_variant_get_fixed_array (n, &n_nums, sizeof (double));
      g_autofree gpointer held = g_variant_get_strv (s, &n_texts);
      const char *const *strs = held;
      if (!column_name_ok (name) || sim_table_find_column (t, name) != G_MAXUINT
          || (text ? n_texts : n_nums) != rows)
        return inconsistent (error, path, object);
      guint col = sim_table_add_column (t, name, text ? SIM_TABLE_TEXT : SIM_TABLE_DOUBLE, unit);
      for (guint32 r = 0; r < rows; r++)
        if (text)
          sim_table_set_text (t, r, col, strs[r]);
        else
          sim_table_set_double (t, r, col, d[r]);
    }
  return g_steal_pointer (&t);
}

SimH5Timeline *
sim_h5out_read_timeline (const char *path, const char *group, GError **error)
{
  g_autoptr (GVariant) v = guarded_read (path, group, timeline_variant, TIMELINE_TYPE, error);
  if (v == NULL)
    return NULL;
  g_autoptr (GVariant) times = g_variant_get_child_value (v, 0);
  g_autoptr (GVariant) cols = g_variant_get_child_value (v, 1);
  gsize n = 0;
  const double *t = g_variant_get_fixed_array (times, &n, sizeof (double));
  if (n > G_MAXUINT)
    return inconsistent (error, path, group);
  g_autoptr (SimH5Timeline) m = sim_h5_timeline_new ();
  g_array_append_vals (m->time, t, (guint) n);
  GVariantIter it;
  g_variant_iter_init (&it, cols);
  const char *name;
  GVariant *values;
  while (g_variant_iter_next (&it, "(&s@ad)", &name, &values))
    {
      g_autoptr (GVariant) owned = values;
      gsize k = 0;
      const double *x = g_variant_get_fixed_array (owned, &k, sizeof (double));
      if (k != n)
        return inconsistent (error, path, group);
      GArray *a = g_array_sized_new (FALSE, FALSE, sizeof (double), (guint) n);
      g_array_append_vals (a, x, (guint) n);
      g_ptr_array_add (m->names, g_strdup (name));
      g_ptr_array_add (m->values, a);
    }
  return g_steal_pointer (&m);
}
