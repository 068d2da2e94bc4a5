#include "payload.h"

const char *jet_payload_or_empty(const char *data, int len, gsize *out_len)
{
    g_return_val_if_fail(out_len != NULL, "");
    if (data == NULL || len <= 0) {
        *out_len = 0;
        return "";
    }
    *out_len = (gsize)len;
    return data;
}
