/*
 * exec.so: runs a command per message, so a handler can be written in any
 * language.  The payload goes to the command's stdin, the metadata to its
 * environment (JETHOST_*), and its exit status becomes the verdict:
 *
 *     0        ACK
 *     75       RETRY (EX_TEMPFAIL)
 *     76       POSTPONE, for the delay on stdout's first line ("30s", "1500")
 *     other    REJECT, with stderr's first line as the reason
 *     signal   REJECT, likewise
 *     timeout  the process group is killed; RETRY with reason "timeout"
 *
 * No shell is involved unless option.shell = true.  The child runs in its own
 * process group.  The plugin keeps no state between messages: handle() is
 * thread-safe.  Plain C and libc only (posix_spawn, poll, waitpid).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jethost/plugin.h>

extern char **environ;

static const jet_host_api *host;

#define EXIT_RETRY 75      /* EX_TEMPFAIL */
#define EXIT_POSTPONE 76   /* the delay on stdout's first line */
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define KEEP_STDOUT 1024   /* bytes of stdout kept (only its first line is read) */
#define KEEP_STDERR 4096   /* bytes of stderr kept (likewise) */

static const jet_option options[] = {
    { .name = "command", .type = JET_OPT_STRING, .default_value = NULL, .flags = JET_OPTION_REQUIRED,
      .help = "command run per message; split on blanks with '...', \"...\" and \\ quoting" },
    { .name = "shell", .type = JET_OPT_BOOL, .default_value = "false",
      .help = "run the command with /bin/sh -c instead of splitting it" },
    { .name = "timeout", .type = JET_OPT_DURATION, .default_value = "30s",
      .help = "kill the command's process group after this long; the verdict is RETRY" },
    { .name = "inherit_env", .type = JET_OPT_BOOL, .default_value = "true",
      .help = "pass the host's environment to the command, besides the JETHOST_* variables" },
    { .name = NULL }
};

struct exec_state {
    jet_ctx *ctx;
    char **argv;           /* NULL-terminated; argv[0] is a path when it names one */
    char *file;            /* what is executed: an absolute path */
    uint64_t timeout_ms;
    bool inherit_env;
};

/* ------------------------------------------------------------------------ */
/* Strings                                                                  */
/* ------------------------------------------------------------------------ */

static void free_strv(char **v)
{
    if (v == NULL)
        return;
    for (char **p = v; *p != NULL; p++)
        free(*p);
    free(v);
}

struct strv {
    char **v;
    size_t n, cap;
    bool failed;
};

/* Takes ownership of s (NULL is an allocation failure). */
static void strv_push(struct strv *a, char *s)
{
    if (s == NULL || a->failed) {
        free(s);
        a->failed = true;
        return;
    }
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap != 0 ? a->cap * 2 : 16;
        char **v = realloc(a->v, cap * sizeof *v);
        if (v == NULL) {
            free(s);
            a->failed = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    return n < 0 ? NULL : s;
}

/* Splits a command line on blanks.  Inside '...' every byte is literal;
 * inside "..." a backslash escapes only \ " $ and `; outside quotes a
 * backslash escapes any byte.  No expansion of any kind.  Returns the words,
 * or NULL with a message in err. */
static char **split_command(const char *cmd, char *err, size_t err_len)
{
    struct strv words = { 0 };
    size_t len = strlen(cmd);
    char *word = malloc(len + 1);
    const char *p = cmd;

    if (word == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (*p == '\0')
            break;
        size_t n = 0;
        while (*p != '\0' && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\'') {
                const char *close = strchr(p + 1, '\'');
                if (close == NULL) {
                    snprintf(err, err_len, "option.command: unterminated ' in: %s", cmd);
                    goto fail;
                }
                memcpy(word + n, p + 1, (size_t)(close - p - 1));
                n += (size_t)(close - p - 1);
                p = close + 1;
            } else if (*p == '"') {
                p++;
                while (*p != '"') {
                    if (*p == '\0') {
                        snprintf(err, err_len, "option.command: unterminated \" in: %s", cmd);
                        goto fail;
                    }
                    if (*p == '\\' && p[1] != '\0' && strchr("\\\"$`", p[1]) != NULL)
                        p++;
                    word[n++] = *p++;
                }
                p++;
            } else if (*p == '\\') {
                if (p[1] == '\0') {
                    snprintf(err, err_len, "option.command: trailing \\ in: %s", cmd);
                    goto fail;
                }
                word[n++] = p[1];
                p += 2;
            } else
                word[n++] = *p++;
        }
        strv_push(&words, strndup(word, n));
    }
    free(word);
    if (words.failed) {
        snprintf(err, err_len, "out of memory");
        free_strv(words.v);
        return NULL;
    }
    if (words.n == 0) {
        snprintf(err, err_len, "option.command is empty");
        return NULL;
    }
    return words.v;
fail:
    free(word);
    free_strv(words.v);
    return NULL;
}

/* The absolute path execution will use for name, searched in PATH when it
 * has no slash (once, at init), or NULL with a message in err. */
static char *resolve_program(const char *name, char *err, size_t err_len)
{
    if (strchr(name, '/') != NULL) {
        if (access(name, X_OK) != 0) {
            snprintf(err, err_len, "option.command: %s is not executable: %s", name, strerror(errno));
            return NULL;
        }
        char *r = strdup(name);
        if (r == NULL)
            snprintf(err, err_len, "out of memory");
        return r;
    }
    const char *path = getenv("PATH");
    if (path == NULL || *path == '\0')
        path = "/usr/local/bin:/usr/bin:/bin";
    const char *dir = path;
    for (;;) {
        const char *colon = strchr(dir, ':');
        size_t dlen = colon != NULL ? (size_t)(colon - dir) : strlen(dir);
        char *cand = dlen == 0 ? xasprintf("./%s", name) : xasprintf("%.*s/%s", (int)dlen, dir, name);
        struct stat sb;
        if (cand == NULL) {
            snprintf(err, err_len, "out of memory");
            return NULL;
        }
        if (stat(cand, &sb) == 0 && S_ISREG(sb.st_mode) && access(cand, X_OK) == 0)
            return cand;
        free(cand);
        if (colon == NULL)
            break;
        dir = colon + 1;
    }
    snprintf(err, err_len, "option.command: '%s' is not found in PATH (%s)", name, path);
    return NULL;
}

/* JETHOST_HDR_<NAME>: upper case, anything but a letter or digit becomes _. */
static char *header_var(const char *name)
{
    size_t n = strlen(name);
    char *v = malloc(sizeof "JETHOST_HDR_" + n);
    if (v == NULL)
        return NULL;
    memcpy(v, "JETHOST_HDR_", sizeof "JETHOST_HDR_" - 1);
    char *o = v + sizeof "JETHOST_HDR_" - 1;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c >= 'a' && c <= 'z')
            c = (char)(c - 'a' + 'A');
        else if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
            c = '_';
        o[i] = c;
    }
    o[n] = '\0';
    return v;
}

struct hdr_env {
    struct strv *env;
    size_t first;          /* index of the first JETHOST_HDR_ entry in env */
};

/* Adds a header's variable, or appends the value, after a newline, to the
 * variable an earlier value (or a name mapping to the same variable) made. */
static int add_header(void *ud, const char *name, const char *value)
{
    struct hdr_env *h = ud;
    char *var = header_var(name != NULL ? name : "");
    if (var == NULL) {
        h->env->failed = true;
        return 1;
    }
    size_t vl = strlen(var);
    if (value == NULL)
        value = "";
    for (size_t i = h->first; i < h->env->n; i++) {
        char *e = h->env->v[i];
        if (strncmp(e, var, vl) == 0 && e[vl] == '=') {
            char *joined = xasprintf("%s\n%s", e, value);
            free(var);
            if (joined == NULL) {
                h->env->failed = true;
                return 1;
            }
            free(e);
            h->env->v[i] = joined;
            return 0;
        }
    }
    strv_push(h->env, xasprintf("%s=%s", var, value));
    free(var);
    return h->env->failed ? 1 : 0;
}

static char **build_env(const struct exec_state *st, jet_msg *m)
{
    struct strv env = { 0 };
    const char *subject = host->msg_subject(m), *stream = host->msg_stream(m);
    const char *consumer = host->msg_consumer(m);
    int64_t enq = 0;

    if (st->inherit_env)
        for (char **e = environ; e != NULL && *e != NULL; e++)
            if (strncmp(*e, "JETHOST_", 8) != 0)   /* ours are never inherited */
                strv_push(&env, strdup(*e));
    strv_push(&env, xasprintf("JETHOST_BINDING=%s", host->ctx_name(st->ctx) ? host->ctx_name(st->ctx) : ""));
    strv_push(&env, xasprintf("JETHOST_SUBJECT=%s", subject != NULL ? subject : ""));
    strv_push(&env, xasprintf("JETHOST_STREAM=%s", stream != NULL ? stream : ""));
    strv_push(&env, xasprintf("JETHOST_CONSUMER=%s", consumer != NULL ? consumer : ""));
    strv_push(&env, xasprintf("JETHOST_STREAM_SEQ=%llu", (unsigned long long)host->msg_stream_seq(m)));
    strv_push(&env, xasprintf("JETHOST_CONSUMER_SEQ=%llu", (unsigned long long)host->msg_consumer_seq(m)));
    strv_push(&env, xasprintf("JETHOST_DELIVERIES=%u", (unsigned)host->msg_deliveries(m)));
    strv_push(&env, xasprintf("JETHOST_FAILURES=%u", (unsigned)host->msg_failures(m)));
    strv_push(&env, xasprintf("JETHOST_POSTPONES=%u", (unsigned)host->msg_postpones(m)));
    if (host->msg_enqueued_ns(m, &enq) == 1)
        strv_push(&env, xasprintf("JETHOST_ENQUEUED_NS=%lld", (long long)enq));
    struct hdr_env h = { &env, env.n };
    host->msg_headers_each(m, add_header, &h);
    if (env.failed || env.v == NULL) {
        free_strv(env.v);
        return NULL;
    }
    return env.v;
}

/* ------------------------------------------------------------------------ */
/* Running the command                                                      */
/* ------------------------------------------------------------------------ */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* A pipe whose ends are close-on-exec and above 2, so a dup2 onto 0..2 in
 * the child always clears the flag (dup2 of an fd onto itself would not). */
static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        if (fds[i] <= 2) {
            int hi = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
            if (hi < 0) {
                close(fds[0]);
                close(fds[1]);
                return -1;
            }
            close(fds[i]);
            fds[i] = hi;
        }
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* What the command left: its output heads, and how it ended. */
struct outcome {
    char out[KEEP_STDOUT + 1], err[KEEP_STDERR + 1];
    size_t out_len, err_len;
    int status;             /* waitpid status; valid unless timed_out or lost */
    bool timed_out;
    bool lost;              /* the status could not be read (ECHILD) */
};

/* Reads what is there; keeps the first `keep` bytes.  Returns false at EOF
 * or on an error (the fd is then done). */
static bool drain(int fd, char *keep_buf, size_t *kept, size_t keep)
{
    char tmp[16384];
    for (;;) {
        ssize_t r = read(fd, tmp, sizeof tmp);
        if (r > 0) {
            size_t room = keep - *kept, take = (size_t)r < room ? (size_t)r : room;
            memcpy(keep_buf + *kept, tmp, take);
            *kept += take;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        return false;
    }
}

/* Reaps pid if it has ended.  Returns true when it has (or when its status
 * is lost: ECHILD, the host ignores SIGCHLD and the kernel reaped it). */
static bool reap_nohang(pid_t pid, struct outcome *o)
{
    for (;;) {
        pid_t r = waitpid(pid, &o->status, WNOHANG);
        if (r == pid)
            return true;
        if (r == 0)
            return false;
        if (errno != EINTR) {
            o->lost = true;
            return true;
        }
    }
}

/* Feeds data to stdin and reads stdout and stderr, all at once with poll(),
 * so neither side can block the other whatever the sizes, until the child
 * has ended.  On the deadline, kills its process group and reaps it. */
static void supervise(pid_t pid, int in_fd, int out_fd, int err_fd, const unsigned char *data,
                      size_t len, int64_t deadline, struct outcome *o)
{
    size_t written = 0;
    bool ended = false;

    fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);
    fcntl(out_fd, F_SETFL, fcntl(out_fd, F_GETFL) | O_NONBLOCK);
    fcntl(err_fd, F_SETFL, fcntl(err_fd, F_GETFL) | O_NONBLOCK);
    if (len == 0)
        close_fd(&in_fd);

    for (;;) {
        if (reap_nohang(pid, o)) {
            /* All the child wrote is in the pipes now; what its descendants
             * may still write is not waited for. */
            if (out_fd >= 0)
                drain(out_fd, o->out, &o->out_len, KEEP_STDOUT);
            if (err_fd >= 0)
                drain(err_fd, o->err, &o->err_len, KEEP_STDERR);
            ended = true;
            break;
        }
        int64_t now = mono_ns();
        if (now >= deadline)
            break;
        struct pollfd p[3];
        int np = 0, iin = -1, iout = -1, ierr = -1;
        if (in_fd >= 0) {
            iin = np;
            p[np++] = (struct pollfd){ .fd = in_fd, .events = POLLOUT };
        }
        if (out_fd >= 0) {
            iout = np;
            p[np++] = (struct pollfd){ .fd = out_fd, .events = POLLIN };
        }
        if (err_fd >= 0) {
            ierr = np;
            p[np++] = (struct pollfd){ .fd = err_fd, .events = POLLIN };
        }
        /* Once the pipes are closed only the exit is awaited: poll short
         * steps.  Otherwise wake now and then anyway, in case the child
         * ended while something it started holds the pipes open. */
        int64_t cap = np == 0 ? 2 * NS_PER_MS : 100 * NS_PER_MS;
        int64_t wait_ns = deadline - now < cap ? deadline - now : cap;
        int n = poll(p, (nfds_t)np, (int)((wait_ns + NS_PER_MS - 1) / NS_PER_MS));
        if (n <= 0)
            continue;   /* timeout or EINTR: check the child and the clock */
        if (iin >= 0 && (p[iin].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(in_fd, data + written, len - written);
            if (w > 0) {
                written += (size_t)w;
                if (written == len)
                    close_fd(&in_fd);   /* EOF for the command */
            } else if (w < 0 && errno != EINTR && errno != EAGAIN) {
                close_fd(&in_fd);   /* EPIPE: the command does not read it all */
            }
        }
        if (iout >= 0 && (p[iout].revents & (POLLIN | POLLERR | POLLHUP)) &&
            !drain(out_fd, o->out, &o->out_len, KEEP_STDOUT))
            close_fd(&out_fd);
        if (ierr >= 0 && (p[ierr].revents & (POLLIN | POLLERR | POLLHUP)) &&
            !drain(err_fd, o->err, &o->err_len, KEEP_STDERR))
            close_fd(&err_fd);
    }
    close_fd(&in_fd);
    close_fd(&out_fd);
    close_fd(&err_fd);
    if (ended)
        return;
    o->timed_out = true;
    kill(-pid, SIGKILL);   /* the whole group: what the command started too */
    kill(pid, SIGKILL);
    while (waitpid(pid, &o->status, 0) < 0 && errno == EINTR)
        ;
}

/* Blocks SIGPIPE in this thread while writing to the child, so a command
 * that does not read its stdin cannot kill the host; a SIGPIPE raised here
 * is consumed before the mask is restored. */
struct sigpipe_guard {
    sigset_t old;
    bool was_pending;
};

static void sigpipe_block(struct sigpipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigpending(&pending);
    g->was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

static void sigpipe_restore(struct sigpipe_guard *g)
{
    if (!g->was_pending) {
        sigset_t set, pending;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE) == 1) {
            struct timespec zero = { 0, 0 };
            while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
                ;
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* Spawns the command with pipes on 0, 1 and 2, in a new process group, with
 * default signal dispositions and an empty mask.  Returns 0 or an errno. */
static int spawn(const struct exec_state *st, char **env, pid_t *pid, int *in_fd, int *out_fd,
                 int *err_fd)
{
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    int rc;

    if (make_pipe(in) != 0 || make_pipe(out) != 0 || make_pipe(er) != 0) {
        rc = errno;
        goto close_all;
    }
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, er[1], 2);
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                        POSIX_SPAWN_SETSIGDEF);
    rc = posix_spawn(pid, st->file, &fa, &attr, st->argv, env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
        goto close_all;
    close(in[0]);
    close(out[1]);
    close(er[1]);
    *in_fd = in[1];
    *out_fd = out[0];
    *err_fd = er[0];
    return 0;
close_all:
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&er[i]);
    }
    return rc != 0 ? rc : EIO;
}

/* The first line of buf (up to a newline or the end), without a trailing
 * \r, cut to at most max bytes on a UTF-8 boundary, into dst. */
static void first_line(const char *buf, size_t len, char *dst, size_t max)
{
    size_t n = 0;
    while (n < len && buf[n] != '\n' && buf[n] != '\0')
        n++;
    if (n > 0 && buf[n - 1] == '\r')
        n--;
    if (n > max) {
        n = max;
        while (n > 0 && ((unsigned char)buf[n] & 0xC0) == 0x80)
            n--;
    }
    memcpy(dst, buf, n);
    dst[n] = '\0';
}

/* The delay of a postpone: "30s", "250ms", "5m", "1h", "1d", or bare
 * milliseconds ("1500").  Positive.  Surrounding blanks are ignored. */
static bool parse_delay(const char *s, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = { { "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
    uint64_t v = 0;
    size_t i = 0, n = strlen(s);

    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    size_t d0 = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i++] - '0');
    }
    if (i == d0 || v == 0)
        return false;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        if (n - i == strlen(units[u].unit) && memcmp(s + i, units[u].unit, n - i) == 0) {
            if (v > UINT64_MAX / units[u].ms)
                return false;
            *out = v * units[u].ms;
            return true;
        }
    }
    return false;
}

static const char *signal_name(int sig)
{
    switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    default: return "signal";
    }
}

static int exec_handle(void *state, jet_msg *m)
{
    struct exec_state *st = state;
    unsigned long long seq = (unsigned long long)host->msg_stream_seq(m);
    size_t len = 0;
    const unsigned char *data = host->msg_data(m, &len);
    char reason[JET_REASON_MAX + 1];
    pid_t pid = -1;
    int in_fd = -1, out_fd = -1, err_fd = -1;

    if (data == NULL)
        len = 0;
    char **env = build_env(st, m);
    if (env == NULL) {
        host->msg_set_reason(m, "out of memory building the environment");
        return JET_RETRY;
    }
    int64_t deadline = mono_ns() + (int64_t)st->timeout_ms * NS_PER_MS;
    struct sigpipe_guard guard;
    sigpipe_block(&guard);
    int rc = spawn(st, env, &pid, &in_fd, &out_fd, &err_fd);
    free_strv(env);
    if (rc != 0) {
        sigpipe_restore(&guard);
        snprintf(reason, sizeof reason, "cannot run %s: %s", st->file, strerror(rc));
        host->ctx_log(st->ctx, JET_LOG_WARNING, "seq %llu: %s", seq, reason);
        host->msg_set_reason(m, reason);
        return JET_RETRY;
    }
    struct outcome *o = calloc(1, sizeof *o);
    if (o == NULL) {
        kill(-pid, SIGKILL);
        close(in_fd);
        close(out_fd);
        close(err_fd);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        sigpipe_restore(&guard);
        host->msg_set_reason(m, "out of memory");
        return JET_RETRY;
    }
    supervise(pid, in_fd, out_fd, err_fd, data, len, deadline, o);
    sigpipe_restore(&guard);

    int verdict;
    char err_line[JET_REASON_MAX + 1];
    first_line(o->err, o->err_len, err_line, JET_REASON_MAX);

    if (o->timed_out) {
        verdict = JET_RETRY;
        host->msg_set_reason(m, "timeout");
        host->ctx_log(st->ctx, JET_LOG_WARNING,
                      "seq %llu: %s pid %d ran past %llu ms: process group killed -> RETRY", seq,
                      st->argv[0], (int)pid, (unsigned long long)st->timeout_ms);
    } else if (o->lost) {
        verdict = JET_RETRY;
        host->msg_set_reason(m, "exit status lost (does the host ignore SIGCHLD?)");
        host->ctx_log(st->ctx, JET_LOG_WARNING, "seq %llu: exit status of %s pid %d lost -> RETRY",
                      seq, st->argv[0], (int)pid);
    } else if (WIFEXITED(o->status) && WEXITSTATUS(o->status) == 0) {
        verdict = JET_ACK;
    } else if (WIFEXITED(o->status) && WEXITSTATUS(o->status) == EXIT_RETRY) {
        verdict = JET_RETRY;
        host->msg_set_reason(m, err_line[0] != '\0' ? err_line : "exit 75 (EX_TEMPFAIL)");
    } else if (WIFEXITED(o->status) && WEXITSTATUS(o->status) == EXIT_POSTPONE) {
        char out_line[KEEP_STDOUT + 1];
        uint64_t delay = 0;
        first_line(o->out, o->out_len, out_line, KEEP_STDOUT);
        if (parse_delay(out_line, &delay)) {
            verdict = JET_POSTPONE;
            host->msg_set_delay_ms(m, delay);
            if (err_line[0] != '\0')
                host->msg_set_reason(m, err_line);
        } else {
            verdict = JET_RETRY;
            /* Quote at most 64 bytes of it, cut on a UTF-8 boundary. */
            size_t q = strlen(out_line);
            if (q > 64) {
                q = 64;
                while (q > 0 && ((unsigned char)out_line[q] & 0xC0) == 0x80)
                    q--;
            }
            snprintf(reason, sizeof reason,
                     "exit 76 (postpone) with a bad delay on stdout: '%.*s' (write like 30s, 250ms or 1500)",
                     (int)q, out_line);
            host->msg_set_reason(m, reason);
        }
    } else {
        verdict = JET_REJECT;
        if (err_line[0] != '\0')
            host->msg_set_reason(m, err_line);
        else if (WIFSIGNALED(o->status)) {
            snprintf(reason, sizeof reason, "killed by %s (%d)", signal_name(WTERMSIG(o->status)),
                     WTERMSIG(o->status));
            host->msg_set_reason(m, reason);
        } else {
            snprintf(reason, sizeof reason, "exit %d", WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -1);
            host->msg_set_reason(m, reason);
        }
    }
    if (!o->timed_out && !o->lost && verdict != JET_ACK) {
        if (WIFSIGNALED(o->status))
            host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu: %s killed by %s (%d): %s", seq,
                          st->argv[0], signal_name(WTERMSIG(o->status)), WTERMSIG(o->status), err_line);
        else
            host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu: %s exit %d: %s", seq, st->argv[0],
                          WIFEXITED(o->status) ? WEXITSTATUS(o->status) : -1, err_line);
    }
    free(o);
    return verdict;
}

/* ------------------------------------------------------------------------ */
/* init / fini                                                              */
/* ------------------------------------------------------------------------ */

static void exec_fini(void *state)
{
    struct exec_state *st = state;
    if (st == NULL)
        return;
    free_strv(st->argv);
    free(st->file);
    free(st);
}

static int exec_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    const char *command = host->ctx_option(c, "command");
    int shell = 0, inherit = 1;

    if (command == NULL || *command == '\0') {
        snprintf(err, err_len, "option.command is required: the command to run per message");
        return 1;
    }
    struct exec_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, err_len, "out of memory");
        return 1;
    }
    st->ctx = c;
    if (host->ctx_option_bool(c, "shell", &shell) != JET_OK ||
        host->ctx_option_bool(c, "inherit_env", &inherit) != JET_OK ||
        host->ctx_option_duration_ms(c, "timeout", &st->timeout_ms) != JET_OK) {
        snprintf(err, err_len, "options shell, inherit_env and timeout must be set (they have defaults)");
        goto fail;
    }
    if (st->timeout_ms == 0 || st->timeout_ms > 86400000ULL * 365) {
        snprintf(err, err_len, "option.timeout must be positive and at most a year");
        goto fail;
    }
    st->inherit_env = inherit != 0;
    if (shell) {
        struct strv a = { 0 };
        strv_push(&a, strdup("/bin/sh"));
        strv_push(&a, strdup("-c"));
        strv_push(&a, strdup(command));
        st->argv = a.v;
        if (a.failed) {
            snprintf(err, err_len, "out of memory");
            goto fail;
        }
        st->file = resolve_program("/bin/sh", err, err_len);
    } else {
        st->argv = split_command(command, err, err_len);
        if (st->argv == NULL)
            goto fail;
        st->file = resolve_program(st->argv[0], err, err_len);
    }
    if (st->file == NULL)
        goto fail;
    host->ctx_log(c, JET_LOG_INFO, "running %s%s per message (timeout %llu ms)", shell ? "/bin/sh -c " : "",
                  command, (unsigned long long)st->timeout_ms);
    *state = st;
    return 0;
fail:
    exec_fini(st);
    return 1;
}

static const jet_plugin plugin = {
    JET_PLUGIN_HEADER,
    .name = "exec",
    .version = "1.0.0",
    .flags = JET_PLUGIN_THREAD_SAFE,   /* no state is written after init */
    .options = options,
    .init = exec_init,
    .handle = exec_handle,
    .fini = exec_fini,
};

JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *h)
{
    host = h;
    return &plugin;
}
