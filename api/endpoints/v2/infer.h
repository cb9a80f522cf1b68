/*
 * api/endpoints/v2/infer.h — POST /v2/models/{model}[/versions/1]/infer (v2/infer.c).
 */
#ifndef API_ENDPOINTS_V2_INFER_H
#define API_ENDPOINTS_V2_INFER_H

#include "api/endpoints/v2/common.h"
#include "api/http/context.h"
#include "api/http/response.h"

/* POST /v2/models/{model}[/versions/1]/infer. */
void api_v2_infer(const struct api_context *ctx, const struct api_request *req,
                  enum api_v2_model model, struct api_response *res);

#endif
