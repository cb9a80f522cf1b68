/*
 * core/random.c — the generator of random.h (splitmix64, by index).
 */
#include "random.h"

static uint64_t attn_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double attn_random_unit(uint64_t seed, unsigned stream, uint64_t k)
{
    const uint64_t gamma = 0x9E3779B97F4A7C15ull;
    uint64_t base = seed + ((uint64_t)stream << 40); /* wraps mod 2^64, as documented */
    uint64_t z = attn_mix(base + (k + 1) * gamma);
    return (double)(z >> 11) * 0x1.0p-53;
}

void attn_random_units(uint64_t seed, unsigned stream, uint64_t first, size_t n, double *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = attn_random_unit(seed, stream, first + (uint64_t)i);
}
