/* Corking a nats.c connection's socket around a burst of small publishes,
 * so the kernel sends the burst as a few segments instead of one per
 * publish, and the server reads it at once (docs/performance.md).  nats.c
 * does not hand out its socket: it is found among the process's
 * descriptors by the connection's local address. */
#ifndef JET_SOCK_CORK_H
#define JET_SOCK_CORK_H

#include <glib.h>
#include <nats/nats.h>

typedef struct JetSockCork JetSockCork;

JetSockCork *jet_sock_cork_new(void);
void jet_sock_cork_free(JetSockCork *k);

/* Begins a burst on nc's socket (any thread; bursts may overlap: the
 * socket is corked while any is open).  generation: the connection's
 * reconnect count, so a new socket is looked up after a reconnect. */
void jet_sock_cork_begin(JetSockCork *k, natsConnection *nc, guint generation);
/* Ends it: the last one open uncorks, which sends what was held. */
void jet_sock_cork_end(JetSockCork *k);

/* The descriptor of nc's socket, or -1 (exposed for tests). */
int jet_sock_find(natsConnection *nc);

#endif
