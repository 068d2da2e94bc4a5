/* Subject patterns that overlap (subject_overlap.h). */
#include "subject_overlap.h"

#include <string.h>

/* The length of the token at p (up to the next '.' or the end). */
static size_t token_len(const char *p)
{
    const char *dot = strchr(p, '.');
    return dot != NULL ? (size_t)(dot - p) : strlen(p);
}

static gboolean token_is(const char *p, size_t n, char wildcard)
{
    return n == 1 && p[0] == wildcard;
}

gboolean jet_subject_overlaps(const char *a, const char *b)
{
    if (a == NULL || b == NULL || *a == '\0' || *b == '\0')
        return FALSE;
    /* Token by token: both patterns end together, or one reaches a `>`
     * while the other still has a token for it to stand for. */
    for (;;) {
        size_t na = token_len(a), nb = token_len(b);
        if (token_is(a, na, '>') || token_is(b, nb, '>'))
            return TRUE;
        if (!token_is(a, na, '*') && !token_is(b, nb, '*') && (na != nb || memcmp(a, b, na) != 0))
            return FALSE;
        gboolean a_more = a[na] == '.', b_more = b[nb] == '.';
        if (a_more != b_more)
            return FALSE;   /* one has tokens left that the other cannot match */
        if (!a_more)
            return TRUE;
        a += na + 1;
        b += nb + 1;
    }
}
