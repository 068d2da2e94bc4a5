/* A KV bucket's entry as a kind = kv binding reads it from a delivery of the
 * bucket's stream (docs/kv.md, "What a plugin sees"). */
#ifndef JET_KV_ENTRY_H
#define JET_KV_ENTRY_H

#include <glib.h>
#include <jethost/plugin.h>

typedef struct {
    const char *key;   /* borrowed from the subject */
    jet_kv_op op;
} JetKvEntry;

/* The entry of `bucket` in a message: its key (the subject without
 * `$KV.<bucket>.`) and its operation (the `KV-Operation` header: none for a
 * put, `DEL` or `PURGE`).  headers: name/value pairs as the host parsed them
 * (may be NULL); without one, a server's marker (`Nats-Marker-Reason`:
 * MaxAge or Purge a purge, Remove or any other reason a delete).  FALSE,
 * with *why (free it) saying what, for a message no KV
 * client would have written: a subject outside the bucket, a key outside
 * the KV key alphabet, an unknown or repeated operation. */
gboolean jet_kv_entry_read(const char *bucket, const char *subject, const GPtrArray *headers, JetKvEntry *out,
                           char **why);

/* "put", "delete", "purge", or "none". */
const char *jet_kv_op_name(jet_kv_op op);

#endif
