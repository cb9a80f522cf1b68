/*
 * server/reply.c — a request's answer onto the wire (see reply.h).
 *
 * A response's body (or its pieces, api_response.segments) moves from api_response to
 * libmicrohttpd, which frees it once sent. The answer is charged to the server's budget
 * from when it is queued until the request completes (exchange.c gives it back).
 *
 * Compression is transport, so it is the server's: an answer is coded after api/ wrote
 * it (server/codec/coding.h says which coding; deflate.h how).
 */
#include "server/reply.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/instance.h"
#include "server/codec/coding.h"
#include "server/codec/deflate.h"
#include "server/net/cors.h"
#include "server/net/sent.h"
#include "server/ops/metrics.h"

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
 * the reader of server/net/sent.h, as every large one does. Only answers of hundreds of
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

/* The coding res goes out in, from the request's Accept-Encoding (server/codec/coding.h). */
static enum srv_coding srv_answer_coding(struct MHD_Connection *conn,
                                         const struct api_response *res, size_t len)
{
    if (!srv_codable(res))
        return SRV_CODING_IDENTITY;
    struct srv_accept_coding a =
        srv_accept_coding_parse(srv_header(conn, MHD_HTTP_HEADER_ACCEPT_ENCODING));
    return srv_accept_coding_for(&a, len);
}

/* An answer's bytes as they go out. */
struct srv_outgoing {
    char *body;             /* taken from the api_response */
    size_t len;
    size_t holds;           /* the memory its bytes lie in */
    enum srv_coding coding;
};

/*
 * The coding the answer goes out in. A small answer, or any to HEAD, is coded at once;
 * a large one as it is sent, its pieces never joined (deflate.h): r->coded.
 */
static void srv_reply_code(struct MHD_Connection *conn, struct srv_request *r,
                           struct api_response *res, struct srv_outgoing *o)
{
    o->coding = srv_answer_coding(conn, res, o->len);
    bool whole = o->coding != SRV_CODING_IDENTITY && (o->len < SRV_SENT_TRACK_MIN || r->is_head);
    if (whole && !srv_code_whole(res, &o->body, &o->len, o->coding)) { /* no zlib memory: as is */
        whole = false;
        o->coding = SRV_CODING_IDENTITY;
    }
    r->coded = o->coding != SRV_CODING_IDENTITY && !whole;
}

/*
 * libmicrohttpd's response for the answer, by its coding, size and pieces. Takes the
 * body and the pieces over; NULL, with them freed, without memory.
 */
static struct MHD_Response *srv_reply_response(struct srv_request *r, struct api_response *res,
                                               const struct srv_outgoing *o)
{
    struct api_segments *segs = res->segments;
    res->segments = NULL;
    if (r->coded)
        return srv_deflate_response(o->body, segs, o->len, o->coding, &r->sent);
    /* A cut answer's bytes are known (sent.h); too many pieces for a vector (above). */
    if ((o->len >= SRV_SENT_TRACK_MIN && !r->is_head) || (segs != NULL && segs->n > SRV_IOV_MAX))
        return srv_sent_response(o->body, segs, o->len, &r->sent);
    if (segs != NULL)
        return srv_response_of_segments(segs);
    struct MHD_Response *resp =
        MHD_create_response_from_buffer_with_free_callback(o->len, o->body, free);
    if (resp == NULL)
        free(o->body);
    return resp;
}

/* api/'s headers, the common ones and the coding's. False when one could not be added. */
static bool srv_reply_headers(struct srv_server *s, struct MHD_Connection *conn,
                              const struct srv_request *r, struct MHD_Response *resp,
                              const struct api_response *res, bool close, bool preflight,
                              enum srv_coding coding)
{
    close = close || !atomic_load(&s->ready); /* a draining server takes no further requests */
    bool ok = srv_add_api_headers(resp, res, close) &&
              srv_add_common_headers(s, conn, resp, r, preflight, srv_codable(res));
    if (ok && coding != SRV_CODING_IDENTITY)
        ok = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_ENCODING,
                                     srv_coding_name(coding)) == MHD_YES;
    return ok;
}

/* A queued answer charged to the budget until completion, and counted for /metrics. */
static void srv_reply_account(struct srv_request *r, int status, const struct srv_outgoing *o)
{
    /* The bytes exist already: charged whatever the total, held until completion;
       a compressed one holds zlib's state and its block besides. */
    size_t held = o->holds + (r->coded            ? SRV_DEFLATE_BLOCK + SRV_DEFLATE_STATE
                              : r->sent.tracked ? srv_sent_block(o->len)
                                                : 0);
    srv_budget_charge(r->budget, held);
    r->charged_answer += held;
    r->status = status;
    r->bytes = r->is_head ? 0 : o->len; /* MHD sends no body for HEAD; the coded
                                           length is known on completion */
    /* Counted now, not on completion: a client holding its answer sees it counted. */
    srv_metrics_observe(r->route, r->status, r->received, r->bytes,
                        srv_ms_since(&r->started_mono) / 1e3);
}

enum MHD_Result srv_reply_send(struct srv_server *s, struct MHD_Connection *conn,
                               struct srv_request *r, struct api_response *res, bool close,
                               bool preflight)
{
    api_problem_stamp_instance(res, r->id); /* a problem names its request (instance.h) */
    struct srv_outgoing o = {
        .body = res->body,
        .len = res->body != NULL || res->segments != NULL ? res->body_len : 0,
    };
    res->body = NULL;
    srv_reply_code(conn, r, res, &o);
    /* Pieces may lie in memory larger than the body (a V2 answer's trace, segments.h). */
    o.holds = res->segments != NULL ? api_segments_held(res->segments) : o.len;
    struct MHD_Response *resp = srv_reply_response(r, res, &o);
    enum MHD_Result ret = MHD_NO;
    if (resp != NULL && srv_reply_headers(s, conn, r, resp, res, close, preflight, o.coding)) {
        ret = MHD_queue_response(conn, (unsigned)res->status, resp);
        srv_reply_account(r, res->status, &o);
    }
    if (resp != NULL)
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
enum MHD_Result srv_reply(struct srv_server *s, struct MHD_Connection *conn,
                          struct srv_request *r, struct api_response *res, bool close,
                          bool preflight)
{
    if (r->body_expected)
        return srv_reply_send(s, conn, r, res, close, preflight);
    r->pending = malloc(sizeof *r->pending);
    if (r->pending == NULL) /* answer now: the connection closes after it, but it is an answer */
        return srv_reply_send(s, conn, r, res, true, preflight);
    *r->pending = *res; /* the body moves into r: one owner */
    memset(res, 0, sizeof *res);
    r->pending_close = close;
    r->pending_preflight = preflight;
    return MHD_YES;
}

/* A 503 whose detail is reason (a catalogued sentence: SRV_N). */
enum MHD_Result srv_reply_unavailable(struct srv_server *s, struct MHD_Connection *conn,
                                      struct srv_request *r, const char *reason)
{
    struct api_response res = {0};
    struct api_request q = srv_problem_request(conn, r);
    api_respond_server_reason(&res, &q, API_UNAVAILABLE, reason);
    return srv_reply(s, conn, r, &res, true, false);
}
