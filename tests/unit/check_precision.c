/*
 * tests/unit/check_precision.c — unit tests of core/precision.h: the formats' rounding
 * and attention computed by the precision rules, against an emulation written here from
 * other parts.
 *
 * The emulation rounds by search, not by arithmetic on bits: every finite float16 and
 * bfloat16 value is listed from its bit pattern by the formats' definitions, and a value
 * rounds to the nearest one in that list (ties to the even pattern, past the largest
 * finite value by half its spacing to infinity). A fused multiply-add for a 16-bit
 * accumulator is computed exactly in binary128 (__float128) and rounded the same way;
 * float32 is C's float, fmaf and (float) conversions.
 *
 * One Check suite, "precision", with the test cases
 *   Round    the fast rounding against its definition over random doubles; every
 *            midpoint between neighbouring float16 and bfloat16 values and its two
 *            sides against the list; the compiler's _Float16; the edges (65504, 65520,
 *            subnormals, -0, bfloat16's double-rounding trap);
 *   Fma      attn_format_fma against binary128 for random operands in each format;
 *   Forward  random problems (every mask kind, bias, fully masked rows) in each format
 *            and accumulator, bit for bit against the emulation at every step and row
 *            statistic; overflow past 65504 kept and named; bad arguments;
 *   Mistakes the notes' softmax mistakes by the rules: e^11 holds in float16, e^11.1 not;
 *            the column softmax and the product against the emulation;
 *   Backward attn_backward_precision on random problems (softcap, the sink, RoPE in both
 *            layouts, dropout, a bias, a causal mask, a fully masked row) in each format
 *            and accumulator, bit for bit at every step against a naive loop of the
 *            rules on the low forward's steps; float32 within 1e-4 of float64's
 *            gradients; overflow kept and named; bad calls;
 *   Multi    attn_mh_forward_precision: the projections against the emulation's (operands
 *            in the format, sums in the accumulator, the bias added there, the result
 *            rounded to the format), every head against emulate() on them, GQA;
 *   MultiBackward attn_mh_backward_precision on random problems (GQA, both weight
 *            layouts, the biases, a bias matrix, cross-attention, softcap, the sink, RoPE,
 *            dropout) in each format and accumulator, bit for bit against a naive loop
 *            of the rules (em_backward for each head on the low forward's columns);
 *            float32 within 1e-4 of float64's; overflow kept and named; bad calls;
 *   Error    attn_step_error_of on matrices with known differences.
 */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/backward.h"
#include "core/mh_backward.h"
#include "core/multihead.h"
#include "core/precision.h"
#include "core/variants.h"
#include "tests/unit/suite_run.h"

/* Checks inside loops over cells cost a branch until they fail (see check_core.c). */
#define EXPECT(cond, ...)              \
    do {                               \
        if (!(cond))                   \
            ck_abort_msg(__VA_ARGS__); \
    } while (0)

/* ---- the formats, listed ---- */

/* A 16-bit layout's value for bits (sign off), by the definition. */
static double value_of(unsigned bits, int fraction, int bias)
{
    unsigned field = bits >> fraction, f = bits & ((1u << fraction) - 1);
    if (field == 0)
        return ldexp((double)f, 1 - bias - fraction);
    return ldexp((double)(f | (1u << fraction)), (int)field - bias - fraction);
}

struct list {
    double v[0x8000]; /* the finite non-negative values in order; v[i] has pattern i */
    size_t n;
};

static struct list f16_list, bf16_list;

static void make_list(struct list *l, int fraction, int bias)
{
    unsigned inf_field = (1u << (15 - fraction)) - 1;
    l->n = (size_t)inf_field << fraction; /* patterns below the infinity */
    for (size_t i = 0; i < l->n; i++)
        l->v[i] = value_of((unsigned)i, fraction, bias);
}

static void lists_setup(void)
{
    make_list(&f16_list, 10, 15);
    make_list(&bf16_list, 7, 127);
}

/* x (exact, binary128) rounded to the list's nearest value, ties to the even pattern. */
static double nearest(const struct list *l, __float128 x)
{
    if (x != x)
        return NAN;
    if (x == 0)
        return (double)x; /* ±0 keeps its sign */
    double sign = x < 0 ? -1 : 1;
    __float128 a = x < 0 ? -x : x;
    size_t top = l->n - 1;
    __float128 spacing = (__float128)l->v[top] - (__float128)l->v[top - 1];
    if (a >= (__float128)l->v[top] + spacing / 2)
        return sign * INFINITY;
    if (a >= (__float128)l->v[top])
        return sign * l->v[top];
    size_t lo = 0, hi = top; /* v[lo] <= a < v[hi] */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if ((__float128)l->v[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    __float128 below = a - (__float128)l->v[lo], above = (__float128)l->v[hi] - a;
    size_t pick = below < above ? lo : above < below ? hi : (lo % 2 == 0 ? lo : hi);
    return sign * l->v[pick];
}

/* The emulation's rounding of x to f. */
static double em_round(__float128 x, enum attn_format f)
{
    switch (f) {
    case ATTN_FLOAT32: return (double)(float)x; /* __float128 to float: rounded once */
    case ATTN_FLOAT16: return nearest(&f16_list, x);
    case ATTN_BFLOAT16: return nearest(&bf16_list, x);
    default: return (double)x;
    }
}

static double em_fma(double a, double b, double c, enum attn_format f)
{
    if (f == ATTN_FLOAT32)
        return fmaf((float)a, (float)b, (float)c);
    if (!isfinite(a) || !isfinite(b) || !isfinite(c))
        return em_round(a * b + c, f);
    return em_round((__float128)a * (__float128)b + (__float128)c, f);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double uniform(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(next64() >> 11) * 0x1p-53);
}

/* A double of random sign and significand, its exponent in [lo, hi]. */
static double random_double(int lo, int hi)
{
    double m = 1 + (double)(next64() >> 12) * 0x1p-52;
    int e = lo + (int)(next64() % (uint64_t)(hi - lo + 1));
    return (next64() & 1 ? -1 : 1) * ldexp(m, e);
}

static const enum attn_format lows[] = { ATTN_FLOAT32, ATTN_FLOAT16, ATTN_BFLOAT16 };

/* ---- Round ---- */

START_TEST(test_fast_round_is_the_definition)
{
    for (size_t f = 0; f < 3; f++)
        for (int k = 0; k < 200000; k++) {
            double x = random_double(-160, 140);
            double fast = attn_format_round(x, lows[f]), slow = attn_format_round_slow(x, lows[f]);
            EXPECT(memcmp(&fast, &slow, sizeof fast) == 0, "%s(%a): fast %a, definition %a",
                   attn_format_name(lows[f]), x, fast, slow);
        }
}
END_TEST

/* Every midpoint between neighbours (a tie: to the even pattern) and a hair either side. */
static void midpoints(const struct list *l, enum attn_format f)
{
    for (size_t i = 0; i + 1 < l->n; i++) {
        double mid = (l->v[i] + l->v[i + 1]) / 2; /* exact: both are short */
        double want = l->v[i % 2 == 0 ? i : i + 1];
        double got = attn_format_round(mid, f), neg = attn_format_round(-mid, f);
        EXPECT(got == want && neg == -want, "%s: tie %a rounds to %a, not %a",
               attn_format_name(f), mid, got, want);
        EXPECT(attn_format_round(nextafter(mid, 0), f) == l->v[i],
               "%s: below the tie %a", attn_format_name(f), mid);
        EXPECT(attn_format_round(nextafter(mid, INFINITY), f) == l->v[i + 1],
               "%s: above the tie %a", attn_format_name(f), mid);
        EXPECT(attn_format_round(l->v[i], f) == l->v[i], "%s: %a moved",
               attn_format_name(f), l->v[i]);
    }
}

START_TEST(test_every_tie_float16)
{
    midpoints(&f16_list, ATTN_FLOAT16);
}
END_TEST

START_TEST(test_every_tie_bfloat16)
{
    midpoints(&bf16_list, ATTN_BFLOAT16);
}
END_TEST

START_TEST(test_random_against_lists)
{
    for (int k = 0; k < 100000; k++) {
        double x = random_double(-30, 17), y = random_double(-140, 129);
        EXPECT(attn_format_round(x, ATTN_FLOAT16) == nearest(&f16_list, x), "float16 %a", x);
        EXPECT(attn_format_round(y, ATTN_BFLOAT16) == nearest(&bf16_list, y), "bfloat16 %a", y);
    }
}
END_TEST

/* The compiler's conversion to _Float16, a third opinion on float16. */
START_TEST(test_float16_is_the_compilers)
{
    for (int k = 0; k < 100000; k++) {
        double x = random_double(-30, 17);
        double want = (double)(_Float16)x;
        EXPECT(attn_format_round(x, ATTN_FLOAT16) == want, "%a: _Float16 says %a", x, want);
    }
}
END_TEST

START_TEST(test_edges)
{
    ck_assert_double_eq(attn_format_round(65504, ATTN_FLOAT16), 65504);
    ck_assert_double_eq(attn_format_round(65519.99, ATTN_FLOAT16), 65504);
    ck_assert(isinf(attn_format_round(65520, ATTN_FLOAT16)));   /* the tie goes up: inf */
    ck_assert(attn_format_round(-70000, ATTN_FLOAT16) == -INFINITY);
    ck_assert_double_eq(attn_format_max(ATTN_FLOAT16), 65504);
    ck_assert_double_eq(attn_format_round(0x1p-24, ATTN_FLOAT16), 0x1p-24); /* smallest */
    ck_assert_double_eq(attn_format_round(0x1p-25, ATTN_FLOAT16), 0);       /* tie: even 0 */
    ck_assert_double_eq(attn_format_round(0x1.8p-25, ATTN_FLOAT16), 0x1p-24);
    ck_assert_double_eq(attn_format_round(0x1.8p-24, ATTN_FLOAT16), 0x1p-23); /* tie: even */
    double negzero = attn_format_round(-0x1p-30, ATTN_FLOAT16);
    ck_assert(negzero == 0 && signbit(negzero));
    /* float's own rounding would make this the tie 1 + 2^-8, which goes to 1 */
    ck_assert_double_eq(attn_format_round(1 + 0x1p-8 + 0x1p-30, ATTN_BFLOAT16), 1 + 0x1p-7);
    ck_assert_double_eq(attn_format_round(0x1p-133, ATTN_BFLOAT16), 0x1p-133);
    ck_assert_double_eq(attn_format_round(0x1.fep127, ATTN_BFLOAT16), 0x1.fep127);
    ck_assert(isinf(attn_format_round(0x1.ffp127, ATTN_BFLOAT16)));
    ck_assert(isinf(attn_format_round(1e39, ATTN_FLOAT32)));
    ck_assert(isnan(attn_format_round(NAN, ATTN_FLOAT16)));
    ck_assert(attn_format_round(-INFINITY, ATTN_BFLOAT16) == -INFINITY);
    ck_assert_double_eq(attn_format_round(0.1, ATTN_FLOAT64), 0.1);
    ck_assert_str_eq(attn_format_name(ATTN_BFLOAT16), "bfloat16");
}
END_TEST

/* ---- Fma ---- */

/* A random value of f near 2^[lo, hi]. */
static double random_in(enum attn_format f, int lo, int hi)
{
    return attn_format_round(random_double(lo, hi), f);
}

START_TEST(test_fma_is_exact_then_rounded)
{
    for (size_t fi = 0; fi < 3; fi++) {
        enum attn_format f = lows[fi];
        int lo = f == ATTN_FLOAT16 ? -20 : -40, hi = f == ATTN_FLOAT16 ? 7 : 40;
        for (int k = 0; k < 100000; k++) {
            double a = random_in(f, lo, hi), b = random_in(f, lo, hi);
            /* acc near a·b most of the time, where the sum cancels and ties are common */
            double c = k % 2 ? random_in(f, lo, hi) : attn_format_round(-a * b * uniform(0.5, 2), f);
            if (k % 7 == 0)
                c = attn_format_round(-a * b, f);
            double got = attn_format_fma(a, b, c, f), want = em_fma(a, b, c, f);
            EXPECT(got == want || (isnan(got) && isnan(want)), "%s: %a·%a + %a = %a, not %a",
                   attn_format_name(f), a, b, c, got, want);
        }
    }
}
END_TEST

/* ---- Forward ---- */

struct problem {
    size_t n_q, n_k, d_k, d_v;
    double *q, *k, *v, *bias;
    unsigned char *allow;
    enum attn_mask_kind mask;
    double scale;
};

/* The emulation's steps, one array each (n_q × n_k; output n_q × d_v). */
struct steps {
    double *scores, *scaled, *masked, *weights, *output, *row_max, *row_sum, *lse;
};

static bool em_sees(const struct problem *p, size_t i, size_t j)
{
    if (p->mask == ATTN_MASK_CAUSAL)
        return j <= i + p->n_k - p->n_q && (long long)i + (long long)p->n_k - (long long)p->n_q >= 0;
    if (p->mask == ATTN_MASK_CELLS)
        return p->allow[i * p->n_k + j] != 0;
    return true;
}

static void emulate(const struct problem *p, enum attn_format f, enum attn_format acc,
                    struct steps *s)
{
    size_t n_q = p->n_q, n_k = p->n_k, d_k = p->d_k, d_v = p->d_v;
    double sc = em_round(p->scale, acc);
    for (size_t i = 0; i < n_q; i++) {
        for (size_t j = 0; j < n_k; j++) {
            double x = 0;
            for (size_t t = 0; t < d_k; t++)
                x = em_fma(em_round(p->q[i * d_k + t], f), em_round(p->k[j * d_k + t], f), x, acc);
            size_t c = i * n_k + j;
            s->scores[c] = x;
            s->scaled[c] = em_round((__float128)x * sc, acc);
            double m = p->bias ? em_round((__float128)s->scaled[c] + em_round(p->bias[c], f), acc)
                               : s->scaled[c];
            s->masked[c] = em_sees(p, i, j) ? m : -INFINITY;
        }
        double max = -INFINITY, sum = 0;
        bool any = false;
        for (size_t j = 0; j < n_k; j++)
            if (em_sees(p, i, j)) {
                any = true;
                max = fmax(max, s->masked[i * n_k + j]);
            }
        for (size_t j = 0; j < n_k; j++) {
            double e = 0;
            if (any && em_sees(p, i, j))
                e = em_round(exp(em_round((__float128)s->masked[i * n_k + j] - max, acc)), acc);
            s->weights[i * n_k + j] = e;
            sum = em_round((__float128)sum + e, acc);
        }
        s->row_max[i] = max;
        s->row_sum[i] = any ? sum : 0;
        s->lse[i] = any ? em_round(max + log(sum), acc) : -INFINITY;
        for (size_t j = 0; j < n_k; j++)
            if (em_sees(p, i, j))
                s->weights[i * n_k + j] =
                    em_round(em_round((__float128)s->weights[i * n_k + j] / sum, acc), f);
        for (size_t c = 0; c < d_v; c++) {
            double o = 0;
            for (size_t j = 0; j < n_k; j++)
                o = em_fma(s->weights[i * n_k + j], em_round(p->v[j * d_v + c], f), o, acc);
            s->output[i * d_v + c] = em_round(o, f);
        }
    }
}

static void steps_alloc(struct steps *s, const struct problem *p)
{
    size_t nn = p->n_q * p->n_k;
    s->scores = calloc(nn, sizeof(double));
    s->scaled = calloc(nn, sizeof(double));
    s->masked = calloc(nn, sizeof(double));
    s->weights = calloc(nn, sizeof(double));
    s->output = calloc(p->n_q * p->d_v, sizeof(double));
    s->row_max = calloc(p->n_q, sizeof(double));
    s->row_sum = calloc(p->n_q, sizeof(double));
    s->lse = calloc(p->n_q, sizeof(double));
}

static void steps_free(struct steps *s)
{
    free(s->scores);
    free(s->scaled);
    free(s->masked);
    free(s->weights);
    free(s->output);
    free(s->row_max);
    free(s->row_sum);
    free(s->lse);
}

/* Bit for bit, NaN as NaN. */
static bool same(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static void expect_cells(const char *what, const double *got, const double *want, size_t n,
                         enum attn_format f, enum attn_format acc)
{
    for (size_t c = 0; c < n; c++)
        EXPECT(same(got[c], want[c]), "%s/%s %s[%zu]: %a, the emulation %a",
               attn_format_name(f), attn_format_name(acc), what, c, got[c], want[c]);
}

/* p's arrays as core's problem: m holds the views (q, k, v, bias). */
static struct attn_problem views_of(const struct problem *p, struct attn_matrix m[4])
{
    m[0] = attn_matrix_view(p->q, p->n_q, p->d_k);
    m[1] = attn_matrix_view(p->k, p->n_k, p->d_k);
    m[2] = attn_matrix_view(p->v, p->n_k, p->d_v);
    m[3] = attn_matrix_view(p->bias, p->n_q, p->n_k);
    return (struct attn_problem){ &m[0], &m[1], &m[2], p->bias ? &m[3] : NULL,
                                  { p->mask, p->allow, p->n_q }, p->scale, false };
}

static void run_and_compare(const struct problem *p, enum attn_format f, enum attn_format acc)
{
    struct attn_matrix m[4];
    struct attn_problem ap = views_of(p, m);
    struct attn_trace t;
    ck_assert_int_eq(attn_trace_alloc(&t, p->n_q, p->n_k, p->d_v), ATTN_OK);
    struct attn_precision prec = { f, acc };
    ck_assert_int_eq(attn_forward_precision(&t, &ap, &prec), ATTN_OK);
    struct steps s;
    steps_alloc(&s, p);
    emulate(p, f, acc, &s);
    size_t nn = p->n_q * p->n_k;
    expect_cells("scores", t.scores.data, s.scores, nn, f, acc);
    expect_cells("scaled", t.scaled.data, s.scaled, nn, f, acc);
    expect_cells("masked", t.masked.data, s.masked, nn, f, acc);
    expect_cells("weights", t.weights.data, s.weights, nn, f, acc);
    expect_cells("output", t.output.data, s.output, p->n_q * p->d_v, f, acc);
    expect_cells("row_max", t.summary.row_max, s.row_max, p->n_q, f, acc);
    expect_cells("row_sum", t.summary.row_sum, s.row_sum, p->n_q, f, acc);
    expect_cells("lse", t.summary.lse, s.lse, p->n_q, f, acc);
    steps_free(&s);
    attn_trace_free(&t);
}

static double *random_cells(size_t n, double amp)
{
    double *x = malloc(n * sizeof *x);
    for (size_t i = 0; i < n; i++)
        x[i] = uniform(-amp, amp);
    return x;
}

START_TEST(test_forward_bit_for_bit)
{
    for (int round = 0; round < 40; round++) {
        struct problem p = { .n_q = 1 + next64() % 9, .n_k = 1 + next64() % 11,
                             .d_k = 1 + next64() % 17, .d_v = 1 + next64() % 6 };
        double amp = round % 4 == 3 ? 30 : 2; /* some rows with large scores */
        p.q = random_cells(p.n_q * p.d_k, amp);
        p.k = random_cells(p.n_k * p.d_k, amp);
        p.v = random_cells(p.n_k * p.d_v, 3);
        p.bias = round % 3 == 0 ? random_cells(p.n_q * p.n_k, 5) : NULL;
        p.mask = (enum attn_mask_kind)(round % 3);
        p.allow = malloc(p.n_q * p.n_k);
        for (size_t c = 0; c < p.n_q * p.n_k; c++)
            p.allow[c] = (next64() % 3) != 0;
        if (p.mask == ATTN_MASK_CELLS) /* a fully masked row */
            memset(p.allow, 0, p.n_k);
        p.scale = 1 / sqrt((double)p.d_k);
        for (size_t fi = 0; fi < 3; fi++) {
            run_and_compare(&p, lows[fi], ATTN_FLOAT32);
            if (lows[fi] != ATTN_FLOAT32)
                run_and_compare(&p, lows[fi], lows[fi]);
        }
        free(p.q);
        free(p.k);
        free(p.v);
        free(p.bias);
        free(p.allow);
    }
}
END_TEST

/* q·k past 65504 in a float16 accumulator is +inf; the pass keeps it and names it. */
START_TEST(test_overflow_kept_and_named)
{
    double qd[] = { 200, 200, 0.5, 0.5 }, kd[] = { 200, 200, 1, 1 }, vd[] = { 1, 2 };
    struct attn_matrix q = attn_matrix_view(qd, 2, 2), k = attn_matrix_view(kd, 2, 2);
    struct attn_matrix v = attn_matrix_view(vd, 2, 1);
    struct attn_problem p = { &q, &k, &v, NULL, { ATTN_MASK_NONE, NULL, 0 }, 1, false };
    struct attn_trace t;
    ck_assert_int_eq(attn_trace_alloc(&t, 2, 2, 1), ATTN_OK);
    struct attn_precision same16 = { ATTN_FLOAT16, ATTN_FLOAT16 };
    ck_assert_int_eq(attn_forward_precision(&t, &p, &same16), ATTN_OK);
    /* 200·200 = 40000, plus 40000 = 80000 > 65504: the second partial sum overflows */
    ck_assert(t.scores.data[0] == INFINITY);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_SCORES);
    ck_assert_uint_eq(t.fault.row, 0);
    ck_assert_uint_eq(t.fault.col, 0);
    ck_assert_double_eq(t.scores.data[3], 1); /* 0.5 + 0.5 */
    /* in a float32 accumulator the same sums are finite and nothing faults */
    struct attn_precision wide = { ATTN_FLOAT16, ATTN_FLOAT32 };
    ck_assert_int_eq(attn_forward_precision(&t, &p, &wide), ATTN_OK);
    ck_assert_double_eq(t.scores.data[0], 80000);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_NONE);
    attn_trace_free(&t);
}
END_TEST

/* An input past 65504 is +inf in float16 from the start. */
START_TEST(test_input_past_the_format)
{
    double qd[] = { 70000 }, kd[] = { 1 }, vd[] = { 1 };
    struct attn_matrix q = attn_matrix_view(qd, 1, 1), k = attn_matrix_view(kd, 1, 1);
    struct attn_matrix v = attn_matrix_view(vd, 1, 1);
    struct attn_problem p = { &q, &k, &v, NULL, { ATTN_MASK_NONE, NULL, 0 }, 1, false };
    struct attn_trace t;
    ck_assert_int_eq(attn_trace_alloc(&t, 1, 1, 1), ATTN_OK);
    struct attn_precision prec = { ATTN_FLOAT16, ATTN_FLOAT32 };
    ck_assert_int_eq(attn_forward_precision(&t, &p, &prec), ATTN_OK);
    ck_assert(t.scores.data[0] == INFINITY);
    ck_assert_int_eq(t.fault.step, ATTN_STEP_SCORES);
    ck_assert(isnan(t.weights.data[0])); /* inf − inf */
    attn_trace_free(&t);
}
END_TEST

START_TEST(test_bad_arguments)
{
    double d[] = { 1 };
    struct attn_matrix m = attn_matrix_view(d, 1, 1);
    struct attn_problem p = { &m, &m, &m, NULL, { ATTN_MASK_NONE, NULL, 0 }, 1, false };
    struct attn_trace t;
    ck_assert_int_eq(attn_trace_alloc(&t, 1, 1, 1), ATTN_OK);
    struct attn_precision bad[] = {
        { ATTN_FLOAT64, ATTN_FLOAT64 }, { ATTN_FLOAT16, ATTN_BFLOAT16 },
        { ATTN_BFLOAT16, ATTN_FLOAT16 }, { ATTN_FLOAT32, ATTN_FLOAT16 }, { ATTN_FORMATS, ATTN_FLOAT32 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_int_eq(attn_forward_precision(&t, &p, &bad[i]), ATTN_EINVAL);
    attn_trace_free(&t);
    /* the variants it does not compute in the format yet */
    ck_assert_int_eq(attn_trace_alloc(&t, 1, 1, 1), ATTN_OK);
    struct attn_precision half = { ATTN_FLOAT16, ATTN_FLOAT32 };
    const struct attn_variants unsupported[] = {
        { .softcap = 30 }, { .sink = true }, { .dropout = true, .dropout_p = 0.5 },
        { .window = true, .band_only = true },
    };
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        ck_assert_int_eq(attn_forward_precision_variants(&t, &p, &unsupported[i], &half),
                         ATTN_EINVAL);
    const struct attn_variants window = { .window = true, .has_left = true, .left = 0 };
    ck_assert_int_eq(attn_forward_precision_variants(&t, &p, &window, &half), ATTN_OK);
    attn_trace_free(&t);
    /* softcap and the sink need a vtrace holding their steps */
    struct attn_vtrace vt;
    const struct attn_variants capped = { .softcap = 30, .sink = true, .sink_logit = 0.5 };
    ck_assert_int_eq(attn_vtrace_alloc(&vt, 1, 1, 1, 1, &capped), ATTN_OK);
    ck_assert_int_eq(attn_forward_precision_vtrace(&vt, &p, &capped, &half), ATTN_OK);
    ck_assert_double_eq(vt.softcapped.data[0], attn_format_round(30 * tanh(1.0 / 30), ATTN_FLOAT32));
    attn_vtrace_free(&vt);
    /* a fully masked row gives the sink everything */
    unsigned char none_allowed[] = { 0 };
    struct attn_problem blocked = p;
    blocked.mask = (struct attn_mask){ ATTN_MASK_CELLS, none_allowed, 1 };
    ck_assert_int_eq(attn_vtrace_alloc(&vt, 1, 1, 1, 1, &capped), ATTN_OK);
    ck_assert_int_eq(attn_forward_precision_vtrace(&vt, &blocked, &capped, &half), ATTN_OK);
    ck_assert_double_eq(vt.sink_weight[0], 1);
    ck_assert_double_eq(vt.base.weights.data[0], 0);
    ck_assert_double_eq(vt.base.summary.lse[0], 0.5);
    attn_vtrace_free(&vt);
    struct attn_vtrace bare;
    ck_assert_int_eq(attn_vtrace_alloc(&bare, 1, 1, 1, 1, &window), ATTN_OK); /* no softcapped */
    ck_assert_int_eq(attn_forward_precision_vtrace(&bare, &p, &capped, &half), ATTN_EINVAL);
    attn_vtrace_free(&bare);
    /* weights and output alone share one buffer: the pass needs every step apart */
    ck_assert_int_eq(attn_trace_alloc_keep(&t, 1, 1, 1, 0), ATTN_OK);
    struct attn_precision ok = { ATTN_FLOAT16, ATTN_FLOAT32 };
    ck_assert_int_eq(attn_forward_precision(&t, &p, &ok), ATTN_EINVAL);
    attn_trace_free(&t);
}
END_TEST

/* ---- Backward ---- */

/* The backward's steps as the emulation computes them, one array each. */
struct em_grads {
    double *gv, *dp, *delta, *ds, *gscaled, *gscores, *gqr, *gkr, *gq, *gk, sink;
};

/* x's rows turned back by RoPE's tables (rows × d, pairs by the layout): the rotation by
 * −θ, a·cos + b·sin and b·cos − a·sin, in float64, then rounded to f. */
static void em_turn_back(double *out, const double *x, size_t rows, size_t d,
                         const struct attn_rope *rope, const double *cos_t, const double *sin_t,
                         enum attn_format f)
{
    size_t half = rope->rotated / 2;
    for (size_t i = 0; i < rows; i++) {
        const double *src = x + i * d;
        double *dst = out + i * d;
        memcpy(dst, src, d * sizeof *dst);
        for (size_t c = 0; c < half; c++) {
            size_t a = rope->layout == ATTN_ROPE_INTERLEAVED ? 2 * c : c;
            size_t b = rope->layout == ATTN_ROPE_INTERLEAVED ? 2 * c + 1 : c + half;
            double cs = cos_t[i * half + c], sn = sin_t[i * half + c];
            dst[a] = src[a] * cs + src[b] * sn;
            dst[b] = src[b] * cs - src[a] * sn;
        }
        for (size_t c = 0; c < d; c++)
            dst[c] = em_round(dst[c], f);
    }
}

/* c (rows × cols) = Σ_t a(i, t)·b(t, j) in index order, each partial sum rounded once to
 * acc; a(i, t) = a[i·as_i + t·as_t], b likewise: the naive triple loop. */
static void em_product(double *c, size_t rows, size_t inner, size_t cols, const double *a,
                       size_t as_i, size_t as_t, const double *b, size_t bs_t, size_t bs_j,
                       enum attn_format acc)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double sum = 0;
            for (size_t t = 0; t < inner; t++)
                sum = em_fma(a[i * as_i + t * as_t], b[t * bs_t + j * bs_j], sum, acc);
            c[i * cols + j] = sum;
        }
}

static double *em_rounded(const double *x, size_t n, enum attn_format f)
{
    double *r = malloc(n * sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i] = em_round(x[i], f);
    return r;
}

/* The backward by the rules from fwd, the low forward pass as it holds its steps. */
static void em_backward(struct em_grads *g, const struct problem *p, const struct attn_variants *v,
                        const struct attn_vtrace *fwd, const double *d_out, enum attn_format f,
                        enum attn_format acc)
{
    size_t n_q = p->n_q, n_k = p->n_k, d_k = p->d_k, d_v = p->d_v, nn = n_q * n_k;
    double *dof = em_rounded(d_out, n_q * d_v, f), *vf = em_rounded(p->v, n_k * d_v, f);
    double *qf = v->rope ? NULL : em_rounded(p->q, n_q * d_k, f);
    double *kf = v->rope ? NULL : em_rounded(p->k, n_k * d_k, f);
    const double *qr = v->rope ? fwd->q_rope.data : qf, *kr = v->rope ? fwd->k_rope.data : kf;
    const double *mix = v->dropout ? fwd->dropped.data : fwd->base.weights.data;
    const double *w = fwd->base.weights.data, *o = fwd->base.output.data;
    em_product(g->gv, n_k, n_q, d_v, mix, 1, n_k, dof, d_v, 1, acc);           /* mixᵀ·dO */
    em_product(g->dp, n_q, d_v, n_k, dof, d_v, 1, vf, 1, d_v, acc);           /* dO·Vᵀ */
    for (size_t i = 0; i < n_q; i++) { /* D_i = Σ_c dO_ic·O_ic */
        double d = 0;
        for (size_t c = 0; c < d_v; c++)
            d = em_fma(dof[i * d_v + c], o[i * d_v + c], d, acc);
        g->delta[i] = d;
    }
    double factor = em_round(1.0 / (1.0 - v->dropout_p), acc), cap = em_round(v->softcap, acc);
    double sc = em_round(p->scale, acc);
    double *dsf = calloc(nn, sizeof *dsf);
    for (size_t i = 0; i < n_q; i++)
        for (size_t j = 0; j < n_k; j++) {
            size_t c = i * n_k + j;
            if (v->dropout)
                g->dp[c] = em_round(g->dp[c] * fwd->keep.data[c] * factor, acc);
            double ds = em_sees(p, i, j) ? em_round(w[c] * (g->dp[c] - g->delta[i]), acc) : 0;
            g->ds[c] = ds + 0.0;
            double th = v->softcap > 0 ? fwd->softcapped.data[c] / cap : 0;
            g->gscaled[c] = v->softcap > 0 ? em_round(g->ds[c] * (1.0 - th * th), acc) : g->ds[c];
            g->gscores[c] = em_round(g->gscaled[c] * sc, acc);
            dsf[c] = em_round(g->gscores[c], f);
        }
    em_product(g->gqr, n_q, n_k, d_k, dsf, n_k, 1, kr, d_k, 1, acc);   /* dS'·K' */
    em_product(g->gkr, n_k, n_q, d_k, dsf, 1, n_k, qr, d_k, 1, acc);   /* dS'ᵀ·Q' */
    if (v->rope) {
        em_turn_back(g->gq, g->gqr, n_q, d_k, v->rope, v->rope->cos_q, v->rope->sin_q, f);
        em_turn_back(g->gk, g->gkr, n_k, d_k, v->rope, v->rope->cos_k, v->rope->sin_k, f);
    } else {
        for (size_t c = 0; c < n_q * d_k; c++)
            g->gq[c] = em_round(g->gqr[c], f);
        for (size_t c = 0; c < n_k * d_k; c++)
            g->gk[c] = em_round(g->gkr[c], f);
    }
    for (size_t c = 0; c < n_k * d_v; c++)
        g->gv[c] = em_round(g->gv[c], f);
    g->sink = 0;
    for (size_t i = 0; v->sink && i < n_q; i++)
        g->sink = em_fma(-fwd->sink_weight[i], g->delta[i], g->sink, acc);
    free(dof), free(vf), free(qf), free(kf), free(dsf);
}

static void em_grads_alloc(struct em_grads *g, const struct problem *p)
{
    size_t nn = p->n_q * p->n_k;
    double **all[] = { &g->dp, &g->ds, &g->gscaled, &g->gscores };
    for (size_t i = 0; i < 4; i++)
        *all[i] = calloc(nn, sizeof(double));
    g->gv = calloc(p->n_k * p->d_v, sizeof(double));
    g->delta = calloc(p->n_q, sizeof(double));
    g->gqr = calloc(p->n_q * p->d_k, sizeof(double));
    g->gq = calloc(p->n_q * p->d_k, sizeof(double));
    g->gkr = calloc(p->n_k * p->d_k, sizeof(double));
    g->gk = calloc(p->n_k * p->d_k, sizeof(double));
}

static void em_grads_free(struct em_grads *g)
{
    free(g->gv), free(g->dp), free(g->delta), free(g->ds), free(g->gscaled), free(g->gscores);
    free(g->gqr), free(g->gkr), free(g->gq), free(g->gk);
}

/* Round r's variants: softcap, the sink, RoPE (both layouts) and dropout, each in some. */
static struct attn_variants backward_variants(int r, struct attn_rope *rope, const struct problem *p)
{
    struct attn_variants v = { .softcap = r % 3 == 1 ? 1.5 : 0, .sink = r % 4 == 3,
                               .sink_logit = 0.25, .dropout = r % 5 == 4, .dropout_p = 0.25,
                               .dropout_seed = (uint64_t)r };
    if (r % 2 == 0 && p->d_k % 2 == 0) {
        *rope = (struct attn_rope){ .base = 100, .layout = (enum attn_rope_layout)((r / 2) % 2),
                                    .rotated = p->d_k };
        ck_assert_int_eq(attn_rope_prepare(rope, p->n_q, p->n_k), ATTN_OK);
        v.rope = rope;
    }
    return v;
}

/* attn_backward_precision of p and v in (f, acc) against em_backward, bit for bit. */
static void backward_and_compare(const struct problem *p, const struct attn_variants *v,
                                 const double *d_out, enum attn_format f, enum attn_format acc)
{
    struct attn_matrix m[4], dom = attn_matrix_view((double *)d_out, p->n_q, p->d_v);
    struct attn_problem ap = views_of(p, m);
    struct attn_precision prec = { f, acc };
    struct attn_vtrace fwd;
    ck_assert_int_eq(attn_vtrace_alloc(&fwd, p->n_q, p->n_k, p->d_k, p->d_v, v), ATTN_OK);
    ck_assert_int_eq(attn_forward_precision_vtrace(&fwd, &ap, v, &prec), ATTN_OK);
    struct attn_grads g;
    ck_assert_int_eq(attn_grads_alloc(&g, p->n_q, p->n_k, p->d_k, p->d_v), ATTN_OK);
    ck_assert_int_eq(attn_backward_precision(&g, &ap, v, &fwd, &dom, &prec), ATTN_OK);
    struct em_grads e;
    em_grads_alloc(&e, p);
    em_backward(&e, p, v, &fwd, d_out, f, acc);
    size_t nn = p->n_q * p->n_k;
    expect_cells("grad_v", g.grad_v.data, e.gv, p->n_k * p->d_v, f, acc);
    expect_cells("grad_weights", g.grad_weights.data, e.dp, nn, f, acc);
    expect_cells("delta", g.delta, e.delta, p->n_q, f, acc);
    expect_cells("grad_masked", g.grad_masked.data, e.ds, nn, f, acc);
    expect_cells("grad_scaled", g.grad_scaled.data, e.gscaled, nn, f, acc);
    expect_cells("grad_scores", g.grad_scores.data, e.gscores, nn, f, acc);
    expect_cells("grad_q_rope", g.grad_q_rope.data, e.gqr, p->n_q * p->d_k, f, acc);
    expect_cells("grad_k_rope", g.grad_k_rope.data, e.gkr, p->n_k * p->d_k, f, acc);
    expect_cells("grad_q", g.grad_q.data, e.gq, p->n_q * p->d_k, f, acc);
    expect_cells("grad_k", g.grad_k.data, e.gk, p->n_k * p->d_k, f, acc);
    expect_cells("grad_sink_logit", &g.grad_sink_logit, &e.sink, 1, f, acc);
    ck_assert_int_eq(g.fault.step, ATTN_GRAD_NONE);
    em_grads_free(&e);
    attn_grads_free(&g);
    attn_vtrace_free(&fwd);
}

/* A random problem of round r: sizes, a mask (causal, or cells with row 0 fully masked). */
static struct problem backward_problem(int r)
{
    struct problem p = { .n_q = 1 + next64() % 6, .n_k = 1 + next64() % 7,
                         .d_k = 2 * (1 + next64() % 4), .d_v = 1 + next64() % 5 };
    p.q = random_cells(p.n_q * p.d_k, 2);
    p.k = random_cells(p.n_k * p.d_k, 2);
    p.v = random_cells(p.n_k * p.d_v, 3);
    p.bias = r % 3 == 0 ? random_cells(p.n_q * p.n_k, 2) : NULL;
    p.mask = (enum attn_mask_kind)(r % 3);
    p.allow = malloc(p.n_q * p.n_k);
    for (size_t c = 0; c < p.n_q * p.n_k; c++)
        p.allow[c] = c < p.n_k ? 0 : (next64() % 3) != 0; /* row 0 fully masked */
    p.scale = 1 / sqrt((double)p.d_k);
    return p;
}

static void problem_free(struct problem *p)
{
    free(p->q), free(p->k), free(p->v), free(p->bias), free(p->allow);
}

START_TEST(test_backward_bit_for_bit)
{
    for (int round = 0; round < 60; round++) {
        struct problem p = backward_problem(round);
        struct attn_rope rope = { 0 };
        struct attn_variants v = backward_variants(round, &rope, &p);
        double *d_out = random_cells(p.n_q * p.d_v, 1.5);
        for (size_t fi = 0; fi < 3; fi++) {
            backward_and_compare(&p, &v, d_out, lows[fi], ATTN_FLOAT32);
            if (lows[fi] != ATTN_FLOAT32)
                backward_and_compare(&p, &v, d_out, lows[fi], lows[fi]);
        }
        free(d_out);
        attn_rope_release(&rope);
        problem_free(&p);
    }
}
END_TEST

/* The largest |low − exact| over n cells, against the largest |exact| or 0.1, whichever
 * is larger: a gradient whose terms cancel (one visible key: dS = P·(dP − D) = 0) is
 * float32's rounding of terms near 1, not a relative error of a number near 0. */
static double relative_gap(const double *low, const double *exact, size_t n)
{
    double gap = 0, top = 0.1;
    for (size_t c = 0; c < n; c++) {
        gap = fmax(gap, fabs(low[c] - exact[c]));
        top = fmax(top, fabs(exact[c]));
    }
    return gap / top;
}

/* FLOAT32_GAP: how far float32 by the rules may land from float64, relative to a
 * gradient's largest cell (0.1 at the least): float32's unit roundoff 2^-24 times the
 * sums and products a gradient is built through (a few dozen terms each, chained up to six
 * deep), and below float16's 2^-11, so a stray rounding to float16 on the way still fails.
 * The problems are drawn at random, and 1e-5 was exceeded (1.7e-5) by one of them. */
#define FLOAT32_GAP 1e-4

/* float32 by the rules lands within float32's own error of float64's gradients. */
START_TEST(test_backward_float32_near_float64)
{
    for (int round = 0; round < 12; round++) {
        struct problem p = backward_problem(round);
        struct attn_rope rope = { 0 };
        struct attn_variants v = backward_variants(round, &rope, &p);
        double *d_out = random_cells(p.n_q * p.d_v, 1);
        struct attn_matrix m[4], dom = attn_matrix_view(d_out, p.n_q, p.d_v);
        struct attn_problem ap = views_of(&p, m);
        struct attn_precision prec = { ATTN_FLOAT32, ATTN_FLOAT32 };
        struct attn_vtrace low, exact;
        struct attn_grads gl, ge;
        ck_assert_int_eq(attn_vtrace_alloc(&low, p.n_q, p.n_k, p.d_k, p.d_v, &v), ATTN_OK);
        ck_assert_int_eq(attn_vtrace_alloc(&exact, p.n_q, p.n_k, p.d_k, p.d_v, &v), ATTN_OK);
        ck_assert_int_eq(attn_forward_precision_vtrace(&low, &ap, &v, &prec), ATTN_OK);
        ck_assert_int_eq(attn_forward_variants(&exact, &ap, &v), ATTN_OK);
        ck_assert_int_eq(attn_grads_alloc(&gl, p.n_q, p.n_k, p.d_k, p.d_v), ATTN_OK);
        ck_assert_int_eq(attn_grads_alloc(&ge, p.n_q, p.n_k, p.d_k, p.d_v), ATTN_OK);
        ck_assert_int_eq(attn_backward_precision(&gl, &ap, &v, &low, &dom, &prec), ATTN_OK);
        ck_assert_int_eq(attn_backward(&ge, &ap, &v, &exact, &dom), ATTN_OK);
        double gq = relative_gap(gl.grad_q.data, ge.grad_q.data, p.n_q * p.d_k);
        double gk = relative_gap(gl.grad_k.data, ge.grad_k.data, p.n_k * p.d_k);
        double gv = relative_gap(gl.grad_v.data, ge.grad_v.data, p.n_k * p.d_v);
        ck_assert_msg(gq < FLOAT32_GAP && gk < FLOAT32_GAP && gv < FLOAT32_GAP,
                      "round %d: grad_q %g, grad_k %g, "
                      "grad_v %g from float64", round, gq, gk, gv);
        ck_assert(fabs(gl.grad_sink_logit - ge.grad_sink_logit) <= FLOAT32_GAP * (1 + fabs(ge.grad_sink_logit)));
        attn_grads_free(&gl), attn_grads_free(&ge);
        attn_vtrace_free(&low), attn_vtrace_free(&exact);
        free(d_out);
        attn_rope_release(&rope);
        problem_free(&p);
    }
}
END_TEST

/* dO·Vᵀ past 65504 in a float16 accumulator: +inf kept, named as grad_weights [0, 0];
 * a dO past the format is +inf from the start (grad_v); a float32 accumulator holds both
 * sums. Bad calls are ATTN_EINVAL. */
START_TEST(test_backward_overflow_kept_and_named)
{
    double qd[] = { 1, 0 }, kd[] = { 1, 0 }, vd[] = { 4, 1 }, dod[] = { 30000, 1 };
    struct attn_matrix q = attn_matrix_view(qd, 1, 2), k = attn_matrix_view(kd, 1, 2);
    struct attn_matrix v = attn_matrix_view(vd, 1, 2), d_out = attn_matrix_view(dod, 1, 2);
    struct attn_problem p = { &q, &k, &v, NULL, { ATTN_MASK_NONE, NULL, 0 }, 1, false };
    struct attn_precision same16 = { ATTN_FLOAT16, ATTN_FLOAT16 };
    struct attn_vtrace fwd;
    struct attn_grads g;
    static const struct attn_variants none;
    ck_assert_int_eq(attn_vtrace_alloc(&fwd, 1, 1, 2, 2, &none), ATTN_OK);
    ck_assert_int_eq(attn_forward_precision_vtrace(&fwd, &p, &none, &same16), ATTN_OK);
    ck_assert_int_eq(attn_grads_alloc(&g, 1, 1, 2, 2), ATTN_OK);
    ck_assert_int_eq(attn_backward_precision(&g, &p, &none, &fwd, &d_out, &same16), ATTN_OK);
    /* grad_v = 1·dO holds; dP = 30000·4 + 1·1 overflows at its first partial sum */
    ck_assert_double_eq(g.grad_v.data[0], 30000);
    ck_assert(g.grad_weights.data[0] == INFINITY);
    ck_assert_int_eq(g.fault.step, ATTN_GRAD_WEIGHTS);
    ck_assert_uint_eq(g.fault.row, 0);
    ck_assert_uint_eq(g.fault.col, 0);
    ck_assert_str_eq(attn_grad_step_name(g.fault.step), "grad_weights");
    struct attn_precision wide = { ATTN_FLOAT16, ATTN_FLOAT32 };
    ck_assert_int_eq(attn_forward_precision_vtrace(&fwd, &p, &none, &wide), ATTN_OK);
    ck_assert_int_eq(attn_backward_precision(&g, &p, &none, &fwd, &d_out, &wide), ATTN_OK);
    ck_assert_double_eq(g.grad_weights.data[0], 120001);
    ck_assert_int_eq(g.fault.step, ATTN_GRAD_NONE);
    dod[0] = 70000; /* past float16: +inf as it is read */
    ck_assert_int_eq(attn_backward_precision(&g, &p, &none, &fwd, &d_out, &wide), ATTN_OK);
    ck_assert(g.grad_v.data[0] == INFINITY);
    ck_assert_int_eq(g.fault.step, ATTN_GRAD_V);
    struct attn_precision bad = { ATTN_FLOAT64, ATTN_FLOAT64 };
    ck_assert_int_eq(attn_backward_precision(&g, &p, &none, &fwd, &d_out, &bad), ATTN_EINVAL);
    struct attn_matrix wrong = attn_matrix_view(dod, 2, 1);
    ck_assert_int_eq(attn_backward_precision(&g, &p, &none, &fwd, &wrong, &wide), ATTN_EINVAL);
    const struct attn_variants capped = { .softcap = 2 }; /* fwd holds no softcapped */
    ck_assert_int_eq(attn_backward_precision(&g, &p, &capped, &fwd, &d_out, &wide), ATTN_EINVAL);
    attn_grads_free(&g);
    attn_vtrace_free(&fwd);
}
END_TEST

/* ---- Multi ---- */

/* out (rows × cols) = x·W + b by the rules, in the emulation's rounding. */
static void em_project(double *out, const double *x, size_t rows, size_t inner, const double *w,
                       const double *b, size_t cols, enum attn_format f, enum attn_format acc)
{
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < cols; j++) {
            double sum = 0;
            for (size_t t = 0; t < inner; t++)
                sum = em_fma(em_round(x[i * inner + t], f), em_round(w[t * cols + j], f), sum, acc);
            if (b != NULL)
                sum = em_round((__float128)sum + em_round(b[j], f), acc);
            out[i * cols + j] = em_round(sum, f);
        }
}

START_TEST(test_multihead_bit_for_bit)
{
    const size_t n = 3, d = 4, heads = 2, kv = 1, d_k = 2, kv_cols = kv * d_k;
    double *x = random_cells(n * d, 2), *wq = random_cells(d * d, 1), *wk = random_cells(d * kv_cols, 1);
    double *wv = random_cells(d * kv_cols, 1), *wo = random_cells(d * d, 1);
    double *bq = random_cells(d, 1), *bo = random_cells(d, 1);
    struct attn_matrix xm = attn_matrix_view(x, n, d), wqm = attn_matrix_view(wq, d, d);
    struct attn_matrix wkm = attn_matrix_view(wk, d, kv_cols), wvm = attn_matrix_view(wv, d, kv_cols);
    struct attn_matrix wom = attn_matrix_view(wo, d, d);
    struct attn_mh_problem p = { .x_q = &xm, .x_kv = &xm, .w_q = &wqm, .w_k = &wkm, .w_v = &wvm,
                                 .w_o = &wom, .b_q = bq, .b_o = bo, .heads = heads,
                                 .kv_heads = kv, .mask = { ATTN_MASK_CAUSAL, NULL, 0 },
                                 .scale = 1 / sqrt((double)d_k) };
    for (size_t fi = 0; fi < 3; fi++)
        for (int same_acc = 0; same_acc < 2; same_acc++) {
            enum attn_format f = lows[fi], acc = same_acc ? f : ATTN_FLOAT32;
            struct attn_mh_trace t;
            ck_assert_int_eq(attn_mh_trace_alloc(&t, n, n, d, heads, kv), ATTN_OK);
            struct attn_precision prec = { f, acc };
            ck_assert_int_eq(attn_mh_forward_precision(&t, &p, NULL, NULL, &prec), ATTN_OK);
            double q[3 * 4], k[3 * 2], v[3 * 2], concat[3 * 4], out[3 * 4];
            em_project(q, x, n, d, wq, bq, d, f, acc);
            em_project(k, x, n, d, wk, NULL, kv_cols, f, acc);
            em_project(v, x, n, d, wv, NULL, kv_cols, f, acc);
            expect_cells("q", t.q.data, q, n * d, f, acc);
            expect_cells("k", t.k.data, k, n * kv_cols, f, acc);
            expect_cells("v", t.v.data, v, n * kv_cols, f, acc);
            for (size_t h = 0; h < heads; h++) { /* every head reads kv head 0 */
                double qh[3 * 2];
                for (size_t i = 0; i < n; i++)
                    for (size_t c = 0; c < d_k; c++)
                        qh[i * d_k + c] = q[i * d + h * d_k + c];
                struct problem hp = { .n_q = n, .n_k = n, .d_k = d_k, .d_v = d_k, .q = qh, .k = k,
                                      .v = v, .mask = ATTN_MASK_CAUSAL, .scale = p.scale };
                struct steps s;
                steps_alloc(&s, &hp);
                emulate(&hp, f, acc, &s);
                expect_cells("head scores", t.head[h].scores.data, s.scores, n * n, f, acc);
                expect_cells("head weights", t.head[h].weights.data, s.weights, n * n, f, acc);
                expect_cells("head output", t.head[h].output.data, s.output, n * d_k, f, acc);
                for (size_t i = 0; i < n; i++)
                    for (size_t c = 0; c < d_k; c++)
                        concat[i * d + h * d_k + c] = s.output[i * d_k + c];
                steps_free(&s);
            }
            em_project(out, concat, n, d, wo, bo, d, f, acc);
            expect_cells("output", t.output.data, out, n * d, f, acc);
            ck_assert_int_eq(t.fault.step, ATTN_MH_NONE);
            attn_mh_trace_free(&t);
        }
    free(x), free(wq), free(wk), free(wv), free(wo), free(bq), free(bo);
}
END_TEST

/* ---- Multi-head backward ---- */

/* One multi-head problem of the backward's tests: arrays, weights in their layout. */
struct mh_case {
    size_t n_q, n_k, d, heads, kv, d_k;
    bool cross, tr;
    double *xq, *xkv, *w[4], *b[4], *bias; /* b[i] NULL when that bias is not given */
    unsigned char *allow;
    enum attn_mask_kind mask;
    double scale;
    struct attn_matrix views[7]; /* x_q, x_kv, w_q … w_o, bias: core's problem's */
};

/* W's (in, out) cell, W read as (in, out) or, transposed, (out, in). */
static size_t w_at(const struct mh_case *c, size_t in, size_t out, size_t outs)
{
    return c->tr ? out * c->d + in : in * outs + out;
}

static struct mh_case mh_case_of(int r)
{
    static const size_t shapes[][2] = { { 1, 1 }, { 2, 1 }, { 2, 2 }, { 4, 2 }, { 4, 1 } };
    struct mh_case c = { .heads = shapes[r % 5][0], .kv = shapes[r % 5][1],
                         .d_k = 2 * (1 + next64() % 2), .cross = r % 3 == 1, .tr = r % 2 == 1 };
    c.d = c.heads * c.d_k;
    c.n_q = 1 + next64() % 4;
    c.n_k = c.cross ? 1 + next64() % 5 : c.n_q;
    size_t kvd = c.kv * c.d_k, outs[4] = { c.d, kvd, kvd, c.d };
    c.xq = random_cells(c.n_q * c.d, 2);
    c.xkv = c.cross ? random_cells(c.n_k * c.d, 2) : c.xq;
    for (int i = 0; i < 4; i++) {
        c.w[i] = random_cells(c.d * outs[i], 1);
        c.b[i] = (r + i) % 3 == 0 ? random_cells(outs[i], 1) : NULL;
    }
    c.bias = r % 4 == 2 ? random_cells(c.n_q * c.n_k, 2) : NULL;
    c.mask = (enum attn_mask_kind)(r % 3);
    c.allow = malloc(c.n_q * c.n_k);
    for (size_t i = 0; i < c.n_q * c.n_k; i++)
        c.allow[i] = i < c.n_k ? 0 : (next64() % 3) != 0; /* row 0 fully masked */
    c.scale = 1 / sqrt((double)c.d_k);
    return c;
}

static void mh_case_free(struct mh_case *c)
{
    free(c->xq);
    if (c->cross)
        free(c->xkv);
    for (int i = 0; i < 4; i++)
        free(c->w[i]), free(c->b[i]);
    free(c->bias), free(c->allow);
}

static struct attn_mh_problem mh_problem_of(struct mh_case *c)
{
    size_t kvd = c->kv * c->d_k, outs[4] = { c->d, kvd, kvd, c->d };
    c->views[0] = attn_matrix_view(c->xq, c->n_q, c->d);
    c->views[1] = attn_matrix_view(c->xkv, c->n_k, c->d);
    for (int i = 0; i < 4; i++)
        c->views[2 + i] = c->tr ? attn_matrix_view(c->w[i], outs[i], c->d)
                                : attn_matrix_view(c->w[i], c->d, outs[i]);
    c->views[6] = attn_matrix_view(c->bias, c->n_q, c->n_k);
    return (struct attn_mh_problem){
        .x_q = &c->views[0], .x_kv = c->cross ? &c->views[1] : &c->views[0],
        .w_q = &c->views[2], .w_k = &c->views[3], .w_v = &c->views[4], .w_o = &c->views[5],
        .b_q = c->b[0], .b_k = c->b[1], .b_v = c->b[2], .b_o = c->b[3],
        .transposed_weights = c->tr, .heads = c->heads, .kv_heads = c->kv,
        .bias = c->bias ? &c->views[6] : NULL, .mask = { c->mask, c->allow, c->n_q },
        .scale = c->scale };
}

/* The emulation's layer gradients. */
struct em_mh {
    double *gwo, *gbo, *gq, *gk, *gv, *gw[3], *gb[3], *gx_q, *gx_kv, *gbias;
    struct em_grads *head;
};

/* sums (cols) = m's (rows × cols) column sums in acc, each partial rounded once, then f. */
static void em_column_sums(double *sums, const double *m, size_t rows, size_t cols,
                           enum attn_format f, enum attn_format acc)
{
    for (size_t j = 0; j < cols; j++) {
        double s = 0;
        for (size_t i = 0; i < rows; i++)
            s = em_round((__float128)s + m[i * cols + j], acc);
        sums[j] = em_round(s, f);
    }
}

/* One projection backwards by the rules: dW in the weights' layout and db rounded to f, dX
 * (rows × d) in acc. */
static void em_project_back(const struct mh_case *c, const double *x, size_t rows,
                            const double *w, size_t outs, const double *dy, double *dw,
                            double *db, double *dx, enum attn_format f, enum attn_format acc)
{
    size_t d = c->d;
    double *xf = em_rounded(x, rows * d, f), *wf = em_rounded(w, d * outs, f);
    if (c->tr) /* dW (outs, d) = dYᵀ·X */
        em_product(dw, outs, rows, d, dy, 1, outs, xf, d, 1, acc);
    else /* dW (d, outs) = Xᵀ·dY */
        em_product(dw, d, rows, outs, xf, 1, d, dy, outs, 1, acc);
    for (size_t i = 0; i < d * outs; i++)
        dw[i] = em_round(dw[i], f);
    em_column_sums(db, dy, rows, outs, f, acc);
    for (size_t r = 0; r < rows; r++) /* dX = dY·Wᵀ, W(in, out) as its layout holds it */
        for (size_t in = 0; in < d; in++) {
            double s = 0;
            for (size_t o = 0; o < outs; o++)
                s = em_fma(dy[r * outs + o], wf[w_at(c, in, o, outs)], s, acc);
            dx[r * d + in] = s;
        }
    free(xf), free(wf);
}

/* The multi-head backward by the rules from the low forward t (and its variants' steps). */
static void em_mh_backward(struct em_mh *e, const struct mh_case *c, const struct attn_mh_trace *t,
                           const struct attn_variants *v, const struct attn_vtrace *vsteps,
                           const double *d_out, enum attn_format f, enum attn_format acc)
{
    size_t n_q = c->n_q, n_k = c->n_k, d = c->d, d_k = c->d_k, kvd = c->kv * d_k;
    double *dof = em_rounded(d_out, n_q * d, f), *wof = em_rounded(c->w[3], d * d, f);
    const double *concat = t->concat.data; /* held in the format by the low forward */
    if (c->tr)
        em_product(e->gwo, d, n_q, d, dof, 1, d, concat, d, 1, acc);
    else
        em_product(e->gwo, d, n_q, d, concat, 1, d, dof, d, 1, acc);
    for (size_t i = 0; i < d * d; i++)
        e->gwo[i] = em_round(e->gwo[i], f);
    em_column_sums(e->gbo, dof, n_q, d, f, acc);
    double *gc = calloc(n_q * d, sizeof *gc);
    for (size_t r = 0; r < n_q; r++)
        for (size_t in = 0; in < d; in++) {
            double s = 0;
            for (size_t o = 0; o < d; o++)
                s = em_fma(dof[r * d + o], wof[w_at(c, in, o, d)], s, acc);
            gc[r * d + in] = em_round(s, f);
        }
    for (size_t h = 0; h < c->heads; h++) {
        size_t g = h * c->kv / c->heads;
        double *q = malloc(n_q * d_k * sizeof *q), *k = malloc(n_k * d_k * sizeof *k);
        double *vv = malloc(n_k * d_k * sizeof *vv), *dh = malloc(n_q * d_k * sizeof *dh);
        for (size_t r = 0; r < n_q; r++)
            for (size_t col = 0; col < d_k; col++) {
                q[r * d_k + col] = t->q.data[r * d + h * d_k + col];
                dh[r * d_k + col] = gc[r * d + h * d_k + col];
            }
        for (size_t r = 0; r < n_k; r++)
            for (size_t col = 0; col < d_k; col++) {
                k[r * d_k + col] = t->k.data[r * kvd + g * d_k + col];
                vv[r * d_k + col] = t->v.data[r * kvd + g * d_k + col];
            }
        struct problem hp = { .n_q = n_q, .n_k = n_k, .d_k = d_k, .d_v = d_k, .q = q, .k = k,
                              .v = vv, .bias = c->bias, .allow = c->allow, .mask = c->mask,
                              .scale = c->scale };
        struct attn_vtrace fwd = vsteps[h];
        fwd.base = t->head[h];
        em_grads_alloc(&e->head[h], &hp);
        em_backward(&e->head[h], &hp, &v[h], &fwd, dh, f, acc);
        const struct em_grads *eh = &e->head[h];
        for (size_t r = 0; r < n_q; r++)
            for (size_t col = 0; col < d_k; col++)
                e->gq[r * d + h * d_k + col] = eh->gq[r * d_k + col];
        for (size_t r = 0; r < n_k; r++)
            for (size_t col = 0; col < d_k; col++) { /* GQA: in head order, in acc */
                double *gk = &e->gk[r * kvd + g * d_k + col], *gv = &e->gv[r * kvd + g * d_k + col];
                *gk = em_round((__float128)*gk + eh->gk[r * d_k + col], acc);
                *gv = em_round((__float128)*gv + eh->gv[r * d_k + col], acc);
            }
        for (size_t cell = 0; c->bias != NULL && cell < n_q * n_k; cell++)
            e->gbias[cell] = em_round((__float128)e->gbias[cell] + eh->ds[cell], acc);
        free(q), free(k), free(vv), free(dh);
    }
    for (size_t i = 0; i < n_k * kvd; i++) {
        e->gk[i] = em_round(e->gk[i], f);
        e->gv[i] = em_round(e->gv[i], f);
    }
    double *px_k = calloc(n_k * d, sizeof *px_k), *px_v = calloc(n_k * d, sizeof *px_v);
    em_project_back(c, c->xq, n_q, c->w[0], d, e->gq, e->gw[0], e->gb[0], e->gx_q, f, acc);
    em_project_back(c, c->xkv, n_k, c->w[1], kvd, e->gk, e->gw[1], e->gb[1], px_k, f, acc);
    em_project_back(c, c->xkv, n_k, c->w[2], kvd, e->gv, e->gw[2], e->gb[2], px_v, f, acc);
    for (size_t i = 0; i < n_k * d; i++) /* the two products added once */
        e->gx_kv[i] = em_round((__float128)px_k[i] + px_v[i], acc);
    for (size_t i = 0; !c->cross && i < n_q * d; i++) /* x's gradient is both */
        e->gx_q[i] = em_round((__float128)e->gx_q[i] + e->gx_kv[i], acc);
    for (size_t i = 0; i < n_q * d; i++)
        e->gx_q[i] = em_round(e->gx_q[i], f);
    for (size_t i = 0; i < n_k * d; i++)
        e->gx_kv[i] = em_round(e->gx_kv[i], f);
    free(dof), free(wof), free(gc), free(px_k), free(px_v);
}

static void em_mh_alloc(struct em_mh *e, const struct mh_case *c)
{
    size_t d = c->d, kvd = c->kv * c->d_k, outs[3] = { d, kvd, kvd };
    e->gwo = calloc(d * d, sizeof(double));
    e->gbo = calloc(d, sizeof(double));
    e->gq = calloc(c->n_q * d, sizeof(double));
    e->gk = calloc(c->n_k * kvd, sizeof(double));
    e->gv = calloc(c->n_k * kvd, sizeof(double));
    for (int i = 0; i < 3; i++) {
        e->gw[i] = calloc(d * outs[i], sizeof(double));
        e->gb[i] = calloc(outs[i], sizeof(double));
    }
    e->gx_q = calloc(c->n_q * d, sizeof(double));
    e->gx_kv = calloc(c->n_k * d, sizeof(double));
    e->gbias = calloc(c->n_q * c->n_k, sizeof(double));
    e->head = calloc(c->heads, sizeof *e->head);
}

static void em_mh_free(struct em_mh *e, size_t heads)
{
    free(e->gwo), free(e->gbo), free(e->gq), free(e->gk), free(e->gv);
    for (int i = 0; i < 3; i++)
        free(e->gw[i]), free(e->gb[i]);
    free(e->gx_q), free(e->gx_kv), free(e->gbias);
    for (size_t h = 0; h < heads; h++)
        em_grads_free(&e->head[h]);
    free(e->head);
}

/* attn_mh_backward_precision of c with variants v (every head's) against em_mh_backward. */
static void mh_backward_and_compare(struct mh_case *c, const struct attn_variants *v,
                                    const double *d_out, enum attn_format f, enum attn_format acc)
{
    struct attn_mh_problem p = mh_problem_of(c);
    struct attn_precision prec = { f, acc };
    struct attn_variants *vs = calloc(c->heads, sizeof *vs);
    struct attn_vtrace *vt = calloc(c->heads, sizeof *vt);
    for (size_t h = 0; h < c->heads; h++) {
        vs[h] = *v;
        ck_assert_int_eq(attn_vtrace_alloc_steps(&vt[h], c->n_q, c->n_k, c->d_k, v), ATTN_OK);
    }
    struct attn_mh_trace t;
    ck_assert_int_eq(attn_mh_trace_alloc(&t, c->n_q, c->n_k, c->d, c->heads, c->kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_precision(&t, &p, vs, vt, &prec), ATTN_OK);
    struct attn_mh_grads g;
    struct attn_matrix dom = attn_matrix_view((double *)d_out, c->n_q, c->d);
    ck_assert_int_eq(attn_mh_grads_alloc(&g, c->n_q, c->n_k, c->d, c->heads, c->kv), ATTN_OK);
    ck_assert_int_eq(attn_mh_backward_precision(&g, &p, vs, vt, &t, &dom, &prec), ATTN_OK);
    struct em_mh e;
    em_mh_alloc(&e, c);
    em_mh_backward(&e, c, &t, vs, vt, d_out, f, acc);
    size_t d = c->d, kvd = c->kv * c->d_k, nn = c->n_q * c->n_k, outs[3] = { d, kvd, kvd };
    expect_cells("grad_w_o", g.grad_w_o.data, e.gwo, d * d, f, acc);
    expect_cells("grad_b_o", g.grad_b_o, e.gbo, d, f, acc);
    for (size_t h = 0; h < c->heads; h++) {
        const struct attn_grads *gh = &g.head[h];
        const struct em_grads *eh = &e.head[h];
        expect_cells("head grad_weights", gh->grad_weights.data, eh->dp, nn, f, acc);
        expect_cells("head delta", gh->delta, eh->delta, c->n_q, f, acc);
        expect_cells("head grad_masked", gh->grad_masked.data, eh->ds, nn, f, acc);
        expect_cells("head grad_scores", gh->grad_scores.data, eh->gscores, nn, f, acc);
        expect_cells("head grad_sink_logit", &g.grad_sink_logit[h], &eh->sink, 1, f, acc);
    }
    expect_cells("grad_q", g.grad_q.data, e.gq, c->n_q * d, f, acc);
    expect_cells("grad_k", g.grad_k.data, e.gk, c->n_k * kvd, f, acc);
    expect_cells("grad_v", g.grad_v.data, e.gv, c->n_k * kvd, f, acc);
    const struct attn_matrix *gw[3] = { &g.grad_w_q, &g.grad_w_k, &g.grad_w_v };
    const double *gb[3] = { g.grad_b_q, g.grad_b_k, g.grad_b_v };
    for (int i = 0; i < 3; i++) {
        ck_assert_uint_eq(gw[i]->rows, c->tr ? outs[i] : d); /* the weights' layout */
        expect_cells("grad_w", gw[i]->data, e.gw[i], d * outs[i], f, acc);
        expect_cells("grad_b", gb[i], e.gb[i], outs[i], f, acc);
    }
    expect_cells("grad_x_q", g.grad_x_q.data, e.gx_q, c->n_q * d, f, acc);
    if (c->cross)
        expect_cells("grad_x_kv", g.grad_x_kv.data, e.gx_kv, c->n_k * d, f, acc);
    if (c->bias != NULL)
        expect_cells("grad_bias", g.grad_bias.data, e.gbias, nn, f, acc);
    ck_assert_int_eq(g.fault.step, ATTN_MH_GRAD_NONE);
    em_mh_free(&e, c->heads);
    attn_mh_grads_free(&g);
    attn_mh_trace_free(&t);
    for (size_t h = 0; h < c->heads; h++)
        attn_vtrace_free(&vt[h]);
    free(vt), free(vs);
}

START_TEST(test_mh_backward_bit_for_bit)
{
    for (int round = 0; round < 30; round++) {
        struct mh_case c = mh_case_of(round);
        struct problem shape = { .n_q = c.n_q, .n_k = c.n_k, .d_k = c.d_k };
        struct attn_rope rope = { 0 };
        struct attn_variants v = round % 3 != 0 ? backward_variants(round, &rope, &shape)
                                                : (struct attn_variants){ 0 };
        double *d_out = random_cells(c.n_q * c.d, 1.5);
        for (size_t fi = 0; fi < 3; fi++) {
            mh_backward_and_compare(&c, &v, d_out, lows[fi], ATTN_FLOAT32);
            if (lows[fi] != ATTN_FLOAT32)
                mh_backward_and_compare(&c, &v, d_out, lows[fi], lows[fi]);
        }
        free(d_out);
        attn_rope_release(&rope);
        mh_case_free(&c);
    }
}
END_TEST

/* float32 by the rules lands within float32's own error of float64's layer gradients. */
START_TEST(test_mh_backward_float32_near_float64)
{
    for (int round = 0; round < 10; round++) {
        struct mh_case c = mh_case_of(round);
        struct attn_mh_problem p = mh_problem_of(&c);
        struct attn_precision prec = { ATTN_FLOAT32, ATTN_FLOAT32 };
        double *d_out = random_cells(c.n_q * c.d, 1);
        struct attn_matrix dom = attn_matrix_view(d_out, c.n_q, c.d);
        struct attn_mh_trace low, exact;
        struct attn_mh_grads gl, ge;
        ck_assert_int_eq(attn_mh_trace_alloc(&low, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_trace_alloc(&exact, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_forward_precision(&low, &p, NULL, NULL, &prec), ATTN_OK);
        ck_assert_int_eq(attn_mh_forward(&exact, &p), ATTN_OK);
        ck_assert_int_eq(attn_mh_grads_alloc(&gl, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_grads_alloc(&ge, c.n_q, c.n_k, c.d, c.heads, c.kv), ATTN_OK);
        ck_assert_int_eq(attn_mh_backward_precision(&gl, &p, NULL, NULL, &low, &dom, &prec), ATTN_OK);
        ck_assert_int_eq(attn_mh_backward(&ge, &p, NULL, NULL, &exact, &dom), ATTN_OK);
        for (int s = ATTN_MH_GRAD_W_O; s <= ATTN_MH_GRAD_BIAS; s++) {
            if (!attn_mh_grad_step_runs((enum attn_mh_grad_step)s, &p))
                continue;
            struct attn_matrix l = attn_mh_grads_step(&gl, (enum attn_mh_grad_step)s);
            struct attn_matrix x = attn_mh_grads_step(&ge, (enum attn_mh_grad_step)s);
            double gap = relative_gap(l.data, x.data, l.rows * l.cols);
            ck_assert_msg(gap < FLOAT32_GAP, "round %d: %s %g from float64", round,
                          attn_mh_grad_step_name((enum attn_mh_grad_step)s, !c.cross), gap);
        }
        attn_mh_grads_free(&gl), attn_mh_grads_free(&ge);
        attn_mh_trace_free(&low), attn_mh_trace_free(&exact);
        free(d_out);
        mh_case_free(&c);
    }
}
END_TEST

/* A dO past 65504 is +inf from grad_w_o on; dO·W_Oᵀ past it makes grad_concat the first;
 * a float32 sum holds what float16 does not. Bad calls are ATTN_EINVAL. */
START_TEST(test_mh_backward_overflow_kept_and_named)
{
    double x[] = { 1, 0, 0, 1 }, eye[] = { 1, 0, 0, 1 }, wo[] = { 300, 300, 300, 300 };
    double dod[] = { 300, 300, 300, 300 };
    struct attn_matrix xm = attn_matrix_view(x, 2, 2), em = attn_matrix_view(eye, 2, 2);
    struct attn_matrix wom = attn_matrix_view(wo, 2, 2), d_out = attn_matrix_view(dod, 2, 2);
    struct attn_mh_problem p = { .x_q = &xm, .x_kv = &xm, .w_q = &em, .w_k = &em, .w_v = &em,
                                 .w_o = &wom, .heads = 1, .kv_heads = 1,
                                 .mask = { ATTN_MASK_NONE, NULL, 0 }, .scale = 1 };
    struct attn_precision half = { ATTN_FLOAT16, ATTN_FLOAT32 };
    struct attn_mh_trace t;
    struct attn_mh_grads g;
    ck_assert_int_eq(attn_mh_trace_alloc(&t, 2, 2, 2, 1, 1), ATTN_OK);
    ck_assert_int_eq(attn_mh_grads_alloc(&g, 2, 2, 2, 1, 1), ATTN_OK);
    ck_assert_int_eq(attn_mh_forward_precision(&t, &p, NULL, NULL, &half), ATTN_OK);
    /* grad_concat = 300·300 + 300·300 = 180000: past float16 once rounded to the format */
    ck_assert_int_eq(attn_mh_backward_precision(&g, &p, NULL, NULL, &t, &d_out, &half), ATTN_OK);
    ck_assert(g.grad_concat.data[0] == INFINITY);
    ck_assert_int_eq(g.fault.step, ATTN_MH_GRAD_CONCAT);
    ck_assert_uint_eq(g.fault.row, 0);
    ck_assert_uint_eq(g.fault.col, 0);
    ck_assert_str_eq(attn_mh_grad_step_name(g.fault.step, true), "grad_concat");
    struct attn_precision wide = { ATTN_FLOAT32, ATTN_FLOAT32 };
    ck_assert_int_eq(attn_mh_forward_precision(&t, &p, NULL, NULL, &wide), ATTN_OK);
    ck_assert_int_eq(attn_mh_backward_precision(&g, &p, NULL, NULL, &t, &d_out, &wide), ATTN_OK);
    ck_assert_double_eq(g.grad_concat.data[0], 180000);
    ck_assert_int_eq(g.fault.step, ATTN_MH_GRAD_NONE);
    dod[3] = 70000; /* +inf in float16 as it is read: grad_w_o [.., 1] first */
    ck_assert_int_eq(attn_mh_forward_precision(&t, &p, NULL, NULL, &half), ATTN_OK);
    ck_assert_int_eq(attn_mh_backward_precision(&g, &p, NULL, NULL, &t, &d_out, &half), ATTN_OK);
    ck_assert_int_eq(g.fault.step, ATTN_MH_GRAD_W_O);
    ck_assert_uint_eq(g.fault.col, 1);
    struct attn_precision bad = { ATTN_FLOAT64, ATTN_FLOAT64 };
    ck_assert_int_eq(attn_mh_backward_precision(&g, &p, NULL, NULL, &t, &d_out, &bad), ATTN_EINVAL);
    struct attn_matrix wrong = attn_matrix_view(dod, 1, 4);
    ck_assert_int_eq(attn_mh_backward_precision(&g, &p, NULL, NULL, &t, &wrong, &half), ATTN_EINVAL);
    ck_assert_int_eq(attn_mh_backward_precision(NULL, &p, NULL, NULL, &t, &d_out, &half), ATTN_EINVAL);
    ck_assert_uint_gt(attn_mh_backward_precision_bytes(2, 2, 2, 1, 1, &half), 0);
    ck_assert_uint_eq(attn_mh_backward_precision_bytes(2, 2, 3, 2, 1, &half), 0);
    attn_mh_grads_free(&g);
    attn_mh_trace_free(&t);
}
END_TEST

/* ---- the notes' mistakes ---- */

/* Without the max, a float16 accumulator holds e^11 (59874) but not e^11.1 (66171). */
START_TEST(test_unshifted_softmax_overflows_at_11_1)
{
    double in[] = { 11, 0, 11.1, 0 }, e[4], w[4];
    struct attn_matrix im = attn_matrix_view(in, 2, 2), em = attn_matrix_view(e, 2, 2);
    struct attn_matrix wm = attn_matrix_view(w, 2, 2);
    struct attn_precision same16 = { ATTN_FLOAT16, ATTN_FLOAT16 };
    attn_softmax_rows_unshifted_precision(&em, &wm, &im, &same16);
    ck_assert_double_eq(e[0], em_round(exp(11.0), ATTN_FLOAT16));
    ck_assert(isfinite(w[0]) && isfinite(w[1]));
    ck_assert(e[2] == INFINITY);
    ck_assert(isnan(w[2]));  /* inf / inf */
    ck_assert_double_eq(w[3], 0); /* 1 / inf */
    /* in bfloat16's range both are finite */
    struct attn_precision same_bf = { ATTN_BFLOAT16, ATTN_BFLOAT16 };
    attn_softmax_rows_unshifted_precision(&em, &wm, &im, &same_bf);
    ck_assert(isfinite(e[2]) && isfinite(w[2]));
}
END_TEST

/* The column softmax and the product by the rules, against the emulation. */
START_TEST(test_column_softmax_and_product)
{
    enum { N = 5, K = 4, D = 3 };
    double *in = random_cells(N * K, 6), *v = random_cells(K * D, 2), w[N * K], o[N * D];
    in[2] = -INFINITY;
    struct attn_matrix im = attn_matrix_view(in, N, K), wm = attn_matrix_view(w, N, K);
    struct attn_matrix vm = attn_matrix_view(v, K, D), om = attn_matrix_view(o, N, D);
    for (size_t fi = 0; fi < 3; fi++) {
        struct attn_precision prec = { lows[fi], ATTN_FLOAT32 };
        attn_softmax_columns_precision(&wm, &im, &prec);
        attn_matmul_precision(&om, &wm, &vm, &prec);
        for (size_t j = 0; j < K; j++) {
            double max = -INFINITY, sum = 0, e[N];
            for (size_t i = 0; i < N; i++)
                max = fmax(max, in[i * K + j]);
            for (size_t i = 0; i < N; i++) {
                e[i] = em_round(exp(em_round((__float128)in[i * K + j] - max, ATTN_FLOAT32)),
                                ATTN_FLOAT32);
                sum = em_round((__float128)sum + e[i], ATTN_FLOAT32);
            }
            for (size_t i = 0; i < N; i++) {
                double want = em_round(em_round((__float128)e[i] / sum, ATTN_FLOAT32), lows[fi]);
                EXPECT(same(w[i * K + j], want), "%s column weight [%zu, %zu]",
                       attn_format_name(lows[fi]), i, j);
            }
        }
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < D; c++) {
                double acc = 0;
                for (size_t j = 0; j < K; j++)
                    acc = em_fma(w[i * K + j], em_round(v[j * D + c], lows[fi]), acc, ATTN_FLOAT32);
                EXPECT(same(o[i * D + c], em_round(acc, lows[fi])), "%s product [%zu, %zu]",
                       attn_format_name(lows[fi]), i, c);
            }
    }
    free(in);
    free(v);
}
END_TEST

/* ---- Error ---- */

START_TEST(test_step_error)
{
    double low[] = { 1, 2.5, INFINITY, -INFINITY, 4 }, exact[] = { 1, 2, 3, -INFINITY, 0 };
    struct attn_matrix a = attn_matrix_view(low, 1, 5), b = attn_matrix_view(exact, 1, 5);
    struct attn_step_error e = attn_step_error_of(&a, &b);
    ck_assert_double_eq(e.max_abs, 4);    /* the last cell */
    ck_assert_double_eq(e.max_rel, 0.25); /* 0.5 / 2; the exact 0 has no relative error */
    ck_assert_uint_eq(e.rel_row, 0);
    ck_assert_uint_eq(e.rel_col, 1);
    ck_assert_uint_eq(e.non_finite, 1);   /* inf where 3; −inf where −inf is no error */
}
END_TEST

static Suite *precision_suite(void)
{
    Suite *s = suite_create("precision");
    TCase *round = tcase_create("Round");
    tcase_add_unchecked_fixture(round, lists_setup, NULL);
    tcase_add_test(round, test_fast_round_is_the_definition);
    tcase_add_test(round, test_every_tie_float16);
    tcase_add_test(round, test_every_tie_bfloat16);
    tcase_add_test(round, test_random_against_lists);
    tcase_add_test(round, test_float16_is_the_compilers);
    tcase_add_test(round, test_edges);
    suite_add_tcase(s, round);
    TCase *fma_case = tcase_create("Fma");
    tcase_add_unchecked_fixture(fma_case, lists_setup, NULL);
    tcase_add_test(fma_case, test_fma_is_exact_then_rounded);
    suite_add_tcase(s, fma_case);
    TCase *forward = tcase_create("Forward");
    tcase_add_unchecked_fixture(forward, lists_setup, NULL);
    tcase_add_test(forward, test_forward_bit_for_bit);
    tcase_add_test(forward, test_overflow_kept_and_named);
    tcase_add_test(forward, test_input_past_the_format);
    tcase_add_test(forward, test_bad_arguments);
    suite_add_tcase(s, forward);
    TCase *backward = tcase_create("Backward");
    tcase_add_unchecked_fixture(backward, lists_setup, NULL);
    tcase_add_test(backward, test_backward_bit_for_bit);
    tcase_add_test(backward, test_backward_float32_near_float64);
    tcase_add_test(backward, test_backward_overflow_kept_and_named);
    suite_add_tcase(s, backward);
    TCase *multi = tcase_create("Multi");
    tcase_add_unchecked_fixture(multi, lists_setup, NULL);
    tcase_add_test(multi, test_multihead_bit_for_bit);
    suite_add_tcase(s, multi);
    TCase *mh_back = tcase_create("MultiBackward");
    tcase_add_unchecked_fixture(mh_back, lists_setup, NULL);
    tcase_add_test(mh_back, test_mh_backward_bit_for_bit);
    tcase_add_test(mh_back, test_mh_backward_float32_near_float64);
    tcase_add_test(mh_back, test_mh_backward_overflow_kept_and_named);
    suite_add_tcase(s, mh_back);
    TCase *mistakes = tcase_create("Mistakes");
    tcase_add_unchecked_fixture(mistakes, lists_setup, NULL);
    tcase_add_test(mistakes, test_unshifted_softmax_overflows_at_11_1);
    tcase_add_test(mistakes, test_column_softmax_and_product);
    suite_add_tcase(s, mistakes);
    TCase *error = tcase_create("Error");
    tcase_add_test(error, test_step_error);
    suite_add_tcase(s, error);
    return s;
}

int main(void)
{
    return suite_run(precision_suite());
}
