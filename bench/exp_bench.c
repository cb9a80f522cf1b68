/*
 * bench/exp_bench.c — the softmax's exponential: attnd's own against SLEEF's and glibc's.
 *
 *   exp_bench            prints the "exp" section of `make bench`
 *
 * What is measured: nanoseconds per element over rows of 2048 values in [-30, 0] (what a
 * softmax row holds once its max is subtracted), the median of rounds in which every
 * candidate runs in turn (a neighbour's burst slows them alike):
 *   attn_row_exp           core/softmax_row.c: e^(x - max) and the row's sum, in the
 *                          widest of its target clones this CPU runs (avx512f, avx2, default);
 *                          with AVX-512, its own loop, timed both ways it reads its table
 *                          (loads and shuffles, gathers: attn_row_use_gathers)
 *   glibc exp              one call a cell
 *   Sleef_expd2_u10sse2    SLEEF 1.0-ulp, 2 lanes (SSE2)
 *   Sleef_expd4_u10avx2    4 lanes (AVX2 + FMA), when the CPU has them
 *   Sleef_expd8_u10avx512f 8 lanes, when the CPU has AVX-512F
 * Then attnd's reproducibility rule, "the same bits on every CPU": on 2^20 values in
 * [-30, 0] (and the row), how many results of each SLEEF variant differ in any bit from
 * the SSE2 variant's, and from attn_row_exp's; and each candidate's largest error in
 * ulps against long double expl.
 *
 * Built only when libsleef-dev is installed (the Makefile's bench target); without it
 * the section prints that SLEEF is missing and measures attn_row_exp and glibc alone.
 * Not here: choosing (core/ keeps its own exp; docs/performance.md says why).
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_time.h"
#include "core/softmax_row.h"

#ifdef HAVE_SLEEF
#include <immintrin.h>
#include <sleef.h>
/* sleef.h declares the AVX2 and AVX-512 variants only to a file built for those targets;
 * this one is built for the baseline and calls them from functions that target them. */
__m256d Sleef_expd4_u10avx2(__m256d x);
__m512d Sleef_expd8_u10avx512f(__m512d x);
#endif

enum { ROW = 2048, ROWS = 64, ROUNDS = 301, CHECK = 1 << 20 };


/* splitmix64 by index, mapped onto [-30, 0]. */
static void fill_inputs(double *x, size_t count, uint64_t seed)
{
    for (size_t i = 0; i < count; i++) {
        uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = -30.0 * ((double)(z >> 11) * 0x1p-53);
    }
}

/* Each candidate writes w[j] = e^(x[j]) for j < n (n a multiple of 8). */
typedef void (*exp_fn)(const double *x, double *w, size_t n);

static void exp_attnd(const double *x, double *w, size_t n)
{
    attn_row_exp(x, 0.0, w, n);
}

/* The AVX-512 loop's two ways of reading its table (the same bits; attnd times them
 * once at first use and keeps the faster). */
static void exp_attnd_loads(const double *x, double *w, size_t n)
{
    attn_row_use_gathers(0);
    attn_row_exp(x, 0.0, w, n);
}

static void exp_attnd_gathers(const double *x, double *w, size_t n)
{
    attn_row_use_gathers(1);
    attn_row_exp(x, 0.0, w, n);
}

static void exp_glibc(const double *x, double *w, size_t n)
{
    for (size_t j = 0; j < n; j++)
        w[j] = exp(x[j]);
}

#ifdef HAVE_SLEEF
static void exp_sleef_sse2(const double *x, double *w, size_t n)
{
    for (size_t j = 0; j < n; j += 2)
        _mm_storeu_pd(w + j, Sleef_expd2_u10sse2(_mm_loadu_pd(x + j)));
}

__attribute__((target("avx2,fma"))) static void exp_sleef_avx2(const double *x, double *w, size_t n)
{
    for (size_t j = 0; j < n; j += 4)
        _mm256_storeu_pd(w + j, Sleef_expd4_u10avx2(_mm256_loadu_pd(x + j)));
}

__attribute__((target("avx512f"))) static void exp_sleef_avx512(const double *x, double *w, size_t n)
{
    for (size_t j = 0; j < n; j += 8)
        _mm512_storeu_pd(w + j, Sleef_expd8_u10avx512f(_mm512_loadu_pd(x + j)));
}
#endif

struct candidate {
    const char *name;
    exp_fn fn;
};

/* The candidates this CPU runs, into c; returns how many, and where SLEEF's start. */
static int candidates(struct candidate *c, int *first_sleef)
{
    int n = 0;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        c[n++] = (struct candidate){"attn_row_exp, loads", exp_attnd_loads};
        c[n++] = (struct candidate){"attn_row_exp, gathers", exp_attnd_gathers};
    } else {
        c[n++] = (struct candidate){"attn_row_exp", exp_attnd};
    }
    c[n++] = (struct candidate){"glibc exp", exp_glibc};
    *first_sleef = n;
#ifdef HAVE_SLEEF
    c[n++] = (struct candidate){"Sleef_expd2_u10sse2", exp_sleef_sse2};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        c[n++] = (struct candidate){"Sleef_expd4_u10avx2", exp_sleef_avx2};
    if (__builtin_cpu_supports("avx512f"))
        c[n++] = (struct candidate){"Sleef_expd8_u10avx512f", exp_sleef_avx512};
#endif
    return n;
}

/* |got - e^x| in ulps of the true value, from long double expl. */
static double ulp_error(double got, double x)
{
    long double truth = expl((long double)x);
    int e;
    frexpl(truth, &e);
    long double ulp = ldexpl(1.0L, e - DBL_MANT_DIG);
    return (double)(fabsl((long double)got - truth) / ulp);
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

int main(void)
{
    struct candidate c[8];
    int first_sleef;
    int nc = candidates(c, &first_sleef);
    double *x = malloc(CHECK * sizeof(double)), *ref = malloc(CHECK * sizeof(double));
    double *w = malloc(CHECK * sizeof(double)), *mine = malloc(CHECK * sizeof(double));
    static double t[8][ROUNDS];
    if (x == NULL || ref == NULL || w == NULL || mine == NULL) {
        fprintf(stderr, "exp_bench: out of memory\n");
        return 1;
    }
    fill_inputs(x, CHECK, 11);

    /* Timing: ROWS rows of 2048 a round (1 MiB in, 1 MiB out: in cache, as a softmax row is). */
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < nc; i++) {
            double t0 = now_s();
            for (int row = 0; row < ROWS; row++)
                c[i].fn(x + (size_t)row * ROW, w + (size_t)row * ROW, ROW);
            t[i][r] = (now_s() - t0) / (ROWS * ROW);
        }
    printf("exp: e^x on rows of %d values in [-30, 0], ns an element (median of %d rounds, "
           "interleaved); ulps against long double expl over %d values\n", ROW, ROUNDS, CHECK);
#ifndef HAVE_SLEEF
    printf("  (SLEEF is not installed: apt-get install libsleef-dev, then make bench)\n");
#endif
    printf("  %-24s %8s %8s %12s %14s\n", "candidate", "ns/elem", "vs attnd", "max ulps",
           "bits != attnd");
    exp_attnd(x, mine, CHECK);
    double t_attnd = 0;
    for (int i = 0; i < nc; i++) {
        qsort(t[i], ROUNDS, sizeof t[i][0], cmp_double);
        double med = t[i][ROUNDS / 2];
        if (i == 0)
            t_attnd = med;
        c[i].fn(x, w, CHECK);
        double worst = 0;
        size_t differ = 0;
        for (size_t j = 0; j < CHECK; j++) {
            double u = ulp_error(w[j], x[j]);
            if (u > worst)
                worst = u;
            differ += !same_bits(w[j], mine[j]);
        }
        printf("  %-24s %8.3f %7.2fx %12.3f %14zu\n", c[i].name, med * 1e9, med / t_attnd, worst,
               differ);
    }
#ifdef HAVE_SLEEF
    /* The reproducibility rule: every SLEEF variant against the SSE2 one, bit for bit. */
    exp_sleef_sse2(x, ref, CHECK);
    for (int i = first_sleef + 1; i < nc; i++) {
        c[i].fn(x, w, CHECK);
        size_t differ = 0;
        for (size_t j = 0; j < CHECK; j++)
            differ += !same_bits(w[j], ref[j]);
        printf("  same bits: %s against Sleef_expd2_u10sse2: %zu of %d results differ\n",
               c[i].name, differ, CHECK);
    }
    if (nc == first_sleef + 3) { /* AVX2 and AVX-512 both fuse multiply-adds; SSE2 has no FMA */
        exp_sleef_avx2(x, ref, CHECK);
        exp_sleef_avx512(x, w, CHECK);
        size_t differ = 0;
        for (size_t j = 0; j < CHECK; j++)
            differ += !same_bits(w[j], ref[j]);
        printf("  same bits: Sleef_expd8_u10avx512f against Sleef_expd4_u10avx2: %zu of %d "
               "results differ\n", differ, CHECK);
    }
    if (nc == first_sleef + 1)
        printf("  same bits: this CPU runs only the SSE2 variant; nothing to compare\n");
#endif
    free(x), free(ref), free(w), free(mine);
    return 0;
}
