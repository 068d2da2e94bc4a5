/* A stream's info as its leader sees it: stream_info.h. */
#include "stream_info.h"

#define ASK_AGAIN_US (250 * 1000)

gboolean jet_stream_info_from_member(const jsStreamInfo *si)
{
    if (si == NULL || si->Cluster == NULL)
        return FALSE;
    const jsClusterInfo *ci = si->Cluster;
    if (ci->Leader == NULL || ci->Leader[0] == '\0')
        return TRUE;
    /* The replicas are every member but the one answering: a leader among
     * them answered through another. */
    for (int i = 0; i < ci->ReplicasLen; i++)
        if (ci->Replicas[i] != NULL && g_strcmp0(ci->Replicas[i]->Name, ci->Leader) == 0)
            return TRUE;
    return FALSE;
}

/* What a cluster answers while it has no meta leader (a delayed 503
 * "JetStream system temporarily unavailable"), or a request no member
 * answered in time: ask again. */
static gboolean electing(natsStatus s, jsErrCode e)
{
    return s == NATS_TIMEOUT || (s == NATS_ERR && (e == JSClusterNotAvailErr || e == JSStreamOfflineErr));
}

natsStatus jet_stream_info_led(jsStreamInfo **out, jsCtx *js, const char *stream, guint wait_ms, const gint *stop,
                               jsErrCode *jerr)
{
    gint64 until = g_get_monotonic_time() + (gint64)wait_ms * 1000;
    *out = NULL;
    for (;;) {
        jsStreamInfo *si = NULL;
        jsErrCode e = 0;
        natsStatus s = js_GetStreamInfo(&si, js, stream, NULL, &e);
        if (jerr != NULL)
            *jerr = e;
        if (s == NATS_OK && !jet_stream_info_from_member(si)) {
            *out = si;
            return NATS_OK;
        }
        jsStreamInfo_Destroy(si);
        if (s != NATS_OK && !electing(s, e))
            return s;
        if (g_get_monotonic_time() + ASK_AGAIN_US > until || (stop != NULL && g_atomic_int_get(stop))) {
            if (s != NATS_OK)
                return s;
            if (jerr != NULL)
                *jerr = 0;
            return NATS_TIMEOUT;
        }
        g_usleep(ASK_AGAIN_US);
    }
}
