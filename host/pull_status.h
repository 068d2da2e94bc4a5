/* The pull status table: what each status message the server sends to a
 * pull request means for the engine (DESIGN section 9 lists what 2.9.10
 * sends).  Pure; tested on its own so a server upgrade that changes a text
 * fails loudly. */
#ifndef JET_PULL_STATUS_H
#define JET_PULL_STATUS_H

#include <glib.h>

typedef enum {
    JET_PULL_HEARTBEAT = 0,    /* 100 Idle Heartbeat: the pull is alive */
    JET_PULL_END,              /* the pull is over; re-pull (404, 408 Request Timeout, ...) */
    JET_PULL_END_GUARDED,      /* over early for a server-side reason; re-pull after the guard delay */
    JET_PULL_END_TOO_LARGE,    /* 409 Message Size Exceeds MaxBytes with nothing received:
                                  the next message is larger than the budget; fetch it alone without one */
    JET_PULL_CONSUMER_GONE,    /* 409 Consumer Deleted: re-create (managed) or wait (bind) */
    JET_PULL_INVALID,          /* the request is invalid for this consumer: fail the binding loudly */
    JET_PULL_UNKNOWN,          /* a status not in the table: end the pull, guard, log it */
} JetPullStatusKind;

/* Classifies a status by code and description (the "Status" and
 * "Description" headers).  received: messages this pull delivered so far. */
JetPullStatusKind jet_pull_status_classify(int code, const char *description, guint received);

const char *jet_pull_status_name(JetPullStatusKind kind);

#endif
