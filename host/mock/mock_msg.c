/* The message builder: what a test delivers, as the server would hand it
 * over (include/jethost/mock.h, "Messages"). */
#include "mock_private.h"

#include <string.h>

jet_mock_msg *jet_mock_msg_new(jet_mock *m, const char *subject)
{
    g_return_val_if_fail(m != NULL && subject != NULL, NULL);
    jet_mock_msg *b = g_new0(jet_mock_msg, 1);
    b->subject = g_strdup(subject);
    b->headers = g_ptr_array_new_with_free_func(g_free);
    m->next_seq++;
    b->stream_seq = m->next_seq;
    b->consumer_seq = m->next_seq;
    b->deliveries = 1;
    b->has_enqueued = TRUE;
    b->enqueued_ns = jet_mock_clock_ns(m);
    return b;
}

jet_mock_msg *jet_mock_msg_new_kv(jet_mock *m, const char *key, jet_kv_op op)
{
    g_return_val_if_fail(m != NULL && key != NULL, NULL);
    const char *kind = g_hash_table_lookup(m->settings, "kind");
    const char *bucket = g_hash_table_lookup(m->settings, "bucket");
    if (g_strcmp0(kind, "kv") != 0 || bucket == NULL) {
        jet__mock_fail(m, JET_MOCK_ESTATE, "jet_mock_msg_new_kv: set the policy's kind = kv and bucket first");
        return NULL;
    }
    const char *op_header = NULL;
    switch (op) {
    case JET_KV_PUT: break;
    case JET_KV_DELETE: op_header = "DEL"; break;
    case JET_KV_PURGE: op_header = "PURGE"; break;
    default:
        jet__mock_fail(m, JET_MOCK_EINVAL, "jet_mock_msg_new_kv: op %d is not JET_KV_PUT, _DELETE or _PURGE", (int)op);
        return NULL;
    }
    g_autofree char *subject = g_strdup_printf("$KV.%s.%s", bucket, key);
    jet_mock_msg *b = jet_mock_msg_new(m, subject);
    if (op_header != NULL)
        jet_mock_msg_add_header(b, "KV-Operation", op_header);
    return b;
}

jet_mock_msg *jet__mock_msg_copy(const jet_mock_msg *b)
{
    jet_mock_msg *c = g_new(jet_mock_msg, 1);
    *c = *b;
    c->subject = g_strdup(b->subject);
    c->data = b->len > 0 ? g_memdup2(b->data, b->len) : NULL;
    c->headers = jet__mock_headers_copy(b->headers);
    return c;
}

void jet_mock_msg_free(jet_mock_msg *b)
{
    if (b == NULL)
        return;
    g_free(b->subject);
    g_free(b->data);
    g_ptr_array_unref(b->headers);
    g_free(b);
}

void jet_mock_msg_set_data(jet_mock_msg *b, const void *data, size_t len)
{
    g_return_if_fail(b != NULL && (data != NULL || len == 0));
    g_free(b->data);
    b->data = len > 0 ? g_memdup2(data, len) : NULL;
    b->len = len;
}

void jet_mock_msg_set_text(jet_mock_msg *b, const char *text)
{
    g_return_if_fail(b != NULL && text != NULL);
    jet_mock_msg_set_data(b, text, strlen(text));
}

void jet_mock_msg_add_header(jet_mock_msg *b, const char *name, const char *value)
{
    g_return_if_fail(b != NULL && name != NULL && value != NULL);
    g_ptr_array_add(b->headers, g_strdup(name));
    g_ptr_array_add(b->headers, g_strdup(value));
}

void jet_mock_msg_set_header(jet_mock_msg *b, const char *name, const char *value)
{
    g_return_if_fail(b != NULL && name != NULL && value != NULL);
    for (guint i = 0; i + 1 < b->headers->len;) {
        if (strcmp(g_ptr_array_index(b->headers, i), name) == 0)
            g_ptr_array_remove_range(b->headers, i, 2);
        else
            i += 2;
    }
    jet_mock_msg_add_header(b, name, value);
}

void jet_mock_msg_set_seq(jet_mock_msg *b, uint64_t stream_seq, uint64_t consumer_seq)
{
    g_return_if_fail(b != NULL);
    b->stream_seq = stream_seq;
    b->consumer_seq = consumer_seq;
}

void jet_mock_msg_set_deliveries(jet_mock_msg *b, uint32_t deliveries)
{
    g_return_if_fail(b != NULL && deliveries >= 1);
    b->deliveries = deliveries;
}

void jet_mock_msg_set_enqueued_ns(jet_mock_msg *b, int64_t unix_ns)
{
    g_return_if_fail(b != NULL);
    b->has_enqueued = TRUE;
    b->enqueued_ns = unix_ns;
}

void jet_mock_msg_clear_enqueued(jet_mock_msg *b)
{
    g_return_if_fail(b != NULL);
    b->has_enqueued = FALSE;
    b->enqueued_ns = 0;
}

/* A ledger count stands for the deliveries that made it: the delivery
 * count is raised to explain them (the daemon reads no ledger on a first
 * delivery, and treats deliveries the ledger does not explain as crashes). */
static void explained_deliveries(jet_mock_msg *b)
{
    guint64 need = 1 + (guint64)b->failures + b->postpones + b->strikes;
    if (b->deliveries < need)
        b->deliveries = (guint32)MIN(need, G_MAXUINT32);
}

void jet_mock_msg_set_ledger(jet_mock_msg *b, uint32_t failures, uint32_t postpones)
{
    g_return_if_fail(b != NULL);
    b->failures = failures;
    b->postpones = postpones;
    explained_deliveries(b);
}

void jet_mock_msg_set_first_failure_ns(jet_mock_msg *b, int64_t unix_ns)
{
    g_return_if_fail(b != NULL);
    b->has_first_failure = TRUE;
    b->first_failure_ns = unix_ns;
}

void jet_mock_msg_clear_first_failure(jet_mock_msg *b)
{
    g_return_if_fail(b != NULL);
    b->has_first_failure = FALSE;
    b->first_failure_ns = 0;
}

void jet_mock_msg_set_strikes(jet_mock_msg *b, uint32_t strikes)
{
    g_return_if_fail(b != NULL);
    b->strikes = strikes;
    explained_deliveries(b);
}

void jet_mock_msg_set_breaker_claim(jet_mock_msg *b, int claimed)
{
    g_return_if_fail(b != NULL);
    b->breaker_claim = claimed != 0;
}
