/* What the host takes from libnats beyond nats.h: header blocks as bytes,
 * and freeing a message at once.
 *
 * nats.c's public API reads headers only through its own parser and writes
 * them only from a hash table (no order, its own rules).  The host must see
 * and write the exact block (hdr_block.h, docs/headers.md), so this is the
 * one place that uses the functions libnats exports without declaring them
 * in nats.h: natsMsg_create (a message from a raw block and payload, as
 * nats.c builds the ones it receives), natsMsgHeader_encodedLen (public as
 * natsMsgHeader_EncodedLength since nats.c 3.14, used when nats.h has it) and
 * natsMsgHeader_encode (which hand back a received block untouched until
 * something reads a header through nats.c), natsBuf_CreateWithBackend /
 * natsBuf_Destroy (to receive those bytes in our own memory), and
 * natsMsg_free (jet_nats_msg_free below).  configure checks they exist;
 * tests/live/raw_headers.c checks, against a real server, that the bytes
 * are exact both ways. */
#ifndef JET_NATS_RAW_H
#define JET_NATS_RAW_H

#include <glib.h>
#include <nats/nats.h>

/* The header block of a message nats.c received, byte for byte as the
 * server sent it: a new buffer in *block (g_free) and its length, or NULL
 * and 0 when the message has none.  Call it before anything reads m's
 * headers through nats.c (natsMsgHeader_*): that rewrites nats.c's copy;
 * and see jet_nats_raw_intact.
 * FALSE when nats.c failed (out of memory). */
gboolean jet_nats_raw_headers(natsMsg *m, char **block, gsize *block_len);

/* FALSE when nats.c may have read m's headers already, so the block
 * jet_nats_raw_headers returns is its re-encoding, not the bytes received:
 * nats.c's natsSubscription_NextMsg reads the headers of every message with
 * an empty payload (it looks for a "503 no responders" status).  The host
 * answers that question itself without touching the message (nats_raw.c),
 * so once jet_nats_raw_probe has seen a block arrive intact, every block
 * is; until then, or if it did not, an empty message's block must be read
 * again from where it is stored (stream_msg.h). */
gboolean jet_nats_raw_intact(natsMsg *m);

/* Once per process (the first engine's start), on a live connection:
 * sends itself an empty message whose block nats.c's parser would rewrite
 * and checks that it arrives intact through natsSubscription_NextMsg (logs
 * event=headers-reread when it does not). */
void jet_nats_raw_probe(natsConnection *nc);

/* A message to subject with exactly this header block (block_len 0: none)
 * and payload; nats.c sends the block as it is.  Publish it with nats.c's
 * functions that add no header (js_PublishMsg without MsgId or expectations,
 * natsConnection_PublishMsg, natsConnection_RequestMsg): adding one would
 * re-encode the block by nats.c's rules. */
natsMsg *jet_nats_msg_new_raw(const char *subject, const char *block, gsize block_len, const void *data,
                              gsize data_len, GError **error);
/* The same with a reply subject (may be NULL), for natsConnection_PublishMsg
 * as a request whose answer the caller reads itself (replies.h). */
natsMsg *jet_nats_msg_new_raw_reply(const char *subject, const char *reply, const char *block, gsize block_len,
                                    const void *data, gsize data_len, GError **error);

/* Publishes such a message to JetStream and waits for its pub-ack, left in
 * *pa (may be NULL; free with jsPubAck_Destroy).  FALSE with the reason: the
 * server's words, "(no stream captures this subject)" when nothing answered,
 * the JetStream error code when the server gave one, or a reply that names
 * no stream (no pub-ack at all). */
gboolean jet_js_publish_raw(jsCtx *js, const char *subject, const char *block, gsize block_len, const void *data,
                            gsize data_len, jsPubAck **pa, GError **error);

/* Whether m is a pull status (host/core/pull_status.h says how nats.c hands
 * one over: no reply, no payload, a "Status" pseudo-header), and then its
 * code (0 when it does not parse: a status the table does not know) and
 * description (NULL when none; borrowed from m).  Reads m's headers through
 * nats.c: only ever for a message that has no reply subject. */
gboolean jet_nats_status(natsMsg *m, int *code, const char **desc);

/* Frees a message taken with natsSubscription_NextMsg off one of the host's
 * own plain (core, synchronous) subscriptions, at once and in the calling
 * thread.  natsMsg_Destroy hands every message nats.c made to nats.c's
 * collector thread and wakes that thread when it sleeps: a futex call and a
 * context switch or two a message (or a burst of them, at the price of the
 * burst's memory).  Its one other step, skipping a message nats.c flags as
 * its own (a JetStream push subscription's status messages, an asynchronous
 * dispatcher's control messages), never applies to such a message.  With a
 * nats.c this was not read against (before 3.3, from 3.14 on) it is
 * natsMsg_Destroy (docs/performance.md "Freeing a message at once"). */
void jet_nats_msg_free(natsMsg *m);

#endif
