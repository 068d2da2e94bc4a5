/* forward.so on the mock host (include/jethost/mock.h), loaded by path like
 * the daemon loads it: every template form and what it publishes (subject,
 * payload, the host's Nats-Msg-Id), hostile header values and subjects
 * turned into a failure with a reason (retry or reject, never a publish to
 * a bad subject, never a plugin error), templates refused at start, the
 * plugin's counters; then through the core with several threads at once,
 * and with a binding that allows the server's namespaces.  No server. */
#include "plugin_drive.h"

#include <jethost/mock.h>

/* forward.so with the subject template tmpl and, when not NULL,
 * on_bad_subject; binding "fw" on stream ORDERS, a short ladder. */
static jet_mock *start_forward(const char *tmpl, const char *on_bad)
{
    g_autofree char *path = jet_test_plugin_copy("forward");
    char err[512];
    jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
    if (m == NULL)
        g_error("load %s: %s", path, err);
    g_assert_cmpint(jet_mock_set_option(m, "subject", tmpl), ==, JET_MOCK_OK);
    if (on_bad != NULL)
        g_assert_cmpint(jet_mock_set_option(m, "on_bad_subject", on_bad), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "rungs", "100ms, 200ms"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_policy(m, "max_attempts", "3"), ==, JET_MOCK_OK);
    g_assert_cmpint(jet_mock_set_binding(m, "fw", "ORDERS", "fw"), ==, JET_MOCK_OK);
    int rc = jet_mock_start(m);
    if (rc != JET_MOCK_OK)
        g_error("start forward '%s': %s: %s", tmpl, jet_mock_strerror(rc), jet_mock_error(m));
    return m;
}

/* The error that refuses a template at start (init), or NULL when it starts. */
static char *start_error(const char *tmpl, const char *on_bad)
{
    g_autofree char *path = jet_test_plugin_copy("forward");
    char err[512];
    jet_mock *m = jet_mock_new_from_path(path, err, sizeof err);
    g_assert_nonnull(m);
    jet_mock_set_abort_on_violation(m, 0);
    if (tmpl != NULL)
        g_assert_cmpint(jet_mock_set_option(m, "subject", tmpl), ==, JET_MOCK_OK);
    if (on_bad != NULL)
        g_assert_cmpint(jet_mock_set_option(m, "on_bad_subject", on_bad), ==, JET_MOCK_OK);
    int rc = jet_mock_start(m);
    char *why = rc == JET_MOCK_OK ? NULL : g_strdup(jet_mock_error(m));
    jet_mock_free(m);
    return why;
}

/* Delivers b; it must be handled without breaking a rule. */
static void deliver(jet_mock *m, jet_mock_msg *b, jet_mock_settlement *s)
{
    g_assert_cmpint(jet_mock_deliver(m, b, s), ==, JET_MOCK_OK);
    g_assert_true(s->handled);
    g_assert_null(s->violation);
    g_assert_false(s->plugin_error);
}

static jet_mock_msg *msg(jet_mock *m, const char *subject, const char *text)
{
    jet_mock_msg *b = jet_mock_msg_new(m, subject);
    jet_mock_msg_set_text(b, text);
    return b;
}

/* What one message becomes: the subject it was published to, or NULL when
 * it was not (then *reason holds why; caller frees both). */
static char *forwarded_to(jet_mock *m, jet_mock_msg *b, char **reason)
{
    jet_mock_settlement s;
    deliver(m, b, &s);
    *reason = g_strdup(s.reason);
    if (s.action != JET_MOCK_ACK) {
        g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
        g_assert_true(s.is_failure);
        g_assert_cmpuint(s.n_publishes, ==, 0);
        return NULL;
    }
    g_assert_cmpuint(s.n_publishes, ==, 1);
    g_assert_cmpstr(s.publishes[0].result, ==, "published");
    return g_strdup(s.publishes[0].subject);
}

static void assert_forwarded(jet_mock *m, const char *subject, const char *expect)
{
    jet_mock_msg *b = msg(m, subject, "x");
    g_autofree char *reason = NULL;
    g_autofree char *to = forwarded_to(m, b, &reason);
    if (g_strcmp0(to, expect) != 0)
        g_error("'%s' went to '%s', expected '%s' (reason: %s)", subject, to, expect, reason);
    jet_mock_msg_free(b);
}

static void assert_refused(jet_mock *m, jet_mock_msg *b, const char *needle)
{
    g_autofree char *reason = NULL;
    g_autofree char *to = forwarded_to(m, b, &reason);
    if (to != NULL)
        g_error("published to '%s', expected a refusal with '%s'", to, needle);
    drive_assert_contains(reason, needle);
    drive_assert_contains(reason, "bad subject: ");
    /* Printable ASCII only: the reason goes to a log and a header. */
    for (const char *c = reason; *c; c++)
        g_assert_true(*c >= 0x20 && *c < 0x7f);
    g_assert_cmpuint(strlen(reason), <=, JET_REASON_MAX);
}

/* A message on subject (with header name: value when name is not NULL)
 * refused with needle in its reason. */
static void refuse(jet_mock *m, const char *subject, const char *name, const char *value, const char *needle)
{
    jet_mock_msg *b = msg(m, subject, "x");
    if (name != NULL)
        jet_mock_msg_add_header(b, name, value);
    assert_refused(m, b, needle);
    jet_mock_msg_free(b);
}

/* {subject}: the payload unchanged, no header but the host's Msg-Id and
 * hop count. */
static void test_whole_subject(void)
{
    jet_mock *m = start_forward("copy.{subject}", NULL);
    jet_mock_msg *b = jet_mock_msg_new(m, "orders.eu.new");
    static const char payload[] = "{\"id\":7}\0\xff binary";
    jet_mock_msg_set_data(b, payload, sizeof payload - 1);
    jet_mock_msg_add_header(b, "Region", "eu");
    jet_mock_msg_set_seq(b, 42, 40);
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpuint(s.n_publishes, ==, 1);
    g_assert_cmpstr(s.publishes[0].subject, ==, "copy.orders.eu.new");
    g_assert_cmpmem(s.publishes[0].data, s.publishes[0].len, payload, sizeof payload - 1);
    g_assert_cmpuint(s.publishes[0].n_headers, ==, 2);
    g_assert_cmpstr(s.publishes[0].headers[0].name, ==, "Nats-Msg-Id");
    g_assert_cmpstr(s.publishes[0].headers[0].value, ==, "jethost-pub:ORDERS.fw:42:1701388800000000000:0");
    g_assert_cmpstr(s.publishes[0].headers[1].name, ==, "Jethost-Hops");
    g_assert_cmpstr(s.publishes[0].headers[1].value, ==, "1");
    jet_mock_msg_free(b);

    /* An empty payload is forwarded empty. */
    b = jet_mock_msg_new(m, "orders.empty");
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpstr(s.publishes[0].subject, ==, "copy.orders.empty");
    g_assert_cmpuint(s.publishes[0].len, ==, 0);
    jet_mock_msg_free(b);

    /* The whole template a placeholder. */
    jet_mock_free(m);
    m = start_forward("{subject}", NULL);
    assert_forwarded(m, "a", "a");
    assert_forwarded(m, "orders.caf\xc3\xa9", "orders.caf\xc3\xa9");
    jet_mock_free(m);
}

static void test_tokens(void)
{
    jet_mock *m = start_forward("t.{token:3}.{token:1}", NULL);
    assert_forwarded(m, "orders.eu.new", "t.new.orders");
    assert_forwarded(m, "a.b.c.d.e", "t.c.a");
    refuse(m, "orders.eu", NULL, NULL, "{token:3}: the subject 'orders.eu' has 2 tokens");
    refuse(m, "single", NULL, NULL, "{token:3}: the subject 'single' has 1 token");
    jet_mock_free(m);

    /* Two placeholders side by side make one token; the largest N. */
    m = start_forward("{token:1}{token:2}.x", NULL);
    assert_forwarded(m, "ab.cd", "abcd.x");
    jet_mock_free(m);
    m = start_forward("far.{token:512}", NULL);
    GString *deep = g_string_new("t1");
    for (int i = 2; i <= 512; i++)
        g_string_append(deep, ".z");
    g_string_append(deep, "y");
    assert_forwarded(m, deep->str, "far.zy");
    g_string_free(deep, TRUE);
    jet_mock_free(m);
}

static void test_headers(void)
{
    jet_mock *m = start_forward("h.{header:Region}.{token:2}", NULL);
    jet_mock_msg *b = msg(m, "orders.new", "x");
    jet_mock_msg_add_header(b, "Region", "eu-west_1");
    jet_mock_msg_add_header(b, "Region", "us");   /* the first value counts */
    g_autofree char *reason = NULL;
    g_autofree char *to = forwarded_to(m, b, &reason);
    g_assert_cmpstr(to, ==, "h.eu-west_1.new");
    jet_mock_msg_free(b);

    /* A dot in a value makes more tokens; UTF-8 passes. */
    b = msg(m, "orders.new", "x");
    jet_mock_msg_add_header(b, "Region", "eu.caf\xc3\xa9");
    g_free(to);
    g_free(reason);
    to = forwarded_to(m, b, &reason);
    g_assert_cmpstr(to, ==, "h.eu.caf\xc3\xa9.new");
    jet_mock_msg_free(b);

    /* Missing (names are matched exactly), or empty. */
    refuse(m, "orders.new", NULL, NULL, "{header:Region}: the message has no header Region");
    refuse(m, "orders.new", "region", "eu", "{header:Region}: the message has no header Region");
    refuse(m, "orders.new", "Region", "", "{header:Region}: an empty value in header Region");
    jet_mock_free(m);

    /* A literal-only template: every message to one subject. */
    m = start_forward("audit.all", NULL);
    assert_forwarded(m, "orders.new", "audit.all");
    jet_mock_free(m);
}

/* Values a publisher controls, each refused with a reason naming the
 * placeholder and what is wrong; nothing is published. */
static void test_hostile_values(void)
{
    static const struct {
        const char *value;
        const char *needle;
    } cases[] = {
        { "eu west", "the value \"eu\\x20west\" holds white space or a control character" },
        { "eu\twest", "holds white space or a control character" },
        { "\x01", "the value \"\\x01\" holds white space" },
        { "\x7f", "holds white space or a control character" },
        { "eu\xc2\xa0west", "holds white space" },            /* no-break space */
        { "eu\xe2\x80\x8bwest", "holds white space" },        /* zero width space (a format character) */
        { "eu\xe2\x80\xa8", "holds white space" },            /* line separator */
        { "\xef\xbb\xbf", "holds white space" },              /* byte order mark */
        { "*", "the value \"*\" holds a wildcard" },
        { ">", "holds a wildcard" },
        { "eu.*", "holds a wildcard" },
        { "a.>", "holds a wildcard" },
        { "a*b", "holds a wildcard" },
        { "\xff", "the value \"\\xff\" is not valid UTF-8" },
        { "caf\xc3", "is not valid UTF-8" },                  /* truncated */
        { "\xc0\xae", "is not valid UTF-8" },                 /* overlong '.' */
        { "\xed\xa0\x80", "is not valid UTF-8" },             /* a surrogate */
        { ".", "has an empty token" },
        { "eu.", "has an empty token" },
        { ".eu", "has an empty token" },
        { "a..b", "has an empty token" },
        { "say \"hi\"\\", "the value \"say\\x20\\x22hi\\x22\\x5c\"" },
    };
    jet_mock *m = start_forward("h.{header:X}.end", NULL);
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++)
        refuse(m, "orders.new", "X", cases[i].value, cases[i].needle);
    int found = 0;
    g_assert_cmpint(jet_mock_metric(m, "bad_subject", &found), ==, G_N_ELEMENTS(cases));
    g_assert_true(found);
    g_assert_cmpint(jet_mock_metric(m, "forwarded", NULL), ==, 0);

    /* Too long: the value is quoted cut, the subject bounded. */
    g_autofree char *lng = g_strnfill(2000, 'a');
    refuse(m, "orders.new", "X", lng, "bad subject: it would be longer than 1024 bytes");
    g_autofree char *spaced = g_strdup_printf("%s %s", lng, lng);
    refuse(m, "orders.new", "X", spaced, "aaaaaaaa...\" holds white space");
    jet_mock_free(m);

    /* A value must not steer the forward into the server's namespaces, in
     * any letter case; a template that names one itself may. */
    m = start_forward("{header:To}", NULL);
    static const char *const reserved[] = { "$JS.API.STREAM.DELETE.ORDERS", "$kv.B.k", "_INBOX.x", "$SYS.REQ" };
    for (gsize i = 0; i < G_N_ELEMENTS(reserved); i++)
        refuse(m, "orders.new", "To", reserved[i], "lies in a namespace reserved for the server");
    jet_mock_msg *b = msg(m, "orders.new", "x");
    jet_mock_msg_add_header(b, "To", "orders.$JS.fine");
    g_autofree char *reason = NULL;
    g_autofree char *to = forwarded_to(m, b, &reason);
    g_assert_cmpstr(to, ==, "orders.$JS.fine");
    jet_mock_msg_free(b);
    jet_mock_free(m);
    m = start_forward("$J{subject}", NULL);
    refuse(m, "S.API.INFO", NULL, NULL, "\"$JS.API.INFO\" lies in a namespace reserved");
    jet_mock_free(m);

    /* The origin subject itself (a KV entry's, say) is checked the same. */
    m = start_forward("{subject}", NULL);
    refuse(m, "$KV.B.key", NULL, NULL, "lies in a namespace reserved");
    jet_mock_free(m);
}

/* on_bad_subject = reject: dead-lettered at once, the reason in the record;
 * retry (the default) walks the ladder to an exhausted record. */
static void test_on_bad_subject(void)
{
    jet_mock *m = start_forward("h.{header:Region}", "reject");
    jet_mock_msg *b = msg(m, "orders.new", "x");
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "rejected");
    g_assert_cmpuint(s.n_publishes, ==, 0);
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Reason"), ==,
                    "bad subject: {header:Region}: the message has no header Region");
    jet_mock_msg_free(b);
    jet_mock_free(m);

    m = start_forward("h.{header:Region}", NULL);
    b = msg(m, "orders.new", "x");
    for (guint k = 1; k <= 2; k++) {
        deliver(m, b, &s);
        g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
        g_assert_cmpuint(s.failure_number, ==, k);
        g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
        jet_mock_clock_advance_ms(m, s.delay_ms);
    }
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_CAPTURE);
    g_assert_cmpstr(s.cause, ==, "exhausted");
    g_assert_cmpstr(jet_mock_settlement_header(&s, "Jethost-Reason"), ==,
                    "bad subject: {header:Region}: the message has no header Region");
    g_assert_cmpint(jet_mock_metric(m, "bad_subject", NULL), ==, 3);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* Templates and options refused when the binding starts, with a message
 * naming the fault. */
static void test_bad_templates(void)
{
    static const struct {
        const char *tmpl, *on_bad, *needle;
    } cases[] = {
        { NULL, NULL, "subject" },
        { "", NULL, "subject" },
        { "{", NULL, "the '{' at byte 1 is not closed" },
        { "a.{subject", NULL, "the '{' at byte 3 is not closed" },
        { "a.{tok{subject}", NULL, "the '{' at byte 3 is not closed" },
        { "{nope}", NULL, "unknown placeholder {nope} (known: {subject}, {token:N}, {header:NAME})" },
        { "{Subject}", NULL, "unknown placeholder {Subject}" },
        { "{}", NULL, "unknown placeholder {}" },
        { "{token:0}", NULL, "{token:0}: N of {token:N} is a number from 1 to 512" },
        { "{token:513}", NULL, "from 1 to 512" },
        { "{token:99999999999999999999}", NULL, "from 1 to 512" },
        { "{token:x}", NULL, "from 1 to 512" },
        { "{token:}", NULL, "unknown placeholder {token:}" },
        { "{token:-1}", NULL, "from 1 to 512" },
        { "{header:}", NULL, "unknown placeholder {header:}" },
        { "{header:a b}", NULL, "{header:a\\x20b}: NAME of {header:NAME} is a header name" },
        { "{header:a:b}", NULL, "is a header name" },
        { "{header:\x01}", NULL, "{header:\\x01}" },
        { "a..{subject}", NULL, "its text has an empty token" },
        { ".{subject}", NULL, "has an empty token" },
        { "{subject}.", NULL, "has an empty token" },
        { "a b.{subject}", NULL, "its text holds white space or a control character" },
        { "a.*.{subject}", NULL, "holds a wildcard" },
        { "{subject}.>", NULL, "holds a wildcard" },
        { "a.\xff.{subject}", NULL, "is not valid UTF-8" },
        { "{subject}", "drop", "option.on_bad_subject: 'drop' is not retry or reject" },
        { "{subject}", "", "option.on_bad_subject" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *why = start_error(cases[i].tmpl, cases[i].on_bad);
        if (why == NULL)
            g_error("template '%s' (on_bad_subject %s) started", cases[i].tmpl, cases[i].on_bad);
        g_autofree char *shown = g_strescape(cases[i].tmpl != NULL ? cases[i].tmpl : "(unset)", NULL);
        g_test_message("'%s': %s", shown, why);
        drive_assert_contains(why, cases[i].needle);
    }
    /* Over the length bound. */
    g_autofree char *lng = g_strnfill(1025, 'a');
    g_autofree char *why = start_error(lng, NULL);
    drive_assert_contains(why, "the template must hold 1 to 1024 bytes");
    /* '}' alone is text, and a template of 1024 bytes is taken. */
    g_autofree char *ok = start_error("a}.{subject}", NULL);
    g_assert_null(ok);
    lng[1024] = '\0';
    g_autofree char *ok2 = start_error(lng, NULL);
    g_assert_null(ok2);
}

/* The counters: forwarded counts messages acked with their forward queued,
 * bad_subject those refused; a publish the server then refuses counts
 * again at its next delivery (docs/plugins.md). */
static void test_metrics(void)
{
    jet_mock *m = start_forward("f.{header:Kind}", NULL);
    int found = 0;
    g_assert_cmpint(jet_mock_metric(m, "forwarded", &found), ==, 0);
    g_assert_true(found);
    for (guint i = 0; i < 10; i++) {
        jet_mock_msg *b = msg(m, "orders.new", "x");
        if (i % 3 != 0)
            jet_mock_msg_add_header(b, "Kind", "k");
        jet_mock_settlement s;
        deliver(m, b, &s);
        jet_mock_msg_free(b);
    }
    g_assert_cmpint(jet_mock_metric(m, "forwarded", NULL), ==, 6);
    g_assert_cmpint(jet_mock_metric(m, "bad_subject", NULL), ==, 4);

    jet_mock_fail_publishes(m, "nats: no responders available for request", 1);
    jet_mock_msg *b = msg(m, "orders.new", "x");
    jet_mock_msg_add_header(b, "Kind", "k");
    jet_mock_settlement s;
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_RETRY);
    g_assert_cmpstr(s.reason, ==, "publish failed: publish 1 of 1 to f.k: nats: no responders available for request");
    g_assert_cmpint(jet_mock_msg_redeliver(b, &s), ==, JET_MOCK_OK);
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    /* The failed publish is not counted (it was, before settled()). */
    g_assert_cmpint(jet_mock_metric(m, "forwarded", NULL), ==, 7);
    g_assert_cmpint(jet_mock_metric(m, "duplicates", NULL), ==, 0);
    /* Its ack lost: the redelivery's publish is one the stream has. */
    jet_mock_msg_set_deliveries(b, 3);
    deliver(m, b, &s);
    g_assert_cmpint(s.action, ==, JET_MOCK_ACK);
    g_assert_cmpstr(s.publishes[0].result, ==, "duplicate");
    g_assert_cmpint(jet_mock_metric(m, "forwarded", NULL), ==, 8);   /* acked again: counted again */
    g_assert_cmpint(jet_mock_metric(m, "duplicates", NULL), ==, 1);  /* ... and seen to be a repeat */
    /* Past the stream's duplicate window it is stored again. */
    jet_mock_clock_advance_ms(m, 121000);
    jet_mock_msg_set_deliveries(b, 4);
    deliver(m, b, &s);
    g_assert_cmpstr(s.publishes[0].result, ==, "published");
    g_assert_cmpint(jet_mock_metric(m, "forwarded", NULL), ==, 9);
    g_assert_cmpint(jet_mock_metric(m, "duplicates", NULL), ==, 1);
    jet_mock_msg_free(b);
    jet_mock_free(m);
}

/* ------------------------------------------------------------------------ */
/* Through the core: threads, and publish_reserved                          */
/* ------------------------------------------------------------------------ */

typedef struct {
    JetInstance *inst;
    guint id;
    guint n;
    guint wrong;
} Worker;

static gpointer worker_main(gpointer data)
{
    Worker *w = data;
    for (guint i = 0; i < w->n; i++) {
        g_autofree char *subject = g_strdup_printf("orders.w%u.m%u", w->id, i);
        g_autofree char *value = g_strdup_printf("r%u", i % 7);
        jet_msg m;
        drive_msg_init(&m, subject, "p", 1);
        drive_msg_header(&m, "Region", value);
        int v = drive_handle(w->inst, &m);
        g_autofree char *expect = g_strdup_printf("out.r%u.w%u.m%u", i % 7, w->id, i);
        GPtrArray *items = m.publishes.items;
        if (v != JET_ACK || items == NULL || items->len != 1 ||
            strcmp(((JetPublish *)g_ptr_array_index(items, 0))->subject, expect) != 0)
            w->wrong++;
        /* What the executor tells it once the publish is stored and the
         * origin acked: the counter is kept there, from every thread. */
        jet_settled done = { .struct_size = sizeof done, .outcome = JET_SETTLED_ACKED, .handled = 1,
                             .verdict = v, .stream_seq = i + 1, .deliveries = 1, .published = 1, .reason = "" };
        jet_instance_settled(w->inst, &done);
        jet_publish_queue_clear(&m.publishes);
        drive_msg_clear(&m);
    }
    return NULL;
}

static gint64 metric_of(JetInstance *inst, const char *name)
{
    for (guint i = 0; i < jet_instance_metric_count(inst); i++) {
        gint64 v = 0;
        const JetMetric *mt = jet_instance_metric(inst, i, &v);
        if (strcmp(mt->name, name) == 0)
            return v;
    }
    g_error("no metric %s", name);
}

static void test_threads(void)
{
    JetPlugin *p = drive_plugin("forward");
    g_assert_true(jet_plugin_descriptor(p)->flags & JET_PLUGIN_THREAD_SAFE);
    g_autoptr(JetInstance) inst = drive_start(p, "subject", "out.{header:Region}.{token:2}.{token:3}", NULL);
    Worker w[4];
    GThread *t[4];
    for (guint i = 0; i < 4; i++) {
        w[i] = (Worker){ inst, i, 2000, 0 };
        t[i] = g_thread_new("fwd", worker_main, &w[i]);
    }
    for (guint i = 0; i < 4; i++) {
        g_thread_join(t[i]);
        g_assert_cmpuint(w[i].wrong, ==, 0);
    }
    g_assert_cmpint(metric_of(inst, "forwarded"), ==, 8000);
    g_assert_cmpint(metric_of(inst, "bad_subject"), ==, 0);
}

/* A template that names a reserved namespace itself goes as far as the
 * binding allows: with publish_reserved the publish is queued, without it
 * the host refuses the call (a plugin error: never an ack). */
static void test_reserved_template(void)
{
    JetPlugin *p = drive_plugin("forward");
    g_autoptr(JetInstance) inst = drive_start(p, "subject", "$KV.MIRROR.{token:2}", NULL);
    jet_msg m;
    drive_msg_init(&m, "orders.k1", "v", 1);
    m.publish_reserved = TRUE;
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_ACK);
    g_assert_cmpuint(m.publishes.items->len, ==, 1);
    g_assert_cmpstr(((JetPublish *)g_ptr_array_index(m.publishes.items, 0))->subject, ==, "$KV.MIRROR.k1");
    jet_publish_queue_clear(&m.publishes);

    drive_msg_init(&m, "orders.k1", "v", 1);
    g_assert_cmpint(drive_handle(inst, &m), ==, JET_RETRY);
    g_assert_nonnull(m.publishes.refused);
    drive_assert_contains(m.publishes.refused, "publish_reserved = true allows");
    drive_assert_contains(m.reason, "the host refused the publish to \"$KV.MIRROR.k1\"");
    jet_publish_queue_clear(&m.publishes);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, G_TEST_OPTION_ISOLATE_DIRS, NULL);
    g_test_add_func("/plugin-forward/whole-subject", test_whole_subject);
    g_test_add_func("/plugin-forward/tokens", test_tokens);
    g_test_add_func("/plugin-forward/headers", test_headers);
    g_test_add_func("/plugin-forward/hostile-values", test_hostile_values);
    g_test_add_func("/plugin-forward/on-bad-subject", test_on_bad_subject);
    g_test_add_func("/plugin-forward/bad-templates", test_bad_templates);
    g_test_add_func("/plugin-forward/metrics", test_metrics);
    g_test_add_func("/plugin-forward/threads", test_threads);
    g_test_add_func("/plugin-forward/reserved-template", test_reserved_template);
    return g_test_run();
}
