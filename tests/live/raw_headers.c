/* Header blocks as bytes against a real nats-server: what nats.c receives
 * (jet_nats_raw_headers), what a stream stores (jet_stream_msg_get) and what
 * nats.c sends (jet_nats_msg_new_raw) are the exact bytes, hostile blocks
 * included.  Those go out through tests/rawpub.c: nats.c cannot send them. */
#include "harness.h"
#include "errors.h"
#include "hdr_block.h"
#include "nats_raw.h"
#include "rawpub.h"
#include "stream_msg.h"

#include <json-glib/json-glib.h>
#include <malloc.h>
#include <string.h>

#define WAIT_MS 10000

typedef struct {
    JetTestServer *srv;
    natsConnection *nc;
    jsCtx *js;
    JetRawPub *raw;
} Fx;

static void fx_setup(Fx *fx, gconstpointer data)
{
    (void)data;
    fx->srv = jet_test_server_start();
    fx->js = jet_test_js_open(jet_test_server_url(fx->srv), &fx->nc);
    g_autoptr(GError) err = NULL;
    fx->raw = jet_rawpub_connect(jet_test_server_port(fx->srv), &err);
    g_assert_no_error(err);
    g_assert_nonnull(fx->raw);
}

static void fx_teardown(Fx *fx, gconstpointer data)
{
    (void)data;
    jet_rawpub_close(fx->raw);
    jet_test_js_close(fx->nc, fx->js);
    jet_test_server_free(fx->srv);
}

typedef struct {
    const char *what;
    const char *block;
    gsize len;
} Block;

#define BLOCK(what, lit) { what, lit, sizeof lit - 1 }

/* None is a clean header list, yet a server relays and stores each as it
 * is; several are ones nats.c 3.4.1 would read differently (a colon or a
 * leading space in a name, an empty value) or a server acts on (the CR LF
 * one carries a Nats-Msg-Id line). */
static const Block hostile[] = {
    BLOCK("CR LF inside a name", "NATS/1.0\r\np\r\nNats-Msg-Id: x: 1\r\n\r\n"),
    BLOCK("bare LF inside a name", "NATS/1.0\r\na\nb: 1\r\n\r\n"),
    BLOCK("colon inside a name", "NATS/1.0\r\nx:y: 1\r\n\r\n"),
    BLOCK("space inside a name", "NATS/1.0\r\nx y: 1\r\n\r\n"),
    BLOCK("first line starts with a space", "NATS/1.0\r\n lead: 1\r\nNext: 2\r\n\r\n"),
    BLOCK("empty value in the middle", "NATS/1.0\r\nA: 1\r\nB:\r\nC: 3\r\n\r\n"),
    BLOCK("empty value at the end", "NATS/1.0\r\nA: 1\r\nB:\r\n\r\n"),
    BLOCK("non-UTF-8 value", "NATS/1.0\r\nBin: \xff\xfe\x80 \xc3\x28 end\r\n\r\n"),
    BLOCK("lower-case nats-msg-id", "NATS/1.0\r\nnats-msg-id: lower-1\r\nX: 1\r\n\r\n"),
};

#define N_HEADERS_LARGE 10000

/* 10,000 headers, 60,012 bytes: a stream refuses a block past 64 KiB
 * (err 10097), so this is about the largest one it stores. */
static GBytes *large_block(void)
{
    GString *s = g_string_new(JET_HDR_LINE "\r\n");
    for (guint i = 0; i < N_HEADERS_LARGE; i++)
        g_string_append(s, "a: 1\r\n");
    g_string_append(s, "\r\n");
    g_assert_cmpuint(s->len, <, 65536);
    return g_string_free_to_bytes(s);
}

/* The hostile blocks, then the large one. */
static GPtrArray *all_blocks(void)
{
    GPtrArray *a = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    for (gsize i = 0; i < G_N_ELEMENTS(hostile); i++)
        g_ptr_array_add(a, g_bytes_new_static(hostile[i].block, hostile[i].len));
    g_ptr_array_add(a, large_block());
    return a;
}

static const char *block_what(guint i)
{
    return i < G_N_ELEMENTS(hostile) ? hostile[i].what : "10,000 headers";
}

static char *payload_for(guint i)
{
    return g_strdup_printf("payload-%u", i);
}

static void assert_bytes(GBytes *got, const void *want, gsize want_len)
{
    g_assert_nonnull(got);
    gsize len = 0;
    const void *p = g_bytes_get_data(got, &len);
    g_assert_cmpmem(p, len, want, want_len);
}

static void queue_msg(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    g_async_queue_push(closure, msg);
}

static void publish_blocks(Fx *fx, const char *subject, GPtrArray *blocks, gboolean with_payload)
{
    g_autoptr(GError) err = NULL;
    for (guint i = 0; i < blocks->len; i++) {
        gsize blen = 0;
        const char *b = g_bytes_get_data(blocks->pdata[i], &blen);
        g_autofree char *payload = with_payload ? payload_for(i) : g_strdup("");
        g_assert_true(jet_rawpub_hpub(fx->raw, subject, b, blen, payload, strlen(payload), &err));
        g_assert_no_error(err);
    }
    g_assert_true(jet_rawpub_flush(fx->raw, &err));
    g_assert_no_error(err);
}

static void assert_received(natsMsg *m, GBytes *block, const char *payload)
{
    gsize blen = 0;
    const char *b = g_bytes_get_data(block, &blen);
    g_autofree char *got = NULL;
    gsize got_len = 0;
    g_assert_true(jet_nats_raw_headers(m, &got, &got_len));
    g_assert_cmpmem(got, got_len, b, blen);
    g_assert_cmpmem(natsMsg_GetData(m), natsMsg_GetDataLength(m), payload, strlen(payload));
}

/* The process's probe (nats_raw.h) on this connection: TRUE when it saw an
 * empty message's block arrive intact. */
static gboolean probe_said_intact(Fx *fx)
{
    jet_nats_raw_probe(fx->nc);
    natsMsg *m = NULL;
    g_assert_cmpint(natsMsg_Create(&m, "x", NULL, NULL, 0), ==, NATS_OK);
    gboolean intact = jet_nats_raw_intact(m);
    natsMsg_Destroy(m);
    return intact;
}

/* The block nats.c hands over for each message it received is the one the
 * raw publisher sent, byte for byte, through natsSubscription_NextMsg and
 * through a callback alike.  NextMsg asks natsMsg_IsNoResponders of an
 * empty message, and nats.c's own answer rewrites the block; the host's
 * (host/io/nats_raw.c) leaves it as received. */
static void test_received_exact(Fx *fx, gconstpointer data)
{
    (void)data;
    natsSubscription *sync_sub = NULL;
    g_assert_cmpint(natsConnection_SubscribeSync(&sync_sub, fx->nc, "raw.recv"), ==, NATS_OK);
    natsSubscription *sync_empty = NULL;
    g_assert_cmpint(natsConnection_SubscribeSync(&sync_empty, fx->nc, "raw.recv.empty"), ==, NATS_OK);
    g_autoptr(GAsyncQueue) q = g_async_queue_new();
    natsSubscription *cb_sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&cb_sub, fx->nc, "raw.recv.empty", queue_msg, q), ==, NATS_OK);
    /* The server has both subscriptions before the other connection
     * publishes. */
    g_assert_cmpint(natsConnection_Flush(fx->nc), ==, NATS_OK);

    g_autoptr(GPtrArray) blocks = all_blocks();
    publish_blocks(fx, "raw.recv", blocks, TRUE);
    publish_blocks(fx, "raw.recv.empty", blocks, FALSE);

    for (guint i = 0; i < blocks->len; i++) {
        g_test_message("received with a payload: %s", block_what(i));
        g_autofree char *payload = payload_for(i);
        natsMsg *m = NULL;
        g_assert_cmpint(natsSubscription_NextMsg(&m, sync_sub, WAIT_MS), ==, NATS_OK);
        assert_received(m, blocks->pdata[i], payload);
        natsMsg_Destroy(m);
    }
    for (guint i = 0; i < blocks->len; i++) {
        g_test_message("received without a payload: %s", block_what(i));
        natsMsg *m = g_async_queue_timeout_pop(q, (guint64)WAIT_MS * 1000);
        g_assert_nonnull(m);
        assert_received(m, blocks->pdata[i], "");
        natsMsg_Destroy(m);
        g_test_message("received without a payload through NextMsg: %s", block_what(i));
        g_assert_cmpint(natsSubscription_NextMsg(&m, sync_empty, WAIT_MS), ==, NATS_OK);
        assert_received(m, blocks->pdata[i], "");
        natsMsg_Destroy(m);
    }
    /* A no-responders status is still one, to nats.c and to the host. */
    natsMsg *nr = NULL;
    g_assert_cmpint(natsConnection_Request(&nr, fx->nc, "raw.nobody.listens", "x", 1, WAIT_MS), ==,
                    NATS_NO_RESPONDERS);
    g_assert_true(probe_said_intact(fx));
    natsSubscription_Destroy(sync_empty);
    natsSubscription_Destroy(sync_sub);
    natsSubscription_Unsubscribe(cb_sub);
    natsSubscription_Destroy(cb_sub);
}

/* The sequence a pub-ack names; fails the test on a refusal. */
static guint64 ack_seq(const char *ack)
{
    g_autoptr(JsonParser) p = json_parser_new();
    g_autoptr(GError) err = NULL;
    g_assert_true(json_parser_load_from_data(p, ack, -1, &err));
    g_assert_no_error(err);
    JsonObject *o = json_node_get_object(json_parser_get_root(p));
    g_assert_nonnull(o);
    if (json_object_has_member(o, "error"))
        g_error("the stream refused the message: %s", ack);
    g_assert_cmpstr(json_object_get_string_member(o, "stream"), ==, "RAW");
    gint64 seq = json_object_get_int_member(o, "seq");
    g_assert_cmpint(seq, >, 0);
    return (guint64)seq;
}

static JetStoredMsg *stored(Fx *fx, guint64 seq)
{
    JetStoredMsg *m = NULL;
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(jet_stream_msg_get(fx->nc, "RAW", seq, WAIT_MS, &m, &err), ==, JET_STORED_FOUND);
    g_assert_no_error(err);
    g_assert_nonnull(m);
    g_assert_cmpuint(m->seq, ==, seq);
    return m;
}

/* What the stream stored, read back by sequence, is the published block and
 * payload byte for byte; a message without a block has none stored. */
static void test_stored_exact(Fx *fx, gconstpointer data)
{
    (void)data;
    jet_test_stream_create(fx->js, "RAW", "raw.>");
    g_autoptr(GPtrArray) blocks = all_blocks();
    for (guint i = 0; i < blocks->len; i++) {
        g_test_message("stored: %s", block_what(i));
        gsize blen = 0;
        const char *b = g_bytes_get_data(blocks->pdata[i], &blen);
        g_autofree char *payload = payload_for(i);
        g_autofree char *ack = NULL;
        g_autoptr(GError) err = NULL;
        g_assert_true(jet_rawpub_hpub_acked(fx->raw, "raw.stored", b, blen, payload, strlen(payload), &ack, &err));
        g_assert_no_error(err);
        guint64 seq = ack_seq(ack);

        g_autoptr(JetStoredMsg) m = stored(fx, seq);
        g_assert_cmpstr(m->subject, ==, "raw.stored");
        assert_bytes(m->hdrs, b, blen);
        assert_bytes(m->data, payload, strlen(payload));
    }

    g_autofree char *ack = NULL;
    g_autoptr(GError) err = NULL;
    g_assert_true(jet_rawpub_hpub_acked(fx->raw, "raw.stored", NULL, 0, "bare", 4, &ack, &err));
    g_assert_no_error(err);
    g_autoptr(JetStoredMsg) m = stored(fx, ack_seq(ack));
    g_assert_null(m->hdrs);
    assert_bytes(m->data, "bare", 4);
}

static GPtrArray *headers(const char *const *pairs)
{
    GPtrArray *h = g_ptr_array_new_with_free_func(g_free);
    for (gsize i = 0; pairs[i] != NULL; i++)
        g_ptr_array_add(h, g_strdup(pairs[i]));
    return h;
}

static guint64 publish_raw(Fx *fx, const char *block, gsize block_len, const char *payload)
{
    g_autoptr(GError) err = NULL;
    natsMsg *m = jet_nats_msg_new_raw("raw.sent", block, block_len, payload, strlen(payload), &err);
    g_assert_no_error(err);
    g_assert_nonnull(m);
    /* Nothing in the options that would make nats.c add a header. */
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = WAIT_MS;
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, fx->js, m, &po, &jerr);
    if (s != NATS_OK)
        g_error("publish: %s (err %d)", natsStatus_GetText(s), (int)jerr);
    g_assert_cmpstr(pa->Stream, ==, "RAW");
    guint64 seq = pa->Sequence;
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
    return seq;
}

/* What nats.c sends from a jet_hdr_write block is stored as that block:
 * order, duplicates, empty values and non-UTF-8 bytes as written. */
static void test_sent_exact(Fx *fx, gconstpointer data)
{
    (void)data;
    jet_test_stream_create(fx->js, "RAW", "raw.>");
    static const char *const sets[][9] = {
        { "Zulu", "1", "Alpha", "2", "Mike", "3", NULL },
        { "X-Dup", "first", "Other", "o", "X-Dup", "second", "x-dup", "third", NULL },
        { "Before", "b", "Empty", "", "After", "a", NULL },
        { "Bin", "\xff\xfe\x80", "Tail", "", NULL },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(sets); i++) {
        g_autoptr(GPtrArray) h = headers(sets[i]);
        gsize len = 0;
        g_autoptr(GError) err = NULL;
        g_autofree char *block = jet_hdr_write(h, &len, &err);
        g_assert_no_error(err);
        g_assert_nonnull(block);
        g_autofree char *payload = payload_for((guint)i);
        guint64 seq = publish_raw(fx, block, len, payload);

        g_autoptr(JetStoredMsg) m = stored(fx, seq);
        g_assert_cmpstr(m->subject, ==, "raw.sent");
        assert_bytes(m->hdrs, block, len);
        assert_bytes(m->data, payload, strlen(payload));
    }

    guint64 seq = publish_raw(fx, NULL, 0, "bare");
    g_autoptr(JetStoredMsg) m = stored(fx, seq);
    g_assert_null(m->hdrs);
    assert_bytes(m->data, "bare", 4);
}

/* Past the end of a stream is "absent"; a stream that does not exist is an
 * error, never "absent": a caller would take it for a deleted record. */
static void test_stream_msg_absent(Fx *fx, gconstpointer data)
{
    (void)data;
    jet_test_stream_create(fx->js, "RAW", "raw.>");
    jet_test_publish_n(fx->js, "raw.one", 1);

    JetStoredMsg *m = NULL;
    g_autoptr(GError) err = NULL;
    g_assert_cmpint(jet_stream_msg_get(fx->nc, "RAW", 1, WAIT_MS, &m, &err), ==, JET_STORED_FOUND);
    g_assert_no_error(err);
    jet_stored_msg_free(m);
    m = NULL;

    g_assert_cmpint(jet_stream_msg_get(fx->nc, "RAW", 2, WAIT_MS, &m, &err), ==, JET_STORED_ABSENT);
    g_assert_no_error(err);
    g_assert_null(m);

    g_assert_cmpint(jet_stream_msg_get(fx->nc, "NOPE", 1, WAIT_MS, &m, &err), ==, JET_STORED_ERROR);
    g_assert_error(err, JET_ERROR, JET_ERROR_SERVER);
    g_assert_cmpstr(err->message, !=, "");
    g_assert_null(m);
    g_test_message("missing stream: %s", err->message);
}

/* jet_nats_msg_free frees in the calling thread, before it returns: a
 * message large enough to be a mapping of its own (glibc's mmap threshold
 * fixed in main(), before any thread allocates: its own would rise past
 * them after the first free) is gone from the process's mapped bytes at
 * once, every one of them.  natsMsg_Destroy leaves each to nats.c's
 * collector thread, later.  One that came from a free block of the reading
 * thread's heap instead says nothing either way and is not counted. */
#define FREE_MSGS 20
#define FREE_PAYLOAD (512 * 1024)
/* glibc's malloc, whose counts are read; a sanitizer's own malloc keeps
 * none, so under one the test is not added. */
#if defined(__SANITIZE_ADDRESS__)
#define MALLOC_COUNTS 0
#else
#define MALLOC_COUNTS 1
#endif

#if MALLOC_COUNTS
static void test_msg_free_at_once(Fx *fx, gconstpointer data)
{
    (void)data;
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_SubscribeSync(&sub, fx->nc, "free.x"), ==, NATS_OK);
    g_assert_cmpint(natsSubscription_SetPendingLimits(sub, -1, -1), ==, NATS_OK);
    char *payload = g_malloc0(FREE_PAYLOAD);
    for (int i = 0; i < FREE_MSGS; i++)
        g_assert_cmpint(natsConnection_Publish(fx->nc, "free.x", payload, FREE_PAYLOAD), ==, NATS_OK);
    g_free(payload);
    g_assert_cmpint(natsConnection_Flush(fx->nc), ==, NATS_OK);
    int counted = 0;
    for (int i = 0; i < FREE_MSGS; i++) {
        natsMsg *m = NULL;
        g_assert_cmpint(natsSubscription_NextMsg(&m, sub, WAIT_MS), ==, NATS_OK);
        g_assert_cmpint(natsMsg_GetDataLength(m), ==, FREE_PAYLOAD);
        size_t before = mallinfo2().hblkhd;
        /* glibc's chunk header: IS_MMAPPED. */
        gboolean mapped = (((const size_t *)(const void *)m)[-1] & 2) != 0;
        jet_nats_msg_free(m);
        size_t after = mallinfo2().hblkhd;
        if (!mapped)
            continue;
        counted++;
        if (after + FREE_PAYLOAD > before)
            g_error("message %d of %d: still mapped after jet_nats_msg_free returned (%zu bytes before, %zu after)",
                    i + 1, FREE_MSGS, before, after);
    }
    natsSubscription_Destroy(sub);
    g_test_message("%d of %d messages were mappings of their own", counted, FREE_MSGS);
    /* Too few to tell is a failure, never a pass: the threshold set in
     * main() is what makes them mappings. */
    g_assert_cmpint(counted, >=, FREE_MSGS / 2);
}
#endif

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
#if MALLOC_COUNTS
    /* Fixed before any thread allocates (/raw/msg-free-at-once). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
#define ADD(path, fn) g_test_add(path, Fx, NULL, fx_setup, fn, fx_teardown)
    ADD("/raw/received-exact", test_received_exact);
    ADD("/raw/stored-exact", test_stored_exact);
    ADD("/raw/sent-exact", test_sent_exact);
    ADD("/raw/stream-msg-absent", test_stream_msg_absent);
#if MALLOC_COUNTS
    ADD("/raw/msg-free-at-once", test_msg_free_at_once);
#endif
#undef ADD
    int rc = g_test_run();
    nats_Close();
    return rc;
}
