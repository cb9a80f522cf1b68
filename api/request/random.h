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
 * Streams: x 0, x_q 1, x_kv 2, w_q 3, w_k 4, w_v 5, w_o 6. Amplitude: 1 for inputs,
 * 1/sqrt(d_model) for weights (PyTorch's default bound for a Linear layer), so
 * projections keep the scale of x. A weight is generated in the layout the request
 * names (row-major (out, in) for "out_in").
 */
#ifndef API_RANDOM_H
#define API_RANDOM_H

#include <stddef.h>
#include <stdint.h>

enum api_random_stream {
    API_STREAM_X = 0,
    API_STREAM_X_Q,
    API_STREAM_X_KV,
    API_STREAM_W_Q,
    API_STREAM_W_K,
    API_STREAM_W_V,
    API_STREAM_W_O,
};

/* Fills out[0..n) with values 0..n-1 of the stream. */
void api_random_fill(double *out, size_t n, uint64_t seed, enum api_random_stream stream,
                     double amplitude);

/*
 * How many numbers api_random_fill has made since the process started: a test's
 * witness that a request refused by a field or by admission filled nothing.
 */
unsigned long long api_random_numbers_filled(void);

#endif
