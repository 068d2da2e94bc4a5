/* Per-key lanes (docs/lanes.md): deliveries with equal keys are handled one
 * at a time, in stream order; different keys run in parallel.
 *
 * The invariant: a delivery is handed out only when no earlier message of
 * its key is unsettled — not one in a handler, not one given back to the
 * server (a RETRY or POSTPONE, a lapsed lease), not one a previous run
 * left unacked, not one lost on the way.  What this host cannot see is
 * "unknown": every stream sequence in a recovery range (what was delivered
 * before this run, or around a lost delivery) is treated as an unsettled
 * message of any key until its key is read from the stream ("resolved") or
 * the consumer's ack floor passes it.
 *
 * Pure: no I/O, no clock, no lock (the caller serialises every call).
 * Items are the caller's: the table stores and returns them, never frees
 * them.  Times are the caller's monotonic microseconds. */
#ifndef JET_LANES_H
#define JET_LANES_H

#include <glib.h>

typedef struct JetLanes JetLanes;

JetLanes *jet_lanes_new(void);
/* Items still inside are not freed: take them out first (jet_lanes_pop_waiting). */
void jet_lanes_free(JetLanes *l);

/* A delivery came.  key/len: its key, or NULL for the keyless lane (one
 * lane for every message without a key, in stream order).  first: its
 * first delivery (the server sends those in stream order).  Returns the
 * item it replaces: an earlier delivery of the same sequence that had not
 * been handed out yet (its lease lapsed and the server sent it again); the
 * caller drops that one without settling it.  A delivery of a sequence in
 * a handler waits for that handler's settlement, then runs again. */
gpointer jet_lanes_offer(JetLanes *l, const char *key, gsize len, guint64 seq, gboolean first, gpointer item);

/* The next delivery whose turn it is (FIFO among ready lanes), or NULL;
 * *seq: its stream sequence. */
gpointer jet_lanes_take(JetLanes *l, guint64 *seq);
/* The delivery jet_lanes_take() would return, left where it is; NULL when
 * none is ready. */
gpointer jet_lanes_peek(JetLanes *l);

typedef enum {
    JET_LANE_DONE = 0,   /* acked or dead-lettered: the lane moves on */
    JET_LANE_OUT,        /* back with the server (a NAK, a lapsed lease, an unconfirmed capture):
                            the lane waits for its redelivery, or for the ack floor to pass it */
} JetLaneSettled;

/* The delivery taken as (item, seq) is settled.  due_us: OUT only, when
 * the server should send it again (the NAK's delay; for a lapsed lease,
 * AckWait). */
void jet_lanes_settled(JetLanes *l, gpointer item, guint64 seq, JetLaneSettled how, gint64 due_us);

/* --- what this run cannot see ------------------------------------------- */

/* At start: sequences in (floor, delivered] were delivered before this run
 * and may be unacked; they are unknown until resolved or passed. */
void jet_lanes_recover(JetLanes *l, guint64 floor, guint64 delivered);
/* A delivery was lost on the way (a gap in the consumer's delivery
 * sequence): if it was a first delivery its sequence lies after the last
 * first delivery seen and before the next one, so that span becomes
 * unknown when the next first delivery arrives; until then, nothing past
 * the last first delivery is handed out. */
void jet_lanes_gap(JetLanes *l);
/* The lowest unknown sequence that holds a waiting delivery back: TRUE and
 * *seq when its key must be read; FALSE when nothing waits on one. */
gboolean jet_lanes_next_unresolved(JetLanes *l, guint64 *seq);
/* Its key, as read from the stream: pending FALSE when it cannot be
 * pending (deleted, not on the consumer's filter); else key/len as for
 * jet_lanes_offer.  It then holds its lane like a message given back. */
void jet_lanes_resolve(JetLanes *l, guint64 seq, gboolean pending, const char *key, gsize len);
/* The consumer's ack floor: nothing at or below it is unsettled. */
void jet_lanes_floor(JetLanes *l, guint64 floor);

/* --- counts and reports -------------------------------------------------- */

typedef struct {
    guint lanes;          /* lanes with anything in them */
    guint ready;          /* handed out next */
    guint busy;           /* taken, not yet settled */
    guint waiting;        /* behind an earlier message of their lane */
    guint held;           /* of them, in lanes whose head is given back or unknown (the bound counts these) */
    guint out;            /* given back to the server, holding their lane */
    guint unknown_heads;  /* resolved unknown sequences holding a lane */
    gboolean blocked_on_unknown;   /* something waits for a key to be read */
} JetLaneCounts;

void jet_lanes_counts(const JetLanes *l, JetLaneCounts *out);

/* Lane heads given back to the server that should be back by now_us
 * (unknown heads always count: they come back after AckWait). */
guint jet_lanes_due(const JetLanes *l, gint64 now_us);

/* The lane that holds sequence seq, for a floor report: TRUE with its key
 * escaped for a log line ("(no key)" for the keyless lane), what seq is
 * there ("in a handler", "given back", ...) and how many wait behind it. */
gboolean jet_lanes_describe(const JetLanes *l, guint64 seq, char **key, const char **state, guint *behind);

/* Drain: one delivery not handed out (ready or waiting), removed; NULL
 * when none is left.  Deliveries in a handler stay. */
gpointer jet_lanes_pop_waiting(JetLanes *l, guint64 *seq);

#endif
