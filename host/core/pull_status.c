#include "pull_status.h"

#include <string.h>

/* How a row's description is compared (always without regard to ASCII case;
 * nats.c has already trimmed surrounding white space). */
typedef enum {
    MATCH_ANY,      /* any description, or none */
    MATCH_EXACT,    /* the whole text */
    MATCH_PREFIX,   /* the server appends a number or an error text */
} MatchMode;

typedef struct {
    int code;
    MatchMode match;
    const char *text;
    JetPullStatusKind kind;          /* when the pull had delivered something */
    JetPullStatusKind kind_if_none;  /* when it had delivered nothing */
    const char *note;
} StatusRow;

#define SAME(k) .kind = (k), .kind_if_none = (k)

/* Every status nats-server v2.9.10 sends to a pull request's reply subject
 * (server/consumer.go and jetstream.go at tag v2.9.10; line numbers from
 * there), and those newer servers added (docs/engine.md, "Statuses").  First match wins.  A new server text lands in UNKNOWN, which ends
 * the pull with a guard and a log line: safe, and loud. */
static const StatusRow rows[] = {
    /* consumer.go:3382 sendIdleHeartbeat: "100 Idle Heartbeat" with
     * Nats-Last-Consumer/-Stream, every idle_heartbeat while the pull waits
     * (probe t5).  The only other 100 the server has, "FlowControl Request"
     * (consumer.go:3592), goes to push consumers; any 100 is a sign of life
     * and ends nothing, so the description is not checked. */
    { 100, MATCH_ANY, NULL, SAME(JET_PULL_HEARTBEAT),
      "idle heartbeat: the pull is alive" },

    /* consumer.go:2839: a no_wait pull without expires and nothing pending.
     * The engine pulls with expires, where 2.9.10 waits instead; a 404 is
     * then a stale answer to an older no_wait pull (docs/engine.md). */
    { 404, MATCH_EXACT, "No Messages", SAME(JET_PULL_END),
      "no messages for a no_wait pull" },

    /* consumer.go:3053 processWaiting: the pull's expires passed (or a
     * no_wait pull that got something reached the end of the stream).
     * The ordinary end of an idle pull. */
    { 408, MATCH_EXACT, "Request Timeout", SAME(JET_PULL_END),
      "the pull expired" },

    /* consumer.go:2746 nextWaiting: sent only for a pull made through an
     * account import (its interest subject is not its reply) that expired
     * or lost its interest while queued.  Nobody may be listening: do not
     * re-pull at once. */
    { 408, MATCH_EXACT, "Interest Expired", SAME(JET_PULL_END_GUARDED),
      "the pull's interest expired on the server" },

    /* consumer.go:2846: a no_wait pull while the consumer's other waiting
     * pulls already claim at least as many messages as are pending.  A
     * re-pull at once gets the same answer until those pulls are served or
     * expire, so it is guarded, not a plain END (a hot loop otherwise). */
    { 408, MATCH_EXACT, "Requests Pending", SAME(JET_PULL_END_GUARDED),
      "other waiting pulls already claim the pending messages" },

    /* consumer.go:2722 nextWaiting: the next message does not fit the pull's
     * remaining max_bytes.  After some messages it is the normal end of a
     * byte-budgeted pull (probe: batch 10, max_bytes 250 gave 4 then this);
     * with nothing received the message is larger than the whole budget and
     * every pull with that budget would stall on it. */
    { 409, MATCH_EXACT, "Message Size Exceeds MaxBytes",
      .kind = JET_PULL_END, .kind_if_none = JET_PULL_END_TOO_LARGE,
      "the next message does not fit the pull's max_bytes" },

    /* consumer.go:2864: the consumer already holds MaxWaiting pulls (other
     * workers, or pulls orphaned by a reconnect that have not expired). */
    { 409, MATCH_EXACT, "Exceeded MaxWaiting", SAME(JET_PULL_END_GUARDED),
      "the consumer has MaxWaiting pulls waiting already" },

    /* consumer.go:1917 checkPendingRequests: a clustered consumer changed
     * leader and dropped its waiting pulls; the new leader needs a moment. */
    { 409, MATCH_EXACT, "Leadership Change", SAME(JET_PULL_END_GUARDED),
      "the consumer changed leader" },

    /* jetstream.go:825: a graceful server stop answers every waiting pull
     * with this, then disconnects (probe t6); re-pulling at once would hit
     * the dying server or nothing. */
    { 409, MATCH_EXACT, "Server Shutdown", SAME(JET_PULL_END_GUARDED),
      "the server is shutting down" },

    /* consumer.go:1931 releaseAnyPendingRequests: the consumer, or its
     * stream, was deleted while the pull waited (probe t7). */
    { 409, MATCH_EXACT, "Consumer Deleted", SAME(JET_PULL_CONSUMER_GONE),
      "the consumer (or its stream) was deleted" },

    /* consumer.go:2812/2817/2822: the pull asks for more than the consumer's
     * MaxRequestBatch / MaxRequestExpires / MaxRequestMaxBytes; the server
     * appends the limit ("of 10", "of 5s", "of 1024").  Every re-pull would
     * be refused the same way: the binding's settings are wrong. */
    { 409, MATCH_PREFIX, "Exceeded MaxRequestBatch of ", SAME(JET_PULL_INVALID),
      "batch exceeds the consumer's MaxRequestBatch" },
    { 409, MATCH_PREFIX, "Exceeded MaxRequestExpires of ", SAME(JET_PULL_INVALID),
      "expires exceeds the consumer's MaxRequestExpires" },
    { 409, MATCH_PREFIX, "Exceeded MaxRequestMaxBytes of ", SAME(JET_PULL_INVALID),
      "max_bytes exceeds the consumer's MaxRequestMaxBytes" },

    /* consumer.go:2799: a pull sent to a push consumer. */
    { 409, MATCH_EXACT, "Consumer is push based", SAME(JET_PULL_INVALID),
      "the consumer is a push consumer" },

    /* Newer servers (2.10 and later; server/consumer.go of the 2.11/2.12
     * line, JsPullRequestRemainingBytesT): a pull with both a batch and a
     * max_bytes got its whole batch while bytes were left: the ordinary end
     * of such a pull, like 408 Request Timeout. */
    { 409, MATCH_EXACT, "Batch Completed", SAME(JET_PULL_END),
      "the pull got its whole batch (max_bytes left over)" },

    /* Priority groups (2.11+): a pull without the pin the consumer gave
     * another client ("Nats-Pin-Id mismatch" when it is refused at once,
     * "Nats-Wrong-Pin-Id" when its pin moved while it waited).  Another
     * client holds the consumer for now; re-pulling at once asks again in a
     * hot loop. */
    { 423, MATCH_ANY, NULL, SAME(JET_PULL_END_GUARDED),
      "another client holds the consumer's pin (priority_policy pinned_client)" },

    /* Priority groups (2.11+): the consumer names priority groups and the
     * pull names none, or one it does not have; or it is of another policy
     * than the pull assumes.  The consumer was made for other clients: a
     * binding must not pull from it as it is. */
    { 400, MATCH_EXACT, "Bad Request - Priority Group missing", SAME(JET_PULL_INVALID),
      "the consumer has priority groups and the host's pull names none: bind another consumer" },
    { 400, MATCH_EXACT, "Bad Request - Invalid Priority Group", SAME(JET_PULL_INVALID),
      "the pull names a priority group the consumer does not have" },
    { 400, MATCH_PREFIX, "Bad Request - Not a ", SAME(JET_PULL_INVALID),
      "the pull assumes another priority policy than the consumer's" },

    /* 2.12+: the request asks for a JetStream API level the server lacks
     * (the host sets none; a proxy or an older server behind it might). */
    { 412, MATCH_ANY, NULL, SAME(JET_PULL_INVALID),
      "the server does not support the API level the pull requires" },

    /* consumer.go:2806: the request body did not parse, "Bad Request - "
     * and the error ("heartbeat value too large" when 2 * idle_heartbeat >
     * expires, probe t5; a JSON error otherwise).  Our own request is
     * wrong: re-pulling repeats it. */
    { 400, MATCH_ANY, NULL, SAME(JET_PULL_INVALID),
      "the server refused the pull request as malformed" },
};

static gboolean row_matches(const StatusRow *row, int code, const char *description)
{
    if (row->code != code)
        return FALSE;
    switch (row->match) {
    case MATCH_ANY:
        return TRUE;
    case MATCH_EXACT:
        return description != NULL && g_ascii_strcasecmp(description, row->text) == 0;
    case MATCH_PREFIX:
        return description != NULL
               && g_ascii_strncasecmp(description, row->text, strlen(row->text)) == 0;
    }
    return FALSE;
}

JetPullStatusKind jet_pull_status_lookup(int code, const char *description, guint received,
                                         const char **note)
{
    for (gsize i = 0; i < G_N_ELEMENTS(rows); i++) {
        if (row_matches(&rows[i], code, description)) {
            if (note != NULL)
                *note = rows[i].note;
            return received > 0 ? rows[i].kind : rows[i].kind_if_none;
        }
    }
    if (note != NULL)
        *note = "a status not in the table (a newer server?)";
    return JET_PULL_UNKNOWN;
}

JetPullStatusKind jet_pull_status_classify(int code, const char *description, guint received)
{
    return jet_pull_status_lookup(code, description, received, NULL);
}

const char *jet_pull_status_name(JetPullStatusKind kind)
{
    switch (kind) {
    case JET_PULL_HEARTBEAT: return "heartbeat";
    case JET_PULL_END: return "end";
    case JET_PULL_END_GUARDED: return "end-guarded";
    case JET_PULL_END_TOO_LARGE: return "end-too-large";
    case JET_PULL_CONSUMER_GONE: return "consumer-gone";
    case JET_PULL_INVALID: return "invalid";
    case JET_PULL_UNKNOWN: return "unknown";
    }
    return "?";
}

gboolean jet_pull_status_parse_line(const char *status_header, int *code)
{
    g_return_val_if_fail(code != NULL, FALSE);

    if (status_header == NULL)
        return FALSE;
    for (int i = 0; i < 3; i++) {
        if (!g_ascii_isdigit(status_header[i]))
            return FALSE;
    }
    if (status_header[3] != '\0')
        return FALSE;
    *code = (status_header[0] - '0') * 100 + (status_header[1] - '0') * 10 + (status_header[2] - '0');
    return TRUE;
}
