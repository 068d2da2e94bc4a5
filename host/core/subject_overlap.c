#include "subject_overlap.h"

#include <string.h>

/* The token at *p (up to the next dot or the end) and its length; *p moves
 * past it and its dot.  NULL at the end. */
static const char *next_token(const char **p, gsize *len)
{
    if (*p == NULL)
        return NULL;
    const char *t = *p;
    const char *dot = strchr(t, '.');
    *len = dot != NULL ? (gsize)(dot - t) : strlen(t);
    *p = dot != NULL ? dot + 1 : NULL;
    return t;
}

static gboolean is_tail(const char *t, gsize len)
{
    return len == 1 && t[0] == '>';
}

static gboolean is_one(const char *t, gsize len)
{
    return len == 1 && t[0] == '*';
}

gboolean jet_subject_overlaps(const char *a, const char *b)
{
    if (a == NULL || b == NULL || *a == '\0' || *b == '\0')
        return FALSE;   /* no subject at all matches nothing */
    const char *pa = a, *pb = b;
    for (;;) {
        gsize la = 0, lb = 0;
        const char *ta = next_token(&pa, &la);
        const char *tb = next_token(&pb, &lb);
        if (ta == NULL || tb == NULL)
            return ta == NULL && tb == NULL;   /* one is longer: `>` needs a token, a literal one too */
        if (is_tail(ta, la) || is_tail(tb, lb))
            return TRUE;                       /* the other has a token here: `>` takes it and the rest */
        if (is_one(ta, la) || is_one(tb, lb))
            continue;
        if (la != lb || memcmp(ta, tb, la) != 0)
            return FALSE;
    }
}

gboolean jet_filter_fits_subjects(const char *filter, const char *const *subjects, gsize n)
{
    g_return_val_if_fail(filter != NULL, FALSE);
    if (n == 0)
        return TRUE;
    for (gsize i = 0; i < n; i++)
        if (subjects[i] != NULL && jet_subject_overlaps(filter, subjects[i]))
            return TRUE;
    return FALSE;
}
