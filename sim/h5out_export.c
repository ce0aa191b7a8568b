/* sim/h5out_export.c — reads objects of an HDF5 file written by sim/h5out*.c back as
 * tab-separated text (sim_h5out_export_tsv) and reads string attributes. See h5out.h for
 * what each kind of object exports as. This file holds datasets, compound tables and the
 * /summary rows (the table, its views, and the former one-dataset-per-entry groups); series
 * are printed by sim/h5out_series.c.
 *
 * Invariants: every hid_t lives in a g_auto (H5Id) variable; nothing iterates a hash table;
 * children are listed in creation order when the group tracks it (every group stepsim
 * writes does), else by name. Numbers are printed with the fewest digits that round-trip
 * (sim_text_format_double: 0.1, not 0.10000000000000001).
 */
#include "config.h"
#include "sim/text.h"
#include "sim/h5out.h"

#include <glib/gstdio.h>
#include <sys/stat.h>
#include <errno.h>
#include <hdf5.h>
#include <string.h>
#include "sim/h5out-private.h"

/* Writes `s` (at most `max` bytes, stopping at NUL) with backslash, tab, newline and
 * carriage return escaped as \\ \t \n \r, so every row stays one TSV line. */
void
sim_h5_put_escaped (FILE *out, const char *s, gsize max)
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

/* Reads a string dataset or attribute (fixed or variable length). NULL + error if `obj` does
 * not hold a string. */
char *
sim_h5_read_string (H5Id obj, gboolean is_attr, GError **error)
{
  g_auto (H5Id) ftype = is_attr ? H5Aget_type (obj) : H5Dget_type (obj);
  if (ftype < 0 || H5Tget_class (ftype) != H5T_STRING)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a string");
      return NULL;
    }
  /* The buffer below holds one string: a dataspace of several (or of none) would make the
   * read write past it, and a fixed length comes from the file. */
  g_auto (H5Id) space = is_attr ? H5Aget_space (obj) : H5Dget_space (obj);
  if (space < 0 || H5Sget_simple_extent_npoints (space) != 1)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not one string (a dataspace of %" G_GINT64_FORMAT
                   " elements)", space < 0 ? (gint64) -1 : (gint64) H5Sget_simple_extent_npoints (space));
      return NULL;
    }
  if (!is_attr && !sim_h5_check_layout (obj, H5Sget_simple_extent_ndims (space), "the string",
                                        error))
    return NULL;
  gboolean vl = H5Tis_variable_str (ftype) > 0;
  gsize size = vl ? sizeof (char *) : H5Tget_size (ftype);
  if (!vl && (size == 0 || size > sim_h5_file_bytes (obj)))
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "a string of %zu bytes, larger than the file",
                   size);
      return NULL;
    }
  g_auto (H5Id) mtype = vl ? sim_h5_vlstr_type () : H5Tcopy (H5T_C_S1);
  g_autofree char *buf = g_malloc0 (size + 1);
  herr_t r = -1;
  if (mtype >= 0 && (vl || H5Tset_size (mtype, size) >= 0))
    r = is_attr ? H5Aread (obj, mtype, buf) : H5Dread (obj, mtype, H5S_ALL, H5S_ALL,
                                                        H5P_DEFAULT, buf);
  if (r < 0)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read string");
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

void
sim_h5_summary_entry_free (gpointer p)
{
  SimSummaryEntry *e = p;
  if (e == NULL)
    return;
  g_free (e->name);
  g_free (e->unit);
  g_free (e->text);
  g_free (e);
}

/* Appends one entry per dataset below `group` (creation order, recursing into subgroups,
 * names relative to /summary) to `entries`: numbers with their `unit` attribute ("" when it
 * has none), texts with a NULL unit. */
static gboolean
collect_summary (H5Id group, const char *prefix, guint depth, guint64 *visits,
                 GPtrArray *entries, GError **error)
{
  if (!sim_h5_walk_enter (group, depth, visits, *prefix ? prefix : ".", error))
    return FALSE;
  g_autoptr (GPtrArray) names = sim_h5_list_children (group, error);
  if (names == NULL)
    return *prefix ? (g_prefix_error (error, "%s: ", prefix), FALSE) : FALSE;
  for (guint i = 0; i < names->len; i++)
    {
      const char *child = g_ptr_array_index (names, i);
      g_autofree char *name = g_strconcat (prefix, child, NULL);
      g_auto (H5Id) obj = sim_h5_open_child (group, child, name, error);
      if (obj < 0)
        return FALSE;
      H5I_type_t kind = H5Iget_type (obj);
      if (kind == H5I_GROUP)
        {
          g_autofree char *sub = g_strconcat (name, "/", NULL);
          if (!collect_summary (obj, sub, depth + 1, visits, entries, error))
            return FALSE;
          continue;
        }
      if (kind != H5I_DATASET)
        return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "summary entry %s is not a dataset",
                            name);
      g_auto (H5Id) type = H5Dget_type (obj);
      g_autofree char *unit = NULL;
      if (H5Aexists (obj, "unit") > 0)
        {
          g_auto (H5Id) attr = H5Aopen (obj, "unit", H5P_DEFAULT);
          if ((unit = sim_h5_read_string (attr, TRUE, error)) == NULL)
            return g_prefix_error (error, "summary entry %s: attribute unit: ", name), FALSE;
        }
      SimSummaryEntry *e = g_new0 (SimSummaryEntry, 1);
      e->name = g_steal_pointer (&name);
      g_ptr_array_add (entries, e);
      if (type >= 0 && H5Tget_class (type) == H5T_STRING)
        {
          e->unit = g_steal_pointer (&unit); /* stepsim writes none on texts */
          if ((e->text = sim_h5_read_string (obj, FALSE, error)) == NULL)
            return g_prefix_error (error, "summary entry %s: ", e->name), FALSE;
          continue;
        }
      g_autoptr (GArray) v = sim_h5_read_doubles (group, child, error);
      if (v == NULL || v->len != 1)
        return v == NULL ? FALSE : sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                                            "summary entry %s is not a scalar", e->name);
      e->value = g_array_index (v, double, 0);
      e->unit = unit != NULL ? g_steal_pointer (&unit) : g_strdup ("");
    }
  return TRUE;
}

GPtrArray *
sim_h5_summary_entries (H5Id group, GError **error)
{
  g_autoptr (GPtrArray) entries = g_ptr_array_new_with_free_func (sim_h5_summary_entry_free);
  guint64 visits = 0;
  return collect_summary (group, "", 0, &visits, entries, error) ? g_steal_pointer (&entries)
                                                                 : NULL;
}

/* The member `name` of compound `ftype` is of class `cls` (a string: variable length). */
static gboolean
has_member (H5Id ftype, const char *name, H5T_class_t cls)
{
  int i = H5Tget_member_index (ftype, name);
  if (i < 0)
    return H5Eclear2 (H5E_DEFAULT), FALSE;
  g_auto (H5Id) mt = H5Tget_member_type (ftype, (unsigned) i);
  return mt >= 0 && H5Tget_class (mt) == cls
         && (cls != H5T_STRING || H5Tis_variable_str (mt) > 0);
}

GPtrArray *
sim_h5_summary_table_entries (H5Id dset, const char *rel, GError **error)
{
  g_auto (H5Id) ftype = H5Dget_type (dset);
  g_auto (H5Id) space = H5Dget_space (dset);
  if (ftype < 0 || space < 0 || H5Tget_class (ftype) != H5T_COMPOUND
      || H5Sget_simple_extent_ndims (space) != 1 || !has_member (ftype, "name", H5T_STRING)
      || !has_member (ftype, "kind", H5T_ENUM) || !has_member (ftype, "value", H5T_FLOAT)
      || !has_member (ftype, "unit", H5T_STRING) || !has_member (ftype, "text", H5T_STRING))
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                   "not a 1-D table of name, kind, value, unit, text");
      return NULL;
    }
  if (!sim_h5_check_layout (dset, 1, "/summary", error))
    return NULL;
  hsize_t file_bytes = sim_h5_file_bytes (dset);
  size_t frsize = H5Tget_size (ftype);
  hssize_t n = H5Sget_simple_extent_npoints (space);
  if (frsize == 0 || n < 0 || (hsize_t) n > file_bytes / frsize || (hsize_t) n > G_MAXUINT)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                   "a table of %" G_GINT64_FORMAT " rows of %zu bytes does not fit the file's %"
                   G_GUINT64_FORMAT " bytes", (gint64) n, frsize, (guint64) file_bytes);
      return NULL;
    }
  g_auto (H5Id) str = sim_h5_vlstr_type ();
  g_auto (H5Id) mtype = str >= 0 ? sim_h5_summary_type (FALSE, str) : H5I_INVALID_HID;
  g_auto (H5Id) dxpl = H5Pcreate (H5P_DATASET_XFER);
  g_autofree SimH5SummaryRow *rows = g_new0 (SimH5SummaryRow, MAX (n, 1));
  if (mtype < 0 || dxpl < 0
      || H5Pset_vlen_mem_manager (dxpl, sim_h5_vlen_alloc_bounded, &file_bytes,
                                  sim_h5_vlen_free, NULL) < 0
      || (n > 0 && H5Dread (dset, mtype, H5S_ALL, H5S_ALL, dxpl, rows) < 0))
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read the table");
      return NULL;
    }
  g_autoptr (GPtrArray) entries = g_ptr_array_new_with_free_func (sim_h5_summary_entry_free);
  gsize rlen = strlen (rel);
  for (hssize_t i = 0; i < n; i++)
    {
      const SimH5SummaryRow *r = &rows[i];
      const char *full = r->name != NULL ? r->name : "", *name = NULL;
      if (rlen == 0)
        name = full;
      else if (strcmp (full, rel) == 0)
        name = "value";
      else if (strncmp (full, rel, rlen) == 0 && full[rlen] == '/')
        name = full + rlen + 1;
      if (name == NULL)
        continue;
      SimSummaryEntry *e = g_new0 (SimSummaryEntry, 1);
      e->name = g_strdup (name);
      if (r->kind == SIM_H5_SUMMARY_TEXT)
        e->text = g_strdup (r->text != NULL ? r->text : "");
      else
        {
          e->value = r->value;
          e->unit = g_strdup (r->unit != NULL ? r->unit : "");
        }
      g_ptr_array_add (entries, e);
    }
  g_autofree char *missing = NULL; /* what the deepest level that exists holds (QA) */
  if (entries->len == 0 && rlen > 0)
    {
      g_autofree const char **names = g_new0 (const char *, MAX (n, 1));
      for (hssize_t i = 0; i < n; i++)
        names[i] = rows[i].name;
      missing = sim_h5_missing_level ("/summary", names, (gsize) n, rel);
    }
  if (n > 0)
    H5Dvlen_reclaim (mtype, space, dxpl, rows);
  if (entries->len == 0 && rlen > 0)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "no such object (%s)",
                   missing);
      return NULL;
    }
  return g_steal_pointer (&entries);
}

/* `object` ("/summary/ranks/rank0") as the entry path below /summary ("ranks/rank0"; ""
 * for /summary), or NULL when it is not /summary or below it. */
static char *
summary_rel (const char *object)
{
  g_auto (GStrv) parts = g_strsplit (object, "/", -1);
  g_autoptr (GPtrArray) kept = g_ptr_array_new ();
  for (char **p = parts; *p != NULL; p++)
    if (**p != '\0')
      g_ptr_array_add (kept, *p);
  if (kept->len == 0 || strcmp (g_ptr_array_index (kept, 0), "summary") != 0)
    return NULL;
  g_ptr_array_add (kept, NULL);
  return g_strjoinv ("/", (char **) kept->pdata + 1);
}

GPtrArray *
sim_h5_summary_view (H5Id file, const char *object, gboolean *is_table, GError **error)
{
  *is_table = FALSE;
  g_autofree char *rel = summary_rel (object);
  if (rel == NULL || !sim_h5_object_exists (file, "/summary"))
    return NULL;
  g_auto (H5Id) d = H5Oopen (file, "/summary", H5P_DEFAULT);
  if (d < 0 || H5Iget_type (d) != H5I_DATASET)
    {
      H5Eclear2 (H5E_DEFAULT);
      return NULL;
    }
  *is_table = TRUE;
  return sim_h5_summary_table_entries (d, rel, error);
}

/* Writes the /summary rows of `entries`: name, value (a number, or the text escaped) and
 * unit (empty for texts). */
static void
put_summary_rows (GPtrArray *entries, FILE *out)
{
  fputs ("name\tvalue\tunit\n", out);
  for (guint i = 0; i < entries->len; i++)
    {
      const SimSummaryEntry *e = g_ptr_array_index (entries, i);
      sim_h5_put_escaped (out, e->name, G_MAXSIZE);
      fputc ('\t', out);
      if (e->text != NULL)
        sim_h5_put_escaped (out, e->text, G_MAXSIZE);
      else
        sim_h5_put_double (out, e->value);
      fputc ('\t', out);
      sim_h5_put_escaped (out, e->unit != NULL ? e->unit : "", G_MAXSIZE);
      fputc ('\n', out);
    }
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
          sim_h5_put_escaped (out, name, sizeof name);
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
      sim_h5_put_double (out, d);
      return TRUE;
    }
  if (cls == H5T_FLOAT && size == sizeof (float))
    {
      float f;
      memcpy (&f, p, sizeof f);
      sim_h5_put_double (out, f);
      return TRUE;
    }
  if (cls == H5T_STRING && H5Tis_variable_str (mt) > 0)
    {
      const char *vs = NULL;
      memcpy (&vs, p, sizeof vs);
      sim_h5_put_escaped (out, vs != NULL ? vs : "", G_MAXSIZE);
      return TRUE;
    }
  if (cls == H5T_STRING)
    {
      sim_h5_put_escaped (out, p, size);
      return TRUE;
    }
  return unsupported_field (mt, error);
}

static void
clear_id (gpointer p)
{
  sim_h5_close (*(H5Id *) p);
}

/* Reads rows [offset, offset+count) of table `dset` as `mtype` and prints them; `members`
 * holds the member types of `mtype`. Variable-length data is allocated through
 * sim_h5_vlen_alloc_bounded and reclaimed after printing. */
static gboolean
put_table_block (FILE *out, H5Id dset, H5Id mtype, GArray *members, hsize_t offset,
                 hsize_t count, char *buf, GError **error)
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
    H5Dvlen_reclaim (mtype, mspace, dxpl, buf);
  return ok;
}

/* Prints a 1-D compound dataset: a header of its field names, then one line per row. */
static gboolean
export_table (H5Id dset, H5Id ftype, FILE *out, GError **error)
{
  g_auto (H5Id) mtype = H5Tget_native_type (ftype, H5T_DIR_ASCEND);
  g_auto (H5Id) space = H5Dget_space (dset);
  if (mtype < 0 || space < 0 || H5Sget_simple_extent_ndims (space) != 1)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "not a 1-D table");
  if (!sim_h5_check_layout (dset, 1, "the table", error))
    return FALSE;
  /* Row size and row count come from the file: every row is stored (doc/hdf5-layout.md), so
   * rows × file row size cannot exceed the file, and the block buffer is allocated only then. */
  hsize_t file_bytes = sim_h5_file_bytes (dset);
  size_t frsize = H5Tget_size (ftype), rsize = H5Tget_size (mtype);
  hssize_t npoints = H5Sget_simple_extent_npoints (space);
  int nm = H5Tget_nmembers (mtype);
  if (frsize == 0 || rsize == 0 || frsize > file_bytes || rsize > G_MAXSIZE / TASK_BLOCK
      || nm <= 0 || (hsize_t) nm > rsize || npoints < 0 || (hsize_t) npoints > file_bytes / frsize)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                        "a table of %" G_GINT64_FORMAT " rows of %zu bytes and %d fields does not "
                        "fit the file's %" G_GUINT64_FORMAT " bytes", (gint64) npoints, frsize, nm,
                        (guint64) file_bytes);
  g_autoptr (GArray) members = g_array_new (FALSE, FALSE, sizeof (H5Id));
  g_array_set_clear_func (members, clear_id);
  for (int m = 0; m < nm; m++)
    {
      H5Id mt = H5Tget_member_type (mtype, (unsigned) m);
      g_array_append_val (members, mt);
      size_t off = H5Tget_member_offset (mtype, (unsigned) m);
      if (mt < 0 || H5Tget_size (mt) > rsize || off > rsize - H5Tget_size (mt))
        return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                            "field %d of the table lies outside its %zu-byte row", m, rsize);
      char *name = H5Tget_member_name (mtype, (unsigned) m);
      fprintf (out, "%s%s", m > 0 ? "\t" : "", name != NULL ? name : "?");
      H5free_memory (name);
    }
  fputc ('\n', out);
  hsize_t n = (hsize_t) npoints;
  g_autofree char *buf = g_malloc0 (rsize * TASK_BLOCK);
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
      g_autofree char *text = sim_h5_read_string (dset, FALSE, error);
      if (text == NULL)
        return FALSE;
      fputs ("value\n", out);
      sim_h5_put_escaped (out, text, G_MAXSIZE);
      fputc ('\n', out);
      return TRUE;
    }
  g_autoptr (GArray) v = sim_h5_read_doubles_of (dset, "dataset", error);
  if (v == NULL)
    return FALSE;
  fputs ("value\n", out);
  for (guint i = 0; i < v->len; i++)
    {
      sim_h5_put_double (out, g_array_index (v, double, i));
      fputc ('\n', out);
    }
  return TRUE;
}


/* The objects at the root of `file`, "/a, /b" (at most 16), for messages. Caller frees. */
static char *
root_names (H5Id file)
{
  GString *names = g_string_new (NULL);
  H5G_info_t info;
  g_auto (H5Id) root = H5Gopen2 (file, "/", H5P_DEFAULT);
  for (hsize_t i = 0; root >= 0 && H5Gget_info (root, &info) >= 0 && i < info.nlinks && i < 16;
       i++)
    {
      char name[256];
      if (H5Lget_name_by_idx (root, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name,
                              H5P_DEFAULT)
          > 0)
        g_string_append_printf (names, "%s/%s", names->len > 0 ? ", " : "", name);
    }
  if (names->len == 0)
    g_string_append (names, "nothing");
  return g_string_free (names, FALSE);
}

/* The longest proper prefix of `object` ("/tasks" of "/tasks/x") that is a dataset of
 * `file`, printable; NULL when none is. Caller frees. */
static char *
deepest_dataset (H5Id file, const char *object)
{
  g_autofree char *path = g_strdup (object);
  for (char *slash = strrchr (path, '/'); slash != NULL && slash > path;
       slash = strrchr (path, '/'))
    {
      *slash = '\0';
      if (path[0] == '\0' || !sim_h5_object_exists (file, path))
        continue;
      g_auto (H5Id) obj = H5Oopen (file, path, H5P_DEFAULT);
      gboolean dataset = obj >= 0 && H5Iget_type (obj) == H5I_DATASET;
      H5Eclear2 (H5E_DEFAULT);
      return dataset ? sim_text_printable (path, 200) : NULL;
    }
  return NULL;
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
  if (sim_h5_is_series_view (file, object))
    return sim_h5_export_series_view (file, object, out, error);
  gboolean table = FALSE;
  g_autoptr (GPtrArray) view = sim_h5_summary_view (file, object, &table, error);
  if (table && view == NULL)
    return FALSE;
  if (table)
    {
      g_autofree char *rel = summary_rel (object);
      const SimSummaryEntry *one = view->len > 0 ? g_ptr_array_index (view, 0) : NULL;
      if (*rel != '\0' && view->len == 1 && strcmp (one->name, "value") == 0)
        {
          /* one entry: as the former scalar dataset exported */
          fputs ("value\n", out);
          if (one->text != NULL)
            sim_h5_put_escaped (out, one->text, G_MAXSIZE);
          else
            sim_h5_put_double (out, one->value);
          fputc ('\n', out);
        }
      else
        put_summary_rows (view, out);
      return TRUE;
    }
  if (!sim_h5_object_exists (file, object))
    {
      /* say what the file holds (QA: /summary asked of a batch file, whose table is
       * /results), or that the deepest level that exists is a table (/tasks/x) */
      g_autofree char *dataset = deepest_dataset (file, object);
      g_autofree char *names = dataset == NULL ? root_names (file) : NULL;
      if (dataset != NULL)
        g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                     "no such object (%s is a table, with nothing below it)", dataset);
      else
        g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                     "no such object (the file holds %s)", names);
      return FALSE;
    }
  g_auto (H5Id) obj = H5Oopen (file, object, H5P_DEFAULT);
  if (obj < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot open");
  H5I_type_t type = H5Iget_type (obj);
  if (type == H5I_DATASET)
    return export_dataset (obj, out, error);
  if (type != H5I_GROUP)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "neither a group nor a dataset");
  gboolean series_store = sim_h5_object_exists (file, "/series/index");
  if (strspn (object, "/") == strlen (object)
      && (series_store || !sim_h5_object_exists (file, "/series")))
    {
      /* a run's root holds objects of different kinds (a table, the tasks, the series
       * store), a batch file's the results table: no one TSV; name the ones there are */
      g_autofree char *names = root_names (file);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                   "the file's root is no table: export one of its objects (%s)%s", names,
                   series_store ? ", or a series group such as /series/rank0" : "");
      return FALSE;
    }
  if (!is_summary_path (object))
    return sim_h5_export_series_group (obj, out, error);
  g_autoptr (GPtrArray) entries = sim_h5_summary_entries (obj, error);
  if (entries == NULL)
    return FALSE;
  put_summary_rows (entries, out);
  return TRUE;
}

H5Id
sim_h5_open_file (const char *path, GError **error)
{
  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      /* say what it is: a directory or a device is not "no such file" */
      GStatBuf st;
      const char *what = g_stat (path, &st) != 0          ? "no such file"
                         : S_ISDIR (st.st_mode)             ? "is a directory, not an HDF5 file"
                         : S_ISCHR (st.st_mode) || S_ISBLK (st.st_mode)
                           ? "is a device, not an HDF5 file"
                           : "is not a regular file (a FIFO or socket), not an HDF5 file";
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s", path, what);
      return H5I_INVALID_HID;
    }
  H5Id file = H5Fopen (path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0)
    sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "%s: cannot open as HDF5", path);
  return file;
}

gboolean
sim_h5out_export_tsv_in_process (const char *path, const char *object, FILE *out,
                                 GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL && out != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  sim_h5_silence ();
  g_auto (H5Id) file = sim_h5_open_file (path, error);
  if (file < 0)
    return FALSE;
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
sim_h5out_read_text_attr_in_process (const char *path, const char *object, const char *name,
                                     GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL && name != NULL, NULL);
  sim_h5_silence ();
  g_auto (H5Id) file = g_file_test (path, G_FILE_TEST_IS_REGULAR)
                           ? H5Fopen (path, H5F_ACC_RDONLY, H5P_DEFAULT)
                           : H5I_INVALID_HID;
  if (file < 0)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_IO, "%s: cannot open as HDF5", path);
      return NULL;
    }
  g_auto (H5Id) obj = sim_h5_object_exists (file, object) ? H5Oopen (file, object, H5P_DEFAULT)
                                                    : H5I_INVALID_HID;
  if (obj < 0 || H5Aexists (obj, name) <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                   "%s: %s: no attribute '%s'", path, object, name);
      return NULL;
    }
  g_auto (H5Id) attr = H5Aopen (obj, name, H5P_DEFAULT);
  char *text = attr >= 0 ? sim_h5_read_string (attr, TRUE, error) : NULL;
  if (text == NULL)
    g_prefix_error (error, "%s: %s: attribute %s: ", path, object, name);
  return text;
}

/* What a guarded read (sim/h5out_guard.c) needs: the arguments of the in-process call. */
typedef struct
{
  const char *path, *object, *name;
} ReadArgs;

/* In the reader process: the export into memory, sent back as the payload. */
static gboolean
export_in_child (gpointer data, GString *payload, GError **error)
{
  const ReadArgs *a = data;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream (&text, &len);
  if (mem == NULL)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s: out of memory", a->path,
                   a->object);
      return FALSE;
    }
  gboolean ok = sim_h5out_export_tsv_in_process (a->path, a->object, mem, error);
  if (fclose (mem) != 0 && ok)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s: out of memory", a->path,
                   a->object);
      ok = FALSE;
    }
  if (ok)
    g_string_append_len (payload, text, (gssize) len);
  free (text);
  return ok;
}

gboolean
sim_h5out_export_tsv (const char *path, const char *object, FILE *out, GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL && out != NULL, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  ReadArgs a = { path, object, NULL };
  g_autoptr (GString) text = g_string_new (NULL);
  if (!sim_h5_guarded (path, object, export_in_child, &a, text, error))
    return FALSE;
  if (fwrite (text->str, 1, text->len, out) != text->len || fflush (out) != 0 || ferror (out))
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_IO, "%s: %s: write error: %s", path,
                   object, g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

static gboolean
attr_in_child (gpointer data, GString *payload, GError **error)
{
  const ReadArgs *a = data;
  g_autofree char *text = sim_h5out_read_text_attr_in_process (a->path, a->object, a->name, error);
  if (text != NULL)
    g_string_append (payload, text);
  return text != NULL;
}

char *
sim_h5out_read_text_attr (const char *path, const char *object, const char *name,
                          GError **error)
{
  g_return_val_if_fail (path != NULL && object != NULL && name != NULL, NULL);
  ReadArgs a = { path, object, name };
  g_autoptr (GString) text = g_string_new (NULL);
  g_autofree char *what = g_strdup_printf ("%s: attribute %s", object, name);
  if (!sim_h5_guarded (path, what, attr_in_child, &a, text, error))
    return NULL;
  return g_string_free (g_steal_pointer (&text), FALSE);
}
