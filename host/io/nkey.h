/* NKey user seeds: the public key that a seed signs for.  nats.c needs that
 * public key beside the seed file (given NULL, it clears NKey auth instead),
 * so the host derives it itself: docs/configuration.md, "NKeys". */
#ifndef JET_NKEY_H
#define JET_NKEY_H

#include <glib.h>

/* The public user key ("U...", 56 characters) of a user seed ("SU...", 58
 * characters).  FALSE with a reason that never echoes the seed: not base32,
 * a bad checksum, the wrong length, or a seed of another kind (account,
 * operator, server...). */
gboolean jet_nkey_user_public(const char *seed, char **public_key, GError **error);

/* The same for the seed in a file: the first word of base32 letters that
 * starts with 'S' (a bare seed, or the seed line of a decorated file).
 * Errors name the file. */
/* Larger seed files are refused unread. */
#define JET_NKEY_FILE_MAX 65536
gboolean jet_nkey_user_public_from_file(const char *path, char **public_key, GError **error);

#endif
