/* Lane keys (lane_key.h). */
#include "lane_key.h"
#include "hdr_block.h"

#include <stdio.h>
#include <string.h>

gboolean jet_lane_key_parse(const char *text, JetLaneKeySpec *out, const char **why)
{
    memset(out, 0, sizeof *out);
    if (g_str_has_prefix(text, "header:")) {
        const char *name = text + strlen("header:");
        if (*name == '\0' || strlen(name) >= sizeof out->header || !jet_hdr_name_valid(name)) {
            *why = "header:NAME needs a header name: 1 to 64 token characters (letters, digits, !#$%&'*+-.^_`|~)";
            return FALSE;
        }
        out->kind = JET_LANE_KEY_HEADER;
        g_strlcpy(out->header, name, sizeof out->header);
        return TRUE;
    }
    if (g_str_has_prefix(text, "subject:")) {
        const char *n = text + strlen("subject:");
        gboolean digits = *n != '\0' && strlen(n) <= 3;
        for (const char *p = n; digits && *p != '\0'; p++)
            digits = g_ascii_isdigit(*p);
        guint v = digits ? (guint)g_ascii_strtoull(n, NULL, 10) : 0;
        if (v < 1 || v > JET_LANE_KEY_TOKEN_MAX) {
            *why = "subject:N needs a token number from 1 (the first token) to 255";
            return FALSE;
        }
        out->kind = JET_LANE_KEY_SUBJECT;
        out->token = v;
        return TRUE;
    }
    *why = "must be header:NAME or subject:N (docs/lanes.md)";
    return FALSE;
}

char *jet_lane_key_format(const JetLaneKeySpec *spec)
{
    switch (spec->kind) {
    case JET_LANE_KEY_HEADER:
        return g_strdup_printf("header:%s", spec->header);
    case JET_LANE_KEY_SUBJECT:
        return g_strdup_printf("subject:%u", spec->token);
    case JET_LANE_KEY_OFF:
        break;
    }
    return g_strdup("none");
}

static JetLaneKeyResult header_key(const char *name, const GPtrArray *headers, const char **key, gsize *len)
{
    const char *found = NULL;
    for (guint i = 0; headers != NULL && i + 1 < headers->len; i += 2) {
        if (g_ascii_strcasecmp(g_ptr_array_index(headers, i), name) != 0)
            continue;
        const char *v = g_ptr_array_index(headers, i + 1);
        if (found == NULL)
            found = v;
        else if (strcmp(found, v) != 0)
            return JET_LANE_AMBIGUOUS;
    }
    if (found == NULL || *found == '\0')
        return JET_LANE_KEYLESS;
    *key = found;
    *len = strlen(found);
    return JET_LANE_KEYED;
}

static JetLaneKeyResult subject_key(guint token, const char *subject, const char **key, gsize *len)
{
    const char *p = subject;
    for (guint i = 1; p != NULL && i < token; i++) {
        p = strchr(p, '.');
        if (p != NULL)
            p++;
    }
    if (p == NULL)
        return JET_LANE_KEYLESS;
    const char *end = strchr(p, '.');
    gsize n = end != NULL ? (gsize)(end - p) : strlen(p);
    if (n == 0)
        return JET_LANE_KEYLESS;
    *key = p;
    *len = n;
    return JET_LANE_KEYED;
}

JetLaneKeyResult jet_lane_key_of(const JetLaneKeySpec *spec, const char *subject, const GPtrArray *headers,
                                 const char **key, gsize *len)
{
    *key = NULL;
    *len = 0;
    switch (spec->kind) {
    case JET_LANE_KEY_HEADER:
        return header_key(spec->header, headers, key, len);
    case JET_LANE_KEY_SUBJECT:
        return subject != NULL ? subject_key(spec->token, subject, key, len) : JET_LANE_KEYLESS;
    case JET_LANE_KEY_OFF:
        break;
    }
    return JET_LANE_KEYLESS;
}

char *jet_lane_key_ambiguous_reason(const JetLaneKeySpec *spec)
{
    return g_strdup_printf("the lane key header '%s' has two different values: the message fits no lane "
                           "(docs/lanes.md)", spec->header);
}
