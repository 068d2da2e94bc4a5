/* A thread's own inbox for its requests: replies.h has the why. */
#include "replies.h"

#include "sub_end.h"

#include <stdio.h>
#include <string.h>

/* nats.c frees a message on a thread of its own, woken for each one that
 * finds it asleep: messages given back together wake it once. */
#define FREE_TOGETHER 16
/* A large one is freed at once: kept, it would hold its memory for
 * nothing (its free costs little beside its copy). */
#define FREE_LATER_MAX_BYTES 4096

struct JetReplies {
    natsConnection *nc;
    natsSubscription *sub;   /* on "<inbox>.*", read by the owning thread only; NULL after a failure */
    char *prefix;            /* "<inbox>." */
    char subject[128];       /* the last request's reply subject */
    guint64 n;
    /* Unsubscribed, not yet freed: nats.c before 3.7.0 may still be
     * handling a message for one on its reading thread (sub_end.h).
     * Unsubscribing takes a subscription out of the connection's table
     * under the lock that thread looks it up with, so only a lookup made
     * before can still hold it; and that thread handles messages one at a
     * time, in order (a reconnect joins the old one before a new one
     * starts).  So once any message arrives on a newer inbox of the same
     * connection, the lookup is over and these may go. */
    GPtrArray *parked;
    natsMsg *later[FREE_TOGETHER];   /* jet_replies_free_later's */
    guint n_later;
};

static void free_now(JetReplies *r)
{
    for (guint i = 0; i < r->n_later; i++)
        natsMsg_Destroy(r->later[i]);
    r->n_later = 0;
}

static void free_parked(JetReplies *r)
{
    for (guint i = 0; i < r->parked->len; i++)
        natsSubscription_Destroy(g_ptr_array_index(r->parked, i));
    g_ptr_array_set_size(r->parked, 0);
}

/* Parks the current inbox: the next request takes a new one. */
static void rotate(JetReplies *r)
{
    if (r->sub == NULL)
        return;
    natsSubscription_Unsubscribe(r->sub);
    g_ptr_array_add(r->parked, r->sub);
    r->sub = NULL;
    g_clear_pointer(&r->prefix, g_free);
}

/* Every subscription of r ended after one round trip (sub_end.h); those it
 * cannot wait out (the connection is down) are left undestroyed: a small
 * leak, never a crash. */
static void replies_free(JetReplies *r)
{
    if (r == NULL)
        return;
    free_now(r);
    rotate(r);
    /* The unsubscribes went out in order: one round trip covers all. */
    if (r->parked->len > 0 && jet_sub_end(r->nc, g_ptr_array_index(r->parked, r->parked->len - 1)))
        free_parked(r);
    g_ptr_array_unref(r->parked);
    g_free(r->prefix);
    g_free(r);
}

static void thread_done(gpointer data)
{
    g_slist_free_full(data, (GDestroyNotify)replies_free);
}

/* This thread's inboxes, one a connection it asked on. */
static GPrivate mine = G_PRIVATE_INIT(thread_done);

static gboolean subscribe(JetReplies *r, natsStatus *s)
{
    natsInbox *inbox = NULL;
    natsSubscription *sub = NULL;
    natsStatus st = natsInbox_Create(&inbox);
    g_autofree char *wildcard = st == NATS_OK ? g_strdup_printf("%s.*", (const char *)inbox) : NULL;
    if (st == NATS_OK)
        st = natsConnection_SubscribeSync(&sub, r->nc, wildcard);
    /* Answers are few and waited for: no limit should drop one. */
    if (st == NATS_OK)
        st = natsSubscription_SetPendingLimits(sub, -1, -1);
    if (st != NATS_OK) {
        if (sub != NULL) {
            r->sub = sub;
            rotate(r);
        }
        natsInbox_Destroy(inbox);
        *s = st;
        return FALSE;
    }
    r->sub = sub;
    r->prefix = g_strdup_printf("%s.", (const char *)inbox);
    natsInbox_Destroy(inbox);
    return TRUE;
}

JetReplies *jet_replies_here(natsConnection *nc, natsStatus *s)
{
    g_return_val_if_fail(nc != NULL, NULL);
    natsStatus local;
    if (s == NULL)
        s = &local;
    *s = NATS_OK;
    GSList *list = g_private_get(&mine);
    for (GSList *l = list; l != NULL; l = l->next) {
        JetReplies *x = l->data;
        if (x->nc == nc && x->sub != NULL)
            return x;
    }
    /* The slow way, after a failure or the first time: the entries of
     * connections closed since go (their subscriptions hold its memory, so
     * no new connection can have the same address meanwhile). */
    JetReplies *r = NULL;
    for (GSList *l = list; l != NULL;) {
        JetReplies *x = l->data;
        l = l->next;
        if (natsConnection_IsClosed(x->nc)) {
            list = g_slist_remove(list, x);
            replies_free(x);
        } else if (x->nc == nc) {
            r = x;
        }
    }
    if (r == NULL) {
        r = g_new0(JetReplies, 1);
        r->nc = nc;
        r->parked = g_ptr_array_new();
        list = g_slist_prepend(list, r);
    }
    if (r->sub == NULL && !subscribe(r, s)) {
        if (r->parked->len == 0) {
            /* Nothing of r holds the connection's memory now: r goes. */
            list = g_slist_remove(list, r);
            g_ptr_array_unref(r->parked);
            g_free(r);
        }
        r = NULL;
    }
    g_private_set(&mine, list);   /* not replace: that would free the rest */
    return r;
}

const char *jet_replies_subject(JetReplies *r)
{
    g_return_val_if_fail(r->sub != NULL, NULL);
    snprintf(r->subject, sizeof r->subject, "%s%" G_GUINT64_FORMAT, r->prefix, ++r->n);
    return r->subject;
}

natsStatus jet_replies_wait(JetReplies *r, gint64 timeout_ms, natsMsg **reply)
{
    *reply = NULL;
    g_return_val_if_fail(r->sub != NULL, NATS_ILLEGAL_STATE);
    gint64 deadline = g_get_monotonic_time() + MAX(timeout_ms, 1) * 1000;
    for (;;) {
        gint64 left_ms = (deadline - g_get_monotonic_time() + 999) / 1000;
        natsMsg *m = NULL;
        natsStatus s = left_ms > 0 ? natsSubscription_NextMsg(&m, r->sub, left_ms) : NATS_TIMEOUT;
        if (s == NATS_OK || s == NATS_NO_RESPONDERS)
            free_parked(r);   /* a message came on this inbox (above) */
        if (s != NATS_OK) {
            /* NATS_NO_RESPONDERS included: nats.c hands that over without
             * the message, so whose it was cannot be read; the inbox goes
             * either way, and nothing late can reach the next request. */
            rotate(r);
            return s;
        }
        /* Only an answer to an earlier request of the same inbox can differ,
         * and only one that succeeded: its answer came already. */
        if (strcmp(natsMsg_GetSubject(m), r->subject) == 0) {
            *reply = m;
            return NATS_OK;
        }
        natsMsg_Destroy(m);
    }
}

natsStatus jet_replies_publish(JetReplies *r, natsMsg *m)
{
    natsStatus s = natsConnection_PublishMsg(r->nc, m);
    /* Part of it may have been written before the error. */
    if (s != NATS_OK)
        rotate(r);
    return s;
}

natsStatus jet_replies_request(natsConnection *nc, const char *subject, const void *data, int len,
                               gint64 timeout_ms, natsMsg **reply)
{
    JetReplies *r = jet_replies_here(nc, NULL);
    if (r == NULL)
        return natsConnection_Request(reply, nc, subject, data, len, timeout_ms);
    *reply = NULL;
    natsStatus s = natsConnection_PublishRequest(nc, subject, jet_replies_subject(r), data, len);
    if (s != NATS_OK) {
        rotate(r);   /* part of it may have been written */
        return s;
    }
    return jet_replies_wait(r, timeout_ms, reply);
}

void jet_replies_free_later(natsConnection *nc, natsMsg *m)
{
    if (m == NULL)
        return;
    if (natsMsg_GetDataLength(m) > FREE_LATER_MAX_BYTES) {
        natsMsg_Destroy(m);
        return;
    }
    for (GSList *l = g_private_get(&mine); l != NULL; l = l->next) {
        JetReplies *r = l->data;
        if (r->nc != nc)
            continue;
        if (r->n_later == FREE_TOGETHER)
            free_now(r);
        r->later[r->n_later++] = m;
        return;
    }
    natsMsg_Destroy(m);
}
