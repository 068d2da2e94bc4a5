/* What the host takes from libnats beyond nats.h: see nats_raw.h for why
 * these functions reach past it. */
#include "nats_raw.h"

#include "conn.h"
#include "errors.h"
#include "log.h"
#include "pull_status.h"
#include "sub_end.h"

#include <string.h>

/* Exported by libnats (src/msg.h, src/buf.h) but not declared in nats.h;
 * configure.ac checks each one links. */
typedef struct __natsBuffer natsBuffer;
natsStatus natsMsg_create(natsMsg **newMsg, const char *subject, int subjLen, const char *reply, int replyLen,
                          const char *buf, int bufLen, int hdrLen);
#if HAVE_DECL_NATSMSGHEADER_ENCODEDLENGTH
#define header_encoded_len natsMsgHeader_EncodedLength   /* public since nats.c 3.14 */
#else
int natsMsgHeader_encodedLen(natsMsg *msg);
#define header_encoded_len natsMsgHeader_encodedLen
#endif
natsStatus natsMsgHeader_encode(natsBuffer *buf, natsMsg *msg);
natsStatus natsBuf_CreateWithBackend(natsBuffer **newBuf, char *data, int len, int capacity);
void natsBuf_Destroy(natsBuffer *buf);
void natsMsg_free(void *object);

/* The nats.c releases read for jet_nats_msg_free: in each, natsMsg_Destroy
 * is the flag check, the collector, then natsMsg_free. */
#define MSG_FREE_FIRST 0x030300
#define MSG_FREE_BEYOND 0x030E00

void jet_nats_msg_free(natsMsg *m)
{
    static gsize direct;   /* 1 + whether natsMsg_free is the one to call */
    if (g_once_init_enter(&direct)) {
        int v = nats_GetVersionNumber();
        g_once_init_leave(&direct, 1 + (v >= MSG_FREE_FIRST && v < MSG_FREE_BEYOND));
    }
    if (direct == 2)
        natsMsg_free(m);
    else
        natsMsg_Destroy(m);
}

gboolean jet_nats_raw_headers(natsMsg *m, char **block, gsize *block_len)
{
    g_return_val_if_fail(block != NULL && block_len != NULL, FALSE);
    *block = NULL;
    *block_len = 0;
    if (m == NULL)
        return TRUE;
    int n = header_encoded_len(m);
    if (n <= 0)
        return TRUE;
    /* One spare byte: the buffer never has to grow (and so never leaves
     * our memory for one of its own). */
    char *mem = g_malloc((gsize)n + 1);
    natsBuffer *b = NULL;
    if (natsBuf_CreateWithBackend(&b, mem, 0, n + 1) != NATS_OK) {
        g_free(mem);
        return FALSE;
    }
    natsStatus s = natsMsgHeader_encode(b, m);
    natsBuf_Destroy(b);
    if (s != NATS_OK) {
        g_free(mem);
        return FALSE;
    }
    mem[n] = '\0';
    *block = mem;
    *block_len = (gsize)n;
    return TRUE;
}

/* --- keeping the blocks of empty messages intact -------------------------- */

/* natsSubscription_NextMsg asks natsMsg_IsNoResponders of every message it
 * hands over, and nats.c's own answer reads the headers of an empty message
 * through its parser, which rewrites the received block in place (a KV
 * delete marker, any empty message with headers): the bytes as delivered
 * would be gone before the host sees the message.  libnats calls the
 * function through its PLT, so this definition, linked into the host's own
 * executable, is the one it finds: the same answer (an empty payload and a
 * status line, or a Status field once parsed, starting "503"), read from a
 * copy of the block, leaving the message as received.  Whether the linker
 * and libnats in use really route nats.c's calls here is checked once per
 * process on a live connection (jet_nats_raw_probe). */
#define NO_RESPONDERS "503"

static gboolean block_says_503(const char *b, gsize len)
{
    static const char line[] = "NATS/1.0";
    if (len < sizeof line - 1 || memcmp(b, line, sizeof line - 1) != 0)
        return FALSE;
    gsize i = sizeof line - 1;
    while (i < len && (b[i] == ' ' || b[i] == '\t'))
        i++;
    if (len - i >= 3 && memcmp(b + i, NO_RESPONDERS, 3) == 0)
        return TRUE;
    /* A block nats.c already parsed comes back re-encoded, the status as a
     * field of its own. */
    for (const char *p = b; p != NULL && p < b + len; p = memchr(p, '\n', (gsize)(b + len - p))) {
        if (*p == '\n')
            p++;
        static const char field[] = "Status:";
        gsize left = (gsize)(b + len - p);
        if (left < sizeof field - 1 || memcmp(p, field, sizeof field - 1) != 0)
            continue;
        const char *v = p + sizeof field - 1;
        while (v < b + len && *v == ' ')
            v++;
        if ((gsize)(b + len - v) >= 3 && memcmp(v, NO_RESPONDERS, 3) == 0)
            return TRUE;
    }
    return FALSE;
}

/* Default visibility: the tree builds with -fvisibility=hidden, and only a
 * visible definition can be exported (configure's NORESP_LDFLAGS). */
__attribute__((visibility("default"))) bool natsMsg_IsNoResponders(natsMsg *m)
{
    if (m == NULL || natsMsg_GetDataLength(m) != 0)
        return false;
    g_autofree char *block = NULL;
    gsize len = 0;
    if (!jet_nats_raw_headers(m, &block, &len) || block == NULL)
        return false;
    return block_says_503(block, len);
}

static gint probe_state;   /* atomic: 0 not probed, 1 intact, 2 not intact */

gboolean jet_nats_raw_intact(natsMsg *m)
{
    return m == NULL || natsMsg_GetDataLength(m) > 0 || g_atomic_int_get(&probe_state) == 1;
}

void jet_nats_raw_probe(natsConnection *nc)
{
    static GMutex lock;
    g_mutex_lock(&lock);
    if (g_atomic_int_get(&probe_state) != 0) {
        g_mutex_unlock(&lock);
        return;
    }
    /* A block nats.c's parser would rewrite (padding it trims, a field it
     * folds), sent to ourselves without a payload. */
    static const char block[] = "NATS/1.0\r\nJethost-Probe:  a  \r\n b\r\n\r\n";
    g_autofree char *inbox = NULL;
    natsInbox *ib = NULL;
    natsSubscription *sub = NULL;
    natsMsg *out = NULL, *in = NULL;
    gboolean ok = FALSE;
    if (natsInbox_Create(&ib) == NATS_OK && natsConnection_SubscribeSync(&sub, nc, ib) == NATS_OK &&
        (out = jet_nats_msg_new_raw(ib, block, sizeof block - 1, NULL, 0, NULL)) != NULL &&
        natsConnection_PublishMsg(nc, out) == NATS_OK && natsSubscription_NextMsg(&in, sub, 2000) == NATS_OK) {
        g_autofree char *got = NULL;
        gsize got_len = 0;
        ok = jet_nats_raw_headers(in, &got, &got_len) && got_len == sizeof block - 1 &&
             memcmp(got, block, got_len) == 0;
        g_atomic_int_set(&probe_state, ok ? 1 : 2);
        if (!ok)
            jet_log(JET_LOG_WARNING, NULL, "headers-reread",
                    "nats.c rewrites the header block of a message without a payload before the host reads "
                    "it (this libnats does not call natsMsg_IsNoResponders through its PLT): such blocks are "
                    "read again from the stream, and one the stream no longer holds is dead-lettered "
                    "(docs/headers.md)");
    }
    natsMsg_Destroy(in);
    natsMsg_Destroy(out);
    jet_sub_end_destroy(nc, sub);
    natsInbox_Destroy(ib);
    g_mutex_unlock(&lock);
}

natsMsg *jet_nats_msg_new_raw(const char *subject, const char *block, gsize block_len, const void *data,
                              gsize data_len, GError **error)
{
    return jet_nats_msg_new_raw_reply(subject, NULL, block, block_len, data, data_len, error);
}

natsMsg *jet_nats_msg_new_raw_reply(const char *subject, const char *reply, const char *block, gsize block_len,
                                    const void *data, gsize data_len, GError **error)
{
    if (subject == NULL || *subject == '\0') {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "no subject");
        return NULL;
    }
    if (block_len > G_MAXINT / 2 || data_len > G_MAXINT / 2) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "message too large");
        return NULL;
    }
    /* natsMsg_create copies one buffer: the block, then the payload. */
    gsize total = block_len + data_len;
    g_autofree char *buf = g_malloc(total + 1);
    if (block_len > 0)
        memcpy(buf, block, block_len);
    if (data_len > 0)
        memcpy(buf + block_len, data, data_len);
    natsMsg *m = NULL;
    natsStatus s = natsMsg_create(&m, subject, (int)strlen(subject), reply, reply != NULL ? (int)strlen(reply) : 0,
                                  buf, (int)total,
                                  block_len > 0 ? (int)block_len : -1);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "building a message to %s: %s", subject, why);
        return NULL;
    }
    return m;
}

gboolean jet_js_publish_raw(jsCtx *js, const char *subject, const char *block, gsize block_len, const void *data,
                            gsize data_len, jsPubAck **pa_out, GError **error)
{
    if (pa_out != NULL)
        *pa_out = NULL;
    natsMsg *m = jet_nats_msg_new_raw(subject, block, block_len, data, data_len, error);
    if (m == NULL)
        return FALSE;
    /* No publish options: they would re-encode the block. */
    jsPubAck *pa = NULL;
    jsErrCode jerr = 0;
    natsStatus s = js_PublishMsg(&pa, js, m, NULL, &jerr);
    natsMsg_Destroy(m);
    if (s != NATS_OK) {
        g_autofree char *why = jet_nats_error(s);
        /* No responders: nats.c 3.4 also sets JetStream error 10076 ("not
         * enabled"), but this is JetStream talking: no stream captures the
         * subject, and the reason says so. */
        if (s == NATS_NO_RESPONDERS)
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%s (no stream captures this subject)", why);
        else if (jerr != 0)
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%s (JetStream error %d)", why, (int)jerr);
        else
            g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "%s", why);
        return FALSE;
    }
    if (pa == NULL || pa->Stream == NULL || *pa->Stream == '\0') {
        jsPubAck_Destroy(pa);
        g_set_error(error, JET_ERROR, JET_ERROR_SERVER, "the reply is not a JetStream pub-ack (it names no stream)");
        return FALSE;
    }
    if (pa_out != NULL)
        *pa_out = pa;
    else
        jsPubAck_Destroy(pa);
    return TRUE;
}

/* A status is read as host/core/pull_status.h says nats.c hands it over: no reply,
 * no payload, a "Status" pseudo-header.  A code that does not parse stays a
 * status (code 0, which the table does not know): the pull ends, loudly,
 * rather than waiting for its deadline. */
gboolean jet_nats_status(natsMsg *m, int *code, const char **desc)
{
    const char *v = NULL;
    if (natsMsg_GetReply(m) != NULL || natsMsg_GetDataLength(m) != 0)
        return FALSE;
    if (natsMsgHeader_Get(m, "Status", &v) != NATS_OK || v == NULL)
        return FALSE;
    if (!jet_pull_status_parse_line(v, code))
        *code = 0;
    *desc = NULL;
    if (natsMsgHeader_Get(m, "Description", desc) != NATS_OK)
        *desc = NULL;
    return TRUE;
}
