/* sim/h5out-private.h — helpers shared by the HDF5 files of sim/: the writing primitives
 * (h5out_writer.c), the writer of runs (h5out.c), the TSV export (h5out_export.c,
 * h5out_series.c), the typed reads (h5out_read.c) and the tables (h5out_table.c).
 * Not a public header: nothing outside sim/h5out*.c includes it.
 *
 * It does not include hdf5.h itself (only sim/h5out*.c may, tests/layering.sh): include
 * <hdf5.h> before this header.
 *
 * Invariants every user keeps: each hid_t lives in a g_auto (H5Id) variable so it is closed
 * on every path; files are created through SimH5Writer (creation order tracked and indexed,
 * no object timestamps, UTF-8 link names) and committed by sim_h5_writer_finish, which
 * renames "<path>.tmp.<pid>" onto the target only after a successful close.
 */
#pragma once

#include <glib.h>
#include <stdio.h>
#include "sim/h5out.h"

#ifndef H5_VERS_MAJOR
#error "include <hdf5.h> before sim/h5out-private.h"
#endif

enum
{
  BLOCK = 4096,      /* doubles per write block and largest chunk of a series dataset */
  TASK_BLOCK = 1024, /* rows per write block and largest chunk of /tasks and tables */
  MIN_CHUNK = 16,
  SERIES_BLOCK = 65536, /* points per write block and largest chunk of /series/time, value */
};

typedef hid_t H5Id;

/* Closes any kind of HDF5 handle; invalid ids are ignored. */
void sim_h5_close (H5Id id);
G_DEFINE_AUTO_CLEANUP_FREE_FUNC (H5Id, sim_h5_close, H5I_INVALID_HID)

/* Sets `error` (SIM_H5OUT_ERROR, `code`) to the formatted context plus the innermost HDF5
 * message, and clears HDF5's error stack. Always returns FALSE. */
gboolean sim_h5_fail (GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (3, 4);
/* Switches HDF5's automatic error printing off (errors become GErrors). */
void sim_h5_silence (void);
/* A variable-length UTF-8 string type; caller closes. */
H5Id sim_h5_vlstr_type (void);

typedef struct
{
  H5Id file;
  H5Id gcpl; /* groups: creation order tracked + indexed, no timestamps */
  H5Id lcpl; /* links: UTF-8 names */
} SimH5Writer;

/* Creates `tmp` with the property lists above. FALSE + SIM_H5OUT_ERROR_IO. */
gboolean sim_h5_writer_open (SimH5Writer *w, const char *tmp, GError **error);
/* Closes everything; reports a failing H5Fclose only when `ok` (the first error wins). */
gboolean sim_h5_writer_close (SimH5Writer *w, gboolean ok, GError **error);
/* Closes, then renames `tmp` onto `path` when everything succeeded; otherwise removes `tmp`
 * and prefixes the error with "writing <path>: ". Returns the final success. */
gboolean sim_h5_writer_finish (SimH5Writer *w, gboolean ok, const char *tmp, const char *path,
                               GError **error);
/* A scalar variable-length UTF-8 string attribute. */
gboolean sim_h5_write_str_attr (H5Id obj, const char *name, const char *value, GError **error);
/* Creates every missing group of the absolute path `group` ("/series/rank0/memory"). */
gboolean sim_h5_ensure_groups (SimH5Writer *w, const char *group, GError **error);
/* The chunk size for `n` elements: n rounded up to MIN_CHUNK, at most `max`. */
hsize_t sim_h5_chunk_for (gsize n, gsize max);
/* An empty 1-D dataset of `ftype` that can grow without limit. Caller closes. */
H5Id sim_h5_create_extendible (SimH5Writer *w, const char *name, H5Id ftype, hsize_t chunk,
                               GError **error);
/* Grows `dset` to offset+count elements and writes `buf` (count elements of `mtype`). */
gboolean sim_h5_append_block (H5Id dset, H5Id mtype, hsize_t offset, hsize_t count,
                              const void *buf, GError **error);
/* Writes `t` as the 1-D compound dataset `dataset` (its parent group must exist): a member
 * per column (float64, or a variable-length UTF-8 string), attribute "unit_<column>" per
 * double column (h5out_table.c; doc/hdf5-layout.md "Batch files"). FALSE + error naming
 * the dataset. */
gboolean sim_h5_write_table_rows (SimH5Writer *w, const char *dataset, const SimTable *t,
                                  GError **error);

/* One /summary row in memory (doc/hdf5-layout.md): kind 0 a number (value, unit), 1 a text
 * (text; value NaN, unit ""). Strings borrowed when writing, allocated by the bounded
 * allocator when reading. */
typedef struct
{
  char *name;
  guint8 kind;
  double value;
  char *unit, *text;
} SimH5SummaryRow;
enum { SIM_H5_SUMMARY_NUMBER, SIM_H5_SUMMARY_TEXT };
/* The /summary row type: packed little-endian (`file`) or native SimH5SummaryRow; `str` a
 * variable-length string type. Caller closes; H5I_INVALID_HID on failure. */
H5Id sim_h5_summary_type (gboolean file, H5Id str);
/* The entries of the /summary table `dset` (the rows' count and size within the file before
 * anything is allocated, strings through the bounded allocator) as SimSummaryEntry in row
 * order, those `rel` selects: all when "", else the entry named `rel` (renamed "value") or
 * those below it ("rel/…", named relative to it). NULL + SIM_H5OUT_ERROR_FORMAT (damaged,
 * not the documented type) or _NOT_FOUND (nothing selected). */
GPtrArray *sim_h5_summary_table_entries (H5Id dset, const char *rel, GError **error);

/* When `file` stores /summary as a table and `object` is /summary or a path below it: sets
 * *is_table and returns sim_h5_summary_table_entries for that path (NULL + error when that
 * fails). Otherwise (a former-layout file: /summary a group) NULL with *is_table FALSE. */
GPtrArray *sim_h5_summary_view (H5Id file, const char *object, gboolean *is_table,
                                GError **error);

/* Reading and text output (h5out_export.c). */
/* Opens `path` read-only; H5I_INVALID_HID + SIM_H5OUT_ERROR_IO naming it ("no such file",
 * "is a directory, not an HDF5 file", "cannot open as HDF5", …). Caller closes. */
H5Id sim_h5_open_file (const char *path, GError **error);
/* The entries below the /summary group `group` as SimSummaryEntry (see
 * sim_h5out_read_summary); NULL + error naming the entry that is not a scalar or text. */
GPtrArray *sim_h5_summary_entries (H5Id group, GError **error);
/* Frees a SimSummaryEntry allocated here (name, unit, text and the struct). */
void sim_h5_summary_entry_free (gpointer entry);
/* The allocator of variable-length data read from a table (H5Pset_vlen_mem_manager): refuses
 * a size larger than *(hsize_t *) info, the file's size. */
void *sim_h5_vlen_alloc_bounded (size_t size, void *info);
void sim_h5_vlen_free (void *mem, void *info);
/* TRUE if every component of the absolute path `object` exists in `file`. */
gboolean sim_h5_object_exists (H5Id file, const char *object);
/* For the message of a path below `root` ("/series", "/summary") that names nothing: what
 * the deepest level of `rel` ("rank99/memory") that `paths` (the `n` entry paths under
 * `root`, "rank0/memory/weights"; NULL entries are "") reach holds: "/series holds
 * rank0…rank7 (8 ranks), links", "/series/rank0/allocated is one entry, with nothing below
 * it". Caller frees. */
char *sim_h5_missing_level (const char *root, const char *const *paths, gsize n,
                            const char *rel);
/* A string dataset or attribute (fixed or variable length, one element: scalar or 1-D of
 * one), newly allocated; NULL + error (SIM_H5OUT_ERROR_FORMAT) if `obj` does not hold one
 * string, or a fixed length larger than the file. */
char *sim_h5_read_string (H5Id obj, gboolean is_attr, GError **error);
/* `v` with the fewest digits that round-trip, locale-independent (h5out_series.c). */
void sim_h5_put_double (FILE *out, double v);
/* `s` (at most `max` bytes, stopping at NUL) with \\ \t \n \r escaped. */
void sim_h5_put_escaped (FILE *out, const char *s, gsize max);

/* Time series and numeric reading (h5out_series.c). Everything read from a file is
 * untrusted: counts and sizes are bounded by the file's size before they are allocated or
 * iterated, walks below a group by depth and by the file's size (link cycles). */
enum
{
  SIM_H5_MAX_DEPTH = 16,        /* groups below an exported one (stepsim nests 3) */
  SIM_H5_MIN_OBJECT_BYTES = 16, /* an object header is larger: bounds the groups of a walk */
};
/* The size of the file holding `obj` in bytes (0 when it cannot be read). */
hsize_t sim_h5_file_bytes (H5Id obj);
/* Names of the links of `group` (newly allocated strings), in creation order when the group
 * tracks it, else by name. NULL + error (SIM_H5OUT_ERROR_FORMAT) when the group cannot be
 * listed, claims more links than the file's size allows, or a link name is unreadable. */
GPtrArray *sim_h5_list_children (H5Id group, GError **error);
/* Opens the hard link `name` of `group`; a soft, external or unreadable link is refused
 * (H5I_INVALID_HID + SIM_H5OUT_ERROR_FORMAT naming `path`). Caller closes. */
H5Id sim_h5_open_child (H5Id group, const char *name, const char *path, GError **error);
/* FALSE + error naming `name` when the chunked dataset `d` has chunks of another rank than
 * `ndims` (its dataspace's) or an empty chunk dimension; contiguous and compact pass. */
gboolean sim_h5_check_layout (H5Id d, int ndims, const char *name, GError **error);
/* Enters a group at `depth` of a walk; FALSE + error naming `path` beyond SIM_H5_MAX_DEPTH or
 * when *visits (incremented) exceeds what the file's size can hold. */
gboolean sim_h5_walk_enter (H5Id group, guint depth, guint64 *visits, const char *path,
                            GError **error);
/* The numeric dataset `d` (scalar or 1-D, integer or float elements of at most 16 bytes) as
 * a GArray of doubles; `name` is for messages. NULL + error (SIM_H5OUT_ERROR_FORMAT)
 * otherwise, or when it claims more values than the file's bytes can hold. */
GArray *sim_h5_read_doubles_of (H5Id d, const char *name, GError **error);
/* The numeric dataset `name` below `loc` as doubles; NULL + SIM_H5OUT_ERROR_NOT_FOUND if
 * it does not exist. */
GArray *sim_h5_read_doubles (H5Id loc, const char *name, GError **error);
/* The series group `group` (or the one series it is) over the union of its change times. */
SimH5Timeline *sim_h5_timeline_of (H5Id group, GError **error);
/* Prints the series group `group` (or every series below it) as a step-function table over
 * the union of their change times. */
gboolean sim_h5_export_series_group (H5Id group, FILE *out, GError **error);

/* TRUE when `file` has the indexed series layout (/series/index) and `object` is /series or
 * a path below it other than its datasets index, time and value: a view of the series the
 * index names (doc/hdf5-layout.md, "/series"). */
gboolean sim_h5_is_series_view (H5Id file, const char *object);
/* The series `object` names in an indexed file (one series: "value"; a prefix: every
 * series below it, named relative to it, in index order) over the union of their change
 * times. NULL + SIM_H5OUT_ERROR_NOT_FOUND when it names none, _FORMAT for a damaged index
 * or point arrays (a count beyond the file's size or the arrays, times not increasing). */
SimH5Timeline *sim_h5_view_timeline (H5Id file, const char *object, GError **error);
/* The same series printed as sim_h5_export_series_group prints a group. */
gboolean sim_h5_export_series_view (H5Id file, const char *object, FILE *out, GError **error);

/* Guarded reading (h5out_guard.c). A read of `path` run by sim_h5_guarded in a child
 * process: fills `payload` and returns TRUE, or sets `error` (message complete, naming the
 * file and object). */
typedef gboolean (*SimH5GuardFunc) (gpointer data, GString *payload, GError **error);
/* Runs `func` (`data`) in a fork()ed child and appends its payload to `result`. A child that
 * dies by a signal (libhdf5 crashing on corrupt metadata), exits without an answer or runs
 * past the deadline (10 s plus 2 s per MiB of `path`; it is killed) is one
 * SIM_H5OUT_ERROR_FORMAT error "PATH: WHAT: …". The child's own error is passed on as is. */
gboolean sim_h5_guarded (const char *path, const char *what, SimH5GuardFunc func, gpointer data,
                         GString *result, GError **error);
