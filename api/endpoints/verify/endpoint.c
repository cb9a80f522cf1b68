/*
 * api/endpoints/verify/endpoint.c — POST /v1/verify through the one pipeline
 * (endpoints/pipeline.h): parse (verify/parse.c), admit and run (verify/run.c), then
 * the verdict as JSON (verify/json.c) or text (verify/page.c).
 */
#include "api/endpoints/verify/verify.h"

#include "api/endpoints/handlers.h"
#include "api/endpoints/pipeline.h"
#include "api/http/admission.h"
#include "api/http/respond.h"
#include "api/json/matrix_write.h"

struct verify_state {
    struct api_verify_req req;
    enum api_format format;
};

static bool parse(void *state, const json_t *doc, const struct api_context *ctx,
                  enum api_format format, struct api_error *err)
{
    struct verify_state *st = state;
    st->format = format;
    return api_verify_parse(doc, &ctx->limits, &st->req, err);
}

static bool admit(void *state, const struct api_context *ctx, size_t body_len,
                  struct api_error *err)
{
    const struct verify_state *st = state;
    return api_admit(ctx, api_verify_working_set(&st->req, st->format, body_len),
                     api_verify_limit_field(&st->req), err);
}

static bool run(void *state, struct api_error *err)
{
    struct verify_state *st = state;
    return api_verify_run(&st->req, err);
}

static void respond(void *state, const struct api_context *ctx, struct api_response *res)
{
    const struct verify_state *st = state;
    if (st->format == API_FORMAT_JSON) {
        struct jw w;
        size_t numbers = 64 * API_VERIFY_TENSORS;
        const struct api_verify_verdict *v = &st->req.verdict;
        for (int t = 0; v->include_gold && t < API_VERIFY_TENSORS; t++)
            numbers += v->candidate[t].rows * v->candidate[t].cols;
        api_write_start(&w, st->req.gold.req.grid.round, numbers, ctx->segments_ok);
        api_verify_write(&w, &st->req.verdict);
        api_respond_json(res, &w);
        return;
    }
    struct api_buf b;
    api_buf_init(&b);
    api_verify_text(&b, &st->req.verdict);
    api_respond_page(res, &b, st->format);
}

static void deinit(void *state)
{
    struct verify_state *st = state;
    api_verify_req_deinit(&st->req);
}

static const struct api_endpoint verify = {
    .parse = parse, .admit = admit, .run = run, .respond = respond, .deinit = deinit,
    .errors = API_ERRORS_PROBLEM,
};

void api_verify_handle(const struct api_context *ctx, const struct api_request *req,
                       enum api_format format, struct api_response *res)
{
    struct verify_state state = { .format = format };
    api_pipeline_run(&verify, &state, ctx, req, format, res);
}
