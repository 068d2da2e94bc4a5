/* A TCP relay on loopback between a client and a nats-server, which a test
 * can cut: every connection through it is closed at once (both sides), as
 * a network fault or a server's kick would, while the server runs on and
 * the relay goes on accepting, so the client reconnects through it. */
#ifndef JET_TEST_RELAY_H
#define JET_TEST_RELAY_H

#include <glib.h>

typedef struct JetTestRelay JetTestRelay;

/* Listens on a free loopback port and relays to 127.0.0.1:target_port. */
JetTestRelay *jet_test_relay_start(int target_port);

/* Connections accepted from now on go to 127.0.0.1:target_port (another
 * server behind the same address); those open now are left as they are
 * (jet_test_relay_cut ends them). */
void jet_test_relay_retarget(JetTestRelay *r, int target_port);

/* "nats://127.0.0.1:<port>" of the relay (borrowed). */
const char *jet_test_relay_url(const JetTestRelay *r);

/* Closes every connection through the relay now; returns how many. */
guint jet_test_relay_cut(JetTestRelay *r);

/* Blocked: every connection through the relay is cut, and those made
 * until it is unblocked are closed as soon as they are accepted (a
 * network partition of the client; the server runs on).  Unblocked: the
 * relay relays again. */
void jet_test_relay_block(JetTestRelay *r, gboolean blocked);

/* A cut at a chosen moment of the protocol: the next `times` times a
 * client sends bytes that hold needle (a request's subject, say), those
 * bytes are not passed on and that client's connection is cut, so the
 * request is lost with its connection.  times 0 disarms it. */
void jet_test_relay_cut_on(JetTestRelay *r, const char *needle, guint times);

/* How many cuts jet_test_relay_cut_on has made so far. */
guint jet_test_relay_cuts_made(JetTestRelay *r);

/* Stops accepting, closes every connection, frees r. */
void jet_test_relay_stop(JetTestRelay *r);

#endif
