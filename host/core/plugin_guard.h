/* The plugin guard: what the daemon does when a plugin ends or clones the
 * process from inside handle().
 *
 * - exit() while a handler runs, on any thread but the host's own (the one
 *   that installed the guard: no plugin code runs there after that): one
 *   error line naming the binding, the plugin and the stream seq, then
 *   _exit(JET_GUARD_EXIT), so a supervisor sees a failure, not a clean
 *   stop.  The message was in hand: its next delivery is unexplained, a
 *   suspect (docs/retries.md).
 * - fork() in handle(): the parent logs it (a warning the first time per
 *   binding, debug after); a child that returns from handle() into the host
 *   writes one line to stderr and _exit()s at once, before touching any
 *   host state, so it never becomes a second consumer.
 *
 * _exit(), quick_exit() and signals cannot be caught: they are deaths, seen
 * by crash attribution.  A fault (SIGSEGV, SIGBUS, SIGILL, SIGFPE) says
 * where first: jet_guard_fatal_install().  Nothing is reported for exit() while no
 * handler runs (a plugin's own thread between messages): it is not
 * attributable. */
#ifndef JET_PLUGIN_GUARD_H
#define JET_PLUGIN_GUARD_H

#include <glib.h>

/* The exit status of a process a plugin ended with exit() in handle().  The
 * guard owns the number because it is the one that exits with it; the
 * command line lists it as JET_EXIT_PLUGIN (exit_codes.h, docs/cli.md), so
 * this layer never reads the command line's header (docs/architecture.md). */
#define JET_GUARD_EXIT 4

/* Installs the atexit() and pthread_atfork() hooks for this process; once,
 * after the plugins' init() and before the first handle() (atexit hooks run
 * last-registered first: one a plugin registers later runs before ours).
 * Until then jet_guard_enter/leave do nothing: the mock host and in-process
 * tests run plugins unguarded. */
void jet_guard_install(void);

/* A fault anywhere in the process writes one error line (the signal, the
 * thread, and the binding, plugin and stream seq when a handler was
 * running on it) and one line a stack frame to stderr, then dies of the
 * signal as it would have (the same exit status, a core where cores are
 * on).  The first thread to fault reports; others that fault meanwhile
 * wait for the process to die.  The main thread and every thread that has
 * run a handler take a stack of their own for it, so a stack overflow is
 * reported too.  Once, as early as possible; not under a sanitizer, whose
 * report it would replace (docs/cli.md, "When the host crashes"). */
void jet_guard_fatal_install(void);

/* Around one handle() call, on the calling thread.  binding and plugin must
 * outlive the call; fork_noted is the binding's "a fork was logged at
 * warning" flag (atomic, starts at 0). */
void jet_guard_enter(const char *binding, const char *plugin, guint64 stream_seq, gint *fork_noted);
/* In a forked child this does not return. */
void jet_guard_leave(void);

#endif
