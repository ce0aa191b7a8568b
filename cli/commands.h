/* cli/commands.h — the subcommands of `stepsim`. Each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the exit status: 0 ok, 1 input or runtime error
 * (one message on stderr naming file, group and key), 2 usage error. */
#pragma once

#include <glib.h>

int cli_cmd_run (int argc, char **argv);
int cli_cmd_export (int argc, char **argv);
int cli_cmd_list (int argc, char **argv);
int cli_cmd_collective (int argc, char **argv);
int cli_cmd_compare (int argc, char **argv);
int cli_cmd_validate (int argc, char **argv);
int cli_cmd_batch (int argc, char **argv);
int cli_cmd_fit (int argc, char **argv);
int cli_cmd_plot (int argc, char **argv);

/* Prints "stepsim: <message>" to stderr. */
void cli_error (const char *message);
/* The message of a GOptionContext parse error of `command` ("run", "batch", …), GLib's
 * text with the command and where help is: "run: unknown option --bogus (see stepsim run
 * --help)". Caller frees. */
char *cli_option_error_message (const char *command, const GError *error);
/* g_option_context_parse (`ctx`, `argc`, `argv`, `error`) reading a short option's value
 * attached to it as getopt does ("-j2", "-oOUT.h5", after flags "-qoOUT.h5"), which GOption
 * alone reads as the option with the next argument as its value. `entries` is the table
 * added to `ctx` (NULL-terminated): a short option takes a value unless it is
 * G_OPTION_ARG_NONE or a G_OPTION_FLAG_NO_ARG callback. An argument that is another option's
 * value ("-o" "-jx"), or follows "--", is left as it is; a group with a character that is no
 * short option of `entries` (nor -h, -?) too, for GOption to refuse. On success `*argv`
 * keeps its array, holding the arguments left (its strings, none of them new), `*argc`
 * their count; FALSE + error (GOption's) otherwise, or G_OPTION_ERROR_BAD_VALUE naming the
 * option when a text value does not convert from the locale's encoding ("--set 'a.b=\xFF':
 * not valid text in this locale's encoding (UTF-8)") or a G_OPTION_ARG_FILENAME value is
 * empty ("--trace needs a non-empty name"): usage errors, as GOption's. */
gboolean cli_option_parse (GOptionContext *ctx, const GOptionEntry *entries, int *argc,
                           char ***argv, GError **error);
/* `value`, the value of option `what` ("-o", "--trace"; NULL: not given) of a command that
 * writes a file there which cannot go to standard output (HDF5, written in place; a trace
 * beside the summary), names a file: "-" is refused. FALSE + G_OPTION_ERROR_BAD_VALUE
 * ("-o -: `kind`, it cannot be written to standard output; …"), a usage error (exit 2) as
 * cli_option_parse's, ending with `stdout_hint` (may be NULL): what writes to standard
 * output instead ("--csv - or --tsv - writes the results there"). */
gboolean cli_option_check_file_output (const char *what, const char *value, const char *kind,
                                       const char *stdout_hint, GError **error);
