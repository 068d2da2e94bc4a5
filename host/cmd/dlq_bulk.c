/* jethost dlq replay|rm|purge: records republished only where a stream of
 * the operator's captures them (replay.h has the rules that need no
 * server), at a rate, once each (the replay's id is the record's), and
 * removed only when asked, after confirmation, and for a replay only once
 * its pub-ack is in (docs/dead-letters.md, "On call"). */
#include "dlq_private.h"

#include "dlq_record.h"
#include "errors.h"
#include "json_out.h"
#include "nats_raw.h"
#include "names.h"
#include "progress.h"
#include "replay.h"
#include "stream_names.h"
#include "stream_info.h"

#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* --- where a replay may go ------------------------------------------------- */

typedef enum {
    TARGET_OK,
    TARGET_REFUSED,   /* the record may not go there: reason set */
    TARGET_ERROR,     /* the server could not be asked: reason set */
} TargetCheck;

/* Whether some stream captures subject (stream_names.h). */
static TargetCheck any_stream_captures(JetDlq *d, const char *subject, char **reason)
{
    g_autoptr(GError) e = NULL;
    g_autofree char *stream = jet_stream_capturing(d->conn, subject, JET_DLQ_REQUEST_TIMEOUT_MS, &e);
    if (e != NULL) {
        *reason = g_strdup(e->message);
        return TARGET_ERROR;
    }
    if (stream == NULL) {
        *reason = g_strdup_printf("no stream captures %s", subject);
        return TARGET_REFUSED;
    }
    return TARGET_OK;
}

/* The subjects of stream as it is now, asked once a run: *subjects is
 * NULL when the stream does not exist. */
static TargetCheck origin_subjects(JetDlq *d, const char *stream, const char *const **subjects, char **reason)
{
    gpointer cached = NULL;
    if (g_hash_table_lookup_extended(d->origins, stream, NULL, &cached)) {
        *subjects = cached;
        return TARGET_OK;
    }
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_GetStreamInfo(&si, jet_conn_js(d->conn), stream, NULL, &jerr);
    char **list = NULL;
    if (s == NATS_OK) {
        const jsStreamConfig *sc = si->Config;
        list = g_new0(char *, (gsize)(sc != NULL ? sc->SubjectsLen : 0) + 1);
        for (int i = 0; sc != NULL && i < sc->SubjectsLen; i++)
            list[i] = g_strdup(sc->Subjects[i]);
        jsStreamInfo_Destroy(si);
    } else if (s != NATS_NOT_FOUND && jerr != JSStreamNotFoundErr) {
        g_autofree char *e = jet_nats_error(s);
        *reason = g_strdup_printf("origin stream %s: %s", stream, e);
        return TARGET_ERROR;   /* not cached: asked again for the next record */
    }
    g_hash_table_insert(d->origins, g_strdup(stream), list);
    *subjects = (const char *const *)list;
    return TARGET_OK;
}

/* The record's own target: its origin subject, if its origin stream (as it
 * is now) captures it. */
static TargetCheck origin_target(JetDlq *d, const JetDlqRec *r, char **reason)
{
    const char *subject = jet_dlq_rec_hdr(r, JET_HDR_ORIGIN_SUBJECT);
    const char *stream = jet_dlq_rec_hdr(r, JET_HDR_ORIGIN_STREAM);
    const char *why = jet_subject_problem(subject, JET_SUBJECT_LITERAL);
    if (why != NULL) {
        g_autofree char *e = jet_text_escape(subject, strlen(subject), FALSE);
        *reason = g_strdup_printf("origin subject \"%s\" %s", e, why);
        return TARGET_REFUSED;
    }
    if (stream == NULL) {
        *reason = g_strdup("no " JET_HDR_ORIGIN_STREAM " header: give --to SUBJECT");
        return TARGET_REFUSED;
    }
    if ((why = jet_name_problem(stream)) != NULL) {
        g_autofree char *e = jet_text_escape(stream, strlen(stream), FALSE);
        *reason = g_strdup_printf("origin stream \"%s\" %s", e, why);
        return TARGET_REFUSED;
    }
    const char *const *subjects = NULL;
    TargetCheck t = origin_subjects(d, stream, &subjects, reason);
    if (t != TARGET_OK)
        return t;
    if (subjects == NULL) {
        *reason = g_strdup_printf("origin stream %s does not exist (give --to SUBJECT)", stream);
        return TARGET_REFUSED;
    }
    gsize n = g_strv_length((char **)subjects);
    if (!jet_replay_captured_by(subjects, n, subject)) {
        g_autofree char *list = g_strjoinv(", ", (char **)subjects);
        *reason = g_strdup_printf("origin stream %s does not capture %s (its subjects: %s; give --to SUBJECT)",
                                  stream, subject, n > 0 ? list : "none");
        return TARGET_REFUSED;
    }
    return TARGET_OK;
}

static TargetCheck to_target(JetDlq *d, char **reason)
{
    if (d->to_captured < 0) {
        g_autofree char *why = NULL;
        TargetCheck t = any_stream_captures(d, d->to, &why);
        if (t == TARGET_ERROR) {
            *reason = g_steal_pointer(&why);
            return t;   /* asked again for the next record */
        }
        d->to_captured = t == TARGET_OK;
    }
    if (!d->to_captured) {
        *reason = g_strdup_printf("--to %s: no stream captures it", d->to);
        return TARGET_REFUSED;
    }
    return TARGET_OK;
}

/* --- the run: pace, progress, interruption --------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct {
    JetDlq *d;
    const char *verb;          /* "replay", "rm", "purge" */
    guint64 total;             /* selected */
    guint64 done;              /* gone through (each outcome below) */
    guint64 published, duplicates, removed, refused, failed, gone, skipped;
    guint64 first_failed;      /* the lowest sequence that failed (not refused): 0 none */
    gint64 start_us;
    gint64 last_bar_us;
    gboolean bar;              /* a progress line on the terminal */
    gboolean lines;            /* a line per record on stdout */
    gboolean lost;             /* stopped: the server is out of reach */
    guint width;
    struct sigaction old_int;
} Run;

static guint term_width(FILE *f)
{
    struct winsize ws;
    if (ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

static void run_begin(Run *run, JetDlq *d, const char *verb, guint64 total)
{
    *run = (Run){ .d = d, .verb = verb, .total = total, .start_us = g_get_monotonic_time() };
    int efd = fileno(d->err), ofd = fileno(d->out);
    run->bar = efd >= 0 && isatty(efd) && !d->dry_run;
    /* On one terminal the bar stands for the lines (--verbose shows them). */
    run->lines = d->verbose || !(run->bar && ofd >= 0 && isatty(ofd));
    run->width = run->bar ? term_width(d->err) : 80;
    interrupted = 0;
    struct sigaction sa = { 0 };
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    /* A second Ctrl-C ends the process at once (the default). */
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &run->old_int);
}

static void bar_clear(Run *run)
{
    if (run->bar && run->last_bar_us > 0)
        fprintf(run->d->err, "\r%*s\r", (int)run->width - 1, "");
}

static void bar_draw(Run *run, gboolean force)
{
    gint64 now = g_get_monotonic_time();
    if (!run->bar || (!force && now - run->last_bar_us < 100000))
        return;
    run->last_bar_us = now;
    g_autofree char *line = jet_progress_line(run->done, run->total, now - run->start_us, run->width - 1);
    fprintf(run->d->err, "\r%s\033[K", line);
    fflush(run->d->err);
}

/* An error about one record: on its own line, the bar drawn again after. */
G_GNUC_PRINTF(2, 3) static void run_error(Run *run, const char *fmt, ...)
{
    bar_clear(run);
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    fprintf(run->d->err, "jethost dlq: %s\n", text);
    bar_draw(run, TRUE);
}

/* Waits until item i is due at the rate; FALSE when interrupted first. */
static gboolean pace(Run *run, guint64 i)
{
    gint64 due = run->start_us + jet_pace_due_us(i, run->d->rate);
    for (;;) {
        if (interrupted)
            return FALSE;
        gint64 now = g_get_monotonic_time();
        if (now >= due)
            return TRUE;
        bar_draw(run, FALSE);
        g_usleep((gulong)MIN(due - now, 50000));
    }
}

/* The summary (stderr), and the way on after an interruption.  Returns the
 * exit code. */
static int run_end(Run *run, guint64 next_seq)
{
    JetDlq *d = run->d;
    sigaction(SIGINT, &run->old_int, NULL);
    bar_draw(run, TRUE);
    if (run->bar)
        fprintf(d->err, "\n");
    double secs = (double)(g_get_monotonic_time() - run->start_us) / 1e6;
    GString *s = g_string_new(NULL);
    if (strcmp(run->verb, "replay") == 0) {
        g_string_append_printf(s, "%s %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT, d->dry_run ? "would replay" : "replayed",
                               run->published, run->total);
        if (run->duplicates > 0)
            g_string_append_printf(s, " (%" G_GUINT64_FORMAT " already replayed: the target kept the first)",
                                   run->duplicates);
        if (d->remove)
            g_string_append_printf(s, ", removed %" G_GUINT64_FORMAT, run->removed);
    } else {
        g_string_append_printf(s, "%s %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT, d->dry_run ? "would remove" : "removed",
                               run->removed, run->total);
    }
    if (run->refused > 0)
        g_string_append_printf(s, ", refused %" G_GUINT64_FORMAT, run->refused);
    if (run->failed > 0)
        g_string_append_printf(s, ", failed %" G_GUINT64_FORMAT " (the first: %" G_GUINT64_FORMAT ")", run->failed,
                               run->first_failed);
    if (run->gone > 0)
        g_string_append_printf(s, ", %" G_GUINT64_FORMAT " no longer there", run->gone);
    if (run->skipped > 0)
        g_string_append_printf(s, ", %" G_GUINT64_FORMAT " not matching", run->skipped);
    g_string_append_printf(s, " in %.1fs", secs);
    if (secs > 0 && run->done > 0)
        g_string_append_printf(s, " (%.0f/s)", (double)run->done / secs);
    fprintf(d->err, "jethost dlq: %s %s\n", d->stream, s->str);
    g_string_free(s, TRUE);
    /* Going on from the first record not done: one that failed earlier
     * in the run comes before the one the run stopped at. */
    guint64 from = run->first_failed > 0 && (next_seq == 0 || run->first_failed < next_seq) ? run->first_failed
                                                                                          : next_seq;
    if (interrupted || run->lost) {
        if (from > 0)
            fprintf(d->err, "jethost dlq: %s after %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                            "; to go on, run the same command with --from %" G_GUINT64_FORMAT "\n",
                    interrupted ? "interrupted" : "stopped, the server out of reach,", run->done, run->total, from);
        else
            fprintf(d->err, "jethost dlq: interrupted after the last record: nothing is left to do\n");
        fflush(d->out);
        fflush(d->err);
        return interrupted ? 130 : 1;
    }
    fflush(d->out);
    fflush(d->err);
    return run->refused + run->failed > 0 ? 1 : 0;
}

/* --- replay ------------------------------------------------------------------ */

/* A JSON line's first members: which record. */
static JsonBuilder *json_record(JetDlq *d, guint64 seq)
{
    JsonBuilder *b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "dlq_stream", d->stream, -1);
    json_builder_set_member_name(b, "dlq_seq");
    json_builder_add_int_value(b, (gint64)seq);
    return b;
}

static void print_replayed(Run *run, guint64 seq, const char *subject, const jsPubAck *pa, const char *msg_id,
                           const char *stream_hint)
{
    JetDlq *d = run->d;
    if (!run->lines)
        return;
    if (d->format == JET_DLQ_OUT_JSON) {
        g_autoptr(JsonBuilder) b = json_record(d, seq);
        jet_json_add_bytes(b, "subject", subject, -1);
        if (pa != NULL) {
            jet_json_add_pub_ack(b, pa->Stream, pa->Sequence, pa->Duplicate);
        } else {
            json_builder_set_member_name(b, "dry_run");
            json_builder_add_boolean_value(b, TRUE);
            if (stream_hint != NULL)
                jet_json_add_bytes(b, "stream", stream_hint, -1);
        }
        jet_json_add_bytes(b, "msg_id", msg_id, -1);
        if (pa != NULL && d->remove) {
            json_builder_set_member_name(b, "removed");
            json_builder_add_boolean_value(b, TRUE);
        }
        json_builder_end_object(b);
        jet_dlq_print_json(d, b);
    } else if (pa != NULL) {
        g_autofree char *stream = jet_dlq_field(pa->Stream);
        fprintf(d->out, "%s:%" G_GUINT64_FORMAT " -> %s: stream %s seq %" PRIu64 "%s\n", d->stream, seq, subject,
                stream, pa->Sequence, pa->Duplicate ? " (duplicate: replayed before)" : "");
    } else if (stream_hint != NULL) {
        g_autofree char *stream = jet_dlq_field(stream_hint);
        fprintf(d->out, "%s:%" G_GUINT64_FORMAT " -> %s (stream %s; dry run: not published)\n", d->stream, seq,
                subject, stream);
    } else {
        fprintf(d->out, "%s:%" G_GUINT64_FORMAT " -> %s (dry run: not published)\n", d->stream, seq, subject);
    }
}

/* The DLQ stream's creation time: part of every replay's id. */
static gboolean dlq_life(JetDlq *d, gint64 *life_ns)
{
    jsStreamInfo *si = NULL;
    jsErrCode jerr = 0;
    /* A leader's: a member's own creation time, during an election, would
     * give every replay another id (stream_info.h). */
    natsStatus s = jet_stream_info_led(&si, jet_conn_js(d->conn), d->stream, 5000, NULL, &jerr);
    if (s != NATS_OK) {
        g_autofree char *why = s == NATS_TIMEOUT && jerr == 0 ? g_strdup("no leader answered in 5 s (an election?)")
                                                             : jet_nats_error(s);
        fprintf(d->err, "jethost dlq: stream %s: %s\n", d->stream, why);
        return FALSE;
    }
    *life_ns = si->Created;
    jsStreamInfo_Destroy(si);
    return TRUE;
}

typedef enum { ONE_DONE, ONE_SKIPPED, ONE_GONE, ONE_REFUSED, ONE_FAILED } One;

/* ONE_DONE, ONE_GONE (nothing at seq: removed by someone else) or
 * ONE_FAILED with the reason. */
static One remove_record(JetDlq *d, guint64 seq, GError **error)
{
    jsErrCode jerr = 0;
    natsStatus s = js_DeleteMsg(jet_conn_js(d->conn), d->stream, seq, NULL, &jerr);
    if (s == NATS_OK)
        return ONE_DONE;
    /* 2.9.10 says 10043 ("sequence N not found"); 10037 is the other
     * "no message" code it has. */
    if (jerr == JSSequenceNotFoundErr || jerr == JSNoMessageFoundErr)
        return ONE_GONE;
    /* Other codes cover a sequence past the end or below the first (10057,
     * "msg delete failed"): asked whether the record is there at all. */
    JetStoredMsg *m = NULL;
    if (jet_stream_msg_get(jet_conn_nats(d->conn), d->stream, seq, JET_DLQ_REQUEST_TIMEOUT_MS, &m, NULL) ==
        JET_STORED_ABSENT)
        return ONE_GONE;
    jet_stored_msg_free(m);
    g_autofree char *why = jet_nats_error(s);
    g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%s [err %d]", why, (int)jerr);
    return ONE_FAILED;
}

static One replay_one(Run *run, guint64 seq, gint64 life_ns)
{
    JetDlq *d = run->d;
    g_auto(JetDlqRec) r = { 0 };
    int got = jet_dlq_get(d, seq, &r);
    if (got < 0)
        return ONE_FAILED;
    if (got > 0) {
        run_error(run, "no record %s:%" G_GUINT64_FORMAT, d->stream, seq);
        return ONE_GONE;
    }
    if (!jet_dlq_filter_matches(d->filter, seq, r.m->time_ns, r.p.headers))
        return ONE_SKIPPED;
    if (jet_dlq_rec_hdr(&r, JET_HDR_ORIGIN_SUBJECT) == NULL) {
        run_error(run, "%s:%" G_GUINT64_FORMAT ": refused: no " JET_HDR_ORIGIN_SUBJECT " header: not a jethost capture",
                  d->stream, seq);
        return ONE_REFUSED;
    }
    g_autofree char *reason = NULL;
    TargetCheck t = d->to != NULL ? to_target(d, &reason) : origin_target(d, &r, &reason);
    if (t != TARGET_OK) {
        run_error(run, "%s:%" G_GUINT64_FORMAT ": %s%s", d->stream, seq, t == TARGET_REFUSED ? "refused: " : "", reason);
        return t == TARGET_REFUSED ? ONE_REFUSED : ONE_FAILED;
    }
    const char *subject = d->to != NULL ? d->to : jet_dlq_rec_hdr(&r, JET_HDR_ORIGIN_SUBJECT);
    g_autofree char *msg_id = jet_replay_msg_id(d->stream, seq, life_ns, d->again ? g_get_real_time() * 1000 : 0);
    if (d->dry_run) {
        print_replayed(run, seq, subject, NULL, msg_id, d->to == NULL ? jet_dlq_rec_hdr(&r, JET_HDR_ORIGIN_STREAM) : NULL);
        run->published++;   /* would be */
        return ONE_DONE;
    }
    g_autoptr(GPtrArray) headers = jet_replay_headers(r.p.headers, d->stream, seq, msg_id);
    g_autoptr(GError) e = NULL;
    gsize block_len = 0;
    g_autofree char *block = jet_hdr_write(headers, &block_len, &e);
    if (block == NULL && e != NULL) {
        run_error(run, "%s:%" G_GUINT64_FORMAT ": building the replay: %s", d->stream, seq, e->message);
        return ONE_FAILED;
    }
    gsize len = 0;
    const char *data = r.m->data != NULL ? g_bytes_get_data(r.m->data, &len) : NULL;
    jsPubAck *pa = NULL;
    if (!jet_js_publish_raw(jet_conn_js(d->conn), subject, block, block_len, data, len, &pa, &e)) {
        run_error(run, "%s:%" G_GUINT64_FORMAT ": replay to %s: %s", d->stream, seq, subject, e->message);
        return ONE_FAILED;
    }
    run->published++;
    if (pa->Duplicate)
        run->duplicates++;
    /* Removed only now: the target holds the replay (or held it already,
     * which a duplicate pub-ack says). */
    if (d->remove) {
        One removed = remove_record(d, seq, &e);
        if (removed == ONE_DONE) {
            run->removed++;
        } else if (removed == ONE_FAILED) {
            run_error(run, "%s:%" G_GUINT64_FORMAT ": replayed, but not removed: %s", d->stream, seq, e->message);
            print_replayed(run, seq, subject, pa, msg_id, NULL);
            jsPubAck_Destroy(pa);
            return ONE_FAILED;
        }
    }
    print_replayed(run, seq, subject, pa, msg_id, NULL);
    jsPubAck_Destroy(pa);
    return ONE_DONE;
}

/* A failure with the connection down stops the run: every record after
 * would fail the same way, each after a timeout. */
static void count(Run *run, One o, guint64 seq)
{
    if (o == ONE_FAILED && (run->first_failed == 0 || seq < run->first_failed))
        run->first_failed = seq;
    if (o == ONE_FAILED && !jet_conn_is_connected(run->d->conn))
        run->lost = TRUE;
    switch (o) {
    case ONE_DONE: break;
    case ONE_SKIPPED: run->skipped++; break;
    case ONE_GONE: run->gone++; break;
    case ONE_REFUSED: run->refused++; break;
    case ONE_FAILED: run->failed++; break;
    }
    run->done++;
}

int jet_dlq_cmd_replay(JetDlq *d)
{
    gint64 life_ns = 0;
    if (!dlq_life(d, &life_ns))
        return 1;
    g_autoptr(GArray) seqs = jet_dlq_select(d);
    if (seqs == NULL)
        return 1;
    Run run;
    run_begin(&run, d, "replay", seqs->len);
    guint64 limit = jet_dlq_filter_limit(d->filter), matched = 0, next = 0;
    guint i = 0;
    for (; i < seqs->len && (limit == 0 || matched < limit) && !run.lost; i++) {
        guint64 seq = g_array_index(seqs, guint64, i);
        if (!pace(&run, matched))
            break;
        One o = replay_one(&run, seq, life_ns);
        count(&run, o, seq);
        if (run.lost)
            break;   /* this one is to do again */
        if (o != ONE_SKIPPED && o != ONE_GONE)
            matched++;
        bar_draw(&run, FALSE);
    }
    /* Nothing is left once the limit is reached. */
    next = i < seqs->len && (limit == 0 || matched < limit) ? g_array_index(seqs, guint64, i) : 0;
    return run_end(&run, next);
}

/* --- rm and purge ------------------------------------------------------------- */

/* Asks on the terminal; without one, only --yes removes.  0 go on, else
 * the exit code: 2 no terminal to ask on, 1 declined. */
static int confirm(JetDlq *d, guint64 n, const char *what)
{
    if (d->yes || n == 0)
        return 0;
    if (!isatty(STDIN_FILENO) || fileno(d->err) < 0 || !isatty(fileno(d->err))) {
        fprintf(d->err, "jethost dlq: not removing %" G_GUINT64_FORMAT " record%s of %s (%s) without a terminal "
                        "to confirm on: give --yes\n", n, n == 1 ? "" : "s", d->stream, what);
        return 2;
    }
    fprintf(d->err, "Remove %" G_GUINT64_FORMAT " record%s from %s (%s)? This cannot be undone. [y/N] ", n,
            n == 1 ? "" : "s", d->stream, what);
    fflush(d->err);
    char answer[16] = "";
    if (fgets(answer, sizeof answer, stdin) != NULL && (answer[0] == 'y' || answer[0] == 'Y'))
        return 0;
    fprintf(d->err, "jethost dlq: nothing removed\n");
    return 1;
}

static void print_removed(Run *run, guint64 seq)
{
    JetDlq *d = run->d;
    if (!run->lines)
        return;
    if (d->format == JET_DLQ_OUT_JSON) {
        g_autoptr(JsonBuilder) b = json_record(d, seq);
        json_builder_set_member_name(b, d->dry_run ? "dry_run" : "removed");
        json_builder_add_boolean_value(b, TRUE);
        json_builder_end_object(b);
        jet_dlq_print_json(d, b);
    } else {
        fprintf(d->out, "%s %s:%" G_GUINT64_FORMAT "\n", d->dry_run ? "would remove" : "removed", d->stream, seq);
    }
}

/* Removes seqs (checking each against the filter's fields when they were
 * given by number). */
static int remove_all(JetDlq *d, const char *verb, GArray *seqs, gboolean check_fields)
{
    g_autofree char *what = d->seqs->len > 0 ? g_strdup_printf("%u given", d->seqs->len)
                                             : jet_dlq_filter_describe(d->filter);
    int declined = d->dry_run ? 0 : confirm(d, seqs->len, what);
    if (declined != 0)
        return declined;
    Run run;
    run_begin(&run, d, verb, seqs->len);
    guint64 limit = jet_dlq_filter_limit(d->filter), matched = 0;
    guint i = 0;
    for (; i < seqs->len && (limit == 0 || matched < limit) && !interrupted && !run.lost; i++) {
        guint64 seq = g_array_index(seqs, guint64, i);
        One o = ONE_DONE;
        if (check_fields) {
            g_auto(JetDlqRec) r = { 0 };
            int got = jet_dlq_get(d, seq, &r);
            if (got < 0)
                o = ONE_FAILED;
            else if (got > 0)
                o = ONE_GONE;
            else if (!jet_dlq_filter_matches(d->filter, seq, r.m->time_ns, r.p.headers))
                o = ONE_SKIPPED;
        }
        if (o == ONE_DONE && !d->dry_run) {
            g_autoptr(GError) e = NULL;
            o = remove_record(d, seq, &e);
            if (o == ONE_DONE)
                run.removed++;
            else if (o == ONE_FAILED)
                run_error(&run, "%s:%" G_GUINT64_FORMAT ": not removed: %s", d->stream, seq, e->message);
        } else if (o == ONE_DONE) {
            run.removed++;
        }
        if (o == ONE_DONE)
            print_removed(&run, seq);
        else if (o == ONE_GONE)
            run_error(&run, "no record %s:%" G_GUINT64_FORMAT, d->stream, seq);
        count(&run, o, seq);
        if (run.lost)
            break;
        if (o != ONE_SKIPPED && o != ONE_GONE)
            matched++;
        bar_draw(&run, FALSE);
    }
    int rc = run_end(&run, i < seqs->len && (limit == 0 || matched < limit) ? g_array_index(seqs, guint64, i) : 0);
    /* rm names its records: one that is not there is a failure. */
    return rc == 0 && run.gone > 0 && d->seqs->len > 0 ? 1 : rc;
}

int jet_dlq_cmd_rm(JetDlq *d)
{
    g_autoptr(GArray) seqs = jet_dlq_select(d);
    if (seqs == NULL)
        return 1;
    gboolean fields = !jet_dlq_filter_is_everything(d->filter);
    return remove_all(d, "rm", seqs, fields);
}

int jet_dlq_cmd_purge(JetDlq *d)
{
    g_autoptr(GArray) seqs = jet_dlq_select(d);
    if (seqs == NULL)
        return 1;
    return remove_all(d, "purge", seqs, FALSE);
}
