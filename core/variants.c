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
#include <float.h>
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
                         v->dropout || v->top_left || v->prefix > 0 || v->chunk > 0 ||
                         v->doc_q != NULL);
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

struct attn_doc attn_doc_of(const struct attn_variants *v, size_t n_q, size_t n_k, size_t i)
{
    if (v->doc_q == NULL)
        return (struct attn_doc){ 0, 0, n_k, (long long)n_k - (long long)n_q };
    /* The last document whose first query is <= i: starts ascend strictly. */
    size_t lo = 0, hi = v->n_docs;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->doc_q[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    size_t lq = v->doc_q[lo + 1] - v->doc_q[lo], lk = v->doc_k[lo + 1] - v->doc_k[lo];
    return (struct attn_doc){ v->doc_q[lo], v->doc_k[lo], lk, (long long)lk - (long long)lq };
}

/* floor(a / b) for b > 0, also for a negative a (C's division truncates). */
static long long attn_floor_div(long long a, long long b)
{
    long long q = a / b;
    return q * b > a ? q - 1 : q;
}

bool attn_key_visible(const struct attn_problem *p, const struct attn_variants *v, size_t n_q,
                      size_t n_k, size_t i, size_t j)
{
    const struct attn_mask *m = &p->mask;
    if (m->kind == ATTN_MASK_CELLS && m->allow[(m->rows == 1 ? 0 : i) * n_k + j] == 0)
        return false;
    struct attn_doc d = attn_doc_of(v, n_q, n_k, i);
    if (j < d.k0 || j - d.k0 >= d.lk)
        return false;
    /* Positions inside the document, in wide signed arithmetic (sizes <= INT_MAX). */
    long long qi = (long long)(i - d.q0), kj = (long long)(j - d.k0), at = qi + d.off;
    bool exempt = kj < (long long)v->prefix;
    if (m->kind == ATTN_MASK_CAUSAL && !exempt && kj > (v->top_left ? qi : at))
        return false;
    if (v->window && kj >= (long long)v->sink_tokens) {
        if (v->has_left && kj - at < -(long long)v->left)
            return false;
        if (v->has_right && kj - at > (long long)v->right)
            return false;
    }
    return v->chunk == 0 || attn_floor_div(at, (long long)v->chunk) ==
                                attn_floor_div(kj, (long long)v->chunk);
}

/* Whether a document list of n_docs + 1 starts runs 0 < ... < n, each length >= 1. */
static bool attn_starts_ok(const size_t *starts, size_t n_docs, size_t n)
{
    if (starts[0] != 0 || starts[n_docs] != n)
        return false;
    for (size_t d = 0; d < n_docs; d++)
        if (starts[d + 1] <= starts[d])
            return false;
    return true;
}

bool attn_rules_ok(const struct attn_variants *v, size_t n_q, size_t n_k)
{
    if (v->prefix > n_k)
        return false;
    if (v->doc_q == NULL && v->doc_k == NULL)
        return true;
    return v->doc_q != NULL && v->doc_k != NULL && v->n_docs >= 1 &&
           attn_starts_ok(v->doc_q, v->n_docs, n_q) && attn_starts_ok(v->doc_k, v->n_docs, n_k);
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
void attn_rope_rotate(const struct attn_matrix *x, struct attn_matrix *out,
                      const struct attn_rope *rope, const double *cos_t, const double *sin_t)
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

enum attn_status attn_vtrace_select_rows(struct attn_vtrace *dst, const struct attn_vtrace *src,
                                         const size_t *rows, size_t n_rows, size_t n_q,
                                         size_t n_k, size_t d_k, const struct attn_variants *v)
{
    if (dst == NULL)
        return ATTN_EINVAL;
    memset(dst, 0, sizeof *dst);
    if (src == NULL || !attn_rows_in_range(rows, n_rows, n_q))
        return ATTN_EINVAL;
    enum attn_status st = attn_vtrace_alloc_steps(dst, n_rows, n_k, d_k, v);
    if (st != ATTN_OK)
        return st;
    attn_copy_rows(&dst->q_rope, &src->q_rope, rows, n_rows);
    attn_copy_rows(&dst->softcapped, &src->softcapped, rows, n_rows);
    attn_copy_rows(&dst->keep, &src->keep, rows, n_rows);
    attn_copy_rows(&dst->dropped, &src->dropped, rows, n_rows);
    /* the keys are the whole problem's: k_rope is copied whole */
    if (src->k_rope.data != NULL && dst->k_rope.data != NULL)
        for (size_t j = 0; j < n_k; j++)
            memcpy(dst->k_rope.data + j * dst->k_rope.stride,
                   src->k_rope.data + j * src->k_rope.stride, d_k * sizeof(double));
    if (src->sink_weight != NULL && dst->sink_weight != NULL)
        for (size_t r = 0; r < n_rows; r++)
            dst->sink_weight[r] = src->sink_weight[rows[r]];
    dst->fault_step = src->fault_step;
    return ATTN_OK;
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
    return attn_rules_ok(v, n_q, n_k) ? ATTN_OK : ATTN_EINVAL;
}

static void attn_zero(struct attn_matrix *m)
{
    if (m->data != NULL)
        memset(m->data, 0, m->rows * m->cols * sizeof(double));
}

enum attn_status attn_vtrace_plain(struct attn_vtrace *t, enum attn_status st)
{
    t->fault_step = st == ATTN_EOVERFLOW ? (int)t->base.fault.step : ATTN_STEP_NONE;
    return st;
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
    for (size_t i = 0; i < m->rows; i++) {
        struct attn_vrow r = { 0 };
        if (masking != NULL)
            r = attn_vrow_of(masking, v, m->rows, m->cols, i);
        for (size_t j = 0; j < m->cols; j++) {
            double x = attn_at(m, i, j);
            if (isfinite(x))
                continue;
            if (masking != NULL && x == -INFINITY && !attn_vrow_sees(&r, j))
                continue;
            return attn_vtrace_fault(t, v, step, i, j);
        }
    }
    return ATTN_OK;
}

/* ---- one row of each pass, shared by the blocked fast path and the pass-by-pass one ---- */

/* Finite, as one comparison (NaN compares false). */
static inline bool attn_vfinite(double x)
{
    return fabs(x) <= DBL_MAX;
}

/* x within [lo, hi]: a key position, which may fall before the first key or past the last. */
static size_t attn_clamp(long long x, size_t lo, size_t hi)
{
    return x <= (long long)lo ? lo : x >= (long long)hi ? hi : (size_t)x;
}

/* Row i's view of the mask, window and sinks (internal.h): the streamed pass reads it too. */
struct attn_vrow attn_vrow_of(const struct attn_problem *p, const struct attn_variants *v,
                              size_t n_q, size_t n_k, size_t i)
{
    struct attn_doc d = attn_doc_of(v, n_q, n_k, i);
    long long k0 = (long long)d.k0, qi = (long long)(i - d.q0), at = k0 + qi + d.off;
    long long begin = k0, end = k0 + (long long)d.lk; /* the document's keys */
    if (v->chunk > 0) { /* the chunk of key positions the query's position falls in */
        long long c = (long long)v->chunk, first = k0 + attn_floor_div(at - k0, c) * c;
        begin = first > begin ? first : begin;
        end = first + c < end ? first + c : end;
    }
    size_t b = attn_clamp(begin, 0, n_k), e = attn_clamp(end, b, n_k);
    struct attn_vrow r = { b, b, b, e, n_k, (double)at, NULL };
    if (p->mask.kind == ATTN_MASK_CELLS)
        r.allow = p->mask.allow + (p->mask.rows == 1 ? 0 : i) * n_k;
    if (p->mask.kind == ATTN_MASK_CAUSAL) { /* up to the last key seen, or the prefix's end */
        long long last = v->top_left ? k0 + qi : at, open = k0 + (long long)v->prefix;
        r.causal_end = attn_clamp(last + 1 > open ? last + 1 : open, 0, n_k);
    }
    if (v->window) {
        long long lo = v->has_left ? at - (long long)v->left : begin;
        long long hi = v->has_right ? at + (long long)v->right + 1 : end;
        r.from = attn_clamp(lo, b, e);
        r.to = attn_clamp(hi, r.from, e);
        r.sinks = attn_clamp(k0 + (long long)v->sink_tokens, b, e);
    }
    return r;
}

/* masked row = x + bias − m·|i + off − j|, −inf where the row may not see j; false if a
 * visible cell is not finite. */
static bool attn_row_vmask(const double *x, const double *b, double *m, size_t n,
                           const struct attn_vrow *r, const struct attn_variants *v)
{
    bool ok = true;
    for (size_t j = 0; j < n; j++) {
        if (!attn_vrow_sees(r, j)) {
            m[j] = -INFINITY;
            continue;
        }
        double y = b != NULL ? x[j] + b[j] : x[j];
        if (v->alibi)
            y -= v->alibi_slope * fabs(r->at - (double)j);
        m[j] = y;
        ok &= attn_vfinite(y);
    }
    return ok;
}

/* A row's argmax, or none when every weight is 0: a sink logit far above the row's
 * scores took the whole weight, and key 0 (where the scan stops) did not win. */
static size_t attn_sink_argmax(const struct attn_row_facts *f)
{
    return f->max_weight > 0 ? f->argmax : ATTN_NO_INDEX;
}

/*
 * Row i's statistics (attention.h): the max subtracted, the sum divided by, their
 * log-sum-exp. A fully masked row has no score: with a sink its softmax is the sink's
 * alone (max z, sum e^0 = 1), without one -inf, 0, -inf.
 */
static void attn_vrow_stats(struct attn_summary *s, const struct attn_variants *v, size_t i,
                            bool blocked, double max, double sum)
{
    if (blocked) {
        max = v->sink ? v->sink_logit : -INFINITY;
        sum = v->sink ? 1.0 : 0.0;
    }
    s->row_max[i] = max;
    s->row_sum[i] = sum;
    s->lse[i] = sum > 0 ? max + log(sum) : -INFINITY;
}

/*
 * Softmax of row i of masked into weights, the sink logit z (when there is one) taking
 * part in the max and the sum but getting no column: the row's weights then sum to
 * 1 − sink_weight. A row with every key blocked has weights 0, and its whole weight goes
 * to the sink when there is one. Summarized unless skip_summary.
 */
static bool attn_row_vsoftmax(struct attn_vtrace *t, const struct attn_problem *p,
                              const struct attn_variants *v, size_t i)
{
    struct attn_trace *b = &t->base;
    size_t n = b->n_k;
    const double *x = b->masked.data + i * n;
    double *w = b->weights.data + i * n;
    double max = attn_row_max(x, n);
    bool blocked = max == -INFINITY;
    b->summary.fully_masked[i] = blocked;
    if (blocked) {
        memset(w, 0, n * sizeof *w);
        if (v->sink)
            t->sink_weight[i] = 1.0;
        b->summary.argmax[i] = ATTN_NO_INDEX;
        b->summary.row_sums[i] = b->summary.max_weight[i] = b->summary.entropy[i] = 0;
        attn_vrow_stats(&b->summary, v, i, true, max, 0.0);
        return true;
    }
    /* The first key of the max score, found before exp (masked and weights may be one
     * buffer); max is one of x's cells, the bound only keeps reads in the row. */
    size_t top = p->skip_summary ? 0 : attn_row_first_of(x, n, max);
    top = top < n ? top : 0;
    if (v->sink && v->sink_logit > max)
        max = v->sink_logit;
    double sum = attn_row_exp(x, max, w, n), sink = 0.0;
    if (v->sink) {
        sink = exp(v->sink_logit - max);
        sum += sink;
    }
    attn_vrow_stats(&b->summary, v, i, false, max, sum);
    bool finite = attn_row_divide(w, n, sum);
    if (v->sink)
        t->sink_weight[i] = sink / sum;
    /* The summary's scans assume finite weights; a row that is not is a fault the
     * caller reports (by_steps' check of the weights), with no summary. */
    if (p->skip_summary || !finite)
        return finite;
    struct attn_row_facts f = attn_row_facts_of(w, n);
    f.argmax = top;
    f.max_weight = w[top];
    b->summary.row_sums[i] = f.sum;
    b->summary.argmax[i] = attn_sink_argmax(&f);
    b->summary.max_weight[i] = f.max_weight;
    b->summary.entropy[i] = f.entropy;
    return true;
}

/* keep = 1 where the generator's u >= p; dropped = weights · keep / (1 − p), row i. */
static void attn_row_dropout(struct attn_vtrace *t, const struct attn_variants *v, size_t i)
{
    size_t n = t->base.n_k;
    double scale = 1.0 / (1.0 - v->dropout_p), *keep = t->keep.data + i * n;
    const double *w = t->base.weights.data + i * n;
    double *d = t->dropped.data + i * n;
    attn_random_units(v->dropout_seed, ATTN_RANDOM_STREAM_DROPOUT,
                      v->dropout_first + (uint64_t)i * n, n, keep);
    for (size_t j = 0; j < n; j++) {
        keep[j] = keep[j] >= v->dropout_p ? 1.0 : 0.0;
        d[j] = w[j] * keep[j] * scale;
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

/* Zeroes the cells of rows [from, to) of m that no row sees (band_only). */
static void attn_zero_hidden(struct attn_matrix *m, const struct attn_problem *p,
                             const struct attn_variants *v, size_t n_q, size_t from, size_t to)
{
    struct attn_problem open = *p;
    open.mask.kind = ATTN_MASK_NONE; /* the window alone decides what is computed */
    for (size_t i = from; i < to; i++) {
        struct attn_vrow r = attn_vrow_of(&open, v, n_q, m->cols, i);
        double *row = m->data + i * m->stride;
        for (size_t j = 0; j < m->cols; j++)
            if (!attn_vrow_sees(&r, j))
                row[j] = 0.0;
    }
}

/* ---- the pass-by-pass path: the definition of which cell is the first fault ---- */

static enum attn_status attn_variants_by_steps(struct attn_vtrace *out,
                                               const struct attn_problem *p,
                                               const struct attn_variants *v,
                                               const struct attn_matrix *q,
                                               const struct attn_matrix *k)
{
    enum attn_status st;
    struct attn_trace *b = &out->base;
    size_t n_q = b->n_q, n_k = b->n_k;
    const struct attn_matrix *x = &b->scaled;
    attn_trace_reset(b);
    attn_gemm(q, k, true, &b->scores);
    if (attn_variants_banded(v))
        attn_zero_hidden(&b->scores, p, v, n_q, 0, n_q);
    if ((st = attn_vcheck(out, v, ATTN_STEP_SCORES, &b->scores, NULL)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < n_q; i++)
        (void)attn_row_scale(b->scores.data + i * n_k, b->scaled.data + i * n_k, n_k, p->scale);
    if ((st = attn_vcheck(out, v, ATTN_STEP_SCALED, &b->scaled, NULL)) != ATTN_OK)
        return st;
    if (v->softcap > 0) {
        for (size_t i = 0; i < n_q; i++)
            attn_row_softcap(b->scaled.data + i * n_k, out->softcapped.data + i * n_k, n_k,
                             v->softcap);
        x = &out->softcapped;
        if ((st = attn_vcheck(out, v, ATTN_STEP_SOFTCAPPED, x, NULL)) != ATTN_OK)
            return st;
    }
    for (size_t i = 0; i < n_q; i++) {
        struct attn_vrow r = attn_vrow_of(p, v, n_q, n_k, i);
        const double *bias = p->bias != NULL ? p->bias->data + i * p->bias->stride : NULL;
        (void)attn_row_vmask(x->data + i * n_k, bias, b->masked.data + i * n_k, n_k, &r, v);
    }
    if ((st = attn_vcheck(out, v, ATTN_STEP_MASKED, &b->masked, p)) != ATTN_OK)
        return st;
    for (size_t i = 0; i < n_q; i++) {
        (void)attn_row_vsoftmax(out, p, v, i); /* the check below names a bad weight */
        b->summary.n_fully_masked += b->summary.fully_masked[i];
    }
    if ((st = attn_vcheck(out, v, ATTN_STEP_WEIGHTS, &b->weights, NULL)) != ATTN_OK)
        return st;
    const struct attn_matrix *mix = &b->weights;
    if (v->dropout) {
        for (size_t i = 0; i < n_q; i++)
            attn_row_dropout(out, v, i);
        mix = &out->dropped;
        if ((st = attn_vcheck(out, v, ATTN_STEP_DROPPED, mix, NULL)) != ATTN_OK)
            return st;
    }
    attn_gemm(mix, p->v, false, &b->output);
    return attn_vcheck(out, v, ATTN_STEP_OUTPUT, &b->output, NULL);
}

/* ---- band_only: a row's work on the keys its window shows ---- */

/* The columns row i computes with band_only: [a[0], b[0]) and [a[1], b[1]) (sinks first). */
struct attn_band {
    size_t a[2], b[2];
};

static struct attn_band attn_band_of(const struct attn_problem *p, const struct attn_variants *v,
                                     size_t n_q, size_t n_k, size_t i)
{
    struct attn_problem open = *p;
    open.mask.kind = ATTN_MASK_NONE; /* the window alone decides what is computed */
    struct attn_vrow r = attn_vrow_of(&open, v, n_q, n_k, i);
    struct attn_band band = { { r.sinks_from, r.from }, { r.sinks, r.to } };
    if (r.sinks > r.sinks_from && r.sinks >= r.from) { /* the sinks reach the window: one range */
        band.b[1] = r.sinks > r.to ? r.sinks : r.to;
        band.a[1] = r.sinks_from;
        band.b[0] = r.sinks_from;
    }
    return band;
}

/* x[j] = value outside the band's ranges of a row of n. */
static void attn_fill_outside(double *x, size_t n, const struct attn_band *band, double value)
{
    size_t at = 0;
    for (int k = 0; k < 2; k++) {
        for (size_t j = at; j < band->a[k]; j++)
            x[j] = value;
        if (band->b[k] > at)
            at = band->b[k];
    }
    for (size_t j = at; j < n; j++)
        x[j] = value;
}

/* Facts of two ranges of a row, combined as attn_row_facts_of would over the whole row
 * (the other weights are 0: they add nothing); argmax is `top`, the first key of the
 * max score, found before exp. */
static struct attn_row_facts attn_band_facts(const double *w, const struct attn_band *band,
                                             size_t top)
{
    struct attn_row_facts all = { 0, w[top], top, 0 };
    for (int k = 0; k < 2; k++) {
        if (band->b[k] <= band->a[k])
            continue;
        struct attn_row_facts f = attn_row_facts_of(w + band->a[k], band->b[k] - band->a[k]);
        all.sum += f.sum;
        all.entropy += f.entropy;
    }
    return all;
}

/* The first key of the band's ranges holding max (the row's max score), or 0. */
static size_t attn_band_first_of(const double *m, const struct attn_band *band, double max)
{
    for (int k = 0; k < 2; k++) {
        size_t a = band->a[k], len = band->b[k] > a ? band->b[k] - a : 0;
        size_t j = attn_row_first_of(m + a, len, max);
        if (j < len)
            return a + j;
    }
    return 0;
}

/*
 * Every step of row i on its band: scores (already multiplied there), scaled,
 * softcapped, masked, weights and the dropout, the cells outside the band written as
 * not computed (0; −inf in masked; weight 0). False if a check fails.
 */
static bool attn_row_band(struct attn_vtrace *out, const struct attn_problem *p,
                          const struct attn_variants *v, size_t i)
{
    struct attn_trace *b = &out->base;
    size_t n_q = b->n_q, n = b->n_k;
    struct attn_band band = attn_band_of(p, v, n_q, n, i);
    struct attn_vrow r = attn_vrow_of(p, v, n_q, n, i);
    double *s = b->scores.data + i * n, *x = b->scaled.data + i * n;
    double *m = b->masked.data + i * n, *w = b->weights.data + i * n;
    const double *bias = p->bias != NULL ? p->bias->data + i * p->bias->stride : NULL;
    double max = -INFINITY;
    bool ok = true;
    attn_fill_outside(s, n, &band, 0.0);
    attn_fill_outside(x, n, &band, 0.0);
    attn_fill_outside(m, n, &band, -INFINITY);
    attn_fill_outside(w, n, &band, 0.0);
    if (v->softcap > 0)
        attn_fill_outside(out->softcapped.data + i * n, n, &band, 0.0);
    for (int k = 0; k < 2; k++) {
        size_t a = band.a[k], len = band.b[k] > a ? band.b[k] - a : 0;
        if (len == 0)
            continue;
        const double *y = x + a;
        ok &= attn_row_scale(s + a, x + a, len, p->scale);
        if (v->softcap > 0) {
            attn_row_softcap(x + a, out->softcapped.data + i * n + a, len, v->softcap);
            y = out->softcapped.data + i * n + a;
        }
        struct attn_vrow shifted = r; /* the same rules, seen from column a */
        shifted.sinks_from = r.sinks_from > a ? r.sinks_from - a : 0;
        shifted.sinks = r.sinks > a ? r.sinks - a : 0;
        shifted.from = r.from > a ? r.from - a : 0;
        shifted.to = r.to > a ? r.to - a : 0;
        shifted.causal_end = r.causal_end > a ? r.causal_end - a : 0;
        shifted.allow = r.allow != NULL ? r.allow + a : NULL;
        shifted.at = r.at - (double)a;
        ok &= attn_row_vmask(y, bias != NULL ? bias + a : NULL, m + a, len, &shifted, v);
        double row_max = attn_row_max(m + a, len);
        max = row_max > max ? row_max : max;
    }
    /* A non-finite cell stops the row before its softmax: exp, the sum and the
     * summary's scans assume finite rows (an +inf max made every weight NaN). The
     * caller reruns step by step, which names the cell. */
    if (!ok)
        return false;
    bool blocked = max == -INFINITY;
    b->summary.fully_masked[i] = blocked;
    if (blocked) {
        if (v->sink)
            out->sink_weight[i] = 1.0;
        b->summary.argmax[i] = ATTN_NO_INDEX;
        b->summary.row_sums[i] = b->summary.max_weight[i] = b->summary.entropy[i] = 0;
        attn_vrow_stats(&b->summary, v, i, true, max, 0.0);
    } else {
        size_t top = p->skip_summary ? 0 : attn_band_first_of(m, &band, max);
        if (v->sink && v->sink_logit > max)
            max = v->sink_logit;
        double sum = v->sink ? exp(v->sink_logit - max) : 0.0, sink = sum;
        for (int k = 0; k < 2; k++)
            if (band.b[k] > band.a[k])
                sum += attn_row_exp(m + band.a[k], max, w + band.a[k], band.b[k] - band.a[k]);
        attn_vrow_stats(&b->summary, v, i, false, max, sum);
        for (int k = 0; k < 2; k++)
            if (band.b[k] > band.a[k])
                ok &= attn_row_divide(w + band.a[k], band.b[k] - band.a[k], sum);
        if (v->sink)
            out->sink_weight[i] = sink / sum;
        if (!ok)
            return false;
        if (!p->skip_summary) {
            struct attn_row_facts f = attn_band_facts(w, &band, top);
            b->summary.row_sums[i] = f.sum;
            b->summary.argmax[i] = attn_sink_argmax(&f);
            b->summary.max_weight[i] = f.max_weight;
            b->summary.entropy[i] = f.entropy;
        }
    }
    if (v->dropout)
        attn_row_dropout(out, v, i);
    return ok;
}

/* ---- the fast path: blocks of rows through every step while they are in cache ---- */

/* attn_forward's row blocks: with every variant off, the very calls it makes (its bits). */
#define ATTN_VBLOCK ATTN_ROW_BLOCK

/* Columns [lo, hi) of rows [from, to): S = Q_rows · K_colsᵀ into scores (in place). */
static void attn_scores_cols(struct attn_trace *b, const struct attn_matrix *q,
                             const struct attn_matrix *k, size_t from, size_t to, size_t lo,
                             size_t hi)
{
    if (hi <= lo)
        return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)(to - from), (blasint)(hi - lo),
                (blasint)q->cols, 1.0, q->data + from * q->stride, (blasint)q->stride,
                k->data + lo * k->stride, (blasint)k->stride, 0.0,
                b->scores.data + from * b->n_k + lo, (blasint)b->n_k);
}

/* out rows [from, to) (+)= A's columns [lo, hi) · V's rows [lo, hi). */
static void attn_output_cols(struct attn_trace *b, const struct attn_matrix *a,
                             const struct attn_matrix *v, size_t from, size_t to, size_t lo,
                             size_t hi, double beta)
{
    if (hi <= lo)
        return;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)(to - from),
                (blasint)v->cols, (blasint)(hi - lo), 1.0, a->data + from * a->stride + lo,
                (blasint)a->stride, v->data + lo * v->stride, (blasint)v->stride, beta,
                b->output.data + from * b->output.stride, (blasint)b->output.stride);
}

/*
 * The columns some row of [from, to) computes with band_only: the hull of the rows'
 * sink tokens and the hull of their windows (documents, chunks), one range when the
 * two meet, the first range empty then.
 */
static struct attn_band attn_block_band(const struct attn_problem *p,
                                        const struct attn_variants *v, size_t n_q, size_t n,
                                        size_t from, size_t to)
{
    struct attn_band hull = { { n, n }, { 0, 0 } };
    for (size_t i = from; i < to; i++) {
        struct attn_band r = attn_band_of(p, v, n_q, n, i);
        for (int k = 0; k < 2; k++)
            if (r.b[k] > r.a[k]) {
                hull.a[k] = r.a[k] < hull.a[k] ? r.a[k] : hull.a[k];
                hull.b[k] = r.b[k] > hull.b[k] ? r.b[k] : hull.b[k];
            }
    }
    for (int k = 0; k < 2; k++)
        if (hull.b[k] <= hull.a[k])
            hull.a[k] = hull.b[k] = 0;
    bool both = hull.b[0] > hull.a[0] && hull.b[1] > hull.a[1];
    if (both && hull.a[0] <= hull.b[1] && hull.a[1] <= hull.b[0]) { /* they meet */
        hull.a[1] = hull.a[0] < hull.a[1] ? hull.a[0] : hull.a[1];
        hull.b[1] = hull.b[0] > hull.b[1] ? hull.b[0] : hull.b[1];
        hull.a[0] = hull.b[0] = 0;
    }
    return hull;
}

/*
 * Every step for rows [from, to). With band_only, only the columns some row of the block
 * sees through the window (its band and the sink tokens) are multiplied; the others hold
 * 0 in scores, scaled and softcapped and weigh 0. False when a check fails: the caller
 * then reruns step by step, which names the first fault as the contract orders them.
 */
static bool attn_variants_rows(struct attn_vtrace *out, const struct attn_problem *p,
                               const struct attn_variants *v, const struct attn_matrix *q,
                               const struct attn_matrix *k, size_t from, size_t to)
{
    struct attn_trace *b = &out->base;
    size_t n_q = b->n_q, n = b->n_k;
    struct attn_band cols = { { 0, 0 }, { 0, n } }; /* the columns computed */
    bool banded = attn_variants_banded(v);
    if (banded)
        cols = attn_block_band(p, v, n_q, n, from, to);
    attn_scores_cols(b, q, k, from, to, cols.a[0], cols.b[0]);
    attn_scores_cols(b, q, k, from, to, cols.a[1], cols.b[1]);
    bool ok = true;
    for (size_t i = from; banded && i < to && ok; i++)
        ok &= attn_row_band(out, p, v, i);
    for (size_t i = from; !banded && i < to && ok; i++) {
        double *s = b->scores.data + i * n, *x = b->scaled.data + i * n;
        ok &= attn_row_scale(s, x, n, p->scale);
        if (v->softcap > 0) {
            attn_row_softcap(x, out->softcapped.data + i * n, n, v->softcap);
            x = out->softcapped.data + i * n;
        }
        struct attn_vrow r = attn_vrow_of(p, v, n_q, n, i);
        const double *bias = p->bias != NULL ? p->bias->data + i * p->bias->stride : NULL;
        ok &= attn_row_vmask(x, bias, b->masked.data + i * n, n, &r, v);
        /* Overflow is found before any row statistic: softmax and its summary assume a
         * finite row (an +inf in it made every weight NaN and the argmax scan run off
         * the row's end). by_steps then names the first fault. */
        if (!ok || !attn_row_vsoftmax(out, p, v, i))
            return false;
        if (v->dropout)
            attn_row_dropout(out, v, i);
    }
    if (!ok)
        return false;
    const struct attn_matrix *mix = v->dropout ? &out->dropped : &b->weights;
    if (banded) {
        bool first = cols.b[0] > cols.a[0];
        attn_output_cols(b, mix, p->v, from, to, cols.a[0], cols.b[0], 0.0);
        attn_output_cols(b, mix, p->v, from, to, cols.a[1], cols.b[1], first ? 1.0 : 0.0);
        if (!first && cols.b[1] <= cols.a[1]) /* nothing seen: every row is fully masked */
            for (size_t i = from; i < to; i++)
                memset(b->output.data + i * b->output.stride, 0, b->output.cols * sizeof(double));
    } else {
        attn_output_cols(b, mix, p->v, from, to, 0, n, 0.0);
    }
    bool finite = true;
    for (size_t i = from; i < to; i++)
        for (size_t j = 0; j < b->output.cols; j++)
            finite &= attn_vfinite(b->output.data[i * b->output.stride + j]);
    return finite;
}

enum attn_status attn_forward_variants(struct attn_vtrace *out, const struct attn_problem *p,
                                       const struct attn_variants *v)
{
    if (out == NULL)
        return ATTN_EINVAL;
    if (!attn_variants_any(v)) /* the plain pass; its fault's step is the vtrace's too */
        return attn_vtrace_plain(out, attn_forward(&out->base, p));
    enum attn_status st = attn_check_problem(&out->base, p);
    if (st != ATTN_OK || (st = attn_check_variants(out, p, v)) != ATTN_OK)
        return st;
    struct attn_trace *b = &out->base;
    const struct attn_matrix *q = p->q, *k = p->k;
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
    for (size_t from = 0; from < b->n_q; from += ATTN_VBLOCK) {
        size_t to = b->n_q - from > ATTN_VBLOCK ? from + ATTN_VBLOCK : b->n_q;
        if (!attn_variants_rows(out, p, v, q, k, from, to))
            return attn_variants_by_steps(out, p, v, q, k);
    }
    for (size_t i = 0; i < b->n_q; i++)
        b->summary.n_fully_masked += b->summary.fully_masked[i];
    return ATTN_OK;
}
