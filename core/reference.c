/*
 * core/reference.c — attn_reference: the contract of attn_forward in plain loops.
 *
 * What it is: the slow, obvious computation that tests and benchmarks check the
 * fast path against. It shares only bookkeeping with attention.c (argument checks,
 * trace reset, fault recording, via internal.h); every pass, the mask rule and the
 * summary are written again here, differently where that costs nothing:
 *   - the causal rule in signed arithmetic instead of a rearranged inequality;
 *   - fully masked rows found from the mask, not from -inf in the values;
 *   - softmax as w_j = 1 / Σ_l exp(x_l - x_j), which needs no max and no division
 *     of small sums, instead of exp(x_j - max) / Σ exp(x_l - max).
 *
 * What it is not: fast (softmax is O(n_k²) per query), or used to serve requests.
 *
 * Dimension letters (n_q, n_k, d_k, d_v) are those of the legend in attention.h.
 */
#include "attention.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* Element (i, j) of a view, written out rather than through attn_at. */
static double ref_get(const struct attn_matrix *m, size_t i, size_t j)
{
    return m->data[i * m->stride + j];
}

/* Whether query i may see key j; the causal rule as the seeds state it, in signed numbers. */
static int ref_allowed(const struct attn_mask *mask, size_t n_q, size_t n_k, size_t i, size_t j)
{
    if (mask->kind == ATTN_MASK_CAUSAL)
        return (long long)j <= (long long)i + ((long long)n_k - (long long)n_q);
    if (mask->kind == ATTN_MASK_CELLS) {
        size_t r = mask->rows == 1 ? 0 : i;
        return mask->allow[r * n_k + j] != 0;
    }
    return 1;
}

/* First non-finite cell of m (row-major) that is not a blocked cell; 1 when found. */
static int ref_first_bad(const struct attn_matrix *m, const struct attn_mask *mask,
                         size_t *row, size_t *col)
{
    for (size_t i = 0; i < m->rows; i++) {
        for (size_t j = 0; j < m->cols; j++) {
            int blocked = mask != NULL && !ref_allowed(mask, m->rows, m->cols, i, j);
            if (!blocked && !isfinite(ref_get(m, i, j))) {
                *row = i;
                *col = j;
                return 1;
            }
        }
    }
    return 0;
}

/* Ends the pass with ATTN_EOVERFLOW when `step` left a non-finite allowed cell. */
static enum attn_status ref_check(struct attn_trace *t, enum attn_step step,
                                  const struct attn_matrix *m, const struct attn_mask *mask)
{
    size_t row, col;

    if (ref_first_bad(m, mask, &row, &col))
        return attn_trace_fault(t, step, row, col);
    return ATTN_OK;
}

/* scores (n_q, n_k): scores[i][j] = Σ_c Q[i][c] · K[j][c], the dot product of query i and key j. */
static void ref_scores(struct attn_trace *t, const struct attn_matrix *q, const struct attn_matrix *k)
{
    for (size_t i = 0; i < q->rows; i++) {
        for (size_t j = 0; j < k->rows; j++) {
            double dot = 0.0;
            for (size_t c = 0; c < q->cols; c++)
                dot += ref_get(q, i, c) * ref_get(k, j, c);
            t->scores.data[i * t->n_k + j] = dot;
        }
    }
}

/* scaled (n_q, n_k) = scores * scale, cell by cell. */
static void ref_scale(struct attn_trace *t, double scale)
{
    for (size_t i = 0; i < t->n_q; i++)
        for (size_t j = 0; j < t->n_k; j++)
            t->scaled.data[i * t->n_k + j] = ref_get(&t->scores, i, j) * scale;
}

/* masked (n_q, n_k) = scaled + bias where allowed, -inf where blocked. */
static void ref_mask(struct attn_trace *t, const struct attn_problem *p)
{
    for (size_t i = 0; i < t->n_q; i++) {
        for (size_t j = 0; j < t->n_k; j++) {
            double x = -INFINITY;
            if (ref_allowed(&p->mask, t->n_q, t->n_k, i, j))
                x = ref_get(&t->scaled, i, j) + (p->bias ? ref_get(p->bias, i, j) : 0.0);
            t->masked.data[i * t->n_k + j] = x;
        }
    }
}

/*
 * Softmax of query i's row: w_j = exp(x_j) / Σ_l exp(x_l) = 1 / Σ_l exp(x_l - x_j)
 * over the allowed keys l. The l = j term is 1, so the sum is >= 1; a huge x_l - x_j
 * gives exp = inf and w_j = 0, the right limit. Blocked keys, and every key of a
 * row with none allowed, get 0.
 */
static void ref_softmax_row(struct attn_trace *t, const struct attn_mask *mask, size_t i)
{
    const double *x = t->masked.data + i * t->n_k; /* (n_k) */
    double *w = t->weights.data + i * t->n_k;      /* (n_k) */
    size_t allowed = 0;

    for (size_t j = 0; j < t->n_k; j++) {
        double denom = 0.0;
        w[j] = 0.0;
        if (!ref_allowed(mask, t->n_q, t->n_k, i, j))
            continue;
        allowed++;
        for (size_t l = 0; l < t->n_k; l++)
            if (ref_allowed(mask, t->n_q, t->n_k, i, l))
                denom += exp(x[l] - x[j]);
        w[j] = 1.0 / denom;
    }
    t->summary.fully_masked[i] = allowed == 0;
    if (allowed == 0)
        t->summary.n_fully_masked++;
}

/*
 * Row i's statistics from its masked scores: the largest allowed one, the sum of
 * exp(x - that) over the allowed keys in key order, and max + log(sum); -inf, 0, -inf
 * when none is allowed.
 */
static void ref_row_stats(struct attn_trace *t, const struct attn_mask *mask, size_t i)
{
    const double *x = t->masked.data + i * t->n_k; /* (n_k) */
    double max = -INFINITY, sum = 0.0;

    for (size_t j = 0; j < t->n_k; j++)
        if (ref_allowed(mask, t->n_q, t->n_k, i, j) && x[j] > max)
            max = x[j];
    for (size_t j = 0; max != -INFINITY && j < t->n_k; j++)
        if (ref_allowed(mask, t->n_q, t->n_k, i, j))
            sum += exp(x[j] - max);
    t->summary.row_max[i] = max;
    t->summary.row_sum[i] = sum;
    t->summary.lse[i] = sum > 0 ? max + log(sum) : -INFINITY;
}

/* output (n_q, d_v): output[i][c] = Σ_j weights[i][j] · V[j][c]. */
static void ref_output(struct attn_trace *t, const struct attn_matrix *v)
{
    for (size_t i = 0; i < t->n_q; i++) {
        for (size_t c = 0; c < t->d_v; c++) {
            double acc = 0.0;
            for (size_t j = 0; j < t->n_k; j++)
                acc += ref_get(&t->weights, i, j) * ref_get(v, j, c);
            t->output.data[i * t->d_v + c] = acc;
        }
    }
}

/*
 * Summary of query i: sum, the first key of the largest masked score (the heaviest in
 * exact arithmetic; attention.h), its weight, entropy in nats.
 */
static void ref_summary_row(struct attn_trace *t, const struct attn_mask *mask, size_t i)
{
    const double *w = t->weights.data + i * t->n_k; /* (n_k) */
    const double *x = t->masked.data + i * t->n_k;  /* (n_k) */
    struct attn_summary *s = &t->summary;
    size_t best = ATTN_NO_INDEX;
    double sum = 0.0, entropy = 0.0, top = 0.0;
    /* A fully masked row visits no key and keeps the values above: 0, none, 0, 0. */
    size_t n = s->fully_masked[i] ? 0 : t->n_k;

    for (size_t j = 0; j < n; j++) {
        sum += w[j];
        if (ref_allowed(mask, t->n_q, t->n_k, i, j) &&
            (best == ATTN_NO_INDEX || x[j] > x[best])) {
            best = j;
            top = w[j];
        }
        entropy += w[j] == 0.0 ? 0.0 : -w[j] * log(w[j]);
    }
    s->row_sums[i] = sum;
    s->argmax[i] = best;
    s->max_weight[i] = top;
    s->entropy[i] = entropy;
}

enum attn_status attn_reference(struct attn_trace *out, const struct attn_problem *p)
{
    enum attn_status st = attn_check_problem(out, p);

    if (st != ATTN_OK)
        return st;
    attn_trace_reset(out);

    ref_scores(out, p->q, p->k);
    if ((st = ref_check(out, ATTN_STEP_SCORES, &out->scores, NULL)) != ATTN_OK)
        return st;
    ref_scale(out, p->scale);
    if ((st = ref_check(out, ATTN_STEP_SCALED, &out->scaled, NULL)) != ATTN_OK)
        return st;
    ref_mask(out, p);
    if ((st = ref_check(out, ATTN_STEP_MASKED, &out->masked, &p->mask)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < out->n_q; i++) {
        ref_softmax_row(out, &p->mask, i);
        ref_row_stats(out, &p->mask, i);
    }
    if ((st = ref_check(out, ATTN_STEP_WEIGHTS, &out->weights, NULL)) != ATTN_OK)
        return st;
    ref_output(out, p->v);
    if ((st = ref_check(out, ATTN_STEP_OUTPUT, &out->output, NULL)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < out->n_q; i++)
        ref_summary_row(out, &p->mask, i);
    return ATTN_OK;
}
