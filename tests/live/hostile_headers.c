/* Hostile header blocks against a real nats-server 2.9.10: published with
 * the tests' own raw-protocol publisher (nats.c will not send them), taken
 * by a running engine whose plugin rejects everything, and dead-lettered.
 *
 * What must hold, read from the server's own view of each record (the raw
 * header block STREAM.MSG.GET returns), never from the code under test:
 * one record per message; exactly one line of the record starts with
 * "Nats-" in any letter case, the host's Nats-Msg-Id, first; the
 * original's readable headers exactly, in order; every line that could not
 * be read listed in Jethost-Dropped-Headers with why, and its message
 * captured as malformed-headers without the plugin ever seeing it; the
 * plugin of a readable block sees exactly its headers.  Then: an operator's
 * DLQ stream that allows rollups loses nothing; a stream deleted and
 * re-created makes new records; a record forged under a capture's id is a
 * collision, never a reason to ack without a record; and a message without
 * a payload that the stream's retention removes between its delivery and
 * its handling is handled as delivered, never dead-lettered. */
#define _GNU_SOURCE
#include "rig.h"
#include "capture.h"
#include "rawpub.h"
#include "stream_msg.h"

#include <string.h>

#define DLQ "JETHOST_DLQ"

/* --- the classes ------------------------------------------------------------ */

typedef struct {
    const char *name;
    const char *block;          /* NULL: built by the test (big) */
    gsize block_len;            /* 0: strlen(block) */
    const char *cause;          /* "rejected" or "malformed-headers" */
    /* What the record carries of the original, in order: carried name,
     * value, ...; NULL ends.  For a rejected message the plugin saw the
     * same list under the original names (plugin_saw). */
    const char *carried[16];
    const char *plugin_saw[16];
    const char *dropped[4];     /* substrings of Jethost-Dropped-Headers; none: absent */
} Class;

static const Class classes[] = {
    { "crlf-in-name", "NATS/1.0\r\nX-A: 1\r\np\r\nNats-Msg-Id: forged\r\n\r\n", 0, "malformed-headers",
      { "X-A", "1", "Jethost-Orig-Nats_Msg-Id", "forged", NULL }, { NULL },
      { "line 3 \"p\" (no colon)", NULL } },
    { "lf-in-name", "NATS/1.0\r\np\nNats-Rollup: all\r\nX-B: 2\r\n\r\n", 0, "malformed-headers",
      { "X-B", "2", NULL }, { NULL }, { "line 2 \"p\\x0aNats-Rollup:\\x20all\" (bare CR or LF)", NULL } },
    { "cr-in-name", "NATS/1.0\r\nq\rNats-Expected-Stream: NOPE\r\nX-C: 3\r\n\r\n", 0, "malformed-headers",
      { "X-C", "3", NULL }, { NULL }, { "line 2 \"q\\x0dNats-Expected-Stream:\\x20NOPE\" (bare CR or LF)", NULL } },
    { "space-in-name", "NATS/1.0\r\na b: v\r\nX-D: 4\r\n\r\n", 0, "malformed-headers",
      { "X-D", "4", NULL }, { NULL }, { "line 2 \"a\\x20b:\\x20v\" (name has a character outside the token set)", NULL } },
    { "colon-in-name", "NATS/1.0\r\na:b: v\r\n\r\n", 0, "rejected",
      { "a", "b: v", NULL }, { "a", "b: v", NULL }, { NULL } },
    { "leading-space-line", "NATS/1.0\r\n X-Lead: v\r\nX-E: 5\r\n\r\n", 0, "malformed-headers",
      { "X-E", "5", NULL }, { NULL }, { "line 2 \"\\x20X-Lead:\\x20v\" (continuation line", NULL } },
    { "empty-values", "NATS/1.0\r\nX-Empty:\r\nX-After: v\r\nX-Last:\r\n\r\n", 0, "rejected",
      { "X-Empty", "", "X-After", "v", "X-Last", "", NULL }, { "X-Empty", "", "X-After", "v", "X-Last", "", NULL },
      { NULL } },
    { "non-utf8", "NATS/1.0\r\nX-Bin: \xff\xfe\x80 z\r\nX-Bin: \xc3\x28\r\n\r\n", 0, "rejected",
      { "X-Bin", "\xff\xfe\x80 z", "X-Bin", "\xc3\x28", NULL }, { "X-Bin", "\xff\xfe\x80 z", "X-Bin", "\xc3\x28", NULL },
      { NULL } },
    { "nats-any-case",
      "NATS/1.0\r\nnats-rollup: all\r\nNATS-MSG-ID: up\r\nnAtS-eXpEcTeD-lAsT-sEqUeNcE: 1\r\nNats-Msg-Id: orig-9\r\n"
      "jethost-cause: forged\r\n\r\n", 0, "rejected",
      { "Jethost-Orig-nats_rollup", "all", "Jethost-Orig-NATS_MSG-ID", "up",
        "Jethost-Orig-nAtS_eXpEcTeD-lAsT-sEqUeNcE", "1", "Jethost-Orig-Nats_Msg-Id", "orig-9",
        "Jethost-Orig-jethost-cause", "forged", NULL },
      { "nats-rollup", "all", "NATS-MSG-ID", "up", "nAtS-eXpEcTeD-lAsT-sEqUeNcE", "1", "Nats-Msg-Id", "orig-9",
        "jethost-cause", "forged", NULL },
      { NULL } },
    { "no-blank-line", "NATS/1.0\r\nX-F: 6\r\n", 0, "malformed-headers",
      { "X-F", "6", NULL }, { NULL }, { "(truncated: no blank line at the end)", NULL } },
    { "nul-in-value", "NATS/1.0\r\nX-G: a\0b\r\nX-H: 8\r\n\r\n", 30, "malformed-headers",
      { "X-H", "8", NULL }, { NULL }, { "line 2 \"X-G:\\x20a\\x00b\" (NUL byte)", NULL } },
};

#define BIG_HEADERS 10000

static char *big_block(gsize *len)
{
    GString *s = g_string_new("NATS/1.0\r\n");
    for (guint i = 0; i < BIG_HEADERS; i++)
        g_string_append(s, "a: 1\r\n");
    g_string_append(s, "\r\n");
    *len = s->len;
    return g_string_free(s, FALSE);
}

/* --- reading the server's view ----------------------------------------------- */

static guint64 stream_msgs(Rig *r, const char *stream)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, r->js, stream, NULL, NULL) != NATS_OK)
        return 0;
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

typedef struct {
    Rig *r;
    guint64 want;
} CountWait;

static gboolean dlq_has(gpointer data)
{
    CountWait *w = data;
    return stream_msgs(w->r, DLQ) >= w->want;
}

/* The raw lines of a record's block (the NATS/1.0 line first). */
static GPtrArray *raw_lines(const JetStoredMsg *m)
{
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
    gsize len = 0;
    const char *h = m->hdrs != NULL ? g_bytes_get_data(m->hdrs, &len) : NULL;
    const char *p = h, *end = h + len;
    while (p != NULL && p < end) {
        const char *q = g_strstr_len(p, end - p, "\r\n");
        g_assert_nonnull(q);   /* the host writes every line with CR LF */
        if (q == p)
            break;
        g_ptr_array_add(lines, g_strndup(p, (gsize)(q - p)));
        p = q + 2;
    }
    return lines;
}

/* "name: value" split at the first ": " (the host writes exactly that). */
static void split(const char *line, char **name, char **value)
{
    const char *c = strstr(line, ": ");
    g_assert_nonnull(c);
    *name = g_strndup(line, (gsize)(c - line));
    *value = g_strdup(c + 2);
}

static const char *const provenance[] = {
    "Jethost-Origin-Stream", "Jethost-Origin-Stream-Created", "Jethost-Origin-Subject", "Jethost-Origin-Seq",
    "Jethost-Origin-Consumer", "Jethost-Origin-Reply", "Jethost-Deliveries", "Jethost-Failures",
    "Jethost-Postpones", "Jethost-Cause", "Jethost-Reason", "Jethost-First-Failure", "Jethost-Enqueued",
    "Jethost-Captured", "Jethost-Plugin", "Jethost-Plugin-Version", "Jethost-Host", "Jethost-Binding",
    "Jethost-Dropped-Headers", NULL,
};

typedef struct {
    GPtrArray *orig;    /* name, value: the original's part of the record, in order */
    GHashTable *prov;   /* provenance name -> value */
    char *msg_id;
} Record;

static void record_clear(Record *rec)
{
    g_clear_pointer(&rec->orig, g_ptr_array_unref);
    g_clear_pointer(&rec->prov, g_hash_table_unref);
    g_clear_pointer(&rec->msg_id, g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Record, record_clear)

/* Reads DLQ record seq and checks the Nats-* rule on its raw lines. */
static void read_record(Rig *r, guint64 seq, Record *rec, JetStoredMsg **raw)
{
    g_autoptr(GError) err = NULL;
    JetStoredMsg *m = NULL;
    g_assert_cmpint(jet_stream_msg_get(r->nc, DLQ, seq, 5000, &m, &err), ==, JET_STORED_FOUND);
    g_autoptr(GPtrArray) lines = raw_lines(m);
    g_assert_cmpuint(lines->len, >=, 2);
    g_assert_cmpstr(g_ptr_array_index(lines, 0), ==, "NATS/1.0");
    g_assert_true(g_str_has_prefix(g_ptr_array_index(lines, 1), "Nats-Msg-Id: jethost:ORDERS.c:"));
    rec->orig = g_ptr_array_new_with_free_func(g_free);
    rec->prov = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    guint nats_lines = 0;
    for (guint i = 1; i < lines->len; i++) {
        const char *l = g_ptr_array_index(lines, i);
        if (g_ascii_strncasecmp(l, "nats-", 5) == 0)
            nats_lines++;
        char *name, *value;
        split(l, &name, &value);
        if (i == 1) {
            rec->msg_id = value;
            g_free(name);
        } else if (g_strv_contains(provenance, name)) {
            g_assert_false(g_hash_table_contains(rec->prov, name));
            g_hash_table_insert(rec->prov, name, value);
        } else {
            g_ptr_array_add(rec->orig, name);
            g_ptr_array_add(rec->orig, value);
        }
    }
    g_assert_cmpuint(nats_lines, ==, 1);
    *raw = m;
}

static const char *prov(const Record *rec, const char *name)
{
    return g_hash_table_lookup(rec->prov, name);
}

static void assert_pairs(const GPtrArray *got, const char *const *want)
{
    guint n = 0;
    while (want[n] != NULL)
        n++;
    g_assert_cmpuint(got->len, ==, n);
    for (guint i = 0; i < n; i++)
        g_assert_cmpmem(g_ptr_array_index(got, i), strlen(g_ptr_array_index(got, i)), want[i], strlen(want[i]));
}

/* fx_gate's DIR/headers-SEQ: name NUL value NUL ... */
static GPtrArray *plugin_saw(Rig *r, guint64 seq)
{
    g_autofree char *name = g_strdup_printf("headers-%" G_GUINT64_FORMAT, seq);
    g_autofree char *path = g_build_filename(r->dir, name, NULL);
    g_autofree char *text = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &text, &len, NULL))
        return NULL;
    GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
    for (gsize i = 0; i < len;) {
        gsize l = strlen(text + i);
        g_ptr_array_add(a, g_strndup(text + i, l));
        i += l + 1;
    }
    return a;
}

static guint64 publish_raw_data(JetRawPub *p, const char *subject, const char *block, gsize len, const char *data)
{
    g_autofree char *ack = NULL;
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_rawpub_hpub_acked(p, subject, block, len, data, strlen(data), &ack, &err));
    g_assert_no_error(err);
    g_assert_null(strstr(ack, "\"error\""));
    const char *s = strstr(ack, "\"seq\":");
    g_assert_nonnull(s);
    return g_ascii_strtoull(s + 6, NULL, 10);
}

static guint64 publish_raw(Rig *r, JetRawPub *p, const char *subject, const char *block, gsize len)
{
    (void)r;
    return publish_raw_data(p, subject, block, len, "payload");
}

static void wait_done(Rig *r, guint64 records, guint64 floor)
{
    CountWait cw = { r, records };
    g_assert_true(jet_test_wait_until(dlq_has, &cw, 30000));
    FloorWait fw = { r, floor };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    g_assert_cmpuint(stream_msgs(r, DLQ), ==, records);
    /* Every message here is dead-lettered: this engine counts one per
     * sequence up to the floor. */
    rig_wait_dead_lettered(r, floor);
}

/* --- the tests ----------------------------------------------------------------- */

static void test_classes(void)
{
    Rig r = { 0 };
    rig_server(&r);
    g_autoptr(GError) err = NULL;
    g_autoptr(JetRawPub) p = jet_rawpub_connect(jet_test_server_port(r.srv), &err);
    g_assert_no_error(err);
    guint n = G_N_ELEMENTS(classes);
    for (guint i = 0; i < n; i++) {
        const Class *c = &classes[i];
        gsize len = c->block_len > 0 ? c->block_len : strlen(c->block);
        g_assert_cmpuint(publish_raw(&r, p, "orders.h", c->block, len), ==, i + 1);
    }
    gsize big_len = 0;
    g_autofree char *big = big_block(&big_len);
    g_assert_cmpuint(publish_raw(&r, p, "orders.h", big, big_len), ==, n + 1);
    /* Each class again with an empty payload: nats.c reads such a block
     * itself before the host can (looking for a status), so the host reads
     * it back from the stream. */
    guint empty_class[G_N_ELEMENTS(classes)];
    guint n_empty = 0;
    for (guint i = 0; i < n; i++) {
        const Class *c = &classes[i];
        gsize len = c->block_len > 0 ? c->block_len : strlen(c->block);
        if (g_strstr_len(c->block, (gssize)len, "\nNats-Msg-Id: ") != NULL)
            continue;   /* ORDERS would take it for the first one's duplicate */
        empty_class[n_empty] = i;
        g_assert_cmpuint(publish_raw_data(p, "orders.h", c->block, len, ""), ==, n + 2 + n_empty);
        n_empty++;
    }
    g_assert_cmpuint(n_empty, >=, n - 2);
    const guint total = n + 1 + n_empty;

    rig_engine(&r, "rungs = 200ms\noption.verdict = reject\noption.dump_headers = true\n");
    wait_done(&r, total, total);

    g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint64 dseq = 1; dseq <= total; dseq++) {
        g_auto(Record) rec = { 0 };
        g_autoptr(JetStoredMsg) raw = NULL;
        read_record(&r, dseq, &rec, &raw);
        guint64 oseq = g_ascii_strtoull(prov(&rec, "Jethost-Origin-Seq"), NULL, 10);
        g_assert_true(g_hash_table_add(seen, GSIZE_TO_POINTER(oseq)));
        g_assert_true(g_str_has_prefix(rec.msg_id, "jethost:ORDERS.c:"));
        gboolean empty = oseq > n + 1;
        g_assert_cmpmem(g_bytes_get_data(raw->data, NULL), g_bytes_get_size(raw->data), empty ? "" : "payload",
                        empty ? 0 : 7);
        g_autoptr(GPtrArray) saw = plugin_saw(&r, oseq);
        if (oseq == n + 1) {
            /* 10,000 headers: all shown to the plugin, all in the record
             * (the provenance still fits under the 64 KiB limit). */
            g_assert_cmpstr(prov(&rec, "Jethost-Cause"), ==, "rejected");
            g_assert_null(prov(&rec, "Jethost-Dropped-Headers"));
            g_assert_cmpuint(rec.orig->len, ==, 2 * BIG_HEADERS);
            g_assert_nonnull(saw);
            g_assert_cmpuint(saw->len, ==, 2 * BIG_HEADERS);
            for (guint k = 0; k < 2 * BIG_HEADERS; k += 2) {
                g_assert_cmpstr(g_ptr_array_index(rec.orig, k), ==, "a");
                g_assert_cmpstr(g_ptr_array_index(rec.orig, k + 1), ==, "1");
                g_assert_cmpstr(g_ptr_array_index(saw, k + 1), ==, "1");
            }
            continue;
        }
        const Class *c = &classes[empty ? empty_class[oseq - n - 2] : oseq - 1];
        g_test_message("%s%s: record %" G_GUINT64_FORMAT, c->name, empty ? " (empty payload)" : "", dseq);
        g_assert_cmpstr(prov(&rec, "Jethost-Cause"), ==, c->cause);
        assert_pairs(rec.orig, c->carried);
        const char *dropped = prov(&rec, "Jethost-Dropped-Headers");
        if (c->dropped[0] == NULL) {
            g_assert_null(dropped);
        } else {
            g_assert_nonnull(dropped);
            for (guint k = 0; c->dropped[k] != NULL; k++)
                g_assert_nonnull(strstr(dropped, c->dropped[k]));
        }
        if (g_strcmp0(c->cause, "rejected") == 0) {
            g_assert_nonnull(saw);
            assert_pairs(saw, c->plugin_saw);
        } else {
            g_assert_null(saw);   /* never handled half-read */
            g_assert_nonnull(strstr(prov(&rec, "Jethost-Reason"), "header block: "));
        }
    }
    g_assert_cmpuint(g_hash_table_size(seen), ==, total);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.dead_lettered, ==, total);
    g_assert_cmpuint(st.capture_collisions, ==, 0);
    rig_free(&r);
}

/* An operator's DLQ stream that allows rollups: a forged Nats-Rollup in the
 * last message cannot purge the records before it. */
static void test_dlq_allows_rollup(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = { "jethost.dlq.>" };
    sc.Name = DLQ;
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    sc.AllowRollup = true;
    sc.Duplicates = JET_DLQ_DUPLICATE_WINDOW_NS;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, r.js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
    /* ORDERS must take the forged rollup too, or the original is refused. */
    g_assert_cmpint(js_GetStreamInfo(&si, r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    si->Config->AllowRollup = true;
    jsStreamInfo *up = NULL;
    g_assert_cmpint(js_UpdateStream(&up, r.js, si->Config, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(up);
    jsStreamInfo_Destroy(si);

    g_autoptr(GError) err = NULL;
    g_autoptr(JetRawPub) p = jet_rawpub_connect(jet_test_server_port(r.srv), &err);
    g_assert_no_error(err);
    for (guint i = 0; i < 3; i++)
        publish_raw(&r, p, "orders.a", "NATS/1.0\r\nX: 1\r\n\r\n", 17);
    const char *forged = "NATS/1.0\r\np\r\nNats-Rollup: sub\r\n\r\n";
    g_assert_cmpuint(publish_raw(&r, p, "orders.r", forged, strlen(forged)), ==, 4);
    const char *plain = "NATS/1.0\r\nNats-Rollup: sub\r\n\r\n";
    g_assert_cmpuint(publish_raw(&r, p, "orders.s", plain, strlen(plain)), ==, 5);

    rig_engine(&r, "rungs = 200ms\noption.verdict = reject\n");
    wait_done(&r, 5, 5);
    for (guint64 d = 1; d <= 5; d++) {
        g_auto(Record) rec = { 0 };
        g_autoptr(JetStoredMsg) raw = NULL;
        read_record(&r, d, &rec, &raw);
    }
    rig_free(&r);
}

static gint64 stream_created_ns(Rig *r)
{
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, r->js, "ORDERS", NULL, NULL), ==, NATS_OK);
    gint64 c = si->Created;
    jsStreamInfo_Destroy(si);
    return c;
}

/* The origin stream deleted and re-created within the DLQ's duplicate
 * window: its sequences start again, and so must the records. */
static void test_stream_recreated(void)
{
    Rig r = { 0 };
    rig_server(&r);
    const char *keys = "rungs = 200ms\noption.verdict = reject\n";
    jet_test_publish_n(r.js, "orders.x", 1);
    rig_engine(&r, keys);
    wait_done(&r, 1, 1);
    gint64 first_life = stream_created_ns(&r);
    rig_engine_end(&r);

    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    jet_test_stream_create(r.js, "ORDERS", "orders.>");
    g_assert_cmpint(stream_created_ns(&r), !=, first_life);
    jet_test_publish_n(r.js, "orders.x", 1);
    rig_engine(&r, keys);
    wait_done(&r, 2, 1);

    g_auto(Record) a = { 0 }, b = { 0 };
    g_autoptr(JetStoredMsg) ra = NULL, rb = NULL;
    read_record(&r, 1, &a, &ra);
    read_record(&r, 2, &b, &rb);
    g_assert_cmpstr(prov(&a, "Jethost-Origin-Seq"), ==, "1");
    g_assert_cmpstr(prov(&b, "Jethost-Origin-Seq"), ==, "1");
    g_assert_cmpstr(a.msg_id, !=, b.msg_id);
    g_assert_cmpstr(prov(&a, "Jethost-Origin-Stream-Created"), !=, prov(&b, "Jethost-Origin-Stream-Created"));
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.capture_collisions, ==, 0);   /* the id alone told them apart */
    rig_free(&r);
}

/* A record forged under the id a capture will use: the duplicate pub-ack is
 * checked against it, found to be another message's, and the capture goes
 * again under a distinct id.  The message is acked only once its own record
 * is stored. */
static void test_forged_collision(void)
{
    Rig r = { 0 };
    rig_server(&r);
    jet_test_stream_create(r.js, DLQ, "jethost.dlq.>");
    jet_test_publish_n(r.js, "orders.x", 1);
    g_autofree char *id = g_strdup_printf("jethost:ORDERS.c:1:%" G_GINT64_FORMAT, stream_created_ns(&r));
    natsMsg *f = NULL;
    natsMsg_Create(&f, "jethost.dlq.t", NULL, "forged", 6);
    natsMsgHeader_Set(f, "Nats-Msg-Id", id);
    natsMsgHeader_Set(f, "Jethost-Origin-Stream", "OTHER");
    natsMsgHeader_Set(f, "Jethost-Origin-Seq", "1");
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_PublishMsg(&pa, r.js, f, NULL, NULL), ==, NATS_OK);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(f);

    g_autofree char *keys = g_strdup("rungs = 200ms\noption.verdict = reject\n");
    rig_engine(&r, keys);
    wait_done(&r, 2, 1);
    g_auto(Record) rec = { 0 };
    g_autoptr(JetStoredMsg) raw = NULL;
    read_record(&r, 2, &rec, &raw);
    g_assert_cmpstr(prov(&rec, "Jethost-Origin-Stream"), ==, "ORDERS");
    g_autofree char *want = g_strdup_printf("%s:after-1", id);
    g_assert_cmpstr(rec.msg_id, ==, want);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    g_assert_cmpuint(st.capture_collisions, ==, 1);
    g_assert_cmpuint(st.dead_lettered, ==, 1);
    rig_free(&r);
}

/* --- retention racing a read ------------------------------------------------ */

typedef struct {
    Rig *r;
    guint64 seq;
} GoneWait;

static gboolean stored_gone(gpointer data)
{
    GoneWait *g = data;
    g_autoptr(JetStoredMsg) m = NULL;
    return jet_stream_msg_get(g->r->nc, "ORDERS", g->seq, 2000, &m, NULL) == JET_STORED_ABSENT;
}

/* Seq 2, headers and no payload, waits behind seq 1 (in the handler) while
 * the stream removes it: a limits stream's max_age, or on a work-queue
 * stream an operator's delete; then it is handled with its headers as
 * delivered: nothing is read back from the stream, nothing dead-lettered. */
static void test_empty_removed_before_handling(gconstpointer data)
{
    const gboolean work_queue = GPOINTER_TO_INT(data);
    Rig r = { 0 };
    rig_server(&r);
    /* ORDERS again, with a max_age, or as a work queue. */
    g_assert_cmpint(js_DeleteStream(r.js, "ORDERS", NULL, NULL), ==, NATS_OK);
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    const char *subjects[] = { "orders.>" };
    sc.Name = "ORDERS";
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    if (work_queue)
        sc.Retention = js_WorkQueuePolicy;
    else
        sc.MaxAge = (int64_t)1500 * 1000 * 1000;
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_AddStream(&si, r.js, &sc, NULL, &jerr);
    if (s != NATS_OK)
        g_error("add stream: %s (err %d)", nats_GetLastError(NULL), (int)jerr);
    jsStreamInfo_Destroy(si);
    jet_test_publish_n(r.js, "orders.x", 1);
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, "orders.x", NULL, NULL, 0), ==, NATS_OK);
    natsMsgHeader_Set(m, "X-Keep", "kept");
    natsMsgHeader_Set(m, "KV-Operation", "DEL");
    g_assert_cmpint(js_PublishMsg(NULL, r.js, m, NULL, NULL), ==, NATS_OK);
    natsMsg_Destroy(m);
    rig_engine(&r, "workers = 1\nbatch = 10\nack_wait = 10s\noption.block_seq = 1\noption.dump_headers = true\n");
    g_autofree char *inflight = g_build_filename(r.dir, "inflight-1", NULL);
    g_assert_true(jet_test_wait_file(inflight, 20000));
    if (work_queue)
        g_assert_cmpint(js_DeleteMsg(r.js, "ORDERS", 2, NULL, NULL), ==, NATS_OK);
    GoneWait gw = { &r, 2 };
    g_assert_true(jet_test_wait_until(stored_gone, &gw, 20000));
    g_autofree char *go = g_build_filename(r.dir, "go-1", NULL);
    g_assert_true(g_file_set_contents(go, "", 0, NULL));
    g_autofree char *dumped = g_build_filename(r.dir, "headers-2", NULL);
    g_assert_true(jet_test_wait_file(dumped, 20000));
    rig_stop(&r);
    /* fx_gate writes name NUL value NUL for each header, in order. */
    g_autofree char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(dumped, &text, &len, NULL));
    static const char a[] = "X-Keep\0kept\0", b[] = "KV-Operation\0DEL\0";   /* nats.c wrote them in its order */
    g_assert_cmpuint(len, ==, sizeof a - 1 + sizeof b - 1);
    g_assert_nonnull(memmem(text, len, a, sizeof a - 1));
    g_assert_nonnull(memmem(text, len, b, sizeof b - 1));
    jsStreamInfo *dlq = NULL;
    if (js_GetStreamInfo(&dlq, r.js, DLQ, NULL, NULL) == NATS_OK) {
        g_assert_cmpuint(dlq->State.Msgs, ==, 0);
        jsStreamInfo_Destroy(dlq);
    }
    rig_free(&r);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/hostile/classes", test_classes);
    g_test_add_func("/hostile/dlq-allows-rollup", test_dlq_allows_rollup);
    g_test_add_func("/hostile/stream-recreated", test_stream_recreated);
    g_test_add_func("/hostile/forged-collision", test_forged_collision);
    g_test_add_data_func("/hostile/empty-removed-before-handling", GINT_TO_POINTER(FALSE),
                         test_empty_removed_before_handling);
    g_test_add_data_func("/hostile/empty-removed-work-queue", GINT_TO_POINTER(TRUE),
                         test_empty_removed_before_handling);
    return g_test_run();
}
