/* Per-key lanes in the mock host (mock.h, "Lanes"; docs/mock.md, "Lanes").
 *
 * The daemon's own lane table (lanes.c) and key extraction (lane_key.c),
 * driven one delivery at a time by a test.  What is the mock's: the table
 * hands a message out when its turn comes, and the mock runs it at once
 * when that message is the one being delivered; any other message whose
 * turn came (a successor released by its head's settlement) is taken from
 * the table — so its lane stays held, as by a message in a handler — and
 * waits in `released` until the test calls jet_mock_deliver_held().  One
 * call, one settlement: a test sees every step.
 *
 * The mock settles everything itself and knows every sequence it was
 * given, so the table's recovery side (unknown ranges, gaps, the ack floor)
 * is not used: nothing is unknown here. */
#include "mock_private.h"

#include <string.h>

static void item_free(LaneItem *it)
{
    jet_mock_msg_free(it->msg);
    g_free(it);
}

void jet__mock_lanes_start(jet_mock *m)
{
    if (m->config->lane_key.kind == JET_LANE_KEY_OFF)
        return;
    m->lanes = jet_lanes_new();
    m->lane_of = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)g_bytes_unref);
    m->released = g_ptr_array_new();
}

void jet__mock_lanes_stop(jet_mock *m)
{
    if (m->lanes == NULL)
        return;
    for (guint i = 0; i < m->released->len; i++)
        item_free(g_ptr_array_index(m->released, i));
    g_ptr_array_unref(m->released);
    m->released = NULL;
    /* The table frees no item: take back every one it still keeps. */
    LaneItem *it;
    while ((it = jet_lanes_pop_waiting(m->lanes, NULL)) != NULL)
        item_free(it);
    g_clear_pointer(&m->lanes, jet_lanes_free);
    g_clear_pointer(&m->lane_of, g_hash_table_unref);
}

/* What the table hands out goes to `released`: taken there, so its lane
 * stays held until it has run and settled. */
static void take_ready(jet_mock *m)
{
    LaneItem *it;
    while ((it = jet_lanes_take(m->lanes, NULL)) != NULL)
        g_ptr_array_add(m->released, it);
}

/* The lowest sequence the table holds in lane `key`: its head. */
static guint64 lane_head(const jet_mock *m, GBytes *key)
{
    guint64 head = 0;
    GHashTableIter iter;
    gpointer k, v;
    g_hash_table_iter_init(&iter, m->lane_of);
    while (g_hash_table_iter_next(&iter, &k, &v)) {
        guint64 seq = *(const guint64 *)k;
        if (g_bytes_equal(v, key) && (head == 0 || seq < head))
            head = seq;
    }
    return head;
}

/* The daemon's words (lane_key.h): no lane can be chosen honestly. */
static char *ambiguous_text(const JetLaneKeySpec *spec)
{
    return jet_lane_key_ambiguous_reason(spec);
}

static gboolean ambiguous(const jet_mock *m, const jet_mock_msg *b)
{
    const char *key;
    gsize len;
    return jet_lane_key_of(&m->config->lane_key, b->subject, b->headers, &key, &len) == JET_LANE_AMBIGUOUS;
}

/* How it ran, in its lane: a message given back (RETRY, POSTPONE, or a
 * capture that could not be built and so was never acked) keeps holding
 * the lane; one settled for good releases its successor.  Frees it. */
static void lane_settled(jet_mock *m, LaneItem *it, const jet_mock_settlement *out)
{
    /* A fault point leaves it on the consumer too: it comes again. */
    gboolean given_back = out->action == JET_MOCK_RETRY || out->action == JET_MOCK_POSTPONE ||
                          strcmp(out->outcome, "stranded") == 0 || strcmp(out->outcome, "crashed") == 0 ||
                          strcmp(out->outcome, "ack-lost") == 0;
    guint64 delay_us = MIN(out->delay_ms, (guint64)G_MAXINT32) * 1000;
    jet_lanes_settled(m->lanes, it, it->seq, given_back ? JET_LANE_OUT : JET_LANE_DONE,
                      jet_mock_clock_ns(m) / 1000 + (gint64)delay_us);
    if (!given_back)
        g_hash_table_remove(m->lane_of, &it->seq);
    item_free(it);
    take_ready(m);
}

/* Why a message in a lane is dead-lettered without its handler: its key
 * cannot be told (the daemon's words), or NULL. */
static char *lane_malformed(const jet_mock *m, const jet_mock_msg *b)
{
    return ambiguous(m, b) ? ambiguous_text(&m->config->lane_key) : NULL;
}

/* Runs b (a delivery of its sequence) and settles it in its lane. */
static int run_item(jet_mock *m, LaneItem *it, const jet_mock_msg *b, jet_mock_settlement *out)
{
    g_autofree char *malformed = lane_malformed(m, b);
    int rc = jet__mock_run(m, b, malformed, out);
    lane_settled(m, it, out);
    return rc;
}

/* Where a delivery of b goes: its lane's turn came (TRUE, *item: taken, so
 * the lane stays held while it runs), no lane can be told (TRUE, *item
 * NULL, *no_lane: why; dead-lettered at once), or it waits behind its lane's
 * head (FALSE, out filled as held). */
static gboolean admit(jet_mock *m, const jet_mock_msg *b, LaneItem **item, char **no_lane, jet_mock_settlement *out)
{
    *item = NULL;
    *no_lane = NULL;
    const char *key = NULL;
    gsize len = 0;
    guint64 seq = b->stream_seq;
    if (jet_lane_key_of(&m->config->lane_key, b->subject, b->headers, &key, &len) == JET_LANE_AMBIGUOUS) {
        GBytes *known = g_hash_table_lookup(m->lane_of, &seq);
        if (known == NULL) {
            *no_lane = ambiguous_text(&m->config->lane_key);   /* dead-lettered at once */
            return TRUE;
        }
        /* A message already in a lane (its headers changed between
         * deliveries): it keeps that lane, and is dead-lettered in its
         * turn, which settles its place there. */
        key = g_bytes_get_data(known, &len);
        if (len == 0)
            key = NULL;
    }
    /* Its turn had come and it waited for jet_mock_deliver_held(): this
     * delivery of it runs instead. */
    for (guint i = 0; i < m->released->len; i++) {
        LaneItem *it = g_ptr_array_index(m->released, i);
        if (it->seq == seq) {
            *item = g_ptr_array_remove_index(m->released, i);
            return TRUE;
        }
    }
    /* A real key is never empty (lane_key.h): "" names the keyless lane. */
    g_autoptr(GBytes) lane = g_bytes_new(key, len);
    LaneItem *it = g_new0(LaneItem, 1);
    it->msg = jet__mock_msg_copy(b);
    it->seq = seq;
    LaneItem *replaced = jet_lanes_offer(m->lanes, key, len, seq, b->deliveries <= 1, it);
    if (replaced != NULL)
        item_free(replaced);   /* an earlier delivery of it, still held: this one replaces it */
    if (!g_hash_table_contains(m->lane_of, &seq))
        g_hash_table_insert(m->lane_of, g_memdup2(&seq, sizeof seq), g_bytes_ref(lane));
    take_ready(m);
    if (g_ptr_array_remove(m->released, it)) {
        *item = it;
        return TRUE;
    }

    /* Held: an earlier message of its lane has not settled for good. */
    memset(out, 0, sizeof *out);
    out->action = JET_MOCK_HELD;
    out->action_name = "held";
    out->cause = "none";
    out->outcome = "held";
    out->verdict = -1;
    out->now_ns = jet_mock_clock_ns(m);
    out->stream_seq = seq;
    out->deliveries = b->deliveries;
    out->held_behind = lane_head(m, lane);
    return FALSE;
}

int jet__mock_lanes_deliver(jet_mock *m, const jet_mock_msg *b, jet_mock_settlement *out)
{
    LaneItem *it;
    g_autofree char *no_lane = NULL;
    if (!admit(m, b, &it, &no_lane, out))
        return JET_MOCK_OK;
    if (it == NULL)
        return jet__mock_run(m, b, no_lane, out);
    return run_item(m, it, b, out);
}

int jet__mock_lanes_deliver_batch(jet_mock *m, const jet_mock_msg *const *msgs, size_t n, jet_mock_settlement *outs)
{
    /* Each message offered to its lane in turn: the ones whose turn came
     * run in one batch, which therefore never holds two of a key (the
     * second waits behind the first, as in the daemon's runners). */
    g_autofree LaneItem **items = g_new0(LaneItem *, n);
    g_autofree const jet_mock_msg **run = g_new(const jet_mock_msg *, n);
    g_autofree char **malformed = g_new0(char *, n);
    g_autofree size_t *which = g_new(size_t, n);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        LaneItem *it;
        char *no_lane;
        if (!admit(m, msgs[i], &it, &no_lane, &outs[i]))
            continue;
        items[k] = it;
        run[k] = msgs[i];
        malformed[k] = it != NULL ? lane_malformed(m, msgs[i]) : no_lane;
        which[k++] = i;
    }
    if (k == 0)
        return JET_MOCK_OK;
    g_autofree jet_mock_settlement *ran = g_new0(jet_mock_settlement, k);
    int rc = jet__mock_run_batch(m, run, k, (const char *const *)malformed, ran);
    for (size_t j = 0; j < k; j++) {
        outs[which[j]] = ran[j];
        if (items[j] != NULL)
            lane_settled(m, items[j], &ran[j]);
        g_free(malformed[j]);
    }
    return rc;
}

static int deliver_held(jet_mock *m, jet_mock_settlement *out)
{
    if (out == NULL)
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_held: the settlement must not be NULL");
    memset(out, 0, sizeof *out);
    if (m->state != MOCK_STARTED)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_deliver_held: the mock is not started (jet_mock_start)");
    if (m->lanes == NULL)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_deliver_held: the binding has no lanes (set the "
                              "policy key, e.g. header:NAME)");
    if (m->released->len == 0)
        return jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_deliver_held: no held message is ready (%zu held "
                              "behind the head of their lane; a head given back must be redelivered and "
                              "settle as ack or capture first)", jet_mock_held_count(m));
    /* Stream order across the lanes whose turn came. */
    guint pick = 0;
    for (guint i = 1; i < m->released->len; i++)
        if (((LaneItem *)g_ptr_array_index(m->released, i))->seq <
            ((LaneItem *)g_ptr_array_index(m->released, pick))->seq)
            pick = i;
    LaneItem *it = g_ptr_array_remove_index(m->released, pick);
    return run_item(m, it, it->msg, out);
}

int jet_mock_deliver_held_sized(jet_mock *m, jet_mock_settlement *out, size_t out_size)
{
    g_return_val_if_fail(m != NULL, JET_MOCK_EINVAL);
    if (out != NULL && out_size < JET_MOCK_SETTLEMENT_SIZE_1_0) {
        memset(out, 0, out_size);
        return jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_deliver_held: a settlement of %zu bytes is smaller "
                              "than any header ever made it (%zu)", out_size, (size_t)JET_MOCK_SETTLEMENT_SIZE_1_0);
    }
    jet_mock_settlement full;
    int rc = deliver_held(m, out != NULL ? &full : NULL);
    m->fault = 0;   /* a fault is for one call, whether it ran a message or not */
    if (out != NULL)
        jet__mock_settlement_out(&full, out, out_size);
    return rc;
}

/* The symbol a binary built against a header without the size calls: it
 * came with held_behind, so its callers have room for it. */
int (jet_mock_deliver_held)(jet_mock *m, jet_mock_settlement *out)
{
    return jet_mock_deliver_held_sized(m, out, JET_MOCK_SETTLEMENT_SIZE_1_1);
}

size_t jet_mock_held_count(const jet_mock *m)
{
    g_return_val_if_fail(m != NULL, 0);
    if (m->lanes == NULL)
        return 0;
    JetLaneCounts c;
    jet_lanes_counts(m->lanes, &c);
    return (size_t)c.waiting + c.ready + m->released->len;
}
