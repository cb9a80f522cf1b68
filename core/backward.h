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

#include <stdbool.h>
#include <stddef.h>

#include "attention.h"
#include "variants.h"

/* The steps in the order they run, to name a cell by (attn_backward_precision keeps a
 * cell that is not finite and names the first; attn_backward refuses it). */
enum attn_grad_step {
    ATTN_GRAD_NONE = 0,
    ATTN_GRAD_V,
    ATTN_GRAD_WEIGHTS,
    ATTN_GRAD_DELTA,       /* a number a row: its cell is [i, 0] */
    ATTN_GRAD_MASKED,
    ATTN_GRAD_SCALED,
    ATTN_GRAD_SCORES,
    ATTN_GRAD_Q_ROPE,      /* with RoPE only */
    ATTN_GRAD_K_ROPE,
    ATTN_GRAD_Q,
    ATTN_GRAD_K,
    ATTN_GRAD_SINK_LOGIT,  /* one number: [0, 0] */
};

/* "grad_v", "grad_weights", "delta", ..., "grad_sink_logit"; "" for ATTN_GRAD_NONE. */
const char *attn_grad_step_name(enum attn_grad_step step);

struct attn_grads;
/* Whether v makes step: grad_q_rope and grad_k_rope with RoPE, grad_sink_logit with the
 * sink, the others always (ATTN_GRAD_NONE never). */
bool attn_grad_step_runs(enum attn_grad_step step, const struct attn_variants *v);
/* Step's numbers in g as a matrix view: delta as (n_q, 1), grad_sink_logit as (1, 1). */
struct attn_matrix attn_grads_step(const struct attn_grads *g, enum attn_grad_step step);

struct attn_grad_fault {
    enum attn_grad_step step;
    size_t row, col;
};

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
    struct attn_grad_fault fault;    /* the first cell not finite; ATTN_GRAD_NONE when none */
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

/* ---- streamed: no (n_q, n_k) matrix (core/stream_backward.c) ---- */

/* The gradients a streamed backward gives: those of the inputs, and D and the sink's. */
struct attn_stream_grads {
    size_t n_q, n_k, d_k, d_v;
    struct attn_matrix grad_q;  /* (n_q, d_k) */
    struct attn_matrix grad_k;  /* (n_k, d_k) */
    struct attn_matrix grad_v;  /* (n_k, d_v) */
    double *delta;              /* (n_q) */
    double grad_sink_logit;
    void *block;
};

enum attn_status attn_stream_grads_alloc(struct attn_stream_grads *g, size_t n_q, size_t n_k,
                                         size_t d_k, size_t d_v);
size_t attn_stream_grads_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v);
void attn_stream_grads_free(struct attn_stream_grads *g);

/*
 * grad_q, grad_k, grad_v, delta and grad_sink_logit of p and v for dO = d_out, with no
 * (n_q, n_k) matrix (FlashAttention 2's backward): from the forward pass's output and
 * each row's lse (attn_forward_stream's), each block of 128 query rows against each block
 * of at most 512 keys it sees recomputes P = e^(masked − lse) and dS = P ∘ (dP − D)
 * (through softcap and the scale) and adds dS·K', dSᵀ·Q' and Pᵀ·dO (K', Q' rotated with
 * RoPE; grad_q and grad_k turned back). The same numbers as attn_backward to rounding.
 * ATTN_EINVAL for sizes that do not fit, or dropout (its keep mask needs the weights);
 * ATTN_ENOMEM; ATTN_EOVERFLOW when a gradient is not finite. Its memory beside g: three
 * blocks of 128 × 512 doubles, and the rotated rows with RoPE.
 */
/* What attn_backward_stream holds beside g, in bytes: its three blocks, and with RoPE the
 * rotated rows and their gradients; 0 when a size overflows. */
size_t attn_backward_stream_scratch(size_t n_q, size_t n_k, size_t d_k, bool rope);

enum attn_status attn_backward_stream(struct attn_stream_grads *g, const struct attn_problem *p,
                                      const struct attn_variants *v,
                                      const struct attn_matrix *output, const double *lse,
                                      const struct attn_matrix *d_out);

#endif
