/*
 * template.so: the smallest complete jethost plugin.  Copy this directory to
 * start a new one.  It acknowledges every message and shows each part of the
 * ABI in use: the descriptor, options, init/handle/fini, reading a message,
 * logging and verdicts.
 *
 * Build it out of tree with only the installed header:
 *     cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags jethost-plugin) \
 *        -o template.so template.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jethost/plugin.h>

/* The host's function table, `jet_host`, kept from jet_plugin_entry(). */
JET_HOST_DEFINE;

struct template_state {
    jet_ctx *ctx;
    int64_t log_every;   /* log one line per this many messages; 0 = never */
    uint64_t handled;
};

static const jet_option options[] = {
    { .name = "log_every", .type = JET_OPT_INT, .default_value = "0",
      .help = "log one line per this many messages (0: never)" },
    { .name = "reject_subject", .type = JET_OPT_STRING, .default_value = NULL,
      .help = "reject messages published to exactly this subject" },
    { .name = NULL }
};

static int template_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    struct template_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, err_len, "out of memory");
        return 1;
    }
    st->ctx = c;
    if (jet_host->ctx_option_int(c, "log_every", &st->log_every) != JET_OK || st->log_every < 0) {
        snprintf(err, err_len, "option.log_every must be a non-negative integer");
        free(st);
        return 1;
    }
    *state = st;
    return 0;
}

static int template_handle(void *state, jet_msg *m)
{
    struct template_state *st = state;
    const char *reject = jet_host->ctx_option(st->ctx, "reject_subject");

    st->handled++;
    if (st->log_every > 0 && st->handled % (uint64_t)st->log_every == 0) {
        size_t len = 0;
        (void)jet_host->msg_data(m, &len);
        jet_host->ctx_log(st->ctx, JET_LOG_INFO, "message %llu: %s seq %llu, %zu bytes, delivery %u",
                      (unsigned long long)st->handled, jet_host->msg_subject(m),
                      (unsigned long long)jet_host->msg_stream_seq(m), len, jet_host->msg_deliveries(m));
    }
    if (reject != NULL && strcmp(reject, jet_host->msg_subject(m)) == 0) {
        jet_host->msg_set_reason(m, "subject is configured as rejected");
        return JET_REJECT;
    }
    return JET_ACK;
}

static void template_fini(void *state)
{
    free(state);
}

static const jet_plugin plugin = {
    JET_PLUGIN_HEADER,
    .name = "template",
    .version = "1.0.0",
    .flags = 0,   /* handle() touches st->handled unlocked: one thread at a time */
    .options = options,
    .init = template_init,
    .handle = template_handle,
    .fini = template_fini,
};

JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *h)
{
    JET_HOST_INIT(h);
    return &plugin;
}
