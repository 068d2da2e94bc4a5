/* Each request jethost makes while it starts, lost with its connection,
 * against a real nats-server behind a relay that cuts the connection when
 * the host sends that request (docs/engine.md, "Start-up"): a set-up step
 * is asked again, a lost pull is sent again once reconnected, and the host
 * runs; a lost request is never a reason to exit. */
#include "harness.h"
#include "relay.h"

#include <signal.h>
#include <string.h>

/* Each request the host makes while it starts, lost with its connection
 * (the network drops for a moment): the host asks again, or re-pulls once
 * reconnected, and runs; nothing is logged as failed.  A row is what the
 * relay cuts on, how many times, and the binding's extra keys (a durable
 * binding without); each row runs on a server of its own, all at once. */
#define EXCLUSIVE "exclusive = true\nconsumer = billing\n"
#define ORDERED "kind = ordered\n"
static const struct {
    const char *needle;
    guint cuts;
    const char *extra;
} startup_requests[] = {
    { "STREAM.NAMES", 1, NULL },
    { "STREAM.INFO.ORDERS", 1, NULL },
    { "STREAM.CREATE.ORDERS", 1, NULL },
    { "CONSUMER.INFO.ORDERS.billing", 1, NULL },
    { "CONSUMER.CREATE.ORDERS.billing", 1, NULL },
    { "STREAM.INFO.JETHOST_DLQ", 1, NULL },
    { "STREAM.CREATE.JETHOST_DLQ", 1, NULL },
    { "STREAM.INFO.JETHOST_ADVISORIES", 1, NULL },
    { "STREAM.CREATE.JETHOST_ADVISORIES", 1, NULL },
    { "CONSUMER.INFO.JETHOST_ADVISORIES", 1, NULL },
    { "CONSUMER.DURABLE.CREATE.JETHOST_ADVISORIES", 1, NULL },
    { "CONSUMER.MSG.NEXT.JETHOST_ADVISORIES", 1, NULL },
    { "STREAM.INFO.KV_jethost_ledger", 2, NULL },
    { "STREAM.CREATE.KV_jethost_ledger", 1, NULL },
    { "CONSUMER.MSG.NEXT.ORDERS.billing", 1, NULL },
    { "$JS.API.INFO", 1, EXCLUSIVE },
    { "DIRECT.GET.KV_jethost_ledger", 1, EXCLUSIVE },
    { "$KV.jethost_ledger.claim.orders", 1, EXCLUSIVE },
    { "CONSUMER.CREATE.ORDERS.billing", 1, EXCLUSIVE },
    { "STREAM.INFO.ORDERS", 2, ORDERED },
    { "DIRECT.GET.KV_jethost_ledger", 1, ORDERED },
    { "$KV.jethost_ledger.ordered.orders", 1, ORDERED },
    { "CONSUMER.CREATE.ORDERS.jethost_ord", 1, ORDERED },
    { "CONSUMER.MSG.NEXT.ORDERS.jethost_ord", 1, ORDERED },
};

typedef struct {
    JetTestServer *srv;
    natsConnection *nc;
    jsCtx *js;
    JetTestRelay *relay;
    char *errlog;
    GSubprocess *host;
} LostRow;

static void test_startup_request_lost(void)
{
    const guint n = G_N_ELEMENTS(startup_requests);
    LostRow rows[G_N_ELEMENTS(startup_requests)];
    g_autofree char *plugin = jet_test_plugin_copy("template");
    for (guint i = 0; i < n; i++) {
        LostRow *r = &rows[i];
        r->srv = jet_test_server_start();
        r->js = jet_test_js_open(jet_test_server_url(r->srv), &r->nc);
        r->relay = jet_test_relay_start(jet_test_server_port(r->srv));
        jet_test_relay_cut_on(r->relay, startup_requests[i].needle, startup_requests[i].cuts);
        g_autofree char *state = g_strdup_printf("%s/lost-%u", jet_test_private_dir(), i);
        const char *extra = startup_requests[i].extra != NULL ? startup_requests[i].extra : "consumer = billing\n";
        g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\n\n"
                                                "[binding orders]\nplugin = %s\nstream = ORDERS\n"
                                                "subjects = orders.>\noption.log_every = 1\n%s",
                                                jet_test_relay_url(r->relay), state, plugin, extra);
        g_autofree char *name = g_strdup_printf("lost-%u.conf", i);
        g_autofree char *conf = jet_test_write_file(name, text);
        r->errlog = g_strdup_printf("%s/lost-%u.stderr", jet_test_private_dir(), i);
        const char *args[] = { "run", "-c", conf, NULL };
        r->host = jet_test_jethost_spawn(r->errlog, args);
    }
    for (guint i = 0; i < n; i++) {
        LostRow *r = &rows[i];
        const char *kind = startup_requests[i].extra == NULL ? "durable"
                           : strcmp(startup_requests[i].extra, ORDERED) == 0 ? "ordered" : "exclusive";
        g_test_message("row %u: a %s binding, cut on %s %u time(s)", i, kind, startup_requests[i].needle,
                       startup_requests[i].cuts);
        /* The stream is the host's to make: published once it is there. */
        g_assert_true(jet_test_wait_log(r->errlog, "event=running", 30000));
        jet_test_publish_n(r->js, "orders.new", 3);
        g_assert_true(jet_test_wait_log(r->errlog, "orders.new seq 3,", 30000));
        g_assert_cmpuint(jet_test_relay_cuts_made(r->relay), ==, startup_requests[i].cuts);
    }
    for (guint i = 0; i < n; i++) {
        LostRow *r = &rows[i];
        g_subprocess_send_signal(r->host, SIGTERM);
        g_assert_cmpint(jet_test_jethost_wait(r->host, 20000), ==, 0);
        g_autofree char *log = NULL;
        g_assert_true(g_file_get_contents(r->errlog, &log, NULL, NULL));
        if (strstr(log, "event=failed") != NULL)
            g_error("row %u (cut on %s): the host logged a failure:\n%s", i, startup_requests[i].needle, log);
        g_object_unref(r->host);
        g_free(r->errlog);
        jet_test_relay_stop(r->relay);
        jet_test_js_close(r->nc, r->js);
        jet_test_server_stop(r->srv);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/startup/request-lost", test_startup_request_lost);
    return g_test_run();
}
