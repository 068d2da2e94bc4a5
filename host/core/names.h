/* Names and subjects: the one set of rules the config, every command and
 * the dead-letter tools apply, so that what one accepts no other refuses
 * (docs/configuration.md, "Names and subjects").
 *
 * Each function returns NULL when its argument is acceptable, otherwise a
 * static reason worded to follow the argument ("'X' holds white space or a
 * control character"). */
#ifndef JET_NAMES_H
#define JET_NAMES_H

#include <glib.h>

/* A stream or consumer name is a directory of the server's file store, so
 * 255 bytes is the most any filesystem takes (and nats-server's own limit
 * from 2.10). */
#define JET_NAME_MAX 255
/* Subjects the host builds from a configured one (API requests, DLQ
 * records) must stay well inside the server's 4 KiB control line. */
#define JET_SUBJECT_MAX 1024
/* A KV bucket's stream is KV_<bucket>, itself a name. */
#define JET_BUCKET_MAX (JET_NAME_MAX - 3)

/* A stream, consumer or JetStream domain name, as nats-server takes it:
 * 1..255 bytes of UTF-8 without white space, control or format characters,
 * '.', '*', '>', '/' or '\\'.  Letters beyond ASCII are the server's to
 * accept, and so ours. */
const char *jet_name_problem(const char *name);

/* A KV bucket: 1..252 of A-Z a-z 0-9 _ - (what every NATS client accepts). */
const char *jet_bucket_problem(const char *bucket);

/* A KV key as written: A-Z a-z 0-9 - / _ = and '.' between non-empty
 * tokens. */
const char *jet_kv_key_problem(const char *key);

/* A binding's name: 1..255 of A-Z a-z 0-9 _ -.  Narrower than a stream
 * name because it becomes a KV key token, a metric label and a subject
 * token. */
const char *jet_binding_name_problem(const char *name);

typedef enum {
    JET_SUBJECT_LITERAL = 0,
    /* '*' and '>' as whole tokens, '>' only last: a filter, not a target. */
    JET_SUBJECT_WILDCARDS = 1 << 0,
    /* The server's namespaces ($JS., $JSC., $KV., $O., $SYS., $NRG.,
     * $MQTT., _INBOX., in any letter case) allowed: a filter on a KV
     * stream names $KV., a publish there is an API call. */
    JET_SUBJECT_RESERVED = 1 << 1,
} JetSubjectRules;

/* A subject: 1..1024 bytes of UTF-8, no white space, control or format
 * character, no empty token; '*' and '>' only as rules allows (without
 * JET_SUBJECT_WILDCARDS, anywhere: a literal '*' is almost always meant as
 * a wildcard); the server's namespaces only with JET_SUBJECT_RESERVED. */
const char *jet_subject_problem(const char *subject, JetSubjectRules rules);

#endif
