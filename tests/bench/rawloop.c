/*
 * rawloop: the plain nats.c side of the benchmark, and its small tools.
 * Built only by `make bench`; tests/bench/run.sh drives it.
 *
 *   rawloop publish URL STREAM SUBJECT N SIZE
 *       (Re)creates the file-store stream STREAM capturing SUBJECT, then
 *       publishes N messages of SIZE bytes with js_PublishAsync.
 *   rawloop fetch URL STREAM CONSUMER N BATCH
 *   rawloop raw   URL STREAM CONSUMER N BATCH
 *       Creates the durable CONSUMER afresh with jethost's managed settings
 *       (DeliverAll, AckExplicit, AckWait 30s, MaxDeliver -1, MaxAckPending
 *       1000), then pulls and acks N messages, strictly paced like jethost
 *       (the next pull only once every message of the last one is acked):
 *         fetch: natsSubscription_FetchRequest(batch, expires, heartbeat) and
 *                natsMsg_Ack on each message;
 *         raw:   the pull protocol by hand: the JSON pull published to
 *                $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer> with the reply
 *                subject <inbox>.<pull id> of one inbox subscription, each
 *                message acked by publishing "+ACK" to its reply subject.
 *       Pulls carry the same batch, expires and idle_heartbeat as jethost's
 *       (defaults 30s and 5s; env RAWLOOP_EXPIRES_MS, RAWLOOP_HB_MS).
 *       fetch with env RAWLOOP_BIND=1 binds to CONSUMER as it is (made by
 *       `rawloop mkcons`) instead of re-creating it, so several processes
 *       can share it (each then runs until stopped, N being the whole).
 *       raw with env RAWLOOP_LATENCY_FILE=PATH also writes, for each
 *       delivery, receipt time minus the stamp `rawloop pace` put in its
 *       payload (ns, one a line): the plain loop's side of the latency.
 *   rawloop ceiling URL STREAM CONSUMER N BATCH
 *       What the server can deliver here: `raw` on a consumer made with
 *       AckNone (no MaxAckPending), no acks, no handler.
 *   rawloop workers URL STREAM CONSUMER N BATCH WORKERS SLEEP_US
 *       The worker pool by hand, beside jethost with `workers`: WORKERS
 *       threads, each its own js_PullSubscribe on the one durable CONSUMER
 *       (made as for fetch), each strictly paced like `fetch` at BATCH,
 *       sleeping SLEEP_US in each message's handler before natsMsg_Ack, as
 *       each jethost worker pulls for itself.  One connection for all.
 *   rawloop multi URL STREAM PREFIX K N BATCH
 *       K loops in one process, beside jethost with K bindings: each its own
 *       consumer PREFIX_<i> (made as for fetch) on STREAM, each pulling and
 *       acking all N like `fetch` at BATCH, on one connection; the
 *       consumers are deleted at the end.
 *   rawloop acks URL STREAM TOTAL TIMEOUT_S
 *       Counts acks on the wire: a core subscription on $JS.ACK.<STREAM>.>
 *       (every client's acks to any consumer of STREAM); prints READY once
 *       subscribed, then, once TOTAL are seen (or after TIMEOUT_S), RESULT
 *       with rate = acks between the first and the last seen / that time.
 *       For many consumers at once, where a floor poll would be one
 *       request each.
 *   rawloop capture URL STREAM CONSUMER N BATCH DLQ_SUBJECT
 *       The failure path done by hand, beside jethost with every message
 *       REJECTed: the same consumer and the same raw pulls as `raw`, then for
 *       each message, one at a time: js_PublishMsg of its payload to
 *       DLQ_SUBJECT with "Nats-Msg-Id: raw:<stream>.<consumer>:<stream seq>",
 *       waiting for the pub-ack, then natsConnection_Request(reply, "+ACK"),
 *       waiting for the server's confirmation.  Nothing else: no provenance
 *       headers, no original headers, no log line.
 *   rawloop capture URL STREAM CONSUMER N BATCH DLQ_SUBJECT WORKERS
 *       The same with WORKERS threads on the one consumer and one
 *       connection, each its own inbox subscription and its own strictly
 *       paced pulls, claiming a pull's messages before sending it (so
 *       together they ask for N, no more): beside jethost `workers = W`.
 *   rawloop retry URL STREAM CONSUMER N BATCH BUCKET DELAY_MS
 *       The retry path by hand, beside jethost with every message failing
 *       once (the noop plugin's verdict retry-once): the consumer and pulls
 *       of `raw`; a first delivery (delivery count 1 in its reply subject)
 *       writes a record to the KV bucket BUCKET (which must exist) with
 *       kvStore_Create under <stream>.<consumer>.<stream seq>, names
 *       encoded as jethost's ledger does, then publishes
 *       "-NAK {"delay": DELAY_MS in ns}"; a redelivery reads the record
 *       (kvStore_Get, as jethost reads its ledger on every redelivery),
 *       publishes "+ACK", then deletes the record (kvStore_Delete).  Stops
 *       once N are acked.
 *   rawloop mkcons URL STREAM CONSUMER
 *       Creates the durable CONSUMER afresh as fetch does; with it,
 *       several `RAWLOOP_BIND=1 rawloop fetch` processes (which then bind
 *       to the consumer instead of re-creating it) share one consumer.
 *   rawloop forward URL STREAM CONSUMER N BATCH SUBJECT
 *       Publish-then-ack by hand, beside jethost with the forward plugin:
 *       the same loop as `capture`, each payload republished to SUBJECT
 *       under the same kind of Nats-Msg-Id (so the target's duplicate
 *       window costs both sides alike), the pub-ack waited for, then a
 *       plain "+ACK" published, as jethost acks a forwarded message.  No
 *       template is filled in: SUBJECT is fixed.
 *   rawloop dlq URL STREAM SUBJECT
 *       (Re)creates STREAM as jethost's managed mode creates its DLQ stream:
 *       file storage, limits retention without limits, a 2 h duplicate
 *       window, SUBJECT (e.g. jethost.dlq.>).  The forward case's target
 *       stream FWD is made the same way.
 *   rawloop msgs URL STREAM                  prints the stream's message count
 *   rawloop floor URL STREAM CONSUMER N T0_NS TIMEOUT_S
 *       Polls the consumer's info every 5 ms (a missing consumer counts as
 *       floor 0) until its ack floor first moves, then every RAWLOOP_POLL_MS
 *       (default 5), until it reaches stream sequence N; with a poll slower
 *       than 5 ms the rate is the floor's slope up to the last sample short
 *       of N (interp=1).  T0_NS is the
 *       wall clock (ns) at which the measured process was started.  A consumer
 *       that disappears after it was seen (consume.js deletes its own once it
 *       saw the floor) ends the wait at that moment (gone=1).
 *   rawloop del URL STREAM CONSUMER          deletes a consumer
 *   rawloop sink URL STREAM CONSUMER N BATCH FILE EACH
 *       The batch sink's peer: fetch as above, each payload and a newline
 *       appended to FILE (created afresh), then one fdatasync per batch
 *       (EACH 0) or per message (EACH 1), then every message of the batch
 *       acked.
 *   rawloop async URL STREAM CONSUMER N BATCH INFLIGHT DELAY_MS
 *       The async case's peer: fetch what there is room for (at most BATCH,
 *       and INFLIGHT in flight), each message handed to simulated I/O that
 *       acks it DELAY_MS after it was fetched, on one I/O thread.
 *   rawloop pace URL SUBJECT COUNT RATE SIZE [HOT_PERCENT KEYS]
 *       Publishes COUNT messages at a steady RATE per second (absolute
 *       schedule), each payload starting with the publisher's CLOCK_MONOTONIC
 *       time in decimal nanoseconds (what the noop plugin's latency_file
 *       reads).  With HOT_PERCENT and KEYS, that share goes to SUBJECT.hot
 *       and the rest round robin to SUBJECT.k0 .. k<KEYS-1>.
 *   rawloop rtt URL COUNT RATE SIZE
 *       Core request/reply round trips at RATE per second between two
 *       connections of this process (one replies); prints p50/p99/max.
 *   rawloop pctl FILE
 *       p50/p99/p99.9/max of a file of nanosecond integers, one a line.
 *   rawloop send URL SUBJECT KEYS COUNT SIZE
 *       Publishes COUNT messages of SIZE bytes with js_PublishAsync to a
 *       stream that exists: all to SUBJECT (KEYS 0), or to SUBJECT.<i % KEYS>
 *       (KV puts: SUBJECT $KV.<bucket>.k gives the keys k.0 .. k.<KEYS-1>).
 *   rawloop kvbucket URL BUCKET HISTORY
 *       (Re)creates the KV bucket BUCKET, file storage, keeping HISTORY
 *       revisions per key (so that no update is superseded before a slow
 *       watcher reads it: every revision stays due).
 *   rawloop ordered URL STREAM SUBJECT N SLEEP_US
 *       nats.c's own ordered consumer: js_SubscribeSync with
 *       jsSubOptions.Ordered (a push consumer with flow control and
 *       heartbeats, re-created by the library on a gap), reading with
 *       natsSubscription_NextMsg and sleeping SLEEP_US after each message
 *       (the slow handler); counts stream seqs 1..N with tally.h.  Prints
 *       READY once subscribed, then one RESULT line with the tally, the
 *       subscription's dropped count (natsSubscription_GetDropped), the
 *       slow-consumer and mismatch errors NextMsg returned, the slow-consumer
 *       callbacks, and the most messages it ever held (GetMaxPending).
 *       Env RAWLOOP_PENDING_MSGS: a pending-messages limit for the
 *       subscription (default: the library's, 65536).
 *   rawloop kvwatch URL BUCKET KEYS N SLEEP_US
 *       nats.c's kvStore_WatchAll on a bucket holding KEYS keys: the current
 *       values until the NULL entry that marks them done, then updates, until
 *       revisions 1..N are all handled; SLEEP_US after each entry.  Prints
 *       READY, then "MARK ..." once revisions 1..KEYS are handled (the
 *       script's cue to publish the updates), then RESULT.
 *   Both readers stop once 1..N are handled (then read on for
 *   RAWLOOP_LINGER_MS, default 200, to count late duplicates), or once
 *   nothing came for RAWLOOP_IDLE_MS (default 12000: longer than two of the
 *   ordered consumer's 5 s heartbeats, so a recovery the library makes on a
 *   missed heartbeat is waited for).
 *
 * Every connection sets natsOptions_SetSendAsap(true), as jethost's does
 * (env RAWLOOP_SENDASAP=0 turns it off).  Each mode prints one line starting
 * with "RESULT " of key=value pairs; rates are messages per second; rss_kb is
 * this process's peak RSS (VmHWM); cpu_ms its user + system CPU time.  Exit status 0 on success.
 *
 * Built a second time as rawloop-stack (RAWLOOP_STACK): the same loops in a
 * process that also carries the libraries jethost is built on (GLib,
 * GObject, GIO, json-glib), loaded and started as the host starts them
 * before its first binding.  Its peak RSS is the floor under any host on
 * this stack; jethost's one binding over it is what the host itself adds.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>

#include "tally.h"

#ifdef RAWLOOP_STACK
#include <signal.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <json-glib/json-glib.h>

static gboolean stack_signal(gpointer data)
{
    (void)data;
    return G_SOURCE_CONTINUE;
}

/* What `jethost run` does with its libraries before its first binding:
 * options, a key file, a JSON document (the type system), a main context
 * with signal sources (GLib's worker thread).  GIO is loaded, as the host's
 * is, and not called: the host calls it for its ops listener and embedded
 * server, neither of which the benchmark starts. */
static void stack_start(int *argc, char ***argv)
{
    static gpointer volatile gio_loaded;
    gio_loaded = (gpointer)g_cancellable_new;
    GOptionContext *oc = g_option_context_new(NULL);
    g_option_context_set_ignore_unknown_options(oc, TRUE);
    g_option_context_set_help_enabled(oc, FALSE);
    (void)g_option_context_parse(oc, argc, argv, NULL);
    GKeyFile *kf = g_key_file_new();
    (void)g_key_file_load_from_data(kf, "[host]\nserver = nats://127.0.0.1:4222\n", -1, G_KEY_FILE_NONE, NULL);
    JsonParser *jp = json_parser_new();
    (void)json_parser_load_from_data(jp, "{\"type\":\"io.nats.jetstream.api.v1.consumer_info_response\"}", -1, NULL);
    GMainLoop *loop = g_main_loop_new(NULL, FALSE);
    g_unix_signal_add(SIGHUP, stack_signal, loop);
    g_print("STACK glib %u.%u.%u json-glib %s gio %s\n", glib_major_version, glib_minor_version, glib_micro_version,
            JSON_VERSION_S, gio_loaded != NULL ? "loaded" : "missing");
    g_option_context_free(oc);
    g_key_file_unref(kf);
    g_object_unref(jp);
}
#endif

#define DIE_IF(s, what)                                                                  \
    do {                                                                                 \
        natsStatus s_ = (s);                                                             \
        if (s_ != NATS_OK) {                                                             \
            fprintf(stderr, "rawloop: %s: %s\n", (what), natsStatus_GetText(s_));        \
            nats_PrintLastErrorStack(stderr);                                            \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

static int64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
    return clock_ns(CLOCK_MONOTONIC);
}

static void sleep_until_mono(int64_t t)
{
    struct timespec ts = { .tv_sec = (time_t)(t / 1000000000), .tv_nsec = (long)(t % 1000000000) };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

static long peak_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "VmHWM:", 6) == 0)
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* User + system CPU of this process so far, ms. */
static long cpu_ms(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? strtol(v, NULL, 10) : dflt;
}

static long arg_long(const char *s, const char *what, long min)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min) {
        fprintf(stderr, "rawloop: bad %s '%s'\n", what, s);
        exit(1);
    }
    return v;
}

/* Slow-consumer reports to the connection's error callback (one per episode:
 * the library reports again only after a message was accepted in between). */
static long slow_callbacks;

static void on_async_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
    (void)nc;
    (void)sub;
    (void)closure;
    if (err == NATS_SLOW_CONSUMER)
        __atomic_add_fetch(&slow_callbacks, 1, __ATOMIC_RELAXED);
}

static natsConnection *connect_to(const char *url)
{
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    DIE_IF(natsOptions_Create(&o), "options");
    DIE_IF(natsOptions_SetURL(o, url), "url");
    DIE_IF(natsOptions_SetErrorHandler(o, on_async_error, NULL), "error handler");
    DIE_IF(natsOptions_SetSendAsap(o, env_long("RAWLOOP_SENDASAP", 1) != 0), "send asap");
    DIE_IF(natsOptions_SetTimeout(o, 2000), "timeout");
    DIE_IF(natsConnection_Connect(&nc, o), "connect");
    natsOptions_Destroy(o);
    return nc;
}

static jsCtx *js_for(natsConnection *nc)
{
    jsCtx *js = NULL;
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.PublishAsync.MaxPending = 4096;
    /* A publisher at full speed beside a server busy pushing to a slow
     * reader waits for its pub-acks; the library's 200 ms would fail it. */
    jo.PublishAsync.StallWait = 60000;
    DIE_IF(natsConnection_JetStream(&js, nc, &jo), "jetstream context");
    return js;
}

static void disconnect(jsCtx *js, natsConnection *nc)
{
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

/* --- publish ----------------------------------------------------------- */

/* Publishes n messages of size bytes and waits for every pub-ack: all to
 * subject, or with keys > 0 to subject.<i % keys>. */
static void publish_n(jsCtx *js, const char *subject, long keys, long n, long size)
{
    char *payload = malloc((size_t)size + 1);
    char subj[512];
    if (payload == NULL) {
        fprintf(stderr, "rawloop: out of memory\n");
        exit(2);
    }
    memset(payload, 'x', (size_t)size);
    for (long i = 0; i < n; i++) {
        if (keys > 0)
            snprintf(subj, sizeof subj, "%s.%ld", subject, i % keys);
        DIE_IF(js_PublishAsync(js, keys > 0 ? subj : subject, payload, (int)size, NULL), "publish");
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 60000;
    DIE_IF(js_PublishAsyncComplete(js, &po), "publish complete");
    free(payload);
}

static int mode_publish(const char *url, const char *stream, const char *subject, long n, long size)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    jsStreamConfig sc;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    const char *subjects[] = { subject };

    js_DeleteStream(js, stream, NULL, NULL);   /* may not exist */
    jsStreamConfig_Init(&sc);
    sc.Name = stream;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s != NATS_OK)
        fprintf(stderr, "rawloop: add stream: error code %d\n", (int)jerr);
    DIE_IF(s, "add stream");
    jsStreamInfo_Destroy(si);

    int64_t t0 = mono_ns();
    publish_n(js, subject, 0, n, size);
    /* Every message must be in the stream. */
    si = NULL;
    DIE_IF(js_GetStreamInfo(&si, js, stream, NULL, NULL), "stream info");
    long stored = (long)si->State.Msgs;
    jsStreamInfo_Destroy(si);
    int n_failed = stored == n ? 0 : 1;
    if (n_failed)
        fprintf(stderr, "rawloop: the stream holds %ld messages, not %ld\n", stored, n);
    double secs = (double)(mono_ns() - t0) / 1e9;
    printf("RESULT mode=publish n=%ld size=%ld secs=%.3f rate=%.0f failed=%d rss_kb=%ld\n", n, size, secs,
           secs > 0 ? (double)n / secs : 0.0, n_failed, peak_rss_kb());
    disconnect(js, nc);
    return n_failed == 0 ? 0 : 2;
}

/* --- the two pull-and-ack loops ---------------------------------------- */

static void make_consumer_acking(jsCtx *js, const char *stream, const char *consumer, bool ack)
{
    jsConsumerConfig cc;
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;

    js_DeleteConsumer(js, stream, consumer, NULL, NULL);   /* a fresh one */
    jsConsumerConfig_Init(&cc);
    cc.Durable = consumer;
    cc.AckPolicy = ack ? js_AckExplicit : js_AckNone;
    cc.DeliverPolicy = js_DeliverAll;
    cc.AckWait = (int64_t)30 * 1000000000;
    cc.MaxDeliver = -1;
    cc.MaxAckPending = ack ? 1000 : -1;
    natsStatus s = js_AddConsumer(&ci, js, stream, &cc, NULL, &jerr);
    if (s != NATS_OK)
        fprintf(stderr, "rawloop: add consumer: error code %d\n", (int)jerr);
    DIE_IF(s, "add consumer");
    jsConsumerInfo_Destroy(ci);
}

static void make_consumer(jsCtx *js, const char *stream, const char *consumer)
{
    make_consumer_acking(js, stream, consumer, true);
}

static void print_loop_result(const char *mode, long batch, long n, int64_t t0, int64_t t1, long pulls,
                              long statuses)
{
    double secs = (double)(t1 - t0) / 1e9;
    printf("RESULT mode=%s batch=%ld n=%ld secs=%.3f rate=%.0f pulls=%ld statuses=%ld rss_kb=%ld cpu_ms=%ld\n", mode,
           batch, n, secs, secs > 0 ? (double)n / secs : 0.0, pulls, statuses, peak_rss_kb(), cpu_ms());
}

static int mode_fetch(const char *url, const char *stream, const char *consumer, long n, long batch)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    const int64_t expires_ns = env_long("RAWLOOP_EXPIRES_MS", 30000) * 1000000;
    const int64_t hb_ns = env_long("RAWLOOP_HB_MS", 5000) * 1000000;
    long got = 0, pulls = 0, timeouts = 0;

    if (env_long("RAWLOOP_BIND", 0) == 0)
        make_consumer(js, stream, consumer);
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = consumer;
    natsStatus s = js_PullSubscribe(&sub, js, NULL, consumer, NULL, &so, &jerr);
    if (s != NATS_OK)
        fprintf(stderr, "rawloop: pull subscribe: error code %d\n", (int)jerr);
    DIE_IF(s, "pull subscribe");

    int64_t t0 = mono_ns();
    while (got < n) {
        natsMsgList list = { 0 };
        jsFetchRequest req;
        jsFetchRequest_Init(&req);   /* FetchRequest mutates it: a fresh one each time */
        req.Batch = (int)(n - got < batch ? n - got : batch);
        req.Expires = expires_ns;
        req.Heartbeat = hb_ns;
        pulls++;
        s = natsSubscription_FetchRequest(&list, sub, &req);
        if (s == NATS_TIMEOUT) {
            timeouts++;
            continue;
        }
        DIE_IF(s, "fetch");
        for (int i = 0; i < list.Count; i++) {
            DIE_IF(natsMsg_Ack(list.Msgs[i], NULL), "ack");
            got++;
        }
        natsMsgList_Destroy(&list);
    }
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    print_loop_result("fetch", batch, got, t0, t1, pulls, timeouts);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    disconnect(js, nc);
    return 0;
}

/* rawloop async: what a plain nats.c program does with the same
 * concurrency as a binding's max_in_flight: fetch what there is room for,
 * hand each message to simulated I/O (a thread that acks it DELAY_MS
 * after it was taken), never more than INFLIGHT at once. */
typedef struct AsyncJob {
    natsMsg *m;
    int64_t due_ns;
    struct AsyncJob *next;
} AsyncJob;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    AsyncJob *head, *tail;
    long outstanding, acked, n;
} AsyncIo;

static void *async_io(void *arg)
{
    AsyncIo *io = arg;
    pthread_mutex_lock(&io->lock);
    while (io->acked < io->n) {
        AsyncJob *j = io->head;
        if (j == NULL) {
            pthread_cond_wait(&io->cond, &io->lock);
            continue;
        }
        int64_t left = j->due_ns - mono_ns();
        if (left > 0) {
            pthread_mutex_unlock(&io->lock);
            struct timespec ts = { .tv_sec = (time_t)(left / 1000000000), .tv_nsec = (long)(left % 1000000000) };
            while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
            pthread_mutex_lock(&io->lock);
            continue;
        }
        io->head = j->next;
        if (io->head == NULL)
            io->tail = NULL;
        pthread_mutex_unlock(&io->lock);
        DIE_IF(natsMsg_Ack(j->m, NULL), "ack");
        natsMsg_Destroy(j->m);
        free(j);
        pthread_mutex_lock(&io->lock);
        io->outstanding--;
        io->acked++;
        pthread_cond_broadcast(&io->cond);
    }
    pthread_mutex_unlock(&io->lock);
    return NULL;
}

static int mode_async(const char *url, const char *stream, const char *consumer, long n, long batch, long inflight,
                      long delay_ms)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    long got = 0, pulls = 0, timeouts = 0;
    make_consumer(js, stream, consumer);
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = consumer;
    DIE_IF(js_PullSubscribe(&sub, js, NULL, consumer, NULL, &so, &jerr), "pull subscribe");
    AsyncIo io = { .n = n };
    pthread_mutex_init(&io.lock, NULL);
    pthread_cond_init(&io.cond, NULL);
    pthread_t tid;
    if (pthread_create(&tid, NULL, async_io, &io) != 0) {
        fprintf(stderr, "rawloop: cannot start a thread\n");
        return 1;
    }
    int64_t t0 = mono_ns();
    while (got < n) {
        pthread_mutex_lock(&io.lock);
        while (io.outstanding >= inflight)
            pthread_cond_wait(&io.cond, &io.lock);
        long room = inflight - io.outstanding;
        pthread_mutex_unlock(&io.lock);
        natsMsgList list = { 0 };
        jsFetchRequest req;
        jsFetchRequest_Init(&req);
        long want = n - got < batch ? n - got : batch;
        req.Batch = (int)(want < room ? want : room);
        req.Expires = (int64_t)30 * 1000000000;
        req.Heartbeat = (int64_t)5 * 1000000000;
        pulls++;
        natsStatus s = natsSubscription_FetchRequest(&list, sub, &req);
        if (s == NATS_TIMEOUT) {
            timeouts++;
            continue;
        }
        DIE_IF(s, "fetch");
        int64_t due = mono_ns() + delay_ms * 1000000;
        pthread_mutex_lock(&io.lock);
        for (int i = 0; i < list.Count; i++) {
            AsyncJob *j = calloc(1, sizeof *j);
            if (j == NULL) {
                fprintf(stderr, "rawloop: out of memory\n");
                return 1;
            }
            j->m = list.Msgs[i];
            list.Msgs[i] = NULL;
            j->due_ns = due;
            if (io.tail != NULL)
                io.tail->next = j;
            else
                io.head = j;
            io.tail = j;
            io.outstanding++;
            got++;
        }
        pthread_cond_broadcast(&io.cond);
        pthread_mutex_unlock(&io.lock);
        natsMsgList_Destroy(&list);
    }
    pthread_join(tid, NULL);
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    print_loop_result("async", batch, got, t0, t1, pulls, timeouts);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    disconnect(js, nc);
    return 0;
}

static int mode_sink(const char *url, const char *stream, const char *consumer, long n, long batch, const char *path,
                     long each)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    long got = 0, pulls = 0, timeouts = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "rawloop: %s: %s\n", path, strerror(errno));
        return 1;
    }
    make_consumer(js, stream, consumer);
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = consumer;
    DIE_IF(js_PullSubscribe(&sub, js, NULL, consumer, NULL, &so, &jerr), "pull subscribe");
    int64_t t0 = mono_ns();
    while (got < n) {
        natsMsgList list = { 0 };
        jsFetchRequest req;
        jsFetchRequest_Init(&req);
        req.Batch = (int)(n - got < batch ? n - got : batch);
        req.Expires = (int64_t)30 * 1000000000;
        req.Heartbeat = (int64_t)5 * 1000000000;
        pulls++;
        natsStatus s = natsSubscription_FetchRequest(&list, sub, &req);
        if (s == NATS_TIMEOUT) {
            timeouts++;
            continue;
        }
        DIE_IF(s, "fetch");
        for (int i = 0; i < list.Count; i++) {
            struct iovec iov[2] = { { (void *)natsMsg_GetData(list.Msgs[i]), (size_t)natsMsg_GetDataLength(list.Msgs[i]) },
                                    { (void *)"\n", 1 } };
            if (writev(fd, iov, 2) < 0 || (each && fdatasync(fd) != 0)) {
                fprintf(stderr, "rawloop: %s: %s\n", path, strerror(errno));
                return 1;
            }
        }
        if (!each && fdatasync(fd) != 0) {
            fprintf(stderr, "rawloop: %s: %s\n", path, strerror(errno));
            return 1;
        }
        for (int i = 0; i < list.Count; i++) {
            DIE_IF(natsMsg_Ack(list.Msgs[i], NULL), "ack");
            got++;
        }
        natsMsgList_Destroy(&list);
    }
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    close(fd);
    print_loop_result(each ? "sink_each" : "sink", batch, got, t0, t1, pulls, timeouts);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    disconnect(js, nc);
    return 0;
}

/* The worker pool's shared state: the messages still to take, and the
 * consumer every puller binds to. */
struct pool {
    natsConnection *nc;
    jsCtx *js;
    const char *stream, *consumer;
    long batch, sleep_us;
    long left;      /* messages not yet taken, across the pullers */
    long handled;
    long pulls;
};

static void *pool_worker(void *arg)
{
    struct pool *p = arg;
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    const struct timespec pause = { .tv_sec = p->sleep_us / 1000000, .tv_nsec = (p->sleep_us % 1000000) * 1000 };

    jsSubOptions_Init(&so);
    so.Stream = p->stream;
    so.Consumer = p->consumer;
    DIE_IF(js_PullSubscribe(&sub, p->js, NULL, p->consumer, NULL, &so, &jerr), "pull subscribe");
    for (;;) {
        /* Claim the batch before pulling it, so the pullers together never
         * ask for more than N and the last ones stop instead of waiting for
         * messages that will not come. */
        long want = p->batch, left = __atomic_load_n(&p->left, __ATOMIC_RELAXED);
        do {
            if (left <= 0)
                goto done;
            want = left < p->batch ? left : p->batch;
        } while (!__atomic_compare_exchange_n(&p->left, &left, left - want, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED));
        while (want > 0) {
            natsMsgList list = { 0 };
            jsFetchRequest req;
            jsFetchRequest_Init(&req);
            req.Batch = (int)want;
            req.Expires = (int64_t)30 * 1000000000;
            req.Heartbeat = (int64_t)5 * 1000000000;
            __atomic_add_fetch(&p->pulls, 1, __ATOMIC_RELAXED);
            natsStatus s = natsSubscription_FetchRequest(&list, sub, &req);
            if (s == NATS_TIMEOUT)
                continue;
            DIE_IF(s, "fetch");
            for (int i = 0; i < list.Count; i++) {
                if (p->sleep_us > 0)
                    nanosleep(&pause, NULL);
                DIE_IF(natsMsg_Ack(list.Msgs[i], NULL), "ack");
            }
            want -= list.Count;
            __atomic_add_fetch(&p->handled, list.Count, __ATOMIC_RELAXED);
            natsMsgList_Destroy(&list);
        }
    }
done:
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    return NULL;
}

/* K plain loops in one process, each its own consumer PREFIX_<i> on STREAM,
 * each taking all N: the bindings case's peer. */
static int mode_multi(const char *url, const char *stream, const char *prefix, long k, long n, long batch)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    pthread_t tid[64];
    struct pool p[64];
    char names[64][128];

    if (k > 64) {
        fprintf(stderr, "rawloop: at most 64 loops\n");
        return 1;
    }
    for (long i = 0; i < k; i++) {
        snprintf(names[i], sizeof names[i], "%s_%ld", prefix, i);
        make_consumer(js, stream, names[i]);
        p[i] = (struct pool){ .nc = nc, .js = js, .stream = stream, .consumer = names[i], .batch = batch, .left = n };
    }
    int64_t t0 = mono_ns();
    for (long i = 0; i < k; i++)
        if (pthread_create(&tid[i], NULL, pool_worker, &p[i]) != 0) {
            fprintf(stderr, "rawloop: cannot start a loop\n");
            exit(2);
        }
    long handled = 0, pulls = 0;
    for (long i = 0; i < k; i++) {
        pthread_join(tid[i], NULL);
        handled += p[i].handled;
        pulls += p[i].pulls;
    }
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    print_loop_result("multi", batch, handled, t0, t1, pulls, 0);
    for (long i = 0; i < k; i++)
        js_DeleteConsumer(js, stream, names[i], NULL, NULL);
    disconnect(js, nc);
    return handled == k * n ? 0 : 3;
}

/* Acks counted on the wire: a core subscriber on $JS.ACK.<stream>.> sees
 * every ack any client sends for the stream, at the cost of one plain
 * delivery each, and no request to the consumer it would contend with. */
static long acks_seen;
static int64_t acks_first, acks_last;

static void on_ack(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    (void)closure;
    int64_t now = mono_ns();
    if (acks_seen++ == 0)
        acks_first = now;
    acks_last = now;
    natsMsg_Destroy(m);
}

static int mode_acks(const char *url, const char *stream, long total, long timeout_s)
{
    natsConnection *nc = connect_to(url);
    natsSubscription *sub = NULL;
    char subject[256];

    snprintf(subject, sizeof subject, "$JS.ACK.%s.>", stream);
    DIE_IF(natsConnection_Subscribe(&sub, nc, subject, on_ack, NULL), "subscribe");
    DIE_IF(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
    DIE_IF(natsConnection_Flush(nc), "flush");
    printf("READY\n");
    fflush(stdout);
    int64_t end = mono_ns() + (int64_t)timeout_s * 1000000000;
    /* the callback runs on one thread, the reads here are only a progress check */
    while (__atomic_load_n(&acks_seen, __ATOMIC_RELAXED) < total && mono_ns() < end)
        sleep_until_mono(mono_ns() + 20000000);
    natsSubscription_Unsubscribe(sub);
    long seen = __atomic_load_n(&acks_seen, __ATOMIC_ACQUIRE);
    double secs = (double)(acks_last - acks_first) / 1e9;
    printf("RESULT mode=acks n=%ld seen=%ld reached=%d secs=%.3f rate=%.0f\n", total, seen, seen >= total ? 1 : 0, secs,
           secs > 0 && seen > 1 ? (double)(seen - 1) / secs : 0.0);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(nc);
    return seen >= total ? 0 : 3;
}

static int mode_workers(const char *url, const char *stream, const char *consumer, long n, long batch, long workers,
                        long sleep_us)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    pthread_t tid[64];
    struct pool p = { .nc = nc, .js = js, .stream = stream, .consumer = consumer, .batch = batch,
                      .sleep_us = sleep_us, .left = n };

    if (workers > 64) {
        fprintf(stderr, "rawloop: at most 64 workers\n");
        return 1;
    }
    make_consumer(js, stream, consumer);
    int64_t t0 = mono_ns();
    for (long i = 0; i < workers; i++)
        if (pthread_create(&tid[i], NULL, pool_worker, &p) != 0) {
            fprintf(stderr, "rawloop: cannot start a worker\n");
            exit(2);
        }
    for (long i = 0; i < workers; i++)
        pthread_join(tid[i], NULL);
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    print_loop_result("workers", batch, p.handled, t0, t1, p.pulls, 0);
    disconnect(js, nc);
    return p.handled == n ? 0 : 3;
}

/* The id of the pull a message on <inbox>.<id> answers. */
static unsigned long pull_id_of(const char *subject)
{
    const char *dot = subject != NULL ? strrchr(subject, '.') : NULL;
    return dot != NULL ? strtoul(dot + 1, NULL, 10) : 0;
}

/* The publisher's CLOCK_MONOTONIC stamp at the start of a payload (see
 * `rawloop pace`); -1 when there is none. */
static int64_t payload_stamp(const char *p, int len)
{
    int64_t t = 0;
    int i = 0;
    for (; i < len && i < 20 && p[i] >= '0' && p[i] <= '9'; i++)
        t = t * 10 + (p[i] - '0');
    return i == 0 ? -1 : t;
}

static void write_latencies(const char *path, const int64_t *v, long n)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "rawloop: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    for (long i = 0; i < n; i++)
        fprintf(f, "%" PRId64 "\n", v[i]);
    if (fclose(f) != 0) {
        fprintf(stderr, "rawloop: writing %s failed\n", path);
        exit(1);
    }
}

static int mode_raw(const char *url, const char *stream, const char *consumer, long n, long batch, bool ack)
{
    /* With RAWLOOP_LATENCY_FILE, the loop records publish -> receipt for
     * every delivery whose payload carries a stamp (the plain peer of the
     * noop plugin's latency_file), written at the end. */
    const char *latency_file = getenv("RAWLOOP_LATENCY_FILE");
    int64_t *lat = latency_file != NULL ? calloc((size_t)n, sizeof *lat) : NULL;
    long n_lat = 0;
    if (latency_file != NULL && lat == NULL) {
        fprintf(stderr, "rawloop: out of memory\n");
        return 1;
    }
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    natsSubscription *sub = NULL;
    natsInbox *inbox = NULL;
    const int64_t expires_ns = env_long("RAWLOOP_EXPIRES_MS", 30000) * 1000000;
    const int64_t hb_ns = env_long("RAWLOOP_HB_MS", 5000) * 1000000;
    char next_subject[512], wildcard[128];
    long got = 0, pulls = 0, statuses = 0;
    unsigned long pull_id = 0;
    long want = 0, received = 0;   /* of the current pull */
    bool active = false;

    make_consumer_acking(js, stream, consumer, ack);
    snprintf(next_subject, sizeof next_subject, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream, consumer);
    DIE_IF(natsInbox_Create(&inbox), "inbox");
    snprintf(wildcard, sizeof wildcard, "%s.*", (const char *)inbox);
    DIE_IF(natsConnection_SubscribeSync(&sub, nc, wildcard), "subscribe");
    DIE_IF(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
    DIE_IF(natsConnection_Flush(nc), "flush");

    int64_t t0 = mono_ns();
    while (got < n) {
        if (!active) {
            char reply[160], body[160];
            want = n - got < batch ? n - got : batch;
            received = 0;
            snprintf(reply, sizeof reply, "%s.%lu", (const char *)inbox, ++pull_id);
            snprintf(body, sizeof body, "{\"batch\":%ld,\"expires\":%" PRId64 ",\"idle_heartbeat\":%" PRId64 "}", want,
                     expires_ns, hb_ns);
            DIE_IF(natsConnection_PublishRequestString(nc, next_subject, reply, body), "pull");
            pulls++;
            active = true;
        }
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, sub, (int64_t)(expires_ns / 1000000) + 10000);
        DIE_IF(s, "next message");
        const char *reply = natsMsg_GetReply(m);
        if (reply != NULL && strncmp(reply, "$JS.ACK.", 8) == 0) {
            if (lat != NULL && n_lat < n) {
                int64_t stamp = payload_stamp(natsMsg_GetData(m), natsMsg_GetDataLength(m));
                if (stamp >= 0)
                    lat[n_lat++] = mono_ns() - stamp;
            }
            if (ack)
                DIE_IF(natsConnection_PublishString(nc, reply, "+ACK"), "ack");
            got++;
            /* A delivery keeps the stream's subject, not the pull's reply:
             * with one pull outstanding it belongs to that pull. */
            if (++received == want)
                active = false;
        } else {
            /* A status: 100 heartbeats go on; anything else ends its pull. */
            const char *code = NULL;
            statuses++;
            if (natsMsgHeader_Get(m, "Status", &code) == NATS_OK && code != NULL && strcmp(code, "100") != 0 &&
                pull_id_of(natsMsg_GetSubject(m)) == pull_id)
                active = false;
        }
        natsMsg_Destroy(m);
    }
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    print_loop_result(ack ? "raw" : "ceiling", batch, got, t0, t1, pulls, statuses);
    if (lat != NULL) {
        write_latencies(latency_file, lat, n_lat);
        free(lat);
    }
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    disconnect(js, nc);
    return 0;
}

/* --- the failure path by hand ------------------------------------------ */

/* The stream sequence of a $JS.ACK reply subject: token 5 of the 9-token
 * form ($JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>),
 * token 7 of the form with domain and account hash (12 tokens); the
 * consumer's name two tokens before it (*consumer NULL when not found). */
static uint64_t ack_parse(const char *reply, const char **consumer, size_t *consumer_len)
{
    const char *tok[16];
    int n = 0;
    *consumer = NULL;
    *consumer_len = 0;
    if (reply == NULL)
        return 0;
    tok[n++] = reply;
    for (const char *p = reply; *p != '\0' && n < 16; p++)
        if (*p == '.')
            tok[n++] = p + 1;
    int at = n == 9 ? 5 : n >= 11 ? 7 : -1;
    if (at < 0)
        return 0;
    *consumer = tok[at - 2];
    *consumer_len = (size_t)(tok[at - 1] - tok[at - 2] - 1);
    return strtoull(tok[at], NULL, 10);
}

static uint64_t ack_stream_seq(const char *reply)
{
    const char *consumer;
    size_t len;
    return ack_parse(reply, &consumer, &len);
}

/* capture and forward share this loop: each message republished to
 * `subject` under a Nats-Msg-Id, its pub-ack waited for, then the origin
 * acked, as a request when `confirmed` (jethost confirms the ack of a
 * dead-lettered message, not that of a forwarded one).  With workers > 1
 * (capture only), as many threads run it on the one consumer, one
 * connection, each its own inbox subscription and its own strictly paced
 * pulls, claiming each pull's messages before it is sent so that together
 * they never ask for more than N (as `workers` does). */
struct republish {
    natsConnection *nc;
    jsCtx *js;
    const char *mode, *stream, *consumer, *subject;
    bool confirmed;
    long batch;
    long left;                                  /* not yet claimed */
    long got, pulls, statuses, duplicates;      /* atomics */
};

static void *republish_worker(void *arg)
{
    struct republish *r = arg;
    natsConnection *nc = r->nc;
    natsSubscription *sub = NULL;
    natsInbox *inbox = NULL;
    const int64_t expires_ns = env_long("RAWLOOP_EXPIRES_MS", 30000) * 1000000;
    const int64_t hb_ns = env_long("RAWLOOP_HB_MS", 5000) * 1000000;
    char next_subject[512], wildcard[128];
    unsigned long pull_id = 0;
    long claimed = 0;              /* claimed, not yet received */
    long want = 0, received = 0;   /* of the current pull */
    bool active = false;
    jsPubOptions po;

    jsPubOptions_Init(&po);
    po.MaxWait = 5000;   /* jethost's CAPTURE_TIMEOUT_MS */
    snprintf(next_subject, sizeof next_subject, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", r->stream, r->consumer);
    DIE_IF(natsInbox_Create(&inbox), "inbox");
    snprintf(wildcard, sizeof wildcard, "%s.*", (const char *)inbox);
    DIE_IF(natsConnection_SubscribeSync(&sub, nc, wildcard), "subscribe");
    DIE_IF(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
    DIE_IF(natsConnection_Flush(nc), "flush");

    for (;;) {
        if (!active) {
            if (claimed == 0) {
                long left = __atomic_load_n(&r->left, __ATOMIC_RELAXED), take;
                do {
                    if (left <= 0)
                        goto done;
                    take = left < r->batch ? left : r->batch;
                } while (!__atomic_compare_exchange_n(&r->left, &left, left - take, false, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED));
                claimed = take;
            }
            char reply[160], body[160];
            want = claimed;
            received = 0;
            snprintf(reply, sizeof reply, "%s.%lu", (const char *)inbox, ++pull_id);
            snprintf(body, sizeof body, "{\"batch\":%ld,\"expires\":%" PRId64 ",\"idle_heartbeat\":%" PRId64 "}", want,
                     expires_ns, hb_ns);
            DIE_IF(natsConnection_PublishRequestString(nc, next_subject, reply, body), "pull");
            __atomic_add_fetch(&r->pulls, 1, __ATOMIC_RELAXED);
            active = true;
        }
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, sub, (int64_t)(expires_ns / 1000000) + 10000);
        DIE_IF(s, "next message");
        const char *reply = natsMsg_GetReply(m);
        if (reply != NULL && strncmp(reply, "$JS.ACK.", 8) == 0) {
            /* 1. the copy, 2. its pub-ack, 3. the ack, 4. its confirmation */
            char msg_id[320];
            natsMsg *copy = NULL;
            jsPubAck *pa = NULL;
            jsErrCode jerr = 0;
            snprintf(msg_id, sizeof msg_id, "raw:%s.%s:%" PRIu64, r->stream, r->consumer, ack_stream_seq(reply));
            DIE_IF(natsMsg_Create(&copy, r->subject, NULL, natsMsg_GetData(m), natsMsg_GetDataLength(m)),
                   "republished message");
            DIE_IF(natsMsgHeader_Set(copy, "Nats-Msg-Id", msg_id), "msg id");
            s = js_PublishMsg(&pa, r->js, copy, &po, &jerr);
            if (s != NATS_OK)
                fprintf(stderr, "rawloop: %s publish: error code %d\n", r->mode, (int)jerr);
            DIE_IF(s, "republish");
            if (pa->Duplicate)
                __atomic_add_fetch(&r->duplicates, 1, __ATOMIC_RELAXED);
            jsPubAck_Destroy(pa);
            natsMsg_Destroy(copy);
            if (r->confirmed) {
                natsMsg *confirm = NULL;
                DIE_IF(natsConnection_Request(&confirm, nc, reply, "+ACK", 4, 5000), "confirmed ack");
                natsMsg_Destroy(confirm);
            } else {
                DIE_IF(natsConnection_PublishString(nc, reply, "+ACK"), "ack");
            }
            __atomic_add_fetch(&r->got, 1, __ATOMIC_RELAXED);
            claimed--;
            if (++received == want)
                active = false;
        } else {
            const char *code = NULL;
            __atomic_add_fetch(&r->statuses, 1, __ATOMIC_RELAXED);
            if (natsMsgHeader_Get(m, "Status", &code) == NATS_OK && code != NULL && strcmp(code, "100") != 0 &&
                pull_id_of(natsMsg_GetSubject(m)) == pull_id)
                active = false;   /* the rest of the claim is pulled again */
        }
        natsMsg_Destroy(m);
    }
done:
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    return NULL;
}

static int republish_loop(const char *mode, const char *url, const char *stream, const char *consumer, long n,
                          long batch, const char *subject, bool confirmed, long workers)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    pthread_t tid[64];
    struct republish r = { .nc = nc, .js = js, .mode = mode, .stream = stream, .consumer = consumer,
                           .subject = subject, .confirmed = confirmed, .batch = batch, .left = n };

    if (workers < 1 || workers > 64) {
        fprintf(stderr, "rawloop: 1 to 64 workers\n");
        return 1;
    }
    make_consumer(js, stream, consumer);
    int64_t t0 = mono_ns();
    if (workers == 1) {
        republish_worker(&r);
    } else {
        for (long i = 0; i < workers; i++)
            if (pthread_create(&tid[i], NULL, republish_worker, &r) != 0) {
                fprintf(stderr, "rawloop: cannot start a worker\n");
                exit(2);
            }
        for (long i = 0; i < workers; i++)
            pthread_join(tid[i], NULL);
    }
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    double secs = (double)(t1 - t0) / 1e9;
    printf("RESULT mode=%s batch=%ld workers=%ld n=%ld secs=%.3f rate=%.0f pulls=%ld statuses=%ld duplicates=%ld "
           "rss_kb=%ld cpu_ms=%ld\n", mode, batch, workers, r.got, secs, secs > 0 ? (double)r.got / secs : 0.0, r.pulls,
           r.statuses, r.duplicates, peak_rss_kb(), cpu_ms());
    disconnect(js, nc);
    return r.got == n ? 0 : 3;
}

static int mode_capture(const char *url, const char *stream, const char *consumer, long n, long batch,
                        const char *dlq_subject, long workers)
{
    return republish_loop("capture", url, stream, consumer, n, batch, dlq_subject, true, workers);
}

static int mode_forward(const char *url, const char *stream, const char *consumer, long n, long batch,
                        const char *target)
{
    return republish_loop("forward", url, stream, consumer, n, batch, target, false, 1);
}

/* --- the retry path by hand -------------------------------------------- */

/* A KV key token as jethost's ledger encodes a name: A-Z a-z 0-9 - kept,
 * every other byte _XX. */
static void ledger_token(char *out, size_t cap, const char *name)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p != '\0' && o + 4 < cap; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '_';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

/* The delivery count of a $JS.ACK reply subject (the token before the
 * stream sequence). */
static uint64_t ack_deliveries(const char *reply)
{
    const char *consumer;
    size_t len;
    if (ack_parse(reply, &consumer, &len) == 0 || consumer == NULL)
        return 0;
    const char *p = consumer + len + 1;   /* the token after the consumer */
    return strtoull(p, NULL, 10);
}

static int mode_retry(const char *url, const char *stream, const char *consumer, long n, long batch,
                      const char *bucket, long delay_ms)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    kvStore *kv = NULL;
    natsSubscription *sub = NULL;
    natsInbox *inbox = NULL;
    const int64_t expires_ns = env_long("RAWLOOP_EXPIRES_MS", 30000) * 1000000;
    const int64_t hb_ns = env_long("RAWLOOP_HB_MS", 5000) * 1000000;
    char next_subject[512], wildcard[128], stok[200], ctok[200], nak[64];
    long got = 0, naks = 0, deliveries = 0, pulls = 0, statuses = 0;
    unsigned long pull_id = 0;
    long want = 0, received = 0;
    bool active = false;

    DIE_IF(js_KeyValue(&kv, js, bucket), "bind bucket");
    ledger_token(stok, sizeof stok, stream);
    ledger_token(ctok, sizeof ctok, consumer);
    snprintf(nak, sizeof nak, "-NAK {\"delay\": %" PRId64 "}", (int64_t)delay_ms * 1000000);
    make_consumer(js, stream, consumer);
    snprintf(next_subject, sizeof next_subject, "$JS.API.CONSUMER.MSG.NEXT.%s.%s", stream, consumer);
    DIE_IF(natsInbox_Create(&inbox), "inbox");
    snprintf(wildcard, sizeof wildcard, "%s.*", (const char *)inbox);
    DIE_IF(natsConnection_SubscribeSync(&sub, nc, wildcard), "subscribe");
    DIE_IF(natsSubscription_SetPendingLimits(sub, -1, -1), "pending limits");
    DIE_IF(natsConnection_Flush(nc), "flush");

    int64_t t0 = mono_ns();
    while (got < n) {
        if (!active) {
            /* every message is delivered twice: 2N deliveries in all */
            char reply[160], body[160];
            long rest = 2 * n - deliveries;
            want = rest < 1 ? 1 : rest < batch ? rest : batch;
            received = 0;
            snprintf(reply, sizeof reply, "%s.%lu", (const char *)inbox, ++pull_id);
            snprintf(body, sizeof body, "{\"batch\":%ld,\"expires\":%" PRId64 ",\"idle_heartbeat\":%" PRId64 "}", want,
                     expires_ns, hb_ns);
            DIE_IF(natsConnection_PublishRequestString(nc, next_subject, reply, body), "pull");
            pulls++;
            active = true;
        }
        natsMsg *m = NULL;
        natsStatus s = natsSubscription_NextMsg(&m, sub, (int64_t)(expires_ns / 1000000) + 10000);
        DIE_IF(s, "next message");
        const char *reply = natsMsg_GetReply(m);
        if (reply != NULL && strncmp(reply, "$JS.ACK.", 8) == 0) {
            char key[512];
            uint64_t seq = ack_stream_seq(reply);
            snprintf(key, sizeof key, "%s.%s.%" PRIu64, stok, ctok, seq);
            deliveries++;
            if (ack_deliveries(reply) <= 1) {
                /* the failure: the record written (create-only, as the
                 * ledger's first write), then the delayed NAK */
                char rec[256];
                uint64_t rev = 0;
                int len = snprintf(rec, sizeof rec, "{\"v\":1,\"f\":1,\"ff\":%" PRId64 ",\"lr\":\"raw: retry once\"}",
                                   clock_ns(CLOCK_REALTIME));
                DIE_IF(kvStore_Create(&rev, kv, key, rec, len), "ledger write");
                DIE_IF(natsConnection_PublishString(nc, reply, nak), "nak");
                naks++;
            } else {
                /* the redelivery: the record read (as jethost reads on
                 * every redelivery), the ack, the record deleted */
                kvEntry *e = NULL;
                s = kvStore_Get(&e, kv, key);
                if (s != NATS_OK && s != NATS_NOT_FOUND)
                    DIE_IF(s, "ledger read");
                kvEntry_Destroy(e);
                DIE_IF(natsConnection_PublishString(nc, reply, "+ACK"), "ack");
                DIE_IF(kvStore_Delete(kv, key), "ledger delete");
                got++;
            }
            if (++received == want)
                active = false;
        } else {
            const char *code = NULL;
            statuses++;
            if (natsMsgHeader_Get(m, "Status", &code) == NATS_OK && code != NULL && strcmp(code, "100") != 0 &&
                pull_id_of(natsMsg_GetSubject(m)) == pull_id)
                active = false;
        }
        natsMsg_Destroy(m);
    }
    int64_t t1 = mono_ns();
    DIE_IF(natsConnection_Flush(nc), "flush");
    double secs = (double)(t1 - t0) / 1e9;
    printf("RESULT mode=retry batch=%ld n=%ld secs=%.3f rate=%.0f naks=%ld deliveries=%ld pulls=%ld statuses=%ld "
           "rss_kb=%ld cpu_ms=%ld\n", batch, got, secs, secs > 0 ? (double)got / secs : 0.0, naks, deliveries, pulls,
           statuses, peak_rss_kb(), cpu_ms());
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    natsInbox_Destroy(inbox);
    kvStore_Destroy(kv);
    disconnect(js, nc);
    return 0;
}

/* Creates the durable CONSUMER afresh (as fetch does) and exits: for
 * several `RAWLOOP_BIND=1 rawloop fetch` processes sharing it. */
static int mode_mkcons(const char *url, const char *stream, const char *consumer)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    make_consumer(js, stream, consumer);
    disconnect(js, nc);
    return 0;
}

static int mode_dlq(const char *url, const char *stream, const char *subject)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    jsStreamConfig sc;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    const char *subjects[] = { subject };

    js_DeleteStream(js, stream, NULL, NULL);   /* may not exist */
    jsStreamConfig_Init(&sc);
    sc.Name = stream;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.Storage = js_FileStorage;
    sc.Retention = js_LimitsPolicy;
    sc.Duplicates = (int64_t)2 * 3600 * 1000000000;   /* JET_DLQ_DUPLICATE_WINDOW_NS */
    natsStatus s = js_AddStream(&si, js, &sc, NULL, &jerr);
    if (s != NATS_OK)
        fprintf(stderr, "rawloop: add stream: error code %d\n", (int)jerr);
    DIE_IF(s, "add DLQ stream");
    jsStreamInfo_Destroy(si);
    disconnect(js, nc);
    return 0;
}

static int mode_msgs(const char *url, const char *stream)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    jsStreamInfo *si = NULL;
    DIE_IF(js_GetStreamInfo(&si, js, stream, NULL, NULL), "stream info");
    printf("RESULT mode=msgs stream=%s msgs=%" PRIu64 "\n", stream, si->State.Msgs);
    jsStreamInfo_Destroy(si);
    disconnect(js, nc);
    return 0;
}

/* --- the ordered and KV readers ------------------------------------------- */

static int mode_send(const char *url, const char *subject, long keys, long n, long size)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    int64_t t0 = mono_ns();
    publish_n(js, subject, keys, n, size);
    double secs = (double)(mono_ns() - t0) / 1e9;
    printf("RESULT mode=send n=%ld secs=%.3f rate=%.0f\n", n, secs, secs > 0 ? (double)n / secs : 0.0);
    disconnect(js, nc);
    return 0;
}

static int mode_kvbucket(const char *url, const char *bucket, long history)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    kvConfig kc;
    kvStore *kv = NULL;
    js_DeleteKeyValue(js, bucket);   /* may not exist */
    kvConfig_Init(&kc);
    kc.Bucket = bucket;
    kc.History = (uint8_t)history;
    kc.StorageType = js_FileStorage;
    DIE_IF(js_CreateKeyValue(&kv, js, &kc), "create bucket");
    kvStore_Destroy(kv);
    disconnect(js, nc);
    return 0;
}

/* The slow handler's work: the same sleep as the noop plugin's option.sleep. */
static void nap_us(long us)
{
    struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* How long a reader waits: idle once it has seen a message, longer before the
 * first (the script publishes only after READY), and how long it reads on
 * after 1..N are complete. */
typedef struct reader_wait {
    int64_t idle_ns, start_ns, linger_ns, since, done_at;
} reader_wait;

static reader_wait reader_wait_init(void)
{
    return (reader_wait){
        .idle_ns = env_long("RAWLOOP_IDLE_MS", 12000) * 1000000,
        .start_ns = env_long("RAWLOOP_START_MS", 120000) * 1000000,
        .linger_ns = env_long("RAWLOOP_LINGER_MS", 200) * 1000000,
        .since = mono_ns(),
    };
}

/* The timeout for the next read in ms, or -1 when the reader is finished. */
static int64_t reader_next_timeout(reader_wait *w, const bench_tally *t)
{
    int64_t now = mono_ns();
    if (t->done_ns != 0) {
        if (w->done_at == 0)
            w->done_at = now;
        int64_t left = w->done_at + w->linger_ns - now;
        return left > 0 ? left / 1000000 + 1 : -1;
    }
    int64_t limit = t->handled > 0 ? w->idle_ns : w->start_ns;
    int64_t left = w->since + limit - now;
    return left > 0 ? left / 1000000 + 1 : -1;
}

static void print_tally(const char *tag, const char *mode, const bench_tally *t, const char *extra)
{
    char line[1024];
    tally_format(t, line, sizeof line);
    printf("%s mode=%s %s %s rss_kb=%ld cpu_ms=%ld\n", tag, mode, line, extra, peak_rss_kb(), cpu_ms());
    fflush(stdout);
}

static int mode_ordered(const char *url, const char *stream, const char *subject, long n, long sleep_us)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    natsSubscription *sub = NULL;
    jsSubOptions so;
    jsErrCode jerr = 0;
    bench_tally t;
    const long limit = env_long("RAWLOOP_PENDING_MSGS", 0);
    long slow = 0, mismatch = 0;

    if (tally_init(&t, (uint64_t)n, 0) != 0) {
        fprintf(stderr, "rawloop: out of memory\n");
        return 2;
    }
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Ordered = true;
    natsStatus s = js_SubscribeSync(&sub, js, subject, NULL, &so, &jerr);
    if (s != NATS_OK)
        fprintf(stderr, "rawloop: ordered subscribe: error code %d\n", (int)jerr);
    DIE_IF(s, "ordered subscribe");
    if (limit > 0)
        DIE_IF(natsSubscription_SetPendingLimits(sub, (int)limit, -1), "pending limits");
    DIE_IF(natsConnection_Flush(nc), "flush");
    printf("READY\n");
    fflush(stdout);

    reader_wait w = reader_wait_init();
    for (int64_t timeout; (timeout = reader_next_timeout(&w, &t)) >= 0;) {
        natsMsg *m = NULL;
        s = natsSubscription_NextMsg(&m, sub, timeout);
        if (s == NATS_TIMEOUT)
            continue;
        /* Reported once after messages were dropped, or after the library
         * saw a gap in the heartbeats; the subscription goes on. */
        if (s == NATS_SLOW_CONSUMER || s == NATS_MISMATCH) {
            slow += s == NATS_SLOW_CONSUMER;
            mismatch += s == NATS_MISMATCH;
            continue;
        }
        DIE_IF(s, "next message");
        const char *consumer;
        size_t consumer_len;
        uint64_t seq = ack_parse(natsMsg_GetReply(m), &consumer, &consumer_len);
        w.since = mono_ns();
        tally_add(&t, seq, consumer, consumer_len);
        natsMsg_Destroy(m);
        if (sleep_us > 0)
            nap_us(sleep_us);
    }
    int64_t dropped = 0;
    int max_msgs = 0, max_bytes = 0;
    natsSubscription_GetDropped(sub, &dropped);
    natsSubscription_GetMaxPending(sub, &max_msgs, &max_bytes);
    char extra[256];
    snprintf(extra, sizeof extra, "dropped=%" PRId64 " slow_errors=%ld slow_callbacks=%ld mismatch_errors=%ld "
             "max_pending=%d max_pending_bytes=%d", dropped, slow, __atomic_load_n(&slow_callbacks, __ATOMIC_RELAXED),
             mismatch, max_msgs, max_bytes);
    print_tally("RESULT", "ordered", &t, extra);
    tally_free(&t);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    disconnect(js, nc);
    return 0;
}

static int mode_kvwatch(const char *url, const char *bucket, long keys, long n, long sleep_us)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    kvStore *kv = NULL;
    kvWatcher *watcher = NULL;
    bench_tally t;
    int64_t initial_done_ns = 0;

    if (tally_init(&t, (uint64_t)n, (uint64_t)keys) != 0) {
        fprintf(stderr, "rawloop: out of memory\n");
        return 2;
    }
    DIE_IF(js_KeyValue(&kv, js, bucket), "bucket");
    DIE_IF(kvStore_WatchAll(&watcher, kv, NULL), "watch");
    printf("READY\n");
    fflush(stdout);

    reader_wait w = reader_wait_init();
    for (int64_t timeout; (timeout = reader_next_timeout(&w, &t)) >= 0;) {
        kvEntry *e = NULL;
        natsStatus s = kvWatcher_Next(&e, watcher, timeout);
        if (s == NATS_TIMEOUT)
            continue;
        DIE_IF(s, "watch next");
        if (e == NULL) {   /* the library's own mark: the current values are done */
            if (initial_done_ns == 0)
                initial_done_ns = tally_now_ns();
            continue;
        }
        w.since = mono_ns();
        if (tally_add(&t, kvEntry_Revision(e), NULL, 0) & TALLY_MARK)
            print_tally("MARK", "kvwatch", &t, "");
        kvEntry_Destroy(e);
        if (sleep_us > 0)
            nap_us(sleep_us);
    }
    char extra[128];
    snprintf(extra, sizeof extra, "initial_done_ns=%" PRId64, initial_done_ns);
    print_tally("RESULT", "kvwatch", &t, extra);
    tally_free(&t);
    kvWatcher_Destroy(watcher);
    kvStore_Destroy(kv);
    disconnect(js, nc);
    return 0;
}

/* --- consumer tools ------------------------------------------------------ */

static int mode_floor(const char *url, const char *stream, const char *consumer, long n, int64_t t0_wall,
                      long timeout_s)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    /* Every consumer-info request takes the consumer's lock on the server
     * the client is racing against: at 5 ms the poll itself slows a plain
     * Fetch loop by a fifth.  So the start is caught at 5 ms (before the
     * floor moves there is nothing to slow), then the floor is polled only
     * every POLL_MS, and the rate is the floor's slope between the first
     * movement and the last sample short of N: the last step, which a rare
     * poll would overstate, is interpolated at that slope. */
    const int64_t fast_ns = 5000000;
    const int64_t slow_ns = env_long("RAWLOOP_POLL_MS", 5) * 1000000;
    int64_t start = mono_ns(), first_t = 0, prev_t = 0;
    uint64_t first_floor = 0, floor = 0, prev_floor = 0;
    long polls = 0;
    bool seen = false, gone = false;

    for (;;) {
        jsConsumerInfo *ci = NULL;
        natsStatus s = js_GetConsumerInfo(&ci, js, stream, consumer, NULL, NULL);
        int64_t now = mono_ns();
        polls++;
        if (s == NATS_OK) {
            seen = true;
            floor = ci->AckFloor.Stream;
            jsConsumerInfo_Destroy(ci);
            if (floor > 0 && first_t == 0) {
                first_t = now;
                first_floor = floor;
            }
            if (floor >= (uint64_t)n)
                break;
            if (floor > 0) {
                prev_t = now;
                prev_floor = floor;
            }
        } else if (s == NATS_NOT_FOUND && seen) {
            /* Deleted by the client once it saw the floor itself (nats.js
             * consume.js and natsbench do): the floor was reached by now. */
            gone = true;
            break;
        } else if (s != NATS_NOT_FOUND) {
            DIE_IF(s, "consumer info");
        }
        if (now - start > (int64_t)timeout_s * 1000000000) {
            fprintf(stderr, "rawloop: ack floor %" PRIu64 " after %ld s, never reached %ld\n", floor, timeout_s, n);
            printf("RESULT mode=floor n=%ld reached=0 floor=%" PRIu64 "\n", n, floor);
            return 3;
        }
        sleep_until_mono(now + (first_t == 0 ? fast_ns : slow_ns));
    }
    int64_t end_wall = clock_ns(CLOCK_REALTIME), end = mono_ns();
    double total = (double)(end_wall - t0_wall) / 1e9;
    double steady = (double)(end - first_t) / 1e9;
    uint64_t steady_n = (uint64_t)n - first_floor;
    /* Steady rate: from the first ack-floor movement seen to the last, so the
     * process start, connect and consumer creation are left out alike for
     * every client.  Too short a run to see two points falls back to total. */
    double rate = steady_n > 0 && steady > 0 ? (double)steady_n / steady : (double)n / total;
    int interp = 0;
    if (slow_ns > fast_ns && prev_floor > first_floor && prev_t > first_t) {
        rate = (double)(prev_floor - first_floor) / ((double)(prev_t - first_t) / 1e9);
        steady = (double)steady_n / rate;
        interp = 1;
    }
    printf("RESULT mode=floor n=%ld reached=1 rate=%.0f total_secs=%.3f rate_total=%.0f steady_secs=%.3f "
           "steady_n=%" PRIu64 " polls=%ld gone=%d poll_ms=%ld interp=%d\n",
           n, rate, total, (double)n / total, steady, steady_n, polls, gone ? 1 : 0, (long)(slow_ns / 1000000),
           interp);
    disconnect(js, nc);
    return 0;
}

static int mode_del(const char *url, const char *stream, const char *consumer)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    natsStatus s = js_DeleteConsumer(js, stream, consumer, NULL, NULL);
    disconnect(js, nc);
    return s == NATS_OK || s == NATS_NOT_FOUND ? 0 : 2;
}

/* --- latency ------------------------------------------------------------ */

/* hot_percent, keys: 0 for one subject; else message i goes to
 * SUBJECT.hot when i % 100 < hot_percent, otherwise to SUBJECT.k<j % keys>
 * (j counting the others), so one key carries that share of the traffic
 * and the rest is spread (the lanes' hot-key case, docs/performance.md). */
static int mode_pace(const char *url, const char *subject, long count, long rate, long size, long hot_percent,
                     long keys)
{
    natsConnection *nc = connect_to(url);
    jsCtx *js = js_for(nc);
    char *payload = malloc((size_t)size + 32);
    const int64_t step = 1000000000 / rate;
    int64_t late_max = 0;

    if (payload == NULL)
        return 2;
    int64_t t0 = mono_ns() + 10000000;
    for (long i = 0; i < count; i++) {
        int64_t due = t0 + i * step;
        sleep_until_mono(due);
        int64_t now = mono_ns();
        if (now - due > late_max)
            late_max = now - due;
        int len = snprintf(payload, (size_t)size + 32, "%" PRId64 " ", now);
        if (len < size) {
            memset(payload + len, 'x', (size_t)(size - len));
            len = (int)size;
        }
        char keyed[256];
        const char *to = subject;
        if (keys > 0) {
            static long cold;
            if (i % 100 < hot_percent)
                snprintf(keyed, sizeof keyed, "%s.hot", subject);
            else
                snprintf(keyed, sizeof keyed, "%s.k%ld", subject, cold++ % keys);
            to = keyed;
        }
        DIE_IF(js_PublishAsync(js, to, payload, len, NULL), "publish");
    }
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = 30000;
    DIE_IF(js_PublishAsyncComplete(js, &po), "publish complete");
    double secs = (double)(mono_ns() - t0) / 1e9;
    printf("RESULT mode=pace n=%ld rate=%.0f target=%ld late_max_us=%.0f\n", count, (double)count / secs, rate,
           (double)late_max / 1e3);
    free(payload);
    disconnect(js, nc);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p of the samples at or below it. */
static int64_t percentile(const int64_t *sorted, size_t n, double p)
{
    size_t rank = (size_t)((double)n * p + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > n)
        rank = n;
    return sorted[rank - 1];
}

static void print_percentiles(const char *mode, int64_t *v, size_t n)
{
    if (n == 0) {
        printf("RESULT mode=%s n=0\n", mode);
        return;
    }
    qsort(v, n, sizeof *v, cmp_i64);
    printf("RESULT mode=%s n=%zu p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f\n", mode, n,
           (double)percentile(v, n, 0.50) / 1e3, (double)percentile(v, n, 0.99) / 1e3,
           (double)percentile(v, n, 0.999) / 1e3, (double)v[n - 1] / 1e3);
}

static void on_echo(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)sub;
    (void)closure;
    natsConnection_Publish(nc, natsMsg_GetReply(m), natsMsg_GetData(m), natsMsg_GetDataLength(m));
    natsMsg_Destroy(m);
}

static int mode_rtt(const char *url, long count, long rate, long size)
{
    natsConnection *req_nc = connect_to(url), *rep_nc = connect_to(url);
    natsSubscription *sub = NULL;
    int64_t *rtt = malloc((size_t)count * sizeof *rtt);
    char *payload = malloc((size_t)size);
    const int64_t step = 1000000000 / rate;
    const long warmup = 10;

    if (rtt == NULL || payload == NULL)
        return 2;
    memset(payload, 'x', (size_t)size);
    DIE_IF(natsConnection_Subscribe(&sub, rep_nc, "rawloop.rtt", on_echo, NULL), "subscribe");
    DIE_IF(natsConnection_Flush(rep_nc), "flush");
    int64_t t0 = mono_ns() + 10000000;
    size_t n = 0;
    for (long i = 0; i < count + warmup; i++) {
        sleep_until_mono(t0 + i * step);
        natsMsg *reply = NULL;
        int64_t a = mono_ns();
        DIE_IF(natsConnection_Request(&reply, req_nc, "rawloop.rtt", payload, (int)size, 5000), "request");
        int64_t b = mono_ns();
        natsMsg_Destroy(reply);
        if (i >= warmup)
            rtt[n++] = b - a;
    }
    print_percentiles("rtt", rtt, n);
    natsSubscription_Unsubscribe(sub);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(req_nc);
    natsConnection_Destroy(rep_nc);
    free(rtt);
    free(payload);
    return 0;
}

static int mode_pctl(const char *path)
{
    FILE *f = fopen(path, "r");
    size_t n = 0, cap = 4096;
    int64_t *v = malloc(cap * sizeof *v);
    long long x;
    if (f == NULL || v == NULL) {
        fprintf(stderr, "rawloop: cannot read %s\n", path);
        free(v);
        if (f != NULL)
            fclose(f);
        return 2;
    }
    while (fscanf(f, "%lld", &x) == 1) {
        if (n == cap) {
            int64_t *bigger = realloc(v, 2 * cap * sizeof *v);
            if (bigger == NULL)
                break;
            v = bigger;
            cap *= 2;
        }
        v[n++] = (int64_t)x;
    }
    fclose(f);
    print_percentiles("latency", v, n);
    free(v);
    return n > 0 ? 0 : 2;
}

static int usage(void)
{
    fprintf(stderr, "usage: rawloop publish URL STREAM SUBJECT N SIZE\n"
                    "       rawloop fetch|raw|ceiling URL STREAM CONSUMER N BATCH\n"
                    "       rawloop workers URL STREAM CONSUMER N BATCH WORKERS SLEEP_US\n"
                    "       rawloop multi URL STREAM PREFIX K N BATCH\n"
                    "       rawloop acks URL STREAM TOTAL TIMEOUT_S\n"
                    "       rawloop capture URL STREAM CONSUMER N BATCH DLQ_SUBJECT [WORKERS]\n"
                    "       rawloop retry URL STREAM CONSUMER N BATCH BUCKET DELAY_MS\n"
                    "       rawloop mkcons URL STREAM CONSUMER\n"
                    "       rawloop forward URL STREAM CONSUMER N BATCH SUBJECT\n"
                    "       rawloop dlq URL STREAM SUBJECT\n"
                    "       rawloop msgs URL STREAM\n"
                    "       rawloop floor URL STREAM CONSUMER N T0_NS TIMEOUT_S\n"
                    "       rawloop del URL STREAM CONSUMER\n"
                    "       rawloop pace URL SUBJECT COUNT RATE SIZE [HOT_PERCENT KEYS]\n"
                    "       rawloop rtt URL COUNT RATE SIZE\n"
                    "       rawloop pctl FILE\n"
                    "       rawloop send URL SUBJECT KEYS COUNT SIZE\n"
                    "       rawloop kvbucket URL BUCKET HISTORY\n"
                    "       rawloop ordered URL STREAM SUBJECT N SLEEP_US\n"
                    "       rawloop kvwatch URL BUCKET KEYS N SLEEP_US\n");
    return 1;
}

int main(int argc, char **argv)
{
    int rc;
#ifdef RAWLOOP_STACK
    stack_start(&argc, &argv);
#endif
    if (argc < 3)
        return usage();
    const char *mode = argv[1];
    if (strcmp(mode, "pctl") == 0)
        return argc == 3 ? mode_pctl(argv[2]) : usage();
    const char *url = argv[2];
    if (strcmp(mode, "publish") == 0 && argc == 7)
        rc = mode_publish(url, argv[3], argv[4], arg_long(argv[5], "N", 0), arg_long(argv[6], "SIZE", 1));
    else if (strcmp(mode, "sink") == 0 && argc == 9)
        rc = mode_sink(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1), argv[7],
                       arg_long(argv[8], "EACH", 0));
    else if (strcmp(mode, "async") == 0 && argc == 9)
        rc = mode_async(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1),
                        arg_long(argv[7], "INFLIGHT", 1), arg_long(argv[8], "DELAY_MS", 0));
    else if (strcmp(mode, "fetch") == 0 && argc == 7)
        rc = mode_fetch(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1));
    else if (strcmp(mode, "workers") == 0 && argc == 9)
        rc = mode_workers(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1),
                          arg_long(argv[7], "WORKERS", 1), arg_long(argv[8], "SLEEP_US", 0));
    else if (strcmp(mode, "multi") == 0 && argc == 8)
        rc = mode_multi(url, argv[3], argv[4], arg_long(argv[5], "K", 1), arg_long(argv[6], "N", 1),
                        arg_long(argv[7], "BATCH", 1));
    else if (strcmp(mode, "acks") == 0 && argc == 6)
        rc = mode_acks(url, argv[3], arg_long(argv[4], "TOTAL", 1), arg_long(argv[5], "TIMEOUT_S", 1));
    else if (strcmp(mode, "raw") == 0 && argc == 7)
        rc = mode_raw(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1), true);
    else if (strcmp(mode, "ceiling") == 0 && argc == 7)
        rc = mode_raw(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1), false);
    else if (strcmp(mode, "capture") == 0 && (argc == 8 || argc == 9))
        rc = mode_capture(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1), argv[7],
                          argc == 9 ? arg_long(argv[8], "WORKERS", 1) : 1);
    else if (strcmp(mode, "retry") == 0 && argc == 9)
        rc = mode_retry(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1), argv[7],
                        arg_long(argv[8], "DELAY_MS", 0));
    else if (strcmp(mode, "mkcons") == 0 && argc == 5)
        rc = mode_mkcons(url, argv[3], argv[4]);
    else if (strcmp(mode, "forward") == 0 && argc == 8)
        rc = mode_forward(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "BATCH", 1), argv[7]);
    else if (strcmp(mode, "dlq") == 0 && argc == 5)
        rc = mode_dlq(url, argv[3], argv[4]);
    else if (strcmp(mode, "msgs") == 0 && argc == 4)
        rc = mode_msgs(url, argv[3]);
    else if (strcmp(mode, "floor") == 0 && argc == 8)
        rc = mode_floor(url, argv[3], argv[4], arg_long(argv[5], "N", 1), (int64_t)strtoll(argv[6], NULL, 10),
                        arg_long(argv[7], "TIMEOUT_S", 1));
    else if (strcmp(mode, "del") == 0 && argc == 5)
        rc = mode_del(url, argv[3], argv[4]);
    else if (strcmp(mode, "pace") == 0 && (argc == 7 || argc == 9))
        rc = mode_pace(url, argv[3], arg_long(argv[4], "COUNT", 1), arg_long(argv[5], "RATE", 1),
                       arg_long(argv[6], "SIZE", 1), argc == 9 ? arg_long(argv[7], "HOT_PERCENT", 0) : 0,
                       argc == 9 ? arg_long(argv[8], "KEYS", 1) : 0);
    else if (strcmp(mode, "rtt") == 0 && argc == 6)
        rc = mode_rtt(url, arg_long(argv[3], "COUNT", 1), arg_long(argv[4], "RATE", 1), arg_long(argv[5], "SIZE", 1));
    else if (strcmp(mode, "send") == 0 && argc == 7)
        rc = mode_send(url, argv[3], arg_long(argv[4], "KEYS", 0), arg_long(argv[5], "COUNT", 0),
                       arg_long(argv[6], "SIZE", 1));
    else if (strcmp(mode, "kvbucket") == 0 && argc == 5)
        rc = mode_kvbucket(url, argv[3], arg_long(argv[4], "HISTORY", 1));
    else if (strcmp(mode, "ordered") == 0 && argc == 7)
        rc = mode_ordered(url, argv[3], argv[4], arg_long(argv[5], "N", 1), arg_long(argv[6], "SLEEP_US", 0));
    else if (strcmp(mode, "kvwatch") == 0 && argc == 7)
        rc = mode_kvwatch(url, argv[3], arg_long(argv[4], "KEYS", 0), arg_long(argv[5], "N", 1),
                          arg_long(argv[6], "SLEEP_US", 0));
    else
        return usage();
    fflush(stdout);
    nats_Close();
    return rc;
}
