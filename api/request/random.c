/*
 * api/request/random.c — the documented inputs of random.h, drawn from core's one
 * generator (core/random.h) so dropout and `random` read the same numbers.
 */
#include "api/request/random.h"

#include "core/random.h"

void api_random_fill(double *out, size_t n, uint64_t seed, enum api_random_stream stream,
                     double amplitude)
{
    for (size_t k = 0; k < n; k++) {
        double u = attn_random_unit(seed, (unsigned)stream, (uint64_t)k);
        out[k] = (2.0 * u - 1.0) * amplitude;
    }
}
