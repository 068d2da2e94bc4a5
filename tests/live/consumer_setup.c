/* A managed binding's consumer made and updated by the host's own request,
 * against a real nats-server (docs/engine.md, "Start-up"):
 *
 * - an update keeps what the binding does not own: where the consumer
 *   starts (the server refuses to change it), its description, fields
 *   nats.c does not know; it sets what the binding owns;
 * - an update of a consumer deleted since it was read is refused on
 *   nats-server 2.10+ (never a new consumer replaying the stream), and
 *   the next attempt makes it from the sequence asked for;
 * - a create that finds a consumer made meanwhile with another start is
 *   refused on 2.10+ (the one there is kept);
 * - the facts read from the server's JSON are nats.c's, to the ns. */
#include "harness.h"
#include "config.h"
#include "consumer_put.h"
#include "consumer_setup.h"
#include "errors.h"

#include <string.h>

typedef struct {
    JetTestServer *srv;
    natsConnection *nc;
    jsCtx *js;
    JetConfig *cfg;
    const JetBindingConfig *b;
} Fx;

static void fx_start(Fx *f)
{
    memset(f, 0, sizeof *f);
    f->srv = jet_test_server_start();
    f->js = jet_test_js_open(jet_test_server_url(f->srv), &f->nc);
    jet_test_stream_create(f->js, "ORDERS", "orders.>");
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\n\n[binding t]\nplugin = /nonexistent.so\n"
                                            "stream = ORDERS\nconsumer = c\nack_wait = 2s\nmax_attempts = 4\n"
                                            "max_ack_pending = 77\nfilter_subject = orders.new\n",
                                            jet_test_server_url(f->srv));
    g_autofree char *conf = jet_test_write_file("setup.conf", text);
    g_autoptr(GError) err = NULL;
    f->cfg = jet_config_load(conf, NULL, &err);
    g_assert_no_error(err);
    f->b = jet_config_binding(f->cfg, "t");
    g_assert_nonnull(f->b);
}

static void fx_free(Fx *f)
{
    jet_config_free(f->cfg);
    jet_test_js_close(f->nc, f->js);
    jet_test_server_stop(f->srv);
}

/* An operator's consumer: from stream seq start, with a description, an
 * AckWait and MaxDeliver the binding does not want. */
static void operator_consumer(Fx *f, guint64 start)
{
    jsConsumerConfig cc;
    jsConsumerConfig_Init(&cc);
    cc.Durable = "c";
    cc.Description = "made by ops";
    cc.AckPolicy = js_AckExplicit;
    cc.DeliverPolicy = start > 1 ? js_DeliverByStartSequence : js_DeliverAll;
    cc.OptStartSeq = start > 1 ? start : 0;
    cc.AckWait = 30 * G_GINT64_CONSTANT(1000000000);
    cc.MaxDeliver = 9;
    cc.FilterSubject = "orders.>";
    jsConsumerInfo *ci = NULL;
    jsErrCode jerr = 0;
    g_assert_cmpint(js_AddConsumer(&ci, f->js, "ORDERS", &cc, NULL, &jerr), ==, NATS_OK);
    jsConsumerInfo_Destroy(ci);
}

static gboolean consumer_there(Fx *f)
{
    jsConsumerInfo *ci = NULL;
    natsStatus s = js_GetConsumerInfo(&ci, f->js, "ORDERS", "c", NULL, NULL);
    jsConsumerInfo_Destroy(ci);
    return s == NATS_OK;
}

static void test_update_keeps_start(void)
{
    Fx f;
    fx_start(&f);
    jet_test_publish_n(f.js, "orders.new", 5);
    operator_consumer(&f, 3);
    jsConsumerInfo *before = jet_test_consumer_info(f.js, "ORDERS", "c");

    JetConsumerFacts facts = { 0 };
    g_autoptr(GError) err = NULL;
    gboolean ok = jet_consumer_ensure(f.nc, f.js, f.b, 0, &facts, &err);
    g_assert_no_error(err);
    g_assert_true(ok);

    jsConsumerInfo *ci = jet_test_consumer_info(f.js, "ORDERS", "c");
    /* Kept: the consumer itself, where it starts, its description. */
    g_assert_cmpint(ci->Created, ==, before->Created);
    g_assert_cmpint(ci->Config->DeliverPolicy, ==, js_DeliverByStartSequence);
    g_assert_cmpuint(ci->Config->OptStartSeq, ==, 3);
    g_assert_cmpstr(ci->Config->Description, ==, "made by ops");
    /* Set: what the binding owns. */
    g_assert_cmpint(ci->Config->AckWait, ==, 2 * G_GINT64_CONSTANT(1000000000));
    g_assert_cmpint(ci->Config->MaxDeliver, ==, f.b->max_deliver);
    g_assert_cmpint(ci->Config->MaxAckPending, ==, 77);
    g_assert_cmpstr(ci->Config->FilterSubject, ==, "orders.new");
    /* The facts, read from the server's JSON, are what nats.c reads. */
    g_assert_cmpint(facts.consumer_created_ns, ==, ci->Created);
    g_assert_cmpint(facts.ack_wait_ms, ==, 2000);
    g_assert_cmpint(facts.max_deliver, ==, ci->Config->MaxDeliver);
    g_assert_cmpint(facts.max_ack_pending, ==, 77);
    g_assert_cmpuint(facts.ack_floor_stream, ==, ci->AckFloor.Stream);
    g_assert_cmpuint(facts.delivered_stream, ==, ci->Delivered.Stream);
    g_assert_cmpint(facts.num_ack_pending, ==, ci->NumAckPending);
    jsConsumerInfo_Destroy(ci);
    jsConsumerInfo_Destroy(before);

    /* A second start changes nothing. */
    JetConsumerFacts again = { 0 };
    g_assert_true(jet_consumer_ensure(f.nc, f.js, f.b, 0, &again, &err));
    g_assert_no_error(err);
    g_assert_cmpint(again.consumer_created_ns, ==, facts.consumer_created_ns);
    fx_free(&f);
}

/* The consumer read, then deleted before the update is sent. */
static void test_update_of_deleted(void)
{
    Fx f;
    fx_start(&f);
    jet_test_publish_n(f.js, "orders.new", 5);
    operator_consumer(&f, 0);
    gboolean absent = TRUE;
    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) info = jet_consumer_info_json(f.nc, f.b, &absent, &err);
    g_assert_no_error(err);
    g_assert_nonnull(info);
    g_assert_false(absent);
    g_assert_cmpint(js_DeleteConsumer(f.js, "ORDERS", "c", NULL, NULL), ==, NATS_OK);

    g_autoptr(JsonObject) made = jet_consumer_put(f.nc, f.b, jet_consumer_info_config(info), 0, FALSE, &err);
    guint v = jet_test_server_version();
    g_test_message("nats-server %u: %s", v, err != NULL ? err->message : "the update made a consumer");
    if (v >= 21000) {
        g_assert_null(made);
        g_assert_error(err, JET_ERROR, JET_ERROR_SERVER);
        g_assert_nonnull(strstr(err->message, "binding t: update consumer ORDERS/c: "));
        g_assert_nonnull(strstr(err->message, "[err 10149]"));
        g_assert_false(consumer_there(&f));   /* nothing replays the stream */
    } else {
        /* 2.9 knows no action: the update makes the consumer again
         * (docs/engine.md says so). */
        g_assert_nonnull(made);
        g_assert_true(consumer_there(&f));
        g_assert_cmpint(js_DeleteConsumer(f.js, "ORDERS", "c", NULL, NULL), ==, NATS_OK);
    }
    g_clear_error(&err);

    /* The next attempt reads again and creates it where it was asked to. */
    JetConsumerFacts facts = { 0 };
    g_assert_true(jet_consumer_ensure(f.nc, f.js, f.b, 4, &facts, &err));
    g_assert_no_error(err);
    jsConsumerInfo *ci = jet_test_consumer_info(f.js, "ORDERS", "c");
    g_assert_cmpint(ci->Config->DeliverPolicy, ==, js_DeliverByStartSequence);
    g_assert_cmpuint(ci->Config->OptStartSeq, ==, 4);
    g_assert_cmpint(facts.consumer_created_ns, ==, ci->Created);
    jsConsumerInfo_Destroy(ci);
    fx_free(&f);
}

/* Found absent, then made by someone else before the create is sent. */
static void test_create_raced(void)
{
    Fx f;
    fx_start(&f);
    jet_test_publish_n(f.js, "orders.new", 5);
    operator_consumer(&f, 2);
    jsConsumerInfo *theirs = jet_test_consumer_info(f.js, "ORDERS", "c");

    g_autoptr(GError) err = NULL;
    g_autoptr(JsonObject) made = jet_consumer_put(f.nc, f.b, NULL, 5, FALSE, &err);
    guint v = jet_test_server_version();
    g_test_message("nats-server %u: %s", v, err != NULL ? err->message : "the create was applied");
    /* Never applied to theirs: it starts at 2 (a start cannot change, and
     * 2.9 says so in its own words). */
    g_assert_null(made);
    g_assert_error(err, JET_ERROR, JET_ERROR_SERVER);
    g_assert_nonnull(strstr(err->message, "binding t: create consumer ORDERS/c: "));
    if (v >= 21000)
        g_assert_nonnull(strstr(err->message, "[err 10148]"));
    jsConsumerInfo *ci = jet_test_consumer_info(f.js, "ORDERS", "c");
    g_assert_cmpint(ci->Created, ==, theirs->Created);
    g_assert_cmpuint(ci->Config->OptStartSeq, ==, 2);
    g_assert_cmpint(ci->Config->AckWait, ==, 30 * G_GINT64_CONSTANT(1000000000));
    jsConsumerInfo_Destroy(ci);
    jsConsumerInfo_Destroy(theirs);
    fx_free(&f);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/setup/update-keeps-start", test_update_keeps_start);
    g_test_add_func("/setup/update-of-deleted", test_update_of_deleted);
    g_test_add_func("/setup/create-raced", test_create_raced);
    return g_test_run();
}
