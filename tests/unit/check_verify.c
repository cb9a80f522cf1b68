/*
 * tests/unit/check_verify.c — unit tests of the rules that judge a kernel's answer
 * (core/verify.h), each recomputed here from DESIGN.md's formulas with plain loops.
 *
 * One Check suite, "verify", with the test cases
 *   Flash   the atol (0.3 there and back, in each format by the slow rounding), the bound
 *           2·naive + atol (3· for gradients), on candidates that pass (the naive answer,
 *           gold rounded to the format) and fail (zeros, one cell 10% off, a scale
 *           missing, NaN), the worst cells in order;
 *   Flex    mean|cand − gold| against fudge·mean|naive − gold|; NaN fails;
 *   Close   torch.allclose cell by cell; infinities; the loose tolerance a constant passes;
 *   Format  the first input cell a format cannot hold.
 */
#include <check.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/verify.h"
#include "tests/unit/suite_run.h"

#define N 64

/* A gold of N cells in (-1, 1), and what a float16 kernel would give: each cell off by a
 * few of float16's ulps, deterministic. */
static void make(double *gold, double *naive, enum attn_format f)
{
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        gold[i] = ((double)(s >> 11) / 9007199254740992.0) * 2.0 - 1.0;
        double ulp = f == ATTN_FLOAT16 ? 0x1p-11 : f == ATTN_BFLOAT16 ? 0x1p-8 : 0x1p-24;
        naive[i] = attn_format_round(gold[i] + (double)((int)(i % 5) - 2) * ulp * 0.7, f);
    }
}

static double max_abs_diff(const double *a, const double *b)
{
    double m = 0;
    for (size_t i = 0; i < N; i++)
        m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

static double mean_abs_diff(const double *a, const double *b)
{
    double s = 0;
    for (size_t i = 0; i < N; i++)
        s += fabs(a[i] - b[i]);
    return s / N;
}

/* DESIGN.md's atol, with the slow rounding (ldexp and nearbyint). */
static double flash_atol(const double *gold, enum attn_format f)
{
    double m = 0;
    for (size_t i = 0; i < N; i++) {
        double g = attn_format_round_slow(gold[i], f);
        double y = attn_format_round_slow(attn_format_round_slow(g + 0.3, f) - 0.3, f);
        m = fmax(m, fabs(y - g));
    }
    return 2 * m;
}

static bool judge(const double *cand, const double *gold, const double *naive, double factor,
                  const struct attn_rule *rule, enum attn_format f, struct attn_verify_check *c)
{
    struct attn_verify_tensor t = { cand, gold, naive, N, factor, false };
    attn_verify_judge(c, &t, rule, f);
    return c->pass;
}

START_TEST(test_flash)
{
    static const enum attn_format formats[] = { ATTN_FLOAT16, ATTN_BFLOAT16, ATTN_FLOAT32 };
    const struct attn_rule flash = { .kind = ATTN_RULE_FLASH };
    for (size_t k = 0; k < 3; k++) {
        enum attn_format f = formats[k];
        double gold[N], naive[N], cand[N];
        make(gold, naive, f);
        double atol = flash_atol(gold, f), naive_err = max_abs_diff(naive, gold);
        ck_assert_double_eq(attn_verify_flash_atol(gold, N, f), atol);
        ck_assert(atol > 0);
        struct attn_verify_check c;
        ck_assert(judge(naive, gold, naive, 2, &flash, f, &c)); /* the naive answer itself */
        ck_assert_double_eq(c.bound, 2 * naive_err + atol);
        ck_assert_double_eq(c.measured, naive_err);
        ck_assert_double_eq(c.naive_max_abs_error, naive_err);
        for (size_t i = 0; i < N; i++)
            cand[i] = attn_format_round(gold[i], f);
        ck_assert(judge(cand, gold, naive, 2, &flash, f, &c)); /* gold in the format */
        memset(cand, 0, sizeof cand);
        ck_assert(!judge(cand, gold, naive, 2, &flash, f, &c)); /* zeros */
        ck_assert_double_eq(c.max_abs_error, max_abs_diff(cand, gold));
        for (size_t i = 0; i < N; i++)
            cand[i] = naive[i] * 0.125; /* a scale forgotten, as a product shows it */
        ck_assert(!judge(cand, gold, naive, 2, &flash, f, &c));
        memcpy(cand, naive, sizeof cand);
        cand[17] = gold[17] * 1.1 + (gold[17] >= 0 ? 0.05 : -0.05); /* one cell 10% off */
        ck_assert(!judge(cand, gold, naive, 2, &flash, f, &c));
        ck_assert_uint_eq(c.worst[0].index, 17);
        ck_assert_double_eq(c.worst[0].candidate, cand[17]);
        ck_assert_double_eq(c.worst[0].gold, gold[17]);
        ck_assert_double_eq(c.worst[0].naive, naive[17]);
        for (size_t w = 1; w < c.n_worst; w++)
            ck_assert(c.worst[w - 1].error >= c.worst[w].error);
        /* 3 times the naive error for gradients: a candidate 2.5 times as far passes there
         * only when atol does not already carry it at 2. */
        for (size_t i = 0; i < N; i++)
            cand[i] = gold[i] + 2.5 * (naive[i] - gold[i]);
        bool at3 = judge(cand, gold, naive, 3, &flash, f, &c);
        ck_assert(at3 == (max_abs_diff(cand, gold) <= 3 * naive_err + atol));
        ck_assert(at3);
        bool at2 = judge(cand, gold, naive, 2, &flash, f, &c);
        ck_assert(at2 == (max_abs_diff(cand, gold) <= 2 * naive_err + atol));
    }
}
END_TEST

START_TEST(test_flash_nan)
{
    const struct attn_rule flash = { .kind = ATTN_RULE_FLASH };
    double gold[N], naive[N], cand[N];
    make(gold, naive, ATTN_FLOAT16);
    memcpy(cand, naive, sizeof cand);
    cand[40] = NAN;
    cand[3] = gold[3] + 0.25;
    struct attn_verify_check c;
    ck_assert(!judge(cand, gold, naive, 2, &flash, ATTN_FLOAT16, &c));
    ck_assert_uint_eq(c.nan_cells, 1);
    ck_assert(isinf(c.max_abs_error));
    ck_assert_uint_eq(c.worst[0].index, 40); /* NaN first, then the largest */
    ck_assert(isnan(c.worst[0].candidate));
    ck_assert_uint_eq(c.worst[1].index, 3);
    /* a naive cell that overflowed is left out of the bound, not made its +inf */
    naive[5] = INFINITY;
    cand[40] = naive[40];
    ck_assert(!judge(cand, gold, naive, 2, &flash, ATTN_FLOAT16, &c));
    ck_assert_uint_eq(c.naive_non_finite, 1);
    ck_assert(isfinite(c.bound));
}
END_TEST

START_TEST(test_flex)
{
    double gold[N], naive[N], cand[N];
    make(gold, naive, ATTN_BFLOAT16);
    double naive_mean = mean_abs_diff(naive, gold);
    struct attn_rule flex = { .kind = ATTN_RULE_FLEX, .fudge = 1.1 };
    struct attn_verify_check c;
    for (size_t i = 0; i < N; i++)
        cand[i] = gold[i] + 1.05 * (naive[i] - gold[i]);
    ck_assert(judge(cand, gold, naive, 2, &flex, ATTN_BFLOAT16, &c));
    ck_assert_double_eq_tol(c.measured, mean_abs_diff(cand, gold), 1e-15);
    ck_assert_double_eq_tol(c.bound, 1.1 * naive_mean, 1e-15);
    for (size_t i = 0; i < N; i++)
        cand[i] = gold[i] + 1.2 * (naive[i] - gold[i]);
    ck_assert(!judge(cand, gold, naive, 2, &flex, ATTN_BFLOAT16, &c));
    flex.fudge = 1.3;
    ck_assert(judge(cand, gold, naive, 2, &flex, ATTN_BFLOAT16, &c));
    cand[0] = NAN; /* any NaN fails, whatever the mean says */
    ck_assert(!judge(cand, gold, naive, 2, &flex, ATTN_BFLOAT16, &c));
}
END_TEST

/* torch.allclose, written out. */
static bool allclose(const double *a, const double *b, double rtol, double atol)
{
    for (size_t i = 0; i < N; i++) {
        if (a[i] == b[i])
            continue;
        if (!(fabs(a[i] - b[i]) <= atol + rtol * fabs(b[i])))
            return false;
    }
    return true;
}

START_TEST(test_close)
{
    double gold[N], naive[N], cand[N];
    make(gold, naive, ATTN_FLOAT16);
    const struct attn_rule tight = { .kind = ATTN_RULE_CLOSE, .rtol = 1e-3, .atol = 1e-3 };
    const struct attn_rule loose = { .kind = ATTN_RULE_CLOSE, .rtol = 0, .atol = 1.0 };
    struct attn_verify_check c;
    for (size_t i = 0; i < N; i++)
        cand[i] = gold[i] * (1 + (i % 2 ? 9e-4 : -9e-4));
    ck_assert(judge(cand, gold, naive, 2, &tight, ATTN_FLOAT16, &c));
    ck_assert(allclose(cand, gold, 1e-3, 1e-3));
    cand[9] = gold[9] + 3e-3 + 1e-3 * fabs(gold[9]);
    ck_assert(!allclose(cand, gold, 1e-3, 1e-3));
    ck_assert(!judge(cand, gold, naive, 2, &tight, ATTN_FLOAT16, &c));
    ck_assert_double_eq(c.bound, 1e-3 + 1e-3 * fabs(gold[9])); /* at the cell over by most */
    ck_assert_double_eq(c.measured, fabs(cand[9] - gold[9]));
    /* a loose atol: zeros pass it, and the tolerance is said to be inadequate */
    memset(cand, 0, sizeof cand);
    ck_assert(judge(cand, gold, naive, 2, &loose, ATTN_FLOAT16, &c) == allclose(cand, gold, 0, 1));
    double scratch[N], constant = -1;
    struct attn_verify_tensor t = { NULL, gold, naive, N, 2, false };
    ck_assert(attn_verify_constant_passes(&t, &loose, ATTN_FLOAT16, scratch, &constant));
    ck_assert_double_eq(constant, 0.0);
    ck_assert(!attn_verify_constant_passes(&t, &tight, ATTN_FLOAT16, scratch, &constant));
    /* The midpoint of gold's range passes a max bound that zeros do not. */
    double shifted[N];
    for (size_t i = 0; i < N; i++)
        shifted[i] = gold[i] + 10;
    struct attn_verify_tensor s = { NULL, shifted, naive, N, 2, false };
    const struct attn_rule wide = { .kind = ATTN_RULE_CLOSE, .rtol = 0, .atol = 1.0 };
    ck_assert(attn_verify_constant_passes(&s, &wide, ATTN_FLOAT16, scratch, &constant));
    ck_assert(fabs(constant - 10) < 0.1);
    /* The flash rule on a sensible problem is not fooled by a constant. */
    const struct attn_rule flash = { .kind = ATTN_RULE_FLASH };
    ck_assert(!attn_verify_constant_passes(&t, &flash, ATTN_FLOAT16, scratch, &constant));
}
END_TEST

START_TEST(test_infinities)
{
    double gold[4] = { -INFINITY, 0.5, -INFINITY, 1.0 };
    double naive[4] = { -INFINITY, 0.5, -INFINITY, 1.0 };
    double cand[4] = { INFINITY, 0.5, -INFINITY, 1.0 };
    const struct attn_rule flash = { .kind = ATTN_RULE_FLASH };
    struct attn_verify_check c;
    struct attn_verify_tensor lse = { cand, gold, naive, 4, 2, true }; /* FlashAttention 2's +inf */
    attn_verify_judge(&c, &lse, &flash, ATTN_FLOAT16);
    ck_assert(c.pass);
    lse.inf_any_sign = false;
    attn_verify_judge(&c, &lse, &flash, ATTN_FLOAT16);
    ck_assert(!c.pass);
    ck_assert_uint_eq(c.worst[0].index, 0);
    cand[0] = 3.0; /* a number where gold is −inf */
    lse.inf_any_sign = true;
    attn_verify_judge(&c, &lse, &flash, ATTN_FLOAT16);
    ck_assert(!c.pass);
}
END_TEST

START_TEST(test_format)
{
    double cells[6] = { 0.5, -2.0, 65504.0, 0.1, 1e-3, 3.0 };
    struct attn_matrix m = { cells, 2, 3, 3 };
    ck_assert_uint_eq(attn_first_not_in_format(&m, ATTN_FLOAT16), 3); /* 0.1 */
    cells[3] = 0.125;
    ck_assert_uint_eq(attn_first_not_in_format(&m, ATTN_FLOAT16), 4); /* 1e-3 */
    cells[4] = 0x1p-24; /* float16's smallest subnormal */
    ck_assert_uint_eq(attn_first_not_in_format(&m, ATTN_FLOAT16), SIZE_MAX);
    ck_assert_uint_eq(attn_first_not_in_format(&m, ATTN_BFLOAT16), 2); /* 65504 */
    ck_assert_uint_eq(attn_first_not_in_format(&m, ATTN_FLOAT64), SIZE_MAX);
}
END_TEST

static Suite *verify_suite(void)
{
    Suite *s = suite_create("verify");
    TCase *tc = tcase_create("Rules");
    tcase_add_test(tc, test_flash);
    tcase_add_test(tc, test_flash_nan);
    tcase_add_test(tc, test_flex);
    tcase_add_test(tc, test_close);
    tcase_add_test(tc, test_infinities);
    tcase_add_test(tc, test_format);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return suite_run(verify_suite());
}
