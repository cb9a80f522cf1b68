/*
 * core/decode.c — generation with a KV cache (decode.h): the prefill's keys and values in
 * one product each, then each later token alone: its projections (one row), its keys
 * and values appended to the cache, one query per head against the cache's rows 0..t,
 * and its output row.
 *
 * Not the full pass: no (n, n) matrix is built here, and nothing is copied from one.
 * The rules of which key a query sees are the contract's own (attn_vrow_of, shared with
 * the variants' fast path), read for row t of the whole problem.
 */
#include "decode.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "softmax_row.h"

/* ---- one query against the cache ---- */

/* Whether decode runs these variants: those of a causal decoder (decode.h). */
static bool decode_variants_ok(const struct attn_variants *v)
{
    return v == NULL || (!v->dropout && !v->top_left && v->prefix == 0 && v->chunk == 0 &&
                         v->doc_q == NULL && !(v->softcap < 0) && isfinite(v->softcap) &&
                         (!v->alibi || isfinite(v->alibi_slope)) &&
                         (!v->sink || isfinite(v->sink_logit)));
}

/* The first non-finite of x[0..n), or n. */
static size_t first_bad(const double *x, size_t n)
{
    for (size_t j = 0; j < n; j++)
        if (!isfinite(x[j]))
            return j;
    return n;
}

enum attn_status attn_decode_attend(double *weights, double *out,
                                    const struct attn_decode_query *dq, size_t *bad_col)
{
    static const struct attn_variants none;
    const struct attn_variants *v = dq->variants != NULL ? dq->variants : &none;
    size_t len = dq->t + 1, d_k = dq->k.cols;
    if (!decode_variants_ok(v) || dq->k.rows != len || dq->v.rows != len || dq->t >= dq->n ||
        !(dq->scale > 0))
        return ATTN_EINVAL;
    /* scores: the query against every cached key, one matrix-vector product */
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (blasint)len, (blasint)d_k, 1.0, dq->k.data,
                (blasint)dq->k.stride, dq->q, 1, 0.0, weights, 1);
    (void)attn_row_scale(weights, weights, len, dq->scale);
    if (v->softcap > 0)
        attn_row_softcap(weights, weights, len, v->softcap);
    /* Row t of the whole causal problem: which keys its window and sinks show. */
    const struct attn_problem causal = { .mask = { .kind = ATTN_MASK_CAUSAL } };
    struct attn_vrow r = attn_vrow_of(&causal, v, dq->n, dq->n, dq->t);
    for (size_t j = 0; j < len; j++) {
        if (!attn_vrow_sees(&r, j)) {
            weights[j] = -INFINITY;
            continue;
        }
        if (dq->bias != NULL)
            weights[j] += dq->bias[j];
        if (v->alibi)
            weights[j] -= v->alibi_slope * fabs(r.at - (double)j);
    }
    double max = attn_row_max(weights, len);
    if (max == -INFINITY) { /* nothing visible: weights 0, output 0, as the full pass has it */
        memset(weights, 0, len * sizeof *weights);
        memset(out, 0, d_k * sizeof *out);
        return ATTN_OK;
    }
    /* the sink logit takes part in the max and the sum but has no column */
    if (v->sink && v->sink_logit > max)
        max = v->sink_logit;
    double sum = attn_row_exp(weights, max, weights, len);
    if (v->sink)
        sum += exp(v->sink_logit - max);
    (void)attn_row_divide(weights, len, sum);
    if ((*bad_col = first_bad(weights, len)) < len)
        return ATTN_EOVERFLOW;
    /* output: the weighted sum of the cached values, one matrix-vector product */
    cblas_dgemv(CblasRowMajor, CblasTrans, (blasint)len, (blasint)d_k, 1.0, dq->v.data,
                (blasint)dq->v.stride, weights, 1, 0.0, out, 1);
    size_t c = first_bad(out, d_k);
    *bad_col = len + c;
    return c < d_k ? ATTN_EOVERFLOW : ATTN_OK;
}

/* ---- the block ---- */

/* Σ_{t=p}^{n−1} (t + 1) = S(n) − S(p), S(x) = x(x + 1)/2: one head's weights of every token. */
static size_t weights_per_head(size_t n, size_t p, int *overflow)
{
    size_t sn = attn_cells(n, n + 1, overflow) / 2, sp = p * (p + 1) / 2;
    return sn - sp;
}

/* The doubles of the block: caches, q, output, weights, then the scratch (concat, one
 * rotated query, one unrotated key row); 0 on bad sizes or overflow. */
size_t attn_decode_cells(size_t n, size_t p, size_t d_model, size_t heads, size_t kv_heads)
{
    if (p == 0 || p >= n || n > INT_MAX || !attn_mh_sizes_ok(d_model, heads, kv_heads))
        return 0;
    int overflow = 0;
    size_t kv_cols = kv_heads * (d_model / heads);
    size_t caches = attn_cells(attn_cells(n, kv_cols, &overflow), 2, &overflow);
    size_t rows = attn_cells(attn_cells(n - p, d_model, &overflow), 2, &overflow);
    size_t weights = attn_cells(weights_per_head(n, p, &overflow), heads, &overflow);
    size_t scratch = d_model + d_model / heads + kv_cols;
    size_t parts[] = { caches, rows, weights, scratch }, total = 0;
    for (size_t i = 0; i < 4; i++) {
        if (parts[i] > SIZE_MAX - total)
            overflow = 1;
        else
            total += parts[i];
    }
    return overflow || total > SIZE_MAX / sizeof(double) ? 0 : total;
}

enum attn_status attn_decode_alloc(struct attn_decode *d, size_t n, size_t p, size_t d_model,
                                   size_t heads, size_t kv_heads)
{
    memset(d, 0, sizeof *d);
    size_t cells = attn_decode_cells(n, p, d_model, heads, kv_heads);
    if (cells == 0)
        return p == 0 || p >= n || !attn_mh_sizes_ok(d_model, heads, kv_heads) ? ATTN_EINVAL
                                                                                : ATTN_ENOMEM;
    double *x = calloc(cells, sizeof *x);
    if (x == NULL)
        return ATTN_ENOMEM;
    size_t d_k = d_model / heads, kv_cols = kv_heads * d_k;
    *d = (struct attn_decode){ .n = n, .prefill = p, .d_model = d_model, .heads = heads,
                               .kv_heads = kv_heads, .d_k = d_k, .block = x };
    d->cache_k = attn_matrix_view(x, n, kv_cols), x += n * kv_cols;
    d->cache_v = attn_matrix_view(x, n, kv_cols), x += n * kv_cols;
    d->q = attn_matrix_view(x, n - p, d_model), x += (n - p) * d_model;
    d->output = attn_matrix_view(x, n - p, d_model), x += (n - p) * d_model;
    d->weights = x; /* the scratch follows the weights (decode_scratch) */
    return ATTN_OK;
}

void attn_decode_free(struct attn_decode *d)
{
    if (d == NULL)
        return;
    free(d->block);
    memset(d, 0, sizeof *d);
}

const double *attn_decode_weights(const struct attn_decode *d, size_t t)
{
    int overflow = 0;
    return d->weights + d->heads * weights_per_head(t, d->prefill, &overflow);
}

/* The scratch after every token's weights: concat (d_model), q_rope (d_k), key (kv·d_k). */
struct decode_scratch {
    double *concat, *q_rope, *key;
};

static struct decode_scratch decode_scratch_of(const struct attn_decode *d)
{
    int overflow = 0;
    double *s = d->weights + d->heads * weights_per_head(d->n, d->prefill, &overflow);
    return (struct decode_scratch){ s, s + d->d_model, s + d->d_model + d->d_k };
}

/* ---- the run ---- */

/* Row r of m as a one-row view. */
static struct attn_matrix row_view(const struct attn_matrix *m, size_t r, size_t rows)
{
    return (struct attn_matrix){ m->data + r * m->stride, rows, m->cols, m->stride };
}

/* Cache row j's keys of every kv head, from the unrotated row `key`: turned at key
 * position j when RoPE is on (each kv head's d_k columns on their own), else copied. */
static void put_keys(struct attn_decode *d, size_t j, const double *key,
                     const struct attn_rope *rope)
{
    double *dst = d->cache_k.data + j * d->cache_k.stride;
    if (rope == NULL) {
        memcpy(dst, key, d->cache_k.cols * sizeof *dst);
        return;
    }
    size_t half = rope->rotated / 2;
    for (size_t g = 0; g < d->kv_heads; g++) {
        struct attn_matrix in = { (double *)key + g * d->d_k, 1, d->d_k, d->d_k };
        struct attn_matrix out = { dst + g * d->d_k, 1, d->d_k, d->d_k };
        attn_rope_rotate(&in, &out, rope, rope->cos_k + j * half, rope->sin_k + j * half);
    }
}

/* Whether decode runs p with these variants: causal self-attention, RoPE tabled for (n, n). */
static bool decode_problem_ok(const struct attn_decode *d, const struct attn_mh_problem *p,
                              const struct attn_variants *variants)
{
    if (d->block == NULL || p->mask.kind != ATTN_MASK_CAUSAL || p->x_kv->rows != p->x_q->rows ||
        !attn_mh_shapes_ok(p, d->n, d->n, d->d_model, d->heads, d->kv_heads) ||
        !(p->scale > 0) || (p->bias != NULL && (p->bias->rows != d->n || p->bias->cols != d->n)))
        return false;
    for (size_t i = 0; variants != NULL && i < d->heads; i++) {
        const struct attn_rope *r = variants[i].rope;
        if (!decode_variants_ok(&variants[i]) ||
            (r != NULL && (r->cos_q == NULL || r->n_q != d->n || r->n_k != d->n ||
                           r->rotated > d->d_k)))
            return false;
    }
    return true;
}

/* The prefill: tokens 0..p−1's keys and values, one product each, into the cache. */
static void prefill(struct attn_decode *d, const struct attn_mh_problem *p,
                    const struct attn_rope *rope, const struct decode_scratch *s)
{
    struct attn_matrix x = row_view(p->x_kv, 0, d->prefill);
    struct attn_matrix k = row_view(&d->cache_k, 0, d->prefill);
    struct attn_matrix v = row_view(&d->cache_v, 0, d->prefill);
    attn_mh_project(&k, &x, p->w_k, p->b_k, p->transposed_weights);
    attn_mh_project(&v, &x, p->w_v, p->b_v, p->transposed_weights);
    for (size_t j = 0; rope != NULL && j < d->prefill; j++) { /* each key at its position */
        memcpy(s->key, k.data + j * k.stride, k.cols * sizeof *s->key);
        put_keys(d, j, s->key, rope);
    }
}

static enum attn_status decode_fault(struct attn_decode *d, enum attn_mh_step step, size_t head,
                                     size_t t, size_t col)
{
    enum attn_step hs = step == ATTN_MH_HEAD ? ATTN_STEP_WEIGHTS : ATTN_STEP_NONE;
    d->fault = (struct attn_mh_fault){ step, head, hs, t, col };
    return ATTN_EOVERFLOW;
}

/* Token t's projections: q into d->q, k (rotated) and v appended to the cache. */
static enum attn_status project_token(struct attn_decode *d, const struct attn_mh_problem *p,
                                      size_t t, const struct attn_rope *rope,
                                      const struct decode_scratch *s)
{
    bool tr = p->transposed_weights;
    struct attn_matrix x = row_view(p->x_q, t, 1), q = row_view(&d->q, t - d->prefill, 1);
    struct attn_matrix key = { s->key, 1, d->cache_k.cols, d->cache_k.cols };
    struct attn_matrix v = row_view(&d->cache_v, t, 1);
    attn_mh_project(&q, &x, p->w_q, p->b_q, tr);
    attn_mh_project(&key, &x, p->w_k, p->b_k, tr);
    attn_mh_project(&v, &x, p->w_v, p->b_v, tr);
    const struct { enum attn_mh_step step; const double *row; size_t cols; } made[] = {
        { ATTN_MH_Q, q.data, q.cols }, { ATTN_MH_K, key.data, key.cols },
        { ATTN_MH_V, v.data, v.cols },
    };
    for (size_t m = 0; m < 3; m++) {
        size_t c = first_bad(made[m].row, made[m].cols);
        if (c < made[m].cols)
            return decode_fault(d, made[m].step, 0, t, c);
    }
    put_keys(d, t, s->key, rope);
    return ATTN_OK;
}

/* Token t in every head against the cache, then its output row. */
static enum attn_status attend_token(struct attn_decode *d, const struct attn_mh_problem *p,
                                     size_t t, const struct attn_variants *variants,
                                     const struct decode_scratch *s)
{
    size_t d_k = d->d_k, len = t + 1;
    const double *q_row = d->q.data + (t - d->prefill) * d->q.stride;
    double *weights = (double *)attn_decode_weights(d, t);
    for (size_t i = 0; i < d->heads; i++) {
        size_t g = attn_mh_kv_head(i, d->heads, d->kv_heads), bad = 0;
        const struct attn_variants *v = variants != NULL ? &variants[i] : NULL;
        const double *q = q_row + i * d_k;
        if (v != NULL && v->rope != NULL) { /* the query at its position t */
            size_t half = v->rope->rotated / 2;
            struct attn_matrix in = { (double *)q, 1, d_k, d_k }, out = { s->q_rope, 1, d_k, d_k };
            attn_rope_rotate(&in, &out, v->rope, v->rope->cos_q + t * half,
                             v->rope->sin_q + t * half);
            q = s->q_rope;
        }
        struct attn_matrix kc = attn_column_block(&d->cache_k, g, d_k);
        struct attn_matrix vc = attn_column_block(&d->cache_v, g, d_k);
        kc.rows = vc.rows = len;
        const struct attn_decode_query dq = {
            .q = q, .k = kc, .v = vc, .scale = p->scale, .variants = v, .t = t, .n = d->n,
            .bias = p->bias != NULL ? p->bias->data + t * p->bias->stride : NULL,
        };
        enum attn_status st = attn_decode_attend(weights + i * len, s->concat + i * d_k, &dq, &bad);
        if (st == ATTN_EOVERFLOW)
            return decode_fault(d, ATTN_MH_HEAD, i, t, bad);
        if (st != ATTN_OK)
            return st;
    }
    struct attn_matrix concat = { s->concat, 1, d->d_model, d->d_model };
    struct attn_matrix out = row_view(&d->output, t - d->prefill, 1);
    attn_mh_project(&out, &concat, p->w_o, p->b_o, p->transposed_weights);
    size_t c = first_bad(out.data, out.cols);
    return c < out.cols ? decode_fault(d, ATTN_MH_OUTPUT, 0, t, c) : ATTN_OK;
}

enum attn_status attn_decode_run(struct attn_decode *d, const struct attn_mh_problem *p,
                                 const struct attn_variants *variants)
{
    if (!decode_problem_ok(d, p, variants))
        return ATTN_EINVAL;
    memset(&d->fault, 0, sizeof d->fault);
    /* RoPE's tables are shared by the heads (variants.h): head 0's serve the keys. */
    const struct attn_rope *rope = variants != NULL ? variants[0].rope : NULL;
    const struct decode_scratch s = decode_scratch_of(d);
    prefill(d, p, rope, &s);
    size_t row, col;
    struct attn_matrix k = row_view(&d->cache_k, 0, d->prefill);
    struct attn_matrix v = row_view(&d->cache_v, 0, d->prefill);
    if (attn_first_non_finite(&k, &row, &col))
        return decode_fault(d, ATTN_MH_K, 0, row, col);
    if (attn_first_non_finite(&v, &row, &col))
        return decode_fault(d, ATTN_MH_V, 0, row, col);
    for (size_t t = d->prefill; t < d->n; t++) {
        enum attn_status st = project_token(d, p, t, rope, &s);
        if (st == ATTN_OK)
            st = attend_token(d, p, t, variants, &s);
        if (st != ATTN_OK)
            return st;
    }
    return ATTN_OK;
}
