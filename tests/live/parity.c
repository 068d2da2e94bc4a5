/* Parity: one sequence of messages and verdicts, run through the
 * mock host and through the real host on a real nats-server, yields the same
 * settlements, delivery by delivery, and the same dead-letter records.
 *
 * The plugin is the shipped retry.so: each message says in its
 * Jethost-Fault header what should happen to it, and fail=N and
 * postpone=D;times=N read the attempt ledger (msg_failures, msg_postpones),
 * so the ledger's counts are compared too, not only the decision code.
 *
 * (a) the real host: the in-process engine of tests/rig.h with the ledger on,
 *     observed through its settlement hook (JetEngineSettleHook);
 * (b) the mock: jet_mock_deliver, walking each message's redeliveries with
 *     jet_mock_msg_redeliver as the server and the ledger would.
 * Compared: per message, the list of (deliveries, action, delay, cause,
 * failure number, reason); and each DLQ record as stored against the mock's
 * preview, every header name, and every value but the times and the host. */
#include "rig.h"
#include "capture.h"

#include <jethost/mock.h>
#include <string.h>

#define RUNGS "100ms, 200ms"
#define MAX_ATTEMPTS "3"

typedef struct {
    const char *subject;
    const char *fault;        /* Jethost-Fault */
    const char *msg_id;       /* the original's Nats-Msg-Id, or NULL */
    const char *expect;       /* the actions, for a parity that is not vacuous */
} Case;

static const Case cases[] = {
    { "orders.ack", "ack", NULL, "ack" },
    { "orders.reject", "reject;reason=bad order", "app-2", "capture" },
    { "orders.retry-twice", "fail=2", NULL, "retry retry ack" },
    { "orders.postpone-once", "postpone=1s;times=1", NULL, "postpone ack" },
    { "orders.exhausted", "fail;reason=db down", "app-5", "retry retry capture" },
};
#define N_CASES G_N_ELEMENTS(cases)

/* One settlement, as a line both sides can print the same way. */
static char *settled_line(guint32 deliveries, const char *action, guint64 delay_ms, const char *cause,
                          gboolean is_failure, guint32 failure_number, const char *reason)
{
    return g_strdup_printf("delivery %u: %s delay %" G_GUINT64_FORMAT " cause %s failure %u%s reason '%s'",
                           deliveries, action, delay_ms, cause, is_failure ? failure_number : 0,
                           is_failure ? "" : " (not a failure)", reason);
}

/* --- (a) the real host ------------------------------------------------------ */

typedef struct {
    GMutex lock;
    GPtrArray *lines[N_CASES];   /* per stream seq 1..N_CASES */
    GString *actions[N_CASES];
    guint terminal;
    guint unexpected;
} Observed;

static void on_settled(guint64 seq, guint32 deliveries, const JetSettleAction *a, gpointer data)
{
    Observed *o = data;
    g_mutex_lock(&o->lock);
    if (seq < 1 || seq > N_CASES) {
        o->unexpected++;
    } else {
        g_ptr_array_add(o->lines[seq - 1], settled_line(deliveries, jet_action_name(a->kind), a->delay_ms,
                                                        jet_cause_name(a->cause), a->is_failure,
                                                        a->failure_number, a->reason));
        g_string_append_printf(o->actions[seq - 1], "%s%s", o->actions[seq - 1]->len ? " " : "",
                               jet_action_name(a->kind));
        if (a->kind == JET_ACTION_ACK || a->kind == JET_ACTION_CAPTURE)
            o->terminal++;
    }
    g_mutex_unlock(&o->lock);
}

static gboolean all_terminal(gpointer data)
{
    Observed *o = data;
    g_mutex_lock(&o->lock);
    gboolean done = o->terminal >= N_CASES;
    g_mutex_unlock(&o->lock);
    return done;
}

static void publish_case(jsCtx *js, const Case *c)
{
    natsMsg *m = NULL;
    g_autofree char *payload = g_strdup_printf("{\"case\": \"%s\"}", c->subject);
    g_assert_cmpint(natsMsg_Create(&m, c->subject, NULL, payload, (int)strlen(payload)), ==, NATS_OK);
    g_assert_cmpint(natsMsgHeader_Set(m, "Jethost-Fault", c->fault), ==, NATS_OK);
    g_assert_cmpint(natsMsgHeader_Set(m, "X-App", "parity"), ==, NATS_OK);
    if (c->msg_id != NULL)
        g_assert_cmpint(natsMsgHeader_Set(m, "Nats-Msg-Id", c->msg_id), ==, NATS_OK);
    jsPubAck *pa = NULL;
    g_assert_cmpint(js_PublishMsg(&pa, js, m, NULL, NULL), ==, NATS_OK);
    jsPubAck_Destroy(pa);
    natsMsg_Destroy(m);
}

/* --- (b) the mock ------------------------------------------------------------ */

typedef struct {
    GPtrArray *lines[N_CASES];
    GString *actions[N_CASES];
    GPtrArray *record[N_CASES];  /* the preview of a capture: name, value alternating */
    char *record_subject[N_CASES];
} Mocked;

static void run_mock(Mocked *mk)
{
    g_autofree char *path = jet_test_plugin_copy("retry");
    char err[512];
    jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
    if (m == NULL)
        g_error("mock: load %s: %s", path, err);
    g_assert_cmpint(jet_mock_set_binding(m, "t", "ORDERS", "c"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", RUNGS), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "max_attempts", MAX_ATTEMPTS), ==, JET_MOCK_OK);
    if (jet_mock_start(m) != JET_MOCK_OK)
        g_error("mock: start: %s", jet_mock_error(m));
    for (guint i = 0; i < N_CASES; i++) {
        const Case *c = &cases[i];
        mk->lines[i] = g_ptr_array_new_with_free_func(g_free);
        mk->actions[i] = g_string_new(NULL);
        jet_mock_msg *b = jet_mock_msg_new(m, c->subject);
        g_autofree char *payload = g_strdup_printf("{\"case\": \"%s\"}", c->subject);
        jet_mock_msg_set_text(b, payload);
        jet_mock_msg_set_seq(b, i + 1, i + 1);
        jet_mock_msg_add_header(b, "Jethost-Fault", c->fault);
        jet_mock_msg_add_header(b, "X-App", "parity");
        if (c->msg_id != NULL)
            jet_mock_msg_add_header(b, "Nats-Msg-Id", c->msg_id);
        jet_mock_settlement s;
        for (guint n = 0;; n++) {
            g_assert_cmpuint(n, <, 10);
            g_assert_cmpint(jet_mock_deliver(m, b, &s), ==, JET_MOCK_OK);
            g_ptr_array_add(mk->lines[i], settled_line(s.deliveries, s.action_name, s.delay_ms, s.cause,
                                                       s.is_failure, s.failure_number, s.reason));
            g_string_append_printf(mk->actions[i], "%s%s", mk->actions[i]->len ? " " : "", s.action_name);
            if (jet_mock_msg_redeliver(b, &s) != JET_MOCK_OK)
                break;
            jet_mock_clock_advance_ms(m, s.delay_ms);
        }
        if (s.action == JET_MOCK_CAPTURE) {
            g_assert_nonnull(s.dlq_subject);
            mk->record_subject[i] = g_strdup(s.dlq_subject);
            mk->record[i] = g_ptr_array_new_with_free_func(g_free);
            for (size_t h = 0; h < s.n_dlq_headers; h++) {
                g_ptr_array_add(mk->record[i], g_strdup(s.dlq_headers[h].name));
                g_ptr_array_add(mk->record[i], g_strdup(s.dlq_headers[h].value));
            }
        }
        jet_mock_msg_free(b);
    }
    jet_mock_free(m);
}

/* --- comparing ---------------------------------------------------------------- */

static char *joined(GPtrArray *lines)
{
    g_ptr_array_add(lines, NULL);
    char *s = g_strjoinv("\n", (char **)lines->pdata);
    g_ptr_array_remove_index(lines, lines->len - 1);
    return s;
}

/* The times and the host differ by design (the mock's clock, "jethost-mock");
 * their names must still be the same. */
static gboolean value_differs_by_design(const char *name)
{
    /* The stream's creation time (in the Msg-Id too) is the real stream's
     * in one and the mock's fixed one in the other. */
    return strcmp(name, JET_HDR_CAPTURED) == 0 || strcmp(name, JET_HDR_FIRST_FAILURE) == 0 ||
           strcmp(name, JET_HDR_ENQUEUED) == 0 || strcmp(name, JET_HDR_HOST) == 0 ||
           strcmp(name, JET_HDR_ORIGIN_STREAM_CREATED) == 0 || strcmp(name, "Nats-Msg-Id") == 0;
}

static gint by_text(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

/* "name: value" lines, sorted (header order carries no meaning in NATS). */
static char *record_text(GPtrArray *hs)
{
    g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i + 1 < hs->len; i += 2) {
        const char *name = g_ptr_array_index(hs, i);
        const char *value = g_ptr_array_index(hs, i + 1);
        g_ptr_array_add(lines, g_strdup_printf("%s: %s", name, value_differs_by_design(name) ? "*" : value));
    }
    g_ptr_array_sort(lines, by_text);
    return joined(lines);
}

static const char *header(GPtrArray *hs, const char *name)
{
    for (guint i = 0; i + 1 < hs->len; i += 2)
        if (strcmp(g_ptr_array_index(hs, i), name) == 0)
            return g_ptr_array_index(hs, i + 1);
    return NULL;
}

static guint64 dlq_count(jsCtx *js)
{
    jsStreamInfo *si = NULL;
    if (js_GetStreamInfo(&si, js, JET_DLQ_DEFAULT_STREAM, NULL, NULL) != NATS_OK)
        return 0;
    guint64 n = si->State.Msgs;
    jsStreamInfo_Destroy(si);
    return n;
}

static void test_parity(void)
{
    /* (b) first: it needs no server. */
    Mocked mk = { 0 };
    run_mock(&mk);

    /* (a) */
    Observed o = { 0 };
    g_mutex_init(&o.lock);
    for (guint i = 0; i < N_CASES; i++) {
        o.lines[i] = g_ptr_array_new_with_free_func(g_free);
        o.actions[i] = g_string_new(NULL);
    }
    Rig r = { 0 };
    r.settle_hook = on_settled;
    r.settle_data = &o;
    rig_server(&r);
    for (guint i = 0; i < N_CASES; i++)
        publish_case(r.js, &cases[i]);
    rig_engine_plugin(&r, "retry", "rungs = " RUNGS "\nmax_attempts = " MAX_ATTEMPTS "\n");
    g_assert_true(jet_test_wait_until(all_terminal, &o, 30000));
    FloorWait fw = { &r, N_CASES };
    g_assert_true(jet_test_wait_until(floor_reached, &fw, 30000));
    rig_stop(&r);
    g_assert_cmpuint(o.unexpected, ==, 0);

    /* The settlements, delivery by delivery. */
    guint n_captures = 0;
    for (guint i = 0; i < N_CASES; i++) {
        g_test_message("%s (%s)", cases[i].subject, cases[i].fault);
        g_autofree char *real = joined(o.lines[i]);
        g_autofree char *mock = joined(mk.lines[i]);
        g_assert_cmpstr(real, ==, mock);
        g_assert_cmpstr(o.actions[i]->str, ==, cases[i].expect);
        g_assert_cmpstr(mk.actions[i]->str, ==, cases[i].expect);
        if (mk.record[i] != NULL)
            n_captures++;
    }
    g_assert_cmpuint(n_captures, ==, 2);

    /* The dead-letter records as stored, against the mock's preview. */
    g_assert_cmpuint(dlq_count(r.js), ==, n_captures);
    for (guint64 dseq = 1; dseq <= n_captures; dseq++) {
        natsMsg *rec = NULL;
        g_assert_cmpint(js_GetMsg(&rec, r.js, JET_DLQ_DEFAULT_STREAM, dseq, NULL, NULL), ==, NATS_OK);
        g_autoptr(GPtrArray) stored = jet_capture_msg_headers(rec);
        const char *oseq = header(stored, JET_HDR_ORIGIN_SEQ);
        g_assert_nonnull(oseq);
        guint64 seq = g_ascii_strtoull(oseq, NULL, 10);
        g_assert_cmpuint(seq, >=, 1);
        g_assert_cmpuint(seq, <=, N_CASES);
        GPtrArray *preview = mk.record[seq - 1];
        g_assert_nonnull(preview);
        g_test_message("record %" G_GUINT64_FORMAT ": %s", dseq, cases[seq - 1].subject);
        g_assert_cmpstr(natsMsg_GetSubject(rec), ==, mk.record_subject[seq - 1]);
        g_autofree char *payload = g_strdup_printf("{\"case\": \"%s\"}", cases[seq - 1].subject);
        g_assert_cmpmem(natsMsg_GetData(rec), natsMsg_GetDataLength(rec), payload, strlen(payload));
        g_autofree char *real = record_text(stored);
        g_autofree char *mock = record_text(preview);
        g_assert_cmpstr(real, ==, mock);
        /* Not vacuous: the rules the record exists for are there. */
        g_assert_cmpstr(header(stored, "Jethost-Orig-Nats_Msg-Id"), ==, cases[seq - 1].msg_id);
        g_assert_cmpstr(header(stored, "Jethost-Orig-Jethost-Fault"), ==, cases[seq - 1].fault);
        g_assert_cmpstr(header(stored, JET_HDR_HOST), ==, "rig");
        g_assert_cmpstr(header(preview, JET_HDR_HOST), ==, "jethost-mock");
        g_autofree char *msg_id = g_strdup_printf("jethost:ORDERS.c:%" G_GUINT64_FORMAT ":", seq);
        g_assert_true(g_str_has_prefix(header(stored, "Nats-Msg-Id"), msg_id));
        natsMsg_Destroy(rec);
    }

    rig_free(&r);
    for (guint i = 0; i < N_CASES; i++) {
        g_ptr_array_unref(o.lines[i]);
        g_string_free(o.actions[i], TRUE);
        g_ptr_array_unref(mk.lines[i]);
        g_string_free(mk.actions[i], TRUE);
        if (mk.record[i] != NULL)
            g_ptr_array_unref(mk.record[i]);
        g_free(mk.record_subject[i]);
    }
    g_mutex_clear(&o.lock);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/parity/mock-and-host", test_parity);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
