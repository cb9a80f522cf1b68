/*
 * server/admin.h — the admin listener (--admin-port): /healthz, /readyz and /metrics on
 * a libmicrohttpd daemon of their own.
 *
 * Probes and scrapes must not share the fate of a flooded data port: when its slots
 * are full, or its workers busy with large answers, a liveness probe waiting behind
 * them would get the pod killed. This daemon has its own thread, its own few
 * connections and nothing else to do. It answers GET and HEAD of the three paths
 * (api/ words /healthz and /readyz, server/ops/metrics.c /metrics, as on the data port;
 * /readyz turns 503 the moment shutdown begins), 405 for other methods on them, and
 * 404 for every other path. It keeps answering while the data port drains, and
 * stops after it. It is meant for the cluster's network, not for clients: no CORS.
 *
 * Its connections have the data port's defences (server/net/conns.h: a registry of their
 * own), with numbers for probes: SRV_ADMIN_SLOTS served at once, at most
 * SRV_ADMIN_CLIENT_SLOTS from one client (a 503 with Retry-After past them), and a
 * request's headers due within the idle timeout plus a quarter of
 * SRV_ADMIN_REQUEST_S. So clients trickling headers (the port is open to whatever can
 * reach the pod) hold a few slots each, for seconds, and a probe from another address
 * always finds one: the kubelet's liveness probe cannot be starved into restarts.
 *
 * Not here: the data port (daemon.c), the registry itself (conns.c).
 */
#ifndef SRV_ADMIN_H
#define SRV_ADMIN_H

#include <stdbool.h>

#include "server/host/config.h"

#define SRV_ADMIN_SLOTS 128u       /* connections served at once */
#define SRV_ADMIN_CLIENT_SLOTS 8u  /* of them, from one client */
#define SRV_ADMIN_REQUEST_S 8u     /* a quarter of it for a request's headers, after the idle time */
/* Descriptors the admin daemon may hold: its slots and the refused quarter beyond them. */
#define SRV_ADMIN_FDS (SRV_ADMIN_SLOTS + SRV_ADMIN_SLOTS / 4u)

struct srv_server;

/* Starts the admin daemon on cfg->admin_port; sets s->admin and s->admin_port. */
bool srv_admin_start(struct srv_server *s, const struct srv_config *cfg);

/* Stops it (closing its connections); nothing when it never started. */
void srv_admin_stop(struct srv_server *s);

#endif
