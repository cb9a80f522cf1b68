/*
 * core/mh_backward.h — the gradients of multi-head attention (core/multihead.h), step by
 * step, back through the output projection, every head (core/backward.h) and the three
 * input projections (DESIGN.md, "Backward: the gradients, step by step"):
 *
 *   grad_w_o = concatᵀ·dO (dOᵀ·concat with (out, in) weights)    grad_b_o = Σ_rows dO
 *   grad_concat = dO·W_Oᵀ (dO·W_O)
 *   head i: attn_backward on its views with dO_i = grad_concat's columns of head i
 *   grad_q = the heads' grad_q side by side; grad_k, grad_v: each kv head the sum of
 *            its query heads' (GQA groups summed)
 *   grad_w_q = X_qᵀ·grad_q (grad_qᵀ·X_q)     grad_b_q = Σ_rows grad_q     likewise k, v
 *   grad_x_q = grad_q·W_Qᵀ (grad_q·W_Q); grad_x_kv = grad_k·W_Kᵀ + grad_v·W_Vᵀ; for
 *   self-attention (x_kv is x_q) grad_x = grad_x_q + grad_x_kv, in grad_x_q
 *   grad_bias = Σ_heads dS_i       grad_sink_logit[i] = head i's
 *
 * Not here: JSON, HTTP. Dimension letters as in multihead.h.
 */
#ifndef ATTN_MH_BACKWARD_H
#define ATTN_MH_BACKWARD_H

#include <stdbool.h>
#include <stddef.h>

#include "backward.h"
#include "multihead.h"

struct attn_mh_grads {
    size_t n_q, n_k, d_model, heads, kv_heads, d_k;
    bool self;                        /* x_kv was x_q: grad_x_q is grad_x, the sum */
    struct attn_grads *head;          /* [h]: each head's steps (core/backward.h) */
    struct attn_matrix grad_concat;   /* (n_q, d_model) */
    struct attn_matrix grad_q;        /* (n_q, d_model) */
    struct attn_matrix grad_k;        /* (n_k, kv·d_k) */
    struct attn_matrix grad_v;        /* (n_k, kv·d_k) */
    struct attn_matrix grad_x_q;      /* (n_q, d_model) */
    struct attn_matrix grad_x_kv;     /* (n_k, d_model); zero for self-attention */
    struct attn_matrix grad_w_q;      /* in the weights' layout: (d, d) */
    struct attn_matrix grad_w_k;      /* (d, kv·d_k), or (kv·d_k, d) transposed */
    struct attn_matrix grad_w_v;
    struct attn_matrix grad_w_o;      /* (d, d) */
    double *grad_b_q, *grad_b_k, *grad_b_v, *grad_b_o; /* (d), (kv·d_k), (kv·d_k), (d) */
    struct attn_matrix grad_bias;     /* (n_q, n_k): Σ over heads of dS */
    double *grad_sink_logit;          /* (h) */
    void *block;
};

/* Allocates every gradient (each head's too). ATTN_EINVAL for sizes multihead.h refuses,
 * ATTN_ENOMEM when memory runs out; either leaves *g zeroed. */
enum attn_status attn_mh_grads_alloc(struct attn_mh_grads *g, size_t n_q, size_t n_k,
                                     size_t d_model, size_t heads, size_t kv_heads);

/* What attn_mh_grads_alloc allocates, in bytes; 0 when a size overflows. */
size_t attn_mh_grads_bytes(size_t n_q, size_t n_k, size_t d_model, size_t heads,
                           size_t kv_heads);

/* Frees everything and zeroes *g; safe on a zeroed one. */
void attn_mh_grads_free(struct attn_mh_grads *g);

/*
 * Every gradient of the forward pass fwd of p (attn_mh_forward's, or
 * attn_mh_forward_variants' with variants and vsteps, h entries each, or both NULL;
 * every step kept, no fault) for dO = d_out (n_q, d_model). The errors of attn_backward.
 */
enum attn_status attn_mh_backward(struct attn_mh_grads *g, const struct attn_mh_problem *p,
                                  const struct attn_variants *variants,
                                  const struct attn_vtrace *vsteps,
                                  const struct attn_mh_trace *fwd,
                                  const struct attn_matrix *d_out);

#endif
