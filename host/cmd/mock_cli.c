/* `jethost mock --plugin FILE.so [--option k=v ...] [--policy k=v ...] < messages.jsonl`
 *
 * One JSON object per input line, one JSON line out per settlement; the
 * fields are documented in docs/mock.md.  Built on the public mock API
 * (include/jethost/mock.h), in record mode: a violation is reported in the
 * output line and in the exit code, never by aborting. */
#include "mock_cli.h"
#include "exit_codes.h"

#include <jethost/mock.h>

#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#define CLI_ERROR (g_quark_from_static_string("jet-mock-cli"))

/* --- reading times and integers ------------------------------------------ */

/* RFC 3339 with an offset (fraction up to nanoseconds), or unix ns. */
static gboolean parse_time_text(const char *text, gint64 *out, GError **error)
{
    gint64 ns;
    if (g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, &ns, NULL)) {
        *out = ns;
        return TRUE;
    }
    g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(text, NULL);
    if (dt == NULL) {
        g_set_error(error, CLI_ERROR, 0,
                    "'%s' is not an RFC 3339 time with an offset (2024-01-01T00:00:00Z) "
                    "nor unix nanoseconds", text);
        return FALSE;
    }
    gint64 frac = 0;
    const char *t = strpbrk(text, "Tt ");
    const char *dot = t != NULL ? strchr(t, '.') : NULL;
    if (dot != NULL) {
        int digits = 0;
        for (const char *p = dot + 1; g_ascii_isdigit(*p); p++) {
            if (digits < 9) {
                frac = frac * 10 + (*p - '0');
                digits++;
            }
        }
        for (; digits < 9; digits++)
            frac *= 10;
    }
    gint64 secs = g_date_time_to_unix(dt);
    if (secs > G_MAXINT64 / 1000000000 - 1 || secs < G_MININT64 / 1000000000 + 1) {
        g_set_error(error, CLI_ERROR, 0, "'%s' is out of range", text);
        return FALSE;
    }
    *out = secs * 1000000000 + frac;
    return TRUE;
}

/* A time member: RFC 3339 text or an integer of unix ns; null = unknown. */
static gboolean member_time(JsonObject *o, const char *name, gboolean *known, gint64 *out,
                            GError **error)
{
    JsonNode *n = json_object_get_member(o, name);
    if (JSON_NODE_HOLDS_NULL(n)) {
        *known = FALSE;
        return TRUE;
    }
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64) {
        *known = TRUE;
        *out = json_node_get_int(n);
        return TRUE;
    }
    if (JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING) {
        g_autoptr(GError) local = NULL;
        if (!parse_time_text(json_node_get_string(n), out, &local)) {
            g_set_error(error, CLI_ERROR, 0, "%s: %s", name, local->message);
            return FALSE;
        }
        *known = TRUE;
        return TRUE;
    }
    g_set_error(error, CLI_ERROR, 0, "%s: expected an RFC 3339 string, unix nanoseconds or null", name);
    return FALSE;
}

static gboolean member_uint(JsonObject *o, const char *name, guint64 min, guint64 max,
                            guint64 *out, GError **error)
{
    JsonNode *n = json_object_get_member(o, name);
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64 ||
        json_node_get_int(n) < 0 || (guint64)json_node_get_int(n) < min ||
        (guint64)json_node_get_int(n) > max) {
        g_set_error(error, CLI_ERROR, 0, "%s: expected an integer from %" G_GUINT64_FORMAT
                    " to %" G_GUINT64_FORMAT, name, min, max);
        return FALSE;
    }
    *out = (guint64)json_node_get_int(n);
    return TRUE;
}

static gboolean member_string(JsonObject *o, const char *name, const char **out, GError **error)
{
    JsonNode *n = json_object_get_member(o, name);
    if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_STRING) {
        g_set_error(error, CLI_ERROR, 0, "%s: expected a string", name);
        return FALSE;
    }
    *out = json_node_get_string(n);
    return TRUE;
}

/* --- guarding the parser -------------------------------------------------- */

/* json-glib recurses once per nesting level, so a deep enough line overflows
 * the stack; no message needs more than a handful of levels. */
#define MAX_LINE_DEPTH 64

/* Checks the nesting of a line's arrays and objects, counting brackets
 * outside strings, before json-glib sees it.  Malformed JSON passes through
 * here for the parser to name. */
static gboolean depth_ok(const char *line, GError **error)
{
    guint depth = 0;
    gboolean in_string = FALSE;
    for (const char *p = line; *p != '\0'; p++) {
        if (in_string) {
            if (*p == '\\' && p[1] != '\0')
                p++;
            else if (*p == '"')
                in_string = FALSE;
        } else if (*p == '"') {
            in_string = TRUE;
        } else if (*p == '[' || *p == '{') {
            if (++depth > MAX_LINE_DEPTH) {
                g_set_error(error, CLI_ERROR, 0,
                            "nested deeper than %d arrays or objects", MAX_LINE_DEPTH);
                return FALSE;
            }
        } else if ((*p == ']' || *p == '}') && depth > 0) {
            depth--;
        }
    }
    return TRUE;
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 with padding (RFC 4648 section 4): g_base64_decode()
 * skips what it does not know and decodes a truncated tail, so a typo would
 * otherwise become a different payload instead of an error. */
static gboolean base64_ok(const char *text, GError **error)
{
    size_t n = strlen(text);
    if (n % 4 != 0) {
        g_set_error(error, CLI_ERROR, 0,
                    "data_b64: length %zu is not a multiple of 4 (padded base64)", n);
        return FALSE;
    }
    size_t pad = 0;
    if (n > 0 && text[n - 1] == '=')
        pad = n > 1 && text[n - 2] == '=' ? 2 : 1;
    for (size_t i = 0; i < n - pad; i++) {
        if (b64_value(text[i]) < 0) {
            g_set_error(error, CLI_ERROR, 0,
                        "data_b64: '%c' at offset %zu is not a base64 character",
                        g_ascii_isprint(text[i]) ? text[i] : '?', i);
            return FALSE;
        }
    }
    /* The bits the padding leaves unused must be zero, or two texts would
     * decode to the same bytes. */
    if ((pad == 1 && (b64_value(text[n - 2]) & 0x03) != 0) ||
        (pad == 2 && (b64_value(text[n - 3]) & 0x0f) != 0)) {
        g_set_error(error, CLI_ERROR, 0, "data_b64: non-zero bits before the padding");
        return FALSE;
    }
    return TRUE;
}

/* --- one input line -------------------------------------------------------- */

/* More publishes than any delivery may make (forward.h). */
#define JET_PUBLISH_LINE_MAX 100000u

static const char *const known_fields[] = {
    "subject", "data", "data_b64", "headers", "stream_seq", "consumer_seq", "deliveries",
    "enqueued", "failures", "postpones", "first_failure", "strikes", "breaker", "advance_ms",
    "clock", "key", "op", "publish_error", "crash_after_publish", "ack_lost", NULL
};

static gboolean add_headers(jet_mock_msg *b, JsonNode *n, GError **error)
{
    if (!JSON_NODE_HOLDS_OBJECT(n)) {
        g_set_error(error, CLI_ERROR, 0, "headers: expected an object {name: value or [values]}");
        return FALSE;
    }
    JsonObject *h = json_node_get_object(n);
    g_autoptr(GList) names = json_object_get_members(h);
    for (GList *l = names; l != NULL; l = l->next) {
        const char *name = l->data;
        JsonNode *v = json_object_get_member(h, name);
        if (JSON_NODE_HOLDS_VALUE(v) && json_node_get_value_type(v) == G_TYPE_STRING) {
            jet_mock_msg_add_header(b, name, json_node_get_string(v));
            continue;
        }
        if (JSON_NODE_HOLDS_ARRAY(v)) {
            JsonArray *a = json_node_get_array(v);
            for (guint i = 0; i < json_array_get_length(a); i++) {
                JsonNode *e = json_array_get_element(a, i);
                if (!JSON_NODE_HOLDS_VALUE(e) || json_node_get_value_type(e) != G_TYPE_STRING) {
                    g_set_error(error, CLI_ERROR, 0, "headers.%s: values must be strings", name);
                    return FALSE;
                }
                jet_mock_msg_add_header(b, name, json_node_get_string(e));
            }
            continue;
        }
        g_set_error(error, CLI_ERROR, 0, "headers.%s: expected a string or an array of strings", name);
        return FALSE;
    }
    return TRUE;
}

/* Steps the clock as the line asks, then builds its message. */
static jet_mock_msg *message_from_line(jet_mock *m, JsonObject *o, GError **error)
{
    g_autoptr(GList) members = json_object_get_members(o);
    for (GList *l = members; l != NULL; l = l->next) {
        if (!g_strv_contains(known_fields, l->data)) {
            g_set_error(error, CLI_ERROR, 0, "unknown field '%s'", (const char *)l->data);
            return NULL;
        }
    }
    const char *subject = NULL, *key = NULL, *op_text = NULL;
    gboolean is_kv = json_object_has_member(o, "key");
    if (is_kv == json_object_has_member(o, "subject")) {
        g_set_error(error, CLI_ERROR, 0, is_kv ? "subject and key: give one of them (a KV entry's subject is "
                                                 "$KV.<bucket>.<key>)"
                                               : "subject: missing (or key, for a KV entry)");
        return NULL;
    }
    if (!is_kv && json_object_has_member(o, "op")) {
        g_set_error(error, CLI_ERROR, 0, "op: only with key (a KV entry)");
        return NULL;
    }
    if (!member_string(o, is_kv ? "key" : "subject", is_kv ? &key : &subject, error))
        return NULL;
    jet_kv_op op = JET_KV_PUT;
    if (is_kv && json_object_has_member(o, "op")) {
        if (!member_string(o, "op", &op_text, error))
            return NULL;
        if (strcmp(op_text, "put") == 0) {
            op = JET_KV_PUT;
        } else if (strcmp(op_text, "delete") == 0) {
            op = JET_KV_DELETE;
        } else if (strcmp(op_text, "purge") == 0) {
            op = JET_KV_PURGE;
        } else {
            g_set_error(error, CLI_ERROR, 0, "op: expected put, delete or purge");
            return NULL;
        }
    }
    if (json_object_has_member(o, "data") && json_object_has_member(o, "data_b64")) {
        g_set_error(error, CLI_ERROR, 0, "data and data_b64: give one of them");
        return NULL;
    }

    /* The clock first: the message's default enqueue time is "now". */
    if (json_object_has_member(o, "clock")) {
        gboolean known = FALSE;
        gint64 t = 0;
        if (!member_time(o, "clock", &known, &t, error))
            return NULL;
        if (!known) {
            g_set_error(error, CLI_ERROR, 0, "clock: must not be null");
            return NULL;
        }
        jet_mock_clock_set_ns(m, t);
    }
    guint64 u = 0;
    if (json_object_has_member(o, "advance_ms")) {
        if (!member_uint(o, "advance_ms", 0, G_MAXINT64 / 1000000, &u, error))
            return NULL;
        jet_mock_clock_advance_ms(m, u);
    }

    jet_mock_msg *b = is_kv ? jet_mock_msg_new_kv(m, key, op) : jet_mock_msg_new(m, subject);
    if (b == NULL) {
        g_set_error(error, CLI_ERROR, 0, "key: %s", jet_mock_error(m));
        return NULL;
    }
    gboolean ok = TRUE;
    const char *text = NULL;
    if (ok && json_object_has_member(o, "data")) {
        ok = member_string(o, "data", &text, error);
        if (ok)
            jet_mock_msg_set_text(b, text);
    }
    if (ok && json_object_has_member(o, "data_b64")) {
        ok = member_string(o, "data_b64", &text, error) && base64_ok(text, error);
        if (ok) {
            gsize len = 0;
            g_autofree guchar *bytes = g_base64_decode(text, &len);
            jet_mock_msg_set_data(b, bytes, len);
        }
    }
    if (ok && json_object_has_member(o, "headers"))
        ok = add_headers(b, json_object_get_member(o, "headers"), error);
    if (ok && (json_object_has_member(o, "stream_seq") || json_object_has_member(o, "consumer_seq"))) {
        guint64 s = 0, c = 0;
        if (json_object_has_member(o, "stream_seq"))
            ok = member_uint(o, "stream_seq", 1, G_MAXINT64, &s, error);
        if (ok && json_object_has_member(o, "consumer_seq"))
            ok = member_uint(o, "consumer_seq", 1, G_MAXINT64, &c, error);
        if (ok)
            jet_mock_msg_set_seq(b, s != 0 ? s : c, c != 0 ? c : s);
    }
    if (ok && json_object_has_member(o, "deliveries")) {
        ok = member_uint(o, "deliveries", 1, G_MAXUINT32, &u, error);
        if (ok)
            jet_mock_msg_set_deliveries(b, (guint32)u);
    }
    if (ok && (json_object_has_member(o, "failures") || json_object_has_member(o, "postpones"))) {
        guint64 f = 0, p = 0;
        if (json_object_has_member(o, "failures"))
            ok = member_uint(o, "failures", 0, G_MAXUINT32, &f, error);
        if (ok && json_object_has_member(o, "postpones"))
            ok = member_uint(o, "postpones", 0, G_MAXUINT32, &p, error);
        if (ok)
            jet_mock_msg_set_ledger(b, (guint32)f, (guint32)p);
    }
    gboolean known = FALSE;
    gint64 t = 0;
    if (ok && json_object_has_member(o, "enqueued")) {
        ok = member_time(o, "enqueued", &known, &t, error);
        if (ok && known)
            jet_mock_msg_set_enqueued_ns(b, t);
        else if (ok)
            jet_mock_msg_clear_enqueued(b);
    }
    if (ok && json_object_has_member(o, "first_failure")) {
        ok = member_time(o, "first_failure", &known, &t, error);
        if (ok && known)
            jet_mock_msg_set_first_failure_ns(b, t);
    }
    if (ok && json_object_has_member(o, "strikes")) {
        ok = member_uint(o, "strikes", 0, G_MAXUINT32, &u, error);
        if (ok)
            jet_mock_msg_set_strikes(b, (guint32)u);
    }
    if (ok && json_object_has_member(o, "breaker")) {
        JsonNode *n = json_object_get_member(o, "breaker");
        if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
            g_set_error(error, CLI_ERROR, 0, "breaker: expected true or false");
            ok = FALSE;
        } else {
            jet_mock_msg_set_breaker_claim(b, json_node_get_boolean(n));
        }
    }
    if (ok && json_object_has_member(o, "publish_error")) {
        /* Every publish of this delivery fails with this reason. */
        ok = member_string(o, "publish_error", &text, error);
        if (ok)
            jet_mock_fail_publishes(m, text, JET_PUBLISH_LINE_MAX);
    } else if (ok) {
        jet_mock_fail_publishes(m, NULL, 0);
    }
    /* A fault point, armed only once the line is good: it is for this
     * delivery (docs/mock.md, "Fault points"). */
    gboolean crash = json_object_has_member(o, "crash_after_publish");
    gboolean ack_lost = FALSE;
    if (ok && json_object_has_member(o, "ack_lost")) {
        JsonNode *n = json_object_get_member(o, "ack_lost");
        if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
            g_set_error(error, CLI_ERROR, 0, "ack_lost: expected true or false");
            ok = FALSE;
        } else {
            ack_lost = json_node_get_boolean(n);
        }
    }
    if (ok && crash && ack_lost) {
        g_set_error(error, CLI_ERROR, 0, "crash_after_publish and ack_lost: give one fault a delivery");
        ok = FALSE;
    }
    guint64 k = 0;
    if (ok && crash)
        ok = member_uint(o, "crash_after_publish", 0, JET_PUBLISH_LINE_MAX, &k, error);
    if (!ok) {
        jet_mock_msg_free(b);
        return NULL;
    }
    if (crash)
        jet_mock_inject_fault(m, JET_MOCK_FAULT_CRASH_AFTER_PUBLISH, (unsigned)k);
    else if (ack_lost)
        jet_mock_inject_fault(m, JET_MOCK_FAULT_ACK_LOST, 0);
    return b;
}

/* --- one output line --------------------------------------------------------- */

/* A payload as the input would give it: "data" when it is UTF-8 text
 * without NUL, else "data_b64". */
static void add_payload(JsonBuilder *jb, const void *data, size_t len)
{
    if (len == 0 || (g_utf8_validate(data, (gssize)len, NULL) && memchr(data, 0, len) == NULL)) {
        g_autofree char *text = g_strndup(len > 0 ? data : "", len);
        json_builder_set_member_name(jb, "data");
        json_builder_add_string_value(jb, text);
    } else {
        g_autofree char *b64 = g_base64_encode(data, len);
        json_builder_set_member_name(jb, "data_b64");
        json_builder_add_string_value(jb, b64);
    }
}

static void print_node(JsonNode *root)
{
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_root(gen, root);
    g_autofree char *text = json_generator_to_data(gen, NULL);
    fputs(text, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

static void add_violations(JsonBuilder *jb, const jet_mock *m, size_t from)
{
    size_t n = jet_mock_violation_count(m);
    if (n <= from)
        return;
    json_builder_set_member_name(jb, "violation");
    json_builder_add_string_value(jb, jet_mock_violation_rule(m, from));
    json_builder_set_member_name(jb, "violations");
    json_builder_begin_array(jb);
    for (size_t i = from; i < n; i++) {
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "rule");
        json_builder_add_string_value(jb, jet_mock_violation_rule(m, i));
        json_builder_set_member_name(jb, "message");
        json_builder_add_string_value(jb, jet_mock_violation_message(m, i));
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
}

static void print_settlement(const jet_mock *m, guint line, const jet_mock_settlement *s,
                             size_t violations_before)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "line");
    json_builder_add_int_value(jb, line);
    json_builder_set_member_name(jb, "stream_seq");
    json_builder_add_int_value(jb, (gint64)s->stream_seq);
    json_builder_set_member_name(jb, "deliveries");
    json_builder_add_int_value(jb, s->deliveries);
    json_builder_set_member_name(jb, "action");
    json_builder_add_string_value(jb, s->action_name);
    json_builder_set_member_name(jb, "delay_ms");
    json_builder_add_int_value(jb, (gint64)s->delay_ms);
    json_builder_set_member_name(jb, "cause");
    json_builder_add_string_value(jb, s->cause);
    json_builder_set_member_name(jb, "outcome");
    json_builder_add_string_value(jb, s->outcome);
    json_builder_set_member_name(jb, "reason");
    json_builder_add_string_value(jb, s->reason);
    json_builder_set_member_name(jb, "is_failure");
    json_builder_add_boolean_value(jb, s->is_failure);
    json_builder_set_member_name(jb, "failure_number");
    json_builder_add_int_value(jb, s->failure_number);
    json_builder_set_member_name(jb, "plugin_error");
    json_builder_add_boolean_value(jb, s->plugin_error);
    json_builder_set_member_name(jb, "handled");
    json_builder_add_boolean_value(jb, s->handled);
    json_builder_set_member_name(jb, "verdict");
    json_builder_add_int_value(jb, s->verdict);
    if (s->action == JET_MOCK_HELD) {
        json_builder_set_member_name(jb, "held_behind");
        json_builder_add_int_value(jb, (gint64)s->held_behind);
    }
    if (s->action == JET_MOCK_CAPTURE) {
        json_builder_set_member_name(jb, "dlq");
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "subject");
        json_builder_add_string_value(jb, s->dlq_subject);
        json_builder_set_member_name(jb, "headers");
        json_builder_begin_array(jb);
        for (size_t i = 0; i < s->n_dlq_headers; i++) {
            json_builder_begin_array(jb);
            json_builder_add_string_value(jb, s->dlq_headers[i].name);
            json_builder_add_string_value(jb, s->dlq_headers[i].value);
            json_builder_end_array(jb);
        }
        json_builder_end_array(jb);
        json_builder_end_object(jb);
    }
    if (s->n_publishes > 0) {
        json_builder_set_member_name(jb, "publishes");
        json_builder_begin_array(jb);
        for (size_t i = 0; i < s->n_publishes; i++) {
            const jet_mock_publish *p = &s->publishes[i];
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "subject");
            json_builder_add_string_value(jb, p->subject);
            json_builder_set_member_name(jb, "headers");
            json_builder_begin_array(jb);
            for (size_t h = 0; h < p->n_headers; h++) {
                json_builder_begin_array(jb);
                json_builder_add_string_value(jb, p->headers[h].name);
                json_builder_add_string_value(jb, p->headers[h].value);
                json_builder_end_array(jb);
            }
            json_builder_end_array(jb);
            add_payload(jb, p->data, p->len);
            json_builder_set_member_name(jb, "result");
            json_builder_add_string_value(jb, p->result);
            json_builder_end_object(jb);
        }
        json_builder_end_array(jb);
    }
    add_violations(jb, m, violations_before);
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    print_node(root);
}

/* A line for what happened outside a delivery (start, stop). */
static void print_event(const jet_mock *m, const char *event, size_t violations_before)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "event");
    json_builder_add_string_value(jb, event);
    add_violations(jb, m, violations_before);
    json_builder_end_object(jb);
    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    print_node(root);
}

/* An event line, at the place in the input the test puts it:
 *   {"event": "kv_initial_done"}  what the daemon signals once a KV watch
 *                                 caught up;
 *   {"event": "deliver_held"}     runs the next message released from its
 *                                 lane (jet_mock_deliver_held), printed as a
 *                                 settlement of this line. */
enum { EVENT_NONE, EVENT_DONE, EVENT_VIOLATION, EVENT_FAILED };

/* Every pending delivery the plugin has completed (max_in_flight), one
 * settlement line each, in the order completed; TRUE when one broke a
 * rule. */
static gboolean settle_completed(jet_mock *m, guint line_no)
{
    gboolean violated = FALSE;
    for (;;) {
        size_t before = jet_mock_violation_count(m);
        jet_mock_settlement s;
        int rc = jet_mock_settle_completed(m, &s);
        if (rc < 0)
            return violated;   /* none left completed */
        print_settlement(m, line_no, &s, before);
        violated = violated || rc == JET_MOCK_VIOLATION;
    }
}

static int event_line(jet_mock *m, guint line_no, JsonObject *o)
{
    if (!json_object_has_member(o, "event"))
        return EVENT_NONE;
    JsonNode *n = json_object_get_member(o, "event");
    const char *what = JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
                           ? json_node_get_string(n) : NULL;
    if (json_object_get_size(o) != 1 ||
        (g_strcmp0(what, "kv_initial_done") != 0 && g_strcmp0(what, "deliver_held") != 0 &&
         g_strcmp0(what, "settle_completed") != 0)) {
        fprintf(stderr, "jethost mock: stdin:%u: an event line is exactly {\"event\": \"kv_initial_done\"}, "
                "{\"event\": \"deliver_held\"} or {\"event\": \"settle_completed\"}\n", line_no);
        return EVENT_FAILED;
    }
    size_t before = jet_mock_violation_count(m);
    if (strcmp(what, "settle_completed") == 0)
        return settle_completed(m, line_no) ? EVENT_VIOLATION : EVENT_DONE;
    if (strcmp(what, "deliver_held") == 0) {
        jet_mock_settlement s;
        int rc = jet_mock_deliver_held(m, &s);
        if (rc < 0) {
            fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no, jet_mock_error(m));
            return EVENT_FAILED;
        }
        print_settlement(m, line_no, &s, before);
        return rc == JET_MOCK_VIOLATION ? EVENT_VIOLATION : EVENT_DONE;
    }
    int rc = jet_mock_kv_initial_done(m);
    if (rc < 0) {
        fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no, jet_mock_error(m));
        return EVENT_FAILED;
    }
    print_event(m, what, before);
    return rc == JET_MOCK_VIOLATION ? EVENT_VIOLATION : EVENT_DONE;
}

/* A batch line, {"batch": [message, ...]}: the messages handed to the
 * plugin's handle_batch() together (jet_mock_deliver_batch), one
 * settlement line each, in order.  Fault points and publish errors are for
 * one message: refused in a batch. */
static int batch_line(jet_mock *m, guint line_no, JsonObject *o)
{
    if (!json_object_has_member(o, "batch"))
        return EVENT_NONE;
    JsonNode *n = json_object_get_member(o, "batch");
    if (json_object_get_size(o) != 1 || !JSON_NODE_HOLDS_ARRAY(n) || json_array_get_length(json_node_get_array(n)) == 0) {
        fprintf(stderr, "jethost mock: stdin:%u: a batch line is exactly {\"batch\": [message, ...]}, one message at "
                "least\n", line_no);
        return EVENT_FAILED;
    }
    JsonArray *a = json_node_get_array(n);
    guint count = json_array_get_length(a);
    g_autoptr(GPtrArray) msgs = g_ptr_array_new_with_free_func((GDestroyNotify)jet_mock_msg_free);
    for (guint i = 0; i < count; i++) {
        JsonNode *e = json_array_get_element(a, i);
        if (!JSON_NODE_HOLDS_OBJECT(e)) {
            fprintf(stderr, "jethost mock: stdin:%u: batch[%u]: a message is a JSON object\n", line_no, i);
            return EVENT_FAILED;
        }
        static const char *const one_message[] = { "crash_after_publish", "ack_lost", "publish_error" };
        for (gsize k = 0; k < G_N_ELEMENTS(one_message); k++) {
            if (json_object_has_member(json_node_get_object(e), one_message[k])) {
                fprintf(stderr, "jethost mock: stdin:%u: batch[%u]: %s is for one message, not in a batch\n",
                        line_no, i, one_message[k]);
                return EVENT_FAILED;
            }
        }
        g_autoptr(GError) err = NULL;
        jet_mock_msg *b = message_from_line(m, json_node_get_object(e), &err);
        if (b == NULL) {
            fprintf(stderr, "jethost mock: stdin:%u: batch[%u]: %s\n", line_no, i, err->message);
            return EVENT_FAILED;
        }
        g_ptr_array_add(msgs, b);
    }
    size_t before = jet_mock_violation_count(m);
    g_autofree jet_mock_settlement *s = g_new0(jet_mock_settlement, count);
    int rc = jet_mock_deliver_batch(m, (const jet_mock_msg *const *)msgs->pdata, count, s);
    if (rc < 0) {
        fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no, jet_mock_error(m));
        return EVENT_FAILED;
    }
    /* A batch is one call: each line carries the call's violations. */
    for (guint i = 0; i < count; i++)
        print_settlement(m, line_no, &s[i], before);
    return rc == JET_MOCK_VIOLATION ? EVENT_VIOLATION : EVENT_DONE;
}

/* --- the command ------------------------------------------------------------ */

static gboolean split_kv(const char *arg, const char *what, char **k, char **v)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg) {
        fprintf(stderr, "jethost mock: %s '%s': expected KEY=VALUE\n", what, arg);
        return FALSE;
    }
    *k = g_strndup(arg, (gsize)(eq - arg));
    *v = g_strdup(eq + 1);
    return TRUE;
}

static void mock_freep(jet_mock **m)
{
    jet_mock_free(*m);
}

int jet_mock_cli_main(int argc, char **argv)
{
    g_autofree char *plugin = NULL;
    g_auto(GStrv) options = NULL;
    g_auto(GStrv) policy = NULL;
    g_autofree char *binding = NULL;
    g_autofree char *clock = NULL;
    gboolean quiet = FALSE;
    GOptionEntry entries[] = {
        { "plugin", 'p', 0, G_OPTION_ARG_FILENAME, &plugin, "the plugin shared object", "FILE.so" },
        { "option", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &options, "a plugin option (repeatable)", "NAME=VALUE" },
        { "policy", 0, 0, G_OPTION_ARG_STRING_ARRAY, &policy,
          "a binding setting, as in the config: rungs, max_attempts, postpone_horizon, "
          "max_postpone_delay, max_deliver, capture_reserve, crash_limit, kind, bucket, key (repeatable)", "KEY=VALUE" },
        { "binding", 'b', 0, G_OPTION_ARG_STRING, &binding, "the binding's name (default: mock)", "NAME" },
        { "clock", 0, 0, G_OPTION_ARG_STRING, &clock,
          "the clock at start: RFC 3339 or unix ns (default: 2024-01-01T00:00:00Z)", "TIME" },
        { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "do not echo the plugin's log lines on stderr", NULL },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("< messages.jsonl - run a plugin on the mock host");
    g_option_context_set_summary(ctx,
        "Reads one JSON message per line on stdin and writes, per line, the settlement the\n"
        "daemon would make (docs/mock.md).  Exit 0: no rule broken; 1: a strict rule broken;\n"
        "2: bad arguments or input; 3: the plugin did not load or start.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "jethost mock: %s\n", err->message);
        return JET_EXIT_USAGE;
    }
    if (plugin == NULL || argc > 1) {
        fprintf(stderr, "jethost mock: give the plugin with --plugin FILE.so, and the messages on stdin\n");
        return JET_EXIT_USAGE;
    }
    gint64 start_ns = 0;
    if (clock != NULL && !parse_time_text(clock, &start_ns, &err)) {
        fprintf(stderr, "jethost mock: --clock: %s\n", err->message);
        return JET_EXIT_USAGE;
    }

    char msg[1024];
    __attribute__((cleanup(mock_freep))) jet_mock *m = jet_mock_new_from_path(plugin, msg, sizeof msg);
    if (m == NULL) {
        fprintf(stderr, "jethost mock: %s\n", msg);
        return JET_EXIT_CONFIG;
    }
    jet_mock_set_abort_on_violation(m, 0);
    jet_mock_set_log_echo(m, !quiet);
    if (clock != NULL)
        jet_mock_clock_set_ns(m, start_ns);
    if (binding != NULL && jet_mock_set_binding(m, binding, NULL, NULL) != JET_MOCK_OK) {
        fprintf(stderr, "jethost mock: %s\n", jet_mock_error(m));
        return JET_EXIT_USAGE;
    }
    for (guint i = 0; options != NULL && options[i] != NULL; i++) {
        g_autofree char *k = NULL, *v = NULL;
        if (!split_kv(options[i], "--option", &k, &v))
            return JET_EXIT_USAGE;
        jet_mock_set_option(m, k, v);
    }
    for (guint i = 0; policy != NULL && policy[i] != NULL; i++) {
        g_autofree char *k = NULL, *v = NULL;
        if (!split_kv(policy[i], "--policy", &k, &v))
            return JET_EXIT_USAGE;
        if (jet_mock_set_policy(m, k, v) != JET_MOCK_OK) {
            fprintf(stderr, "jethost mock: --policy %s\n", jet_mock_error(m));
            return JET_EXIT_USAGE;
        }
    }
    int rc = jet_mock_start(m);
    if (rc != JET_MOCK_OK) {
        fprintf(stderr, "jethost mock: %s\n", jet_mock_error(m));
        if (jet_mock_violation_count(m) > 0)
            print_event(m, "start", 0);
        return rc == JET_MOCK_EINVAL ? JET_EXIT_USAGE : JET_EXIT_CONFIG;
    }
    if (jet_mock_violation_count(m) > 0)
        print_event(m, "start", 0);

    g_autoptr(GInputStream) raw = g_unix_input_stream_new(0, FALSE);
    g_autoptr(GDataInputStream) in = g_data_input_stream_new(raw);
    guint line_no = 0;
    int exit_code = JET_EXIT_OK;
    for (;;) {
        gsize len = 0;
        g_autofree char *line = g_data_input_stream_read_line_utf8(in, &len, NULL, &err);
        if (err != NULL) {
            fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no + 1, err->message);
            return JET_EXIT_USAGE;
        }
        if (line == NULL)
            break;
        line_no++;
        g_strstrip(line);
        if (line[0] == '\0')
            continue;
        if (!depth_ok(line, &err)) {
            fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no, err->message);
            return JET_EXIT_USAGE;
        }
        g_autoptr(JsonParser) parser = json_parser_new();
        if (!json_parser_load_from_data(parser, line, -1, &err)) {
            fprintf(stderr, "jethost mock: stdin:%u: not JSON: %s\n", line_no, err->message);
            return JET_EXIT_USAGE;
        }
        JsonNode *root = json_parser_get_root(parser);
        if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
            fprintf(stderr, "jethost mock: stdin:%u: expected one JSON object per line\n", line_no);
            return JET_EXIT_USAGE;
        }
        int ev = event_line(m, line_no, json_node_get_object(root));
        if (ev == EVENT_NONE)
            ev = batch_line(m, line_no, json_node_get_object(root));
        if (ev == EVENT_FAILED)
            return JET_EXIT_USAGE;
        if (ev != EVENT_NONE) {
            if (ev == EVENT_VIOLATION)
                exit_code = JET_EXIT_FAILURE;
            continue;
        }
        jet_mock_msg *b = message_from_line(m, json_node_get_object(root), &err);
        if (b == NULL) {
            fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no, err->message);
            return JET_EXIT_USAGE;
        }
        size_t before = jet_mock_violation_count(m);
        jet_mock_settlement s;
        rc = jet_mock_deliver(m, b, &s);
        if (rc < 0) {
            fprintf(stderr, "jethost mock: stdin:%u: %s\n", line_no, jet_mock_error(m));
            jet_mock_msg_free(b);
            return JET_EXIT_FAILURE;
        }
        print_settlement(m, line_no, &s, before);
        if (rc == JET_MOCK_VIOLATION)
            exit_code = JET_EXIT_FAILURE;
        jet_mock_msg_free(b);
    }
    if (settle_completed(m, line_no))
        exit_code = JET_EXIT_FAILURE;
    size_t before = jet_mock_violation_count(m);
    if (jet_mock_stop(m) == JET_MOCK_VIOLATION) {
        print_event(m, "stop", before);
        exit_code = JET_EXIT_FAILURE;
    }
    return exit_code;
}
