/*
 * noop: the benchmark's plugin.  Acknowledges every message, or rejects every
 * one (the failure path of the bench).
 *
 *   option.verdict      ack (default) or reject: every message REJECTed, with
 *                       the reason "noop: verdict = reject", so the host
 *                       captures each to the dead-letter stream and then acks
 *                       it with confirmation (docs/dead-letters.md); or
 *                       retry-once: RETRY on a message's first delivery (the
 *                       reason "noop: verdict = retry-once"; the host writes
 *                       its ledger record and NAKs it with the first rung's
 *                       delay), ACK on any later one (the host acks it and
 *                       deletes the record): the retry path of the bench.
 *   option.sleep        a duration the handler sleeps before acking (0: none);
 *                       the "1 ms handler" of the RSS runs.
 *   option.sleep_us     microseconds slept on top of option.sleep: the slow
 *                       handlers of the ordered and KV cases, the same
 *                       nanosleep as rawloop's readers take (durations are
 *                       read in whole milliseconds).
 *   option.latency_file a path: for every message, the time from publish to
 *                       handler entry is recorded and written there, one
 *                       integer (nanoseconds) per line, when the binding stops.
 *                       The publisher (rawloop pace) starts the payload with
 *                       its CLOCK_MONOTONIC time in decimal nanoseconds; the
 *                       clock is system-wide, so it compares across processes
 *                       of one machine.
 *   option.latency_skip a subject suffix: messages whose subject ends with it
 *                       are not recorded (the hot key of the lanes' hot-key
 *                       case: what is measured is the cold keys' latency).
 *   option.expect       N > 0: count what the binding handles against stream
 *                       sequences 1..N (tally.h: duplicates, missing, steps
 *                       backwards, consumers); for the ordered and KV cases,
 *                       whose consumers ack nothing, so the ack floor the
 *                       durable cases read does not exist.
 *   option.mark         K > 0: also time 1..K on its own (a KV watch's current
 *                       values, before the updates).
 *   option.report       a path: the tally's RESULT line is written there (to a
 *                       temporary name, then renamed) when 1..mark and when
 *                       1..expect are complete, and again when the binding
 *                       stops, so the script can wait for it and then read the
 *                       final counts.
 *   option.sink         a path: every payload and a newline appended to it
 *                       (created afresh at init), then fdatasync: one a
 *                       message in handle(), one a batch in handle_batch()
 *                       (the batch sink case: `batch_max`, docs/batches.md).
 *   option.async       a duration > 0: simulated I/O: handle() returns
 *                       JET_PENDING and the plugin's own thread completes
 *                       each message that long after (`max_in_flight`, the
 *                       async case, docs/async.md).
 *
 * Thread-safe, for the lanes case's workers: the plain verdict touches no
 * shared state, and the latency record and the tally take a lock (only when
 * they are on, so the single-worker figures pay nothing for it).
 *
 * Built only by `make bench`; never installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/uio.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jethost/plugin.h>

#include "tally.h"

static const jet_host_api *host;

struct noop_state {
    jet_ctx *ctx;
    uint64_t sleep_ms;
    int64_t sleep_us;
    int verdict;          /* JET_ACK or JET_REJECT, or JET_RETRY: retry-once */
    char *latency_file;   /* NULL: no recording */
    char *latency_skip;   /* NULL: record every subject */
    int64_t *lat;         /* latencies in ns */
    size_t n_lat, cap_lat;
    uint64_t unparsed;    /* payloads without a timestamp */
    bench_tally tally;    /* tally.expect 0: not counting */
    char *report;         /* NULL: no report file */
    int sink_fd;          /* option.sink; -1: none */
    pthread_mutex_t lock; /* the latency record and the tally */
    /* option.async: pending messages in the order they are due (one delay
     * for all), completed by `completer`. */
    uint64_t async_ms;
    pthread_t completer;
    pthread_mutex_t qlock;
    pthread_cond_t qcond;
    struct pending *head, *tail;
    int quit;
};

struct pending {
    jet_msg *m;
    int64_t due_ns;
    struct pending *next;
};

static const jet_option options[] = {
    { .name = "verdict", .type = JET_OPT_STRING, .default_value = "ack",
      .help = "ack, reject, or retry-once (RETRY on the first delivery, ACK after)" },
    { .name = "sleep", .type = JET_OPT_DURATION, .default_value = "0",
      .help = "sleep this long in every handler call" },
    { .name = "sleep_us", .type = JET_OPT_INT, .default_value = "0",
      .help = "and this many microseconds more" },
    { .name = "latency_skip", .type = JET_OPT_STRING, .default_value = NULL,
      .help = "do not record the latency of subjects ending with this" },
    { .name = "latency_file", .type = JET_OPT_STRING, .default_value = NULL,
      .help = "write publish-to-handler latencies (ns, one a line) here at stop" },
    { .name = "expect", .type = JET_OPT_INT, .default_value = "0",
      .help = "count handled stream seqs against 1..expect (0: do not count)" },
    { .name = "mark", .type = JET_OPT_INT, .default_value = "0",
      .help = "time 1..mark on its own (a KV watch's current values)" },
    { .name = "report", .type = JET_OPT_STRING, .default_value = NULL,
      .help = "write the count's RESULT line here at mark, at expect and at stop" },
    { .name = "sink", .type = JET_OPT_STRING, .default_value = NULL,
      .help = "append each payload to this file, fdatasync a message (a batch with handle_batch)" },
    { .name = "async", .type = JET_OPT_DURATION, .default_value = "0",
      .help = "keep each message pending this long, completed by the plugin's thread (max_in_flight)" },
    { .name = NULL }
};

static void *noop_completer(void *arg);
static void noop_fini(void *state);

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int noop_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    struct noop_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, err_len, "out of memory");
        return 1;
    }
    st->ctx = c;
    st->sink_fd = -1;
    pthread_mutex_init(&st->lock, NULL);
    const char *sink = host->ctx_option(c, "sink");
    if (sink != NULL && *sink != '\0' &&
        (st->sink_fd = open(sink, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600)) < 0) {
        snprintf(err, err_len, "option.sink: %s: %s", sink, strerror(errno));
        free(st);
        return 1;
    }
    const char *v = host->ctx_option(c, "verdict");
    if (v == NULL || strcmp(v, "ack") == 0) {
        st->verdict = JET_ACK;
    } else if (strcmp(v, "reject") == 0) {
        st->verdict = JET_REJECT;
    } else if (strcmp(v, "retry-once") == 0) {
        st->verdict = JET_RETRY;
    } else {
        snprintf(err, err_len, "option.verdict must be ack, reject or retry-once, not '%s'", v);
        free(st);
        return 1;
    }
    if (host->ctx_option_duration_ms(c, "sleep", &st->sleep_ms) != JET_OK ||
        host->ctx_option_int(c, "sleep_us", &st->sleep_us) != JET_OK || st->sleep_us < 0) {
        snprintf(err, err_len, "option.sleep must be a duration, option.sleep_us at least 0");
        free(st);
        return 1;
    }
    int64_t expect = 0, mark = 0;
    if (host->ctx_option_int(c, "expect", &expect) != JET_OK || expect < 0 ||
        host->ctx_option_int(c, "mark", &mark) != JET_OK || mark < 0 || mark > expect) {
        snprintf(err, err_len, "option.expect and option.mark must be 0 <= mark <= expect");
        free(st);
        return 1;
    }
    const char *report = host->ctx_option(c, "report");
    if (expect > 0 && (tally_init(&st->tally, (uint64_t)expect, (uint64_t)mark) != 0 ||
                       (report != NULL && (st->report = strdup(report)) == NULL))) {
        snprintf(err, err_len, "out of memory");
        tally_free(&st->tally);
        free(st);
        return 1;
    }
    const char *skip = host->ctx_option(c, "latency_skip");
    if (skip != NULL && *skip != '\0')
        st->latency_skip = strdup(skip);
    const char *lf = host->ctx_option(c, "latency_file");
    if (lf != NULL && *lf != '\0') {
        st->latency_file = strdup(lf);
        st->cap_lat = 65536;
        st->lat = malloc(st->cap_lat * sizeof *st->lat);
        if (st->latency_file == NULL || st->lat == NULL) {
            snprintf(err, err_len, "out of memory");
            free(st->latency_file);
            free(st->latency_skip);
            free(st->lat);
            free(st->report);
            tally_free(&st->tally);
            free(st);
            return 1;
        }
    }
    if (host->ctx_option_duration_ms(c, "async", &st->async_ms) == JET_OK && st->async_ms > 0) {
        pthread_mutex_init(&st->qlock, NULL);
        pthread_cond_init(&st->qcond, NULL);
        if (pthread_create(&st->completer, NULL, noop_completer, st) != 0) {
            snprintf(err, err_len, "option.async: cannot start the completion thread");
            st->async_ms = 0;
            noop_fini(st);
            return 1;
        }
    }
    *state = st;
    return 0;
}

static int skipped(const struct noop_state *st, jet_msg *m)
{
    if (st->latency_skip == NULL)
        return 0;
    const char *subject = host->msg_subject(m);
    size_t n = subject != NULL ? strlen(subject) : 0, k = strlen(st->latency_skip);
    return n >= k && memcmp(subject + n - k, st->latency_skip, k) == 0;
}

static void record_latency(struct noop_state *st, int64_t entry_ns, jet_msg *m)
{
    if (skipped(st, m))
        return;
    size_t len = 0;
    const char *p = host->msg_data(m, &len);
    int64_t t = 0;
    size_t i = 0;
    for (; i < len && i < 20 && p[i] >= '0' && p[i] <= '9'; i++)
        t = t * 10 + (p[i] - '0');
    if (i == 0) {
        st->unparsed++;
        return;
    }
    if (st->n_lat == st->cap_lat) {
        int64_t *bigger = realloc(st->lat, 2 * st->cap_lat * sizeof *st->lat);
        if (bigger == NULL)
            return;   /* keep what we have */
        st->lat = bigger;
        st->cap_lat *= 2;
    }
    st->lat[st->n_lat++] = entry_ns - t;
}

/* The tally's line, replaced whole (rename) so a reader never sees half. */
static void write_report(struct noop_state *st)
{
    char line[1024], tmp[4096];
    if (st->report == NULL)
        return;
    tally_format(&st->tally, line, sizeof line);
    snprintf(tmp, sizeof tmp, "%s.tmp", st->report);
    FILE *f = fopen(tmp, "w");
    int ok = f != NULL;
    if (ok) {
        ok = fprintf(f, "RESULT mode=jethost %s\n", line) >= 0;
        ok = fclose(f) == 0 && ok;
    }
    if (!ok || rename(tmp, st->report) != 0)
        host->ctx_log(st->ctx, JET_LOG_ERROR, "cannot write %s: %s", st->report, strerror(errno));
}

/* The payload and a newline at the sink's end; 0, or -1 with errno. */
static int sink_append(struct noop_state *st, jet_msg *m)
{
    size_t len = 0;
    const void *data = host->msg_data(m, &len);
    struct iovec iov[2] = { { (void *)data, len }, { (void *)"\n", 1 } };
    return writev(st->sink_fd, iov, 2) < 0 ? -1 : 0;
}

static int noop_verdict(struct noop_state *st, jet_msg *m);

/* option.async: each message completed async_ms after its handle(). */
static void *noop_completer(void *arg)
{
    struct noop_state *st = arg;
    pthread_mutex_lock(&st->qlock);
    for (;;) {
        struct pending *p = st->head;
        if (p == NULL) {
            if (st->quit)
                break;
            pthread_cond_wait(&st->qcond, &st->qlock);
            continue;
        }
        int64_t left = p->due_ns - mono_ns();
        if (left > 0) {
            pthread_mutex_unlock(&st->qlock);
            struct timespec ts = { .tv_sec = (time_t)(left / 1000000000), .tv_nsec = (long)(left % 1000000000) };
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
            pthread_mutex_lock(&st->qlock);
            continue;
        }
        st->head = p->next;
        if (st->head == NULL)
            st->tail = NULL;
        pthread_mutex_unlock(&st->qlock);
        host->msg_complete(p->m, noop_verdict(st, p->m));
        free(p);
        pthread_mutex_lock(&st->qlock);
    }
    pthread_mutex_unlock(&st->qlock);
    return NULL;
}

static int noop_pend(struct noop_state *st, jet_msg *m)
{
    struct pending *p = calloc(1, sizeof *p);
    if (p == NULL)
        return JET_RETRY;
    p->m = m;
    p->due_ns = mono_ns() + (int64_t)st->async_ms * 1000000;
    pthread_mutex_lock(&st->qlock);
    if (st->tail != NULL)
        st->tail->next = p;
    else
        st->head = p;
    st->tail = p;
    pthread_cond_signal(&st->qcond);
    pthread_mutex_unlock(&st->qlock);
    return JET_PENDING;
}

static int noop_handle(void *state, jet_msg *m)
{
    struct noop_state *st = state;
    if (st->async_ms > 0)
        return noop_pend(st, m);
    if (st->sink_fd >= 0 && (sink_append(st, m) != 0 || fdatasync(st->sink_fd) != 0)) {
        host->msg_set_reason(m, strerror(errno));
        return JET_RETRY;
    }
    return noop_verdict(st, m);
}

/* The batch sink: every payload appended, one fdatasync, then each
 * message's verdict as handle() would give it. */
static int noop_handle_batch(void *state, jet_msg *const *msgs, size_t n, int *verdicts)
{
    struct noop_state *st = state;
    if (st->sink_fd >= 0) {
        for (size_t i = 0; i < n; i++)
            if (sink_append(st, msgs[i]) != 0)
                return 1;
        if (fdatasync(st->sink_fd) != 0)
            return 1;
    }
    for (size_t i = 0; i < n; i++)
        verdicts[i] = noop_verdict(st, msgs[i]);
    return 0;
}

static int noop_verdict(struct noop_state *st, jet_msg *m)
{
    if (st->latency_file != NULL) {
        int64_t entry = mono_ns();
        pthread_mutex_lock(&st->lock);
        record_latency(st, entry, m);
        pthread_mutex_unlock(&st->lock);
    }
    if (st->tally.expect > 0) {
        const char *consumer = host->msg_consumer(m);
        pthread_mutex_lock(&st->lock);
        if (tally_add(&st->tally, host->msg_stream_seq(m), consumer, consumer != NULL ? strlen(consumer) : 0) != 0)
            write_report(st);
        pthread_mutex_unlock(&st->lock);
    }
    if (st->sleep_ms > 0 || st->sleep_us > 0) {
        int64_t us = (int64_t)st->sleep_ms * 1000 + st->sleep_us;
        struct timespec ts = { .tv_sec = (time_t)(us / 1000000), .tv_nsec = (long)(us % 1000000) * 1000L };
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    if (st->verdict == JET_REJECT)
        host->msg_set_reason(m, "noop: verdict = reject");
    if (st->verdict == JET_RETRY) {
        if (host->msg_deliveries(m) > 1)
            return JET_ACK;
        host->msg_set_reason(m, "noop: verdict = retry-once");
    }
    return st->verdict;
}

static void noop_fini(void *state)
{
    struct noop_state *st = state;
    if (st->async_ms > 0) {
        pthread_mutex_lock(&st->qlock);
        st->quit = 1;
        pthread_cond_signal(&st->qcond);
        pthread_mutex_unlock(&st->qlock);
        pthread_join(st->completer, NULL);
    }
    if (st->latency_file != NULL) {
        FILE *f = fopen(st->latency_file, "w");
        if (f == NULL) {
            host->ctx_log(st->ctx, JET_LOG_ERROR, "cannot write %s: %s", st->latency_file, strerror(errno));
        } else {
            for (size_t i = 0; i < st->n_lat; i++)
                fprintf(f, "%lld\n", (long long)st->lat[i]);
            if (fclose(f) != 0)
                host->ctx_log(st->ctx, JET_LOG_ERROR, "writing %s failed", st->latency_file);
        }
        if (st->unparsed > 0)
            host->ctx_log(st->ctx, JET_LOG_WARNING, "%llu payloads carried no timestamp",
                          (unsigned long long)st->unparsed);
    }
    if (st->tally.expect > 0)
        write_report(st);
    if (st->sink_fd >= 0)
        close(st->sink_fd);
    free(st->report);
    tally_free(&st->tally);
    free(st->latency_file);
    free(st->latency_skip);
    free(st->lat);
    pthread_mutex_destroy(&st->lock);
    free(st);
}

static const jet_plugin plugin = {
    JET_PLUGIN_HEADER,
    .name = "noop",
    .version = "1.0.0",
    .flags = JET_PLUGIN_THREAD_SAFE,
    .options = options,
    .init = noop_init,
    .handle = noop_handle,
    .fini = noop_fini,
    .handle_batch = noop_handle_batch,
};

JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *h)
{
    host = h;
    return &plugin;
}
