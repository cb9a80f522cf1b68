/*
 * core/multihead.h — multi-head attention with projections: self, cross, GQA.
 *
 *   Q = X_q·W_Q + b_q      K = X_kv·W_K + b_k      V = X_kv·W_V + b_v
 *   head i:  weights_i = softmax(Q_i·K_g(i)ᵀ·scale + bias, masked),  out_i = weights_i·V_g(i)
 *   output = concat(out_0 … out_{h-1})·W_O + b_o
 *
 * Head i takes columns [i·d_k, (i+1)·d_k) of Q; it reads kv head g(i) = ⌊i·kv_heads/h⌋
 * of K and V (grouped-query attention; kv_heads = 1 is multi-query, kv_heads = h is
 * ordinary multi-head). Each head runs attn_forward on column-block views of Q, K and
 * V (a stride, no copies), so the mask, bias, scale and fully-masked-row rules are
 * exactly those of single-head attention.
 *
 * Weights are (in, out) as the seeds write XW_Q; with transposed_weights they are
 * PyTorch's (out, in) and the products use Wᵀ, so torch weights paste in unchanged.
 *
 * Not here: JSON, HTTP, printing, random inputs (api/ fills those in).
 *
 * Dimension legend (adds to attention.h's):
 *   d_model  width of X and of the output     h  heads      kv  kv_heads
 *   d_k      d_model / h, the width of one head (d_v = d_k)
 *   n_q      rows of X_q                        n_k  rows of X_kv
 */
#ifndef ATTN_MULTIHEAD_H
#define ATTN_MULTIHEAD_H

#include <stdbool.h>
#include <stddef.h>

#include "attention.h"
#include "precision.h"
#include "stream.h"
#include "variants.h"

/* One multi-head problem. Borrowed pointers: core never frees them. */
struct attn_mh_problem {
    const struct attn_matrix *x_q;   /* (n_q, d_model) */
    const struct attn_matrix *x_kv;  /* (n_k, d_model); the same as x_q for self-attention */
    const struct attn_matrix *w_q;   /* (d_model, d_model) */
    const struct attn_matrix *w_k;   /* (d_model, kv·d_k), or (kv·d_k, d_model) transposed */
    const struct attn_matrix *w_v;   /* like w_k */
    const struct attn_matrix *w_o;   /* (d_model, d_model) */
    const double *b_q, *b_k, *b_v, *b_o; /* (d_model), (kv·d_k), (kv·d_k), (d_model); NULL = 0 */
    bool transposed_weights;         /* weights are (out, in): use Wᵀ */
    size_t heads;                    /* h >= 1, dividing d_model */
    size_t kv_heads;                 /* kv >= 1, dividing h */
    const struct attn_matrix *bias;  /* (n_q, n_k) added in every head, or NULL */
    struct attn_mask mask;           /* applied in every head */
    double scale;                    /* > 0 */
};

/* Where a multi-head pass first produced a non-finite number. */
enum attn_mh_step {
    ATTN_MH_NONE = 0,
    ATTN_MH_Q,      /* the projection Q */
    ATTN_MH_K,
    ATTN_MH_V,
    ATTN_MH_HEAD,   /* inside head `head`: `head_step` says which of the five steps */
    ATTN_MH_OUTPUT, /* concat·W_O + b_o */
};

struct attn_mh_fault {
    enum attn_mh_step step;
    size_t head;              /* ATTN_MH_HEAD only */
    enum attn_step head_step; /* ATTN_MH_HEAD only; a variant's step (variants.h) too */
    size_t row, col;
};

/* Every step of one multi-head forward pass. */
struct attn_mh_trace {
    size_t n_q, n_k, d_model, heads, kv_heads, d_k;
    struct attn_matrix q;           /* (n_q, d_model) */
    struct attn_matrix k;           /* (n_k, kv·d_k) */
    struct attn_matrix v;           /* (n_k, kv·d_k) */
    struct attn_trace *head;        /* [h]: scores … output (n_q, d_k) and summary per head */
    struct attn_matrix concat;      /* (n_q, d_model): head outputs side by side */
    struct attn_matrix output;      /* (n_q, d_model) */
    struct attn_matrix weights_mean;/* (n_q, n_k): the average of the heads' weights */
    struct attn_mh_fault fault;     /* set when a pass returns ATTN_EOVERFLOW */
    void *block;                    /* q, k, v, concat, output, weights_mean, head[] */
};

/*
 * Doubles a multi-head trace holds, all heads included, or 0 on size_t overflow:
 * what api/ checks against --max-cells before allocating.
 */
size_t attn_mh_trace_cells(size_t n_q, size_t n_k, size_t d_model, size_t heads,
                           size_t kv_heads);

/*
 * Allocates the trace: one block for the projections, concat, output and mean,
 * plus one attn_trace per head. ATTN_ENOMEM leaves *t zeroed and nothing allocated;
 * ATTN_EINVAL when heads does not divide d_model or kv_heads does not divide heads.
 */
enum attn_status attn_mh_trace_alloc(struct attn_mh_trace *t, size_t n_q, size_t n_k,
                                     size_t d_model, size_t heads, size_t kv_heads);

/* Frees everything and zeroes *t. Safe on a zeroed trace; twice is a no-op. */
void attn_mh_trace_free(struct attn_mh_trace *t);

/* The kv head that query head i reads: ⌊i·kv_heads/heads⌋. */
size_t attn_mh_kv_head(size_t i, size_t heads, size_t kv_heads);

/*
 * Runs every step into out (allocated for the problem's sizes): projections with
 * cblas_dgemm, each head with attn_forward on strided views, concat, output, mean.
 * ATTN_EOVERFLOW with out->fault set at the first non-finite number.
 */
enum attn_status attn_mh_forward(struct attn_mh_trace *out, const struct attn_mh_problem *p);

/*
 * The same, each head's forward pass on `threads` threads (attn_forward_threads: the
 * same bits whatever the count); 0 and 1 mean this thread only.
 */
enum attn_status attn_mh_forward_threads(struct attn_mh_trace *out,
                                         const struct attn_mh_problem *p, unsigned threads);

/*
 * Every step by core/precision.h's rules: the three projections and the output one
 * through attn_project_precision (so Q, K, V, concat and the output are held in the
 * format), each head through attn_forward_precision on its views, the mean of the heads'
 * weights in float64. variants (h entries, or NULL) are each head's; with vsteps (h
 * entries allocated as attn_mh_forward_variants takes them) every variant runs, each
 * head through attn_forward_precision_vtrace, else a window, sink tokens and ALiBi
 * (attn_forward_precision_variants). Cells that
 * are not finite are kept: out->fault names the first (the projections, then head by
 * head, then the output) and the status is ATTN_OK.
 * ATTN_EINVAL as attn_mh_forward, or for an invalid precision; ATTN_ENOMEM.
 */
enum attn_status attn_mh_forward_precision(struct attn_mh_trace *out,
                                           const struct attn_mh_problem *p,
                                           const struct attn_variants *variants,
                                           struct attn_vtrace *vsteps,
                                           const struct attn_precision *prec);

/* The same contract in naive loops (projections, heads via attn_reference, concat, output). */
enum attn_status attn_mh_reference(struct attn_mh_trace *out, const struct attn_mh_problem *p);

/*
 * With the attention variants (core/variants.h) in every head: variants[i] is head i's
 * (its ALiBi slope, sink logit and dropout offset are its own), and its own steps go to
 * vsteps[i], allocated by the caller with attn_vtrace_alloc_steps for (n_q, n_k, d_k)
 * and variants[i]. Both arrays borrowed, h entries each. A fault in a variant's step
 * has that step (variants.h's numbering) in fault.head_step.
 */
enum attn_status attn_mh_forward_variants(struct attn_mh_trace *out,
                                          const struct attn_mh_problem *p,
                                          const struct attn_variants *variants,
                                          struct attn_vtrace *vsteps);
enum attn_status attn_mh_reference_variants(struct attn_mh_trace *out,
                                            const struct attn_mh_problem *p,
                                            const struct attn_variants *variants,
                                            struct attn_vtrace *vsteps);

/*
 * A copy of src holding only the listed query rows, in that order (rows[r] < src->n_q,
 * repeats allowed): q, concat, output, weights_mean and every head's steps and summary
 * by row; k and v whole. dst is allocated here (free with attn_mh_trace_free); with
 * vsteps_src/vsteps_dst (h entries each, or both NULL) the variants' per-query steps too
 * (k_rope whole), dst's allocated here for `variants`. ATTN_ENOMEM leaves dst (and
 * vsteps_dst) zeroed; ATTN_EINVAL for a row out of range or n_rows == 0.
 */
enum attn_status attn_mh_trace_select_rows(struct attn_mh_trace *dst,
                                           const struct attn_mh_trace *src, const size_t *rows,
                                           size_t n_rows, const struct attn_variants *variants,
                                           const struct attn_vtrace *vsteps_src,
                                           struct attn_vtrace *vsteps_dst);

/*
 * ---- Streamed: no (n_q, n_k) matrix (core/stream.h in every head) ----
 *
 * The projections (Q whole while the pass runs; only the listed rows are kept), each
 * head's output and summary by attn_forward_stream on column-block views, concat and
 * the output projection for the listed rows. No weights, no weights_mean.
 */
struct attn_mh_stream {
    size_t n_rows, n_q, n_k, d_model, heads, kv_heads, d_k;
    struct attn_matrix q;       /* (n_rows, d_model): the listed rows of X_q·W_Q + b_q */
    struct attn_matrix k, v;    /* (n_k, kv·d_k) */
    struct attn_stream *head;   /* [h]: output (n_rows, d_k) and summary of the listed rows */
    struct attn_matrix concat;  /* (n_rows, d_model) */
    struct attn_matrix output;  /* (n_rows, d_model) */
    struct attn_mh_fault fault; /* row: the real query index for a head's or W_O's fault */
    void *block;
};

/* ATTN_EINVAL for a zero size or sizes that do not divide; ATTN_ENOMEM; both leave *s zeroed. */
enum attn_status attn_mh_stream_alloc(struct attn_mh_stream *s, size_t n_rows, size_t n_q,
                                      size_t n_k, size_t d_model, size_t heads, size_t kv_heads);
void attn_mh_stream_free(struct attn_mh_stream *s); /* zeroes *s; twice is a no-op */

/*
 * What a streamed multi-head pass holds at once beyond its inputs, in bytes: the answer
 * (attn_mh_stream_alloc's), whole Q while it runs, and one head's streamed scratch
 * (attn_stream_bytes for d_k with `threads`, its answer counted once more); 0 on overflow,
 * a zero size or sizes that do not divide. Nothing of n_q·n_k: doubling n_k adds K and V.
 * With RoPE, a head's rotated keys (n_k·d_k doubles, one head at a time) count with the
 * inputs, as attn_stream_bytes says.
 */
size_t attn_mh_stream_bytes(size_t n_rows, size_t n_q, size_t n_k, size_t d_model,
                            size_t heads, size_t kv_heads, unsigned threads);

/*
 * rows == NULL: every query in order (n_rows must be n_q). variants: NULL, or h entries
 * (head i's own slopes and sink), none with dropout (ATTN_EINVAL). threads as
 * attn_forward_stream's; the bits do not depend on it. Agrees with attn_mh_forward (and
 * attn_mh_forward_variants) as attn_forward_stream agrees with attn_forward: q, k, v bit
 * for bit, fully_masked and argmax exactly, the rest to 1e-12 relative. ATTN_EOVERFLOW
 * with fault set as attn_mh_forward sets it (projections Q, K, V whole in row-major
 * order; then head by head, the stream's fault; then the output's listed rows), the
 * fault's row being the real query index.
 */
enum attn_status attn_mh_forward_stream(struct attn_mh_stream *out,
                                        const struct attn_mh_problem *p,
                                        const struct attn_variants *variants,
                                        const size_t *rows, size_t n_rows, unsigned threads);

#endif
