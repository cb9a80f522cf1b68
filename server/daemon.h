/*
 * server/daemon.h — the libmicrohttpd daemon: start, route each request to api/, stop.
 *
 * Lifecycle: srv_daemon_start → (requests) → srv_daemon_quiesce → wait until
 * srv_state_in_flight is 0 → srv_daemon_stop. Readiness is one atomic flag; every
 * request gets its own copy of the api context with the flag's value at that moment,
 * so api/ only ever reads memory nobody writes.
 *
 * Not here: the state it shares with the exchange and the admin port (state.h), flags
 * (host/config.c), signals (main.c), the log format (ops/log.c), anything api/ decides
 * (routes, negotiation, bodies of errors).
 */
#ifndef SRV_DAEMON_H
#define SRV_DAEMON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "server/host/config.h"
#include "server/state.h"

/*
 * Binds and starts the worker threads, and the admin listener when asked for. False
 * (and a logged reason) on failure.
 */
bool srv_daemon_start(struct srv_server *s, const struct srv_config *cfg);

/* Not ready, stop accepting: new connections are refused, open ones keep going. */
void srv_daemon_quiesce(struct srv_server *s);

/* Closes every connection and joins the threads; the admin listener last. */
void srv_daemon_stop(struct srv_server *s);

#endif
