#include "ack_subject.h"

#include <string.h>

#define ACK_PREFIX "$JS.ACK."
#define ACK_PREFIX_LEN (sizeof ACK_PREFIX - 1)

/* Tokens after the prefix: 7 in the 9-token form, 9 in the 11-token form,
 * 10 with the trailing random token. */
#define V1_TOKENS 7
#define V2_TOKENS 9
#define V2_TOKENS_RANDOM 10

typedef struct {
    const char *p;
    gsize len;
} Slice;

/* Decimal ASCII digits only, at most max. */
static gboolean parse_number(Slice s, guint64 max, guint64 *out)
{
    guint64 v = 0;
    for (gsize i = 0; i < s.len; i++) {
        char c = s.p[i];
        if (c < '0' || c > '9')
            return FALSE;
        guint64 d = (guint64)(c - '0');
        if (v > (max - d) / 10)
            return FALSE;
        v = v * 10 + d;
    }
    *out = v;
    return TRUE;
}

gboolean jet_ack_subject_parse(const char *subject, JetAckMeta *out)
{
    g_return_val_if_fail(out != NULL, FALSE);

    if (subject == NULL || strncmp(subject, ACK_PREFIX, ACK_PREFIX_LEN) != 0)
        return FALSE;

    Slice tok[V2_TOKENS_RANDOM];
    gsize n = 0;
    const char *p = subject + ACK_PREFIX_LEN;
    for (;;) {
        const char *dot = strchr(p, '.');
        gsize len = dot != NULL ? (gsize)(dot - p) : strlen(p);
        if (len == 0 || n == G_N_ELEMENTS(tok))
            return FALSE;    /* an empty token, or too many */
        tok[n].p = p;
        tok[n].len = len;
        n++;
        if (dot == NULL)
            break;
        p = dot + 1;
    }

    JetAckMeta m = { 0 };
    const Slice *t;    /* from <stream> on */
    if (n == V1_TOKENS) {
        t = tok;
    } else if (n == V2_TOKENS || n == V2_TOKENS_RANDOM) {
        /* tok[1] is the account hash and tok[9] the random token: not kept */
        if (!(tok[0].len == 1 && tok[0].p[0] == '_')) {
            m.domain = tok[0].p;
            m.domain_len = tok[0].len;
        }
        t = tok + 2;
    } else {
        return FALSE;
    }

    m.stream = t[0].p;
    m.stream_len = t[0].len;
    m.consumer = t[1].p;
    m.consumer_len = t[1].len;
    guint64 ts = 0;
    if (!parse_number(t[2], G_MAXUINT64, &m.delivered)
        || !parse_number(t[3], G_MAXUINT64, &m.stream_seq)
        || !parse_number(t[4], G_MAXUINT64, &m.consumer_seq)
        || !parse_number(t[5], (guint64)G_MAXINT64, &ts)
        || !parse_number(t[6], G_MAXUINT64, &m.pending))
        return FALSE;
    if (m.delivered == 0 || m.stream_seq == 0)
        return FALSE;
    m.timestamp_ns = (gint64)ts;

    *out = m;
    return TRUE;
}
