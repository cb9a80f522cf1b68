/*
 * api/endpoints/multihead/run.c — running a validated /v1/multihead request, with the
 * numeric faults turned into problems that point at the input they came from.
 */
#include "api/endpoints/multihead/multihead.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http/admission.h"
#include "api/request/body.h"
#include "api/request/fields.h"
#include "api/json/matrix_write.h"
#include "api/json/spare_threads.h"
#include "api/request/random.h"

static const char *mh_step_pointer(enum attn_mh_step step, enum attn_step head_step)
{
    switch (step) {
    case ATTN_MH_Q: return "w_q";
    case ATTN_MH_K: return "w_k";
    case ATTN_MH_V: return "w_v";
    case ATTN_MH_OUTPUT: return "w_o";
    default: break;
    }
    switch (head_step) {
    case ATTN_STEP_SCALED: return "scale";
    case ATTN_STEP_MASKED: return "bias";
    case ATTN_STEP_OUTPUT: return "w_v";
    default: return "w_q";
    }
}

static const char *mh_step_name(const struct attn_mh_fault *f)
{
    static const char *const names[] = { "", "q", "k", "v", "", "output" };
    if (f->step == ATTN_MH_HEAD)
        return f->head_step == ATTN_STEP_OUTPUT ? "head_outputs"
                                                : attn_variant_step_name((int)f->head_step);
    return names[f->step];
}

static void overflow_error(const struct attn_mh_fault *f, const char *prefix,
                           struct api_error *err)
{
    const char *step = mh_step_name(f);
    if (f->step == ATTN_MH_HEAD)
        api_error_set(err, API_NUMERIC_OVERFLOW, "head %zu, step %s, produced a non-finite "
                      "number at cell [%zu, %zu]", f->head, step, f->row, f->col);
    else
        api_error_set(err, API_NUMERIC_OVERFLOW, "step %s produced a non-finite number at cell "
                      "[%zu, %zu]", step, f->row, f->col);
    api_error_step_cell(err, step, f->row, f->col);
    err->has_head = f->step == ATTN_MH_HEAD;
    err->head = (long long)f->head;
    api_error_at(err, "%s/%s", prefix, mh_step_pointer(f->step, f->head_step));
    api_error_hint(err, "the numbers are too large for a double (~1.8e308): scale the inputs "
                   "or weights down");
}

bool api_multihead_fill_random(struct api_multihead_req *r, struct api_error *err)
{
    /* Inputs keep the scale of 1; weights PyTorch's Linear bound, 1/sqrt(d_model). */
    double w_amplitude = 1.0 / sqrt((double)r->d_model);
    if (r->filled[API_IN_X_Q] &&
        !api_random_fill_matrix(&r->x_q, r->seed, r->cross ? API_STREAM_X_Q : API_STREAM_X, 1.0, err))
        return false;
    if (r->filled[API_IN_X_KV] && !api_random_fill_matrix(&r->x_kv, r->seed, API_STREAM_X_KV, 1.0, err))
        return false;
    for (int i = 0; i < 4; i++)
        if (r->filled[API_IN_W_Q + i] &&
            !api_random_fill_matrix(&r->w[i], r->seed, (enum api_random_stream)(API_STREAM_W_Q + i),
                      w_amplitude, err))
            return false;
    return true;
}

struct attn_mh_problem api_multihead_problem(const struct api_multihead_req *r)
{
    return (struct attn_mh_problem){
        .x_q = &r->x_q, .x_kv = r->cross ? &r->x_kv : &r->x_q,
        .w_q = &r->w[0], .w_k = &r->w[1], .w_v = &r->w[2], .w_o = &r->w[3],
        .b_q = r->b[0], .b_k = r->b[1], .b_v = r->b[2], .b_o = r->b[3],
        .transposed_weights = r->transposed,
        .heads = r->heads, .kv_heads = r->kv_heads,
        .bias = api_grid_bias(&r->grid), .mask = api_grid_mask(&r->grid), .scale = r->scale,
    };
}

void api_multihead_run_failed(enum attn_status st, const struct attn_mh_fault *fault,
                              const char *prefix, struct api_error *err)
{
    if (st == ATTN_EOVERFLOW)
        overflow_error(fault, prefix, err);
    else
        api_error_set(err, st == ATTN_ENOMEM ? API_UNAVAILABLE : API_INTERNAL,
                      "the computation failed: %s", attn_status_str(st));
}

/* The inputs in the order a report names the first one the format cannot hold. */
static size_t precision_inputs(const struct api_multihead_req *r, struct attn_matrix b[4],
                               struct api_precision_input in[11])
{
    static const char *const w_names[4] = { "w_q", "w_k", "w_v", "w_o" };
    static const char *const b_names[4] = { "b_q", "b_k", "b_v", "b_o" };
    size_t n = 0;
    in[n++] = (struct api_precision_input){ r->cross ? "x_q" : "x", &r->x_q };
    if (r->cross)
        in[n++] = (struct api_precision_input){ "x_kv", &r->x_kv };
    for (int i = 0; i < 4; i++)
        in[n++] = (struct api_precision_input){ w_names[i], &r->w[i] };
    for (int i = 0; i < 4; i++) {
        size_t len = i == 0 || i == 3 ? r->d_model : r->kv_heads * r->d_k;
        b[i] = attn_matrix_view(r->b[i], 1, len);
        if (r->b[i] != NULL)
            in[n++] = (struct api_precision_input){ b_names[i], &b[i] };
    }
    in[n++] = (struct api_precision_input){ "bias", api_grid_bias(&r->grid) };
    return n;
}

/* The float64 pass the report compares with: with the variants, every cell of every
 * head's steps, as the low pass computes them; their own steps into *kept when the
 * backward reads them (kept not NULL), else freed. */
static enum attn_status exact_pass(const struct api_multihead_req *r, struct attn_mh_trace *exact,
                                   const struct attn_mh_problem *p, const struct attn_variants *of,
                                   struct attn_vtrace **kept)
{
    if (of == NULL)
        return attn_mh_forward(exact, p);
    struct attn_vtrace *vt = calloc(r->heads, sizeof *vt);
    enum attn_status st = vt == NULL ? ATTN_ENOMEM : ATTN_OK;
    for (size_t i = 0; i < r->heads && st == ATTN_OK; i++)
        st = attn_vtrace_alloc_steps(&vt[i], exact->n_q, exact->n_k, r->d_k, &of[i]);
    if (st == ATTN_OK)
        st = attn_mh_forward_variants(exact, p, of, vt);
    if (st == ATTN_OK && kept != NULL) {
        *kept = vt;
        return st;
    }
    for (size_t i = 0; vt != NULL && i < r->heads; i++)
        attn_vtrace_free(&vt[i]);
    free(vt);
    return st;
}

/* The low pass into trace; the variants' own steps into r->vsteps, where the writers read
 * them (as api_multihead_run_variants leaves them). */
static enum attn_status low_pass(const struct api_multihead_req *r, struct attn_mh_trace *trace,
                                 const struct attn_mh_problem *p, const struct attn_variants *of)
{
    enum attn_status st = ATTN_OK;
    for (size_t i = 0; of != NULL && i < r->heads && st == ATTN_OK; i++) {
        attn_vtrace_free(&r->vsteps[i]);
        st = attn_vtrace_alloc_steps(&r->vsteps[i], trace->n_q, trace->n_k, r->d_k, &of[i]);
    }
    if (st != ATTN_OK)
        return st;
    return attn_mh_forward_precision(trace, p, of, of != NULL ? r->vsteps : NULL,
                                     &r->precision.rules);
}

/* The problem in its low format into trace, and, when it has a report, in float64 beside
 * it. With backward the float64 pass stays (r->backward.run->exact) for the float64
 * backward the report compares the low one with. */
static enum attn_status run_precision(const struct api_multihead_req *r,
                                      struct attn_mh_trace *trace,
                                      const struct attn_mh_problem *p)
{
    struct attn_mh_trace exact = { 0 }; /* only for a report (V2 asks none) */
    bool report = r->report != NULL, keep = report && r->backward.on;
    struct attn_vtrace *exact_vsteps = NULL;
    enum attn_status st = report ? attn_mh_trace_alloc(&exact, trace->n_q, trace->n_k,
                                                       r->d_model, r->heads, r->kv_heads)
                                 : ATTN_OK;
    if (st != ATTN_OK)
        return st;
    struct attn_variants *of = r->variants.any ? calloc(r->heads, sizeof *of) : NULL;
    if (r->variants.any && of == NULL) {
        attn_mh_trace_free(&exact);
        return ATTN_ENOMEM;
    }
    for (size_t i = 0; of != NULL && i < r->heads; i++)
        of[i] = api_variants_for_head(&r->variants, i); /* each head's ALiBi slope */
    st = report ? exact_pass(r, &exact, p, of, keep ? &exact_vsteps : NULL) : ATTN_OK;
    if (st == ATTN_EOVERFLOW)
        trace->fault = exact.fault; /* a float64 overflow: the request's, as without precision */
    if (st == ATTN_OK)
        st = low_pass(r, trace, p, of);
    if (st == ATTN_OK && report) {
        struct attn_matrix b[4];
        struct api_precision_input in[11];
        size_t n = precision_inputs(r, b, in);
        api_precision_mh_report_fill(r->report, in, n, &r->precision.rules, trace, &exact);
    }
    free(of);
    if (st == ATTN_OK && keep) { /* the backward's to free */
        r->backward.run->exact = exact;
        r->backward.run->exact_vsteps = exact_vsteps;
        return st;
    }
    for (size_t i = 0; exact_vsteps != NULL && i < r->heads; i++)
        attn_vtrace_free(&exact_vsteps[i]);
    free(exact_vsteps);
    attn_mh_trace_free(&exact);
    return st;
}

static bool run_whole(const struct api_multihead_req *r, const char *prefix,
                      struct attn_mh_trace *trace, struct api_error *err)
{
    size_t n_k = r->cross ? r->x_kv.rows : r->x_q.rows;
    if (attn_mh_trace_alloc(trace, r->x_q.rows, n_k, r->d_model, r->heads, r->kv_heads) !=
        ATTN_OK) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu heads of %zu x %zu", r->heads,
                      r->x_q.rows, n_k);
        return false;
    }
    struct attn_mh_problem p = api_multihead_problem(r);
    /* An idle server lends its other workers to each large head: the same bits. */
    enum attn_status st =
        r->precision.on ? run_precision(r, trace, &p)
        : r->variants.any ? api_multihead_run_variants(r, trace, &p)
                          : attn_mh_forward_threads(trace, &p, api_spare_threads_for(r->x_q.rows * n_k));
    if (st == ATTN_OK)
        return true;
    api_multihead_run_failed(st, &trace->fault, prefix, err);
    attn_mh_trace_free(trace);
    return false;
}

/* The backward pass on the whole forward trace, each head's variants as the forward's. */
static bool run_backward(const struct api_multihead_req *r, const struct attn_mh_trace *trace,
                         struct api_error *err)
{
    struct attn_variants *of = r->variants.any ? malloc(r->heads * sizeof *of) : NULL;
    if (r->variants.any && of == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for %s", "backward");
        return false;
    }
    for (size_t h = 0; of != NULL && h < r->heads; h++)
        of[h] = api_variants_for_head(&r->variants, h);
    struct attn_mh_problem p = api_multihead_problem(r);
    bool ok = api_multihead_run_backward(r, &p, of, trace, err);
    free(of);
    return ok;
}

bool api_multihead_run(const struct api_multihead_req *r, const char *prefix,
                       struct attn_mh_trace *trace, struct api_error *err)
{
    return run_whole(r, prefix, trace, err) && api_multihead_select_rows(r, trace, err) &&
           (!r->backward.on || run_backward(r, trace, err));
}

bool api_multihead_stream(const struct api_multihead_req *r, const char *prefix,
                          struct attn_mh_stream *out, struct api_error *err)
{
    size_t n_q = r->x_q.rows, n_k = r->cross ? r->x_kv.rows : n_q;
    size_t n_rows = api_multihead_answer_rows(r);
    struct attn_variants *of = r->variants.any ? malloc(r->heads * sizeof *of) : NULL;
    if ((r->variants.any && of == NULL) ||
        attn_mh_stream_alloc(out, n_rows, n_q, n_k, r->d_model, r->heads, r->kv_heads) !=
            ATTN_OK) {
        free(of);
        api_error_set(err, API_UNAVAILABLE, "no memory for %zu heads of %zu x %zu", r->heads,
                      n_rows, r->d_model);
        return false;
    }
    for (size_t h = 0; of != NULL && h < r->heads; h++)
        of[h] = api_variants_for_head(&r->variants, h);
    struct attn_mh_problem p = api_multihead_problem(r);
    enum attn_status st = attn_mh_forward_stream(out, &p, of, r->rows, n_rows,
                                                 api_spare_threads_for(n_q * n_k));
    free(of);
    if (st == ATTN_OK)
        return true;
    api_multihead_run_failed(st, &out->fault, prefix, err);
    attn_mh_stream_free(out);
    return false;
}
