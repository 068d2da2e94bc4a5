/* NKey user seeds: nkey.h.  The encoding is the nkeys one: base32 (RFC 4648,
 * no padding) of prefix bytes, the 32-byte key and a CRC-16/XMODEM of what
 * precedes it, little-endian. */
#include "nkey.h"

#include "errors.h"

#include <nats/nats.h>
#include <openssl/evp.h>
#include <glib/gstdio.h>
#include <string.h>

#define PREFIX_SEED (18 << 3)   /* 'S' */
#define PREFIX_USER (20 << 3)   /* 'U' */
#define KEY_LEN 32
#define SEED_RAW_LEN (2 + KEY_LEN + 2)
#define PUBLIC_RAW_LEN (1 + KEY_LEN + 2)

static const char B32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static guint16 crc16(const guint8 *p, gsize n)
{
    guint16 crc = 0;
    for (gsize i = 0; i < n; i++) {
        crc ^= (guint16)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? (guint16)((crc << 1) ^ 0x1021) : (guint16)(crc << 1);
    }
    return crc;
}

/* Decodes exactly out_len bytes; FALSE on a character outside the alphabet
 * or a length that does not match. */
static gboolean b32_decode(const char *s, guint8 *out, gsize out_len)
{
    gsize len = strlen(s);
    if (len != (out_len * 8 + 4) / 5)
        return FALSE;
    guint32 acc = 0;
    int bits = 0;
    gsize o = 0;
    for (gsize i = 0; i < len; i++) {
        const char *c = strchr(B32, s[i]);
        if (s[i] == '\0' || c == NULL)
            return FALSE;
        acc = (acc << 5) | (guint32)(c - B32);
        bits += 5;
        if (bits >= 8) {
            bits -= 8;
            if (o < out_len)
                out[o++] = (guint8)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    return o == out_len;
}

static char *b32_encode(const guint8 *p, gsize n)
{
    GString *s = g_string_sized_new((n * 8 + 4) / 5);
    guint32 acc = 0;
    int bits = 0;
    for (gsize i = 0; i < n; i++) {
        acc = (acc << 8) | p[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            g_string_append_c(s, B32[(acc >> bits) & 31]);
        }
        acc &= (1u << bits) - 1;
    }
    if (bits > 0)
        g_string_append_c(s, B32[(acc << (5 - bits)) & 31]);
    return g_string_free(s, FALSE);
}

static const char *kind_of(guint8 prefix)
{
    switch (prefix) {
    case 14 << 3: return "an operator";
    case 0: return "an account";
    case 13 << 3: return "a server";
    case 2 << 3: return "a cluster";
    case PREFIX_USER: return "a user";
    default: return "an unknown kind of";
    }
}

gboolean jet_nkey_user_public(const char *seed, char **public_key, GError **error)
{
    g_return_val_if_fail(seed != NULL && public_key != NULL, FALSE);
    /* nats.c must be open before we touch libcrypto: when our use is the
     * first, a process that later uses TLS and calls nats_Close() crashes at
     * exit in libcrypto's own clean-up (nats.c 3.4.1, OpenSSL 3.0). */
    nats_Open(-1);
    guint8 raw[SEED_RAW_LEN];
    gboolean ok = FALSE;
    if (!b32_decode(seed, raw, sizeof raw)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "not an nkey seed (a seed is 58 characters of A-Z and 2-7, starting with SU)");
        goto out;
    }
    guint16 want = (guint16)(raw[SEED_RAW_LEN - 2] | (raw[SEED_RAW_LEN - 1] << 8));
    if (crc16(raw, SEED_RAW_LEN - 2) != want) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "not an nkey seed: its checksum does not match (a typo?)");
        goto out;
    }
    if ((raw[0] & 0xf8) != PREFIX_SEED) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "not an nkey seed (a public key? the seed is the secret that starts with S)");
        goto out;
    }
    guint8 kind = (guint8)(((raw[0] & 7) << 5) | ((raw[1] & 0xf8) >> 3));
    if (kind != PREFIX_USER) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "%s seed, not a user seed (SU...): a client signs in with a user nkey", kind_of(kind));
        goto out;
    }
    EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, raw + 2, KEY_LEN);
    guint8 pub[PUBLIC_RAW_LEN];
    size_t plen = KEY_LEN;
    if (k == NULL || EVP_PKEY_get_raw_public_key(k, pub + 1, &plen) != 1 || plen != KEY_LEN) {
        EVP_PKEY_free(k);
        g_set_error(error, JET_ERROR, JET_ERROR_FAILED, "libcrypto could not derive the ed25519 public key");
        goto out;
    }
    EVP_PKEY_free(k);
    pub[0] = PREFIX_USER;
    guint16 crc = crc16(pub, 1 + KEY_LEN);
    pub[1 + KEY_LEN] = (guint8)(crc & 0xff);
    pub[2 + KEY_LEN] = (guint8)(crc >> 8);
    *public_key = b32_encode(pub, sizeof pub);
    ok = TRUE;
out:
    /* The seed is the secret: leave no copy of it behind. */
    OPENSSL_cleanse(raw, sizeof raw);
    return ok;
}

gboolean jet_nkey_user_public_from_file(const char *path, char **public_key, GError **error)
{
    g_return_val_if_fail(path != NULL && public_key != NULL, FALSE);
    char *text = NULL;
    gsize len = 0;
    GError *local = NULL;
    /* A seed file (or a creds file with its JWT) is a few hundred bytes:
     * anything far larger is not one, and is not read into memory. */
    GStatBuf st;
    if (g_stat(path, &st) == 0 && st.st_size > JET_NKEY_FILE_MAX) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "nkey seed file %s: %lld bytes, more than %d: not a seed file",
                    path, (long long)st.st_size, JET_NKEY_FILE_MAX);
        return FALSE;
    }
    if (!g_file_get_contents(path, &text, &len, &local)) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "nkey seed file %s: %s", path, local->message);
        g_error_free(local);
        return FALSE;
    }
    const char *seed = NULL;
    char *save = NULL;
    for (char *w = strtok_r(text, " \t\r\n", &save); w != NULL; w = strtok_r(NULL, " \t\r\n", &save))
        if (w[0] == 'S' && strspn(w, B32) == strlen(w)) {
            seed = w;
            break;
        }
    gboolean ok = FALSE;
    if (seed == NULL)
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID,
                    "nkey seed file %s: holds no seed (a word of A-Z and 2-7 starting with S)", path);
    else if (!(ok = jet_nkey_user_public(seed, public_key, &local))) {
        g_set_error(error, JET_ERROR, JET_ERROR_INVALID, "nkey seed file %s: %s", path, local->message);
        g_error_free(local);
    }
    OPENSSL_cleanse(text, len);
    g_free(text);
    return ok;
}
