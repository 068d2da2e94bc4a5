/* The selection of dead-letter records (dlq_filter.h). */
#include "dlq_filter.h"

#include "dlq_record.h"
#include "duration.h"
#include "errors.h"
#include "hdr_block.h"
#include "json_out.h"
#include "names.h"

#include <string.h>

typedef enum {
    F_CAUSE,
    F_ORIGIN,
    F_CONSUMER,
    F_SUBJECT,
    F_BINDING,
    F_PLUGIN,
    F_HOST,
    F_REASON,
    F_N,
} Field;

static const struct {
    const char *name;
    const char *header;
} fields[F_N] = {
    [F_CAUSE] = { "cause", JET_HDR_CAUSE },
    [F_ORIGIN] = { "origin", JET_HDR_ORIGIN_STREAM },
    [F_CONSUMER] = { "consumer", JET_HDR_ORIGIN_CONSUMER },
    [F_SUBJECT] = { "subject", JET_HDR_ORIGIN_SUBJECT },
    [F_BINDING] = { "binding", JET_HDR_BINDING },
    [F_PLUGIN] = { "plugin", JET_HDR_PLUGIN },
    [F_HOST] = { "host", JET_HDR_HOST },
    [F_REASON] = { "reason", JET_HDR_REASON },
};

/* One end of the range: a sequence, a time, or open. */
typedef struct {
    guint64 seq;       /* > 0: a sequence */
    gint64 time_ns;    /* > 0: a time */
    char *text;        /* as given, for describe */
} End;

struct JetDlqFilter {
    GPtrArray *values[F_N];   /* NULL: no test on the field; reason values are folded */
    End from, until;
    guint64 limit;
};

static const char *const cause_names[] = {
    "rejected", "poison", "breaker", "budget", "exhausted", "malformed", "malformed-headers", "max-deliveries",
    "hop-limit",
    NULL,
};

const char *const *jet_dlq_cause_names(void)
{
    return cause_names;
}

JetDlqFilter *jet_dlq_filter_new(void)
{
    return g_new0(JetDlqFilter, 1);
}

void jet_dlq_filter_free(JetDlqFilter *f)
{
    if (f == NULL)
        return;
    for (int i = 0; i < F_N; i++)
        if (f->values[i] != NULL)
            g_ptr_array_unref(f->values[i]);
    g_free(f->from.text);
    g_free(f->until.text);
    g_free(f);
}

static gboolean value_error(GError **error, const char *field, const char *value, const char *why)
{
    g_autofree char *e = jet_text_escape(value, strlen(value), FALSE);
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "--%s \"%s\": %s", field, e, why);
    return FALSE;
}

gboolean jet_dlq_filter_add(JetDlqFilter *f, const char *field, const char *value, GError **error)
{
    g_return_val_if_fail(f != NULL && field != NULL && value != NULL, FALSE);
    int k = -1;
    for (int i = 0; i < F_N; i++)
        if (strcmp(fields[i].name, field) == 0)
            k = i;
    if (k < 0) {
        g_autofree char *e = jet_text_escape(field, strlen(field), FALSE);
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "no filter \"%s\" (filters: cause, origin, consumer, subject, binding, plugin, host, reason)", e);
        return FALSE;
    }
    if (*value == '\0')
        return value_error(error, field, value, "empty: it would match nothing");
    if (k == F_CAUSE && !g_strv_contains(cause_names, value)) {
        g_autofree char *known = g_strjoinv(", ", (char **)cause_names);
        g_autofree char *why = g_strdup_printf("not a cause (causes: %s)", known);
        return value_error(error, field, value, why);
    }
    const char *why = NULL;
    if (k == F_SUBJECT && (why = jet_subject_problem(value, JET_SUBJECT_WILDCARDS | JET_SUBJECT_RESERVED)) != NULL) {
        g_autofree char *said = g_strdup_printf("not a subject pattern: it %s", why);
        return value_error(error, field, value, said);
    }
    if (f->values[k] == NULL)
        f->values[k] = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(f->values[k], k == F_REASON ? g_ascii_strdown(value, -1) : g_strdup(value));
    return TRUE;
}

gboolean jet_dlq_filter_add_expr(JetDlqFilter *f, const char *expr, GError **error)
{
    const char *eq = strchr(expr, '=');
    if (eq == NULL || eq == expr) {
        g_autofree char *e = jet_text_escape(expr, strlen(expr), FALSE);
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "--filter \"%s\": give FIELD=VALUE (e.g. cause=rejected)", e);
        return FALSE;
    }
    g_autofree char *field = g_strndup(expr, (gsize)(eq - expr));
    return jet_dlq_filter_add(f, field, eq + 1, error);
}

static gboolean parse_end(End *end, const char *which, const char *text, gint64 now_ns, GError **error)
{
    guint64 seq = 0, ms = 0;
    g_clear_pointer(&end->text, g_free);
    *end = (End){ 0 };
    if (g_ascii_string_to_unsigned(text, 10, 1, G_MAXINT64, &seq, NULL)) {
        end->seq = seq;
    } else if (g_ascii_isdigit(text[0]) && strchr(text, '-') != NULL) {
        g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
        g_autoptr(GDateTime) dt = g_date_time_new_from_iso8601(text, utc);
        if (dt == NULL) {
            g_autofree char *e = jet_text_escape(text, strlen(text), FALSE);
            g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                        "--%s \"%s\": not an RFC 3339 time (2026-11-30T02:00:00Z)", which, e);
            return FALSE;
        }
        gint64 ns = g_date_time_to_unix(dt) * G_GINT64_CONSTANT(1000000000) +
                    (gint64)g_date_time_get_microsecond(dt) * 1000;
        end->time_ns = ns > 0 ? ns : 1;
    } else if (jet_duration_parse_ms(text, &ms, NULL) && ms > 0) {
        gint64 ns = now_ns - (gint64)MIN(ms, (guint64)G_MAXINT64 / 1000000) * 1000000;
        end->time_ns = ns > 0 ? ns : 1;
    } else {
        g_autofree char *e = jet_text_escape(text, strlen(text), FALSE);
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "--%s \"%s\": give a DLQ sequence (1500), a time (2026-11-30T02:00:00Z) or how long ago (90m, 2h)",
                    which, e);
        return FALSE;
    }
    end->text = g_strdup(text);
    return TRUE;
}

gboolean jet_dlq_filter_set_from(JetDlqFilter *f, const char *text, gint64 now_ns, GError **error)
{
    return parse_end(&f->from, "from", text, now_ns, error);
}

gboolean jet_dlq_filter_set_until(JetDlqFilter *f, const char *text, gint64 now_ns, GError **error)
{
    if (!parse_end(&f->until, "until", text, now_ns, error))
        return FALSE;
    /* A time is read to the microsecond, and stored times print to the
     * nanosecond: a record's own time given as the end still includes it. */
    if (f->until.time_ns > 0 && f->until.time_ns <= G_MAXINT64 - 999)
        f->until.time_ns += 999;
    return TRUE;
}

gboolean jet_dlq_filter_check_range(const JetDlqFilter *f, GError **error)
{
    const End *a = &f->from, *b = &f->until;
    if (a->text == NULL || b->text == NULL)
        return TRUE;
    /* Both of one kind: comparable.  A sequence and a time are not (the
     * stream decides which comes first), so such a pair is let through. */
    gboolean empty = (a->seq > 0 && b->seq > 0 && a->seq > b->seq) ||
                     (a->time_ns > 0 && b->time_ns > 0 && a->time_ns > b->time_ns);
    if (!empty)
        return TRUE;
    g_autofree char *ea = jet_text_escape(a->text, strlen(a->text), FALSE);
    g_autofree char *eb = jet_text_escape(b->text, strlen(b->text), FALSE);
    g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                "--from \"%s\" comes after --until \"%s\": no record can match (%s)", ea, eb,
                a->seq > 0 ? "give the lower sequence to --from"
                           : "a time ago counts back from now: --from 2h --until 1h is the hour before the last");
    return FALSE;
}

void jet_dlq_filter_set_limit(JetDlqFilter *f, guint64 limit)
{
    f->limit = limit;
}

guint64 jet_dlq_filter_limit(const JetDlqFilter *f)
{
    return f->limit;
}

gboolean jet_dlq_filter_is_everything(const JetDlqFilter *f)
{
    for (int i = 0; i < F_N; i++)
        if (f->values[i] != NULL)
            return FALSE;
    return f->from.text == NULL && f->until.text == NULL && f->limit == 0;
}

void jet_dlq_filter_start(const JetDlqFilter *f, guint64 *seq, gint64 *time_ns)
{
    *seq = f->from.seq;
    *time_ns = f->from.time_ns;
}

gboolean jet_dlq_filter_before_end(const JetDlqFilter *f, guint64 seq, gint64 stored_ns)
{
    if (f->until.seq > 0 && seq >= f->until.seq)
        return FALSE;
    if (f->until.time_ns > 0 && stored_ns >= f->until.time_ns)
        return FALSE;
    return TRUE;
}

gboolean jet_dlq_filter_seq_in_range(const JetDlqFilter *f, guint64 seq)
{
    return (f->from.seq == 0 || seq >= f->from.seq) && (f->until.seq == 0 || seq <= f->until.seq);
}

static gboolean in_range(const JetDlqFilter *f, guint64 seq, gint64 stored_ns)
{
    if (f->from.seq > 0 && seq < f->from.seq)
        return FALSE;
    if (f->from.time_ns > 0 && stored_ns < f->from.time_ns)
        return FALSE;
    if (f->until.seq > 0 && seq > f->until.seq)
        return FALSE;
    if (f->until.time_ns > 0 && stored_ns > f->until.time_ns)
        return FALSE;
    return TRUE;
}

static gboolean reason_contains(const char *reason, const char *folded_needle)
{
    g_autofree char *hay = g_ascii_strdown(reason, -1);
    return strstr(hay, folded_needle) != NULL;
}

static gboolean field_matches(Field k, const char *have, const char *want)
{
    switch (k) {
    case F_SUBJECT: return jet_subject_matches(want, have);
    case F_REASON: return reason_contains(have, want);
    default: return strcmp(have, want) == 0;
    }
}

gboolean jet_dlq_filter_matches(const JetDlqFilter *f, guint64 seq, gint64 stored_ns, const GPtrArray *headers)
{
    if (!in_range(f, seq, stored_ns))
        return FALSE;
    for (int k = 0; k < F_N; k++) {
        if (f->values[k] == NULL)
            continue;
        const char *have = headers != NULL ? jet_hdr_get(headers, fields[k].header) : NULL;
        if (have == NULL)
            return FALSE;
        gboolean any = FALSE;
        for (guint i = 0; i < f->values[k]->len && !any; i++)
            any = field_matches((Field)k, have, g_ptr_array_index(f->values[k], i));
        if (!any)
            return FALSE;
    }
    return TRUE;
}

char *jet_dlq_filter_describe(const JetDlqFilter *f)
{
    GString *s = g_string_new(NULL);
    for (int k = 0; k < F_N; k++) {
        for (guint i = 0; f->values[k] != NULL && i < f->values[k]->len; i++) {
            const char *v = g_ptr_array_index(f->values[k], i);
            g_autofree char *e = jet_text_escape(v, strlen(v), FALSE);
            g_string_append_printf(s, "%s%s=%s", s->len ? " " : "", fields[k].name, e);
        }
    }
    if (f->from.text != NULL) {
        g_autofree char *e = jet_text_escape(f->from.text, strlen(f->from.text), FALSE);
        g_string_append_printf(s, "%sfrom=%s", s->len ? " " : "", e);
    }
    if (f->until.text != NULL) {
        g_autofree char *e = jet_text_escape(f->until.text, strlen(f->until.text), FALSE);
        g_string_append_printf(s, "%suntil=%s", s->len ? " " : "", e);
    }
    if (f->limit > 0)
        g_string_append_printf(s, "%slimit=%" G_GUINT64_FORMAT, s->len ? " " : "", f->limit);
    if (s->len == 0)
        g_string_append(s, "every record");
    return g_string_free(s, FALSE);
}
