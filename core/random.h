/*
 * core/random.h — the one documented generator of attnd: splitmix64, by index.
 *
 * Value k (k = 0, 1, 2, ...) of stream s for a seed, row-major over whatever it fills:
 *
 *   state = seed + s·2^40 + (k + 1)·0x9E3779B97F4A7C15          (mod 2^64)
 *   z = state;  z = (z ^ z>>30)·0xBF58476D1CE4E5B9;  z = (z ^ z>>27)·0x94D049BB133111EB;
 *   z = z ^ z>>31                                                  (splitmix64's mix)
 *   u = (z >> 11) · 2^-53                                          in [0, 1)
 *
 * Each value depends only on (seed, stream, k), never on what came before, so numpy
 * regenerates a whole matrix in one vectorized expression (docs/api.md shows how).
 * Users: api/request/random.c (the multihead `random` inputs, streams 0-6) and
 * dropout (stream 7, core/variants.c). One owner, so the two cannot drift apart.
 */
#ifndef ATTN_RANDOM_H
#define ATTN_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* The stream dropout reads its keep/drop draws from. */
#define ATTN_RANDOM_STREAM_DROPOUT 7u

/* u of value k of the stream, in [0, 1) with 53 random bits. */
double attn_random_unit(uint64_t seed, unsigned stream, uint64_t k);

/* out[i] = attn_random_unit(seed, stream, first + i) for i < n. */
void attn_random_units(uint64_t seed, unsigned stream, uint64_t first, size_t n, double *out);

#endif
