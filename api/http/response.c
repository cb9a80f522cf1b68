/*
 * api/http/response.c — headers and the release of an answer (see response.h).
 */
#include "api/http/response.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool api_response_add_header(struct api_response *res, const char *name, const char *value)
{
    if (res->n_headers >= API_MAX_HEADERS)
        return false;
    struct api_header *h = &res->headers[res->n_headers++];
    h->name = name;
    snprintf(h->value, sizeof h->value, "%s", value);
    return true;
}

void api_response_deinit(struct api_response *res)
{
    api_segments_free(res->segments);
    free(res->body);
    memset(res, 0, sizeof *res);
}
