/*
 * api/endpoints/attention/endpoint.c — POST /v1/attention through the one pipeline
 * (endpoints/pipeline.h): parse (attention/parse.c), admit and run
 * (attention/run.c), then the answer as JSON (attention/json.c), text or SVG
 * (attention/page.c), or bertviz's weights (bertviz.c).
 */
#include "api/endpoints/attention/attention.h"

#include "api/endpoints/attention/page.h"
#include "api/endpoints/bertviz.h"
#include "api/endpoints/handlers.h"
#include "api/endpoints/pipeline.h"
#include "api/http/admission.h"
#include "api/http/respond.h"
#include "api/json/matrix_write.h"

#include <stdint.h>

/* The request and its results, on the handler's stack. */
struct attention_state {
    struct api_attention_req req;
    struct attn_trace trace;   /* the steps, or */
    struct attn_stream stream; /*   the output and row statistics of a streamed request */
    enum api_format format;
};

static bool parse(void *state, const json_t *doc, const struct api_context *ctx,
                  enum api_format format, struct api_error *err)
{
    struct attention_state *st = state;
    st->format = format;
    if (!api_attention_parse(doc, "", &ctx->limits, &st->req, err))
        return false;
    st->req.for_page = format == API_FORMAT_TEXT || format == API_FORMAT_SVG;
    /* The parse streams documents and chunks by choice (they hide most keys), before it
     * knows the answer is a page; a page draws every step, which fit --max-cells here. */
    if (st->req.streamed && format != API_FORMAT_JSON &&
        api_attention_cells_fit(&st->req, &ctx->limits))
        st->req.streamed = false;
    if (st->req.streamed && format != API_FORMAT_JSON) { /* pages draw the weights */
        api_attention_refuse_cells(&st->req, "", &ctx->limits, false, err);
        api_attention_req_deinit(&st->req); /* a failed parse leaves nothing to free */
        return false;
    }
    if (format == API_FORMAT_BERTVIZ && st->req.rows != NULL) {
        api_error_set(err, API_INVALID_VALUE, "rows cannot be combined with %s", "format=bertviz");
        api_error_at(err, "/rows");
        api_error_hint(err, "bertviz draws every query of a sentence: leave rows out");
        api_attention_req_deinit(&st->req); /* a failed parse leaves nothing to free */
        return false;
    }
    if (format == API_FORMAT_BERTVIZ)
        st->req.include = 1ul << API_PART_WEIGHTS; /* all bertviz draws: no other step kept */
    return true;
}

static bool admit(void *state, const struct api_context *ctx, size_t body_len,
                  struct api_error *err)
{
    const struct attention_state *st = state;
    size_t bytes = api_attention_working_set(&st->req, st->format, body_len);
    size_t more = 0;
    if (st->format == API_FORMAT_BERTVIZ)
        more = api_bertviz_token_bytes(st->req.q.rows, st->req.k.rows, body_len);
    else if (st->format == API_FORMAT_SVG) /* each cell's tooltip */
        more = api_page_tips_bytes(st->req.grid.labels, st->req.q.rows, st->req.k.rows);
    bytes = bytes > SIZE_MAX - more ? SIZE_MAX : bytes + more;
    if (st->format == API_FORMAT_SVG) { /* each tile's outline */
        more = api_attention_svg_tiles_bytes(&st->req);
        bytes = bytes > SIZE_MAX - more ? SIZE_MAX : bytes + more;
    }
    return api_admit(ctx, bytes, api_attention_limit_field(&st->req), err);
}

static bool run(void *state, struct api_error *err)
{
    struct attention_state *st = state;
    if (!api_attention_fill_random(&st->req, err) || !api_attention_prepare_shown(&st->req, err))
        return false;
    if (st->req.streamed)
        return api_attention_stream(&st->req, "", &st->stream, err) &&
               (!st->req.backward.on || api_attention_stream_backward(&st->req, &st->stream, err));
    return api_attention_run(&st->req, "", &st->trace, err);
}

/* Answers 200 in the chosen format (or 503 when memory ran out). */
static void respond(void *state, const struct api_context *ctx, struct api_response *res)
{
    const struct attention_state *st = state;
    const struct api_attention_req *req = &st->req;
    const struct attn_trace *trace = &st->trace;
    struct attn_trace streamed; /* a streamed answer as a trace with no (n_q, n_k) steps */
    if (req->streamed) {
        streamed = (struct attn_trace){ .n_q = st->stream.n_rows, .n_k = req->k.rows,
                                        .d_v = st->stream.d_v, .output = st->stream.output,
                                        .summary = st->stream.summary };
        trace = &streamed;
    }
    if (st->format == API_FORMAT_JSON) {
        struct jw w;
        size_t numbers = req->streamed ? trace->n_q * (trace->d_v + 4) /* output, stats */
                                       : attn_trace_cells(trace->n_q, trace->n_k, trace->d_v);
        api_write_start(&w, req->grid.round, numbers, ctx->segments_ok);
        api_attention_write(&w, req, trace);
        api_respond_json(res, &w);
        return;
    }
    if (st->format == API_FORMAT_BERTVIZ) {
        struct api_bertviz view = { trace, 1, trace->n_q, trace->n_k, req->grid.labels, false };
        api_bertviz_respond(res, &view, req->grid.round, ctx->segments_ok);
        return;
    }
    struct api_buf b;
    api_buf_init(&b);
    if (st->format == API_FORMAT_SVG)
        api_attention_svg(&b, req, trace);
    else
        api_attention_text(&b, req, trace);
    api_respond_page(res, &b, st->format);
}

static void deinit(void *state)
{
    struct attention_state *st = state;
    attn_trace_free(&st->trace);
    attn_stream_free(&st->stream);
    api_attention_req_deinit(&st->req);
}

static const struct api_endpoint attention = {
    .parse = parse, .admit = admit, .run = run, .respond = respond, .deinit = deinit,
    .errors = API_ERRORS_PROBLEM,
};

void api_attention_handle(const struct api_context *ctx, const struct api_request *req,
                          enum api_format format, struct api_response *res)
{
    struct attention_state state = { .format = format };
    api_pipeline_run(&attention, &state, ctx, req, format, res);
}
