/*
 * api/http/negotiate.h — what a route may answer with and what the client accepts:
 * ?format (which wins), then Accept with its q values (RFC 9110 §12.5.1); and the
 * Content-Types a body is read from.
 */
#ifndef API_HTTP_NEGOTIATE_H
#define API_HTTP_NEGOTIATE_H

#include <stdbool.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/response.h"

/* What a route's handler may answer with, beyond problem+json (bits). */
enum api_media {
    API_MEDIA_JSON = 1, API_MEDIA_YAML = 2, API_MEDIA_HTML = 4, API_MEDIA_TEXT = 8,
    API_MEDIA_SVG = 16, API_MEDIA_OCTETS = 32,
    /* bertviz's JSON: asked for by ?format=bertviz alone, as no media type names it */
    API_MEDIA_BERTVIZ = 64
};

/*
 * True when the request can be answered from `media` (the bits of what the route at
 * `path` makes); else false with res the 406 (or 400 for an unknown ?format), written
 * in the route's error style.
 */
bool api_negotiate(const struct api_request *req, const char *path, unsigned media,
                   enum api_error_style style, struct api_response *res);

/* The format a 200 takes among `media`: ?format when it names one, else Accept. */
enum api_format api_negotiated_format(const struct api_request *req, unsigned media);

/* What a route reads a body from (bits), by Content-Type. */
enum api_body_kind {
    API_BODY_JSON = 1,  /* application/json, text/plain, curl -d's form type, or none */
    API_BODY_OCTETS = 2 /* application/octet-stream (a V2 body: JSON header and tensors) */
};

/* Whether a body declared as content_type (NULL: none) is one of `kinds`. */
bool api_content_type_readable(const char *content_type, unsigned kinds);

#endif
