/* Provenance headers of a dead-letter record; see provenance.h. */
#include "provenance.h"

#include <string.h>

char *jet_time_format_ns(gint64 unix_ns)
{
    gint64 secs = unix_ns / G_GINT64_CONSTANT(1000000000);
    gint64 frac = unix_ns % G_GINT64_CONSTANT(1000000000);
    if (frac < 0) {
        frac += G_GINT64_CONSTANT(1000000000);
        secs -= 1;
    }
    g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(secs);
    if (dt == NULL)
        return g_strdup_printf("%" G_GINT64_FORMAT "ns", unix_ns);
    g_autofree char *base = g_date_time_format(dt, "%Y-%m-%dT%H:%M:%S");
    return g_strdup_printf("%s.%09" G_GINT64_FORMAT "Z", base, frac);
}

char *jet_provenance_msg_id(const char *stream, guint64 stream_seq)
{
    return g_strdup_printf("jethost-dlq:%s:%" G_GUINT64_FORMAT, stream != NULL ? stream : "", stream_seq);
}

char *jet_provenance_orig_name(const char *name)
{
    if (g_ascii_strncasecmp(name, "Nats-", 5) == 0 || g_ascii_strncasecmp(name, "Jethost-", 8) == 0)
        return g_strconcat(JET_PROV_ORIG_PREFIX, name, NULL);
    return g_strdup(name);
}

static void add(GPtrArray *out, const char *name, char *value)
{
    /* A header value is one line. */
    for (char *p = value; *p != '\0'; p++)
        if (*p == '\r' || *p == '\n')
            *p = ' ';
    g_ptr_array_add(out, g_strdup(name));
    g_ptr_array_add(out, value);
}

void jet_provenance_headers(const JetProvenance *p, const GPtrArray *orig, GPtrArray *out)
{
    g_return_if_fail(p != NULL && out != NULL);
    for (guint i = 0; orig != NULL && i + 1 < orig->len; i += 2) {
        g_ptr_array_add(out, jet_provenance_orig_name(g_ptr_array_index(orig, i)));
        g_ptr_array_add(out, g_strdup(g_ptr_array_index(orig, i + 1)));
    }
    add(out, JET_PROV_STREAM, g_strdup(p->stream != NULL ? p->stream : ""));
    add(out, JET_PROV_SUBJECT, g_strdup(p->subject != NULL ? p->subject : ""));
    add(out, JET_PROV_SEQ, g_strdup_printf("%" G_GUINT64_FORMAT, p->stream_seq));
    add(out, JET_PROV_CONSUMER, g_strdup(p->consumer != NULL ? p->consumer : ""));
    add(out, JET_PROV_BINDING, g_strdup(p->binding != NULL ? p->binding : ""));
    add(out, JET_PROV_DELIVERIES, g_strdup_printf("%" G_GUINT32_FORMAT, p->deliveries));
    add(out, JET_PROV_FAILURES, g_strdup_printf("%" G_GUINT32_FORMAT, p->failures));
    add(out, JET_PROV_POSTPONES, g_strdup_printf("%" G_GUINT32_FORMAT, p->postpones));
    add(out, JET_PROV_CAUSE, g_strdup(p->cause != NULL ? p->cause : ""));
    add(out, JET_PROV_REASON, g_strdup(p->reason != NULL ? p->reason : ""));
    if (p->has_first_failure)
        add(out, JET_PROV_FIRST_FAILURE, jet_time_format_ns(p->first_failure_ns));
    if (p->has_enqueued)
        add(out, JET_PROV_ENQUEUED, jet_time_format_ns(p->enqueued_ns));
    add(out, JET_PROV_CAPTURED, jet_time_format_ns(p->captured_ns));
    add(out, JET_PROV_PLUGIN, g_strdup(p->plugin_name != NULL ? p->plugin_name : ""));
    add(out, JET_PROV_PLUGIN_VERSION, g_strdup(p->plugin_version != NULL ? p->plugin_version : ""));
    add(out, JET_PROV_HOST, g_strdup(p->host_name != NULL ? p->host_name : ""));
    add(out, JET_PROV_MSG_ID, jet_provenance_msg_id(p->stream, p->stream_seq));
}
