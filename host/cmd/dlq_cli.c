/* jethost dlq: the command line of list, stats, show, replay, rm and purge
 * (docs/dead-letters.md, "jethost dlq" and "On call").  The selection is a
 * filter (dlq_filter.h); dlq_view.c reads and prints, dlq_bulk.c replays
 * and removes. */
#include "dlq_cli.h"
#include "dlq_private.h"

#include "cmd_common.h"
#include "dlq_record.h"
#include "exit_codes.h"
#include "json_out.h"
#include "names.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define USAGE                                                                                            \
    "usage: jethost dlq [-s URL | -c FILE [-d DIR]] [--stream NAME] [--json | --format FORMAT] COMMAND\n" \
    "  list   [FILTER...]\n"                                                                              \
    "  stats  [FILTER...] [--top N]\n"                                                                    \
    "  show   SEQ [--payload | --text | --hex]\n"                                                          \
    "  replay SEQ... | FIRST-LAST | FILTER...  [--to SUBJECT] [--rate N] [--dry-run] [--remove] [--again]\n" \
    "  rm     SEQ... | FIRST-LAST  [--yes]\n"                                                             \
    "  purge  FILTER... | --all  [--yes] [--dry-run]\n"                                                   \
    "FILTER: --from/--until SEQ|TIME|AGO, --limit N, --cause, --origin, --consumer, --subject PATTERN,\n" \
    "        --binding, --plugin, --host, --reason TEXT, --filter FIELD=VALUE"

typedef struct {
    char *stream, *to, *format, *from, *until, *rate;
    gboolean json, dry_run, remove, again, yes, all, verbose;
    gint64 limit, top;
    char **fields[8];          /* --cause ... --reason, in dlq_filter.h's order */
    char **exprs;              /* --filter */
    gboolean payload, text, hex;
} Opts;

static const char *const field_names[8] = { "cause", "origin", "consumer", "subject", "binding", "plugin", "host",
                                            "reason" };

static void opts_clear(Opts *o)
{
    g_free(o->stream);
    g_free(o->to);
    g_free(o->format);
    g_free(o->from);
    g_free(o->until);
    g_free(o->rate);
    for (int i = 0; i < 8; i++)
        g_strfreev(o->fields[i]);
    g_strfreev(o->exprs);
}

/* "N" or "FIRST-LAST".  0 no, 1 a number, 2 a range, 3 a range whose FIRST
 * is after its LAST. */
static int parse_seq_arg(const char *arg, guint64 *first, guint64 *last)
{
    const char *dash = strchr(arg, '-');
    if (dash == NULL) {
        if (!g_ascii_string_to_unsigned(arg, 10, 1, G_MAXINT64, first, NULL))
            return 0;
        *last = *first;
        return 1;
    }
    g_autofree char *a = g_strndup(arg, (gsize)(dash - arg));
    if (!g_ascii_string_to_unsigned(a, 10, 1, G_MAXINT64, first, NULL) ||
        !g_ascii_string_to_unsigned(dash + 1, 10, 1, G_MAXINT64, last, NULL))
        return 0;
    return *first > *last ? 3 : 2;
}

static gint cmp_u64(gconstpointer a, gconstpointer b)
{
    guint64 x = *(const guint64 *)a, y = *(const guint64 *)b;
    return x < y ? -1 : x > y;
}

/* "jethost dlq: <before>\"<arg, escaped>\"<after>". */
static int usage_error(FILE *err, const char *before, const char *arg, const char *after)
{
    g_autofree char *e = jet_text_escape(arg, strlen(arg), FALSE);
    fprintf(err, "jethost dlq: %s\"%s\"%s\n", before, e, after);
    return JET_EXIT_USAGE;
}

/* The filter from the options; JET_EXIT_OK or the exit code after saying
 * why. */
static int build_filter(JetDlq *d, Opts *o, FILE *err)
{
    g_autoptr(GError) e = NULL;
    gint64 now_ns = g_get_real_time() * 1000;
    for (int i = 0; i < 8; i++)
        for (char **v = o->fields[i]; v != NULL && *v != NULL; v++)
            if (!jet_dlq_filter_add(d->filter, field_names[i], *v, &e))
                goto bad;
    for (char **x = o->exprs; x != NULL && *x != NULL; x++)
        if (!jet_dlq_filter_add_expr(d->filter, *x, &e))
            goto bad;
    if (o->from != NULL && !jet_dlq_filter_set_from(d->filter, o->from, now_ns, &e))
        goto bad;
    if (o->until != NULL && !jet_dlq_filter_set_until(d->filter, o->until, now_ns, &e))
        goto bad;
    if (!jet_dlq_filter_check_range(d->filter, &e))
        goto bad;
    if (o->limit < 0) {
        fprintf(err, "jethost dlq: --limit: give a count (0: no limit)\n");
        return JET_EXIT_USAGE;
    }
    jet_dlq_filter_set_limit(d->filter, (guint64)o->limit);
    return JET_EXIT_OK;
bad:
    fprintf(err, "jethost dlq: %s\n", e->message);
    return JET_EXIT_USAGE;
}

static int run_command(JetDlq *d, const char *cmd, guint64 show_seq)
{
    if (strcmp(cmd, "list") == 0)
        return jet_dlq_cmd_list(d);
    if (strcmp(cmd, "stats") == 0)
        return jet_dlq_cmd_stats(d);
    if (strcmp(cmd, "show") == 0)
        return jet_dlq_cmd_show(d, show_seq);
    if (strcmp(cmd, "replay") == 0)
        return jet_dlq_cmd_replay(d);
    if (strcmp(cmd, "rm") == 0)
        return jet_dlq_cmd_rm(d);
    return jet_dlq_cmd_purge(d);
}

int jet_dlq_cli_run(int argc, char **argv, FILE *out, FILE *err)
{
    g_auto(JetCmdConnOptions) co = { 0 };
    Opts o = { 0 };
    GOptionEntry entries[] = {
        /* FILENAME: names, subjects and record fields are the bytes as given
         * (a locale's conversion would refuse what the server takes), judged
         * by names.h and the filter. */
        { "stream", 0, 0, G_OPTION_ARG_FILENAME, &o.stream, "the DLQ stream (default: the config's first binding's, or " JET_DLQ_DEFAULT_STREAM ")", "NAME" },
        { "json", 0, 0, G_OPTION_ARG_NONE, &o.json, "one JSON object a line (--format json)", NULL },
        { "format", 0, 0, G_OPTION_ARG_STRING, &o.format, "list: table (a terminal's default), tsv (a pipe's) or json", "FORMAT" },
        { "from", 0, 0, G_OPTION_ARG_STRING, &o.from, "the first record: a DLQ sequence, an RFC 3339 time or how long ago (2h)", "SEQ|TIME|AGO" },
        { "until", 0, 0, G_OPTION_ARG_STRING, &o.until, "the last record, the same way", "SEQ|TIME|AGO" },
        { "limit", 0, 0, G_OPTION_ARG_INT64, &o.limit, "at most N records", "N" },
        { "cause", 0, 0, G_OPTION_ARG_STRING_ARRAY, &o.fields[0], "records of this cause (repeat for any of several)", "CAUSE" },
        { "origin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[1], "records from this origin stream", "STREAM" },
        { "consumer", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[2], "records from this consumer", "NAME" },
        { "subject", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[3], "records whose origin subject matches (* and > wildcards)", "PATTERN" },
        { "binding", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[4], "records of this binding", "NAME" },
        { "plugin", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[5], "records of this plugin", "NAME" },
        { "host", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[6], "records captured by this host", "NAME" },
        { "reason", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.fields[7], "records whose reason contains TEXT (any case)", "TEXT" },
        { "filter", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o.exprs, "FIELD=VALUE, the same as --FIELD VALUE", "FIELD=VALUE" },
        { "top", 0, 0, G_OPTION_ARG_INT64, &o.top, "stats: rows a grouping shows (default 10; 0: all)", "N" },
        { "payload", 0, 0, G_OPTION_ARG_NONE, &o.payload, "show: the payload too, as text when it is text, else in hex", NULL },
        { "text", 0, 0, G_OPTION_ARG_NONE, &o.text, "show: the payload as text (bytes that are not escaped)", NULL },
        { "hex", 0, 0, G_OPTION_ARG_NONE, &o.hex, "show: the payload in hex", NULL },
        { "to", 0, 0, G_OPTION_ARG_FILENAME, &o.to, "replay: publish to this subject (a stream must capture it) instead of each record's origin", "SUBJECT" },
        { "rate", 0, 0, G_OPTION_ARG_STRING, &o.rate, "replay: at most N records a second", "N" },
        { "dry-run", 0, 0, G_OPTION_ARG_NONE, &o.dry_run, "replay, purge: say what would be done, do nothing", NULL },
        { "remove", 0, 0, G_OPTION_ARG_NONE, &o.remove, "replay: remove each record once its replay is acknowledged", NULL },
        { "again", 0, 0, G_OPTION_ARG_NONE, &o.again, "replay: publish even a record replayed before (a new message id)", NULL },
        { "yes", 'y', 0, G_OPTION_ARG_NONE, &o.yes, "rm, purge: do not ask", NULL },
        { "all", 0, 0, G_OPTION_ARG_NONE, &o.all, "purge: every record", NULL },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &o.verbose, "replay, rm, purge: a line per record even under the progress bar", NULL },
        { NULL },
    };
    o.top = 10;
    g_autoptr(GOptionContext) ctx = g_option_context_new("list|stats|show|replay|rm|purge ... - dead-letter records");
    GOptionGroup *main_group = g_option_group_new(NULL, NULL, NULL, &o, NULL);
    g_option_group_add_entries(main_group, entries);
    g_option_context_set_main_group(ctx, main_group);
    jet_cmd_conn_add_options(ctx, &co, "take the server and DLQ stream from this config");
    g_autoptr(GError) e = NULL;
    /* Parse a copy: GOption rearranges argv. */
    g_autofree char **args = g_new0(char *, (gsize)argc + 1);
    for (int i = 0; i < argc; i++)
        args[i] = argv[i];
    int n = argc;
    char **a = args;
    int rc = JET_EXIT_USAGE;
    JetDlq d = { .out = out, .err = err, .to_captured = -1 };
    d.filter = jet_dlq_filter_new();
    d.seqs = g_array_new(FALSE, FALSE, sizeof(guint64));
    d.origins = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_strfreev);
    g_autoptr(JetConfig) cfg = NULL;
    const char *cmd = NULL;
    gboolean is_list, is_stats, is_show, is_replay, is_rm, is_purge;
    guint64 show_seq = 0;
    gboolean range_given = FALSE;

    if (!g_option_context_parse(ctx, &n, &a, &e)) {
        fprintf(err, "jethost dlq: %s\n", e->message);
        goto done;
    }
    if (n < 2) {
        fprintf(err, "jethost dlq: give a command\n" USAGE "\n");
        goto done;
    }
    cmd = a[1];
    is_list = strcmp(cmd, "list") == 0;
    is_stats = strcmp(cmd, "stats") == 0;
    is_show = strcmp(cmd, "show") == 0;
    is_replay = strcmp(cmd, "replay") == 0;
    is_rm = strcmp(cmd, "rm") == 0;
    is_purge = strcmp(cmd, "purge") == 0;
    if (!is_list && !is_stats && !is_show && !is_replay && !is_rm && !is_purge) {
        rc = usage_error(err, "no command ", cmd, "\n" USAGE);
        goto done;
    }

    /* The positional arguments: SEQs or one range. */
    for (int i = 2; i < n; i++) {
        guint64 first = 0, last = 0;
        int kind = parse_seq_arg(a[i], &first, &last);
        if (kind == 0) {
            rc = usage_error(err, "", a[i], " is not a sequence number or a range FIRST-LAST");
            goto done;
        }
        if (kind == 3) {
            g_autofree char *hint = g_strdup_printf(": the range's first sequence comes after its last (give %"
                                                    G_GUINT64_FORMAT "-%" G_GUINT64_FORMAT ")", last, first);
            rc = usage_error(err, "range ", a[i], hint);
            goto done;
        }
        if (kind == 2) {
            if (n != 3 || is_show) {
                rc = usage_error(err, "a range ", a[i], " goes alone: no other sequence beside it");
                goto done;
            }
            g_autofree char *f = g_strdup_printf("%" G_GUINT64_FORMAT, first);
            g_autofree char *l = g_strdup_printf("%" G_GUINT64_FORMAT, last);
            if (o.from != NULL || o.until != NULL) {
                rc = usage_error(err, "a range ", a[i], " and --from or --until: give one or the other");
                goto done;
            }
            o.from = g_steal_pointer(&f);
            o.until = g_steal_pointer(&l);
            range_given = TRUE;
        } else {
            g_array_append_val(d.seqs, first);
        }
    }
    g_array_sort(d.seqs, cmp_u64);
    for (guint i = 1; i < d.seqs->len;) {
        if (g_array_index(d.seqs, guint64, i) == g_array_index(d.seqs, guint64, i - 1))
            g_array_remove_index(d.seqs, i);
        else
            i++;
    }
    if ((rc = build_filter(&d, &o, err)) != JET_EXIT_OK)
        goto done;
    rc = JET_EXIT_USAGE;
    gboolean filtered = !jet_dlq_filter_is_everything(d.filter);
    if (is_show && (d.seqs->len != 1 || filtered)) {
        fprintf(err, "jethost dlq: show takes one SEQ and no filter\n");
        goto done;
    }
    if ((is_list || is_stats) && d.seqs->len > 0) {
        fprintf(err, "jethost dlq: %s takes a filter (--from, --cause, ...), not sequences\n", cmd);
        goto done;
    }
    if (is_replay && d.seqs->len == 0 && !filtered) {
        fprintf(err, "jethost dlq: replay what? give SEQ..., FIRST-LAST or a filter (--from 1 for every record)\n");
        goto done;
    }
    if (is_rm && d.seqs->len == 0 && !range_given) {
        fprintf(err, "jethost dlq: rm takes SEQ... or FIRST-LAST (purge takes a filter)\n");
        goto done;
    }
    if (is_purge && (d.seqs->len > 0 || (!filtered && !o.all) || (filtered && o.all))) {
        fprintf(err, "jethost dlq: purge takes a filter, or --all for every record\n");
        goto done;
    }
    if ((o.payload || o.text || o.hex) && !is_show) {
        fprintf(err, "jethost dlq: --payload, --text and --hex are for show only\n");
        goto done;
    }
    if (o.text && o.hex) {
        fprintf(err, "jethost dlq: --text and --hex: give one or the other\n");
        goto done;
    }
    if ((o.to != NULL || o.rate != NULL || o.remove || o.again) && !is_replay) {
        fprintf(err, "jethost dlq: --to, --rate, --remove and --again are for replay only\n");
        goto done;
    }
    if (o.dry_run && !is_replay && !is_purge && !is_rm) {
        fprintf(err, "jethost dlq: --dry-run is for replay, rm and purge\n");
        goto done;
    }
    if (o.all && !is_purge) {
        fprintf(err, "jethost dlq: --all is for purge only\n");
        goto done;
    }
    if (o.dry_run && o.remove) {
        fprintf(err, "jethost dlq: --dry-run and --remove: give one or the other\n");
        goto done;
    }
    if (o.top < 0) {
        fprintf(err, "jethost dlq: --top: give a count (0: all)\n");
        goto done;
    }
    if (o.rate != NULL) {
        char *end = NULL;
        double r = g_ascii_strtod(o.rate, &end);
        if (end == o.rate || *end != '\0' || !(r > 0) || r > 1e9) {
            rc = usage_error(err, "--rate ", o.rate, ": give records a second, more than 0 (0.5, 200)");
            goto done;
        }
        d.rate = r;
    }
    const char *why = o.to != NULL ? jet_subject_problem(o.to, JET_SUBJECT_LITERAL) : NULL;
    if (why != NULL) {
        g_autofree char *esc = jet_text_escape(o.to, strlen(o.to), FALSE);
        fprintf(err, "jethost dlq: --to \"%s\" %s\n", esc, why);
        goto done;
    }
    if (o.json || (o.format != NULL && strcmp(o.format, "json") == 0))
        d.format = JET_DLQ_OUT_JSON;
    else if (o.format != NULL && strcmp(o.format, "table") == 0)
        d.format = JET_DLQ_OUT_TABLE;
    else if (o.format != NULL && strcmp(o.format, "tsv") == 0)
        d.format = JET_DLQ_OUT_TSV;
    else if (o.format != NULL) {
        rc = usage_error(err, "--format ", o.format, ": give table, tsv or json");
        goto done;
    } else
        d.format = fileno(out) >= 0 && isatty(fileno(out)) ? JET_DLQ_OUT_TABLE : JET_DLQ_OUT_TSV;
    d.payload = o.hex ? JET_DLQ_PAYLOAD_HEX : o.text ? JET_DLQ_PAYLOAD_TEXT
              : o.payload ? JET_DLQ_PAYLOAD_AUTO : JET_DLQ_PAYLOAD_NONE;
    d.top = (guint)MIN(o.top, (gint64)G_MAXUINT);
    d.to = o.to;
    d.dry_run = o.dry_run;
    d.remove = o.remove;
    d.again = o.again;
    d.yes = o.yes;
    d.all = o.all;
    d.verbose = o.verbose;
    if (is_show)
        show_seq = g_array_index(d.seqs, guint64, 0);

    rc = jet_cmd_conn_load("dlq", &co, err, &cfg);
    if (rc != JET_EXIT_OK)
        goto done;
    if (o.stream != NULL)
        d.stream = g_strdup(o.stream);
    else if (cfg != NULL && cfg->bindings->len > 0)
        d.stream = g_strdup(((const JetBindingConfig *)g_ptr_array_index(cfg->bindings, 0))->dlq_stream);
    else
        d.stream = g_strdup(JET_DLQ_DEFAULT_STREAM);
    if ((why = jet_name_problem(d.stream)) != NULL) {
        g_autofree char *esc = jet_text_escape(d.stream, strlen(d.stream), FALSE);
        fprintf(err, "jethost dlq: stream name \"%s\" %s\n", esc, why);
        rc = o.stream != NULL ? JET_EXIT_USAGE : JET_EXIT_CONFIG;
        goto done;
    }
    d.conn = jet_cmd_conn_open("dlq", cfg, &co, err);
    if (d.conn == NULL) {
        rc = JET_EXIT_FAILURE;
        goto done;
    }
    rc = run_command(&d, cmd, show_seq);
    jet_cmd_conn_close(d.conn);

done:
    fflush(out);
    fflush(err);
    g_free(d.stream);
    jet_dlq_filter_free(d.filter);
    g_array_unref(d.seqs);
    g_hash_table_unref(d.origins);
    opts_clear(&o);
    return rc;
}

int jet_dlq_cli_main(int argc, char **argv)
{
    return jet_dlq_cli_run(argc, argv, stdout, stderr);
}
