/*
 * server/www.c — serving the playground's compiled-in files (see www.h).
 */
#include "server/www.h"

#include <stdlib.h>
#include <string.h>

#include "server/words.h"

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
};

static const struct srv_www_file srv_www_files[] = {
    { "/", "text/html; charset=utf-8", srv_www_index_html, srv_www_index_html_end },
    { "/playground.js", "text/javascript; charset=utf-8", srv_www_app_js, srv_www_app_js_end },
    { "/playground.css", "text/css; charset=utf-8", srv_www_app_css, srv_www_app_css_end },
    { "/playground-headview.js", "text/javascript; charset=utf-8", srv_www_headview_js,
      srv_www_headview_js_end },
    { "/playground-fields.js", "text/javascript; charset=utf-8", srv_www_fields_js,
      srv_www_fields_js_end },
    /* The page links the SVG; /favicon.ico is what a browser asks for when a page names
     * no icon (another page of this origin, the spec): the same icon, by its type. */
    { "/favicon.svg", "image/svg+xml", srv_www_favicon_svg, srv_www_favicon_svg_end },
    { "/favicon.ico", "image/svg+xml", srv_www_favicon_svg, srv_www_favicon_svg_end },
};

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
