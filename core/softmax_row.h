/*
 * core/softmax_row.h — the per-element arithmetic of one softmax row, in loops the
 * compiler vectorizes. Private to core/ (attention.c's row functions call it; the
 * reference does not, so it stays an independent check).
 *
 * Every function gives the same bits on every CPU: each is built for AVX-512, AVX2
 * and the x86-64 baseline and picked at load time, but the sums are interleaved in a
 * fixed order of eight and no multiply-add is fused (-ffp-contract=off), so the vector
 * widths only change the speed. The exponential and the log also have hand-written
 * AVX-512F loops, picked at run time, that keep those operations and their order
 * (tests/unit/check_core.c holds them to the baseline build's bits).
 */
#ifndef ATTN_SOFTMAX_ROW_H
#define ATTN_SOFTMAX_ROW_H

#include <stdbool.h>
#include <stddef.h>

/*
 * x[j] = s[j] * scale for j < n; false if a cell is not finite (a finite product
 * means a finite score, the scale being finite and > 0). s and x may be one row.
 */
bool attn_row_scale(const double *s, double *x, size_t n, double scale);

/*
 * attn_row_scale and attn_row_max in one pass over the row: x[j] = s[j] * scale, *max
 * the largest x[j] (-inf when n is 0), the same bits as the two calls. False if a cell
 * is not finite (*max is then not to be used). s and x may be one row.
 */
bool attn_row_scale_max(const double *s, double *x, size_t n, double scale, double *max);

/* The largest of x[0..n), or -inf. Ignores NaN (callers have checked finiteness). */
double attn_row_max(const double *x, size_t n);

/*
 * w[j] = e^(x[j] - max) for j < n, where every x[j] <= max or is -inf (so the
 * exponent is never positive); returns Σ w[j]. x and w may be one row. The
 * exponential is within 0.63 ulp of the true value (glibc's exp: 0.51), and -inf
 * gives exactly 0.
 */
double attn_row_exp(const double *x, double max, double *w, size_t n);

/*
 * out[j] = c·tanh(x[j] / c) for j < n (the softcap of core/variants.h), c > 0: from
 * e = e^(−2|y|) by the exponential above, tanh|y| = (1 − e)/(1 + e), and the series to
 * y^17 for |y| < 2^-3, where that quotient would cancel. Within 4 ulps of libm's tanh
 * (tests/unit/check_variants.c), at the cost of an exponential; x and out may be one row.
 */
void attn_row_softcap(const double *x, double *out, size_t n, double c);

/* The first j < n with x[j] == value, or n when there is none (a row's argmax: the
 * first key of its max score). */
size_t attn_row_first_of(const double *x, size_t n, double value);

/*
 * How the AVX-512 loops read their tables: 1 by gathers, 0 by loads and shuffles, -1
 * timed on first use (the default). The same bits every way: for tests and benches.
 * Without AVX-512 it changes nothing.
 */
void attn_row_use_gathers(int way);

/* w[j] /= sum for j < n; false if any quotient is not finite. */
bool attn_row_divide(double *w, size_t n, double sum);

/* What the summary says about one row of weights. */
struct attn_row_facts {
    double sum;        /* Σ w */
    double max_weight; /* the largest w */
    size_t argmax;     /* the first j holding it */
    double entropy;    /* -Σ w ln w, in nats */
};

/*
 * ln x[j] into logs[j] for each x[j] > 0 (what is written for the others is
 * unspecified): the logs of attn_row_facts_of's entropy, at most 0.53 ulp off,
 * the same bits on every CPU. In chunks of at most ATTN_LOG_CHUNK, on the stack.
 */
#define ATTN_LOG_CHUNK 256
void attn_row_logs(const double *x, double *logs, size_t n);

/* The facts of a row of weights w (n >= 1), which callers check are finite first;
 * whatever w holds, no read leaves the row (argmax is then 0). */
struct attn_row_facts attn_row_facts_of(const double *w, size_t n);

/* The same, but for the argmax, which the caller found (top < n, a key of the row's max
 * score): max_weight is w[top]. A pass less where the scores' argmax is the one asked. */
struct attn_row_facts attn_row_facts_at(const double *w, size_t n, size_t top);

#endif
