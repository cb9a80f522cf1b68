/*
 * server/net/clients.h — how many connections each client holds: a table keyed by client.
 *
 * A client is an IPv4 address (also when it arrives IPv4-mapped on an IPv6 socket),
 * or an IPv6 /64: the block one host or customer usually has, so that counting by
 * full address would leave such a client without a limit. The table is open
 * addressing with linear probing, sized once for the most clients it will ever hold
 * (at most one per connection), and never allocates again; the hash is seeded so
 * that a client cannot pick addresses that collide.
 *
 * Not thread-safe: the caller (server/net/conns.c) holds its lock. Not here: what the
 * counts are for.
 */
#ifndef SRV_CLIENTS_H
#define SRV_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

#define SRV_CLIENT_KEY 16

struct srv_client {
    unsigned char key[SRV_CLIENT_KEY];
    unsigned count; /* 0 marks an empty cell */
};

struct srv_clients {
    struct srv_client *cells; /* (mask + 1) cells, owned */
    size_t mask;
    uint64_t seed;
};

/* Room for `most` clients at once (twice as many cells). False when out of memory. */
bool srv_clients_init(struct srv_clients *t, size_t most, uint64_t seed);

void srv_clients_deinit(struct srv_clients *t);

/* The client key of a peer address; NULL or another family is one client (all zero). */
void srv_clients_key(const struct sockaddr *sa, unsigned char key[SRV_CLIENT_KEY]);

unsigned srv_clients_count(const struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY]);

/* One more connection of key. The caller never holds more than `most` clients. */
void srv_clients_add(struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY]);

/* One connection of key fewer; a key that holds none is left alone. */
void srv_clients_drop(struct srv_clients *t, const unsigned char key[SRV_CLIENT_KEY]);

#endif
