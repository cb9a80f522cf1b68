/*
 * api/endpoints/attention/rows.c — `rows`: the answer for the listed query rows only, in
 * their order (DESIGN.md, "Row statistics, rows, and any length").
 *
 * The problem is computed whole, so the keys, the causal offset and every mask and
 * variant are the whole problem's; then the trace (and the variants' per-query steps) is
 * replaced by one holding only the listed rows, so every writer answers (len(rows), …)
 * without knowing rows exist. The warnings name the real rows (the writers' real_rows).
 */
#include "api/endpoints/attention/attention.h"

#include <stdint.h>

#include "api/i18n/lang.h"
#include "api/request/fields.h"
#include "api/request/rows.h"

bool api_attention_read_rows(const json_t *doc, const char *prefix, struct api_attention_req *r,
                             struct api_error *err)
{
    const json_t *node = api_member(doc, "rows");
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "rows");
    if (r->q_is_vector) {
        api_error_set(err, API_INVALID_VALUE, "rows picks rows of q, but q was sent as a "
                      "vector: one query");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "rows picks rows of a matrix q: send q as a list of rows, [[...]], "
                       "or leave rows out");
        return false;
    }
    if (r->pitfall != API_PITFALL_NONE) /* a whole problem computed the wrong way */
        return api_rows_refuse_beside(ptr, "pitfall", err);
    /* on failure the caller's deinit frees rows */
    char explain_ptr[160];
    API_FIELD_POINTER(explain_ptr, prefix, "explain/row");
    return api_read_rows(node, ptr, "q", r->q.rows, &r->rows, &r->n_rows, err) &&
           (!r->explain.on ||
            api_rows_check_explain(r->rows, r->n_rows, r->explain.row, explain_ptr, err));
}

bool api_attention_check_rows(const struct api_attention_req *r, const char *prefix,
                              const struct api_limits *limits, struct api_error *err)
{
    if (r->rows == NULL)
        return true;
    /* Streamed, the rows' output is all that is built; else their (len(rows), n_k) steps */
    size_t cols = r->streamed ? r->v.cols : r->k.rows;
    int overflow = 0;
    size_t cells = attn_cells(r->n_rows, cols, &overflow);
    if (!overflow && cells <= limits->max_cells)
        return true;
    api_error_set(err, API_LIMIT_EXCEEDED, "rows lists %zu rows: their %s would be %zu x %zu "
                  "cells; this server computes at most %zu cells in one matrix", r->n_rows,
                  r->streamed ? API_TR("output") : API_TR("score matrix"), r->n_rows, cols,
                  limits->max_cells);
    api_error_at(err, "%s/rows", prefix);
    api_error_hint(err, "list fewer rows, or each row once");
    return false;
}

size_t api_attention_answer_rows(const struct api_attention_req *r)
{
    return r->rows != NULL ? r->n_rows : r->q.rows;
}

size_t api_attention_rows_bytes(const struct api_attention_req *r)
{
    if (r->rows == NULL)
        return 0;
    size_t k = r->k.rows, per_row = 4 * k + r->v.cols + 8; /* the trace, the summary */
    if (r->variants.any)
        per_row += r->q.cols + 3 * k + 1; /* q_rope, softcapped, keep, dropped, sink */
    return r->n_rows > SIZE_MAX / sizeof(double) / per_row
               ? SIZE_MAX
               : r->n_rows * per_row * sizeof(double);
}

bool api_attention_select_rows(const struct api_attention_req *r, struct attn_trace *trace,
                               struct api_error *err)
{
    if (r->rows == NULL)
        return true;
    struct attn_trace picked;
    struct attn_vtrace vpicked;
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    enum attn_status st = attn_trace_select_rows(&picked, trace, r->rows, r->n_rows);
    if (st == ATTN_OK && r->variants.any) { /* the variants' per-query steps; k_rope whole */
        st = attn_vtrace_select_rows(&vpicked, r->vsteps, r->rows, r->n_rows, r->q.rows,
                                     r->k.rows, r->q.cols, &v);
        if (st != ATTN_OK)
            attn_trace_free(&picked);
    }
    attn_trace_free(trace);
    if (st != ATTN_OK)
        return api_attention_no_memory(r, err);
    *trace = picked;
    if (r->variants.any) {
        attn_vtrace_free(r->vsteps);
        *r->vsteps = vpicked;
    }
    return true;
}
