/* The shipped plugins under `jethost run` against a real nats-server:
 *
 *   paced  under a rate limit: its file is the stream, message for message and
 *          in order (subject, sequence, enqueue time, headers, payload), and
 *          the rate paces the consumption itself;
 *   retry  a mix of fault headers: every message ends acked or in the DLQ as
 *          its header says, with the cause and reason it says;
 *   exec   a small shell script per message (the payload, run by sh):
 *          exit 0 acks, 75 retries then succeeds on a later delivery, 76
 *          postpones then succeeds, 1 dead-letters with stderr's first line.
 */
#include "harness.h"
#include "msg_payload.h"

#include <json-glib/json-glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <string.h>

/* [host] and one [binding NAME] for the built plugin PLUGIN, with short
 * waits; extra is appended to the binding. */
static char *config_for(const char *url, const char *binding, const char *plugin, const char *consumer,
                        const char *extra)
{
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *path = jet_test_plugin_copy(plugin);
    return g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n"
                           "[binding %s]\nplugin = %s\nstream = ORDERS\nconsumer = %s\n"
                           "ack_wait = 2s\nexpires = 2s\nidle_heartbeat = 1s\nfloor_age = 0\n%s",
                           url, state, binding, path, consumer, extra);
}

/* Publishes one message with headers given as name, value, ..., NULL. */
static void publish(jsCtx *js, const char *subject, const void *data, int len, ...)
{
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, subject, NULL, data, len), ==, NATS_OK);
    va_list ap;
    va_start(ap, len);
    for (const char *k = va_arg(ap, const char *); k != NULL; k = va_arg(ap, const char *))
        g_assert_cmpint(natsMsgHeader_Add(m, k, va_arg(ap, const char *)), ==, NATS_OK);
    va_end(ap);
    g_assert_cmpint(js_PublishMsgAsync(js, &m, NULL), ==, NATS_OK);
    g_assert_null(m);   /* the library owns it now */
}

/* The DLQ's records by origin sequence: seq -> natsMsg (owned by the table). */
static GHashTable *read_dlq(jsCtx *js)
{
    GHashTable *t = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)natsMsg_Destroy);
    guint64 n = jet_test_stream_msgs(js, "JETHOST_DLQ");
    for (guint64 seq = 1; seq <= n; seq++) {
        natsMsg *rec = jet_test_stream_get(js, "JETHOST_DLQ", seq);
        const char *origin = jet_test_msg_header(rec, "Jethost-Origin-Seq");
        g_assert_nonnull(origin);
        guint64 o = g_ascii_strtoull(origin, NULL, 10);
        g_assert_false(g_hash_table_contains(t, GSIZE_TO_POINTER(o)));   /* captured once */
        g_hash_table_insert(t, GSIZE_TO_POINTER(o), rec);
    }
    return t;
}

/* ------------------------------------------------------------------------ */
/* paced                                                                    */
/* ------------------------------------------------------------------------ */

#define PACED_N 200

/* Message i (1-based): a mix of text, escapes, UTF-8, binary and empty
 * payloads, with and without headers, repeated ones included. */
static void paced_publish(jsCtx *js)
{
    for (guint i = 1; i <= PACED_N; i++) {
        g_autofree char *id = g_strdup_printf("%u", i);
        g_autofree char *text = g_strdup_printf("{\"id\":%u,\"note\":\"say \\\"hi\\\"\\n\tcaf\xc3\xa9\"}", i);
        const unsigned char bin[] = { 0x00, 0xff, (unsigned char)i, 'x', 0xc3 };
        switch (i % 5) {
        case 0:
            publish(js, "orders.new", text, (int)strlen(text), NULL);
            break;
        case 1:
            publish(js, "orders.eu.new", text, (int)strlen(text), "Order-Id", id, "Trace", "a",
                    "Trace", "b \"quoted\" \\", "Region", "eu-caf\xc3\xa9", NULL);
            break;
        case 2:
            publish(js, "orders.bin", bin, (int)sizeof bin, "Order-Id", id, NULL);
            break;
        case 3:
            publish(js, "orders.empty", NULL, 0, "X-Dash", "-", NULL);
            break;
        case 4:
            publish(js, "orders.ctl", "line1\r\nline2\x01\x1f end", 18, "zz-last", "1", "Aa-first", "2", NULL);
            break;
        }
    }
    jet_test_publish_wait(js);
}

static gboolean file_has_data(gpointer data)
{
    GStatBuf st;
    return g_stat(data, &st) == 0 && st.st_size > 0;
}

static char *rfc3339_ns(gint64 ns)
{
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(ns / 1000000000);
    g_autofree char *date = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S");
    return g_strdup_printf("%s.%09dZ", date, (int)(ns % 1000000000));
}

/* Compares one JSON line with the stream's copy of the message. */
static void paced_compare(JsonObject *o, natsMsg *m, guint64 seq)
{
    /* Keys in the documented order. */
    g_autoptr(GList) members = json_object_get_members(o);
    static const char *const keys[] = { "subject", "stream", "stream_seq", "deliveries", "enqueued", "headers", NULL };
    GList *l = members;
    for (int k = 0; keys[k] != NULL; k++, l = l->next) {
        g_assert_nonnull(l);
        g_assert_cmpstr(l->data, ==, keys[k]);
    }
    g_assert_nonnull(l);
    g_assert_null(l->next);
    const char *pkey = l->data;

    g_assert_cmpstr(json_object_get_string_member(o, "subject"), ==, natsMsg_GetSubject(m));
    g_assert_cmpstr(json_object_get_string_member(o, "stream"), ==, "ORDERS");
    g_assert_cmpint(json_object_get_int_member(o, "stream_seq"), ==, (gint64)seq);
    g_assert_cmpuint(natsMsg_GetSequence(m), ==, seq);
    g_assert_cmpint(json_object_get_int_member(o, "deliveries"), ==, 1);
    g_autofree char *enq = rfc3339_ns(natsMsg_GetTime(m));
    g_assert_cmpstr(json_object_get_string_member(o, "enqueued"), ==, enq);

    /* The payload, byte for byte: as text when it is UTF-8 without NUL. */
    gsize dlen = 0;
    const char *data = jet_msg_payload(m, &dlen);
    int len = (int)dlen;
    gboolean text = g_utf8_validate(data, len, NULL);
    if (text) {
        g_assert_cmpstr(pkey, ==, "payload");
        const char *p = json_object_get_string_member(o, "payload");
        g_assert_cmpuint(strlen(p), ==, (gsize)len);
        g_assert_true(len == 0 || memcmp(p, data, (size_t)len) == 0);
    } else {
        g_assert_cmpstr(pkey, ==, "payload_b64");
        gsize n = 0;
        g_autofree guchar *raw = g_base64_decode(json_object_get_string_member(o, "payload_b64"), &n);
        g_assert_cmpmem(raw, n, data, len);
    }

    /* Headers: the same names, each with all its values in order. */
    JsonObject *h = json_object_get_object_member(o, "headers");
    const char **names = NULL;
    int nnames = 0;
    natsStatus s = natsMsgHeader_Keys(m, &names, &nnames);
    if (s != NATS_OK && s != NATS_NOT_FOUND)
        g_error("seq %" G_GUINT64_FORMAT ": header keys: %s", seq, natsStatus_GetText(s));
    g_assert_cmpuint(json_object_get_size(h), ==, (guint)nnames);
    for (int i = 0; i < nnames; i++) {
        g_assert_true(json_object_has_member(h, names[i]));
        JsonArray *jv = json_object_get_array_member(h, names[i]);
        const char **values = NULL;
        int nvalues = 0;
        g_assert_cmpint(natsMsgHeader_Values(m, names[i], &values, &nvalues), ==, NATS_OK);
        g_assert_cmpuint(json_array_get_length(jv), ==, (guint)nvalues);
        for (int j = 0; j < nvalues; j++)
            g_assert_cmpstr(json_array_get_string_element(jv, (guint)j), ==, values[j]);
        free((void *)values);
    }
    free((void *)names);
}

/* The file is the stream: one line per message, in stream order, no KV
 * entry in any. */
static void paced_file_is_stream(jsCtx *js, const char *path)
{
    g_autofree char *lines_text = jet_test_read_text(path);
    g_assert_true(g_str_has_suffix(lines_text, "}\n"));
    g_auto(GStrv) lines = g_strsplit(lines_text, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, PACED_N + 1);
    g_assert_cmpstr(lines[PACED_N], ==, "");
    for (guint64 seq = 1; seq <= PACED_N; seq++) {
        g_autoptr(JsonParser) p = json_parser_new();
        g_autoptr(GError) err = NULL;
        if (!json_parser_load_from_data(p, lines[seq - 1], -1, &err))
            g_error("line %" G_GUINT64_FORMAT " is not JSON (%s): %s", seq, err->message, lines[seq - 1]);
        natsMsg *m = jet_test_stream_get(js, "ORDERS", seq);
        paced_compare(json_node_get_object(json_parser_get_root(p)), m, seq);
        natsMsg_Destroy(m);
        g_assert_null(strstr(lines[seq - 1], "\"kv\":"));
    }
}

static void test_paced_matches_stream(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    paced_publish(js);

    g_autofree char *out = g_build_filename(jet_test_private_dir(), "paced.jsonl", NULL);
    g_autofree char *extra = g_strdup_printf("batch = 10\noption.path = %s\noption.rate = 100\n", out);
    g_autofree char *text = config_for(jet_test_server_url(srv), "audit", "paced", "audit", extra);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("paced", text, &errlog);

    /* From the first line to the last ack: 199 slots 10 ms apart. */
    g_assert_true(jet_test_wait_until(file_has_data, out, 30000));
    gint64 t0 = g_get_monotonic_time();
    JetTestFloorWait fw = { js, "ORDERS", "audit", PACED_N };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
    gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
    jet_test_jethost_stop(host, errlog);
    g_test_message("%d messages at rate 100 took %" G_GINT64_FORMAT " ms", PACED_N, took_ms);
    g_assert_cmpint(took_ms, >=, 1900);
    g_assert_cmpint(took_ms, <, 15000);

    paced_file_is_stream(js, out);
    jsConsumerInfo *ci = jet_test_consumer_info(js, "ORDERS", "audit");
    g_assert_cmpint(ci->NumRedelivered, ==, 0);
    jsConsumerInfo_Destroy(ci);
    jet_test_js_close(nc, js);
}

/* Lines of a file once it has n of them. */
typedef struct {
    const char *path;
    guint n;
} LinesWait;

static gboolean has_lines(gpointer data)
{
    LinesWait *w = data;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(w->path, &text, NULL, NULL))
        return FALSE;
    guint n = 0;
    for (const char *p = text; *p != '\0'; p++)
        n += *p == '\n';
    return n >= w->n;
}

/* paced on the other kinds, in one host: an ordered binding's file is the
 * stream in order; a KV watch's has each entry's key, operation and
 * revision, and the host's log says when the current values were done. */
static void test_paced_every_kind(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    paced_publish(js);
    kvConfig kc;
    kvConfig_Init(&kc);
    kc.Bucket = "CFG";
    kvStore *kv = NULL;
    g_assert_cmpint(js_CreateKeyValue(&kv, js, &kc), ==, NATS_OK);
    g_assert_cmpint(kvStore_PutString(NULL, kv, "app.a", "1"), ==, NATS_OK);
    g_assert_cmpint(kvStore_PutString(NULL, kv, "app.b", "2"), ==, NATS_OK);

    g_autofree char *ord_out = g_build_filename(jet_test_private_dir(), "paced-ordered.jsonl", NULL);
    g_autofree char *kv_out = g_build_filename(jet_test_private_dir(), "paced-kv.jsonl", NULL);
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state-kinds", NULL);
    g_autofree char *plugin = jet_test_plugin_copy("paced");
    g_autofree char *text = g_strdup_printf(
        "[host]\nserver = %s\nstate_dir = %s\ndrain_timeout = 5s\n\n"
        "[binding ord]\nplugin = %s\nkind = ordered\nstream = ORDERS\nexpires = 2s\nidle_heartbeat = 1s\n"
        "option.path = %s\noption.rate = 1000\n\n"
        "[binding cfg]\nplugin = %s\nkind = kv\nbucket = CFG\nexpires = 2s\nidle_heartbeat = 1s\n"
        "option.path = %s\n",
        jet_test_server_url(srv), state, plugin, ord_out, plugin, kv_out);
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("paced-kinds", text, &errlog);
    LinesWait kw = { kv_out, 2 };
    g_assert_true(jet_test_wait_until(has_lines, &kw, 30000));
    g_assert_cmpint(kvStore_Delete(kv, "app.a"), ==, NATS_OK);
    kw.n = 3;
    g_assert_true(jet_test_wait_until(has_lines, &kw, 30000));
    LinesWait ow = { ord_out, PACED_N };
    g_assert_true(jet_test_wait_until(has_lines, &ow, 30000));
    jet_test_jethost_stop(host, errlog);

    paced_file_is_stream(js, ord_out);
    g_autofree char *kv_text = jet_test_read_text(kv_out);
    g_auto(GStrv) kv_lines = g_strsplit(kv_text, "\n", -1);
    g_assert_cmpuint(g_strv_length(kv_lines), ==, 4);
    static const char *const want[] = {
        "\"payload\":\"1\",\"kv\":{\"key\":\"app.a\",\"op\":\"put\",\"revision\":1}}",
        "\"payload\":\"2\",\"kv\":{\"key\":\"app.b\",\"op\":\"put\",\"revision\":2}}",
        "\"payload\":\"\",\"kv\":{\"key\":\"app.a\",\"op\":\"delete\",\"revision\":3}}",
    };
    for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
        g_test_message("%s", kv_lines[i]);
        g_assert_true(g_str_has_suffix(kv_lines[i], want[i]));
        g_assert_true(g_str_has_prefix(kv_lines[i], "{\"subject\":\"$KV.CFG.app."));
    }
    g_autofree char *log = jet_test_read_text(errlog);
    g_assert_nonnull(strstr(log, "binding=cfg event=plugin msg=\"the bucket's current values are written; updates follow\""));
    kvStore_Destroy(kv);
    jet_test_js_close(nc, js);
}

/* ------------------------------------------------------------------------ */
/* retry                                                                    */
/* ------------------------------------------------------------------------ */

/* One fault per message, and where the message must end. */
static const struct {
    const char *fault;     /* NULL: no header */
    const char *cause;     /* NULL: acked; else the DLQ record's Jethost-Cause */
    const char *reason;    /* the record's Jethost-Reason */
    guint deliveries;      /* acked: the delivery the ACK came on */
} faults[] = {
    { NULL, NULL, NULL, 1 },
    { "fail=2", NULL, NULL, 3 },
    { "reject;reason=bad id", "rejected", "bad id", 1 },
    { "fail", "exhausted", "fault injection: fail", 3 },
    { "postpone=300ms;times=2", NULL, NULL, 3 },
    { "explode", "rejected", "Jethost-Fault: unknown fault 'explode' in 'explode'", 1 },
    { "ack", NULL, NULL, 1 },
    { "sleep=100ms;fail=1;reason=slow db", NULL, NULL, 2 },
    { "reject", "rejected", "fault injection: reject", 1 },
    { "fail;reason=always down", "exhausted", "always down", 3 },
};

#define RETRY_ROUNDS 2

static void test_retry_outcomes(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    const guint n = G_N_ELEMENTS(faults) * RETRY_ROUNDS;
    guint64 captured = 0;
    for (guint i = 0; i < n; i++) {
        const char *fault = faults[i % G_N_ELEMENTS(faults)].fault;
        g_autofree char *data = g_strdup_printf("order %u", i + 1);
        if (fault != NULL)
            publish(js, "orders.new", data, (int)strlen(data), "Jethost-Fault", fault, "Order", data, NULL);
        else
            publish(js, "orders.new", data, (int)strlen(data), NULL);
        captured += faults[i % G_N_ELEMENTS(faults)].cause != NULL;
    }
    jet_test_publish_wait(js);

    g_autofree char *text = config_for(jet_test_server_url(srv), "rehearsal", "retry", "rehearsal",
                                       "workers = 2\nbatch = 5\nrungs = 100ms, 200ms\nmax_attempts = 3\n"
                                       "max_postpone_delay = 10s\n");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("retry", text, &errlog);
    JetTestFloorWait fw = { js, "ORDERS", "rehearsal", n };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
    JetTestStreamWait dw = { js, "JETHOST_DLQ", captured };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &dw, 10000));
    jet_test_jethost_stop(host, errlog);

    g_autoptr(GHashTable) dlq = read_dlq(js);
    g_assert_cmpuint(g_hash_table_size(dlq), ==, captured);
    g_autofree char *log = jet_test_read_text(errlog);
    /* Per round: 19 handler calls, 5 acks, 7 retries, 2 postpones. */
    if (strstr(log, "handled 38: acked 10, retried 14, postponed 4, released 0") == NULL)
        g_error("unexpected totals in the log:\n%s", log);
    for (guint i = 0; i < n; i++) {
        guint64 seq = i + 1;
        const char *fault = faults[i % G_N_ELEMENTS(faults)].fault;
        const char *cause = faults[i % G_N_ELEMENTS(faults)].cause;
        natsMsg *rec = g_hash_table_lookup(dlq, GSIZE_TO_POINTER(seq));
        g_test_message("seq %" G_GUINT64_FORMAT " '%s': %s", seq, fault != NULL ? fault : "(none)",
                       rec != NULL ? jet_test_msg_header(rec, "Jethost-Cause") : "acked");
        if (cause == NULL) {
            /* Acked, on the delivery its fault says, as the decision log shows. */
            g_assert_null(rec);
            guint d = faults[i % G_N_ELEMENTS(faults)].deliveries;
            g_autofree char *needle = fault != NULL
                ? g_strdup_printf("msg=\"seq %" G_GUINT64_FORMAT " delivery %u failures ", seq, d)
                : g_strdup_printf("msg=\"seq %" G_GUINT64_FORMAT " delivery 1: no fault -> ACK\"", seq);
            const char *at = strstr(log, needle);
            if (at == NULL)
                g_error("no '%s' in the log:\n%s", needle, log);
            const char *eol = strchr(at, '\n');
            g_autofree char *line = g_strndup(at, eol != NULL ? (gsize)(eol - at) : strlen(at));
            if (strstr(line, "-> ACK") == NULL)
                g_error("seq %" G_GUINT64_FORMAT " was not acked on delivery %u: %s", seq, d, line);
            continue;
        }
        g_assert_nonnull(rec);
        g_assert_cmpstr(natsMsg_GetSubject(rec), ==, "jethost.dlq.rehearsal");
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, cause);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Reason"), ==, faults[i % G_N_ELEMENTS(faults)].reason);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Origin-Stream"), ==, "ORDERS");
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Plugin"), ==, "retry");
        /* The original message travels with it. */
        g_autofree char *data = g_strdup_printf("order %u", i + 1);
        g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), data, strlen(data));
        g_assert_cmpstr(jet_test_msg_header(rec, "Order"), ==, data);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Orig-Jethost-Fault"), ==, fault);
        if (strcmp(cause, "exhausted") == 0)
            g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Failures"), ==, "3");
    }
    jet_test_js_close(nc, js);
}

/* ------------------------------------------------------------------------ */
/* exec                                                                     */
/* ------------------------------------------------------------------------ */

enum { EX_OK, EX_TEMP, EX_LATER, EX_BAD, EX_KINDS };

static char *exec_script(int kind, const char *trace)
{
    /* Every run appends "seq delivery" to the trace file first. */
    g_autofree char *head = g_strdup_printf("echo \"$JETHOST_STREAM_SEQ $JETHOST_DELIVERIES\" >> '%s'\n", trace);
    switch (kind) {
    case EX_OK:
        return g_strdup_printf("%stest \"$JETHOST_HDR_KIND\" = ok || exit 9\nexit 0\n", head);
    case EX_TEMP:
        return g_strdup_printf("%sif [ \"$JETHOST_DELIVERIES\" -lt 2 ]; then\n"
                               "  echo 'database busy' >&2\n  exit 75\nfi\nexit 0\n", head);
    case EX_LATER:
        return g_strdup_printf("%sif [ \"$JETHOST_POSTPONES\" -lt 1 ]; then\n"
                               "  echo 200ms\n  exit 76\nfi\nexit 0\n", head);
    default:
        return g_strdup_printf("%secho \"order $JETHOST_STREAM_SEQ: no such customer\" >&2\n"
                               "echo 'second line' >&2\nexit 1\n", head);
    }
}

static void test_exec_exit_codes(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *nc = NULL;
    jsCtx *js = jet_test_js_open(jet_test_server_url(srv), &nc);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    g_autofree char *trace = g_build_filename(jet_test_private_dir(), "exec-trace.log", NULL);
    static const char *const kinds[] = { "ok", "tempfail", "later", "bad" };
    const guint n = EX_KINDS * 3;
    for (guint i = 0; i < n; i++) {
        g_autofree char *script = exec_script((int)(i % EX_KINDS), trace);
        publish(js, "orders.new", script, (int)strlen(script), "Kind", kinds[i % EX_KINDS], NULL);
    }
    jet_test_publish_wait(js);

    /* The payload is the script: sh evaluates what arrives on stdin. */
    g_autofree char *text = config_for(jet_test_server_url(srv), "scripts", "exec", "scripts",
                                       "batch = 4\nrungs = 200ms, 500ms\nmax_attempts = 3\n"
                                       "option.shell = true\noption.timeout = 10s\n"
                                       "option.command = eval \"$(cat)\"\n");
    g_autofree char *errlog = NULL;
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn_config("exec", text, &errlog);
    JetTestFloorWait fw = { js, "ORDERS", "scripts", n };
    g_assert_true(jet_test_wait_until(jet_test_floor_reached, &fw, 30000));
    JetTestStreamWait dw = { js, "JETHOST_DLQ", n / EX_KINDS };
    g_assert_true(jet_test_wait_until(jet_test_stream_has, &dw, 10000));
    jet_test_jethost_stop(host, errlog);

    /* Each run, by (seq, delivery). */
    g_autofree char *runs_text = jet_test_read_text(trace);
    g_auto(GStrv) runs = g_strsplit(runs_text, "\n", -1);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (char **r = runs; *r != NULL && **r; r++) {
        g_assert_false(g_hash_table_contains(seen, *r));
        g_hash_table_add(seen, g_strdup(*r));
    }

    g_autoptr(GHashTable) dlq = read_dlq(js);
    g_assert_cmpuint(g_hash_table_size(dlq), ==, n / EX_KINDS);
    for (guint i = 0; i < n; i++) {
        guint64 seq = i + 1;
        int kind = (int)(i % EX_KINDS);
        natsMsg *rec = g_hash_table_lookup(dlq, GSIZE_TO_POINTER(seq));
        /* Runs: once, or twice for the retried and the postponed one. */
        guint expect_runs = kind == EX_TEMP || kind == EX_LATER ? 2 : 1;
        for (guint d = 1; d <= 3; d++) {
            g_autofree char *key = g_strdup_printf("%" G_GUINT64_FORMAT " %u", seq, d);
            if (g_hash_table_contains(seen, key) != (d <= expect_runs))
                g_error("seq %" G_GUINT64_FORMAT " (%s): run %u %s expected; runs:\n%s", seq, kinds[kind], d,
                        d <= expect_runs ? "was" : "was not", runs_text);
        }
        if (kind != EX_BAD) {
            g_assert_null(rec);
            continue;
        }
        g_assert_nonnull(rec);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Cause"), ==, "rejected");
        g_autofree char *reason = g_strdup_printf("order %" G_GUINT64_FORMAT ": no such customer", seq);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Reason"), ==, reason);
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Plugin"), ==, "exec");
        g_assert_cmpstr(jet_test_msg_header(rec, "Jethost-Deliveries"), ==, "1");
    }
    /* The host's own account: a retry on rung 1 for each exit 75, a postpone
     * by the printed delay for each exit 76, and the totals. */
    g_autofree char *log = jet_test_read_text(errlog);
    for (guint64 seq = 1; seq <= n; seq++) {
        int kind = (int)((seq - 1) % EX_KINDS);
        g_autofree char *retry = g_strdup_printf("stream seq %" G_GUINT64_FORMAT " delivery 1: retry in 200 ms: database busy\"", seq);
        g_autofree char *later = g_strdup_printf("stream seq %" G_GUINT64_FORMAT " delivery 1: postpone in 200 ms\"", seq);
        g_assert_true((strstr(log, retry) != NULL) == (kind == EX_TEMP));
        g_assert_true((strstr(log, later) != NULL) == (kind == EX_LATER));
    }
    if (strstr(log, "handled 18: acked 9, retried 3, postponed 3, released 0") == NULL)
        g_error("unexpected totals in the log:\n%s", log);
    jet_test_js_close(nc, js);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_setenv("JETHOST_LOG_LEVEL", "info", TRUE);
    g_test_add_func("/plugins-live/paced/matches-stream", test_paced_matches_stream);
    g_test_add_func("/plugins-live/paced/every-kind", test_paced_every_kind);
    g_test_add_func("/plugins-live/retry/outcomes", test_retry_outcomes);
    g_test_add_func("/plugins-live/exec/exit-codes", test_exec_exit_codes);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
