/*
 * retry.so: fault injection for rehearsals.  Each message carries what should
 * happen to it in a header (Jethost-Fault by default), or gets the binding's
 * option.default:
 *
 *     Jethost-Fault: fail=3                     RETRY 3 times, then ACK
 *     Jethost-Fault: postpone=2s;times=2        POSTPONE 2 s twice, then ACK
 *     Jethost-Fault: postpone_until=2030-01-01T00:00:00Z
 *     Jethost-Fault: reject;reason=bad order    REJECT
 *     Jethost-Fault: abort                      abort() the host: the poison message
 *     Jethost-Fault: hang=10s                   stuck handler, then ACK
 *     Jethost-Fault: sleep=200ms;fail           slow, and always failing
 *
 * Every decision is logged at info, so a rehearsal can be read back from the
 * host's log.  The grammar is in docs/plugins.md.  Plain C and libc only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jethost/plugin.h>

static const jet_host_api *host;

static const jet_option options[] = {
    { .name = "header", .type = JET_OPT_STRING, .default_value = "Jethost-Fault",
      .help = "header that carries a message's fault" },
    { .name = "default", .type = JET_OPT_STRING, .default_value = NULL,
      .help = "fault for messages without the header, same grammar (unset: ack)" },
    { .name = "count", .type = JET_OPT_STRING, .default_value = "failures",
      .help = "what fail=N counts: failures (the host's ledger) or deliveries (server count - 1)" },
    { .name = NULL }
};

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define FAULT_REASON_MAX 200

/* What happens to a message, as parsed from the grammar. */
enum fault_verdict { F_ACK, F_FAIL, F_POSTPONE, F_POSTPONE_UNTIL, F_REJECT, F_ABORT };

struct fault {
    enum fault_verdict verdict;
    bool has_verdict;
    uint64_t fail_n;           /* F_FAIL: 0 = always */
    uint64_t postpone_ms;      /* F_POSTPONE; with F_POSTPONE_UNTIL, the largest step (0: all) */
    bool has_postpone;
    int64_t until_ns;          /* F_POSTPONE_UNTIL */
    uint64_t times;            /* F_POSTPONE: 0 = always */
    bool has_times;
    uint64_t sleep_ms, hang_ms;
    bool has_sleep, has_hang;
    char reason[FAULT_REASON_MAX + 1];
};

enum count_by { COUNT_FAILURES, COUNT_DELIVERIES };

struct retry_state {
    jet_ctx *ctx;
    char *header;
    char *default_text;        /* NULL: ack */
    struct fault default_fault;
    enum count_by count_by;
};

/* ------------------------------------------------------------------------ */
/* The grammar                                                              */
/* ------------------------------------------------------------------------ */

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* "250ms", "2s", "5m", "1h", "1d" (the host's duration units), or "0". */
static bool parse_duration_ms(const char *s, size_t n, uint64_t *out)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = { { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 } };
    size_t d = 0;
    uint64_t v;

    while (d < n && s[d] >= '0' && s[d] <= '9')
        d++;
    if (!parse_u64(s, d, &v))
        return false;
    if (d == n) {
        *out = 0;
        return v == 0;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        size_t ul = strlen(units[i].unit);
        if (n - d == ul && memcmp(s + d, units[i].unit, ul) == 0) {
            if (v > UINT64_MAX / units[i].ms)
                return false;
            *out = v * units[i].ms;
            return true;
        }
    }
    return false;
}

static int two(const char *s)
{
    if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9')
        return -1;
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* RFC 3339: 2030-01-02T03:04:05Z, with optional fraction (up to ns) and a
 * Z or ±hh:mm offset; 't' and 'z' are accepted as the RFC allows.  Sets
 * *out_of_range (and returns false) for a well-formed time that signed 64-bit
 * unix nanoseconds cannot hold (before 1677-09-21T00:12:44Z or after
 * 2262-04-11T23:47:16.854775807Z): refusing it beats a wrapped time that
 * would read as "already passed". */
static bool parse_rfc3339(const char *s, size_t n, int64_t *out_ns, bool *out_of_range)
{
    *out_of_range = false;
    char t[64];
    if (n < 20 || n >= sizeof t)
        return false;
    memcpy(t, s, n);
    t[n] = '\0';
    int y1 = two(t), y2 = two(t + 2), mo = two(t + 5), d = two(t + 8);
    int h = two(t + 11), mi = two(t + 14), se = two(t + 17);
    if (y1 < 0 || y2 < 0 || t[4] != '-' || mo < 1 || mo > 12 || t[7] != '-' || d < 1 || d > 31 ||
        (t[10] != 'T' && t[10] != 't') || h < 0 || h > 23 || t[13] != ':' || mi < 0 || mi > 59 ||
        t[16] != ':' || se < 0 || se > 60)
        return false;
    static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    int year = y1 * 100 + y2;
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
        return false;
    size_t i = 19;
    int64_t frac = 0;
    if (t[i] == '.') {
        int digits = 0;
        i++;
        while (t[i] >= '0' && t[i] <= '9') {
            if (digits < 9) {
                frac = frac * 10 + (t[i] - '0');
                digits++;
            }
            i++;
        }
        if (digits == 0)
            return false;
        while (digits++ < 9)
            frac *= 10;
    }
    int64_t offset_s = 0;
    if ((t[i] == 'Z' || t[i] == 'z') && t[i + 1] == '\0') {
        /* UTC */
    } else if ((t[i] == '+' || t[i] == '-') && strlen(t + i) == 6 && t[i + 3] == ':') {
        int oh = two(t + i + 1), om = two(t + i + 4);
        if (oh < 0 || oh > 23 || om < 0 || om > 59)
            return false;
        offset_s = (oh * 3600 + om * 60) * (t[i] == '-' ? -1 : 1);
    } else
        return false;
    /* Years 0000-9999 keep secs well inside int64_t; only the scaling to
     * nanoseconds can overflow. */
    int64_t secs = days_from_civil(year, mo, d) * 86400 + h * 3600 + mi * 60 + se - offset_s;
    if (secs > (INT64_MAX - frac) / NS_PER_S || secs < INT64_MIN / NS_PER_S) {
        *out_of_range = true;
        return false;
    }
    *out_ns = secs * NS_PER_S + frac;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

/* Parses `text` into f.  On error writes a message naming the bad part to
 * err and returns false. */
static bool fault_parse(const char *text, struct fault *f, char *err, size_t err_len)
{
    memset(f, 0, sizeof *f);
    const char *p = text;
    bool any = false;

    for (;;) {
        const char *end = strchr(p, ';');
        size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
        const char *item = p;
        while (n > 0 && is_space(*item)) {
            item++;
            n--;
        }
        while (n > 0 && is_space(item[n - 1]))
            n--;

        const char *eq = memchr(item, '=', n);
        size_t klen = eq != NULL ? (size_t)(eq - item) : n;
        while (klen > 0 && is_space(item[klen - 1]))
            klen--;
        const char *val = eq != NULL ? eq + 1 : NULL;
        size_t vlen = eq != NULL ? n - (size_t)(val - item) : 0;
        while (vlen > 0 && is_space(*val)) {
            val++;
            vlen--;
        }
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(item, k, klen) == 0)
#define BAD(...) do { snprintf(err, err_len, __VA_ARGS__); return false; } while (0)
        enum fault_verdict v = F_ACK;
        bool verdict_item = true;

        if (n == 0) {
            if (end == NULL && any)
                break;   /* a trailing ';' */
            BAD("empty fault item in '%s'", text);
        } else if (KEY("ack") || KEY("reject") || KEY("abort")) {
            if (val != NULL)
                BAD("'%.*s' takes no value", (int)n, item);
            v = KEY("ack") ? F_ACK : KEY("reject") ? F_REJECT : F_ABORT;
        } else if (KEY("fail")) {
            v = F_FAIL;
            if (val != NULL && !parse_u64(val, vlen, &f->fail_n))
                BAD("fail: '%.*s' is not a count", (int)vlen, val);
        } else if (KEY("postpone")) {
            verdict_item = false;
            if (f->has_postpone)
                BAD("'postpone' given twice in '%s'", text);
            if (val == NULL || !parse_duration_ms(val, vlen, &f->postpone_ms) || f->postpone_ms == 0)
                BAD("postpone: '%.*s' is not a positive duration (like 250ms, 2s, 5m)",
                    (int)vlen, val != NULL ? val : "");
            f->has_postpone = true;
        } else if (KEY("postpone_until")) {
            v = F_POSTPONE_UNTIL;
            bool out_of_range = false;
            bool ok = val != NULL && parse_rfc3339(val, vlen, &f->until_ns, &out_of_range);
            if (out_of_range)
                BAD("postpone_until: '%.*s' is out of range (1677-09-21T00:12:44Z to 2262-04-11T23:47:16Z)",
                    (int)vlen, val);
            if (!ok)
                BAD("postpone_until: '%.*s' is not an RFC 3339 time (like 2030-01-02T03:04:05Z)",
                    (int)vlen, val != NULL ? val : "");
        } else if (KEY("times")) {
            verdict_item = false;
            if (f->has_times)
                BAD("'times' given twice in '%s'", text);
            if (val == NULL || !parse_u64(val, vlen, &f->times) || f->times == 0)
                BAD("times: '%.*s' is not a count of at least 1", (int)vlen, val != NULL ? val : "");
            f->has_times = true;
        } else if (KEY("sleep") || KEY("hang")) {
            verdict_item = false;
            bool hang = KEY("hang");
            uint64_t ms;
            if ((hang ? f->has_hang : f->has_sleep))
                BAD("'%s' given twice in '%s'", hang ? "hang" : "sleep", text);
            if (val == NULL || !parse_duration_ms(val, vlen, &ms))
                BAD("%s: '%.*s' is not a duration (like 250ms, 2s, 5m)", hang ? "hang" : "sleep",
                    (int)vlen, val != NULL ? val : "");
            if (hang) {
                f->hang_ms = ms;
                f->has_hang = true;
            } else {
                f->sleep_ms = ms;
                f->has_sleep = true;
            }
        } else if (KEY("reason")) {
            verdict_item = false;
            if (f->reason[0] != '\0')
                BAD("'reason' given twice in '%s'", text);
            if (val == NULL || vlen == 0 || vlen > FAULT_REASON_MAX)
                BAD("reason: give 1 to %d bytes of text", FAULT_REASON_MAX);
            memcpy(f->reason, val, vlen);
            f->reason[vlen] = '\0';
        } else {
            BAD("unknown fault '%.*s' in '%s'", (int)klen, item, text);
        }
        if (verdict_item) {
            if (f->has_verdict)
                BAD("more than one verdict in '%s' (one of ack, fail, postpone, postpone_until,"
                    " reject, abort)", text);
            f->verdict = v;
            f->has_verdict = true;
        }
        any = true;
        if (end == NULL)
            break;
        p = end + 1;
    }

    /* postpone=D alone is the verdict; with postpone_until it is the step. */
    if (f->has_postpone && !f->has_verdict) {
        f->verdict = F_POSTPONE;
        f->has_verdict = true;
    } else if (f->has_postpone && f->verdict != F_POSTPONE_UNTIL)
        BAD("postpone cannot be combined with another verdict in '%s'", text);
    if (f->has_times && f->verdict != F_POSTPONE)
        BAD("times goes with postpone=D only, in '%s'", text);
    if (f->reason[0] != '\0' && (f->verdict == F_ACK || f->verdict == F_ABORT))
        BAD("reason goes with a verdict that is not ack or abort, in '%s'", text);
    return true;
#undef KEY
#undef BAD
}

/* ------------------------------------------------------------------------ */
/* Acting on a fault                                                        */
/* ------------------------------------------------------------------------ */

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

/* Sleeps ms on the monotonic clock; wakes early when the host is stopping,
 * unless `hang` (a hang ignores everything, as a stuck handler would). */
static void pause_ms(struct retry_state *st, uint64_t ms, bool hang)
{
    int64_t until = mono_ns() + (int64_t)(ms > (uint64_t)(INT64_MAX / NS_PER_MS / 2) ?
                                          INT64_MAX / 2 : (int64_t)ms * NS_PER_MS);
    for (;;) {
        int64_t now = mono_ns();
        if (now >= until || (!hang && host->ctx_stopping(st->ctx)))
            return;
        int64_t step = until - now;
        if (step > NS_PER_S / 10)
            step = NS_PER_S / 10;
        struct timespec ts = { .tv_sec = (time_t)(step / NS_PER_S), .tv_nsec = (long)(step % NS_PER_S) };
        nanosleep(&ts, NULL);
    }
}

/* Earlier failures of this message, as option.count says. */
static uint64_t earlier_failures(const struct retry_state *st, const jet_msg *m)
{
    if (st->count_by == COUNT_FAILURES && host->msg_failures != NULL)
        return host->msg_failures(m);
    uint32_t d = host->msg_deliveries(m);
    return d > 0 ? d - 1 : 0;
}

static void set_reason(jet_msg *m, const struct fault *f, const char *fallback)
{
    host->msg_set_reason(m, f->reason[0] != '\0' ? f->reason : fallback);
}

/* Cuts s to at most max bytes, on a UTF-8 character boundary. */
static void cut_utf8(char *s, size_t max)
{
    size_t n = strlen(s);
    if (n <= max)
        return;
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    s[n] = '\0';
}

static const char *const verdict_names[] = { "ACK", "RETRY", "POSTPONE", "REJECT" };

static int retry_handle(void *state, jet_msg *m)
{
    struct retry_state *st = state;
    const char *text = host->msg_header(m, st->header);
    const char *source = "header";
    struct fault local;
    const struct fault *f;
    char err[JET_REASON_MAX + 1];
    unsigned long long seq = (unsigned long long)host->msg_stream_seq(m);
    unsigned deliveries = host->msg_deliveries(m);

    if (text != NULL) {
        if (!fault_parse(text, &local, err, sizeof err)) {
            char reason[2 * JET_REASON_MAX];
            snprintf(reason, sizeof reason, "%s: %s", st->header, err);
            cut_utf8(reason, JET_REASON_MAX);
            host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu delivery %u: bad fault header -> REJECT: %s",
                          seq, deliveries, reason);
            host->msg_set_reason(m, reason);
            return JET_REJECT;
        }
        f = &local;
    } else if (st->default_text != NULL) {
        text = st->default_text;
        source = "default";
        f = &st->default_fault;
    } else {
        host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu delivery %u: no fault -> ACK", seq, deliveries);
        return JET_ACK;
    }

    if (f->has_sleep) {
        host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu delivery %u: %s '%s': sleeping %llu ms",
                      seq, deliveries, source, text, (unsigned long long)f->sleep_ms);
        pause_ms(st, f->sleep_ms, false);
    }
    if (f->has_hang) {
        host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu delivery %u: %s '%s': hanging %llu ms",
                      seq, deliveries, source, text, (unsigned long long)f->hang_ms);
        pause_ms(st, f->hang_ms, true);
    }

    int verdict = JET_ACK;
    uint64_t delay_ms = 0;
    char why[128] = "";

    switch (f->verdict) {
    case F_ACK:
        break;
    case F_REJECT:
        verdict = JET_REJECT;
        set_reason(m, f, "fault injection: reject");
        break;
    case F_ABORT:
        host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu delivery %u: %s '%s' -> abort()",
                      seq, deliveries, source, text);
        abort();
    case F_FAIL: {
        uint64_t done = earlier_failures(st, m);
        if (f->fail_n == 0 || done < f->fail_n) {
            verdict = JET_RETRY;
            if (f->fail_n == 0)
                snprintf(why, sizeof why, " (failure %llu, always)", (unsigned long long)done + 1);
            else
                snprintf(why, sizeof why, " (failure %llu of %llu)", (unsigned long long)done + 1,
                         (unsigned long long)f->fail_n);
            set_reason(m, f, "fault injection: fail");
        } else
            snprintf(why, sizeof why, " (after %llu failures)", (unsigned long long)done);
        break;
    }
    case F_POSTPONE: {
        uint64_t done = host->msg_postpones(m);
        if (!f->has_times || done < f->times) {
            verdict = JET_POSTPONE;
            delay_ms = f->postpone_ms;
            if (f->has_times)
                snprintf(why, sizeof why, " (postpone %llu of %llu)", (unsigned long long)done + 1,
                         (unsigned long long)f->times);
            set_reason(m, f, "fault injection: postpone");
        } else
            snprintf(why, sizeof why, " (after %llu postpones)", (unsigned long long)done);
        break;
    }
    case F_POSTPONE_UNTIL: {
        int64_t now = host->ctx_now_ns(st->ctx);
        if (now < f->until_ns) {
            /* The difference of two int64_t can exceed INT64_MAX (a clock
             * before 1970, a time far ahead); as uint64_t it is exact. */
            uint64_t left = (uint64_t)f->until_ns - (uint64_t)now;
            verdict = JET_POSTPONE;
            delay_ms = left / NS_PER_MS + (left % NS_PER_MS != 0);
            if (f->has_postpone && f->postpone_ms < delay_ms)
                delay_ms = f->postpone_ms;
            set_reason(m, f, "fault injection: postpone_until");
        } else
            snprintf(why, sizeof why, " (the time has come)");
        break;
    }
    }
    if (verdict == JET_POSTPONE) {
        host->msg_set_delay_ms(m, delay_ms);
        host->ctx_log(st->ctx, JET_LOG_INFO,
                      "seq %llu delivery %u postpones %u: %s '%s' -> POSTPONE %llu ms%s", seq,
                      deliveries, host->msg_postpones(m), source, text,
                      (unsigned long long)delay_ms, why);
    } else {
        host->ctx_log(st->ctx, JET_LOG_INFO, "seq %llu delivery %u failures %u: %s '%s' -> %s%s",
                      seq, deliveries, host->msg_failures(m), source, text, verdict_names[verdict],
                      why);
    }
    return verdict;
}

/* ------------------------------------------------------------------------ */
/* init / fini                                                              */
/* ------------------------------------------------------------------------ */

static void retry_fini(void *state)
{
    struct retry_state *st = state;
    if (st == NULL)
        return;
    free(st->header);
    free(st->default_text);
    free(st);
}

static int retry_init(jet_ctx *c, void **state, char *err, size_t err_len)
{
    const char *header = host->ctx_option(c, "header");
    const char *def = host->ctx_option(c, "default");
    const char *count = host->ctx_option(c, "count");
    char perr[JET_REASON_MAX + 1];

    struct retry_state *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, err_len, "out of memory");
        return 1;
    }
    st->ctx = c;
    if (header == NULL || *header == '\0' || strpbrk(header, ": \t\r\n") != NULL) {
        snprintf(err, err_len, "option.header: '%s' is not a header name", header != NULL ? header : "");
        goto fail;
    }
    if (count == NULL || strcmp(count, "failures") == 0)
        st->count_by = COUNT_FAILURES;
    else if (strcmp(count, "deliveries") == 0)
        st->count_by = COUNT_DELIVERIES;
    else {
        snprintf(err, err_len, "option.count: '%s' is not failures or deliveries", count);
        goto fail;
    }
    if (def != NULL && !fault_parse(def, &st->default_fault, perr, sizeof perr)) {
        snprintf(err, err_len, "option.default: %s", perr);
        goto fail;
    }
    st->header = strdup(header);
    st->default_text = def != NULL ? strdup(def) : NULL;
    if (st->header == NULL || (def != NULL && st->default_text == NULL)) {
        snprintf(err, err_len, "out of memory");
        goto fail;
    }
    host->ctx_log(c, JET_LOG_INFO, "faults from header %s, default %s, fail=N counts %s", header,
                  def != NULL ? def : "ack", st->count_by == COUNT_FAILURES ? "failures" : "deliveries");
    *state = st;
    return 0;
fail:
    retry_fini(st);
    return 1;
}

static const jet_plugin plugin = {
    JET_PLUGIN_HEADER,
    .name = "retry",
    .version = "1.0.0",
    .flags = JET_PLUGIN_THREAD_SAFE,   /* the state is read-only after init */
    .options = options,
    .init = retry_init,
    .handle = retry_handle,
    .fini = retry_fini,
};

JET_PLUGIN_EXPORT const jet_plugin *jet_plugin_entry(const jet_host_api *h)
{
    host = h;
    return &plugin;
}
