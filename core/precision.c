/*
 * core/precision.c — attention in float32, float16 and bfloat16 by fixed rules (see
 * precision.h).
 */
#include "precision.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "random.h"
#include "variants.h"

/* The float32 sums' clones (product_f32): GCC on x86-64 only, and not under
 * ThreadSanitizer, whose runtime is not set up yet when a clone's resolver runs at load
 * time (softmax_row.c has the same guard). Without them fmaf is libm's: the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(ATTN_NO_CLONES)
#define ATTN_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define ATTN_FMA_CLONES
#endif

/* A binary format: significand bits (the leading one counted) and exponent range. */
struct layout {
    int bits;      /* 24, 11, 8 */
    int emin;      /* the smallest normal's exponent: -126, -14, -126 */
    double max;    /* the largest finite value */
};

static const struct layout layouts[ATTN_FORMATS] = {
    [ATTN_FLOAT32] = { 24, -126, 0x1.fffffep127 },
    [ATTN_FLOAT16] = { 11, -14, 65504.0 },
    [ATTN_BFLOAT16] = { 8, -126, 0x1.fep127 },
};

static const char *const names[ATTN_FORMATS] = {
    [ATTN_FLOAT64] = "float64", [ATTN_FLOAT32] = "float32",
    [ATTN_FLOAT16] = "float16", [ATTN_BFLOAT16] = "bfloat16",
};

const char *attn_format_name(enum attn_format f)
{
    return (unsigned)f < ATTN_FORMATS ? names[f] : "";
}

double attn_format_max(enum attn_format f)
{
    if ((unsigned)f >= ATTN_FORMATS || f == ATTN_FLOAT64)
        return 0x1.fffffffffffffp1023;
    return layouts[f].max;
}

/*
 * The definition: |x| scaled by a power of two (exact) so that the format's last
 * significand bit is the units digit, nearbyint (to nearest, ties to even, the default
 * mode attnd never changes), scaled back. Below the smallest normal the units digit
 * stays the smallest subnormal, which keeps subnormals.
 */
double attn_format_round_slow(double x, enum attn_format f)
{
    if ((unsigned)f >= ATTN_FORMATS || f == ATTN_FLOAT64 || !isfinite(x) || x == 0)
        return x;
    const struct layout *l = &layouts[f];
    int e;
    frexp(x, &e); /* |x| in [2^(e-1), 2^e) */
    int exponent = e - 1 < l->emin ? l->emin : e - 1;
    int unit = exponent - (l->bits - 1);
    double r = ldexp(nearbyint(ldexp(x, -unit)), unit);
    return fabs(r) > l->max ? copysign(INFINITY, x) : r;
}

/*
 * The same on the double's bits where the result is normal: add half a unit of the
 * format's last place (less one, plus the kept last bit: ties go to even) and clear the
 * bits below it; a carry into the exponent is the next power of two, as it should be.
 * Results below the smallest normal take the definition.
 */
double attn_format_round(double x, enum attn_format f)
{
    if (f == ATTN_FLOAT32)
        return (double)(float)x; /* C's conversion rounds once, to nearest even */
    if ((unsigned)f >= ATTN_FORMATS || f == ATTN_FLOAT64)
        return x;
    const struct layout *l = &layouts[f];
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    int biased = (int)((u >> 52) & 0x7ff);
    if (biased == 0x7ff)
        return x; /* ±inf, NaN */
    if (biased - 1023 < l->emin)
        return attn_format_round_slow(x, f);
    int drop = 53 - l->bits;
    uint64_t sign = u & 0x8000000000000000ull, mag = u & ~0x8000000000000000ull;
    mag += ((uint64_t)1 << (drop - 1)) - 1 + ((mag >> drop) & 1);
    mag &= ~(((uint64_t)1 << drop) - 1);
    uint64_t r = sign | mag;
    double out;
    memcpy(&out, &r, sizeof out);
    return fabs(out) > l->max ? copysign(INFINITY, x) : out;
}

/*
 * acc + a·b rounded once to f. a·b is exact in a double (at most 24 + 24 significand
 * bits); the sum is rounded to odd in double (the nearest, moved one place toward the
 * exact value when inexact and even), and a double rounded to odd then rounded to a
 * format of at most 51 bits is the exact value rounded once (Boldo and Melquiond,
 * "Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd",
 * IEEE TC 2008). float32 takes fmaf, which is that by definition.
 */
double attn_format_fma(double a, double b, double acc, enum attn_format f)
{
    if (f == ATTN_FLOAT32)
        return fmaf((float)a, (float)b, (float)acc);
    double p = a * b, s = p + acc;
    if (!isfinite(s) || f == ATTN_FLOAT64)
        return attn_format_round(s, f);
    double bp = s - acc, err = (p - bp) + (acc - (s - bp)); /* Knuth's TwoSum: exact */
    if (err != 0) {
        uint64_t u;
        memcpy(&u, &s, sizeof u);
        if ((u & 1) == 0)
            s = nextafter(s, err > 0 ? INFINITY : -INFINITY);
    }
    return attn_format_round(s, f);
}

bool attn_precision_valid(const struct attn_precision *p)
{
    bool format = p->format == ATTN_FLOAT32 || p->format == ATTN_FLOAT16 ||
                  p->format == ATTN_BFLOAT16;
    return format && (p->accumulate == ATTN_FLOAT32 || p->accumulate == p->format);
}

/* ---- the forward pass ---- */

/* A matrix's cells rounded to f, row by row, into a contiguous copy (rows × cols). */
static void round_copy(double *dst, const struct attn_matrix *m, enum attn_format f)
{
    for (size_t i = 0; i < m->rows; i++)
        for (size_t j = 0; j < m->cols; j++)
            dst[i * m->cols + j] = attn_format_round(attn_at(m, i, j), f);
}

/* c (rows × cols) = a (rows × inner) · b, b read as (inner × cols) at b[t·bs_t + j·bs_j],
 * each sum in index order with every partial sum rounded once to acc. */
static void product(double *c, const double *a, size_t rows, size_t inner, const double *b,
                    size_t bs_t, size_t bs_j, size_t cols, enum attn_format acc)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double s = 0;
            for (size_t t = 0; t < inner; t++)
                s = attn_format_fma(a[i * inner + t], b[t * bs_t + j * bs_j], s, acc);
            c[i * cols + j] = s;
        }
}

/*
 * The same sums in a float32 accumulator, as floats (every format here is exact in a
 * float): c (rows × cols) += a (rows × inner) · b (inner × cols), lane by lane, each lane
 * one cell whose partial sums go in index order through fmaf, rounded once each. With
 * FMA hardware (the fma clone, chosen at run time) eight lanes a step; the default
 * clone calls libm's fmaf, the same value.
 */
ATTN_FMA_CLONES
static void product_f32(float *restrict c, const float *restrict a, size_t rows, size_t inner,
                        const float *restrict b, size_t cols)
{
    for (size_t i = 0; i < rows; i++) {
        float *restrict ci = c + i * cols;
        for (size_t j = 0; j < cols; j++)
            ci[j] = 0;
        for (size_t t = 0; t < inner; t++) {
            const float x = a[i * inner + t], *restrict bt = b + t * cols;
            for (size_t j = 0; j < cols; j++)
                ci[j] = fmaf(x, bt[j], ci[j]);
        }
    }
}

/* Exact both ways: every value held here is a float. */
static void to_floats(float *dst, const double *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)src[i];
}

static void to_doubles(double *dst, const float *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

struct held {
    double *q, *k, *v, *bias, *weights; /* in the format; weights (n_q, n_k) */
    float *fq, *fkt, *fv, *fw, *fout;   /* float32 sums: q, kᵀ, v, weights, a result */
    void *block, *floats;
};

static enum attn_status held_alloc(struct held *h, const struct attn_problem *p, size_t n_q,
                                   size_t n_k, bool floats)
{
    size_t d_k = p->q->cols, d_v = p->v->cols;
    size_t cells = n_q * d_k + n_k * d_k + n_k * d_v + n_q * n_k + (p->bias ? n_q * n_k : 0);
    size_t result = n_q * (n_k > d_v ? n_k : d_v);
    memset(h, 0, sizeof *h);
    h->block = malloc(cells * sizeof(double));
    if (floats)
        h->floats = malloc((n_q * d_k + n_k * d_k + n_k * d_v + n_q * n_k + result) * sizeof(float));
    if (h->block == NULL || (floats && h->floats == NULL)) {
        free(h->block);
        free(h->floats);
        return ATTN_ENOMEM;
    }
    if (floats) {
        h->fq = h->floats;
        h->fkt = h->fq + n_q * d_k;
        h->fv = h->fkt + n_k * d_k;
        h->fw = h->fv + n_k * d_v;
        h->fout = h->fw + n_q * n_k;
    }
    h->q = h->block;
    h->k = h->q + n_q * d_k;
    h->v = h->k + n_k * d_k;
    h->weights = h->v + n_k * d_v;
    h->bias = p->bias ? h->weights + n_q * n_k : NULL;
    return ATTN_OK;
}

/* Row i's softmax by the rules: the max (exact), each visible cell's shift and exp
 * rounded to acc, their sum in key order, each weight rounded to acc and then to the
 * format; the row statistics in acc. */
static void softmax_row(struct attn_trace *t, struct held *h, size_t i,
                        const struct attn_vrow *r, const struct attn_precision *prec,
                        const double *sink, double *sink_weight)
{
    size_t n_k = t->n_k;
    enum attn_format acc = prec->accumulate;
    const double *m = t->masked.data + i * n_k;
    double *w = t->weights.data + i * n_k, *wf = h->weights + i * n_k;
    double max = -INFINITY;
    bool any = false;
    for (size_t j = 0; j < n_k; j++)
        if (attn_vrow_sees(r, j)) {
            any = true;
            max = m[j] > max || isnan(m[j]) ? m[j] : max;
        }
    if (sink != NULL) /* the sink logit is one more score in the max and the sum */
        max = *sink > max || isnan(*sink) ? *sink : max;
    struct attn_summary *s = &t->summary;
    if (!any) {
        memset(w, 0, n_k * sizeof *w);
        memset(wf, 0, n_k * sizeof *wf);
        s->fully_masked[i] = 1;
        s->n_fully_masked++;
        s->row_max[i] = -INFINITY;
        s->lse[i] = -INFINITY;
        s->argmax[i] = ATTN_NO_INDEX;
        if (sink == NULL)
            return;
    }
    double sum = 0;
    for (size_t j = 0; j < n_k; j++) {
        w[j] = 0;
        if (!attn_vrow_sees(r, j))
            continue;
        double e = attn_format_round(exp(attn_format_round(m[j] - max, acc)), acc);
        w[j] = e;
        sum = attn_format_round(sum + e, acc);
    }
    double e_sink = 0; /* the sink's term, added last */
    if (sink != NULL) {
        e_sink = attn_format_round(exp(attn_format_round(*sink - max, acc)), acc);
        sum = attn_format_round(sum + e_sink, acc);
        *sink_weight = attn_format_round(e_sink / sum, acc);
    }
    s->row_max[i] = max;
    s->row_sum[i] = sum;
    s->lse[i] = attn_format_round(max + log(sum), acc);
    for (size_t j = 0; j < n_k; j++) { /* a blocked key's weight is 0, whatever the sum */
        if (attn_vrow_sees(r, j))
            w[j] = attn_format_round(attn_format_round(w[j] / sum, acc), prec->format);
        wf[j] = w[j];
    }
}

/*
 * Row i's dropout: keep as attn_forward_variants draws it (float64's rule: u >= p), and
 * dropped = weights · keep · 1/(1 − p), that factor rounded to the accumulator first, the
 * product in float64 rounded once to the accumulator and then to the format: what
 * multiplies V in its place.
 */
static void dropout_row(struct attn_vtrace *vt, struct held *h, const struct attn_variants *v,
                        size_t i, const struct attn_precision *prec)
{
    size_t n = vt->base.n_k;
    double scale = attn_format_round(1.0 / (1.0 - v->dropout_p), prec->accumulate);
    double *keep = vt->keep.data + i * n, *d = vt->dropped.data + i * n, *hw = h->weights + i * n;
    const double *w = vt->base.weights.data + i * n;
    attn_random_units(v->dropout_seed, ATTN_RANDOM_STREAM_DROPOUT, v->dropout_first + (uint64_t)i * n,
                      n, keep);
    for (size_t j = 0; j < n; j++) {
        keep[j] = keep[j] >= v->dropout_p ? 1.0 : 0.0;
        d[j] = attn_format_round(attn_format_round(w[j] * keep[j] * scale, prec->accumulate),
                                 prec->format);
        hw[j] = d[j];
    }
}

/* The summary's descriptive facts, in float64 from the weights as held. */
static void describe_row(struct attn_trace *t, size_t i)
{
    struct attn_summary *s = &t->summary;
    if (s->fully_masked[i])
        return;
    const double *w = t->weights.data + i * t->n_k, *m = t->masked.data + i * t->n_k;
    double total = 0, entropy = 0;
    size_t arg = ATTN_NO_INDEX;
    for (size_t j = 0; j < t->n_k; j++) {
        total += w[j];
        if (w[j] > 0)
            entropy -= w[j] * log(w[j]);
        if (m[j] == s->row_max[i] && arg == ATTN_NO_INDEX)
            arg = j;
    }
    s->row_sums[i] = total;
    s->argmax[i] = arg;
    s->max_weight[i] = arg == ATTN_NO_INDEX ? 0 : w[arg];
    s->entropy[i] = isfinite(total) ? entropy : NAN; /* no entropy of weights not finite */
}

/* The first non-finite cell of the steps in order; blocked cells of masked (−inf, as
 * they are in float64) do not count. */
static void find_fault(struct attn_trace *t, const struct attn_problem *p,
                       const struct attn_variants *v)
{
    const struct attn_matrix *steps[] = { &t->scores, &t->scaled, &t->masked, &t->weights,
                                          &t->output };
    for (size_t s = 0; s < 5; s++) {
        const struct attn_matrix *m = steps[s];
        for (size_t i = 0; i < m->rows; i++) {
            struct attn_vrow r = attn_vrow_of(p, v, t->n_q, t->n_k, i);
            for (size_t j = 0; j < m->cols; j++) {
                double x = attn_at(m, i, j);
                bool blocked = s == 2 && !attn_vrow_sees(&r, j);
                if (!isfinite(x) && !blocked) {
                    t->fault = (struct attn_fault){ (enum attn_step)(ATTN_STEP_SCORES + s), i, j };
                    return;
                }
            }
        }
    }
}

/* Whether every step has a buffer of its own (the softmax reads masked after it wrote
 * the weights). */
static bool all_kept(const struct attn_trace *t)
{
    return t->scores.data != t->scaled.data && t->scaled.data != t->masked.data &&
           t->masked.data != t->weights.data;
}

enum attn_status attn_forward_precision(struct attn_trace *out, const struct attn_problem *p,
                                        const struct attn_precision *prec)
{
    static const struct attn_variants none;
    return attn_forward_precision_variants(out, p, &none, prec);
}

enum attn_status attn_forward_precision_variants(struct attn_trace *out,
                                                 const struct attn_problem *p,
                                                 const struct attn_variants *v,
                                                 const struct attn_precision *prec)
{
    if (v->softcap != 0 || v->sink || v->rope != NULL || v->dropout) /* their steps: a vtrace */
        return ATTN_EINVAL;
    struct attn_vtrace vt = { .base = *out };
    enum attn_status st = attn_forward_precision_vtrace(&vt, p, v, prec);
    *out = vt.base;
    return st;
}

/* Whether v asks only for what this pass computes in the format: rope, a window, sink
 * tokens, the training masks (which keys a row sees), ALiBi (a term of masked), softcap and the sink logit;
 * and vt holds their steps. */
static bool variants_supported(const struct attn_vtrace *vt, const struct attn_variants *v)
{
    return !v->band_only && (!v->dropout || (vt->keep.data != NULL && vt->dropped.data != NULL)) &&
           (v->rope == NULL || (vt->q_rope.data != NULL && vt->k_rope.data != NULL)) &&
           (v->softcap == 0 || vt->softcapped.data != NULL) && (!v->sink || vt->sink_weight != NULL);
}

/* q (or k) as held, rotated in float64 into `rotated` and rounded to the format there,
 * and copied back: the product's operand is the rotated row in the format. */
static void rotate_held(double *held, size_t rows, size_t cols, struct attn_matrix *rotated,
                        const struct attn_rope *rope, const double *cos_t, const double *sin_t,
                        enum attn_format f)
{
    const struct attn_matrix x = attn_matrix_view(held, rows, cols);
    attn_rope_rotate(&x, rotated, rope, cos_t, sin_t);
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double *c = &rotated->data[i * rotated->stride + j];
            *c = attn_format_round(*c, f);
            held[i * cols + j] = *c;
        }
}

enum attn_status attn_forward_precision_vtrace(struct attn_vtrace *vt,
                                               const struct attn_problem *p,
                                               const struct attn_variants *v,
                                               const struct attn_precision *prec)
{
    struct attn_trace *out = &vt->base;
    if (attn_check_problem(out, p) != ATTN_OK || !attn_precision_valid(prec) || !all_kept(out) ||
        !variants_supported(vt, v) || !attn_rules_ok(v, out->n_q, out->n_k))
        return ATTN_EINVAL;
    size_t n_q = out->n_q, n_k = out->n_k, d_k = p->q->cols, d_v = out->d_v;
    enum attn_format f = prec->format, acc = prec->accumulate;
    bool floats = acc == ATTN_FLOAT32;
    struct held h;
    if (held_alloc(&h, p, n_q, n_k, floats) != ATTN_OK)
        return ATTN_ENOMEM;
    attn_trace_reset(out);
    round_copy(h.q, p->q, f);
    round_copy(h.k, p->k, f);
    round_copy(h.v, p->v, f);
    if (p->bias)
        round_copy(h.bias, p->bias, f);
    if (v->rope != NULL) {
        rotate_held(h.q, n_q, d_k, &vt->q_rope, v->rope, v->rope->cos_q, v->rope->sin_q, f);
        rotate_held(h.k, n_k, d_k, &vt->k_rope, v->rope, v->rope->cos_k, v->rope->sin_k, f);
    }

    if (floats) {
        to_floats(h.fq, h.q, n_q * d_k);
        for (size_t j = 0; j < n_k; j++) /* kᵀ, so that a row of scores is a lane each */
            for (size_t t = 0; t < d_k; t++)
                h.fkt[t * n_k + j] = (float)h.k[j * d_k + t];
        to_floats(h.fv, h.v, n_k * d_v);
        product_f32(h.fout, h.fq, n_q, d_k, h.fkt, n_k);
        to_doubles(out->scores.data, h.fout, n_q * n_k);
    } else {
        product(out->scores.data, h.q, n_q, d_k, h.k, 1, d_k, n_k, acc);
    }
    double scale = attn_format_round(p->scale, acc), cap = attn_format_round(v->softcap, acc);
    double sink = attn_format_round(v->sink_logit, acc);
    for (size_t i = 0; i < n_q; i++) {
        struct attn_vrow r = attn_vrow_of(p, v, n_q, n_k, i);
        double at = r.at; /* the query's position, i + off (inside its document) */
        for (size_t j = 0; j < n_k; j++) {
            size_t c = i * n_k + j;
            double scaled = attn_format_round(out->scores.data[c] * scale, acc), capped = scaled;
            if (v->softcap != 0) { /* c·tanh(scaled/c) in float64, rounded once */
                capped = attn_format_round(cap * tanh(scaled / cap), acc);
                vt->softcapped.data[c] = capped;
            }
            double masked = capped;
            if (h.bias != NULL || v->alibi) /* one float64 sum, rounded once */
                masked = attn_format_round((h.bias != NULL ? capped + h.bias[c] : capped) -
                                               (v->alibi ? v->alibi_slope * fabs(at - (double)j) : 0),
                                           acc);
            out->scaled.data[c] = scaled;
            out->masked.data[c] = attn_vrow_sees(&r, j) ? masked : -INFINITY;
        }
        softmax_row(out, &h, i, &r, prec, v->sink ? &sink : NULL,
                    v->sink ? &vt->sink_weight[i] : NULL);
        describe_row(out, i);
        if (v->dropout)
            dropout_row(vt, &h, v, i, prec);
    }
    if (floats) {
        to_floats(h.fw, h.weights, n_q * n_k);
        product_f32(h.fout, h.fw, n_q, n_k, h.fv, d_v);
        to_doubles(out->output.data, h.fout, n_q * d_v);
    } else {
        product(out->output.data, h.weights, n_q, n_k, h.v, d_v, 1, d_v, acc);
    }
    for (size_t c = 0; c < n_q * d_v; c++)
        out->output.data[c] = attn_format_round(out->output.data[c], f);
    find_fault(out, p, v);
    free(h.block);
    free(h.floats);
    return ATTN_OK;
}

/* op(m) (rows × cols: m, or its transpose) rounded to f into dst, contiguous. */
static void round_copy_op(double *dst, const struct attn_matrix *m, bool t, enum attn_format f)
{
    size_t rows = t ? m->cols : m->rows, cols = t ? m->rows : m->cols;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++)
            dst[i * cols + j] = attn_format_round(t ? attn_at(m, j, i) : attn_at(m, i, j), f);
}

size_t attn_product_precision_bytes(size_t rows, size_t inner, size_t cols,
                                    const struct attn_precision *prec)
{
    int overflow = 0;
    size_t a = attn_cells(rows, inner, &overflow), b = attn_cells(inner, cols, &overflow);
    size_t c = attn_cells(rows, cols, &overflow);
    size_t cells = a > SIZE_MAX - b ? SIZE_MAX : a + b;
    cells = cells > SIZE_MAX - c ? SIZE_MAX : cells + c;
    size_t each = sizeof(double) + (prec->accumulate == ATTN_FLOAT32 ? sizeof(float) : 0);
    return overflow || cells > SIZE_MAX / each ? 0 : cells * each;
}

enum attn_status attn_product_precision(struct attn_matrix *c, const struct attn_matrix *a,
                                        bool a_t, const struct attn_matrix *b, bool b_t,
                                        const struct attn_precision *prec)
{
    if (!attn_precision_valid(prec))
        return ATTN_EINVAL;
    size_t rows = c->rows, cols = c->cols, inner = a_t ? a->rows : a->cols;
    bool floats = prec->accumulate == ATTN_FLOAT32;
    size_t cells = rows * inner + inner * cols + rows * cols; /* bounded by the caller's */
    double *da = malloc(cells * sizeof(double));
    float *fa = floats ? malloc(cells * sizeof(float)) : NULL;
    if (da == NULL || (floats && fa == NULL)) {
        free(da);
        free(fa);
        return ATTN_ENOMEM;
    }
    double *db = da + rows * inner, *dc = db + inner * cols;
    round_copy_op(da, a, a_t, prec->format);
    round_copy_op(db, b, b_t, prec->format);
    if (floats) {
        float *fb = fa + rows * inner, *fc = fb + inner * cols;
        to_floats(fa, da, rows * inner);
        to_floats(fb, db, inner * cols);
        product_f32(fc, fa, rows, inner, fb, cols);
        to_doubles(dc, fc, rows * cols);
    } else {
        product(dc, da, rows, inner, db, cols, 1, cols, prec->accumulate);
    }
    for (size_t i = 0; i < rows; i++)
        memcpy(c->data + i * c->stride, dc + i * cols, cols * sizeof(double));
    free(da);
    free(fa);
    return ATTN_OK;
}

enum attn_status attn_project_precision(struct attn_matrix *out, const struct attn_matrix *x,
                                        const struct attn_matrix *w, const double *b,
                                        bool transposed, const struct attn_precision *prec)
{
    enum attn_status st = attn_product_precision(out, x, false, w, transposed, prec);
    if (st != ATTN_OK)
        return st;
    enum attn_format f = prec->format, acc = prec->accumulate;
    for (size_t i = 0; i < out->rows; i++)
        for (size_t j = 0; j < out->cols; j++) {
            double *s = &out->data[i * out->stride + j];
            if (b != NULL)
                *s = attn_format_round(*s + attn_format_round(b[j], f), acc);
            *s = attn_format_round(*s, f);
        }
    return ATTN_OK;
}

/* ---- the notes' mistakes, in the format ---- */

static double *cell(struct attn_matrix *m, size_t i, size_t j)
{
    return &m->data[i * m->stride + j];
}

void attn_softmax_rows_unshifted_precision(struct attn_matrix *exp_out, struct attn_matrix *out,
                                           const struct attn_matrix *in,
                                           const struct attn_precision *prec)
{
    enum attn_format f = prec->format, acc = prec->accumulate;
    for (size_t i = 0; i < in->rows; i++) {
        double sum = 0;
        for (size_t j = 0; j < in->cols; j++) {
            double e = attn_format_round(exp(attn_at(in, i, j)), acc); /* no shift: may be inf */
            *cell(out, i, j) = e;
            if (exp_out != NULL)
                *cell(exp_out, i, j) = e;
            sum = attn_format_round(sum + e, acc);
        }
        for (size_t j = 0; j < in->cols; j++)
            *cell(out, i, j) = attn_format_round(attn_format_round(attn_at(out, i, j) / sum, acc), f);
    }
}

void attn_softmax_columns_precision(struct attn_matrix *out, const struct attn_matrix *in,
                                    const struct attn_precision *prec)
{
    enum attn_format f = prec->format, acc = prec->accumulate;
    for (size_t j = 0; j < in->cols; j++) {
        double max = -INFINITY, sum = 0;
        for (size_t i = 0; i < in->rows; i++)
            if (attn_at(in, i, j) > max)
                max = attn_at(in, i, j);
        for (size_t i = 0; i < in->rows; i++) { /* an all -inf column: -inf - -inf, NaN */
            double e = attn_format_round(exp(attn_format_round(attn_at(in, i, j) - max, acc)), acc);
            *cell(out, i, j) = e;
            sum = attn_format_round(sum + e, acc);
        }
        for (size_t i = 0; i < in->rows; i++)
            *cell(out, i, j) = attn_format_round(attn_format_round(attn_at(out, i, j) / sum, acc), f);
    }
}

void attn_matmul_precision(struct attn_matrix *out, const struct attn_matrix *a,
                           const struct attn_matrix *b, const struct attn_precision *prec)
{
    enum attn_format f = prec->format, acc = prec->accumulate;
    for (size_t i = 0; i < a->rows; i++)
        for (size_t j = 0; j < b->cols; j++) {
            double s = 0;
            for (size_t c = 0; c < a->cols; c++)
                s = attn_format_fma(attn_format_round(attn_at(a, i, c), f),
                                    attn_format_round(attn_at(b, c, j), f), s, acc);
            *cell(out, i, j) = attn_format_round(s, f);
        }
}

struct attn_step_error attn_step_error_of(const struct attn_matrix *low,
                                          const struct attn_matrix *exact)
{
    struct attn_step_error e = { 0, 0, ATTN_NO_INDEX, ATTN_NO_INDEX, 0 };
    for (size_t i = 0; i < low->rows; i++)
        for (size_t j = 0; j < low->cols; j++) {
            double x = attn_at(low, i, j), y = attn_at(exact, i, j);
            if (!isfinite(y))
                continue;
            if (!isfinite(x)) {
                e.non_finite++;
                continue;
            }
            double abs_err = fabs(x - y);
            if (abs_err > e.max_abs)
                e.max_abs = abs_err;
            if (abs_err == 0 || y == 0)
                continue;
            double rel = abs_err / fabs(y);
            if (rel > e.max_rel) {
                e.max_rel = rel;
                e.rel_row = i;
                e.rel_col = j;
            }
        }
    return e;
}
