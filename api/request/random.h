/*
 * api/request/random.h — reproducible inputs for /v1/multihead's `random` option.
 *
 * The generator is written down so anyone can regenerate the same numbers (the
 * docs/api.md shows it in numpy). Value k (k = 0, 1, 2, ...) of stream s, row-major:
 *
 *   state = seed + s·2^40 + (k + 1)·0x9E3779B97F4A7C15          (mod 2^64)
 *   z = state;  z = (z ^ z>>30)·0xBF58476D1CE4E5B9;  z = (z ^ z>>27)·0x94D049BB133111EB;
 *   z = z ^ z>>31                                                  (splitmix64's mix)
 *   value = ((z >> 11) · 2^-53 · 2 − 1) · amplitude                in [−amplitude, amplitude)
 *
 * Streams: x 0, x_q 1, x_kv 2, w_q 3, w_k 4, w_v 5, w_o 6 (/v1/multihead); q 10, k 11,
 * v 12 (/v1/attention); 8 the backward pass's dO (`backward: {"seed"}`). Amplitude: 1 for inputs, 1/sqrt(d_model) for weights
 * (PyTorch's default bound for a Linear layer), so projections keep the scale of x. A
 * weight is generated in the layout the request names (row-major (out, in) for "out_in").
 *
 * Nothing is filled while a request is parsed: the parse runs before admission, and a
 * body of a few dozen bytes can ask for millions of numbers. The parse sets each
 * matrix's shape (data NULL); api_random_fill_matrix fills it where the request runs.
 */
#ifndef API_RANDOM_H
#define API_RANDOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/request/fields.h"
#include "core/attention.h"

enum api_random_stream {
    API_STREAM_X = 0,
    API_STREAM_X_Q,
    API_STREAM_X_KV,
    API_STREAM_W_Q,
    API_STREAM_W_K,
    API_STREAM_W_V,
    API_STREAM_W_O,
    API_STREAM_GRAD_OUTPUT = 8,    /* `backward`'s dO (stream 7 is dropout's, in core) */
    API_STREAM_Q = 10,             /* /v1/attention's q, k and v */
    API_STREAM_K,
    API_STREAM_V,
};

/* Fills out[0..n) with values 0..n-1 of the stream. */
void api_random_fill(double *out, size_t n, uint64_t seed, enum api_random_stream stream,
                     double amplitude);

/*
 * The `random` object `node` (its pointer ptr) of an endpoint whose fields are known[]:
 * an object (else a 4xx showing `example`) of known fields only.
 */
bool api_random_check_object(const json_t *node, const char *ptr, const char *example,
                             const struct api_field *known, size_t n_known,
                             struct api_error *err);

/*
 * random.seed of the `random` object `node` (its pointer ptr): required, an integer from
 * 0 to 2^63-1 (the same seed gives the same numbers), else a 4xx at ptr/seed.
 */
bool api_random_read_seed(const json_t *node, const char *ptr, uint64_t *seed,
                          struct api_error *err);

/*
 * Fills m from the stream when the parse left it to `random` (data NULL, shape set): its
 * numbers are allocated here and m owns them from then on (freed with m). A matrix
 * that has numbers already is left alone. False (503 unavailable) when memory runs out.
 */
bool api_random_fill_matrix(struct attn_matrix *m, uint64_t seed, enum api_random_stream stream,
                            double amplitude, struct api_error *err);

/*
 * How many numbers api_random_fill has made since the process started: a test's
 * witness that a request refused by a field or by admission filled nothing.
 */
unsigned long long api_random_numbers_filled(void);

#endif
