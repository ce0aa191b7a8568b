/* cli/scenario/output.h — checks on output paths, made before anything is simulated or written, so
 * a bad path is one early error and never a replaced device, link or input file. */
#pragma once

#include <glib.h>
#include "cli/scenario/input.h" /* cli_file_stem */

/* FALSE + an error naming `what` and `path` when the file name (its last component) is
 * longer than a file system takes (SIM_TEMPFILES_NAME_MAX bytes); TRUE otherwise. Part of
 * cli_output_check; alone where the directory does not exist yet (run --plot). */
gboolean cli_output_check_name (const char *what, const char *path, GError **error);

/* `path` must be non-empty and not end in '/' (a directory's name); if it exists it must
 * be a regular file (not a directory, device, FIFO or symbolic link: outputs are written to
 * a temporary file renamed onto the path) and not the same file as any of `inputs`
 * (NULL-terminated, may be NULL); its directory must exist and be writable (the temporary
 * file is created there). FALSE + G_FILE_ERROR naming `what` (e.g. "-o") and the path. */
gboolean cli_output_check (const char *what, const char *path, const char *const *inputs,
                           GError **error);

/* A directory for charts: if it exists it must be a writable directory, else its name
 * (trailing '/' allowed: "new/" is new) must be at most SIM_TEMPFILES_NAME_MAX bytes and its
 * parent must exist and be writable (it is created when the charts are written). */
gboolean cli_output_check_dir (const char *what, const char *dir, GError **error);

/* Checks n outputs at once (paths[i] may be NULL: absent, named whats[i] in messages):
 * each as cli_output_check() against `inputs`, and no two naming the same file. */
gboolean cli_outputs_check (const char *const *whats, const char *const *paths, guint n,
                            const char *const *inputs, GError **error);

/* The input files of a command, to check outputs against: a GPtrArray of owned paths kept
 * NULL-terminated, so `(const char *const *) inputs->pdata` is the `inputs` of the checks
 * above. Free with g_ptr_array_unref(). */
GPtrArray *cli_inputs_new (void);
/* Appends `path` (NULL: nothing) unless the list holds the same string already. */
void cli_inputs_add (GPtrArray *inputs, const char *path);
/* Appends what simulating the scenario `path` with `sets` (NULL-terminated --set
 * overrides, may be NULL) reads: the scenario file and its JSON files, hf_config and
 * deepspeed_config (cli_scenario_json_files). */
void cli_inputs_add_scenario (GPtrArray *inputs, const char *path, const char *const *sets);
/* The same for one of many override lists of scenario `path` (a sweep's points): *json
 * (the caller's, NULL at first, freed with g_strfreev) keeps the scenario's own JSON files
 * once read (*have_json then TRUE), for every `sets` that leaves them as the file has them
 * (cli_scenario_sets_name_json_files): the scenario file is read once, not once a point
 * (1,000 times on the main thread for a sweep of 1,000). */
void cli_inputs_add_point (GPtrArray *inputs, const char *path, const char *const *sets,
                           char ***json, gboolean *have_json);

/* A chart path must end in .png or .svg, in any case (the terminal follows the extension). */
gboolean cli_output_check_chart (const char *what, const char *path, GError **error);

/* Makes stdout a stream on descriptor 1 that keeps the errno of its first failed write, so
 * that cli_stdout_flush can say why (stdio keeps only that a write failed). Called once,
 * before anything is printed (main); buffered as stdout was (by line on a terminal).
 * Without glibc (fopencookie) stdout stays as it is. */
void cli_stdout_install (void);

/* Flushes stdout and says whether everything printed there so far was written: FALSE +
 * G_FILE_ERROR "cannot write to standard output: REASON" when a write failed (a full disk,
 * `> /dev/full`), REASON the first failed write's (cli_stdout_install), "write error" only
 * when stdout is not that stream and the failure's errno is gone.
 * A reader that went away is no failure (EPIPE, or an earlier failure into a pipe or socket:
 * `| head`, SIGPIPE being ignored by the commands that write files). The commands that
 * write files call it before committing them, so that exit status 1 leaves none. */
gboolean cli_stdout_flush (GError **error);

/* Whether stdout and stderr are the same file (one terminal, `>F 2>&1`, one pipe): what is
 * printed on both reaches the reader twice. FALSE when either cannot be examined. */
gboolean cli_stdout_is_stderr (void);
