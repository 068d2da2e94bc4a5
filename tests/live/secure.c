/* A secured cluster: NKey user seeds (the public key derived from the seed,
 * checked by a nats-server that requires NKeys), TLS with client
 * certificates made here with the openssl command, `jethost pub` and `jethost
 * dlq` connecting as `run` does (every URL, the credentials), and JetStream
 * domains: a server whose default API prefix is answered by nobody, so that
 * any request the host makes outside the domain's prefix shows.
 *
 * tests/fixtures/nkey-*.seed and nkey-user.pub are test-only keys: the user
 * pair was made from 32 random bytes and cross-checked with an independent
 * ed25519 implementation; the server accepting it is the second check. */
#include "harness.h"
#include "config.h"
#include "conn.h"
#include "errors.h"
#include "nkey.h"

#include <glib/gstdio.h>
#include <gio/gio.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

/* --- fixtures -------------------------------------------------------------- */

static char *fixture_path(const char *name)
{
    const char *src = g_getenv("JET_SRCDIR");
    g_assert_nonnull(src);
    return g_build_filename(src, "tests", "fixtures", name, NULL);
}

static char *fixture_text(const char *name)
{
    g_autofree char *path = fixture_path(name);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return g_strstrip(text);
}

/* A copy the secret-file check accepts (0600, ours): a checkout's mode
 * depends on the umask. */
static char *secret_copy(const char *name, const char *text)
{
    char *path = jet_test_write_file(name, text);
    g_assert_cmpint(g_chmod(path, 0600), ==, 0);
    return path;
}

static char *seed_copy(const char *fixture)
{
    g_autofree char *text = fixture_text(fixture);
    g_autofree char *line = g_strconcat(text, "\n", NULL);
    g_autofree char *name = g_strconcat("copy-", fixture, NULL);
    return secret_copy(name, line);
}

/* A config with one binding (never run unless a test runs it) and the given
 * [host] lines besides server. */
/* Three connect attempts: one lost to a loaded machine (a TLS handshake
 * past the connect timeout) must not fail a test about credentials; the
 * refusals these tests expect fail every attempt alike. */
static char *write_config(const char *name, const char *servers, const char *host_extra)
{
    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "state", NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\nconnect_attempts = 3\n%s\n"
                                            "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\n"
                                            "subjects = orders.>\n",
                                            servers, state, host_extra, plugin);
    return jet_test_write_file(name, text);
}

static JetConfig *load_config(const char *path)
{
    g_autoptr(GError) err = NULL;
    JetConfig *cfg = jet_config_load(path, NULL, &err);
    g_assert_no_error(err);
    return cfg;
}

/* nats://127.0.0.1:PORT where nothing listens: a port the kernel chose for
 * a socket that stays bound (and so taken) but never listens, which refuses
 * connections.  Keep *sock until the URL is no longer used. */
static char *dead_url(GSocket **sock)
{
    *sock = g_socket_new(G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, NULL);
    g_assert_nonnull(*sock);
    g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(lo, 0);
    g_assert_true(g_socket_bind(*sock, any, FALSE, NULL));
    g_autoptr(GSocketAddress) got = g_socket_get_local_address(*sock, NULL);
    guint16 port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(got));
    return g_strdup_printf("nats://127.0.0.1:%u", port);
}

/* `jethost ARGS...`: its exit status, stdout in *out (may be NULL), stderr
 * in *err_text. */
static int jethost(char **out, char **err_text, const char *const *args)
{
    return jet_test_jethost_run(args, out, err_text);
}

/* --- NKeys: the public key of a seed ------------------------------------------ */

static void test_nkey_derive(void)
{
    g_autofree char *seed = fixture_text("nkey-user.seed");
    g_autofree char *want = fixture_text("nkey-user.pub");
    g_autoptr(GError) err = NULL;
    g_autofree char *pub = NULL;
    g_assert_true(jet_nkey_user_public(seed, &pub, &err));
    g_assert_no_error(err);
    g_assert_cmpstr(pub, ==, want);

    /* From a file: a bare seed, or the seed block of a decorated file. */
    g_autofree char *bare = seed_copy("nkey-user.seed");
    g_autofree char *pub2 = NULL;
    g_assert_true(jet_nkey_user_public_from_file(bare, &pub2, &err));
    g_assert_cmpstr(pub2, ==, want);
    g_autofree char *decorated_text = g_strdup_printf("-----BEGIN USER NKEY SEED-----\n%s\n"
                                                      "------END USER NKEY SEED------\n", seed);
    g_autofree char *decorated = secret_copy("decorated.nk", decorated_text);
    g_autofree char *pub3 = NULL;
    g_assert_true(jet_nkey_user_public_from_file(decorated, &pub3, &err));
    g_assert_cmpstr(pub3, ==, want);
}

static void expect_refused_bytes(const char *name, const char *text, gssize len, const char *why)
{
    g_autofree char *path = secret_copy(name, "");
    g_assert_true(g_file_set_contents(path, text, len, NULL));
    g_assert_cmpint(g_chmod(path, 0600), ==, 0);
    g_autoptr(GError) err = NULL;
    g_autofree char *pub = NULL;
    g_assert_false(jet_nkey_user_public_from_file(path, &pub, &err));
    g_assert_null(pub);
    g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, path));
    g_assert_nonnull(strstr(err->message, why));
    /* The secret is never echoed. */
    g_autofree char *seed = fixture_text("nkey-user.seed");
    g_assert_null(strstr(err->message, seed + 4));
}

static void expect_refused(const char *name, const char *text, const char *why)
{
    expect_refused_bytes(name, text, -1, why);
}

static void test_nkey_refused(void)
{
    g_autofree char *account = fixture_text("nkey-account.seed");
    g_autofree char *pub = fixture_text("nkey-user.pub");
    g_autofree char *seed = fixture_text("nkey-user.seed");
    expect_refused("account.nk", account, "an account seed, not a user seed");
    expect_refused("public.nk", pub, "holds no seed");
    g_autofree char *typo = g_strdup(seed);
    typo[20] = typo[20] == 'A' ? 'B' : 'A';
    expect_refused("typo.nk", typo, "checksum");
    g_autofree char *cut = g_strndup(seed, 40);
    expect_refused("cut.nk", cut, "not an nkey seed");
    expect_refused("empty.nk", "", "holds no seed");
    /* Hostile bytes around the seed: a NUL ends the text nats.c would read
     * too, so a seed after one is not found; non-UTF-8 words are skipped. */
    g_autofree char *after_nul = g_strconcat("x", seed, NULL);
    after_nul[0] = '\0';
    expect_refused_bytes("nul.nk", after_nul, (gssize)strlen(seed) + 1, "holds no seed");
    g_autofree char *in_junk = g_strconcat("\xff\xfe", seed, "\x80", NULL);
    expect_refused("junk.nk", in_junk, "holds no seed");
    g_autofree char *huge = g_strnfill(JET_NKEY_FILE_MAX + 1, 'A');
    expect_refused("huge.nk", huge, "more than 65536: not a seed file");

    /* The connection refuses it before connecting, naming the file. */
    g_autofree char *bad = secret_copy("account2.nk", account);
    g_autofree char *extra = g_strdup_printf("nkey_seed_file = %s\n", bad);
    g_autofree char *conf = write_config("nkey-refused.conf", "nats://127.0.0.1:4222", extra);
    g_autoptr(JetConfig) cfg = load_config(conf);
    g_autoptr(GError) err = NULL;
    JetConn *c = jet_conn_open_config(cfg, NULL, &err);
    g_assert_null(c);
    g_assert_nonnull(strstr(err->message, bad));
    g_assert_nonnull(strstr(err->message, "not a user seed"));
}

/* A seed file written on Windows: the line ends in CR LF, and the CR is not
 * part of the seed. */
static void test_nkey_crlf(void)
{
    g_autofree char *seed = fixture_text("nkey-user.seed");
    g_autofree char *want = fixture_text("nkey-user.pub");
    g_autofree char *text = g_strconcat(seed, "\r\n", NULL);
    g_autofree char *path = secret_copy("crlf.nk", text);
    g_autoptr(GError) err = NULL;
    g_autofree char *pub = NULL;
    g_assert_true(jet_nkey_user_public_from_file(path, &pub, &err));
    g_assert_no_error(err);
    g_assert_cmpstr(pub, ==, want);
}

/* Two 58-character strings with valid checksums over the same user key
 * (bytes 1..32): the first with the seed prefix (S), the second with the
 * user public-key prefix (U) where the S belongs.  Only the seed is one. */
#define NKEY_PREFIX_SEED "SUAACAQDAQCQMBYIBEFAWDANBYHRAEISCMKBKFQXDAMRUGY4DUPB6IC5CQ"
#define NKEY_PREFIX_NOT_SEED "UUAACAQDAQCQMBYIBEFAWDANBYHRAEISCMKBKFQXDAMRUGY4DUPB6IGW4E"

static void test_nkey_prefix(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *pub = NULL;
    g_assert_true(jet_nkey_user_public(NKEY_PREFIX_SEED, &pub, &err));
    g_assert_no_error(err);
    g_assert_true(g_str_has_prefix(pub, "U"));
    g_assert_cmpuint(strlen(pub), ==, 56);

    g_autofree char *pub2 = NULL;
    g_assert_false(jet_nkey_user_public(NKEY_PREFIX_NOT_SEED, &pub2, &err));
    g_assert_null(pub2);
    g_assert_error(err, JET_ERROR, JET_ERROR_INVALID);
    g_assert_nonnull(strstr(err->message, "not an nkey seed (a public key?"));
}

/* --- NKeys against a server that requires them ------------------------------- */

static JetTestServer *nkey_server(void)
{
    g_autofree char *pub = fixture_text("nkey-user.pub");
    g_autofree char *text = g_strdup_printf("authorization { users = [ { nkey: %s } ] }\n", pub);
    g_autofree char *conf = jet_test_write_file("nkey-server.conf", text);
    const char *args[] = { "-c", conf, NULL };
    return jet_test_server_start_args(args);
}

static JetConn *open_with(const char *name, const char *url, const char *host_extra, GError **error)
{
    g_autofree char *conf = write_config(name, url, host_extra);
    g_autoptr(JetConfig) cfg = load_config(conf);
    return jet_conn_open_config(cfg, NULL, error);
}

static void test_nkey_server(void)
{
    g_autoptr(JetTestServer) srv = nkey_server();
    const char *url = jet_test_server_url(srv);
    g_autofree char *seed = seed_copy("nkey-user.seed");
    g_autofree char *other = seed_copy("nkey-other.seed");

    g_autofree char *good = g_strdup_printf("nkey_seed_file = %s\n", seed);
    g_autoptr(GError) err = NULL;
    JetConn *c = open_with("nkey-good.conf", url, good, &err);
    g_assert_no_error(err);
    g_assert_nonnull(c);
    jsAccountInfo *ai = NULL;
    g_assert_cmpint(js_GetAccountInfo(&ai, jet_conn_js(c), NULL, NULL), ==, NATS_OK);
    jsAccountInfo_Destroy(ai);
    jet_conn_close(c);

    g_autofree char *wrong = g_strdup_printf("nkey_seed_file = %s\n", other);
    c = open_with("nkey-wrong.conf", url, wrong, &err);
    g_assert_null(c);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "uthoriz"));
    g_clear_error(&err);

    c = open_with("nkey-none.conf", url, "", &err);
    g_assert_null(c);
    g_assert_nonnull(strstr(err->message, "uthoriz"));
}

/* pub and dlq connect as run does: the config's credentials, and every URL
 * (the first one here is dead). */
static void test_cli_nkey(void)
{
    g_autoptr(JetTestServer) srv = nkey_server();
    g_autofree char *seed = seed_copy("nkey-user.seed");
    g_autofree char *extra = g_strdup_printf("nkey_seed_file = %s\n", seed);
    g_autoptr(GSocket) hole = NULL;
    g_autofree char *dead = dead_url(&hole);
    g_autofree char *servers = g_strdup_printf("%s, %s", dead, jet_test_server_url(srv));
    g_autofree char *conf = write_config("cli-nkey.conf", servers, extra);

    /* The streams, made over the host's own connection (the only way in). */
    g_autoptr(JetConfig) cfg = load_config(conf);
    g_autoptr(GError) err = NULL;
    JetConn *c = jet_conn_open_config(cfg, NULL, &err);
    g_assert_no_error(err);
    jet_test_stream_create(jet_conn_js(c), "ORDERS", "orders.>");
    jet_test_stream_create(jet_conn_js(c), "JETHOST_DLQ", "jethost.dlq.>");
    jet_conn_close(c);

    g_autofree char *out = NULL, *err_text = NULL;
    const char *pub[] = { "pub", "-c", conf, "--data", "hello", "orders.new", NULL };
    int rc = jethost(&out, &err_text, pub);
    if (rc != 0)
        g_error("pub -c exited %d: %s%s", rc, out, err_text);
    g_assert_nonnull(strstr(out, "\"stream\":\"ORDERS\""));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);

    /* -s replaces the URLs only: the credentials still come from -c. */
    const char *pub_s[] = { "pub", "-s", jet_test_server_url(srv), "-c", conf, "--data", "x", "orders.new", NULL };
    rc = jethost(&out, &err_text, pub_s);
    if (rc != 0)
        g_error("pub -s exited %d: %s%s", rc, out, err_text);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);

    const char *list[] = { "dlq", "list", "-c", conf, NULL };
    rc = jethost(&out, &err_text, list);
    if (rc != 0)
        g_error("dlq list exited %d: %s%s", rc, out, err_text);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);

    /* Without the config's credentials the server refuses: the check above
     * is not vacuous. */
    const char *anon[] = { "pub", "-s", jet_test_server_url(srv), "--data", "x", "orders.new", NULL };
    rc = jethost(&out, &err_text, anon);
    g_assert_cmpint(rc, ==, 1);
    g_assert_nonnull(strstr(err_text, "uthoriz"));
}

/* --- TLS with client certificates ------------------------------------------- */

static void run_openssl(const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, "openssl");
    for (const char *const *a = args; *a != NULL; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_autoptr(GSubprocessLauncher) l =
        g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
    g_subprocess_launcher_set_cwd(l, jet_test_private_dir());
    g_autoptr(GError) err = NULL;
    g_autoptr(GSubprocess) p = g_subprocess_launcher_spawnv(l, (const char *const *)argv->pdata, &err);
    if (p == NULL)
        g_error("cannot run openssl (install the openssl package): %s", err->message);
    g_assert_true(g_subprocess_wait_check(p, NULL, &err));
}

/* A key and a certificate signed by ca (NULL: self-signed CA). */
static void make_cert(const char *name, const char *cn, const char *ca, const char *ext)
{
    g_autofree char *key = g_strconcat(name, ".key", NULL);
    g_autofree char *pem = g_strconcat(name, ".pem", NULL);
    g_autofree char *csr = g_strconcat(name, ".csr", NULL);
    g_autofree char *subj = g_strconcat("/CN=", cn, NULL);
    const char *genkey[] = { "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key, NULL };
    run_openssl(genkey);
    if (ca == NULL) {
        const char *req[] = { "req", "-x509", "-new", "-key", key, "-out", pem, "-days", "2", "-subj", subj,
                              "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=keyCertSign,cRLSign",
                              NULL };
        run_openssl(req);
    } else {
        const char *req[] = { "req", "-new", "-key", key, "-out", csr, "-subj", subj, NULL };
        run_openssl(req);
        g_autofree char *ca_pem = g_strconcat(ca, ".pem", NULL);
        g_autofree char *ca_key = g_strconcat(ca, ".key", NULL);
        g_autofree char *ext_file = g_strconcat(name, ".ext", NULL);
        g_autofree char *ext_path = jet_test_write_file(ext_file, ext);
        const char *sign[] = { "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-set_serial", "2",
                               "-out", pem, "-days", "2", "-extfile", ext_path, NULL };
        run_openssl(sign);
    }
    g_autofree char *key_path = g_build_filename(jet_test_private_dir(), key, NULL);
    g_assert_cmpint(g_chmod(key_path, 0600), ==, 0);
}

static char *priv(const char *name)
{
    return g_build_filename(jet_test_private_dir(), name, NULL);
}

static void test_tls_client_cert(void)
{
    make_cert("ca", "jethost test CA", NULL, NULL);
    make_cert("server", "127.0.0.1", "ca",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
    make_cert("client", "jethost", "ca", "extendedKeyUsage=clientAuth\n");
    g_autofree char *ca = priv("ca.pem");
    g_autofree char *server_pem = priv("server.pem");
    g_autofree char *server_key = priv("server.key");
    g_autofree char *client_pem = priv("client.pem");
    g_autofree char *client_key = priv("client.key");

    /* NKeys as well: a secured cluster asks for both, and the seed's key
     * derivation and nats.c's TLS share libcrypto in one process. */
    g_autofree char *nkey_pub = fixture_text("nkey-user.pub");
    g_autofree char *seed = seed_copy("nkey-user.seed");
    g_autofree char *text = g_strdup_printf("tls { cert_file: \"%s\", key_file: \"%s\", ca_file: \"%s\", "
                                            "verify: true }\n"
                                            "authorization { users = [ { nkey: %s } ] }\n",
                                            server_pem, server_key, ca, nkey_pub);
    g_autofree char *conf = jet_test_write_file("tls-server.conf", text);
    const char *args[] = { "-c", conf, NULL };
    g_autoptr(JetTestServer) srv = jet_test_server_start_args(args);
    g_autofree char *url = g_strdup_printf("tls://127.0.0.1:%d", jet_test_server_port(srv));
    g_autofree char *plain = g_strdup_printf("nats://127.0.0.1:%d", jet_test_server_port(srv));

    /* tls:// with the client certificate: in, and JetStream answers. */
    g_autofree char *full = g_strdup_printf("tls_ca = %s\ntls_cert = %s\ntls_key = %s\nnkey_seed_file = %s\n", ca,
                                            client_pem, client_key, seed);
    g_autoptr(GError) err = NULL;
    JetConn *c = open_with("tls-full.conf", url, full, &err);
    g_assert_no_error(err);
    jsAccountInfo *ai = NULL;
    g_assert_cmpint(js_GetAccountInfo(&ai, jet_conn_js(c), NULL, NULL), ==, NATS_OK);
    jsAccountInfo_Destroy(ai);
    jet_conn_close(c);

    /* nats:// with tls_ca set: TLS all the same (the server requires it). */
    c = open_with("tls-plainurl.conf", plain, full, &err);
    g_assert_no_error(err);
    jet_conn_close(c);

    /* Without the client certificate: refused, saying why. */
    g_autofree char *ca_only = g_strdup_printf("tls_ca = %s\nnkey_seed_file = %s\n", ca, seed);
    c = open_with("tls-nocert.conf", url, ca_only, &err);
    g_assert_null(c);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "client certificate"));
    g_clear_error(&err);

    /* Without the CA: the server's certificate cannot be verified. */
    g_autofree char *no_ca = g_strdup_printf("tls_cert = %s\ntls_key = %s\nnkey_seed_file = %s\n", client_pem,
                                             client_key, seed);
    c = open_with("tls-noca.conf", url, no_ca, &err);
    g_assert_null(c);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "SSL"));
    g_clear_error(&err);

    /* pub with the config: TLS, the client certificate and the seed as run
     * has them; and it exits cleanly (libcrypto shared with nats.c). */
    g_autofree char *host_conf = write_config("tls-cli.conf", url, full);
    g_autoptr(JetConfig) cfg = load_config(host_conf);
    c = jet_conn_open_config(cfg, NULL, &err);
    g_assert_no_error(err);
    jet_test_stream_create(jet_conn_js(c), "ORDERS", "orders.>");
    jet_conn_close(c);
    g_autofree char *out = NULL, *err_text = NULL;
    const char *pub[] = { "pub", "-c", host_conf, "--data", "hello", "orders.new", NULL };
    int rc = jethost(&out, &err_text, pub);
    if (rc != 0)
        g_error("pub -c exited %d: %s%s", rc, out, err_text);
}

/* --- JetStream domains -------------------------------------------------------- */

static void test_prefix_config(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *p0 = jet_conn_api_prefix_for(NULL);
    g_assert_cmpstr(p0, ==, "$JS.API");

    g_autofree char *c1 = write_config("dom1.conf", "nats://127.0.0.1:4222", "js_domain = hub\n");
    g_autoptr(JetConfig) cfg1 = load_config(c1);
    g_autofree char *p1 = jet_conn_api_prefix_for(&cfg1->host);
    g_assert_cmpstr(p1, ==, "$JS.hub.API");

    g_autofree char *c2 = write_config("dom2.conf", "nats://127.0.0.1:4222", "js_api_prefix = JS.acme.API\n");
    g_autoptr(JetConfig) cfg2 = load_config(c2);
    g_autofree char *p2 = jet_conn_api_prefix_for(&cfg2->host);
    g_assert_cmpstr(p2, ==, "JS.acme.API");

    const struct { const char *extra, *why; } bad[] = {
        { "js_domain = hub\njs_api_prefix = JS.acme.API\n", "cannot be used with js_api_prefix" },
        { "js_domain = a.b\n", "js_domain" },
        { "js_domain = a*\n", "js_domain" },
        { "js_api_prefix = JS.acme.API.\n", "js_api_prefix" },
        { "js_api_prefix = JS.>\n", "js_api_prefix" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad) + 1; i++) {
        g_autofree char *name = g_strdup_printf("dombad%zu.conf", i);
        gboolean embedded = i == G_N_ELEMENTS(bad);
        const char *extra = embedded ? "js_domain = hub\n" : bad[i].extra;
        const char *why = embedded ? "cannot be used with server = embedded" : bad[i].why;
        g_autofree char *c = write_config(name, embedded ? "embedded" : "nats://127.0.0.1:4222", extra);
        g_autoptr(GError) e = NULL;
        g_autoptr(JetConfig) cfg = jet_config_load(c, NULL, &e);
        g_assert_null(cfg);
        g_test_message("%s", e->message);
        g_assert_nonnull(strstr(e->message, why));
    }
}

/* A server in domain "hub" whose default API prefix nobody answers: $JS.API.>
 * is mapped to a subject the test watches, so every request made under the
 * wrong prefix is seen (and fails), not quietly served. */
#define UNANSWERED "jethost.test.unanswered"

static JetTestServer *domain_server(void)
{
    const char *text = "jetstream { domain: hub }\nmappings { \"$JS.API.>\": \"" UNANSWERED ".>\" }\n";
    g_autofree char *conf = jet_test_write_file("domain-server.conf", text);
    const char *args[] = { "-c", conf, NULL };
    return jet_test_server_start_api(args, "$JS.hub.API");
}

static gboolean floor_reached(gpointer data)
{
    jsCtx *js = data;
    jsConsumerInfo *ci = NULL;
    if (js_GetConsumerInfo(&ci, js, "ORDERS", "billing", NULL, NULL) != NATS_OK)
        return FALSE;
    gboolean ok = ci->AckFloor.Stream >= 3 && ci->NumAckPending == 0 && ci->NumPending == 0;
    jsConsumerInfo_Destroy(ci);
    return ok;
}

static int pending_msgs(natsConnection *nc, natsSubscription *sub)
{
    g_assert_cmpint(natsConnection_Flush(nc), ==, NATS_OK);
    int msgs = 0;
    g_assert_cmpint(natsSubscription_GetPending(sub, &msgs, NULL), ==, NATS_OK);
    return msgs;
}

static void test_domain_run(void)
{
    g_autoptr(JetTestServer) srv = domain_server();
    const char *url = jet_test_server_url(srv);
    natsConnection *nc = NULL;
    g_assert_cmpint(natsConnection_ConnectTo(&nc, url), ==, NATS_OK);
    natsSubscription *wrong = NULL;
    g_assert_cmpint(natsConnection_SubscribeSync(&wrong, nc, UNANSWERED ".>"), ==, NATS_OK);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Domain = "hub";
    jsCtx *js = NULL;
    g_assert_cmpint(natsConnection_JetStream(&js, nc, &jo), ==, NATS_OK);
    jet_test_stream_create(js, "ORDERS", "orders.>");
    g_assert_cmpint(pending_msgs(nc, wrong), ==, 0);   /* the watch works for the domain's prefix */

    g_autofree char *plugin = jet_test_plugin_copy("template");
    g_autofree char *state = g_build_filename(jet_test_private_dir(), "dstate", NULL);
    g_autofree char *text = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\njs_domain = hub\n\n"
                                            "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\n"
                                            "option.reject_subject = orders.bad\n",
                                            url, state, plugin);
    g_autofree char *conf = jet_test_write_file("domain.conf", text);

    /* pub: a publish is no API call, but pub must take the config as it is. */
    g_autofree char *out = NULL, *err_text = NULL;
    const char *pub[] = { "pub", "-c", conf, "--data", "one", "orders.new", NULL };
    g_assert_cmpint(jethost(&out, &err_text, pub), ==, 0);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);
    const char *pub_bad[] = { "pub", "-c", conf, "--data", "two", "orders.bad", NULL };
    g_assert_cmpint(jethost(&out, &err_text, pub_bad), ==, 0);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);
    const char *pub3[] = { "pub", "-c", conf, "--data", "three", "orders.new", NULL };
    g_assert_cmpint(jethost(&out, &err_text, pub3), ==, 0);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);

    /* run: the consumer, the DLQ stream, the ledger, the advisory watch,
     * the pulls and the dead-letter capture, all in the domain. */
    g_autofree char *errlog = g_build_filename(jet_test_private_dir(), "domain.stderr", NULL);
    const char *run[] = { "run", "-c", conf, NULL };
    g_autoptr(GSubprocess) host = jet_test_jethost_spawn(errlog, run);
    g_assert_true(jet_test_wait_until(floor_reached, js, 30000));
    g_subprocess_send_signal(host, SIGTERM);
    g_assert_cmpint(jet_test_jethost_wait(host, 20000), ==, 0);
    g_autofree char *log = NULL;
    g_assert_true(g_file_get_contents(errlog, &log, NULL, NULL));
    g_test_message("%s", log);
    g_assert_cmpuint(jet_test_count_lines(log, "level=error"), ==, 0);
    /* The one warning is the rejected message's capture. */
    g_assert_cmpuint(jet_test_count_lines(log, "level=warning"), ==, 1);
    g_assert_cmpuint(jet_test_count_lines(log, "event=dead-lettered"), ==, 1);

    /* dlq: the rejected message, read back under the domain's prefix. */
    const char *list[] = { "dlq", "list", "-c", conf, NULL };
    int rc = jethost(&out, &err_text, list);
    if (rc != 0)
        g_error("dlq list exited %d: %s%s", rc, out, err_text);
    g_assert_nonnull(strstr(out, "orders.bad"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);
    const char *show[] = { "dlq", "show", "--payload", "1", "-c", conf, NULL };
    rc = jethost(&out, &err_text, show);
    g_test_message("dlq show: %s%s", out, err_text);
    g_assert_cmpint(rc, ==, 0);
    g_assert_nonnull(strstr(out, "two"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);

    /* replay --to asks which stream captures the subject: an API call. */
    const char *replay[] = { "dlq", "replay", "--to", "orders.again", "1", "-c", conf, NULL };
    rc = jethost(&out, &err_text, replay);
    g_test_message("dlq replay: %s%s", out, err_text);
    g_assert_cmpint(rc, ==, 0);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err_text, g_free);

    /* Not one request went to the default prefix. */
    g_assert_cmpint(pending_msgs(nc, wrong), ==, 0);

    /* The same config without js_domain fails on this server, and its
     * requests are seen: the watch above can fail. */
    g_autofree char *text2 = g_strdup_printf("[host]\nserver = %s\nstate_dir = %s\nconnect_attempts = 3\n\n"
                                             "[binding orders]\nplugin = %s\nstream = ORDERS\nconsumer = billing\n",
                                             url, state, plugin);
    g_autofree char *conf2 = jet_test_write_file("nodomain.conf", text2);
    const char *list2[] = { "dlq", "list", "-c", conf2, NULL };
    rc = jethost(&out, &err_text, list2);
    g_assert_cmpint(rc, !=, 0);
    g_assert_cmpint(pending_msgs(nc, wrong), >, 0);

    natsSubscription_Destroy(wrong);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/secure/nkey/derive", test_nkey_derive);
    g_test_add_func("/secure/nkey/refused", test_nkey_refused);
    g_test_add_func("/secure/nkey/server", test_nkey_server);
    g_test_add_func("/secure/cli/nkey", test_cli_nkey);
    g_test_add_func("/secure/tls/client-cert", test_tls_client_cert);
    g_test_add_func("/secure/domain/config", test_prefix_config);
    g_test_add_func("/secure/domain/run", test_domain_run);
    g_test_add_func("/secure/nkey/crlf", test_nkey_crlf);
    g_test_add_func("/secure/nkey/prefix", test_nkey_prefix);
    int rc = g_test_run();
    nats_Close();
    return rc;
}
