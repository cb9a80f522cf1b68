/*
 * tests/unit/rand_inputs.h — random inputs for the suites that hold a fast path to a
 * reference on many problems (check_core, check_stream): a splitmix64 stream, arrays of
 * uniform doubles, and allow tables with fully masked rows now and then.
 *
 * Fixed seeds make every problem the same on every platform and run, so a failure names
 * a seed that reproduces it. The arrays are malloc'd; the caller frees them.
 */
#ifndef TESTS_UNIT_RAND_INPUTS_H
#define TESTS_UNIT_RAND_INPUTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <check.h>

/* splitmix64: small, fixed-seed, and the same on every platform. */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static inline double rng_real(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rng_next(s) >> 11) * 0x1.0p-53);
}

/* Uniform in [lo, hi]. */
static inline size_t rng_size(uint64_t *s, size_t lo, size_t hi)
{
    return lo + (size_t)(rng_next(s) % (hi - lo + 1));
}

/* n doubles uniform in [lo, hi). */
static inline double *rand_fill(uint64_t *s, size_t n, double lo, double hi)
{
    double *a = malloc(n * sizeof *a);

    ck_assert_ptr_nonnull(a);
    for (size_t c = 0; c < n; c++)
        a[c] = rng_real(s, lo, hi);
    return a;
}

/* A random allow table (rows, n_k): 7 cells in 10 allowed, about one row in eight
 * blocked entirely (a fully masked row). */
static inline unsigned char *rand_allow(uint64_t *s, size_t rows, size_t n_k)
{
    unsigned char *a = malloc(rows * n_k);

    ck_assert_ptr_nonnull(a);
    for (size_t i = 0; i < rows; i++) {
        int none = rng_next(s) % 8 == 0;
        for (size_t j = 0; j < n_k; j++)
            a[i * n_k + j] = !none && rng_next(s) % 10 < 7;
    }
    return a;
}

#endif
