/* The $JS.ACK reply subject parser: the 9-token form nats-server 2.9.10
 * sends (seen on the wire from a live 2.9.10), the 11/12-token form of newer
 * servers, and every way a subject is refused. */
#include "ack_subject.h"

#include <glib.h>
#include <string.h>

#define U64_MAX "18446744073709551615"
#define U64_MAX_PLUS_1 "18446744073709551616"
#define I64_MAX "9223372036854775807"
#define I64_MAX_PLUS_1 "9223372036854775808"

/* The slice [p, p + len) as a string, for g_assert_cmpstr. */
static char *slice(const char *p, gsize len)
{
    return p != NULL ? g_strndup(p, len) : NULL;
}

static void expect(const char *subject, const char *domain, const char *stream,
                   const char *consumer, guint64 delivered, guint64 sseq, guint64 cseq,
                   gint64 ts, guint64 pending)
{
    JetAckMeta m;
    memset(&m, 0xa5, sizeof m);
    g_test_message("%s", subject);
    g_assert_true(jet_ack_subject_parse(subject, &m));

    g_autofree char *d = slice(m.domain, m.domain_len);
    g_autofree char *s = slice(m.stream, m.stream_len);
    g_autofree char *c = slice(m.consumer, m.consumer_len);
    g_assert_cmpstr(d, ==, domain);
    if (domain == NULL)
        g_assert_cmpuint(m.domain_len, ==, 0);
    g_assert_cmpstr(s, ==, stream);
    g_assert_cmpstr(c, ==, consumer);
    g_assert_cmpuint(m.delivered, ==, delivered);
    g_assert_cmpuint(m.stream_seq, ==, sseq);
    g_assert_cmpuint(m.consumer_seq, ==, cseq);
    g_assert_cmpint(m.timestamp_ns, ==, ts);
    g_assert_cmpuint(m.pending, ==, pending);

    /* slices point into the subject, no copies */
    const char *end = subject + strlen(subject);
    g_assert_true(m.stream > subject && m.stream + m.stream_len <= end);
    g_assert_true(m.consumer > m.stream && m.consumer + m.consumer_len <= end);
    if (m.domain != NULL)
        g_assert_true(m.domain > subject && m.domain < m.stream);
}

static void refuse(const char *subject)
{
    JetAckMeta m, before;
    memset(&m, 0x5a, sizeof m);
    memcpy(&before, &m, sizeof m);
    g_test_message("refuse: %s", subject ? subject : "(null)");
    g_assert_false(jet_ack_subject_parse(subject, &m));
    g_assert_cmpmem(&m, sizeof m, &before, sizeof before);   /* untouched */
}

static void test_v1(void)
{
    /* word for word from a probe of a live 2.9.10 */
    const char *real = "$JS.ACK.T12.c12.1.1.1.1795957242286822598.1";
    expect(real, NULL, "T12", "c12", 1, 1, 1, G_GINT64_CONSTANT(1795957242286822598), 1);
    JetAckMeta m;
    g_assert_true(jet_ack_subject_parse(real, &m));
    g_assert_true(m.stream == real + strlen("$JS.ACK."));
    g_assert_cmpuint(m.stream_len, ==, 3);
    g_assert_true(m.consumer == real + strlen("$JS.ACK.T12."));
    g_assert_cmpuint(m.consumer_len, ==, 3);

    expect("$JS.ACK.BENCH.bench-durable.3.200000.199998.1795957242286822598.0", NULL, "BENCH",
           "bench-durable", 3, 200000, 199998, G_GINT64_CONSTANT(1795957242286822598), 0);
    expect("$JS.ACK.ORDERS_v2.worker_1.2.42.57.1795957242286822598.17", NULL, "ORDERS_v2",
           "worker_1", 2, 42, 57, G_GINT64_CONSTANT(1795957242286822598), 17);
    /* one-character names; consumer seq, timestamp and pending may be 0 */
    expect("$JS.ACK.S.C.1.1.0.0.0", NULL, "S", "C", 1, 1, 0, 0, 0);
    /* leading zeros are read as decimal (the server never sends them) */
    expect("$JS.ACK.S.C.007.010.0.01.00", NULL, "S", "C", 7, 10, 0, 1, 0);
}

static void test_v2(void)
{
    /* "_" is the server's "no domain" */
    expect("$JS.ACK._.ABCDEFGHIJKLMNOPQRSTUV.T12.c12.2.5.6.1795957242286822598.0", NULL, "T12",
           "c12", 2, 5, 6, G_GINT64_CONSTANT(1795957242286822598), 0);
    expect("$JS.ACK.hub.ABCDEFGHIJKLMNOPQRSTUV.T12.c12.2.5.6.1795957242286822598.0", "hub",
           "T12", "c12", 2, 5, 6, G_GINT64_CONSTANT(1795957242286822598), 0);
    /* with the trailing random token */
    expect("$JS.ACK._.ABCDEFGHIJKLMNOPQRSTUV.T12.c12.2.5.6.1795957242286822598.0.xK3l9QzA", NULL,
           "T12", "c12", 2, 5, 6, G_GINT64_CONSTANT(1795957242286822598), 0);
    expect("$JS.ACK.leaf-1.HASH.ORDERS.w.1.9.9.1.3.r", "leaf-1", "ORDERS", "w", 1, 9, 9, 1, 3);
    /* a domain that merely starts with "_" is a domain */
    expect("$JS.ACK.__.H.S.C.1.1.1.1.1", "__", "S", "C", 1, 1, 1, 1, 1);
    expect("$JS.ACK._x.H.S.C.1.1.1.1.1", "_x", "S", "C", 1, 1, 1, 1, 1);
}

static void test_limits(void)
{
    expect("$JS.ACK.S.C." U64_MAX "." U64_MAX "." U64_MAX "." I64_MAX "." U64_MAX, NULL, "S",
           "C", G_MAXUINT64, G_MAXUINT64, G_MAXUINT64, G_MAXINT64, G_MAXUINT64);
    expect("$JS.ACK.d.H.S.C." U64_MAX "." U64_MAX "." U64_MAX "." I64_MAX "." U64_MAX ".r", "d",
           "S", "C", G_MAXUINT64, G_MAXUINT64, G_MAXUINT64, G_MAXINT64, G_MAXUINT64);
    /* one below the limit, each digit position carrying */
    expect("$JS.ACK.S.C.18446744073709551614.1.1.9223372036854775806.1", NULL, "S", "C",
           G_MAXUINT64 - 1, 1, 1, G_MAXINT64 - 1, 1);

    /* overflow by one, in each numeric position, in both forms */
    refuse("$JS.ACK.S.C." U64_MAX_PLUS_1 ".1.1.1.1");
    refuse("$JS.ACK.S.C.1." U64_MAX_PLUS_1 ".1.1.1");
    refuse("$JS.ACK.S.C.1.1." U64_MAX_PLUS_1 ".1.1");
    refuse("$JS.ACK.S.C.1.1.1." I64_MAX_PLUS_1 ".1");
    refuse("$JS.ACK.S.C.1.1.1.1." U64_MAX_PLUS_1);
    refuse("$JS.ACK._.H.S.C." U64_MAX_PLUS_1 ".1.1.1.1");
    refuse("$JS.ACK._.H.S.C.1.1.1." I64_MAX_PLUS_1 ".1");
    refuse("$JS.ACK._.H.S.C.1.1.1.1." U64_MAX_PLUS_1 ".r");
    /* far over, and a uint64 timestamp */
    refuse("$JS.ACK.S.C.99999999999999999999.1.1.1.1");
    refuse("$JS.ACK.S.C.1.184467440737095516150.1.1.1");
    refuse("$JS.ACK.S.C.1.1.1." U64_MAX ".1");
    refuse("$JS.ACK.S.C.1.1.1.18446744073709551626.1");
}

static void test_refuse_shape(void)
{
    static const char *bad[] = {
        NULL, "", "$JS.ACK", "$JS.ACK.", "$JS.ACK..",
        /* wrong prefix */
        "$js.ack.S.C.1.1.1.1.1", "$JS.Ack.S.C.1.1.1.1.1", "JS.ACK.S.C.1.1.1.1.1",
        "$JS.ACKX.S.C.1.1.1.1.1", "$JS.NAK.S.C.1.1.1.1.1", " $JS.ACK.S.C.1.1.1.1.1",
        "_INBOX.abc.1", "$JS.API.CONSUMER.MSG.NEXT.S.C", "$JS.ACK$S.C.1.1.1.1.1",
        /* wrong token count: 3..8, 10, 13, 14 */
        "$JS.ACK.S", "$JS.ACK.S.C", "$JS.ACK.S.C.1", "$JS.ACK.S.C.1.1", "$JS.ACK.S.C.1.1.1",
        "$JS.ACK.S.C.1.1.1.1", "$JS.ACK.H.S.C.1.1.1.1.1", "$JS.ACK.d.H.S.C.1.1.1.1.1.r.x",
        "$JS.ACK.d.H.S.C.1.1.1.1.1.r.x.y",
        /* empty tokens: each of the 9-token form, and the v2 extras */
        "$JS.ACK..C.1.1.1.1.1", "$JS.ACK.S..1.1.1.1.1", "$JS.ACK.S.C..1.1.1.1",
        "$JS.ACK.S.C.1..1.1.1", "$JS.ACK.S.C.1.1..1.1", "$JS.ACK.S.C.1.1.1..1",
        "$JS.ACK.S.C.1.1.1.1.", "$JS.ACK..H.S.C.1.1.1.1.1", "$JS.ACK.d..S.C.1.1.1.1.1",
        "$JS.ACK.d.H..C.1.1.1.1.1", "$JS.ACK.d.H.S..1.1.1.1.1", "$JS.ACK.d.H.S.C.1.1.1.1.1.",
        "$JS.ACK.S.C.1.1.1.1.1.", "$JS.ACK..S.C.1.1.1.1.1",
    };
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++)
        refuse(bad[i]);
}

/* Every numeric position of both forms, with each kind of non-number. */
static void test_refuse_numbers(void)
{
    static const char *junk[] = { "a", "1a", "a1", "-1", "+1", " 1", "1 ", "0x10", "1e3",
                                  "\xef\xbc\x91" /* fullwidth 1 */, "*", ">", "1\t" };
    static const char *v1[] = { "S", "C", "1", "2", "3", "4", "5" };
    static const char *v2[] = { "d", "H", "S", "C", "1", "2", "3", "4", "5" };
    for (gsize j = 0; j < G_N_ELEMENTS(junk); j++) {
        for (gsize pos = 2; pos < G_N_ELEMENTS(v1); pos++) {
            const char *t[G_N_ELEMENTS(v1)];
            memcpy(t, v1, sizeof t);
            t[pos] = junk[j];
            g_autofree char *tail = g_strjoinv(".", (char **)(const char *[]){
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], NULL });
            g_autofree char *subject = g_strconcat("$JS.ACK.", tail, NULL);
            refuse(subject);
        }
        for (gsize pos = 4; pos < G_N_ELEMENTS(v2); pos++) {
            const char *t[G_N_ELEMENTS(v2)];
            memcpy(t, v2, sizeof t);
            t[pos] = junk[j];
            g_autofree char *tail = g_strjoinv(".", (char **)(const char *[]){
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], NULL });
            g_autofree char *subject = g_strconcat("$JS.ACK.", tail, NULL);
            refuse(subject);
            g_autofree char *with_random = g_strconcat(subject, ".r", NULL);
            refuse(with_random);
        }
    }
    /* the control: the same subjects with no junk parse */
    expect("$JS.ACK.S.C.1.2.3.4.5", NULL, "S", "C", 1, 2, 3, 4, 5);
    expect("$JS.ACK.d.H.S.C.1.2.3.4.5", "d", "S", "C", 1, 2, 3, 4, 5);
    expect("$JS.ACK.d.H.S.C.1.2.3.4.5.r", "d", "S", "C", 1, 2, 3, 4, 5);
}

static void test_refuse_zero(void)
{
    /* delivered == 0 and stream seq == 0 are never a delivery */
    refuse("$JS.ACK.T12.c12.0.1.1.1795957242286822598.1");
    refuse("$JS.ACK.T12.c12.1.0.1.1795957242286822598.1");
    refuse("$JS.ACK.T12.c12.0.0.0.0.0");
    refuse("$JS.ACK.T12.c12.00.1.1.1.1");
    refuse("$JS.ACK._.H.T12.c12.0.1.1.1.1");
    refuse("$JS.ACK._.H.T12.c12.1.0.1.1.1.r");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ack_subject/v1", test_v1);
    g_test_add_func("/ack_subject/v2", test_v2);
    g_test_add_func("/ack_subject/limits", test_limits);
    g_test_add_func("/ack_subject/refuse_shape", test_refuse_shape);
    g_test_add_func("/ack_subject/refuse_numbers", test_refuse_numbers);
    g_test_add_func("/ack_subject/refuse_zero", test_refuse_zero);
    return g_test_run();
}
