/*
 * tests/fuzz/fuzz_variants.c — libFuzzer harness for the variants' reader
 * (api/request/variants.h) and the variant passes behind it (core/variants.h).
 *
 * The input is four size bytes (heads, n_q, n_k, d_k, each taken mod 8, plus 1) and a
 * JSON document holding the variants' fields. Whatever it holds must be read or
 * refused with a pointer, never crash or leak; when it is read, every head's problem
 * (numbers drawn from the input) runs through the fast path and the reference, which
 * must agree on the status and, when both succeed, on the weights to 1e-9.
 *
 * Not here: the endpoints around the reader (fuzz_api.c drives them).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/request/variants.h"

static void run_heads(const struct api_variants *v, const struct api_variant_sizes *s,
                      const uint8_t *data, size_t size)
{
    size_t n_q = s->n_q, n_k = s->n_k, d_k = s->d_k;
    double q[8 * 8], k[8 * 8], vals[8];
    for (size_t c = 0; c < n_q * d_k; c++)
        q[c] = size > 0 ? (double)data[c % size] / 16.0 - 8.0 : 0.0;
    for (size_t c = 0; c < n_k * d_k; c++)
        k[c] = size > 0 ? (double)data[(c * 7 + 3) % size] / 32.0 - 4.0 : 0.0;
    for (size_t c = 0; c < n_k; c++)
        vals[c] = (double)c;
    struct attn_matrix mq = attn_matrix_view(q, n_q, d_k), mk = attn_matrix_view(k, n_k, d_k);
    struct attn_matrix mv = attn_matrix_view(vals, n_k, 1);
    struct attn_problem p = { .q = &mq, .k = &mk, .v = &mv, .scale = 1.0 / sqrt((double)d_k),
                              .mask = { .kind = (data[0] & 1) ? ATTN_MASK_CAUSAL : ATTN_MASK_NONE } };
    for (size_t h = 0; h < s->heads; h++) {
        struct attn_variants cv = api_variants_for_head(v, h);
        struct attn_vtrace a, b;
        if (attn_vtrace_alloc(&a, n_q, n_k, d_k, 1, &cv) != ATTN_OK)
            abort();
        if (attn_vtrace_alloc(&b, n_q, n_k, d_k, 1, &cv) != ATTN_OK)
            abort();
        enum attn_status sa = attn_forward_variants(&a, &p, &cv);
        enum attn_status sb = attn_reference_variants(&b, &p, &cv);
        if (sa != sb)
            abort();
        for (size_t c = 0; sa == ATTN_OK && c < n_q * n_k; c++) {
            double x = a.base.weights.data[c], y = b.base.weights.data[c];
            if (!(fabs(x - y) <= 1e-9))
                abort();
        }
        attn_vtrace_free(&a);
        attn_vtrace_free(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    struct api_variant_sizes s = { 1 + data[0] % 8u, 1 + data[1] % 8u, 1 + data[2] % 8u,
                                   1 + data[3] % 8u, false };
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)data + 4, size - 4, JSON_REJECT_DUPLICATES, &jerr);
    if (doc == NULL)
        return 0;
    struct api_variants v;
    struct api_error err;
    if (api_variants_read(doc, "", &s, &v, &err)) {
        run_heads(&v, &s, data + 4, size - 4);
        api_variants_deinit(&v);
    } else if (err.type != API_UNAVAILABLE && err.pointer[0] == '\0' && json_is_object(doc)) {
        abort(); /* every refusal of a field names its pointer */
    }
    json_decref(doc);
    return 0;
}
