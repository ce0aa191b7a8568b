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
