/*
 * api/endpoints/precision.h — what a request computed in a low format (`precision`,
 * core/precision.h) answers besides its steps: the format echoed, each step's error
 * against the float64 computation of the same request (`precision_report`), the first
 * cell that is not finite (`first_non_finite`, inputs rounded to the format counted),
 * and the `precision-overflow` warning with the hint that fixes it.
 *
 * Not here: reading `precision` (request/precision.h), the rules (core/precision.h).
 */
#ifndef API_ENDPOINTS_PRECISION_H
#define API_ENDPOINTS_PRECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "api/json/buf.h"
#include "api/json/write.h"
#include "api/request/precision.h"
#include "core/attention.h"
#include "core/multihead.h"
#include "core/precision.h"

/* The inputs as sent, in the order they are named: the first one that the format cannot
 * hold is the first cell that is not finite. */
struct api_precision_input {
    const char *name;             /* "q", "w_k", "bias", ... */
    const struct attn_matrix *m;  /* NULL when not sent */
};

/* One step's error; a step of every head (multi-head) is merged over the heads. */
struct api_precision_entry {
    const char *name;             /* "scores", "head_outputs", "lse", ... */
    struct attn_step_error e;
    size_t rel_head;              /* the head of max_rel, when per_head */
    bool per_head;                /* a step of every head: its cells are [h, i, j] */
    bool per_row;                 /* a number a row (lse): its cells are [i] ([h, i]) */
};

#define API_PRECISION_ENTRIES 28 /* one head: 6 and the backward's 11; multi-head: 10 and 18 */

struct api_precision_report {
    struct api_precision_entry entries[API_PRECISION_ENTRIES];
    size_t n;
    const char *first;            /* an input's or a step's name; NULL when every cell is */
    bool first_per_head;          /*   finite; a step of a head names its head */
    size_t first_head, first_row, first_col;
};

/* A zeroed report (heap; the request frees it), or NULL with err a 503. */
struct api_precision_report *api_precision_report_new(struct api_error *err);

/* rep from the low and the float64 traces of one problem, and its inputs (q, k, v, bias). */
void api_precision_report_fill(struct api_precision_report *rep,
                               const struct api_precision_input *in, size_t n_in,
                               const struct attn_precision *p, const struct attn_trace *low,
                               const struct attn_trace *exact);

/*
 * The backward's entries appended to rep (filled by api_precision_report_fill): each step
 * that runs for v, low against exact (delta's cells [i, 0], grad_sink_logit's [0, 0]),
 * and, when the forward holds no cell that is not finite, the first one of the backward:
 * grad_output as the format reads it (d_out as sent), else low's fault.
 */
struct attn_grads;
void api_precision_report_backward(struct api_precision_report *rep,
                                   const struct attn_precision *p,
                                   const struct attn_matrix *d_out,
                                   const struct attn_grads *low, const struct attn_grads *exact,
                                   const struct attn_variants *v);

/* The same for a multi-head problem: the projections, each head's steps merged over the
 * heads (and their outputs as head_outputs), the output and lse. */
void api_precision_mh_report_fill(struct api_precision_report *rep,
                                  const struct api_precision_input *in, size_t n_in,
                                  const struct attn_precision *p,
                                  const struct attn_mh_trace *low,
                                  const struct attn_mh_trace *exact);

/*
 * Multi-head's backward entries appended to rep (filled by api_precision_mh_report_fill),
 * in the answer's order: grad_w_o, grad_b_o, each head's grad_weights, delta ([h, i]) and
 * grad_masked merged over the heads, grad_q … grad_x_kv, grad_sink_logit ([h]) and
 * grad_bias, each that problem (and, for the sink, sink) makes; a bias's gradient's cell
 * is [j]. When the forward holds no cell that is not finite, the first of the backward:
 * grad_output as the format reads it (d_out as sent), else low's fault (a head's step
 * with its head).
 */
struct attn_mh_grads;
void api_precision_mh_report_backward(struct api_precision_report *rep,
                                      const struct attn_precision *p,
                                      const struct attn_matrix *d_out,
                                      const struct attn_mh_problem *problem, bool sink,
                                      const struct attn_mh_grads *low,
                                      const struct attn_mh_grads *exact);

/* "precision", "precision_report" and "first_non_finite" members of an answer. */
void api_precision_write(struct jw *w, const struct api_precision *p,
                         const struct api_precision_report *rep);

/* The `precision-overflow` entry of a warnings list, when rep names a first non-finite
 * cell; nothing otherwise. */
void api_precision_write_warning(struct jw *w, const struct api_precision *p,
                                 const struct api_precision_report *rep);

/* The text page's lines: the format under the page's first line, a step's error under
 * its matrix (the entry of that name), and the warning with its hint. */
void api_precision_text_header(struct api_buf *b, const struct api_precision *p);
void api_precision_text_step(struct api_buf *b, const struct api_precision *p,
                             const struct api_precision_report *rep, const char *step);
void api_precision_text_warning(struct api_buf *b, const struct api_precision *p,
                                const struct api_precision_report *rep);

/* "; red: not finite in float16" for an SVG's subtitle when the weights hold a cell that
 * is not finite, else "" (into buf). */
void api_precision_svg_note(char *buf, size_t size, const struct api_precision *p,
                            const struct attn_matrix *weights);

#endif
