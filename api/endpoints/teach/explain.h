/*
 * api/endpoints/teach/explain.h — `explain`: one query row worked out as the first note works
 * it by hand, on /v1/attention and /v1/multihead.
 *
 * For row i (and, in multi-head, head h) every key's dot product term by term, the
 * scaled and masked score, e^masked as the note computes it (e^0 = 1, e^1 ≈ 2.72,
 * sum 3.72; null where it overflows, which is the NaN pitfall) beside the stable
 * e^(masked − row max) that gives the same weights, each weight, and the output as the
 * weighted sum of the value rows. JSON ("explain") and text (the same arithmetic as
 * sentences: "0×1 + 1×0 + … = 0", "e^1 ≈ 2.72", "1 ÷ 3.72 ≈ 0.27",
 * "0.27×[10, 0] + 0.73×[0, 10] = [2.7, 7.3]").
 *
 * The numbers are the trace's (scores, scaled, masked, weights, output: the same bits
 * as the matrices of the answer) and, for the exponentials, libm's exp.
 *
 * Dimension legend: n_q queries, n_k keys, d_k query/key width, d_v value width.
 */
#ifndef API_ENDPOINTS_EXPLAIN_H
#define API_ENDPOINTS_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/json/buf.h"
#include "api/json/write.h"
#include "api/render/text.h"
#include "core/attention.h"
#include "core/backward.h"
#include "core/precision.h"
#include "core/variants.h"

/* More terms than this (n_k·(d_k + d_v)) is 422 limit-exceeded at /explain. */
#define API_EXPLAIN_MAX_TERMS 65536

/* What `explain` asked for. */
struct api_explain_req {
    bool on;
    size_t row;
    size_t head; /* multi-head only */
};

/* The sizes `explain` is checked against. heads is 0 for /v1/attention (no "head"). */
struct api_explain_sizes {
    size_t n_q, n_k, d_k, d_v, heads;
};

/*
 * Reads the request's "explain" member (absent or null: off). Errors: not an object,
 * an unknown member, a row or head out of range (invalid-value at /explain/row,
 * /explain/head), too many terms (limit-exceeded at /explain).
 */
bool api_explain_read(const json_t *doc, const char *prefix, const struct api_explain_sizes *n,
                      struct api_explain_req *out, struct api_error *err);

/* How many numbers the explanation writes, for admission; 0 when off. */
size_t api_explain_numbers(const struct api_explain_req *e, const struct api_explain_sizes *n);

/*
 * One row worked out: views into the request and the trace, all borrowed. For
 * multi-head, query, keys and values are the head's slices of the projections.
 */
struct api_explain_row {
    size_t row;                      /* the query's index, as the answer names it */
    size_t at;                       /* its row in trace (and vsteps): row, or its place in
                                        `rows` when the answer holds the listed rows only */
    bool has_head;
    size_t head;
    const double *query;             /* (d_k) */
    struct attn_matrix keys;         /* (n_k, d_k) */
    struct attn_matrix values;       /* (n_k, d_v) */
    const struct attn_trace *trace;  /* the head's trace: scores … output */
    double scale;
    bool vector;                     /* one query sent as a vector */
    /*
     * The variants that shaped the row (zeroed: none) and their steps (NULL: none ran;
     * multi-head: the head's). With rope, query and keys are the rotated rows (q_rope's
     * row, k_rope) and query_before_rope is the row as sent.
     */
    struct attn_variants variants;
    const struct attn_vtrace *vsteps;
    const double *query_before_rope; /* (d_k) or NULL */
    struct attn_matrix keys_before_rope; /* (n_k, d_k) as sent, when rope */
    /* The low format the row ran in, or NULL (float64). The writers then show what the
     * format held: query, keys and values in the format, scale and the sink logit in the
     * accumulator, each exp, shift and sum rounded as the pass rounded it, and per key
     * the dot product's partial sums ("partial_sums"). */
    const struct attn_precision *precision;
    /* With `backward` (/v1/attention): the gradients and the row's dO, (d_v); NULL: none.
     * The row then shows its dS worked by hand: D = Σ_c dO_c·O_c, and per key
     * dP = Σ_c dO_c·V_jc (× keep/(1 − p) under dropout) and dS = P·(dP − D). */
    const struct attn_grads *grads;
    const double *grad_output;
};

/*
 * "explain": {...} as DESIGN.md gives it, with each variant step that runs by its step
 * name: "query_before_rope" beside the rotated "query"; per key "softcapped" between
 * scaled and masked, "dropout_keep" and "dropped" after the weight; "sink_logit" and
 * "sink_weight" when a sink takes its share (its e^(z − row_max) is in exp_sum); the
 * output's terms then weigh each value row by "dropped".
 */
void api_explain_write(struct jw *w, const struct api_explain_row *x);

/*
 * The same on a text page, numbers with `decimals` decimals (trailing zeros dropped,
 * "≈" where rounding changed a value), queries and keys by their labels.
 */
void api_explain_text(struct api_buf *b, const struct api_explain_row *x, int decimals,
                      const struct api_labels *queries, const struct api_labels *keys);

/*
 * Softmax's inner steps for every row, when `include` asks for them: parts bit 0
 * "row_max" (n_q; null for a fully masked row), bit 1 "shifted" (masked − row_max,
 * null where blocked), bit 2 "exp" (e^shifted, 0 where blocked); weights = exp / Σ exp.
 * A vector q writes a scalar and vectors.
 */
void api_write_softmax_parts(struct jw *w, const struct attn_trace *t, unsigned parts,
                             bool as_vector, const struct attn_precision *prec);

/* prec: a low format's (NULL for float64), in which shifted and exp are each rounded to
 * the accumulator as the pass held them. The same as labelled matrices on a text page
 * (row_max as one column): */
void api_text_softmax_parts(struct api_buf *b, const struct attn_trace *t, unsigned parts,
                            int decimals, const struct api_labels *queries,
                            const struct api_labels *keys, const struct attn_precision *prec);

/*
 * The row statistics a kernel returns beside its output, from the summary of n rows:
 * parts bit 0 "row_sum" (Σ exp(masked − row_max), the sink's term counted; 0 for a
 * fully masked row), bit 1 "lse" (row_max + ln row_sum, the natural log-sum-exp of the
 * row's visible masked scores; null (−inf) for a fully masked row). A vector q writes
 * scalars. Neither needs an (n_q, n_k) matrix: core keeps them in the summary.
 */
void api_write_row_stats(struct jw *w, const struct attn_summary *s, size_t n, unsigned parts,
                         bool as_vector);

/* The same on a text page: one labelled column each. */
void api_text_row_stats(struct api_buf *b, const struct attn_summary *s, size_t n,
                        unsigned parts, int decimals, const struct api_labels *queries);

#endif
