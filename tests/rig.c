#include "rig.h"
#include "host_api.h"
#include "capture.h"

#include <glib/gstdio.h>

static void on_take(guint worker, guint held, gpointer data)
{
    Rig *r = data;
    (void)worker;
    if (held > r->bound)
        g_atomic_int_inc(&r->over_bound);
}

void rig_server(Rig *r)
{
    r->srv = jet_test_server_start_args(r->server_args);
    r->js = jet_test_js_open(jet_test_server_url(r->srv), &r->nc);
    jet_test_stream_create(r->js, "ORDERS", "orders.>");
    static guint n;
    g_autofree char *name = g_strdup_printf("gate-%u", ++n);
    r->dir = g_build_filename(jet_test_private_dir(), name, NULL);
    g_assert_cmpint(g_mkdir(r->dir, 0700), ==, 0);
}

/* Starts the engine on consumer "c" with extra binding keys. */
void rig_engine(Rig *r, const char *extra)
{
    g_autofree char *keys = g_strdup_printf("option.dir = %s\n%s", r->dir, extra);
    rig_engine_plugin(r, "fx_gate", keys);
}

void rig_engine_plugin(Rig *r, const char *plugin_name, const char *extra)
{
    g_autofree char *plugin = jet_test_plugin_copy(plugin_name);
    g_autofree char *source = r->kv_bucket != NULL ? g_strdup_printf("kind = kv\nbucket = %s\n", r->kv_bucket)
                              : g_strdup_printf("stream = ORDERS\n%s", r->ordered ? "kind = ordered\n" : "consumer = c\n");
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\n\n[binding t]\nplugin = %s\n%s%s",
                                            jet_test_server_url(r->srv), plugin, source, extra);
    g_autofree char *conf = jet_test_write_file("engine.conf", text);
    g_autoptr(GError) err = NULL;
    r->cfg = jet_config_load(conf, NULL, &err);
    g_assert_no_error(err);
    const JetBindingConfig *b = jet_config_binding(r->cfg, "t");
    JetPlugin *p = jet_plugin_load(b->plugin, NULL, NULL, &err);
    g_assert_no_error(err);
    r->inst = jet_instance_new(p, b->name, b->options, &err);
    g_assert_no_error(err);
    jet_instance_set_kind(r->inst, (int)b->kind);
    g_assert_true(jet_instance_start(r->inst, &err));
    const char *urls[] = { r->engine_url != NULL ? r->engine_url : jet_test_server_url(r->srv), NULL };
    r->conn = jet_conn_open(urls, &r->cfg->host, 3, &err);
    g_assert_no_error(err);
    gboolean ensured = r->ordered || r->kv_bucket != NULL
                           ? jet_stream_ensure(jet_conn_js(r->conn), b, &err)
                           : jet_consumer_ensure(jet_conn_nats(r->conn), jet_conn_js(r->conn), b, 0, &r->facts, &err);
    g_assert_no_error(err);   /* first: it says why */
    g_assert_true(ensured);
    if (b->manage == JET_MANAGE_CREATE)
        g_assert_true(jet_dlq_stream_ensure(jet_conn_nats(r->conn), jet_conn_js(r->conn), b, &err));
    if (b->ledger) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.Wait = 1000;
        g_assert_cmpint(natsConnection_JetStream(&r->ledger_js, jet_conn_nats(r->conn), &jo), ==, NATS_OK);
        r->ledger = jet_ledger_open(r->ledger_js, "jethost_ledger", TRUE, 3600 * 1000, 1, &err);
        g_assert_no_error(err);
        jet_ledger_set_cooldown(r->ledger, 2000);
        /* As the daemon: finished records deleted without waiting (the
         * prefix is ledger_js's, the default one). */
        g_assert_true(jet_ledger_forget_behind(r->ledger, jet_conn_nats(r->conn), NULL, &err));
    }
    r->bound = b->batch + b->threshold;
    r->eng = jet_engine_new(r->conn, b, r->inst, r->ordered || r->kv_bucket != NULL ? NULL : &r->facts);
    jet_engine_set_take_hook(r->eng, on_take, r);
    if (r->settle_hook != NULL)
        jet_engine_set_settle_hook(r->eng, r->settle_hook, r->settle_data);
    if (r->loss_hook != NULL)
        jet_engine_set_loss_hook(r->eng, r->loss_hook, r->loss_data);
    if (r->hung_hook != NULL)
        jet_engine_set_hung_hook(r->eng, r->hung_hook, r->hung_data);
    jet_engine_set_ledger(r->eng, r->ledger, "rig");
    jet_engine_start(r->eng);
}

void rig_wait_inflight(Rig *r, guint64 seq)
{
    g_autofree char *name = g_strdup_printf("inflight-%" G_GUINT64_FORMAT, seq);
    g_autofree char *path = g_build_filename(r->dir, name, NULL);
    g_assert_true(jet_test_wait_file(path, 20000));
}

void rig_let_go(Rig *r, guint64 seq)
{
    g_autofree char *name = g_strdup_printf("go-%" G_GUINT64_FORMAT, seq);
    g_autofree char *path = g_build_filename(r->dir, name, NULL);
    g_assert_true(g_file_set_contents(path, "", 0, NULL));
}

typedef struct {
    JetLedger *l;
    const char *stream, *consumer;
    guint64 seq;
} GoneWait;

static gboolean record_gone(gpointer data)
{
    GoneWait *w = data;
    JetLedgerRecord rec;
    return jet_ledger_get(w->l, w->stream, w->consumer, w->seq, &rec, NULL) == JET_LEDGER_ABSENT;
}

void rig_wait_record_gone(Rig *r, const char *stream, const char *consumer, guint64 seq)
{
    GoneWait w = { r->ledger, stream, consumer, seq };
    g_assert_true(jet_test_wait_until(record_gone, &w, 5000));
}

void rig_stop(Rig *r)
{
    if (r->eng != NULL) {
        jet_engine_stop(r->eng);
        jet_engine_join(r->eng);
    }
}

void rig_engine_end(Rig *r)
{
    rig_stop(r);
    g_clear_pointer(&r->eng, jet_engine_free);
    g_clear_pointer(&r->inst, jet_instance_free);
    g_clear_pointer(&r->ledger, jet_ledger_close);
    g_clear_pointer(&r->ledger_js, jsCtx_Destroy);
    g_clear_pointer(&r->conn, jet_conn_close);
    g_clear_pointer(&r->cfg, jet_config_free);
}

void rig_free(Rig *r)
{
    rig_engine_end(r);
    jet_test_js_close(r->nc, r->js);
    jet_test_server_free(r->srv);
    g_free(r->dir);
}

/* The lines of handled.log: "seq deliveries thread". */
GArray *handled_seqs(Rig *r, GArray **deliveries)
{
    g_autofree char *path = g_build_filename(r->dir, "handled.log", NULL);
    g_autofree char *text = NULL;
    GArray *seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    if (deliveries != NULL)
        *deliveries = g_array_new(FALSE, FALSE, sizeof(guint));
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return seqs;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL && **l; l++) {
        char *end = NULL;
        guint64 seq = g_ascii_strtoull(*l, &end, 10);
        g_array_append_val(seqs, seq);
        if (deliveries != NULL) {
            guint d = (guint)g_ascii_strtoull(end, NULL, 10);
            g_array_append_val(*deliveries, d);
        }
    }
    return seqs;
}

typedef struct {
    Rig *r;
    guint64 n;
} DeadLetterWait;

static gboolean dead_lettered_n(gpointer data)
{
    DeadLetterWait *w = data;
    JetEngineStats st;
    jet_engine_stats(w->r->eng, &st);
    return st.dead_lettered >= w->n;
}

void rig_wait_dead_lettered(Rig *r, guint64 n)
{
    DeadLetterWait w = { r, n };
    g_assert_true(jet_test_wait_until(dead_lettered_n, &w, 10000));
}

gboolean floor_reached(gpointer data)
{
    FloorWait *fw = data;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, fw->r->js, "ORDERS", "c", NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean ok = ci->AckFloor.Stream >= fw->floor && ci->NumAckPending == 0;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

