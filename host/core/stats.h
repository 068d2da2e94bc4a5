/* A binding's counters (docs/architecture.md, "Counters").
 *
 * Each worker adds to a JetStats of its own, so the hot path takes no lock
 * and shares no cache line with another worker; threads that are not a
 * worker (the lease keeper, recovery) add to one more, shared, set.  Adds
 * are relaxed atomics: a reader summing while workers count sees each
 * counter whole, never a torn value, and the sum is as of some moment
 * during the read.  Every member is a guint64, so a set can be walked as an
 * array (jet_stats_merge). */
#ifndef JET_STATS_H
#define JET_STATS_H

#include <glib.h>

/* Room for every JetCaptureCause (settle.h asserts it fits). */
#define JET_STATS_CAUSES 12
/* Histogram slots: the finite bounds of jet_stats_bounds_us, then +Inf. */
#define JET_STATS_BOUNDS 15
#define JET_STATS_BUCKETS (JET_STATS_BOUNDS + 1)

typedef struct {
    guint64 pulls;             /* pull requests issued */
    guint64 early_pulls;       /* of them, issued at the threshold while another was outstanding */
    guint64 pulls_with_ack;    /* of them, sent with the last message's ack in one "+NXT" */
    guint64 messages;          /* deliveries handed to the plugin */
    guint64 acked, retried, postponed, released, dead_lettered, stranded, uncertain;
    guint64 capture_collisions;   /* a duplicate pub-ack that named another message's record */
    guint64 client_discarded;     /* deliveries nats.c destroyed before the host saw them */
    guint64 hung_handlers;        /* handlers that passed handler_timeout */
    guint64 released_behind_hung; /* messages released because they waited behind one */
    guint64 acks_grouped;      /* acks that waited to be sent with the next ones */
    guint64 capture_failed;    /* captures that failed and kept the message for a later try */
    guint64 handler_failed;    /* plugin errors and RETRY verdicts */
    guint64 statuses;          /* status messages received (heartbeats included) */
    guint64 stale_statuses;    /* statuses answering a pull already over */
    guint64 late_messages;     /* deliveries for a pull already over (handled all the same) */
    guint64 missed_heartbeats; /* pulls ended because the server went quiet */
    guint64 resubscribes;
    guint64 lease_extensions;  /* +WPI sent */
    guint64 lease_lapsed;      /* handlers past the time limit */
    guint64 max_held;          /* most messages held by one worker at a take */
    guint64 not_jetstream;     /* messages on the inbox that were not deliveries */
    guint64 refused_pulls;     /* the server found the pull invalid for the consumer */
    guint64 observed_floor;    /* the last ack floor read from consumer info */
    guint64 ledger_fallbacks;  /* deliveries settled without the ledger (unreachable) */
    guint64 suspects;          /* deliveries handled alone (crash attribution) */
    guint64 strikes;           /* suspects that found the isolation marker set */
    guint64 poison;            /* captured as poison without running the handler */
    guint64 stale_handles;     /* plugin errors: host calls on a jet_msg whose handle() had returned, refused */
    guint64 ordered_consumers; /* ordered: consumers created (the first one and every re-creation) */
    guint64 gaps;              /* ordered: consumer-sequence gaps seen (each re-creates) */
    guint64 superseded;        /* ordered, kv: "current values" passed over, their subject having a later one */
    guint64 initial_values;    /* kv: current values handled before the watch caught up */
    guint64 initial_done;      /* kv: current values all handled (an empty bucket too): once per start and per new life */
    guint64 new_lives;         /* ordered, kv: the stream found deleted and created again (or its sequences fell back) */
    guint64 published;         /* plugin publishes that got their pub-ack (forward.h) */
    guint64 publish_failures;  /* plugin publishes that failed: the delivery became a retry */
    guint64 lane_waits;        /* lanes: deliveries that waited behind an earlier one of their key */
    guint64 lane_gaps;         /* lanes: deliveries lost on the way (delivery-sequence gaps) */
    guint64 lane_reads;        /* lanes: unknown sequences whose key was read from the stream */
    guint64 lane_bound;        /* lanes: times pulls stopped at max_lane_held */
    guint64 pins_learned;      /* pinned group: pin ids the server gave this host's pulls */
    guint64 pins_refused;      /* pinned group: pulls refused with 423 (the pin expired or moved) */
    guint64 completions_refused;   /* max_in_flight: msg_complete() calls on a delivery no longer pending */
    guint64 pending_hung;          /* max_in_flight: pending deliveries past handler_timeout (their lease stopped) */
    guint64 set_aside;             /* ordered, kv: batch members handed again, one before them having waited in place */
    /* Captures acked, by JetCaptureCause (settle.h); dead_lettered is their sum. */
    guint64 dead_lettered_cause[JET_STATS_CAUSES];
    /* Histograms for /metrics: non-cumulative bucket counts against
     * jet_stats_bounds_us (the last slot is +Inf) and the sum in µs. */
    guint64 handler_us[JET_STATS_BUCKETS];
    guint64 handler_us_sum;
    guint64 latency_us[JET_STATS_BUCKETS];   /* the stream's timestamp to the handler's start */
    guint64 latency_us_sum;
} JetStats;

/* Adds n to a counter of s (any thread). */
#define JET_STAT_ADD(s, field, n) ((void)__atomic_fetch_add(&(s)->field, (guint64)(n), __ATOMIC_RELAXED))
/* Raises a high-water mark of s to v (any thread). */
#define JET_STAT_MAX(s, field, v) jet_stats_raise(&(s)->field, (guint64)(v))

void jet_stats_raise(guint64 *mark, guint64 v);

/* The histograms' finite upper bounds, in µs, ascending. */
extern const guint64 jet_stats_bounds_us[JET_STATS_BOUNDS];
/* The slot a value of us falls in (le: the first bound >= us). */
guint jet_stats_bucket(guint64 us);
/* Counts one value into a histogram (hist: handler_us or latency_us) of s. */
#define JET_STAT_OBSERVE(s, hist, us)                                                   \
    do {                                                                                \
        guint64 jet__v = (guint64)(us);                                                 \
        JET_STAT_ADD(s, hist[jet_stats_bucket(jet__v)], 1);                             \
        JET_STAT_ADD(s, hist##_sum, jet__v);                                            \
    } while (0)

/* into += from, member by member; max_held takes the larger of the two,
 * observed_floor is left as it is (it is a reading, not a count). */
void jet_stats_merge(JetStats *into, const JetStats *from);

#endif
