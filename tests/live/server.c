/* The nats-server fixture itself: start on a port the server picked, JetStream
 * answers, stop, restart on the same port and store, pause and resume. */
#include "harness.h"

#include <nats/nats.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/types.h>

static natsConnection *connect_to(const char *url)
{
    natsConnection *nc = NULL;
    natsOptions *o = NULL;
    g_assert_cmpint(natsOptions_Create(&o), ==, NATS_OK);
    natsOptions_SetURL(o, url);
    natsOptions_SetAllowReconnect(o, false);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    g_assert_cmpint(s, ==, NATS_OK);
    return nc;
}

static void test_lifecycle(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    int port = jet_test_server_port(srv);
    g_assert_cmpint(port, >, 0);

    natsConnection *nc = connect_to(jet_test_server_url(srv));
    jsCtx *js = NULL;
    g_assert_cmpint(natsConnection_JetStream(&js, nc, NULL), ==, NATS_OK);
    jsStreamConfig sc;
    jsStreamConfig_Init(&sc);
    sc.Name = "FIX";
    const char *subjects[] = { "fix.>" };
    sc.Subjects = subjects;
    sc.SubjectsLen = 1;
    jsStreamInfo *si = NULL;
    g_assert_cmpint(js_AddStream(&si, js, &sc, NULL, NULL), ==, NATS_OK);
    jsStreamInfo_Destroy(si);
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_Publish(&pa, js, "fix.a", "x", 1, NULL, NULL), ==, NATS_OK);
    jsPubAck_Destroy(pa);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);

    /* Restart on the same store: the message is still there. */
    jet_test_server_stop(srv);
    jet_test_server_restart(srv);
    g_assert_cmpint(jet_test_server_port(srv), ==, port);
    nc = connect_to(jet_test_server_url(srv));
    g_assert_cmpint(natsConnection_JetStream(&js, nc, NULL), ==, NATS_OK);
    si = NULL;
    g_assert_cmpint(js_GetStreamInfo(&si, js, "FIX", NULL, NULL), ==, NATS_OK);
    g_assert_cmpuint(si->State.Msgs, ==, 1);
    jsStreamInfo_Destroy(si);

    /* Paused: a request times out; resumed: it answers. */
    jet_test_server_pause(srv);
    natsMsg *reply = NULL;
    g_assert_cmpint(natsConnection_RequestString(&reply, nc, "$JS.API.INFO", "", 300), ==, NATS_TIMEOUT);
    jet_test_server_resume(srv);
    g_assert_cmpint(natsConnection_RequestString(&reply, nc, "$JS.API.INFO", "", 5000), ==, NATS_OK);
    natsMsg_Destroy(reply);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);

    /* kill -9, then restart. */
    GPid pid = jet_test_server_pid(srv);
    jet_test_server_kill(srv);
    g_assert_cmpint(kill(pid, 0), !=, 0);
    jet_test_server_restart(srv);
    nc = connect_to(jet_test_server_url(srv));
    natsConnection_Destroy(nc);
}

static gboolean pid_gone(gpointer data)
{
    return kill((pid_t)GPOINTER_TO_INT(data), 0) != 0;
}

static void test_dies_with_test_process(void)
{
    if (g_test_subprocess()) {
        JetTestServer *srv = jet_test_server_start();
        g_autofree char *pid = g_strdup_printf("%d", (int)jet_test_server_pid(srv));
        g_assert_true(g_file_set_contents(g_getenv("JET_FIX_PIDFILE"), pid, -1, NULL));
        abort();   /* an assertion failing mid-test */
    }
    g_autofree char *pidfile = g_build_filename(jet_test_private_dir(), "server.pid", NULL);
    g_setenv("JET_FIX_PIDFILE", pidfile, TRUE);
    g_test_trap_subprocess(NULL, 30 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(pidfile, &text, NULL, NULL));
    int pid = atoi(text);
    g_assert_cmpint(pid, >, 0);
    g_assert_true(jet_test_wait_until(pid_gone, GINT_TO_POINTER(pid), 5000));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/server/lifecycle", test_lifecycle);
    g_test_add_func("/server/dies-with-test-process", test_dies_with_test_process);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
