/*
 * tally: what an ordered reader handled, counted the same way on both sides of
 * the ordered and KV cases of the benchmark (the noop plugin inside jethost,
 * and rawloop's nats.c readers), so that their figures can be compared
 * line by line.
 *
 * A run expects the stream sequences (KV revisions) 1..expect, each once and
 * in increasing order.  Optionally a prefix 1..mark is timed on its own: the
 * current values of a KV watch, which the updates then follow.  Everything is
 * counted per handled message: duplicates, steps backwards, sequences outside
 * 1..expect, and the consumers the messages came from (a reader that
 * re-creates its consumer after a gap shows more than one).
 *
 * The times are CLOCK_REALTIME, so that the script can also measure from the
 * moment it started the process.  Header-only: the plugin and rawloop are
 * separate binaries built with different flags.
 */
#ifndef JET_BENCH_TALLY_H
#define JET_BENCH_TALLY_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TALLY_MARK = 1, TALLY_DONE = 2 };

typedef struct bench_tally {
    uint64_t expect, mark;
    unsigned char *seen;            /* one bit per sequence 1..expect */
    uint64_t handled, distinct, distinct_mark;
    uint64_t dups, backwards, outside, consumers;
    uint64_t last_seq;
    int64_t first_ns, last_ns;      /* the first and the latest handled */
    int64_t mark_ns, after_ns;      /* 1..mark complete; the first past mark */
    int64_t done_ns;                /* 1..expect complete */
    char consumer[256];             /* the consumer of the latest message */
} bench_tally;

static inline int64_t tally_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* 0, or -1 when out of memory. */
static inline int tally_init(bench_tally *t, uint64_t expect, uint64_t mark)
{
    memset(t, 0, sizeof *t);
    t->expect = expect;
    t->mark = mark <= expect ? mark : expect;
    t->seen = calloc((size_t)(expect / 8 + 1), 1);
    return t->seen != NULL ? 0 : -1;
}

static inline void tally_free(bench_tally *t)
{
    free(t->seen);
    t->seen = NULL;
}

/* Counts one handled message; returns TALLY_MARK and/or TALLY_DONE when this
 * message completed 1..mark or 1..expect. */
static inline int tally_add(bench_tally *t, uint64_t seq, const char *consumer, size_t consumer_len)
{
    int64_t now = tally_now_ns();
    int events = 0;
    if (t->handled++ == 0)
        t->first_ns = now;
    t->last_ns = now;
    if (seq <= t->last_seq)
        t->backwards++;
    t->last_seq = seq;
    if (consumer != NULL) {
        if (consumer_len >= sizeof t->consumer)
            consumer_len = sizeof t->consumer - 1;
        if (strncmp(t->consumer, consumer, consumer_len) != 0 || t->consumer[consumer_len] != '\0') {
            memcpy(t->consumer, consumer, consumer_len);
            t->consumer[consumer_len] = '\0';
            t->consumers++;
        }
    }
    if (seq == 0 || seq > t->expect) {
        t->outside++;
        return 0;
    }
    unsigned char bit = (unsigned char)(1u << (seq % 8));
    if (t->seen[seq / 8] & bit) {
        t->dups++;
        return 0;
    }
    t->seen[seq / 8] |= bit;
    t->distinct++;
    if (seq > t->mark && t->after_ns == 0 && t->mark_ns != 0)
        t->after_ns = now;
    if (seq <= t->mark && ++t->distinct_mark == t->mark) {
        t->mark_ns = now;
        events |= TALLY_MARK;
    }
    if (t->distinct == t->expect) {
        t->done_ns = now;
        events |= TALLY_DONE;
    }
    return events;
}

static inline double tally_rate(uint64_t n, int64_t from_ns, int64_t to_ns)
{
    return n > 1 && from_ns > 0 && to_ns > from_ns ? (double)(n - 1) * 1e9 / (double)(to_ns - from_ns) : 0.0;
}

/* The counts as key=value fields, space-separated, for the RESULT lines.
 * rate: messages a second from the first handled to the last of 1..expect
 * (or to the latest handled, when some never came); mark_rate: over 1..mark;
 * upd_rate: from the first past mark to the last of 1..expect. */
static inline void tally_format(const bench_tally *t, char *buf, size_t len)
{
    int64_t end = t->done_ns != 0 ? t->done_ns : t->last_ns;
    snprintf(buf, len,
             "expect=%" PRIu64 " handled=%" PRIu64 " distinct=%" PRIu64 " dups=%" PRIu64 " missing=%" PRIu64
             " backwards=%" PRIu64 " outside=%" PRIu64 " consumers=%" PRIu64 " mark=%d done=%d rate=%.0f"
             " mark_rate=%.0f upd_rate=%.0f first_ns=%" PRId64 " mark_ns=%" PRId64 " done_ns=%" PRId64,
             t->expect, t->handled, t->distinct, t->dups, t->expect - t->distinct, t->backwards, t->outside,
             t->consumers, t->mark_ns != 0 ? 1 : 0, t->done_ns != 0 ? 1 : 0,
             tally_rate(t->distinct, t->first_ns, end), tally_rate(t->mark, t->first_ns, t->mark_ns),
             tally_rate(t->expect - t->mark, t->after_ns, t->done_ns), t->first_ns, t->mark_ns, t->done_ns);
}

#endif
