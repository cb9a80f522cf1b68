/*
 * api/http/response.h — the answer: status, headers, content type and a body that
 * is one buffer or pieces. This module owns struct api_response; every writer of
 * answers (http/respond.h, http/problem.h) builds on it, and nothing it calls lies
 * above it.
 */
#ifndef API_HTTP_RESPONSE_H
#define API_HTTP_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>

#include "api/json/segments.h"

#define API_MAX_HEADERS 6

/* Seconds a 503 asks the client to wait (Retry-After). */
#define API_RETRY_AFTER_SECONDS "1"

struct api_header {
    const char *name; /* static string, e.g. "Allow" */
    char value[192];
};

/*
 * The answer. body is malloc'd and owned by the response: api_response_deinit
 * frees it (the server may take it over instead: then set body to NULL first).
 * When the context allows it (api_context.segments_ok), a large JSON answer written
 * on several threads comes as `segments` instead (body NULL, body_len their total):
 * the pieces the threads wrote, never copied into one buffer.
 */
struct api_response {
    int status;
    const char *content_type; /* static string */
    struct api_header headers[API_MAX_HEADERS];
    size_t n_headers;
    char *body;
    size_t body_len;
    struct api_segments *segments; /* owned, like body; NULL unless segments_ok */
    /*
     * Admission answered API_ADMIT_ELSEWHERE (api_context.admit): nothing was
     * computed and there is no answer (status 0, no body). The caller runs the same
     * request again where large work may take its time.
     */
    bool deferred;
};

/* Adds a header to the response; false when API_MAX_HEADERS are used. */
bool api_response_add_header(struct api_response *res, const char *name, const char *value);

/* Frees the body (or segments) and zeroes *res. Safe on a zeroed response. */
void api_response_deinit(struct api_response *res);

#endif
