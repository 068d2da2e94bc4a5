/* A forward that feeds itself (docs/forwarding.md, "A forward that feeds
 * itself"): bindings whose declared publishes land in a stream they, or a
 * binding that publishes back to them, consume.  Pure: what the server
 * knows of a stream comes in through a function. */
#ifndef JET_PUBLISH_LOOP_H
#define JET_PUBLISH_LOOP_H

#include <glib.h>

#include "config.h"

/* A stream's subjects as the server has them: a new NULL-terminated vector
 * (the caller frees it), or NULL when the server does not have the stream
 * or cannot say. */
typedef char **(*JetStreamSubjectsFn)(const char *stream, void *data);

/* The subject patterns a binding declares it publishes to, as a new
 * NULL-terminated vector: the shipped forward plugin's `option.subject`
 * with each token a placeholder fills read as a wildcard, and the subjects
 * of every stream in `publish_streams` (server first, then a managed
 * binding's `subjects` in cfg).  No ABI call declares a plugin's subjects:
 * any other plugin declares nothing but its publish_streams. */
char **jet_publish_targets(const JetConfig *cfg, const JetBindingConfig *b, JetStreamSubjectsFn server,
                           void *data);

typedef struct {
    char *binding;   /* the binding the loop is reported on (the first of it in config order) */
    char *message;   /* names every binding of the loop, each subject and each stream */
} JetPublishLoop;

void jet_publish_loop_free(JetPublishLoop *l);

/* Every loop among cfg's bindings, as JetPublishLoop (an empty array when
 * none): a binding that publishes into what it consumes, and each cycle
 * through several (one per cycle found).  A binding with allow_loop = true
 * breaks every loop through it.  server may be NULL: the streams are then
 * known from the config's `subjects` alone. */
GPtrArray *jet_publish_loops(const JetConfig *cfg, JetStreamSubjectsFn server, void *data);

#endif
