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
#include "api/endpoints/shapes/shapes.h"
#include "api/http/language.h"
#include "api/http/negotiate.h"
#include "api/http/problem.h"
#include "api/i18n/lang.h"
#include "api/json/arena.h"
#include "api/json/spare_threads.h"
#include "api/request/body.h"
#include "api/request/query.h"
#include "core/attention.h"
#include "core/memory.h"

enum method { M_GET = 1, M_HEAD = 2, M_POST = 4 };

struct route {
    const char *path;     /* OpenAPI's template: a {name} segment is any one segment */
    bool prefix;          /* its last {name} takes the rest of the path, empty or not */
    unsigned methods;
    bool takes_body;
    unsigned media;       /* what it produces (enum api_media), for Accept */
    const char *allow;    /* the Allow header for 405 */
    api_handler_fn *handle;
    unsigned reads;       /* the bodies it reads (enum api_body_kind); 0 when none */
    enum api_error_style errors; /* how its errors are written */
    bool listed;          /* named by the 404's list of what attnd serves */
    const char *note;     /* what the 404's list says of it, in parentheses; NULL: nothing */
};

/* Shorthands for the table. */
#define POST_ALLOW "POST, OPTIONS"
#define GET_ALLOW "GET, HEAD, OPTIONS"
#define PAGES (API_MEDIA_JSON | API_MEDIA_TEXT | API_MEDIA_SVG | API_MEDIA_BERTVIZ)
#define V2_MEDIA (API_MEDIA_JSON | API_MEDIA_OCTETS)
#define V2_BODIES (API_BODY_JSON | API_BODY_OCTETS)
#define POST_JSON .methods = M_POST, .takes_body = true, .allow = POST_ALLOW, \
                  .reads = API_BODY_JSON, .errors = API_ERRORS_PROBLEM
#define GET_PAGE .methods = M_GET | M_HEAD, .allow = GET_ALLOW, .errors = API_ERRORS_PROBLEM
#define V2_GET .methods = M_GET | M_HEAD, .allow = GET_ALLOW, .media = API_MEDIA_JSON, \
               .errors = API_ERRORS_V2
#define V2_POST .methods = M_POST, .takes_body = true, .allow = POST_ALLOW, .media = V2_MEDIA, \
                .reads = V2_BODIES, .errors = API_ERRORS_V2

static const struct route routes[] = {
    { .path = "/v1/attention", POST_JSON, .media = PAGES, .handle = api_attention_handle,
      .listed = true },
    { .path = "/v1/attention/batch", POST_JSON, .media = API_MEDIA_JSON | API_MEDIA_TEXT,
      .handle = api_batch_handle, .listed = true },
    { .path = "/v1/multihead", POST_JSON, .media = PAGES, .handle = api_multihead_handle,
      .listed = true },
    { .path = "/v1/verify", POST_JSON, .media = API_MEDIA_JSON | API_MEDIA_TEXT,
      .handle = api_verify_handle, .listed = true },
    { .path = "/v1/shapes", GET_PAGE, .media = API_MEDIA_JSON | API_MEDIA_TEXT,
      .handle = api_shapes_handle, .listed = true },
    { .path = "/healthz", GET_PAGE, .media = API_MEDIA_JSON, .handle = api_healthz_handle,
      .listed = true },
    { .path = "/readyz", GET_PAGE, .media = API_MEDIA_JSON, .handle = api_readyz_handle,
      .listed = true },
    { .path = "/version", GET_PAGE, .media = API_MEDIA_JSON, .handle = api_version_handle,
      .listed = true },
    /* GET and HEAD /metrics are answered by server/, which keeps the counters. */
    { .path = "/metrics", GET_PAGE, .media = API_MEDIA_JSON, .handle = api_metrics_elsewhere,
      .listed = true },
    { .path = "/openapi.yaml", GET_PAGE, .media = API_MEDIA_YAML,
      .handle = api_openapi_yaml_handle, .listed = true },
    { .path = "/openapi.json", GET_PAGE, .media = API_MEDIA_JSON,
      .handle = api_openapi_json_handle, .listed = true },
    { .path = "/problems/{type}", .prefix = true, GET_PAGE, .media = API_MEDIA_HTML,
      .handle = api_problem_page_handle, .listed = true },
    /* The Open Inference Protocol, listed once by its root. */
    { .path = "/v2", V2_GET, .handle = api_v2_server_handle, .listed = true,
      .note = API_N("the V2 inference protocol, with the paths under it") },
    { .path = "/v2/health/live", V2_GET, .handle = api_v2_live_handle },
    { .path = "/v2/health/ready", V2_GET, .handle = api_v2_ready_handle },
    /* Before /v2/models/{model}, which its path would match too. */
    { .path = "/v2/models/stats", V2_GET, .handle = api_v2_stats_handle },
    { .path = "/v2/models/{model}", V2_GET, .handle = api_v2_model_handle },
    { .path = "/v2/models/{model}/versions/{version}", V2_GET, .handle = api_v2_model_handle },
    { .path = "/v2/models/{model}/ready", V2_GET, .handle = api_v2_model_ready_handle },
    { .path = "/v2/models/{model}/versions/{version}/ready", V2_GET,
      .handle = api_v2_model_ready_handle },
    { .path = "/v2/models/{model}/stats", V2_GET, .handle = api_v2_model_stats_handle },
    { .path = "/v2/models/{model}/versions/{version}/stats", V2_GET,
      .handle = api_v2_model_stats_handle },
    { .path = "/v2/models/{model}/config", V2_GET, .handle = api_v2_model_config_handle },
    { .path = "/v2/models/{model}/versions/{version}/config", V2_GET,
      .handle = api_v2_model_config_handle },
    { .path = "/v2/models/{model}/infer", V2_POST, .handle = api_v2_infer_handle },
    { .path = "/v2/models/{model}/versions/{version}/infer", V2_POST,
      .handle = api_v2_infer_handle },
    /* Triton's model repository extension: the index alone (no load or unload). */
    { .path = "/v2/repository/index", .methods = M_POST, .takes_body = true, .allow = POST_ALLOW,
      .media = API_MEDIA_JSON, .reads = API_BODY_JSON, .errors = API_ERRORS_V2,
      .handle = api_v2_repository_index_handle },
};

#define N_ROUTES (sizeof routes / sizeof routes[0])
_Static_assert(N_ROUTES < API_ROUTES_MAX, "API_ROUTES_MAX leaves no room for the server's files");

/* The server's own files (api_route_add_file), set once before serving. */
static struct route file_routes[API_ROUTES_MAX - N_ROUTES];
static size_t n_file_routes;

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

void api_keep_block_max(size_t bytes)
{
    attn_block_keep_max(bytes);
}

void api_release_kept_block(void)
{
    (void)attn_block_release();
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

/* Whether path is the route's, each {name} segment of it standing for one segment. */
static bool path_matches(const struct route *r, const char *path)
{
    const char *p = r->path;
    while (*p != '\0') {
        if (*p == '{') {
            if (r->prefix)
                return true;
            size_t n = strcspn(path, "/");
            if (n == 0)
                return false;
            path += n;
            p = strchr(p, '}') + 1;
        } else if (*p++ != *path++) {
            return false;
        }
    }
    return *path == '\0';
}

/* The table's routes, then the server's files: one numbering, api_route_of's. */
static const struct route *route_at(size_t i)
{
    return i < N_ROUTES ? &routes[i] : &file_routes[i - N_ROUTES];
}

size_t api_route_count(void)
{
    return N_ROUTES + n_file_routes;
}

const char *api_route_template(size_t i)
{
    return i < api_route_count() ? route_at(i)->path : NULL;
}

size_t api_route_of(const char *path)
{
    size_t n = api_route_count();
    for (size_t i = 0; i < n; i++)
        if (path_matches(route_at(i), path))
            return i;
    return n;
}

bool api_route_add_file(const char *path, const char *note)
{
    if (path[0] != '/' || strchr(path, '{') != NULL || api_route_of(path) < api_route_count()
        || api_route_count() >= API_ROUTES_MAX)
        return false;
    file_routes[n_file_routes++] = (struct route){
        .path = path, GET_PAGE, .media = API_MEDIA_HTML, .handle = api_playground_elsewhere,
        .listed = note != NULL, .note = note,
    };
    return true;
}

static const struct route *find_route(const char *path)
{
    size_t i = api_route_of(path);
    return i < api_route_count() ? route_at(i) : NULL;
}

/* "GET / (the playground), POST /v1/attention, ...": the routes marked listed, the
   server's files first, in the language of the answer. */
static void list_routes(char *out, size_t size)
{
    size_t len = 0, n = api_route_count();
    out[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        const struct route *r = route_at((k + N_ROUTES) % n);
        if (!r->listed || len >= size)
            continue;
        int w = snprintf(out + len, size - len, "%s%s %s%s%s%s", len > 0 ? ", " : "",
                         (r->methods & M_POST) ? "POST" : "GET", r->path,
                         r->note != NULL ? " (" : "", r->note != NULL ? API_TR(r->note) : "",
                         r->note != NULL ? ")" : "");
        len += w > 0 ? (size_t)w : 0;
    }
}

static void respond_not_found(const char *path, struct api_response *res)
{
    char listed[1024];
    list_routes(listed, sizeof listed);
    struct api_error err;
    api_error_set(&err, API_NOT_FOUND, "nothing is served at %.100s; attnd serves %s", path,
                  listed);
    api_respond_error_as(res, &err, api_error_style_of_path(path));
}

static void respond_method_not_allowed(const struct route *r, const struct api_request *req,
                                       struct api_response *res)
{
    /* A template's path says {name}: name the path as sent instead. */
    const char *path = strchr(r->path, '{') != NULL ? req->path : r->path;
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
    if (!api_negotiate(req, strchr(r->path, '{') != NULL ? req->path : r->path, r->media,
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
