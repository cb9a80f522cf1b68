/*
 * api/endpoints/answer.h — what the answers of /v1/attention and /v1/multihead share:
 * shapes, the mask's and bias's shapes and the labels as sent, the per-query summary,
 * and the warnings for queries whose mask row blocks every key, in JSON and in text.
 * One writer each, so that both endpoints (and the ones still to come) say the same
 * thing in the same words.
 */
#ifndef API_ENDPOINTS_ANSWER_H
#define API_ENDPOINTS_ANSWER_H

#include <stddef.h>

#include "api/json/buf.h"
#include "api/json/write.h"
#include "api/render/svg.h"
#include "api/render/text.h"
#include "api/request/grid.h"
#include "api/endpoints/precision.h"
#include "api/endpoints/teach/ties.h"
#include "core/attention.h"

/* "mask": its shape as sent, "causal" or null; then "bias": shape or null. */
void api_grid_write_shapes(struct jw *w, const struct api_grid *g);

/* "labels": {...} as sent, when sent. */
void api_grid_write_labels(struct jw *w, const struct api_grid *g);

/* [rows, cols], or [cols] when the leading 1 of a vector is dropped. */
void api_write_shape(struct jw *w, size_t rows, size_t cols, bool as_vector);

/* What a fully masked query's weights and results are, after "its weights and ". */
#define API_ZEROED_OUTPUT API_N("output are 0")
#define API_ZEROED_HEAD_OUTPUTS API_N("head outputs are 0 in every head")

/*
 * Why a row's weights are all 0, for the warnings' words (NULL: the mask's doing, no
 * sink). A row the mask leaves keys to but the window (with its sink tokens) hides them
 * all is the window's doing; a row with keys to see whose every weight is 0 gave it all
 * to the sink logit ("sink_took_all", per head, with argmax null). All borrowed.
 */
struct api_row_causes {
    const struct api_grid *grid;         /* the mask as read */
    bool window;                         /* a window is on */
    bool sink;                           /* a sink logit is on */
    const struct attn_trace *heads;      /* (n_heads) traces: their weights */
    size_t n_heads;
    const size_t *real_rows;             /* `rows`: the query index of each answer row, */
                                         /*   or NULL when row i is query i */
    const struct api_precision *precision;        /* a low format's, or NULL: its */
    const struct api_precision_report *report;    /*   precision-overflow warning */
    bool rules;                          /* documents or a chunk hide keys too */
};

/*
 * "warnings": [{"code": "row_fully_masked", "row": i, "message": "..."}], one per row i
 * of fully_masked (n_q flags) that is set, then the "tie" warnings of ties (or NULL,
 * ties.h); an empty list when there are none. `zeroed` is an API_ZEROED_* text.
 */
void api_write_masked_warnings(struct jw *w, const unsigned char *fully_masked, size_t n_q,
                               const char *zeroed, const struct api_tie_source *ties,
                               const struct api_row_causes *causes);

/* The same warnings as lines of a text page, each query named by its label. */
void api_text_masked_warnings(struct api_buf *b, const unsigned char *fully_masked, size_t n_q,
                              const struct api_labels *queries, const char *zeroed,
                              const struct api_row_causes *causes);

/*
 * At most the bytes of a text page that prints `matrices` matrices of at most (rows,
 * cols) each with its step line, and `query_rows` per-query lines (rows x heads: a
 * summary row, a fully-masked warning, a tie warning): the text renderers elide a
 * matrix to a few rows and columns (api_text_matrix_bytes), so what grows with the
 * sizes is the per-query lines. For admission: an estimate from how the page is laid
 * out, never below what it writes, instead of every step's numbers as JSON.
 */
size_t api_text_page_bytes(size_t matrices, size_t rows, size_t cols, size_t query_rows);

/* How "summary" lays out its per-query values. */
enum api_summary_layout {
    API_SUMMARY_VECTOR, /* one query sent as a vector: each value a scalar */
    API_SUMMARY_ROWS,   /* a list of n_q values */
    API_SUMMARY_HEADS   /* a list per head of n_q values */
};

/*
 * The heads' summaries to write: heads of them, the first at `first` and each next
 * one `stride` bytes on (multi-head traces hold them inside per-head structs).
 */
struct api_summaries {
    const struct attn_summary *first;
    size_t stride;
    size_t heads;
    size_t n_q;
    enum api_summary_layout layout;
    const struct api_tie_source *ties; /* the weights whose tied_keys are written, or NULL */
    const double *const *sink_weight; /* [heads] rows of n_q: the sink's share; or NULL */
};

/*
 * "summary": {row_sums, argmax (null for a fully masked row), max_weight, entropy,
 * fully_masked_rows, tied_keys (when s->ties is set)[, sink_weight]}. The mask is the same in every head, so fully_masked_rows comes
 * from the first head.
 */
void api_write_summary(struct jw *w, const struct api_summaries *s);

/* The words a heatmap draws (axis names, the note on masked cells) in the answer's language. */
void api_svg_words(struct api_svg_heatmap *h);

#endif
