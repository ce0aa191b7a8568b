/* sim/h5out_series.c — the time-series half of the TSV export (sim/h5out_export.c): reads
 * numeric datasets as doubles and prints series as one step-function table over the union
 * of their change times: the views of the indexed layout (/series/index over /series/time
 * and /series/value) and, for files of the former layout, a group of time/value pairs. Also
 * the helpers both halves use (children in creation order, hard-link paths, the bounded
 * allocator of variable-length strings). A leaf: h5out_export.c calls these, nothing here calls
 * back into it.
 *
 * Invariants: every hid_t lives in a g_auto (H5Id) variable; nothing iterates a hash table;
 * children are listed in creation order when the group tracks it (every group stepsim
 * writes does), else by name. Numbers are printed with the fewest digits that round-trip
 * (sim_text_format_double).
 */
#include "config.h"
#include "sim/h5out.h"

#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "sim/h5out-private.h"
#include "sim/text.h"

void
sim_h5_put_double (FILE *out, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  fputs (sim_text_format_double (buf, v), out);
}

/* Bytes of the file holding `obj`: every count or size read from the file is bounded by it
 * (a corrupt byte must not turn into a huge allocation). 0 if it cannot be read. */
hsize_t
sim_h5_file_bytes (H5Id obj)
{
  g_auto (H5Id) file = H5Iget_file_id (obj);
  hsize_t size = 0;
  if (file < 0 || H5Fget_filesize (file, &size) < 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      return 0;
    }
  return size;
}

/* Names of the links of `group`, in creation order when the group tracks it, else by name.
 * The link count comes from the file: it is bounded by the file's size and a link whose name
 * cannot be read ends the listing with an error, so a corrupt count is never iterated. */
GPtrArray *
sim_h5_list_children (H5Id group, GError **error)
{
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_auto (H5Id) gcpl = H5Gget_create_plist (group);
  unsigned flags = 0;
  H5_index_t idx = H5_INDEX_NAME;
  if (gcpl >= 0 && H5Pget_link_creation_order (gcpl, &flags) >= 0
      && (flags & H5P_CRT_ORDER_TRACKED))
    idx = H5_INDEX_CRT_ORDER;
  H5G_info_t info;
  if (H5Gget_info (group, &info) < 0)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot list the group");
      return NULL;
    }
  /* A link takes more than one byte of the file (a name and an object address). */
  if (info.nlinks > sim_h5_file_bytes (group))
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "the group claims %" G_GUINT64_FORMAT " links, more than the file's size allows",
                   (guint64) info.nlinks);
      return NULL;
    }
  for (hsize_t i = 0; i < info.nlinks; i++)
    {
      ssize_t len = H5Lget_name_by_idx (group, ".", idx, H5_ITER_INC, i, NULL, 0, H5P_DEFAULT);
      g_autofree char *name = len >= 0 ? g_malloc ((gsize) len + 1) : NULL;
      if (len < 0
          || H5Lget_name_by_idx (group, ".", idx, H5_ITER_INC, i, name, (size_t) len + 1,
                                 H5P_DEFAULT) != len
          || strlen (name) != (gsize) len)
        {
          sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                       "link %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT " is unreadable",
                       (guint64) i, (guint64) info.nlinks);
          return NULL;
        }
      g_ptr_array_add (names, g_steal_pointer (&name));
    }
  return g_steal_pointer (&names);
}

/* Opens the child `name` of `group`, which must be a hard link (stepsim writes no other
 * kind: a soft or external link in a corrupt or foreign file could name any object or
 * file). H5I_INVALID_HID + error naming `path` otherwise. */
H5Id
sim_h5_open_child (H5Id group, const char *name, const char *path, GError **error)
{
  H5L_info_t li;
  if (H5Lget_info (group, name, &li, H5P_DEFAULT) < 0)
    {
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "%s: unreadable link", path);
      return H5I_INVALID_HID;
    }
  if (li.type != H5L_TYPE_HARD)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: a %s link (a stepsim file holds only hard links)", path,
                   li.type == H5L_TYPE_SOFT ? "soft" : li.type == H5L_TYPE_EXTERNAL ? "external"
                                                                              : "user-defined");
      return H5I_INVALID_HID;
    }
  H5Id obj = H5Oopen (group, name, H5P_DEFAULT);
  if (obj < 0)
    sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "%s: cannot open", path);
  return obj;
}

/* Checks a walk below a group one level deeper: at most SIM_H5_MAX_DEPTH levels and, over
 * the whole walk, no more groups than the file could hold (each has its own object header,
 * more than SIM_H5_MIN_OBJECT_BYTES bytes), so a link cycle a corrupt address creates is
 * an error, not an endless or exponential walk. `visits` counts the groups entered. */
gboolean
sim_h5_walk_enter (H5Id group, guint depth, guint64 *visits, const char *path, GError **error)
{
  if (depth > SIM_H5_MAX_DEPTH)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: groups nested more than %d deep (a link cycle?)", path, SIM_H5_MAX_DEPTH);
      return FALSE;
    }
  if (++*visits > sim_h5_file_bytes (group) / SIM_H5_MIN_OBJECT_BYTES)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: more groups reached than the file can hold (a link cycle)", path);
      return FALSE;
    }
  return TRUE;
}

/* A chunked dataset's chunks must have the rank of its dataspace, each at least one
 * element: libhdf5 1.10 loops without end reading a scalar dataspace over 1-D chunks (one
 * flipped byte of the dataspace message). Contiguous and compact layouts pass. */
gboolean
sim_h5_check_layout (H5Id d, int ndims, const char *name, GError **error)
{
  g_auto (H5Id) dcpl = H5Dget_create_plist (d);
  if (dcpl < 0)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "%s: unreadable creation properties", name);
  if (H5Pget_layout (dcpl) != H5D_CHUNKED)
    return TRUE;
  hsize_t chunk[H5S_MAX_RANK];
  int rank = H5Pget_chunk (dcpl, H5S_MAX_RANK, chunk);
  gboolean ok = rank == ndims;
  for (int i = 0; ok && i < rank; i++)
    ok = chunk[i] >= 1;
  if (!ok)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s: chunks of rank %d in a dataspace of rank %d", name, rank, ndims);
    }
  return ok;
}

/* Reads the numeric dataset `d` (scalar or 1-D) as doubles; `name` is for messages. The
 * point count is checked against the file's size before anything is allocated: stepsim
 * writes every point, so a dataset cannot hold more values than the file has bytes. */
GArray *
sim_h5_read_doubles_of (H5Id d, const char *name, GError **error)
{
  g_auto (H5Id) type = H5Dget_type (d);
  g_auto (H5Id) space = H5Dget_space (d);
  H5T_class_t cls = type >= 0 ? H5Tget_class (type) : H5T_NO_CLASS;
  H5S_class_t scls = space >= 0 ? H5Sget_simple_extent_type (space) : H5S_NO_CLASS;
  int ndims = space >= 0 ? H5Sget_simple_extent_ndims (space) : -1;
  size_t esize = type >= 0 ? H5Tget_size (type) : 0;
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || (scls != H5S_SCALAR && scls != H5S_SIMPLE)
      || ndims < 0 || ndims > 1 || esize == 0 || esize > 16)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s is not a scalar or 1-D numeric dataset", name);
      return NULL;
    }
  if (!sim_h5_check_layout (d, ndims, name, error))
    return NULL;
  hssize_t n = H5Sget_simple_extent_npoints (space);
  hsize_t file_bytes = sim_h5_file_bytes (d);
  if (n < 0 || (hsize_t) n > file_bytes / esize || (hsize_t) n > G_MAXUINT)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s claims %" G_GINT64_FORMAT " values of %zu bytes, more than the file's %"
                   G_GUINT64_FORMAT " bytes hold", name, (gint64) n, esize, (guint64) file_bytes);
      return NULL;
    }
  GArray *a = g_array_sized_new (FALSE, TRUE, sizeof (double), (guint) n);
  g_array_set_size (a, (guint) n);
  if (n > 0 && H5Dread (d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, a->data) < 0)
    {
      g_array_unref (a);
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read %s", name);
      return NULL;
    }
  return a;
}

/* Reads the numeric dataset `name` below `loc` as doubles. */
GArray *
sim_h5_read_doubles (H5Id loc, const char *name, GError **error)
{
  if (H5Lexists (loc, name, H5P_DEFAULT) <= 0)
    {
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "no dataset %s", name);
      return NULL;
    }
  g_auto (H5Id) d = sim_h5_open_child (loc, name, name, error);
  if (d < 0)
    return NULL;
  if (H5Iget_type (d) != H5I_DATASET)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT, "%s is not a dataset", name);
      return NULL;
    }
  return sim_h5_read_doubles_of (d, name, error);
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

/* The layout's promise the merge relies on (doc/hdf5-layout.md): finite times, strictly
 * increasing. A NaN would also make the sort's comparison inconsistent. */
static gboolean
check_times (const SeriesCol *c, GError **error)
{
  for (guint i = 0; i < c->time->len; i++)
    {
      double t = g_array_index (c->time, double, i);
      if (!isfinite (t) || (i > 0 && !(t > g_array_index (c->time, double, i - 1))))
        {
          g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                       "series %s: time[%u] = %g is %s", c->name, i, t,
                       isfinite (t) ? "not after the time before it" : "not finite");
          return FALSE;
        }
    }
  return TRUE;
}

static SeriesCol *
read_series (H5Id group, const char *name, GError **error)
{
  SeriesCol *c = g_new0 (SeriesCol, 1);
  c->name = g_strdup (name);
  c->time = sim_h5_read_doubles (group, "time", error);
  c->value = c->time != NULL ? sim_h5_read_doubles (group, "value", error) : NULL;
  if (c->value == NULL)
    g_prefix_error (error, "series %s: ", name);
  if (c->value != NULL && c->value->len != c->time->len)
    g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                 "series %s: %u time%s but %u value%s", name, c->time->len,
                 c->time->len == 1 ? "" : "s", c->value->len, c->value->len == 1 ? "" : "s");
  if (c->value == NULL || c->value->len != c->time->len)
    {
      series_col_free (c);
      return NULL;
    }
  if (!check_times (c, error))
    {
      series_col_free (c);
      return NULL;
    }
  return c;
}

/* Appends every series below `group` (depth first, creation order) to `cols`, named by
 * their path relative to the exported group. */
static gboolean
collect_series (H5Id group, const char *prefix, guint depth, guint64 *visits, GPtrArray *cols,
                GError **error)
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
      if (H5Iget_type (obj) != H5I_GROUP)
        continue;
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
          if (!collect_series (obj, sub, depth + 1, visits, cols, error))
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

void
sim_h5_timeline_free (SimH5Timeline *t)
{
  if (t == NULL)
    return;
  g_clear_pointer (&t->time, g_array_unref);
  g_clear_pointer (&t->names, g_ptr_array_unref);
  g_clear_pointer (&t->values, g_ptr_array_unref);
  g_free (t);
}

SimH5Timeline *
sim_h5_timeline_new (void)
{
  SimH5Timeline *t = g_new0 (SimH5Timeline, 1);
  t->time = g_array_new (FALSE, FALSE, sizeof (double));
  t->names = g_ptr_array_new_with_free_func (g_free);
  t->values = g_ptr_array_new_with_free_func ((GDestroyNotify) g_array_unref);
  return t;
}

/* The columns sampled over the union of their change times: each holds the value of its
 * last point at or before the time, 0 before any (doc/hdf5-layout.md, "/series"). */
static SimH5Timeline *
merge (GPtrArray *cols)
{
  SimH5Timeline *m = sim_h5_timeline_new ();
  g_array_unref (m->time);
  m->time = union_times (cols);
  for (guint k = 0; k < cols->len; k++)
    {
      const SeriesCol *c = g_ptr_array_index (cols, k);
      GArray *v = g_array_sized_new (FALSE, FALSE, sizeof (double), m->time->len);
      guint next = 0;
      for (guint i = 0; i < m->time->len; i++)
        {
          double t = g_array_index (m->time, double, i);
          while (next < c->time->len && g_array_index (c->time, double, next) <= t)
            next++;
          double x = next == 0 ? 0.0 : g_array_index (c->value, double, next - 1);
          g_array_append_val (v, x);
        }
      g_ptr_array_add (m->names, g_strdup (c->name));
      g_ptr_array_add (m->values, v);
    }
  return m;
}

/* Writes the columns as a step-function table over the union of their change times, row by
 * row (a whole /series export is not held as one table: it can be columns × times long);
 * each column holds the value of its last point at or before the row's time, 0 before any. */
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
      sim_h5_put_double (out, t);
      for (guint k = 0; k < cols->len; k++)
        {
          const SeriesCol *c = g_ptr_array_index (cols, k);
          while (next[k] < c->time->len && g_array_index (c->time, double, next[k]) <= t)
            next[k]++;
          fputc ('\t', out);
          sim_h5_put_double (out, next[k] == 0 ? 0.0 : g_array_index (c->value, double, next[k] - 1));
        }
      fputc ('\n', out);
    }
}

/* The series of `group` as columns: itself one series ("value"), else every series below it. */
static GPtrArray *
series_cols (H5Id group, GError **error)
{
  g_autoptr (GPtrArray) cols = g_ptr_array_new_with_free_func (series_col_free);
  if (is_series_group (group))
    {
      SeriesCol *c = read_series (group, "value", error);
      if (c == NULL)
        return NULL;
      g_ptr_array_add (cols, c);
      return g_steal_pointer (&cols);
    }
  guint64 visits = 0;
  if (!collect_series (group, "", 0, &visits, cols, error))
    return NULL;
  if (cols->len == 0)
    {
      g_set_error_literal (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                           "group holds no series (time/value pairs)");
      return NULL;
    }
  return g_steal_pointer (&cols);
}

/* TRUE if every component of `object` exists (H5Lexists fails on a missing parent, so the
 * path is walked one level at a time) as a hard link: a soft or external link (stepsim
 * writes none) in a corrupt or foreign file could lead anywhere, another file included. */
gboolean
sim_h5_object_exists (H5Id file, const char *object)
{
  g_auto (GStrv) parts = g_strsplit (object, "/", -1);
  g_autoptr (GString) prefix = g_string_new (NULL);
  for (char **p = parts; *p != NULL; p++)
    {
      if (**p == '\0')
        continue;
      g_string_append_printf (prefix, "/%s", *p);
      H5L_info_t li;
      if (H5Lexists (file, prefix->str, H5P_DEFAULT) <= 0
          || H5Lget_info (file, prefix->str, &li, H5P_DEFAULT) < 0 || li.type != H5L_TYPE_HARD)
        {
          H5Eclear2 (H5E_DEFAULT);
          return FALSE;
        }
    }
  return TRUE;
}

/* libhdf5 allocates each variable-length string of a row with the length stored next to
 * its heap address, trusting it: one flipped byte asks for terabytes (and zeroes them).
 * This allocator refuses anything larger than the file (`info` points to its size), so the
 * read fails with an error instead. */
void *
sim_h5_vlen_alloc_bounded (size_t size, void *info)
{
  return size <= *(const hsize_t *) info ? malloc (MAX (size, (size_t) 1)) : NULL;
}

void
sim_h5_vlen_free (void *mem, void *info)
{
  (void) info;
  free (mem);
}

/* ---- the indexed layout: /series/index, /series/time, /series/value ---------------------- */

/* `object` ("/series/rank0/memory", "series//rank0/") as the path of series it names below
 * /series ("rank0/memory"; "" for /series itself), or NULL when it lies outside /series. */
static char *
series_rel (const char *object)
{
  g_auto (GStrv) parts = g_strsplit (object, "/", -1);
  g_autoptr (GPtrArray) kept = g_ptr_array_new ();
  for (char **p = parts; *p != NULL; p++)
    if (**p != '\0')
      g_ptr_array_add (kept, *p);
  if (kept->len == 0 || strcmp (g_ptr_array_index (kept, 0), "series") != 0)
    return NULL;
  g_ptr_array_add (kept, NULL);
  return g_strjoinv ("/", (char **) kept->pdata + 1);
}

gboolean
sim_h5_is_series_view (H5Id file, const char *object)
{
  g_autofree char *rel = series_rel (object);
  if (rel == NULL || strcmp (rel, "index") == 0 || strcmp (rel, "time") == 0
      || strcmp (rel, "value") == 0)
    return FALSE;
  gboolean indexed = sim_h5_object_exists (file, "/series/index");
  H5Eclear2 (H5E_DEFAULT);
  return indexed;
}

/* One /series/index row as read: strings allocated by the bounded allocator. */
typedef struct
{
  char *path, *unit;
  guint64 first, count;
} IndexRow;

/* The member `name` of the file's compound type `ftype` is of class `cls`. */
static gboolean
member_is (H5Id ftype, const char *name, H5T_class_t cls)
{
  int i = H5Tget_member_index (ftype, name);
  if (i < 0)
    return H5Eclear2 (H5E_DEFAULT), FALSE;
  g_auto (H5Id) mt = H5Tget_member_type (ftype, (unsigned) i);
  return mt >= 0 && H5Tget_class (mt) == cls
         && (cls != H5T_STRING || H5Tis_variable_str (mt) > 0);
}

/* "rank12" → 12; -1 for a name that is no rankN. */
static gint64
rank_number (const char *name)
{
  guint64 r = 0;
  if (!g_str_has_prefix (name, "rank") || name[4] == '\0'
      || !g_ascii_string_to_unsigned (name + 4, 10, 0, G_MAXINT32, &r, NULL)
      || (name[4] == '0' && name[5] != '\0'))
    return -1;
  return (gint64) r;
}

static gint
compare_gint64 (gconstpointer a, gconstpointer b)
{
  gint64 x = *(const gint64 *) a, y = *(const gint64 *) b;
  return x < y ? -1 : x > y;
}

/* `kids` (names) as a message's list: the rankN among them as their range ("rank0…rank7
 * (8 ranks)"; "rank0, rank8, …, rank56 (8 ranks)" when not consecutive), the others after
 * them by name, at most 6 (the first four, "…", the last; then the count). */
static char *
kids_text (GPtrArray *kids)
{
  g_autoptr (GArray) ranks = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autoptr (GPtrArray) other = g_ptr_array_new ();
  for (guint i = 0; i < kids->len; i++)
    {
      gint64 r = rank_number (g_ptr_array_index (kids, i));
      if (r >= 0)
        g_array_append_val (ranks, r);
      else
        g_ptr_array_add (other, g_ptr_array_index (kids, i));
    }
  GString *m = g_string_new (NULL);
  if (ranks->len > 2)
    {
      g_array_sort (ranks, compare_gint64);
      gint64 lo = g_array_index (ranks, gint64, 0), hi = g_array_index (ranks, gint64,
                                                                         ranks->len - 1);
      if (hi - lo + 1 == (gint64) ranks->len)
        g_string_append_printf (m, "rank%" G_GINT64_FORMAT "…rank%" G_GINT64_FORMAT, lo, hi);
      else
        for (guint i = 0; i < ranks->len; i++)
          if (i < 2 || i + 1 == ranks->len)
            g_string_append_printf (m, "%srank%" G_GINT64_FORMAT, i > 0 ? ", " : "",
                                    g_array_index (ranks, gint64, i));
          else if (i == 2)
            g_string_append (m, ", …");
      g_string_append_printf (m, " (%u ranks)", ranks->len);
    }
  else
    for (guint i = 0; i < ranks->len; i++)
      g_string_append_printf (m, "%srank%" G_GINT64_FORMAT, i > 0 ? ", " : "",
                              g_array_index (ranks, gint64, i));
  for (guint i = 0; i < other->len; i++)
    {
      if (other->len > 6 && i >= 4 && i + 1 < other->len)
        {
          if (i == 4)
            g_string_append (m, ", …");
          continue;
        }
      g_autofree char *name = sim_text_printable (g_ptr_array_index (other, i), 80);
      g_string_append_printf (m, "%s%s", m->len > 0 ? ", " : "", name);
    }
  if (other->len > 6)
    g_string_append_printf (m, " (%u in all)", other->len);
  return g_string_free (m, FALSE);
}

char *
sim_h5_missing_level (const char *root, const char *const *paths, gsize n, const char *rel)
{
  g_auto (GStrv) want = g_strsplit (rel, "/", -1);
  for (guint k = g_strv_length (want); k-- > 0;)
    {
      char *cut = want[k];
      want[k] = NULL; /* want[0..k) is the level looked at */
      g_autofree char *prefix = g_strjoinv ("/", want);
      want[k] = cut;
      gsize plen = strlen (prefix);
      g_autoptr (GPtrArray) kids = g_ptr_array_new_with_free_func (g_free);
      g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
      gboolean leaf = FALSE;
      for (gsize i = 0; i < n; i++)
        {
          const char *path = paths[i] != NULL ? paths[i] : "";
          const char *below = plen == 0 ? path
                              : strncmp (path, prefix, plen) == 0 && path[plen] == '/'
                                ? path + plen + 1 : NULL;
          leaf = leaf || (plen > 0 && strcmp (path, prefix) == 0);
          if (below == NULL || *below == '\0')
            continue;
          const char *slash = strchr (below, '/');
          char *kid = g_strndup (below, slash != NULL ? (gsize) (slash - below) : strlen (below));
          /* contains, then add: g_hash_table_add of an equal key would keep this one */
          if (!g_hash_table_contains (seen, kid))
            {
              g_hash_table_add (seen, kid);
              g_ptr_array_add (kids, kid);
            }
          else
            g_free (kid);
        }
      g_autofree char *level = plen > 0 ? g_strconcat (root, "/", prefix, NULL) : g_strdup (root);
      g_autofree char *shown = sim_text_printable (level, 200);
      if (kids->len == 0 && leaf)
        return g_strdup_printf ("%s is one entry, with nothing below it", shown);
      if (kids->len == 0)
        continue;
      g_autofree char *list = kids_text (kids);
      return g_strdup_printf ("%s holds %s", shown, list);
    }
  return g_strdup_printf ("%s holds nothing", root);
}

/* Reads /series/index whole (its rows × row size within the file before anything is
 * allocated, strings through the bounded allocator) and keeps the rows `rel` selects: the
 * series named `rel` ("value"), else those below it (named relative to it; by their paths
 * when `rel` is ""). Each selected row's points must lie within the `n_points` of the point
 * arrays. Appends SeriesCol with name set and time, value NULL. `*missing`: when `rel` is
 * not "" and selects none, what its deepest level holds (sim_h5_missing_level), else
 * NULL. */
static gboolean
select_index (H5Id file, const char *rel, hsize_t n_points, GPtrArray *cols, GArray *ranges,
              char **missing, GError **error)
{
  *missing = NULL;
  g_auto (H5Id) d = H5Dopen2 (file, "/series/index", H5P_DEFAULT);
  g_auto (H5Id) ftype = d >= 0 ? H5Dget_type (d) : H5I_INVALID_HID;
  g_auto (H5Id) space = d >= 0 ? H5Dget_space (d) : H5I_INVALID_HID;
  if (ftype < 0 || space < 0 || H5Tget_class (ftype) != H5T_COMPOUND
      || H5Sget_simple_extent_ndims (space) != 1 || !member_is (ftype, "path", H5T_STRING)
      || !member_is (ftype, "unit", H5T_STRING) || !member_is (ftype, "first", H5T_INTEGER)
      || !member_is (ftype, "count", H5T_INTEGER))
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                        "/series/index is not a 1-D table of path, unit, first, count");
  if (!sim_h5_check_layout (d, 1, "/series/index", error))
    return FALSE;
  hsize_t file_bytes = sim_h5_file_bytes (d);
  size_t frsize = H5Tget_size (ftype);
  hssize_t n = H5Sget_simple_extent_npoints (space);
  if (frsize == 0 || n < 0 || (hsize_t) n > file_bytes / frsize || (hsize_t) n > G_MAXUINT)
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT,
                        "/series/index claims %" G_GINT64_FORMAT " rows of %zu bytes, more "
                        "than the file's %" G_GUINT64_FORMAT " bytes hold", (gint64) n, frsize,
                        (guint64) file_bytes);
  g_auto (H5Id) str = sim_h5_vlstr_type ();
  g_auto (H5Id) mtype = H5Tcreate (H5T_COMPOUND, sizeof (IndexRow));
  g_auto (H5Id) dxpl = H5Pcreate (H5P_DATASET_XFER);
  g_autofree IndexRow *rows = g_new0 (IndexRow, MAX (n, 1));
  if (str < 0 || mtype < 0 || dxpl < 0
      || H5Tinsert (mtype, "path", offsetof (IndexRow, path), str) < 0
      || H5Tinsert (mtype, "unit", offsetof (IndexRow, unit), str) < 0
      || H5Tinsert (mtype, "first", offsetof (IndexRow, first), H5T_NATIVE_UINT64) < 0
      || H5Tinsert (mtype, "count", offsetof (IndexRow, count), H5T_NATIVE_UINT64) < 0
      || H5Pset_vlen_mem_manager (dxpl, sim_h5_vlen_alloc_bounded, &file_bytes,
                                  sim_h5_vlen_free, NULL) < 0
      || (n > 0 && H5Dread (d, mtype, H5S_ALL, H5S_ALL, dxpl, rows) < 0))
    return sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read /series/index");
  gboolean ok = TRUE;
  gsize rlen = strlen (rel);
  for (hssize_t i = 0; i < n && ok; i++)
    {
      const IndexRow *r = &rows[i];
      const char *path = r->path != NULL ? r->path : "";
      const char *name = NULL;
      if (rlen == 0)
        name = path;
      else if (strcmp (path, rel) == 0)
        name = "value";
      else if (strncmp (path, rel, rlen) == 0 && path[rlen] == '/')
        name = path + rlen + 1;
      if (name == NULL)
        continue;
      if (r->first > n_points || r->count > n_points - r->first)
        {
          g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                       "series %s: points %" G_GUINT64_FORMAT " + %" G_GUINT64_FORMAT
                       " lie beyond the %" G_GUINT64_FORMAT " of /series/time", path, r->first,
                       r->count, (guint64) n_points);
          ok = FALSE;
          break;
        }
      SeriesCol *c = g_new0 (SeriesCol, 1);
      c->name = g_strdup (name);
      g_ptr_array_add (cols, c);
      guint64 range[2] = { r->first, r->count };
      g_array_append_vals (ranges, range, 2);
    }
  if (ok && cols->len == 0 && rlen > 0)
    {
      g_autofree const char **paths = g_new0 (const char *, MAX (n, 1));
      for (hssize_t i = 0; i < n; i++)
        paths[i] = rows[i].path;
      *missing = sim_h5_missing_level ("/series", paths, (gsize) n, rel);
    }
  if (n > 0)
    H5Dvlen_reclaim (mtype, space, dxpl, rows);
  return ok;
}

/* The 1-D numeric dataset `d` of `n_points` values: [offset, offset + count) as doubles. */
static GArray *
read_span (H5Id d, const char *name, hsize_t offset, hsize_t count, GError **error)
{
  g_auto (H5Id) fspace = H5Dget_space (d);
  g_auto (H5Id) mspace = H5Screate_simple (1, &count, NULL);
  GArray *a = g_array_sized_new (FALSE, TRUE, sizeof (double), (guint) count);
  g_array_set_size (a, (guint) count);
  if (count > 0
      && (fspace < 0 || mspace < 0
          || H5Sselect_hyperslab (fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL) < 0
          || H5Dread (d, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, a->data) < 0))
    {
      g_array_unref (a);
      sim_h5_fail (error, SIM_H5OUT_ERROR_FORMAT, "cannot read %s", name);
      return NULL;
    }
  return a;
}

/* The point count of the 1-D numeric dataset `name` (checked as sim_h5_read_doubles_of
 * checks a series dataset: float or integer, 1-D, chunks of its rank, within the file). */
static H5Id
open_points (H5Id file, const char *name, hsize_t *n, GError **error)
{
  if (!sim_h5_object_exists (file, name))
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT, "no dataset %s", name);
      return H5I_INVALID_HID;
    }
  H5Id d = H5Dopen2 (file, name, H5P_DEFAULT);
  g_auto (H5Id) type = d >= 0 ? H5Dget_type (d) : H5I_INVALID_HID;
  g_auto (H5Id) space = d >= 0 ? H5Dget_space (d) : H5I_INVALID_HID;
  H5T_class_t cls = type >= 0 ? H5Tget_class (type) : H5T_NO_CLASS;
  size_t esize = type >= 0 ? H5Tget_size (type) : 0;
  hssize_t np = space >= 0 ? H5Sget_simple_extent_npoints (space) : -1;
  if ((cls != H5T_FLOAT && cls != H5T_INTEGER) || esize == 0 || esize > 16
      || H5Sget_simple_extent_ndims (space) != 1)
    {
      sim_h5_close (d);
      H5Eclear2 (H5E_DEFAULT);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s is not a 1-D numeric dataset", name);
      return H5I_INVALID_HID;
    }
  if (!sim_h5_check_layout (d, 1, name, error))
    return sim_h5_close (d), H5I_INVALID_HID;
  hsize_t file_bytes = sim_h5_file_bytes (d);
  if (np < 0 || (hsize_t) np > file_bytes / esize || (hsize_t) np > G_MAXUINT)
    {
      sim_h5_close (d);
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "%s claims %" G_GINT64_FORMAT " values of %zu bytes, more than the file's %"
                   G_GUINT64_FORMAT " bytes hold", name, (gint64) np, esize, (guint64) file_bytes);
      return H5I_INVALID_HID;
    }
  *n = (hsize_t) np;
  return d;
}

/* The series `object` (below /series) of an indexed file names, as columns. The points of
 * the selected rows are read as one span of each array (contiguous in a file stepsim wrote:
 * a prefix's series are stored together), then checked as read_series checks them. */
static GPtrArray *
view_cols (H5Id file, const char *object, GError **error)
{
  g_autofree char *rel = series_rel (object);
  hsize_t nt = 0, nv = 0;
  g_auto (H5Id) td = open_points (file, "/series/time", &nt, error);
  g_auto (H5Id) vd = td >= 0 ? open_points (file, "/series/value", &nv, error) : H5I_INVALID_HID;
  if (vd < 0)
    return NULL;
  if (nt != nv)
    {
      g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_FORMAT,
                   "/series/time holds %" G_GUINT64_FORMAT " points but /series/value %"
                   G_GUINT64_FORMAT, (guint64) nt, (guint64) nv);
      return NULL;
    }
  g_autoptr (GPtrArray) cols = g_ptr_array_new_with_free_func (series_col_free);
  g_autoptr (GArray) ranges = g_array_new (FALSE, FALSE, sizeof (guint64));
  g_autofree char *missing = NULL;
  if (!select_index (file, rel, nt, cols, ranges, &missing, error))
    return NULL;
  if (cols->len == 0)
    {
      /* what there is at the deepest level that exists (QA: "no such object" alone) */
      if (missing != NULL)
        g_set_error (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND, "no such object (%s)",
                     missing);
      else
        g_set_error_literal (error, SIM_H5OUT_ERROR, SIM_H5OUT_ERROR_NOT_FOUND,
                             "/series holds no series");
      return NULL;
    }
  guint64 lo = G_MAXUINT64, hi = 0;
  for (guint k = 0; k < cols->len; k++)
    {
      guint64 first = g_array_index (ranges, guint64, 2 * k);
      guint64 count = g_array_index (ranges, guint64, 2 * k + 1);
      lo = MIN (lo, first);
      hi = MAX (hi, first + count);
    }
  lo = MIN (lo, hi);
  g_autoptr (GArray) t = read_span (td, "/series/time", lo, hi - lo, error);
  g_autoptr (GArray) v = t != NULL ? read_span (vd, "/series/value", lo, hi - lo, error) : NULL;
  if (v == NULL)
    return NULL;
  for (guint k = 0; k < cols->len; k++)
    {
      SeriesCol *c = g_ptr_array_index (cols, k);
      guint64 first = g_array_index (ranges, guint64, 2 * k) - lo;
      guint count = (guint) g_array_index (ranges, guint64, 2 * k + 1);
      c->time = g_array_sized_new (FALSE, FALSE, sizeof (double), count);
      c->value = g_array_sized_new (FALSE, FALSE, sizeof (double), count);
      g_array_append_vals (c->time, &g_array_index (t, double, first), count);
      g_array_append_vals (c->value, &g_array_index (v, double, first), count);
      if (!check_times (c, error))
        return NULL;
    }
  return g_steal_pointer (&cols);
}

SimH5Timeline *
sim_h5_view_timeline (H5Id file, const char *object, GError **error)
{
  g_autoptr (GPtrArray) cols = view_cols (file, object, error);
  return cols != NULL ? merge (cols) : NULL;
}

gboolean
sim_h5_export_series_view (H5Id file, const char *object, FILE *out, GError **error)
{
  g_autoptr (GPtrArray) cols = view_cols (file, object, error);
  if (cols == NULL)
    return FALSE;
  put_merged (out, cols);
  return TRUE;
}

SimH5Timeline *
sim_h5_timeline_of (H5Id group, GError **error)
{
  g_autoptr (GPtrArray) cols = series_cols (group, error);
  return cols != NULL ? merge (cols) : NULL;
}

gboolean
sim_h5_export_series_group (H5Id group, FILE *out, GError **error)
{
  g_autoptr (GPtrArray) cols = series_cols (group, error);
  if (cols == NULL)
    return FALSE;
  put_merged (out, cols); /* one series: exactly its points */
  return TRUE;
}
