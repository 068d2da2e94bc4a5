/* Subscriptions ended after the reading thread is done with them:
 * sub_end.h has why. */
#include "sub_end.h"

#define ROUND_TRIP_MS 1000
/* nats_GetVersionNumber() of the first nats.c that holds the subscription
 * while it handles a message. */
#define HOLDS_SUB_VERSION 0x030700

gboolean jet_sub_end(natsConnection *nc, natsSubscription *sub)
{
    natsSubscription_Unsubscribe(sub);
    if (nats_GetVersionNumber() >= HOLDS_SUB_VERSION)
        return TRUE;
    /* Not connected: the reading thread may be ending mid-message, with no
     * round trip to tell when it is done. */
    if (natsConnection_Status(nc) != NATS_CONN_STATUS_CONNECTED)
        return FALSE;
    return natsConnection_FlushTimeout(nc, ROUND_TRIP_MS) == NATS_OK;
}

void jet_sub_end_destroy(natsConnection *nc, natsSubscription *sub)
{
    if (sub != NULL && jet_sub_end(nc, sub))
        natsSubscription_Destroy(sub);
}
