/* cli/interrupt.c — signal handling; see interrupt.h.
 *
 * Ending by the signal itself (not exit(130)) tells a calling shell the command was
 * interrupted, so a script's loop stops too (the convention of "Proper handling of SIGINT/
 * SIGQUIT", M. Cracauer, https://www.cons.org/cracauer/sigint.html); the exit status the
 * shell reports is then 128 + the signal number.
 */
#include "config.h"
#include "cli/interrupt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "sim/tempfiles.h"

static const int signals[] = { SIGINT, SIGTERM, SIGHUP };
static volatile sig_atomic_t deferred;
static volatile sig_atomic_t pending;
static volatile sig_atomic_t quiet;

const char *
cli_interrupt_name (int signo)
{
  switch (signo)
    {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

static void
say (const char *s)
{
  ssize_t r = write (STDERR_FILENO, s, strlen (s)); /* strlen is async-signal-safe */
  (void) r;
}

static void end_by (int signo) G_GNUC_NORETURN;

static void
end_by (int signo)
{
  signal (signo, SIG_DFL);
  sigset_t set;
  sigemptyset (&set);
  sigaddset (&set, signo);
  pthread_sigmask (SIG_UNBLOCK, &set, NULL);
  raise (signo);
  _exit (128 + signo); /* not reached: the default action of the three signals ends us */
}

static void
on_signal (int signo)
{
  sim_tempfiles_unlink_all ();
  if (deferred && !pending)
    {
      pending = signo;
      return;
    }
  if (!quiet)
    {
      say ("stepsim: interrupted by ");
      say (cli_interrupt_name (signo));
      say ("; nothing written\n");
    }
  end_by (signo);
}

void
cli_interrupt_install (void)
{
  /* A reader that closes our stdout early (`stepsim run … | head -1`) must not end the
   * run before it writes its files: SIGPIPE's default action killed it at the summary's
   * first line, the HDF5, chart and trace unwritten. Ignored, the write fails with EPIPE
   * (stdio drops it) and the command goes on. */
  signal (SIGPIPE, SIG_IGN);
  for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
    {
      struct sigaction old, sa;
      if (sigaction (signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        continue; /* ignored by whoever started us: keep it so */
      memset (&sa, 0, sizeof sa);
      sa.sa_handler = on_signal;
      sigemptyset (&sa.sa_mask);
      for (guint j = 0; j < G_N_ELEMENTS (signals); j++)
        sigaddset (&sa.sa_mask, signals[j]); /* one handler at a time */
      sa.sa_flags = SA_RESTART;
      sigaction (signals[i], &sa, NULL);
    }
}

void
cli_interrupt_quiet (gboolean on)
{
  quiet = on;
}

void
cli_interrupt_defer (gboolean on)
{
  deferred = on;
}

int
cli_interrupt_pending (void)
{
  return pending;
}

void
cli_interrupt_block_here (void)
{
  sigset_t set;
  sigemptyset (&set);
  for (guint i = 0; i < G_N_ELEMENTS (signals); i++)
    sigaddset (&set, signals[i]);
  pthread_sigmask (SIG_BLOCK, &set, NULL);
}

void
cli_interrupt_exit (int signo)
{
  fflush (stdout);
  fflush (stderr);
  sim_tempfiles_unlink_all ();
  end_by (signo);
}
