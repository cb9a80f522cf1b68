/*
 * core/precision_backward.c — the gradients of a low format's forward pass, by the
 * precision rules (see precision.h; the float64 steps are backward.h's).
 *
 * Dimension letters as in attention.h. Every step is held as a double whose value the
 * format or the accumulator can hold; nothing is refused for not being finite.
 */
#include "precision.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backward.h"
#include "internal.h"
#include "variants.h"

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

static size_t max_of(size_t a, size_t b)
{
    return a > b ? a : b;
}

size_t attn_backward_precision_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v,
                                     const struct attn_precision *prec)
{
    int overflow = 0;
    size_t held = attn_cells(n_q, d_v, &overflow); /* dO in the format */
    size_t products[] = {
        attn_product_precision_bytes(n_k, n_q, d_v, prec), /* mixᵀ · dO */
        attn_product_precision_bytes(n_q, d_v, n_k, prec), /* dO · Vᵀ */
        attn_product_precision_bytes(n_q, n_k, d_k, prec), /* dS' · K' */
        attn_product_precision_bytes(n_k, n_q, d_k, prec), /* dS'ᵀ · Q' */
    };
    size_t most = 0;
    for (size_t i = 0; i < sizeof products / sizeof products[0]; i++) {
        if (products[i] == 0)
            return 0;
        most = max_of(most, products[i]);
    }
    /* RoPE's back-rotation: a table of −sin a row, at the most n · d_k / 2 */
    size_t rope = attn_cells(max_of(n_q, n_k), d_k, &overflow);
    if (overflow || held > SIZE_MAX / sizeof(double) || rope > SIZE_MAX / sizeof(double))
        return 0;
    size_t bytes = add_sat(add_sat(held * sizeof(double), most), rope * sizeof(double));
    return bytes == SIZE_MAX ? 0 : bytes;
}

/* m's cells rounded once to f, in place. */
static void round_all(struct attn_matrix *m, enum attn_format f)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            m->data[i * m->stride + j] = attn_format_round(m->data[i * m->stride + j], f);
}

/* dP = dO·Vᵀ (by the product's rule), × keep · 1/(1 − p) under dropout; D_i = Σ_c
 * dO_ic · O_ic in the accumulator in column order. d_out is held in the format. */
static enum attn_status grad_weights(struct attn_grads *g, const struct attn_problem *p,
                                     const struct attn_variants *v, const struct attn_vtrace *fwd,
                                     const struct attn_matrix *d_out,
                                     const struct attn_precision *prec)
{
    enum attn_format acc = prec->accumulate;
    enum attn_status st = attn_product_precision(&g->grad_weights, d_out, false, p->v, true, prec);
    if (st != ATTN_OK)
        return st;
    if (v->dropout) {
        double factor = attn_format_round(1.0 / (1.0 - v->dropout_p), acc);
        for (size_t c = 0; c < g->n_q * g->n_k; c++)
            g->grad_weights.data[c] =
                attn_format_round(g->grad_weights.data[c] * fwd->keep.data[c] * factor, acc);
    }
    const struct attn_matrix *o = &fwd->base.output;
    for (size_t i = 0; i < g->n_q; i++) {
        double d = 0;
        for (size_t c = 0; c < g->d_v; c++)
            d = attn_format_fma(d_out->data[i * d_out->stride + c], attn_at(o, i, c), d, acc);
        g->delta[i] = d;
    }
    return ATTN_OK;
}

/* dS = P∘(dP − D) (0 where blocked), through softcap and the scale, each step in float64
 * from its operands as held and rounded once to the accumulator. */
static void grad_scores(struct attn_grads *g, const struct attn_problem *p,
                        const struct attn_variants *v, const struct attn_vtrace *fwd,
                        const struct attn_precision *prec)
{
    enum attn_format acc = prec->accumulate;
    double scale = attn_format_round(p->scale, acc), cap = attn_format_round(v->softcap, acc);
    const double *w = fwd->base.weights.data;
    for (size_t i = 0; i < g->n_q; i++) {
        struct attn_vrow r = attn_vrow_of(p, v, g->n_q, g->n_k, i);
        for (size_t j = 0; j < g->n_k; j++) {
            size_t c = i * g->n_k + j;
            double ds = attn_vrow_sees(&r, j)
                            ? attn_format_round(w[c] * (g->grad_weights.data[c] - g->delta[i]), acc)
                            : 0.0;
            ds += 0.0; /* an underflowed weight gives 0, not −0, as in float64 */
            g->grad_masked.data[c] = ds;
            double through = ds;
            if (v->softcap > 0) {
                double th = fwd->softcapped.data[c] / cap;
                through = attn_format_round(ds * (1.0 - th * th), acc);
            }
            g->grad_scaled.data[c] = through;
            g->grad_scores.data[c] = attn_format_round(through * scale, acc);
        }
    }
}

/* The first cell of g's steps, in the order they run, that is not finite. */
static void find_fault(struct attn_grads *g, const struct attn_variants *v)
{
    g->fault = (struct attn_grad_fault){ ATTN_GRAD_NONE, 0, 0 };
    for (int s = ATTN_GRAD_V; s <= ATTN_GRAD_SINK_LOGIT; s++) {
        size_t row, col;
        struct attn_matrix m = attn_grads_step(g, s);
        if (attn_grad_step_runs(s, v) && attn_first_non_finite(&m, &row, &col)) {
            g->fault = (struct attn_grad_fault){ (enum attn_grad_step)s, row, col };
            return;
        }
    }
}

enum attn_status attn_backward_precision(struct attn_grads *g, const struct attn_problem *p,
                                         const struct attn_variants *v,
                                         const struct attn_vtrace *fwd,
                                         const struct attn_matrix *d_out,
                                         const struct attn_precision *prec)
{
    static const struct attn_variants none;
    v = v != NULL ? v : &none;
    if (g == NULL || p == NULL || fwd == NULL || prec == NULL || !attn_precision_valid(prec) ||
        !attn_grads_fit(g, p, v, fwd, d_out))
        return ATTN_EINVAL;
    size_t n_q = g->n_q, d_v = g->d_v;
    enum attn_format f = prec->format, acc = prec->accumulate;
    double *held = malloc(n_q * d_v * sizeof(double)); /* dO in the format */
    if (held == NULL)
        return ATTN_ENOMEM;
    struct attn_matrix d_o = attn_matrix_view(held, n_q, d_v);
    for (size_t i = 0; i < n_q; i++)
        for (size_t c = 0; c < d_v; c++)
            d_o.data[i * d_v + c] = attn_format_round(attn_at(d_out, i, c), f);
    const struct attn_matrix *mix = v->dropout ? &fwd->dropped : &fwd->base.weights;
    enum attn_status st = attn_product_precision(&g->grad_v, mix, true, &d_o, false, prec);
    if (st == ATTN_OK)
        st = grad_weights(g, p, v, fwd, &d_o, prec);
    if (st == ATTN_OK) {
        grad_scores(g, p, v, fwd, prec);
        /* dS'·K' and dS'ᵀ·Q': the product reads grad_scores rounded to the format, dS' */
        const struct attn_matrix *q = v->rope != NULL ? &fwd->q_rope : p->q;
        const struct attn_matrix *k = v->rope != NULL ? &fwd->k_rope : p->k;
        st = attn_product_precision(&g->grad_q_rope, &g->grad_scores, false, k, false, prec);
        if (st == ATTN_OK)
            st = attn_product_precision(&g->grad_k_rope, &g->grad_scores, true, q, false, prec);
    }
    if (st == ATTN_OK) /* turned back by RoPE from grad_*_rope as held, then rounded */
        st = attn_grads_turn_back(g, v);
    free(held);
    if (st != ATTN_OK)
        return st;
    round_all(&g->grad_q, f);
    round_all(&g->grad_k, f);
    round_all(&g->grad_v, f);
    double sink = 0; /* −Σ_i w_i·D_i: each term subtracted by one fused multiply-add */
    for (size_t i = 0; v->sink && i < n_q; i++)
        sink = attn_format_fma(-fwd->sink_weight[i], g->delta[i], sink, acc);
    g->grad_sink_logit = sink;
    find_fault(g, v);
    return ATTN_OK;
}
