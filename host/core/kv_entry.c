/* Reading a KV entry off a delivery (kv_entry.h).  Everything here comes
 * from whoever published the message, so nothing is taken on trust: the
 * server's KV writes only ever produce what is accepted below. */
#include "kv_entry.h"
#include "names.h"

#include <string.h>

#define KV_OPERATION "KV-Operation"
/* What a server (2.11+, a stream with subject_delete_marker_ttl) stamps on
 * the marker it writes itself when a key's last value is removed under
 * it: no KV-Operation, an empty payload (docs/kv.md, "Markers"). */
#define MARKER_REASON "Nats-Marker-Reason"

/* The alphabet of KV keys, with dots between non-empty tokens: what the
 * clients accept on a put. */
static gboolean key_ok(const char *key)
{
    return jet_kv_key_problem(key) == NULL;
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
    const char *opv = NULL, *marker = NULL;
    guint seen = 0;
    for (guint i = 0; headers != NULL && i + 1 < headers->len; i += 2) {
        if (strcmp(g_ptr_array_index(headers, i), KV_OPERATION) == 0) {
            opv = g_ptr_array_index(headers, i + 1);
            seen++;
        } else if (marker == NULL && strcmp(g_ptr_array_index(headers, i), MARKER_REASON) == 0) {
            marker = g_ptr_array_index(headers, i + 1);
        }
    }
    jet_kv_op op = JET_KV_PUT;
    if (seen > 1) {
        *why = g_strdup_printf("KV entry: %s appears %u times", KV_OPERATION, seen);
        return FALSE;
    }
    if (opv == NULL && marker != NULL && *marker != '\0') {
        /* The server's own marker: the value is gone.  As the KV clients
         * read it: an age limit or a purge is a purge, a removal a delete;
         * a reason of a newer server still stands for a removed value, so
         * a delete, never a put of an empty value. */
        op = strcmp(marker, "MaxAge") == 0 || strcmp(marker, "Purge") == 0 ? JET_KV_PURGE : JET_KV_DELETE;
    } else if (opv != NULL) {
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
