/* Shared test helpers: fixture plugins in a private directory, and real
 * nats-server instances on free loopback ports. */
#ifndef JET_TEST_HARNESS_H
#define JET_TEST_HARNESS_H

#include <glib.h>
#include <sys/types.h>

/* A 0700 directory private to this test process, removed at exit. */
const char *jet_test_private_dir(void);

/* Copies the built plugin NAME (e.g. "fx_ok", "template") into the private
 * directory under a fresh name and returns its absolute path (caller frees):
 * the build tree's permissions depend on the umask, the copy's do not. */
char *jet_test_plugin_copy(const char *name);

/* Path of a built plugin in the build tree (caller frees). */
char *jet_test_plugin_built(const char *name);

/* Path of the built jethost binary (caller frees). */
char *jet_test_jethost_path(void);
/* Runs `jethost ARGS...` to its end: its exit status (128 when it did not
 * exit), its stdout in *out and stderr in *err_text (each may be NULL). */
int jet_test_jethost_run(const char *const *args, char **out, char **err_text);

/* A nats-server with JetStream, on 127.0.0.1 and a port the server chose
 * itself (-p -1, read back through --ports_file_dir), with a store in a
 * temporary directory.  It dies with the test process (parent-death signal)
 * even when an assertion aborts the test. */
typedef struct JetTestServer JetTestServer;

/* Starts one; a test that needs a server fails when it cannot start. */
JetTestServer *jet_test_server_start(void);
/* Starts one with extra command-line arguments (NULL-terminated; NULL for
 * none), appended after the fixture's own and kept for restarts: e.g.
 * { "-c", conf } with a config file setting max_payload (nats-server has no
 * flag for it; its flags still win over the file). */
JetTestServer *jet_test_server_start_args(const char *const *extra);
/* The same for a server whose JetStream answers under another API prefix
 * (a domain's "$JS.<domain>.API"; NULL: "$JS.API"): the readiness check
 * asks it there. */
JetTestServer *jet_test_server_start_api(const char *const *extra, const char *api_prefix);
/* For fixtures built on this one (tests/cluster.h): a server that counts as
 * up once it takes a connection, JetStream not asked (a clustered node's
 * JetStream answers only once the cluster has elected a meta leader). */
JetTestServer *jet_test_server_start_plain(const char *const *extra);
/* Replaces the kept extra arguments, for the next restart (a cluster node
 * restarts with routes to its peers' ports, known only after they started). */
void jet_test_server_set_args(JetTestServer *s, const char *const *extra);
/* Its directory: the ports files (--ports_file_dir) and the store. */
const char *jet_test_server_dir(const JetTestServer *s);
const char *jet_test_server_url(const JetTestServer *s);
int jet_test_server_port(const JetTestServer *s);
GPid jet_test_server_pid(const JetTestServer *s);
/* The version of the nats-server the fixture starts ($NATS_SERVER, else
 * the one on PATH) as major * 10000 + minor * 100 + patch (2.15.1: 21501),
 * from its --version; fails the test when it cannot be read.  For a test
 * of what only newer servers do: on an older one it checks what that
 * server does instead, never skips. */
guint jet_test_server_version(void);
/* Graceful stop (SIGTERM, waits); kill -9; SIGSTOP/SIGCONT. */
void jet_test_server_stop(JetTestServer *s);
void jet_test_server_kill(JetTestServer *s);
void jet_test_server_pause(JetTestServer *s);
void jet_test_server_resume(JetTestServer *s);
/* Starts it again on the same port and store (after stop or kill). */
void jet_test_server_restart(JetTestServer *s);
/* Removes the store of a server that is not running (after stop or kill):
 * the next restart begins with none, as a node whose disk was lost. */
void jet_test_server_wipe_store(JetTestServer *s);
/* Stops it if running and removes its store. */
void jet_test_server_free(JetTestServer *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(JetTestServer, jet_test_server_free)

/* Waits until cond(data) holds, polling every 10 ms, at most timeout_ms;
 * returns whether it held. */
gboolean jet_test_wait_until(gboolean (*cond)(gpointer), gpointer data, guint timeout_ms);

/* --- JetStream helpers for real-server tests --- */
#include <nats/nats.h>
#include <gio/gio.h>

/* Connects (no reconnect) and returns a JetStream context; both freed by
 * jet_test_js_close. */
jsCtx *jet_test_js_open(const char *url, natsConnection **nc);
/* A JetStream context on nc whose refused asynchronous publishes
 * jet_test_publish_wait sends again (the one jet_test_js_open makes). */
jsCtx *jet_test_js_context(natsConnection *nc);
void jet_test_js_close(natsConnection *nc, jsCtx *js);
/* A test fixture: a server of its own and a JetStream context on it, for
 * g_test_add(path, JetTestJs, NULL, jet_test_js_setup, fn, jet_test_js_teardown). */
typedef struct {
    JetTestServer *srv;
    natsConnection *nc;
    jsCtx *js;
    const char *url;   /* the server's */
} JetTestJs;
void jet_test_js_setup(JetTestJs *fx, gconstpointer data);
void jet_test_js_teardown(JetTestJs *fx, gconstpointer data);
/* Creates a file-store stream with one subject pattern. */
void jet_test_stream_create(jsCtx *js, const char *name, const char *subject);
/* The same, allowing Nats-Rollup or not. */
void jet_test_stream_create_rollup(jsCtx *js, const char *name, const char *subject, gboolean rollup);
/* The same with every knob the tests turn: rollup, the duplicate window
 * in ms (0: the server's default, 2 minutes) and a message size limit
 * (0: none). */
void jet_test_stream_create_full(jsCtx *js, const char *name, const char *subject, gboolean rollup,
                                 gint64 duplicate_window_ms, gint32 max_msg_size);
/* Messages a stream holds now; 0 when its info cannot be read. */
guint64 jet_test_stream_msgs(jsCtx *js, const char *stream);
/* When a stream was created (its info's Created, Unix ns), asserted readable. */
gint64 jet_test_stream_created(jsCtx *js, const char *stream);
/* Message seq of a stream, asserted to be there; natsMsg_Destroy it. */
natsMsg *jet_test_stream_get(jsCtx *js, const char *stream, guint64 seq);
/* The first value of header name, or NULL. */
const char *jet_test_msg_header(natsMsg *m, const char *name);
/* Conditions for jet_test_wait_until.  A consumer done up to floor: its
 * ack floor there, nothing pending an ack, nothing left to deliver. */
typedef struct {
    jsCtx *js;
    const char *stream, *consumer;
    guint64 floor;
} JetTestFloorWait;
gboolean jet_test_floor_reached(gpointer floor_wait);
/* A stream holding at least want messages. */
typedef struct {
    jsCtx *js;
    const char *stream;
    guint64 want;
} JetTestStreamWait;
gboolean jet_test_stream_has(gpointer stream_wait);
/* Waits for every async publish's ack (30 s at most). */
/* Returns when the last publish the server refused was stored at last
 * (monotonic µs), 0 when none was refused. */
gint64 jet_test_publish_wait(jsCtx *js);
/* Publishes n messages "msg-<i>" to subject (async, then waits for all acks). */
void jet_test_publish_n(jsCtx *js, const char *subject, guint n);

/* Start times with a sub-second part nats.c would encode wrong (host/core/
 * start_time.h).  Waits until late in a wall-clock second, so that what is
 * published next crosses a second boundary. */
void jet_test_wait_late_in_second(void);
/* Of stream seqs 1..n: the first stored 10 to 100 ms into a second (not
 * seq 1), moved back over any stored within the same microsecond; its time
 * to the microsecond as RFC 3339 in *text (free it).  Seqs from the result
 * on are what a start at *text must deliver. */
guint64 jet_test_start_early_in_second(jsCtx *js, const char *stream, guint64 n, char **text);
/* Consumer info, asserted to exist; free with jsConsumerInfo_Destroy. */
jsConsumerInfo *jet_test_consumer_info(jsCtx *js, const char *stream, const char *consumer);

/* Writes text to a file in the private directory; returns its path. */
char *jet_test_write_file(const char *name, const char *text);

/* A file's whole text, asserted readable (caller frees). */
char *jet_test_read_text(const char *path);
/* A log that another process appends to, as g_file_get_contents reads it
 * (FALSE when it cannot be read), but only up to its last newline: a line
 * still being written is left out. */
gboolean jet_test_read_lines(const char *path, char **text);

/* Writes the config text to NAME.conf in the private directory and spawns
 * `jethost run -c` on it, stderr to NAME.stderr (its path in *errlog,
 * caller frees). */
GSubprocess *jet_test_jethost_spawn_config(const char *name, const char *text, char **errlog);
/* SIGTERM, then the test fails unless it exits 0 within 20 s (showing the
 * log at errlog). */
void jet_test_jethost_stop(GSubprocess *p, const char *errlog);

/* Runs `jethost ARGS...` with stderr to the file stderr_path (may be NULL:
 * inherited).  The child dies with the test (parent-death signal). */
GSubprocess *jet_test_jethost_spawn(const char *stderr_path, const char *const *args);
/* The same in a process group of its own (its pid is the group's id), as
 * a shell runs a foreground job: kill(-pid, SIGINT) is a Ctrl-C. */
GSubprocess *jet_test_jethost_spawn_group(const char *stderr_path, const char *const *args);
/* Waits for the child to exit within timeout_ms; returns its exit status,
 * or fails the test on a timeout. */
int jet_test_jethost_wait(GSubprocess *p, guint timeout_ms);
/* Waits until a file exists. */
gboolean jet_test_wait_file(const char *path, guint timeout_ms);
/* Waits until needle shows in the file at path (a log a child writes). */
gboolean jet_test_wait_log(const char *path, const char *needle, guint timeout_ms);
/* The HOST:PORT a Prometheus started with --web.listen-address=...:0 logs it
 * listens on (its "Listening on" line, in the 2.x and the 3.x layout),
 * waited for up to timeout_ms; NULL if it never shows.  Caller frees. */
char *jet_test_prometheus_address(const char *log, guint timeout_ms);

/* Sends this process's stderr (where jet_log writes) to a file until
 * jet_test_stderr_end(), which returns what was written (caller frees).
 * For in-process engines whose log lines a test checks. */
void jet_test_stderr_begin(const char *name);
char *jet_test_stderr_end(void);
/* Runs the built `jethost mock` (tests/mock-cli) with the NULL-terminated
 * arguments after "mock", input on stdin; *out and *err get what it wrote
 * (caller frees).  Returns its exit status. */
int jet_test_mock_cli(const char *input, char **out, char **err, ...) G_GNUC_NULL_TERMINATED;

/* One line of fx_gate's handled.log (tests/fixtures/fx_gate.c): a handling. */
typedef struct {
    guint64 seq;
    guint deliveries;
    gint64 start_ns, end_ns;   /* the monotonic clock */
    char verdict;              /* a(ck), r(etry), p(ostpone), (re)j(ect) */
    guint host;                /* the caller's tag for the log it came from */
} JetTestHandling;
/* Appends every whole line of the handled.log at path to out (an array of
 * JetTestHandling), tagged host; FALSE when the file cannot be read. */
gboolean jet_test_read_handlings(const char *path, guint host, GArray *out);

/* Lines of text containing needle (e.g. "event=ledger-fallback"). */
guint jet_test_count_lines(const char *text, const char *needle);

#endif
