/* The NATS header block, read and written by the host's own rules
 * (docs/headers.md), never by nats.c's: a stored message's headers decide
 * what a plugin sees and what a dead-letter record carries, and nats.c 3.4.1
 * reads a line without ':' as the start of the next line's name, joins an
 * empty value to the next line, and keeps no order.
 *
 *   NATS/1.0 CRLF
 *   name ":" [OWS] value [OWS] CRLF      (repeated, in order)
 *   CRLF
 *
 * name:  one or more token characters (RFC 9110: letters, digits and
 *        !#$%&'*+-.^_`|~), as written (case kept);
 * value: any bytes but CR, LF and NUL (non-UTF-8 kept as it is), without the
 *        spaces and tabs around it; may be empty.
 *
 * Pure: no I/O, no nats.c.  The parser never fails: what it cannot read
 * faithfully it reports as a defect and leaves out; the writer refuses what
 * it cannot write faithfully. */
#ifndef JET_HDR_BLOCK_H
#define JET_HDR_BLOCK_H

#include <glib.h>

#define JET_HDR_LINE "NATS/1.0"
/* "NATS/1.0\r\n" ... "\r\n": what an empty block costs. */
#define JET_HDR_FRAME_BYTES 12
/* A defect's text keeps at most this many bytes of its line (escaped). */
#define JET_HDR_DEFECT_TEXT_MAX 64

/* One line (or the block's frame) the parser could not read faithfully. */
typedef struct {
    guint line;        /* 1-based; line 1 is the NATS/1.0 line; 0 for the block as a whole */
    char *text;        /* the line's first bytes, escaped by jet_hdr_escape(); "" when none */
    const char *why;   /* static text: "no colon", "continuation line", ... */
} JetHdrDefect;

typedef struct {
    GPtrArray *headers;   /* char*: name, value, name, value ... in block order (owned) */
    GArray *defects;      /* JetHdrDefect, in block order (owned) */
} JetHdrParse;

/* Parses block[0..len).  Always fills out (clear it with
 * jet_hdr_parse_clear); TRUE when the block had no defect.  A block of length
 * 0 is "no headers": TRUE and empty. */
gboolean jet_hdr_parse(const char *block, gsize len, JetHdrParse *out);
void jet_hdr_parse_clear(JetHdrParse *p);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetHdrParse, jet_hdr_parse_clear)

/* The first value of name (compared case-insensitively, as NATS clients
 * do), or NULL.  headers: name/value pairs as in JetHdrParse. */
const char *jet_hdr_get(const GPtrArray *headers, const char *name);

gboolean jet_hdr_name_valid(const char *name);
gboolean jet_hdr_value_valid(const char *value);

/* The block for headers (name/value pairs, in order): the exact bytes a
 * parse gives back.  NULL with an error naming the first bad header when a
 * name is not a token or a value holds CR, LF or NUL or starts or ends with
 * a space or tab (it would not survive a round trip).  An empty list gives
 * NULL with *len 0 and no error: no block at all.  Free with g_free. */
char *jet_hdr_write(const GPtrArray *headers, gsize *len, GError **error);

/* The length jet_hdr_write would give for valid headers (0 when empty). */
gsize jet_hdr_encoded_len(const GPtrArray *headers);

/* Bytes as printable ASCII for a log line or a header value: 0x21..0x7e
 * except '\\', '"' and ',' as they are, everything else as \xHH; at most
 * max_in input bytes, then "...".  Caller frees. */
char *jet_hdr_escape(const char *bytes, gsize len, gsize max_in);

/* "line 3 \"p\" (no colon)" for a defect; caller frees. */
char *jet_hdr_defect_describe(const JetHdrDefect *d);

#endif
