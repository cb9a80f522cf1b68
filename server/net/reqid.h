/*
 * server/net/reqid.h — X-Request-Id: echo a sane one, otherwise make one up.
 *
 * A client's id is kept when it is 1..128 bytes of [A-Za-z0-9._:-], so it can be
 * echoed in a header and a log line without escaping. Generated ids are 16 hex
 * digits: splitmix64 of a random seed plus an atomic counter, unique within the
 * process and unlikely to collide across replicas.
 *
 * Not here: logging, headers on the wire.
 */
#ifndef SRV_REQID_H
#define SRV_REQID_H

#include <stdbool.h>

#define SRV_REQID_MAX 128
#define SRV_REQID_BUF (SRV_REQID_MAX + 1)

/* Seeds the generator from /dev/urandom (the clock and pid when that fails). Once, at start. */
void srv_reqid_init(void);

/* True when id may be echoed as is. */
bool srv_reqid_is_sane(const char *id);

/* out = the client's id when sane, else a fresh one. Thread-safe. */
void srv_reqid_pick(char out[SRV_REQID_BUF], const char *client_id);

#endif
