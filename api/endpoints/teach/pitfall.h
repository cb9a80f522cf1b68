/*
 * api/endpoints/teach/pitfall.h — `pitfall`: the learner's mistake computed beside the right
 * answer, on /v1/attention.
 *
 *   "no_transpose"        Q @ K instead of Q @ K^T: numpy's own error when the shapes
 *                         cannot multiply, else the silently wrong scores, weights, output
 *   "column_softmax"      softmax down the columns: columns sum to 1, rows do not
 *   "no_max_subtraction"  e^masked without subtracting each row's max: inf and NaN
 *
 * The answer's "pitfall" member is {"name", "what", "steps", "error", "non_finite",
 * "max_abs_difference"} (DESIGN.md, "Teaching what the notes teach"). The wrong steps
 * are computed when the answer is written, into a block the result owns.
 *
 * Every sentence a user reads is in one table in pitfall.c, keyed by the pitfall.
 *
 * Dimension legend: n_q queries, n_k keys, d_k query/key width, d_v value width.
 */
#ifndef API_ENDPOINTS_PITFALL_H
#define API_ENDPOINTS_PITFALL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "api/http/problem.h"
#include "api/json/buf.h"
#include "api/json/write.h"
#include "api/render/text.h"
#include "core/attention.h"
#include "core/precision.h"
#include "core/variants.h"

enum api_pitfall {
    API_PITFALL_NONE = 0,
    API_PITFALL_NO_TRANSPOSE,
    API_PITFALL_COLUMN_SOFTMAX,
    API_PITFALL_NO_MAX_SUBTRACTION,
    API_PITFALL_COUNT
};

/* Reads the request's "pitfall" (absent or null: none); invalid-value names the choices. */
bool api_pitfall_read(const json_t *doc, const char *prefix, enum api_pitfall *out,
                      struct api_error *err);

/* The doubles the mistake allocates and the numbers its answer writes, for admission. */
size_t api_pitfall_cells(enum api_pitfall p, size_t n_q, size_t n_k, size_t d_v);

/* What the mistake needs: the request's inputs and the right answer, borrowed. */
struct api_pitfall_inputs {
    enum api_pitfall which;
    const struct attn_matrix *q, *k, *v, *bias; /* bias may be NULL */
    struct attn_mask mask;
    double scale;
    const struct attn_trace *right;
    /* The variants the right answer ran (NULL: none). no_transpose runs them too, on
     * q and k as rotated (q, k above are then q_rope and k_rope, and rope is left out
     * here): the mistake taught is the transpose alone. */
    const struct attn_variants *variants;
    /* The low format the right answer ran in (core/precision.h), or NULL: the mistake
     * is computed by the same rules. */
    const struct attn_precision *precision;
};

#define API_PITFALL_MAX_STEPS 3

/* The mistake's steps. Owns block (and trace, for no_transpose). */
struct api_pitfall_result {
    enum api_pitfall which;
    bool failed;                 /* no memory: the answer cannot be complete */
    char error[200];             /* numpy's message when it cannot run, else "" */
    size_t n_steps;
    const char *names[API_PITFALL_MAX_STEPS];
    struct attn_matrix steps[API_PITFALL_MAX_STEPS];
    size_t non_finite;           /* cells of steps that are NaN or ±inf */
    double max_abs_difference;   /* NAN when no cell compares */
    struct attn_trace trace;
    double *block;
};

/* Computes in's mistake into out (free with api_pitfall_result_free, even when failed). */
void api_pitfall_compute(struct api_pitfall_result *out, const struct api_pitfall_inputs *in);

void api_pitfall_result_free(struct api_pitfall_result *r);

/* "pitfall": {...}; a vector q (as_vector) writes its steps as vectors. */
void api_pitfall_write(struct jw *w, const struct api_pitfall_result *r, bool as_vector);

/* The same on a text page: the sentence, numpy's error or the wrong steps, the counts. */
void api_pitfall_text(struct api_buf *b, const struct api_pitfall_result *r, int decimals,
                      const struct api_labels *queries, const struct api_labels *keys);

#endif
