/* The host's side of the opaque jet_msg: one delivery as a plugin sees it.
 * The engine and the mock host fill one per handle() call; the settlement
 * decision reads what the plugin set on it. */
#ifndef JET_MSG_H
#define JET_MSG_H

#include <glib.h>
#include <jethost/plugin.h>

#include "forward.h"

struct JetMsgStrict;

/* A delivery its plugin may complete later (JET_PENDING, msg_complete();
 * docs/async.md): set by a transport whose binding has max_in_flight, NULL
 * elsewhere.  state holds a phase (JET_MSG_ASYNC_*) and, once completed,
 * the verdict above it: one atomic word, so a verdict is never read
 * without its phase. */
enum {
    JET_MSG_ASYNC_IN_HANDLE = 0,   /* handle() runs */
    JET_MSG_ASYNC_EARLY = 1,       /* msg_complete() came during handle() */
    JET_MSG_ASYNC_PENDING = 2,     /* handle() returned JET_PENDING */
    JET_MSG_ASYNC_DONE = 3,        /* msg_complete() came after it */
    JET_MSG_ASYNC_GIVEN_UP = 4,    /* not completed within handler_timeout */
};
#define JET_MSG_ASYNC_PHASE(state) ((state) & 0xf)
#define JET_MSG_ASYNC_VERDICT(state) ((state) >> 4)
#define JET_MSG_ASYNC_STATE(phase, verdict) ((phase) | ((verdict) << 4))

typedef struct JetMsgAsync {
    gint state;   /* atomic */
    /* After PENDING -> DONE, from msg_complete() on the plugin's thread,
     * with the handle h still pinned: the delivery is the host's again. */
    void (*completed)(struct JetMsgAsync *a, jet_msg *h);
    /* A call refused (completed already, or given up): counted. */
    void (*refused)(struct JetMsgAsync *a);
    gpointer data;
} JetMsgAsync;

struct jet_msg {
    /* The delivery as plain fields, borrowed.  headers: name/value pairs
     * in block order as the host's own parser read them (hdr_block.h), never
     * nats.c's reading; the mock host fills it from the test's list. */
    const char *subject;
    const void *data;
    size_t len;
    GPtrArray *headers;            /* of char*; may be NULL */

    const char *stream, *consumer;
    uint64_t stream_seq, consumer_seq;
    uint32_t deliveries;
    gboolean has_enqueued;
    gint64 enqueued_ns;

    /* The binding's kind (a jet_binding_kind) and, for kind = kv, the
     * entry: key borrowed from subject, op a jet_kv_op, revision the
     * stream seq (kv_entry.h). */
    int kind;
    const char *kv_key;
    int kv_op;
    uint64_t kv_revision;

    /* The binding's context (msg_ctx()), and whether its publishes may go
     * to the server's namespaces (publish_reserved). */
    jet_ctx *ctx;
    gboolean publish_reserved;

    /* From the attempt ledger (zero on a first delivery). */
    uint32_t failures, postpones;
    gboolean has_first_failure;
    gint64 first_failure_ns;

    /* Set by the plugin during handle(). */
    char reason[JET_REASON_MAX + 1];
    gboolean has_reason;
    gboolean reason_too_long;
    guint64 delay_ms;
    gboolean has_delay;
    JetPublishQueue publishes;     /* msg_publish(); owned, cleared by whoever settles */

    /* NULL, or how a pending delivery is completed (JetMsgAsync above). */
    JetMsgAsync *async;

    /* Set by the mock host when handle() returned: any further call through
     * this handle is a use after the borrow ended. */
    gboolean poisoned;

    /* The mock host's strict checks (host_strict.h), called by every host
     * function taking this handle; NULL in the daemon, which pays one
     * branch on it. */
    const struct JetMsgStrict *strict;
};

/* Resets what a plugin may set, before a handle() call. */
void jet_msg_reset_verdict(jet_msg *m);

/* --- handles the daemon lends (docs/plugin-guide.md, "The message is
 * borrowed") ---
 *
 * The daemon's jet_msg lives on a worker's stack, and the next delivery
 * reuses the very same frame: a pointer a plugin kept would read the next
 * message, or a dead frame from another thread.  So the plugin gets a handle
 * instead: an address in a reserved, never-mapped range naming a slot of the
 * worker thread and the count of its lend.  Every host function checks the
 * handle before touching anything; one whose handle() has returned (even if
 * its slot has since been lent again) is refused without reading the
 * message, logged once per handle, and reported to the lender's owner. */

/* How many handles can be lent at once, over every thread (a pending
 * delivery's included); past them a message is lent as it is. */
#define JET_MSG_HANDLE_SLOTS 4096u

/* Who lent a handle: named in the log line, told of each refused call.
 * Copied at the lend; stale(data, fn) runs under the handle table's lock, and
 * the copy is dropped when the lending thread exits, or, for a kept
 * handle's slot (jet_msg_keep), by jet_msg_forget_owner(data): data must
 * live until then. */
typedef struct {
    const char *binding;
    const char *plugin;
    void (*stale)(gpointer data, const char *fn);
    gpointer data;
} JetMsgOwner;

/* Lends m for one handle() call on this thread: returns the handle to pass to
 * the plugin (m itself if no handle could be made: the range could not be
 * reserved, or every slot is taken). */
jet_msg *jet_msg_lend(jet_msg *m, const JetMsgOwner *owner);
/* The same for the nth message of one handle_batch() call (nth from 0):
 * the thread's nth slot, so that the batch's handles are lent together. */
jet_msg *jet_msg_lend_nth(jet_msg *m, const JetMsgOwner *owner, guint nth);
/* Ends the lend: waits for host calls in progress through the handle (from
 * a plugin's other threads), after which none reaches m. */
void jet_msg_unlend(jet_msg *handle);
/* A pending delivery's handle (JET_PENDING) stays lent past handle():
 * jet_msg_keep() takes its slot from the lending thread, whose next lend
 * takes another; jet_msg_end_lend() refuses calls through it from then on
 * without waiting (msg_complete() itself holds a pin on it); and
 * jet_msg_unlend_kept() waits for the calls in progress and frees the
 * slot.  All three do nothing for a handle that is the message itself. */
void jet_msg_keep(jet_msg *handle);
void jet_msg_end_lend(jet_msg *handle);
void jet_msg_unlend_kept(jet_msg *handle);
/* A kept handle's slot, once free, still names its owner, so a late call
 * is told to it; an owner whose data is about to go calls this first. */
void jet_msg_forget_owner(gpointer data);
/* The stream seq of m, or of the message behind a handle the calling thread
 * has lent. */
guint64 jet_msg_lent_seq(const jet_msg *m);

/* For the host functions (host_api.c): the message behind h, pinned until
 * jet__msg_leave(*pin) so that an unlend waits for the call.  NULL (the
 * call must return its error value) for NULL, a handle no longer lent (the
 * call is refused, logged and reported to the owner, named fn), or a
 * message the mock host's strict checks refuse. */
typedef struct JetMsgPin JetMsgPin;
jet_msg *jet__msg_enter(const jet_msg *h, const char *fn, JetMsgPin **pin);
void jet__msg_leave(JetMsgPin *pin);

#endif
