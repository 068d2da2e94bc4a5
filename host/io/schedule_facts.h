/* The schedule check's input for one binding (docs/schedule.md): its config,
 * and what the server says of its stream and consumer when a connection is
 * given, and the ledger's max age when a ledger is.  One builder, so that
 * `jethost check`, `jethost check --server`, `jethost run` and a reload
 * judge the same facts. */
#ifndef JET_SCHEDULE_FACTS_H
#define JET_SCHEDULE_FACTS_H

#include "config.h"
#include "conn.h"
#include "ledger.h"
#include "schedule.h"

typedef struct {
    JetScheduleInput in;
    guint64 *backoff;   /* owned: in.backoff_ms points here */
} JetScheduleFacts;

/* Fills f for b.  conn NULL: the config alone (as fleet CI checks rendered
 * configs); otherwise the stream's max_age (any kind) and a durable
 * binding's consumer (AckWait, MaxDeliver, MaxAckPending, BackOff), each
 * when the server answers.  ledger NULL, or a binding with ledger = false:
 * no ledger term.  Clear f with jet_schedule_facts_clear. */
void jet_schedule_facts_read(JetScheduleFacts *f, const JetBindingConfig *b, JetConn *conn, JetLedger *ledger);
void jet_schedule_facts_clear(JetScheduleFacts *f);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(JetScheduleFacts, jet_schedule_facts_clear)

#endif
