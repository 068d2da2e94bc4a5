/* What the command line prints about bytes it does not control (a record's
 * headers and payload, an argument): JSON that is always valid UTF-8 JSON,
 * and text that cannot break a line, a column or a terminal.
 * docs/dead-letters.md (`jethost dlq`) states both rules for operators. */
#ifndef JET_JSON_OUT_H
#define JET_JSON_OUT_H

#include <glib.h>
#include <json-glib/json-glib.h>

/* Whether bytes[0..len) can be a JSON string as they are: valid UTF-8 and
 * no NUL. */
gboolean jet_json_text_ok(const char *bytes, gsize len);

/* Adds member key to the object being built: bytes as a string when
 * jet_json_text_ok, else "<key>_base64" with their standard base64.  NULL
 * bytes: key is null.  len < 0: bytes is NUL-terminated. */
void jet_json_add_bytes(JsonBuilder *b, const char *key, const char *bytes, gssize len);

/* "stream", "seq" and "duplicate" of a JetStream pub-ack. */
void jet_json_add_pub_ack(JsonBuilder *b, const char *stream, guint64 seq, gboolean duplicate);

/* The built value as one line of JSON (no newline); caller frees. */
char *jet_json_line(JsonBuilder *b);

/* bytes[0..len) as text for one field of a line: printable UTF-8 as it is,
 * '\\' as "\\\\", and every other byte (controls, DEL, C1 controls, format
 * and separator characters such as bidi overrides, bytes that are not
 * UTF-8) as \xHH.  keep_lines: '\n' and '\t' stay (a payload shown last).
 * Caller frees. */
char *jet_text_escape(const char *bytes, gsize len, gboolean keep_lines);

#endif
