/*
 * api/request/random.c — the documented inputs of random.h, drawn from core's one
 * generator (core/random.h) so dropout and `random` read the same numbers.
 */
#include "api/request/random.h"

#include <stdatomic.h>

#include "core/random.h"

/* Every number filled since the process started, over all threads (for tests). */
static atomic_ullong numbers_filled;

unsigned long long api_random_numbers_filled(void)
{
    return atomic_load_explicit(&numbers_filled, memory_order_relaxed);
}

void api_random_fill(double *out, size_t n, uint64_t seed, enum api_random_stream stream,
                     double amplitude)
{
    atomic_fetch_add_explicit(&numbers_filled, n, memory_order_relaxed);
    for (size_t k = 0; k < n; k++) {
        double u = attn_random_unit(seed, (unsigned)stream, (uint64_t)k);
        out[k] = (2.0 * u - 1.0) * amplitude;
    }
}
