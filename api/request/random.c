/*
 * api/request/random.c — the documented generator of random.h (splitmix64, by index).
 *
 * Each value depends only on (seed, stream, index), never on what was generated
 * before, so numpy can regenerate a whole matrix in one vectorized expression.
 */
#include "api/request/random.h"

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void api_random_fill(double *out, size_t n, uint64_t seed, enum api_random_stream stream,
                     double amplitude)
{
    const uint64_t gamma = 0x9E3779B97F4A7C15ull;
    uint64_t base = seed + ((uint64_t)stream << 40); /* wraps mod 2^64, as documented */
    for (size_t k = 0; k < n; k++) {
        uint64_t z = mix(base + (uint64_t)(k + 1) * gamma);
        double u = (double)(z >> 11) * 0x1.0p-53;
        out[k] = (2.0 * u - 1.0) * amplitude;
    }
}
