/* A jet_msg kept past its handle() (docs/plugin-guide.md, "The message is
 * borrowed"), in the daemon, against a real nats-server.
 *
 * fx_stale keeps each handle and, in the next handle(), calls every message
 * function on the kept one, from the handler's thread and from a second
 * thread.  With one worker, the next message is lent from the very slot (and,
 * before handles, the very stack frame) the kept one was: every such call is
 * refused with the error value, none reads or writes the current message, the
 * engine counts each as a plugin error (stale_handles), one log line per kept
 * handle names the plugin and the first function called, and every message
 * is still acked with no reason. */
#include "rig.h"
#include "host_api.h"
#include "jet_msg.h"
#include "log.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#define N_MSGS 4
/* Message functions fx_stale calls on a stale handle, per thread. */
#define CALLS_PER_USE 15

typedef struct {
    GMutex lock;
    guint acks, others;
    guint with_reason;
} Settled;

static void on_settle(guint64 seq, guint32 deliveries, const JetSettleAction *a, gpointer data)
{
    Settled *s = data;
    (void)seq;
    (void)deliveries;
    g_mutex_lock(&s->lock);
    if (a->kind == JET_ACTION_ACK)
        s->acks++;
    else
        s->others++;
    if (a->reason[0] != '\0')
        s->with_reason++;
    g_mutex_unlock(&s->lock);
}

static void test_kept_handle_refused(void)
{
    /* The host's log lines go to a file for the duration, to be read back. */
    g_autofree char *log_path = g_build_filename(jet_test_private_dir(), "stale.stderr", NULL);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(dup2(fd, STDERR_FILENO), ==, STDERR_FILENO);
    close(fd);

    Settled settled = { 0 };
    g_mutex_init(&settled.lock);
    Rig r = { 0 };
    r.settle_hook = on_settle;
    r.settle_data = &settled;
    rig_server(&r);
    g_autofree char *out = g_build_filename(r.dir, "stale.out", NULL);
    g_autofree char *keys = g_strdup_printf("workers = 1\noption.out = %s\n", out);
    rig_engine_plugin(&r, "fx_stale", keys);
    jet_test_publish_n(r.js, "orders.new", N_MSGS);
    FloorWait fw = { &r, N_MSGS };
    gboolean reached = jet_test_wait_until(floor_reached, &fw, 20000);
    rig_stop(&r);
    JetEngineStats st;
    jet_engine_stats(r.eng, &st);
    rig_free(&r);

    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    g_assert_true(reached);

    g_autofree char *text = NULL;
    g_assert_true(g_file_get_contents(out, &text, NULL, NULL));
    g_test_message("fx_stale wrote:\n%s", text);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    const char *refused = "subject=- seq=0 cseq=0 len=0 data=- header=- each=-1 del=0 fail=0 post=0 enq=0 first=0 "
                          "reason=-1 delay=-1 stream=- consumer=-";
    guint current = 0, uses = 0;
    for (char **l = lines; *l != NULL && **l != '\0'; l++) {
        if (g_str_has_prefix(*l, "cur=")) {
            /* The current message reads as itself. */
            current++;
            g_autofree char *want = g_strdup_printf("cur=%u subject=orders.new stale=%d", current, current > 1);
            g_assert_cmpstr(*l, ==, want);
            continue;
        }
        const char *sp = strchr(*l, ' ');
        g_assert_nonnull(sp);
        g_assert_true(g_str_has_prefix(*l, "handler ") || g_str_has_prefix(*l, "thread "));
        g_assert_cmpstr(sp + 1, ==, refused);
        uses++;
    }
    g_assert_cmpuint(current, ==, N_MSGS);
    g_assert_cmpuint(uses, ==, 2 * (N_MSGS - 1));

    /* Counted as plugin errors; the messages themselves untouched. */
    g_assert_cmpuint(st.stale_handles, ==, (guint64)uses * CALLS_PER_USE);
    g_assert_cmpuint(st.acked, ==, N_MSGS);
    g_assert_cmpuint(st.handler_failed, ==, 0);
    g_assert_cmpuint(settled.acks, ==, N_MSGS);
    g_assert_cmpuint(settled.others, ==, 0);
    g_assert_cmpuint(settled.with_reason, ==, 0);
    g_mutex_clear(&settled.lock);

    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(log_path, &log, NULL, NULL));
    g_test_message("host log:\n%s", log);
    const char *needle = "event=stale-handle msg=\"plugin fx-stale called msg_set_reason() on a jet_msg after "
                         "its handle() returned: refused";
    g_assert_cmpuint(jet_test_count_lines(log, needle), ==, N_MSGS - 1);
    g_assert_cmpuint(jet_test_count_lines(log, "binding=t event=stale-handle"), ==, N_MSGS - 1);
}

static void count_stale(gpointer data, const char *fn)
{
    (void)fn;
    g_atomic_int_inc((gint *)data);
}

/* The handle table alone: a handle is refused once its lend ended, also after
 * the same thread lends the next message, and never reads a message freed
 * since (under ASan, a read would be reported). */
static void test_handle_table(void)
{
    const jet_host_api *h = jet_host_api_table();
    gint stale = 0;
    const JetMsgOwner owner = { "b", "p", count_stale, &stale };
    jet_msg *a = g_new0(jet_msg, 1);
    a->stream_seq = 1;
    a->subject = "one";
    jet_msg *ha = jet_msg_lend(a, &owner);
    g_assert_true(ha != a);
    g_assert_cmpstr(h->msg_subject(ha), ==, "one");
    g_assert_cmpuint(jet_msg_lent_seq(ha), ==, 1);
    jet_msg_unlend(ha);
    g_free(a);
    g_assert_null(h->msg_subject(ha));
    g_assert_cmpint(g_atomic_int_get(&stale), ==, 1);

    jet_msg b;
    memset(&b, 0, sizeof b);
    b.stream_seq = 2;
    b.subject = "two";
    jet_msg_reset_verdict(&b);
    jet_msg *hb = jet_msg_lend(&b, &owner);
    g_assert_true(hb != ha);
    g_assert_null(h->msg_subject(ha));
    g_assert_cmpint(h->msg_set_reason(ha, "kept"), ==, JET_EINVAL);
    g_assert_cmpint(h->msg_set_delay_ms(ha, 5), ==, JET_EINVAL);
    g_assert_false(b.has_reason);
    g_assert_false(b.has_delay);
    g_assert_cmpint(g_atomic_int_get(&stale), ==, 4);
    g_assert_cmpstr(h->msg_subject(hb), ==, "two");
    g_assert_cmpint(h->msg_set_reason(hb, "mine"), ==, JET_OK);
    g_assert_cmpstr(b.reason, ==, "mine");
    jet_msg_unlend(hb);
    g_assert_cmpint(g_atomic_int_get(&stale), ==, 4);
}

/* More messages lent at once than the host has handle slots (workers times
 * batch_max past JET_MSG_HANDLE_SLOTS, which `jethost check` approves
 * without max_in_flight): the ones past the slots are lent as they are, and
 * still work; every slot comes back when the lending thread ends, for the
 * next thread. */
#define MANY (JET_MSG_HANDLE_SLOTS + 80)

static gpointer lend_many(gpointer data)
{
    guint *raw = data;
    const jet_host_api *h = jet_host_api_table();
    const JetMsgOwner owner = { "b", "p", NULL, NULL };
    jet_msg *msgs = g_new0(jet_msg, MANY);
    jet_msg **lent = g_new(jet_msg *, MANY);
    for (guint i = 0; i < MANY; i++) {
        msgs[i].stream_seq = i + 1;
        msgs[i].subject = "s";
        lent[i] = jet_msg_lend_nth(&msgs[i], &owner, i);
        *raw += lent[i] == &msgs[i];
    }
    for (guint i = 0; i < MANY; i++) {
        g_assert_cmpstr(h->msg_subject(lent[i]), ==, "s");
        g_assert_cmpuint(jet_msg_lent_seq(lent[i]), ==, i + 1);
    }
    for (guint i = 0; i < MANY; i++)
        jet_msg_unlend(lent[i]);
    g_free(lent);
    g_free(msgs);
    return NULL;
}

static void test_handle_slots_run_out(void)
{
    guint raw = 0;
    g_thread_join(g_thread_new("lend-many", lend_many, &raw));
    g_test_message("%u of %u lent as they are", raw, MANY);
    g_assert_cmpuint(raw, >=, MANY - JET_MSG_HANDLE_SLOTS);
    g_assert_cmpuint(raw, <, MANY);
    guint again = 0;
    g_thread_join(g_thread_new("lend-many-again", lend_many, &again));
    g_assert_cmpuint(again, ==, raw);   /* the first thread's slots came back */
}

typedef struct {
    jet_msg *handle;
    gint go;          /* atomic: the caller may start */
    gint running;     /* atomic: it has made one call through a valid handle */
    gint stop;        /* atomic */
    gint answers_after_refusal;
} Caller;

static gpointer caller_main(gpointer data)
{
    Caller *c = data;
    const jet_host_api *h = jet_host_api_table();
    gboolean refused = FALSE;
    while (!g_atomic_int_get(&c->go))
        g_thread_yield();
    while (!g_atomic_int_get(&c->stop)) {
        const char *s = h->msg_subject(c->handle);
        if (s == NULL)
            refused = TRUE;
        else if (refused)
            g_atomic_int_inc(&c->answers_after_refusal);
        else
            g_atomic_int_set(&c->running, 1);
    }
    return NULL;
}

/* A plugin's own thread calling through the handle while handle() returns:
 * the lend ends only when its call in progress is over, and no call after
 * that reaches the message, which is freed at once. */
static void test_handle_other_thread(void)
{
    gint stale = 0;
    const JetMsgOwner owner = { "b", "p", count_stale, &stale };
    for (int i = 0; i < 200; i++) {
        jet_msg *m = g_new0(jet_msg, 1);
        m->subject = g_strdup("live");
        Caller c = { .handle = jet_msg_lend(m, &owner) };
        GThread *t = g_thread_new("caller", caller_main, &c);
        g_atomic_int_set(&c.go, 1);
        while (!g_atomic_int_get(&c.running))
            g_thread_yield();
        jet_msg_unlend(c.handle);
        g_free((char *)m->subject);
        g_free(m);
        g_atomic_int_set(&c.stop, 1);
        g_thread_join(t);
        g_assert_cmpint(c.answers_after_refusal, ==, 0);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/msg-lifetime/handle-table", test_handle_table);
    g_test_add_func("/msg-lifetime/handle-other-thread", test_handle_other_thread);
    g_test_add_func("/msg-lifetime/handle-slots-run-out", test_handle_slots_run_out);
    g_test_add_func("/msg-lifetime/kept-handle-refused", test_kept_handle_refused);
    return g_test_run();
}
