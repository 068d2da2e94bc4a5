/* Names and subjects: names.h. */
#include "names.h"

#include <string.h>

static const char *const reserved[] = {
    "$JS.", "$JSC.", "$KV.", "$O.", "$SYS.", "$NRG.", "$MQTT.", "_INBOX.",
};

/* A character that would split, hide or end a name on a terminal or on the
 * wire: white space, control and format characters (a zero-width space, a
 * byte order mark) look like nothing and mean something. */
static gboolean invisible(gunichar c)
{
    return g_unichar_isspace(c) || g_unichar_iscntrl(c) || g_unichar_type(c) == G_UNICODE_FORMAT;
}

/* The checks every name and subject shares; len set. */
static const char *text_problem(const char *s, gsize max, const char *too_long, gsize *len)
{
    if (s == NULL || *s == '\0')
        return "is empty";
    *len = strlen(s);
    if (*len > max)
        return too_long;
    if (!g_utf8_validate(s, (gssize)*len, NULL))
        return "is not valid UTF-8";
    for (const char *p = s; *p; p = g_utf8_next_char(p))
        if (invisible(g_utf8_get_char(p)))
            return "holds white space or a control character";
    return NULL;
}

const char *jet_name_problem(const char *name)
{
    gsize len = 0;
    const char *why = text_problem(name, JET_NAME_MAX, "is longer than 255 bytes", &len);
    if (why != NULL)
        return why;
    if (strpbrk(name, ".*>/\\") != NULL)
        return "holds '.', '*', '>', '/' or '\\'";
    return NULL;
}

static gboolean ascii_word(const char *s, const char *extra)
{
    for (const char *p = s; *p; p++)
        if (!g_ascii_isalnum(*p) && strchr(extra, *p) == NULL)
            return FALSE;
    return TRUE;
}

const char *jet_bucket_problem(const char *bucket)
{
    if (bucket == NULL || *bucket == '\0')
        return "is empty";
    if (!ascii_word(bucket, "_-"))
        return "is not a KV bucket name: letters, digits, _ and - only";
    if (strlen(bucket) > JET_BUCKET_MAX)
        return "is longer than 252 bytes (its stream, KV_<bucket>, may have 255)";
    return NULL;
}

const char *jet_kv_key_problem(const char *key)
{
    if (key == NULL || *key == '\0')
        return "is empty";
    if (!ascii_word(key, "-/_=."))
        return "is not a KV key: letters, digits, - / _ = and '.' between tokens only";
    if (key[0] == '.' || key[strlen(key) - 1] == '.' || strstr(key, "..") != NULL)
        return "has an empty token (a leading, trailing or doubled '.')";
    return NULL;
}

const char *jet_binding_name_problem(const char *name)
{
    if (name == NULL || *name == '\0')
        return "is empty";
    if (!ascii_word(name, "_-"))
        return "is not a binding name: letters, digits, _ and - only";
    if (strlen(name) > JET_NAME_MAX)
        return "is longer than 255 bytes";
    return NULL;
}

/* One token of a subject, [t, end). */
static const char *token_problem(const char *t, const char *end, gboolean last, JetSubjectRules rules)
{
    if (t == end)
        return "has an empty token";
    if (memchr(t, '*', (gsize)(end - t)) == NULL && memchr(t, '>', (gsize)(end - t)) == NULL)
        return NULL;
    if (!(rules & JET_SUBJECT_WILDCARDS))
        return "holds a wildcard ('*' or '>'): give a literal subject";
    if (end - t != 1)
        return "has a wildcard inside a token";
    if (*t == '>' && !last)
        return "has '>' before its last token";
    return NULL;
}

const char *jet_subject_problem(const char *subject, JetSubjectRules rules)
{
    gsize len = 0;
    const char *why = text_problem(subject, JET_SUBJECT_MAX, "is longer than 1024 bytes", &len);
    if (why != NULL)
        return why;
    const char *end = subject + len;
    for (const char *t = subject;;) {
        const char *dot = memchr(t, '.', (gsize)(end - t));
        const char *stop = dot != NULL ? dot : end;
        if ((why = token_problem(t, stop, dot == NULL, rules)) != NULL)
            return why;
        if (dot == NULL)
            break;
        t = dot + 1;
    }
    if (!(rules & JET_SUBJECT_RESERVED))
        for (gsize i = 0; i < G_N_ELEMENTS(reserved); i++)
            if (g_ascii_strncasecmp(subject, reserved[i], strlen(reserved[i])) == 0)
                return "is in a namespace reserved for the server ($JS., $JSC., $KV., $O., $SYS., $NRG., "
                       "$MQTT., _INBOX.)";
    return NULL;
}
