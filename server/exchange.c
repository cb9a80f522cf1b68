/*
 * server/exchange.c — one HTTP request, from headers to access-log line (see exchange.h):
 * libmicrohttpd's calls, the checks of the first, the body as it arrives, and the
 * record's end. Its record is server/record.h's; its answers go out through reply.c,
 * and a complete body is computed by compute.c.
 *
 * Memory: the body (and a coded body's zlib state), the working set api/ asks for
 * (api_context.admit, compute.c) and the answer until it is sent (reply.c) are charged
 * to the server's budget (server/host/budget.h); each charge has one place that gives
 * it back (srv_body_free, srv_inflate_deinit, compute.c's srv_compute,
 * srv_on_completed).
 *
 * Compression is transport, so it is the server's: a coded body is inflated before
 * api/ sees it (server/codec/inflate.h), and an answer coded after (reply.c).
 *
 * Per request, on the path every POST takes: one allocation for the state (small
 * enough for malloc's per-thread cache: the rare answer that must wait for the final
 * call lives in its own allocation), one for the body, none through printf.
 *
 * What the server answers itself: OPTIONS (the CORS preflight), GET and HEAD
 * /metrics (its own counters, server/ops/metrics.c), GET and HEAD of the playground's
 * files (server/www.c), requests that arrive on an open connection after
 * shutdown began, or on a connection one too many (server/net/conns.h): 503,
 * Connection: close; and requests whose head breaks RFC 9112 (400, 414, 501, each
 * closing the connection: server/net/framing.h). Everything else, errors included, is
 * api/'s to word. Every answer is counted for /metrics when it is queued.
 *
 * Not here: routes, content negotiation, JSON: api/ decides all of them.
 */
#include "server/exchange.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/api.h"
#include "server/codec/coding.h"
#include "server/codec/inflate.h"
#include "server/codec/inflate_problem.h"
#include "server/compute.h"
#include "server/host/heap.h"
#include "server/net/conns.h"
#include "server/net/framing.h"
#include "server/net/reqid.h"
#include "server/net/trace.h"
#include "server/net/upload.h"
#include "server/ops/log.h"
#include "server/ops/metrics.h"
#include "server/ops/words.h"
#include "server/record.h"
#include "server/reply.h"
#include "server/state.h"
#include "server/www.h"

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

/*
 * GET or HEAD /metrics: the counters are the server's, so the server answers, before
 * api/ (other methods go on to api/, which answers 405 with Allow). Accept is not
 * negotiated: the text format is the one representation, as scrapers expect.
 */
static enum MHD_Result srv_metrics_answer(struct srv_server *s, struct MHD_Connection *conn,
                                          struct srv_request *r)
{
    struct api_response res = {.status = 200, .content_type = SRV_METRICS_CONTENT_TYPE};
    if (!srv_state_metrics(s, &res.body, &res.body_len))
        return srv_reply_unavailable(s, conn, r, SRV_N("the server is out of memory"));
    return srv_reply(s, conn, r, &res, false, false);
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
    return srv_reply(s, conn, r, &res, false, true);
}

/* ---- malformed requests ---- */

static enum MHD_Result srv_framing_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                         size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct srv_field field = {key, key_size, value != NULL ? value : "", value_size};
    srv_framing_feed(cls, &field);
    return MHD_YES;
}

/*
 * RFC 9112's rules over the head libmicrohttpd has read (server/net/framing.h): true, with
 * the answer queued or pending in *ret, when the request is refused. Every refusal
 * closes the connection: what follows the head on it cannot be trusted to be framed
 * as the client meant, so no second request is read from it.
 */
static bool srv_refuse_malformed(struct srv_server *s, struct MHD_Connection *conn,
                                 struct srv_request *r, const char *version,
                                 enum MHD_Result *ret)
{
    struct srv_framing f;
    srv_framing_init(&f);
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND, srv_framing_field, &f);
    struct srv_framing_result v = srv_framing_finish(&f, version);
    if (v.verdict == SRV_FRAMING_OK && !r->target.has_nul && !r->target.query_too_long)
        return false;
    struct api_response res = {0};
    struct api_request q = srv_problem_request(conn, r);
    if (v.verdict == SRV_FRAMING_BAD_REQUEST)
        api_respond_server_reason(&res, &q, API_BAD_REQUEST, v.reason);
    else if (v.verdict == SRV_FRAMING_NOT_IMPLEMENTED)
        api_respond_server_reason(&res, &q, API_NOT_IMPLEMENTED, v.reason);
    else if (r->target.has_nul)
        api_respond_server_reason(&res, &q, API_BAD_REQUEST,
                                  SRV_N("the target has a NUL byte (%00), which would cut the "
                                        "path or a parameter short: leave it out"));
    else
        api_respond_server_problem(&res, &q, API_URI_TOO_LONG, "the query has more than %d "
                                   "parameters or %d bytes: send the data in a POST body",
                                   SRV_TARGET_MAX_PARAMS, SRV_TARGET_MAX_QUERY);
    *ret = srv_reply(s, conn, r, &res, true, false);
    return true;
}

/* ---- the three calls ---- */

/*
 * No state could be had: answer 503 without it. Nothing is counted or logged for
 * this request, since there is nowhere to keep its id or start time.
 */
static enum MHD_Result srv_first_call_oom(struct MHD_Connection *conn)
{
    struct api_response res = {0};
    api_respond_server_reason(&res, NULL, API_UNAVAILABLE, SRV_N("the server is out of memory"));
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(res.body_len, res.body, free);
    if (resp == NULL) {
        api_response_deinit(&res);
        return MHD_NO;
    }
    res.body = NULL;
    if (res.content_type != NULL)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, res.content_type);
    for (size_t i = 0; i < res.n_headers; i++) /* Retry-After, Content-Language */
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
    srv_traceparent_pick(r->trace, srv_header(conn, "traceparent"));
    srv_copy_cut(r->method, sizeof r->method, method);
    /* A NUL cut the decoded path short: log (and count) the target as sent, from srv_on_uri. */
    if (!r->target.has_nul)
        srv_copy_cut(r->path, sizeof r->path, url);
    r->is_head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    r->route = srv_metrics_route(r->path);
    r->declared = srv_declared_length(conn);
    r->body_expected = r->declared > 0 ||
                       srv_header(conn, MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
}

static enum MHD_Result srv_content_coding_field(void *cls, enum MHD_ValueKind kind,
                                                const char *key, const char *value)
{
    (void)kind;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_ENCODING) == 0)
        srv_content_coding_feed(cls, value);
    return MHD_YES;
}

/*
 * The body's Content-Encoding (every such field, in order): false, with the answer
 * (415, or 503) queued or pending in *ret, when it cannot be read; else the body is
 * set up to be stored as it arrives, through an inflater when it is coded.
 */
static bool srv_body_setup(struct srv_server *s, struct MHD_Connection *conn,
                           struct srv_request *r, size_t max_body, enum MHD_Result *ret)
{
    struct srv_content_coding cc;
    srv_content_coding_init(&cc);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, srv_content_coding_field, &cc);
    if (!srv_content_coding_ok(&cc)) {
        struct api_response res = {0};
        struct api_request q = srv_problem_request(conn, r);
        if (cc.unknown)
            api_respond_server_problem(&res, &q, API_UNSUPPORTED_MEDIA_TYPE, "Content-Encoding "
                                       "%s is not a coding attnd can undo: send the body as "
                                       "is, or as gzip or deflate", cc.name);
        else
            api_respond_server_problem(&res, &q, API_UNSUPPORTED_MEDIA_TYPE, "Content-Encoding "
                                       "names more than one coding (%s the second): send the "
                                       "body coded once, as gzip or deflate, or as is", cc.name);
        *ret = srv_reply(s, conn, r, &res, true, false);
        return false;
    }
    long long declared = r->declared;
    if (cc.coding != SRV_CODING_IDENTITY) {
        r->inflate = malloc(sizeof *r->inflate);
        if (r->inflate == NULL) {
            *ret = srv_reply_unavailable(s, conn, r, SRV_N("the server is out of memory"));
            return false;
        }
        srv_inflate_init(r->inflate, cc.coding, r->budget);
        declared = -1; /* it counts coded bytes: the inflated body may grow to the limit */
    }
    srv_body_init(&r->body, max_body, declared, r->budget);
    return true;
}

static enum MHD_Result srv_first_call(struct srv_server *s, struct MHD_Connection *conn,
                                      const char *url, const char *method, const char *version,
                                      void **req_cls)
{
    /* Made by srv_on_uri, unless it found no memory (or the daemon has no URI callback). */
    struct srv_request *r = *req_cls != NULL ? *req_cls : srv_request_alloc();
    if (r == NULL)
        return srv_first_call_oom(conn);
    *req_cls = r;
    r->started = true;
    r->budget = &s->budget;
    atomic_fetch_add(&s->in_flight, 1);
    api_request_began(); /* ended with in_flight, in srv_on_completed */
    srv_request_start(r, conn, url, method);
    enum MHD_Result refused;
    if (srv_refuse_malformed(s, conn, r, version, &refused))
        return refused;

    struct api_context ctx = srv_context(s);
    if (!ctx.ready)
        return srv_reply_unavailable(s, conn, r, SRV_N("the server is shutting down"));
    const char *too_many = srv_conns_refusal(conn); /* one connection too many: conns.h */
    if (too_many != NULL)
        return srv_reply_unavailable(s, conn, r, too_many);
    if (strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0)
        return srv_preflight(s, conn, r);
    if (srv_is_metrics(url, method))
        return srv_metrics_answer(s, conn, r);
    if (srv_is_page(method)) {
        /* The playground's files: the server's to serve, as static bytes (server/www.c). */
        struct api_response page = {0};
        struct api_request q = srv_problem_request(conn, r);
        if (srv_www_respond(url, &q, &page))
            return srv_reply(s, conn, r, &page, false, false);
    }
    if (!srv_collect_params(conn, r))
        return srv_reply_unavailable(s, conn, r, SRV_N("the server is out of memory"));

    struct api_request q = srv_api_request(conn, r, url, method);
    struct api_response res = {0};
    if (api_precheck(&ctx, &q, r->declared, &res))
        return srv_reply(s, conn, r, &res, false, false);
    api_response_deinit(&res);
    enum MHD_Result refused_coding = MHD_YES;
    if (!srv_body_setup(s, conn, r, ctx.limits.max_body, &refused_coding))
        return refused_coding;
    return MHD_YES;
}

/*
 * The body is complete (or was given up on). libmicrohttpd 0.9.75 accepts a response
 * only now, not while upload data is being delivered, hence 413 and 503 wait for here.
 */
static enum MHD_Result srv_final_call(struct srv_server *s, struct MHD_Connection *conn,
                                      struct srv_request *r, const char *url, const char *method)
{
    if (r->lane_gone)
        return MHD_NO; /* its client left while it waited: close, nothing to send */
    if (r->pending != NULL) {
        struct api_response *res = r->pending;
        r->pending = NULL;
        enum MHD_Result ret = srv_reply_send(s, conn, r, res, r->pending_close, r->pending_preflight);
        free(res); /* srv_reply_send has taken its body and deinited it */
        return ret;
    }
    struct api_context ctx = srv_context(s);
    struct api_response res = {0};
    if (r->inflate != NULL) {
        if (r->body.state == SRV_BODY_OK && !srv_inflate_finish(r->inflate))
            srv_body_refuse(&r->body, SRV_BODY_CORRUPT, 0);
        srv_inflate_deinit(r->inflate); /* its window is of no further use */
    }
    switch (r->body.state) {
    case SRV_BODY_OK: {
        struct api_request q = srv_api_request(conn, r, url, method);
        return srv_compute_answer(s, conn, r, &q, &ctx);
    }
    case SRV_BODY_TOO_LARGE: {
        struct api_request q = srv_api_request(conn, r, url, method);
        api_respond_too_large_for(&ctx, &q, &res);
        return srv_reply_send(s, conn, r, &res, true, false);
    }
    case SRV_BODY_NO_MEMORY: {
        struct api_request q = srv_api_request(conn, r, url, method);
        api_respond_server_reason(&res, &q, API_UNAVAILABLE,
                                  SRV_N("the server is out of memory"));
        return srv_reply_send(s, conn, r, &res, true, false);
    }
    case SRV_BODY_OVER_BUDGET: {
        struct api_request q = srv_api_request(conn, r, url, method);
        api_respond_server_over_budget(&res, &q, r->body.wanted);
        return srv_reply_send(s, conn, r, &res, true, false);
    }
    case SRV_BODY_CORRUPT: { /* only a coded body is: r->inflate says why */
        struct api_request q = srv_api_request(conn, r, url, method);
        srv_inflate_respond(r->inflate, &q, &res);
        return srv_reply_send(s, conn, r, &res, true, false);
    }
    case SRV_BODY_ABORT:
        break;
    }
    return MHD_NO;
}

void *srv_on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void)cls;
    (void)conn;
    struct srv_request *r = srv_request_alloc();
    if (r == NULL)
        return NULL; /* srv_first_call tries again, and answers 503 if it cannot either */
    srv_target_read(uri, &r->target);
    if (r->target.has_nul) { /* the log's path, as sent: MHD's decoded one ends at the NUL */
        size_t n = strcspn(uri, "?");
        srv_copy_cut(r->path, n + 1 < sizeof r->path ? n + 1 : sizeof r->path, uri);
    }
    /*
     * libmicrohttpd 0.9.75 parses the query right after this call, into the
     * connection's pool, and drops the connection without a word when the pool cannot
     * hold every pair (server/net/framing.h). uri lies in its read buffer, and the parser
     * stops at the first NUL: ending the string after the '?' leaves it nothing to
     * parse, and srv_refuse_malformed answers 414.
     */
    if (r->target.query_too_long)
        ((char *)uri)[r->target.query_offset] = '\0';
    return r;
}

bool srv_request_first_call(const void *req_cls)
{
    const struct srv_request *r = req_cls;
    return r == NULL || !r->started;
}

enum MHD_Result srv_on_request(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version,
                               const char *upload_data, size_t *upload_data_size,
                               void **req_cls)
{
    struct srv_server *s = cls;
    struct srv_request *r = *req_cls;
    url = srv_target_path(url); /* an absolute-form target is routed by its path */
    if (srv_request_first_call(r))
        return srv_first_call(s, conn, url, method, version, req_cls);
    if (*upload_data_size > 0) {
        r->received += *upload_data_size;
        enum srv_body_state st =
            r->inflate != NULL
                ? srv_inflate_feed(r->inflate, &r->body, upload_data, *upload_data_size)
                : srv_body_append(&r->body, upload_data, *upload_data_size);
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
    struct srv_server *s = cls;
    struct srv_request *r = *req_cls;
    if (r == NULL)
        return;
    if (!r->started) { /* seen by srv_on_uri only: libmicrohttpd refused the head itself */
        free(r);
        *req_cls = NULL;
        return;
    }
    /* An answer made but never queued: its client left first (a large request computed
       in the lane for nobody). Counted and logged as the answer it was, cut. */
    bool unsent = r->status == 0 && r->pending != NULL && r->pending->status != 0;
    if (unsent) {
        r->status = r->pending->status;
        srv_metrics_observe(r->route, r->status, r->received, 0,
                            srv_ms_since(&r->started_mono) / 1e3);
    }
    /* An answer queued but not all written (timeout, client gone): not delivered; and a
       large request whose client left while it waited in the lane. */
    bool cut = (r->status != 0 && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) || unsent ||
               r->lane_gone;
    struct srv_access a = {
        .started = r->started_real,
        .id = r->id,
        .trace = r->trace,
        .method = r->method,
        .path = r->path,
        .status = r->status,
        .bytes = r->coded && !r->is_head ? r->sent.at_least /* coded: all asked for, or cut */
                 : !cut                  ? r->bytes
                 : r->sent.tracked       ? r->sent.at_least
                                         : 0,
        .cut = cut,
        .duration_ms = srv_ms_since(&r->started_mono),
    };
    /* Counted before it is logged: whoever reads the line and then /metrics sees it. */
    if (cut)
        srv_metrics_observe_cut(r->route, r->status);
    srv_log_access(&a);
    if (r->pending != NULL) { /* unsent when the client left first */
        api_response_deinit(r->pending);
        free(r->pending);
    }
    srv_body_free(&r->body);
    if (r->inflate != NULL)
        srv_inflate_deinit(r->inflate);
    free(r->inflate);
    srv_budget_give(r->budget, r->charged_answer); /* MHD has let go of the answer */
    free(r->params);
    free(r);
    *req_cls = NULL;
    srv_heap_note_thread(); /* this worker's arena can be trimmed after a burst */
    atomic_fetch_add(&s->completed, 1);
    atomic_fetch_sub(&s->in_flight, 1);
    api_request_ended();
}
