/* Which lane a delivery belongs to (docs/lanes.md): the binding's `key`
 * names a header or a subject token, and messages with equal keys are
 * handled one at a time, in stream order.
 *
 * Pure: no I/O.  Keys are bytes from a message, so they are hostile: they
 * are compared as bytes, never printed unescaped, and a message that names
 * its key twice with two values cannot be put in one lane honestly. */
#ifndef JET_LANE_KEY_H
#define JET_LANE_KEY_H

#include <glib.h>

/* `key = subject:N` takes at most this token (a subject has fewer). */
#define JET_LANE_KEY_TOKEN_MAX 255

typedef enum {
    JET_LANE_KEY_OFF = 0,      /* no `key`: the binding has no lanes */
    JET_LANE_KEY_HEADER,       /* `header:NAME`: the value of header NAME */
    JET_LANE_KEY_SUBJECT,      /* `subject:N`: the Nth token of the subject, from 1 */
} JetLaneKeyKind;

typedef struct {
    JetLaneKeyKind kind;
    char header[65];           /* HEADER: the name, a token of at most 64 characters */
    guint token;               /* SUBJECT: 1 .. JET_LANE_KEY_TOKEN_MAX */
} JetLaneKeySpec;

/* Reads a `key` value.  FALSE with *why (static text) for anything else:
 * the spec is then zeroed. */
gboolean jet_lane_key_parse(const char *text, JetLaneKeySpec *out, const char **why);

/* "header:NAME" / "subject:N" (caller frees). */
char *jet_lane_key_format(const JetLaneKeySpec *spec);

typedef enum {
    JET_LANE_KEYED = 0,   /* *key, *len: the key (borrowed from subject or headers) */
    JET_LANE_KEYLESS,     /* the message has no key: it goes to the keyless lane */
    JET_LANE_AMBIGUOUS,   /* the header is there twice with different values: dead-lettered */
} JetLaneKeyResult;

/* The key of a message.  headers: name/value pairs as hdr_block.h parses
 * them (may be NULL).  An absent or empty header, or a subject with fewer
 * than N tokens, is KEYLESS; the same value written twice is one key. */
JetLaneKeyResult jet_lane_key_of(const JetLaneKeySpec *spec, const char *subject, const GPtrArray *headers,
                                 const char **key, gsize *len);

/* Why an AMBIGUOUS message is dead-lettered, the same words in the daemon
 * and the mock host (caller frees). */
char *jet_lane_key_ambiguous_reason(const JetLaneKeySpec *spec);

#endif
