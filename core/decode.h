/*
 * core/decode.h — generation with a KV cache: one token at a time, as a decoder runs.
 *
 * A causal self-attention layer (multihead.h's problem, mask causal) is computed the way
 * a model generates: the first p tokens' keys and values are projected in one pass (the
 * prefill: one product each), then for each later token t = p … n − 1 alone:
 *
 *   q_t, k_t, v_t = x_t·W_Q + b_q, x_t·W_K + b_k, x_t·W_V + b_v   (one row each)
 *   append k_t (rotated at position t with RoPE) and v_t to the cache: rows [0, t]
 *   head i:  w = softmax(q_t,i · K_g(i)[0..t]ᵀ · scale + bias_t, with the variants)
 *            out_i = w · V_g(i)[0..t]
 *   output_t = concat(out_0 … out_{h−1})·W_O + b_o
 *
 * Causality is why this equals the full pass: row t of a causal pass sees keys 0..t
 * only, which are exactly the cache's rows when token t is generated. The caller
 * compares the two (api/), so the equality is shown, not assumed.
 *
 * Variants that make sense for a causal decoder run in every step: RoPE (the query at
 * position t, each key at its own position when it enters the cache), a window (keys
 * j < t − left are hidden; right is moot, nothing after t exists yet) with sink tokens,
 * ALiBi (−m·(t − j)), softcap and the sink logit. Dropout, documents, a prefix, a chunk,
 * top-left causal and a cell mask are not for generation: ATTN_EINVAL.
 *
 * Not here: JSON, HTTP, printing. Dimension letters as multihead.h's; n = n_q = n_k.
 */
#ifndef ATTN_DECODE_H
#define ATTN_DECODE_H

#include <stddef.h>

#include "multihead.h"

/*
 * One query token in one head against its kv head's cache rows 0..t. Borrowed
 * pointers; k and v are views (stride the cache's row width).
 */
struct attn_decode_query {
    const double *q;                      /* (d_k): rotated already when RoPE is on */
    struct attn_matrix k, v;              /* (t + 1, d_k): the cache, keys rotated */
    const double *bias;                   /* (t + 1): row t of the bias, or NULL */
    double scale;                         /* > 0 */
    const struct attn_variants *variants; /* this head's (slope, sink logit), or NULL */
    size_t t, n;                          /* the query's position; the sequence's length */
};

/*
 * weights (t + 1) and out (d_k) of one query: scores q·K[j]ᵀ (cblas_dgemv), scaled,
 * softcapped, + bias − m·(t − j), −inf where the window hides j, softmax with the sink
 * logit in its sum, then out = weightsᵀ·V (cblas_dgemv). ATTN_EOVERFLOW when a weight or
 * an output is not finite (*bad_col says which weight, or d_k + c for output c);
 * ATTN_EINVAL for a variant decode refuses (see above).
 */
enum attn_status attn_decode_attend(double *weights, double *out,
                                    const struct attn_decode_query *dq, size_t *bad_col);

/* Everything a decode keeps: the cache after the last token and each token's rows. */
struct attn_decode {
    size_t n, prefill, d_model, heads, kv_heads, d_k;
    struct attn_matrix cache_k;  /* (n, kv·d_k): row j = token j's keys (RoPE'd), all kv heads */
    struct attn_matrix cache_v;  /* (n, kv·d_k) */
    struct attn_matrix q;        /* (n − p, d_model): token p + s's query as projected */
    struct attn_matrix output;   /* (n − p, d_model): token p + s's output row */
    double *weights;             /* token t's (h, t + 1) at attn_decode_weights(d, t) */
    struct attn_mh_fault fault;  /* set on ATTN_EOVERFLOW: row is the token t */
    void *block;                 /* everything above and the per-token scratch */
};

/* The doubles attn_decode_alloc holds, or 0 for bad sizes (p outside (0, n)) or overflow. */
size_t attn_decode_cells(size_t n, size_t prefill, size_t d_model, size_t heads,
                         size_t kv_heads);

/* One block, zero-filled. ATTN_EINVAL for bad sizes, ATTN_ENOMEM; both leave *d zeroed. */
enum attn_status attn_decode_alloc(struct attn_decode *d, size_t n, size_t prefill,
                                   size_t d_model, size_t heads, size_t kv_heads);

/* Frees the block and zeroes *d; safe on a zeroed one, twice a no-op. */
void attn_decode_free(struct attn_decode *d);

/* Token t's weights, (h, t + 1) row-major, for prefill <= t < n. */
const double *attn_decode_weights(const struct attn_decode *d, size_t t);

/*
 * Prefill, then every later token alone, into d (allocated for p's n and sizes).
 * variants: h entries (head i's slope and sink logit; RoPE prepared for (n, n)) or NULL.
 * ATTN_EINVAL for a problem decode does not run (cross-attention, a mask other than
 * causal, a variant refused above); ATTN_EOVERFLOW with d->fault at the first token whose
 * projection, weights or output is not finite.
 */
enum attn_status attn_decode_run(struct attn_decode *d, const struct attn_mh_problem *p,
                                 const struct attn_variants *variants);

#endif
