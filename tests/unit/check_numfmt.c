/*
 * tests/unit/check_numfmt.c — the number printer against an independent, slow one.
 *
 * api/json/numfmt.cc prints digits with integer tricks that are easy to get subtly wrong
 * (a lost leading zero, a digit pair swapped, a wrong count at a power of ten), and a
 * wrong digit still reads back as *some* number. So every string is compared byte for
 * byte with a reference built from nothing but glibc: the shortest digits found by
 * search with printf's correctly rounded "%.*e" and strtod, then the layout of
 * numfmt.h written again from its rules. Millions of doubles go through it: random bit
 * patterns (every exponent), values like attnd's (softmax weights, scores), and the
 * edges of the layout and of the digit groups.
 *
 * Suites: Numbers (api_format_double, the row writer behind jw_double_array and its
 * vector lanes, rounding), Examples (strings known by heart, round trips through
 * strtod, null for what is not finite, rounding as numpy rounds).
 */
#include <check.h>

#include "tests/unit/suite_run.h"
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json/write.h"
#include "api/json/numfmt.h"
#include "api/json/numparse.h"

/* ---- the reference: slow and plain ---- */

static bool reads_back(const char *s, double x)
{
    double y = strtod(s, NULL);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* digits (p of them, no point) × 10^(exp10 - p + 1) as text strtod reads. */
static void candidate_text(const char *digits, int p, int exp10, char *out, size_t size)
{
    snprintf(out, size, "%c.%se%d", digits[0], p > 1 ? digits + 1 : "", exp10);
}

/* One unit in the last of p digits up (+1) or down (-1); exp10 moves when the count would change. */
static void step_digits(char *digits, int p, int *exp10, int dir)
{
    int i = p - 1;
    if (dir > 0) {
        while (i >= 0 && digits[i] == '9')
            digits[i--] = '0';
        if (i >= 0) {
            digits[i]++;
        } else { /* 99…9 + 1 = 100…0, one place higher */
            digits[0] = '1';
            ++*exp10;
        }
    } else {
        while (i >= 0 && digits[i] == '0')
            digits[i--] = '9';
        digits[i]--; /* digits[0] is never '0' */
        if (digits[0] == '0') { /* 10…0 - 1 = 9…9, one place lower, still p digits */
            memset(digits, '9', (size_t)p);
            --*exp10;
        }
    }
}

/*
 * The p-digit decimal that reads back as ax (> 0), if there is one: the correctly
 * rounded one, else a neighbour (next to a power of two the interval that reads back
 * is lopsided, and only the neighbour on the wide side may fall in it).
 */
static bool digits_at(double ax, int p, char *digits, int *exp10)
{
    char s[64], text[64];
    snprintf(s, sizeof s, "%.*e", p - 1, ax); /* d.ddde±XX */
    digits[0] = s[0];
    if (p > 1)
        memcpy(digits + 1, s + 2, (size_t)p - 1);
    digits[p] = '\0';
    *exp10 = atoi(strchr(s, 'e') + 1);
    candidate_text(digits, p, *exp10, text, sizeof text);
    if (reads_back(text, ax))
        return true;
    for (int dir = -1; dir <= 1; dir += 2) {
        char d[24];
        int e = *exp10;
        memcpy(d, digits, (size_t)p + 1);
        step_digits(d, p, &e, dir);
        candidate_text(d, p, e, text, sizeof text);
        if (reads_back(text, ax)) {
            memcpy(digits, d, (size_t)p + 1);
            *exp10 = e;
            return true;
        }
    }
    return false;
}

/* numfmt.h's layout from its rules, with the shortest digits found by binary search on p. */
static void reference_format(double x, char *out)
{
    if (!isfinite(x)) {
        strcpy(out, "null");
        return;
    }
    char *o = out;
    if (signbit(x))
        *o++ = '-';
    if (x == 0) {
        strcpy(o, "0");
        return;
    }
    /*
     * Some p digits read back iff p >= the shortest count: search for the least. Most
     * doubles need 16 or 17 digits, so those are tried before the binary search.
     */
    char digits[24], best[24];
    int exp10, best_exp = 0, lo = 1, hi = 15;
    if (!digits_at(fabs(x), 16, digits, &exp10))
        lo = hi = 17;
    else if (!digits_at(fabs(x), 15, digits, &exp10))
        lo = hi = 16;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (digits_at(fabs(x), mid, digits, &exp10))
            hi = mid;
        else
            lo = mid + 1;
    }
    ck_assert(digits_at(fabs(x), lo, best, &best_exp));
    int k = lo;
    int decpt = best_exp + 1; /* value = 0.d1d2…dk × 10^decpt */
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0)
            sprintf(o, "0.%.*s%s", -decpt, "0000", best);
        else if (decpt < k)
            sprintf(o, "%.*s.%s", decpt, best, best + decpt);
        else
            sprintf(o, "%s%.*s", best, decpt - k, "0000000000000000");
    } else {
        int e = decpt - 1;
        sprintf(o, "%c%s%.*se%c%02d", best[0], k > 1 ? "." : "", k - 1, best + 1,
                e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
}

/* ---- doubles to try ---- */

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double from_bits(uint64_t u)
{
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* A double of the kind attnd prints, chosen by the low bits of r. */
static double typical(uint64_t *s)
{
    uint64_t r = xorshift(s);
    double u = (double)(r >> 11) * 0x1p-53; /* [0, 1) */
    switch (r & 7) {
    case 0: return 2 * u - 1;                         /* q, k, v of the bench payloads */
    case 1: return exp(-40 * u);                      /* softmax weights, down to ~4e-18 */
    case 2: return (u - 0.5) * 64;                    /* scores */
    case 3: return from_bits(r);                      /* anything at all */
    case 4: return (double)(int64_t)(r >> 11) * (r & 8 ? 1 : -1); /* integers up to 2^53 */
    case 5: return (double)(int64_t)(r >> 40);        /* small integers */
    case 6: return round(u * 1e6) / 1e6;              /* few digits */
    default: return ldexp(u, (int)(r >> 54) - 512);   /* every binary magnitude */
    }
}

static void check_one(double x)
{
    char got[API_NUMBER_MAX], want[64];
    size_t n = api_format_double(x, got);
    reference_format(x, want);
    ck_assert_msg(strcmp(got, want) == 0, "%a: printed %s, the reference says %s", x, got, want);
    ck_assert_uint_eq(n, strlen(want));
}

/* ---- tests ---- */

/*
 * How many random values a test checks: n, or a twentieth under ATTND_TEST_QUICK
 * (make valgrind sets it). Valgrind looks for memory errors, which a twentieth of
 * the values exercise as well; the values themselves are the native run's to check.
 */
static int samples(int n)
{
    const char *quick = getenv("ATTND_TEST_QUICK");
    return quick != NULL && *quick != '\0' ? n / 20 : n;
}

/* Random bit patterns: every exponent, subnormals, 17-digit significands. */
START_TEST(test_random_bits_match_reference)
{
    uint64_t s = 0x2545f4914f6cdd1dull + (uint64_t)_i;
    for (int i = 0; i < samples(200000); i++)
        check_one(from_bits(xorshift(&s)));
}
END_TEST

/* Values like attnd's output, and integers and short decimals. */
START_TEST(test_typical_values_match_reference)
{
    uint64_t s = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
    for (int i = 0; i < samples(150000); i++)
        check_one(typical(&s));
}
END_TEST

/* x and the doubles just around it, both signs. */
static void check_around(double x)
{
    double below = x, above = x;
    for (int i = 0; i < 3; i++) {
        below = nextafter(below, -INFINITY);
        above = nextafter(above, INFINITY);
        check_one(below);
        check_one(above);
        check_one(-below);
        check_one(-above);
    }
    check_one(x);
    check_one(-x);
}

/* Where the layout switches, where digit groups and counts change, and the extremes. */
START_TEST(test_edges_match_reference)
{
    check_one(0.0);
    check_one(-0.0);
    check_around(5e-324);                 /* the least subnormal */
    check_around(2.2250738585072014e-308); /* the least normal */
    check_around(1.7976931348623157e308);
    check_around(0.0001); /* fixed down to 1e-4, then 1e-05 */
    check_around(0.00001);
    check_around(1e16); /* fixed up to 16 digits before the point */
    check_around(1e15);
    check_around(9007199254740992.0); /* 2^53 */
    for (int e = -323; e <= 308; e++) { /* powers of ten: digit counts and decpt change */
        char p10[16];
        snprintf(p10, sizeof p10, "1e%d", e);
        check_around(strtod(p10, NULL));
    }
    for (int e = -1074; e <= 1023; e++) /* powers of two: the lopsided intervals */
        check_around(ldexp(1, e));
    for (uint64_t p = 1, i = 0; i < 19; i++, p *= 10) { /* every digit count of an integer */
        check_around((double)p);
        check_around((double)(p - 1));
        check_around((double)(p + 1));
    }
    /* Significands with every digit position zero or nine in turn (groups of eight). */
    for (int k = 1; k <= 17; k++) {
        char s[32];
        for (int d = 0; d < k; d++) {
            memset(s, '9', (size_t)k);
            s[d] = '0';
            s[0] = s[0] == '0' ? '1' : s[0];
            snprintf(s + k, sizeof s - (size_t)k, "e-%d", k);
            check_around(strtod(s, NULL));
            s[k] = '\0';
            memset(s + 1, '0', (size_t)k - 1);
            s[d] = '7';
            snprintf(s + k, sizeof s - (size_t)k, "e-%d", k / 2);
            check_around(strtod(s, NULL));
        }
    }
}
END_TEST

/* jw_double_array writes a row in one go: the same text as one number at a time. */
START_TEST(test_row_matches_single_numbers)
{
    uint64_t s = 0x1234567887654321ull;
    enum { N = 300 };
    double xs[N];
    for (int round = -1; round <= 15; round++) {
        for (int rep = 0; rep < 40; rep++) {
            size_t n = (size_t)(xorshift(&s) % N);
            for (size_t i = 0; i < n; i++)
                xs[i] = i % 50 == 7 ? NAN : i % 50 == 9 ? -INFINITY : typical(&s);
            struct jw w;
            jw_init(&w, round);
            jw_double_array(&w, xs, n);
            size_t len;
            char *got = jw_take(&w, &len);
            ck_assert_ptr_nonnull(got);

            char *want = malloc(n * (API_NUMBER_MAX + 1) + 3), *o = want;
            *o++ = '[';
            for (size_t i = 0; i < n; i++) {
                if (i > 0)
                    *o++ = ',';
                double x = round >= 0 ? api_round_decimals(xs[i], round) : xs[i];
                o += api_format_double(x, o);
            }
            strcpy(o, "]");
            ck_assert_str_eq(got, want);
            ck_assert_uint_eq(len, strlen(want));
            free(got);
            free(want);
        }
    }
}
END_TEST

/* One of the values a row test mixes: anything, attnd's kinds, or an edge (where the
 * row writer's vector lanes hand the number back to the one-at-a-time path). */
static double row_value(uint64_t *s)
{
    uint64_t r = xorshift(s);
    switch (r % 16) {
    case 0: return from_bits(xorshift(s));
    case 1: return ldexp(1, (int)(r >> 53) - 1074);              /* powers of two */
    case 2: return nextafter(ldexp(1, (int)(r >> 53) - 1074), 0); /* just below one */
    case 3: return from_bits(r >> 12);                            /* subnormals, or 0 */
    case 4: return (r >> 8) % 5 == 0 ? NAN : (r >> 8) % 5 == 1 ? -INFINITY : -0.0;
    default: return typical(s);
    }
}

/* api_format_row in the given lanes writes what the reference writes, number for
 * number, in rows of every length. */
static void check_rows_in_lanes(uint64_t s, unsigned lanes)
{
    enum { N = 263 };
    double xs[N];
    char *got = malloc(N * API_NUMBER_ROOM + 1), want[64];
    ck_assert_ptr_nonnull(got);
    for (int done = 0; done < samples(100000); done += N) {
        size_t n = (size_t)(xorshift(&s) % (N + 1));
        for (size_t i = 0; i < n; i++)
            xs[i] = row_value(&s);
        size_t len = api_format_row_in_lanes(xs, n, -1, got, lanes);
        got[len] = '\0';
        const char *at = got;
        for (size_t i = 0; i < n; i++) {
            reference_format(xs[i], want);
            size_t w = strlen(want);
            ck_assert_msg(strncmp(at, want, w) == 0 && (at[w] == ',' || at[w] == '\0'),
                          "lanes %u, number %zu of %zu, %a: printed %.40s, the reference says %s",
                          lanes, i, n, xs[i], at, want);
            at += w + (at[w] == ',');
        }
        ck_assert_uint_eq((size_t)(at - got), len);
    }
    free(got);
}

/* Every path this CPU has: eight lanes (AVX-512), four (AVX2), one at a time.
 * (api_format_row takes the widest; test_row_matches_single_numbers goes through it.) */
START_TEST(test_rows_match_reference)
{
    uint64_t seed = 0x51ed270b8a4f2c3dull + (uint64_t)_i;
    static const unsigned widths[] = { 8, 4, 0 };
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
        if (widths[w] <= api_format_lanes())
            check_rows_in_lanes(seed + w, widths[w]);
}
END_TEST

/* The lanes the printer reports, and the reader's path, are ones the CPU has. The
 * reader's AVX-512 path needs VBMI2, so where it runs the printer has its eight
 * lanes too (except in a build without the printer's lanes: clang, ThreadSanitizer). */
START_TEST(test_reported_lanes_fit_the_cpu)
{
    unsigned lanes = api_format_lanes();
    ck_assert(lanes == 0 || lanes == 4 || lanes == 8);
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    if (lanes == 8)
        ck_assert(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"));
    if (lanes == 4)
        ck_assert(__builtin_cpu_supports("avx2") &&
                  !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")));
#endif
    enum api_number_path path = api_read_json_number_path();
    if (path == API_NUMBER_PATH_AVX512VBMI2 && lanes != 0)
        ck_assert_uint_eq(lanes, 8);
#if defined(__x86_64__) && defined(__GNUC__)
    if (path == API_NUMBER_PATH_AVX2)
        ck_assert(__builtin_cpu_supports("avx2"));
#endif
}
END_TEST

/* ---- examples: known strings, round trips, rounding ---- */

static const struct {
    double x;
    const char *text;
} shortest[] = {
    { 0.1, "0.1" },
    { 1.0 / 3.0, "0.3333333333333333" },
    { 1e-7, "1e-07" },
    { 5.0, "5" },
    { -0.0, "-0" },
    { 0.0, "0" },
    { 1e300, "1e+300" },
    { 5e-324, "5e-324" },
    { 0.7310585786300049, "0.7310585786300049" },
    { 2.6894142136999513, "2.6894142136999513" },
    { 0.0001, "0.0001" },
    { 0.00001, "1e-05" },
    { 1e16, "1e+16" },
    { 1234567890123456.0, "1234567890123456" },
    { -1.5, "-1.5" },
    { 1.7976931348623157e308, "1.7976931348623157e+308" },
    { 123.456, "123.456" },
};

START_TEST(test_shortest_table)
{
    char buf[API_NUMBER_MAX];
    size_t n = api_format_double(shortest[_i].x, buf);
    ck_assert_str_eq(buf, shortest[_i].text);
    ck_assert_uint_eq(n, strlen(shortest[_i].text));
}
END_TEST

/* What is printed reads back as the same double, for doubles of every magnitude. */
START_TEST(test_shortest_round_trips)
{
    unsigned long long s = 0x9e3779b97f4a7c15ull;
    char buf[API_NUMBER_MAX];
    for (int i = 0; i < 200000; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double x;
        memcpy(&x, &s, sizeof x);
        if (!isfinite(x))
            continue;
        api_format_double(x, buf);
        double back = strtod(buf, NULL);
        ck_assert_msg(memcmp(&back, &x, sizeof x) == 0, "%.17g printed as %s", x, buf);
    }
}
END_TEST

START_TEST(test_non_finite_is_null)
{
    char buf[API_NUMBER_MAX];
    api_format_double(INFINITY, buf);
    ck_assert_str_eq(buf, "null");
    api_format_double(NAN, buf);
    ck_assert_str_eq(buf, "null");
}
END_TEST

/* numpy.round: rint(x * 10^d) / 10^d (values checked against numpy 1.24). */
START_TEST(test_round_like_numpy)
{
    ck_assert(api_round_decimals(0.2689414213699951, 2) == 0.27);
    ck_assert(api_round_decimals(2.675, 2) == 2.68); /* numpy, unlike Python's round, gives 2.68 */
    ck_assert(api_round_decimals(0.125, 2) == 0.12); /* halves go to even */
    ck_assert(api_round_decimals(2.5, 0) == 2.0);
    ck_assert(api_round_decimals(1.5, 0) == 2.0);
    double neg = api_round_decimals(-0.001, 2);
    ck_assert(neg == 0.0 && signbit(neg));
    ck_assert(api_round_decimals(1e300, 15) == 1e300); /* no overflow to inf */
}
END_TEST

static Suite *numfmt_suite(void)
{
    Suite *s = suite_create("numfmt");
    TCase *numbers = tcase_create("Numbers");
    tcase_set_timeout(numbers, 120);
    tcase_add_loop_test(numbers, test_random_bits_match_reference, 0, 4);
    tcase_add_loop_test(numbers, test_typical_values_match_reference, 0, 4);
    tcase_add_test(numbers, test_edges_match_reference);
    tcase_add_test(numbers, test_row_matches_single_numbers);
    tcase_add_loop_test(numbers, test_rows_match_reference, 0, 4);
    tcase_add_test(numbers, test_reported_lanes_fit_the_cpu);
    suite_add_tcase(s, numbers);

    TCase *examples = tcase_create("Examples");
    tcase_add_loop_test(examples, test_shortest_table, 0, sizeof shortest / sizeof shortest[0]);
    tcase_add_test(examples, test_shortest_round_trips);
    tcase_add_test(examples, test_non_finite_is_null);
    tcase_add_test(examples, test_round_like_numpy);
    suite_add_tcase(s, examples);
    return s;
}

int main(void)
{
    return suite_run(numfmt_suite());
}
