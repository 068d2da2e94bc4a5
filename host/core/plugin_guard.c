/* The plugin guard: plugin_guard.h has what it catches and why; docs/cli.md
 * (exit codes) the operator's view. */
#define _GNU_SOURCE   /* dladdr() and Dl_info */
#include "plugin_guard.h"
#include "log.h"
/* It exits with its own JET_GUARD_EXIT: the commands' header is above it. */

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* One per thread that has run a handler.  Slots are never freed: a thread
 * that ends gives its slot back for the next one, so there are at most as
 * many as threads ever ran handlers at once, and the atexit() hook can walk
 * them while other threads still run.  The fields are read from other
 * threads (atexit on another thread), hence the relaxed atomics. */
typedef struct Slot {
    struct Slot *next;
    gint owned;                 /* a thread holds it */
    gint busy;                  /* that thread is inside handle() */
    const char *binding, *plugin;
    guint64 seq;
    gint *fork_noted;
    void *alt_stack;            /* the fault handler's stack for its thread, or NULL */
} Slot;

static Slot *slots;                      /* the registry: grows at its head */
static gint fatal_taken;                 /* a thread is reporting a fatal signal */
static gint alt_stacks;                  /* the fault handler is installed: threads take a stack */
static void *alt_stack_new(void);
static void alt_stack_use(void *p);
static gint installed;
static pid_t host_pid;
static pthread_t host_thread;            /* the one that installed the guard */
/* Set by the atfork child hook: a store, the only thing allowed there. */
static volatile sig_atomic_t forked_child;

static void slot_release(gpointer data)
{
    Slot *s = data;
    if (s->alt_stack != NULL) {
        /* The next owner takes this stack: this thread, still running other
         * destructors, must not fault onto it too. */
        stack_t off = { .ss_flags = SS_DISABLE };
        sigaltstack(&off, NULL);
    }
    g_atomic_int_set(&s->busy, 0);
    g_atomic_int_set(&s->owned, 0);
}

static GPrivate slot_key = G_PRIVATE_INIT(slot_release);

static Slot *slot_get(void)
{
    Slot *s = g_private_get(&slot_key);
    if (G_LIKELY(s != NULL))
        return s;
    for (s = g_atomic_pointer_get(&slots); s != NULL; s = s->next)
        if (g_atomic_int_compare_and_exchange(&s->owned, 0, 1))
            break;
    if (s == NULL) {
        s = g_new0(Slot, 1);
        s->owned = 1;
        do
            s->next = g_atomic_pointer_get(&slots);
        while (!g_atomic_pointer_compare_and_exchange(&slots, s->next, s));
    }
    stack_t cur;
    if (g_atomic_int_get(&alt_stacks) && sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
        if (s->alt_stack == NULL)
            s->alt_stack = alt_stack_new();
        alt_stack_use(s->alt_stack);
    }
    g_private_set(&slot_key, s);
    return s;
}

typedef struct {
    const char *binding, *plugin;
    guint64 seq;
    gint *fork_noted;
} Snapshot;

static void slot_read(const Slot *s, Snapshot *out)
{
    out->binding = __atomic_load_n(&s->binding, __ATOMIC_RELAXED);
    out->plugin = __atomic_load_n(&s->plugin, __ATOMIC_RELAXED);
    out->seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);
    out->fork_noted = __atomic_load_n(&s->fork_noted, __ATOMIC_RELAXED);
}

void jet_guard_enter(const char *binding, const char *plugin, guint64 stream_seq, gint *fork_noted)
{
    if (!g_atomic_int_get(&installed))
        return;
    Slot *s = slot_get();
    __atomic_store_n(&s->binding, binding, __ATOMIC_RELAXED);
    __atomic_store_n(&s->plugin, plugin, __ATOMIC_RELAXED);
    __atomic_store_n(&s->seq, stream_seq, __ATOMIC_RELAXED);
    __atomic_store_n(&s->fork_noted, fork_noted, __ATOMIC_RELAXED);
    __atomic_store_n(&s->busy, 1, __ATOMIC_RELEASE);
}

/* --- the forked child: async-signal-safe only (no malloc, no stdio, no
 * locks: other threads' locks were copied held) ----------------------------- */

typedef struct {
    char buf[1024];
    size_t len;
} Line;

/* Leaves room for the closing quote and newline. */
static void put_c(Line *l, char c)
{
    if (l->len < sizeof l->buf - 2)
        l->buf[l->len++] = c;
}

static void put_s(Line *l, const char *s)
{
    for (; s != NULL && *s; s++)
        put_c(l, *s);
}

/* As jet_logv quotes a message. */
static void put_q(Line *l, const char *s)
{
    for (; s != NULL && *s; s++) {
        if (*s == '"' || *s == '\\')
            put_c(l, '\\'), put_c(l, *s);
        else if (*s == '\n')
            put_c(l, '\\'), put_c(l, 'n');
        else
            put_c(l, *s);
    }
}

static void put_u(Line *l, guint64 v, int width)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n < width)
        digits[n++] = '0';
    while (n > 0)
        put_c(l, digits[--n]);
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian): gmtime_r is
 * not async-signal-safe. */
static void civil_from_days(gint64 z, gint64 *y, unsigned *m, unsigned *d)
{
    z += 719468;
    gint64 era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (gint64)yoe + era * 400 + (*m <= 2);
}

static void put_ts(Line *l)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    gint64 y;
    unsigned mo, d;
    civil_from_days((gint64)ts.tv_sec / 86400, &y, &mo, &d);
    guint64 sod = (guint64)((gint64)ts.tv_sec % 86400);
    put_s(l, "ts=");
    put_u(l, (guint64)y, 4), put_c(l, '-'), put_u(l, mo, 2), put_c(l, '-'), put_u(l, d, 2);
    put_c(l, 'T');
    put_u(l, sod / 3600, 2), put_c(l, ':'), put_u(l, sod / 60 % 60, 2), put_c(l, ':'), put_u(l, sod % 60, 2);
    put_c(l, '.'), put_u(l, (guint64)ts.tv_nsec / 1000000, 3), put_c(l, 'Z');
}

/* Closes the message's quote and writes the line to stderr. */
static void put_end(Line *l)
{
    l->buf[l->len++] = '"';
    l->buf[l->len++] = '\n';
    for (size_t off = 0; off < l->len;) {
        ssize_t n = write(STDERR_FILENO, l->buf + off, l->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
}

static void put_x(Line *l, guintptr v)
{
    static const char hex[] = "0123456789abcdef";
    char digits[2 * sizeof v];
    int n = 0;
    do {
        digits[n++] = hex[v & 0xf];
        v >>= 4;
    } while (v > 0);
    put_s(l, "0x");
    while (n > 0)
        put_c(l, digits[--n]);
}

G_GNUC_NORETURN static void child_returned(void)
{
    Slot *s = g_private_get(&slot_key);
    Line l = { .len = 0 };
    put_ts(&l);
    put_s(&l, " level=error");
    if (s != NULL && s->binding != NULL)
        put_s(&l, " binding="), put_s(&l, s->binding);
    put_s(&l, " event=plugin-fork-returned msg=\"pid ");
    put_u(&l, (guint64)getpid(), 1);
    put_s(&l, ": a process forked by plugin ");
    put_q(&l, s != NULL ? s->plugin : "(unknown)");
    put_s(&l, " in handle() (stream seq ");
    put_u(&l, s != NULL ? s->seq : 0, 1);
    put_s(&l, ") returned into the host; it exits ");
    put_u(&l, JET_GUARD_EXIT, 1);
    put_s(&l, " now, touching nothing of the host's");
    put_end(&l);
    _exit(JET_GUARD_EXIT);
}

void jet_guard_leave(void)
{
    if (G_UNLIKELY(forked_child))
        child_returned();
    if (!g_atomic_int_get(&installed))
        return;
    Slot *s = g_private_get(&slot_key);
    if (s != NULL)
        __atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
}

/* --- the hooks ---------------------------------------------------------------- */

static void fork_child(void)
{
    forked_child = 1;
    fatal_taken = 0;   /* a report the parent was writing is not the child's */
}

/* Runs in the parent after every fork() of this process (not posix_spawn,
 * which clones without running atfork handlers).  A fork to exec is
 * legitimate, so only the first one per binding is a warning. */
static void fork_parent(void)
{
    int saved = errno;
    Slot *s = g_private_get(&slot_key);
    if (s != NULL && g_atomic_int_get(&s->busy)) {
        Snapshot snap;
        slot_read(s, &snap);
        gboolean first = snap.fork_noted == NULL || g_atomic_int_compare_and_exchange(snap.fork_noted, 0, 1);
        jet_log(first ? JET_LOG_WARNING : JET_LOG_DEBUG, snap.binding, "plugin-forked",
                "plugin %s called fork() in handle() on stream seq %" G_GUINT64_FORMAT
                ": a child that returns from handle() into the host exits %d at once; fork only to exec%s",
                snap.plugin, snap.seq, JET_GUARD_EXIT,
                first ? " (further forks by this binding are logged at debug level)" : "");
    }
    errno = saved;
}

static void report_exit(const Slot *s, gboolean own_thread)
{
    Snapshot snap;
    slot_read(s, &snap);
    if (own_thread)
        jet_log(JET_LOG_ERROR, snap.binding, "plugin-exit",
                "plugin %s called exit() in handle() on stream seq %" G_GUINT64_FORMAT
                "; ending the process with status %d (a plugin ended the process); the message is "
                "unacknowledged and its next delivery is a suspect",
                snap.plugin, snap.seq, JET_GUARD_EXIT);
    else
        jet_log(JET_LOG_ERROR, snap.binding, "plugin-exit",
                "exit() was called on a plugin's own thread while plugin %s handled stream seq %"
                G_GUINT64_FORMAT "; ending the process with status %d (a plugin ended the process); the "
                "message is unacknowledged and its next delivery is a suspect",
                snap.plugin, snap.seq, JET_GUARD_EXIT);
}

/* exit() with a handler running: the process would end with the plugin's
 * status (often 0) and no word of why.  Not on the host's own thread: no
 * plugin code runs there once the guard is installed, so an exit() there is
 * the host's (its main() returning), with the host's status. */
static void at_exit(void)
{
    if (forked_child || getpid() != host_pid || pthread_equal(pthread_self(), host_thread))
        return;
    Slot *own = g_private_get(&slot_key);
    if (own != NULL && g_atomic_int_get(&own->busy)) {
        report_exit(own, TRUE);
        _exit(JET_GUARD_EXIT);
    }
    guint n = 0;
    for (Slot *s = g_atomic_pointer_get(&slots); s != NULL; s = s->next) {
        if (g_atomic_int_get(&s->owned) && g_atomic_int_get(&s->busy)) {
            report_exit(s, FALSE);
            n++;
        }
    }
    if (n > 0)
        _exit(JET_GUARD_EXIT);
}

void jet_guard_install(void)
{
    static gsize once = 0;
    if (g_once_init_enter(&once)) {
        host_pid = getpid();
        host_thread = pthread_self();
        atexit(at_exit);
        pthread_atfork(NULL, fork_parent, fork_child);
        g_atomic_int_set(&installed, 1);
        g_once_init_leave(&once, 1);
    }
}

/* --- fatal signals -------------------------------------------------------------
 * A fault kills the process whatever we do; what it can still do is say
 * where, so a crash seen once (a supervisor's restart, a CI run) is not a
 * mystery.  Async-signal-safe as far as glibc allows up to the first
 * line: no malloc (the thread key is made at install), no stdio, no locks
 * of ours.  The frames after it are best effort: backtrace() loads its
 * unwinder at its first call (allocating), and dladdr() reads the
 * loader's list of objects, which a fault inside dlopen() may have left
 * half-made; an alarm ends a report that hangs. */

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };

/* The thread that reports; the others that fault meanwhile wait for the
 * process to die of the first one. */
static pthread_t fatal_reporter;   /* the thread that took the report (0 until then) */

/* An alternate stack for the handler: a thread whose own stack overflowed
 * could not run it.  Mapped, not allocated: untouched pages cost no RSS.
 * A page that faults on each side: a large frame that jumps a thread's
 * guard page must not land in it silently. */
#define ALT_STACK_SIZE (64 * 1024)
#define ALT_GUARD 4096

static void *alt_stack_new(void)
{
    char *p = mmap(NULL, ALT_STACK_SIZE + 2 * ALT_GUARD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p + ALT_GUARD, ALT_STACK_SIZE, PROT_READ | PROT_WRITE) != 0) {
        munmap(p, ALT_STACK_SIZE + 2 * ALT_GUARD);
        return NULL;
    }
    return p + ALT_GUARD;
}

static void alt_stack_use(void *p)
{
    if (p == NULL)
        return;
    stack_t st = { .ss_sp = p, .ss_size = ALT_STACK_SIZE, .ss_flags = 0 };
    sigaltstack(&st, NULL);
}

static const char *fatal_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    default: return "a fatal signal";
    }
}

/* pc is a return address (but for frame 0 and the interrupted one): the
 * call is the instruction before it, hence OFFSET-1 for addr2line. */
static void fatal_frame(int i, void *pc)
{
    Line l = { .len = 0 };
    put_ts(&l);
    put_s(&l, " level=crit event=fatal-frame msg=\"#");
    put_u(&l, (guint64)i, 1);
    put_c(&l, ' ');
    put_x(&l, (guintptr)pc);
    Dl_info info;
    if (dladdr(pc, &info) != 0 && info.dli_fname != NULL) {
        put_s(&l, " in ");
        put_q(&l, info.dli_fname);
        put_s(&l, " (+");
        put_x(&l, (guintptr)pc - (guintptr)info.dli_fbase);
        put_c(&l, ')');
        if (info.dli_sname != NULL) {
            put_c(&l, ' ');
            put_q(&l, info.dli_sname);
            put_c(&l, '+');
            put_x(&l, (guintptr)pc - (guintptr)info.dli_saddr);
        }
    }
    put_end(&l);
}

static void fatal_default(void)
{
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (gsize i = 0; i < G_N_ELEMENTS(fatal_signals); i++)
        sigaction(fatal_signals[i], &dfl, NULL);
}

static void on_fatal(int sig, siginfo_t *si, void *uctx)
{
    (void)uctx;
    if (!g_atomic_int_compare_and_exchange(&fatal_taken, 0, 1)) {
        if (pthread_equal(pthread_self(), __atomic_load_n(&fatal_reporter, __ATOMIC_ACQUIRE))) {
            /* A fault while reporting: die of it now.  A signal sent
             * meanwhile: the report goes on, and the process dies after. */
            if (si->si_code > 0)
                fatal_default();
            return;
        }
        for (;;)
            pause();   /* another thread reports; the process dies of its signal */
    }
    __atomic_store_n(&fatal_reporter, pthread_self(), __ATOMIC_RELEASE);
    /* A report that cannot finish (stderr a full pipe, the loader's lock
     * held by a thread that faulted in dlopen() and waits above) must not
     * keep the process alive: SIGALRM's default action ends it. */
    struct sigaction dfl = { 0 };
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(SIGALRM, &dfl, NULL);
    alarm(10);
    Slot *s = forked_child ? NULL : g_private_get(&slot_key);
    gboolean in_handler = s != NULL && __atomic_load_n(&s->busy, __ATOMIC_ACQUIRE);
    char thread[17] = "";
    prctl(PR_GET_NAME, thread, 0, 0, 0);
    Line l = { .len = 0 };
    put_ts(&l);
    put_s(&l, " level=crit");
    if (in_handler && s->binding != NULL)
        put_s(&l, " binding="), put_s(&l, s->binding);
    put_s(&l, " event=fatal-signal msg=\"");
    put_s(&l, fatal_name(sig));
    if (si->si_code <= 0)
        put_s(&l, " sent by pid "), put_u(&l, (guint64)si->si_pid, 1);
    else if (sig == SIGSEGV || sig == SIGBUS)
        put_s(&l, " at "), put_x(&l, (guintptr)si->si_addr);
    put_s(&l, " on thread ");
    put_q(&l, thread);
    if (forked_child) {
        put_s(&l, " of pid "), put_u(&l, (guint64)getpid(), 1);
        put_s(&l, ", a child a plugin forked (the host is not affected)");
    } else if (in_handler) {
        put_s(&l, ", in plugin ");
        put_q(&l, s->plugin);
        put_s(&l, "'s handle() of stream seq ");
        put_u(&l, s->seq, 1);
        put_s(&l, ": the message is unacknowledged and its next delivery is a suspect");
    } else {
        put_s(&l, ", not in a plugin's handle()");
    }
    put_s(&l, "; the frames follow (event=fatal-frame), then the process dies of the signal");
    put_end(&l);
    void *pcs[48];
    int n = backtrace(pcs, G_N_ELEMENTS(pcs));
    for (int i = 0; i < n; i++)
        fatal_frame(i, pcs[i]);
    /* The default action back for all four: a fault returns to the faulting
     * instruction and dies of it; a sent signal is raised again. */
    fatal_default();
    if (si->si_code <= 0)
        raise(sig);
}

/* Under a sanitizer its own report is the better one. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FATAL_REPORT 0
#else
#define FATAL_REPORT 1
#endif

void jet_guard_fatal_install(void)
{
    if (!FATAL_REPORT)
        return;
    static gsize once = 0;
    if (g_once_init_enter(&once)) {
        /* GLib makes a GPrivate's key, allocating, at its first get: now,
         * not in the handler.  backtrace() loads its unwinder (libgcc_s)
         * at its first call, which allocates too; loading it here would
         * cost every host ~250 KiB of RSS for a report most never write,
         * so the handler writes its first line before it, and the alarm
         * ends a report that hangs there (a fault inside malloc). */
        (void)g_private_get(&slot_key);
        alt_stack_use(alt_stack_new());   /* this thread's: the main one */
        g_atomic_int_set(&alt_stacks, 1);
        struct sigaction sa = { 0 };
        sa.sa_sigaction = on_fatal;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        for (gsize i = 0; i < G_N_ELEMENTS(fatal_signals); i++)
            sigaction(fatal_signals[i], &sa, NULL);
        g_once_init_leave(&once, 1);
    }
}
