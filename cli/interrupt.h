/* cli/interrupt.h — SIGINT, SIGTERM and SIGHUP: never a half-written or temporary file.
 *
 * cli_interrupt_install() (main.c, before any command) installs one handler for the three
 * signals, unless a signal was ignored when the program started (nohup, a background job of
 * a shell without job control): that choice of the caller is kept. The handler first removes
 * every file registered in sim/tempfiles.h (temporaries being written, finished outputs of a
 * command that has not finished), then:
 *   - normally: writes "stepsim: interrupted by SIGINT; nothing written" to stderr and ends
 *     the process by the same signal with its default action (the shell reports 128 +
 *     signal number: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP);
 *   - while deferred (cli_interrupt_defer(TRUE): a batch running its scenarios): only
 *     records the signal and returns; the command notices it (cli_interrupt_pending()),
 *     writes what it has, says so, and ends with cli_interrupt_exit(). A second signal, or
 *     one after cli_interrupt_defer(FALSE), acts normally.
 * Everything in the handler is async-signal-safe (unlink, write, signal, raise).
 * SIGPIPE is ignored: a closed stdout loses what is printed there, never the files.
 */
#pragma once

#include <glib.h>

void cli_interrupt_install (void);

/* Quiet: the handler ends the process without its line on stderr (an MPI process other
 * than rank 0, whose rank 0 says it once; QA: printed by every process). Main thread. */
void cli_interrupt_quiet (gboolean on);

/* Turns deferred handling on or off (see above). Main thread. */
void cli_interrupt_defer (gboolean deferred);

/* The signal received while deferred (SIGINT, SIGTERM, SIGHUP), 0 when none. */
int cli_interrupt_pending (void);

/* "SIGINT", "SIGTERM", "SIGHUP" (or "signal N"); static. */
const char *cli_interrupt_name (int signo);

/* Blocks the three signals in the calling thread (worker threads: a signal is then handled
 * by the main thread, which owns the files). */
void cli_interrupt_block_here (void);

/* Removes the registered files and ends the process by `signo` (default action; never
 * returns). */
void cli_interrupt_exit (int signo) G_GNUC_NORETURN;
