/*
 * api/http/context.c — the limit defaults and the query parameters (see context.h).
 */
#include "api/http/context.h"

#include <string.h>

struct api_limits api_default_limits(void)
{
    struct api_limits l = { (size_t)API_DEFAULT_MAX_BODY, (size_t)API_DEFAULT_MAX_CELLS,
                            (size_t)API_DEFAULT_MAX_BATCH, (size_t)API_DEFAULT_MAX_REQUEST_BYTES,
                            (size_t)API_DEFAULT_MAX_WORK };
    return l;
}

const char *api_request_param(const struct api_request *req, const char *name)
{
    for (size_t i = 0; i < req->n_params; i++)
        if (strcmp(req->params[i].name, name) == 0)
            return req->params[i].value;
    return NULL;
}
