/*
 * api/endpoints/meta.c — the small endpoints: health and readiness, the version, the
 * OpenAPI description (YAML and JSON, compiled in), and a page per problem type.
 */
#include "api/endpoints/handlers.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "api/endpoints/version.h"
#include "api/http/problem.h"
#include "api/http/respond.h"
#include "api/i18n/lang.h"
#include "api/json/write.h"
#include "core/attention.h"

/* Linked in by api/embedded.S. */
extern const char api_openapi_yaml[], api_openapi_yaml_end[];
extern const char api_openapi_json[], api_openapi_json_end[];

void api_healthz_handle(const struct api_context *ctx, const struct api_request *req,
                        enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    static const char body[] = "{\"status\":\"ok\"}\n";
    api_respond_bytes(res, 200, "application/json", body, sizeof body - 1);
}

void api_readyz_handle(const struct api_context *ctx, const struct api_request *req,
                       enum api_format format, struct api_response *res)
{
    (void)req;
    (void)format;
    static const char body[] = "{\"status\":\"ready\"}\n";
    if (!ctx->ready) {
        api_respond_unavailable(res, "shutting down: finishing the requests in flight");
        return;
    }
    api_respond_bytes(res, 200, "application/json", body, sizeof body - 1);
}

void api_version_handle(const struct api_context *ctx, const struct api_request *req,
                        enum api_format format, struct api_response *res)
{
    (void)req;
    (void)format;
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

void api_openapi_yaml_handle(const struct api_context *ctx, const struct api_request *req,
                             enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    api_respond_bytes(res, 200, "application/yaml", api_openapi_yaml,
                  (size_t)(api_openapi_yaml_end - api_openapi_yaml));
}

void api_openapi_json_handle(const struct api_context *ctx, const struct api_request *req,
                             enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    api_respond_bytes(res, 200, "application/json", api_openapi_json,
                  (size_t)(api_openapi_json_end - api_openapi_json));
}

void api_problem_page_handle(const struct api_context *ctx, const struct api_request *req,
                             enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)format;
    const char *slug = req->path + strlen("/problems/");
    enum api_problem_type type;
    if (!api_problem_lookup(slug, &type)) {
        char detail[200];
        snprintf(detail, sizeof detail, API_TR("there is no problem type \"%.64s\"; the types "
                 "are listed in /openapi.yaml"), slug);
        api_respond_problem(res, API_NOT_FOUND, detail);
        return;
    }
    const struct api_problem_info *info = api_problem_info(type);
    char page[4096];
    /* Every string here is ours (the slug was matched against the table), so no escaping. */
    const char *title = api_tr(info->title);
    int n = snprintf(page, sizeof page,
                     "<!doctype html>\n<html lang=\"%s\"><head><meta charset=\"utf-8\">"
                     "<title>%s: %s</title></head>\n<body><h1>%s</h1>\n"
                     "<p><code>/problems/%s</code> &middot; HTTP %d</p>\n<p>%s</p>\n"
                     "<p>%s</p>\n</body></html>\n",
                     api_lang_code(api_lang_current()), info->slug, title, title, info->slug,
                     info->status, api_tr(info->explanation),
                     API_TR("See <a href=\"/openapi.yaml\">the API description</a>."));
    if (n < 0 || (size_t)n >= sizeof page)
        n = (int)strlen(page);
    api_respond_bytes(res, 200, "text/html; charset=utf-8", page, (size_t)n);
}

/* Only reached without the server (tests, the fuzzer): it keeps the counters. */
void api_metrics_elsewhere(const struct api_context *ctx, const struct api_request *req,
                           enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    api_respond_problem(res, API_NOT_FOUND, "/metrics is answered by the server, which keeps the "
                    "counters; api/ alone has none");
}

/* Only reached without the server (tests, the fuzzer): the page is compiled into it. */
void api_playground_elsewhere(const struct api_context *ctx, const struct api_request *req,
                              enum api_format format, struct api_response *res)
{
    (void)ctx;
    (void)req;
    (void)format;
    api_respond_problem(res, API_NOT_FOUND, "the playground page is served by the server, which "
                    "holds its files; api/ alone has none");
}

