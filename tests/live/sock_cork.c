/* Corking a nats.c connection's socket around a burst (host/io/sock_cork.c):
 * the socket found is the connection's own, a corked burst is held by the
 * kernel until its end, and a reconnect is followed to the new socket. */
#include "harness.h"
#include "sock_cork.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static int peer_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

static natsConnection *connect_to(JetTestServer *srv)
{
    natsOptions *o = NULL;
    g_assert_cmpint(natsOptions_Create(&o), ==, NATS_OK);
    natsOptions_SetURL(o, jet_test_server_url(srv));
    natsOptions_SetSendAsap(o, true);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 50);
    natsConnection *nc = NULL;
    g_assert_cmpint(natsConnection_Connect(&nc, o), ==, NATS_OK);
    natsOptions_Destroy(o);
    return nc;
}

/* Each of two connections to one server finds its own socket. */
static void test_find(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *a = connect_to(srv), *b = connect_to(srv);
    int fa = jet_sock_find(a), fb = jet_sock_find(b);
    g_test_message("fds %d and %d", fa, fb);
    g_assert_cmpint(fa, >=, 0);
    g_assert_cmpint(fb, >=, 0);
    g_assert_cmpint(fa, !=, fb);
    g_assert_cmpint(peer_port(fa), ==, jet_test_server_port(srv));
    g_assert_cmpint(peer_port(fb), ==, jet_test_server_port(srv));
    /* b's socket is b's: closing a leaves it found */
    natsConnection_Destroy(a);
    g_assert_cmpint(jet_sock_find(b), ==, fb);
    natsConnection_Destroy(b);
}

typedef struct {
    gint got;
} Seen;

static void on_msg(natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
    (void)nc;
    (void)sub;
    g_atomic_int_inc(&((Seen *)closure)->got);
    natsMsg_Destroy(m);
}

static gboolean got_n(gpointer data)
{
    Seen *s = ((gpointer *)data)[0];
    return g_atomic_int_get(&s->got) >= GPOINTER_TO_INT(((gpointer *)data)[1]);
}

/* Publishes one small message inside a burst: nothing reaches the
 * subscriber until the burst ends, then it does at once. */
static void burst_holds(JetSockCork *k, natsConnection *pub, guint generation, Seen *seen, gint before)
{
    jet_sock_cork_begin(k, pub, generation);
    g_assert_cmpint(natsConnection_PublishString(pub, "cork.t", "x"), ==, NATS_OK);
    g_usleep(60 * 1000);   /* the kernel holds a corked partial segment up to 200 ms */
    g_assert_cmpint(g_atomic_int_get(&seen->got), ==, before);
    gint64 t0 = g_get_monotonic_time();
    jet_sock_cork_end(k);
    gpointer args[2] = { seen, GINT_TO_POINTER(before + 1) };
    g_assert_true(jet_test_wait_until(got_n, args, 5000));
    g_test_message("delivered %" G_GINT64_FORMAT " µs after the burst ended", g_get_monotonic_time() - t0);
}

static void test_burst_held_then_sent(void)
{
    g_autoptr(JetTestServer) srv = jet_test_server_start();
    natsConnection *pub = connect_to(srv), *sub_nc = connect_to(srv);
    Seen seen = { 0 };
    natsSubscription *sub = NULL;
    g_assert_cmpint(natsConnection_Subscribe(&sub, sub_nc, "cork.t", on_msg, &seen), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(sub_nc), ==, NATS_OK);
    /* the same publish outside a burst arrives */
    g_assert_cmpint(natsConnection_PublishString(pub, "cork.t", "x"), ==, NATS_OK);
    gpointer first[2] = { &seen, GINT_TO_POINTER(1) };
    g_assert_true(jet_test_wait_until(got_n, first, 5000));

    JetSockCork *k = jet_sock_cork_new();
    burst_holds(k, pub, 0, &seen, 1);
    /* overlapping bursts: the socket stays corked until the last ends */
    jet_sock_cork_begin(k, pub, 0);
    jet_sock_cork_begin(k, pub, 0);
    g_assert_cmpint(natsConnection_PublishString(pub, "cork.t", "x"), ==, NATS_OK);
    jet_sock_cork_end(k);
    g_usleep(60 * 1000);
    g_assert_cmpint(g_atomic_int_get(&seen.got), ==, 2);
    jet_sock_cork_end(k);
    gpointer third[2] = { &seen, GINT_TO_POINTER(3) };
    g_assert_true(jet_test_wait_until(got_n, third, 5000));

    /* A reconnect: the old socket is gone; the next burst, told of the new
     * generation, corks the new one. */
    int before_fd = jet_sock_find(pub);
    jet_test_server_stop(srv);
    for (int i = 0; i < 200 && natsConnection_Status(pub) == NATS_CONN_STATUS_CONNECTED; i++)
        g_usleep(25 * 1000);
    /* Hold the numbers the old sockets had, so the new ones differ: a
     * burst that kept the old number would cork nothing. */
    int hold[4];
    for (guint i = 0; i < G_N_ELEMENTS(hold); i++)
        hold[i] = open("/dev/null", O_RDONLY);
    jet_test_server_restart(srv);
    for (int i = 0; i < 200 && natsConnection_Status(pub) != NATS_CONN_STATUS_CONNECTED; i++)
        g_usleep(25 * 1000);
    for (int i = 0; i < 200 && natsConnection_Status(sub_nc) != NATS_CONN_STATUS_CONNECTED; i++)
        g_usleep(25 * 1000);
    g_assert_cmpint(natsConnection_Status(pub), ==, NATS_CONN_STATUS_CONNECTED);
    g_assert_cmpint(natsConnection_Flush(sub_nc), ==, NATS_OK);
    g_assert_cmpint(natsConnection_Flush(pub), ==, NATS_OK);
    g_test_message("socket %d before the restart, %d after", before_fd, jet_sock_find(pub));
    burst_holds(k, pub, 1, &seen, 3);

    for (guint i = 0; i < G_N_ELEMENTS(hold); i++)
        close(hold[i]);
    jet_sock_cork_free(k);
    natsSubscription_Destroy(sub);
    natsConnection_Destroy(pub);
    natsConnection_Destroy(sub_nc);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sock-cork/find", test_find);
    g_test_add_func("/sock-cork/burst-held-then-sent", test_burst_held_then_sent);
    return g_test_run();
}
