/*
 * core/mh_backward.c — the gradients of multi-head attention (see mh_backward.h).
 */
#include "mh_backward.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the block ---- */

/* The doubles of the gradients outside the heads, in the order they are laid out. */
struct mh_sizes {
    size_t part[16];
};

static struct mh_sizes mh_sizes_of(size_t n_q, size_t n_k, size_t d, size_t kvd, size_t h,
                                   int *overflow)
{
    size_t qd = attn_cells(n_q, d, overflow), kd = attn_cells(n_k, kvd, overflow);
    size_t dd = attn_cells(d, d, overflow), dk = attn_cells(d, kvd, overflow);
    struct mh_sizes s = { { qd, qd, kd, kd, qd, attn_cells(n_k, d, overflow), dd, dk, dk, dd,
                            d, kvd, kvd, d, attn_cells(n_q, n_k, overflow), h } };
    return s;
}

static size_t mh_doubles(const struct mh_sizes *s, int *overflow)
{
    size_t total = 0;
    for (size_t i = 0; i < 16; i++) {
        if (s->part[i] > SIZE_MAX - total)
            *overflow = 1;
        else
            total += s->part[i];
    }
    return total;
}

size_t attn_mh_grads_bytes(size_t n_q, size_t n_k, size_t d_model, size_t heads,
                           size_t kv_heads)
{
    if (!attn_mh_sizes_ok(d_model, heads, kv_heads))
        return 0;
    size_t d_k = d_model / heads;
    int overflow = 0;
    struct mh_sizes s = mh_sizes_of(n_q, n_k, d_model, kv_heads * d_k, heads, &overflow);
    size_t doubles = mh_doubles(&s, &overflow);
    size_t head = attn_grads_bytes(n_q, n_k, d_k, d_k);
    if (overflow || head == 0 || doubles > SIZE_MAX / sizeof(double) ||
        head > (SIZE_MAX - doubles * sizeof(double)) / heads)
        return 0;
    return doubles * sizeof(double) + heads * (head + sizeof(struct attn_grads));
}

static struct attn_matrix take(double **at, size_t rows, size_t cols)
{
    struct attn_matrix m = attn_matrix_view(*at, rows, cols);
    *at += rows * cols;
    return m;
}

static double *take_vector(double **at, size_t n)
{
    double *v = *at;
    *at += n;
    return v;
}

enum attn_status attn_mh_grads_alloc(struct attn_mh_grads *g, size_t n_q, size_t n_k,
                                     size_t d_model, size_t heads, size_t kv_heads)
{
    if (g == NULL)
        return ATTN_EINVAL;
    memset(g, 0, sizeof *g);
    if (n_q == 0 || n_k == 0 || !attn_mh_sizes_ok(d_model, heads, kv_heads))
        return ATTN_EINVAL;
    size_t d_k = d_model / heads, kvd = kv_heads * d_k;
    int overflow = 0;
    struct mh_sizes s = mh_sizes_of(n_q, n_k, d_model, kvd, heads, &overflow);
    size_t doubles = mh_doubles(&s, &overflow);
    double *at = overflow || doubles > SIZE_MAX / sizeof(double)
                     ? NULL
                     : calloc(doubles, sizeof(double)); /* grad_k, grad_v and bias summed in */
    struct attn_grads *head = calloc(heads, sizeof *head);
    if (at == NULL || head == NULL) {
        free(at);
        free(head);
        return ATTN_ENOMEM;
    }
    *g = (struct attn_mh_grads){ .n_q = n_q, .n_k = n_k, .d_model = d_model, .heads = heads,
                                 .kv_heads = kv_heads, .d_k = d_k, .head = head, .block = at };
    for (size_t h = 0; h < heads; h++)
        if (attn_grads_alloc(&head[h], n_q, n_k, d_k, d_k) != ATTN_OK) {
            attn_mh_grads_free(g);
            return ATTN_ENOMEM;
        }
    g->grad_concat = take(&at, n_q, d_model);
    g->grad_q = take(&at, n_q, d_model);
    g->grad_k = take(&at, n_k, kvd);
    g->grad_v = take(&at, n_k, kvd);
    g->grad_x_q = take(&at, n_q, d_model);
    g->grad_x_kv = take(&at, n_k, d_model);
    g->grad_w_q = take(&at, d_model, d_model);
    g->grad_w_k = take(&at, d_model, kvd); /* reshaped to (kvd, d) for (out, in) weights */
    g->grad_w_v = take(&at, d_model, kvd);
    g->grad_w_o = take(&at, d_model, d_model);
    g->grad_b_q = take_vector(&at, d_model);
    g->grad_b_k = take_vector(&at, kvd);
    g->grad_b_v = take_vector(&at, kvd);
    g->grad_b_o = take_vector(&at, d_model);
    g->grad_bias = take(&at, n_q, n_k);
    g->grad_sink_logit = take_vector(&at, heads);
    return ATTN_OK;
}

void attn_mh_grads_free(struct attn_mh_grads *g)
{
    if (g == NULL)
        return;
    for (size_t h = 0; g->head != NULL && h < g->heads; h++)
        attn_grads_free(&g->head[h]);
    free(g->head);
    free(g->block);
    memset(g, 0, sizeof *g);
}

/* ---- the steps ---- */

/* c = op(a)·op(b) + beta·c, one cblas_dgemm. */
static void gemm(const struct attn_matrix *a, bool a_t, const struct attn_matrix *b, bool b_t,
                 struct attn_matrix *c, double beta)
{
    size_t m = a_t ? a->cols : a->rows, k = a_t ? a->rows : a->cols;
    size_t n = b_t ? b->rows : b->cols;
    cblas_dgemm(CblasRowMajor, a_t ? CblasTrans : CblasNoTrans, b_t ? CblasTrans : CblasNoTrans,
                (blasint)m, (blasint)n, (blasint)k, 1.0, a->data, (blasint)a->stride, b->data,
                (blasint)b->stride, beta, c->data, (blasint)c->stride);
}

/* out (cols) = the column sums of m: a bias's gradient. */
static void column_sums(const struct attn_matrix *m, double *out)
{
    memset(out, 0, m->cols * sizeof *out);
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            out[j] += m->data[i * m->stride + j];
}

/*
 * One projection Y = X·W (+ b) backwards, dY given: dW in W's layout (Xᵀ·dY, or dYᵀ·X
 * for (out, in) weights) and, accumulated into dx with beta, dX = dY·Wᵀ (dY·W).
 */
static void project_back(const struct attn_matrix *x, const struct attn_matrix *w,
                         bool transposed, const struct attn_matrix *dy, struct attn_matrix *dw,
                         double *db, struct attn_matrix *dx, double beta)
{
    struct attn_matrix shaped = attn_matrix_view(dw->data, w->rows, w->cols);
    if (transposed)
        gemm(dy, true, x, false, &shaped, 0.0);
    else
        gemm(x, true, dy, false, &shaped, 0.0);
    *dw = shaped;
    column_sums(dy, db);
    gemm(dy, false, w, !transposed, dx, beta);
}

/* Head i's problem on the forward pass's projections: column blocks, no copies. */
struct head_views {
    struct attn_matrix q, k, v;
    struct attn_problem p;
};

static void head_views(struct head_views *hv, const struct attn_mh_problem *p,
                       const struct attn_mh_trace *fwd, size_t i)
{
    size_t g = attn_mh_kv_head(i, fwd->heads, fwd->kv_heads);
    hv->q = attn_column_block(&fwd->q, i, fwd->d_k);
    hv->k = attn_column_block(&fwd->k, g, fwd->d_k);
    hv->v = attn_column_block(&fwd->v, g, fwd->d_k);
    hv->p = (struct attn_problem){ .q = &hv->q, .k = &hv->k, .v = &hv->v, .bias = p->bias,
                                   .mask = p->mask, .scale = p->scale };
}

/* Every head backwards from grad_concat: grad_q side by side, grad_k and grad_v summed
 * into their kv heads, dS summed into grad_bias. */
static enum attn_status heads_back(struct attn_mh_grads *g, const struct attn_mh_problem *p,
                                   const struct attn_variants *variants,
                                   const struct attn_vtrace *vsteps,
                                   const struct attn_mh_trace *fwd)
{
    size_t d_k = g->d_k;
    for (size_t i = 0; i < g->heads; i++) {
        struct head_views hv;
        head_views(&hv, p, fwd, i);
        struct attn_vtrace t = { 0 };
        if (vsteps != NULL)
            t = vsteps[i];
        t.base = fwd->head[i];
        struct attn_matrix d_out = attn_column_block(&g->grad_concat, i, d_k);
        struct attn_grads *gi = &g->head[i];
        enum attn_status st = attn_backward(gi, &hv.p, variants != NULL ? &variants[i] : NULL,
                                            &t, &d_out);
        if (st != ATTN_OK)
            return st;
        size_t kv = attn_mh_kv_head(i, g->heads, g->kv_heads);
        for (size_t r = 0; r < g->n_q; r++)
            memcpy(g->grad_q.data + r * g->grad_q.stride + i * d_k,
                   gi->grad_q.data + r * d_k, d_k * sizeof(double));
        for (size_t r = 0; r < g->n_k; r++)
            for (size_t c = 0; c < d_k; c++) {
                g->grad_k.data[r * g->grad_k.stride + kv * d_k + c] += gi->grad_k.data[r * d_k + c];
                g->grad_v.data[r * g->grad_v.stride + kv * d_k + c] += gi->grad_v.data[r * d_k + c];
            }
        for (size_t c = 0; p->bias != NULL && c < g->n_q * g->n_k; c++)
            g->grad_bias.data[c] += gi->grad_masked.data[c];
        g->grad_sink_logit[i] = gi->grad_sink_logit;
    }
    return ATTN_OK;
}

static void zero(struct attn_matrix *m)
{
    memset(m->data, 0, m->rows * m->cols * sizeof(double));
}

static bool fits(const struct attn_mh_grads *g, const struct attn_mh_trace *fwd,
                 const struct attn_matrix *d_out)
{
    return g->block != NULL && fwd->q.data != NULL && fwd->fault.step == ATTN_MH_NONE &&
           g->n_q == fwd->n_q && g->n_k == fwd->n_k && g->d_model == fwd->d_model &&
           g->heads == fwd->heads && g->kv_heads == fwd->kv_heads && d_out != NULL &&
           d_out->data != NULL && d_out->rows == g->n_q && d_out->cols == g->d_model &&
           d_out->stride >= d_out->cols;
}

enum attn_status attn_mh_backward(struct attn_mh_grads *g, const struct attn_mh_problem *p,
                                  const struct attn_variants *variants,
                                  const struct attn_vtrace *vsteps,
                                  const struct attn_mh_trace *fwd,
                                  const struct attn_matrix *d_out)
{
    if (g == NULL || p == NULL || fwd == NULL || !fits(g, fwd, d_out))
        return ATTN_EINVAL;
    bool tr = p->transposed_weights;
    g->self = p->x_kv == p->x_q;
    zero(&g->grad_k);
    zero(&g->grad_v);
    zero(&g->grad_bias);
    /* output = concat·W_O + b_o */
    struct attn_matrix dw = g->grad_w_o;
    if (tr)
        gemm(d_out, true, &fwd->concat, false, &dw, 0.0);
    else
        gemm(&fwd->concat, true, d_out, false, &dw, 0.0);
    column_sums(d_out, g->grad_b_o);
    gemm(d_out, false, p->w_o, !tr, &g->grad_concat, 0.0);
    enum attn_status st = heads_back(g, p, variants, vsteps, fwd);
    if (st != ATTN_OK)
        return st;
    project_back(p->x_q, p->w_q, tr, &g->grad_q, &g->grad_w_q, g->grad_b_q, &g->grad_x_q, 0.0);
    project_back(p->x_kv, p->w_k, tr, &g->grad_k, &g->grad_w_k, g->grad_b_k, &g->grad_x_kv, 0.0);
    project_back(p->x_kv, p->w_v, tr, &g->grad_v, &g->grad_w_v, g->grad_b_v, &g->grad_x_kv, 1.0);
    if (g->self) /* x is X_q and X_kv at once: its gradient is both */
        for (size_t c = 0; c < g->n_q * g->d_model; c++)
            g->grad_x_q.data[c] += g->grad_x_kv.data[c];
    int overflow = 0;
    struct mh_sizes s = mh_sizes_of(g->n_q, g->n_k, g->d_model, g->kv_heads * g->d_k, g->heads,
                                    &overflow);
    size_t n = mh_doubles(&s, &overflow);
    bool ok = true;
    for (size_t c = 0; c < n; c++)
        ok &= fabs(((const double *)g->block)[c]) <= DBL_MAX;
    return ok ? ATTN_OK : ATTN_EOVERFLOW;
}
