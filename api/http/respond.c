/*
 * api/http/respond.c — a 200 from a writer, a page or bytes (see respond.h).
 */
#include "api/http/respond.h"

#include <stdlib.h>
#include <string.h>

#include "api/http/problem.h"

static void respond_out_of_memory(struct api_response *res, enum api_error_style style)
{
    struct api_error e;
    api_error_set(&e, API_UNAVAILABLE, "no memory for the response");
    api_respond_error_as(res, &e, style);
}

void api_respond_json(struct api_response *res, struct jw *w)
{
    api_respond_json_as(res, w, API_ERRORS_PROBLEM);
}

void api_respond_json_as(struct api_response *res, struct jw *w, enum api_error_style style)
{
    jw_end_line(w);
    res->segments = jw_take_segments(w);
    if (res->segments != NULL) {
        res->body = NULL;
        res->body_len = res->segments->total;
        res->status = 200;
        res->content_type = "application/json";
        return;
    }
    res->body = jw_take(w, &res->body_len);
    if (res->body == NULL) {
        respond_out_of_memory(res, style);
        return;
    }
    res->status = 200;
    res->content_type = "application/json";
}

void api_respond_page(struct api_response *res, struct api_buf *b, enum api_format format)
{
    res->body = api_buf_take(b, &res->body_len);
    if (res->body == NULL) {
        respond_out_of_memory(res, API_ERRORS_PROBLEM);
        return;
    }
    res->status = 200;
    res->content_type = format == API_FORMAT_SVG ? "image/svg+xml" : "text/plain; charset=utf-8";
}

void api_respond_bytes(struct api_response *res, int status, const char *type,
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
