/* One request to the JetStream API whose reply the host reads itself, for
 * what nats.c's own calls do not carry (fields of newer servers, a stored
 * message's raw header block, a subject filter on stream names). */
#ifndef JET_JS_API_H
#define JET_JS_API_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <nats/nats.h>

/* Sends body (may be "") to "<API prefix>.<api>" (conn.h: the prefix of
 * the JetConn that owns nc) and parses the reply.  The reply's object (a
 * new reference: json_object_unref), "error" member and all; NULL when no
 * reply came (*status says why) or it is not a JSON object (*status
 * NATS_OK).  status may be NULL. */
JsonObject *jet_js_api_request(natsConnection *nc, const char *api, const char *body, gint64 timeout_ms,
                               natsStatus *status);

/* The description of a reply's "error" member ("refused" when it has
 * none), and its err_code in *code (0 when none); NULL when the reply has
 * no error.  Borrowed from o. */
const char *jet_js_api_error(JsonObject *o, gint64 *code);

/* A time the server wrote (RFC 3339, up to nanoseconds, as Go writes it) as
 * Unix ns, to the nanosecond nats.c reads the same text to; 0 when text is
 * NULL, not a time, or not after 1970 (Go's zero time, "0001-01-01..."). */
gint64 jet_js_api_time_ns(const char *text);

/* The same for member `name` of o (either may be absent: 0). */
gint64 jet_js_api_time_member(JsonObject *o, const char *name);

/* The server's JetStream API level ($JS.API.INFO's api.level): 0 before
 * nats-server 2.11 (which has none), 1 or more since; -1 when no answer
 * came or JetStream refused (nothing known). */
gint64 jet_js_api_level(natsConnection *nc);

#endif
