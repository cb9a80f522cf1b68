/*
 * server/admin.c — the admin listener's daemon and its three paths (see admin.h).
 *
 * One request at a time per connection, answered on the call after the headers
 * (libmicrohttpd 0.9.75 closes the connection after an answer given on the first
 * call, and probes keep theirs alive), or at once, closing, when a body is on its
 * way: nothing here reads a body.
 *
 * Connections: the registry of server/net/conns.h, the admin port's own (admin.h says
 * with which numbers); a connection one too many is answered 503 on its first call.
 *
 * Ownership: struct srv_admin_request is allocated on the first call, hangs off
 * *req_cls and is freed in srv_admin_on_completed; a response's body moves to
 * libmicrohttpd, which frees it once sent.
 */
#include "server/admin.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "api/api.h"
#include "api/http/instance.h"
#include "server/net/bind.h"
#include "server/net/conns.h"
#include "server/net/reqid.h"
#include "server/ops/log.h"
#include "server/ops/metrics.h"
#include "server/ops/words.h"
#include "server/state.h"

#define SRV_ADMIN_MEMORY ((size_t)16 * 1024) /* a probe's request line and headers */
#define SRV_ADMIN_TIMEOUT_MAX 10u            /* seconds a probe's connection may idle */
#define SRV_ADMIN_PARAMS 16                  /* query parameters passed on to api/ */

struct srv_admin_request {
    char id[SRV_REQID_BUF];
    struct timespec started_real, started_mono;
    char method[16], path[64];              /* copies for the log, cut */
    unsigned route;
    int status;
    unsigned long long bytes;
};

static double srv_admin_seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static bool srv_admin_is(const char *url, const char *path)
{
    return strcmp(url, path) == 0;
}

struct srv_admin_params {
    struct api_param p[SRV_ADMIN_PARAMS];
    size_t n;
};

static enum MHD_Result srv_admin_param(void *cls, enum MHD_ValueKind kind, const char *key,
                                       const char *value)
{
    (void)kind;
    struct srv_admin_params *ps = cls;
    if (ps->n == SRV_ADMIN_PARAMS)
        return MHD_NO;
    ps->p[ps->n].name = key;
    ps->p[ps->n].value = value != NULL ? value : "";
    ps->n++;
    return MHD_YES;
}

/* The request as api/ reads it (no body): ps holds its query parameters. */
static struct api_request srv_admin_request(struct MHD_Connection *conn, const char *url,
                                            const char *method, struct srv_admin_params *ps)
{
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, srv_admin_param, ps);
    struct api_request q = {
        .method = method,
        .path = url,
        .params = ps->p,
        .n_params = ps->n,
        .accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT),
        .accept_language = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept-Language"),
    };
    return q;
}

/* /healthz and /readyz (and a /metrics that is not GET or HEAD) as api/ answers them. */
static void srv_admin_api(struct srv_server *s, struct MHD_Connection *conn, const char *url,
                          const char *method, struct api_response *res)
{
    struct api_context ctx = s->ctx;
    ctx.ready = atomic_load(&s->ready);
    struct srv_admin_params ps = {.n = 0};
    struct api_request q = srv_admin_request(conn, url, method, &ps);
    if (api_precheck(&ctx, &q, -1, res))
        return;
    api_response_deinit(res);
    api_handle(&ctx, &q, res);
}

static void srv_admin_decide(struct srv_server *s, struct MHD_Connection *conn,
                             const char *url, const char *method, struct api_response *res)
{
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
               strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (get && srv_admin_is(url, SRV_METRICS_PATH)) {
        res->status = 200;
        res->content_type = SRV_METRICS_CONTENT_TYPE;
        if (!srv_state_metrics(s, &res->body, &res->body_len)) {
            struct srv_admin_params ps = {.n = 0};
            struct api_request q = srv_admin_request(conn, url, method, &ps);
            api_respond_server_reason(res, &q, API_UNAVAILABLE,
                                      SRV_N("the server is out of memory"));
        }
        return;
    }
    if (srv_admin_is(url, "/healthz") || srv_admin_is(url, "/readyz") ||
        srv_admin_is(url, SRV_METRICS_PATH)) {
        srv_admin_api(s, conn, url, method, res);
        return;
    }
    struct srv_admin_params ps = {.n = 0};
    struct api_request q = srv_admin_request(conn, url, method, &ps);
    api_respond_server_reason(res, &q, API_NOT_FOUND,
                              SRV_N("the admin port serves GET and HEAD of /healthz, /readyz "
                                    "and /metrics only; everything else is on the main port"));
}

/* Sends res (its body taken over, res deinited). MHD_NO when not even that could be made. */
static enum MHD_Result srv_admin_queue(struct MHD_Connection *conn, struct srv_admin_request *r,
                                       struct api_response *res, bool is_head, bool close)
{
    api_problem_stamp_instance(res, r->id); /* as on the data port (api/http/instance.h) */
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(res->body_len, res->body, free);
    if (resp == NULL) {
        api_response_deinit(res);
        return MHD_NO;
    }
    size_t len = res->body_len;
    res->body = NULL;
    bool ok = MHD_add_response_header(resp, "X-Request-Id", r->id) == MHD_YES;
    if (res->content_type != NULL)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                                           res->content_type) == MHD_YES;
    for (size_t i = 0; i < res->n_headers && i < API_MAX_HEADERS; i++)
        ok = ok && MHD_add_response_header(resp, res->headers[i].name,
                                           res->headers[i].value) == MHD_YES;
    if (close)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    enum MHD_Result ret = ok ? MHD_queue_response(conn, (unsigned)res->status, resp) : MHD_NO;
    if (ret == MHD_YES) {
        r->status = res->status;
        r->bytes = is_head ? 0 : len;
        srv_metrics_observe(r->route, r->status, 0, r->bytes,
                            srv_admin_seconds_since(&r->started_mono));
    }
    MHD_destroy_response(resp);
    api_response_deinit(res);
    return ret;
}

static enum MHD_Result srv_admin_answer(struct srv_server *s, struct MHD_Connection *conn,
                                        struct srv_admin_request *r, const char *url,
                                        const char *method, bool close)
{
    struct api_response res = {0};
    srv_admin_decide(s, conn, url, method, &res);
    return srv_admin_queue(conn, r, &res, strcmp(method, MHD_HTTP_METHOD_HEAD) == 0, close);
}

static void srv_admin_copy(char *out, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap - 1);
    memcpy(out, s, n);
    out[n] = '\0';
}

/* A 503 for a connection one too many (server/net/conns.h), closing it. */
static enum MHD_Result srv_admin_refuse(struct MHD_Connection *conn, struct srv_admin_request *r,
                                        const char *url, const char *method, const char *reason)
{
    struct api_response res = {0};
    struct srv_admin_params ps = {.n = 0};
    struct api_request q = srv_admin_request(conn, url, method, &ps);
    api_respond_server_reason(&res, &q, API_UNAVAILABLE, reason);
    return srv_admin_queue(conn, r, &res, strcmp(method, MHD_HTTP_METHOD_HEAD) == 0, true);
}

/* The first call: the request's state, and the answer when it cannot wait. */
static enum MHD_Result srv_admin_first_call(struct srv_server *s, struct MHD_Connection *conn,
                                            const char *url, const char *method,
                                            void **req_cls)
{
    struct srv_admin_request *r = malloc(sizeof *r);
    if (r == NULL)
        return MHD_NO; /* no memory even for this: the connection closes, the probe fails */
    memset(r, 0, sizeof *r);
    *req_cls = r;
    clock_gettime(CLOCK_REALTIME, &r->started_real);
    clock_gettime(CLOCK_MONOTONIC, &r->started_mono);
    srv_reqid_pick(r->id, MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id"));
    srv_admin_copy(r->method, sizeof r->method, method);
    srv_admin_copy(r->path, sizeof r->path, url);
    r->route = srv_metrics_route(url);
    const char *too_many = srv_conns_refusal(conn);
    if (too_many != NULL)
        return srv_admin_refuse(conn, r, url, method, too_many);
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                 MHD_HTTP_HEADER_CONTENT_LENGTH);
    bool body = (cl != NULL && strcmp(cl, "0") != 0) ||
                MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                            MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
    if (body) /* answered now, closing: MHD then discards the body */
        return srv_admin_answer(s, conn, r, url, method, true);
    return MHD_YES;
}

/* The access handler, with the connection's deadline following the request (conns.h). */
static enum MHD_Result srv_admin_on_request(void *cls, struct MHD_Connection *conn,
                                            const char *url, const char *method,
                                            const char *version, const char *upload_data,
                                            size_t *upload_data_size, void **req_cls)
{
    (void)version;
    (void)upload_data;
    struct srv_server *s = cls;
    struct srv_admin_request *r = *req_cls;
    enum MHD_Result ret;
    if (r != NULL) {
        *upload_data_size = 0; /* not reached: a request with a body is answered at once */
        ret = srv_admin_answer(s, conn, r, url, method, false);
    } else {
        ret = srv_admin_first_call(s, conn, url, method, req_cls);
    }
    srv_conns_after_call(conn, r == NULL);
    return ret;
}

static void srv_admin_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                                   enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)toe;
    srv_conns_request_done(conn); /* a kept-alive probe's next request: a new clock */
    struct srv_admin_request *r = *req_cls;
    if (r == NULL)
        return;
    struct srv_access a = {
        .started = r->started_real,
        .id = r->id,
        .method = r->method,
        .path = r->path,
        .status = r->status,
        .bytes = r->bytes,
        .duration_ms = srv_admin_seconds_since(&r->started_mono) * 1e3,
    };
    srv_log_access(&a);
    free(r);
    *req_cls = NULL;
}

bool srv_admin_start(struct srv_server *s, const struct srv_config *cfg)
{
    struct sockaddr_storage addr;
    if (!srv_bind_addr(cfg, cfg->admin_port, &addr)) {
        srv_log_message("error", "cannot use bind address %s", cfg->bind);
        return false;
    }
    unsigned timeout = cfg->timeout < SRV_ADMIN_TIMEOUT_MAX ? cfg->timeout : SRV_ADMIN_TIMEOUT_MAX;
    struct srv_conns_limits lim = {.slots = SRV_ADMIN_SLOTS, .per_client = SRV_ADMIN_CLIENT_SLOTS,
                                   .idle_s = timeout, .request_s = SRV_ADMIN_REQUEST_S,
                                   .admin = true};
    s->admin_conns = srv_conns_start(&lim);
    if (s->admin_conns == NULL) {
        srv_log_message("error", "cannot start the admin port's connection registry (out of "
                                 "memory?)");
        return false;
    }
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (cfg->bind_ipv6 ? MHD_USE_IPv6 : 0);
    s->admin = MHD_start_daemon(
        flags, (uint16_t)cfg->admin_port, NULL, NULL, srv_admin_on_request, s,
        MHD_OPTION_EXTERNAL_LOGGER, srv_log_mhd, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_LIMIT, srv_conns_hard_limit(SRV_ADMIN_SLOTS),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, 2u * SRV_ADMIN_CLIENT_SLOTS, /* conns.h: twice */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, SRV_ADMIN_MEMORY,
        MHD_OPTION_NOTIFY_COMPLETED, srv_admin_on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, srv_conns_on_notify, s->admin_conns,
        MHD_OPTION_END);
    if (s->admin == NULL) {
        srv_conns_stop(s->admin_conns);
        s->admin_conns = NULL;
        srv_log_message("error", "cannot listen on %s admin port %u (in use, or not an "
                                 "address of this host?)", cfg->bind, cfg->admin_port);
        return false;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->admin, MHD_DAEMON_INFO_BIND_PORT);
    s->admin_port = info != NULL ? info->port : (uint16_t)cfg->admin_port;
    return true;
}

void srv_admin_stop(struct srv_server *s)
{
    if (s->admin != NULL)
        MHD_stop_daemon(s->admin); /* every connection closed, each one announced */
    s->admin = NULL;
    srv_conns_stop(s->admin_conns);
    s->admin_conns = NULL;
}
