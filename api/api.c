/*
 * api/api.c — the entry point: routes, methods, content negotiation, and the
 * small endpoints (health, readiness, version, the spec, the problem pages).
 *
 * A route table, not a chain of strcmp: each route names its path, the methods
 * it takes, whether it reads a body, and its handler. api_precheck and api_handle
 * share the same checks so a request is refused the same way whether the server
 * asks before the body arrives or after.
 */
#include "api/api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "api/admit.h"
#include "api/attention.h"
#include "api/batch.h"
#include "api/buf.h"
#include "api/multihead.h"
#include "api/multihead_render.h"
#include "api/shapes.h"
#include "api/version.h"
#include "api/attention_render.h"
#include "api/fields.h"
#include "api/json_arena.h"
#include "api/jsonw.h"
#include "api/spare_threads.h"
#include "api/problem.h"
#include "core/attention.h"


/* Linked in by api/embedded.S. */
extern const char api_openapi_yaml[], api_openapi_yaml_end[];
extern const char api_openapi_json[], api_openapi_json_end[];

enum method { M_GET = 1, M_HEAD = 2, M_POST = 4 };

/* What a route's handler may answer with, beyond problem+json. */
enum media { MEDIA_JSON = 1, MEDIA_YAML = 2, MEDIA_HTML = 4, MEDIA_TEXT = 8, MEDIA_SVG = 16 };

typedef void route_fn(const struct api_context *ctx, const struct api_request *req,
                      struct api_response *res);

struct route {
    const char *path;     /* exact, or a prefix ending in '/' when `prefix` */
    bool prefix;
    unsigned methods;
    bool takes_body;
    unsigned media;       /* what it produces, for Accept */
    const char *allow;    /* the Allow header for 405 */
    route_fn *handle;
};

static route_fn handle_attention, handle_healthz, handle_readyz, handle_version,
    handle_openapi_yaml, handle_openapi_json, handle_problem_page;
/* GET and HEAD /metrics are answered by server/ (its counters); the route is here for 405. */
static route_fn handle_metrics_elsewhere;
/* GET and HEAD of the playground's files are served by server/ (server/www.c); here for 405. */
static route_fn handle_playground_elsewhere;
static route_fn handle_multihead, handle_shapes, handle_batch;

static const struct route routes[] = {
    { "/v1/attention", false, M_POST, true, MEDIA_JSON | MEDIA_TEXT | MEDIA_SVG, "POST, OPTIONS",
      handle_attention },
    { "/v1/attention/batch", false, M_POST, true, MEDIA_JSON, "POST, OPTIONS", handle_batch },
    { "/v1/multihead", false, M_POST, true, MEDIA_JSON | MEDIA_TEXT | MEDIA_SVG, "POST, OPTIONS",
      handle_multihead },
    { "/v1/shapes", false, M_GET | M_HEAD, false, MEDIA_JSON | MEDIA_TEXT, "GET, HEAD, OPTIONS",
      handle_shapes },
    { "/healthz", false, M_GET | M_HEAD, false, MEDIA_JSON, "GET, HEAD, OPTIONS", handle_healthz },
    { "/readyz", false, M_GET | M_HEAD, false, MEDIA_JSON, "GET, HEAD, OPTIONS", handle_readyz },
    { "/version", false, M_GET | M_HEAD, false, MEDIA_JSON, "GET, HEAD, OPTIONS", handle_version },
    { "/openapi.yaml", false, M_GET | M_HEAD, false, MEDIA_YAML, "GET, HEAD, OPTIONS",
      handle_openapi_yaml },
    { "/openapi.json", false, M_GET | M_HEAD, false, MEDIA_JSON, "GET, HEAD, OPTIONS",
      handle_openapi_json },
    { "/problems/", true, M_GET | M_HEAD, false, MEDIA_HTML, "GET, HEAD, OPTIONS",
      handle_problem_page },
    { "/metrics", false, M_GET | M_HEAD, false, MEDIA_JSON, "GET, HEAD, OPTIONS",
      handle_metrics_elsewhere },
    { "/", false, M_GET | M_HEAD, false, MEDIA_HTML, "GET, HEAD, OPTIONS",
      handle_playground_elsewhere },
    { "/playground.js", false, M_GET | M_HEAD, false, MEDIA_HTML, "GET, HEAD, OPTIONS",
      handle_playground_elsewhere },
    { "/playground.css", false, M_GET | M_HEAD, false, MEDIA_HTML, "GET, HEAD, OPTIONS",
      handle_playground_elsewhere },
};

#define N_ROUTES (sizeof routes / sizeof routes[0])

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

struct api_limits api_default_limits(void)
{
    struct api_limits l = { 16u * 1024 * 1024, 4194304, 64, (size_t)512 * 1024 * 1024 };
    return l;
}

/* ---- responses ---- */

bool api_response_add_header(struct api_response *res, const char *name, const char *value)
{
    if (res->n_headers >= API_MAX_HEADERS)
        return false;
    struct api_header *h = &res->headers[res->n_headers++];
    h->name = name;
    snprintf(h->value, sizeof h->value, "%s", value);
    return true;
}

void api_segments_free(void *segments)
{
    struct api_segments *s = segments;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->seg[i].base);
    free(s);
}

void api_response_deinit(struct api_response *res)
{
    api_segments_free(res->segments);
    free(res->body);
    memset(res, 0, sizeof *res);
}

static void respond_problem(struct api_response *res, enum api_problem_type type,
                            const char *detail)
{
    struct api_error err;
    api_error_set(&err, type, "%s", detail);
    api_respond_error(res, &err);
}

void api_respond_too_large(const struct api_context *ctx, struct api_response *res)
{
    char detail[160];
    snprintf(detail, sizeof detail, "the body is larger than this server accepts (%zu bytes)",
             ctx->limits.max_body);
    respond_problem(res, API_TOO_LARGE, detail);
}

void api_respond_unavailable(struct api_response *res, const char *detail)
{
    respond_problem(res, API_UNAVAILABLE, detail);
}

void api_respond_not_found(struct api_response *res, const char *detail)
{
    respond_problem(res, API_NOT_FOUND, detail);
}

void api_respond_over_budget(struct api_response *res, size_t bytes)
{
    struct api_error err;
    api_error_over_budget(&err, bytes);
    api_respond_error(res, &err);
}

void api_respond_bad_request(struct api_response *res, const char *detail)
{
    respond_problem(res, API_BAD_REQUEST, detail);
}

void api_respond_uri_too_long(struct api_response *res, const char *detail)
{
    respond_problem(res, API_URI_TOO_LONG, detail);
}

void api_respond_not_implemented(struct api_response *res, const char *detail)
{
    respond_problem(res, API_NOT_IMPLEMENTED, detail);
}

/* Copies bytes into a fresh body; a 503 without body if even that fails. */
static void respond_bytes(struct api_response *res, int status, const char *type,
                          const char *bytes, size_t len)
{
    res->body = malloc(len + 1);
    if (res->body == NULL) {
        res->status = 503;
        res->content_type = "application/problem+json";
        res->body_len = 0;
        return;
    }
    memcpy(res->body, bytes, len);
    res->body[len] = '\0';
    res->body_len = len;
    res->status = status;
    res->content_type = type;
}


/* ---- the small endpoints ---- */

static enum api_format chosen_format(const struct api_request *req);

static void handle_attention(const struct api_context *ctx, const struct api_request *req,
                             struct api_response *res)
{
    api_attention_handle_as(ctx, req->body, req->body_len, chosen_format(req), res);
}

static void handle_multihead(const struct api_context *ctx, const struct api_request *req,
                             struct api_response *res)
{
    api_multihead_handle(ctx, req->body, req->body_len, chosen_format(req), res);
}

static void handle_batch(const struct api_context *ctx, const struct api_request *req,
                         struct api_response *res)
{
    api_batch_handle(ctx, req->body, req->body_len, res);
}

static void handle_shapes(const struct api_context *ctx, const struct api_request *req,
                          struct api_response *res)
{
    (void)ctx;
    struct api_shapes shapes;
    struct api_error err;
    if (!api_shapes_parse(req, &shapes, &err)) {
        api_respond_error(res, &err);
        return;
    }
    if (chosen_format(req) == API_FORMAT_TEXT) {
        struct api_buf b;
        api_buf_init(&b);
        api_shapes_text(&b, &shapes);
        api_respond_page(res, &b, API_FORMAT_TEXT);
        return;
    }
    struct jw w;
    jw_init(&w, -1);
    api_shapes_write(&w, &shapes);
    api_respond_json(res, &w);
}

static void handle_healthz(const struct api_context *ctx, const struct api_request *req,
                           struct api_response *res)
{
    (void)ctx;
    (void)req;
    static const char body[] = "{\"status\":\"ok\"}";
    respond_bytes(res, 200, "application/json", body, sizeof body - 1);
}

static void handle_readyz(const struct api_context *ctx, const struct api_request *req,
                          struct api_response *res)
{
    (void)req;
    static const char body[] = "{\"status\":\"ready\"}";
    if (!ctx->ready) {
        api_respond_unavailable(res, "shutting down: finishing the requests in flight");
        return;
    }
    respond_bytes(res, 200, "application/json", body, sizeof body - 1);
}

static void handle_version(const struct api_context *ctx, const struct api_request *req,
                           struct api_response *res)
{
    (void)req;
    struct jw w;
    jw_init(&w, -1);
    jw_object_begin(&w);
    JW_KEY(&w, "name");
    jw_string(&w, "attnd");
    JW_KEY(&w, "version");
    jw_string(&w, attnd_version);
    JW_KEY(&w, "build");
    jw_string(&w, attnd_build);
    JW_KEY(&w, "blas");
    jw_string(&w, attn_blas_info());
    JW_KEY(&w, "libraries");
    jw_object_begin(&w);
    JW_KEY(&w, "microhttpd");
    jw_string(&w, ctx->http_library != NULL ? ctx->http_library : "unknown");
    JW_KEY(&w, "jansson");
    jw_string(&w, jansson_version_str());
    jw_object_end(&w);
    jw_object_end(&w);
    api_respond_json(res, &w);
}

static void handle_openapi_yaml(const struct api_context *ctx, const struct api_request *req,
                                struct api_response *res)
{
    (void)ctx;
    (void)req;
    respond_bytes(res, 200, "application/yaml", api_openapi_yaml,
                  (size_t)(api_openapi_yaml_end - api_openapi_yaml));
}

static void handle_openapi_json(const struct api_context *ctx, const struct api_request *req,
                                struct api_response *res)
{
    (void)ctx;
    (void)req;
    respond_bytes(res, 200, "application/json", api_openapi_json,
                  (size_t)(api_openapi_json_end - api_openapi_json));
}

static void handle_problem_page(const struct api_context *ctx, const struct api_request *req,
                                struct api_response *res)
{
    (void)ctx;
    const char *slug = req->path + strlen("/problems/");
    enum api_problem_type type;
    if (!api_problem_lookup(slug, &type)) {
        char detail[200];
        snprintf(detail, sizeof detail, "there is no problem type \"%.64s\"; the types are "
                 "listed in /openapi.yaml", slug);
        respond_problem(res, API_NOT_FOUND, detail);
        return;
    }
    const struct api_problem_info *info = api_problem_info(type);
    char page[2048];
    /* Every string here is ours (the slug was matched against the table), so no escaping. */
    int n = snprintf(page, sizeof page,
                     "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<title>%s: %s</title></head>\n<body><h1>%s</h1>\n"
                     "<p><code>/problems/%s</code> &middot; HTTP %d</p>\n<p>%s</p>\n"
                     "<p>See <a href=\"/openapi.yaml\">the API description</a>.</p>\n"
                     "</body></html>\n",
                     info->slug, info->title, info->title, info->slug, info->status,
                     info->explanation);
    respond_bytes(res, 200, "text/html; charset=utf-8", page, (size_t)n);
}

/* Only reached without the server (tests, the fuzzer): it keeps the counters. */
static void handle_metrics_elsewhere(const struct api_context *ctx, const struct api_request *req,
                                     struct api_response *res)
{
    (void)ctx;
    (void)req;
    respond_problem(res, API_NOT_FOUND, "/metrics is answered by the server, which keeps the "
                    "counters; api/ alone has none");
}

/* Only reached without the server (tests, the fuzzer): the page is compiled into it. */
static void handle_playground_elsewhere(const struct api_context *ctx,
                                        const struct api_request *req, struct api_response *res)
{
    (void)ctx;
    (void)req;
    respond_problem(res, API_NOT_FOUND, "the playground page is served by the server, which "
                    "holds its files; api/ alone has none");
}

/* ---- routing and negotiation ---- */

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

static const struct route *find_route(const char *path)
{
    for (size_t i = 0; i < N_ROUTES; i++) {
        const struct route *r = &routes[i];
        if (r->prefix ? strncmp(path, r->path, strlen(r->path)) == 0 : strcmp(path, r->path) == 0)
            return r;
    }
    return NULL;
}

static void respond_not_found(const char *path, struct api_response *res)
{
    char detail[400];
    snprintf(detail, sizeof detail, "nothing is served at %.100s; attnd serves GET / (the "
             "playground), POST /v1/attention, /v1/attention/batch, /v1/multihead, GET /v1/shapes, "
             "/healthz, /readyz, /version, /metrics, "
             "/openapi.yaml, /openapi.json and /problems/<type>", path);
    respond_problem(res, API_NOT_FOUND, detail);
}

static void respond_method_not_allowed(const struct route *r, const char *method,
                                       struct api_response *res)
{
    char detail[200];
    snprintf(detail, sizeof detail, "%.16s is not allowed on %s; allowed: %s", method, r->path,
             r->allow);
    respond_problem(res, API_METHOD_NOT_ALLOWED, detail);
    api_response_add_header(res, "Allow", r->allow);
}

static const char *param(const struct api_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_params; i++)
        if (strcmp(req->params[i].name, name) == 0)
            return req->params[i].value;
    return NULL;
}

/*
 * Which of the route's media one Accept range (without parameters) picks, or 0.
 * A wildcard, and problem+json (problems are always acceptable to a client that
 * asked for them), pick the route's default: JSON when it makes JSON.
 */
static unsigned range_pick(const char *range, size_t len, unsigned media)
{
#define IS(s) (len == strlen(s) && strncasecmp(range, s, len) == 0)
    unsigned fallback = (media & MEDIA_JSON) ? MEDIA_JSON : (media & (~media + 1));
    if (IS("*/*") || IS("application/problem+json"))
        return fallback;
    if ((media & MEDIA_JSON) && (IS("application/json") || IS("application/*")))
        return MEDIA_JSON;
    if ((media & MEDIA_YAML) && (IS("application/yaml") || IS("application/*") ||
                                 IS("text/yaml") || IS("application/x-yaml")))
        return MEDIA_YAML;
    if ((media & MEDIA_HTML) && (IS("text/html") || IS("text/*")))
        return MEDIA_HTML;
    if ((media & MEDIA_TEXT) && (IS("text/plain") || IS("text/*")))
        return MEDIA_TEXT;
    if ((media & MEDIA_SVG) && (IS("image/svg+xml") || IS("image/*")))
        return MEDIA_SVG;
    return 0;
#undef IS
}

/* The q parameter of one Accept item (p, len): 1 when absent (RFC 9110 §12.4.2). */
static double item_quality(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (p[i] != ';')
            continue;
        size_t j = i + 1;
        while (j < len && (p[j] == ' ' || p[j] == '\t'))
            j++;
        if (j + 1 < len && (p[j] == 'q' || p[j] == 'Q') && p[j + 1] == '=')
            return strtod(p + j + 2, NULL);
    }
    return 1.0;
}

/*
 * The media bit the Accept header prefers among what the route makes: the range
 * with the highest q > 0 that the route can serve, the first one on a tie (q=0
 * means "not this one"). No header, or an empty one, picks the default; 0 means
 * nothing acceptable.
 */
static unsigned accept_pick(const char *accept, unsigned media)
{
    if (accept == NULL || *accept == '\0')
        return range_pick("*/*", 3, media);
    unsigned best = 0;
    double best_q = 0.0;
    const char *p = accept;
    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t item_len = end ? (size_t)(end - p) : strlen(p);
        while (item_len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            item_len--;
        }
        size_t range_len = strcspn(p, ";, \t");
        if (range_len > item_len)
            range_len = item_len;
        double q = item_quality(p, item_len);
        unsigned bit = range_pick(p, range_len, media);
        if (bit != 0 && q > best_q) {
            best = bit;
            best_q = q;
        }
        p += item_len;
        if (*p == ',')
            p++;
    }
    return best;
}

/* The format a 200 from this route should take: ?format when it names one, else Accept. */
static enum api_format chosen_format(const struct api_request *req)
{
    const struct route *r = find_route(req->path);
    if (r == NULL)
        return API_FORMAT_JSON;
    const char *format = param(req, "format");
    unsigned bit = 0;
    if (format == NULL)
        bit = accept_pick(req->accept, r->media);
    else if (strcmp(format, "text") == 0)
        bit = MEDIA_TEXT;
    else if (strcmp(format, "svg") == 0)
        bit = MEDIA_SVG;
    return (bit & r->media & MEDIA_TEXT) ? API_FORMAT_TEXT :
           (bit & r->media & MEDIA_SVG) ? API_FORMAT_SVG : API_FORMAT_JSON;
}

/* "application/json, text/plain or image/svg+xml": what a route makes, for a 406. */
static void media_names(unsigned media, char *buf, size_t len)
{
    static const struct { unsigned bit; const char *name; } names[] = {
        { MEDIA_JSON, "application/json" }, { MEDIA_YAML, "application/yaml" },
        { MEDIA_HTML, "text/html" }, { MEDIA_TEXT, "text/plain" }, { MEDIA_SVG, "image/svg+xml" },
    };
    size_t n = 0, total = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        total += (media & names[i].bit) != 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!(media & names[i].bit))
            continue;
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", n == 0 ? "" : n + 1 == total ? " or " : ", ",
                 names[i].name);
        n++;
    }
}

/* The requested format (?format wins over Accept); false with res set when unservable. */
static bool negotiate(const struct route *r, const struct api_request *req,
                      struct api_response *res)
{
    const char *format = param(req, "format");
    if (format != NULL) {
        if ((strcmp(format, "json") == 0 && (r->media & MEDIA_JSON)) ||
            (strcmp(format, "text") == 0 && (r->media & MEDIA_TEXT)) ||
            (strcmp(format, "svg") == 0 && (r->media & MEDIA_SVG)))
            return true;
        struct api_error err;
        if (strcmp(format, "json") == 0 || strcmp(format, "text") == 0 ||
            strcmp(format, "svg") == 0) {
            api_error_set(&err, API_NOT_ACCEPTABLE, "%s cannot be served as %s", r->path, format);
        } else {
            api_error_set(&err, API_INVALID_VALUE, "format \"%.32s\" is not known; use json, "
                          "text or svg", format);
        }
        snprintf(err.parameter, sizeof err.parameter, "format");
        api_respond_error(res, &err);
        return false;
    }
    if (accept_pick(req->accept, r->media) != 0)
        return true;
    char detail[320], made[96];
    media_names(r->media, made, sizeof made);
    snprintf(detail, sizeof detail, "Accept: %.160s cannot be served by %s, which produces %s",
             req->accept, r->path, made);
    respond_problem(res, API_NOT_ACCEPTABLE, detail);
    return false;
}

/* Bodies are read as JSON when declared as JSON, text, curl -d's form type, or not at all. */
static bool content_type_ok(const char *ct)
{
    static const char *const accepted[] = { "application/json", "text/plain",
                                            "application/x-www-form-urlencoded" };
    if (ct == NULL)
        return true;
    while (*ct == ' ')
        ct++;
    size_t len = strcspn(ct, "; \t");
    if (len == 0)
        return true;
    for (size_t i = 0; i < 3; i++)
        if (len == strlen(accepted[i]) && strncasecmp(ct, accepted[i], len) == 0)
            return true;
    return false;
}

/* Route, method, Accept and Content-Type: the checks that need no body. */
static const struct route *admit(const struct api_request *req, struct api_response *res)
{
    const struct route *r = find_route(req->path);
    if (r == NULL) {
        respond_not_found(req->path, res);
        return NULL;
    }
    if (!(method_bit(req->method) & r->methods)) {
        respond_method_not_allowed(r, req->method, res);
        return NULL;
    }
    if (!negotiate(r, req, res))
        return NULL;
    if (r->takes_body && !content_type_ok(req->content_type)) {
        char detail[300];
        snprintf(detail, sizeof detail, "Content-Type %.100s is not read; send "
                 "application/json (text/plain, application/x-www-form-urlencoded or no "
                 "Content-Type are read as JSON too)", req->content_type);
        respond_problem(res, API_UNSUPPORTED_MEDIA_TYPE, detail);
        return NULL;
    }
    return r;
}

bool api_precheck(const struct api_context *ctx, const struct api_request *req,
                  long long declared_length, struct api_response *res)
{
    const struct route *r = admit(req, res);
    if (r == NULL)
        return true;
    if (!r->takes_body) {
        r->handle(ctx, req, res);
        return true;
    }
    if (declared_length >= 0 && (unsigned long long)declared_length > ctx->limits.max_body) {
        api_respond_too_large(ctx, res);
        return true;
    }
    return false;
}

void api_handle(const struct api_context *ctx, const struct api_request *req,
                struct api_response *res)
{
    const struct route *r = admit(req, res);
    if (r == NULL)
        return;
    if (r->takes_body && req->body_len > ctx->limits.max_body) {
        api_respond_too_large(ctx, res);
        return;
    }
    /* Every jansson node of this request is cut from one arena, released at once. */
    struct api_json_arena arena;
    api_json_arena_begin(&arena);
    r->handle(ctx, req, res);
    api_json_arena_end(&arena);
}
