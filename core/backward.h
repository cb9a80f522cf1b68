/*
 * core/backward.h — the gradients of attention, step by step (DESIGN.md, "Backward: the
 * gradients, step by step"): given a forward pass's every step (a struct attn_vtrace,
 * variants included) and dO = ∂L/∂output, each gradient back to q, k and v:
 *
 *   grad_v       (n_k, d_v)  mixᵀ · dO; mix is weights, or dropped under dropout
 *   grad_weights (n_q, n_k)  dP = dO · Vᵀ, × keep / (1 − p) under dropout
 *   delta        (n_q)       D_i = Σ_c dO_ic · O_ic = Σ_j P_ij · dP_ij (the sink's own dP
 *                            is 0: it carries no value)
 *   grad_masked  (n_q, n_k)  dS = P ∘ (dP − D), 0 where blocked; also ∂L/∂bias
 *   grad_scaled  (n_q, n_k)  through softcap dS · (1 − tanh²(scaled / c)), else dS
 *   grad_scores  (n_q, n_k)  grad_scaled · scale
 *   grad_q_rope  (n_q, d_k)  grad_scores · K', K' the rotated keys when RoPE runs
 *   grad_k_rope  (n_k, d_k)  grad_scoresᵀ · Q'
 *   grad_q, grad_k           back through RoPE (each pair turned by −θ), else the above
 *   grad_sink_logit          −Σ_i sink_weight_i · D_i (one logit shared by the rows)
 *
 * ALiBi, the window, the mask and the training masks are constants of the forward pass:
 * they reach the gradients through P alone. Everything is float64, each product one
 * cblas_dgemm.
 *
 * Not here: JSON, HTTP, reading requests. Dimension letters as in attention.h.
 */
#ifndef ATTN_BACKWARD_H
#define ATTN_BACKWARD_H

#include <stddef.h>

#include "attention.h"
#include "variants.h"

struct attn_grads {
    size_t n_q, n_k, d_k, d_v;
    struct attn_matrix grad_v;       /* (n_k, d_v) */
    struct attn_matrix grad_weights; /* (n_q, n_k) */
    double *delta;                   /* (n_q) */
    struct attn_matrix grad_masked;  /* (n_q, n_k) */
    struct attn_matrix grad_scaled;  /* (n_q, n_k) */
    struct attn_matrix grad_scores;  /* (n_q, n_k) */
    struct attn_matrix grad_q_rope;  /* (n_q, d_k) */
    struct attn_matrix grad_k_rope;  /* (n_k, d_k) */
    struct attn_matrix grad_q;       /* (n_q, d_k) */
    struct attn_matrix grad_k;       /* (n_k, d_k) */
    double grad_sink_logit;          /* 0 without a sink */
    void *block;
};

/* Allocates every gradient for these sizes in one block. ATTN_EINVAL for a zero size,
 * ATTN_ENOMEM when memory (or a size_t) runs out; either leaves *g zeroed. */
enum attn_status attn_grads_alloc(struct attn_grads *g, size_t n_q, size_t n_k, size_t d_k,
                                  size_t d_v);

/* What attn_grads_alloc would allocate, in bytes; 0 when a size overflows. */
size_t attn_grads_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v);

/* Frees the block and zeroes *g; safe on a zeroed one. */
void attn_grads_free(struct attn_grads *g);

/*
 * Every gradient of the forward pass fwd (attn_forward_variants' or
 * attn_reference_variants' of p and v, every step kept, no fault) for dO = d_out
 * (n_q, d_v). ATTN_EINVAL when g, fwd or d_out do not fit p's sizes or fwd holds a
 * fault; ATTN_ENOMEM when RoPE's back-rotation cannot have its table; ATTN_EOVERFLOW
 * when a gradient is not finite (dO or V near the largest double).
 */
enum attn_status attn_backward(struct attn_grads *g, const struct attn_problem *p,
                               const struct attn_variants *v, const struct attn_vtrace *fwd,
                               const struct attn_matrix *d_out);

#endif
