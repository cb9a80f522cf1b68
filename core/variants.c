/*
 * core/variants.c — the fast path of attention with variants (variants.h): RoPE,
 * softcap, ALiBi, window and sinks, the sink logit and dropout, each a pass of its
 * own written into the trace; the trace's allocation; the rules both paths share
 * (the window, the argument checks, the fault).
 *
 * What it is not: the plain forward pass (attention.c, which runs unchanged when no
 * variant is asked for, so those answers keep their bits), the reference
 * (variants_ref.c), or a validator of requests.
 *
 * The passes run one after the other over whole matrices, each checked before the
 * next, so the first fault is the first in step order, then row-major. The
 * products are OpenBLAS's; softmax uses the row functions of softmax_row.h, as
 * attention.c does.
 */
#include "variants.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "random.h"
#include "softmax_row.h"

/* ---- names and small rules ---- */

const char *attn_variant_step_name(int step)
{
    switch (step) {
    case ATTN_STEP_Q_ROPE: return "q_rope";
    case ATTN_STEP_K_ROPE: return "k_rope";
    case ATTN_STEP_SOFTCAPPED: return "softcapped";
    case ATTN_STEP_DROPOUT_KEEP: return "dropout_keep";
    case ATTN_STEP_DROPPED: return "dropped";
    default: return attn_step_name((enum attn_step)step);
    }
}

bool attn_variants_any(const struct attn_variants *v)
{
    return v != NULL && (v->rope != NULL || v->softcap != 0 || v->alibi || v->window || v->sink ||
                         v->dropout);
}

void attn_alibi_slopes(size_t h, double *out)
{
    size_t n = 1;
    while (n * 2 <= h)
        n *= 2;
    /* The power of two's own slopes: 2^(-8i/n), i = 1..n. */
    for (size_t i = 1; i <= n; i++)
        out[i - 1] = exp2(-8.0 * (double)i / (double)n);
    /* The rest from 2n's slopes 2^(-8i/2n), odd i: 2^(-4/n), 2^(-12/n), ... */
    for (size_t i = n; i < h; i++)
        out[i] = exp2(-8.0 * (double)(2 * (i - n) + 1) / (double)(2 * n));
}

bool attn_window_allows(const struct attn_variants *v, size_t n_q, size_t n_k, size_t i,
                        size_t j)
{
    if (!v->window || j < v->sink_tokens)
        return true;
    /* d = j − (i + off), off = n_k − n_q, in wide signed arithmetic: sizes are <= INT_MAX. */
    long long d = (long long)j - (long long)i - (long long)n_k + (long long)n_q;
    if (v->has_left && d < -(long long)v->left)
        return false;
    return !(v->has_right && d > (long long)v->right);
}

/* Whether the mask (cells or causal) lets query i see key j. */
static bool attn_mask_allows(const struct attn_mask *m, size_t n_q, size_t n_k, size_t i, size_t j)
{
    if (m->kind == ATTN_MASK_CELLS)
        return m->allow[(m->rows == 1 ? 0 : i) * n_k + j] != 0;
    if (m->kind == ATTN_MASK_CAUSAL)
        return j + n_q <= i + n_k;
    return true;
}

/* ---- RoPE tables ---- */

enum attn_status attn_rope_prepare(struct attn_rope *rope, size_t n_q, size_t n_k)
{
    size_t half = rope->rotated / 2;
    rope->cos_q = rope->sin_q = rope->cos_k = rope->sin_k = NULL;
    if (!(rope->base > 0) || !isfinite(rope->base) || rope->rotated == 0 ||
        rope->rotated % 2 != 0 || rope->rotated > INT_MAX || n_q == 0 || n_k == 0 ||
        n_q > INT_MAX || n_k > INT_MAX)
        return ATTN_EINVAL;
    int overflow = 0;
    size_t rows = n_q + n_k; /* both <= INT_MAX: no wrap */
    size_t cells = attn_cells(attn_cells(rows, half, &overflow), 2, &overflow);
    if (overflow || cells > SIZE_MAX / sizeof(double))
        return ATTN_ENOMEM;
    double *block = malloc(cells * sizeof(double));
    double *inv = malloc(half * sizeof(double));
    if (block == NULL || inv == NULL) {
        free(block);
        free(inv);
        return ATTN_ENOMEM;
    }
    /* θ_c = pos · base^(−2c/r): the frequencies once, then one cos and sin a row and pair. */
    for (size_t c = 0; c < half; c++)
        inv[c] = pow(rope->base, -2.0 * (double)c / (double)rope->rotated);
    rope->cos_q = block;
    rope->sin_q = block + n_q * half;
    rope->cos_k = block + 2 * n_q * half;
    rope->sin_k = block + (2 * n_q + n_k) * half;
    double off = (double)n_k - (double)n_q;
    for (size_t i = 0; i < n_q; i++) {
        double pos = rope->positions_q != NULL ? rope->positions_q[i] : off + (double)i;
        for (size_t c = 0; c < half; c++) {
            rope->cos_q[i * half + c] = cos(pos * inv[c]);
            rope->sin_q[i * half + c] = sin(pos * inv[c]);
        }
    }
    for (size_t j = 0; j < n_k; j++) {
        double pos = rope->positions_k != NULL ? rope->positions_k[j] : (double)j;
        for (size_t c = 0; c < half; c++) {
            rope->cos_k[j * half + c] = cos(pos * inv[c]);
            rope->sin_k[j * half + c] = sin(pos * inv[c]);
        }
    }
    free(inv);
    rope->n_q = n_q;
    rope->n_k = n_k;
    return ATTN_OK;
}

void attn_rope_release(struct attn_rope *rope)
{
    if (rope == NULL)
        return;
    free(rope->cos_q); /* the one block of the four tables */
    rope->cos_q = rope->sin_q = rope->cos_k = rope->sin_k = NULL;
    rope->n_q = rope->n_k = 0;
}

/*
 * out (rows, d) = x with each row's pairs turned by its table row: (x_a, x_b) →
 * (x_a cos − x_b sin, x_b cos + x_a sin), where the pair (a, b) is (c, c + r/2)
 * ("half") or (2c, 2c + 1) ("interleaved").
 */
static void attn_rope_rotate(const struct attn_matrix *x, struct attn_matrix *out,
                             const struct attn_rope *rope, const double *cos_t,
                             const double *sin_t)
{
    size_t half = rope->rotated / 2;
    bool interleaved = rope->layout == ATTN_ROPE_INTERLEAVED;
    for (size_t i = 0; i < x->rows; i++) {
        const double *src = x->data + i * x->stride;
        double *dst = out->data + i * out->stride;
        const double *cs = cos_t + i * half, *sn = sin_t + i * half;
        memcpy(dst, src, x->cols * sizeof *dst);
        for (size_t c = 0; c < half; c++) {
            size_t a = interleaved ? 2 * c : c, b = interleaved ? 2 * c + 1 : c + half;
            dst[a] = src[a] * cs[c] - src[b] * sn[c];
            dst[b] = src[b] * cs[c] + src[a] * sn[c];
        }
    }
}

/* ---- the trace ---- */

/* The doubles of the variants' own steps; 0 with *overflow when they do not fit. */
static size_t attn_vtrace_cells(size_t n_q, size_t n_k, size_t d_k,
                                const struct attn_variants *v, int *overflow)
{
    size_t qk = attn_cells(n_q, n_k, overflow), total = 0, add[4] = { 0 };
    if (v->rope != NULL) {
        add[0] = attn_cells(n_q, d_k, overflow);
        add[1] = attn_cells(n_k, d_k, overflow);
    }
    if (v->softcap > 0)
        add[2] = qk;
    if (v->dropout)
        add[3] = attn_cells(qk, 2, overflow);
    for (int s = 0; s < 4; s++) {
        if (add[s] > SIZE_MAX - total)
            *overflow = 1;
        else
            total += add[s];
    }
    if (v->sink) {
        if (n_q > SIZE_MAX - total)
            *overflow = 1;
        else
            total += n_q;
    }
    return total;
}

size_t attn_vtrace_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v,
                         const struct attn_variants *v)
{
    int overflow = 0;
    size_t base = attn_trace_bytes_keep(n_q, n_k, d_v, ATTN_KEEP_ALL);
    size_t extra = attn_vtrace_cells(n_q, n_k, d_k, v, &overflow);
    if (base == 0 || overflow || extra > (SIZE_MAX - base) / sizeof(double))
        return 0;
    return base + extra * sizeof(double);
}

/* The variants' own steps into t (zeroed first); with_base: the five steps too. */
static enum attn_status attn_vtrace_alloc_as(struct attn_vtrace *t, size_t n_q, size_t n_k,
                                             size_t d_k, size_t d_v,
                                             const struct attn_variants *v, bool with_base)
{
    static const struct attn_variants none = { 0 };
    int overflow = 0;
    if (t == NULL)
        return ATTN_EINVAL;
    memset(t, 0, sizeof *t);
    if (v == NULL)
        v = &none;
    if (n_q == 0 || n_k == 0 || d_k == 0 || d_v == 0)
        return ATTN_EINVAL;
    size_t cells = attn_vtrace_cells(n_q, n_k, d_k, v, &overflow);
    if (overflow || cells > SIZE_MAX / sizeof(double))
        return ATTN_ENOMEM;
    enum attn_status st = with_base ? attn_trace_alloc(&t->base, n_q, n_k, d_v) : ATTN_OK;
    if (st != ATTN_OK)
        return st;
    double *d = cells > 0 ? calloc(cells, sizeof(double)) : NULL;
    if (cells > 0 && d == NULL) {
        attn_trace_free(&t->base);
        return ATTN_ENOMEM;
    }
    t->block = d;
    if (v->rope != NULL) {
        t->q_rope = attn_matrix_view(d, n_q, d_k);
        d += n_q * d_k;
        t->k_rope = attn_matrix_view(d, n_k, d_k);
        d += n_k * d_k;
    }
    if (v->softcap > 0) {
        t->softcapped = attn_matrix_view(d, n_q, n_k);
        d += n_q * n_k;
    }
    if (v->dropout) {
        t->keep = attn_matrix_view(d, n_q, n_k);
        d += n_q * n_k;
        t->dropped = attn_matrix_view(d, n_q, n_k);
        d += n_q * n_k;
    }
    if (v->sink)
        t->sink_weight = d;
    return ATTN_OK;
}

enum attn_status attn_vtrace_alloc(struct attn_vtrace *t, size_t n_q, size_t n_k, size_t d_k,
                                   size_t d_v, const struct attn_variants *v)
{
    return attn_vtrace_alloc_as(t, n_q, n_k, d_k, d_v, v, true);
}

enum attn_status attn_vtrace_alloc_steps(struct attn_vtrace *t, size_t n_q, size_t n_k,
                                         size_t d_k, const struct attn_variants *v)
{
    return attn_vtrace_alloc_as(t, n_q, n_k, d_k, 1, v, false);
}

void attn_vtrace_free(struct attn_vtrace *t)
{
    if (t == NULL)
        return;
    attn_trace_free(&t->base);
    free(t->block);
    memset(t, 0, sizeof *t);
}

/* ---- checks and faults ---- */

enum attn_status attn_check_variants(const struct attn_vtrace *t, const struct attn_problem *p,
                                     const struct attn_variants *v)
{
    const struct attn_rope *r = v->rope;
    size_t n_q = p->q->rows, n_k = p->k->rows;
    if (r != NULL && (r->cos_q == NULL || r->n_q != n_q || r->n_k != n_k ||
                      r->rotated > p->q->cols || t->q_rope.data == NULL ||
                      t->q_rope.cols != p->q->cols))
        return ATTN_EINVAL;
    if (!(v->softcap >= 0) || !isfinite(v->softcap) || (v->softcap > 0 && t->softcapped.data == NULL))
        return ATTN_EINVAL;
    if (v->alibi && !isfinite(v->alibi_slope))
        return ATTN_EINVAL;
    if (v->sink && (!isfinite(v->sink_logit) || t->sink_weight == NULL))
        return ATTN_EINVAL;
    if (v->dropout && (!(v->dropout_p >= 0 && v->dropout_p < 1) || t->dropped.data == NULL))
        return ATTN_EINVAL;
    return ATTN_OK;
}

static void attn_zero(struct attn_matrix *m)
{
    if (m->data != NULL)
        memset(m->data, 0, m->rows * m->cols * sizeof(double));
}

enum attn_status attn_vtrace_fault(struct attn_vtrace *t, const struct attn_variants *v,
                                   int step, size_t row, size_t col)
{
    struct attn_trace *b = &t->base;
    const int order[] = { ATTN_STEP_Q_ROPE, ATTN_STEP_K_ROPE, ATTN_STEP_SCORES,
                          ATTN_STEP_SCALED, ATTN_STEP_SOFTCAPPED, ATTN_STEP_MASKED,
                          ATTN_STEP_WEIGHTS, ATTN_STEP_DROPOUT_KEEP, ATTN_STEP_DROPPED,
                          ATTN_STEP_OUTPUT };
    struct attn_matrix *m[] = { &t->q_rope, &t->k_rope, &b->scores, &b->scaled, &t->softcapped,
                                &b->masked, &b->weights, &t->keep, &t->dropped, &b->output };
    bool later = false;
    for (size_t s = 0; s < sizeof order / sizeof order[0]; s++) {
        if (later)
            attn_zero(m[s]);
        later |= order[s] == step;
    }
    attn_trace_reset(b);
    if (v->sink)
        memset(t->sink_weight, 0, b->n_q * sizeof(double));
    b->fault.step = (enum attn_step)step;
    b->fault.row = row;
    b->fault.col = col;
    t->fault_step = step;
    return ATTN_EOVERFLOW;
}

/* The first non-finite cell of m (row-major), with the blocked cells of `masked`
 * skipped when v is given: their −inf is the mask's doing. */
static enum attn_status attn_vcheck(struct attn_vtrace *t, const struct attn_variants *v,
                                    int step, const struct attn_matrix *m,
                                    const struct attn_problem *masking)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++) {
            double x = attn_at(m, i, j);
            if (isfinite(x))
                continue;
            if (masking != NULL && x == -INFINITY &&
                (!attn_mask_allows(&masking->mask, m->rows, m->cols, i, j) ||
                 !attn_window_allows(v, m->rows, m->cols, i, j)))
                continue;
            return attn_vtrace_fault(t, v, step, i, j);
        }
    return ATTN_OK;
}

/* ---- the passes ---- */

/* c·tanh(x / c): bounded by c, so it cannot overflow; a pass of its own so `scaled`
 * keeps its meaning and the cap can be seen. */
static void attn_pass_softcap(const struct attn_matrix *x, struct attn_matrix *out, double c)
{
    size_t n = x->rows * x->cols;
    for (size_t k = 0; k < n; k++)
        out->data[k] = c * tanh(x->data[k] / c);
}

/*
 * masked = x + bias − m·|i + off − j|, −inf where the mask, causal or the window
 * blocks. The distance |i + off − j| is exact in doubles (sizes <= INT_MAX).
 */
static void attn_pass_vmask(struct attn_vtrace *t, const struct attn_matrix *x,
                            const struct attn_problem *p, const struct attn_variants *v)
{
    size_t n_q = t->base.n_q, n_k = t->base.n_k;
    double off = (double)n_k - (double)n_q;
    for (size_t i = 0; i < n_q; i++) {
        const double *xi = x->data + i * n_k;
        const double *bi = p->bias != NULL ? p->bias->data + i * p->bias->stride : NULL;
        double *mi = t->base.masked.data + i * n_k;
        for (size_t j = 0; j < n_k; j++) {
            if (!attn_mask_allows(&p->mask, n_q, n_k, i, j) ||
                !attn_window_allows(v, n_q, n_k, i, j)) {
                mi[j] = -INFINITY;
                continue;
            }
            double m = bi != NULL ? xi[j] + bi[j] : xi[j];
            if (v->alibi)
                m -= v->alibi_slope * fabs((double)i + off - (double)j);
            mi[j] = m;
        }
    }
}

/*
 * Softmax of every row, the sink logit z (when there is one) taking part in the
 * max and the sum but getting no column: the row's weights then sum to
 * 1 − sink_weight. A row with every key blocked has weights 0, and its whole
 * weight goes to the sink when there is one.
 */
static void attn_pass_vsoftmax(struct attn_vtrace *t, const struct attn_problem *p,
                               const struct attn_variants *v)
{
    struct attn_trace *b = &t->base;
    size_t n = b->n_k;
    for (size_t i = 0; i < b->n_q; i++) {
        const double *x = b->masked.data + i * n;
        double *w = b->weights.data + i * n;
        double max = attn_row_max(x, n);
        bool blocked = max == -INFINITY;
        b->summary.fully_masked[i] = blocked;
        b->summary.n_fully_masked += blocked;
        if (blocked) {
            memset(w, 0, n * sizeof *w);
            if (v->sink)
                t->sink_weight[i] = 1.0;
            b->summary.argmax[i] = ATTN_NO_INDEX;
            continue;
        }
        if (v->sink && v->sink_logit > max)
            max = v->sink_logit;
        double sum = attn_row_exp(x, max, w, n), sink = 0.0;
        if (v->sink) {
            sink = exp(v->sink_logit - max);
            sum += sink;
        }
        (void)attn_row_divide(w, n, sum);
        if (v->sink)
            t->sink_weight[i] = sink / sum;
        if (p->skip_summary)
            continue;
        struct attn_row_facts f = attn_row_facts_of(w, n);
        b->summary.row_sums[i] = f.sum;
        b->summary.argmax[i] = f.argmax;
        b->summary.max_weight[i] = f.max_weight;
        b->summary.entropy[i] = f.entropy;
    }
}

/* keep_ij = 1 where the generator's u >= p; dropped = weights · keep / (1 − p). */
static void attn_pass_dropout(struct attn_vtrace *t, const struct attn_variants *v)
{
    size_t n = t->base.n_q * t->base.n_k;
    double scale = 1.0 / (1.0 - v->dropout_p);
    for (size_t k = 0; k < n; k++) {
        double u = attn_random_unit(v->dropout_seed, ATTN_RANDOM_STREAM_DROPOUT,
                                    v->dropout_first + (uint64_t)k);
        double keep = u >= v->dropout_p ? 1.0 : 0.0;
        t->keep.data[k] = keep;
        t->dropped.data[k] = t->base.weights.data[k] * keep * scale;
    }
}

static void attn_gemm(const struct attn_matrix *a, const struct attn_matrix *b, bool b_trans,
                      struct attn_matrix *c)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, b_trans ? CblasTrans : CblasNoTrans,
                (blasint)a->rows, (blasint)(b_trans ? b->rows : b->cols), (blasint)a->cols, 1.0,
                a->data, (blasint)a->stride, b->data, (blasint)b->stride, 0.0, c->data,
                (blasint)c->stride);
}

enum attn_status attn_forward_variants(struct attn_vtrace *out, const struct attn_problem *p,
                                       const struct attn_variants *v)
{
    if (out == NULL || !attn_variants_any(v))
        return out == NULL ? ATTN_EINVAL : attn_forward(&out->base, p);
    enum attn_status st = attn_check_problem(&out->base, p);
    if (st != ATTN_OK || (st = attn_check_variants(out, p, v)) != ATTN_OK)
        return st;
    struct attn_trace *b = &out->base;
    const struct attn_matrix *q = p->q, *k = p->k, *x = &b->scaled;
    attn_trace_reset(b);
    out->fault_step = ATTN_STEP_NONE;
    if (v->rope != NULL) {
        attn_rope_rotate(p->q, &out->q_rope, v->rope, v->rope->cos_q, v->rope->sin_q);
        if ((st = attn_vcheck(out, v, ATTN_STEP_Q_ROPE, &out->q_rope, NULL)) != ATTN_OK)
            return st;
        attn_rope_rotate(p->k, &out->k_rope, v->rope, v->rope->cos_k, v->rope->sin_k);
        if ((st = attn_vcheck(out, v, ATTN_STEP_K_ROPE, &out->k_rope, NULL)) != ATTN_OK)
            return st;
        q = &out->q_rope;
        k = &out->k_rope;
    }
    attn_gemm(q, k, true, &b->scores);
    if ((st = attn_vcheck(out, v, ATTN_STEP_SCORES, &b->scores, NULL)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < b->n_q; i++)
        (void)attn_row_scale(b->scores.data + i * b->n_k, b->scaled.data + i * b->n_k, b->n_k,
                             p->scale);
    if ((st = attn_vcheck(out, v, ATTN_STEP_SCALED, &b->scaled, NULL)) != ATTN_OK)
        return st;
    if (v->softcap > 0) {
        attn_pass_softcap(&b->scaled, &out->softcapped, v->softcap);
        x = &out->softcapped;
        if ((st = attn_vcheck(out, v, ATTN_STEP_SOFTCAPPED, x, NULL)) != ATTN_OK)
            return st;
    }
    attn_pass_vmask(out, x, p, v);
    if ((st = attn_vcheck(out, v, ATTN_STEP_MASKED, &b->masked, p)) != ATTN_OK)
        return st;
    attn_pass_vsoftmax(out, p, v);
    if ((st = attn_vcheck(out, v, ATTN_STEP_WEIGHTS, &b->weights, NULL)) != ATTN_OK)
        return st;
    const struct attn_matrix *mix = &b->weights;
    if (v->dropout) {
        attn_pass_dropout(out, v);
        mix = &out->dropped;
        if ((st = attn_vcheck(out, v, ATTN_STEP_DROPPED, mix, NULL)) != ATTN_OK)
            return st;
    }
    attn_gemm(mix, p->v, false, &b->output);
    return attn_vcheck(out, v, ATTN_STEP_OUTPUT, &b->output, NULL);
}
