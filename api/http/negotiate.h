/*
 * api/http/negotiate.h — what a route may answer with and what the client accepts:
 * ?format (which wins), then Accept with its q values (RFC 9110 §12.5.1); and the
 * Content-Types a body is read from.
 */
#ifndef API_HTTP_NEGOTIATE_H
#define API_HTTP_NEGOTIATE_H

#include <stdbool.h>

#include "api/http/context.h"
#include "api/http/response.h"

/* What a route's handler may answer with, beyond problem+json (bits). */
enum api_media {
    API_MEDIA_JSON = 1, API_MEDIA_YAML = 2, API_MEDIA_HTML = 4, API_MEDIA_TEXT = 8,
    API_MEDIA_SVG = 16
};

/*
 * True when the request can be answered from `media` (the bits of what the route at
 * `path` makes); else false with res the 406 (or 400 for an unknown ?format).
 */
bool api_negotiate(const struct api_request *req, const char *path, unsigned media,
                   struct api_response *res);

/* The format a 200 takes among `media`: ?format when it names one, else Accept. */
enum api_format api_negotiated_format(const struct api_request *req, unsigned media);

/* Bodies are read as JSON when declared as JSON, text, curl -d's form type, or not at all. */
bool api_content_type_readable(const char *content_type);

#endif
