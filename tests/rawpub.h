/* A NATS client for tests that speaks the protocol itself, so a test can
 * send header blocks nats.c would refuse or rewrite.  Blocking, one thread,
 * every read bounded by a timeout.  Nothing it sends is checked: the blocks
 * are meant to be hostile.  Server PINGs are answered, INFO and +OK are
 * skipped, -ERR fails the call that reads it. */
#ifndef JET_TEST_RAWPUB_H
#define JET_TEST_RAWPUB_H

#include <glib.h>

typedef struct JetRawPub JetRawPub;

/* Connects to 127.0.0.1:port: reads INFO, sends CONNECT (headers and
 * no_responders on, verbose off) and waits for the PONG of a PING. */
JetRawPub *jet_rawpub_connect(int port, GError **error);
void jet_rawpub_close(JetRawPub *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetRawPub, jet_rawpub_close)

/* HPUB subject hdr_len hdr_len+data_len, then the block and the payload as
 * they are. */
gboolean jet_rawpub_hpub(JetRawPub *p, const char *subject, const char *hdr_block, gsize hdr_len, const void *data,
                         gsize data_len, GError **error);

/* The same with a reply inbox of this connection, then waits for the reply:
 * for a stream's subject, the JetStream pub-ack.  *ack (g_free) is its
 * JSON text, which may be an {"error":...} refusal; FALSE with an error on
 * a timeout, a -ERR, or a no-responders status (no stream listens). */
gboolean jet_rawpub_hpub_acked(JetRawPub *p, const char *subject, const char *hdr_block, gsize hdr_len,
                               const void *data, gsize data_len, char **ack, GError **error);

/* A PING/PONG round trip: the server has processed everything sent before. */
gboolean jet_rawpub_flush(JetRawPub *p, GError **error);

#endif
