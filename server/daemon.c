/*
 * server/daemon.c — starting and stopping the libmicrohttpd daemon (see daemon.h).
 *
 * Choices, each on purpose:
 * - poll(), not epoll, under the internal threads. MHD_quiesce_daemon on an epoll
 *   daemon with its own threads races with the worker removing the same listen fd
 *   from the epoll set, and the loser calls MHD_PANIC (abort): a SIGTERM would crash
 *   the process it was meant to stop gently. With poll() the workers rebuild their
 *   sets from was_quiesced each round and quiesce only signals them (ITC); and poll
 *   has no FD_SETSIZE ceiling on the number of connections.
 * - A thread pool of --threads workers (MHD wants no pool option at all for one).
 * - Slots: --max-connections (2048 by default) are served at once; libmicrohttpd's
 *   own limit is a quarter higher, and server/net/conns.c marks the connections beyond
 *   the slots (or beyond their client's --max-client-connections) to be answered a
 *   fast 503 with Retry-After rather than left in the kernel's backlog, where a
 *   client would wait without a word. What bounds memory is the budget
 *   (server/host/budget.h: bodies are charged as they arrive), plus each connection's pool
 *   (below), of which only the pages a client fills are touched. poll() scans each
 *   worker's share of the connections every round; at a few thousand that is still
 *   far less than one attention request. MHD splits its limit evenly over the pool's
 *   workers; a worker at its share stops accepting (the backlog again), which the
 *   quarter of spare slots keeps for bursts of refusals. Behind a load balancer more
 *   replicas, not more connections, is how attnd scales.
 * - File descriptors: the soft RLIMIT_NOFILE is raised to what the slots need (the
 *   hard limit permitting; fewer slots, and a warning, otherwise).
 * - SRV_CONNECTION_MEMORY: MHD's per-connection pool holds the request line,
 *   headers, query parameters and its read buffer (bodies live in server/net/upload.c,
 *   not there). 64 KiB takes long /v1/shapes query strings and browser headers;
 *   MHD's default of 32 KiB is tight once cookies and CORS headers add up.
 * - --timeout closes idle connections (MHD's default is none: a silent client
 *   would hold a connection forever). Idle, not total: a client that trickles a
 *   byte within every timeout would keep its connection, so server/net/conns.c adds
 *   deadlines on a request's headers and body (--request-timeout) and shuts down the
 *   connections past them.
 * - --admin-port: /healthz, /readyz and /metrics on a daemon of their own
 *   (server/admin.c), so that probes answer however flooded the data port is.
 *
 * Not here: per-request logic (exchange.c), signals (main.c).
 */
#include "server/daemon.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "server/admin.h"
#include "server/exchange.h"
#include "server/net/bind.h"
#include "server/net/conns.h"
#include "server/ops/log.h"

#define SRV_CONNECTION_MEMORY ((size_t)64 * 1024)
/* Descriptors kept for all but the data port's connections: the listeners, each
 * worker's wake-up channel, the admin daemon's connections, the log, /proc reads. */
#define SRV_FD_RESERVE(threads) (64u + 2u * (threads) + SRV_ADMIN_FDS)

/*
 * The access handler as the daemon calls it: exchange.c's, with the connection's
 * deadline moved to what the request is doing (server/net/conns.h). The final call
 * computes the answer, so it is marked before: a deadline must not cut that short.
 */
static enum MHD_Result srv_daemon_on_request(void *cls, struct MHD_Connection *conn,
                                           const char *url, const char *method,
                                           const char *version, const char *upload_data,
                                           size_t *upload_data_size, void **req_cls)
{
    bool first = srv_request_first_call(*req_cls);
    if (!first && *upload_data_size == 0)
        srv_conns_answering(conn);
    enum MHD_Result ret = srv_on_request(cls, conn, url, method, version, upload_data,
                                         upload_data_size, req_cls);
    srv_conns_after_call(conn, first);
    return ret;
}

static void srv_daemon_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                                  enum MHD_RequestTerminationCode toe)
{
    srv_on_completed(cls, conn, req_cls, toe);
    srv_conns_request_done(conn);
}

/* The connection limits from the settings, fitted to the descriptors we may open. */
static struct srv_conns_limits srv_daemon_limits(const struct srv_config *cfg)
{
    struct srv_conns_limits lim = {
        .slots = cfg->max_connections,
        .per_client = cfg->max_client_connections,
        .idle_s = cfg->timeout,
        .request_s = cfg->request_timeout,
    };
    srv_conns_fit_fds(&lim, SRV_FD_RESERVE(cfg->threads));
    return lim;
}

/*
 * The lane's bounds from the settings. With --max-client-connections 0 (behind a
 * balancer that rewrites source addresses) every request comes from one address, so
 * no client is held to half of the queue: it is served in order of arrival then.
 */
static struct srv_lane_limits srv_daemon_lane_limits(const struct srv_config *cfg)
{
    unsigned half = cfg->lane_queue / 2 > 0 ? cfg->lane_queue / 2 : 1;
    struct srv_lane_limits lim = {
        .queue = cfg->lane_queue,
        .per_client = cfg->max_client_connections > 0 ? half : cfg->lane_queue,
        .wait_ms = cfg->lane_wait * 1000u,
    };
    return lim;
}

/* The largest trace block kept between requests: an n = 2,048 trace of every step fits. */
#define SRV_KEPT_BLOCK_MAX ((size_t)256 << 20)

/* The context api/ reads on every call: limits, the library's version, the budget. */
static void srv_daemon_context_init(struct srv_server *s, const struct srv_config *cfg)
{
    snprintf(s->http_library, sizeof s->http_library, "%s", MHD_get_version());
    s->ctx.limits.max_body = cfg->max_body;
    s->ctx.limits.max_cells = cfg->max_cells;
    s->ctx.limits.max_work = cfg->max_work;
    s->ctx.limits.max_batch = cfg->max_batch;
    s->ctx.http_library = s->http_library;
    srv_budget_init(&s->budget, cfg->max_memory > 0 ? cfg->max_memory
                                                     : srv_budget_default_here());
    /*
     * One trace block kept between requests (api_keep_block_max) costs memory no
     * request is charged for, so it is held to a quarter of the budget (inside the
     * third the default budget leaves free) and to SRV_KEPT_BLOCK_MAX.
     */
    size_t kept = s->budget.limit / 4;
    api_keep_block_max(kept < SRV_KEPT_BLOCK_MAX ? kept : SRV_KEPT_BLOCK_MAX);
    /*
     * The budget admits a request that is alone whatever its size (server/host/budget.h),
     * so by default one request is held to the budget too: otherwise a single request
     * could take the process past the memory the budget was derived from. A limit
     * the operator sets is taken as it is: above the budget, such requests are
     * served one at a time.
     */
    size_t request_max = cfg->max_request_bytes;
    if (request_max == 0) {
        request_max = api_default_limits().max_request_bytes;
        if (s->budget.limit < request_max)
            request_max = s->budget.limit;
    }
    s->ctx.limits.max_request_bytes = request_max;
}

/* The data port's daemon, or NULL. */
static struct MHD_Daemon *srv_daemon_mhd_start(struct srv_server *s, const struct srv_config *cfg,
                                                const struct srv_conns_limits *lim,
                                                const struct sockaddr_storage *addr)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     (cfg->bind_ipv6 ? MHD_USE_IPv6 : 0);
    /* Options that may be left out: one worker needs no pool, no limit needs no count. */
    unsigned per_ip = lim->per_client > 0 ? 2 * lim->per_client : 0; /* conns.h: twice */
    struct MHD_OptionItem optional[3];
    size_t n = 0;
    if (cfg->threads > 1)
        optional[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, cfg->threads, NULL};
    if (per_ip > 0)
        optional[n++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, NULL};
    optional[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, srv_daemon_on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, srv_log_mhd, NULL,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout,
        MHD_OPTION_CONNECTION_LIMIT, srv_conns_hard_limit(lim->slots),
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, SRV_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, srv_daemon_on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, srv_conns_on_notify, s->conns,
        MHD_OPTION_URI_LOG_CALLBACK, srv_on_uri, s, /* the target as sent: exchange.c */
        MHD_OPTION_ARRAY, optional,
        MHD_OPTION_END);
}

/* Undoes what srv_daemon_start started before its daemon (which did not start). */
static void srv_daemon_unstart(struct srv_server *s)
{
    srv_conns_stop(s->conns);
    s->conns = NULL;
    srv_lane_stop(&s->lane);
    srv_lane_deinit(&s->lane);
}

bool srv_daemon_start(struct srv_server *s, const struct srv_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->quiesced_fd = -1;
    atomic_init(&s->ready, true);
    atomic_init(&s->in_flight, 0);
    atomic_init(&s->completed, 0);
    srv_daemon_context_init(s, cfg);

    struct sockaddr_storage addr;
    if (!srv_bind_addr(cfg, cfg->port, &addr)) {
        srv_log_message("error", "cannot use bind address %s", cfg->bind);
        return false;
    }
    /* As many lane threads as workers: large requests use the cores the workers leave. */
    struct srv_lane_limits lane = srv_daemon_lane_limits(cfg);
    if (!srv_lane_start(&s->lane, cfg->threads < SRV_LANE_MAX_THREADS ? cfg->threads
                                                                     : SRV_LANE_MAX_THREADS,
                        &lane, true)) {
        srv_log_message("error", "cannot start the threads for large requests");
        return false;
    }
    struct srv_conns_limits lim = srv_daemon_limits(cfg);
    s->conns = srv_conns_start(&lim);
    if (s->conns == NULL) {
        srv_log_message("error", "cannot start the connection registry (out of memory?)");
        srv_daemon_unstart(s);
        return false;
    }
    s->daemon = srv_daemon_mhd_start(s, cfg, &lim, &addr);
    if (s->daemon == NULL) {
        srv_log_message("error", "cannot listen on %s port %u (in use, or not an address "
                                 "of this host?)", cfg->bind, cfg->port);
        srv_daemon_unstart(s);
        return false;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL ? info->port : (uint16_t)cfg->port;
    if (cfg->admin && !srv_admin_start(s, cfg)) {
        srv_daemon_stop(s);
        return false;
    }
    return true;
}

void srv_daemon_quiesce(struct srv_server *s)
{
    atomic_store(&s->ready, false);
    MHD_socket fd = MHD_quiesce_daemon(s->daemon);
    if (fd == MHD_INVALID_SOCKET)
        return;
    /*
     * MHD no longer accepts, but the socket stays bound and listening until it is
     * closed, and the kernel would keep completing handshakes into its backlog:
     * clients would hang instead of being refused. It must not be closed before
     * MHD_stop_daemon (a worker may still hold it), so shut it down now, which
     * refuses new connections and resets queued ones, and close it in srv_daemon_stop.
     */
    shutdown(fd, SHUT_RDWR);
    s->quiesced_fd = fd;
}

void srv_daemon_stop(struct srv_server *s)
{
    /* First: MHD must not be stopped with a connection suspended, and the lane's
       jobs resume theirs (those not started answer 503). */
    srv_lane_stop(&s->lane);
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon); /* every connection closed, each one announced */
    s->daemon = NULL;
    srv_conns_stop(s->conns); /* so the registry is empty, and the reaper may go */
    s->conns = NULL;
    if (s->quiesced_fd >= 0)
        close(s->quiesced_fd);
    s->quiesced_fd = -1;
    srv_admin_stop(s); /* last: the probes answered (/readyz 503) until now */
    srv_lane_deinit(&s->lane); /* after: a scrape on the admin port reads its counts */
}
