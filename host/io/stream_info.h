/* A stream's info as its leader sees it (docs/engine.md, "A stream's info
 * during an election").
 *
 * While a clustered stream's group has no leader, nats-server lets every
 * member answer a stream info request with its own state: a member that
 * lost its store, or is behind, answers with fewer messages than the stream
 * holds, or none, and with its own creation time.  Such an answer names no
 * leader in its cluster info.  The host acts on what a stream holds (where
 * a read ends, whether a stream is in a new life, a replay's ids), so it
 * asks again until the answer names a leader. */
#ifndef JET_STREAM_INFO_H
#define JET_STREAM_INFO_H

#include <glib.h>
#include <nats/nats.h>

/* Whether si is a member's own answer, given while its group had no
 * leader (a cluster's member; a single server always names itself). */
gboolean jet_stream_info_leaderless(const jsStreamInfo *si);

/* js_GetStreamInfo, asked again every 250 ms while the answer names no
 * leader, for up to wait_ms (0: once), or until *stop (may be NULL) is
 * set.  NATS_OK with *out (jsStreamInfo_Destroy) from a leader; the
 * server's status and jerr as js_GetStreamInfo gives them; NATS_TIMEOUT
 * (jerr 0) when every answer in wait_ms was leaderless. */
natsStatus jet_stream_info_led(jsStreamInfo **out, jsCtx *js, const char *stream, guint wait_ms, const gint *stop,
                               jsErrCode *jerr);

#endif
