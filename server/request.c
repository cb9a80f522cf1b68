/*
 * server/request.c — one HTTP request, from headers to access-log line (see request.h).
 *
 * Ownership: struct srv_request (and its params, body and pending answer) is allocated
 * on the first call, hangs off *req_cls, and is freed only in srv_on_completed. A
 * response's body (or its pieces, api_response.segments) moves from api_response to
 * libmicrohttpd, which frees it once sent.
 *
 * Memory: the body, the working set api/ asks for (api_context.admit) and the answer
 * until it is sent are charged to the server's budget (server/budget.h); each charge
 * has one place that gives it back (srv_body_free, srv_final_call, srv_on_completed).
 *
 * Per request, on the path every POST takes: one allocation for the state (small
 * enough for malloc's per-thread cache: the rare answer that must wait for the final
 * call lives in its own allocation), one for the body, none through printf.
 *
 * What the server answers itself: OPTIONS (the CORS preflight), GET and HEAD
 * /metrics (its own counters, server/metrics.c), GET and HEAD of the playground's
 * files (server/www.c), and requests that arrive on an open connection after
 * shutdown began, or on a connection one too many (server/conns.h): 503,
 * Connection: close. Everything else, errors included, is
 * api/'s to word. Every answer is counted for /metrics when it is queued.
 *
 * Not here: routes, content negotiation, JSON: api/ decides all of them.
 */
#include "server/request.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "server/body.h"
#include "server/conns.h"
#include "server/cors.h"
#include "server/heap.h"
#include "server/http.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/reqid.h"
#include "server/www.h"

#define SRV_LOG_METHOD 32  /* bytes of method kept for the log */
#define SRV_LOG_PATH 480   /* bytes of path kept for the log */

struct srv_request {
    char id[SRV_REQID_BUF];
    struct timespec started_real;      /* for the log's time */
    struct timespec started_mono;      /* for the duration */
    char method[SRV_LOG_METHOD + 1];   /* copies: MHD's strings are not promised to */
    char path[SRV_LOG_PATH + 1];       /*   outlive the request's last handler call */
    bool is_head;
    struct api_param *params;          /* (n_params) owned array; strings borrowed from MHD */
    size_t n_params;
    long long declared;                /* Content-Length, or -1 */
    struct srv_body body;
    bool body_expected;                /* Content-Length > 0 or Transfer-Encoding */
    struct api_response *pending;      /* decided on the first call, sent on the final; owned */
    bool pending_close, pending_preflight;
    int status;                        /* sent status, 0 until a response is queued */
    unsigned long long bytes;          /* body bytes sent */
    unsigned route;                    /* srv_metrics_route of the path */
    unsigned long long received;       /* body bytes received, stored or drained */
    struct srv_budget *budget;         /* the server's; borrowed */
    size_t charged_work;               /* admitted working set, while api/ computes */
    size_t charged_answer;             /* the queued answer's bytes, until completion */
};

/* Within glibc's per-thread cache (tcache, chunks up to 1032 bytes): no lock, no consolidation. */
_Static_assert(sizeof(struct srv_request) <= 1016, "struct srv_request outgrew malloc's tcache");

/* ---- helpers ---- */

static const char *srv_header(struct MHD_Connection *conn, const char *name)
{
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

/* Each request sees readiness as it was when it asked: a private, read-only copy. */
static struct api_context srv_context(struct srv_server *s)
{
    struct api_context c = s->ctx;
    c.ready = atomic_load(&s->ready);
    return c;
}

/* Content-Length as declared, or -1 (libmicrohttpd has already rejected a malformed one). */
static long long srv_declared_length(struct MHD_Connection *conn)
{
    const char *v = srv_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (v == NULL || v[0] < '0' || v[0] > '9')
        return -1;
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end != '\0' || n > (unsigned long long)9223372036854775807LL)
        return 9223372036854775807LL; /* absurd: the limit check will refuse it */
    return (long long)n;
}

struct srv_param_fill {
    struct api_param *params;
    size_t n, cap;
};

static enum MHD_Result srv_param_iter(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
    (void)kind;
    struct srv_param_fill *f = cls;
    if (f->n == f->cap)
        return MHD_NO;
    f->params[f->n].name = key;
    f->params[f->n].value = value != NULL ? value : "";
    f->n++;
    return MHD_YES;
}

/*
 * Query parameters, in order. Their number is bounded by the connection's memory
 * pool (MHD keeps them there), so the array is sized to exactly that many.
 */
static bool srv_collect_params(struct MHD_Connection *conn, struct srv_request *r)
{
    int count = MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, NULL, NULL);
    if (count <= 0)
        return true;
    struct srv_param_fill f = {calloc((size_t)count, sizeof *f.params), 0, (size_t)count};
    if (f.params == NULL)
        return false;
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, srv_param_iter, &f);
    r->params = f.params;
    r->n_params = f.n;
    return true;
}

static struct api_request srv_api_request(struct MHD_Connection *conn,
                                          const struct srv_request *r, const char *url,
                                          const char *method)
{
    struct api_request q = {
        .method = method,
        .path = url,
        .params = r->params,
        .n_params = r->n_params,
        .accept = srv_header(conn, MHD_HTTP_HEADER_ACCEPT),
        .content_type = srv_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE),
        .body = r->body.data,
        .body_len = r->body.len,
    };
    return q;
}

static double srv_ms_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) * 1e3 + (double)(now.tv_nsec - t0->tv_nsec) / 1e6;
}

/* ---- responses ---- */

/* The headers every response carries: request id and CORS. False when one could not be added. */
static bool srv_add_common_headers(struct srv_server *s, struct MHD_Connection *conn,
                                   struct MHD_Response *resp, const struct srv_request *r,
                                   bool preflight)
{
    bool ok = MHD_add_response_header(resp, "X-Request-Id", r->id) == MHD_YES;
    struct srv_cors c = srv_cors_decide(s->cfg, srv_header(conn, "Origin"));
    if (c.vary_origin)
        ok = ok && MHD_add_response_header(resp, "Vary", "Origin") == MHD_YES;
    if (c.allow_origin == NULL)
        return ok;
    ok = ok && MHD_add_response_header(resp, "Access-Control-Allow-Origin", c.allow_origin) ==
                   MHD_YES;
    ok = ok && MHD_add_response_header(resp, "Access-Control-Expose-Headers",
                                       SRV_CORS_EXPOSE_HEADERS) == MHD_YES;
    if (preflight) {
        ok = ok && MHD_add_response_header(resp, "Access-Control-Allow-Methods",
                                           SRV_CORS_ALLOW_METHODS) == MHD_YES;
        ok = ok && MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                           SRV_CORS_ALLOW_HEADERS) == MHD_YES;
        ok = ok && MHD_add_response_header(resp, "Access-Control-Max-Age",
                                           SRV_CORS_MAX_AGE) == MHD_YES;
    }
    return ok;
}

static bool srv_add_api_headers(struct MHD_Response *resp, const struct api_response *res,
                                bool close)
{
    bool ok = true;
    if (res->content_type != NULL && res->status != 204)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, res->content_type) ==
             MHD_YES;
    for (size_t i = 0; i < res->n_headers && i < API_MAX_HEADERS; i++)
        ok = ok && MHD_add_response_header(resp, res->headers[i].name, res->headers[i].value) ==
                       MHD_YES;
    /* libmicrohttpd sees this header and closes the connection once the response is sent. */
    if (close)
        ok = ok && MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES;
    return ok;
}

/*
 * An answer in pieces (api_response.segments) as one vectored response: MHD writes
 * the pieces with sendmsg as they lie, and frees them with the response. Takes the
 * pieces over; NULL (pieces freed) when not even the response could be made.
 */
static struct MHD_Response *srv_response_of_segments(struct api_segments *segs)
{
    struct MHD_IoVec *iov = malloc(segs->n * sizeof *iov);
    struct MHD_Response *resp = NULL;
    if (iov != NULL && segs->n <= UINT_MAX) {
        for (size_t i = 0; i < segs->n; i++) {
            iov[i].iov_base = segs->seg[i].data;
            iov[i].iov_len = segs->seg[i].len;
        }
        /* MHD copies the vector itself; the pieces stay ours until it calls back. */
        resp = MHD_create_response_from_iovec(iov, (unsigned)segs->n, api_segments_free, segs);
    }
    free(iov);
    if (resp == NULL)
        api_segments_free(segs);
    return resp;
}

/*
 * Sends res (its body or pieces taken over) with the common headers. Always deinits
 * res. Returns MHD_NO only when not even a response could be made: MHD then drops the
 * connection, the one answer left when memory is gone.
 */
static enum MHD_Result srv_queue(struct srv_server *s, struct MHD_Connection *conn,
                                 struct srv_request *r, struct api_response *res, bool close,
                                 bool preflight)
{
    char *body = res->body;
    size_t len = body != NULL || res->segments != NULL ? res->body_len : 0;
    struct MHD_Response *resp;
    res->body = NULL;
    if (res->segments != NULL) {
        resp = srv_response_of_segments(res->segments);
        res->segments = NULL;
    } else {
        resp = MHD_create_response_from_buffer_with_free_callback(len, body, free);
        if (resp == NULL)
            free(body);
    }
    if (resp == NULL) {
        api_response_deinit(res);
        return MHD_NO;
    }
    close = close || !atomic_load(&s->ready); /* a draining server takes no further requests */
    bool ok = srv_add_api_headers(resp, res, close) &&
              srv_add_common_headers(s, conn, resp, r, preflight);
    enum MHD_Result ret = MHD_NO;
    if (ok) {
        ret = MHD_queue_response(conn, (unsigned)res->status, resp);
        /* The bytes exist already: charged whatever the total, held until completion. */
        srv_budget_charge(r->budget, len);
        r->charged_answer += len;
        r->status = res->status;
        r->bytes = r->is_head ? 0 : len; /* MHD sends no body for HEAD */
        /* Counted now, not on completion: a client holding its answer sees it counted. */
        srv_metrics_observe(r->route, r->status, r->received, r->bytes,
                            srv_ms_since(&r->started_mono) / 1e3);
    }
    MHD_destroy_response(resp); /* drops our reference; MHD keeps its own while sending */
    api_response_deinit(res);
    return ret;
}

/*
 * An answer decided on the first call. With a body on its way it goes out now:
 * MHD then discards the body and closes the connection, which is what a refused
 * upload deserves. Without one it waits for the final call (an instant later),
 * because libmicrohttpd 0.9.75 treats any answer given on the first call as early
 * and closes the connection after it, and keep-alive would be lost for every GET.
 */
static enum MHD_Result srv_answer(struct srv_server *s, struct MHD_Connection *conn,
                                  struct srv_request *r, struct api_response *res, bool close,
                                  bool preflight)
{
    if (r->body_expected)
        return srv_queue(s, conn, r, res, close, preflight);
    r->pending = malloc(sizeof *r->pending);
    if (r->pending == NULL) /* answer now: the connection closes after it, but it is an answer */
        return srv_queue(s, conn, r, res, true, preflight);
    *r->pending = *res; /* the body moves into r: one owner */
    memset(res, 0, sizeof *res);
    r->pending_close = close;
    r->pending_preflight = preflight;
    return MHD_YES;
}

static enum MHD_Result srv_answer_unavailable(struct srv_server *s, struct MHD_Connection *conn,
                                              struct srv_request *r, const char *detail)
{
    struct api_response res = {0};
    api_respond_unavailable(&res, detail);
    return srv_answer(s, conn, r, &res, true, false);
}

/*
 * GET or HEAD /metrics: the counters are the server's, so the server answers, before
 * api/ (other methods go on to api/, which answers 405 with Allow). Accept is not
 * negotiated: the text format is the one representation, as scrapers expect.
 */
static enum MHD_Result srv_metrics_answer(struct srv_server *s, struct MHD_Connection *conn,
                                          struct srv_request *r)
{
    struct api_response res = {.status = 200, .content_type = SRV_METRICS_CONTENT_TYPE};
    struct srv_metrics_gauges g = {
        .in_flight = srv_http_in_flight(s),
        .memory_held = srv_budget_held(&s->budget),
        .memory_budget = s->budget.limit,
        .connections_open = srv_conns_open(s->conns),
    };
    if (!srv_metrics_render(&g, &res.body, &res.body_len))
        return srv_answer_unavailable(s, conn, r, "the server is out of memory");
    return srv_answer(s, conn, r, &res, false, false);
}

static bool srv_is_metrics(const char *url, const char *method)
{
    return strcmp(url, SRV_METRICS_PATH) == 0 && (strcmp(method, MHD_HTTP_METHOD_GET) == 0 ||
                                                  strcmp(method, MHD_HTTP_METHOD_HEAD) == 0);
}

static bool srv_is_page(const char *method)
{
    return strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
}

/* OPTIONS on any path: the CORS preflight, answered here so api/ never sees it. */
static enum MHD_Result srv_preflight(struct srv_server *s, struct MHD_Connection *conn,
                                     struct srv_request *r)
{
    struct api_response res = {.status = 204};
    return srv_answer(s, conn, r, &res, false, true);
}

/* ---- the three calls ---- */

/*
 * No state could be had: answer 503 without it. Nothing is counted or logged for
 * this request, since there is nowhere to keep its id or start time.
 */
static enum MHD_Result srv_first_call_oom(struct MHD_Connection *conn)
{
    struct api_response res = {0};
    api_respond_unavailable(&res, "the server is out of memory");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(res.body_len, res.body, free);
    if (resp == NULL) {
        api_response_deinit(&res);
        return MHD_NO;
    }
    res.body = NULL;
    if (res.content_type != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type);
    for (size_t i = 0; i < res.n_headers; i++) /* Retry-After */
        MHD_add_response_header(resp, res.headers[i].name, res.headers[i].value);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)res.status, resp);
    MHD_destroy_response(resp);
    api_response_deinit(&res);
    return ret;
}

/* Copies at most cap - 1 bytes of s and a NUL: the log's copy of a client string. */
static void srv_copy_cut(char *out, size_t cap, const char *s)
{
    size_t n = strnlen(s, cap - 1);
    memcpy(out, s, n);
    out[n] = '\0';
}

static void srv_request_start(struct srv_request *r, struct MHD_Connection *conn,
                              const char *url, const char *method)
{
    clock_gettime(CLOCK_REALTIME, &r->started_real);
    clock_gettime(CLOCK_MONOTONIC, &r->started_mono);
    srv_reqid_pick(r->id, srv_header(conn, "X-Request-Id"));
    srv_copy_cut(r->method, sizeof r->method, method);
    srv_copy_cut(r->path, sizeof r->path, url);
    r->is_head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    r->route = srv_metrics_route(url);
    r->declared = srv_declared_length(conn);
    r->body_expected = r->declared > 0 ||
                       srv_header(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

static enum MHD_Result srv_first_call(struct srv_server *s, struct MHD_Connection *conn,
                                      const char *url, const char *method, void **req_cls)
{
    /* malloc, not calloc: glibc 2.36 (Debian 12) calloc skips the per-thread cache and locks. */
    struct srv_request *r = malloc(sizeof *r);
    if (r == NULL)
        return srv_first_call_oom(conn);
    memset(r, 0, sizeof *r);
    *req_cls = r;
    r->budget = &s->budget;
    atomic_fetch_add(&s->in_flight, 1);
    api_request_began(); /* ended with in_flight, in srv_on_completed */
    srv_request_start(r, conn, url, method);

    struct api_context ctx = srv_context(s);
    if (!ctx.ready)
        return srv_answer_unavailable(s, conn, r, "the server is shutting down");
    const char *refused = srv_conns_refusal(conn); /* one connection too many: conns.h */
    if (refused != NULL)
        return srv_answer_unavailable(s, conn, r, refused);
    if (strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0)
        return srv_preflight(s, conn, r);
    if (srv_is_metrics(url, method))
        return srv_metrics_answer(s, conn, r);
    if (srv_is_page(method)) {
        /* The playground's files: the server's to serve, as static bytes (server/www.c). */
        struct api_response page = {0};
        if (srv_www_respond(url, &page))
            return srv_answer(s, conn, r, &page, false, false);
    }
    if (!srv_collect_params(conn, r))
        return srv_answer_unavailable(s, conn, r, "the server is out of memory");

    struct api_request q = srv_api_request(conn, r, url, method);
    struct api_response res = {0};
    if (api_precheck(&ctx, &q, r->declared, &res))
        return srv_answer(s, conn, r, &res, false, false);
    api_response_deinit(&res);
    srv_body_init(&r->body, ctx.limits.max_body, r->declared, r->budget);
    return MHD_YES;
}

/* api_context.admit for one request: its working set, on top of the body it holds. */
static bool srv_admit(void *cls, size_t bytes)
{
    struct srv_request *r = cls;
    if (!srv_budget_take(r->budget, bytes, r->body.cap + r->charged_work))
        return false;
    r->charged_work += bytes;
    return true;
}

/*
 * The body is complete (or was given up on). libmicrohttpd 0.9.75 accepts a response
 * only now, not while upload data is being delivered, hence 413 and 503 wait for here.
 */
static enum MHD_Result srv_final_call(struct srv_server *s, struct MHD_Connection *conn,
                                      struct srv_request *r, const char *url, const char *method)
{
    if (r->pending != NULL) {
        struct api_response *res = r->pending;
        r->pending = NULL;
        enum MHD_Result ret = srv_queue(s, conn, r, res, r->pending_close, r->pending_preflight);
        free(res); /* srv_queue has taken its body and deinited it */
        return ret;
    }
    struct api_context ctx = srv_context(s);
    struct api_response res = {0};
    switch (r->body.state) {
    case SRV_BODY_OK: {
        struct api_request q = srv_api_request(conn, r, url, method);
        ctx.admit = srv_admit;
        ctx.admit_cls = r;
        ctx.segments_ok = true; /* sent as they are: srv_response_of_segments */
        api_handle(&ctx, &q, &res);
        srv_budget_give(r->budget, r->charged_work); /* the answer is charged as queued */
        r->charged_work = 0;
        srv_body_free(&r->body); /* api is done with it; do not hold it while sending */
        return srv_queue(s, conn, r, &res, false, false);
    }
    case SRV_BODY_TOO_LARGE:
        api_respond_too_large(&ctx, &res);
        return srv_queue(s, conn, r, &res, true, false);
    case SRV_BODY_NO_MEMORY:
        api_respond_unavailable(&res, "the server is out of memory");
        return srv_queue(s, conn, r, &res, true, false);
    case SRV_BODY_OVER_BUDGET:
        api_respond_over_budget(&res, r->body.wanted);
        return srv_queue(s, conn, r, &res, true, false);
    case SRV_BODY_ABORT:
        break;
    }
    return MHD_NO;
}

enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version,
                               const char *upload_data, size_t *upload_data_size,
                               void **req_cls)
{
    (void)version;
    struct srv_server *s = cls;
    if (*req_cls == NULL)
        return srv_first_call(s, conn, url, method, req_cls);
    struct srv_request *r = *req_cls;
    if (*upload_data_size > 0) {
        r->received += *upload_data_size;
        enum srv_body_state st = srv_body_append(&r->body, upload_data, *upload_data_size);
        *upload_data_size = 0; /* all consumed: stored or drained */
        /* Drained past the bound: close rather than read an endless upload. */
        return st == SRV_BODY_ABORT ? MHD_NO : MHD_YES;
    }
    return srv_final_call(s, conn, r, url, method);
}

void srv_on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                      enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    (void)toe;
    struct srv_server *s = cls;
    struct srv_request *r = *req_cls;
    if (r == NULL)
        return;
    struct srv_access a = {
        .started = r->started_real,
        .id = r->id,
        .method = r->method,
        .path = r->path,
        .status = r->status,
        .bytes = r->bytes,
        .duration_ms = srv_ms_since(&r->started_mono),
    };
    srv_log_access(&a);
    if (r->pending != NULL) { /* unsent when the client left first */
        api_response_deinit(r->pending);
        free(r->pending);
    }
    srv_body_free(&r->body);
    srv_budget_give(r->budget, r->charged_answer); /* MHD has let go of the answer */
    free(r->params);
    free(r);
    *req_cls = NULL;
    srv_heap_note_thread(); /* this worker's arena can be trimmed after a burst */
    atomic_fetch_add(&s->completed, 1);
    atomic_fetch_sub(&s->in_flight, 1);
    api_request_ended();
}
