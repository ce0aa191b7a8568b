/* sim/tempfiles.h — the files an interrupted process must not leave behind.
 *
 * Every output is written to a temporary "<path>.tmp.<pid>" and renamed onto its name only
 * when complete (sim/h5out.c, cli/). Those temporaries, and finished outputs that are only
 * kept when the whole command succeeds ("all or nothing": an HDF5 file without its chart),
 * are registered here while they exist; a SIGINT/SIGTERM handler (cli/interrupt.c) removes
 * them with sim_tempfiles_unlink_all(), which is async-signal-safe (it only reads a fixed
 * table of atomic pointers and calls unlink(2)).
 *
 * At most SIM_TEMPFILES_MAX paths at a time (a command has a handful); beyond that a path is
 * not registered (g_warning) and the file is still written. Register and forget from the
 * thread that writes the files (batch workers write none); the paths are copied.
 */
#pragma once

#include <glib.h>

#define SIM_TEMPFILES_MAX 32

/* Registers `path` (copied) for removal on interruption: a file, or a directory this
 * process created for its outputs (removed after the files, when they leave it empty). */
void sim_tempfiles_add (const char *path);

/* Forgets `path` (the file itself is left alone): it was renamed, removed, or is a finished
 * output now kept. A path not registered is a no-op. */
void sim_tempfiles_forget (const char *path);

/* Forgets every registered path (the command finished: its outputs stay). */
void sim_tempfiles_forget_all (void);

/* Removes every registered file, then every registered directory left empty (unlink(2),
 * rmdir(2)). Async-signal-safe; the registry is left as it is. */
void sim_tempfiles_unlink_all (void);

/* The longest file name (bytes of one path component) a temporary name is given: NAME_MAX
 * of Linux's file systems. */
#define SIM_TEMPFILES_NAME_MAX 255

/* "<path>.tmp.<pid><suffix>" (`suffix` may be NULL), registered; where that name would be
 * longer than SIM_TEMPFILES_NAME_MAX, "<the name's first bytes>~<n>.tmp.<pid><suffix>" in
 * the same directory (n: a serial number of the process). Caller frees the string and calls
 * sim_tempfiles_forget() once the file is renamed or removed. */
char *sim_tempfiles_new_path (const char *path, const char *suffix);

/* A command's outputs written all or nothing: each under a staged name
 * (sim_tempfiles_new_path, registered) and renamed onto its path only when every one is
 * complete (sim_staged_commit), so an earlier file of that name stays as it was until a
 * complete new one replaces it, whatever fails or interrupts before. */
typedef struct SimStaged SimStaged;

/* An empty set. Free with sim_staged_free. */
SimStaged *sim_staged_new (void);
/* Adds `path` (copied): returns the staged name to write it under ("<path>.tmp.<pid><ext>",
 * `ext` may be NULL; owned by `s`). */
const char *sim_staged_add (SimStaged *s, const char *path, const char *ext);
/* Names the outputs in `error`'s message (may be NULL) by their paths, not their staged
 * names: a write that failed under "<path>.tmp.<pid><ext>" reads as `path`'s. */
void sim_staged_name_paths (const SimStaged *s, GError *error);
/* The path of the i-th output added (owned by `s`); NULL past the last. */
const char *sim_staged_path (const SimStaged *s, guint i);
/* Renames every staged file onto its path, in the order added. FALSE + G_FILE_ERROR naming
 * the file when a rename fails; then the ones renamed before stay and the others are removed
 * by sim_staged_free. */
gboolean sim_staged_commit (SimStaged *s, GError **error);
/* Removes the staged files not renamed (a failure before or during the commit), frees `s`.
 * NULL is a no-op. */
void sim_staged_free (SimStaged *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (SimStaged, sim_staged_free)

/* Writes `len` bytes of `data` to `path` atomically: to a registered temporary, renamed onto
 * `path` on success (unlike g_file_set_contents, whose temporary has a random name no handler
 * could know). FALSE + G_FILE_ERROR naming `path`; then no file is left. */
gboolean sim_tempfiles_set_contents (const char *path, const char *data, gsize len,
                                     GError **error);
