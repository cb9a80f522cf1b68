/*
 * core/stream_backward.c — the backward pass without any (n_q, n_k) matrix (see
 * backward.h, attn_backward_stream): FlashAttention 2's way, from the forward pass's
 * output and lse. For each block of 128 query rows and each block of keys some row of it
 * sees: S = Q'·K'ᵀ again, the masked scores by the rules every pass reads (attn_vrow_of),
 * P = e^(masked − lse), dP = dO·Vᵀ, dS = P ∘ (dP − D) through softcap and the scale, then
 * grad_q' += dS·K', grad_k' += dSᵀ·Q', grad_v += Pᵀ·dO. Its working set is the inputs,
 * the three gradients and the blocks, whatever n.
 */
#include "backward.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum { ROWS = 128, KEYS = 512 };

size_t attn_stream_grads_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v)
{
    int overflow = 0;
    size_t cells[] = { attn_cells(n_q, d_k, &overflow), attn_cells(n_k, d_k, &overflow),
                       attn_cells(n_k, d_v, &overflow), n_q };
    size_t total = 0;
    for (size_t i = 0; i < 4; i++) {
        if (cells[i] > SIZE_MAX - total)
            overflow = 1;
        else
            total += cells[i];
    }
    return overflow || total > SIZE_MAX / sizeof(double) ? 0 : total * sizeof(double);
}

enum attn_status attn_stream_grads_alloc(struct attn_stream_grads *g, size_t n_q, size_t n_k,
                                         size_t d_k, size_t d_v)
{
    if (g == NULL)
        return ATTN_EINVAL;
    memset(g, 0, sizeof *g);
    if (n_q == 0 || n_k == 0 || d_k == 0 || d_v == 0)
        return ATTN_EINVAL;
    size_t bytes = attn_stream_grads_bytes(n_q, n_k, d_k, d_v);
    double *at = bytes > 0 ? malloc(bytes) : NULL;
    if (at == NULL)
        return ATTN_ENOMEM;
    *g = (struct attn_stream_grads){ .n_q = n_q, .n_k = n_k, .d_k = d_k, .d_v = d_v, .block = at };
    g->grad_q = attn_matrix_view(at, n_q, d_k);
    g->grad_k = attn_matrix_view(at + n_q * d_k, n_k, d_k);
    g->grad_v = attn_matrix_view(at + (n_q + n_k) * d_k, n_k, d_v);
    g->delta = at + (n_q + n_k) * d_k + n_k * d_v;
    return ATTN_OK;
}

void attn_stream_grads_free(struct attn_stream_grads *g)
{
    if (g == NULL)
        return;
    free(g->block);
    memset(g, 0, sizeof *g);
}

/* What one pass holds beside the gradients: the rotated rows, their gradients, blocks. */
struct sb_work {
    const struct attn_problem *p;
    const struct attn_variants *v;
    const double *lse;
    const struct attn_matrix *d_out;
    struct attn_stream_grads *g;
    struct attn_matrix q, k;       /* Q' and K': rotated when RoPE runs, else p's */
    struct attn_matrix dq, dk;     /* their gradients: g's own without RoPE */
    double *s, *p_blk, *dp;        /* (ROWS, KEYS) each: scores, P, and dP then dS */
    void *owned;
};

static void gemm(const double *a, size_t lda, bool a_t, const double *b, size_t ldb, bool b_t,
                 double *c, size_t ldc, size_t m, size_t n, size_t k, double beta)
{
    cblas_dgemm(CblasRowMajor, a_t ? CblasTrans : CblasNoTrans, b_t ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, 1.0, a, (blasint)lda, b, (blasint)ldb, beta,
                c, (blasint)ldc);
}

/* Row i's masked score at key j from its raw score s, and softcap's slope (1 without). */
static double masked_cell(const struct sb_work *w, const struct attn_vrow *r, size_t i, size_t j,
                          double s, double *slope)
{
    const struct attn_variants *v = w->v;
    double x = s * w->p->scale;
    *slope = 1.0;
    if (v->softcap > 0) {
        double t = tanh(x / v->softcap);
        x = v->softcap * t;
        *slope = 1.0 - t * t;
    }
    if (w->p->bias != NULL)
        x += w->p->bias->data[i * w->p->bias->stride + j];
    if (v->alibi)
        x -= v->alibi_slope * fabs(r->at - (double)j);
    return x;
}

/* The keys some row of [r0, r1) sees: [*lo, *hi) (the sinks and the window's hull). */
static void rows_span(const struct sb_work *w, size_t r0, size_t r1, size_t *lo, size_t *hi)
{
    size_t n_q = w->g->n_q, n_k = w->g->n_k;
    *lo = n_k;
    *hi = 0;
    for (size_t i = r0; i < r1; i++) {
        struct attn_vrow r = attn_vrow_of(w->p, w->v, n_q, n_k, i);
        size_t s1, w1;
        attn_vrow_ends(&r, &s1, &w1);
        if (s1 > r.sinks_from) {
            *lo = r.sinks_from < *lo ? r.sinks_from : *lo;
            *hi = s1 > *hi ? s1 : *hi;
        }
        if (w1 > r.from) {
            *lo = r.from < *lo ? r.from : *lo;
            *hi = w1 > *hi ? w1 : *hi;
        }
    }
}

/* Rows [r0, r1) against keys [j0, j1): P and dS recomputed, the three gradients added. */
static void sb_block(struct sb_work *w, size_t r0, size_t r1, size_t j0, size_t j1)
{
    size_t m = r1 - r0, nb = j1 - j0, d_k = w->q.cols, d_v = w->g->d_v;
    size_t n_q = w->g->n_q, n_k = w->g->n_k;
    const struct attn_matrix *val = w->p->v, *dout = w->d_out;
    gemm(w->q.data + r0 * w->q.stride, w->q.stride, false, w->k.data + j0 * w->k.stride,
         w->k.stride, true, w->s, KEYS, m, nb, d_k, 0.0);
    gemm(dout->data + r0 * dout->stride, dout->stride, false, val->data + j0 * val->stride,
         val->stride, true, w->dp, KEYS, m, nb, d_v, 0.0);
    for (size_t a = 0; a < m; a++) {
        size_t i = r0 + a;
        struct attn_vrow r = attn_vrow_of(w->p, w->v, n_q, n_k, i);
        double lse = w->lse[i], d = w->g->delta[i];
        for (size_t b = 0; b < nb; b++) {
            size_t c = a * KEYS + b, j = j0 + b;
            double slope, x = masked_cell(w, &r, i, j, w->s[c], &slope);
            double p = attn_vrow_sees(&r, j) && lse != -INFINITY ? exp(x - lse) : 0.0;
            w->p_blk[c] = p;
            w->dp[c] = p * (w->dp[c] - d) * slope * w->p->scale; /* dS through softcap, scale */
        }
    }
    gemm(w->dp, KEYS, false, w->k.data + j0 * w->k.stride, w->k.stride, false,
         w->dq.data + r0 * w->dq.stride, w->dq.stride, m, d_k, nb, 1.0);
    gemm(w->dp, KEYS, true, w->q.data + r0 * w->q.stride, w->q.stride, false,
         w->dk.data + j0 * w->dk.stride, w->dk.stride, nb, d_k, m, 1.0);
    gemm(w->p_blk, KEYS, true, dout->data + r0 * dout->stride, dout->stride, false,
         w->g->grad_v.data + j0 * w->g->grad_v.stride, w->g->grad_v.stride, nb, d_v, m, 1.0);
}

size_t attn_backward_stream_scratch(size_t n_q, size_t n_k, size_t d_k, bool rope)
{
    int overflow = 0;
    size_t rows = rope ? 2 * (n_q + n_k) : 0, cells = attn_cells(rows, d_k, &overflow);
    size_t total = cells + 3 * (size_t)ROWS * KEYS;
    if (overflow || n_q > SIZE_MAX / 4 || n_k > SIZE_MAX / 4 || total < cells ||
        total > SIZE_MAX / sizeof(double))
        return 0;
    return total * sizeof(double);
}

/* The blocks, the rotated rows and their gradients (RoPE); false when memory ran out. */
static bool sb_alloc(struct sb_work *w)
{
    const struct attn_problem *p = w->p;
    size_t n_q = w->g->n_q, n_k = w->g->n_k, d_k = w->g->d_k;
    size_t bytes = attn_backward_stream_scratch(n_q, n_k, d_k, w->v->rope != NULL);
    double *at = bytes > 0 ? malloc(bytes) : NULL;
    if (at == NULL)
        return false;
    w->owned = at;
    w->s = at, w->p_blk = at + ROWS * KEYS, w->dp = at + 2 * ROWS * KEYS;
    at += 3 * (size_t)ROWS * KEYS;
    w->q = *p->q, w->k = *p->k, w->dq = w->g->grad_q, w->dk = w->g->grad_k;
    if (w->v->rope != NULL) {
        w->q = attn_matrix_view(at, n_q, d_k), at += n_q * d_k;
        w->k = attn_matrix_view(at, n_k, d_k), at += n_k * d_k;
        w->dq = attn_matrix_view(at, n_q, d_k), at += n_q * d_k;
        w->dk = attn_matrix_view(at, n_k, d_k);
        attn_rope_rotate(p->q, &w->q, w->v->rope, w->v->rope->cos_q, w->v->rope->sin_q);
        attn_rope_rotate(p->k, &w->k, w->v->rope, w->v->rope->cos_k, w->v->rope->sin_k);
    }
    memset(w->dq.data, 0, n_q * d_k * sizeof(double));
    memset(w->dk.data, 0, n_k * d_k * sizeof(double));
    return true;
}

/* x turned back by the angles of its rows' tables (the rotation's transpose) into out. */
static bool rotate_back(const struct attn_matrix *x, struct attn_matrix *out,
                        const struct attn_rope *rope, const double *cos_t, const double *sin_t)
{
    size_t cells = x->rows * (rope->rotated / 2);
    double *minus = malloc(cells * sizeof *minus);
    if (minus == NULL)
        return false;
    for (size_t c = 0; c < cells; c++)
        minus[c] = -sin_t[c];
    attn_rope_rotate(x, out, rope, cos_t, minus);
    free(minus);
    return true;
}

static bool sb_fits(const struct attn_stream_grads *g, const struct attn_problem *p,
                    const struct attn_variants *v, const struct attn_matrix *output,
                    const double *lse, const struct attn_matrix *d_out)
{
    return g != NULL && g->block != NULL && p != NULL && p->q != NULL && p->k != NULL &&
           p->v != NULL && output != NULL && lse != NULL && d_out != NULL &&
           d_out->data != NULL && !v->dropout && g->n_q == p->q->rows && g->n_k == p->k->rows &&
           g->d_k == p->q->cols && g->d_v == p->v->cols && output->rows == g->n_q &&
           output->cols == g->d_v && d_out->rows == g->n_q && d_out->cols == g->d_v &&
           (p->mask.kind != ATTN_MASK_CELLS || p->mask.allow != NULL) &&
           attn_rules_ok(v, g->n_q, g->n_k);
}

enum attn_status attn_backward_stream(struct attn_stream_grads *g, const struct attn_problem *p,
                                      const struct attn_variants *v,
                                      const struct attn_matrix *output, const double *lse,
                                      const struct attn_matrix *d_out)
{
    static const struct attn_variants none;
    v = v != NULL ? v : &none;
    if (!sb_fits(g, p, v, output, lse, d_out))
        return ATTN_EINVAL;
    struct sb_work w = { .p = p, .v = v, .lse = lse, .d_out = d_out, .g = g };
    if (!sb_alloc(&w))
        return ATTN_ENOMEM;
    size_t n_q = g->n_q, n_k = g->n_k;
    memset(g->grad_v.data, 0, n_k * g->d_v * sizeof(double));
    g->grad_sink_logit = 0.0;
    for (size_t i = 0; i < n_q; i++) { /* D_i = Σ_c dO_ic·O_ic; the sink's dS: w_sink·(0 − D_i) */
        double d = 0.0;
        for (size_t c = 0; c < g->d_v; c++)
            d += d_out->data[i * d_out->stride + c] * output->data[i * output->stride + c];
        g->delta[i] = d;
        if (v->sink)
            g->grad_sink_logit -= exp(v->sink_logit - lse[i]) * d;
    }
    for (size_t r0 = 0; r0 < n_q; r0 += ROWS) {
        size_t r1 = n_q - r0 > ROWS ? r0 + ROWS : n_q, lo, hi;
        rows_span(&w, r0, r1, &lo, &hi);
        for (size_t j0 = lo; j0 < hi; j0 += KEYS)
            sb_block(&w, r0, r1, j0, hi - j0 > KEYS ? j0 + KEYS : hi);
    }
    bool ok = true;
    if (v->rope != NULL)
        ok = rotate_back(&w.dq, &g->grad_q, v->rope, v->rope->cos_q, v->rope->sin_q) &&
             rotate_back(&w.dk, &g->grad_k, v->rope, v->rope->cos_k, v->rope->sin_k);
    free(w.owned);
    if (!ok)
        return ATTN_ENOMEM;
    size_t cells = attn_stream_grads_bytes(n_q, n_k, g->d_k, g->d_v) / sizeof(double);
    bool finite = isfinite(g->grad_sink_logit);
    for (size_t c = 0; c < cells; c++)
        finite &= fabs(((const double *)g->block)[c]) <= DBL_MAX;
    return finite ? ATTN_OK : ATTN_EOVERFLOW;
}
