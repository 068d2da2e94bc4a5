/* Reading a KV entry off a delivery (kv_entry.h).  Everything here comes
 * from whoever published the message, so nothing is taken on trust: the
 * server's KV writes only ever produce what is accepted below. */
#include "kv_entry.h"

#include <string.h>

#define KV_OPERATION "KV-Operation"

/* The alphabet of KV keys, with dots between non-empty tokens: what the
 * clients accept on a put. */
static gboolean key_ok(const char *key)
{
    if (key[0] == '\0' || key[0] == '.')
        return FALSE;
    char prev = '\0';
    for (const char *p = key; *p != '\0'; p++) {
        char c = *p;
        if (!(g_ascii_isalnum(c) || c == '-' || c == '/' || c == '_' || c == '=' || c == '.'))
            return FALSE;
        if (c == '.' && prev == '.')
            return FALSE;
        prev = c;
    }
    return prev != '.';
}

const char *jet_kv_op_name(jet_kv_op op)
{
    switch (op) {
    case JET_KV_PUT: return "put";
    case JET_KV_DELETE: return "delete";
    case JET_KV_PURGE: return "purge";
    case JET_KV_NONE: break;
    }
    return "none";
}

gboolean jet_kv_entry_read(const char *bucket, const char *subject, const GPtrArray *headers, JetKvEntry *out,
                           char **why)
{
    g_return_val_if_fail(bucket != NULL && out != NULL && why != NULL, FALSE);
    memset(out, 0, sizeof *out);
    *why = NULL;
    gsize blen = strlen(bucket);
    if (subject == NULL || !g_str_has_prefix(subject, "$KV.") || strncmp(subject + 4, bucket, blen) != 0 ||
        subject[4 + blen] != '.') {
        g_autofree char *shown = g_strescape(subject != NULL ? subject : "", NULL);
        *why = g_strdup_printf("KV entry: subject '%.200s' is not a key of bucket %s", shown, bucket);
        return FALSE;
    }
    const char *key = subject + 4 + blen + 1;
    if (!key_ok(key)) {
        g_autofree char *shown = g_strescape(key, NULL);
        *why = g_strdup_printf("KV entry: key '%.200s' is not a valid KV key", shown);
        return FALSE;
    }
    const char *opv = NULL;
    guint seen = 0;
    for (guint i = 0; headers != NULL && i + 1 < headers->len; i += 2) {
        if (strcmp(g_ptr_array_index(headers, i), KV_OPERATION) == 0) {
            opv = g_ptr_array_index(headers, i + 1);
            seen++;
        }
    }
    jet_kv_op op = JET_KV_PUT;
    if (seen > 1) {
        *why = g_strdup_printf("KV entry: %s appears %u times", KV_OPERATION, seen);
        return FALSE;
    }
    if (opv != NULL) {
        if (strcmp(opv, "DEL") == 0) {
            op = JET_KV_DELETE;
        } else if (strcmp(opv, "PURGE") == 0) {
            op = JET_KV_PURGE;
        } else {
            g_autofree char *shown = g_strescape(opv, NULL);
            *why = g_strdup_printf("KV entry: %s '%.100s' is neither DEL nor PURGE", KV_OPERATION, shown);
            return FALSE;
        }
    }
    out->key = key;
    out->op = op;
    return TRUE;
}
