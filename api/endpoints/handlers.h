/*
 * api/endpoints/handlers.h — every handler the router (api/api.c) maps a path to,
 * with one signature: the router has checked the route, the method, Accept and the
 * Content-Type, and passes the format it negotiated.
 */
#ifndef API_ENDPOINTS_HANDLERS_H
#define API_ENDPOINTS_HANDLERS_H

#include "api/http/context.h"
#include "api/http/response.h"

typedef void api_handler_fn(const struct api_context *ctx, const struct api_request *req,
                            enum api_format format, struct api_response *res);

/* The computations (endpoints/attention/endpoint.c, multihead.c, batch.c, shapes.c). */
api_handler_fn api_attention_handle, api_multihead_handle, api_batch_handle, api_shapes_handle,
    api_verify_handle;

/* The Open Inference Protocol under /v2 (endpoints/v2.c): /v2, /v2/health/live and
   /ready, /v2/models/stats, and /v2/models/{model}[/versions/{version}], .../ready,
   .../stats, .../config and .../infer, and POST /v2/repository/index. */
api_handler_fn api_v2_server_handle, api_v2_live_handle, api_v2_ready_handle,
    api_v2_model_handle, api_v2_model_ready_handle, api_v2_infer_handle, api_v2_stats_handle,
    api_v2_model_stats_handle, api_v2_model_config_handle, api_v2_repository_index_handle;

/* The small ones (endpoints/meta.c): probes, version, the spec, the problem pages. */
api_handler_fn api_healthz_handle, api_readyz_handle, api_version_handle,
    api_openapi_yaml_handle, api_openapi_json_handle, api_problem_page_handle;

/*
 * Paths the server answers itself (/metrics from its counters, the playground from
 * its files): reached only without the server (tests, the fuzzer), a 404 saying so.
 * Their routes exist so that a wrong method is a 405 like everywhere else.
 */
api_handler_fn api_metrics_elsewhere, api_playground_elsewhere;

#endif
