/*
 * api/endpoints/pipeline.h — the one path every computing endpoint takes:
 * read the body → parse → admit → run → respond → deinit.
 *
 * An endpoint fills a struct api_endpoint with its steps and keeps its own state
 * (its validated request and its results) in a struct the handler lends on its
 * stack; api_pipeline_run calls the steps in order and turns the first failure into
 * the problem the step described. So reading the body, the error path, admission
 * and the release of the document are written once, and each new endpoint writes
 * only what differs.
 */
#ifndef API_ENDPOINTS_PIPELINE_H
#define API_ENDPOINTS_PIPELINE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/context.h"
#include "api/http/problem.h"
#include "api/http/response.h"

struct api_endpoint {
    /*
     * The document (borrowed for the call) into state, validated against the
     * contract; format is what the answer will be written as. On false, err says
     * why and state holds nothing that needs deinit.
     */
    bool (*parse)(void *state, const json_t *doc, const struct api_context *ctx,
                  enum api_format format, struct api_error *err);
    /*
     * The working set asked of the request limit and the server's budget
     * (api/http/admission.h), before anything large is allocated.
     */
    bool (*admit)(void *state, const struct api_context *ctx, size_t body_len,
                  struct api_error *err);
    /* The computation; NULL when respond computes as it writes (a batch). */
    bool (*run)(void *state, struct api_error *err);
    /* The 200 (or the 503 when its memory ran out). */
    void (*respond)(void *state, const struct api_context *ctx, struct api_response *res);
    /* Frees what parse and run made; called whenever parse succeeded. */
    void (*deinit)(void *state);
    /*
     * The document parse reads, from the request; NULL reads the whole body as JSON
     * (api_parse_body). An endpoint whose body is not one JSON document (a V2
     * request: a JSON header, then binary tensors kept in state) reads it here.
     * Returns a document for api_release_body, or NULL with err set.
     */
    json_t *(*read)(void *state, const struct api_request *req, struct api_error *err);
    /* How its errors are written (api/http/problem.h); zero: problem+json. */
    enum api_error_style errors;
};

/* Answers req's body through e's steps, with state the endpoint's own (zeroed) struct. */
void api_pipeline_run(const struct api_endpoint *e, void *state, const struct api_context *ctx,
                      const struct api_request *req, enum api_format format,
                      struct api_response *res);

#endif
