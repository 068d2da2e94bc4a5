/* Which stream captures a subject, asked of the server (<API
 * prefix>.STREAM.NAMES with a subject filter: the server matches every
 * stream's patterns, so an operator's stream of any name is found). */
#ifndef JET_STREAM_NAMES_H
#define JET_STREAM_NAMES_H

#include "conn.h"

#include <nats/nats.h>

#include <glib.h>

/* The name of a stream that captures subject (the first the server lists;
 * caller frees), or NULL: with *error set when the server could not be
 * asked or refused, unset when no stream captures it. */
char *jet_stream_capturing(JetConn *c, const char *subject, gint64 timeout_ms, GError **error);

/* A stream's subjects as the server has them (caller frees), or NULL when
 * it has no such stream or cannot say.  conn is a JetConn: the shape of
 * publish_loop.h's JetStreamSubjectsFn. */
char **jet_stream_subjects(const char *stream, void *conn);

/* A stream create the server refused (js_AddStream's status and error
 * code), as the error of binding `binding` that asked for stream `stream`
 * with `subjects`.  Subjects that overlap another stream's (10065) are a
 * config error (JET_ERROR_INVALID: not retried, `run` exits 3) naming the
 * streams they overlap; anything else is JET_ERROR_SERVER.  Returns FALSE. */
gboolean jet_stream_create_failed(jsCtx *js, const char *binding, const char *stream, const char *const *subjects,
                                  natsStatus s, jsErrCode jerr, GError **error);

#endif
