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
#include "core/precision.h"

/* The inputs as sent: the first one that the format cannot hold is named. */
struct api_precision_inputs {
    const struct attn_matrix *q, *k, *v, *bias; /* bias NULL when none */
};

struct api_precision_report {
    struct attn_step_error steps[5]; /* scores, scaled, masked, weights, output */
    struct attn_step_error lse;      /* the row log-sum-exp, a number a row */
    const char *first;               /* "q", "k", "v", "bias" or a step's name; NULL when */
    size_t first_row, first_col;     /*   every cell is finite */
};

/* rep from the low and the float64 traces of one problem, and its inputs. */
void api_precision_report_fill(struct api_precision_report *rep,
                               const struct api_precision_inputs *in,
                               const struct attn_precision *p, const struct attn_trace *low,
                               const struct attn_trace *exact);

/* "precision", "precision_report" and "first_non_finite" members of an answer. */
void api_precision_write(struct jw *w, const struct api_precision *p,
                         const struct api_precision_report *rep);

/* The `precision-overflow` entry of a warnings list, when rep names a first non-finite
 * cell; nothing otherwise. */
void api_precision_write_warning(struct jw *w, const struct api_precision *p,
                                 const struct api_precision_report *rep);

/* The text page's lines: the format under the page's first line, each step's error
 * under its matrix (step 0..4: scores … output), and the warning with its hint. */
void api_precision_text_header(struct api_buf *b, const struct api_precision *p);
void api_precision_text_step(struct api_buf *b, const struct api_precision *p,
                             const struct api_precision_report *rep, int step);
void api_precision_text_warning(struct api_buf *b, const struct api_precision *p,
                                const struct api_precision_report *rep);

/* "; red: not finite in float16" for an SVG's subtitle when the weights hold a cell that
 * is not finite, else "" (into buf). */
void api_precision_svg_note(char *buf, size_t size, const struct api_precision *p,
                            const struct attn_matrix *weights);

#endif
