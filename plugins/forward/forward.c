/*
 * forward.so: publishes each message on, unchanged, to a subject built from
 * it, through the host's publish-then-ack (docs/forwarding.md): the host
 * sends the publish after handle() returns ACK, waits for its pub-ack and
 * only then acks the origin, under a Nats-Msg-Id that makes a redelivery
 * publish nothing twice within the target stream's duplicate window.
 *
 *     option.subject = audit.{token:2}.{header:Region}
 *
 * {subject} is the whole origin subject, {token:N} its Nth token (from 1),
 * {header:NAME} the first value of header NAME; the rest is literal.  A
 * message the template cannot make a valid subject from (a header missing
 * or empty, a token out of range, a value with white space or a wildcard)
 * fails with a reason naming what was wrong: RETRY by default, REJECT with
 * option.on_bad_subject = reject.  docs/plugins.md documents it.
 *
 * Plain C and libc only, like every plugin.  The state is read-only after
 * init() and the metrics are the host's, so handle() runs on any number of
 * threads at once.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jethost/plugin.h>

JET_HOST_DEFINE;

static const jet_option options[] = {
    { .name = "subject", .type = JET_OPT_STRING, .default_value = NULL, .flags = JET_OPTION_REQUIRED,
      .help = "where to publish: text with {subject}, {token:N} and {header:NAME} filled in from the message" },
    { .name = "on_bad_subject", .type = JET_OPT_STRING, .default_value = "retry",
      .help = "when the template makes no valid subject from a message: retry or reject" },
    { .name = NULL }
};

/* The longest subject the plugin publishes to, in bytes: the bound the host
 * puts on the subjects it is configured with, well inside the server's
 * control line. */
#define FWD_SUBJECT_MAX 1024
/* The largest N of {token:N}: a token needs at least two bytes of a
 * subject, so no subject the plugin publishes has more tokens than this. */
#define FWD_TOKEN_MAX (FWD_SUBJECT_MAX / 2)
/* How much of a hostile value a reason quotes. */
#define FWD_SHOWN_MAX 48

enum part_kind { PART_LITERAL, PART_SUBJECT, PART_TOKEN, PART_HEADER };

struct part {
    enum part_kind kind;
    char *text;        /* PART_LITERAL: the bytes; PART_HEADER: the name; NUL-terminated */
    size_t len;        /* of text */
    unsigned token;    /* PART_TOKEN: N, from 1 */
};

struct fwd_state {
    jet_ctx *ctx;
    char *template_text;
    struct part *parts;
    size_t n_parts;
    size_t prefix_len;    /* the template's literal bytes before its first placeholder */
    int bad_verdict;      /* JET_RETRY or JET_REJECT */
    int m_forwarded, m_duplicates, m_bad_subject;
};

/* ------------------------------------------------------------------------ */
/* Subjects: what the host's msg_publish() accepts (docs/forwarding.md)      */
/* ------------------------------------------------------------------------ */

/* Decodes the UTF-8 sequence at p (at most n bytes) into *cp; returns its
 * length, or 0 when the bytes there are not one (overlong forms, surrogates
 * and code points past U+10FFFF are not, RFC 3629). */
static size_t utf8_decode(const unsigned char *p, size_t n, uint32_t *cp)
{
    unsigned char c = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;   /* bounds of the second byte */
    uint32_t v;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    *cp = v;
    return len;
}

/* White space (Unicode Zs, Zl, Zp and the ASCII spaces), control (Cc) and
 * format (Cf) characters: what the host refuses in a subject, because a
 * subscriber or a log could not tell them from nothing.  Unicode 15. */
static bool invisible(uint32_t c)
{
    static const struct {
        uint32_t lo, hi;
    } ranges[] = {
        { 0x0000, 0x0020 }, { 0x007F, 0x00A0 }, { 0x00AD, 0x00AD }, { 0x0600, 0x0605 },
        { 0x061C, 0x061C }, { 0x06DD, 0x06DD }, { 0x070F, 0x070F }, { 0x0890, 0x0891 },
        { 0x08E2, 0x08E2 }, { 0x1680, 0x1680 }, { 0x180E, 0x180E }, { 0x2000, 0x200F },
        { 0x2028, 0x202F }, { 0x205F, 0x2064 }, { 0x2066, 0x206F }, { 0x3000, 0x3000 },
        { 0xFEFF, 0xFEFF }, { 0xFFF9, 0xFFFB }, { 0x110BD, 0x110BD }, { 0x110CD, 0x110CD },
        { 0x13430, 0x1343F }, { 0x1BCA0, 0x1BCA3 }, { 0x1D173, 0x1D17A }, { 0xE0001, 0xE0001 },
        { 0xE0020, 0xE007F },
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (c >= ranges[i].lo && c <= ranges[i].hi)
            return true;
    return false;
}

/* What is wrong with the characters of s[0..n) in a subject, or NULL:
 * bytes that are not UTF-8, invisible characters, wildcards. */
static const char *chars_problem(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        uint32_t c = 0;
        size_t l = utf8_decode(p + i, n - i, &c);
        if (l == 0)
            return "is not valid UTF-8";
        if (invisible(c))
            return "holds white space or a control character";
        if (c == '*' || c == '>')
            return "holds a wildcard ('*' or '>')";
        i += l;
    }
    return NULL;
}

/* The server's own namespaces: a message must not steer a forward into
 * them (docs/plugins.md, "forward"). */
static const char *const reserved[] = {
    "$JS.", "$JSC.", "$KV.", "$O.", "$SYS.", "$NRG.", "$MQTT.", "_INBOX.",
};

/* What is wrong with a whole subject s (n bytes, NUL-terminated), or NULL.  prefix (prefix_len bytes) is
 * the template's own text before its first placeholder: a reserved
 * namespace the template names itself is the operator's choice (the
 * binding's publish_reserved decides); one that only a message's values
 * reach is refused here. */
static const char *subject_problem(const char *s, size_t n, const char *prefix, size_t prefix_len)
{
    if (n == 0)
        return "is empty";
    if (n > FWD_SUBJECT_MAX)
        return "is longer than 1024 bytes";
    const char *why = chars_problem(s, n);
    if (why != NULL)
        return why;
    if (s[0] == '.' || s[n - 1] == '.' || strstr(s, "..") != NULL)
        return "has an empty token";
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
        size_t rl = strlen(reserved[i]);
        if (n >= rl && strncasecmp(s, reserved[i], rl) == 0 &&
            !(prefix_len >= rl && strncasecmp(prefix, reserved[i], rl) == 0))
            return "lies in a namespace reserved for the server, which only the template's own text may name";
    }
    return NULL;
}

/* s[0..n) quoted for a reason: printable ASCII as it is, the rest as \xNN,
 * cut with "..." past FWD_SHOWN_MAX bytes.  out holds 4 * FWD_SHOWN_MAX + 4. */
static void shown(const char *s, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n && i < FWD_SHOWN_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c > 0x20 && c < 0x7F && c != '\\' && c != '"') {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    if (n > FWD_SHOWN_MAX) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
}

/* ------------------------------------------------------------------------ */
/* The template                                                             */
/* ------------------------------------------------------------------------ */

/* A header name: an RFC 9110 token. */
static bool tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static bool add_part(struct fwd_state *st, enum part_kind kind, const char *text, size_t len, unsigned token,
                     char *err, size_t err_len)
{
    struct part *p = &st->parts[st->n_parts];
    p->kind = kind;
    p->token = token;
    p->len = len;
    p->text = malloc(len + 1);
    if (p->text == NULL) {
        snprintf(err, err_len, "out of memory");
        return false;
    }
    memcpy(p->text, text, len);
    p->text[len] = '\0';
    st->n_parts++;
    return true;
}

/* Reads the placeholder inner[0..n) (between the braces). */
static bool parse_placeholder(struct fwd_state *st, const char *inner, size_t n, char *err, size_t err_len)
{
    char quoted[4 * FWD_SHOWN_MAX + 4];
    if (n == 7 && memcmp(inner, "subject", 7) == 0)
        return add_part(st, PART_SUBJECT, "", 0, 0, err, err_len);
    if (n > 6 && memcmp(inner, "token:", 6) == 0) {
        unsigned v = 0;
        size_t i = 6;
        for (; i < n && inner[i] >= '0' && inner[i] <= '9' && v <= FWD_TOKEN_MAX; i++)
            v = v * 10 + (unsigned)(inner[i] - '0');
        if (i == n && v >= 1 && v <= FWD_TOKEN_MAX)
            return add_part(st, PART_TOKEN, "", 0, v, err, err_len);
        shown(inner, n, quoted);
        snprintf(err, err_len, "option.subject: {%s}: N of {token:N} is a number from 1 to %d", quoted,
                 FWD_TOKEN_MAX);
        return false;
    }
    if (n > 7 && memcmp(inner, "header:", 7) == 0) {
        size_t i = 7;
        while (i < n && tchar((unsigned char)inner[i]))
            i++;
        if (i == n)
            return add_part(st, PART_HEADER, inner + 7, n - 7, 0, err, err_len);
        shown(inner, n, quoted);
        snprintf(err, err_len, "option.subject: {%s}: NAME of {header:NAME} is a header name "
                 "(letters, digits, !#$%%&'*+-.^_`|~)", quoted);
        return false;
    }
    shown(inner, n, quoted);
    snprintf(err, err_len, "option.subject: unknown placeholder {%s} (known: {subject}, {token:N}, {header:NAME})",
             quoted);
    return false;
}

/* Splits the template into literal text and placeholders.  A '{' always
 * starts a placeholder: a misspelt one is refused here rather than
 * published to as a literal subject. */
static bool parse_template(struct fwd_state *st, const char *t, char *err, size_t err_len)
{
    size_t n = strlen(t);
    if (n == 0 || n > FWD_SUBJECT_MAX) {
        snprintf(err, err_len, "option.subject: the template must hold 1 to %d bytes", FWD_SUBJECT_MAX);
        return false;
    }
    /* At most one part per byte. */
    st->parts = calloc(n, sizeof *st->parts);
    if (st->parts == NULL) {
        snprintf(err, err_len, "out of memory");
        return false;
    }
    bool placeholder_seen = false;
    size_t i = 0;
    while (i < n) {
        if (t[i] != '{') {
            size_t j = i;
            while (j < n && t[j] != '{')
                j++;
            if (!add_part(st, PART_LITERAL, t + i, j - i, 0, err, err_len))
                return false;
            if (!placeholder_seen)
                st->prefix_len = j - i;
            i = j;
            continue;
        }
        const char *close = memchr(t + i + 1, '}', n - i - 1);
        const char *reopen = memchr(t + i + 1, '{', n - i - 1);
        if (close == NULL || (reopen != NULL && reopen < close)) {
            snprintf(err, err_len, "option.subject: the '{' at byte %zu is not closed by a '}'", i + 1);
            return false;
        }
        if (!parse_placeholder(st, t + i + 1, (size_t)(close - t - i - 1), err, err_len))
            return false;
        placeholder_seen = true;
        i = (size_t)(close - t) + 1;
    }
    return true;
}

/* The template's own text checked at start: each placeholder stands for a
 * one-token value ("x"), so a literal with white space, a wildcard or an
 * empty token around the placeholders is refused before any message. */
static bool check_template(const struct fwd_state *st, char *err, size_t err_len)
{
    char sample[FWD_SUBJECT_MAX + 1];
    size_t n = 0;
    for (size_t i = 0; i < st->n_parts; i++) {
        const struct part *p = &st->parts[i];
        const char *text = p->kind == PART_LITERAL ? p->text : "x";
        size_t len = p->kind == PART_LITERAL ? p->len : 1;
        if (n + len > FWD_SUBJECT_MAX)
            break;   /* cannot happen: the sample is never longer than the template */
        memcpy(sample + n, text, len);
        n += len;
    }
    sample[n] = '\0';
    const char *why = subject_problem(sample, n, st->template_text, st->prefix_len);
    if (why == NULL)
        return true;
    char quoted[4 * FWD_SHOWN_MAX + 4];
    shown(st->template_text, strlen(st->template_text), quoted);
    snprintf(err, err_len, "option.subject: '%s' cannot make a valid subject: its text %s", quoted, why);
    return false;
}

/* ------------------------------------------------------------------------ */
/* Expanding it for one message                                             */
/* ------------------------------------------------------------------------ */

/* Token n (from 1) of subject: *at and *len, or false when it has fewer. */
static bool nth_token(const char *subject, unsigned n, const char **at, size_t *len)
{
    const char *p = subject;
    for (unsigned i = 1; i < n; i++) {
        p = strchr(p, '.');
        if (p == NULL)
            return false;
        p++;
    }
    const char *end = strchr(p, '.');
    *at = p;
    *len = end != NULL ? (size_t)(end - p) : strlen(p);
    return true;
}

static unsigned count_tokens(const char *subject)
{
    unsigned n = 1;
    for (const char *p = subject; *p; p++)
        n += *p == '.';
    return n;
}

/* The subject for m in out (FWD_SUBJECT_MAX + 1 bytes), or false with the
 * reason in why (JET_REASON_MAX + 1 bytes). */
static bool expand(const struct fwd_state *st, jet_msg *m, char *out, char *why)
{
    char quoted[4 * FWD_SHOWN_MAX + 4];
    const char *subject = jet_host->msg_subject(m);
    size_t n = 0;
    if (subject == NULL)
        subject = "";
    for (size_t i = 0; i < st->n_parts; i++) {
        const struct part *p = &st->parts[i];
        const char *v = p->text;
        size_t len = p->len;
        char what[300] = "";
        switch (p->kind) {
        case PART_LITERAL:
            break;
        case PART_SUBJECT:
            v = subject;
            len = strlen(subject);
            snprintf(what, sizeof what, "{subject}");
            break;
        case PART_TOKEN:
            snprintf(what, sizeof what, "{token:%u}", p->token);
            if (!nth_token(subject, p->token, &v, &len)) {
                shown(subject, strlen(subject), quoted);
                snprintf(why, JET_REASON_MAX + 1, "bad subject: %s: the subject '%s' has %u token%s", what, quoted,
                         count_tokens(subject), count_tokens(subject) == 1 ? "" : "s");
                return false;
            }
            break;
        case PART_HEADER:
            snprintf(what, sizeof what, "{header:%s}", p->text);
            v = jet_host->msg_header(m, p->text);
            if (v == NULL || *v == '\0') {
                snprintf(why, JET_REASON_MAX + 1, "bad subject: %s: %s header %s", what,
                         v == NULL ? "the message has no" : "an empty value in", p->text);
                return false;
            }
            len = strlen(v);
            break;
        }
        /* A value from the message is checked on its own first, so the
         * reason names the placeholder that brought the bad bytes. */
        const char *problem = p->kind == PART_LITERAL ? NULL : len == 0 ? "is empty" : chars_problem(v, len);
        if (problem != NULL) {
            shown(v, len, quoted);
            snprintf(why, JET_REASON_MAX + 1, "bad subject: %s: the value \"%s\" %s", what, quoted, problem);
            return false;
        }
        if (n + len > FWD_SUBJECT_MAX) {
            snprintf(why, JET_REASON_MAX + 1, "bad subject: it would be longer than %d bytes", FWD_SUBJECT_MAX);
            return false;
        }
        memcpy(out + n, v, len);
        n += len;
    }
    out[n] = '\0';
    const char *problem = subject_problem(out, n, st->template_text, st->prefix_len);
    if (problem != NULL) {
        shown(out, n, quoted);
        snprintf(why, JET_REASON_MAX + 1, "bad subject: \"%s\" %s", quoted, problem);
        return false;
    }
    return true;
}

static int forward_handle(void *state, jet_msg *m)
{
    struct fwd_state *st = state;
    char subject[FWD_SUBJECT_MAX + 1];
    char why[JET_REASON_MAX + 1];

    if (!expand(st, m, subject, why)) {
        jet_host->ctx_metric_add(st->ctx, st->m_bad_subject, 1);
        jet_host->msg_set_reason(m, why);
        return st->bad_verdict;
    }
    size_t len = 0;
    const void *data = jet_host->msg_data(m, &len);
    int rc = jet_host->msg_publish(m, subject, NULL, data, data != NULL ? len : 0);
    if (rc != JET_OK) {
        /* The host refused the call (a namespace the binding does not
         * allow, over a limit): the delivery is a failure whatever this
         * returns, and the host's reason says which rule. */
        char quoted[4 * FWD_SHOWN_MAX + 4];
        shown(subject, strlen(subject), quoted);
        snprintf(why, sizeof why, "the host refused the publish to \"%s\" (%d)", quoted, rc);
        jet_host->msg_set_reason(m, why);
        return JET_RETRY;
    }
    return JET_ACK;   /* counted in forward_settled(), once the target stored it */
}

/* What the host did with it: a message counts as forwarded once its
 * publish is in the target stream (stored now, or by an earlier delivery
 * whose ack was lost: then also a duplicate) and the origin is acked. */
static void forward_settled(void *state, const jet_settled *s)
{
    struct fwd_state *st = state;
    if (s->outcome != JET_SETTLED_ACKED || s->published == 0)
        return;
    jet_host->ctx_metric_add(st->ctx, st->m_forwarded, 1);
    if (s->duplicates > 0)
        jet_host->ctx_metric_add(st->ctx, st->m_duplicates, s->duplicates);
}

/* ------------------------------------------------------------------------ */
/* init / fini                                                              */
/* ------------------------------------------------------------------------ */

static void forward_fini(void *state)
{
    struct fwd_state *st = state;
    if (st == NULL)
        return;
    for (size_t i = 0; i < st->n_parts; i++)
        free(st->parts[i].text);
    free(st->parts);
    free(st->template_text);
    free(st);
}

/* The options read into a new state: NULL with the cause in err.  No side
 * effect but the allocation, so validate() and init() share it. */
static struct fwd_state *configure(const jet_ctx *c, char *err, size_t err_len)
{
    const char *tmpl = jet_host->ctx_option(c, "subject");
    const char *on_bad = jet_host->ctx_option(c, "on_bad_subject");
    struct fwd_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    if (on_bad != NULL && strcmp(on_bad, "retry") == 0) {
        st->bad_verdict = JET_RETRY;
    } else if (on_bad != NULL && strcmp(on_bad, "reject") == 0) {
        st->bad_verdict = JET_REJECT;
    } else {
        char quoted[4 * FWD_SHOWN_MAX + 4];
        shown(on_bad != NULL ? on_bad : "", on_bad != NULL ? strlen(on_bad) : 0, quoted);
        snprintf(err, err_len, "option.on_bad_subject: '%s' is not retry or reject", quoted);
        forward_fini(st);
        return NULL;
    }
    if (tmpl == NULL || (st->template_text = strdup(tmpl)) == NULL) {
        snprintf(err, err_len, "%s", tmpl == NULL ? "option.subject is required: the subject template" : "out of memory");
        forward_fini(st);
        return NULL;
    }
    if (!parse_template(st, tmpl, err, err_len) || !check_template(st, err, err_len)) {
        forward_fini(st);
        return NULL;
    }
    return st;
}

/* `jethost check` refuses a bad template or on_bad_subject here. */
static int forward_validate(const jet_ctx *c, char *err, size_t err_len)
{
    struct fwd_state *st = configure(c, err, err_len);
    if (st == NULL)
        return 1;
    forward_fini(st);
    return 0;
}

static int forward_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    struct fwd_state *st = configure(c, err, err_len);
    if (st == NULL)
        return 1;
    st->ctx = c;
    st->m_forwarded = jet_host->ctx_metric_declare(c, "forwarded", JET_METRIC_COUNTER,
                                                   "messages forwarded: the publish is in the target stream "
                                                   "and the origin was acked");
    st->m_duplicates = jet_host->ctx_metric_declare(c, "duplicates", JET_METRIC_COUNTER,
                                                    "of those, publishes the target stream had stored already "
                                                    "(an earlier delivery's; not stored twice)");
    st->m_bad_subject = jet_host->ctx_metric_declare(c, "bad_subject", JET_METRIC_COUNTER,
                                                     "messages the template made no valid subject from");
    if (st->m_forwarded < 0 || st->m_duplicates < 0 || st->m_bad_subject < 0) {
        snprintf(err, err_len, "cannot declare the plugin's metrics (%d, %d, %d)", st->m_forwarded,
                 st->m_duplicates, st->m_bad_subject);
        forward_fini(st);
        return 1;
    }
    *state = st;
    return 0;
}

static const jet_plugin plugin = {
    JET_PLUGIN_HEADER,
    .name = "forward",
    .version = "1.1.0",
    .flags = JET_PLUGIN_THREAD_SAFE,   /* the state is read-only after init() */
    .options = options,
    .init = forward_init,
    .handle = forward_handle,
    .fini = forward_fini,
    .validate = forward_validate,
    .settled = forward_settled,
};

JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *h)
{
    JET_HOST_INIT(h);
    return &plugin;
}
