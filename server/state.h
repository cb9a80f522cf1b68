/*
 * server/state.h — the running server: what the daemon (daemon.c) owns and writes,
 * and the exchange (exchange.c) and the admin port (admin.c) read. It is its own
 * module so that those two read it without including the daemon, which calls them:
 * the doors open one way, daemon -> exchange, admin -> state.
 *
 * Not here: starting and stopping (daemon.h).
 */
#ifndef SRV_STATE_H
#define SRV_STATE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"
#include "server/host/budget.h"
#include "server/host/config.h"
#include "server/lane/lane.h"

struct MHD_Daemon;
struct srv_conns;

struct srv_server {
    const struct srv_config *cfg;  /* borrowed; outlives the server */
    struct api_context ctx;        /* template for each request's copy; ready is ignored */
    char http_library[64];         /* "libmicrohttpd 0.9.75"; ctx.http_library points here */
    atomic_bool ready;             /* false once shutdown began */
    atomic_long in_flight;         /* requests between first call and completion */
    atomic_ulong completed;        /* requests completed since start */
    struct srv_budget budget;      /* memory requests may hold at once */
    struct srv_lane lane;          /* large requests' threads (server/lane/lane.h) */
    struct MHD_Daemon *daemon;
    struct srv_conns *conns;       /* the data port's connections (server/net/conns.h); owned */
    int quiesced_fd;               /* the listen socket after srv_daemon_quiesce, else -1 */
    uint16_t port;                 /* the port actually bound */
    struct MHD_Daemon *admin;      /* --admin-port's daemon (server/admin.h), or NULL */
    uint16_t admin_port;           /* the admin port actually bound */
    struct srv_conns *admin_conns; /* the admin port's connections (server/admin.h); owned */
};

/* Requests between their first call and their completion. */
long srv_state_in_flight(struct srv_server *s);

/* Requests completed (answered, or ended by the client) since start. */
unsigned long srv_state_completed(struct srv_server *s);

/*
 * The /metrics scrape with the server's gauges (requests in flight, the memory budget,
 * open connections, the lane, the process): *text malloc'd. False without memory.
 * Both ports answer it (exchange.c, admin.c).
 */
bool srv_state_metrics(struct srv_server *s, char **text, size_t *len);

#endif
