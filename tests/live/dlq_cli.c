/* `jethost dlq list|show|replay` (in process) and `jethost pub` (the
 * binary) against a real nats-server: records written by hand, byte for
 * byte, as the host writes them and as a forger or a hostile original
 * could; where a replay may go and what it carries; output that stays valid
 * whatever a record holds. */
#define _GNU_SOURCE
#include "harness.h"
#include "capture.h"
#include "cli.h"
#include "dlq_cli.h"
#include "dlq_reader.h"
#include "hdr_block.h"
#include "nats_raw.h"
#include "replay.h"
#include "stream_msg.h"

#include <json-glib/json-glib.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define DLQ "JETHOST_DLQ"
#define DLQ_SUBJECT "jethost.dlq.orders"

typedef JetTestJs Fx;

/* --- streams and records ---------------------------------------------------- */

static void stream_create(Fx *fx, const char *name, const char *subject, gboolean rollup)
{
    jet_test_stream_create_rollup(fx->js, name, subject, rollup);
}

static void stream_state(Fx *fx, const char *name, guint64 *msgs, guint64 *first)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, fx->js, name, NULL, &jerr);
    if (s != NATS_OK)
        g_error("stream info %s: %s (err %d)", name, natsStatus_GetText(s), (int)jerr);
    *msgs = si->State.Msgs;
    if (first != NULL)
        *first = si->State.FirstSeq;
    jsStreamInfo_Destroy(si);
}

static guint64 stream_msgs(Fx *fx, const char *name)
{
    guint64 n = 0;
    stream_state(fx, name, &n, NULL);
    return n;
}

/* Publishes exactly this header block (and payload) to subject; returns the
 * stream sequence. */
static guint64 publish_raw(Fx *fx, const char *subject, const char *block, gsize block_len, const void *data,
                           gsize len)
{
    g_autoptr(GError) err = NULL;
    natsMsg *m = jet_nats_msg_new_raw(subject, block, block_len, data, len, &err);
    g_assert_no_error(err);
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, fx->js, m, NULL, &jerr);
    natsMsg_Destroy(m);
    if (s != NATS_OK)
        g_error("publish to %s: %s (err %d)", subject, natsStatus_GetText(s), (int)jerr);
    guint64 seq = pa->Sequence;
    jsPubAck_Destroy(pa);
    return seq;
}

/* A record as the host writes one (distinct origins: the Msg-Id would make
 * a repeat a duplicate): its Msg-Id first, the provenance (a
 * NULL value leaves its header out), then `rest` (header lines, raw bytes,
 * each ending in CR LF); stored in the DLQ.  Returns its DLQ sequence. */
static guint64 record(Fx *fx, const char *origin_stream, const char *origin_subject, guint64 oseq,
                      const char *reason, const char *rest, const char *data, gsize len)
{
    g_autoptr(GString) b = g_string_new("NATS/1.0\r\n");
    if (origin_stream != NULL)
        g_string_append_printf(b, "Nats-Msg-Id: jethost:%s.c:%" G_GUINT64_FORMAT "\r\n", origin_stream, oseq);
    if (origin_stream != NULL)
        g_string_append_printf(b, JET_HDR_ORIGIN_STREAM ": %s\r\n", origin_stream);
    if (origin_subject != NULL)
        g_string_append_printf(b, JET_HDR_ORIGIN_SUBJECT ": %s\r\n", origin_subject);
    g_string_append_printf(b, JET_HDR_ORIGIN_SEQ ": %" G_GUINT64_FORMAT "\r\n", oseq);
    g_string_append(b, JET_HDR_ORIGIN_CONSUMER ": c\r\n" JET_HDR_CAUSE ": rejected\r\n");
    if (reason != NULL)
        g_string_append_printf(b, JET_HDR_REASON ": %s\r\n", reason);
    g_string_append(b, JET_HDR_CAPTURED ": 2026-01-02T03:04:05.000000006Z\r\n");
    if (rest != NULL)
        g_string_append(b, rest);
    g_string_append(b, "\r\n");
    return publish_raw(fx, DLQ_SUBJECT, b->str, b->len, data, len);
}

/* ORDERS (rollups allowed: a restored Nats-Rollup would purge it) with two
 * messages, and the DLQ. */
static void streams_setup(Fx *fx)
{
    stream_create(fx, "ORDERS", "orders.>", TRUE);
    stream_create(fx, DLQ, "jethost.dlq.>", FALSE);
    jet_test_publish_n(fx->js, "orders.new", 2);
}

/* Two records of ORDERS' messages; the second carries server instructions
 * of its original, renamed as capture does, and an empty value. */
static void records_setup(Fx *fx)
{
    streams_setup(fx);
    g_assert_cmpuint(record(fx, "ORDERS", "orders.new", 1, "first reason", "X-App: keep\r\n", "msg-1", 5), ==, 1);
    g_assert_cmpuint(record(fx, "ORDERS", "orders.new", 2, "second",
                            "Jethost-Orig-Nats_Msg-Id: publisher-id\r\n"
                            "X-App: keep\r\n"
                            "Jethost-Orig-Nats_Rollup: all\r\n"
                            "Jethost-Orig-Nats_Expected-Last-Sequence: 1\r\n"
                            "Jethost-Orig-Nats_Expected-Stream: ORDERS\r\n"
                            "Jethost-Orig-Nats_TTL: 5s\r\n"
                            "X-Empty: \r\n",
                            "msg-2", 5),
                     ==, 2);
}

static JetStoredMsg *stored(Fx *fx, const char *stream, guint64 seq)
{
    g_autoptr(GError) err = NULL;
    JetStoredMsg *m = NULL;
    g_assert_cmpint(jet_stream_msg_get(fx->nc, stream, seq, 5000, &m, &err), ==, JET_STORED_FOUND);
    g_assert_no_error(err);
    return m;
}

/* The headers of stream:seq as stored, in block order. */
static GPtrArray *stored_headers(Fx *fx, const char *stream, guint64 seq, GBytes **data)
{
    g_autoptr(JetStoredMsg) m = stored(fx, stream, seq);
    g_auto(JetHdrParse) p = { 0 };
    gsize len = 0;
    const char *block = m->hdrs != NULL ? g_bytes_get_data(m->hdrs, &len) : NULL;
    g_assert_true(jet_hdr_parse(block, len, &p));
    if (data != NULL)
        *data = g_bytes_ref(m->data);
    return g_steal_pointer(&p.headers);
}

static void assert_headers(const GPtrArray *h, const char *const *want)
{
    guint n = 0;
    while (want[n] != NULL)
        n++;
    for (guint i = 0; i + 1 < h->len; i += 2)
        g_test_message("  %s: %s", (const char *)g_ptr_array_index(h, i), (const char *)g_ptr_array_index(h, i + 1));
    g_assert_cmpuint(h->len, ==, n);
    for (guint i = 0; i < n; i++) {
        if (i == 1 && g_str_has_suffix(want[i], ":"))
            g_assert_true(g_str_has_prefix(g_ptr_array_index(h, i), want[i]));   /* the Msg-Id's time varies */
        else
            g_assert_cmpstr(g_ptr_array_index(h, i), ==, want[i]);
    }
}

/* --- jethost dlq, in process ------------------------------------------------ */

typedef struct {
    int rc;
    char *out;
    char *err;
} CliRun;

static void cli_run_clear(CliRun *r)
{
    g_free(r->out);
    g_free(r->err);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CliRun, cli_run_clear)

static CliRun cli(const char *const *args)
{
    char *obuf = NULL, *ebuf = NULL;
    size_t olen = 0, elen = 0;
    FILE *out = open_memstream(&obuf, &olen);
    FILE *err = open_memstream(&ebuf, &elen);
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, "dlq");
    for (const char *const *a = args; *a != NULL; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    CliRun r;
    r.rc = jet_dlq_cli_run((int)argv->len - 1, (char **)argv->pdata, out, err);
    fclose(out);
    fclose(err);
    g_ptr_array_free(argv, TRUE);
    r.out = g_strndup(obuf, olen);
    r.err = g_strndup(ebuf, elen);
    g_assert_cmpuint(strlen(r.out), ==, olen);   /* no NUL in the output */
    free(obuf);
    free(ebuf);
    g_autofree char *o = g_strescape(r.out, "\n"), *e = g_strescape(r.err, "\n");
    g_test_message("dlq %s -> %d\nstdout:\n%s\nstderr:\n%s", args[2], r.rc, o, e);
    return r;
}

static guint count_lines(const char *text)
{
    guint n = 0;
    for (const char *p = text; *p; p++)
        n += *p == '\n';
    return n;
}

/* Valid JSON by a strict reading (UTF-8, no raw control character), one
 * object; returns its root for further checks. */
static JsonObject *strict_json(JsonParser *p, const char *line)
{
    g_assert_true(g_utf8_validate(line, -1, NULL));
    for (const char *c = line; *c; c++)
        g_assert_cmpint((guchar)*c, >=, 0x20);
    g_autoptr(GError) err = NULL;
    g_assert_true(json_parser_load_from_data(p, line, -1, &err));
    g_assert_no_error(err);
    JsonNode *root = json_parser_get_root(p);
    g_assert_true(JSON_NODE_HOLDS_OBJECT(root));
    return json_node_get_object(root);
}

static GBytes *b64_member(JsonObject *o, const char *key)
{
    g_assert_true(json_object_has_member(o, key));
    gsize n = 0;
    guchar *raw = g_base64_decode(json_object_get_string_member(o, key), &n);
    return g_bytes_new_take(raw, n);
}

static void test_list_show(Fx *fx, gconstpointer data)
{
    (void)data;
    records_setup(fx);
    const char *url = fx->url;
    g_auto(CliRun) l = cli((const char *const[]){ "-s", url, "list", NULL });
    g_assert_cmpint(l.rc, ==, JET_EXIT_OK);
    g_auto(GStrv) lines = g_strsplit(l.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);   /* two lines and the empty tail */
    g_auto(GStrv) cols = g_strsplit(lines[0], "\t", -1);
    g_assert_cmpuint(g_strv_length(cols), ==, 6);
    g_assert_cmpstr(cols[0], ==, "1");
    g_assert_cmpstr(cols[1], ==, "ORDERS:1");
    g_assert_cmpstr(cols[2], ==, "orders.new");
    g_assert_cmpstr(cols[3], ==, "rejected");
    g_assert_cmpstr(cols[4], ==, "2026-01-02T03:04:05.000000006Z");
    g_assert_cmpstr(cols[5], ==, "first reason");
    g_assert_true(g_str_has_prefix(lines[1], "2\tORDERS:2\t"));

    g_auto(CliRun) j = cli((const char *const[]){ "-s", url, "--json", "list", NULL });
    g_assert_cmpint(j.rc, ==, JET_EXIT_OK);
    g_auto(GStrv) jl = g_strsplit(j.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(jl), ==, 3);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = strict_json(p, jl[1]);
    g_assert_cmpint(json_object_get_int_member(o, "dlq_seq"), ==, 2);
    g_assert_cmpint(json_object_get_int_member(o, "origin_seq"), ==, 2);
    g_assert_cmpstr(json_object_get_string_member(o, "origin_stream"), ==, "ORDERS");
    g_assert_cmpstr(json_object_get_string_member(o, "subject"), ==, "orders.new");
    g_assert_cmpstr(json_object_get_string_member(o, "cause"), ==, "rejected");
    g_assert_cmpstr(json_object_get_string_member(o, "reason"), ==, "second");
    g_assert_cmpstr(json_object_get_string_member(o, "dlq_stream"), ==, DLQ);
    g_assert_true(json_object_get_null_member(o, "dropped_headers"));

    /* Text: the story, the headers in block order, the payload last. */
    g_auto(CliRun) s = cli((const char *const[]){ "-s", url, "show", "--payload", "2", NULL });
    g_assert_cmpint(s.rc, ==, JET_EXIT_OK);
    g_assert_true(g_str_has_prefix(s.out, "Record: " DLQ ":2\nSubject: " DLQ_SUBJECT "\nStored: "));
    const char *id = strstr(s.out, "\nNats-Msg-Id: jethost:ORDERS.c:2\n");
    const char *oseq = strstr(s.out, "\nJethost-Origin-Seq: 2\n");
    const char *rollup = strstr(s.out, "\nJethost-Orig-Nats_Rollup: all\n");
    const char *empty = strstr(s.out, "\nX-Empty: \n");
    g_assert_nonnull(id);
    g_assert_nonnull(oseq);
    g_assert_nonnull(rollup);
    g_assert_nonnull(empty);
    g_assert_cmpint(id - s.out, <, oseq - s.out);
    g_assert_cmpint(oseq - s.out, <, rollup - s.out);
    g_assert_cmpint(rollup - s.out, <, empty - s.out);
    g_assert_true(g_str_has_suffix(s.out, "\n\nPayload: 5 bytes, text:\nmsg-2\n"));
    g_assert_nonnull(strstr(s.out, "\nWhat happened:\n  Cause:           rejected\n  Reason:          second\n"
                                   "  Origin:          ORDERS:2\n"));
    /* Without --payload, its size only. */
    g_auto(CliRun) s0 = cli((const char *const[]){ "-s", url, "show", "2", NULL });
    g_assert_true(g_str_has_suffix(s0.out, "\n\nPayload: 5 bytes (--payload shows them)\n"));
    g_assert_null(strstr(s0.out, "msg-2"));
    g_auto(CliRun) hx = cli((const char *const[]){ "-s", url, "show", "--hex", "2", NULL });
    g_assert_true(g_str_has_suffix(hx.out, "\nPayload: 5 bytes, hex:\n"
                                          "00000000  6d 73 67 2d 32                                    |msg-2|\n"));
    g_auto(CliRun) badp = cli((const char *const[]){ "-s", url, "show", "--hex", "--text", "2", NULL });
    g_assert_cmpint(badp.rc, ==, JET_EXIT_USAGE);

    /* JSON: headers as an ordered array of name/value objects. */
    g_auto(CliRun) sj = cli((const char *const[]){ "-s", url, "--json", "show", "2", NULL });
    g_assert_cmpint(sj.rc, ==, JET_EXIT_OK);
    g_assert_cmpuint(count_lines(sj.out), ==, 1);
    g_autoptr(JsonParser) p2 = json_parser_new();
    JsonObject *o2 = strict_json(p2, g_strchomp(sj.out));
    g_assert_cmpstr(json_object_get_string_member(o2, "data"), ==, "msg-2");
    g_assert_cmpstr(json_object_get_string_member(o2, "dlq_subject"), ==, DLQ_SUBJECT);
    JsonArray *h = json_object_get_array_member(o2, "headers");
    g_assert_cmpuint(json_array_get_length(h), ==, 15);
    JsonObject *h0 = json_array_get_object_element(h, 0);
    g_assert_cmpstr(json_object_get_string_member(h0, "name"), ==, "Nats-Msg-Id");
    g_assert_cmpstr(json_object_get_string_member(h0, "value"), ==, "jethost:ORDERS.c:2");
    JsonObject *h1 = json_array_get_object_element(h, 1);
    g_assert_cmpstr(json_object_get_string_member(h1, "name"), ==, JET_HDR_ORIGIN_STREAM);
    JsonObject *last = json_array_get_object_element(h, 14);
    g_assert_cmpstr(json_object_get_string_member(last, "name"), ==, "X-Empty");
    g_assert_cmpstr(json_object_get_string_member(last, "value"), ==, "");
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(o2, "header_defects")), ==, 0);

    g_auto(CliRun) missing = cli((const char *const[]){ "-s", url, "show", "99", NULL });
    g_assert_cmpint(missing.rc, ==, JET_EXIT_FAILURE);
    g_assert_nonnull(strstr(missing.err, "no record " DLQ ":99"));
    g_auto(CliRun) usage = cli((const char *const[]){ "-s", url, "show", NULL });
    g_assert_cmpint(usage.rc, ==, JET_EXIT_USAGE);
    g_auto(CliRun) bad = cli((const char *const[]){ "-s", url, "replay", "x1", NULL });
    g_assert_cmpint(bad.rc, ==, JET_EXIT_USAGE);
    g_auto(CliRun) to_list = cli((const char *const[]){ "-s", url, "--to", "orders.x", "list", NULL });
    g_assert_cmpint(to_list.rc, ==, JET_EXIT_USAGE);
    g_auto(CliRun) nostream = cli((const char *const[]){ "-s", url, "--stream", "NOPE", "list", NULL });
    g_assert_cmpint(nostream.rc, ==, JET_EXIT_FAILURE);
    g_auto(CliRun) badstream = cli((const char *const[]){ "-s", url, "--stream", "A.B", "list", NULL });
    g_assert_cmpint(badstream.rc, ==, JET_EXIT_USAGE);

    /* -c: the server and the stream come from the config. */
    g_autofree char *conf_text = g_strdup_printf("[host]\nserver = %s\n\n[binding orders]\nplugin = /nowhere/x.so\n"
                                                 "stream = ORDERS\nconsumer = c\ndlq_stream = " DLQ "\n",
                                                 url);
    g_autofree char *conf = jet_test_write_file("dlq.conf", conf_text);
    g_auto(CliRun) c = cli((const char *const[]){ "-c", conf, "list", NULL });
    g_assert_cmpint(c.rc, ==, JET_EXIT_OK);
    g_assert_true(g_str_has_prefix(c.out, "1\tORDERS:1\t"));

    /* deliveries is a number like origin_seq; null when absent or not one. */
    g_assert_true(json_object_get_null_member(o, "deliveries"));
    g_assert_cmpuint(record(fx, "ORDERS", "orders.new", 3, "third", JET_HDR_DELIVERIES ": 7\r\n", "m", 1), ==, 3);
    g_assert_cmpuint(record(fx, "ORDERS", "orders.new", 4, "fourth", JET_HDR_DELIVERIES ": 7x\r\n", "m", 1), ==, 4);
    g_auto(CliRun) dj = cli((const char *const[]){ "-s", url, "--json", "list", NULL });
    g_assert_cmpint(dj.rc, ==, JET_EXIT_OK);
    g_auto(GStrv) djl = g_strsplit(dj.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(djl), ==, 5);
    g_autoptr(JsonParser) p3 = json_parser_new();
    JsonObject *o3 = strict_json(p3, djl[2]);
    g_assert_cmpint(json_node_get_value_type(json_object_get_member(o3, "deliveries")), ==, G_TYPE_INT64);
    g_assert_cmpint(json_object_get_int_member(o3, "deliveries"), ==, 7);
    g_autoptr(JsonParser) p4 = json_parser_new();
    g_assert_true(json_object_get_null_member(strict_json(p4, djl[3]), "deliveries"));
}

/* A record whose headers and payload are not text: every output stays one
 * valid line per record (JSON: base64 members; text: escapes). */
/* --from a time with a sub-second part that has a leading zero (.04...):
 * nats.c would send it without (.4...), 0.4 s late, and the list would
 * miss what was stored in between (host/core/start_time.h). */
static void test_list_from_time(Fx *fx, gconstpointer data)
{
    (void)data;
    streams_setup(fx);
    const guint64 n = 80;
    jet_test_wait_late_in_second();
    for (guint64 i = 1; i <= n; i++) {
        g_assert_cmpuint(record(fx, "ORDERS", "orders.new", i, NULL, NULL, "x", 1), ==, i);
        g_usleep(4000);
    }
    g_autofree char *from_text = NULL;
    guint64 from = jet_test_start_early_in_second(fx->js, DLQ, n, &from_text);
    g_auto(CliRun) l = cli((const char *const[]){ "-s", fx->url, "list", "--from", from_text, NULL });
    g_assert_cmpint(l.rc, ==, JET_EXIT_OK);
    g_auto(GStrv) lines = g_strsplit(l.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, n - from + 2);   /* and the empty tail */
    g_autofree char *first = g_strdup_printf("%" G_GUINT64_FORMAT "\t", from);
    g_assert_true(g_str_has_prefix(lines[0], first));
}

static void test_hostile_output(Fx *fx, gconstpointer data)
{
    (void)data;
    streams_setup(fx);
    static const char payload[] = "a\0b\xff\n\x1b[2Jc";
    guint64 seq = record(fx, "ORDERS", "orders.\xff", 1, "bad \xfe\x1b[31m\x1f\ttab",
                         "X-Bin: \xc3\x28\r\nX-Ctl: a\x01\x1f" "b\r\nX-Text: caf\xc3\xa9\r\n", payload,
                         sizeof payload - 1);
    guint64 defective = record(fx, "ORDERS", "orders.new", 2, "ok", "no colon\r\nX-After: 1\r\n", "p", 1);
    const char *url = fx->url;

    g_auto(CliRun) l = cli((const char *const[]){ "-s", url, "list", NULL });
    g_assert_cmpint(l.rc, ==, JET_EXIT_OK);
    g_assert_true(g_utf8_validate(l.out, -1, NULL));
    g_assert_null(strchr(l.out, '\x1b'));
    g_assert_null(strchr(l.out, '\x1f'));
    g_auto(GStrv) lines = g_strsplit(l.out, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_auto(GStrv) cols = g_strsplit(lines[0], "\t", -1);
    g_assert_cmpuint(g_strv_length(cols), ==, 6);
    g_assert_cmpstr(cols[2], ==, "orders.\\xff");
    g_assert_cmpstr(cols[5], ==, "bad \\xfe\\x1b[31m\\x1f\\x09tab");

    g_auto(CliRun) j = cli((const char *const[]){ "-s", url, "--json", "list", NULL });
    g_assert_cmpint(j.rc, ==, JET_EXIT_OK);
    g_assert_cmpuint(count_lines(j.out), ==, 2);
    g_auto(GStrv) jl = g_strsplit(j.out, "\n", -1);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = strict_json(p, jl[0]);
    g_assert_false(json_object_has_member(o, "reason"));
    g_autoptr(GBytes) reason = b64_member(o, "reason_base64");
    g_assert_cmpmem(g_bytes_get_data(reason, NULL), g_bytes_get_size(reason), "bad \xfe\x1b[31m\x1f\ttab", 15);
    g_autoptr(GBytes) subject = b64_member(o, "subject_base64");
    g_assert_cmpmem(g_bytes_get_data(subject, NULL), g_bytes_get_size(subject), "orders.\xff", 8);
    g_assert_cmpstr(json_object_get_string_member(o, "cause"), ==, "rejected");
    g_autoptr(JsonParser) p1 = json_parser_new();
    strict_json(p1, jl[1]);

    g_autofree char *seq_s = g_strdup_printf("%" G_GUINT64_FORMAT, seq);
    g_auto(CliRun) sj = cli((const char *const[]){ "-s", url, "--json", "show", seq_s, NULL });
    g_assert_cmpint(sj.rc, ==, JET_EXIT_OK);
    g_assert_cmpuint(count_lines(sj.out), ==, 1);
    g_autoptr(JsonParser) p2 = json_parser_new();
    JsonObject *o2 = strict_json(p2, g_strchomp(sj.out));
    g_autoptr(GBytes) body = b64_member(o2, "data_base64");
    g_assert_cmpmem(g_bytes_get_data(body, NULL), g_bytes_get_size(body), payload, sizeof payload - 1);
    g_assert_false(json_object_has_member(o2, "data"));
    JsonArray *h = json_object_get_array_member(o2, "headers");
    guint n = json_array_get_length(h);
    g_assert_cmpuint(n, ==, 11);
    JsonObject *bin = json_array_get_object_element(h, n - 3);
    g_assert_cmpstr(json_object_get_string_member(bin, "name"), ==, "X-Bin");
    g_assert_false(json_object_has_member(bin, "value"));
    g_autoptr(GBytes) binv = b64_member(bin, "value_base64");
    g_assert_cmpmem(g_bytes_get_data(binv, NULL), g_bytes_get_size(binv), "\xc3\x28", 2);
    JsonObject *ctl = json_array_get_object_element(h, n - 2);
    g_assert_cmpstr(json_object_get_string_member(ctl, "value"), ==, "a\x01\x1f" "b");
    JsonObject *txt = json_array_get_object_element(h, n - 1);
    g_assert_cmpstr(json_object_get_string_member(txt, "value"), ==, "caf\xc3\xa9");

    g_auto(CliRun) st = cli((const char *const[]){ "-s", url, "show", "--text", seq_s, NULL });
    g_assert_cmpint(st.rc, ==, JET_EXIT_OK);
    g_assert_true(g_utf8_validate(st.out, -1, NULL));
    g_assert_null(strchr(st.out, '\x1b'));
    g_assert_nonnull(strstr(st.out, "\nX-Bin: \\xc3(\n"));
    g_assert_nonnull(strstr(st.out, "\nX-Ctl: a\\x01\\x1fb\n"));
    g_assert_nonnull(strstr(st.out, "\nX-Text: caf\xc3\xa9\n"));
    g_assert_true(g_str_has_suffix(st.out, "\n\nPayload: 10 bytes, text:\na\\x00b\\xff\n\\x1b[2Jc\n"));
    /* Every line of the story is one line, whatever the reason holds. */
    g_assert_nonnull(strstr(st.out, "\n  Reason:          bad \\xfe\\x1b[31m\\x1f\\x09tab\n"));
    /* Not text: auto shows it in hex, nothing raw. */
    g_auto(CliRun) sa = cli((const char *const[]){ "-s", url, "show", "--payload", seq_s, NULL });
    g_assert_nonnull(strstr(sa.out, "\nPayload: 10 bytes, hex:\n"
                                    "00000000  61 00 62 ff 0a 1b 5b 32  4a 63                    |a.b...[2Jc|\n"));
    g_assert_null(strchr(sa.out, '\x1b'));

    /* A block with a line that does not parse: named, the rest shown. */
    g_autofree char *def_s = g_strdup_printf("%" G_GUINT64_FORMAT, defective);
    g_auto(CliRun) dt = cli((const char *const[]){ "-s", url, "show", def_s, NULL });
    g_assert_cmpint(dt.rc, ==, JET_EXIT_OK);
    g_assert_nonnull(strstr(dt.out, "\nUnreadable: line "));
    g_assert_nonnull(strstr(dt.out, "(no colon)\n"));
    g_assert_nonnull(strstr(dt.out, "\nX-After: 1\n"));
    g_auto(CliRun) dj = cli((const char *const[]){ "-s", url, "--json", "show", def_s, NULL });
    g_autoptr(JsonParser) p3 = json_parser_new();
    JsonObject *o3 = strict_json(p3, g_strchomp(dj.out));
    g_assert_cmpuint(json_array_get_length(json_object_get_array_member(o3, "header_defects")), ==, 1);
}

/* Replays carry the payload and the application headers in order, no Nats-*
 * header of the original, no provenance, the record's own replay Msg-Id
 * first and Jethost-Replay-Of; they purge nothing.  A record replayed again
 * is a duplicate the target keeps once, unless --again. */
static void test_replay(Fx *fx, gconstpointer data)
{
    (void)data;
    records_setup(fx);
    /* A third record: only a rollup, in another letter case. */
    g_assert_cmpuint(record(fx, "ORDERS", "orders.new", 3, "third", "Jethost-Orig-nats_rollup: all\r\n", "msg-3", 5),
                     ==, 3);
    const char *url = fx->url;
    /* In sequence order, whatever the order given. */
    g_auto(CliRun) r = cli((const char *const[]){ "-s", url, "replay", "2", "1", "3", NULL });
    g_assert_cmpint(r.rc, ==, JET_EXIT_OK);
    g_assert_true(g_str_has_prefix(r.err, "jethost dlq: " DLQ " replayed 3 of 3 in "));
    g_assert_cmpuint(count_lines(r.err), ==, 1);
    g_assert_nonnull(strstr(r.out, DLQ ":1 -> orders.new: stream ORDERS seq 3\n"));
    g_assert_nonnull(strstr(r.out, DLQ ":2 -> orders.new: stream ORDERS seq 4\n"));
    g_assert_nonnull(strstr(r.out, DLQ ":3 -> orders.new: stream ORDERS seq 5\n"));
    guint64 msgs = 0, first = 0;
    stream_state(fx, "ORDERS", &msgs, &first);
    g_assert_cmpuint(msgs, ==, 5);
    g_assert_cmpuint(first, ==, 1);   /* nothing purged */

    g_autoptr(GBytes) body = NULL;
    g_autoptr(GPtrArray) h = stored_headers(fx, "ORDERS", 4, &body);
    g_assert_cmpmem(g_bytes_get_data(body, NULL), g_bytes_get_size(body), "msg-2", 5);
    const char *const want[] = {
        "Nats-Msg-Id", "jethost-replay:" DLQ ":2:",
        "X-App", "keep",
        "X-Empty", "",
        JET_HDR_REPLAY_OF, DLQ ":2",
        NULL,
    };
    assert_headers(h, want);
    g_autoptr(GPtrArray) h5 = stored_headers(fx, "ORDERS", 5, NULL);
    const char *const want5[] = {
        "Nats-Msg-Id", "jethost-replay:" DLQ ":3:",
        JET_HDR_REPLAY_OF, DLQ ":3",
        NULL,
    };
    assert_headers(h5, want5);

    /* Replayed again, twice in one command and once more: the target keeps
     * the first (a duplicate pub-ack naming it). */
    g_auto(CliRun) twice = cli((const char *const[]){ "-s", url, "replay", "2", "2", NULL });
    g_assert_cmpint(twice.rc, ==, JET_EXIT_OK);
    g_assert_cmpstr(twice.out, ==, DLQ ":2 -> orders.new: stream ORDERS seq 4 (duplicate: replayed before)\n");
    g_assert_nonnull(strstr(twice.err, "replayed 1 of 1 (1 already replayed: the target kept the first)"));
    g_auto(CliRun) dup = cli((const char *const[]){ "-s", url, "--json", "replay", "2", NULL });
    g_assert_cmpint(dup.rc, ==, JET_EXIT_OK);
    g_autoptr(JsonParser) pd = json_parser_new();
    JsonObject *od = strict_json(pd, g_strchomp(dup.out));
    g_assert_cmpint(json_object_get_int_member(od, "seq"), ==, 4);
    g_assert_true(json_object_get_boolean_member(od, "duplicate"));
    g_assert_cmpstr(json_object_get_string_member(od, "msg_id"), ==, g_ptr_array_index(h, 1));
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 5);

    /* --again: a new message, under a new id. */
    g_auto(CliRun) again = cli((const char *const[]){ "-s", url, "--json", "--again", "replay", "2", NULL });
    g_assert_cmpint(again.rc, ==, JET_EXIT_OK);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = strict_json(p, g_strchomp(again.out));
    g_assert_cmpint(json_object_get_int_member(o, "seq"), ==, 6);
    g_assert_cmpstr(json_object_get_string_member(o, "stream"), ==, "ORDERS");
    g_assert_cmpstr(json_object_get_string_member(o, "subject"), ==, "orders.new");
    g_assert_false(json_object_get_boolean_member(o, "duplicate"));
    g_assert_cmpstr(json_object_get_string_member(o, "msg_id"), !=, g_ptr_array_index(h, 1));
    g_assert_nonnull(strstr(json_object_get_string_member(o, "msg_id"), ":again-"));
    g_autoptr(GPtrArray) h6 = stored_headers(fx, "ORDERS", 6, NULL);
    g_assert_cmpstr(g_ptr_array_index(h6, 1), ==, json_object_get_string_member(o, "msg_id"));
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 6);
    g_assert_cmpuint(stream_msgs(fx, DLQ), ==, 3);   /* the DLQ keeps its records */

    /* A record that is not a capture, and one that is missing: reported,
     * and the others are still replayed. */
    g_assert_cmpint(js_Publish(NULL, fx->js, DLQ_SUBJECT, "raw", 3, NULL, NULL), ==, NATS_OK);
    g_auto(CliRun) mixed = cli((const char *const[]){ "-s", url, "--again", "replay", "4", "42", "1", NULL });
    g_assert_cmpint(mixed.rc, ==, JET_EXIT_FAILURE);
    g_assert_nonnull(strstr(mixed.err, DLQ ":4: refused: no Jethost-Origin-Subject header: not a jethost capture\n"));
    g_assert_nonnull(strstr(mixed.err, "no record " DLQ ":42\n"));
    g_assert_nonnull(strstr(mixed.err, "replayed 1 of 3, refused 1, 1 no longer there"));
    g_assert_cmpuint(count_lines(mixed.err), ==, 3);
    g_assert_nonnull(strstr(mixed.out, DLQ ":1 -> orders.new"));
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 7);

    /* --limit counts what it replays: a record no longer there is not one
     * of the N (record 1 removed; the given ones are taken in order). */
    g_auto(CliRun) rm = cli((const char *const[]){ "-s", url, "rm", "--yes", "1", NULL });
    g_assert_cmpint(rm.rc, ==, 0);
    g_auto(CliRun) lim = cli((const char *const[]){ "-s", url, "--again", "replay", "--limit", "2", "3", "1", "2",
                                                    NULL });
    g_test_message("replay --limit 2 3 1 2:\n%s%s", lim.out, lim.err);
    g_assert_nonnull(strstr(lim.err, "no record " DLQ ":1\n"));
    g_assert_nonnull(strstr(lim.out, DLQ ":2 -> "));
    g_assert_nonnull(strstr(lim.out, DLQ ":3 -> "));
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 9);
}

/* Records that aim elsewhere than their origin stream captures: refused
 * one line each, naming the record; the good one in the same command still
 * replays; the exit code is 1; nothing reaches the API. */
static void test_replay_refused(Fx *fx, gconstpointer data)
{
    (void)data;
    streams_setup(fx);
    stream_create(fx, "X", "x.>", FALSE);
    jet_test_publish_n(fx->js, "x.a", 3);
    guint64 purge = record(fx, "X", "$JS.API.STREAM.PURGE.X", 1, "forged", NULL, "{}", 2);
    guint64 good = record(fx, "ORDERS", "orders.new", 1, "ok", NULL, "msg-1", 5);
    guint64 elsewhere = record(fx, "ORDERS", "x.a", 2, "not captured by ORDERS", NULL, "m", 1);
    guint64 gone = record(fx, "GONE", "orders.new", 1, "no such stream", NULL, "m", 1);
    guint64 wild = record(fx, "ORDERS", "orders.*", 3, "wildcard", NULL, "m", 1);
    guint64 lower = record(fx, "X", "$js.api.stream.delete.X", 2, "lower case", NULL, "m", 1);
    guint64 nostream = record(fx, NULL, "orders.new", 1, "no origin stream", NULL, "m", 1);
    guint64 inbox = record(fx, "ORDERS", "_INBOX.abc", 4, "inbox", NULL, "m", 1);
    guint64 seqs[] = { purge, good, elsewhere, gone, wild, lower, nostream, inbox };
    const char *args[G_N_ELEMENTS(seqs) + 4] = { "-s", fx->url, "replay" };
    g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func(g_free);
    for (gsize i = 0; i < G_N_ELEMENTS(seqs); i++) {
        char *s = g_strdup_printf("%" G_GUINT64_FORMAT, seqs[i]);
        g_ptr_array_add(owned, s);
        args[3 + i] = s;
    }
    args[3 + G_N_ELEMENTS(seqs)] = NULL;
    g_auto(CliRun) r = cli(args);
    g_assert_cmpint(r.rc, ==, JET_EXIT_FAILURE);
    /* One line a refusal, and the summary. */
    g_assert_cmpuint(count_lines(r.err), ==, G_N_ELEMENTS(seqs));
    g_assert_nonnull(strstr(r.err, "replayed 1 of 8, refused 7 in "));
    g_assert_null(strstr(r.err, "(null)"));
    g_assert_null(strstr(r.out, "(null)"));
    const struct {
        guint64 seq;
        const char *why;
    } refusals[] = {
        { purge, "origin subject \"$JS.API.STREAM.PURGE.X\" is in a namespace reserved for the server" },
        { elsewhere, "origin stream ORDERS does not capture x.a (its subjects: orders.>" },
        { gone, "origin stream GONE does not exist" },
        { wild, "origin subject \"orders.*\" holds a wildcard" },
        { lower, "origin subject \"$js.api.stream.delete.X\" is in a namespace reserved" },
        { nostream, "no Jethost-Origin-Stream header" },
        { inbox, "origin subject \"_INBOX.abc\" is in a namespace reserved" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(refusals); i++) {
        g_autofree char *line = g_strdup_printf("jethost dlq: " DLQ ":%" G_GUINT64_FORMAT ": refused: %s",
                                                refusals[i].seq, refusals[i].why);
        g_test_message("wanted: %s", line);
        g_assert_nonnull(strstr(r.err, line));
    }
    g_autofree char *ok_line = g_strdup_printf(DLQ ":%" G_GUINT64_FORMAT " -> orders.new: stream ORDERS seq 3\n", good);
    g_assert_cmpstr(r.out, ==, ok_line);
    g_assert_cmpuint(stream_msgs(fx, "X"), ==, 3);   /* not purged, not deleted */
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 3);
}

/* --to: a literal subject some stream captures, else refused. */
static void test_replay_to(Fx *fx, gconstpointer data)
{
    (void)data;
    streams_setup(fx);
    stream_create(fx, "AUDIT", "audit.>", FALSE);
    guint64 gone = record(fx, "GONE", "gone.x", 1, "its stream is gone", "X-App: keep\r\n", "m", 1);
    g_autofree char *seq = g_strdup_printf("%" G_GUINT64_FORMAT, gone);
    const char *url = fx->url;

    g_auto(CliRun) plain = cli((const char *const[]){ "-s", url, "replay", seq, NULL });
    g_assert_cmpint(plain.rc, ==, JET_EXIT_FAILURE);
    g_assert_nonnull(strstr(plain.err, "does not exist"));

    g_auto(CliRun) to = cli((const char *const[]){ "-s", url, "replay", "--to", "audit.replayed", seq, NULL });
    g_assert_cmpint(to.rc, ==, JET_EXIT_OK);
    g_assert_nonnull(strstr(to.out, " -> audit.replayed: stream AUDIT seq 1\n"));
    g_autoptr(GPtrArray) h = stored_headers(fx, "AUDIT", 1, NULL);
    g_assert_cmpstr(jet_hdr_get(h, "X-App"), ==, "keep");
    g_assert_cmpstr(jet_hdr_get(h, JET_HDR_REPLAY_OF), !=, NULL);

    g_auto(CliRun) nowhere = cli((const char *const[]){ "-s", url, "replay", "--to", "nowhere.x", seq, seq, NULL });
    g_assert_cmpint(nowhere.rc, ==, JET_EXIT_FAILURE);
    /* The same SEQ twice is one record: one refusal, and the summary. */
    g_assert_cmpuint(count_lines(nowhere.err), ==, 2);
    g_autofree char *line = g_strdup_printf(DLQ ":%s: refused: --to nowhere.x: no stream captures it\n", seq);
    g_assert_nonnull(strstr(nowhere.err, line));

    const char *bad[] = { "audit.*", "audit.>", "$JS.API.STREAM.PURGE.AUDIT", "$kv.b.k", "audit..x", "audit x", "" };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_auto(CliRun) b = cli((const char *const[]){ "-s", url, "replay", "--to", bad[i], seq, NULL });
        g_assert_cmpint(b.rc, ==, JET_EXIT_USAGE);
        g_assert_nonnull(strstr(b.err, "--to"));
    }
    g_assert_cmpuint(stream_msgs(fx, "AUDIT"), ==, 1);
}

/* --- jethost pub, the binary ------------------------------------------------ */

typedef struct {
    int rc;
    char *out;
    char *err;
} PubRun;

static void pub_run_clear(PubRun *r)
{
    g_free(r->out);
    g_free(r->err);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PubRun, pub_run_clear)

static void die_with_parent(gpointer data)
{
    (void)data;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static PubRun pub(const char *const *args)
{
    static guint n;
    n++;
    g_autofree char *bin = jet_test_jethost_path();
    g_autofree char *out_name = g_strdup_printf("pub-%u.out", n), *err_name = g_strdup_printf("pub-%u.err", n);
    g_autofree char *out_path = g_build_filename(jet_test_private_dir(), out_name, NULL);
    g_autofree char *err_path = g_build_filename(jet_test_private_dir(), err_name, NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, bin);
    g_ptr_array_add(argv, "pub");
    for (const char *const *a = args; *a != NULL; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GSubprocessLauncher) l = g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDIN_INHERIT);
    g_subprocess_launcher_set_stdout_file_path(l, out_path);
    g_subprocess_launcher_set_stderr_file_path(l, err_path);
    g_subprocess_launcher_set_child_setup(l, die_with_parent, NULL, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, &err);
    g_assert_no_error(err);
    PubRun r;
    r.rc = jet_test_jethost_wait(p, 30000);
    g_assert_true(g_file_get_contents(out_path, &r.out, NULL, NULL));
    g_assert_true(g_file_get_contents(err_path, &r.err, NULL, NULL));
    g_autofree char *o = g_strescape(r.out, "\n"), *e = g_strescape(r.err, "\n");
    g_test_message("pub -> %d\nstdout:\n%s\nstderr:\n%s", r.rc, o, e);
    return r;
}

static void test_pub(Fx *fx, gconstpointer data)
{
    (void)data;
    streams_setup(fx);
    const char *url = fx->url;
    static const struct {
        const char *subject;
        const char *header;
        const char *why;
    } usage[] = {
        { "orders.*", NULL, "wildcard" },
        { "orders.>", NULL, "wildcard" },
        { "orders.a b", NULL, "white space" },
        { "orders.a\x01", NULL, "control" },
        { "orders..a", NULL, "empty token" },
        { "$JS.API.STREAM.PURGE.ORDERS", NULL, "reserved" },
        { "_inbox.x", NULL, "reserved" },
        { "orders.new", "Bad Name: x", "not a token" },
        { "orders.new", "X-Ok: a\nb", "line break" },
        { "orders.new", "novalue", "NAME: VALUE" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(usage); i++) {
        const char *args[] = { "-s", url, "--data", "x", "-H", usage[i].header, usage[i].subject, NULL };
        if (usage[i].header == NULL) {
            args[4] = usage[i].subject;
            args[5] = NULL;
        }
        g_auto(PubRun) r = pub(args);
        g_assert_cmpint(r.rc, ==, JET_EXIT_USAGE);
        g_assert_nonnull(strstr(r.err, usage[i].why));
        g_assert_cmpstr(r.out, ==, "");
    }
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 2);

    /* Headers in the order given, an empty value and bytes that are not
     * UTF-8 kept, the Msg-Id first; the result is JSON. */
    g_auto(PubRun) ok = pub((const char *const[]){ "-s", url, "--data", "hello", "-H", "B: 2", "-H", "a=1",
                                                   "-H", "E:", "-H", "X-Bin: \xff", "--msg-id", "id-1",
                                                   "orders.new", NULL });
    g_assert_cmpint(ok.rc, ==, JET_EXIT_OK);
    g_assert_cmpuint(count_lines(ok.out), ==, 1);
    g_autoptr(JsonParser) p = json_parser_new();
    JsonObject *o = strict_json(p, g_strchomp(ok.out));
    g_assert_cmpstr(json_object_get_string_member(o, "subject"), ==, "orders.new");
    g_assert_cmpstr(json_object_get_string_member(o, "stream"), ==, "ORDERS");
    g_assert_cmpint(json_object_get_int_member(o, "seq"), ==, 3);
    g_assert_false(json_object_get_boolean_member(o, "duplicate"));
    g_autoptr(GBytes) body = NULL;
    g_autoptr(GPtrArray) h = stored_headers(fx, "ORDERS", 3, &body);
    g_assert_cmpmem(g_bytes_get_data(body, NULL), g_bytes_get_size(body), "hello", 5);
    const char *const want[] = { "Nats-Msg-Id", "id-1", "B", "2", "a", "1", "E", "", "X-Bin", "\xff", NULL };
    assert_headers(h, want);

    /* The same Msg-Id: the server reads it (it is first) and says so. */
    g_auto(PubRun) dup = pub((const char *const[]){ "-s", url, "--data", "hello", "--msg-id", "id-1", "orders.new",
                                                    NULL });
    g_assert_cmpint(dup.rc, ==, JET_EXIT_OK);
    g_autoptr(JsonParser) p2 = json_parser_new();
    JsonObject *o2 = strict_json(p2, g_strchomp(dup.out));
    g_assert_true(json_object_get_boolean_member(o2, "duplicate"));

    g_auto(PubRun) none = pub((const char *const[]){ "-s", url, "--data", "x", "nowhere.x", NULL });
    g_assert_cmpint(none.rc, ==, JET_EXIT_FAILURE);
    g_assert_nonnull(strstr(none.err, "no stream captures this subject"));
    g_assert_cmpuint(stream_msgs(fx, "ORDERS"), ==, 3);
}

/* Sends SIGINT to this process once `want` replays have reached ORDERS. */
typedef struct {
    Fx *fx;
    guint64 want;
} Interrupter;

static gpointer interrupt_after(gpointer data)
{
    Interrupter *in = data;
    while (stream_msgs(in->fx, "ORDERS") < in->want)
        g_usleep(20000);
    kill(getpid(), SIGINT);
    return NULL;
}

/* A record that failed early in a run the operator then interrupts: the
 * resume hint names that record, not the one the run stopped at, or a
 * resumed run would never try it again. */
static void test_resume_after_failure(Fx *fx, gconstpointer data)
{
    (void)data;
    streams_setup(fx);   /* ORDERS holds 2 */
    /* FULL takes one message and refuses the next (discard new). */
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "FULL";
    const char *subjects[] = { "full.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.MaxMsgs = 1;
    sc.Discard = js_DiscardNew;
    g_assert_cmpint(js_AddStream(NULL, fx->js, &sc, NULL, NULL), ==, NATS_OK);
    jet_test_publish_n(fx->js, "full.x", 1);
    record(fx, "ORDERS", "orders.new", 1, "r", NULL, "m", 1);   /* 1 */
    record(fx, "FULL", "full.x", 1, "r", NULL, "m", 1);         /* 2: its replay fails */
    for (guint i = 3; i <= 40; i++)
        record(fx, "ORDERS", "orders.new", i, "r", NULL, "m", 1);
    /* 10 a second: interrupted after records 1, 3, 4 and 5 are in. */
    Interrupter in = { fx, 2 + 4 };
    GThread *t = g_thread_new("interrupter", interrupt_after, &in);
    g_auto(CliRun) r = cli((const char *const[]){ "-s", fx->url, "replay", "--rate", "10", "--from", "1", NULL });
    g_thread_join(t);
    g_test_message("interrupted replay:\n%s", r.err);
    g_assert_cmpint(r.rc, ==, 130);
    g_assert_nonnull(strstr(r.err, DLQ ":2: replay to full.x: "));
    g_assert_nonnull(strstr(r.err, "failed 1 (the first: 2)"));
    g_assert_nonnull(strstr(r.err, "; to go on, run the same command with --from 2\n"));
}

/* --- a read stopped early -------------------------------------------------- */

static gboolean stop_at_first(const JetDlqRecord *r, gpointer data)
{
    (void)r;
    (*(guint *)data)++;
    return FALSE;
}

/* A read that stops at its first record while the rest of the pull's batch
 * is still arriving, 300 times, with freed memory poisoned: with nats.c
 * before 3.7 the subscription was freed under the connection's reading
 * thread (sub_end.h), which crashed `jethost dlq rm FIRST-LAST` about one
 * run in 20 here (a use of freed memory that poisoning turns into a
 * crash every time it happens). */
static void test_read_stopped_early(Fx *fx, gconstpointer unused)
{
    (void)unused;
    stream_create(fx, DLQ, DLQ_SUBJECT, FALSE);
    /* Large records: the rest of a batch takes the reading thread longer. */
    g_autofree char *big = g_malloc0(16384);
    for (guint i = 0; i < 1000; i++)
        g_assert_cmpint(js_Publish(NULL, fx->js, DLQ_SUBJECT, big, 16384, NULL, NULL), ==, NATS_OK);
    g_autoptr(GError) err = NULL;
    JetConn *conn = jet_conn_open_config(NULL, fx->url, &err);
    g_assert_no_error(err);
    mallopt(M_PERTURB, 0xa5);
    for (guint i = 0; i < 150; i++) {
        JetDlqReadOptions o = { .start_seq = (guint64)g_test_rand_int_range(1, 500), .batch = 128 };
        guint got = 0;
        g_assert_true(jet_dlq_read(conn, DLQ, &o, stop_at_first, &got, NULL, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(got, ==, 1);
    }
    mallopt(M_PERTURB, 0);
    jet_conn_close(conn);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
#define ADD(path, fn) g_test_add(path, Fx, NULL, jet_test_js_setup, fn, jet_test_js_teardown)
    ADD("/dlq-cli/list-show", test_list_show);
    ADD("/dlq-cli/list-from-time", test_list_from_time);
    ADD("/dlq-cli/hostile-output", test_hostile_output);
    ADD("/dlq-cli/replay", test_replay);
    ADD("/dlq-cli/replay-refused", test_replay_refused);
    ADD("/dlq-cli/replay-to", test_replay_to);
    ADD("/dlq-cli/pub", test_pub);
    ADD("/dlq-cli/resume-after-failure", test_resume_after_failure);
    ADD("/dlq-cli/read-stopped-early", test_read_stopped_early);
#undef ADD
    int rc = g_test_run();
    nats_Close();
    return rc;
}
