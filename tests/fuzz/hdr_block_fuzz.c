/* libFuzzer target for host/core/hdr_block.c.  The first input byte picks the
 * mode (even: parse, odd: write), the rest is the data.
 *
 * parse: the rest is a header block.  Whatever it holds, the parser must
 *   keep only valid names and values, report a defect iff it returns FALSE,
 *   and what it kept must write, parse back to the same pairs without a
 *   defect, and write again to the same bytes.
 * write: the rest is NUL-separated fields, taken as name, value, name ...
 *   The writer must refuse exactly what this file's own reading of the
 *   grammar calls invalid, and write the rest so that it parses back
 *   exactly.
 *
 * A violated property traps; ASan and UBSan catch the rest. */
#include "hdr_block.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond) do { if (!(cond)) __builtin_trap(); } while (0)

/* The grammar again, written apart from hdr_block.c on purpose: a bug
 * there should not hide itself here. */
static gboolean oracle_name(const char *s)
{
    if (*s == '\0')
        return FALSE;
    for (; *s; s++) {
        guchar c = (guchar)*s;
        gboolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        for (const char *t = "!#$%&'*+-.^_`|~"; !ok && *t; t++)
            ok = c == (guchar)*t;
        if (!ok)
            return FALSE;
    }
    return TRUE;
}

static gboolean oracle_value(const char *s)
{
    size_t n = strlen(s);
    if (strpbrk(s, "\r\n") != NULL)
        return FALSE;
    if (n > 0 && (s[0] == ' ' || s[0] == '\t' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        return FALSE;
    return TRUE;
}

static gboolean same_pairs(const GPtrArray *a, const GPtrArray *b)
{
    if (a->len != b->len)
        return FALSE;
    for (guint i = 0; i < a->len; i++)
        if (strcmp(g_ptr_array_index(a, i), g_ptr_array_index(b, i)) != 0)
            return FALSE;
    return TRUE;
}

/* headers are valid and non-empty: they must write, read back exactly, and
 * write again to the same bytes. */
static void check_round_trip(const GPtrArray *headers)
{
    GError *err = NULL;
    gsize len = 0;
    char *block = jet_hdr_write(headers, &len, &err);
    CHECK(block != NULL && err == NULL);
    CHECK(len == jet_hdr_encoded_len(headers));
    CHECK(len >= JET_HDR_FRAME_BYTES && strlen(block) == len);
    CHECK(memcmp(block, JET_HDR_LINE "\r\n", 10) == 0);
    CHECK(memcmp(block + len - 4, "\r\n\r\n", 4) == 0);

    JetHdrParse back = { 0 };
    CHECK(jet_hdr_parse(block, len, &back));
    CHECK(back.defects->len == 0);
    CHECK(same_pairs(back.headers, headers));

    gsize len2 = 0;
    char *again = jet_hdr_write(back.headers, &len2, &err);
    CHECK(again != NULL && err == NULL);
    CHECK(len2 == len && memcmp(again, block, len) == 0);

    for (guint i = 0; i < headers->len; i += 2) {
        const char *v = jet_hdr_get(back.headers, g_ptr_array_index(headers, i));
        CHECK(v != NULL);
    }
    g_free(again);
    jet_hdr_parse_clear(&back);
    g_free(block);
}

static void fuzz_parse(const char *data, size_t size)
{
    JetHdrParse p = { 0 };
    gboolean ok = jet_hdr_parse(data, size, &p);
    CHECK(p.headers != NULL && p.defects != NULL);
    CHECK(ok == (p.defects->len == 0));
    CHECK(p.headers->len % 2 == 0);
    if (size == 0)
        CHECK(ok && p.headers->len == 0);

    for (guint i = 0; i < p.headers->len; i += 2) {
        const char *name = g_ptr_array_index(p.headers, i), *value = g_ptr_array_index(p.headers, i + 1);
        CHECK(jet_hdr_name_valid(name) && oracle_name(name));
        CHECK(jet_hdr_value_valid(value) && oracle_value(value));
    }

    /* One line, at most one defect; the block-wide ones come last. */
    guint lines = 1;
    for (size_t i = 0; i + 1 < size; i++)
        if (data[i] == '\r' && data[i + 1] == '\n')
            lines++;
    guint last = 0;
    for (guint i = 0; i < p.defects->len; i++) {
        const JetHdrDefect *d = &g_array_index(p.defects, JetHdrDefect, i);
        CHECK(d->text != NULL && d->why != NULL && *d->why != '\0');
        CHECK(strlen(d->text) <= JET_HDR_DEFECT_TEXT_MAX * 4 + 3);
        for (const char *c = d->text; *c; c++)
            CHECK(*c >= 0x21 && *c <= 0x7e && *c != '"' && *c != ',');
        CHECK(d->line <= lines);
        if (d->line == 0)
            CHECK(i + 1 == p.defects->len);
        else
            CHECK(d->line > last);
        last = d->line;
        char *desc = jet_hdr_defect_describe(d);
        CHECK(desc != NULL && strstr(desc, d->why) != NULL);
        g_free(desc);
    }

    if (p.headers->len > 0) {
        check_round_trip(p.headers);
    } else {
        gsize len = 1;
        GError *err = NULL;
        CHECK(jet_hdr_write(p.headers, &len, &err) == NULL && len == 0 && err == NULL);
    }
    jet_hdr_parse_clear(&p);
}

static void fuzz_write(const char *data, size_t size)
{
    GPtrArray *h = g_ptr_array_new_with_free_func(g_free);
    gboolean valid = TRUE;
    const char *p = data, *end = data + size;
    while (p < end) {
        const char *nul = memchr(p, '\0', (size_t)(end - p));
        const char *stop = nul != NULL ? nul : end;
        char *field = g_strndup(p, (size_t)(stop - p));
        if (h->len % 2 == 0)
            valid = valid && oracle_name(field);
        else
            valid = valid && oracle_value(field);
        g_ptr_array_add(h, field);
        p = nul != NULL ? nul + 1 : end;
    }
    /* A name left without its value must be refused. */
    if (h->len % 2 != 0)
        valid = FALSE;

    GError *err = NULL;
    gsize len = 1;
    char *block = jet_hdr_write(h, &len, &err);
    if (h->len == 0) {
        CHECK(block == NULL && len == 0 && err == NULL);
    } else if (!valid) {
        CHECK(block == NULL && len == 0);
        CHECK(err != NULL && err->message != NULL && *err->message != '\0');
        g_error_free(err);
    } else {
        CHECK(block != NULL && err == NULL);
        g_free(block);
        check_round_trip(h);
    }
    g_ptr_array_unref(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *rest = (const char *)data + 1;
    if (data[0] % 2 == 0)
        fuzz_parse(rest, size - 1);
    else
        fuzz_write(rest, size - 1);
    return 0;
}
