/* A stream's info as its leader sees it: stream_info.h. */
#include "stream_info.h"

#define ASK_AGAIN_US (250 * 1000)

gboolean jet_stream_info_leaderless(const jsStreamInfo *si)
{
    return si != NULL && si->Cluster != NULL && (si->Cluster->Leader == NULL || si->Cluster->Leader[0] == '\0');
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
        if (s != NATS_OK)
            return s;
        if (!jet_stream_info_leaderless(si)) {
            *out = si;
            return NATS_OK;
        }
        jsStreamInfo_Destroy(si);
        if (g_get_monotonic_time() + ASK_AGAIN_US > until || (stop != NULL && g_atomic_int_get(stop)))
            break;
        g_usleep(ASK_AGAIN_US);
    }
    if (jerr != NULL)
        *jerr = 0;
    return NATS_TIMEOUT;
}
