/*
 * api/endpoints/v2/problem.c — the attention problem the V2 models `attention` and
 * `verify` read alike (see v2/problem.h).
 */
#include "api/endpoints/v2/problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/endpoints/attention/variants.h"
#include "api/endpoints/v2/grid.h"
#include "api/endpoints/v2/variants.h"
#include "api/http/admission.h"

void api_v2_problem_find(struct api_v2_problem *m, const struct api_v2_infer *r)
{
    api_v2_input_find(r, "Q", false, &m->q);
    api_v2_input_find(r, "K", false, &m->k);
    api_v2_input_find(r, "V", false, &m->v);
    api_v2_input_find(r, "MASK", true, &m->mask);
    api_v2_input_find(r, "BIAS", false, &m->bias);
    api_v2_input_find(r, "GRAD_OUTPUT", false, &m->d_out);
}

/* err (already set) points at size dim of t's shape. */
static bool at_size(const struct api_v2_tensor *t, size_t dim, struct api_error *err)
{
    api_error_at(err, "/inputs/%zu/shape/%zu", t->index, dim);
    return false;
}

/* The last two sizes of a tensor (its problem's matrix); a vector is one row. */
static size_t rows_of(const struct api_v2_tensor *t, size_t batch)
{
    size_t own = t->rank - (batch > 0 && t->rank == 3);
    return own >= 2 ? t->shape[t->rank - 2] : 1;
}

static size_t cols_of(const struct api_v2_tensor *t)
{
    return t->shape[t->rank - 1];
}

/* Q, K, V: the batch, and shapes that fit (K's width is Q's, V's rows K's). */
bool api_v2_problem_check_qkv(struct api_v2_problem *m, const struct api_limits *limits,
                              struct api_error *err)
{
    const struct api_v2_tensor *q = m->q.t, *k = m->k.t, *v = m->v.t;
    size_t batch = 0;
    if (!api_v2_batch_of(q, 2, true, &batch, err) || !api_v2_batch_of(k, 2, false, &batch, err) ||
        !api_v2_batch_of(v, 2, false, &batch, err))
        return false;
    /* A batch is all or nothing: Q, K and V each lead with B. */
    const struct api_v2_tensor *all[3] = { q, k, v };
    for (int i = 0; batch > 0 && i < 3; i++)
        if (all[i]->rank != 3) {
            api_error_set(err, API_SHAPE_MISMATCH, "%s has no batch size but another input "
                          "has a batch of %zu: Q, K and V are all (B, rows, cols) or none",
                          all[i]->name, batch);
            api_error_at(err, "/inputs/%zu/shape", all[i]->index);
            return false;
        }
    m->batch = batch;
    struct api_attention_req *req = &m->req;
    req->q_is_vector = q->rank == 1;
    size_t n_q = rows_of(q, batch), d_k = cols_of(q), n_k = rows_of(k, batch);
    if (cols_of(k) != d_k) {
        api_error_set(err, API_SHAPE_MISMATCH, "K has %zu columns but Q has %zu: Q @ K^T needs "
                      "both to have d_k columns", cols_of(k), d_k);
        if (rows_of(k, batch) == d_k)
            api_error_hint(err, "K looks transposed: pass K as (n_k, d_k), one row per key");
        return at_size(k, k->rank - 1, err);
    }
    if (rows_of(v, batch) != n_k) {
        api_error_set(err, API_SHAPE_MISMATCH, "V has %zu rows but K has %zu: weights @ V "
                      "needs one row of V per key", rows_of(v, batch), n_k);
        return at_size(v, v->rank - 2, err);
    }
    /* The scores count once the outputs say a matrix is built (check_scores). */
    int overflow = 0;
    size_t out = attn_cells(n_q, cols_of(v), &overflow);
    if (overflow || out > limits->max_cells) {
        const struct api_v2_tensor *t = n_q >= n_k ? q : k;
        api_error_set(err, API_LIMIT_EXCEEDED, "%s would make a matrix of more than %zu cells "
                      "(%zu x %zu scores, %zu x %zu output)", t->name, limits->max_cells, n_q,
                      n_k, n_q, cols_of(v));
        api_error_at(err, "/inputs/%zu/shape", t->index);
        return false;
    }
    if (!api_v2_within_work(n_q >= n_k ? q : k, batch, api_work_of(n_q, n_k, d_k, cols_of(v)), limits,
                     err))
        return false;
    /* Views whose cells come once the request is admitted (api_v2_problem_point). */
    req->q = attn_matrix_view(NULL, n_q, d_k);
    req->k = attn_matrix_view(NULL, n_k, d_k);
    req->v = attn_matrix_view(NULL, n_k, cols_of(v));
    return true;
}


bool api_v2_problem_read_grid(struct api_v2_problem *m, const struct api_v2_infer *r,
                              struct api_error *err)
{
    struct api_grid *g = &m->req.grid;
    g->n_q = m->req.q.rows;
    g->n_k = m->req.k.rows;
    g->q_is_vector = m->req.q_is_vector;
    return api_v2_read_grid(g, &m->mask, &m->bias, m->batch, r->parameters, err);
}

void api_v2_shape_text(char *buf, size_t size, const size_t *shape, size_t rank)
{
    size_t at = (size_t)snprintf(buf, size, "[");
    for (size_t d = 0; d < rank && at < size; d++)
        at += (size_t)snprintf(buf + at, size - at, "%s%zu", d ? ", " : "", shape[d]);
    if (at < size)
        snprintf(buf + at, size - at, "]");
}

size_t api_v2_problem_shape(const struct api_v2_problem *m, size_t rows, size_t cols,
                            size_t want[3])
{
    size_t rank = 0;
    if (m->batch > 0)
        want[rank++] = m->batch;
    if (rows > 0)
        want[rank++] = rows;
    want[rank++] = cols;
    return rank;
}

bool api_v2_shape_is(const struct api_v2_tensor *t, const size_t *want, size_t rank)
{
    bool fits = t->rank == rank;
    for (size_t d = 0; fits && d < rank; d++)
        fits = t->shape[d] == want[d];
    return fits;
}

/* GRAD_OUTPUT, when sent, is dO: exactly OUTPUT's shape, the batch first. */
bool api_v2_problem_check_grad_output(const struct api_v2_problem *m, struct api_error *err)
{
    const struct api_v2_tensor *t = m->d_out.t;
    if (t == NULL)
        return true;
    size_t want[3];
    size_t rank = api_v2_problem_shape(m, m->req.q_is_vector ? 0 : m->req.q.rows,
                                       m->req.v.cols, want);
    if (api_v2_shape_is(t, want, rank))
        return true;
    char got[96], out[96];
    api_v2_shape_text(got, sizeof got, t->shape, t->rank);
    api_v2_shape_text(out, sizeof out, want, rank);
    api_error_set(err, API_SHAPE_MISMATCH, "GRAD_OUTPUT has shape %s but must be OUTPUT's "
                  "shape %s", got, out);
    api_error_at(err, "/inputs/%zu/shape", t->index);
    api_error_hint(err, "GRAD_OUTPUT is dL/dOUTPUT: one row per query, one number per column "
                   "of V, the batch size first when Q has one");
    return false;
}

void api_v2_problem_point(struct api_v2_problem *m, size_t b)
{
    struct api_attention_req *req = &m->req;
    size_t n_q = req->q.rows, n_k = req->k.rows;
    req->q.data = m->q.data + b * n_q * req->q.cols;
    req->k.data = m->k.data + b * n_k * req->k.cols;
    req->v.data = m->v.data + b * n_k * req->v.cols;
    if (req->backward.on) /* problem b's own dO */
        req->backward.d_out = attn_matrix_view(m->d_out.data + b * n_q * req->v.cols, n_q,
                                               req->v.cols);
    api_v2_grid_point(&req->grid, &m->mask, &m->bias, m->allow, b);
}

bool api_v2_problem_read_options(struct api_v2_problem *m, const struct api_v2_infer *r,
                                 struct api_error *err)
{
    const struct api_variant_sizes sizes = { 1, m->req.q.rows, m->req.k.rows, m->req.q.cols,
                                             m->req.q_is_vector };
    if (!api_v2_read_variants(r, &sizes, &m->req.variants, err))
        return false;
    api_variants_set_top_left(&m->req.variants, m->req.grid.top_left);
    if (m->req.variants.any && (m->req.vsteps = calloc(1, sizeof *m->req.vsteps)) == NULL) {
        api_error_set(err, API_UNAVAILABLE, "no memory for the variants' steps");
        return false;
    }
    m->req.scale = 1.0 / sqrt((double)m->req.q.cols);
    if (!api_v2_param_number(r->parameters, "scale", &m->req.scale, NULL, err))
        return false;
    if (!(m->req.scale > 0)) {
        api_error_set(err, API_INVALID_VALUE, "parameters.scale must be a number > 0");
        api_error_at(err, "/parameters/scale");
        return false;
    }
    return true;
}

void api_v2_problem_limit_pointer(const struct api_v2_problem *m, char *buf, size_t size)
{
    const char *f = api_attention_limit_field(&m->req);
    const struct api_v2_tensor *t = f[1] == 'q' ? m->q.t : f[1] == 'k' ? m->k.t : m->v.t;
    snprintf(buf, size, "/inputs/%zu/shape", t->index);
}

bool api_v2_problem_load(struct api_v2_problem *m, struct api_error *err)
{
    return api_v2_input_load(&m->q, err) && api_v2_input_load(&m->k, err) &&
           api_v2_input_load(&m->v, err) && api_v2_input_load(&m->d_out, err) &&
           api_v2_grid_load(&m->req.grid, &m->mask, &m->bias, &m->allow, err);
}

size_t api_v2_problem_input_bytes(const struct api_v2_problem *m)
{
    return api_v2_input_bytes(&m->q) + api_v2_input_bytes(&m->k) + api_v2_input_bytes(&m->v) +
           api_v2_input_bytes(&m->mask) + api_v2_input_bytes(&m->bias) +
           api_v2_input_bytes(&m->d_out);
}

void api_v2_problem_deinit(struct api_v2_problem *m)
{
    api_v2_input_free(&m->q);
    api_v2_input_free(&m->k);
    api_v2_input_free(&m->v);
    api_v2_input_free(&m->mask);
    api_v2_input_free(&m->bias);
    api_v2_input_free(&m->d_out);
    /* dO is a view into GRAD_OUTPUT's numbers, freed above: not the request's to free */
    m->req.backward.d_out = (struct attn_matrix){ 0 };
    api_attention_backward_deinit(&m->req.backward);
    free(m->allow);
    m->allow = NULL;
    attn_vtrace_free(m->req.vsteps);
    free(m->req.vsteps);
    m->req.vsteps = NULL;
    free(m->req.report);
    m->req.report = NULL;
    api_variants_deinit(&m->req.variants);
}
