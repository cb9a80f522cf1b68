/*
 * api/endpoints/attention_rows.c — `rows`: the answer for the listed query rows only, in
 * their order (DESIGN.md, "Row statistics, rows, and any length").
 *
 * The problem is computed whole, so the keys, the causal offset and every mask and
 * variant are the whole problem's; then the trace (and the variants' per-query steps) is
 * replaced by one holding only the listed rows, so every writer answers (len(rows), …)
 * without knowing rows exist. The warnings name the real rows (the writers' real_rows).
 */
#include "api/endpoints/attention_request.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/lang.h"
#include "api/request/fields.h"

/* One entry of rows: an integer 0 <= i < n_q. */
static bool read_row(const json_t *node, const char *ptr, size_t index, size_t n_q,
                     size_t *out, struct api_error *err)
{
    char sub[160];
    long long value = 0;
    snprintf(sub, sizeof sub, "%s/%zu", ptr, index);
    if (api_read_int_range(json_array_get(node, index), sub, "a row", 0, (long long)n_q - 1,
                           &value, err)) {
        *out = (size_t)value;
        return true;
    }
    api_error_hint(err, "q has %zu %s: each entry of rows is a query index 0 to %zu", n_q,
                   n_q == 1 ? API_TR("row") : API_TR("rows"), n_q - 1);
    return false;
}

/* The field asked beside rows that already works on one row, or NULL. */
static const char *rows_conflict(const struct api_attention_req *r)
{
    if (r->explain.on)
        return "explain";
    return r->pitfall != API_PITFALL_NONE ? "pitfall" : NULL;
}

bool api_attention_read_rows(const json_t *doc, const char *prefix, struct api_attention_req *r,
                             struct api_error *err)
{
    const json_t *node = api_member(doc, "rows");
    if (node == NULL)
        return true;
    char ptr[128];
    API_FIELD_POINTER(ptr, prefix, "rows");
    size_t n = json_is_array(node) ? json_array_size(node) : 0;
    if (n == 0) {
        api_error_set(err, API_INVALID_VALUE, "rows is %s; it must be a non-empty list of query "
                      "indices such as [0, 5]", json_is_array(node) ? API_TR("an empty list")
                                                                     : api_json_kind(node));
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "list the query rows to answer, 0 to %zu; leave rows out for all",
                       r->q.rows - 1);
        return false;
    }
    if (r->q_is_vector) {
        api_error_set(err, API_INVALID_VALUE, "rows picks rows of q, but q was sent as a "
                      "vector: one query");
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "rows picks rows of a matrix q: send q as a list of rows, [[...]], "
                       "or leave rows out");
        return false;
    }
    const char *conflict = rows_conflict(r);
    if (conflict != NULL) {
        api_error_set(err, API_INVALID_VALUE, "rows cannot be combined with %s", conflict);
        api_error_at(err, "%s", ptr);
        api_error_hint(err, "%s already works on one row: ask for it without rows", conflict);
        return false;
    }
    if ((r->rows = malloc(n * sizeof *r->rows)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for rows");
        return false;
    }
    r->n_rows = n;
    for (size_t i = 0; i < n; i++)
        if (!read_row(node, ptr, i, r->q.rows, &r->rows[i], err))
            return false; /* the caller's deinit frees rows */
    return true;
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

/* dst's row r = src's row rows[r], for every r (dst has n rows, src's columns). */
static void copy_rows(struct attn_matrix *dst, const struct attn_matrix *src, const size_t *rows,
                      size_t n)
{
    if (src->data == NULL || dst->data == NULL)
        return;
    for (size_t r = 0; r < n; r++)
        memcpy(dst->data + r * dst->stride, src->data + rows[r] * src->stride,
               src->cols * sizeof(double));
}

#define PICK(dst, src, field, rows, n)                                                           \
    do {                                                                                         \
        for (size_t i_ = 0; i_ < (n); i_++)                                                      \
            (dst)->field[i_] = (src)->field[(rows)[i_]];                                         \
    } while (0)

static void copy_summary(struct attn_summary *dst, const struct attn_summary *src,
                         const size_t *rows, size_t n)
{
    PICK(dst, src, row_sums, rows, n);
    PICK(dst, src, argmax, rows, n);
    PICK(dst, src, max_weight, rows, n);
    PICK(dst, src, entropy, rows, n);
    PICK(dst, src, row_max, rows, n);
    PICK(dst, src, row_sum, rows, n);
    PICK(dst, src, lse, rows, n);
    PICK(dst, src, fully_masked, rows, n);
    dst->n_fully_masked = 0;
    for (size_t i = 0; i < n; i++)
        dst->n_fully_masked += dst->fully_masked[i] != 0;
}

/* The variants' per-query steps for the listed rows; k_rope is the keys', kept whole. */
static bool select_variant_steps(const struct api_attention_req *r)
{
    struct attn_vtrace *old = r->vsteps, picked;
    struct attn_variants v = api_variants_for_head(&r->variants, 0);
    if (attn_vtrace_alloc_steps(&picked, r->n_rows, r->k.rows, r->q.cols, &v) != ATTN_OK)
        return false;
    copy_rows(&picked.q_rope, &old->q_rope, r->rows, r->n_rows);
    if (old->k_rope.data != NULL && picked.k_rope.data != NULL)
        memcpy(picked.k_rope.data, old->k_rope.data,
               old->k_rope.rows * old->k_rope.stride * sizeof(double));
    copy_rows(&picked.softcapped, &old->softcapped, r->rows, r->n_rows);
    copy_rows(&picked.keep, &old->keep, r->rows, r->n_rows);
    copy_rows(&picked.dropped, &old->dropped, r->rows, r->n_rows);
    if (old->sink_weight != NULL && picked.sink_weight != NULL)
        PICK(&picked, old, sink_weight, r->rows, r->n_rows);
    picked.fault_step = old->fault_step;
    attn_vtrace_free(old);
    *old = picked;
    return true;
}

bool api_attention_select_rows(const struct api_attention_req *r, struct attn_trace *trace,
                               struct api_error *err)
{
    if (r->rows == NULL)
        return true;
    struct attn_trace picked;
    if (attn_trace_alloc(&picked, r->n_rows, trace->n_k, trace->d_v) != ATTN_OK ||
        (r->variants.any && !select_variant_steps(r))) {
        attn_trace_free(&picked);
        attn_trace_free(trace);
        return api_attention_no_memory(r, err);
    }
    const struct attn_matrix *from[] = { &trace->scores, &trace->scaled, &trace->masked,
                                         &trace->weights, &trace->output };
    struct attn_matrix *to[] = { &picked.scores, &picked.scaled, &picked.masked,
                                 &picked.weights, &picked.output };
    for (size_t s = 0; s < sizeof from / sizeof from[0]; s++)
        copy_rows(to[s], from[s], r->rows, r->n_rows);
    copy_summary(&picked.summary, &trace->summary, r->rows, r->n_rows);
    attn_trace_free(trace);
    *trace = picked;
    return true;
}
