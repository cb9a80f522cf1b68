/*
 * api/endpoints/pipeline.c — parse → admit → run → respond → deinit (see pipeline.h).
 */
#include "api/endpoints/pipeline.h"

#include "api/request/body.h"

void api_pipeline_run(const struct api_endpoint *e, void *state, const struct api_context *ctx,
                      const struct api_request *req, enum api_format format,
                      struct api_response *res)
{
    struct api_error err;
    json_t *doc = e->read != NULL ? e->read(state, req, &err)
                                  : api_parse_body(req->body, req->body_len, &err);
    if (doc == NULL) {
        api_respond_error_as(res, &err, e->errors);
        return;
    }
    bool parsed = e->parse(state, doc, ctx, format, &err);
    if (parsed && e->admit(state, ctx, req->body_len, &err) &&
        (e->run == NULL || e->run(state, &err)))
        e->respond(state, ctx, res);
    else
        api_respond_error_as(res, &err, e->errors);
    if (parsed)
        e->deinit(state);
    api_release_body(doc);
}
