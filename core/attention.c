/*
 * core/attention.c — the fast path of scaled dot-product attention on OpenBLAS,
 * and the trace that keeps every step of it.
 *
 * What it is: five steps (compare, scale, mask, softmax, mix), each writing one
 * matrix of a caller-owned trace, each checked for non-finite numbers; then a
 * per-query summary of the weights. The steps run on blocks of query rows, so that a
 * block's scores are still in cache when softmax reads them and so that blocks can
 * go to several threads; when a check fails, everything is rerun pass by pass, whose
 * order defines which cell is the first fault. Also the trace's single allocation,
 * the status and step names, and the BLAS policy.
 *
 * What it is not: the reference (reference.c recomputes the same contract in naive
 * loops), a validator of requests (api/ does that; bad shapes here are ATTN_EINVAL),
 * or anything that prints, exits or knows JSON.
 *
 * Dimension letters (n_q, n_k, d_k, d_v) are those of the legend in attention.h.
 */
/* madvise and MADV_HUGEPAGE are not POSIX. */
#define _DEFAULT_SOURCE
#include "attention.h"

#include <cblas.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <threads.h>

#include "internal.h"
#include "memory.h"
#include "softmax_row.h"

/* ---- names ---- */

const char *attn_status_str(enum attn_status status)
{
    switch (status) {
    case ATTN_OK: return "ok";
    case ATTN_ENOMEM: return "out of memory";
    case ATTN_EINVAL: return "invalid argument";
    case ATTN_EOVERFLOW: return "a step produced a non-finite number";
    }
    return "unknown status";
}

const char *attn_step_name(enum attn_step step)
{
    switch (step) {
    case ATTN_STEP_NONE: return "";
    case ATTN_STEP_SCORES: return "scores";
    case ATTN_STEP_SCALED: return "scaled";
    case ATTN_STEP_MASKED: return "masked";
    case ATTN_STEP_WEIGHTS: return "weights";
    case ATTN_STEP_OUTPUT: return "output";
    }
    return "";
}

/* ---- the trace: one block, carved into every step and the summary ---- */

/* a + b into *sum; 0 when it does not fit in size_t. */
static int attn_add(size_t a, size_t b, size_t *sum)
{
    if (a > SIZE_MAX - b)
        return 0;
    *sum = a + b;
    return 1;
}

size_t attn_trace_cells(size_t n_q, size_t n_k, size_t d_v)
{
    int overflow = 0;
    size_t qk = attn_cells(n_q, n_k, &overflow);       /* one (n_q, n_k) step */
    size_t steps = attn_cells(qk, 4, &overflow);        /* scores, scaled, masked, weights */
    size_t output = attn_cells(n_q, d_v, &overflow);    /* (n_q, d_v) */
    /* row_sums, max_weight, entropy, row_max, row_sum, lse */
    size_t summary = attn_cells(n_q, 6, &overflow);
    size_t total;

    if (overflow || !attn_add(steps, output, &total) || !attn_add(total, summary, &total))
        return 0;
    return total;
}

/*
 * Byte offsets inside the block: the doubles first (their alignment is calloc's),
 * then argmax (n_q size_t), then fully_masked (n_q bytes).
 */
struct attn_layout {
    unsigned keep;     /* the steps read after the pass (ATTN_KEEP bits) */
    size_t qk_buffers; /* distinct (n_q, n_k) matrices: 4, or fewer when steps share */
    size_t argmax_off, flags_off, bytes;
};

/*
 * How many (n_q, n_k) buffers the steps scores → scaled → masked → weights need when
 * only the steps in `keep` are read afterwards: a step that is not kept hands its
 * buffer to the next one, which overwrites it in place (every pass is elementwise).
 */
static size_t attn_qk_buffers(unsigned keep)
{
    size_t n = 1;
    for (int s = ATTN_STEP_SCORES; s < ATTN_STEP_WEIGHTS; s++)
        n += (keep & ATTN_KEEP(s)) != 0;
    return n;
}

/* Fills *l; 0 when any size in bytes overflows size_t (the block cannot be had). */
static int attn_layout_of(size_t n_q, size_t n_k, size_t d_v, unsigned keep,
                          struct attn_layout *l)
{
    int overflow = 0;
    size_t shared = (4 - attn_qk_buffers(keep)) * n_q * n_k; /* <= the 4 counted below */
    size_t cells = attn_trace_cells(n_q, n_k, d_v);
    if (cells == 0)
        return 0;
    cells -= shared;
    l->keep = keep;
    l->qk_buffers = attn_qk_buffers(keep);
    size_t doubles = attn_cells(cells, sizeof(double), &overflow);
    size_t argmax = attn_cells(n_q, sizeof(size_t), &overflow);
    size_t align = _Alignof(size_t);

    if (cells == 0 || overflow || !attn_add(doubles, align - 1, &l->argmax_off))
        return 0;
    l->argmax_off -= l->argmax_off % align;
    return attn_add(l->argmax_off, argmax, &l->flags_off) && attn_add(l->flags_off, n_q, &l->bytes);
}

/* Points every matrix and summary array of t into block, laid out as l says. */
static void attn_trace_carve(struct attn_trace *t, unsigned char *block, const struct attn_layout *l)
{
    double *d = (double *)(void *)block;
    size_t qk = t->n_q * t->n_k;
    struct attn_matrix *chain[] = { &t->scores, &t->scaled, &t->masked, &t->weights };

    /* scores, scaled, masked, weights: (n_q, n_k) each; a step not kept lends its
     * buffer to the next (attn_qk_buffers). */
    for (int s = 0; s < 4; s++) {
        if (s > 0 && !(l->keep & ATTN_KEEP(ATTN_STEP_SCORES + s - 1))) {
            *chain[s] = *chain[s - 1];
            continue;
        }
        *chain[s] = attn_matrix_view(d, t->n_q, t->n_k);
        d += qk;
    }
    t->output = attn_matrix_view(d, t->n_q, t->d_v); /* (n_q, d_v) */
    d += t->n_q * t->d_v;
    t->summary.row_sums = d;                   /* (n_q) */
    t->summary.max_weight = d + t->n_q;        /* (n_q) */
    t->summary.entropy = d + 2 * t->n_q;       /* (n_q) */
    t->summary.row_max = d + 3 * t->n_q;       /* (n_q) */
    t->summary.row_sum = d + 4 * t->n_q;       /* (n_q) */
    t->summary.lse = d + 5 * t->n_q;           /* (n_q) */
    t->summary.argmax = (size_t *)(void *)(block + l->argmax_off); /* (n_q) */
    t->summary.fully_masked = block + l->flags_off;                /* (n_q) */
    t->block = block;
}

size_t attn_trace_bytes_keep(size_t n_q, size_t n_k, size_t d_v, unsigned keep)
{
    struct attn_layout l;
    if (n_q == 0 || n_k == 0 || d_v == 0 || !attn_layout_of(n_q, n_k, d_v, keep, &l))
        return 0;
    return l.bytes;
}

/*
 * The block of attn_trace_alloc and attn_trace_alloc_keep: zero-filled or not. Zero
 * sizes are ATTN_EINVAL (a matrix is never empty). Sizes whose block would not fit in
 * size_t are ATTN_ENOMEM, like a failed calloc: no memory of that size can be had,
 * and attn_trace_cells already returned 0 for the caller's limit check.
 */
static enum attn_status attn_trace_alloc_block(struct attn_trace *t, size_t n_q, size_t n_k,
                                               size_t d_v, unsigned keep, bool zeroed)
{
    struct attn_layout l;
    unsigned char *block;

    if (t == NULL)
        return ATTN_EINVAL;
    memset(t, 0, sizeof *t);
    if (n_q == 0 || n_k == 0 || d_v == 0)
        return ATTN_EINVAL;
    if (!attn_layout_of(n_q, n_k, d_v, keep, &l))
        return ATTN_ENOMEM;
    /* zeroed: the trace reads as zeros (IEEE 754 0.0 is all-bits-zero). */
    block = attn_block_alloc(l.bytes, zeroed, &t->block_bytes);
    if (block == NULL)
        return ATTN_ENOMEM;
    t->n_q = n_q;
    t->n_k = n_k;
    t->d_v = d_v;
    attn_trace_carve(t, block, &l);
    return ATTN_OK;
}

enum attn_status attn_trace_alloc(struct attn_trace *t, size_t n_q, size_t n_k, size_t d_v)
{
    return attn_trace_alloc_block(t, n_q, n_k, d_v, ATTN_KEEP_ALL, true);
}

enum attn_status attn_trace_alloc_keep(struct attn_trace *t, size_t n_q, size_t n_k, size_t d_v,
                                       unsigned keep)
{
    return attn_trace_alloc_block(t, n_q, n_k, d_v, keep, false);
}

void attn_trace_free(struct attn_trace *t)
{
    if (t == NULL)
        return;
    attn_block_free(t->block, t->block_bytes);
    memset(t, 0, sizeof *t);
}

/* Zeroes a matrix of the trace (always contiguous). */
static void attn_zero_matrix(struct attn_matrix *m)
{
    memset(m->data, 0, m->rows * m->cols * sizeof(double));
}

static void attn_zero_summary(struct attn_trace *t)
{
    struct attn_summary *s = &t->summary;

    memset(s->row_sums, 0, t->n_q * sizeof *s->row_sums);
    memset(s->max_weight, 0, t->n_q * sizeof *s->max_weight);
    memset(s->entropy, 0, t->n_q * sizeof *s->entropy);
    memset(s->row_max, 0, t->n_q * sizeof *s->row_max);
    memset(s->row_sum, 0, t->n_q * sizeof *s->row_sum);
    memset(s->lse, 0, t->n_q * sizeof *s->lse);
    memset(s->argmax, 0, t->n_q * sizeof *s->argmax);
    memset(s->fully_masked, 0, t->n_q * sizeof *s->fully_masked);
    s->n_fully_masked = 0;
}

void attn_trace_reset(struct attn_trace *t)
{
    t->fault.step = ATTN_STEP_NONE;
    t->fault.row = 0;
    t->fault.col = 0;
    attn_zero_summary(t);
}

enum attn_status attn_trace_fault(struct attn_trace *t, enum attn_step step, size_t row, size_t col)
{
    struct attn_matrix *by_step[] = {
        NULL, &t->scores, &t->scaled, &t->masked, &t->weights, &t->output,
    };

    t->fault.step = step;
    t->fault.row = row;
    t->fault.col = col;
    for (size_t s = (size_t)step + 1; s <= ATTN_STEP_OUTPUT; s++)
        attn_zero_matrix(by_step[s]);
    attn_zero_summary(t);
    return ATTN_EOVERFLOW;
}

/* ---- argument checks ---- */

/*
 * A usable view: data, non-empty, stride >= cols, and every size within int because
 * cblas_dgemm takes its sizes and leading dimensions as int.
 */
static int attn_matrix_ok(const struct attn_matrix *m)
{
    return m != NULL && m->data != NULL && m->rows > 0 && m->cols > 0 &&
           m->stride >= m->cols && m->rows <= INT_MAX && m->stride <= INT_MAX;
}

static int attn_mask_ok(const struct attn_mask *mask, size_t n_q)
{
    switch (mask->kind) {
    case ATTN_MASK_NONE:
    case ATTN_MASK_CAUSAL:
        return 1;
    case ATTN_MASK_CELLS:
        return mask->allow != NULL && (mask->rows == n_q || mask->rows == 1);
    }
    return 0;
}

enum attn_status attn_check_problem(const struct attn_trace *t, const struct attn_problem *p)
{
    if (t == NULL || p == NULL || t->block == NULL)
        return ATTN_EINVAL;
    if (!attn_matrix_ok(p->q) || !attn_matrix_ok(p->k) || !attn_matrix_ok(p->v))
        return ATTN_EINVAL;
    /* Q·Kᵀ needs both d_k wide; weights·V needs one value row per key. */
    if (p->q->cols != p->k->cols || p->v->rows != p->k->rows)
        return ATTN_EINVAL;
    if (t->n_q != p->q->rows || t->n_k != p->k->rows || t->d_v != p->v->cols)
        return ATTN_EINVAL;
    /* !(scale > 0) also rejects NaN. */
    if (!(p->scale > 0) || !isfinite(p->scale))
        return ATTN_EINVAL;
    if (p->bias != NULL &&
        (!attn_matrix_ok(p->bias) || p->bias->rows != t->n_q || p->bias->cols != t->n_k))
        return ATTN_EINVAL;
    return attn_mask_ok(&p->mask, t->n_q) ? ATTN_OK : ATTN_EINVAL;
}

/* ---- one row of steps 2-4, shared by both paths ---- */

/* Finite, as one comparison: the loops below fold it in without a branch or a call.
 * NaN compares false. */
static inline bool attn_finite(double x)
{
    return fabs(x) <= DBL_MAX;
}

/* The keys query i may see are [0, n) but for `allow` (a row of 0/1, CELLS) or those
 * past `causal_end` (CAUSAL). */
struct attn_row_mask {
    const unsigned char *allow; /* NULL: no table */
    size_t causal_end;          /* first blocked key; n_k when none */
};

static struct attn_row_mask attn_row_mask_of(const struct attn_mask *mask, size_t n_q,
                                             size_t n_k, size_t i)
{
    struct attn_row_mask rm = { NULL, n_k };

    if (mask->kind == ATTN_MASK_CELLS) {
        rm.allow = mask->allow + (mask->rows == 1 ? 0 : i) * n_k;
    } else if (mask->kind == ATTN_MASK_CAUSAL) {
        /* j allowed iff j + n_q <= i + n_k (attn_allows): the first blocked j is
         * i + n_k + 1 - n_q, or 0 when that is negative. */
        rm.causal_end = i + n_k + 1 >= n_q ? i + n_k + 1 - n_q : 0;
        if (rm.causal_end > n_k)
            rm.causal_end = n_k;
    }
    return rm;
}

/* masked row = scaled row + bias row (b may be NULL), -inf where blocked; false if an
 * allowed cell is not finite. x and m may be one row. */
static bool attn_row_mask(const double *x, const double *b, double *m, size_t n,
                          const struct attn_row_mask *rm)
{
    bool ok = true;

    if (b == NULL && rm->allow == NULL) {
        if (m != x)
            memcpy(m, x, rm->causal_end * sizeof *m);
    } else if (rm->allow == NULL) {
        for (size_t j = 0; j < rm->causal_end; j++) {
            m[j] = x[j] + b[j];
            ok &= attn_finite(m[j]);
        }
    } else {
        for (size_t j = 0; j < n; j++) {
            double v = b != NULL ? x[j] + b[j] : x[j];
            bool allowed = rm->allow[j] != 0;
            m[j] = allowed ? v : -INFINITY;
            ok &= !allowed || attn_finite(v);
        }
    }
    for (size_t j = rm->causal_end; j < n; j++)
        m[j] = -INFINITY;
    return ok;
}

/* The max a row's softmax subtracted and the sum it divided by: -inf and 0 when
 * every key is blocked. */
struct attn_row_stats {
    double max, sum;
};

/*
 * Softmax of one row x (n) into w (n), max being x's largest cell (attn_row_max); *blocked = 1 when every key is blocked; false
 * if a weight is not finite. The row's max is subtracted first: exp then never sees a
 * positive argument, so scores of 1e300 cannot overflow, and the ratios are
 * unchanged. The sum is >= 1 (the max contributes exp(0)), so the division is safe.
 * A row with no allowed key has no max; it gets weights 0, not the NaN that 0/0 would
 * give. *stats gets the max and the sum. With `facts`, also what the summary says
 * about the row, while w is in cache; its argmax is the first key of the max score,
 * found before exp (x and w may be one row).
 */
static bool attn_row_softmax(const double *x, double *w, size_t n, double max, int *blocked,
                             struct attn_row_stats *stats, struct attn_row_facts *facts)
{
    double sum;
    size_t top;

    stats->max = max;
    stats->sum = 0.0;
    *blocked = max == -INFINITY;
    if (*blocked) {
        memset(w, 0, n * sizeof *w);
        return true;
    }
    top = facts != NULL ? attn_row_first_of(x, n, max) : 0;
    top = top < n ? top : 0; /* max is one of x's cells; this only keeps reads in the row */
    sum = attn_row_exp(x, max, w, n);
    stats->sum = sum;
    if (!attn_row_divide(w, n, sum))
        return false;
    if (facts != NULL) {
        *facts = attn_row_facts_at(w, n, top);
    }
    return true;
}

/*
 * Query i's entry of the summary: its row's facts, or the zeros and "no key" of a
 * fully masked row.
 */
static void attn_summary_set(struct attn_summary *s, size_t i, const struct attn_row_facts *f)
{
    bool blocked = s->fully_masked[i] != 0;

    s->row_sums[i] = blocked ? 0.0 : f->sum;
    s->argmax[i] = blocked ? ATTN_NO_INDEX : f->argmax;
    s->max_weight[i] = blocked ? 0.0 : f->max_weight;
    s->entropy[i] = blocked ? 0.0 : f->entropy;
}

/* Query i's row statistics: the softmax's max, sum and their log-sum-exp. */
static void attn_summary_stats(struct attn_summary *s, size_t i, const struct attn_row_stats *st)
{
    s->row_max[i] = st->max;
    s->row_sum[i] = st->sum;
    s->lse[i] = st->sum > 0 ? st->max + log(st->sum) : -INFINITY;
}

/* ---- the five passes ---- */

/* Whether query i may attend to key j, for n_q queries and n_k keys. */
static int attn_allows(const struct attn_mask *mask, size_t n_q, size_t n_k, size_t i, size_t j)
{
    switch (mask->kind) {
    case ATTN_MASK_CELLS:
        /* One row is key padding: the same keys are hidden from every query. */
        return mask->allow[(mask->rows == 1 ? 0 : i) * n_k + j] != 0;
    case ATTN_MASK_CAUSAL:
        /* j <= i + (n_k - n_q), rearranged so that n_q > n_k cannot wrap around. */
        return j + n_q <= i + n_k;
    case ATTN_MASK_NONE:
        break;
    }
    return 1;
}

/*
 * Step 1, compare: scores (n_q, n_k) = Q (n_q, d_k) · Kᵀ (d_k, n_k).
 * CblasTrans reads K transposed in place instead of copying it, and the views'
 * strides are the leading dimensions, so one head's column block of a wider Q or K
 * is used where it lies.
 */
static void attn_pass_scores(struct attn_trace *t, const struct attn_matrix *q,
                             const struct attn_matrix *k)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)q->rows, (blasint)k->rows,
                (blasint)q->cols, 1.0, q->data, (blasint)q->stride, k->data, (blasint)k->stride,
                0.0, t->scores.data, (blasint)t->scores.stride);
}

/*
 * Steps 2-4 as whole passes, for attn_forward_by_steps: each is its row function over
 * every row, so both paths share their arithmetic cell for cell; the row functions'
 * own finiteness results are not needed here, since attn_check_step sweeps each step.
 */

/*
 * Step 2, scale: scaled (n_q, n_k) = scores * scale. A pass of its own (not folded
 * into dgemm's alpha) so that `scores` keeps its meaning, the raw dot products.
 */
static void attn_pass_scale(struct attn_trace *t, double scale)
{
    for (size_t i = 0; i < t->n_q; i++)
        (void)attn_row_scale(t->scores.data + i * t->n_k, t->scaled.data + i * t->n_k, t->n_k,
                             scale);
}

/*
 * Step 3, mask: masked (n_q, n_k) = scaled + bias, then -inf where the mask blocks.
 * -inf rather than a large negative number: exp(-inf) is exactly 0, so a blocked
 * key gets exactly no weight however large the other scores are.
 */
static void attn_pass_mask(struct attn_trace *t, const struct attn_problem *p)
{
    for (size_t i = 0; i < t->n_q; i++) {
        const double *b = p->bias != NULL ? p->bias->data + i * p->bias->stride : NULL;
        struct attn_row_mask rm = attn_row_mask_of(&p->mask, t->n_q, t->n_k, i);
        (void)attn_row_mask(t->scaled.data + i * t->n_k, b, t->masked.data + i * t->n_k, t->n_k,
                            &rm);
    }
}

/*
 * Softmax of row i of `masked` into row i of `weights`; records whether the row is
 * fully masked, its row statistics and, with `summarize`, its summary. False if a
 * weight is not finite.
 * The summary written before a later step fails is cleared with the trace's fault.
 */
static bool attn_softmax_query(struct attn_trace *t, size_t i, double max, bool summarize)
{
    struct attn_row_facts facts = { 0 };
    struct attn_row_stats stats;
    int blocked;
    bool ok = attn_row_softmax(t->masked.data + i * t->n_k, t->weights.data + i * t->n_k,
                               t->n_k, max, &blocked, &stats, summarize ? &facts : NULL);

    t->summary.fully_masked[i] = (unsigned char)blocked;
    attn_summary_stats(&t->summary, i, &stats);
    if (ok && summarize)
        attn_summary_set(&t->summary, i, &facts);
    return ok;
}

/* Step 4, softmax along each row: weights (n_q, n_k); records fully masked rows. */
static void attn_pass_softmax(struct attn_trace *t, bool summarize)
{
    for (size_t i = 0; i < t->n_q; i++) {
        (void)attn_softmax_query(t, i, attn_row_max(t->masked.data + i * t->n_k, t->n_k),
                                 summarize);
        t->summary.n_fully_masked += t->summary.fully_masked[i];
    }
}

/* Step 5, mix: output (n_q, d_v) = weights (n_q, n_k) · V (n_k, d_v), V read at its stride. */
static void attn_pass_output(struct attn_trace *t, const struct attn_matrix *v)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)t->n_q, (blasint)v->cols,
                (blasint)t->n_k, 1.0, t->weights.data, (blasint)t->weights.stride, v->data,
                (blasint)v->stride, 0.0, t->output.data, (blasint)t->output.stride);
}

/*
 * After a step: the first non-finite cell of m (row-major) becomes the trace's fault.
 * With `mask`, the cells it blocks are skipped: their -inf is the mask's doing, while
 * an allowed cell whose finite scaled + bias overflowed is a real fault.
 */
static enum attn_status attn_check_step(struct attn_trace *t, enum attn_step step,
                                        const struct attn_matrix *m, const struct attn_mask *mask)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            if (!isfinite(attn_at(m, i, j)) &&
                (mask == NULL || attn_allows(mask, m->rows, m->cols, i, j)))
                return attn_trace_fault(t, step, i, j);
    return ATTN_OK;
}

/*
 * The five passes one after the other, each checked before the next: the definition
 * of which cell is the first fault. The fast path below runs when nothing overflows
 * and hands over to this when something does.
 */
static enum attn_status attn_forward_by_steps(struct attn_trace *out, const struct attn_problem *p)
{
    enum attn_status st;

    attn_trace_reset(out);
    attn_pass_scores(out, p->q, p->k);
    if ((st = attn_check_step(out, ATTN_STEP_SCORES, &out->scores, NULL)) != ATTN_OK)
        return st;
    attn_pass_scale(out, p->scale);
    if ((st = attn_check_step(out, ATTN_STEP_SCALED, &out->scaled, NULL)) != ATTN_OK)
        return st;
    attn_pass_mask(out, p);
    if ((st = attn_check_step(out, ATTN_STEP_MASKED, &out->masked, &p->mask)) != ATTN_OK)
        return st;
    attn_pass_softmax(out, !p->skip_summary);
    /* Cannot fire after the max subtraction; kept so a regression cannot slip NaN out. */
    if ((st = attn_check_step(out, ATTN_STEP_WEIGHTS, &out->weights, NULL)) != ATTN_OK)
        return st;
    attn_pass_output(out, p->v);
    return attn_check_step(out, ATTN_STEP_OUTPUT, &out->output, NULL);
}

/* ---- the fast path: rows through scale, mask and softmax while they are in cache ---- */

/*
 * Steps 2-4 for query rows [from, to): the row functions the passes use, but each
 * row goes through all three (and its summary, unless skipped) while it is in cache,
 * and the finiteness checks ride along instead of sweeping every matrix again. False when any check fails: the
 * caller then reruns step by step, which names the first fault as the contract says
 * (a later row's score outranks an earlier row's masked cell).
 */
static bool attn_rows_softmax(struct attn_trace *t, const struct attn_problem *p, size_t from,
                              size_t to, size_t *n_blocked)
{
    size_t n = t->n_k;

    for (size_t i = from; i < to; i++) {
        const double *b = p->bias != NULL ? p->bias->data + i * p->bias->stride : NULL;
        struct attn_row_mask rm = attn_row_mask_of(&p->mask, t->n_q, n, i);
        const double *s = t->scores.data + i * n;
        double *x = t->scaled.data + i * n, *m = t->masked.data + i * n, max;
        bool ok;

        if (b == NULL && rm.allow == NULL) {
            /* masked = scaled before causal_end, -inf after: scaled's max there is
             * masked's, found in the scaling pass (one pass less over the row) */
            ok = attn_row_scale_max(s, x, rm.causal_end, p->scale, &max);
            ok &= attn_row_scale(s + rm.causal_end, x + rm.causal_end, n - rm.causal_end,
                                 p->scale);
            ok = ok && attn_row_mask(x, b, m, n, &rm);
        } else {
            ok = attn_row_scale(s, x, n, p->scale) && attn_row_mask(x, b, m, n, &rm);
            max = ok ? attn_row_max(m, n) : 0.0;
        }
        if (!ok || !attn_softmax_query(t, i, max, !p->skip_summary))
            return false;
        *n_blocked += t->summary.fully_masked[i];
    }
    return true;
}

/* Whether rows [from, to) of m are all finite. */
static bool attn_rows_finite(const struct attn_matrix *m, size_t from, size_t to)
{
    bool ok = true;

    for (size_t i = from; i < to; i++)
        for (size_t j = 0; j < m->cols; j++)
            ok &= attn_finite(attn_at(m, i, j));
    return ok;
}

/* Rows [from, to) of m as a view of their own. */
static struct attn_matrix attn_rows_of(const struct attn_matrix *m, size_t from, size_t to)
{
    struct attn_matrix rows = { m->data + from * m->stride, to - from, m->cols, m->stride };
    return rows;
}

/*
 * Queries go through the steps in blocks of ATTN_ROW_BLOCK rows (internal.h), at fixed
 * offsets (0, 128, 256, ...) whatever the number of threads. Two reasons. A block's
 * scores stay in the caches while softmax and the second product read them (n_k = 2048:
 * 2 MiB). And BLAS's kernels work in tiles of rows, so a row's last bits may depend on
 * where a call's rows start and end: making the same calls on one thread or on several
 * gives every thread count the same bits.
 */

/*
 * Every step for query rows [from, to): queries are independent, so a block of rows
 * is a smaller problem of its own. Writes the rows' fully_masked flags and adds their
 * count to *n_blocked; false when a check failed (see attn_rows_softmax).
 */
static bool attn_forward_rows(struct attn_trace *t, const struct attn_problem *p, size_t from,
                              size_t to, size_t *n_blocked)
{
    struct attn_matrix q = attn_rows_of(p->q, from, to);
    struct attn_matrix scores = attn_rows_of(&t->scores, from, to);
    struct attn_matrix weights = attn_rows_of(&t->weights, from, to);
    const struct attn_matrix *k = p->k, *v = p->v;

    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)q.rows, (blasint)k->rows,
                (blasint)q.cols, 1.0, q.data, (blasint)q.stride, k->data, (blasint)k->stride,
                0.0, scores.data, (blasint)scores.stride);
    if (!attn_rows_softmax(t, p, from, to, n_blocked))
        return false;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)weights.rows,
                (blasint)v->cols, (blasint)weights.cols, 1.0, weights.data,
                (blasint)weights.stride, v->data, (blasint)v->stride, 0.0,
                t->output.data + from * t->output.stride, (blasint)t->output.stride);
    return attn_rows_finite(&t->output, from, to);
}

/*
 * The row blocks of one attn_forward_threads call, taken one at a time by whichever
 * thread is free: on a shared machine one core may run slower than the other for a
 * while, and fixed shares would leave the faster one waiting at the end. Which
 * thread takes a block does not change its bits (ATTN_ROW_BLOCK).
 */
struct attn_blocks {
    struct attn_trace *t;
    const struct attn_problem *p;
    size_t n_blocks;
    atomic_size_t next;  /* the next block to take */
    atomic_bool failed;  /* a check failed: the others stop too (the caller redoes all) */
};

/* One thread's part: the blocks it took, and their fully masked rows. */
struct attn_share {
    struct attn_blocks *blocks;
    size_t n_blocked;
};

static void *attn_share_run(void *arg)
{
    struct attn_share *sh = arg;
    struct attn_blocks *all = sh->blocks;
    size_t n_q = all->t->n_q;

    while (!atomic_load_explicit(&all->failed, memory_order_relaxed)) {
        size_t b = atomic_fetch_add_explicit(&all->next, 1, memory_order_relaxed);
        if (b >= all->n_blocks)
            break;
        size_t from = b * ATTN_ROW_BLOCK;
        size_t to = n_q - from > ATTN_ROW_BLOCK ? from + ATTN_ROW_BLOCK : n_q;
        if (!attn_forward_rows(all->t, all->p, from, to, &sh->n_blocked))
            atomic_store(&all->failed, true);
    }
    return NULL;
}

/* The most threads attn_forward_threads uses; more would not pay on a forward pass. */
#define ATTN_MAX_THREADS 16

enum attn_status attn_forward_threads(struct attn_trace *out, const struct attn_problem *p,
                                      unsigned threads)
{
    enum attn_status st = attn_check_problem(out, p);
    struct attn_share shares[ATTN_MAX_THREADS];
    pthread_t ids[ATTN_MAX_THREADS];
    bool started[ATTN_MAX_THREADS] = { false };
    size_t n_shares, n_blocked = 0;

    if (st != ATTN_OK)
        return st;
    attn_trace_reset(out);
    struct attn_blocks blocks = { .t = out, .p = p,
                                  .n_blocks = (out->n_q + ATTN_ROW_BLOCK - 1) / ATTN_ROW_BLOCK };
    atomic_init(&blocks.next, 0);
    atomic_init(&blocks.failed, false);
    n_shares = threads < 1 ? 1 : threads > ATTN_MAX_THREADS ? ATTN_MAX_THREADS : threads;
    if (n_shares > blocks.n_blocks)
        n_shares = blocks.n_blocks;
    for (size_t i = 0; i < n_shares; i++)
        shares[i] = (struct attn_share){ &blocks, 0 };
    /* Share 0 runs here; the blocks of a thread that cannot start are taken by the
     * others. pthreads, not C11 threads: the sanitizers follow pthread_create only. */
    for (size_t i = 1; i < n_shares; i++)
        started[i] = pthread_create(&ids[i], NULL, attn_share_run, &shares[i]) == 0;
    attn_share_run(&shares[0]);
    for (size_t i = 1; i < n_shares; i++)
        if (started[i])
            pthread_join(ids[i], NULL);
    if (atomic_load(&blocks.failed))
        return attn_forward_by_steps(out, p);
    for (size_t i = 0; i < n_shares; i++)
        n_blocked += shares[i].n_blocked;
    out->summary.n_fully_masked = n_blocked;
    return ATTN_OK;
}

enum attn_status attn_forward(struct attn_trace *out, const struct attn_problem *p)
{
    return attn_forward_threads(out, p, 1);
}

/* ---- BLAS policy ---- */

void attn_blas_set_threads(int threads)
{
    openblas_set_num_threads(threads < 1 ? 1 : threads);
}

static char attn_blas_text[256];
static once_flag attn_blas_once = ONCE_FLAG_INIT;

/* Appends src to attn_blas_text, cutting it short rather than overflowing. */
static void attn_blas_append(const char *src)
{
    size_t used = strlen(attn_blas_text), room = sizeof attn_blas_text - 1 - used;
    size_t n = strlen(src);

    memcpy(attn_blas_text + used, src, n < room ? n : room);
    attn_blas_text[used + (n < room ? n : room)] = '\0';
}

/*
 * Built once: openblas_get_config() fills a buffer of its own on every call, so
 * calling it from several request threads at once would race.
 */
static void attn_blas_describe(void)
{
    const char *config = openblas_get_config();
    const char *core = openblas_get_corename();

    attn_blas_append(config != NULL ? config : "OpenBLAS");
    /* DYNAMIC_ARCH builds already name the core in the config string. */
    if (core != NULL && (config == NULL || strstr(config, core) == NULL)) {
        attn_blas_append(" ");
        attn_blas_append(core);
    }
}

const char *attn_blas_info(void)
{
    call_once(&attn_blas_once, attn_blas_describe);
    return attn_blas_text;
}

/* Kernels older than Haswell's: what OpenBLAS falls back to on a CPU it cannot place. */
static bool attn_blas_core_is_pre_avx2(const char *core)
{
    static const char *const old[] = { "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                                       "Sandybridge", "Atom", "Katmai", "Coppermine", "Northwood",
                                       "Banias" };
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (strcasecmp(core, old[i]) == 0)
            return true;
    return false;
}

const char *attn_blas_better_core(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    const char *core = openblas_get_corename();
    if (core == NULL || !attn_blas_core_is_pre_avx2(core))
        return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}
