/*
 * api/endpoints/multihead/rows.c — `rows` and the streamed route on /v1/multihead
 * (DESIGN.md, "Row statistics, rows, and any length"), as /v1/attention has them.
 *
 * With rows and every step within --max-cells, the problem is computed whole and the
 * trace then replaced by one of the listed rows (core's attn_mh_trace_select_rows): the
 * writers answer (len(rows), …) without knowing rows exist; the warnings and the pages'
 * labels name the real rows. A request whose per-head (n_q, n_k) steps are over
 * --max-cells but whose answer needs none of them is streamed (core's
 * attn_mh_forward_stream): its working set is the inputs, the projections, the answer
 * and one head's fixed scratch, whatever n_q and n_k.
 */
#include "api/endpoints/multihead/multihead.h"

#include <stdint.h>
#include <stdlib.h>

#include "api/i18n/lang.h"
#include "api/json/spare_threads.h"
#include "api/request/fields.h"
#include "api/request/rows.h"

bool api_multihead_read_rows(const json_t *doc, const char *prefix, enum api_format format,
                             struct api_multihead_req *r, size_t n_q, struct api_error *err)
{
    const json_t *node = api_member(doc, "rows");
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "rows");
    if (format == API_FORMAT_BERTVIZ) {
        api_error_set(err, API_INVALID_VALUE, "rows cannot be combined with %s", "format=bertviz");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "bertviz draws every query of a sentence: leave rows out");
        return false;
    }
    char explain_ptr[160];
    API_FIELD_POINTER(explain_ptr, prefix, "explain/row");
    return api_read_rows(node, ptr, r->cross ? "x_q" : "x", n_q, &r->rows, &r->n_rows, err) && /* deinit frees rows */
           (!r->explain.on ||
            api_rows_check_explain(r->rows, r->n_rows, r->explain.row, explain_ptr, err));
}

size_t api_multihead_answer_rows(const struct api_multihead_req *r)
{
    return r->rows != NULL ? r->n_rows : r->x_q.rows;
}

bool api_multihead_streams(const struct api_multihead_req *r, enum api_format format)
{
    /* The inputs, the projections, the heads' outputs and the row statistics: none
     * needs a head's (n_q, n_k) steps; the summary's ties and explain's row do. */
    unsigned long streamable = (1ul << API_MH_Q) | (1ul << API_MH_K) | (1ul << API_MH_V) |
                               (1ul << API_MH_HEAD_OUTPUTS) | (1ul << API_MH_CONCAT) |
                               (1ul << API_MH_OUTPUT) | (1ul << API_MH_ROW_SUM) |
                               (1ul << API_MH_LSE) | (1ul << API_MH_BLOCK_MAP);
    for (int p = API_MH_X; p <= API_MH_W_O; p++)
        streamable |= 1ul << p;
    /* decode is compared with the full pass's weights, and backward reads every step:
     * both need them built */
    return format == API_FORMAT_JSON && !r->explain.on && !r->variants.dropout && !r->decode.on &&
           !r->precision.on && !r->backward.on && (r->include & ~streamable) == 0;
}

static size_t mul_sat(size_t a, size_t b)
{
    int overflow = 0;
    size_t c = attn_cells(a, b, &overflow);
    return overflow ? SIZE_MAX : c;
}

/* A 422 at pointer: `what` would have rows x cols cells, over --max-cells. */
static bool over_cells(const char *pointer, const char *what, size_t rows, size_t cols,
                       const struct api_limits *limits, struct api_error *err)
{
    api_error_set(err, API_LIMIT_EXCEEDED, "%s would have %zu x %zu cells; this server computes "
                  "at most %zu cells in one matrix", what, rows, cols, limits->max_cells);
    api_error_at(err, "%s", pointer);
    return false;
}

bool api_multihead_check_maps(struct api_multihead_req *r, const char *prefix, size_t n_q,
                              size_t n_k, enum api_format format,
                              const struct api_limits *limits, struct api_error *err)
{
    char heads_ptr[128], rows_ptr[128];
    API_FIELD_POINTER(heads_ptr, prefix, "heads");
    API_FIELD_POINTER(rows_ptr, prefix, "rows");
    size_t per_head = mul_sat(n_q, n_k), n_rows = api_multihead_answer_rows(r);
    if (mul_sat(per_head, r->heads) > limits->max_cells) {
        if (!api_multihead_streams(r, format)) {
            over_cells(heads_ptr, API_TR("the per-head scores (heads x n_q x n_k)"), per_head,
                       r->heads, limits, err);
            api_error_hint(err, "send fewer rows or heads, or ask as JSON only for what needs "
                           "no such matrix (the inputs, q, k, v, head_outputs, concat, output, "
                           "row_sum, lse), without explain or dropout");
            return false;
        }
        r->streamed = true;
        /* What is built then: the listed rows' projections and outputs. */
        if (mul_sat(n_rows, r->d_model) > limits->max_cells)
            return over_cells(rows_ptr, API_TR("the listed rows' output"), n_rows, r->d_model, limits,
                              err);
        return true;
    }
    if (r->rows != NULL && mul_sat(mul_sat(n_rows, n_k), r->heads) > limits->max_cells)
        return over_cells(rows_ptr, API_TR("the listed rows' per-head scores (heads x len(rows) x n_k)"),
                          mul_sat(n_rows, n_k), r->heads, limits, err);
    return true;
}

/* The threads a head may take: as many as the full path would be lent (the most, for
 * admission, which comes before the run). */
size_t api_multihead_stream_bytes(const struct api_multihead_req *r, size_t n_q, size_t n_k)
{
    unsigned most = api_spare_threads_most_for(mul_sat(n_q, n_k));
    size_t bytes = attn_mh_stream_bytes(api_multihead_answer_rows(r), n_q, n_k, r->d_model,
                                        r->heads, r->kv_heads, most);
    if (bytes == 0)
        return SIZE_MAX;
    /* RoPE's rotated keys and tables, one head at a time (core counts them as inputs) */
    size_t rope = r->variants.has_rope ? mul_sat(mul_sat(n_q + n_k + 1, r->d_k), 2 * sizeof(double))
                                       : 0;
    return bytes > SIZE_MAX - rope ? SIZE_MAX : bytes + rope;
}

bool api_multihead_select_rows(const struct api_multihead_req *r, struct attn_mh_trace *trace,
                               struct api_error *err)
{
    if (r->rows == NULL)
        return true;
    struct attn_mh_trace picked;
    struct attn_vtrace *vpicked = NULL;
    struct attn_variants *of = NULL;
    enum attn_status st = ATTN_ENOMEM;
    if (r->variants.any) {
        vpicked = calloc(r->heads, sizeof *vpicked);
        of = malloc(r->heads * sizeof *of);
        for (size_t h = 0; of != NULL && h < r->heads; h++)
            of[h] = api_variants_for_head(&r->variants, h);
    }
    if (!r->variants.any || (vpicked != NULL && of != NULL))
        st = attn_mh_trace_select_rows(&picked, trace, r->rows, r->n_rows, of, r->vsteps,
                                       vpicked);
    free(of);
    attn_mh_trace_free(trace);
    if (st != ATTN_OK) {
        free(vpicked);
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu rows of %zu heads", r->n_rows,
                      r->heads);
        return false;
    }
    *trace = picked;
    for (size_t h = 0; vpicked != NULL && h < r->heads; h++) {
        attn_vtrace_free(&r->vsteps[h]);
        r->vsteps[h] = vpicked[h]; /* the request keeps owning its heads' steps */
    }
    free(vpicked);
    return true;
}

void api_multihead_stream_view(const struct attn_mh_stream *s, struct attn_trace *heads,
                               struct attn_mh_trace *view)
{
    *view = (struct attn_mh_trace){
        .n_q = s->n_rows, .n_k = s->n_k, .d_model = s->d_model, .heads = s->heads,
        .kv_heads = s->kv_heads, .d_k = s->d_k, .q = s->q, .k = s->k, .v = s->v,
        .head = heads, .concat = s->concat, .output = s->output,
    };
    for (size_t h = 0; h < s->heads; h++)
        heads[h] = (struct attn_trace){ .n_q = s->n_rows, .n_k = s->n_k, .d_v = s->d_k,
                                        .output = s->head[h].output,
                                        .summary = s->head[h].summary };
}
