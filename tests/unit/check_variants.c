/*
 * tests/unit/check_variants.c — unit tests of core/variants.h: each variant's step
 * against values worked out independently, the fast path against the naive
 * reference, and the answer with every variant off against attn_forward, bit for bit.
 *
 * One Check suite, "variants", with the test cases
 *   Semantics  RoPE (both layouts), softcap, ALiBi's slopes and bias, the window,
 *              sinks, the sink logit and dropout, on hand-sized problems;
 *   Reference  random problems with random combinations: fast path == reference;
 *   Off        every variant off (or p = 0): the same bits as without them;
 *   Faults     overflow in a variant's step names that step.
 * Tests marked "both" run once with the fast path (even _i), once with the reference.
 *
 * The expected numbers come from numpy (float64) over the formulas quoted beside
 * each, or from exact arithmetic by hand; never from this code.
 */
#include <check.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/attention.h"
#include "core/multihead.h"
#include "core/random.h"
#include "core/softmax_row.h"
#include "core/variants.h"
#include "tests/unit/suite_run.h"

typedef enum attn_status (*vfn)(struct attn_vtrace *, const struct attn_problem *,
                                const struct attn_variants *);

static vfn impl_of(int i)
{
    return i % 2 == 0 ? attn_forward_variants : attn_reference_variants;
}

static int near(double got, double want, double tol)
{
    return got == want || fabs(got - want) <= tol + tol * fabs(want);
}

#define EXPECT_NEAR(got, want, tol)                                                      \
    ck_assert_msg(near((got), (want), (tol)), "%s = %.17g, want %.17g", #got, (double)(got), \
                  (double)(want))

/* A problem over caller-owned arrays, default scale 1/sqrt(d_k). */
struct fixture {
    struct attn_matrix q, k, v;
    struct attn_problem p;
};

static void fixture_init(struct fixture *f, double *q, size_t n_q, double *k, size_t n_k,
                         size_t d_k, double *v, size_t d_v)
{
    f->q = attn_matrix_view(q, n_q, d_k);
    f->k = attn_matrix_view(k, n_k, d_k);
    f->v = attn_matrix_view(v, n_k, d_v);
    memset(&f->p, 0, sizeof f->p);
    f->p.q = &f->q;
    f->p.k = &f->k;
    f->p.v = &f->v;
    f->p.scale = 1.0 / sqrt((double)d_k);
}

static void run(vfn fn, struct fixture *f, const struct attn_variants *v, struct attn_vtrace *t)
{
    ck_assert_int_eq(attn_vtrace_alloc(t, f->q.rows, f->k.rows, f->q.cols, f->v.cols, v), ATTN_OK);
    ck_assert_int_eq(fn(t, &f->p, v), ATTN_OK);
}

/* ---- the seed 000 example: Q = [[1,0,1,0],[0,1,0,1]], K = [[1,0,1,0],[1,1,1,1]],
 * V = [[10,0],[0,10]], scaled = [[1,1],[0,1]] ---- */

static double s0_q[] = { 1, 0, 1, 0, 0, 1, 0, 1 };
static double s0_k[] = { 1, 0, 1, 0, 1, 1, 1, 1 };
static double s0_v[] = { 10, 0, 0, 10 };

/* ---- RoPE ---- */

/*
 * x = [1, 2, 3, 4] at position 1, base 10000, r = 4: θ = (1, 1/100).
 * "half", Hugging Face's apply_rotary_pos_emb in numpy:
 *   emb = concat(θ, θ); rotate_half(x) = concat(-x[2:], x[:2]);
 *   x·cos(emb) + rotate_half(x)·sin(emb)
 * "interleaved", Meta's llama (complex numbers):
 *   z = x[0::2] + 1j·x[1::2]; t = z·exp(1j·θ); out[0::2] = t.real, out[1::2] = t.imag
 */
static const double rope_half_want[] = { -1.9841106485555495, 1.9599006674966641,
                                         2.4623779024123156, 4.019799668334995 };
static const double rope_inter_want[] = { -1.1426396637476532, 1.922075596544176,
                                          2.9598506679133294, 4.029799501669161 };

/* n_q = 1, n_k = 2: off = 1, so the query's default position is 1, the keys' 0 and 1. */
static void rope_case(int i, enum attn_rope_layout layout, const double *want)
{
    double q[] = { 1, 2, 3, 4 }, k[] = { 1, 2, 3, 4, 1, 2, 3, 4 }, v[] = { 1, 2 };
    struct fixture f;
    struct attn_rope rope = { .base = 10000, .layout = layout, .rotated = 4 };
    struct attn_variants var = { .rope = &rope };
    struct attn_vtrace t;
    fixture_init(&f, q, 1, k, 2, 4, v, 1);
    ck_assert_int_eq(attn_rope_prepare(&rope, 1, 2), ATTN_OK);
    run(impl_of(i), &f, &var, &t);
    for (int c = 0; c < 4; c++) {
        EXPECT_NEAR(t.q_rope.data[c], want[c], 1e-15);
        EXPECT_NEAR(t.k_rope.data[4 + c], want[c], 1e-15); /* key 1: position 1 too */
        EXPECT_NEAR(t.k_rope.data[c], k[c], 0);            /* key 0: position 0, unturned */
    }
    /* Same position: q·k is |x|² = 30 before and after the turn. */
    EXPECT_NEAR(t.base.scores.data[1], 30, 1e-13);
    attn_vtrace_free(&t);
    attn_rope_release(&rope);
}

START_TEST(test_rope_half) /* both */
{
    rope_case(_i, ATTN_ROPE_HALF, rope_half_want);
}
END_TEST

START_TEST(test_rope_interleaved) /* both */
{
    rope_case(_i, ATTN_ROPE_INTERLEAVED, rope_inter_want);
}
END_TEST

/* The two layouts pair different columns, so core turns the same query into different
 * vectors (here by up to 0.84): a layout read as the other would show. */
START_TEST(test_rope_layouts_differ)
{
    double q[] = { 1, 2, 3, 4 }, k[] = { 1, 2, 3, 4, 1, 2, 3, 4 }, v[] = { 1, 2 }, diff = 0;
    struct attn_rope half = { .base = 10000, .layout = ATTN_ROPE_HALF, .rotated = 4 };
    struct attn_rope inter = { .base = 10000, .layout = ATTN_ROPE_INTERLEAVED, .rotated = 4 };
    struct attn_variants vh = { .rope = &half }, vi = { .rope = &inter };
    struct fixture f;
    struct attn_vtrace th, ti;
    fixture_init(&f, q, 1, k, 2, 4, v, 1);
    ck_assert_int_eq(attn_rope_prepare(&half, 1, 2), ATTN_OK);
    ck_assert_int_eq(attn_rope_prepare(&inter, 1, 2), ATTN_OK);
    run(impl_of(0), &f, &vh, &th);
    run(impl_of(0), &f, &vi, &ti);
    for (int c = 0; c < 4; c++)
        diff = fmax(diff, fabs(th.q_rope.data[c] - ti.q_rope.data[c]));
    ck_assert_msg(diff > 0.8, "the layouts' rotated q differ by %g", diff);
    attn_vtrace_free(&th);
    attn_vtrace_free(&ti);
    attn_rope_release(&half);
    attn_rope_release(&inter);
}
END_TEST

/* fraction: r = 2 of d_k = 4 turns only the first pair; columns 2, 3 pass unchanged.
 * "half" with r = 2 pairs 0 with 1: (1·cos 1 − 2·sin 1, 2·cos 1 + 1·sin 1). */
START_TEST(test_rope_partial) /* both */
{
    double q[] = { 1, 2, 3, 4 }, k[] = { 1, 2, 3, 4, 1, 2, 3, 4 }, v[] = { 1, 2 };
    struct fixture f;
    struct attn_rope rope = { .base = 10000, .layout = ATTN_ROPE_HALF, .rotated = 2 };
    struct attn_variants var = { .rope = &rope };
    struct attn_vtrace t;
    fixture_init(&f, q, 1, k, 2, 4, v, 1);
    ck_assert_int_eq(attn_rope_prepare(&rope, 1, 2), ATTN_OK);
    run(impl_of(_i), &f, &var, &t);
    EXPECT_NEAR(t.q_rope.data[0], cos(1) - 2 * sin(1), 1e-15);
    EXPECT_NEAR(t.q_rope.data[1], 2 * cos(1) + sin(1), 1e-15);
    EXPECT_NEAR(t.q_rope.data[2], 3, 0);
    EXPECT_NEAR(t.q_rope.data[3], 4, 0);
    attn_vtrace_free(&t);
    attn_rope_release(&rope);
}
END_TEST

/* RoPE's point: scores depend on positions only through their difference. Shifting
 * every position by 7 leaves the scores as they were (to rounding). */
START_TEST(test_rope_relative)
{
    double q[] = { 0.3, -1, 2, 0.5, 1, 1, -0.2, 0.7 }, k[] = { 1, 0.5, -1, 2, 0, 1, 1, 1, 3, -2, 0, 1 };
    double v[] = { 1, 2, 3 }, pq[] = { 1, 2 }, pk[] = { 0, 1, 2 };
    double pq7[] = { 8, 9 }, pk7[] = { 7, 8, 9 };
    struct fixture f;
    struct attn_vtrace a, b;
    for (int layout = 0; layout < 2; layout++) {
        struct attn_rope r1 = { .base = 100, .layout = layout, .rotated = 4, .positions_q = pq,
                                .positions_k = pk };
        struct attn_rope r2 = r1;
        r2.positions_q = pq7;
        r2.positions_k = pk7;
        struct attn_variants v1 = { .rope = &r1 }, v2 = { .rope = &r2 };
        fixture_init(&f, q, 2, k, 3, 4, v, 1);
        ck_assert_int_eq(attn_rope_prepare(&r1, 2, 3), ATTN_OK);
        ck_assert_int_eq(attn_rope_prepare(&r2, 2, 3), ATTN_OK);
        run(attn_forward_variants, &f, &v1, &a);
        run(attn_forward_variants, &f, &v2, &b);
        for (int c = 0; c < 6; c++)
            EXPECT_NEAR(b.base.scores.data[c], a.base.scores.data[c], 1e-13);
        attn_vtrace_free(&a);
        attn_vtrace_free(&b);
        attn_rope_release(&r1);
        attn_rope_release(&r2);
    }
}
END_TEST

START_TEST(test_rope_prepare_rejects)
{
    struct attn_rope bad[] = {
        { .base = 10000, .rotated = 0 }, { .base = 10000, .rotated = 3 },
        { .base = 0, .rotated = 2 },     { .base = -1, .rotated = 2 },
        { .base = INFINITY, .rotated = 2 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(attn_rope_prepare(&bad[i], 2, 2), ATTN_EINVAL);
        ck_assert_ptr_null(bad[i].cos_q);
        attn_rope_release(&bad[i]);
    }
}
END_TEST

/* ---- softcap: c·tanh(scaled / c), Gemma 2 ---- */

/* Seed 000 with c = 0.5: numpy 0.5·tanh([[1,1],[0,1]] / 0.5) → 0.48201379003790845, 0;
 * softmax of that row [0, 0.482...] → [0.3817767109287995, 0.6182232890712004],
 * output [3.817767109287995, 6.182232890712004]. */
START_TEST(test_softcap_seed) /* both */
{
    struct fixture f;
    struct attn_variants var = { .softcap = 0.5 };
    struct attn_vtrace t;
    fixture_init(&f, s0_q, 2, s0_k, 2, 4, s0_v, 2);
    run(impl_of(_i), &f, &var, &t);
    const double want_cap[] = { 0.48201379003790845, 0.48201379003790845, 0,
                                0.48201379003790845 };
    for (int c = 0; c < 4; c++) {
        EXPECT_NEAR(t.softcapped.data[c], want_cap[c], 1e-16);
        EXPECT_NEAR(t.base.masked.data[c], want_cap[c], 1e-16);
    }
    EXPECT_NEAR(t.base.scaled.data[0], 1, 0); /* scaled keeps its meaning */
    EXPECT_NEAR(t.base.weights.data[2], 0.3817767109287995, 1e-15);
    EXPECT_NEAR(t.base.weights.data[3], 0.6182232890712004, 1e-15);
    EXPECT_NEAR(t.base.output.data[2], 3.817767109287995, 1e-14);
    EXPECT_NEAR(t.base.output.data[3], 6.182232890712004, 1e-14);
    attn_vtrace_free(&t);
}
END_TEST

/* The vectorized c·tanh(x/c) against libm's tanh, in each of its regimes: the series
 * (|y| < 2^-5), the quotient of exponentials, saturation, and signs. */
START_TEST(test_softcap_row_vs_libm)
{
    double x[2000], out[2000];
    for (int i = 0; i < 2000; i++)
        x[i] = (i % 2 ? -1 : 1) * 30 * pow(10, -12 + i * 15.0 / 2000); /* |y| 1e-12 .. 1e3 */
    attn_row_softcap(x, out, 2000, 30);
    for (int i = 0; i < 2000; i++) {
        double want = 30 * tanh(x[i] / 30);
        ck_assert_msg(fabs(out[i] - want) <= 4 * DBL_EPSILON * fabs(want), "x %.17g: %.17g vs %.17g",
                      x[i], out[i], want);
    }
}
END_TEST

/* Scores of ±1e6 capped at c = 30 stay within ±30 (tanh saturates). */
START_TEST(test_softcap_bounds) /* both */
{
    double q[] = { 1e6, -1e6 }, k[] = { 1, 1 }, v[] = { 1, 2 };
    struct fixture f;
    struct attn_variants var = { .softcap = 30 };
    struct attn_vtrace t;
    fixture_init(&f, q, 2, k, 1, 1, v, 1);
    f.p.scale = 1;
    run(impl_of(_i), &f, &var, &t);
    EXPECT_NEAR(t.softcapped.data[0], 30, 0);
    EXPECT_NEAR(t.softcapped.data[1], -30, 0);
    attn_vtrace_free(&t);
}
END_TEST

/* ---- ALiBi ---- */

/* The paper's slopes (Press et al., "Train short, test long", and its code's
 * get_slopes): 8 heads 2^-1 .. 2^-8; 6 heads (not a power of two): the 4-head slopes
 * 2^-2, 2^-4, 2^-6, 2^-8, then the 8-head list's slopes 0 and 2 (2^-1, 2^-3). */
START_TEST(test_alibi_slopes)
{
    double s8[8], s6[6], s1[1];
    const double want8[] = { 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625 };
    const double want6[] = { 0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125 };
    attn_alibi_slopes(8, s8);
    attn_alibi_slopes(6, s6);
    attn_alibi_slopes(1, s1);
    for (int i = 0; i < 8; i++)
        EXPECT_NEAR(s8[i], want8[i], 0);
    for (int i = 0; i < 6; i++)
        EXPECT_NEAR(s6[i], want6[i], 0);
    EXPECT_NEAR(s1[0], 0.00390625, 0); /* 2^-8 */
}
END_TEST

/* n_q = 2, n_k = 3 (off = 1), scores 0, slope 0.5: masked = −0.5·|i + 1 − j|, by hand
 * [[−0.5, 0, −0.5], [−1, −0.5, 0]]; with causal, key 2 is hidden from query 0. */
START_TEST(test_alibi_bias) /* both */
{
    double q[] = { 0, 0 }, k[] = { 1, 2, 3 }, v[] = { 1, 2, 3 };
    struct fixture f;
    struct attn_variants var = { .alibi = true, .alibi_slope = 0.5 };
    struct attn_vtrace t;
    fixture_init(&f, q, 2, k, 3, 1, v, 1);
    f.p.mask.kind = ATTN_MASK_CAUSAL;
    run(impl_of(_i), &f, &var, &t);
    const double want[] = { -0.5, 0, -INFINITY, -1, -0.5, 0 };
    for (int c = 0; c < 6; c++)
        EXPECT_NEAR(t.base.masked.data[c], want[c], 0);
    /* Row 0: softmax(−0.5, 0) = (1/(1+e^0.5), e^0.5/(1+e^0.5)). */
    EXPECT_NEAR(t.base.weights.data[0], 1 / (1 + exp(0.5)), 1e-15);
    attn_vtrace_free(&t);
}
END_TEST

/* ---- window, sinks ---- */

/* FlashAttention's window_size (L, R) with n_q = 3, n_k = 5, bottom-right aligned
 * like causal (off = 2): query i sees keys i + 2 − L ... i + 2 + R. L = 1, R = 0:
 * row 0 keys {1, 2}, row 1 {2, 3}, row 2 {3, 4}; with one sink token key 0 as well. */
START_TEST(test_window_rule) /* both */
{
    double q[] = { 0, 0, 0 }, k[] = { 0, 0, 0, 0, 0 }, v[] = { 1, 2, 3, 4, 5 };
    static const unsigned char want[2][15] = {
        { 0, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1 },
        { 1, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 1 },
    };
    for (int sinks = 0; sinks < 2; sinks++) {
        struct fixture f;
        struct attn_variants var = { .window = true, .has_left = true, .left = 1,
                                     .has_right = true, .right = 0, .sink_tokens = (size_t)sinks };
        struct attn_vtrace t;
        fixture_init(&f, q, 3, k, 5, 1, v, 1);
        run(impl_of(_i), &f, &var, &t);
        for (int c = 0; c < 15; c++)
            ck_assert_msg((t.base.masked.data[c] != -INFINITY) == want[sinks][c],
                          "sinks %d cell %d", sinks, c);
        /* Equal scores: each row is uniform over what it sees. */
        EXPECT_NEAR(t.base.output.data[0], sinks ? 2 : 2.5, 1e-15);
        attn_vtrace_free(&t);
    }
}
END_TEST

/* n_q = 3, n_k = 2 (off = −1), L = R = 0: row 0 would see key −1, none: a fully masked
 * row (weights 0, output 0), not an error; rows 1, 2 see keys 0, 1. Unbounded sides
 * (null) with causal: left unbounded, right 0 is causal itself. */
START_TEST(test_window_empties_row) /* both */
{
    double q[] = { 1, 1, 1 }, k[] = { 1, 1 }, v[] = { 3, 5 };
    struct fixture f;
    struct attn_variants var = { .window = true, .has_left = true, .has_right = true };
    struct attn_vtrace t;
    fixture_init(&f, q, 3, k, 2, 1, v, 1);
    run(impl_of(_i), &f, &var, &t);
    ck_assert_int_eq(t.base.summary.fully_masked[0], 1);
    ck_assert_uint_eq(t.base.summary.n_fully_masked, 1);
    EXPECT_NEAR(t.base.output.data[0], 0, 0);
    EXPECT_NEAR(t.base.output.data[1], 3, 0);
    EXPECT_NEAR(t.base.output.data[2], 5, 0);
    attn_vtrace_free(&t);
}
END_TEST

/* ---- the sink logit ---- */

/* Seed 000 with z = 0: row 0 e/(2e+1) each and a sink of 1/(2e+1); row 1
 * (1, e)/(1+e+1) and 1/(e+2). numpy: [[0.4223187982515182]*2, [0.21194155761708547,
 * 0.5761168847658291]], sink [0.15536240349696362, 0.21194155761708547]. */
START_TEST(test_sink_logit) /* both */
{
    struct fixture f;
    struct attn_variants var = { .sink = true, .sink_logit = 0 };
    struct attn_vtrace t;
    fixture_init(&f, s0_q, 2, s0_k, 2, 4, s0_v, 2);
    run(impl_of(_i), &f, &var, &t);
    const double want[] = { 0.4223187982515182, 0.4223187982515182, 0.21194155761708547,
                            0.5761168847658291 };
    for (int c = 0; c < 4; c++)
        EXPECT_NEAR(t.base.weights.data[c], want[c], 1e-15);
    EXPECT_NEAR(t.sink_weight[0], 0.15536240349696362, 1e-15);
    EXPECT_NEAR(t.sink_weight[1], 0.21194155761708547, 1e-15);
    for (int i = 0; i < 2; i++)
        EXPECT_NEAR(t.base.summary.row_sums[i], 1 - t.sink_weight[i], 1e-15);
    /* The sink carries no value: output = weights @ V, 10·w. */
    EXPECT_NEAR(t.base.output.data[0], 4.223187982515182, 1e-14);
    attn_vtrace_free(&t);
}
END_TEST

/* A fully masked row gives everything to the sink. */
START_TEST(test_sink_fully_masked) /* both */
{
    static unsigned char allow[] = { 0, 0, 1, 1 };
    struct fixture f;
    struct attn_variants var = { .sink = true, .sink_logit = 3 };
    struct attn_vtrace t;
    fixture_init(&f, s0_q, 2, s0_k, 2, 4, s0_v, 2);
    f.p.mask.kind = ATTN_MASK_CELLS;
    f.p.mask.allow = allow;
    f.p.mask.rows = 2;
    run(impl_of(_i), &f, &var, &t);
    EXPECT_NEAR(t.sink_weight[0], 1, 0);
    EXPECT_NEAR(t.base.weights.data[0] + t.base.weights.data[1], 0, 0);
    ck_assert_int_eq(t.base.summary.fully_masked[0], 1);
    /* The row's softmax is the sink's alone: max 3, sum e^0, lse 3 (e^(3 − lse) = 1). */
    ck_assert(t.base.summary.row_max[0] == 3 && t.base.summary.row_sum[0] == 1 &&
              t.base.summary.lse[0] == 3);
    /* Row 1: masked (0, 1), sink 3: weights e^(m−3)/(e^−3 + e^−2 + 1). */
    double sum = exp(-3) + exp(-2) + 1;
    EXPECT_NEAR(t.sink_weight[1], 1 / sum, 1e-15);
    attn_vtrace_free(&t);
}
END_TEST

/* ---- dropout ---- */

/*
 * keep from the documented generator, stream 7, seed 42, k row-major over (3, 4),
 * recomputed in Python from the formula in core/random.h:
 *   u = [0.909, 0.635, 0.328, 0.732, 0.265, 0.956, 0.264, 0.629, 0.335, 0.122, 0.022, 0.849]
 *   keep (u >= 0.5) = [1,1,0,1, 0,1,0,1, 0,0,0,1]
 * dropped = weights · keep / (1 − 0.5); all scores 0 so weights are 1/4.
 */
START_TEST(test_dropout_keep) /* both */
{
    double q[] = { 0, 0, 0 }, k[] = { 0, 0, 0, 0 }, v[] = { 1, 2, 3, 4 };
    static const double want_keep[] = { 1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1 };
    struct fixture f;
    struct attn_variants var = { .dropout = true, .dropout_p = 0.5, .dropout_seed = 42 };
    struct attn_vtrace t;
    fixture_init(&f, q, 3, k, 4, 1, v, 1);
    run(impl_of(_i), &f, &var, &t);
    for (int c = 0; c < 12; c++) {
        EXPECT_NEAR(t.keep.data[c], want_keep[c], 0);
        EXPECT_NEAR(t.dropped.data[c], want_keep[c] * 0.5, 0);
        EXPECT_NEAR(t.base.weights.data[c], 0.25, 0); /* the weights stay as they were */
    }
    /* output row 0 = 0.5·(1 + 2 + 4) = 3.5; row 2 = 0.5·4 = 2. */
    EXPECT_NEAR(t.base.output.data[0], 3.5, 1e-15);
    EXPECT_NEAR(t.base.output.data[2], 2, 1e-15);
    EXPECT_NEAR(t.base.summary.row_sums[0], 1, 1e-15);
    attn_vtrace_free(&t);
    /* The draws themselves, from the one generator. */
    EXPECT_NEAR(attn_random_unit(42, ATTN_RANDOM_STREAM_DROPOUT, 0), 0.9092323889707515, 0);
    EXPECT_NEAR(attn_random_unit(42, ATTN_RANDOM_STREAM_DROPOUT, 10), 0.021881062036720578, 0);
}
END_TEST

/* dropout_first shifts the draws: a head whose cells start at k = 8 reads keep[8..12). */
START_TEST(test_dropout_first)
{
    double q[] = { 0 }, k[] = { 0, 0, 0, 0 }, v[] = { 1, 2, 3, 4 };
    struct fixture f;
    struct attn_variants var = { .dropout = true, .dropout_p = 0.5, .dropout_seed = 42,
                                 .dropout_first = 8 };
    struct attn_vtrace t;
    fixture_init(&f, q, 1, k, 4, 1, v, 1);
    run(attn_forward_variants, &f, &var, &t);
    static const double want[] = { 0, 0, 0, 1 }; /* keep[8..12) above */
    for (int c = 0; c < 4; c++)
        EXPECT_NEAR(t.keep.data[c], want[c], 0);
    attn_vtrace_free(&t);
}
END_TEST

/* ---- every variant off, p = 0: the bits of today ---- */

static uint64_t rng_state = 0x1234567u;
static double rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53 * 4 - 2;
}

static void fill(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = rnd();
}

static int same_bits(const struct attn_matrix *a, const struct attn_matrix *b)
{
    return memcmp(a->data, b->data, a->rows * a->cols * sizeof(double)) == 0;
}

static int same_trace(const struct attn_trace *a, const struct attn_trace *b)
{
    size_t n = a->n_q;
    return same_bits(&a->scores, &b->scores) && same_bits(&a->scaled, &b->scaled) &&
           same_bits(&a->masked, &b->masked) && same_bits(&a->weights, &b->weights) &&
           same_bits(&a->output, &b->output) &&
           memcmp(a->summary.row_sums, b->summary.row_sums, n * sizeof(double)) == 0 &&
           memcmp(a->summary.entropy, b->summary.entropy, n * sizeof(double)) == 0 &&
           memcmp(a->summary.argmax, b->summary.argmax, n * sizeof(size_t)) == 0;
}

/* Random problems, every mask kind, sizes across the 128-row blocks: a zeroed
 * attn_variants gives attn_forward's trace bit for bit. */
START_TEST(test_off_bit_identical)
{
    for (int round = 0; round < 40; round++) {
        size_t n_q = 1 + (size_t)(round * 37) % 300, n_k = 1 + (size_t)(round * 13) % 90;
        size_t d_k = 1 + (size_t)round % 9, d_v = 1 + (size_t)round % 5;
        double *q = malloc(n_q * d_k * sizeof *q), *k = malloc(n_k * d_k * sizeof *k);
        double *v = malloc(n_k * d_v * sizeof *v);
        unsigned char *allow = malloc(n_q * n_k);
        fill(q, n_q * d_k);
        fill(k, n_k * d_k);
        fill(v, n_k * d_v);
        for (size_t c = 0; c < n_q * n_k; c++)
            allow[c] = rnd() > -1.5;
        struct fixture f;
        fixture_init(&f, q, n_q, k, n_k, d_k, v, d_v);
        f.p.mask.kind = (enum attn_mask_kind)(round % 3);
        f.p.mask.allow = allow;
        f.p.mask.rows = n_q;
        struct attn_variants off = { 0 };
        struct attn_vtrace t;
        struct attn_trace plain;
        ck_assert_int_eq(attn_trace_alloc(&plain, n_q, n_k, d_v), ATTN_OK);
        ck_assert_int_eq(attn_forward(&plain, &f.p), ATTN_OK);
        run(attn_forward_variants, &f, &off, &t);
        ck_assert_msg(same_trace(&t.base, &plain), "round %d", round);
        attn_vtrace_free(&t);
        attn_trace_free(&plain);
        free(q);
        free(k);
        free(v);
        free(allow);
    }
}
END_TEST

/* p = 0 keeps every cell, and dropped = weights exactly, so the output has the bits of
 * the same problem without dropout (both through the variant path, with a softcap). */
START_TEST(test_dropout_zero_is_none) /* both */
{
    double q[24], k[30], v[20];
    fill(q, 24);
    fill(k, 30);
    fill(v, 20);
    struct fixture f;
    fixture_init(&f, q, 4, k, 5, 6, v, 4);
    struct attn_variants with = { .softcap = 2, .dropout = true, .dropout_p = 0, .dropout_seed = 9 };
    struct attn_variants without = { .softcap = 2 };
    struct attn_vtrace a, b;
    run(impl_of(_i), &f, &with, &a);
    run(impl_of(_i), &f, &without, &b);
    ck_assert(same_bits(&a.base.weights, &b.base.weights));
    ck_assert(same_bits(&a.base.output, &b.base.output));
    ck_assert(same_bits(&a.dropped, &a.base.weights));
    attn_vtrace_free(&a);
    attn_vtrace_free(&b);
}
END_TEST

/* ---- fast path against the reference ---- */

START_TEST(test_fast_vs_reference)
{
    for (int round = 0; round < 60; round++) {
        size_t n_q = 1 + (size_t)(round * 5) % 23, n_k = 1 + (size_t)(round * 11) % 29;
        size_t d_k = 2 + 2 * ((size_t)round % 4), d_v = 1 + (size_t)round % 3;
        double *q = malloc(n_q * d_k * sizeof *q), *k = malloc(n_k * d_k * sizeof *k);
        double *v = malloc(n_k * d_v * sizeof *v), *bias = malloc(n_q * n_k * sizeof *bias);
        fill(q, n_q * d_k);
        fill(k, n_k * d_k);
        fill(v, n_k * d_v);
        fill(bias, n_q * n_k);
        struct attn_matrix bm = attn_matrix_view(bias, n_q, n_k);
        struct fixture f;
        fixture_init(&f, q, n_q, k, n_k, d_k, v, d_v);
        f.p.bias = round % 4 == 0 ? &bm : NULL;
        f.p.mask.kind = round % 3 == 1 ? ATTN_MASK_CAUSAL : ATTN_MASK_NONE;
        struct attn_rope rope = { .base = round % 2 ? 10000 : 50,
                                  .layout = (enum attn_rope_layout)(round / 2 % 2),
                                  .rotated = round % 3 == 0 ? d_k : 2 };
        struct attn_variants var = {
            .rope = round % 5 != 4 ? &rope : NULL,
            .softcap = round % 3 == 2 ? 1.5 : 0,
            .alibi = round % 2 == 0, .alibi_slope = 0.25,
            .window = round % 4 != 3, .has_left = round % 5 != 0, .left = (size_t)round % 4,
            .has_right = round % 7 != 0, .right = (size_t)round % 3,
            .sink_tokens = (size_t)round % 3,
            .sink = round % 3 != 0, .sink_logit = 0.5,
            .dropout = round % 2 == 1, .dropout_p = 0.3, .dropout_seed = (uint64_t)round,
            .band_only = round % 3 == 0,
        };
        ck_assert_int_eq(attn_rope_prepare(&rope, n_q, n_k), ATTN_OK);
        struct attn_vtrace a, b;
        run(attn_forward_variants, &f, &var, &a);
        run(attn_reference_variants, &f, &var, &b);
        const struct attn_matrix *ma[] = { &a.base.scores, &a.base.masked, &a.base.weights,
                                           &a.base.output };
        const struct attn_matrix *mb[] = { &b.base.scores, &b.base.masked, &b.base.weights,
                                           &b.base.output };
        /* band_only leaves the hidden cells' scores 0 (the reference computes them all). */
        for (int m = var.window && var.band_only ? 1 : 0; m < 4; m++)
            for (size_t c = 0; c < ma[m]->rows * ma[m]->cols; c++)
                ck_assert_msg(near(ma[m]->data[c], mb[m]->data[c], 1e-12),
                              "round %d matrix %d cell %zu: %.17g vs %.17g", round, m, c,
                              ma[m]->data[c], mb[m]->data[c]);
        for (size_t i = 0; i < n_q; i++) {
            ck_assert_int_eq(a.base.summary.fully_masked[i], b.base.summary.fully_masked[i]);
            ck_assert(near(a.base.summary.entropy[i], b.base.summary.entropy[i], 1e-12));
            if (var.sink)
                ck_assert(near(a.sink_weight[i], b.sink_weight[i], 1e-12));
        }
        attn_vtrace_free(&a);
        attn_vtrace_free(&b);
        attn_rope_release(&rope);
        free(q);
        free(k);
        free(v);
        free(bias);
    }
}
END_TEST

/* ---- the row statistics: row_max, row_sum, lse against a naive loop ---- */

/*
 * Row i's statistics from the trace's masked scores and the sink logit, in long
 * double: max over the visible cells and z, Σ e^(x − max) with the sink's term, and
 * max + ln Σ. A fully masked row is the sink's softmax alone (z, 1, z), or -inf, 0,
 * -inf without a sink.
 */
static void expect_vrow_stats(const struct attn_vtrace *t, const struct attn_variants *var,
                              const char *what, int round)
{
    const struct attn_trace *b = &t->base;
    for (size_t i = 0; i < b->n_q; i++) {
        const double *x = b->masked.data + i * b->n_k;
        long double max = var->sink ? var->sink_logit : -INFINITY, sum = 0;
        for (size_t j = 0; j < b->n_k; j++)
            if (x[j] != -INFINITY && x[j] > max)
                max = x[j];
        for (size_t j = 0; max != -INFINITY && j < b->n_k; j++)
            if (x[j] != -INFINITY)
                sum += expl((long double)x[j] - max);
        if (var->sink)
            sum += expl((long double)var->sink_logit - max);
        const struct attn_summary *s = &b->summary;
        double lse = max == -INFINITY ? -INFINITY : (double)(max + logl(sum));
        ck_assert_msg(s->row_max[i] == (double)max && near(s->row_sum[i], (double)sum, 1e-12) &&
                          (s->lse[i] == lse || near(s->lse[i], lse, 1e-12)),
                      "%s round %d row %zu: max %.17g sum %.17g lse %.17g, naive %.17g %.17g "
                      "%.17g", what, round, i, s->row_max[i], s->row_sum[i], s->lse[i],
                      (double)max, (double)sum, lse);
    }
}

/* Random problems and combinations of variants (band_only among them), both paths, with
 * and without skip_summary: the statistics are always there and agree with the loop. */
START_TEST(test_row_stats_variants)
{
    for (int round = 0; round < 48; round++) {
        size_t n_q = 1 + (size_t)(round * 5) % 23, n_k = 1 + (size_t)(round * 11) % 29;
        size_t d_k = 2 + 2 * ((size_t)round % 4), d_v = 1 + (size_t)round % 3;
        double *q = malloc(n_q * d_k * sizeof *q), *k = malloc(n_k * d_k * sizeof *k);
        double *v = malloc(n_k * d_v * sizeof *v), *bias = malloc(n_q * n_k * sizeof *bias);
        unsigned char *allow = malloc(n_q * n_k);
        fill(q, n_q * d_k);
        fill(k, n_k * d_k);
        fill(v, n_k * d_v);
        fill(bias, n_q * n_k);
        for (size_t c = 0; c < n_q * n_k; c++) /* some rows blocked entirely */
            allow[c] = (c / n_k) % 4 != 3 && rnd() > -1;
        struct attn_matrix bm = attn_matrix_view(bias, n_q, n_k);
        struct fixture f;
        fixture_init(&f, q, n_q, k, n_k, d_k, v, d_v);
        f.p.bias = round % 4 == 0 ? &bm : NULL;
        f.p.mask.kind = (enum attn_mask_kind)(round % 3);
        f.p.mask.allow = allow;
        f.p.mask.rows = n_q;
        struct attn_rope rope = { .base = 10000, .rotated = 2 };
        struct attn_variants var = {
            .rope = round % 5 == 1 ? &rope : NULL,
            .softcap = round % 3 == 2 ? 1.5 : 0,
            .alibi = round % 2 == 0, .alibi_slope = 0.25,
            .window = round % 4 != 3, .has_left = round % 5 != 0, .left = (size_t)round % 4,
            .has_right = round % 7 != 0, .right = (size_t)round % 3,
            .sink_tokens = (size_t)round % 3,
            .sink = round % 3 != 0, .sink_logit = round % 2 ? 0.5 : 40,
            .band_only = round % 6 < 3,
        };
        ck_assert_int_eq(attn_rope_prepare(&rope, n_q, n_k), ATTN_OK);
        for (int path = 0; path < 4; path++) {
            struct attn_vtrace t;
            f.p.skip_summary = path >= 2;
            run(impl_of(path), &f, &var, &t);
            expect_vrow_stats(&t, &var, path % 2 ? "reference" : "fast", round);
            attn_vtrace_free(&t);
        }
        attn_rope_release(&rope);
        free(q);
        free(k);
        free(v);
        free(bias);
        free(allow);
    }
}
END_TEST

/*
 * argmax is the first key of the largest masked score (attention.h): scores 0, 1e-20,
 * 1e-20, 0 weigh the same after rounding, key 1 is the heaviest in exact arithmetic.
 * With a sink logit far above the scores every weight is 0: no argmax. "both", plain
 * and band_only (a window that shows every key).
 */
START_TEST(test_argmax_first_max_score) /* both */
{
    double q[] = { 1 }, k[] = { 0, 1e-20, 1e-20, 0 }, v[] = { 1, 2, 3, 4 };
    struct fixture f;
    fixture_init(&f, q, 1, k, 4, 1, v, 1);
    struct attn_variants var = { .sink = true, .sink_logit = 0, .window = true,
                                 .band_only = _i / 2 == 1 };
    struct attn_vtrace t;
    run(impl_of(_i), &f, &var, &t);
    ck_assert_uint_eq(t.base.summary.argmax[0], 1);
    EXPECT_NEAR(t.base.summary.max_weight[0], 0.2, 1e-16);
    EXPECT_NEAR(t.base.summary.lse[0], log(5), 1e-15);
    attn_vtrace_free(&t);
    var.sink_logit = 800;
    run(impl_of(_i), &f, &var, &t);
    ck_assert_uint_eq(t.base.summary.argmax[0], ATTN_NO_INDEX);
    ck_assert(t.base.summary.row_max[0] == 800 && t.base.summary.row_sum[0] == 1 &&
              t.base.summary.lse[0] == 800);
    attn_vtrace_free(&t);
}
END_TEST

/* ---- multi-head: each head its own slope, sink logit and dropout cells ---- */

/*
 * d_model 4, 2 heads over 1 kv head (multi-query), n = 3, rope, ALiBi slopes (0.5, 0.25),
 * sink logits (0, 1), dropout p = 0.3: the fast path matches the reference, and head 1
 * is single-head attention on its columns of the projections with its own variants,
 * its dropout draws starting at k = 1·n_q·n_k (row-major over (h, n_q, n_k)).
 */
START_TEST(test_multihead_heads)
{
    enum { N = 3, D = 4, H = 2 };
    double x[N * D], wq[D * D], wk[D * 2], wv[D * 2], wo[D * D];
    fill(x, N * D);
    fill(wq, D * D);
    fill(wk, D * 2);
    fill(wv, D * 2);
    fill(wo, D * D);
    struct attn_matrix mx = attn_matrix_view(x, N, D), mq = attn_matrix_view(wq, D, D);
    struct attn_matrix mk = attn_matrix_view(wk, D, 2), mv = attn_matrix_view(wv, D, 2);
    struct attn_matrix mo = attn_matrix_view(wo, D, D);
    struct attn_mh_problem p = { .x_q = &mx, .x_kv = &mx, .w_q = &mq, .w_k = &mk, .w_v = &mv,
                                 .w_o = &mo, .heads = H, .kv_heads = 1,
                                 .mask = { .kind = ATTN_MASK_CAUSAL }, .scale = 1 / sqrt(2) };
    struct attn_rope rope = { .base = 100, .rotated = 2 };
    ck_assert_int_eq(attn_rope_prepare(&rope, N, N), ATTN_OK);
    struct attn_variants var[H];
    const double slopes[H] = { 0.5, 0.25 }, sinks[H] = { 0, 1 };
    for (int h = 0; h < H; h++)
        var[h] = (struct attn_variants){ .rope = &rope, .alibi = true, .alibi_slope = slopes[h],
                                         .sink = true, .sink_logit = sinks[h], .dropout = true,
                                         .dropout_p = 0.3, .dropout_seed = 11,
                                         .dropout_first = (uint64_t)h * N * N };
    struct attn_mh_trace a, b;
    struct attn_vtrace va[H], vb[H];
    ck_assert_int_eq(attn_mh_trace_alloc(&a, N, N, D, H, 1), ATTN_OK);
    ck_assert_int_eq(attn_mh_trace_alloc(&b, N, N, D, H, 1), ATTN_OK);
    for (int h = 0; h < H; h++) {
        ck_assert_int_eq(attn_vtrace_alloc_steps(&va[h], N, N, 2, &var[h]), ATTN_OK);
        ck_assert_int_eq(attn_vtrace_alloc_steps(&vb[h], N, N, 2, &var[h]), ATTN_OK);
    }
    ck_assert_int_eq(attn_mh_forward_variants(&a, &p, var, va), ATTN_OK);
    ck_assert_int_eq(attn_mh_reference_variants(&b, &p, var, vb), ATTN_OK);
    for (int c = 0; c < N * D; c++)
        ck_assert(near(a.output.data[c], b.output.data[c], 1e-12));
    for (int h = 0; h < H; h++)
        for (int c = 0; c < N * N; c++) {
            ck_assert(near(a.head[h].weights.data[c], b.head[h].weights.data[c], 1e-12));
            double u = attn_random_unit(11, ATTN_RANDOM_STREAM_DROPOUT, (uint64_t)(h * N * N + c));
            EXPECT_NEAR(va[h].keep.data[c], u >= 0.3 ? 1 : 0, 0);
        }
    /* Head 1 alone: q columns 2..3, the one kv head's k and v. */
    struct attn_matrix q1 = { a.q.data + 2, N, 2, D }, k0 = { a.k.data, N, 2, 2 };
    struct attn_matrix v0 = { a.v.data, N, 2, 2 };
    struct attn_problem hp = { .q = &q1, .k = &k0, .v = &v0, .mask = p.mask, .scale = p.scale };
    struct attn_vtrace one;
    ck_assert_int_eq(attn_vtrace_alloc(&one, N, N, 2, 2, &var[1]), ATTN_OK);
    ck_assert_int_eq(attn_reference_variants(&one, &hp, &var[1]), ATTN_OK);
    for (int c = 0; c < N * N; c++)
        ck_assert(near(a.head[1].weights.data[c], one.base.weights.data[c], 1e-12));
    for (int i = 0; i < N; i++)
        ck_assert(near(va[1].sink_weight[i], one.sink_weight[i], 1e-12));
    attn_vtrace_free(&one);
    for (int h = 0; h < H; h++) {
        attn_vtrace_free(&va[h]);
        attn_vtrace_free(&vb[h]);
    }
    attn_mh_trace_free(&a);
    attn_mh_trace_free(&b);
    attn_rope_release(&rope);
}
END_TEST

/* band_only: the window's hidden cells are not multiplied (0 in scores), the rest is
 * the full computation's, bit for bit where nothing was skipped. n = 150 spans 3 blocks. */
START_TEST(test_band_only)
{
    enum { N = 150, D = 8 };
    static double q[N * D], k[N * D], v[N * 2];
    fill(q, N * D);
    fill(k, N * D);
    fill(v, N * 2);
    struct fixture f;
    fixture_init(&f, q, N, k, N, D, v, 2);
    struct attn_variants full = { .window = true, .has_left = true, .left = 5, .has_right = true,
                                  .right = 2, .sink_tokens = 3 };
    struct attn_variants band = full;
    band.band_only = true;
    struct attn_vtrace a, b;
    run(attn_forward_variants, &f, &full, &a);
    run(attn_forward_variants, &f, &band, &b);
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < N; j++) {
            size_t c = i * N + j;
            bool seen = j < 3 || (j + 5 >= i && j <= i + 2);
            ck_assert_msg(seen || b.base.scores.data[c] == 0, "hidden cell %zu, %zu computed", i, j);
            ck_assert_msg(b.base.masked.data[c] == a.base.masked.data[c] ||
                          near(b.base.masked.data[c], a.base.masked.data[c], 1e-13), "masked %zu", c);
            ck_assert(near(b.base.weights.data[c], a.base.weights.data[c], 1e-13));
        }
    for (size_t c = 0; c < N * 2; c++)
        ck_assert(near(b.base.output.data[c], a.base.output.data[c], 1e-13));
    attn_vtrace_free(&a);
    attn_vtrace_free(&b);
}
END_TEST

/* ---- faults ---- */

/* 1.7e308·(cos 1 + sin 1) ≈ 2.3e308 overflows: the fault is q_rope's, at [0, 1]. */
START_TEST(test_fault_rope) /* both */
{
    double q[] = { 1.7e308, 1.7e308 }, k[] = { 1, 1 }, v[] = { 1 }, pq[] = { 1 };
    struct fixture f;
    struct attn_rope rope = { .base = 10000, .rotated = 2, .positions_q = pq };
    struct attn_variants var = { .rope = &rope };
    struct attn_vtrace t;
    fixture_init(&f, q, 1, k, 1, 2, v, 1);
    ck_assert_int_eq(attn_rope_prepare(&rope, 1, 1), ATTN_OK);
    ck_assert_int_eq(attn_vtrace_alloc(&t, 1, 1, 2, 1, &var), ATTN_OK);
    ck_assert_int_eq(impl_of(_i)(&t, &f.p, &var), ATTN_EOVERFLOW);
    ck_assert_int_eq(t.fault_step, ATTN_STEP_Q_ROPE);
    ck_assert_str_eq(attn_variant_step_name(t.fault_step), "q_rope");
    ck_assert_uint_eq(t.base.fault.col, 1);
    EXPECT_NEAR(t.base.output.data[0], 0, 0);
    attn_vtrace_free(&t);
    attn_rope_release(&rope);
}
END_TEST

/* A slope of 1e308 at distance 2 gives −2e308: masked's fault, at the allowed cell. */
START_TEST(test_fault_alibi) /* both */
{
    double q[] = { 0 }, k[] = { 0, 0, 0 }, v[] = { 1, 1, 1 };
    struct fixture f;
    struct attn_variants var = { .alibi = true, .alibi_slope = 1e308 };
    struct attn_vtrace t;
    fixture_init(&f, q, 1, k, 3, 1, v, 1);
    ck_assert_int_eq(attn_vtrace_alloc(&t, 1, 3, 1, 1, &var), ATTN_OK);
    ck_assert_int_eq(impl_of(_i)(&t, &f.p, &var), ATTN_EOVERFLOW);
    ck_assert_int_eq(t.fault_step, ATTN_STEP_MASKED);
    ck_assert_uint_eq(t.base.fault.col, 0);
    attn_vtrace_free(&t);
}
END_TEST

/* No variant on: the plain pass runs, and its fault's step is the vtrace's fault_step too
 * (weights summing to an ulp over 1 on values of -DBL_MAX: the output's fault). It was
 * left unset, so a caller reading fault_step read "none" (fuzz_nonfinite found it). */
START_TEST(test_fault_plain_sets_fault_step) /* both */
{
    /* scores 2e-6 and 0: weights 0.5000005000000001 and 0.49999950000000004, whose
     * products with -DBL_MAX add past it */
    double q[] = { 2e-6 }, k[] = { 1, 0 }, v[] = { -DBL_MAX, -DBL_MAX };
    struct fixture f;
    struct attn_variants var = { 0 };
    struct attn_vtrace t;
    fixture_init(&f, q, 1, k, 2, 1, v, 1);
    ck_assert_int_eq(attn_vtrace_alloc(&t, 1, 2, 1, 1, &var), ATTN_OK);
    t.fault_step = ATTN_STEP_SCORES; /* stale: the pass must set it */
    /* the fast pass's BLAS sum overflows; the reference adds in its own order and may not */
    enum attn_status st = impl_of(_i)(&t, &f.p, &var);
    ck_assert(st == ATTN_EOVERFLOW || (_i == 1 && st == ATTN_OK));
    ck_assert_int_eq(t.fault_step, st == ATTN_EOVERFLOW ? ATTN_STEP_OUTPUT : ATTN_STEP_NONE);
    if (st == ATTN_EOVERFLOW)
        ck_assert_int_eq(t.base.fault.step, ATTN_STEP_OUTPUT);
    double ok[] = { 1, 2 };
    fixture_init(&f, q, 1, k, 2, 1, ok, 1);
    ck_assert_int_eq(impl_of(_i)(&t, &f.p, &var), ATTN_OK);
    ck_assert_int_eq(t.fault_step, ATTN_STEP_NONE);
    attn_vtrace_free(&t);
}
END_TEST

/*
 * Issue 32: a score of +inf (1e200·1e200) with any variant is the scores step's fault at
 * [0, 0], found before softmax: the fast path once ran the row softmax on it first, and
 * the all-NaN row sent the argmax scan past the row's end. A bias of ±1.7e308 on a score
 * of ±1e308 is masked's fault likewise. Each case with each variant, on both paths
 * (_i: case·2·NV + variant·2 + path).
 */
#define NONFINITE_VARIANTS 7
START_TEST(test_fault_nonfinite_each_variant)
{
    int path = _i % 2, which = (_i / 2) % NONFINITE_VARIANTS, kase = _i / (2 * NONFINITE_VARIANTS);
    double q[] = { 1e200 }, k[] = { 1e200, 0 }, v[] = { 0, 0 }, bias_cells[] = { 1.7e308, 0 };
    struct attn_matrix bias = attn_matrix_view(bias_cells, 1, 2);
    struct attn_rope rope = { .base = 10000, .rotated = 2 };
    double q2[] = { 1e200, 0 }, k2[] = { 1e200, 0, 0, 0 };
    struct attn_variants all[NONFINITE_VARIANTS] = {
        { .alibi = true, .alibi_slope = 0 },
        { .window = true }, /* unbounded on both sides */
        { .window = true, .has_left = true, .left = 4, .band_only = true },
        { .sink = true, .sink_logit = 0 },
        { .dropout = true, .dropout_p = 0 },
        { .softcap = 5 },
        { .rope = &rope },
    };
    struct attn_variants var = all[which];
    struct fixture f;
    struct attn_vtrace t;
    if (var.rope != NULL) { /* d_k = 2: a pair to turn */
        fixture_init(&f, q2, 1, k2, 2, 2, v, 1);
        ck_assert_int_eq(attn_rope_prepare(&rope, 1, 2), ATTN_OK);
    } else {
        fixture_init(&f, q, 1, k, 2, 1, v, 1);
    }
    if (kase == 1) { /* scores 1e308 (1e154², scale 1) + bias 1.7e308 */
        q[0] = q2[0] = 1e154;
        k[0] = k2[0] = 1e154;
        f.p.scale = 1;
        f.p.bias = &bias;
        if (var.softcap > 0 || var.rope != NULL) /* capped at 5; turned by 1 radian */
            bias_cells[0] = DBL_MAX;
    }
    ck_assert_int_eq(attn_vtrace_alloc(&t, 1, 2, f.q.cols, 1, &var), ATTN_OK);
    enum attn_status st = impl_of(path)(&t, &f.p, &var);
    if (kase == 1 && var.softcap > 0) { /* 5 + DBL_MAX is DBL_MAX: no fault to find */
        ck_assert_int_eq(st, ATTN_OK);
    } else {
        ck_assert_int_eq(st, ATTN_EOVERFLOW);
        ck_assert_int_eq(t.fault_step, kase == 0 ? ATTN_STEP_SCORES : ATTN_STEP_MASKED);
        ck_assert_uint_eq(t.base.fault.row, 0);
        ck_assert_uint_eq(t.base.fault.col, 0);
        ck_assert_uint_eq(t.base.summary.argmax[0], 0); /* cleared, never past the row */
        EXPECT_NEAR(t.base.weights.data[0], 0, 0);
    }
    attn_vtrace_free(&t);
    attn_rope_release(&rope);
}
END_TEST

START_TEST(test_einval)
{
    double q[] = { 1 }, k[] = { 1 }, v[] = { 1 };
    struct fixture f;
    struct attn_rope rope = { .base = 10000, .rotated = 2 };
    struct attn_variants bad[] = {
        { .softcap = -1 }, { .softcap = NAN }, { .dropout = true, .dropout_p = 1 },
        { .dropout = true, .dropout_p = -0.1 }, { .alibi = true, .alibi_slope = INFINITY },
        { .sink = true, .sink_logit = NAN }, { .rope = &rope }, /* r = 2 > d_k = 1 */
    };
    fixture_init(&f, q, 1, k, 1, 1, v, 1);
    ck_assert_int_eq(attn_rope_prepare(&rope, 1, 1), ATTN_OK);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct attn_vtrace t;
        struct attn_variants alloc_as = bad[i];
        if (alloc_as.softcap < 0 || isnan(alloc_as.softcap))
            alloc_as.softcap = 1;
        ck_assert_int_eq(attn_vtrace_alloc(&t, 1, 1, 1, 1, &alloc_as), ATTN_OK);
        ck_assert_msg(attn_forward_variants(&t, &f.p, &bad[i]) == ATTN_EINVAL, "case %zu", i);
        ck_assert_msg(attn_reference_variants(&t, &f.p, &bad[i]) == ATTN_EINVAL, "case %zu", i);
        attn_vtrace_free(&t);
    }
    attn_rope_release(&rope);
}
END_TEST

static Suite *variants_suite(void)
{
    Suite *s = suite_create("variants");
    TCase *sem = tcase_create("Semantics"), *ref = tcase_create("Reference");
    TCase *off = tcase_create("Off"), *faults = tcase_create("Faults");

    tcase_add_loop_test(sem, test_rope_half, 0, 2);
    tcase_add_loop_test(sem, test_rope_interleaved, 0, 2);
    tcase_add_test(sem, test_rope_layouts_differ);
    tcase_add_loop_test(sem, test_rope_partial, 0, 2);
    tcase_add_test(sem, test_rope_relative);
    tcase_add_test(sem, test_rope_prepare_rejects);
    tcase_add_loop_test(sem, test_softcap_seed, 0, 2);
    tcase_add_loop_test(sem, test_softcap_bounds, 0, 2);
    tcase_add_test(sem, test_softcap_row_vs_libm);
    tcase_add_test(sem, test_alibi_slopes);
    tcase_add_loop_test(sem, test_alibi_bias, 0, 2);
    tcase_add_loop_test(sem, test_window_rule, 0, 2);
    tcase_add_loop_test(sem, test_window_empties_row, 0, 2);
    tcase_add_loop_test(sem, test_sink_logit, 0, 2);
    tcase_add_loop_test(sem, test_sink_fully_masked, 0, 2);
    tcase_add_loop_test(sem, test_dropout_keep, 0, 2);
    tcase_add_test(sem, test_dropout_first);
    tcase_add_test(ref, test_fast_vs_reference);
    tcase_add_test(ref, test_row_stats_variants);
    tcase_add_loop_test(ref, test_argmax_first_max_score, 0, 4);
    tcase_add_test(ref, test_multihead_heads);
    tcase_add_test(ref, test_band_only);
    tcase_add_test(off, test_off_bit_identical);
    tcase_add_loop_test(off, test_dropout_zero_is_none, 0, 2);
    tcase_add_loop_test(faults, test_fault_rope, 0, 2);
    tcase_add_loop_test(faults, test_fault_alibi, 0, 2);
    tcase_add_loop_test(faults, test_fault_plain_sets_fault_step, 0, 2);
    tcase_add_loop_test(faults, test_fault_nonfinite_each_variant, 0, 2 * 2 * NONFINITE_VARIANTS);
    tcase_add_test(faults, test_einval);
    suite_add_tcase(s, sem);
    suite_add_tcase(s, ref);
    suite_add_tcase(s, off);
    suite_add_tcase(s, faults);
    return s;
}

int main(void)
{
    return suite_run(variants_suite());
}
