#include "msg_payload.h"
#include "payload.h"

const char *jet_msg_payload(natsMsg *m, gsize *len)
{
    return jet_payload_or_empty(natsMsg_GetData(m), natsMsg_GetDataLength(m), len);
}

const char *jet_kv_value(kvEntry *e, gsize *len)
{
    return jet_payload_or_empty(kvEntry_Value(e), kvEntry_ValueLen(e), len);
}
