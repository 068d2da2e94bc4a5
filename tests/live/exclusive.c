/* Exclusive bindings (docs/exclusive.md) under `jethost run`: two hosts on
 * one config against a real nats-server.
 *
 *   one-handles      only the claim's holder handles; the other stands by
 *   kill-takeover    SIGKILL the holder: the standby handles new messages
 *                    within claim_ttl + one pull window (measured)
 *   term-handover    SIGTERM the holder: it releases its claim after its
 *                    drain, and the standby handles within ~1 s of its exit
 *   holder-loses-claim
 *                    SIGSTOP the holder past claim_ttl: the standby takes
 *                    over; the woken holder stops and stands by, handling
 *                    nothing new, and takes the claim back when the other
 *                    host stops
 *   renew-conflict   the key written by someone else under the holder: its
 *                    renewal fails, it stops, and takes over once that
 *                    record goes unrenewed
 *   failed-start-released
 *                    a claim won by a host whose binding cannot start is
 *                    released at once (the claimer alone, its start failing)
 *   ordered, kv      an ordered binding and a KV watch with checkpoint = kv:
 *                    the standby makes no consumer, and after a SIGTERM of
 *                    the holder mid-stream it resumes after the holder's
 *                    last message: each handled once, none skipped
 *
 * Each host runs the shipped `paced` plugin appending to a file of its own,
 * so what a host handled is the lines of its file. */
#include "harness.h"
#include "conn.h"
#include "exclusive.h"
#include "ledger.h"

#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#define TTL_MS 2000
#define HEARTBEAT_MS 500
#define STANDBY_POLL_MS 250

typedef struct {
    GSubprocess *proc;
    char *errlog;
    char *out;       /* paced's file */
} Host;

typedef enum { KIND_DURABLE, KIND_ORDERED, KIND_KV } Kind;

#define KV_BUCKET "CFG"

/* The binding's keys that differ by kind; the claim's are the same. */
static const char *kind_keys(Kind kind)
{
    switch (kind) {
    case KIND_ORDERED:
        return "stream = ORDERS\nsubjects = orders.>\nkind = ordered\ndeliver = all\ncheckpoint = kv\n"
               "batch = 10\nexpires = 1s\nidle_heartbeat = 500ms\n";
    case KIND_KV:
        return "kind = kv\nbucket = " KV_BUCKET "\ninitial = true\ncheckpoint = kv\n"
               "batch = 10\nexpires = 1s\nidle_heartbeat = 500ms\n";
    case KIND_DURABLE:
    default:
        return "stream = ORDERS\nconsumer = audit\nsubjects = orders.>\n"
               "ack_wait = 2s\nexpires = 1s\nidle_heartbeat = 500ms\nfloor_age = 0\n";
    }
}

/* rate: paced's option.rate, "0" for unlimited. */
static char *config_for(const char *url, const char *name, Kind kind, const char *rate, const char *out)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *plugin = jet_test_plugin_copy("paced");
    return g_strdup_printf("[host]\nserver = %s\nname = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n"
                           "[binding audit]\nplugin = %s\n%s"
                           "exclusive = true\nclaim_ttl = %ums\nclaim_heartbeat = %ums\n"
                           "option.path = %s\noption.rate = %s\n",
                           url, name, state, plugin, kind_keys(kind), TTL_MS, HEARTBEAT_MS, out, rate);
}

static void host_start_kind(Host *h, const char *url, const char *name, Kind kind, const char *rate)
{
    g_autofree char *outname = g_strdup_printf("%s.jsonl", name);
    h->out = g_build_filename(jet_test_private_dir(), outname, NULL);
    g_autofree char *text = config_for(url, name, kind, rate, h->out);
    g_autofree char *file = g_strdup_printf("%s.conf", name);
    g_autofree char *conf = jet_test_write_file(file, text);
    g_autofree char *errfile = g_strdup_printf("%s.stderr", name);
    h->errlog = g_build_filename(jet_test_private_dir(), errfile, NULL);
    const char *args[] = { "run", "-c", conf, NULL };
    h->proc = jet_test_jethost_spawn(h->errlog, args);
}

static void host_clear(Host *h)
{
    g_clear_object(&h->proc);
    g_clear_pointer(&h->errlog, g_free);
    g_clear_pointer(&h->out, g_free);
}

static guint file_lines(const char *path, const char *needle)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    return jet_test_count_lines(text, needle);
}

typedef struct {
    const char *path, *needle;
    guint n;
} LinesWait;

static gboolean lines_reached(gpointer data)
{
    LinesWait *w = data;
    return file_lines(w->path, w->needle) >= w->n;
}

static void wait_lines(const char *path, const char *needle, guint n, guint timeout_ms, const char *errlog)
{
    LinesWait w = { path, needle, n };
    if (!jet_test_wait_until(lines_reached, &w, timeout_ms)) {
        g_autofree char *log = NULL;
        g_file_get_contents(errlog, &log, NULL, NULL);
        g_error("%s: fewer than %u lines with '%s' after %u ms; log:\n%s", path, n, needle, timeout_ms,
                log != NULL ? log : "");
    }
}

/* Host A holds the claim, host B stands by (a handshake on their logs). */
static void start_pair_kind(JetTestServer *srv, const char *test, Kind kind, const char *rate, Host *a, Host *b)
{
    /* Files of their own per test: the private directory is the process's. */
    g_autofree char *na = g_strdup_printf("%s-a", test), *nb = g_strdup_printf("%s-b", test);
    host_start_kind(a, jet_test_server_url(srv), na, kind, rate);
    wait_lines(a->errlog, "event=claimed", 1, 20000, a->errlog);
    host_start_kind(b, jet_test_server_url(srv), nb, kind, rate);
    wait_lines(b->errlog, "event=standing-by", 1, 20000, b->errlog);
}

static void start_pair(JetTestServer *srv, const char *test, Host *a, Host *b)
{
    start_pair_kind(srv, test, KIND_DURABLE, "0", a, b);
}

static void publish(jsCtx *js, guint n);

/* A holds, B stands by, and A has handled five messages. */
static void pair_handling(JetTestServer *srv, jsCtx *js, const char *test, Host *a, Host *b)
{
    start_pair(srv, test, a, b);
    publish(js, 5);
    wait_lines(a->out, "\"stream_seq\"", 5, 20000, a->errlog);
}

/* Bodies m<first> .. m<first + n - 1>. */
static void publish_from(jsCtx *js, guint first, guint n)
{
    for (guint i = first; i < first + n; i++) {
        g_autofree char *body = g_strdup_printf("m%u", i);
        jsErrCode jerr = 0;
        natsStatus s = js_Publish(NULL, js, "orders.x", body, (int)strlen(body), NULL, &jerr);
        if (s != NATS_OK)
            g_error("publish: %s (%s, err %d)", natsStatus_GetText(s), nats_GetLastError(NULL), (int)jerr);
    }
}

static void publish(jsCtx *js, guint n)
{
    publish_from(js, 0, n);
}

static void stop_host(Host *h)
{
    g_subprocess_send_signal(h->proc, SIGTERM);
    int rc = jet_test_jethost_wait(h->proc, 20000);
    if (rc != 0) {
        g_autofree char *log = NULL;
        g_file_get_contents(h->errlog, &log, NULL, NULL);
        g_error("jethost exited with %d:\n%s", rc, log != NULL ? log : "");
    }
}

static void test_one_handles(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    start_pair(srv, "one", &a, &b);
    publish(js, 30);
    wait_lines(a.out, "\"stream_seq\"", 30, 20000, a.errlog);
    /* B saw the claim renewed all along: it never pulled. */
    g_usleep(2 * TTL_MS * 1000);   /* long enough for a wrongful takeover to show */
    g_assert_cmpuint(file_lines(a.out, "\"stream_seq\""), ==, 30);
    g_assert_cmpuint(file_lines(b.out, "\"stream_seq\""), ==, 0);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 0);
    g_assert_cmpuint(file_lines(b.errlog, "event=subscribed"), ==, 0);
    stop_host(&b);
    stop_host(&a);
    g_assert_cmpuint(file_lines(a.errlog, "event=claims-stopped"), ==, 1);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

static void test_kill_takeover(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    pair_handling(srv, js, "kill", &a, &b);

    gint64 t0 = g_get_monotonic_time();
    g_subprocess_send_signal(a.proc, SIGKILL);
    /* Gone before the next messages exist: a holder still alive for a moment
     * would take and settle some of them, and B would see fewer than five. */
    g_assert_cmpint(jet_test_jethost_wait(a.proc, 5000), !=, 0);
    publish(js, 5);
    wait_lines(b.out, "\"stream_seq\"", 1, 20000, b.errlog);
    gint64 first_ms = (g_get_monotonic_time() - t0) / 1000;
    wait_lines(b.out, "\"stream_seq\"", 5, 20000, b.errlog);
    g_test_message("SIGKILL of the holder to the standby's first handled message: %" G_GINT64_FORMAT
                   " ms (claim_ttl %u ms, claim_heartbeat %u ms)", first_ms, TTL_MS, HEARTBEAT_MS);
    g_printerr("# kill-takeover: %" G_GINT64_FORMAT " ms\n", first_ms);
    /* Never before claim_ttl - heartbeat (A's last renewal was at most a
     * heartbeat before the kill); within claim_ttl + a standby poll + one
     * pull window (the engine's start and first pull: 1.5 s is generous). */
    g_assert_cmpint(first_ms, >=, TTL_MS - HEARTBEAT_MS);
    g_assert_cmpint(first_ms, <=, TTL_MS + STANDBY_POLL_MS + 1500);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 1);
    stop_host(&b);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

static void test_term_handover(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    pair_handling(srv, js, "term", &a, &b);

    gint64 t0 = g_get_monotonic_time();
    stop_host(&a);
    gint64 exited_ms = (g_get_monotonic_time() - t0) / 1000;
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-released"), ==, 1);
    gint64 t1 = g_get_monotonic_time();
    publish(js, 5);
    wait_lines(b.out, "\"stream_seq\"", 5, 20000, b.errlog);
    gint64 handed_ms = (g_get_monotonic_time() - t1) / 1000;
    g_printerr("# term-handover: holder exited %" G_GINT64_FORMAT " ms after SIGTERM; standby handled all 5 "
               "%" G_GINT64_FORMAT " ms after that\n", exited_ms, handed_ms);
    /* Released, not expired: B claims at its next read (250 ms), then pulls. */
    g_assert_cmpint(handed_ms, <=, 1000 + STANDBY_POLL_MS);
    g_assert_cmpuint(file_lines(b.errlog, "event=claimed"), ==, 1);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 0);
    g_assert_cmpuint(file_lines(a.out, "\"stream_seq\""), ==, 5);
    stop_host(&b);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

/* The stream seqs (a KV entry's: its revision) a host's paced file holds,
 * in the order it handled them.  A line still being written is left out. */
static GArray *handled_seqs(const char *path)
{
    GArray *seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return seqs;
    char *line = text;
    for (char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        *nl = '\0';
        const char *at = strstr(line, "\"stream_seq\":");
        g_assert_nonnull(at);
        guint64 seq = g_ascii_strtoull(at + strlen("\"stream_seq\":"), NULL, 10);
        g_assert_cmpuint(seq, >=, 1);
        g_array_append_val(seqs, seq);
    }
    return seqs;
}

typedef struct {
    const char *path;
    guint64 seq;
} SeqWait;

static gboolean seq_handled(gpointer data)
{
    SeqWait *w = data;
    g_autoptr(GArray) seqs = handled_seqs(w->path);
    for (guint i = 0; i < seqs->len; i++)
        if (g_array_index(seqs, guint64, i) == w->seq)
            return TRUE;
    return FALSE;
}

typedef struct {
    const char *path, *other;   /* other: a second host's file, or NULL */
    guint64 from, to;
} RangeWait;

static void mark_seen(const char *path, guint64 from, guint64 to, gboolean *seen)
{
    g_autoptr(GArray) seqs = handled_seqs(path);
    for (guint i = 0; i < seqs->len; i++) {
        guint64 s = g_array_index(seqs, guint64, i);
        if (s >= from && s <= to)
            seen[s - from] = TRUE;
    }
}

/* Every stream seq from..to is in the file(s) (lines count duplicates: a
 * message redelivered after AckWait is two lines). */
static gboolean range_handled(gpointer data)
{
    RangeWait *w = data;
    g_autofree gboolean *seen = g_new0(gboolean, w->to - w->from + 1);
    mark_seen(w->path, w->from, w->to, seen);
    if (w->other != NULL)
        mark_seen(w->other, w->from, w->to, seen);
    for (guint64 s = w->from; s <= w->to; s++)
        if (!seen[s - w->from])
            return FALSE;
    return TRUE;
}

static void wait_range2(const char *path, const char *other, guint64 from, guint64 to, const char *errlog)
{
    RangeWait w = { path, other, from, to };
    if (!jet_test_wait_until(range_handled, &w, 20000))
        g_error("%s: not every stream seq from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT " after 20 s; log:\n%s",
                path, from, to, jet_test_read_text(errlog));
}

static void wait_range(const char *path, guint64 from, guint64 to, const char *errlog)
{
    wait_range2(path, NULL, from, to, errlog);
}

/* Waits until a log has a line with any of the needles (NULL-terminated). */
typedef struct {
    const char *path;
    const char *const *needles;
} AnyWait;

static gboolean any_logged(gpointer data)
{
    AnyWait *w = data;
    for (const char *const *n = w->needles; *n != NULL; n++)
        if (file_lines(w->path, *n) > 0)
            return TRUE;
    return FALSE;
}

/* SIGSTOP the holder for longer than claim_ttl: the standby takes the claim
 * while it sleeps.  Woken, the old holder must find out it no longer holds
 * the claim (a renewal now would fail its compare-and-set), stop its engine
 * and stand by behind the new holder, handling nothing more; when the new
 * holder stops, it wins the claim back and handles again.  Nothing
 * published along the way goes unhandled. */
static void test_holder_loses_claim(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    gint64 t0 = g_get_monotonic_time();
    pair_handling(srv, js, "lose", &a, &b);   /* stream seqs 1..5, by A */

    g_subprocess_send_signal(a.proc, SIGSTOP);
    gint64 stopped = g_get_monotonic_time();
    wait_lines(b.errlog, "event=taken-over", 1, 20000, b.errlog);
    gint64 taken_ms = (g_get_monotonic_time() - stopped) / 1000;
    publish_from(js, 5, 5);   /* 6..10 */
    wait_range(b.out, 6, 10, b.errlog);

    g_subprocess_send_signal(a.proc, SIGCONT);
    gint64 woken = g_get_monotonic_time();
    const char *const stops[] = { "event=claim-lost", "event=claim-expired", NULL };
    AnyWait aw = { a.errlog, stops };
    if (!jet_test_wait_until(any_logged, &aw, 20000))
        g_error("the woken holder did not stop; its log:\n%s", jet_test_read_text(a.errlog));
    /* Standing by again means its engine was stopped and joined first. */
    wait_lines(a.errlog, "event=standing-by", 1, 20000, a.errlog);
    gint64 noticed_ms = (g_get_monotonic_time() - woken) / 1000;
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-expired"), ==, 0);
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-lost"), ==, 1);
    g_assert_cmpuint(file_lines(a.errlog, "now held by lose-b"), ==, 1);
    g_assert_cmpuint(file_lines(a.errlog, "is held by lose-b"), ==, 1);

    /* Only the new holder handles what comes now.  Twenty messages: an
     * old holder still pulling would get some of them. */
    publish_from(js, 10, 20);   /* 11..30 */
    wait_range2(b.out, a.out, 11, 30, b.errlog);
    if (file_lines(a.out, "\"stream_seq\"") != 5)
        g_error("the old holder handled messages after it lost its claim:\n%s", jet_test_read_text(a.out));
    /* All of them by B before it stops: what it still held then would be
     * released to A, and rightly handled there. */
    wait_range(b.out, 11, 30, b.errlog);
    g_assert_cmpuint(file_lines(b.errlog, "event=claim-lost"), ==, 0);

    /* The new holder stops: the old one wins the claim back and handles. */
    stop_host(&b);
    g_assert_cmpuint(file_lines(b.errlog, "event=claim-released"), ==, 1);
    wait_lines(a.errlog, "event=claimed", 2, 20000, a.errlog);
    /* B's record, released: said so, never "of this run". */
    g_assert_cmpuint(file_lines(a.errlog, "taken from a released claim"), ==, 1);
    g_assert_cmpuint(file_lines(a.errlog, "taken back from a record of this run"), ==, 0);
    publish_from(js, 30, 5);   /* 31..35 */
    wait_range(a.out, 31, 35, a.errlog);
    stop_host(&a);
    g_assert_cmpuint(file_lines(a.errlog, "event=claims-stopped"), ==, 1);
    g_assert_cmpuint(file_lines(a.errlog, "claims won 2 (taken over from a silent holder 0), lost 1, expired 0"), ==,
                     1);

    /* Each of the 35 handled at least once, by one host or the other. */
    g_autoptr(GArray) sa = handled_seqs(a.out);
    g_autoptr(GArray) sb = handled_seqs(b.out);
    guint count[36] = { 0 };
    for (guint i = 0; i < sa->len + sb->len; i++) {
        gboolean by_a = i < sa->len;
        guint64 s = by_a ? g_array_index(sa, guint64, i) : g_array_index(sb, guint64, i - sa->len);
        if (s > 35)
            g_error("stream seq %" G_GUINT64_FORMAT " was never published", s);
        count[s]++;
        /* A handled 1..5 before its pause, 31..35 after it won back. */
        if (by_a && s > 5 && s <= 30)
            g_error("the old holder handled stream seq %" G_GUINT64_FORMAT " after losing its claim", s);
    }
    for (guint s = 1; s <= 35; s++)
        if (count[s] == 0)
            g_error("stream seq %u was never handled", s);
    g_printerr("# holder-loses-claim: standby took over %" G_GINT64_FORMAT " ms after SIGSTOP; the woken holder "
               "stood by %" G_GINT64_FORMAT " ms after SIGCONT; %" G_GINT64_FORMAT " ms in all\n", taken_ms,
               noticed_ms, (g_get_monotonic_time() - t0) / 1000);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

/* Of the lines of a host's paced file for stream seqs from..to, those of a
 * second or later delivery. */
static guint redelivered_in(const char *path, guint64 from, guint64 to)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    guint n = 0;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        const char *at = strstr(*l, "\"stream_seq\":");
        const char *d = strstr(*l, "\"deliveries\":");
        g_assert_nonnull(at);
        g_assert_nonnull(d);
        guint64 seq = g_ascii_strtoull(at + strlen("\"stream_seq\":"), NULL, 10);
        guint64 dn = g_ascii_strtoull(d + strlen("\"deliveries\":"), NULL, 10);
        if (seq >= from && seq <= to && dn > 1)
            n++;
    }
    return n;
}

/* The consumer's priority policy and pin timeout, as the server has them
 * ("" and 0 when it names none). */
static void consumer_priority(natsConnection *nc, char **policy, gint64 *timeout_ns, char **pinned_id)
{
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_RequestString(&reply, nc, "$JS.API.CONSUMER.INFO.ORDERS.audit", "", 5000);
    g_assert_cmpint(s, ==, NATS_OK);
    g_autoptr(JsonParser) p = json_parser_new();
    g_assert_true(json_parser_load_from_data(p, natsMsg_GetData(reply), natsMsg_GetDataLength(reply), NULL));
    natsMsg_Destroy(reply);
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    JsonObject *c = json_object_get_object_member(o, "config");
    *policy = g_strdup(json_object_has_member(c, "priority_policy") ? json_object_get_string_member(c, "priority_policy")
                                                                   : "");
    *timeout_ns = json_object_has_member(c, "priority_timeout") ? json_object_get_int_member(c, "priority_timeout") : 0;
    *pinned_id = NULL;
    if (json_object_has_member(o, "priority_groups")) {
        JsonArray *g = json_object_get_array_member(o, "priority_groups");
        JsonObject *g0 = json_array_get_length(g) > 0 ? json_array_get_object_element(g, 0) : NULL;
        if (g0 != NULL && json_object_has_member(g0, "pinned_client_id"))
            *pinned_id = g_strdup(json_object_get_string_member(g0, "pinned_client_id"));
    }
}

/* The server's fence (nats-server 2.11+): the consumer is a pinned
 * priority group, and the standby that takes over takes the pin, so a pull
 * the paused holder left waiting (expires = 10s here, far past claim_ttl)
 * gets nothing: every message published after the takeover reaches the new
 * holder on its first delivery.  On older servers the same run keeps the
 * claim alone: the waiting pull of the paused holder takes some of them,
 * which come back to the new holder after AckWait (counted and printed). */
static void test_pinned(void)
{
    guint version = jet_test_server_version();
    gboolean pins = version >= 21100;
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 }, b = { 0 };
    Host *hosts[2] = { &a, &b };
    const char *names[2] = { "pin-a", "pin-b" };
    for (guint i = 0; i < 2; i++) {
        Host *h = hosts[i];
        g_autofree char *outname = g_strdup_printf("%s.jsonl", names[i]);
        h->out = g_build_filename(jet_test_private_dir(), outname, NULL);
        g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
        g_autofree char *plugin = jet_test_plugin_copy("paced");
        g_autofree char *text = g_strdup_printf(
            "[host]\nserver = %s\nname = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n"
            "[binding audit]\nplugin = %s\nstream = ORDERS\nconsumer = audit\nsubjects = orders.>\n"
            "ack_wait = 2s\nexpires = 10s\nidle_heartbeat = 1s\nfloor_age = 0\n"
            "exclusive = true\nclaim_ttl = %ums\nclaim_heartbeat = %ums\noption.path = %s\noption.rate = 0\n",
            jet_test_server_url(srv), names[i], state, plugin, TTL_MS, HEARTBEAT_MS, h->out);
        h->proc = jet_test_jethost_spawn_config(names[i], text, &h->errlog);
        wait_lines(h->errlog, i == 0 ? "event=claimed" : "event=standing-by", 1, 20000, h->errlog);
    }
    publish(js, 5);
    wait_lines(a.out, "\"stream_seq\"", 5, 20000, a.errlog);

    g_autofree char *policy = NULL, *pin_a = NULL;
    gint64 timeout_ns = 0;
    consumer_priority(nc, &policy, &timeout_ns, &pin_a);
    if (pins) {
        g_assert_cmpstr(policy, ==, "pinned_client");
        g_assert_cmpint(timeout_ns, ==, (gint64)(10000 + TTL_MS) * 1000000);   /* expires + claim_ttl */
        g_assert_nonnull(pin_a);
        g_assert_cmpuint(file_lines(a.errlog, "event=pinned"), ==, 1);
    } else {
        g_assert_cmpstr(policy, ==, "");
        g_assert_cmpuint(file_lines(a.errlog, "event=pinned"), ==, 0);
    }

    /* A's next pull waits on the server (10 s) while A is stopped. */
    g_subprocess_send_signal(a.proc, SIGSTOP);
    wait_lines(b.errlog, "event=taken-over", 1, 20000, b.errlog);
    /* The fence stands once B has taken the pin, as its binding starts
     * after the claim: a message published between the two still goes to
     * A's waiting pull (seen once under load) and comes back after AckWait. */
    if (pins)
        wait_lines(b.errlog, "event=pin-taken", 1, 20000, b.errlog);
    publish_from(js, 5, 20);   /* 6..25 */
    wait_range(b.out, 6, 25, b.errlog);
    guint again = redelivered_in(b.out, 6, 25);
    if (pins) {
        if (again != 0)
            g_error("%u of the 20 messages published after the takeover went to the paused holder first:\n%s",
                    again, jet_test_read_text(b.out));
        g_assert_cmpuint(file_lines(b.errlog, "event=pin-taken"), ==, 1);
        g_assert_cmpuint(file_lines(b.errlog, "was taken from whoever held it"), ==, 1);
        g_autofree char *policy2 = NULL, *pin_b = NULL;
        consumer_priority(nc, &policy2, &timeout_ns, &pin_b);
        g_assert_nonnull(pin_b);
        g_assert_cmpstr(pin_b, !=, pin_a);
    }
    g_subprocess_send_signal(a.proc, SIGCONT);
    wait_lines(a.errlog, "event=standing-by", 1, 20000, a.errlog);
    publish_from(js, 25, 5);   /* 26..30 */
    wait_range(b.out, 26, 30, b.errlog);
    stop_host(&b);
    stop_host(&a);
    g_autoptr(GArray) sa = handled_seqs(a.out);
    for (guint i = 0; i < sa->len; i++)
        if (g_array_index(sa, guint64, i) > 5)
            g_error("the paused holder handled stream seq %" G_GUINT64_FORMAT " after the takeover",
                    g_array_index(sa, guint64, i));
    g_printerr("# pinned (%s): %u of 20 messages published after the takeover were delivered to the paused "
               "holder first\n", pins ? "nats-server 2.11+, a pinned priority group" : "no priority groups", again);
    host_clear(&a);
    host_clear(&b);
    jet_test_js_close(nc, js);
}

typedef struct {
    const char *out, *errlog;
    guint handled;           /* lines in out when the claim was lost */
    gboolean early;          /* a line more before the host logged its takeover */
} TakeBackWait;

static gboolean taken_back(gpointer data)
{
    TakeBackWait *w = data;
    /* The out file first: the takeover is logged before the engine starts,
     * so a line seen here with no takeover in the log read after it was
     * handled while the claim was another's. */
    guint lines = file_lines(w->out, "\"stream_seq\"");
    gboolean logged = file_lines(w->errlog, "event=taken-over") > 0;
    if (lines > w->handled && !logged)
        w->early = TRUE;
    return logged || w->early;
}

/* The renewal's compare-and-set: someone else writes the key under a
 * running holder (here the test, as a host named "intruder" that then goes
 * silent).  The holder's next renewal fails, it stops at once and stands by
 * behind the intruder, handling nothing, and takes the claim over once the
 * intruder's record has gone unrenewed for claim_ttl. */
static void test_renew_conflict(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    gint64 t0 = g_get_monotonic_time();
    Host a = { 0 };
    host_start_kind(&a, jet_test_server_url(srv), "conflict-a", KIND_DURABLE, "0");
    wait_lines(a.errlog, "event=claimed", 1, 20000, a.errlog);
    publish_from(js, 0, 5);
    wait_lines(a.out, "\"stream_seq\"", 5, 20000, a.errlog);

    kvStore *ledger = NULL;
    g_assert_cmpint(js_KeyValue(&ledger, js, "jethost_ledger"), ==, NATS_OK);
    const char *intruder = "{\"host\":\"intruder\",\"run\":\"0123456789abcdef0123456789abcdef\","
                           "\"renewed_ms\":0,\"state\":\"held\"}";
    g_assert_cmpint(kvStore_PutString(NULL, ledger, "claim.audit", intruder), ==, NATS_OK);
    gint64 put = g_get_monotonic_time();
    wait_lines(a.errlog, "event=claim-lost", 1, 20000, a.errlog);
    gint64 lost_ms = (g_get_monotonic_time() - put) / 1000;
    /* Found by the failed renewal, not by waiting out the fence. */
    g_assert_cmpuint(file_lines(a.errlog, "changed under us (now held by intruder)"), ==, 1);
    wait_lines(a.errlog, "is held by intruder", 1, 20000, a.errlog);

    /* Not handled while the intruder holds the claim; handled once the
     * host has taken it over. */
    TakeBackWait tw = { a.out, a.errlog, file_lines(a.out, "\"stream_seq\""), FALSE };
    g_assert_cmpuint(tw.handled, ==, 5);
    publish_from(js, 5, 5);
    if (!jet_test_wait_until(taken_back, &tw, 20000))
        g_error("no takeover from the silent intruder; log:\n%s", jet_test_read_text(a.errlog));
    if (tw.early)
        g_error("handled a message while the claim was the intruder's; log:\n%s", jet_test_read_text(a.errlog));
    gint64 back_ms = (g_get_monotonic_time() - put) / 1000;
    /* Taken over claim_ttl after the host first read the intruder's record. */
    g_assert_cmpint(back_ms, >=, TTL_MS);
    wait_range(a.out, 6, 10, a.errlog);
    stop_host(&a);
    g_assert_cmpuint(file_lines(a.errlog, "claims won 2 (taken over from a silent holder 1), lost 1, expired 0"), ==,
                     1);
    g_printerr("# renew-conflict: claim lost %" G_GINT64_FORMAT " ms after the key was overwritten, taken back after "
               "%" G_GINT64_FORMAT " ms; %" G_GINT64_FORMAT " ms in all\n", lost_ms, back_ms,
               (g_get_monotonic_time() - t0) / 1000);
    kvStore_Destroy(ledger);
    host_clear(&a);
    jet_test_js_close(nc, js);
}

/* Consumers on a stream whose names start with prefix. */
static guint consumers_named(jsCtx *js, const char *stream, const char *prefix)
{
    jsConsumerNamesList *list = NULL;
    g_assert_cmpint(js_ConsumerNames(&list, js, stream, NULL, NULL), ==, NATS_OK);
    guint n = 0;
    for (int i = 0; list != NULL && i < list->Count; i++)
        if (g_str_has_prefix(list->List[i], prefix))
            n++;
    jsConsumerNamesList_Destroy(list);
    return n;
}

/* An ordered binding or a KV watch, exclusive, checkpoint = kv: the holder
 * alone has a consumer and handles; SIGTERM it mid-stream and the standby
 * resumes after the last message it handled, so that each of the messages
 * is handled once across the two, in order, none skipped. */
static void test_ordered_kind(gconstpointer data)
{
    const Kind kind = GPOINTER_TO_INT(data);
    const gboolean kv = kind == KIND_KV;
    const char *stream = kv ? "KV_" KV_BUCKET : "ORDERS";
    const guint first = 30, more = 10, n = first + more;
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    kvStore *bucket = NULL;
    gint64 t0 = g_get_monotonic_time();
    if (kv) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = KV_BUCKET;
        kc.History = 1;
        g_assert_cmpint(js_CreateKeyValue(&bucket, js, &kc), ==, NATS_OK);
    }
    /* A paced holder (20 a second) is still busy when it is stopped. */
    Host a = { 0 }, b = { 0 };
    start_pair_kind(srv, kv ? "kv" : "ord", kind, "20", &a, &b);
    for (guint i = 0; i < first; i++) {
        if (kv) {
            g_autofree char *key = g_strdup_printf("app.k%02u", i);
            g_assert_cmpint(kvStore_PutString(NULL, bucket, key, "v1"), ==, NATS_OK);
        }
    }
    if (!kv)
        publish_from(js, 0, first);
    wait_lines(a.out, "\"stream_seq\"", 5, 20000, a.errlog);
    /* The standby bound nothing: one consumer, the holder's. */
    g_assert_cmpuint(consumers_named(js, stream, "jethost_ord_"), ==, 1);
    g_assert_cmpuint(file_lines(b.errlog, "event=ordered-consumer"), ==, 0);
    g_assert_cmpuint(file_lines(b.out, "\"stream_seq\""), ==, 0);

    stop_host(&a);
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-released"), ==, 1);
    g_autoptr(GArray) sa = handled_seqs(a.out);
    g_assert_cmpuint(sa->len, >=, 5);
    g_assert_cmpuint(sa->len, <, first);   /* stopped mid-stream, or the test shows nothing */
    const guint64 last = g_array_index(sa, guint64, sa->len - 1);
    wait_lines(b.errlog, "event=claimed", 1, 20000, b.errlog);
    g_autofree char *resuming = g_strdup_printf("resuming after stream seq %" G_GUINT64_FORMAT, last);
    wait_lines(b.errlog, resuming, 1, 20000, b.errlog);
    /* Keys of their own: with History = 1 a new value of a key the standby
     * has not read yet would remove the old one before it gets there (a
     * skip the KV semantics allow, which this count cannot tell apart). */
    for (guint i = 0; i < more; i++) {
        if (kv) {
            g_autofree char *key = g_strdup_printf("app.k%02u", first + i);
            g_assert_cmpint(kvStore_PutString(NULL, bucket, key, "v2"), ==, NATS_OK);
        }
    }
    if (!kv)
        publish_from(js, first, more);
    SeqWait sw = { b.out, n };
    if (!jet_test_wait_until(seq_handled, &sw, 30000))
        g_error("stream seq %u not handled by the new holder; its log:\n%s", n, jet_test_read_text(b.errlog));
    stop_host(&b);
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-lost"), ==, 0);
    g_assert_cmpuint(file_lines(b.errlog, "event=taken-over"), ==, 0);

    /* A's then B's: 1..n, each once, in order. */
    g_autoptr(GArray) sb = handled_seqs(b.out);
    g_assert_cmpuint(sa->len + sb->len, ==, n);
    for (guint i = 0; i < n; i++) {
        guint64 s = i < sa->len ? g_array_index(sa, guint64, i) : g_array_index(sb, guint64, i - sa->len);
        if (s != i + 1)
            g_error("handled[%u] is stream seq %" G_GUINT64_FORMAT ", expected %u (A handled %u, B %u)", i, s, i + 1,
                    sa->len, sb->len);
    }
    g_printerr("# %s: holder handled %u of %u before its SIGTERM, the standby the other %u; %" G_GINT64_FORMAT
               " ms in all\n", kv ? "kv" : "ordered", sa->len, n, sb->len, (g_get_monotonic_time() - t0) / 1000);
    host_clear(&a);
    host_clear(&b);
    if (bucket != NULL)
        kvStore_Destroy(bucket);
    jet_test_js_close(nc, js);
}

/* --- a holder paused and woken, again and again --------------------------- */

typedef struct {
    guint64 seq;
    gint64 start_ns, end_ns;
} Span;

/* fx_gate's handled.log: "<seq> <deliveries> <thread> <end ns> <f> <p> <verdict> <start ns>". */
static GArray *read_spans(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    GArray *a = g_array_new(FALSE, TRUE, sizeof(Span));
    if (!jet_test_read_lines(path, &text))
        return a;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        unsigned long long seq = 0, thread = 0;
        long long end = 0, start = 0;
        unsigned d = 0, f = 0, p = 0;
        char v = 0;
        if (sscanf(*l, "%llu %u %llx %lld %u %u %c %lld", &seq, &d, &thread, &end, &f, &p, &v, &start) != 8)
            g_error("%s: cannot read '%s'", path, *l);
        Span s = { seq, start, end };
        g_array_append_val(a, s);
    }
    return a;
}

typedef struct {
    const char *dir[2];
    guint n;
} CoverWait;

static gboolean all_covered(gpointer data)
{
    CoverWait *cw = data;
    g_autofree gboolean *seen = g_new0(gboolean, cw->n + 1);
    guint got = 0;
    for (guint h = 0; h < 2; h++) {
        g_autoptr(GArray) a = read_spans(cw->dir[h]);
        for (guint i = 0; i < a->len; i++) {
            guint64 s = g_array_index(a, Span, i).seq;
            if (s >= 1 && s <= cw->n && !seen[s]) {
                seen[s] = TRUE;
                got++;
            }
        }
    }
    return got == cw->n;
}

/* Which host holds the claim by its log: claims won minus claims given up. */
static gint holder_of(Host *h)
{
    for (guint i = 0; i < 2; i++) {
        g_autofree char *log = jet_test_read_text(h[i].errlog);
        gint won = (gint)(jet_test_count_lines(log, "event=claimed") + jet_test_count_lines(log, "event=taken-over"));
        gint lost = (gint)(jet_test_count_lines(log, "event=claim-lost") +
                           jet_test_count_lines(log, "event=claim-expired"));
        if (won > lost)
            return (gint)i;
    }
    return -1;
}

typedef struct {
    Host *h;
    gint holder;
} HolderWait;

static gboolean someone_holds(gpointer data)
{
    HolderWait *hw = data;
    hw->holder = holder_of(hw->h);
    return hw->holder >= 0;
}

static void host_start_gate(Host *h, const char *url, const char *name, const char *dir, gboolean keyed)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *plugin = jet_test_plugin_copy("fx_gate");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nname = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n"
        "[binding audit]\nplugin = %s\nstream = ORDERS\nconsumer = audit\nsubjects = orders.>\n"
        "workers = 4\nbatch = 8\nack_wait = 2s\nexpires = 1s\nidle_heartbeat = 500ms\nfloor_age = 0\n%s"
        "exclusive = true\nclaim_ttl = %ums\nclaim_heartbeat = %ums\noption.dir = %s\noption.sleep = 100ms\n",
        url, name, state, plugin, keyed ? "key = subject:2\n" : "", TTL_MS, HEARTBEAT_MS, dir);
    h->proc = jet_test_jethost_spawn_config(name, text, &h->errlog);
}

/* Two hosts on one exclusive binding, 4 workers, a 100 ms handler; the
 * holder SIGSTOPped and SIGCONTed ten times at seeded moments, for 0.5 to
 * 4 s (shorter and longer than claim_ttl): no handling by one host overlaps
 * one by the other, except one that was already running when its host was
 * paused (docs/exclusive.md, "The fence"), and every message is handled. */
static void test_paused_holder(gconstpointer data)
{
    gboolean keyed = GPOINTER_TO_INT(data);
    const char *env = g_getenv("JET_EXCLUSIVE_SEED");
    guint64 seed = env != NULL ? g_ascii_strtoull(env, NULL, 10) : (guint64)g_get_real_time();
    g_test_message("seed %" G_GUINT64_FORMAT " (JET_EXCLUSIVE_SEED=%" G_GUINT64_FORMAT " repeats it)", seed, seed);
    g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)seed);
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host h[2] = { { 0 }, { 0 } };
    char *dirs[2];
    for (guint i = 0; i < 2; i++) {
        g_autofree char *sub = g_strdup_printf("paused-%d-%u", keyed, i);
        dirs[i] = g_build_filename(jet_test_private_dir(), sub, NULL);
        g_assert_cmpint(g_mkdir_with_parents(dirs[i], 0700), ==, 0);
    }
    host_start_gate(&h[0], jet_test_server_url(srv), keyed ? "pausek-a" : "pause-a", dirs[0], keyed);
    wait_lines(h[0].errlog, "event=claimed", 1, 20000, h[0].errlog);
    host_start_gate(&h[1], jet_test_server_url(srv), keyed ? "pausek-b" : "pause-b", dirs[1], keyed);
    wait_lines(h[1].errlog, "event=standing-by", 1, 20000, h[1].errlog);

    const guint n = keyed ? 1200 : 1600;
    for (guint i = 0; i < n; i++) {
        g_autofree char *subject = g_strdup_printf("orders.k%u", i % 16);
        g_autofree char *body = g_strdup_printf("m%u", i);
        jsErrCode jerr = 0;
        if (js_Publish(NULL, js, subject, body, (int)strlen(body), NULL, &jerr) != NATS_OK)
            g_error("publish: %s (err %d)", nats_GetLastError(NULL), (int)jerr);
    }

    /* Pauses per host, [SIGSTOP sent, SIGCONT sent] on the fixture's clock
     * (CLOCK_MONOTONIC). */
    GArray *paused[2] = { g_array_new(FALSE, FALSE, 2 * sizeof(gint64)), g_array_new(FALSE, FALSE, 2 * sizeof(gint64)) };
    for (guint round = 0; round < 10; round++) {
        g_usleep((gulong)g_rand_int_range(rng, 200, 1200) * 1000);
        HolderWait hw = { h, -1 };
        g_assert_true(jet_test_wait_until(someone_holds, &hw, 20000));
        gint64 window[2];
        window[0] = g_get_monotonic_time() * 1000;
        g_subprocess_send_signal(h[hw.holder].proc, SIGSTOP);
        guint pause_ms = (guint)g_rand_int_range(rng, 500, 4000);
        g_usleep(pause_ms * 1000);
        window[1] = g_get_monotonic_time() * 1000;
        g_subprocess_send_signal(h[hw.holder].proc, SIGCONT);
        g_array_append_val(paused[hw.holder], window);
        g_test_message("round %u: host %c paused %u ms", round, 'a' + hw.holder, pause_ms);
    }
    CoverWait cw = { { dirs[0], dirs[1] }, n };
    if (!jet_test_wait_until(all_covered, &cw, 180000))
        g_error("not every message was handled; logs:\n%s\n%s", jet_test_read_text(h[0].errlog),
                jet_test_read_text(h[1].errlog));
    for (guint i = 0; i < 2; i++)
        stop_host(&h[i]);

    /* Every handling of both hosts, by start; a handling running when its
     * host was paused is the one exception the fence cannot cover: one that
     * began before the SIGCONT and ended after the SIGSTOP (a signal takes
     * a moment to land, so "began before the SIGSTOP" is not known). */
    typedef struct {
        Span s;
        guint host;
        gboolean exempt;
    } Tagged;
    g_autoptr(GArray) all = g_array_new(FALSE, FALSE, sizeof(Tagged));
    guint by[2] = { 0, 0 }, exempt = 0;
    for (guint i = 0; i < 2; i++) {
        g_autoptr(GArray) a = read_spans(dirs[i]);
        for (guint k = 0; k < a->len; k++) {
            Tagged t = { g_array_index(a, Span, k), i, FALSE };
            for (guint p = 0; p < paused[i]->len; p++) {
                const gint64 *w = (const gint64 *)(gpointer)(paused[i]->data + p * 2 * sizeof(gint64));
                t.exempt |= t.s.start_ns < w[1] && t.s.end_ns > w[0];
            }
            exempt += t.exempt;
            by[i]++;
            g_array_append_val(all, t);
        }
    }
    for (guint i = 1; i < all->len; i++)
        for (guint j = i; j > 0 && g_array_index(all, Tagged, j - 1).s.start_ns > g_array_index(all, Tagged, j).s.start_ns;
             j--) {
            Tagged t = g_array_index(all, Tagged, j);
            g_array_index(all, Tagged, j) = g_array_index(all, Tagged, j - 1);
            g_array_index(all, Tagged, j - 1) = t;
        }
    gint64 max_end[2] = { 0, 0 };
    guint overlaps = 0;
    for (guint i = 0; i < all->len; i++) {
        Tagged *t = &g_array_index(all, Tagged, i);
        guint other = 1 - t->host;
        if (!t->exempt && max_end[other] > t->s.start_ns) {
            if (overlaps++ < 5)
                g_test_message("host %c started stream seq %" G_GUINT64_FORMAT " %" G_GINT64_FORMAT
                               " us before the other host's handling ended", 'a' + t->host, t->s.seq,
                               (max_end[other] - t->s.start_ns) / 1000);
        }
        if (!t->exempt)
            max_end[t->host] = MAX(max_end[t->host], t->s.end_ns);
    }
    g_test_message("%u handlings (a %u, b %u), %u running at a pause, %u overlapping", all->len, by[0], by[1], exempt,
                   overlaps);
    g_assert_cmpuint(overlaps, ==, 0);
    g_assert_cmpuint(by[0], >, 0);
    g_assert_cmpuint(by[1], >, 0);
    for (guint i = 0; i < 2; i++) {
        g_free(dirs[i]);
        g_array_unref(paused[i]);
        host_clear(&h[i]);
    }
    jet_test_js_close(nc, js);
}

/* A lone holder paused past claim_ttl: on waking its claim has expired
 * and it stops; no other host took the key, so it claims it again from
 * its own record, and says so (not "taken from a released claim"). */
static void test_own_record(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    Host a = { 0 };
    host_start_kind(&a, jet_test_server_url(srv), "own-a", KIND_DURABLE, "0");
    wait_lines(a.errlog, "event=claimed", 1, 20000, a.errlog);
    g_subprocess_send_signal(a.proc, SIGSTOP);
    g_usleep((TTL_MS + 1000) * 1000);
    g_subprocess_send_signal(a.proc, SIGCONT);
    wait_lines(a.errlog, "event=claimed", 2, 20000, a.errlog);
    g_assert_cmpuint(file_lines(a.errlog, "event=claim-expired"), ==, 1);
    g_assert_cmpuint(file_lines(a.errlog, "taken back from a record of this run"), ==, 1);
    g_assert_cmpuint(file_lines(a.errlog, "taken from a released claim"), ==, 0);
    publish(js, 3);
    wait_lines(a.out, "\"stream_seq\"", 3, 20000, a.errlog);
    stop_host(&a);
    host_clear(&a);
    jet_test_js_close(nc, js);
}

/* A claim won by a host whose binding then cannot start is released at
 * once, not left for a standby to wait out claim_ttl: the claimer alone,
 * with a start that fails, and the claim record read from the bucket. */
static JetEngine *start_fails(const gint64 *fence, gpointer data)
{
    (void)fence;
    g_atomic_int_inc((gint *)data);
    return NULL;
}

static gboolean nonzero(gpointer data)
{
    return g_atomic_int_get((gint *)data) != 0;
}

typedef struct {
    kvStore *kv;
    char *state;   /* the last state read */
} ClaimWait;

static gboolean claim_released(gpointer data)
{
    ClaimWait *w = data;
    kvEntry *e = NULL;
    if (kvStore_Get(&e, w->kv, "claim.t") != NATS_OK)
        return FALSE;
    g_autoptr(JsonParser) jp = json_parser_new();
    gboolean ok = json_parser_load_from_data(jp, kvEntry_ValueString(e), kvEntry_ValueLen(e), NULL);
    kvEntry_Destroy(e);
    if (!ok)
        return FALSE;
    g_free(w->state);
    w->state = g_strdup(json_object_get_string_member(json_node_get_object(json_parser_get_root(jp)), "state"));
    return g_strcmp0(w->state, "released") == 0;
}

static void test_failed_start_released(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\n\n[binding t]\nplugin = /nonexistent/t.so\nstream = ORDERS\nconsumer = c\n"
        "exclusive = true\nclaim_ttl = 20s\nclaim_heartbeat = 1s\n", jet_test_server_url(srv));
    g_autofree char *conf = jet_test_write_file("claim-fails.conf", text);
    g_autoptr(GError) err = NULL;
    JetConfig *cfg = jet_config_load(conf, NULL, &err);
    g_assert_no_error(err);
    const char *urls[] = { jet_test_server_url(srv), NULL };
    JetConn *conn = jet_conn_open(urls, &cfg->host, 3, &err);
    g_assert_no_error(err);
    jsCtx *js = NULL;
    g_assert_cmpint(natsConnection_JetStream(&js, jet_conn_nats(conn), NULL), ==, NATS_OK);
    JetLedger *ledger = jet_ledger_open(js, "jethost_ledger", TRUE, 3600 * 1000, 1, &err);
    g_assert_no_error(err);
    gint starts = 0;
    JetExclusive *x = jet_exclusive_new(jet_ledger_kv(ledger), jet_config_binding(cfg, "t"), "failing-host",
                                        start_fails, &starts);
    gint64 t0 = g_get_monotonic_time();
    jet_exclusive_start(x);
    g_assert_true(jet_test_wait_until(nonzero, &starts, 20000));
    /* Released, well before claim_ttl (20 s) could let anyone take it. */
    ClaimWait w = { jet_ledger_kv(ledger), NULL };
    gboolean released = jet_test_wait_until(claim_released, &w, 3000);
    g_test_message("claim record: %s %" G_GINT64_FORMAT " ms after the claimer started (%d start(s) failed)",
                   w.state != NULL ? w.state : "(none)", (g_get_monotonic_time() - t0) / 1000, g_atomic_int_get(&starts));
    g_assert_true(released);
    jet_exclusive_stop(x);
    jet_exclusive_join(x);
    jet_exclusive_free(x);
    g_free(w.state);
    jet_ledger_close(ledger);
    jsCtx_Destroy(js);
    jet_conn_close(conn);
    jet_config_free(cfg);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/exclusive/one-handles", test_one_handles);
    g_test_add_func("/exclusive/kill-takeover", test_kill_takeover);
    g_test_add_func("/exclusive/term-handover", test_term_handover);
    g_test_add_func("/exclusive/holder-loses-claim", test_holder_loses_claim);
    g_test_add_func("/exclusive/own-record", test_own_record);
    g_test_add_func("/exclusive/pinned", test_pinned);
    g_test_add_func("/exclusive/renew-conflict", test_renew_conflict);
    g_test_add_func("/exclusive/failed-start-released", test_failed_start_released);
    g_test_add_data_func("/exclusive/ordered", GINT_TO_POINTER(KIND_ORDERED), test_ordered_kind);
    g_test_add_data_func("/exclusive/kv", GINT_TO_POINTER(KIND_KV), test_ordered_kind);
    g_test_add_data_func("/exclusive/paused-holder", GINT_TO_POINTER(FALSE), test_paused_holder);
    g_test_add_data_func("/exclusive/paused-holder-key", GINT_TO_POINTER(TRUE), test_paused_holder);
    return g_test_run();
}
