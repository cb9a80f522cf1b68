/*
 * server/http.c — starting and stopping the libmicrohttpd daemon (see http.h).
 *
 * Choices, each on purpose:
 * - poll(), not epoll, under the internal threads. MHD_quiesce_daemon on an epoll
 *   daemon with its own threads races with the worker removing the same listen fd
 *   from the epoll set, and the loser calls MHD_PANIC (abort): a SIGTERM would crash
 *   the process it was meant to stop gently. With poll() the workers rebuild their
 *   sets from was_quiesced each round and quiesce only signals them (ITC). With at
 *   most SRV_CONNECTION_LIMIT connections spread over the pool, poll's O(n) scan
 *   costs nothing next to one attention request.
 * - A thread pool of --threads workers (MHD wants no pool option at all for one).
 * - SRV_CONNECTION_LIMIT bounds the worst case of bodies held at once
 *   (connections x --max-body: 8 GiB at the defaults, reached only by clients that
 *   send that much: a body's buffer, sized to its Content-Length, is allocated at its
 *   first byte and its pages are touched as the bytes arrive), of connection pools
 *   (512 x 64 KiB = 32 MiB) and the file descriptors used; behind a load balancer
 *   more replicas, not more connections, is how attnd scales. MHD splits the limit
 *   evenly over the pool's workers; a worker at its share stops accepting, and a new
 *   client waits in the kernel's backlog until a connection ends, rather than being
 *   refused (tests/http/slow.test.mjs).
 * - SRV_CONNECTION_MEMORY: MHD's per-connection pool holds the request line,
 *   headers, query parameters and its read buffer (bodies live in server/body.c,
 *   not there). 64 KiB takes long /v1/shapes query strings and browser headers;
 *   MHD's default of 32 KiB is tight once cookies and CORS headers add up.
 * - --timeout closes idle connections (MHD's default is none: a silent client
 *   would hold a connection forever). Idle, not total: a client that trickles a
 *   byte within every timeout keeps its connection, so the connection limit is what
 *   bounds such clients. 500 of them, spread over the workers, do not delay the
 *   requests of others (tests/http/slow.test.mjs): each poll() round is a scan of a
 *   few hundred descriptors.
 *
 * Not here: per-request logic (request.c), signals (main.c).
 */
#include "server/http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "server/log.h"
#include "server/request.h"

#define SRV_CONNECTION_LIMIT 512u
#define SRV_CONNECTION_MEMORY ((size_t)64 * 1024)
#define SRV_REQUEST_BYTES_DEFAULT ((size_t)512 << 20) /* api_default_limits' too */

/* The address to listen on; sockaddr_storage is big enough for either family. */
static bool srv_bind_addr(const struct srv_config *cfg, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (cfg->bind_ipv6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)cfg->port);
        return inet_pton(AF_INET6, cfg->bind, &a->sin6_addr) == 1;
    }
    struct sockaddr_in *a = (struct sockaddr_in *)ss;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)cfg->port);
    return inet_pton(AF_INET, cfg->bind, &a->sin_addr) == 1;
}

bool srv_http_start(struct srv_server *s, const struct srv_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->quiesced_fd = -1;
    atomic_init(&s->ready, true);
    atomic_init(&s->in_flight, 0);
    atomic_init(&s->completed, 0);
    snprintf(s->http_library, sizeof s->http_library, "%s", MHD_get_version());
    s->ctx.limits.max_body = cfg->max_body;
    s->ctx.limits.max_cells = cfg->max_cells;
    s->ctx.limits.max_batch = cfg->max_batch;
    s->ctx.http_library = s->http_library;
    srv_budget_init(&s->budget, cfg->max_memory > 0 ? cfg->max_memory
                                                     : srv_budget_default_here());
    /*
     * The budget admits a request that is alone whatever its size (server/budget.h),
     * so by default one request is held to the budget too: otherwise a single request
     * could take the process past the memory the budget was derived from. A limit
     * the operator sets is taken as it is: above the budget, such requests are
     * served one at a time.
     */
    size_t request_max = cfg->max_request_bytes;
    if (request_max == 0)
        request_max = SRV_REQUEST_BYTES_DEFAULT < s->budget.limit ? SRV_REQUEST_BYTES_DEFAULT
                                                                  : s->budget.limit;
    s->ctx.limits.max_request_bytes = request_max;

    struct sockaddr_storage addr;
    if (!srv_bind_addr(cfg, &addr)) {
        srv_log_message("error", "cannot use bind address %s", cfg->bind);
        return false;
    }
    /* As many lane threads as workers: large requests use the cores the workers leave. */
    if (!srv_lane_start(&s->lane, cfg->threads < SRV_LANE_MAX_THREADS ? cfg->threads
                                                                     : SRV_LANE_MAX_THREADS)) {
        srv_log_message("error", "cannot start the threads for large requests");
        return false;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     (cfg->bind_ipv6 ? MHD_USE_IPv6 : 0);
    /* One worker needs no pool; MHD_OPTION_ARRAY lets the option be left out. */
    struct MHD_OptionItem pool[] = {
        {cfg->threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, cfg->threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)cfg->port, NULL, NULL, srv_on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, srv_log_mhd, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->timeout,
        MHD_OPTION_CONNECTION_LIMIT, SRV_CONNECTION_LIMIT,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, SRV_CONNECTION_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, srv_on_completed, s,
        MHD_OPTION_URI_LOG_CALLBACK, srv_on_uri, s, /* the target as sent: request.c */
        MHD_OPTION_ARRAY, pool,
        MHD_OPTION_END);
    if (s->daemon == NULL) {
        srv_log_message("error", "cannot listen on %s port %u (in use, or not an address "
                                 "of this host?)", cfg->bind, cfg->port);
        srv_lane_stop(&s->lane);
        srv_lane_deinit(&s->lane);
        return false;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info != NULL ? info->port : (uint16_t)cfg->port;
    return true;
}

void srv_http_quiesce(struct srv_server *s)
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
     * refuses new connections and resets queued ones, and close it in srv_http_stop.
     */
    shutdown(fd, SHUT_RDWR);
    s->quiesced_fd = fd;
}

long srv_http_in_flight(struct srv_server *s)
{
    return atomic_load(&s->in_flight);
}

unsigned long srv_http_completed(struct srv_server *s)
{
    return atomic_load(&s->completed);
}

void srv_http_stop(struct srv_server *s)
{
    /* First: MHD must not be stopped with a connection suspended, and the lane's
       jobs resume theirs (those not started answer 503). */
    srv_lane_stop(&s->lane);
    if (s->daemon != NULL)
        MHD_stop_daemon(s->daemon);
    srv_lane_deinit(&s->lane);
    s->daemon = NULL;
    if (s->quiesced_fd >= 0)
        close(s->quiesced_fd);
    s->quiesced_fd = -1;
}
