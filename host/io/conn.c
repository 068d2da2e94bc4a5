#include "conn.h"
#include "embedded.h"
#include "errors.h"
#include "log.h"
#include "nkey.h"
#include "sock_cork.h"

#include <string.h>


typedef struct {
    void (*fn)(gpointer);
    gpointer data;
} Hook;

struct JetConn {
    natsConnection *nc;
    jsCtx *js;
    char *api_prefix;    /* "$JS.API", or the domain's or the configured one */
    gint generation;     /* atomic */
    gint connected;      /* atomic */
    GMutex lock;
    GArray *hooks;            /* Hook: a binding's engine (or more) each; no limit on bindings */
    JetSockCork *cork;
    /* nats.c may still run our callbacks while it closes: the JetConn
     * outlives the connection's closed callback. */
    GCond closed_cond;
    gboolean closed;
};

/* natsConnection -> its API prefix, for code that holds only the nats.c
 * connection (stored-message reads are shared with tests that connect with
 * plain nats.c). */
static GMutex prefix_lock;
static GHashTable *prefix_of_nc;

static void prefix_register(natsConnection *nc, const char *prefix)
{
    g_mutex_lock(&prefix_lock);
    if (prefix_of_nc == NULL)
        prefix_of_nc = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_hash_table_insert(prefix_of_nc, nc, (gpointer)prefix);
    g_mutex_unlock(&prefix_lock);
}

static void prefix_forget(natsConnection *nc)
{
    g_mutex_lock(&prefix_lock);
    if (prefix_of_nc != NULL)
        g_hash_table_remove(prefix_of_nc, nc);
    g_mutex_unlock(&prefix_lock);
}

char *jet_conn_api_prefix_for(const JetHostConfig *h)
{
    if (h != NULL && h->js_api_prefix != NULL)
        return g_strdup(h->js_api_prefix);
    if (h != NULL && h->js_domain != NULL)
        return g_strdup_printf("$JS.%s.API", h->js_domain);
    return g_strdup(JET_JS_DEFAULT_API_PREFIX);
}

const char *jet_conn_api_prefix(const JetConn *c)
{
    return c->api_prefix;
}

const char *jet_conn_nats_api_prefix(natsConnection *nc)
{
    const char *p = NULL;
    g_mutex_lock(&prefix_lock);
    if (prefix_of_nc != NULL)
        p = g_hash_table_lookup(prefix_of_nc, nc);
    g_mutex_unlock(&prefix_lock);
    return p != NULL ? p : JET_JS_DEFAULT_API_PREFIX;
}

static void on_closed(natsConnection *nc, void *closure)
{
    JetConn *c = closure;
    (void)nc;
    g_mutex_lock(&c->lock);
    c->closed = TRUE;
    g_cond_broadcast(&c->closed_cond);
    g_mutex_unlock(&c->lock);
}

char *jet_nats_error(natsStatus s)
{
    const char *last = nats_GetLastError(NULL);
    if (last != NULL && *last)
        return g_strdup_printf("%s (%s)", natsStatus_GetText(s), last);
    return g_strdup(natsStatus_GetText(s));
}

static void on_disconnected(natsConnection *nc, void *closure)
{
    JetConn *c = closure;
    g_atomic_int_set(&c->connected, 0);
    if (natsConnection_IsClosed(nc))
        return;   /* our own close */
    jet_log(JET_LOG_WARNING, NULL, "disconnected", "lost the connection to the NATS server; reconnecting");
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    JetConn *c = closure;
    char url[256] = "";
    natsConnection_GetConnectedUrl(nc, url, sizeof url);
    g_atomic_int_inc(&c->generation);
    g_atomic_int_set(&c->connected, 1);
    jet_log(JET_LOG_INFO, NULL, "reconnected", "reconnected to %s; re-pulling", url);
    g_mutex_lock(&c->lock);
    for (guint i = 0; i < c->hooks->len; i++) {
        const Hook *h = &g_array_index(c->hooks, Hook, i);
        h->fn(h->data);
    }
    g_mutex_unlock(&c->lock);
}

static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
    (void)nc;
    (void)sub;
    (void)closure;
    /* Pending limits are unlimited, so a slow-consumer error would mean a
     * client-side drop: that must be loud. */
    jet_log(JET_LOG_ERROR, NULL, "nats-error", "asynchronous NATS error: %s", natsStatus_GetText(err));
}

static gboolean read_secret(const char *path, char **out, GError **error)
{
    if (!jet_secret_file_check(path, error))
        return FALSE;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, error))
        return FALSE;
    *out = g_strdup(g_strstrip(text));
    return TRUE;
}

static gboolean apply_credentials(natsOptions *o, const JetHostConfig *h, GError **error)
{
    natsStatus s = NATS_OK;
    if (h == NULL)
        return TRUE;
    if (h->creds_file != NULL) {
        if (!jet_secret_file_check(h->creds_file, error))
            return FALSE;
        s = natsOptions_SetUserCredentialsFromFiles(o, h->creds_file, NULL);
    } else if (h->nkey_seed_file != NULL) {
        if (!jet_secret_file_check(h->nkey_seed_file, error))
            return FALSE;
        /* nats.c takes a NULL public key as "no NKey auth": it signs with
         * the file but needs the public key from us (nkey.h). */
        g_autofree char *pub = NULL;
        if (!jet_nkey_user_public_from_file(h->nkey_seed_file, &pub, error))
            return FALSE;
        s = natsOptions_SetNKeyFromSeed(o, pub, h->nkey_seed_file);
    }
    if (s == NATS_OK && h->user != NULL) {
        g_autofree char *password = NULL;
        if (h->password_file != NULL && !read_secret(h->password_file, &password, error))
            return FALSE;
        s = natsOptions_SetUserInfo(o, h->user, password);
        if (password != NULL)
            memset(password, 0, strlen(password));
    }
    if (s == NATS_OK && h->token_file != NULL) {
        g_autofree char *token = NULL;
        if (!read_secret(h->token_file, &token, error))
            return FALSE;
        s = natsOptions_SetToken(o, token);
        memset(token, 0, strlen(token));
    }
    if (s == NATS_OK && h->tls_ca != NULL)
        s = natsOptions_LoadCATrustedCertificates(o, h->tls_ca);
    if (s == NATS_OK && h->tls_cert != NULL) {
        if (h->tls_key != NULL && !jet_secret_file_check(h->tls_key, error))
            return FALSE;
        s = natsOptions_LoadCertificatesChain(o, h->tls_cert, h->tls_key);
    }
    if (s == NATS_OK && (h->tls_ca != NULL || h->tls_cert != NULL))
        s = natsOptions_SetSecure(o, true);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        /* Never echo secrets: name the setting, not its value. */
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "credentials in [host] were refused by nats.c: %s", why);
        return FALSE;
    }
    return TRUE;
}

/* A server that verifies client certificates drops a TLS client without one
 * in the handshake, which nats.c reports as a bare protocol or I/O error:
 * say what is likely missing. */
static const char *tls_hint(const char *const *urls, const JetHostConfig *h, natsStatus s)
{
    if (h != NULL && h->tls_cert != NULL)
        return "";
    if (s != NATS_PROTOCOL_ERROR && s != NATS_SSL_ERROR && s != NATS_IO_ERROR && s != NATS_CONNECTION_CLOSED)
        return "";
    gboolean tls = h != NULL && h->tls_ca != NULL;
    for (const char *const *u = urls; *u != NULL && !tls; u++)
        tls = g_str_has_prefix(*u, "tls://");
    return tls ? "; if the server verifies clients (tls verify), it needs a client certificate: "
                 "set tls_cert and tls_key"
               : "";
}

JetConn *jet_conn_open(const char *const *urls, const JetHostConfig *host, guint attempts,
                       GError **error)
{
    g_return_val_if_fail(urls != NULL && urls[0] != NULL, NULL);
    JetConn *c = g_new0(JetConn, 1);
    g_mutex_init(&c->lock);
    c->hooks = g_array_new(FALSE, FALSE, sizeof(Hook));
    c->cork = jet_sock_cork_new();
    g_cond_init(&c->closed_cond);
    natsOptions *o = NULL;
    natsStatus s = natsOptions_Create(&o);
    guint n = g_strv_length((char **)urls);
    if (s == NATS_OK)
        s = natsOptions_SetServers(o, (const char **)urls, (int)n);
    if (s == NATS_OK)
        s = natsOptions_SetSendAsap(o, true);
    /* Reconnect for ever once connected; nats.c's default gives up after
     * ~2 minutes and closes the connection for good. */
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(o, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(o, 250);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(o, host != NULL && host->connect_timeout_ms > 0
                                          ? (int64_t)host->connect_timeout_ms : 2000);
    if (s == NATS_OK)
        s = natsOptions_SetDisconnectedCB(o, on_disconnected, c);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectedCB(o, on_reconnected, c);
    if (s == NATS_OK)
        s = natsOptions_SetErrorHandler(o, on_error, c);
    if (s == NATS_OK)
        s = natsOptions_SetClosedCB(o, on_closed, c);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "connection options: %s", why);
        natsOptions_Destroy(o);
        jet_conn_close(c);
        return NULL;
    }
    if (!apply_credentials(o, host, error)) {
        natsOptions_Destroy(o);
        jet_conn_close(c);
        return NULL;
    }

    /* First connect: our own bounded attempts (nats.c 3.4.1 with
     * RetryOnFailedConnect and MaxReconnect -1 would loop for ever). */
    guint64 wait_ms = 100;   /* doubling: 5 attempts take about 1.5 s */
    if (attempts == 0)
        attempts = 1;
    for (guint i = 1; i <= attempts; i++) {
        s = natsConnection_Connect(&c->nc, o);
        if (s == NATS_OK)
            break;
        g_autofree char *text = jet_nats_error(s);
        g_autofree char *why = g_strconcat(text, tls_hint(urls, host, s), NULL);
        jet_log(i < attempts ? JET_LOG_WARNING : JET_LOG_ERROR, NULL, "connect",
                "connect attempt %u of %u to %s%s failed: %s", i, attempts, urls[0],
                n > 1 ? " (and the other servers)" : "", why);
        if (i == attempts) {
            g_autofree char *all = g_strjoinv(", ", (char **)urls);
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "cannot connect to %s after %u attempts: %s",
                        all, attempts, why);
            natsOptions_Destroy(o);
            jet_conn_close(c);
            return NULL;
        }
        g_usleep(wait_ms * 1000);
        wait_ms = MIN(wait_ms * 2, 5000);
    }
    natsOptions_Destroy(o);
    g_atomic_int_set(&c->connected, 1);
    c->api_prefix = jet_conn_api_prefix_for(host);
    prefix_register(c->nc, c->api_prefix);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Prefix = c->api_prefix;
    s = natsConnection_JetStream(&c->js, c->nc, &jo);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "JetStream context: %s", why);
        jet_conn_close(c);
        return NULL;
    }
    return c;
}

JetConn *jet_conn_open_config(const JetConfig *cfg, const char *server, GError **error)
{
    g_auto(GStrv) urls = NULL;
    if (server != NULL) {
        urls = g_new0(char *, 2);
        urls[0] = g_strdup(server);
    } else if (cfg != NULL && cfg->host.embedded) {
        char *url = jet_embedded_read_url(cfg->host.state_dir, error);
        if (url == NULL)
            return NULL;
        urls = g_new0(char *, 2);
        urls[0] = url;
    } else if (cfg != NULL) {
        urls = g_strdupv(cfg->host.urls);
    } else {
        const char *env = g_getenv("NATS_URL");
        urls = g_new0(char *, 2);
        urls[0] = g_strdup(env != NULL ? env : "nats://127.0.0.1:4222");
    }
    return jet_conn_open((const char *const *)urls, cfg != NULL ? &cfg->host : NULL,
                         cfg != NULL ? cfg->host.connect_attempts : 3, error);
}

void jet_conn_close(JetConn *c)
{
    if (c == NULL)
        return;
    if (c->js != NULL)
        jsCtx_Destroy(c->js);
    if (c->nc != NULL) {
        natsConnection_FlushTimeout(c->nc, 2000);
        natsConnection_Close(c->nc);
        gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
        g_mutex_lock(&c->lock);
        while (!c->closed)
            if (!g_cond_wait_until(&c->closed_cond, &c->lock, deadline))
                break;
        g_mutex_unlock(&c->lock);
        prefix_forget(c->nc);
        natsConnection_Destroy(c->nc);
    }
    g_free(c->api_prefix);
    g_cond_clear(&c->closed_cond);
    g_mutex_clear(&c->lock);
    g_array_unref(c->hooks);
    jet_sock_cork_free(c->cork);
    g_free(c);
}

natsConnection *jet_conn_nats(JetConn *c) { return c->nc; }
jsCtx *jet_conn_js(JetConn *c) { return c->js; }
guint jet_conn_generation(JetConn *c) { return (guint)g_atomic_int_get(&c->generation); }

void jet_conn_burst_begin(JetConn *c)
{
    jet_sock_cork_begin(c->cork, c->nc, jet_conn_generation(c));
}

void jet_conn_burst_end(JetConn *c)
{
    jet_sock_cork_end(c->cork);
}
gboolean jet_conn_is_connected(JetConn *c) { return g_atomic_int_get(&c->connected) != 0; }

void jet_conn_on_reconnect(JetConn *c, void (*fn)(gpointer), gpointer data)
{
    g_mutex_lock(&c->lock);
    Hook h = { fn, data };
    g_array_append_val(c->hooks, h);
    g_mutex_unlock(&c->lock);
}

void jet_conn_off_reconnect(JetConn *c, void (*fn)(gpointer), gpointer data)
{
    g_mutex_lock(&c->lock);
    for (guint i = 0; i < c->hooks->len; i++) {
        const Hook *h = &g_array_index(c->hooks, Hook, i);
        if (h->fn == fn && h->data == data) {
            g_array_remove_index(c->hooks, i);
            break;
        }
    }
    g_mutex_unlock(&c->lock);
}

void jet_stream_replicas_note(const char *binding, const char *what, const jsStreamInfo *si, guint want)
{
    g_return_if_fail(what != NULL && si != NULL && si->Config != NULL);
    /* The server reports 0 for a stream that was asked for the default, one. */
    int have = si->Config->Replicas > 0 ? (int)si->Config->Replicas : 1;
    if (want == 0 || have == (int)want)
        return;
    jet_log(JET_LOG_INFO, binding, "replicas-differ",
            "%s %s has %d replica%s where [host] replicas = %u: used as it is (the host never changes a "
            "stream it finds)", what, si->Config->Name, have, have == 1 ? "" : "s", want);
}
