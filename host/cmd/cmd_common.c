/* What pub, dlq and kv share (cmd_common.h). */
#include "cmd_common.h"

#include "exit_codes.h"

void jet_cmd_conn_add_options(GOptionContext *ctx, JetCmdConnOptions *o, const char *config_help)
{
    /* g_option_context_add_main_entries copies the entries, not the
     * strings: config_help must outlive the parse (a literal does). */
    const GOptionEntry entries[] = {
        { "server", 's', 0, G_OPTION_ARG_STRING, &o->server, "the server URL (default: $NATS_URL, or nats://127.0.0.1:4222)", "URL" },
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &o->config, config_help, "FILE" },
        { "dropin-dir", 'd', 0, G_OPTION_ARG_FILENAME, &o->dropin, "the config's drop-in directory", "DIR" },
        { NULL },
    };
    g_option_context_add_main_entries(ctx, entries, NULL);
}

void jet_cmd_conn_options_clear(JetCmdConnOptions *o)
{
    g_clear_pointer(&o->server, g_free);
    g_clear_pointer(&o->config, g_free);
    g_clear_pointer(&o->dropin, g_free);
}

int jet_cmd_conn_load(const char *cmd, const JetCmdConnOptions *o, FILE *err, JetConfig **cfg)
{
    *cfg = NULL;
    if (o->config == NULL)
        return JET_EXIT_OK;
    g_autoptr(GError) e = NULL;
    *cfg = jet_config_load(o->config, o->dropin, &e);
    if (*cfg == NULL) {
        fprintf(err, "jethost %s: %s\n", cmd, e->message);
        return JET_EXIT_CONFIG;
    }
    return JET_EXIT_OK;
}

JetConn *jet_cmd_conn_open(const char *cmd, const JetConfig *cfg, const JetCmdConnOptions *o, FILE *err)
{
    g_autoptr(GError) e = NULL;
    /* As `run` connects: every URL, the credentials, TLS and API prefix. */
    JetConn *conn = jet_conn_open_config(cfg, o->server, &e);
    if (conn == NULL)
        fprintf(err, "jethost %s: %s\n", cmd, e->message);
    return conn;
}

JetConn *jet_cmd_connect(const char *cmd, const JetCmdConnOptions *o, FILE *err, JetConfig **cfg, int *rc)
{
    *rc = jet_cmd_conn_load(cmd, o, err, cfg);
    if (*rc != JET_EXIT_OK)
        return NULL;
    JetConn *conn = jet_cmd_conn_open(cmd, *cfg, o, err);
    *rc = conn != NULL ? JET_EXIT_OK : JET_EXIT_FAILURE;
    return conn;
}

void jet_cmd_conn_close(JetConn *c)
{
    if (c == NULL)
        return;
    natsConnection *nc = jet_conn_nats(c);
    if (nc != NULL && jet_conn_is_connected(c)) {
        natsConnection_FlushTimeout(nc, 2000);
        natsConnection_Close(nc);
        for (int i = 0; i < 200 && jet_conn_is_connected(c); i++)
            g_usleep(10000);
    }
    jet_conn_close(c);
}

char *jet_cmd_read_stdin(const char *cmd, gsize *len, FILE *err)
{
    g_autoptr(GIOChannel) in = g_io_channel_unix_new(0);
    g_io_channel_set_encoding(in, NULL, NULL);
    g_autoptr(GError) e = NULL;
    char *data = NULL;
    *len = 0;
    if (g_io_channel_read_to_end(in, &data, len, &e) != G_IO_STATUS_NORMAL) {
        fprintf(err, "jethost %s: reading standard input: %s\n", cmd, e != NULL ? e->message : "failed");
        g_free(data);
        return NULL;
    }
    /* data may be NULL for an empty input: an empty payload is still one. */
    return data != NULL ? data : g_strdup("");
}
