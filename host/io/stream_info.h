/* A stream's info as its leader sees it (docs/engine.md, "A stream's info
 * during an election").
 *
 * nats-server lets a member that is not the leader answer a stream info
 * request with its own state: every member while the group has no leader,
 * and a member the group prefers for the first seconds after its raft node
 * was made (a node that lost its store and came back).  Such a member may
 * hold fewer messages than the stream, or none, and has its own creation
 * time.  Its answer names no leader, or names the leader among its
 * replicas (which list every member but the one answering).  The host acts
 * on what a stream holds (where a read ends, whether a stream is in a new
 * life, a replay's ids), so it asks again until the leader answers. */
#ifndef JET_STREAM_INFO_H
#define JET_STREAM_INFO_H

#include <glib.h>
#include <nats/nats.h>

/* Whether si is a member's own answer, not its leader's: no leader named,
 * or the leader named among the replicas (a single server always names
 * itself, with no replicas). */
gboolean jet_stream_info_from_member(const jsStreamInfo *si);

/* js_GetStreamInfo, asked again every 250 ms while a member answers, no
 * one answers in time, or the cluster says it has no meta leader (503,
 * "temporarily unavailable") or the stream is offline: for up to wait_ms
 * (0: once), or until *stop (may be NULL) is set.  NATS_OK with *out
 * (jsStreamInfo_Destroy) from a leader; any other error at once, as
 * js_GetStreamInfo gives it (status and jerr); at the end of wait_ms the
 * last error, or NATS_TIMEOUT (jerr 0) when the last answer was a
 * member's. */
natsStatus jet_stream_info_led(jsStreamInfo **out, jsCtx *js, const char *stream, guint wait_ms, const gint *stop,
                               jsErrCode *jerr);

#endif
