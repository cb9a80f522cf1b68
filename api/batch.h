/*
 * api/batch.h — POST /v1/attention/batch: {"items": [request, ...]} →
 * {"results": [{"status": 200, "body": {...}} | {"status": 422, "body": {problem}}]}.
 */
#ifndef API_BATCH_H
#define API_BATCH_H

#include <stddef.h>

#include "api/api.h"

void api_batch_handle(const struct api_context *ctx, const char *body, size_t len,
                      struct api_response *res);

#endif
