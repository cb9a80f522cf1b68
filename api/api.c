/*
 * api/api.c — the router: a route table maps (method, path) to a handler in
 * endpoints/, after the checks every route shares (method, Accept, Content-Type,
 * the declared body size). Also the process-wide entry points of api.h.
 *
 * A route table, not a chain of strcmp: each route names its path, the methods
 * it takes, whether it reads a body, what it can answer with, and its handler.
 * api_precheck and api_handle share the same checks so a request is refused the
 * same way whether the server asks before the body arrives or after.
 */
#include "api/api.h"

#include <stdio.h>
#include <string.h>

#include "api/endpoints/handlers.h"
#include "api/endpoints/shapes.h"
#include "api/http/lang.h"
#include "api/http/lang_choice.h"
#include "api/http/negotiate.h"
#include "api/http/problem.h"
#include "api/json/arena.h"
#include "api/json/spare_threads.h"
#include "api/request/body.h"
#include "api/request/query.h"
#include "core/attention.h"

enum method { M_GET = 1, M_HEAD = 2, M_POST = 4 };

struct route {
    const char *path;     /* exact (a '*' segment: any one), or a prefix ending in '/' */
    bool prefix;
    unsigned methods;
    bool takes_body;
    unsigned media;       /* what it produces (enum api_media), for Accept */
    const char *allow;    /* the Allow header for 405 */
    api_handler_fn *handle;
    unsigned reads;       /* the bodies it reads (enum api_body_kind); 0 when none */
    enum api_error_style errors; /* how its errors are written */
};

/* Shorthands for the table. */
#define POST_ALLOW "POST, OPTIONS"
#define GET_ALLOW "GET, HEAD, OPTIONS"
#define PAGES (API_MEDIA_JSON | API_MEDIA_TEXT | API_MEDIA_SVG | API_MEDIA_BERTVIZ)
#define V2_MEDIA (API_MEDIA_JSON | API_MEDIA_OCTETS)
#define V2_BODIES (API_BODY_JSON | API_BODY_OCTETS)

static const struct route routes[] = {
    { "/v1/attention", false, M_POST, true, PAGES, POST_ALLOW,
      api_attention_handle, API_BODY_JSON, API_ERRORS_PROBLEM },
    { "/v1/attention/batch", false, M_POST, true, API_MEDIA_JSON | API_MEDIA_TEXT, POST_ALLOW,
      api_batch_handle, API_BODY_JSON, API_ERRORS_PROBLEM },
    { "/v1/multihead", false, M_POST, true, PAGES, POST_ALLOW,
      api_multihead_handle, API_BODY_JSON, API_ERRORS_PROBLEM },
    { "/v1/shapes", false, M_GET | M_HEAD, false, API_MEDIA_JSON | API_MEDIA_TEXT, GET_ALLOW,
      api_shapes_handle, 0, API_ERRORS_PROBLEM },
    { "/healthz", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_healthz_handle, 0, API_ERRORS_PROBLEM },
    { "/readyz", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_readyz_handle, 0, API_ERRORS_PROBLEM },
    { "/version", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_version_handle, 0, API_ERRORS_PROBLEM },
    { "/openapi.yaml", false, M_GET | M_HEAD, false, API_MEDIA_YAML, GET_ALLOW,
      api_openapi_yaml_handle, 0, API_ERRORS_PROBLEM },
    { "/openapi.json", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_openapi_json_handle, 0, API_ERRORS_PROBLEM },
    { "/problems/", true, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_problem_page_handle, 0, API_ERRORS_PROBLEM },
    /* The Open Inference Protocol: a '*' segment is any one ({model}, {version}). */
    { "/v2", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW, api_v2_server_handle, 0,
      API_ERRORS_V2 },
    { "/v2/health/live", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_v2_live_handle, 0, API_ERRORS_V2 },
    { "/v2/health/ready", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_v2_ready_handle, 0, API_ERRORS_V2 },
    { "/v2/models/*", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_v2_model_handle, 0, API_ERRORS_V2 },
    { "/v2/models/*/versions/*", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_v2_model_handle, 0, API_ERRORS_V2 },
    { "/v2/models/*/ready", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_v2_model_ready_handle, 0, API_ERRORS_V2 },
    { "/v2/models/*/versions/*/ready", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_v2_model_ready_handle, 0, API_ERRORS_V2 },
    { "/v2/models/*/infer", false, M_POST, true, V2_MEDIA, POST_ALLOW, api_v2_infer_handle,
      V2_BODIES, API_ERRORS_V2 },
    { "/v2/models/*/versions/*/infer", false, M_POST, true, V2_MEDIA, POST_ALLOW,
      api_v2_infer_handle, V2_BODIES, API_ERRORS_V2 },
    /* GET and HEAD /metrics and the playground's files are answered by server/. */
    { "/metrics", false, M_GET | M_HEAD, false, API_MEDIA_JSON, GET_ALLOW,
      api_metrics_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/playground.js", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/playground.css", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/playground-headview.js", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/playground-fields.js", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/favicon.svg", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
    { "/favicon.ico", false, M_GET | M_HEAD, false, API_MEDIA_HTML, GET_ALLOW,
      api_playground_elsewhere, 0, API_ERRORS_PROBLEM },
};

#define N_ROUTES (sizeof routes / sizeof routes[0])

/* The routes whose query takes more than format and lang (every route takes those). */
static const struct {
    const char *path;
    const char *const *names; /* NULL-terminated */
} route_queries[] = {
    { "/v1/shapes", api_shapes_params },
};

static const char *const *query_names(const struct route *r)
{
    for (size_t i = 0; i < sizeof route_queries / sizeof route_queries[0]; i++)
        if (strcmp(route_queries[i].path, r->path) == 0)
            return route_queries[i].names;
    return NULL;
}

void api_global_init(void)
{
    attn_blas_set_threads(1);
    api_json_alloc_init();
}

void api_set_threads(unsigned threads)
{
    api_spare_threads_set(threads);
}

void api_request_began(void)
{
    api_spare_threads_request_begin();
}

void api_request_ended(void)
{
    api_spare_threads_request_end();
}

const char *api_blas_better_core(void)
{
    return attn_blas_better_core();
}

/* ---- routing ---- */

static unsigned method_bit(const char *method)
{
    if (strcmp(method, "GET") == 0)
        return M_GET;
    if (strcmp(method, "HEAD") == 0)
        return M_HEAD;
    if (strcmp(method, "POST") == 0)
        return M_POST;
    return 0;
}

/* Whether path is the route's path, each '*' segment of it standing for one segment. */
static bool path_matches(const char *pattern, const char *path)
{
    while (*pattern != '\0') {
        if (*pattern == '*') {
            size_t n = strcspn(path, "/");
            if (n == 0)
                return false;
            path += n;
            pattern++;
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return *path == '\0';
}

static const struct route *find_route(const char *path)
{
    for (size_t i = 0; i < N_ROUTES; i++) {
        const struct route *r = &routes[i];
        if (r->prefix ? strncmp(path, r->path, strlen(r->path)) == 0 : path_matches(r->path, path))
            return r;
    }
    return NULL;
}

static void respond_not_found(const char *path, struct api_response *res)
{
    char detail[440];
    snprintf(detail, sizeof detail, API_TR("nothing is served at %.100s; attnd serves GET / (the "
             "playground), POST /v1/attention, /v1/attention/batch, /v1/multihead, GET /v1/shapes, "
             "/healthz, /readyz, /version, /metrics, the V2 inference protocol under /v2, "
             "/openapi.yaml, /openapi.json and /problems/<type>"), path);
    struct api_error err;
    api_error_set(&err, API_NOT_FOUND, "%s", detail);
    api_respond_error_as(res, &err, api_error_style_of_path(path));
}

static void respond_method_not_allowed(const struct route *r, const struct api_request *req,
                                       struct api_response *res)
{
    /* A pattern's path says '*': name the path as sent instead. */
    const char *path = strchr(r->path, '*') != NULL ? req->path : r->path;
    struct api_error err;
    api_error_set(&err, API_METHOD_NOT_ALLOWED, "%.16s is not allowed on %.100s; allowed: %s",
                  req->method, path, r->allow);
    api_respond_error_as(res, &err, r->errors);
    api_response_add_header(res, "Allow", r->allow);
}

/* Route, method, Accept and Content-Type: the checks that need no body. */
static const struct route *admit(const struct api_request *req, struct api_response *res)
{
    /* The language first, so that even a 404 speaks it; a ?lang attnd lacks is refused
       once the route is known, in the route's error style. */
    enum api_lang lang;
    struct api_error lang_err;
    bool lang_ok = api_lang_negotiate(req, &lang, &lang_err);
    api_lang_set_current(lang);
    const struct route *r = find_route(req->path);
    if (r == NULL) {
        respond_not_found(req->path, res);
        return NULL;
    }
    if (!(method_bit(req->method) & r->methods)) {
        respond_method_not_allowed(r, req, res);
        return NULL;
    }
    if (!lang_ok) {
        api_respond_error_as(res, &lang_err, r->errors);
        return NULL;
    }
    struct api_error query_err;
    if (!api_check_query(req, query_names(r), &query_err)) {
        api_respond_error_as(res, &query_err, r->errors);
        return NULL;
    }
    if (!api_negotiate(req, strchr(r->path, '*') != NULL ? req->path : r->path, r->media,
                       r->errors, res))
        return NULL;
    unsigned reads = r->reads;
    if (r->takes_body && !api_content_type_readable(req->content_type, reads)) {
        struct api_error err;
        api_error_set(&err, API_UNSUPPORTED_MEDIA_TYPE, "Content-Type %.100s is not read; send "
                      "application/json%s (text/plain, application/x-www-form-urlencoded or no "
                      "Content-Type are read as JSON too)", req->content_type,
                      (reads & API_BODY_OCTETS) ? " or application/octet-stream" : "");
        api_respond_error_as(res, &err, r->errors);
        return NULL;
    }
    return r;
}

/* A GET or HEAD is answered at once: only a POST waits for a body. */
static bool waits_for_body(const struct route *r, const struct api_request *req)
{
    return r->takes_body && method_bit(req->method) == M_POST;
}

/* The 413 in the route's error style. */
static void respond_too_large(const struct api_context *ctx, const struct route *r,
                              struct api_response *res)
{
    struct api_error err;
    api_error_set(&err, API_TOO_LARGE, "the body is larger than this server accepts (%zu "
                  "bytes)", ctx->limits.max_body);
    api_respond_error_as(res, &err, r->errors);
}

void api_respond_too_large_for(const struct api_context *ctx, const struct api_request *req,
                               struct api_response *res)
{
    /* In the request's language: the server calls this outside api_handle. */
    enum api_lang lang;
    struct api_error unused;
    if (!api_lang_negotiate(req, &lang, &unused))
        lang = API_LANG_EN;
    api_lang_set_current(lang);
    const struct route *r = find_route(req->path);
    if (r == NULL && api_error_style_of_path(req->path) == API_ERRORS_V2) {
        struct api_error err;
        api_error_set(&err, API_TOO_LARGE, "the body is larger than this server accepts (%zu "
                      "bytes)", ctx->limits.max_body);
        api_respond_error_as(res, &err, API_ERRORS_V2);
    } else if (r == NULL)
        api_respond_too_large(ctx, res);
    else
        respond_too_large(ctx, r, res);
    api_lang_headers(res, lang);
    api_lang_set_current(API_LANG_EN);
}

static bool precheck(const struct api_context *ctx, const struct api_request *req,
                     long long declared_length, struct api_response *res)
{
    const struct route *r = admit(req, res);
    if (r == NULL)
        return true;
    if (!waits_for_body(r, req)) {
        r->handle(ctx, req, api_negotiated_format(req, r->media), res);
        return true;
    }
    if (declared_length >= 0 && (unsigned long long)declared_length > ctx->limits.max_body) {
        respond_too_large(ctx, r, res);
        return true;
    }
    return false;
}

bool api_precheck(const struct api_context *ctx, const struct api_request *req,
                  long long declared_length, struct api_response *res)
{
    bool answered = precheck(ctx, req, declared_length, res);
    if (answered)
        api_lang_headers(res, api_lang_current());
    /* The thread answers other requests next, and the server's own problems between. */
    api_lang_set_current(API_LANG_EN);
    return answered;
}

static void handle(const struct api_context *ctx, const struct api_request *req,
                   struct api_response *res)
{
    const struct route *r = admit(req, res);
    if (r == NULL)
        return;
    if (r->takes_body && req->body_len > ctx->limits.max_body) {
        respond_too_large(ctx, r, res);
        return;
    }
    /* Every jansson node of this request is cut from one arena, released at once. */
    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    r->handle(ctx, req, api_negotiated_format(req, r->media), res);
    api_json_arena_end(&arena);
}

void api_handle(const struct api_context *ctx, const struct api_request *req,
                struct api_response *res)
{
    handle(ctx, req, res);
    api_lang_headers(res, api_lang_current());
    api_lang_set_current(API_LANG_EN);
}
