/* `jethost pub` (docs/cli.md): one message published to JetStream, its
 * header block written by the host (hdr_block.h) and sent byte for byte,
 * and the pub-ack printed as one JSON line. */
#include "pub.h"
#include "cmd_common.h"
#include "exit_codes.h"
#include "hdr_block.h"
#include "json_out.h"
#include "nats_raw.h"
#include "names.h"

#include <glib.h>
#include <stdio.h>
#include <string.h>

/* One --header argument: "Name: value" (as on the wire) or "Name=value",
 * whichever separator comes first; the value trimmed.  FALSE with a message
 * when it cannot be written as it is (hdr_block.h). */
static gboolean pub_header(const char *arg, GPtrArray *headers)
{
    const char *colon = strchr(arg, ':');
    const char *eq = strchr(arg, '=');
    const char *sep = colon != NULL && (eq == NULL || colon < eq) ? colon : eq;
    g_autofree char *shown = jet_text_escape(arg, strlen(arg), FALSE);
    if (sep == NULL || sep == arg) {
        fprintf(stderr, "jethost pub: --header \"%s\" is not 'NAME: VALUE' or NAME=VALUE\n", shown);
        return FALSE;
    }
    g_autofree char *name = g_strstrip(g_strndup(arg, (gsize)(sep - arg)));
    g_autofree char *value = g_strstrip(g_strdup(sep + 1));
    if (!jet_hdr_name_valid(name)) {
        fprintf(stderr, "jethost pub: --header \"%s\": the name is not a token (letters, digits, "
                        "!#$%%&'*+-.^_`|~)\n", shown);
        return FALSE;
    }
    if (!jet_hdr_value_valid(value)) {
        fprintf(stderr, "jethost pub: --header \"%s\": the value holds a line break\n", shown);
        return FALSE;
    }
    g_ptr_array_add(headers, g_steal_pointer(&name));
    g_ptr_array_add(headers, g_steal_pointer(&value));
    return TRUE;
}

static void pub_print(const char *subject, const jsPubAck *pa)
{
    g_autoptr(JsonBuilder) b = json_builder_new();
    json_builder_begin_object(b);
    jet_json_add_bytes(b, "subject", subject, -1);
    jet_json_add_pub_ack(b, pa->Stream, pa->Sequence, pa->Duplicate);
    json_builder_end_object(b);
    g_autofree char *line = jet_json_line(b);
    printf("%s\n", line);
}

int jet_pub_main(int argc, char **argv)
{
    g_auto(JetCmdConnOptions) co = { 0 };
    g_autofree char *data = NULL;
    g_autofree char *msg_id = NULL;
    g_auto(GStrv) headers = NULL;
    gint count = 1;
    /* FILENAME kinds: payload and headers are bytes, not text in the
     * locale's encoding. */
    GOptionEntry entries[] = {
        { "data", 0, 0, G_OPTION_ARG_FILENAME, &data, "the payload (default: standard input)", "TEXT" },
        { "header", 'H', 0, G_OPTION_ARG_FILENAME_ARRAY, &headers, "a header, repeatable, kept in order", "'NAME: VALUE'" },
        { "msg-id", 0, 0, G_OPTION_ARG_FILENAME, &msg_id, "set Nats-Msg-Id (de-duplication)", "ID" },
        { "count", 'n', 0, G_OPTION_ARG_INT, &count, "publish it this many times (default 1)", "N" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SUBJECT - publish to JetStream and print the pub-ack");
    jet_cmd_conn_add_options(ctx, &co, "take the server from this config (embedded included)");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) perr = NULL;
    if (!g_option_context_parse(ctx, &argc, &argv, &perr)) {
        fprintf(stderr, "jethost: %s\n", perr->message);
        return JET_EXIT_USAGE;
    }
    if (argc != 2 || count < 1) {
        fprintf(stderr, "jethost pub: give exactly one SUBJECT\n");
        return JET_EXIT_USAGE;
    }
    const char *subject = argv[1];
    const char *why = jet_subject_problem(subject, JET_SUBJECT_LITERAL);
    if (why != NULL) {
        g_autofree char *shown = jet_text_escape(subject, strlen(subject), FALSE);
        fprintf(stderr, "jethost pub: subject \"%s\" %s\n", shown, why);
        return JET_EXIT_USAGE;
    }
    /* The block is written once, in the order given; the Msg-Id first so
     * the server reads it (it takes a name's first occurrence). */
    g_autoptr(GPtrArray) hdrs = g_ptr_array_new_with_free_func(g_free);
    if (msg_id != NULL) {
        if (*msg_id == '\0' || !jet_hdr_value_valid(msg_id)) {
            fprintf(stderr, "jethost pub: --msg-id must be non-empty, on one line, without spaces around it\n");
            return JET_EXIT_USAGE;
        }
        g_ptr_array_add(hdrs, g_strdup("Nats-Msg-Id"));
        g_ptr_array_add(hdrs, g_strdup(msg_id));
    }
    for (gchar **h = headers; h != NULL && *h != NULL; h++)
        if (!pub_header(*h, hdrs))
            return JET_EXIT_USAGE;
    g_autoptr(GError) err = NULL;
    gsize block_len = 0;
    g_autofree char *block = jet_hdr_write(hdrs, &block_len, &err);
    if (block == NULL && err != NULL) {
        fprintf(stderr, "jethost pub: %s\n", err->message);
        return JET_EXIT_USAGE;
    }
    gsize len = 0;
    if (data == NULL) {
        if ((data = jet_cmd_read_stdin("pub", &len, stderr)) == NULL)
            return JET_EXIT_FAILURE;
    } else {
        len = strlen(data);
    }
    g_autoptr(JetConfig) cfg = NULL;
    int rc = JET_EXIT_OK;
    JetConn *conn = jet_cmd_connect("pub", &co, stderr, &cfg, &rc);
    if (conn == NULL)
        return rc;
    for (gint i = 0; i < count && rc == JET_EXIT_OK; i++) {
        jsPubAck *pa = NULL;
        if (!jet_js_publish_raw(jet_conn_js(conn), subject, block, block_len, data, len, &pa, &err)) {
            fprintf(stderr, "jethost pub: %s: %s\n", subject, err->message);
            rc = JET_EXIT_FAILURE;
            break;
        }
        pub_print(subject, pa);
        jsPubAck_Destroy(pa);
    }
    fflush(stdout);
    jet_cmd_conn_close(conn);
    return rc;
}
