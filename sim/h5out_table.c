/* sim/h5out_table.c — writes a SimTable (sim/table.h) to HDF5 as one compound dataset,
 * the results table of a batch (doc/hdf5-layout.md, "Batch files").
 *
 * Layout: root string attributes given by the caller; `dataset` (e.g. "/results") a 1-D
 * chunked, extendible dataset of a packed compound type with one member per column, in
 * column order: H5T_IEEE_F64LE for double columns, variable-length UTF-8 strings for text
 * columns; attribute "unit_<column>" (UTF-8 string) for every double column. Rows are
 * written in blocks of TASK_BLOCK. In memory each member takes 8 bytes (a double or a
 * char *), so the native row is n_columns × 8 bytes.
 *
 * Invariants: as sim/h5out.c (g_auto handles, atomic rename, no timestamps, creation order
 * tracked), so the same table gives the same bytes.
 */
#include "config.h"
#include "sim/h5out.h"

#include <hdf5.h>
#include <string.h>
#include <unistd.h>
#include "sim/h5out-private.h"
#include "sim/tempfiles.h"

/* The row type: packed file layout or native layout (8 bytes per member). */
static H5Id
table_type (const SimTable *t, gboolean file, H5Id str)
{
  guint n = sim_table_n_columns (t);
  size_t size = 0;
  for (guint c = 0; c < n; c++)
    size += file ? H5Tget_size (sim_table_column_kind (t, c) == SIM_TABLE_TEXT
                                   ? str : H5T_IEEE_F64LE) : 8;
  H5Id type = H5Tcreate (H5T_COMPOUND, MAX (size, (size_t) 1));
  size_t off = 0;
  for (guint c = 0; c < n && type >= 0; c++)
    {
      gboolean text = sim_table_column_kind (t, c) == SIM_TABLE_TEXT;
      H5Id mt = text ? str : (file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE);
      if (H5Tinsert (type, sim_table_column_name (t, c), off, mt) < 0)
        {
          sim_h5_close (type);
          type = H5I_INVALID_HID;
        }
      off += file ? H5Tget_size (mt) : 8;
    }
  return type;
}

/* Fills `buf` with rows [first, first+count): doubles, or borrowed string pointers. */
static void
fill_block (const SimTable *t, guint first, guint count, char *buf)
{
  guint n = sim_table_n_columns (t);
  for (guint r = 0; r < count; r++)
    for (guint c = 0; c < n; c++)
      {
        char *cell = buf + ((gsize) r * n + c) * 8;
        if (sim_table_column_kind (t, c) == SIM_TABLE_TEXT)
          {
            const char *s = sim_table_get_text (t, first + r, c);
            memcpy (cell, &s, sizeof s);
          }
        else
          {
            double v = sim_table_get_double (t, first + r, c);
            memcpy (cell, &v, sizeof v);
          }
      }
}

gboolean
sim_h5_write_table_rows (SimH5Writer *w, const char *dataset, const SimTable *t,
                         GError **error)
{
  g_auto (H5Id) str = sim_h5_vlstr_type ();
  g_auto (H5Id) ftype = str >= 0 ? table_type (t, TRUE, str) : H5I_INVALID_HID;
  g_auto (H5Id) mtype = str >= 0 ? table_type (t, FALSE, str) : H5I_INVALID_HID;
  if (ftype < 0 || mtype < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot build the row type of %s",
                        dataset);
  guint n = sim_table_n_rows (t);
  g_auto (H5Id) d = sim_h5_create_extendible (w, dataset, ftype,
                                              sim_h5_chunk_for (n, TASK_BLOCK), error);
  if (d < 0)
    return FALSE;
  gsize row_bytes = MAX (sim_table_n_columns (t), 1u) * 8;
  g_autofree char *buf = g_malloc0 (row_bytes * MAX (1u, MIN (n, (guint) TASK_BLOCK)));
  for (guint off = 0; off < n; off += TASK_BLOCK)
    {
      guint count = MIN ((guint) TASK_BLOCK, n - off);
      fill_block (t, off, count, buf);
      if (!sim_h5_append_block (d, mtype, off, count, buf, error))
        {
          g_prefix_error (error, "%s: ", dataset);
          return FALSE;
        }
    }
  for (guint c = 0; c < sim_table_n_columns (t); c++)
    if (sim_table_column_kind (t, c) == SIM_TABLE_DOUBLE)
      {
        g_autofree char *name = g_strconcat ("unit_", sim_table_column_name (t, c), NULL);
        if (!sim_h5_write_str_attr (d, name, sim_table_column_unit (t, c), error))
          return FALSE;
      }
  return TRUE;
}

gboolean
sim_h5out_write_table (const char *path, const char *dataset, const SimTable *table,
                       const char *const *root_attrs, GError **error)
{
  g_return_val_if_fail (path != NULL && dataset != NULL && dataset[0] == '/', FALSE);
  g_return_val_if_fail (table != NULL && sim_table_n_columns (table) > 0, FALSE);
  g_return_val_if_fail (error == NULL || *error == NULL, FALSE);
  sim_h5_silence ();
  g_autofree char *tmp = sim_tempfiles_new_path (path, NULL);
  SimH5Writer w = { H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID };
  gboolean ok = sim_h5_writer_open (&w, tmp, error);
  for (guint i = 0; ok && root_attrs != NULL && root_attrs[i] != NULL; i += 2)
    ok = sim_h5_write_str_attr (w.file, root_attrs[i],
                                root_attrs[i + 1] != NULL ? root_attrs[i + 1] : "", error);
  g_autofree char *parent = g_path_get_dirname (dataset);
  ok = ok && sim_h5_ensure_groups (&w, parent, error)
       && sim_h5_write_table_rows (&w, dataset, table, error);
  return sim_h5_writer_finish (&w, ok, tmp, path, error);
}
