/*
 * core/variants_ref.c — attention with variants in naive loops: the reference that
 * tests and benchmarks hold attn_forward_variants to (variants.h).
 *
 * Written from the formulas, not from the fast path: RoPE as the papers' code writes
 * it ("half": x·cos + rotate_half(x)·sin, as Hugging Face's apply_rotary_pos_emb;
 * "interleaved": each pair a complex number times e^(iθ), as Meta's llama), each
 * angle computed where it is used, libm's tanh and exp, and the softmax as the sum
 * of exponentials with the sink's term added. Only the rules (which keys a row sees,
 * one cell at a time, the checks, the fault bookkeeping) and the generator are shared,
 * as the contract itself.
 */
#include "variants.h"

#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "random.h"

/* θ for column pair c of r rotated columns at position pos. */
static double ref_angle(double pos, double base, size_t c, size_t r)
{
    return pos / pow(base, (double)(2 * c) / (double)r);
}

/* One row of d columns at position pos, rotated into out. */
static void ref_rope_row(const double *x, double *out, size_t d, double pos,
                         const struct attn_rope *rope)
{
    size_t r = rope->rotated, half = r / 2;
    for (size_t col = 0; col < d; col++)
        out[col] = x[col];
    if (rope->layout == ATTN_ROPE_HALF) {
        /* out = x·cos + rotate_half(x)·sin, rotate_half(x) = (−x[half..r), x[0..half)),
         * cos and sin of (θ_0..θ_{half−1}, θ_0..θ_{half−1}). */
        for (size_t col = 0; col < r; col++) {
            double theta = ref_angle(pos, rope->base, col % half, r);
            double rotated = col < half ? -x[col + half] : x[col - half];
            out[col] = x[col] * cos(theta) + rotated * sin(theta);
        }
    } else {
        for (size_t c = 0; c < half; c++) {
            double complex z = x[2 * c] + x[2 * c + 1] * I;
            double complex turned = z * cexp(I * ref_angle(pos, rope->base, c, r));
            out[2 * c] = creal(turned);
            out[2 * c + 1] = cimag(turned);
        }
    }
}

static void ref_rope(const struct attn_matrix *x, struct attn_matrix *out,
                     const struct attn_rope *rope, const double *positions, double first)
{
    for (size_t i = 0; i < x->rows; i++) {
        double pos = positions != NULL ? positions[i] : first + (double)i;
        ref_rope_row(x->data + i * x->stride, out->data + i * out->stride, x->cols, pos, rope);
    }
}

static enum attn_status ref_check(struct attn_vtrace *t, const struct attn_variants *v, int step,
                                  const struct attn_matrix *m, const struct attn_problem *masking)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            if (!isfinite(attn_at(m, i, j)) &&
                (masking == NULL || attn_key_visible(masking, v, m->rows, m->cols, i, j)))
                return attn_vtrace_fault(t, v, step, i, j);
    return ATTN_OK;
}

/* Row i's softmax with the sink, and its summary. */
static void ref_softmax_row(struct attn_vtrace *t, const struct attn_variants *v, size_t i)
{
    struct attn_trace *b = &t->base;
    size_t n = b->n_k;
    const double *x = b->masked.data + i * n;
    double *w = b->weights.data + i * n;
    double max = v->sink ? v->sink_logit : -INFINITY, sum = 0.0;
    bool any = false;
    for (size_t j = 0; j < n; j++)
        if (x[j] != -INFINITY) {
            any = true;
            max = x[j] > max ? x[j] : max;
        }
    b->summary.fully_masked[i] = !any;
    b->summary.n_fully_masked += !any;
    b->summary.argmax[i] = ATTN_NO_INDEX;
    /* A row with no visible key (and no sink) has max -inf and sum 0; with a sink it is
     * the sink's softmax alone: max z, sum 1. */
    b->summary.row_max[i] = max;
    b->summary.row_sum[i] = v->sink ? 1.0 : 0.0;
    b->summary.lse[i] = max;
    if (!any) {
        for (size_t j = 0; j < n; j++)
            w[j] = 0.0;
        if (v->sink)
            t->sink_weight[i] = 1.0;
        return;
    }
    size_t first = n; /* the first key of the largest masked score */
    for (size_t j = 0; j < n; j++) {
        sum += x[j] == -INFINITY ? 0.0 : exp(x[j] - max);
        if (x[j] != -INFINITY && (first == n || x[j] > x[first]))
            first = j;
    }
    double sink = v->sink ? exp(v->sink_logit - max) : 0.0;
    sum += sink;
    b->summary.row_sum[i] = sum;
    b->summary.lse[i] = max + log(sum);
    double row_sum = 0.0, entropy = 0.0;
    for (size_t j = 0; j < n; j++) {
        w[j] = x[j] == -INFINITY ? 0.0 : exp(x[j] - max) / sum;
        row_sum += w[j];
        if (w[j] > 0)
            entropy -= w[j] * log(w[j]);
    }
    double best = w[first];
    if (best > 0) /* 0: the sink took every weight, no argmax */
        b->summary.argmax[i] = first;
    if (v->sink)
        t->sink_weight[i] = sink / sum;
    b->summary.row_sums[i] = row_sum;
    b->summary.max_weight[i] = best;
    b->summary.entropy[i] = entropy;
}

/* out (rows, cols) = a (rows, inner) · b, b read transposed when b_trans. */
static void ref_product(const struct attn_matrix *a, const struct attn_matrix *b, bool b_trans,
                        struct attn_matrix *out)
{
    for (size_t i = 0; i < out->rows; i++)
        for (size_t j = 0; j < out->cols; j++) {
            double s = 0.0;
            for (size_t c = 0; c < a->cols; c++)
                s += attn_at(a, i, c) * (b_trans ? attn_at(b, j, c) : attn_at(b, c, j));
            out->data[i * out->stride + j] = s;
        }
}

enum attn_status attn_reference_variants(struct attn_vtrace *out, const struct attn_problem *p,
                                         const struct attn_variants *v)
{
    if (out == NULL)
        return ATTN_EINVAL;
    if (!attn_variants_any(v)) /* the plain reference; its fault's step is the vtrace's too */
        return attn_vtrace_plain(out, attn_reference(&out->base, p));
    enum attn_status st = attn_check_problem(&out->base, p);
    if (st != ATTN_OK || (st = attn_check_variants(out, p, v)) != ATTN_OK)
        return st;
    struct attn_trace *b = &out->base;
    size_t n_q = b->n_q, n_k = b->n_k;
    const struct attn_matrix *q = p->q, *k = p->k;
    attn_trace_reset(b);
    out->fault_step = ATTN_STEP_NONE;
    if (v->rope != NULL) {
        ref_rope(p->q, &out->q_rope, v->rope, v->rope->positions_q, (double)n_k - (double)n_q);
        if ((st = ref_check(out, v, ATTN_STEP_Q_ROPE, &out->q_rope, NULL)) != ATTN_OK)
            return st;
        ref_rope(p->k, &out->k_rope, v->rope, v->rope->positions_k, 0.0);
        if ((st = ref_check(out, v, ATTN_STEP_K_ROPE, &out->k_rope, NULL)) != ATTN_OK)
            return st;
        q = &out->q_rope;
        k = &out->k_rope;
    }
    ref_product(q, k, true, &b->scores);
    if ((st = ref_check(out, v, ATTN_STEP_SCORES, &b->scores, NULL)) != ATTN_OK)
        return st;
    for (size_t c = 0; c < n_q * n_k; c++)
        b->scaled.data[c] = b->scores.data[c] * p->scale;
    if ((st = ref_check(out, v, ATTN_STEP_SCALED, &b->scaled, NULL)) != ATTN_OK)
        return st;
    const double *x = b->scaled.data;
    if (v->softcap > 0) {
        for (size_t c = 0; c < n_q * n_k; c++)
            out->softcapped.data[c] = v->softcap * tanh(b->scaled.data[c] / v->softcap);
        if ((st = ref_check(out, v, ATTN_STEP_SOFTCAPPED, &out->softcapped, NULL)) != ATTN_OK)
            return st;
        x = out->softcapped.data;
    }
    for (size_t i = 0; i < n_q; i++)
        for (size_t j = 0; j < n_k; j++) {
            double m = x[i * n_k + j];
            if (p->bias != NULL)
                m += attn_at(p->bias, i, j);
            if (v->alibi) { /* |i + off − j|, positions inside the query's document */
                struct attn_doc d = attn_doc_of(v, n_q, n_k, i);
                long long dist = (long long)(i - d.q0) + d.off - ((long long)j - (long long)d.k0);
                m += -v->alibi_slope * (double)(dist < 0 ? -dist : dist);
            }
            b->masked.data[i * n_k + j] = attn_key_visible(p, v, n_q, n_k, i, j) ? m : -INFINITY;
        }
    if ((st = ref_check(out, v, ATTN_STEP_MASKED, &b->masked, p)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < n_q; i++)
        ref_softmax_row(out, v, i);
    if (p->skip_summary) {
        for (size_t i = 0; i < n_q; i++) {
            b->summary.row_sums[i] = b->summary.max_weight[i] = b->summary.entropy[i] = 0.0;
            if (!b->summary.fully_masked[i])
                b->summary.argmax[i] = 0;
        }
    }
    if ((st = ref_check(out, v, ATTN_STEP_WEIGHTS, &b->weights, NULL)) != ATTN_OK)
        return st;
    const struct attn_matrix *mix = &b->weights;
    if (v->dropout) {
        for (size_t c = 0; c < n_q * n_k; c++) {
            double u = attn_random_unit(v->dropout_seed, ATTN_RANDOM_STREAM_DROPOUT,
                                        v->dropout_first + (uint64_t)c);
            out->keep.data[c] = u < v->dropout_p ? 0.0 : 1.0;
            out->dropped.data[c] = out->keep.data[c] * b->weights.data[c] / (1.0 - v->dropout_p);
        }
        if ((st = ref_check(out, v, ATTN_STEP_DROPPED, &out->dropped, NULL)) != ATTN_OK)
            return st;
        mix = &out->dropped;
    }
    ref_product(mix, p->v, false, &b->output);
    return ref_check(out, v, ATTN_STEP_OUTPUT, &b->output, NULL);
}
