/*
 * core/multihead.c — multi-head attention: projections, heads on strided views,
 * concat, output projection, the mean of the heads' weights. The fast path uses
 * cblas_dgemm and attn_forward; attn_mh_reference recomputes the same contract in
 * naive loops with attn_reference, for tests.
 *
 * Not here: JSON, HTTP, printing, random inputs. Dimension letters are those of
 * multihead.h's legend.
 */
#include "multihead.h"

#include <cblas.h>
#include <limits.h>
#include <math.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

size_t attn_mh_kv_head(size_t i, size_t heads, size_t kv_heads)
{
    return i * kv_heads / heads;
}

/* ---- sizes and the trace ---- */

/* The doubles of the block: q, k, v, concat, output, weights_mean; 0 on overflow. */
static size_t mh_block_cells(size_t n_q, size_t n_k, size_t d_model, size_t kv_cols)
{
    int overflow = 0;
    size_t q = attn_cells(n_q, d_model, &overflow);     /* q, concat, output: each (n_q, d_model) */
    size_t kv = attn_cells(n_k, kv_cols, &overflow);    /* k, v: each (n_k, kv·d_k) */
    size_t mean = attn_cells(n_q, n_k, &overflow);      /* weights_mean (n_q, n_k) */
    size_t q3 = attn_cells(q, 3, &overflow), kv2 = attn_cells(kv, 2, &overflow);
    if (overflow || q3 > SIZE_MAX - kv2 || q3 + kv2 > SIZE_MAX - mean)
        return 0;
    return q3 + kv2 + mean;
}

bool attn_mh_sizes_ok(size_t d_model, size_t heads, size_t kv_heads)
{
    return heads > 0 && kv_heads > 0 && d_model % heads == 0 && heads % kv_heads == 0 &&
           d_model / heads > 0;
}

size_t attn_mh_trace_cells(size_t n_q, size_t n_k, size_t d_model, size_t heads,
                           size_t kv_heads)
{
    if (!attn_mh_sizes_ok(d_model, heads, kv_heads))
        return 0;
    size_t d_k = d_model / heads;
    size_t block = mh_block_cells(n_q, n_k, d_model, kv_heads * d_k);
    size_t per_head = attn_trace_cells(n_q, n_k, d_k);
    int overflow = 0;
    size_t heads_total = attn_cells(per_head, heads, &overflow);
    if (block == 0 || per_head == 0 || overflow || block > SIZE_MAX - heads_total)
        return 0;
    return block + heads_total;
}

enum attn_status attn_mh_trace_alloc(struct attn_mh_trace *t, size_t n_q, size_t n_k,
                                     size_t d_model, size_t heads, size_t kv_heads)
{
    memset(t, 0, sizeof *t);
    if (n_q == 0 || n_k == 0 || !attn_mh_sizes_ok(d_model, heads, kv_heads))
        return ATTN_EINVAL;
    size_t d_k = d_model / heads, kv_cols = kv_heads * d_k;
    size_t cells = mh_block_cells(n_q, n_k, d_model, kv_cols);
    /* The head array follows the doubles, aligned for struct attn_trace. */
    size_t align = alignof(struct attn_trace);
    if (cells == 0 || cells > (SIZE_MAX - align) / sizeof(double) ||
        heads > (SIZE_MAX - cells * sizeof(double) - align) / sizeof(struct attn_trace))
        return ATTN_ENOMEM;
    size_t heads_at = (cells * sizeof(double) + align - 1) / align * align;
    unsigned char *block = calloc(1, heads_at + heads * sizeof(struct attn_trace));
    if (block == NULL)
        return ATTN_ENOMEM;

    double *d = (double *)block;
    t->block = block;
    t->n_q = n_q, t->n_k = n_k, t->d_model = d_model;
    t->heads = heads, t->kv_heads = kv_heads, t->d_k = d_k;
    t->q = attn_matrix_view(d, n_q, d_model), d += n_q * d_model;
    t->k = attn_matrix_view(d, n_k, kv_cols), d += n_k * kv_cols;
    t->v = attn_matrix_view(d, n_k, kv_cols), d += n_k * kv_cols;
    t->concat = attn_matrix_view(d, n_q, d_model), d += n_q * d_model;
    t->output = attn_matrix_view(d, n_q, d_model), d += n_q * d_model;
    t->weights_mean = attn_matrix_view(d, n_q, n_k);
    t->head = (struct attn_trace *)(block + heads_at);
    for (size_t i = 0; i < heads; i++) {
        if (attn_trace_alloc(&t->head[i], n_q, n_k, d_k) != ATTN_OK) {
            attn_mh_trace_free(t);
            return ATTN_ENOMEM;
        }
    }
    return ATTN_OK;
}

void attn_mh_trace_free(struct attn_mh_trace *t)
{
    if (t->head != NULL)
        for (size_t i = 0; i < t->heads; i++)
            attn_trace_free(&t->head[i]); /* zeroed (never allocated) heads are no-ops */
    free(t->block);
    memset(t, 0, sizeof *t);
}

/* ---- checks ---- */

static bool shape_is(const struct attn_matrix *m, size_t rows, size_t cols)
{
    return m != NULL && m->data != NULL && m->rows == rows && m->cols == cols &&
           m->stride >= cols && m->stride <= INT_MAX && rows <= INT_MAX && cols <= INT_MAX;
}

/* A weight of (in, out), sent as (out, in) when transposed. */
static bool weight_is(const struct attn_matrix *w, size_t in, size_t out, bool transposed)
{
    return transposed ? shape_is(w, out, in) : shape_is(w, in, out);
}

bool attn_mh_shapes_ok(const struct attn_mh_problem *p, size_t n_q, size_t n_k, size_t d_model,
                       size_t heads, size_t kv_heads)
{
    size_t d = d_model, kv_cols = kv_heads * (d_model / heads);
    return p->heads == heads && p->kv_heads == kv_heads && shape_is(p->x_q, n_q, d) &&
           shape_is(p->x_kv, n_k, d) && weight_is(p->w_q, d, d, p->transposed_weights) &&
           weight_is(p->w_k, d, kv_cols, p->transposed_weights) &&
           weight_is(p->w_v, d, kv_cols, p->transposed_weights) &&
           weight_is(p->w_o, d, d, p->transposed_weights);
}

static enum attn_status mh_check(const struct attn_mh_trace *t, const struct attn_mh_problem *p)
{
    bool ok = t->block != NULL &&
              attn_mh_shapes_ok(p, t->n_q, t->n_k, t->d_model, t->heads, t->kv_heads);
    return ok ? ATTN_OK : ATTN_EINVAL;
}

bool attn_first_non_finite(const struct attn_matrix *m, size_t *row, size_t *col)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            if (!isfinite(m->data[i * m->stride + j])) {
                *row = i, *col = j;
                return true;
            }
    return false;
}

static enum attn_status mh_fault(struct attn_mh_trace *t, enum attn_mh_step step,
                                 const struct attn_matrix *m)
{
    size_t row, col;
    if (!attn_first_non_finite(m, &row, &col))
        return ATTN_OK;
    t->fault = (struct attn_mh_fault){ step, 0, ATTN_STEP_NONE, row, col };
    return ATTN_EOVERFLOW;
}

/* ---- the fast path ---- */

void attn_mh_project(struct attn_matrix *out, const struct attn_matrix *x,
                     const struct attn_matrix *w, const double *b, bool transposed)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, transposed ? CblasTrans : CblasNoTrans,
                (int)out->rows, (int)out->cols, (int)x->cols, 1.0, x->data, (int)x->stride,
                w->data, (int)w->stride, 0.0, out->data, (int)out->stride);
    if (b == NULL)
        return;
    for (size_t i = 0; i < out->rows; i++)
        for (size_t j = 0; j < out->cols; j++)
            out->data[i * out->stride + j] += b[j];
}

/* Copies each head's output into its columns of concat, and averages the weights. */
static void gather_heads(struct attn_mh_trace *t)
{
    size_t h = t->heads, d_k = t->d_k;
    memset(t->weights_mean.data, 0, t->n_q * t->n_k * sizeof(double));
    for (size_t i = 0; i < h; i++) {
        const struct attn_trace *ht = &t->head[i];
        for (size_t r = 0; r < t->n_q; r++)
            memcpy(t->concat.data + r * t->d_model + i * d_k, ht->output.data + r * d_k,
                   d_k * sizeof(double));
        for (size_t c = 0; c < t->n_q * t->n_k; c++)
            t->weights_mean.data[c] += ht->weights.data[c];
    }
    for (size_t c = 0; c < t->n_q * t->n_k; c++)
        t->weights_mean.data[c] /= (double)h;
}

typedef enum attn_status head_fn(struct attn_trace *out, const struct attn_problem *p);

/*
 * Head i with the variants: its trace lends its five steps to vsteps[i] for the pass,
 * which writes the variants' own steps beside them, and takes them back after.
 */
/* The variants of every head and where their steps go; NULL members: none. */
struct mh_variants {
    const struct attn_variants *of;
    struct attn_vtrace *steps;
};

static enum attn_status run_head_variants(struct attn_mh_trace *t, const struct mh_variants *mv,
                                          size_t i, const struct attn_problem *hp, bool reference)
{
    struct attn_vtrace *vt = &mv->steps[i];
    vt->base = t->head[i];
    enum attn_status st = reference ? attn_reference_variants(vt, hp, &mv->of[i])
                                    : attn_forward_variants(vt, hp, &mv->of[i]);
    t->head[i] = vt->base;
    memset(&vt->base, 0, sizeof vt->base);
    if (st == ATTN_EOVERFLOW)
        t->head[i].fault.step = (enum attn_step)vt->fault_step;
    return st;
}

/*
 * Runs every head with `run` (attn_forward or attn_reference) on views of q, k, v;
 * with threads > 1, attn_forward_threads instead (the fast path only).
 */
/* Head i's q, k and v: column blocks of the projections (k and v of its kv head). */
struct head_views {
    struct attn_matrix q, k, v;
};

static struct attn_problem head_problem(const struct attn_mh_trace *t,
                                        const struct attn_mh_problem *p, size_t i,
                                        struct head_views *hv)
{
    size_t g = attn_mh_kv_head(i, t->heads, t->kv_heads);
    hv->q = attn_column_block(&t->q, i, t->d_k);
    hv->k = attn_column_block(&t->k, g, t->d_k);
    hv->v = attn_column_block(&t->v, g, t->d_k);
    return (struct attn_problem){ .q = &hv->q, .k = &hv->k, .v = &hv->v, .bias = p->bias,
                                  .mask = p->mask, .scale = p->scale };
}

static enum attn_status run_heads(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                  head_fn *run, unsigned threads, const struct mh_variants *mv)
{
    for (size_t i = 0; i < t->heads; i++) {
        struct head_views hv;
        struct attn_problem hp = head_problem(t, p, i, &hv);
        enum attn_status st = mv->of != NULL
            ? run_head_variants(t, mv, i, &hp, run == attn_reference)
            : threads > 1 ? attn_forward_threads(&t->head[i], &hp, threads)
                          : run(&t->head[i], &hp);
        if (st == ATTN_EOVERFLOW) {
            const struct attn_fault *f = &t->head[i].fault;
            t->fault = (struct attn_mh_fault){ ATTN_MH_HEAD, i, f->step, f->row, f->col };
        }
        if (st != ATTN_OK)
            return st;
    }
    return ATTN_OK;
}

enum attn_status attn_mh_forward(struct attn_mh_trace *t, const struct attn_mh_problem *p)
{
    return attn_mh_forward_threads(t, p, 1);
}

static enum attn_status mh_forward(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                   unsigned threads, const struct mh_variants *mv);

enum attn_status attn_mh_forward_threads(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                         unsigned threads)
{
    const struct mh_variants none = { NULL, NULL };
    return mh_forward(t, p, threads, &none);
}

enum attn_status attn_mh_forward_variants(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                          const struct attn_variants *variants,
                                          struct attn_vtrace *vsteps)
{
    const struct mh_variants mv = { variants, vsteps };
    return variants == NULL || vsteps == NULL ? ATTN_EINVAL : mh_forward(t, p, 1, &mv);
}

static enum attn_status mh_forward(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                   unsigned threads, const struct mh_variants *mv)
{
    enum attn_status st = mh_check(t, p);
    if (st != ATTN_OK)
        return st;
    memset(&t->fault, 0, sizeof t->fault);
    bool tr = p->transposed_weights;

    attn_mh_project(&t->q, p->x_q, p->w_q, p->b_q, tr);
    if ((st = mh_fault(t, ATTN_MH_Q, &t->q)) != ATTN_OK)
        return st;
    attn_mh_project(&t->k, p->x_kv, p->w_k, p->b_k, tr);
    if ((st = mh_fault(t, ATTN_MH_K, &t->k)) != ATTN_OK)
        return st;
    attn_mh_project(&t->v, p->x_kv, p->w_v, p->b_v, tr);
    if ((st = mh_fault(t, ATTN_MH_V, &t->v)) != ATTN_OK)
        return st;
    if ((st = run_heads(t, p, attn_forward, threads, mv)) != ATTN_OK)
        return st;
    gather_heads(t);
    attn_mh_project(&t->output, &t->concat, p->w_o, p->b_o, tr);
    return mh_fault(t, ATTN_MH_OUTPUT, &t->output);
}

/* ---- in a low format (precision.h) ---- */

/* The first step of t holding a cell that is not finite, as attn_mh_forward names it. */
static void mh_first_non_finite(struct attn_mh_trace *t)
{
    const struct { enum attn_mh_step step; const struct attn_matrix *m; } projections[] = {
        { ATTN_MH_Q, &t->q }, { ATTN_MH_K, &t->k }, { ATTN_MH_V, &t->v },
    };
    for (size_t s = 0; s < 3; s++)
        if (mh_fault(t, projections[s].step, projections[s].m) != ATTN_OK)
            return;
    for (size_t i = 0; i < t->heads; i++) {
        const struct attn_fault *f = &t->head[i].fault;
        if (f->step != ATTN_STEP_NONE) {
            t->fault = (struct attn_mh_fault){ ATTN_MH_HEAD, i, f->step, f->row, f->col };
            return;
        }
    }
    mh_fault(t, ATTN_MH_OUTPUT, &t->output);
}

/* Head i in the format, lending its trace to vsteps[i] when there are steps of the
 * variants' own (as run_head_variants does). */
static enum attn_status precision_head(struct attn_mh_trace *t, size_t i,
                                       const struct attn_problem *hp,
                                       const struct attn_variants *v, struct attn_vtrace *vsteps,
                                       const struct attn_precision *prec)
{
    if (vsteps == NULL)
        return attn_forward_precision_variants(&t->head[i], hp, v, prec);
    struct attn_vtrace *vt = &vsteps[i];
    vt->base = t->head[i];
    enum attn_status st = attn_forward_precision_vtrace(vt, hp, v, prec);
    t->head[i] = vt->base;
    memset(&vt->base, 0, sizeof vt->base);
    return st;
}

enum attn_status attn_mh_forward_precision(struct attn_mh_trace *t,
                                           const struct attn_mh_problem *p,
                                           const struct attn_variants *variants,
                                           struct attn_vtrace *vsteps,
                                           const struct attn_precision *prec)
{
    static const struct attn_variants none;
    enum attn_status st = mh_check(t, p);
    if (st != ATTN_OK || !attn_precision_valid(prec))
        return ATTN_EINVAL;
    memset(&t->fault, 0, sizeof t->fault);
    bool tr = p->transposed_weights;
    if ((st = attn_project_precision(&t->q, p->x_q, p->w_q, p->b_q, tr, prec)) != ATTN_OK ||
        (st = attn_project_precision(&t->k, p->x_kv, p->w_k, p->b_k, tr, prec)) != ATTN_OK ||
        (st = attn_project_precision(&t->v, p->x_kv, p->w_v, p->b_v, tr, prec)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < t->heads; i++) {
        struct head_views hv;
        struct attn_problem hp = head_problem(t, p, i, &hv);
        const struct attn_variants *v = variants != NULL ? &variants[i] : &none;
        if ((st = precision_head(t, i, &hp, v, variants != NULL ? vsteps : NULL, prec)) != ATTN_OK)
            return st;
    }
    gather_heads(t);
    st = attn_project_precision(&t->output, &t->concat, p->w_o, p->b_o, tr, prec);
    if (st == ATTN_OK)
        mh_first_non_finite(t);
    return st;
}

/* ---- the reference ---- */

/* out = x·W (+ b) in plain loops; W read as (in, out) or, transposed, (out, in). */
static void project_naive(struct attn_matrix *out, const struct attn_matrix *x,
                          const struct attn_matrix *w, const double *b, bool transposed)
{
    for (size_t i = 0; i < out->rows; i++) {
        for (size_t j = 0; j < out->cols; j++) {
            double sum = b != NULL ? b[j] : 0.0;
            for (size_t l = 0; l < x->cols; l++)
                sum += attn_at(x, i, l) * (transposed ? attn_at(w, j, l) : attn_at(w, l, j));
            out->data[i * out->stride + j] = sum;
        }
    }
}

static enum attn_status mh_reference(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                     const struct mh_variants *mv);

enum attn_status attn_mh_reference(struct attn_mh_trace *t, const struct attn_mh_problem *p)
{
    const struct mh_variants none = { NULL, NULL };
    return mh_reference(t, p, &none);
}

enum attn_status attn_mh_reference_variants(struct attn_mh_trace *t,
                                            const struct attn_mh_problem *p,
                                            const struct attn_variants *variants,
                                            struct attn_vtrace *vsteps)
{
    const struct mh_variants mv = { variants, vsteps };
    return variants == NULL || vsteps == NULL ? ATTN_EINVAL : mh_reference(t, p, &mv);
}

static enum attn_status mh_reference(struct attn_mh_trace *t, const struct attn_mh_problem *p,
                                     const struct mh_variants *mv)
{
    enum attn_status st = mh_check(t, p);
    if (st != ATTN_OK)
        return st;
    memset(&t->fault, 0, sizeof t->fault);
    bool tr = p->transposed_weights;

    project_naive(&t->q, p->x_q, p->w_q, p->b_q, tr);
    if ((st = mh_fault(t, ATTN_MH_Q, &t->q)) != ATTN_OK)
        return st;
    project_naive(&t->k, p->x_kv, p->w_k, p->b_k, tr);
    if ((st = mh_fault(t, ATTN_MH_K, &t->k)) != ATTN_OK)
        return st;
    project_naive(&t->v, p->x_kv, p->w_v, p->b_v, tr);
    if ((st = mh_fault(t, ATTN_MH_V, &t->v)) != ATTN_OK)
        return st;
    if ((st = run_heads(t, p, attn_reference, 1, mv)) != ATTN_OK)
        return st;
    /* concat and mean by index arithmetic, not through gather_heads */
    for (size_t r = 0; r < t->n_q; r++) {
        for (size_t c = 0; c < t->d_model; c++)
            t->concat.data[r * t->d_model + c] =
                attn_at(&t->head[c / t->d_k].output, r, c % t->d_k);
        for (size_t j = 0; j < t->n_k; j++) {
            double sum = 0;
            for (size_t i = 0; i < t->heads; i++)
                sum += attn_at(&t->head[i].weights, r, j);
            t->weights_mean.data[r * t->n_k + j] = sum / (double)t->heads;
        }
    }
    project_naive(&t->output, &t->concat, p->w_o, p->b_o, tr);
    return mh_fault(t, ATTN_MH_OUTPUT, &t->output);
}

/* ---- listed rows ---- */

/* Each head's variant steps for the listed rows; on an error none is left allocated. */
static enum attn_status mh_select_vsteps(struct attn_vtrace *dst, const struct attn_vtrace *src,
                                         const struct attn_mh_trace *t, const size_t *rows,
                                         size_t n_rows, const struct attn_variants *variants)
{
    for (size_t i = 0; i < t->heads; i++) {
        enum attn_status st = attn_vtrace_select_rows(&dst[i], &src[i], rows, n_rows, t->n_q,
                                                      t->n_k, t->d_k, &variants[i]);
        if (st != ATTN_OK) {
            for (size_t j = 0; j < i; j++)
                attn_vtrace_free(&dst[j]);
            return st;
        }
    }
    return ATTN_OK;
}

/* dst's listed rows of src's per-query matrices; the keys' k and v whole. */
static void mh_copy_rows(struct attn_mh_trace *dst, const struct attn_mh_trace *src,
                         const size_t *rows, size_t n_rows)
{
    attn_copy_rows(&dst->q, &src->q, rows, n_rows);
    attn_copy_rows(&dst->concat, &src->concat, rows, n_rows);
    attn_copy_rows(&dst->output, &src->output, rows, n_rows);
    attn_copy_rows(&dst->weights_mean, &src->weights_mean, rows, n_rows);
    memcpy(dst->k.data, src->k.data, src->k.rows * src->k.cols * sizeof(double));
    memcpy(dst->v.data, src->v.data, src->v.rows * src->v.cols * sizeof(double));
    for (size_t i = 0; i < src->heads; i++)
        attn_trace_copy_rows(&dst->head[i], &src->head[i], rows, n_rows);
    dst->fault = src->fault;
}

enum attn_status attn_mh_trace_select_rows(struct attn_mh_trace *dst,
                                           const struct attn_mh_trace *src, const size_t *rows,
                                           size_t n_rows, const struct attn_variants *variants,
                                           const struct attn_vtrace *vsteps_src,
                                           struct attn_vtrace *vsteps_dst)
{
    if (dst == NULL)
        return ATTN_EINVAL;
    memset(dst, 0, sizeof *dst);
    if (src == NULL || src->block == NULL || !attn_rows_in_range(rows, n_rows, src->n_q) ||
        (vsteps_src == NULL) != (vsteps_dst == NULL) ||
        (vsteps_src != NULL && variants == NULL))
        return ATTN_EINVAL;
    if (vsteps_dst != NULL)
        memset(vsteps_dst, 0, src->heads * sizeof *vsteps_dst);
    enum attn_status st =
        attn_mh_trace_alloc(dst, n_rows, src->n_k, src->d_model, src->heads, src->kv_heads);
    if (st != ATTN_OK)
        return st;
    if (vsteps_src != NULL &&
        (st = mh_select_vsteps(vsteps_dst, vsteps_src, src, rows, n_rows, variants)) != ATTN_OK) {
        attn_mh_trace_free(dst);
        return st;
    }
    mh_copy_rows(dst, src, rows, n_rows);
    return ATTN_OK;
}
