/*
 * server/admin.h — the admin listener (--admin-port): /healthz, /readyz and /metrics on
 * a libmicrohttpd daemon of their own.
 *
 * Probes and scrapes must not share the fate of a flooded data port: when its slots
 * are full, or its workers busy with large answers, a liveness probe waiting behind
 * them would get the pod killed. This daemon has its own thread, its own few
 * connections and nothing else to do. It answers GET and HEAD of the three paths
 * (api/ words /healthz and /readyz, server/metrics.c /metrics, as on the data port;
 * /readyz turns 503 the moment shutdown begins), 405 for other methods on them, and
 * 404 for every other path. It keeps answering while the data port drains, and
 * stops after it. It is meant for the cluster's network, not for clients: no CORS.
 *
 * Not here: the data port (http.c), the deadlines and per-client limits of its
 * connections (conns.c): a probe's own listener needs none of them.
 */
#ifndef SRV_ADMIN_H
#define SRV_ADMIN_H

#include <stdbool.h>

#include "server/config.h"

#define SRV_ADMIN_CONNECTION_LIMIT 32u

struct srv_server;

/* Starts the admin daemon on cfg->admin_port; sets s->admin and s->admin_port. */
bool srv_admin_start(struct srv_server *s, const struct srv_config *cfg);

/* Stops it (closing its connections); nothing when it never started. */
void srv_admin_stop(struct srv_server *s);

#endif
