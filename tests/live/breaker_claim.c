/* The breaker's claim against a real nats-server: two hosts (two
 * connections) racing for the same stall window make one claim, not two; a
 * new window can be claimed again; a failure that is not "already claimed"
 * is an error, never a claim. */
#include "breaker_claim.h"
#include "harness.h"

#include <string.h>

#define BUCKET "jethost_ledger"

typedef struct {
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
    const char *name;
} TestHost;

static void host_open(TestHost *h, const JetTestServer *srv, const char *name, gboolean create)
{
    h->js = jet_test_js_open(jet_test_server_url(srv), &h->nc);
    h->name = name;
    if (create) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = BUCKET;
        kc.History = 1;
        g_assert_cmpint(js_CreateKeyValue(&h->kv, h->js, &kc), ==, NATS_OK);
    } else {
        g_assert_cmpint(js_KeyValue(&h->kv, h->js, BUCKET), ==, NATS_OK);
    }
}

static void host_close(TestHost *h)
{
    kvStore_Destroy(h->kv);
    jet_test_js_close(h->nc, h->js);
}

/* Two threads, one per host, released together for each window. */
typedef struct {
    TestHost *host;
    JetBreakerWindow window;
    guint64 seq;
    JetBreakerClaimResult result;
    JetBreakerClaimHolder holder;
    gint *go;
} Racer;

static gpointer racer_main(gpointer data)
{
    Racer *r = data;
    while (!g_atomic_int_get(r->go))
        ;   /* spin: both start as close together as possible */
    g_autoptr(GError) err = NULL;
    r->result = jet_breaker_claim(r->host->kv, "ORDERS", "billing", &r->window, r->seq,
                                  r->host->name, &r->holder, &err);
    g_assert_no_error(err);
    return NULL;
}

static void test_two_hosts(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    TestHost a = { 0 }, b = { 0 };
    host_open(&a, srv, "host-a", TRUE);
    host_open(&b, srv, "host-b", FALSE);

    guint wins_a = 0, wins_b = 0;
    for (guint32 n = 0; n < 20; n++) {
        gint go = 0;
        Racer ra = { &a, { 1000, n }, 1001 + n, JET_BREAKER_CLAIM_ERROR, { 0 }, &go };
        Racer rb = { &b, { 1000, n }, 1101 + n, JET_BREAKER_CLAIM_ERROR, { 0 }, &go };
        GThread *ta = g_thread_new("a", racer_main, &ra);
        GThread *tb = g_thread_new("b", racer_main, &rb);
        g_atomic_int_set(&go, 1);
        g_thread_join(ta);
        g_thread_join(tb);
        /* Exactly one wins; the loser reads who did. */
        g_assert_true((ra.result == JET_BREAKER_CLAIMED) != (rb.result == JET_BREAKER_CLAIMED));
        Racer *win = ra.result == JET_BREAKER_CLAIMED ? &ra : &rb;
        Racer *lose = win == &ra ? &rb : &ra;
        g_assert_cmpint(lose->result, ==, JET_BREAKER_ALREADY_CLAIMED);
        g_assert_cmpuint(lose->holder.seq, ==, win->seq);
        g_assert_cmpstr(lose->holder.host, ==, win->host->name);
        wins_a += win == &ra;
        wins_b += win == &rb;
    }
    g_test_message("window races won: host-a %u, host-b %u", wins_a, wins_b);

    /* A third try at a taken window, from either host, is still refused. */
    g_autoptr(GError) err = NULL;
    JetBreakerWindow w0 = { 1000, 0 };
    g_assert_cmpint(jet_breaker_claim(a.kv, "ORDERS", "billing", &w0, 1500, "host-a", NULL, &err),
                    ==, JET_BREAKER_ALREADY_CLAIMED);
    g_assert_no_error(err);

    /* A new window (the floor moved) is claimable again; the same window of
     * another consumer is its own. */
    JetBreakerWindow moved = { 1001, 0 };
    g_assert_cmpint(jet_breaker_claim(b.kv, "ORDERS", "billing", &moved, 1002, "host-b", NULL,
                                      &err), ==, JET_BREAKER_CLAIMED);
    g_assert_no_error(err);
    g_assert_cmpint(jet_breaker_claim(a.kv, "ORDERS", "billing", &moved, 1002, "host-a", NULL,
                                      &err), ==, JET_BREAKER_ALREADY_CLAIMED);
    g_assert_cmpint(jet_breaker_claim(a.kv, "ORDERS", "shipping", &w0, 1001, "host-a", NULL,
                                      &err), ==, JET_BREAKER_CLAIMED);
    g_assert_no_error(err);

    /* The key and its value, as an operator would read them. */
    g_autofree char *key = jet_breaker_claim_key("ORDERS", "billing", &moved);
    kvEntry *e = NULL;
    g_assert_cmpint(kvStore_Get(&e, a.kv, key), ==, NATS_OK);
    g_test_message("%s = %s", key, kvEntry_ValueString(e));
    g_assert_cmpstr(kvEntry_ValueString(e), ==,
                    "{\"seq\":1002,\"host\":\"host-b\",\"floor\":1001,\"window\":0}");
    kvEntry_Destroy(e);

    host_close(&a);
    host_close(&b);
}

/* Names that need encoding make valid keys the server accepts. */
static void test_encoded_names(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    TestHost a = { 0 };
    host_open(&a, srv, "h", TRUE);
    g_autoptr(GError) err = NULL;
    JetBreakerWindow w = { G_MAXUINT64, G_MAXUINT32 };
    g_assert_cmpint(jet_breaker_claim(a.kv, "caf\xc3\xa9=1", "c d", &w, 1, "h", NULL, &err), ==,
                    JET_BREAKER_CLAIMED);
    g_assert_no_error(err);
    g_assert_cmpint(jet_breaker_claim(a.kv, "caf\xc3\xa9=1", "c d", &w, 1, "h", NULL, &err), ==,
                    JET_BREAKER_ALREADY_CLAIMED);
    g_assert_no_error(err);
    host_close(&a);
}

/* A bucket that is gone: an error, not a claim and not "already claimed". */
static void test_error(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    TestHost a = { 0 };
    host_open(&a, srv, "h", TRUE);
    g_assert_cmpint(js_DeleteKeyValue(a.js, BUCKET), ==, NATS_OK);
    g_autoptr(GError) err = NULL;
    JetBreakerWindow w = { 5, 0 };
    JetBreakerClaimHolder holder;
    memset(&holder, 0x5a, sizeof holder);
    g_assert_cmpint(jet_breaker_claim(a.kv, "ORDERS", "billing", &w, 6, "h", &holder, &err), ==,
                    JET_BREAKER_CLAIM_ERROR);
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "breaker.ORDERS.billing.5.0"));
    host_close(&a);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/breaker-claim/two-hosts", test_two_hosts);
    g_test_add_func("/breaker-claim/encoded-names", test_encoded_names);
    g_test_add_func("/breaker-claim/error", test_error);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
