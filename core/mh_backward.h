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
 * attn_mh_backward_precision takes the same steps in a low format, by the rules written
 * in core/precision.h ("Multi-head's backward").
 *
 * Not here: JSON, HTTP. Dimension letters as in multihead.h.
 */
#ifndef ATTN_MH_BACKWARD_H
#define ATTN_MH_BACKWARD_H

#include <stdbool.h>
#include <stddef.h>

#include "backward.h"
#include "multihead.h"

/* The steps outside the heads, in the order a low pass names the first cell that is not
 * finite (the heads' own steps are core/backward.h's, under ATTN_MH_GRAD_HEAD). */
enum attn_mh_grad_step {
    ATTN_MH_GRAD_NONE = 0,
    ATTN_MH_GRAD_W_O,
    ATTN_MH_GRAD_B_O,      /* with b_o only; a vector: its cell is [0, j] */
    ATTN_MH_GRAD_CONCAT,   /* dO·W_Oᵀ: each head's dO */
    ATTN_MH_GRAD_HEAD,     /* inside head `head`: head_step says which */
    ATTN_MH_GRAD_Q,
    ATTN_MH_GRAD_K,
    ATTN_MH_GRAD_V,
    ATTN_MH_GRAD_W_Q,
    ATTN_MH_GRAD_W_K,
    ATTN_MH_GRAD_W_V,
    ATTN_MH_GRAD_B_Q,      /* with its bias only, as b_o */
    ATTN_MH_GRAD_B_K,
    ATTN_MH_GRAD_B_V,
    ATTN_MH_GRAD_X_Q,      /* grad_x for self-attention */
    ATTN_MH_GRAD_X_KV,     /* cross-attention only */
    ATTN_MH_GRAD_BIAS,     /* with a bias only */
};

struct attn_mh_grad_fault {
    enum attn_mh_grad_step step;
    size_t head;                   /* ATTN_MH_GRAD_HEAD only */
    enum attn_grad_step head_step; /* ATTN_MH_GRAD_HEAD only */
    size_t row, col;
};

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
    struct attn_mh_grad_fault fault;  /* a low pass's first cell not finite; NONE when none */
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

/*
 * The same steps by the precision rules (core/precision.h, "Multi-head's backward"), on
 * fwd, the low forward pass of p (attn_mh_forward_precision's, with vsteps its variants'
 * own steps when variants are given), for dO = d_out. A cell that is not finite is kept:
 * g->fault names the first (W_O's gradients, grad_concat, head by head in each head's
 * steps' order, then grad_q … grad_bias in the enum's order; a bias's gradient only when
 * that bias is given, grad_x_kv only for cross-attention) and the status is ATTN_OK.
 * ATTN_EINVAL as attn_mh_backward (fwd's own fault aside), or for an invalid precision;
 * ATTN_ENOMEM. Its memory beside g: attn_mh_backward_precision_bytes at the most.
 */
enum attn_status attn_mh_backward_precision(struct attn_mh_grads *g,
                                            const struct attn_mh_problem *p,
                                            const struct attn_variants *variants,
                                            const struct attn_vtrace *vsteps,
                                            const struct attn_mh_trace *fwd,
                                            const struct attn_matrix *d_out,
                                            const struct attn_precision *prec);
size_t attn_mh_backward_precision_bytes(size_t n_q, size_t n_k, size_t d_model, size_t heads,
                                        size_t kv_heads, const struct attn_precision *prec);

/* "grad_w_o", "grad_b_o", "grad_concat", ..., "grad_x_q" ("grad_x" when self), "grad_bias";
 * "" for NONE and HEAD (a head's step has core/backward.h's name). */
const char *attn_mh_grad_step_name(enum attn_mh_grad_step step, bool self);

/* Whether p makes step: a bias's gradient with that bias, grad_x_kv for cross-attention,
 * grad_bias with a bias; the others always (NONE and HEAD never: the heads' are theirs). */
bool attn_mh_grad_step_runs(enum attn_mh_grad_step step, const struct attn_mh_problem *p);

/* Step's numbers in g as a matrix view: a bias's gradient as (1, n); the weights' in their
 * layout. NONE and HEAD give an empty view. */
struct attn_matrix attn_mh_grads_step(const struct attn_mh_grads *g, enum attn_mh_grad_step step);

#endif
