/*
 * api/endpoints/multihead/endpoint.c — POST /v1/multihead through the one pipeline
 * (endpoints/pipeline.h): parse (multihead/parse.c), admit before `random` fills
 * anything, run (multihead/run.c: the fill, then the computation), then the answer as JSON
 * (multihead/json.c), text or SVG (multihead/page.c), or bertviz's weights
 * (bertviz.c).
 */
#include "api/endpoints/multihead/multihead.h"

#include "api/endpoints/attention/page.h"
#include "api/endpoints/bertviz.h"
#include "api/endpoints/handlers.h"
#include "api/endpoints/multihead/page.h"
#include "api/endpoints/pipeline.h"
#include "api/http/admission.h"
#include "api/http/respond.h"
#include "api/json/matrix_write.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The request and its results, on the handler's stack. */
struct multihead_state {
    struct api_multihead_req req;
    struct attn_mh_trace trace;     /* the whole path's, or a view of the streamed answer */
    struct attn_mh_stream stream;   /* a streamed request's answer */
    struct attn_trace *views;       /* [h]: its heads as traces with no (n_q, n_k) step */
    enum api_format format;
};

static bool parse(void *state, const json_t *doc, const struct api_context *ctx,
                  enum api_format format, struct api_error *err)
{
    struct multihead_state *st = state;
    st->format = format;
    return api_multihead_parse(doc, "", &ctx->limits, format, &st->req, err);
}

/* The working set and its pointer (api/http/admission.h) once req is parsed. */
static bool admit(void *state, const struct api_context *ctx, size_t body_len,
                  struct api_error *err)
{
    const struct multihead_state *st = state;
    const struct api_multihead_req *r = &st->req;
    size_t n_q = r->x_q.rows, n_k = r->cross ? r->x_kv.rows : r->x_q.rows;
    char ptr[160];
    api_multihead_limit_pointer(r, "", n_q, n_k, ptr, sizeof ptr);
    size_t bytes = api_multihead_working_set(r, n_q, n_k, st->format, body_len);
    size_t more = 0;
    if (st->format == API_FORMAT_BERTVIZ) {
        more = api_bertviz_token_bytes(n_q, n_k, body_len);
    } else if (st->format == API_FORMAT_SVG) {
        /* each cell's tooltip, in a panel a head and one for the mean */
        size_t panel = api_page_tips_bytes(r->grid.labels, n_q, n_k);
        more = panel > SIZE_MAX / (r->heads + 1) ? SIZE_MAX : panel * (r->heads + 1);
    }
    bytes = bytes > SIZE_MAX - more ? SIZE_MAX : bytes + more;
    return api_admit(ctx, bytes, ptr, err);
}

static bool run(void *state, struct api_error *err)
{
    struct multihead_state *st = state;
    if (!api_multihead_fill_random(&st->req, err) || !api_multihead_prepare_shown(&st->req, err))
        return false;
    if (!st->req.streamed) /* decode after the full pass it is compared with */
        return api_multihead_run(&st->req, "", &st->trace, err) &&
               api_multihead_decode(&st->req, "", &st->trace, err);
    if (!api_multihead_stream(&st->req, "", &st->stream, err))
        return false;
    if ((st->views = calloc(st->req.heads, sizeof *st->views)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu heads", st->req.heads);
        return false;
    }
    api_multihead_stream_view(&st->stream, st->views, &st->trace);
    return true;
}

/* Answers 200 in the chosen format (or 503 when memory ran out). */
static void respond(void *state, const struct api_context *ctx, struct api_response *res)
{
    const struct multihead_state *st = state;
    const struct api_multihead_req *req = &st->req;
    const struct attn_mh_trace *trace = &st->trace;
    if (st->format == API_FORMAT_JSON) {
        struct jw w;
        size_t numbers = req->streamed /* the projections, outputs and row statistics */
            ? 4 * trace->n_q * trace->d_model + 2 * trace->n_k * trace->kv_heads * trace->d_k +
                  4 * trace->heads * trace->n_q
            : attn_mh_trace_cells(trace->n_q, trace->n_k, trace->d_model, trace->heads,
                                  trace->kv_heads);
        numbers += api_multihead_decode_numbers(req, req->x_q.rows); /* a size hint */
        api_write_start(&w, req->grid.round, numbers, ctx->segments_ok);
        api_multihead_write(&w, req, trace);
        api_respond_json(res, &w);
        return;
    }
    if (st->format == API_FORMAT_BERTVIZ) {
        struct api_bertviz view = { trace->head, trace->heads, trace->n_q, trace->n_k,
                                    req->grid.labels, req->cross };
        api_bertviz_respond(res, &view, req->grid.round, ctx->segments_ok);
        return;
    }
    struct api_buf b;
    api_buf_init(&b);
    if (st->format == API_FORMAT_SVG)
        api_multihead_svg(&b, req, trace);
    else
        api_multihead_text(&b, req, trace);
    api_respond_page(res, &b, st->format);
}

static void deinit(void *state)
{
    struct multihead_state *st = state;
    if (st->views != NULL) /* the trace is a view: the stream owns its numbers */
        memset(&st->trace, 0, sizeof st->trace);
    free(st->views);
    attn_mh_trace_free(&st->trace);
    attn_mh_stream_free(&st->stream);
    api_multihead_req_deinit(&st->req);
}

static const struct api_endpoint multihead = {
    .parse = parse, .admit = admit, .run = run, .respond = respond, .deinit = deinit,
    .errors = API_ERRORS_PROBLEM,
};

void api_multihead_handle(const struct api_context *ctx, const struct api_request *req,
                          enum api_format format, struct api_response *res)
{
    struct multihead_state state = { .format = format };
    api_pipeline_run(&multihead, &state, ctx, req, format, res);
}
