/*
 * server/request.c — one HTTP request, from headers to access-log line (see request.h).
 *
 * Ownership: struct srv_request (and its params, body and pending answer) is allocated
 * by srv_on_uri (or, failing that, on the first call), hangs off *req_cls, and is
 * freed only in srv_on_completed. A
 * response's body (or its pieces, api_response.segments) moves from api_response to
 * libmicrohttpd, which frees it once sent.
 *
 * Memory: the body (and a coded body's zlib state), the working set api/ asks for
 * (api_context.admit) and the answer until it is sent (a compressed one with zlib's
 * state) are charged to the server's budget (server/budget.h); each charge has one
 * place that gives it back (srv_body_free, srv_inflate_deinit, srv_final_call,
 * srv_on_completed).
 *
 * Compression is transport, so it is the server's: a coded body is inflated before
 * api/ sees it, and an answer is coded after api/ wrote it (server/coding.h says which
 * coding; deflate.h how).
 *
 * Per request, on the path every POST takes: one allocation for the state (small
 * enough for malloc's per-thread cache: the rare answer that must wait for the final
 * call lives in its own allocation), one for the body, none through printf.
 *
 * What the server answers itself: OPTIONS (the CORS preflight), GET and HEAD
 * /metrics (its own counters, server/metrics.c), GET and HEAD of the playground's
 * files (server/www.c), requests that arrive on an open connection after
 * shutdown began, or on a connection one too many (server/conns.h): 503,
 * Connection: close; and requests whose head breaks RFC 9112 (400, 414, 501, each
 * closing the connection: server/framing.h). Everything else, errors included, is
 * api/'s to word. Every answer is counted for /metrics when it is queued.
 *
 * Not here: routes, content negotiation, JSON: api/ decides all of them.
 */
#include "server/request.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "api/api.h"
#include "api/http/instance.h"
#include "server/body.h"
#include "server/clients.h"
#include "server/coding.h"
#include "server/conns.h"
#include "server/cors.h"
#include "server/deflate.h"
#include "server/framing.h"
#include "server/heap.h"
#include "server/http.h"
#include "server/inflate.h"
#include "server/inflate_problem.h"
#include "server/lane.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/process.h"
#include "server/reqid.h"
#include "server/sent.h"
#include "server/trace.h"
#include "server/words.h"
#include "server/www.h"

#define SRV_LOG_METHOD 32  /* bytes of method kept for the log */
#define SRV_LOG_PATH 480   /* bytes of path kept for the log */

struct srv_request {
    bool started;                      /* the access handler has seen it (srv_first_call) */
    struct srv_target target;          /* the target as sent, read by srv_on_uri */
    struct srv_sent sent;              /* the answer's progress on the wire */
    char id[SRV_REQID_BUF];
    char trace[SRV_TRACEPARENT_BUF];   /* a valid traceparent, or "" (trace.h) */
    struct timespec started_real;      /* for the log's time */
    struct timespec started_mono;      /* for the duration */
    char method[SRV_LOG_METHOD + 1];   /* copies: MHD's strings are not promised to */
    char path[SRV_LOG_PATH + 1];       /*   outlive the request's last handler call */
    bool is_head;
    struct api_param *params;          /* (n_params) owned array; strings borrowed from MHD */
    size_t n_params;
    long long declared;                /* Content-Length, or -1 */
    struct srv_body body;
    struct srv_inflate *inflate;       /* owned; NULL unless the body is gzip or deflate */
    bool body_expected;                /* Content-Length > 0 or Transfer-Encoding */
    bool coded;                        /* the answer is compressed as it is sent (deflate.h) */
    struct api_response *pending;      /* decided on the first call, sent on the final; owned */
    bool pending_close, pending_preflight;
    bool lane_gone;                    /* its client left while it waited in the lane */
    int status;                        /* sent status, 0 until a response is queued */
    unsigned long long bytes;          /* body bytes of the answer queued */
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
    if (r->params != NULL) /* collected already, for a problem's ?lang */
        return true;
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
        .inference_header_length = srv_header(conn, "Inference-Header-Content-Length"),
        .accept_language = srv_header(conn, "Accept-Language"),
        .body = r->body.data,
        .body_len = r->body.len,
    };
    return q;
}

/*
 * The request as api/ needs it for one of the server's own problems, which speak the
 * language it asks for (?lang or Accept-Language): the query is collected if it can be;
 * without memory for it, Accept-Language alone decides.
 */
static struct api_request srv_problem_request(struct MHD_Connection *conn,
                                              struct srv_request *r)
{
    (void)srv_collect_params(conn, r);
    return srv_api_request(conn, r, r->path, r->method);
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
                                   bool preflight, bool codable)
{
    bool ok = MHD_add_response_header(resp, "X-Request-Id", r->id) == MHD_YES;
    if (r->trace[0] != '\0')
        ok = ok && MHD_add_response_header(resp, "traceparent", r->trace) == MHD_YES;
    struct srv_cors c = srv_cors_decide(s->cfg, srv_header(conn, "Origin"));
    /* Caches learn what the answer depended on: the origin, and Accept-Encoding
       whether or not this one was compressed (a small one is not); api/ may have said
       what its words depended on (Accept-Language): one Vary says all, however long. */
    const char *api_vary = MHD_get_response_header(resp, "Vary");
    size_t need = srv_cors_vary(NULL, 0, &c, codable, api_vary);
    if (need > 0) {
        char *vary = malloc(need + 1);
        if (vary == NULL)
            return false;
        srv_cors_vary(vary, need + 1, &c, codable, api_vary);
        /* api_vary is the header's own text: compared, then freed with it */
        if (api_vary != NULL)
            ok = ok && MHD_del_response_header(resp, "Vary", api_vary) == MHD_YES;
        ok = ok && MHD_add_response_header(resp, "Vary", vary) == MHD_YES;
        free(vary);
    }
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
                                           s->cfg->cors_headers) == MHD_YES;
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
 * libmicrohttpd 0.9.75 copies a vectored response's list of pieces into the
 * connection's memory pool (SRV_CONNECTION_MEMORY, shared with the request's headers)
 * when it starts sending. A list that does not fit closes the connection "out of
 * memory" with the status line already counted as sent, and then aborts the whole
 * process on a mutex it has unlocked twice. So a vectored response never has more
 * than SRV_IOV_MAX pieces (16 bytes each in the pool): an answer in more goes through
 * the reader of server/sent.h, as every large one does. Only answers of hundreds of
 * megabytes have that many pieces.
 */
#define SRV_IOV_MAX 1024u

/*
 * An answer in pieces (api_response.segments) as one vectored response: MHD writes
 * the pieces with sendmsg as they lie, and frees them with the response. Takes the
 * pieces over; NULL (pieces freed) when not even the response could be made.
 */
static struct MHD_Response *srv_response_of_segments(struct api_segments *segs)
{
    struct MHD_IoVec *iov = malloc(segs->n * sizeof *iov);
    struct MHD_Response *resp = NULL;
    if (iov != NULL) {
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
 * Whether an answer may be compressed at all: it has a body (204 and 304 have none),
 * and api/ has not coded it itself. Every such answer carries Vary: Accept-Encoding.
 */
static bool srv_codable(const struct api_response *res)
{
    if (res->status == 204 || res->status == 304)
        return false;
    for (size_t i = 0; i < res->n_headers && i < API_MAX_HEADERS; i++)
        if (strcmp(res->headers[i].name, "Content-Encoding") == 0)
            return false;
    return true;
}

/*
 * A small answer, or any answer to HEAD, coded at once into a buffer of its own (see
 * srv_deflate_whole): *body (or res's pieces) is replaced and freed. False, with
 * nothing changed, when zlib found no memory: the answer then goes as is.
 */
static bool srv_code_whole(struct api_response *res, char **body, size_t *len,
                           enum srv_coding coding)
{
    char *coded;
    size_t coded_len;
    if (!srv_deflate_whole(*body, res->segments, *len, coding, &coded, &coded_len))
        return false;
    free(*body);
    api_segments_free(res->segments);
    res->segments = NULL;
    *body = coded;
    *len = coded_len;
    return true;
}

/* The coding res goes out in, from the request's Accept-Encoding (server/coding.h). */
static enum srv_coding srv_answer_coding(struct MHD_Connection *conn,
                                         const struct api_response *res, size_t len)
{
    if (!srv_codable(res))
        return SRV_CODING_IDENTITY;
    struct srv_accept_coding a =
        srv_accept_coding_parse(srv_header(conn, MHD_HTTP_HEADER_ACCEPT_ENCODING));
    return srv_accept_coding_for(&a, len);
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
    api_problem_stamp_instance(res, r->id); /* a problem names its request (instance.h) */
    char *body = res->body;
    size_t len = body != NULL || res->segments != NULL ? res->body_len : 0;
    struct MHD_Response *resp;
    res->body = NULL;
    enum srv_coding coding = srv_answer_coding(conn, res, len);
    bool whole = coding != SRV_CODING_IDENTITY && (len < SRV_SENT_TRACK_MIN || r->is_head);
    if (whole && !srv_code_whole(res, &body, &len, coding)) { /* no memory for zlib: as is */
        whole = false;
        coding = SRV_CODING_IDENTITY;
    }
    /* Pieces may lie in memory larger than the body (a V2 answer's trace, segments.h). */
    size_t holds = res->segments != NULL ? api_segments_held(res->segments) : len;
    bool many_pieces = res->segments != NULL && res->segments->n > SRV_IOV_MAX;
    /* A large answer is compressed as it is sent, its pieces never joined (deflate.h). */
    r->coded = coding != SRV_CODING_IDENTITY && !whole;
    if (r->coded) {
        resp = srv_deflate_response(body, res->segments, len, coding, &r->sent);
        res->segments = NULL;
    } else if ((len >= SRV_SENT_TRACK_MIN && !r->is_head) || many_pieces) {
        /* A cut answer's bytes are known (sent.h); too many pieces for a vector (above). */
        resp = srv_sent_response(body, res->segments, len, &r->sent);
        res->segments = NULL;
    } else if (res->segments != NULL) {
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
              srv_add_common_headers(s, conn, resp, r, preflight, srv_codable(res));
    if (ok && coding != SRV_CODING_IDENTITY)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
                                     srv_coding_name(coding)) == MHD_YES;
    enum MHD_Result ret = MHD_NO;
    if (ok) {
        ret = MHD_queue_response(conn, (unsigned)res->status, resp);
        /* The bytes exist already: charged whatever the total, held until completion;
           a compressed one holds zlib's state and its block besides. */
        size_t held = holds + (r->coded            ? SRV_DEFLATE_BLOCK + SRV_DEFLATE_STATE
                               : r->sent.tracked ? srv_sent_block(len)
                                                 : 0);
        srv_budget_charge(r->budget, held);
        r->charged_answer += held;
        r->status = res->status;
        r->bytes = r->is_head ? 0 : len; /* MHD sends no body for HEAD; the coded
                                            length is known on completion */
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

/* A 503 whose detail is reason (a catalogued sentence: SRV_N). */
static enum MHD_Result srv_answer_unavailable(struct srv_server *s, struct MHD_Connection *conn,
                                              struct srv_request *r, const char *reason)
{
    struct api_response res = {0};
    struct api_request q = srv_problem_request(conn, r);
    api_respond_server_reason(&res, &q, API_UNAVAILABLE, reason);
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
    struct srv_process_stats proc;
    struct srv_metrics_gauges g = {
        .in_flight = srv_http_in_flight(s),
        .memory_held = srv_budget_held(&s->budget),
        .memory_budget = s->budget.limit,
        .connections_open = srv_conns_open(s->conns),
        .process = srv_process_read("/proc", &proc) ? &proc : NULL,
    };
    srv_lane_counts(&s->lane, &g.lane_queued, &g.lane_running);
    if (!srv_metrics_render(&g, &res.body, &res.body_len))
        return srv_answer_unavailable(s, conn, r, SRV_N("the server is out of memory"));
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

/* ---- malformed requests ---- */

/* malloc, not calloc: glibc 2.36 (Debian 12) calloc skips the per-thread cache and locks. */
static struct srv_request *srv_request_alloc(void)
{
    struct srv_request *r = malloc(sizeof *r);
    if (r != NULL)
        memset(r, 0, sizeof *r);
    return r;
}

static enum MHD_Result srv_framing_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                         size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    struct srv_field field = {key, key_size, value != NULL ? value : "", value_size};
    srv_framing_feed(cls, &field);
    return MHD_YES;
}

/*
 * RFC 9112's rules over the head libmicrohttpd has read (server/framing.h): true, with
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
    *ret = srv_answer(s, conn, r, &res, true, false);
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
        *ret = srv_answer(s, conn, r, &res, true, false);
        return false;
    }
    long long declared = r->declared;
    if (cc.coding != SRV_CODING_IDENTITY) {
        r->inflate = malloc(sizeof *r->inflate);
        if (r->inflate == NULL) {
            *ret = srv_answer_unavailable(s, conn, r, SRV_N("the server is out of memory"));
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
        return srv_answer_unavailable(s, conn, r, SRV_N("the server is shutting down"));
    const char *too_many = srv_conns_refusal(conn); /* one connection too many: conns.h */
    if (too_many != NULL)
        return srv_answer_unavailable(s, conn, r, too_many);
    if (strcmp(method, MHD_HTTP_METHOD_OPTIONS) == 0)
        return srv_preflight(s, conn, r);
    if (srv_is_metrics(url, method))
        return srv_metrics_answer(s, conn, r);
    if (srv_is_page(method)) {
        /* The playground's files: the server's to serve, as static bytes (server/www.c). */
        struct api_response page = {0};
        struct api_request q = srv_problem_request(conn, r);
        if (srv_www_respond(url, &q, &page))
            return srv_answer(s, conn, r, &page, false, false);
    }
    if (!srv_collect_params(conn, r))
        return srv_answer_unavailable(s, conn, r, SRV_N("the server is out of memory"));

    struct api_request q = srv_api_request(conn, r, url, method);
    struct api_response res = {0};
    if (api_precheck(&ctx, &q, r->declared, &res))
        return srv_answer(s, conn, r, &res, false, false);
    api_response_deinit(&res);
    enum MHD_Result refused_coding = MHD_YES;
    if (!srv_body_setup(s, conn, r, ctx.limits.max_body, &refused_coding))
        return refused_coding;
    return MHD_YES;
}

/* api_context.admit for one request: its working set, on top of the body it holds. */
static enum api_admission srv_admit(void *cls, size_t bytes)
{
    struct srv_request *r = cls;
    if (!srv_budget_take(r->budget, bytes, r->body.cap + r->charged_work))
        return API_ADMIT_NO;
    r->charged_work += bytes;
    return API_ADMIT_YES;
}

/*
 * Which requests leave the worker for the lane (server/lane.h): a working set past
 * SRV_LANE_WORK_MIN (api/'s estimate, known once the request is parsed), or a body
 * past SRV_LANE_BODY_MIN, which goes without trying here, so that its parse does not
 * hold the worker either (a small body is parsed twice when it asks for large work).
 * Below both, a request costs about as much as handing it over would.
 */
#define SRV_LANE_WORK_MIN ((size_t)8 << 20)
#define SRV_LANE_BODY_MIN ((size_t)256 << 10)

/* api_context.admit on a worker: large work goes to the lane. */
static enum api_admission srv_admit_on_worker(void *cls, size_t bytes)
{
    return bytes > SRV_LANE_WORK_MIN ? API_ADMIT_ELSEWHERE : srv_admit(cls, bytes);
}

/* api_handle's answer, and the request's working set and body given back. */
static void srv_compute(struct srv_request *r, struct api_context *ctx,
                        const struct api_request *q, struct api_response *res)
{
    ctx->admit_cls = r;
    ctx->segments_ok = true; /* sent as they are: srv_response_of_segments */
    api_handle(ctx, q, res);
    srv_budget_give(r->budget, r->charged_work); /* the answer is charged as queued */
    r->charged_work = 0;
    if (!res->deferred)
        srv_body_free(&r->body); /* api is done with it; do not hold it while sending */
}

/*
 * A request on its way through the lane. The request (and its connection, suspended)
 * wait for it; the answer goes to r->pending, allocated beforehand so that the job
 * cannot fail, and is sent by the final call that resuming brings.
 */
struct srv_deferred {
    struct srv_lane_job job; /* first: the lane hands this pointer back */
    struct MHD_Connection *conn;
    struct srv_request *r;
    struct api_request q;    /* its strings are MHD's, kept while the connection lives */
    struct api_context ctx;
};

/* A deferred request answered 503 without being computed: reason says why. */
static void srv_refuse_deferred(struct srv_deferred *d, const char *reason, bool close)
{
    struct srv_request *r = d->r;
    api_respond_server_reason(r->pending, &d->q, API_UNAVAILABLE, reason);
    r->pending_close = close;
    srv_body_free(&r->body);
}

static void srv_run_deferred(struct srv_lane_job *job, enum srv_lane_how how)
{
    struct srv_deferred *d = (struct srv_deferred *)job;
    struct MHD_Connection *conn = d->conn;
    struct srv_request *r = d->r;
    switch (how) {
    case SRV_LANE_RUN:
        d->ctx.admit = srv_admit;
        srv_compute(r, &d->ctx, &d->q, r->pending);
        break;
    case SRV_LANE_STOPPING:
        srv_refuse_deferred(d, SRV_N("the server is shutting down"), true);
        break;
    case SRV_LANE_WAITED:
        srv_refuse_deferred(d, SRV_N("the request waited longer than --lane-wait for a thread "
                                     "to compute it, behind other large requests: retry after "
                                     "the Retry-After seconds, or on another replica"), false);
        break;
    case SRV_LANE_GONE: /* nobody to answer: the final call closes the connection */
        r->lane_gone = true;
        srv_body_free(&r->body);
        break;
    }
    free(d);
    MHD_resume_connection(conn); /* r is the worker's again from here */
}

/* The 503's detail for a push the lane refused. */
static const char *srv_lane_refusal(enum srv_lane_push why)
{
    switch (why) {
    case SRV_LANE_FULL:
        return SRV_N("as many large requests wait for a thread as the server queues "
                     "(--lane-queue): retry after the Retry-After seconds, or on another replica");
    case SRV_LANE_CLIENT_FULL:
        return SRV_N("this client has half of the queue for large requests waiting already "
                     "(--lane-queue): send the next one when one of them is answered");
    default:
        return SRV_N("the server is shutting down");
    }
}

/* What the lane watches of a connection: its client (whose turn) and its socket. */
static void srv_deferred_identify(struct srv_deferred *d, struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const union MHD_ConnectionInfo *fd =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    srv_clients_key(addr != NULL ? addr->client_addr : NULL, d->job.client);
    d->job.fd = fd != NULL ? fd->connect_fd : -1;
}

/*
 * Suspends conn and queues its request on the lane; a push the lane refuses (full, or
 * stopping) is answered 503 at once instead. False, with nothing changed, when there
 * was no memory for it.
 */
static bool srv_defer(struct srv_server *s, struct MHD_Connection *conn, struct srv_request *r,
                      const struct api_request *q, const struct api_context *ctx)
{
    struct srv_deferred *d = malloc(sizeof *d);
    struct api_response *answer = calloc(1, sizeof *answer);
    if (d == NULL || answer == NULL) {
        free(d);
        free(answer);
        return false;
    }
    *d = (struct srv_deferred){.job.run = srv_run_deferred, .conn = conn, .r = r, .q = *q,
                               .ctx = *ctx};
    srv_deferred_identify(d, conn);
    r->pending = answer;
    r->pending_close = r->pending_preflight = false;
    /* Suspended first: a lane thread may resume it the moment it is queued. */
    MHD_suspend_connection(conn);
    enum srv_lane_push pushed = srv_lane_push(&s->lane, &d->job);
    if (pushed != SRV_LANE_QUEUED) {
        srv_refuse_deferred(d, srv_lane_refusal(pushed), pushed == SRV_LANE_STOPPED);
        free(d);
        MHD_resume_connection(conn); /* the final call sends the 503 */
    }
    return true;
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
        enum MHD_Result ret = srv_queue(s, conn, r, res, r->pending_close, r->pending_preflight);
        free(res); /* srv_queue has taken its body and deinited it */
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
        if (r->body.len <= SRV_LANE_BODY_MIN) {
            ctx.admit = srv_admit_on_worker;
            srv_compute(r, &ctx, &q, &res);
            if (!res.deferred)
                return srv_queue(s, conn, r, &res, false, false);
        }
        if (srv_defer(s, conn, r, &q, &ctx))
            return MHD_YES;
        ctx.admit = srv_admit; /* no memory to hand it over: here, then */
        srv_compute(r, &ctx, &q, &res);
        return srv_queue(s, conn, r, &res, false, false);
    }
    case SRV_BODY_TOO_LARGE: {
        struct api_request q = srv_api_request(conn, r, url, method);
        api_respond_too_large_for(&ctx, &q, &res);
        return srv_queue(s, conn, r, &res, true, false);
    }
    case SRV_BODY_NO_MEMORY: {
        struct api_request q = srv_api_request(conn, r, url, method);
        api_respond_server_reason(&res, &q, API_UNAVAILABLE,
                                  SRV_N("the server is out of memory"));
        return srv_queue(s, conn, r, &res, true, false);
    }
    case SRV_BODY_OVER_BUDGET: {
        struct api_request q = srv_api_request(conn, r, url, method);
        api_respond_server_over_budget(&res, &q, r->body.wanted);
        return srv_queue(s, conn, r, &res, true, false);
    }
    case SRV_BODY_CORRUPT: { /* only a coded body is: r->inflate says why */
        struct api_request q = srv_api_request(conn, r, url, method);
        srv_inflate_respond(r->inflate, &q, &res);
        return srv_queue(s, conn, r, &res, true, false);
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
     * hold every pair (server/framing.h). uri lies in its read buffer, and the parser
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
