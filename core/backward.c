/*
 * core/backward.c — the gradients of attention step by step (see backward.h).
 */
#include "backward.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the block ---- */

/* The doubles of every gradient; 0 with *overflow when they do not fit. */
static size_t grads_cells(size_t n_q, size_t n_k, size_t d_k, size_t d_v, int *overflow)
{
    size_t qk = attn_cells(n_q, n_k, overflow), qd = attn_cells(n_q, d_k, overflow);
    size_t kd = attn_cells(n_k, d_k, overflow), kv = attn_cells(n_k, d_v, overflow);
    const size_t parts[] = { kv, qk, n_q, qk, qk, qk, qd, kd, qd, kd };
    size_t total = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i] > SIZE_MAX - total)
            *overflow = 1;
        else
            total += parts[i];
    }
    return total;
}

size_t attn_grads_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v)
{
    int overflow = 0;
    size_t cells = grads_cells(n_q, n_k, d_k, d_v, &overflow);
    return overflow || cells > SIZE_MAX / sizeof(double) ? 0 : cells * sizeof(double);
}

/* The next (rows, cols) view of the block at *at. */
static struct attn_matrix take(double **at, size_t rows, size_t cols)
{
    struct attn_matrix m = attn_matrix_view(*at, rows, cols);
    *at += rows * cols;
    return m;
}

enum attn_status attn_grads_alloc(struct attn_grads *g, size_t n_q, size_t n_k, size_t d_k,
                                  size_t d_v)
{
    if (g == NULL)
        return ATTN_EINVAL;
    memset(g, 0, sizeof *g);
    if (n_q == 0 || n_k == 0 || d_k == 0 || d_v == 0)
        return ATTN_EINVAL;
    size_t bytes = attn_grads_bytes(n_q, n_k, d_k, d_v);
    double *at = bytes > 0 ? malloc(bytes) : NULL;
    if (at == NULL)
        return ATTN_ENOMEM;
    *g = (struct attn_grads){ .n_q = n_q, .n_k = n_k, .d_k = d_k, .d_v = d_v, .block = at };
    g->grad_v = take(&at, n_k, d_v);
    g->grad_weights = take(&at, n_q, n_k);
    g->delta = at;
    at += n_q;
    g->grad_masked = take(&at, n_q, n_k);
    g->grad_scaled = take(&at, n_q, n_k);
    g->grad_scores = take(&at, n_q, n_k);
    g->grad_q_rope = take(&at, n_q, d_k);
    g->grad_k_rope = take(&at, n_k, d_k);
    g->grad_q = take(&at, n_q, d_k);
    g->grad_k = take(&at, n_k, d_k);
    return ATTN_OK;
}

void attn_grads_free(struct attn_grads *g)
{
    if (g == NULL)
        return;
    free(g->block);
    memset(g, 0, sizeof *g);
}

const char *attn_grad_step_name(enum attn_grad_step step)
{
    static const char *const names[] = {
        [ATTN_GRAD_NONE] = "", [ATTN_GRAD_V] = "grad_v", [ATTN_GRAD_WEIGHTS] = "grad_weights",
        [ATTN_GRAD_DELTA] = "delta", [ATTN_GRAD_MASKED] = "grad_masked",
        [ATTN_GRAD_SCALED] = "grad_scaled", [ATTN_GRAD_SCORES] = "grad_scores",
        [ATTN_GRAD_Q_ROPE] = "grad_q_rope", [ATTN_GRAD_K_ROPE] = "grad_k_rope",
        [ATTN_GRAD_Q] = "grad_q", [ATTN_GRAD_K] = "grad_k",
        [ATTN_GRAD_SINK_LOGIT] = "grad_sink_logit",
    };
    return (unsigned)step < sizeof names / sizeof names[0] ? names[step] : "";
}

bool attn_grad_step_runs(enum attn_grad_step step, const struct attn_variants *v)
{
    switch (step) {
    case ATTN_GRAD_NONE: return false;
    case ATTN_GRAD_Q_ROPE:
    case ATTN_GRAD_K_ROPE: return v->rope != NULL;
    case ATTN_GRAD_SINK_LOGIT: return v->sink;
    default: return true;
    }
}

struct attn_matrix attn_grads_step(const struct attn_grads *g, enum attn_grad_step step)
{
    switch (step) {
    case ATTN_GRAD_V: return g->grad_v;
    case ATTN_GRAD_WEIGHTS: return g->grad_weights;
    case ATTN_GRAD_DELTA: return attn_matrix_view(g->delta, g->n_q, 1);
    case ATTN_GRAD_MASKED: return g->grad_masked;
    case ATTN_GRAD_SCALED: return g->grad_scaled;
    case ATTN_GRAD_SCORES: return g->grad_scores;
    case ATTN_GRAD_Q_ROPE: return g->grad_q_rope;
    case ATTN_GRAD_K_ROPE: return g->grad_k_rope;
    case ATTN_GRAD_Q: return g->grad_q;
    case ATTN_GRAD_K: return g->grad_k;
    default: return attn_matrix_view((double *)&g->grad_sink_logit, 1, 1);
    }
}

/* ---- the steps ---- */

/* c = op(a) · op(b), one cblas_dgemm (sizes are within int: the forward checked them). */
static void gemm(const struct attn_matrix *a, bool a_t, const struct attn_matrix *b, bool b_t,
                 struct attn_matrix *c)
{
    size_t m = a_t ? a->cols : a->rows, k = a_t ? a->rows : a->cols;
    size_t n = b_t ? b->rows : b->cols;
    cblas_dgemm(CblasRowMajor, a_t ? CblasTrans : CblasNoTrans, b_t ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, 1.0, a->data, (blasint)a->stride, b->data,
                (blasint)b->stride, 0.0, c->data, (blasint)c->stride);
}

bool attn_grads_fit(const struct attn_grads *g, const struct attn_problem *p,
                    const struct attn_variants *v, const struct attn_vtrace *fwd,
                    const struct attn_matrix *d_out)
{
    const struct attn_trace *t = &fwd->base;
    if (p->q == NULL || p->k == NULL || p->v == NULL || t->weights.data == NULL ||
        t->output.data == NULL || t->masked.data == NULL)
        return false;
    size_t n_q = p->q->rows, n_k = p->k->rows, d_k = p->q->cols, d_v = p->v->cols;
    if (t->n_q != n_q || t->n_k != n_k || t->d_v != d_v || g->block == NULL || g->n_q != n_q ||
        g->n_k != n_k || g->d_k != d_k || g->d_v != d_v)
        return false;
    if (d_out == NULL || d_out->data == NULL || d_out->rows != n_q || d_out->cols != d_v ||
        d_out->stride < d_v)
        return false;
    return (v->rope == NULL || (fwd->q_rope.data != NULL && fwd->k_rope.data != NULL)) &&
           (v->softcap == 0 || fwd->softcapped.data != NULL) &&
           (!v->dropout || (fwd->keep.data != NULL && fwd->dropped.data != NULL)) &&
           (!v->sink || fwd->sink_weight != NULL);
}

/* dP = dO · Vᵀ, times keep / (1 − p) where dropout ran; D_i = Σ_c dO_ic · O_ic. */
static void grads_weights(struct attn_grads *g, const struct attn_problem *p,
                          const struct attn_variants *v, const struct attn_vtrace *fwd,
                          const struct attn_matrix *d_out)
{
    gemm(d_out, false, p->v, true, &g->grad_weights);
    if (v->dropout) {
        double scale = 1.0 / (1.0 - v->dropout_p);
        for (size_t c = 0; c < g->n_q * g->n_k; c++)
            g->grad_weights.data[c] *= fwd->keep.data[c] * scale;
    }
    const struct attn_matrix *o = &fwd->base.output;
    for (size_t i = 0; i < g->n_q; i++) {
        double d = 0.0;
        for (size_t c = 0; c < g->d_v; c++)
            d += d_out->data[i * d_out->stride + c] * o->data[i * o->stride + c];
        g->delta[i] = d;
    }
}

/* dS = P ∘ (dP − D), 0 where blocked; then through softcap and the scale. */
static void grads_scores(struct attn_grads *g, const struct attn_problem *p,
                         const struct attn_variants *v, const struct attn_vtrace *fwd)
{
    const struct attn_trace *t = &fwd->base;
    for (size_t i = 0; i < g->n_q; i++)
        for (size_t j = 0; j < g->n_k; j++) {
            size_t c = i * g->n_k + j;
            double ds = t->masked.data[c] == -INFINITY
                            ? 0.0
                            : t->weights.data[c] * (g->grad_weights.data[c] - g->delta[i]) + 0.0;
            g->grad_masked.data[c] = ds; /* + 0.0: an underflowed weight gives 0, not −0 */
            double through = ds;
            if (v->softcap > 0) { /* capped = c·tanh(scaled/c): its slope is 1 − tanh² */
                double th = fwd->softcapped.data[c] / v->softcap;
                through = ds * (1.0 - th * th);
            }
            g->grad_scaled.data[c] = through;
            g->grad_scores.data[c] = through * p->scale;
        }
}

/* out = x with each row's pairs turned back by its angle (the rotation's transpose). */
static enum attn_status rope_back(const struct attn_matrix *x, struct attn_matrix *out,
                                  const struct attn_rope *rope, const double *cos_t,
                                  const double *sin_t)
{
    size_t cells = x->rows * (rope->rotated / 2);
    double *minus = malloc(cells * sizeof *minus);
    if (minus == NULL)
        return ATTN_ENOMEM;
    for (size_t c = 0; c < cells; c++)
        minus[c] = -sin_t[c];
    attn_rope_rotate(x, out, rope, cos_t, minus);
    free(minus);
    return ATTN_OK;
}

enum attn_status attn_grads_turn_back(struct attn_grads *g, const struct attn_variants *v)
{
    if (v->rope == NULL) {
        memcpy(g->grad_q.data, g->grad_q_rope.data, g->n_q * g->d_k * sizeof(double));
        memcpy(g->grad_k.data, g->grad_k_rope.data, g->n_k * g->d_k * sizeof(double));
        return ATTN_OK;
    }
    enum attn_status st = rope_back(&g->grad_q_rope, &g->grad_q, v->rope, v->rope->cos_q,
                                    v->rope->sin_q);
    return st == ATTN_OK ? rope_back(&g->grad_k_rope, &g->grad_k, v->rope, v->rope->cos_k,
                                     v->rope->sin_k)
                         : st;
}

static bool all_finite(const double *x, size_t n)
{
    bool ok = true;
    for (size_t i = 0; i < n; i++)
        ok &= fabs(x[i]) <= DBL_MAX;
    return ok;
}

enum attn_status attn_backward(struct attn_grads *g, const struct attn_problem *p,
                               const struct attn_variants *v, const struct attn_vtrace *fwd,
                               const struct attn_matrix *d_out)
{
    static const struct attn_variants none;
    v = v != NULL ? v : &none;
    if (g == NULL || p == NULL || fwd == NULL || fwd->base.fault.step != ATTN_STEP_NONE ||
        !attn_grads_fit(g, p, v, fwd, d_out))
        return ATTN_EINVAL;
    g->fault = (struct attn_grad_fault){ ATTN_GRAD_NONE, 0, 0 };
    const struct attn_matrix *mix = v->dropout ? &fwd->dropped : &fwd->base.weights;
    gemm(mix, true, d_out, false, &g->grad_v);
    grads_weights(g, p, v, fwd, d_out);
    grads_scores(g, p, v, fwd);
    const struct attn_matrix *q = v->rope != NULL ? &fwd->q_rope : p->q;
    const struct attn_matrix *k = v->rope != NULL ? &fwd->k_rope : p->k;
    gemm(&g->grad_scores, false, k, false, &g->grad_q_rope);
    gemm(&g->grad_scores, true, q, false, &g->grad_k_rope);
    enum attn_status st = attn_grads_turn_back(g, v);
    if (st != ATTN_OK)
        return st;
    g->grad_sink_logit = 0.0;
    for (size_t i = 0; v->sink && i < g->n_q; i++) /* the sink's dS: w_sink·(0 − D_i) */
        g->grad_sink_logit -= fwd->sink_weight[i] * g->delta[i];
    int overflow = 0;
    size_t cells = grads_cells(g->n_q, g->n_k, g->d_k, g->d_v, &overflow);
    return all_finite(g->block, cells) && isfinite(g->grad_sink_logit) ? ATTN_OK
                                                                        : ATTN_EOVERFLOW;
}
