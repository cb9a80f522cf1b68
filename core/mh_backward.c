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

/*
 * How a pass computes: in float64 (prec NULL: cblas_dgemm, nothing rounded; f and acc are
 * ATTN_FLOAT64, whose rounding is none) or by the precision rules (attn_product_precision,
 * sums rounded to acc, the layer's gradients to f).
 */
struct pass {
    const struct attn_precision *prec;
    enum attn_format f, acc;
    double *scratch; /* a low pass's product before it is added: (n_k, d_model) at most */
};

/* c = op(a)·op(b), or c + op(a)·op(b) when add: one cblas_dgemm, or by rule 2 in the
 * accumulator and, when add, the two added there (rounded once). */
static enum attn_status mul(const struct pass *x, const struct attn_matrix *a, bool a_t,
                            const struct attn_matrix *b, bool b_t, struct attn_matrix *c, bool add)
{
    if (x->prec == NULL) {
        size_t m = a_t ? a->cols : a->rows, k = a_t ? a->rows : a->cols;
        size_t n = b_t ? b->rows : b->cols;
        cblas_dgemm(CblasRowMajor, a_t ? CblasTrans : CblasNoTrans,
                    b_t ? CblasTrans : CblasNoTrans, (blasint)m, (blasint)n, (blasint)k, 1.0,
                    a->data, (blasint)a->stride, b->data, (blasint)b->stride, add ? 1.0 : 0.0,
                    c->data, (blasint)c->stride);
        return ATTN_OK;
    }
    if (!add)
        return attn_product_precision(c, a, a_t, b, b_t, x->prec);
    struct attn_matrix s = attn_matrix_view(x->scratch, c->rows, c->cols);
    enum attn_status st = attn_product_precision(&s, a, a_t, b, b_t, x->prec);
    for (size_t i = 0; st == ATTN_OK && i < c->rows; i++)
        for (size_t j = 0; j < c->cols; j++) {
            double *cell = &c->data[i * c->stride + j];
            *cell = attn_format_round(*cell + s.data[i * c->cols + j], x->acc);
        }
    return st;
}

/* m's cells rounded once to f, in place (nothing in float64). */
static void round_cells(double *m, size_t rows, size_t cols, size_t stride, enum attn_format f)
{
    for (size_t i = 0; f != ATTN_FLOAT64 && i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            m[i * stride + j] = attn_format_round(m[i * stride + j], f);
}

static void round_matrix(struct attn_matrix *m, enum attn_format f)
{
    round_cells(m->data, m->rows, m->cols, m->stride, f);
}

/* out (cols) = the column sums of m, down the rows, each partial sum rounded once to acc,
 * then rounded to f: a bias's gradient. */
static void column_sums(const struct attn_matrix *m, double *out, const struct pass *x)
{
    memset(out, 0, m->cols * sizeof *out);
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            out[j] = attn_format_round(out[j] + m->data[i * m->stride + j], x->acc);
    round_cells(out, 1, m->cols, m->cols, x->f);
}

/*
 * One projection Y = X·W (+ b) backwards, dY given: dW in W's layout (Xᵀ·dY, or dYᵀ·X
 * for (out, in) weights) rounded to f, db, and, added to dx when add, dX = dY·Wᵀ (dY·W),
 * left in the accumulator for the caller to round once it is whole.
 */
static enum attn_status project_back(const struct pass *x, const struct attn_matrix *in,
                                     const struct attn_matrix *w, bool transposed,
                                     const struct attn_matrix *dy, struct attn_matrix *dw,
                                     double *db, struct attn_matrix *dx, bool add)
{
    struct attn_matrix shaped = attn_matrix_view(dw->data, w->rows, w->cols);
    enum attn_status st = transposed ? mul(x, dy, true, in, false, &shaped, false)
                                     : mul(x, in, true, dy, false, &shaped, false);
    if (st != ATTN_OK)
        return st;
    round_matrix(&shaped, x->f);
    *dw = shaped;
    column_sums(dy, db, x);
    return mul(x, dy, false, w, !transposed, dx, add);
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

/* Every head backwards from grad_concat (attn_backward, or attn_backward_precision on the
 * low forward): grad_q side by side, grad_k and grad_v summed into their kv heads in head
 * order and rounded to f once whole, dS summed into grad_bias (left in the accumulator,
 * as one head's dS is). */
static enum attn_status heads_back(struct attn_mh_grads *g, const struct attn_mh_problem *p,
                                   const struct attn_variants *variants,
                                   const struct attn_vtrace *vsteps,
                                   const struct attn_mh_trace *fwd, const struct pass *x)
{
    size_t d_k = g->d_k;
    enum attn_format acc = x->acc;
    for (size_t i = 0; i < g->heads; i++) {
        struct head_views hv;
        head_views(&hv, p, fwd, i);
        struct attn_vtrace t = { 0 };
        if (vsteps != NULL)
            t = vsteps[i];
        t.base = fwd->head[i];
        struct attn_matrix d_out = attn_column_block(&g->grad_concat, i, d_k);
        struct attn_grads *gi = &g->head[i];
        const struct attn_variants *v = variants != NULL ? &variants[i] : NULL;
        enum attn_status st = x->prec == NULL
                                  ? attn_backward(gi, &hv.p, v, &t, &d_out)
                                  : attn_backward_precision(gi, &hv.p, v, &t, &d_out, x->prec);
        if (st != ATTN_OK)
            return st;
        size_t kv = attn_mh_kv_head(i, g->heads, g->kv_heads);
        for (size_t r = 0; r < g->n_q; r++)
            memcpy(g->grad_q.data + r * g->grad_q.stride + i * d_k,
                   gi->grad_q.data + r * d_k, d_k * sizeof(double));
        for (size_t r = 0; r < g->n_k; r++)
            for (size_t c = 0; c < d_k; c++) {
                double *k = &g->grad_k.data[r * g->grad_k.stride + kv * d_k + c];
                double *v_sum = &g->grad_v.data[r * g->grad_v.stride + kv * d_k + c];
                *k = attn_format_round(*k + gi->grad_k.data[r * d_k + c], acc);
                *v_sum = attn_format_round(*v_sum + gi->grad_v.data[r * d_k + c], acc);
            }
        for (size_t c = 0; p->bias != NULL && c < g->n_q * g->n_k; c++)
            g->grad_bias.data[c] = attn_format_round(g->grad_bias.data[c] +
                                                         gi->grad_masked.data[c], acc);
        g->grad_sink_logit[i] = gi->grad_sink_logit;
    }
    round_matrix(&g->grad_k, x->f);
    round_matrix(&g->grad_v, x->f);
    return ATTN_OK;
}

static void zero(struct attn_matrix *m)
{
    memset(m->data, 0, m->rows * m->cols * sizeof(double));
}

/* Whether g, fwd (its fault aside) and d_out are of one problem's sizes. */
static bool fits(const struct attn_mh_grads *g, const struct attn_mh_trace *fwd,
                 const struct attn_matrix *d_out)
{
    return g->block != NULL && fwd->q.data != NULL && g->n_q == fwd->n_q &&
           g->n_k == fwd->n_k && g->d_model == fwd->d_model && g->heads == fwd->heads &&
           g->kv_heads == fwd->kv_heads && d_out != NULL && d_out->data != NULL &&
           d_out->rows == g->n_q && d_out->cols == g->d_model && d_out->stride >= d_out->cols;
}

/* Every step, dO = d_o (held in f), as x computes: back through W_O, the heads and the
 * three projections; grad_x_q and grad_x_kv rounded to f once whole. */
static enum attn_status mh_back(struct attn_mh_grads *g, const struct attn_mh_problem *p,
                                const struct attn_variants *variants,
                                const struct attn_vtrace *vsteps, const struct attn_mh_trace *fwd,
                                const struct attn_matrix *d_o, const struct pass *x)
{
    bool tr = p->transposed_weights;
    g->self = p->x_kv == p->x_q;
    g->fault = (struct attn_mh_grad_fault){ ATTN_MH_GRAD_NONE, 0, ATTN_GRAD_NONE, 0, 0 };
    zero(&g->grad_k);
    zero(&g->grad_v);
    zero(&g->grad_bias);
    /* output = concat·W_O + b_o */
    struct attn_matrix dw = g->grad_w_o;
    enum attn_status st = tr ? mul(x, d_o, true, &fwd->concat, false, &dw, false)
                             : mul(x, &fwd->concat, true, d_o, false, &dw, false);
    if (st != ATTN_OK)
        return st;
    round_matrix(&g->grad_w_o, x->f);
    column_sums(d_o, g->grad_b_o, x);
    if ((st = mul(x, d_o, false, p->w_o, !tr, &g->grad_concat, false)) != ATTN_OK)
        return st;
    round_matrix(&g->grad_concat, x->f); /* each head's dO, as its kernel reads it */
    if ((st = heads_back(g, p, variants, vsteps, fwd, x)) != ATTN_OK ||
        (st = project_back(x, p->x_q, p->w_q, tr, &g->grad_q, &g->grad_w_q, g->grad_b_q,
                           &g->grad_x_q, false)) != ATTN_OK ||
        (st = project_back(x, p->x_kv, p->w_k, tr, &g->grad_k, &g->grad_w_k, g->grad_b_k,
                           &g->grad_x_kv, false)) != ATTN_OK ||
        (st = project_back(x, p->x_kv, p->w_v, tr, &g->grad_v, &g->grad_w_v, g->grad_b_v,
                           &g->grad_x_kv, true)) != ATTN_OK)
        return st;
    if (g->self) /* x is X_q and X_kv at once: its gradient is both */
        for (size_t c = 0; c < g->n_q * g->d_model; c++)
            g->grad_x_q.data[c] = attn_format_round(g->grad_x_q.data[c] + g->grad_x_kv.data[c],
                                                    x->acc);
    round_matrix(&g->grad_x_q, x->f);
    round_matrix(&g->grad_x_kv, x->f);
    return ATTN_OK;
}

enum attn_status attn_mh_backward(struct attn_mh_grads *g, const struct attn_mh_problem *p,
                                  const struct attn_variants *variants,
                                  const struct attn_vtrace *vsteps,
                                  const struct attn_mh_trace *fwd,
                                  const struct attn_matrix *d_out)
{
    if (g == NULL || p == NULL || fwd == NULL || !fits(g, fwd, d_out) ||
        fwd->fault.step != ATTN_MH_NONE)
        return ATTN_EINVAL;
    const struct pass x = { NULL, ATTN_FLOAT64, ATTN_FLOAT64, NULL };
    enum attn_status st = mh_back(g, p, variants, vsteps, fwd, d_out, &x);
    if (st != ATTN_OK)
        return st;
    int overflow = 0;
    struct mh_sizes s = mh_sizes_of(g->n_q, g->n_k, g->d_model, g->kv_heads * g->d_k, g->heads,
                                    &overflow);
    size_t n = mh_doubles(&s, &overflow);
    bool ok = true;
    for (size_t c = 0; c < n; c++)
        ok &= fabs(((const double *)g->block)[c]) <= DBL_MAX;
    return ok ? ATTN_OK : ATTN_EOVERFLOW;
}

/* ---- in a low format (precision.h) ---- */

const char *attn_mh_grad_step_name(enum attn_mh_grad_step step, bool self)
{
    static const char *const names[] = {
        [ATTN_MH_GRAD_NONE] = "", [ATTN_MH_GRAD_W_O] = "grad_w_o",
        [ATTN_MH_GRAD_B_O] = "grad_b_o", [ATTN_MH_GRAD_CONCAT] = "grad_concat",
        [ATTN_MH_GRAD_HEAD] = "", [ATTN_MH_GRAD_Q] = "grad_q", [ATTN_MH_GRAD_K] = "grad_k",
        [ATTN_MH_GRAD_V] = "grad_v", [ATTN_MH_GRAD_W_Q] = "grad_w_q",
        [ATTN_MH_GRAD_W_K] = "grad_w_k", [ATTN_MH_GRAD_W_V] = "grad_w_v",
        [ATTN_MH_GRAD_B_Q] = "grad_b_q", [ATTN_MH_GRAD_B_K] = "grad_b_k",
        [ATTN_MH_GRAD_B_V] = "grad_b_v", [ATTN_MH_GRAD_X_Q] = "grad_x_q",
        [ATTN_MH_GRAD_X_KV] = "grad_x_kv", [ATTN_MH_GRAD_BIAS] = "grad_bias",
    };
    if ((unsigned)step >= sizeof names / sizeof names[0])
        return "";
    return step == ATTN_MH_GRAD_X_Q && self ? "grad_x" : names[step];
}

bool attn_mh_grad_step_runs(enum attn_mh_grad_step step, const struct attn_mh_problem *p)
{
    switch (step) {
    case ATTN_MH_GRAD_NONE:
    case ATTN_MH_GRAD_HEAD: return false;
    case ATTN_MH_GRAD_B_O: return p->b_o != NULL;
    case ATTN_MH_GRAD_B_Q: return p->b_q != NULL;
    case ATTN_MH_GRAD_B_K: return p->b_k != NULL;
    case ATTN_MH_GRAD_B_V: return p->b_v != NULL;
    case ATTN_MH_GRAD_X_KV: return p->x_kv != p->x_q;
    case ATTN_MH_GRAD_BIAS: return p->bias != NULL;
    default: return step <= ATTN_MH_GRAD_BIAS;
    }
}

struct attn_matrix attn_mh_grads_step(const struct attn_mh_grads *g, enum attn_mh_grad_step step)
{
    size_t d = g->d_model, kvd = g->kv_heads * g->d_k;
    switch (step) {
    case ATTN_MH_GRAD_W_O: return g->grad_w_o;
    case ATTN_MH_GRAD_B_O: return attn_matrix_view(g->grad_b_o, 1, d);
    case ATTN_MH_GRAD_CONCAT: return g->grad_concat;
    case ATTN_MH_GRAD_Q: return g->grad_q;
    case ATTN_MH_GRAD_K: return g->grad_k;
    case ATTN_MH_GRAD_V: return g->grad_v;
    case ATTN_MH_GRAD_W_Q: return g->grad_w_q;
    case ATTN_MH_GRAD_W_K: return g->grad_w_k;
    case ATTN_MH_GRAD_W_V: return g->grad_w_v;
    case ATTN_MH_GRAD_B_Q: return attn_matrix_view(g->grad_b_q, 1, d);
    case ATTN_MH_GRAD_B_K: return attn_matrix_view(g->grad_b_k, 1, kvd);
    case ATTN_MH_GRAD_B_V: return attn_matrix_view(g->grad_b_v, 1, kvd);
    case ATTN_MH_GRAD_X_Q: return g->grad_x_q;
    case ATTN_MH_GRAD_X_KV: return g->grad_x_kv;
    case ATTN_MH_GRAD_BIAS: return g->grad_bias;
    default: return (struct attn_matrix){ NULL, 0, 0, 0 };
    }
}

/* The first cell of g's steps that is not finite, in the order attn_mh_grad_step lists
 * them, a head's at ATTN_MH_GRAD_HEAD. */
static void find_fault(struct attn_mh_grads *g, const struct attn_mh_problem *p)
{
    for (int s = ATTN_MH_GRAD_W_O; s <= ATTN_MH_GRAD_BIAS; s++) {
        size_t row, col;
        if (s == ATTN_MH_GRAD_HEAD) {
            for (size_t h = 0; h < g->heads; h++) {
                const struct attn_grad_fault *f = &g->head[h].fault;
                if (f->step != ATTN_GRAD_NONE) {
                    g->fault = (struct attn_mh_grad_fault){ ATTN_MH_GRAD_HEAD, h, f->step,
                                                            f->row, f->col };
                    return;
                }
            }
            continue;
        }
        struct attn_matrix m = attn_mh_grads_step(g, (enum attn_mh_grad_step)s);
        if (attn_mh_grad_step_runs((enum attn_mh_grad_step)s, p) &&
            attn_first_non_finite(&m, &row, &col)) {
            g->fault = (struct attn_mh_grad_fault){ (enum attn_mh_grad_step)s, 0, ATTN_GRAD_NONE,
                                                    row, col };
            return;
        }
    }
}

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

size_t attn_mh_backward_precision_bytes(size_t n_q, size_t n_k, size_t d_model, size_t heads,
                                        size_t kv_heads, const struct attn_precision *prec)
{
    if (!attn_mh_sizes_ok(d_model, heads, kv_heads))
        return 0;
    size_t d = d_model, d_k = d / heads, kvd = kv_heads * d_k;
    int overflow = 0;
    /* dO in the format and the scratch of an added product */
    size_t held = add_sat(attn_cells(n_q, d, &overflow), attn_cells(n_k, d, &overflow));
    /* one product's copies at a time (attn_product_precision's), or one head's backward */
    size_t steps[] = {
        attn_product_precision_bytes(d, n_q, d, prec),   /* grad_w_o, grad_w_q */
        attn_product_precision_bytes(n_q, d, d, prec),   /* grad_concat, grad_x_q */
        attn_product_precision_bytes(d, n_k, kvd, prec), /* grad_w_k, grad_w_v */
        attn_product_precision_bytes(n_k, kvd, d, prec), /* grad_x_kv's two */
        attn_backward_precision_bytes(n_q, n_k, d_k, d_k, prec),
    };
    size_t most = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        if (steps[i] == 0)
            return 0;
        most = steps[i] > most ? steps[i] : most;
    }
    if (overflow || held > SIZE_MAX / sizeof(double))
        return 0;
    size_t bytes = add_sat(held * sizeof(double), most);
    return bytes == SIZE_MAX ? 0 : bytes;
}

enum attn_status attn_mh_backward_precision(struct attn_mh_grads *g,
                                            const struct attn_mh_problem *p,
                                            const struct attn_variants *variants,
                                            const struct attn_vtrace *vsteps,
                                            const struct attn_mh_trace *fwd,
                                            const struct attn_matrix *d_out,
                                            const struct attn_precision *prec)
{
    if (g == NULL || p == NULL || fwd == NULL || prec == NULL || !attn_precision_valid(prec) ||
        !fits(g, fwd, d_out))
        return ATTN_EINVAL;
    size_t n_q = g->n_q, n_k = g->n_k, d = g->d_model;
    double *held = malloc((n_q + n_k) * d * sizeof(double)); /* dO in the format; scratch */
    if (held == NULL)
        return ATTN_ENOMEM;
    struct attn_matrix d_o = attn_matrix_view(held, n_q, d);
    for (size_t i = 0; i < n_q; i++)
        for (size_t c = 0; c < d; c++)
            d_o.data[i * d + c] = attn_format_round(attn_at(d_out, i, c), prec->format);
    const struct pass x = { prec, prec->format, prec->accumulate, held + n_q * d };
    enum attn_status st = mh_back(g, p, variants, vsteps, fwd, &d_o, &x);
    free(held);
    if (st == ATTN_OK)
        find_fault(g, p);
    return st;
}
