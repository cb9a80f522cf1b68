/*
 * core/precision.h — one attention computed as a kernel computes it in a low format,
 * by fixed rules, so anyone can reproduce every bit:
 *
 *   1. Q, K, V and the bias are rounded to the format: to nearest with ties to even,
 *      past the largest finite value ±inf, subnormals kept.
 *   2. Each matrix product takes its operands in the format and adds their exact
 *      products into the accumulator (float32, or the format itself) in index order,
 *      each partial sum rounded once, as a fused multiply-add does.
 *   3. Each element-wise step (scale, bias, max, subtract, exp, divide, log) is computed
 *      in float64 from its operands as held (exp and log by libm) and rounded once to
 *      the accumulator, the scale itself first; a row's sum adds in key order, each
 *      partial sum rounded once.
 *   4. The weights are rounded to the format before weights @ V (FlashAttention does
 *      the same with P); the output is rounded to the format last.
 *
 * The backward pass (attn_backward_precision, core/precision_backward.c) by the same rules:
 *
 *   1. dO (grad_output) is rounded to the format, as the inputs are.
 *   2. Each product is rule 2's: grad_v = mixᵀ·dO (mix the weights, or dropped under
 *      dropout, both held in the format by the forward), dP = dO·Vᵀ (V in the format),
 *      grad_q_rope = dS'·K' and grad_k_rope = dS'ᵀ·Q' (K', Q' the forward's operands in
 *      the format, rotated with RoPE), where dS' is grad_scores rounded to the format
 *      before its products (FlashAttention converts dS to the input type before dQ and
 *      dK); D_i = Σ_c dO_ic·O_ic is such a sum too, O as held (in the format).
 *   3. Each element-wise step is rule 3's, from its operands as held: dropout's
 *      dP·keep·1/(1 − p) (the factor rounded to the accumulator first), dS = P∘(dP − D)
 *      (0 where blocked), through softcap dS·(1 − tanh²(softcapped/c)) (c rounded
 *      first), grad_scores = grad_scaled·scale (the scale rounded first); grad_sink_logit
 *      = −Σ_i sink_weight_i·D_i adds in row order, each partial sum rounded once.
 *      dP, D, dS and what follows it to grad_scores, grad_q_rope, grad_k_rope and
 *      grad_sink_logit are held in the accumulator.
 *   4. grad_q, grad_k and grad_v are rounded to the format last, as the output is; with
 *      RoPE, grad_q_rope and grad_k_rope as held are turned back in float64 first.
 *
 * Multi-head's backward (attn_mh_backward_precision, core/mh_backward.c) on the low
 * forward (attn_mh_forward_precision's: Q, K, V and concat held in the format):
 *
 *   1. dO is rounded to the format.
 *   2. Each product is rule 2's through attn_product_precision: grad_w_o = concatᵀ·dO,
 *      grad_concat = dO·W_Oᵀ, grad_w_q = X_qᵀ·grad_q, grad_x_q = grad_q·W_Qᵀ, likewise k
 *      and v (dOᵀ·concat, grad_qᵀ·X_q and grad_q·W_Q with (out, in) weights).
 *   3. grad_concat is rounded to the format: each head's dO, and each head's backward is
 *      the one above on that head's columns of the low forward (its grad_q, grad_k and
 *      grad_v in the format).
 *   4. Sums are held in the accumulator, in index order, each partial sum rounded once:
 *      grad_k and grad_v of a kv head add its query heads' in head order (GQA), then are
 *      rounded to the format (the projections' operand); grad_bias adds the heads' dS
 *      and stays in the accumulator, as one head's dS does; a bias's gradient adds its
 *      dY's rows in order; grad_x_kv = grad_k·W_Kᵀ + grad_v·W_Vᵀ adds the two products
 *      (each in the accumulator) once, and for self-attention grad_x = grad_x_q +
 *      grad_x_kv once more.
 *   5. The layer's gradients (grad_x or grad_x_q and grad_x_kv, grad_w_*, grad_b_*) are
 *      rounded to the format last.
 *
 * Every step is kept as the exact value it holds, a double. Nothing is refused for not
 * being finite: an overflow is what this pass exists to show, so it runs through with
 * ±inf and NaN and the trace's fault names the first non-finite cell.
 *
 * Why the rounding is written here rather than taken from a library: the formats are
 * needed from double, rounded once (float's own rounding between would round twice),
 * for three formats including bfloat16, as pure C; the compiler's _Float16 covers one
 * format and libgcc's conversions none of the sums. The definition is ldexp and
 * nearbyint (attn_format_round_slow); the fast path is checked against it.
 *
 * Not here: JSON, HTTP.
 */
#ifndef ATTN_PRECISION_H
#define ATTN_PRECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "attention.h"

enum attn_format {
    ATTN_FLOAT64 = 0, /* no rounding: the reference */
    ATTN_FLOAT32,     /* IEEE binary32: 24 significand bits, exponents -126..127 */
    ATTN_FLOAT16,     /* IEEE binary16: 11 bits, -14..15, largest finite 65504 */
    ATTN_BFLOAT16,    /* bfloat16: 8 bits, float32's exponents, largest finite 0x1.fep127 */
    ATTN_FORMATS
};

/* "float64", "float32", "float16", "bfloat16"; "" outside the enum. */
const char *attn_format_name(enum attn_format f);

/* The largest finite value of f (65504 for float16). */
double attn_format_max(enum attn_format f);

/* x rounded once to f (to nearest, ties to even; ±inf past the largest finite value;
 * subnormals kept; NaN and ±inf as they are, ±0 keeps its sign). */
double attn_format_round(double x, enum attn_format f);

/* The same by its definition (ldexp and nearbyint), which the tests hold the fast one to. */
double attn_format_round_slow(double x, enum attn_format f);

/* acc + a·b, the exact value rounded once to f (f32 or narrower; a, b and acc held in
 * formats no wider than float32, so a·b is exact in a double). */
double attn_format_fma(double a, double b, double acc, enum attn_format f);

struct attn_precision {
    enum attn_format format;     /* the operands' format: FLOAT32, FLOAT16 or BFLOAT16 */
    enum attn_format accumulate; /* FLOAT32, or the format itself */
};

/* Whether p names a format and an accumulator these rules define. */
bool attn_precision_valid(const struct attn_precision *p);

/*
 * attn_forward's five steps and summary, by the rules above, into out (allocated for
 * the problem's sizes with every step kept: attn_trace_alloc, or ATTN_KEEP_ALL).
 * scores, scaled, masked and the row statistics are held in the accumulator, weights
 * and output in the format; the summary's other facts are float64. A step's
 * non-finite cell is kept, not refused: out->fault names the first one (its step, row
 * and column; ATTN_STEP_NONE when every cell is finite) and the status is ATTN_OK.
 * ATTN_EINVAL as attn_forward, or for an invalid precision; ATTN_ENOMEM.
 */
enum attn_status attn_forward_precision(struct attn_trace *out, const struct attn_problem *p,
                                        const struct attn_precision *prec);

/*
 * out = x·W (+ b) by the rules, as a kernel's projection: x, W and b rounded to the
 * format, the products summed into the accumulator in index order, b added there
 * (rounded once), the result rounded to the format. W is read as (x->cols, out->cols),
 * or transposed from (out->cols, x->cols); b has out->cols entries or is NULL. Cells
 * that are not finite are kept. ATTN_ENOMEM, or ATTN_EINVAL for an invalid precision.
 */
enum attn_status attn_project_precision(struct attn_matrix *out, const struct attn_matrix *x,
                                        const struct attn_matrix *w, const double *b,
                                        bool transposed, const struct attn_precision *prec);

/*
 * The same with the variants computed in the format so far: a window and sink tokens
 * (which keys a row sees, as attn_forward_variants) and ALiBi (−m·|i + off − j| added to
 * masked with the bias, in the one float64 sum rounded once). Any other variant, or
 * band_only, is ATTN_EINVAL.
 */
struct attn_variants;
enum attn_status attn_forward_precision_variants(struct attn_trace *out,
                                                 const struct attn_problem *p,
                                                 const struct attn_variants *v,
                                                 const struct attn_precision *prec);

/*
 * The same into a vtrace (allocated by attn_vtrace_alloc for v), which also holds the
 * steps of softcap and the sink logit: softcapped = c·tanh(scaled/c) in float64 from
 * scaled as held, c rounded to the accumulator first, rounded once; the sink logit
 * (rounded to the accumulator) is one more score in a row's max and its term is added
 * to the sum last; sink_weight = its term / the sum, rounded once. A fully masked row
 * gives the sink everything (weights 0, sink_weight 1), as in float64. Rope rotates q and
 * k as held in float64 (each element x_a·cos − x_b·sin, or x_b·cos + x_a·sin, as
 * attn_forward_variants) and rounds q_rope and k_rope to the format: the product's
 * operands. Dropout keeps what float64 keeps (the generator's u >= p) and its dropped =
 * weights · keep · 1/(1 − p), the factor rounded to the accumulator first, the product
 * rounded once to the accumulator and then to the format: weights @ V takes dropped.
 * band_only is ATTN_EINVAL.
 */
struct attn_vtrace;
enum attn_status attn_forward_precision_vtrace(struct attn_vtrace *vt,
                                               const struct attn_problem *p,
                                               const struct attn_variants *v,
                                               const struct attn_precision *prec);

/*
 * The notes' softmax mistakes (core/pitfall.h) by the same rules, from masked as the
 * low pass holds it: each cell's exp (and column softmax's shift) rounded to the
 * accumulator, the sums in order (a row's along its keys, a column's down its rows),
 * each weight rounded to the accumulator and then to the format. exp may be NULL.
 * Without the max the float16 accumulator ("same") overflows from a score of 11.1
 * (e^11.1 > 65504): +inf, and NaN where it is divided by.
 */
void attn_softmax_rows_unshifted_precision(struct attn_matrix *exp, struct attn_matrix *out,
                                           const struct attn_matrix *in,
                                           const struct attn_precision *prec);
void attn_softmax_columns_precision(struct attn_matrix *out, const struct attn_matrix *in,
                                    const struct attn_precision *prec);

/* out (n, m) = a (n, k) · b (k, m) by the rules: operands in the format, sums in the
 * accumulator in index order, the result rounded to the format (NaN and ±inf kept). */
void attn_matmul_precision(struct attn_matrix *out, const struct attn_matrix *a,
                           const struct attn_matrix *b, const struct attn_precision *prec);

/*
 * c (rows × cols) = op(a) · op(b) by rule 2, c left in the accumulator (not rounded to
 * the format): the operands' cells rounded to the format (a no-op on cells held there),
 * read transposed where a_t or b_t, each cell's sum in index order with every partial
 * sum rounded once. Cells that are not finite are kept. ATTN_EINVAL for an invalid
 * precision, ATTN_ENOMEM for its copies of the operands
 * (attn_product_precision_bytes(rows, inner, cols, prec) bytes; 0 when that overflows).
 */
enum attn_status attn_product_precision(struct attn_matrix *c, const struct attn_matrix *a,
                                        bool a_t, const struct attn_matrix *b, bool b_t,
                                        const struct attn_precision *prec);
size_t attn_product_precision_bytes(size_t rows, size_t inner, size_t cols,
                                    const struct attn_precision *prec);

/*
 * Every gradient of the low forward pass fwd (attn_forward_precision_vtrace's of p and v,
 * in prec) for dO = d_out by the backward's rules above, into g (attn_grads_alloc'ed for
 * p's sizes). A cell that is not finite is kept, not refused: g->fault names the first
 * one in the steps' order (ATTN_GRAD_NONE when every cell is finite; grad_q_rope and
 * grad_k_rope only with RoPE, grad_sink_logit only with the sink) and the status is
 * ATTN_OK, as it is with fwd's own fault. ATTN_EINVAL when g, fwd or d_out do not fit p
 * or prec is invalid; ATTN_ENOMEM. Its memory beside g:
 * attn_backward_precision_bytes(n_q, n_k, d_k, d_v, prec) at the most.
 */
struct attn_grads;
enum attn_status attn_backward_precision(struct attn_grads *g, const struct attn_problem *p,
                                         const struct attn_variants *v,
                                         const struct attn_vtrace *fwd,
                                         const struct attn_matrix *d_out,
                                         const struct attn_precision *prec);
size_t attn_backward_precision_bytes(size_t n_q, size_t n_k, size_t d_k, size_t d_v,
                                     const struct attn_precision *prec);

/* How one step held in a low format differs from the same step in float64. */
struct attn_step_error {
    double max_abs;          /* the largest |low − exact| over cells where both are finite */
    double max_rel;          /* the largest |low − exact| / |exact| there (exact ≠ 0) */
    size_t rel_row, rel_col; /* the cell of max_rel (ATTN_NO_INDEX when none) */
    size_t non_finite;       /* cells not finite in low but finite in exact */
};

/* low against exact, two matrices of one shape. */
struct attn_step_error attn_step_error_of(const struct attn_matrix *low,
                                          const struct attn_matrix *exact);

#endif
