/*
 * paced.so: writes every message as one JSON line to a file, at most
 * option.rate messages per second.
 *
 * The host pulls the next message only after handle() returns, so sleeping
 * here paces the consumption itself.  The line is built in memory and written
 * with one write() call in O_APPEND mode, under a lock: the plugin is
 * thread-safe and lines never interleave.  docs/plugins.md documents the
 * options, the line format and the verdicts.
 *
 * Plain C and libc only, like every plugin: no GLib, no nats.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jethost/plugin.h>

static const jet_host_api *host;

/* ------------------------------------------------------------------------ */
/* Options                                                                  */
/* ------------------------------------------------------------------------ */

static const jet_option options[] = {
    { .name = "path", .type = JET_OPT_STRING, .default_value = NULL, .flags = JET_OPTION_REQUIRED,
      .help = "file the JSON lines are appended to (created 0640 if missing)" },
    { .name = "rate", .type = JET_OPT_STRING, .default_value = "0",
      .help = "at most this many messages per second, e.g. 100 or 0.5 (0: unlimited)" },
    { .name = "fsync", .type = JET_OPT_STRING, .default_value = "never",
      .help = "fsync the file: always, every:N (every N messages) or never" },
    { .name = NULL }
};

/* Slowest accepted rate: one message per 1000 s. */
#define PACED_MIN_RATE 0.001
#define NS_PER_S 1000000000LL

struct paced_state {
    jet_ctx *ctx;
    char *path;
    int fd;
    int64_t interval_ns;       /* 0: unlimited */
    uint64_t fsync_every;      /* 0: never, 1: always, N: every N lines */

    pthread_mutex_t lock;      /* guards everything below, and the writes */
    int64_t next_slot_ns;      /* monotonic time the next message may be written */
    uint64_t unsynced;         /* lines written since the last fsync */
};

/* Parses a non-negative decimal number ("100", "0.5", "2.") without strtod,
 * whose decimal point follows the process locale.  Returns false when text
 * is not one. */
static bool parse_rate(const char *text, double *out)
{
    const char *p = text;
    double v = 0.0, scale = 1.0;
    bool digits = false;

    while (*p >= '0' && *p <= '9') {
        v = v * 10.0 + (*p++ - '0');
        digits = true;
        if (v > 1e12)
            return false;
    }
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            scale /= 10.0;
            v += (*p++ - '0') * scale;
            digits = true;
        }
    }
    if (!digits || *p != '\0')
        return false;
    *out = v;
    return true;
}

static bool parse_u64(const char *text, uint64_t *out)
{
    uint64_t v = 0;
    if (*text == '\0')
        return false;
    for (const char *p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return true;
}

static bool parse_fsync(const char *text, uint64_t *every)
{
    if (strcmp(text, "never") == 0) {
        *every = 0;
        return true;
    }
    if (strcmp(text, "always") == 0) {
        *every = 1;
        return true;
    }
    if (strncmp(text, "every:", 6) == 0 && parse_u64(text + 6, every) && *every >= 1)
        return true;
    return false;
}

/* ------------------------------------------------------------------------ */
/* A growing buffer; any allocation failure sticks and is reported once.    */
/* ------------------------------------------------------------------------ */

struct buf {
    char *data;
    size_t len, cap;
    bool failed;
};

static void buf_reserve(struct buf *b, size_t more)
{
    if (b->failed || b->len + more <= b->cap)
        return;
    size_t cap = b->cap != 0 ? b->cap : 512;
    while (cap < b->len + more) {
        if (cap > SIZE_MAX / 2) {
            b->failed = true;
            return;
        }
        cap *= 2;
    }
    char *d = realloc(b->data, cap);
    if (d == NULL) {
        b->failed = true;
        return;
    }
    b->data = d;
    b->cap = cap;
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
    buf_reserve(b, n);
    if (b->failed)
        return;
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void buf_str(struct buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

static void buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_printf(struct buf *b, const char *fmt, ...)
{
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        b->failed = true;
        return;
    }
    buf_add(b, tmp, (size_t)n);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */
/* ------------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0 when the
 * bytes there are not one: overlong forms, surrogates and code points past
 * U+10FFFF are invalid (RFC 3629). */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
    unsigned char c = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;   /* bounds of the second byte */

    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return len;
}

/* True when the payload can be written as a JSON string: valid UTF-8 with no
 * NUL byte. */
static bool is_text(const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (p[i] == 0)
            return false;
        size_t l = utf8_seq(p + i, n - i);
        if (l == 0)
            return false;
        i += l;
    }
    return true;
}

/* Appends p[0..n) as a JSON string, quotes included.  Bytes that are not
 * valid UTF-8 become U+FFFD (only subjects and header values can carry them:
 * a payload that is not text is written as base64 instead). */
static void json_string(struct buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, run = 0;

    buf_reserve(b, n + 2);
    buf_add(b, "\"", 1);
    while (i < n) {
        unsigned char c = p[i];
        const char *esc = NULL;
        char ubuf[8];
        size_t l = 1;

        if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c < 0x20) {
            snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
            esc = ubuf;
        } else if (c >= 0x80) {
            l = utf8_seq(p + i, n - i);
            if (l == 0) {
                esc = "\xEF\xBF\xBD";   /* U+FFFD */
                l = 1;
            }
        }
        if (esc == NULL) {
            i += l;
            run += l;
            continue;
        }
        buf_add(b, p + i - run, run);
        run = 0;
        buf_str(b, esc);
        i += l;
    }
    buf_add(b, p + i - run, run);
    buf_add(b, "\"", 1);
}

static void json_cstring(struct buf *b, const char *s)
{
    if (s == NULL)
        buf_str(b, "null");
    else
        json_string(b, s, strlen(s));
}

static void base64(struct buf *b, const unsigned char *p, size_t n)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    buf_reserve(b, (n + 2) / 3 * 4 + 2);
    if (b->failed)
        return;
    buf_add(b, "\"", 1);
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        char q[4] = { abc[p[i] >> 2], abc[((p[i] & 3) << 4) | (p[i + 1] >> 4)],
                      abc[((p[i + 1] & 15) << 2) | (p[i + 2] >> 6)], abc[p[i + 2] & 63] };
        buf_add(b, q, 4);
    }
    if (n - i == 1) {
        char q[4] = { abc[p[i] >> 2], abc[(p[i] & 3) << 4], '=', '=' };
        buf_add(b, q, 4);
    } else if (n - i == 2) {
        char q[4] = { abc[p[i] >> 2], abc[((p[i] & 3) << 4) | (p[i + 1] >> 4)],
                      abc[(p[i + 1] & 15) << 2], '=' };
        buf_add(b, q, 4);
    }
    buf_add(b, "\"", 1);
}

/* RFC 3339 in UTC with nanoseconds: 2024-05-01T12:00:00.000000001Z. */
static void rfc3339(struct buf *b, int64_t unix_ns)
{
    int64_t secs = unix_ns / NS_PER_S, ns = unix_ns % NS_PER_S;
    if (ns < 0) {
        ns += NS_PER_S;
        secs -= 1;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    char date[40];
    if (gmtime_r(&t, &tm) == NULL || strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
        buf_str(b, "null");
        return;
    }
    buf_printf(b, "\"%s.%09lldZ\"", date, (long long)ns);
}

/* Headers, copied out of the callback (its strings live only during it). */
struct header {
    char *name, *value;
};
struct headers {
    struct header *v;
    size_t n, cap;
    bool failed;
};

static int collect_header(void *ud, const char *name, const char *value)
{
    struct headers *h = ud;
    if (h->n == h->cap) {
        size_t cap = h->cap != 0 ? h->cap * 2 : 8;
        struct header *v = realloc(h->v, cap * sizeof *v);
        if (v == NULL) {
            h->failed = true;
            return 1;
        }
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n].name = strdup(name != NULL ? name : "");
    h->v[h->n].value = strdup(value != NULL ? value : "");
    if (h->v[h->n].name == NULL || h->v[h->n].value == NULL) {
        free(h->v[h->n].name);
        free(h->v[h->n].value);
        h->failed = true;
        return 1;
    }
    h->n++;
    return 0;
}

static void headers_free(struct headers *h)
{
    for (size_t i = 0; i < h->n; i++) {
        free(h->v[i].name);
        free(h->v[i].value);
    }
    free(h->v);
}

/* {"name":["v1","v2"],...}: names in order of first appearance, each with all
 * its values in order. */
static void json_headers(struct buf *b, const struct headers *h)
{
    buf_add(b, "{", 1);
    bool first = true;
    for (size_t i = 0; i < h->n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(h->v[j].name, h->v[i].name) == 0;
        if (seen)
            continue;
        if (!first)
            buf_add(b, ",", 1);
        first = false;
        json_cstring(b, h->v[i].name);
        buf_add(b, ":[", 2);
        for (size_t j = i; j < h->n; j++) {
            if (strcmp(h->v[j].name, h->v[i].name) != 0)
                continue;
            if (j != i)
                buf_add(b, ",", 1);
            json_cstring(b, h->v[j].value);
        }
        buf_add(b, "]", 1);
    }
    buf_add(b, "}", 1);
}

/* The whole line, newline included.  Returns false when out of memory. */
static bool format_line(struct buf *b, jet_msg *m)
{
    struct headers h = { 0 };
    int64_t enq = 0;
    size_t len = 0;
    const unsigned char *data = host->msg_data(m, &len);

    if (data == NULL)
        len = 0;
    host->msg_headers_each(m, collect_header, &h);

    buf_str(b, "{\"subject\":");
    json_cstring(b, host->msg_subject(m));
    buf_str(b, ",\"stream\":");
    json_cstring(b, host->msg_stream(m));
    buf_printf(b, ",\"stream_seq\":%llu,\"deliveries\":%lu,\"enqueued\":",
               (unsigned long long)host->msg_stream_seq(m), (unsigned long)host->msg_deliveries(m));
    if (host->msg_enqueued_ns(m, &enq) == 1)
        rfc3339(b, enq);
    else
        buf_str(b, "null");
    buf_str(b, ",\"headers\":");
    json_headers(b, &h);
    if (len == 0 || is_text(data, len)) {
        buf_str(b, ",\"payload\":");
        json_string(b, (const char *)data, len);
    } else {
        buf_str(b, ",\"payload_b64\":");
        base64(b, data, len);
    }
    /* A KV watch's entry (ABI 1.1; a 1.0 host has no such members). */
    if (JET_HOST_HAS(host, msg_kv_revision) && host->msg_kv_op(m) != JET_KV_NONE) {
        static const char *const ops[] = { "none", "put", "delete", "purge" };
        int op = host->msg_kv_op(m);
        buf_str(b, ",\"kv\":{\"key\":");
        json_cstring(b, host->msg_kv_key(m));
        buf_printf(b, ",\"op\":\"%s\",\"revision\":%llu}", op > 0 && op <= 3 ? ops[op] : "none",
                   (unsigned long long)host->msg_kv_revision(m));
    }
    buf_str(b, "}\n");

    bool ok = !h.failed && !b->failed;
    headers_free(&h);
    return ok;
}

/* ------------------------------------------------------------------------ */
/* Pacing and writing                                                       */
/* ------------------------------------------------------------------------ */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Sleeps until the monotonic time `until`, in steps of at most 100 ms so a
 * stopping host is noticed: then the message in hand is written at once. */
static void sleep_until(struct paced_state *st, int64_t until)
{
    for (;;) {
        int64_t now = mono_ns();
        if (now >= until || host->ctx_stopping(st->ctx))
            return;
        int64_t step = until - now;
        if (step > NS_PER_S / 10)
            step = NS_PER_S / 10;
        struct timespec ts = { .tv_sec = (time_t)(step / NS_PER_S), .tv_nsec = (long)(step % NS_PER_S) };
        nanosleep(&ts, NULL);   /* EINTR: the loop recomputes */
    }
}

static const char *errno_name(int e)
{
    switch (e) {
    case ENOSPC: return "ENOSPC";
    case EIO: return "EIO";
    case EDQUOT: return "EDQUOT";
    case EFBIG: return "EFBIG";
    case EROFS: return "EROFS";
    case EBADF: return "EBADF";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EPIPE: return "EPIPE";
    case ENOMEM: return "ENOMEM";
    case EAGAIN: return "EAGAIN";
    case ENXIO: return "ENXIO";
    default: return NULL;
    }
}

/* "write /var/x.jsonl: No space left on device (ENOSPC)" as the verdict's
 * reason, cut to JET_REASON_MAX. */
static void set_errno_reason(jet_msg *m, const char *what, const char *path, int e)
{
    char reason[JET_REASON_MAX + 1];
    char num[24];
    const char *name = errno_name(e);
    if (name == NULL) {
        snprintf(num, sizeof num, "errno %d", e);
        name = num;
    }
    int n = snprintf(reason, sizeof reason, "%s %s: %s (%s)", what, path, strerror(e), name);
    if (n < 0)
        snprintf(reason, sizeof reason, "%s failed (%s)", what, name);
    host->msg_set_reason(m, reason);
}

/* Writes the whole line.  On a failure after part of it was written, cuts
 * the file back so no partial line is left behind (best effort).  Returns 0
 * or an errno value.  Called with the lock held. */
static int write_line(struct paced_state *st, const char *p, size_t n)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(st->fd, p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            if (done > 0) {
                off_t end = lseek(st->fd, 0, SEEK_CUR);
                if (end >= (off_t)done && ftruncate(st->fd, end - (off_t)done) != 0) {
                    /* nothing more to do: the reason names the write error */
                }
            }
            return e;
        }
        done += (size_t)w;
    }
    return 0;
}

static int paced_handle(void *state, jet_msg *m)
{
    struct paced_state *st = state;
    struct buf b = { 0 };

    if (!format_line(&b, m)) {
        free(b.data);
        host->msg_set_reason(m, "out of memory formatting the JSON line (ENOMEM)");
        return JET_RETRY;
    }

    /* Take the next slot first, then sleep outside the lock: with several
     * workers the slots are still spaced interval_ns apart. */
    if (st->interval_ns > 0) {
        pthread_mutex_lock(&st->lock);
        int64_t now = mono_ns();
        int64_t slot = st->next_slot_ns > now ? st->next_slot_ns : now;
        st->next_slot_ns = slot + st->interval_ns;
        pthread_mutex_unlock(&st->lock);
        sleep_until(st, slot);
    }

    int verdict = JET_ACK;
    pthread_mutex_lock(&st->lock);
    int e = write_line(st, b.data, b.len);
    if (e != 0) {
        set_errno_reason(m, "write", st->path, e);
        verdict = JET_RETRY;
    } else if (st->fsync_every > 0 && ++st->unsynced >= st->fsync_every) {
        st->unsynced = 0;
        if (fsync(st->fd) != 0) {
            /* The line is in the file but may not be durable: retry, and
             * accept a duplicate line over a lost one. */
            set_errno_reason(m, "fsync", st->path, errno);
            verdict = JET_RETRY;
        }
    }
    pthread_mutex_unlock(&st->lock);
    free(b.data);
    return verdict;
}

/* A handler batch (the binding's batch_max above 1): the batch's lines in
 * one buffer, one write() and, by the fsync policy, one fsync for them all,
 * so with fsync = always every line is durable before its ack at one sync a
 * batch.  Each message still takes its slot: the batch waits for its last
 * one's. */
static int paced_handle_batch(void *state, jet_msg *const *msgs, size_t n, int *verdicts)
{
    struct paced_state *st = state;
    struct buf b = { 0 };
    size_t lines = 0;
    for (size_t i = 0; i < n; i++) {
        size_t before = b.len;
        if (!format_line(&b, msgs[i])) {
            b.len = before;   /* this line out; the next ones may still fit */
            b.failed = false;
            host->msg_set_reason(msgs[i], "out of memory formatting the JSON line (ENOMEM)");
            verdicts[i] = JET_RETRY;
            continue;
        }
        verdicts[i] = JET_ACK;
        lines++;
    }
    if (lines > 0 && st->interval_ns > 0) {
        pthread_mutex_lock(&st->lock);
        int64_t now = mono_ns();
        int64_t first = st->next_slot_ns > now ? st->next_slot_ns : now;
        st->next_slot_ns = first + (int64_t)lines * st->interval_ns;
        pthread_mutex_unlock(&st->lock);
        sleep_until(st, first + (int64_t)(lines - 1) * st->interval_ns);
    }
    const char *what = NULL;
    int e = 0;
    pthread_mutex_lock(&st->lock);
    if (lines > 0 && (e = write_line(st, b.data, b.len)) != 0) {
        what = "write";
    } else if (lines > 0 && st->fsync_every > 0 && (st->unsynced += lines) >= st->fsync_every) {
        st->unsynced = 0;
        if (fsync(st->fd) != 0) {
            e = errno;
            what = "fsync";   /* the lines are in the file: a retry may write them twice */
        }
    }
    pthread_mutex_unlock(&st->lock);
    if (what != NULL) {
        for (size_t i = 0; i < n; i++) {
            if (verdicts[i] != JET_ACK)
                continue;
            set_errno_reason(msgs[i], what, st->path, e);
            verdicts[i] = JET_RETRY;
        }
    }
    free(b.data);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* init / fini                                                              */
/* ------------------------------------------------------------------------ */

static int paced_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    const char *path = host->ctx_option(c, "path");
    const char *rate_text = host->ctx_option(c, "rate");
    const char *fsync_text = host->ctx_option(c, "fsync");
    double rate = 0.0;
    uint64_t every = 0;

    if (path == NULL || *path == '\0') {
        snprintf(err, err_len, "option.path is required: the file to append JSON lines to");
        return 1;
    }
    if (rate_text == NULL || !parse_rate(rate_text, &rate) || (rate != 0.0 && rate < PACED_MIN_RATE)) {
        snprintf(err, err_len,
                 "option.rate: '%s' is not a rate (messages per second: 0 for unlimited, or a number"
                 " from 0.001, like 100 or 2.5)", rate_text != NULL ? rate_text : "");
        return 1;
    }
    if (fsync_text == NULL || !parse_fsync(fsync_text, &every)) {
        snprintf(err, err_len, "option.fsync: '%s' is not always, never or every:N (N >= 1)",
                 fsync_text != NULL ? fsync_text : "");
        return 1;
    }

    struct paced_state *st = calloc(1, sizeof *st);
    if (st == NULL || (st->path = strdup(path)) == NULL) {
        free(st);
        snprintf(err, err_len, "out of memory");
        return 1;
    }
    st->ctx = c;
    st->fsync_every = every;
    st->interval_ns = rate > 0.0 ? (int64_t)((double)NS_PER_S / rate) : 0;
    st->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
    if (st->fd < 0) {
        int e = errno;
        snprintf(err, err_len, "option.path: cannot open %s for appending: %s", path, strerror(e));
        free(st->path);
        free(st);
        return 1;
    }
    pthread_mutex_init(&st->lock, NULL);
    host->ctx_log(c, JET_LOG_INFO, "appending JSON lines to %s (rate %s/s, fsync %s)", path,
                  rate > 0.0 ? rate_text : "unlimited", fsync_text);
    *state = st;
    return 0;
}

static void paced_fini(void *state)
{
    struct paced_state *st = state;
    if (st == NULL)
        return;
    if (st->fsync_every > 0 && st->unsynced > 0 && fsync(st->fd) != 0)
        host->ctx_log(st->ctx, JET_LOG_WARNING, "fsync %s at stop: %s", st->path, strerror(errno));
    if (close(st->fd) != 0)
        host->ctx_log(st->ctx, JET_LOG_WARNING, "close %s: %s", st->path, strerror(errno));
    pthread_mutex_destroy(&st->lock);
    free(st->path);
    free(st);
}

/* Said in the host's log, not in the file: the file holds messages only. */
static void paced_kv_initial_done(void *state)
{
    struct paced_state *st = state;
    host->ctx_log(st->ctx, JET_LOG_INFO, "the bucket's current values are written; updates follow");
}

static const jet_plugin plugin = {
    JET_PLUGIN_HEADER,
    .name = "paced",
    .version = "1.2.0",
    .flags = JET_PLUGIN_THREAD_SAFE,   /* writes and pacing slots are taken under st->lock */
    .options = options,
    .init = paced_init,
    .handle = paced_handle,
    .fini = paced_fini,
    .kv_initial_done = paced_kv_initial_done,
    .handle_batch = paced_handle_batch,
};

JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *h)
{
    host = h;
    return &plugin;
}
