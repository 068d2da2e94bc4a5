/* Which stream captures a subject, asked of the server (<API
 * prefix>.STREAM.NAMES with a subject filter: the server matches every
 * stream's patterns, so an operator's stream of any name is found). */
#ifndef JET_STREAM_NAMES_H
#define JET_STREAM_NAMES_H

#include "conn.h"

#include <glib.h>

/* The name of a stream that captures subject (the first the server lists;
 * caller frees), or NULL: with *error set when the server could not be
 * asked or refused, unset when no stream captures it. */
char *jet_stream_capturing(JetConn *c, const char *subject, gint64 timeout_ms, GError **error);

#endif
