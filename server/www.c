/*
 * server/www.c — serving the playground's compiled-in files (see www.h).
 */
#include "server/www.h"

#include <stdlib.h>
#include <string.h>

#include "server/ops/words.h"

/* Linked in by server/www.S. */
extern const char srv_www_index_html[], srv_www_index_html_end[];
extern const char srv_www_app_js[], srv_www_app_js_end[];
extern const char srv_www_app_css[], srv_www_app_css_end[];
extern const char srv_www_headview_js[], srv_www_headview_js_end[];
extern const char srv_www_fields_js[], srv_www_fields_js_end[];
extern const char srv_www_favicon_svg[], srv_www_favicon_svg_end[];

struct srv_www_file {
    const char *path;
    const char *type;
    const char *start, *end;
    const char *listed; /* what the 404's list says of it; NULL: not listed */
};

#define SRV_WWW_JS "text/javascript; charset=utf-8"
#define SRV_WWW_BYTES(name) .start = srv_www_##name, .end = srv_www_##name##_end

static const struct srv_www_file srv_www_files[] = {
    { .path = "/", .type = "text/html; charset=utf-8", SRV_WWW_BYTES(index_html),
      .listed = SRV_N("the playground") },
    { .path = "/playground.js", .type = SRV_WWW_JS, SRV_WWW_BYTES(app_js) },
    { .path = "/playground.css", .type = "text/css; charset=utf-8", SRV_WWW_BYTES(app_css) },
    { .path = "/playground-headview.js", .type = SRV_WWW_JS, SRV_WWW_BYTES(headview_js) },
    { .path = "/playground-fields.js", .type = SRV_WWW_JS, SRV_WWW_BYTES(fields_js) },
    /* The page links the SVG; /favicon.ico is what a browser asks for when a page names
     * no icon (another page of this origin, the spec): the same icon, by its type. */
    { .path = "/favicon.svg", .type = "image/svg+xml", SRV_WWW_BYTES(favicon_svg) },
    { .path = "/favicon.ico", .type = "image/svg+xml", SRV_WWW_BYTES(favicon_svg) },
};

bool srv_www_route(void)
{
    for (size_t i = 0; i < sizeof srv_www_files / sizeof srv_www_files[0]; i++)
        if (!api_route_add_file(srv_www_files[i].path, srv_www_files[i].listed))
            return false;
    return true;
}

bool srv_www_respond(const char *path, const struct api_request *req, struct api_response *res)
{
    for (size_t i = 0; i < sizeof srv_www_files / sizeof srv_www_files[0]; i++) {
        const struct srv_www_file *f = &srv_www_files[i];
        if (strcmp(path, f->path) != 0)
            continue;
        size_t len = (size_t)(f->end - f->start);
        /* A copy, because the response's body is freed once sent. */
        char *body = malloc(len + 1);
        if (body == NULL) {
            api_respond_server_reason(res, req, API_UNAVAILABLE,
                                      SRV_N("the server is out of memory"));
            return true;
        }
        memcpy(body, f->start, len);
        body[len] = '\0';
        res->status = 200;
        res->content_type = f->type;
        res->body = body;
        res->body_len = len;
        api_response_add_header(res, "Content-Security-Policy", SRV_WWW_CSP);
        api_response_add_header(res, "X-Content-Type-Options", "nosniff");
        api_response_add_header(res, "Cache-Control", "no-cache");
        api_response_add_header(res, "Referrer-Policy", "no-referrer");
        return true;
    }
    return false;
}
