/*
 * server/http.h — the libmicrohttpd daemon: start, route each request to api/, stop.
 *
 * Lifecycle: srv_http_start → (requests) → srv_http_quiesce → wait until
 * srv_http_in_flight is 0 → srv_http_stop. Readiness is one atomic flag; every
 * request gets its own copy of the api context with the flag's value at that moment,
 * so api/ only ever reads memory nobody writes.
 *
 * Not here: flags (config.c), signals (main.c), the log format (log.c), anything api/
 * decides (routes, negotiation, bodies of errors).
 */
#ifndef SRV_HTTP_H
#define SRV_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "server/budget.h"
#include "server/config.h"
#include "server/lane.h"

struct MHD_Daemon;
struct srv_conns;
struct sockaddr_storage;

struct srv_server {
    const struct srv_config *cfg;  /* borrowed; outlives the server */
    struct api_context ctx;        /* template for each request's copy; ready is ignored */
    char http_library[64];         /* "libmicrohttpd 0.9.75"; ctx.http_library points here */
    atomic_bool ready;             /* false once shutdown began */
    atomic_long in_flight;         /* requests between first call and completion */
    atomic_ulong completed;        /* requests completed since start */
    struct srv_budget budget;      /* memory requests may hold at once */
    struct srv_lane lane;          /* large requests' threads (server/lane.h) */
    struct MHD_Daemon *daemon;
    struct srv_conns *conns;       /* the data port's connections (server/conns.h); owned */
    int quiesced_fd;               /* the listen socket after srv_http_quiesce, else -1 */
    uint16_t port;                 /* the port actually bound */
    struct MHD_Daemon *admin;      /* --admin-port's daemon (server/admin.h), or NULL */
    uint16_t admin_port;           /* the admin port actually bound */
    struct srv_conns *admin_conns; /* the admin port's connections (server/admin.h); owned */
};

/* cfg's --bind address with `port`, for either listener. False when it does not parse. */
bool srv_http_bind_addr(const struct srv_config *cfg, unsigned port,
                        struct sockaddr_storage *ss);

/*
 * Binds and starts the worker threads, and the admin listener when asked for. False
 * (and a logged reason) on failure.
 */
bool srv_http_start(struct srv_server *s, const struct srv_config *cfg);

/* Not ready, stop accepting: new connections are refused, open ones keep going. */
void srv_http_quiesce(struct srv_server *s);

long srv_http_in_flight(struct srv_server *s);

/* Requests completed (answered, or ended by the client) since start. */
unsigned long srv_http_completed(struct srv_server *s);

/* Closes every connection and joins the threads; the admin listener last. */
void srv_http_stop(struct srv_server *s);

#endif
